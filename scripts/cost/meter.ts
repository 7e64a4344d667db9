/**
 * The meter: one HTTP endpoint the consumers' SDK clients are pointed at through the environment
 * (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS), so it needs no hook in the code it measures.
 *
 * DynamoDB requests go on to dynalite. For each write it reads the item before and after with its
 * own client (straight to dynalite: not counted, not billed) and prices the pair by billing.ts with
 * the table's shape from DescribeTable; writes to one item pass one at a time, so each pair is that
 * write's, and an item's last image is kept. It asks dynalite for ConsumedCapacity and compares
 * (dynalite reports the table only). A refusal asking ALL_OLD gets the item, as AWS answers at no
 * read cost (dynalite does not). Reads are billed from the items they read (a projection
 * or a filter set aside); batch writes and
 * transactions are listed as unmetered, and the script refuses to print costs then.
 *
 * SQS requests are counted and answered here, never sent: the records a run hands the consumer are
 * made by the run, so no queue holds them. Sent messages are kept for the run to hand back as
 * Lambda's event source would (`takeSent`); `eventSource` bills the poller's receive and delete.
 */
import { createHash, randomUUID } from 'node:crypto';
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { DescribeTableCommand, GetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { listenOnLoopback } from '../../test/helpers/loopback';
import * as billing from './billing';
import type { IndexWrite, IndexWriteKind, Item, TableShape } from './billing';

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);
const READS = new Set(['GetItem', 'Query', 'Scan']);
const UNMODELLED = new Set(['BatchWriteItem', 'TransactWriteItems', 'TransactGetItems', 'ExecuteStatement', 'BatchExecuteStatement', 'ExecuteTransaction']);
/** Table management: not part of what an event costs. */
const CONTROL = new Set(['CreateTable', 'DescribeTable', 'DeleteTable', 'UpdateTable', 'ListTables', 'UpdateTimeToLive']);

/** One table's part of a usage (index units included in `writeUnits`). */
export interface TableUsage {
  writeRequests: number;
  readRequests: number;
  writeUnits: number;
  indexUnits: number;
  readUnits: number;
}

export interface MeteredWrite {
  readonly operation: string;
  readonly table: string;
  readonly refused: boolean;
  readonly tableUnits: number;
  readonly partitionKeyValue: string;
  readonly indexWrites: readonly IndexWrite[];
  readonly afterBytes: number | undefined;
  /** dynalite's ConsumedCapacity for the table, when it sent one. */
  readonly reportedUnits: number | undefined;
  /** An UpdateItem's expression: what the write changed (scripts/cost/hot-item.ts tells health's from the schedule's). */
  readonly updateExpression?: string;
}

/** What the DynamoDB requests since `start` used. */
export class DynamoDbUsage {
  writeRequests = 0;
  readRequests = 0;
  refusedWrites = 0;
  tableWriteUnits = 0;
  readUnits = 0;
  /** Items the reads returned, and their bytes as billed (an index's entries as it projects them). */
  itemsRead = 0;
  itemBytesRead = 0;
  readonly indexWriteUnits: Record<string, number> = {};
  readonly indexWriteCounts: Record<string, Record<IndexWriteKind, number>> = {};
  /** The largest item written, bytes (the row as it grows). */
  largestItemBytes = 0;
  capacityAgrees = 0;
  capacityDiffers = 0;
  firstCapacityDifference: string | undefined;
  readonly unmetered: Record<string, number> = {};
  /** Write units per partition key value, by `table` or `table/index` (when asked for). */
  readonly partitions: Map<string, Map<string, number>> | undefined;
  /** Every write, in the order they landed (when asked for). */
  readonly writes: MeteredWrite[] | undefined;
  readonly byTable: Record<string, TableUsage> = {};

  constructor(options: { partitions?: boolean; writes?: boolean } = {}) {
    this.partitions = options.partitions ? new Map() : undefined;
    this.writes = options.writes ? [] : undefined;
  }

  get indexUnits(): number {
    return Object.values(this.indexWriteUnits).reduce((sum, units) => sum + units, 0);
  }

  get writeUnits(): number {
    return this.tableWriteUnits + this.indexUnits;
  }

  table(name: string): TableUsage {
    return (this.byTable[name] ??= { writeRequests: 0, readRequests: 0, writeUnits: 0, indexUnits: 0, readUnits: 0 });
  }

  addRead(table: string, units: number, items: readonly number[] = []): void {
    this.readRequests += 1;
    this.readUnits += units;
    this.itemsRead += items.length;
    this.itemBytesRead += items.reduce((sum, bytes) => sum + bytes, 0);
    this.table(table).readRequests += 1;
    this.table(table).readUnits += units;
  }

  addWrite(write: MeteredWrite): void {
    const indexUnits = write.indexWrites.reduce((sum, entry) => sum + entry.units, 0);
    const part = this.table(write.table);
    part.writeRequests += 1;
    part.writeUnits += write.tableUnits + indexUnits;
    part.indexUnits += indexUnits;
    this.writeRequests += 1;
    if (write.refused) this.refusedWrites += 1;
    this.writes?.push(write);
    this.tableWriteUnits += write.tableUnits;
    this.#partition(write.table, write.partitionKeyValue, write.tableUnits);
    for (const entry of write.indexWrites) {
      this.indexWriteUnits[entry.index] = (this.indexWriteUnits[entry.index] ?? 0) + entry.units;
      (this.indexWriteCounts[entry.index] ??= { put: 0, delete: 0, update: 0 })[entry.kind] += 1;
      this.#partition(`${write.table}/${entry.index}`, entry.partitionKeyValue, entry.units);
    }
    if (write.afterBytes !== undefined) this.largestItemBytes = Math.max(this.largestItemBytes, write.afterBytes);
    if (write.reportedUnits === undefined) return;
    if (write.reportedUnits === write.tableUnits) this.capacityAgrees += 1;
    else {
      this.capacityDiffers += 1;
      this.firstCapacityDifference ??= `${write.operation} on ${write.table}: model ${write.tableUnits}, dynalite ${write.reportedUnits}`;
    }
  }

  #partition(scope: string, value: string, units: number): void {
    if (this.partitions === undefined) return;
    const values = this.partitions.get(scope) ?? new Map<string, number>();
    this.partitions.set(scope, values.set(value, (values.get(value) ?? 0) + units));
  }
}

/** SQS requests by operation (`(event source)` marks the poller's), and as billed. */
export class SqsUsage {
  readonly requests: Record<string, number> = {};
  billedRequests = 0;

  add(operation: string, payloadBytes: number): void {
    this.requests[operation] = (this.requests[operation] ?? 0) + 1;
    this.billedRequests += billing.sqsBilledRequests(payloadBytes);
  }
}

type WireAttribute = { DataType?: string; StringValue?: string; BinaryValue?: string };
/** A message the consumer sent, as the queue would hold it. */
export interface SentMessage {
  readonly queueUrl: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, WireAttribute>>;
  readonly delaySeconds?: number;
}

export interface Meter {
  /** Where the SDK clients send DynamoDB and SQS requests. */
  readonly endpoint: string;
  readonly dynamodb: {
    /** A fresh count; everything until the next start lands there. */
    start(options?: { partitions?: boolean; writes?: boolean }): DynamoDbUsage;
    /** Forwards uncounted, reading no images, until the next start: for timing handlers. */
    passThrough(): void;
    /** The table is empty and every write from now passes here: an unseen item does not exist. */
    seesEveryWrite(table: string): void;
    shapeOf(table: string): Promise<TableShape>;
  };
  readonly sqs: {
    start(): SqsUsage;
    /** Messages sent since the last call, in order. */
    takeSent(): SentMessage[];
    /** Lambda's event source for one batch: a receive, and a delete unless every record failed. */
    eventSource(records: readonly SQSRecord[], failed: number): void;
  };
  close(): Promise<void>;
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export async function startMeter(dynaliteEndpoint: string, direct: DynamoDBClient): Promise<Meter> {
  const target = new URL(dynaliteEndpoint);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const shapes = new Map<string, Promise<TableShape>>();
  const images = new Map<string, Item | undefined>();
  const locks = new Map<string, Promise<unknown>>();
  const wholeHistory = new Set<string>();
  let usage = new DynamoDbUsage();
  let sqsUsage = new SqsUsage();
  let sent: SentMessage[] = [];
  let metering = true;

  const shapeOf = (table: string) => {
    if (!shapes.has(table)) {
      shapes.set(table, direct.send(new DescribeTableCommand({ TableName: table })).then(({ Table }) => billing.tableShape(Table ?? {})));
    }
    return shapes.get(table)!;
  };
  // A kept-alive socket dynalite has just closed resets the request: sent again once on a new one.
  const forward = (request: IncomingMessage, body: Buffer): Promise<Answer> =>
    send(request, body).catch((error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? send(request, body) : Promise.reject(error)));
  const send = (request: IncomingMessage, body: Buffer): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const headers = { ...request.headers, host: target.host, 'content-length': String(body.length) };
      const outgoing = http.request({ host: target.hostname, port: target.port, method: request.method, path: request.url, agent, headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 500, headers: response.headers, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      });
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  const readItem = async (table: string, key: Item) =>
    (await direct.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item;
  /** Runs `work` once every earlier write to this item has finished. */
  const serialized = async <T>(itemKey: string, work: () => Promise<T>): Promise<T> => {
    const mine = (locks.get(itemKey) ?? Promise.resolve()).catch(() => {}).then(work);
    locks.set(itemKey, mine);
    try {
      return await mine;
    } finally {
      if (locks.get(itemKey) === mine) locks.delete(itemKey);
    }
  };
  const refusedWithItem = (answer: Answer, input: WriteInput, item: Item | undefined): Answer => {
    const parsed = parseJson(answer.body) as { __type?: string };
    if (!(parsed.__type ?? '').endsWith('ConditionalCheckFailedException') || input.ReturnValuesOnConditionCheckFailure !== 'ALL_OLD' || !item) return answer;
    return { ...answer, body: Buffer.from(JSON.stringify({ ...parsed, Item: toWire(item) })) };
  };

  const write = async (operation: string, request: IncomingMessage, input: WriteInput): Promise<Answer> => {
    const table = input.TableName;
    const shape = await shapeOf(table);
    const key = fromWire(input.Key ?? billing.keyOf(shape, input.Item ?? {}));
    if (!metering) {
      const answer = await forward(request, Buffer.from(JSON.stringify(input)));
      return answer.status === 200 ? answer : refusedWithItem(answer, input, await readItem(table, key));
    }
    const itemKey = `${table}\n${JSON.stringify(key, sortedKeys)}`;
    return serialized(itemKey, async () => {
      const before = images.has(itemKey) || wholeHistory.has(table) ? images.get(itemKey) : await readItem(table, key);
      const reporting = input.ReturnConsumedCapacity === 'TOTAL' || input.ReturnConsumedCapacity === 'INDEXES' ? input : { ...input, ReturnConsumedCapacity: 'TOTAL' };
      const answer = await forward(request, Buffer.from(JSON.stringify(reporting)));
      const parsed = parseJson(answer.body) as { __type?: string; ConsumedCapacity?: { CapacityUnits?: number } };
      const refused = answer.status !== 200 && (parsed.__type ?? '').endsWith('ConditionalCheckFailedException');
      // Any other failure (throttling, validation) changed nothing and is not billed.
      if (answer.status !== 200 && !refused) return answer;
      const after = refused ? before : await readItem(table, key);
      images.set(itemKey, after);
      usage.addWrite({
        operation,
        table,
        refused,
        tableUnits: billing.tableWriteUnits(before, after, refused),
        partitionKeyValue: billing.keyText(key[shape.partitionKey]),
        indexWrites: refused ? [] : billing.indexWrites(shape, before, after),
        afterBytes: after === undefined ? undefined : billing.itemSizeBytes(after),
        reportedUnits: refused ? undefined : parsed.ConsumedCapacity?.CapacityUnits,
        ...(input.UpdateExpression !== undefined ? { updateExpression: input.UpdateExpression } : {}),
      });
      return refused ? refusedWithItem(answer, input, before) : answer;
    });
  };

  const read = async (operation: string, request: IncomingMessage, body: Buffer): Promise<Answer> => {
    const answer = await forward(request, body);
    if (answer.status !== 200) return answer;
    // DynamoDB bills what a read read, not what it returned: whole items under a projection on the
    // table, every item evaluated under a filter. Such a read is priced from the same read without them.
    const whole = wholeRead(operation, parseJson(body) as Record<string, unknown>);
    const read = whole === undefined ? answer : await forward(request, Buffer.from(JSON.stringify(whole)));
    const bytes = (items: readonly Item[] | undefined) => (items ?? []).map((item) => billing.itemSizeBytes(fromWire(item)));
    if (operation === 'BatchGetItem') {
      const input = parseJson(body) as { RequestItems?: Record<string, { Keys?: Item[]; ConsistentRead?: boolean }> };
      const output = parseJson(answer.body) as { UnprocessedKeys?: Record<string, { Keys?: Item[] }> };
      const responses = (parseJson(read.body) as { Responses?: Record<string, Item[]> }).Responses;
      for (const [table, asked] of Object.entries(input.RequestItems ?? {})) {
        const keysRead = (asked.Keys ?? []).length - (output.UnprocessedKeys?.[table]?.Keys ?? []).length;
        const found = bytes(responses?.[table]);
        usage.addRead(table, billing.batchGetReadUnits(found, keysRead, asked.ConsistentRead === true), found);
      }
      return answer;
    }
    const input = parseJson(body) as { ConsistentRead?: boolean; TableName?: string };
    const output = parseJson(read.body) as { Item?: Item; Items?: Item[] };
    const items = bytes(output.Item !== undefined ? [output.Item] : output.Items);
    const total = items.reduce((sum, n) => sum + n, 0);
    usage.addRead(input.TableName ?? '(unnamed)', billing.readUnits(total, input.ConsistentRead === true), items);
    return answer;
  };

  const sqs = (operation: string, body: Buffer): Answer => {
    const input = parseJson(body) as SqsInput;
    const messages = input.Entries ?? (input.MessageBody !== undefined ? [input] : []);
    const attributes = (m: SqsInput) =>
      Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([n, a]) => [n, { type: a.DataType ?? '', value: a.StringValue ?? Buffer.from(a.BinaryValue ?? '', 'base64') }]));
    sqsUsage.add(operation, messages.reduce((sum, m) => sum + billing.sqsMessageBytes(m.MessageBody ?? '', attributes(m)), 0));
    for (const m of messages) {
      const delaySeconds = m.DelaySeconds ?? input.DelaySeconds;
      sent.push({ queueUrl: input.QueueUrl ?? '', body: m.MessageBody ?? '', attributes: m.MessageAttributes ?? {}, ...(delaySeconds !== undefined ? { delaySeconds } : {}) });
    }
    const md5 = (m: SqsInput) => createHash('md5').update(m.MessageBody ?? '').digest('hex');
    const output = input.Entries
      ? { Successful: input.Entries.map((m) => ({ Id: m.Id, MessageId: randomUUID(), MD5OfMessageBody: md5(m) })), Failed: [] }
      : input.MessageBody !== undefined ? { MessageId: randomUUID(), MD5OfMessageBody: md5(input) } : {};
    return { status: 200, headers: { 'content-type': 'application/x-amz-json-1.0' }, body: Buffer.from(JSON.stringify(output)) };
  };

  const handle = async (request: IncomingMessage, body: Buffer): Promise<Answer> => {
    const [service = '', operation = ''] = String(request.headers['x-amz-target'] ?? '').split('.');
    if (service === 'AmazonSQS') return sqs(operation, body);
    if (WRITES.has(operation)) return write(operation, request, parseJson(body) as WriteInput);
    if (!metering || CONTROL.has(operation)) return forward(request, body);
    if (READS.has(operation) || operation === 'BatchGetItem') return read(operation, request, body);
    if (UNMODELLED.has(operation)) usage.unmetered[operation] = (usage.unmetered[operation] ?? 0) + 1;
    return forward(request, body);
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      handle(request, Buffer.concat(chunks)).then(
        (answer) => {
          const { 'transfer-encoding': _t, connection: _c, ...headers } = answer.headers;
          response.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length) });
          response.end(answer.body);
        },
        (error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          // The client sees a server error and its caller a failed delivery: say why here.
          console.error(`meter: ${message}`);
          response.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
          response.end(JSON.stringify({ __type: 'MeterError', message }));
        },
      );
    });
  });
  const listening = await listenOnLoopback(server);

  return {
    endpoint: new URL(listening.url).origin,
    dynamodb: {
      start(options = {}) {
        metering = true;
        return (usage = new DynamoDbUsage(options));
      },
      passThrough() {
        metering = false;
        // Writes now go unseen: no image kept so far can be trusted later.
        images.clear();
        wholeHistory.clear();
      },
      seesEveryWrite: (table) => void wholeHistory.add(table),
      shapeOf,
    },
    sqs: {
      start: () => (sqsUsage = new SqsUsage()),
      takeSent: () => sent.splice(0),
      eventSource(records, failed) {
        const bytes = records.reduce(
          (sum, r) => sum + billing.sqsMessageBytes(r.body, Object.fromEntries(Object.entries(r.messageAttributes).map(([n, a]) => [n, { type: a.dataType, value: a.stringValue ?? '' }]))),
          0,
        );
        sqsUsage.add('ReceiveMessage (event source)', bytes);
        if (failed < records.length) sqsUsage.add('DeleteMessageBatch (event source)', 0);
      },
    },
    async close() {
      await listening.close();
      agent.destroy();
    },
  };
}

interface WriteInput {
  TableName: string;
  UpdateExpression?: string;
  Key?: Item;
  Item?: Item;
  ReturnConsumedCapacity?: string;
  ReturnValuesOnConditionCheckFailure?: string;
}

interface SqsInput {
  Id?: string;
  QueueUrl?: string;
  MessageBody?: string;
  DelaySeconds?: number;
  MessageAttributes?: Record<string, WireAttribute>;
  Entries?: SqsInput[];
}

/** What narrows what a read returns but not what it reads (and bills). */
const NARROWING = ['ProjectionExpression', 'AttributesToGet', 'FilterExpression', 'QueryFilter', 'ScanFilter', 'ConditionalOperator', 'Select'];

/**
 * The read as DynamoDB bills it, `input` without what narrows its answer (an index's Query then
 * returns what the index projects, which is what it bills); undefined when nothing does. Limit counts
 * the items evaluated, so a page is the same page.
 */
export function wholeRead(operation: string, input: Record<string, unknown>): Record<string, unknown> | undefined {
  const narrowed = (read: Record<string, unknown>) => NARROWING.some((name) => read[name] !== undefined && read[name] !== 'ALL_ATTRIBUTES');
  if (operation !== 'BatchGetItem') return narrowed(input) ? widened(input) : undefined;
  const tables = (input.RequestItems ?? {}) as Record<string, Record<string, unknown>>;
  if (!Object.values(tables).some(narrowed)) return undefined;
  return { ...input, RequestItems: Object.fromEntries(Object.entries(tables).map(([table, read]) => [table, widened(read)])) };
}

/** A read without its narrowing, and without the placeholders only those used (DynamoDB refuses unused ones). */
function widened(read: Record<string, unknown>): Record<string, unknown> {
  const kept = Object.fromEntries(Object.entries(read).filter(([name]) => !NARROWING.includes(name)));
  const expression = String(read.KeyConditionExpression ?? '');
  const used = (placeholder: string) => new RegExp(`${placeholder.replace(/[^A-Za-z0-9_]/g, '\\$&')}(?![A-Za-z0-9_])`).test(expression);
  for (const map of ['ExpressionAttributeNames', 'ExpressionAttributeValues']) {
    const entries = Object.entries((read[map] ?? {}) as Record<string, unknown>).filter(([placeholder]) => used(placeholder));
    if (entries.length > 0) kept[map] = Object.fromEntries(entries);
    else delete kept[map];
  }
  return kept;
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return {};
  }
}

/** An item from JSON (binary as base64 text) to the SDK's form (bytes), so sizes count raw bytes. */
export function fromWire(item: Item): Item {
  return convert(item, (b) => (typeof b === 'string' ? Buffer.from(b, 'base64') : b));
}

function toWire(item: Item): Item {
  return convert(item, (b) => (typeof b === 'string' ? b : Buffer.from(b as Uint8Array).toString('base64')));
}

function convert(item: Item, binary: (b: unknown) => unknown): Item {
  const value = (v: AttributeValue): AttributeValue => {
    const raw = v as unknown as Record<string, unknown>;
    if (raw.B !== undefined) return { B: binary(raw.B) } as AttributeValue;
    if (Array.isArray(raw.BS)) return { BS: raw.BS.map(binary) } as AttributeValue;
    if (v.L !== undefined) return { L: v.L.map(value) };
    if (v.M !== undefined) return { M: convert(v.M, binary) };
    return v;
  };
  return Object.fromEntries(Object.entries(item).map(([name, v]) => [name, value(v)]));
}

/** Keys in a stable order, so one item always locks under one name. */
function sortedKeys(this: unknown, _name: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Uint8Array) return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)));
}
