/**
 * A metering proxy in front of dynalite: every DynamoDB request of every client (handoff's
 * adapter, Powertools' persistence layer, whatever builds its own client) goes through it, so the
 * meter needs no hook in the code it measures.
 *
 * For each write (PutItem, UpdateItem, DeleteItem) it holds the item's key, reads the item before
 * and after the write with its own client (consistent GetItem straight to dynalite: not counted,
 * not billed), and applies DynamoDB's rules (billing.ts) to the two images and the table's shape,
 * read once per table from DescribeTable: table units, index puts, deletes and updates, and the
 * partition key value each lands on. Writes to one item pass one at a time, so each image pair is
 * exactly that write's. An item's last image is kept, so only its first write reads "before" (and
 * not even that on a table the meter has seen every write to since it was empty).
 *
 * It also asks dynalite for `ConsumedCapacity` on each write and compares it with the table units
 * it computed. dynalite reports the table only: index units are the model's alone.
 *
 * Reads are billed from the items they return (BatchGetItem item by item). Batch writes and
 * transactions are forwarded but not modelled: they are listed as unmetered, and the script
 * refuses to print costs then. Every figure is also kept per table (`byTable`).
 */
import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { DescribeTableCommand, GetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  batchGetReadUnits,
  indexWrites,
  keyOf,
  keyText,
  readUnits,
  tableShape,
  tableWriteUnits,
  type IndexWrite,
  type IndexWriteKind,
  type TableShape,
} from './billing';
import { listenOnLoopback } from '../../test/helpers/loopback';
import { itemSizeBytes, type Item } from './item-size';

const WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem']);
const READS = new Set(['GetItem', 'Query', 'Scan']);
const UNMODELLED = new Set([
  'BatchWriteItem',
  'TransactWriteItems',
  'TransactGetItems',
  'ExecuteStatement',
  'BatchExecuteStatement',
  'ExecuteTransaction',
]);
/** Requests that manage tables: not part of what an event costs. */
const CONTROL = new Set(['CreateTable', 'DescribeTable', 'DeleteTable', 'UpdateTable', 'ListTables', 'UpdateTimeToLive']);

/** Write units per partition key value, per table or index (`table` or `table/index`). */
export type PartitionWrites = Map<string, Map<string, number>>;

/** One table's part of a usage: its requests and units (index units included in `writeUnits`). */
export interface TableUsage {
  writeRequests: number;
  readRequests: number;
  writeUnits: number;
  indexUnits: number;
  readUnits: number;
}

/** What the requests since `DynamoDbMeter.start` used. */
export class DynamoDbUsage {
  /** Data requests by operation (table management left out). */
  readonly requests: Record<string, number> = {};
  writeRequests = 0;
  readRequests = 0;
  refusedWrites = 0;
  tableWriteUnits = 0;
  readUnits = 0;
  /** By index name. */
  readonly indexWriteUnits: Record<string, number> = {};
  readonly indexWriteCounts: Record<string, Record<IndexWriteKind, number>> = {};
  /** Written items' largest size, in bytes (the row as it grows). */
  largestItemBytes = 0;
  /** Successful writes whose table units dynalite also reported: the same, or not. */
  capacityAgrees = 0;
  capacityDiffers = 0;
  firstCapacityDifference: string | undefined;
  readonly unmetered: Record<string, number> = {};
  readonly partitions: PartitionWrites | undefined;
  /** The same, table by table. */
  readonly byTable: Record<string, TableUsage> = {};

  constructor(options: { partitions?: boolean } = {}) {
    this.partitions = options.partitions ? new Map() : undefined;
  }

  get indexUnits(): number {
    return Object.values(this.indexWriteUnits).reduce((sum, units) => sum + units, 0);
  }

  get writeUnits(): number {
    return this.tableWriteUnits + this.indexUnits;
  }

  count(operation: string): void {
    this.requests[operation] = (this.requests[operation] ?? 0) + 1;
  }

  /** The table's part (zeros when it was not touched). */
  table(name: string): TableUsage {
    return (this.byTable[name] ??= { writeRequests: 0, readRequests: 0, writeUnits: 0, indexUnits: 0, readUnits: 0 });
  }

  addRead(table: string, units: number): void {
    this.readRequests += 1;
    this.readUnits += units;
    const part = this.table(table);
    part.readRequests += 1;
    part.readUnits += units;
  }

  addWrite(write: MeteredWrite): void {
    const part = this.table(write.table);
    part.writeRequests += 1;
    part.writeUnits += write.tableUnits + write.indexWrites.reduce((sum, entry) => sum + entry.units, 0);
    part.indexUnits += write.indexWrites.reduce((sum, entry) => sum + entry.units, 0);
    this.writeRequests += 1;
    if (write.refused) this.refusedWrites += 1;
    this.tableWriteUnits += write.tableUnits;
    this.#partition(write.table, write.partitionKeyValue, write.tableUnits);
    for (const entry of write.indexWrites) {
      this.indexWriteUnits[entry.index] = (this.indexWriteUnits[entry.index] ?? 0) + entry.units;
      const counts = (this.indexWriteCounts[entry.index] ??= { put: 0, delete: 0, update: 0 });
      counts[entry.kind] += 1;
      this.#partition(`${write.table}/${entry.index}`, entry.partitionKeyValue, entry.units);
    }
    if (write.afterBytes !== undefined) this.largestItemBytes = Math.max(this.largestItemBytes, write.afterBytes);
    if (write.reportedUnits !== undefined) {
      if (write.reportedUnits === write.tableUnits) this.capacityAgrees += 1;
      else {
        this.capacityDiffers += 1;
        this.firstCapacityDifference ??= `${write.operation} on ${write.table}: model ${write.tableUnits}, dynalite ${write.reportedUnits}`;
      }
    }
  }

  #partition(scope: string, value: string, units: number): void {
    if (this.partitions === undefined) return;
    let values = this.partitions.get(scope);
    if (values === undefined) this.partitions.set(scope, (values = new Map()));
    values.set(value, (values.get(value) ?? 0) + units);
  }
}

export interface MeteredWrite {
  readonly operation: string;
  readonly table: string;
  readonly refused: boolean;
  readonly tableUnits: number;
  readonly partitionKeyValue: string;
  readonly indexWrites: readonly IndexWrite[];
  readonly afterBytes: number | undefined;
  /** dynalite's `ConsumedCapacity` for the table, when it sent one. */
  readonly reportedUnits: number | undefined;
}

export interface MeteringProxy {
  /** Where clients send DynamoDB requests. */
  readonly endpoint: string;
  /** Starts a fresh count; returns it. Everything until the next start lands there. */
  start(options?: { partitions?: boolean }): DynamoDbUsage;
  /**
   * Forwards requests untouched, without reading images or counting, until the next `start`: for
   * timing a handler without the meter's own reads in its path.
   */
  passThrough(): void;
  /**
   * Declares a table empty, with every write from now on passing the meter: an item it has not
   * seen written does not exist, so its first write needs no read of the item before. Until the
   * next `passThrough`.
   */
  seesEveryWrite(table: string): void;
  /** The table's shape, as the meter prices it. */
  shapeOf(table: string): Promise<TableShape>;
  close(): Promise<void>;
}

interface Forwarded {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** Starts the proxy on a free loopback port, forwarding to dynalite at `target`. */
export async function startMeteringProxy(target: string, direct: DynamoDBClient): Promise<MeteringProxy> {
  const targetUrl = new URL(target);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const shapes = new Map<string, Promise<TableShape>>();
  /** Each written item's image after its last write, by table and key. */
  const images = new Map<string, Item | undefined>();
  const locks = new Map<string, Promise<void>>();
  /** Tables whose every write since they were empty has passed the meter. */
  const wholeHistory = new Set<string>();
  let usage = new DynamoDbUsage();
  let metering = true;

  const shapeOf = (table: string) => {
    let shape = shapes.get(table);
    if (shape === undefined) {
      shape = direct.send(new DescribeTableCommand({ TableName: table })).then(({ Table }) => {
        if (Table === undefined) throw new Error(`DescribeTable ${table} returned no table`);
        return tableShape(Table);
      });
      shapes.set(table, shape);
    }
    return shape;
  };

  const forward = (request: IncomingMessage, body: Buffer): Promise<Forwarded> =>
    new Promise((resolve, reject) => {
      const outgoing = http.request(
        {
          host: targetUrl.hostname,
          port: targetUrl.port,
          method: request.method,
          path: request.url,
          agent,
          headers: { ...request.headers, host: targetUrl.host, 'content-length': String(body.length) },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 500, headers: response.headers, body: Buffer.concat(chunks) }));
          response.on('error', reject);
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });

  /** Runs `work` once every earlier write to this item has finished. */
  const serialized = async <T>(itemKey: string, work: () => Promise<T>): Promise<T> => {
    const previous = locks.get(itemKey) ?? Promise.resolve();
    let release = () => {};
    const mine = previous.then(() => new Promise<void>((resolve) => (release = resolve)));
    locks.set(itemKey, mine);
    await previous;
    try {
      return await work();
    } finally {
      release();
      if (locks.get(itemKey) === mine) locks.delete(itemKey);
    }
  };

  const readItem = async (table: string, key: Item) => {
    const { Item } = await direct.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }));
    return Item;
  };

  const write = async (operation: string, request: IncomingMessage, input: WriteInput): Promise<Forwarded> => {
    const table = input.TableName;
    const shape = await shapeOf(table);
    const key = fromWire(input.Key ?? keyOf(shape, input.Item ?? {}));
    const itemKey = `${table}\n${JSON.stringify(key, keyReplacer)}`;
    return serialized(itemKey, async () => {
      const before = images.has(itemKey) || wholeHistory.has(table) ? images.get(itemKey) : await readItem(table, key);
      const asked = input.ReturnConsumedCapacity;
      const reporting = asked === 'TOTAL' || asked === 'INDEXES' ? input : { ...input, ReturnConsumedCapacity: 'TOTAL' };
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
        tableUnits: tableWriteUnits(before, after, refused),
        partitionKeyValue: keyText(key[shape.partitionKey]),
        indexWrites: refused ? [] : indexWrites(shape, before, after),
        afterBytes: after === undefined ? undefined : itemSizeBytes(after),
        reportedUnits: refused ? undefined : parsed.ConsumedCapacity?.CapacityUnits,
      });
      return answer;
    });
  };

  const read = async (request: IncomingMessage, body: Buffer): Promise<Forwarded> => {
    const input = parseJson(body) as { ConsistentRead?: boolean; TableName?: string };
    const answer = await forward(request, body);
    if (answer.status !== 200) return answer;
    const output = parseJson(answer.body) as { Item?: Item; Items?: Item[] };
    const items = output.Item !== undefined ? [output.Item] : (output.Items ?? []);
    const bytes = items.reduce((sum, item) => sum + itemSizeBytes(fromWire(item)), 0);
    usage.addRead(input.TableName ?? '(unnamed)', readUnits(bytes, input.ConsistentRead === true));
    return answer;
  };

  /** BatchGetItem: each table's keys read, each item billed as its own GetItem (billing.ts). */
  const batchGet = async (request: IncomingMessage, body: Buffer): Promise<Forwarded> => {
    const input = parseJson(body) as { RequestItems?: Record<string, { Keys?: Item[]; ConsistentRead?: boolean }> };
    const answer = await forward(request, body);
    if (answer.status !== 200) return answer;
    const output = parseJson(answer.body) as { Responses?: Record<string, Item[]>; UnprocessedKeys?: Record<string, { Keys?: Item[] }> };
    for (const [table, asked] of Object.entries(input.RequestItems ?? {})) {
      const found = (output.Responses?.[table] ?? []).map((item) => itemSizeBytes(fromWire(item)));
      const keysRead = (asked.Keys ?? []).length - (output.UnprocessedKeys?.[table]?.Keys ?? []).length;
      usage.addRead(table, batchGetReadUnits(found, keysRead, asked.ConsistentRead === true));
    }
    return answer;
  };

  const handle = async (request: IncomingMessage, body: Buffer): Promise<Forwarded> => {
    const target = String(request.headers['x-amz-target'] ?? '');
    const operation = target.split('.')[1] ?? target;
    if (!metering || CONTROL.has(operation)) return forward(request, body);
    usage.count(operation);
    if (WRITES.has(operation)) return write(operation, request, parseJson(body) as WriteInput);
    if (READS.has(operation)) return read(request, body);
    if (operation === 'BatchGetItem') return batchGet(request, body);
    if (UNMODELLED.has(operation)) usage.unmetered[operation] = (usage.unmetered[operation] ?? 0) + 1;
    return forward(request, body);
  };

  const server = http.createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      handle(request, Buffer.concat(chunks)).then(
        (answer) => {
          const headers = { ...answer.headers };
          delete headers['transfer-encoding'];
          delete headers.connection;
          response.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length) });
          response.end(answer.body);
        },
        (error: unknown) => {
          // The client sees a server error and its caller a failed delivery: say why here.
          console.error(`metering proxy: ${error instanceof Error ? error.message : String(error)}`);
          response.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
          response.end(JSON.stringify({ __type: 'MeteringProxyError', message: error instanceof Error ? error.message : String(error) }));
        },
      );
    });
  });
  const listening = await listenOnLoopback(server);

  return {
    endpoint: new URL(listening.url).origin,
    start(options = {}) {
      usage = new DynamoDbUsage(options);
      metering = true;
      return usage;
    },
    passThrough() {
      metering = false;
      // Writes now go unseen, so no image kept so far can be trusted later.
      images.clear();
      wholeHistory.clear();
    },
    seesEveryWrite(table) {
      wholeHistory.add(table);
    },
    shapeOf,
    async close() {
      await listening.close();
      agent.destroy();
    },
  };
}

interface WriteInput {
  TableName: string;
  Key?: Item;
  Item?: Item;
  ReturnConsumedCapacity?: string;
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    return {};
  }
}

/**
 * An item as it travels in JSON (binary values as base64 text) in the SDK's form (bytes), so sizes
 * count raw bytes and keys can be sent again.
 */
export function fromWire(item: Item): Item {
  const out: Item = {};
  for (const [name, value] of Object.entries(item)) out[name] = valueFromWire(value);
  return out;
}

function valueFromWire(value: AttributeValue): AttributeValue {
  const raw = value as unknown as Record<string, unknown>;
  if (typeof raw.B === 'string') return { B: Buffer.from(raw.B, 'base64') };
  if (Array.isArray(raw.BS)) return { BS: raw.BS.map((member) => (typeof member === 'string' ? Buffer.from(member, 'base64') : member)) };
  if (value.L !== undefined) return { L: value.L.map(valueFromWire) };
  if (value.M !== undefined) return { M: fromWire(value.M) };
  return value;
}

/** Keys in a stable order, so one item always locks under one name. */
function keyReplacer(this: unknown, _name: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Uint8Array) return value;
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)));
}
