/**
 * The bench's machinery, once for every scenario: the sandbox's emulators with every request
 * counted at the server, a webhook receiver, and a consumer under test: its queue and tables, its
 * handler in bench/worker.ts processes (sandbox/worker-pool.ts: one batch at a time each, as Lambda
 * environments) driven by sandbox/poller.ts (Lambda's SQS event-source contract: receive up to the
 * batch size, invoke, delete every record not reported failed), and a producer that keeps a window.
 *
 * handoff's handler is functions/consumer.ts itself, `createConsumer(consumerDeps(env))`: the
 * deployed wiring, in processes of its own so each invocation's CPU is the handler's alone.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { derivedTimings, DEFAULT_SETTINGS, RESOURCE_ENV, settingsToEnvironment } from '../lib/config';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../lib/endpoints/endpoint';
import { MessageSeal } from '../lib/queue/seal';
import { startEmulators } from '../sandbox/emulators';
import { createEndpointsTable, seedEndpoints } from '../sandbox/endpoints-table';
import { createLedgerTable } from '../sandbox/ledger-table';
import { startPoller, type Invocation } from '../sandbox/poller';
import { WorkerPool } from '../sandbox/worker-pool';
import { listenOnLoopback } from '../test/helpers/loopback';
import type { Invocation as Measurement } from '../sandbox/worker-runtime';

export type ConsumerName = 'handoff' | 'naive' | 'powertools';
export const REGION = 'us-east-1';
/** The stack's defaults: 10 records per batch, 5 batches at once. The same for every consumer. */
export const BATCH_SIZE = DEFAULT_SETTINGS.batchSize;
export const MAX_CONCURRENCY = DEFAULT_SETTINGS.maxConcurrency;
/** A wait with no arrival for this long is given up (a consumer that loses events). */
const STALL_MS = 30_000;
const CREDENTIALS = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
export const HANDLER_PATHS = {
  handoff: here('../functions/consumer.ts'),
  naive: here('./consumers/naive.ts'),
  powertools: here('./consumers/powertools.ts'),
  empty: here('./consumers/empty.ts'),
  'sdk-clients': here('./consumers/sdk-clients.ts'),
};

/** Who made a request: the bench's clients mark theirs in the user agent; `handler` is the consumer under test. */
export type Role = 'handler' | 'poller' | 'producer' | 'setup';
/** Requests per role and operation (`DynamoDB.UpdateItem`), and DynamoDB body bytes sent and received. */
export type RequestCounts = Record<Role, Record<string, number>>;
const MARKED = ['poller', 'producer', 'setup'] as const;
const SENT = 'DynamoDB bytes sent';
const RECEIVED = 'DynamoDB bytes received';
/** What bench/worker.ts writes before each invocation's measurement. */
const MEASUREMENT_PREFIX = '@@bench ';

export interface Bench {
  readonly emulators: Awaited<ReturnType<typeof startCountingEmulators>>;
  readonly receiver: Receiver;
  /** Where the run is: replaces the previous progress line on a terminal. */
  readonly progress: (line: string) => void;
  /** Something worth keeping on screen (a warning, a failed batch). */
  readonly log: (line: string) => void;
}

/**
 * fauxqs and dynalite with every request counted at the server, by the role in its user agent:
 * honest for any consumer however it builds its clients, and it sees the SDK's own retries.
 */
export async function startCountingEmulators() {
  const counts: RequestCounts = { handler: {}, poller: {}, producer: {}, setup: {} };
  const add = (role: Role, key: string, n: number) => void (counts[role][key] = (counts[role][key] ?? 0) + n);
  const emulators = await startEmulators({
    onRequest(service, request, response) {
      const agent = String(request.headers['x-amz-user-agent'] ?? request.headers['user-agent'] ?? '');
      const role: Role = MARKED.find((r) => agent.includes(`bench-role/${r}`)) ?? 'handler';
      // `AmazonSQS.ReceiveMessage`, `DynamoDB_20120810.PutItem`: the operation after the dot.
      const target = request.headers['x-amz-target'];
      add(role, `${service}.${typeof target === 'string' ? (target.split('.')[1] ?? target) : 'unknown'}`, 1);
      if (service !== 'DynamoDB') return;
      add(role, SENT, Number(request.headers['content-length'] ?? 0));
      // dynalite answers with one `end(body)`.
      const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
      response.end = ((...args: unknown[]) => {
        if (typeof args[0] === 'string' || args[0] instanceof Uint8Array) add(role, RECEIVED, Buffer.byteLength(args[0]));
        return end(...args);
      }) as ServerResponse['end'];
    },
  });
  return { ...emulators, snapshot: (): RequestCounts => structuredClone(counts) };
}

/** The requests made between two snapshots. */
export function countsBetween(before: RequestCounts, after: RequestCounts): RequestCounts {
  const out: RequestCounts = { handler: {}, poller: {}, producer: {}, setup: {} };
  for (const role of Object.keys(after) as Role[]) {
    for (const [key, n] of Object.entries(after[role])) if (n > (before[role][key] ?? 0)) out[role][key] = n - (before[role][key] ?? 0);
  }
  return out;
}

const WRITES = /^DynamoDB\.(PutItem|UpdateItem|DeleteItem|BatchWriteItem|TransactWriteItems)$/;
const READS = /^DynamoDB\.(GetItem|Query|Scan|BatchGetItem|TransactGetItems)$/;

/** The handler's requests (a batch operation counts as one) and DynamoDB bytes, and the poller's SQS requests, per delivered event. */
export function perDelivery(requests: RequestCounts, delivered: number) {
  const total = (role: Role, pattern: RegExp) => Object.entries(requests[role]).reduce((sum, [key, n]) => (pattern.test(key) ? sum + n : sum), 0);
  const per = (n: number) => (delivered > 0 ? n / delivered : Number.NaN);
  return {
    dynamodbWrites: per(total('handler', WRITES)),
    dynamodbReads: per(total('handler', READS)),
    dynamodbBytesSent: per(requests.handler[SENT] ?? 0),
    dynamodbBytesReceived: per(requests.handler[RECEIVED] ?? 0),
    // The handler's own SQS calls (billed to the consumer) apart from the poller's receives and deletes (the event source's).
    handlerSqs: per(total('handler', /^SQS\./)),
    pollerSqs: per(total('poller', /^SQS\./)),
  };
}

/** An answer: a status after `afterMs`; status 0 answers nothing and drops the connection then (Infinity: at close). */
export interface Answer {
  readonly status: number;
  readonly afterMs?: number;
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * A webhook receiver on 127.0.0.1 that answers as told per event ID (200 at once by default, or
 * after `delayMs`) and notes, on this process's clock (the one the producer stamps sends with),
 * each ID's first request and first 2xx; a 2xx for an ID that had one is a repeat.
 */
export async function startReceiver(answer: (id: string) => Answer = () => ({ status: 200 }), onApplied?: (id: string, request: IncomingMessage) => void) {
  const arrivals = new Map<string, number>();
  const applied = new Map<string, number>();
  const open = new Set<ServerResponse>();
  const state = { url: '', arrivals, applied, requests: 0, repeats: 0, delayMs: 0, lastArrivalAt: performance.now(), close: async () => {} };
  const server = createServer((request, response) => {
    // Consumed and discarded: the bench counts events, it never reads payloads.
    request.resume();
    request.on('end', () => {
      const id = String(request.headers['idempotency-key'] ?? '');
      state.requests += 1;
      if (!arrivals.has(id)) arrivals.set(id, (state.lastArrivalAt = performance.now()));
      const { status, afterMs = state.delayMs } = answer(id);
      open.add(response);
      response.on('close', () => open.delete(response));
      const respond = () => {
        if (status === 0) return void response.destroy();
        if (status < 300 && applied.has(id)) state.repeats += 1;
        else if (status < 300) applied.set(id, (onApplied?.(id, request), performance.now()));
        response.writeHead(status, { 'content-length': '0' });
        response.end();
      };
      if (afterMs === 0) respond();
      else if (afterMs !== Infinity) setTimeout(respond, afterMs);
    });
  });
  // Keep-alive sockets stay open as a real receiver's would; the consumers reuse them.
  server.keepAliveTimeout = 60_000;
  const listening = await listenOnLoopback(server);
  return Object.assign(state, {
    url: listening.url,
    close: async () => {
      for (const response of open) response.destroy();
      await listening.close();
    },
  });
}

/** SDK clients for the bench's own calls, each marked with its role in the user agent. */
function benchClients(bench: Bench) {
  const config = (role: (typeof MARKED)[number]) => ({ region: REGION, credentials: CREDENTIALS, customUserAgent: `bench-role/${role}` });
  const sqs = (role: (typeof MARKED)[number]) => new SQSClient({ ...config(role), endpoint: bench.emulators.sqsEndpoint, useQueueUrlAsEndpoint: false });
  return {
    setupSqs: sqs('setup'),
    pollerSqs: sqs('poller'),
    producerSqs: sqs('producer'),
    setupDynamodb: new DynamoDBClient({ ...config('setup'), endpoint: bench.emulators.dynamodbEndpoint }),
  };
}

/** A valid event (docs/contract.md §2), about 200 bytes like a typical shipment update. */
export function eventBody(id: string, shipmentId = `shp_${id.slice(-8)}`, status = 'in_transit'): string {
  return JSON.stringify({ id, shipmentId, status, occurredAt: new Date().toISOString(), data: { carrier: 'acme', hub: 'FRA-3', eta: '2026-12-03T09:00:00Z' } });
}

/** A made-up SQS record for direct invocations (success paths never use its receipt handle). */
export function syntheticRecord(id: string, queueArn: string): SQSRecord {
  const now = String(Date.now());
  return {
    messageId: randomUUID(),
    receiptHandle: `bench-${randomUUID()}`,
    body: eventBody(id),
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: now, SenderId: 'BENCH', ApproximateFirstReceiveTimestamp: now },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: REGION,
  };
}

export type Consumer = Awaited<ReturnType<typeof startConsumer>>;

/**
 * One consumer on fresh resources: a queue and dead-letter queue, its table (handoff's ledger, the
 * Powertools idempotency table), with `endpoints` a registry of them (handoff only); its workers,
 * and unless `poll` is false the poller on its queue. `take` sees each line a handler writes first
 * (true: the scenario's, not shown).
 */
export async function startConsumer(
  bench: Bench,
  name: ConsumerName,
  options: { readonly label: string; readonly endpoints?: readonly EndpointFields[]; readonly poll?: boolean; readonly take?: (line: string) => boolean },
) {
  const { label } = options;
  const runId = randomUUID().slice(0, 8);
  const clients = benchClients(bench);
  const timings = derivedTimings(DEFAULT_SETTINGS);
  const createQueue = async (queueName: string, attributes: Record<string, string> = {}) =>
    (await clients.setupSqs.send(new CreateQueueCommand({ QueueName: queueName, Attributes: attributes }))).QueueUrl!;
  const deadLetterQueueUrl = await createQueue(`bench-${runId}-${name}-dlq`);
  const queueUrl = await createQueue(`bench-${runId}-${name}`, { VisibilityTimeout: String(timings.visibilityTimeoutSeconds) });
  const { Attributes } = await clients.setupSqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  const queueArn = Attributes?.QueueArn ?? `arn:aws:sqs:${REGION}:000000000000:bench-${name}`;
  // The bench's environment less handoff's and AWS's settings: each worker gets exactly its own.
  const env: Record<string, string> = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !/^(HANDOFF_|AWS_|POWERTOOLS_)/.test(e[0])),
  );
  Object.assign(env, {
    AWS_REGION: REGION,
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_SQS: bench.emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: bench.emulators.dynamodbEndpoint,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    AWS_LAMBDA_FUNCTION_NAME: `bench-${name}`,
    HANDOFF_WEBHOOK_URL: bench.receiver.url,
  });
  if (name === 'handoff') {
    const ledgerTable = `bench-${runId}-ledger`;
    await createLedgerTable(clients.setupDynamodb, ledgerTable);
    const settings = { ...DEFAULT_SETTINGS, webhookUrl: bench.receiver.url, allowHttp: true, allowPrivateCidrs: ['127.0.0.0/8', '::1/128'] };
    Object.assign(env, settingsToEnvironment(settings), {
      [RESOURCE_ENV.ledgerTable]: ledgerTable,
      [RESOURCE_ENV.queueUrl]: queueUrl,
      [RESOURCE_ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
      [RESOURCE_ENV.sealKey]: MessageSeal.generateKey(),
    });
  }
  if (options.endpoints) {
    const tableName = (env[RESOURCE_ENV.endpointsTable] = `bench-${runId}-endpoints`);
    await createEndpointsTable(clients.setupDynamodb, tableName);
    await seedEndpoints(new DynamoDbEndpointRegistry({ client: clients.setupDynamodb, tableName }), options.endpoints, Date.now());
  }
  if (name === 'powertools') {
    env.IDEMPOTENCY_TABLE = `bench-${runId}-idempotency`;
    await clients.setupDynamodb.send(
      new CreateTableCommand({
        TableName: env.IDEMPOTENCY_TABLE,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      }),
    );
  }

  const measurements: Measurement[] = [];
  /** When each measurement arrived (performance.now()): about when its invocation ended. */
  const measuredAt: number[] = [];
  let invokedRecords = 0;
  let measuredRecords = 0;
  let outstanding = 0;
  const pool = new WorkerPool({
    workerPath: here('./worker.ts'),
    handlerPath: HANDLER_PATHS[name],
    env,
    timeoutMs: timings.functionTimeoutSeconds * 1000,
    onOutput: (line) => {
      if (line.startsWith(MEASUREMENT_PREFIX)) {
        const measurement = JSON.parse(line.slice(MEASUREMENT_PREFIX.length)) as Measurement;
        measurements.push(measurement);
        measuredAt.push(performance.now());
        measuredRecords += measurement.records;
      } else if (!options.take?.(line) && /"level":"(WARN|ERROR)"|Error/.test(line)) {
        // The handlers' info lines and metric documents are dropped: thousands of event IDs.
        bench.log(`${label} worker: ${line.slice(0, 300)}`);
      }
    },
    log: (line) => bench.progress(`${label} ${line}`),
  });
  const invoke = async (event: SQSEvent): Promise<Invocation> => {
    invokedRecords += event.Records.length;
    outstanding += 1;
    try {
      return await pool.invoke(event);
    } finally {
      outstanding -= 1;
    }
  };
  const counts = { settledRecords: 0, failedBatches: 0 };
  const poller =
    options.poll === false
      ? undefined
      : startPoller({
          sqs: clients.pollerSqs,
          queueUrl,
          source: { queueArn, region: REGION },
          batchSize: BATCH_SIZE,
          maxConcurrency: MAX_CONCURRENCY,
          invoke,
          onBatch: (report) => {
            if (report.settlement.kind === 'settled') counts.settledRecords += report.settlement.deleteIds.length;
            else counts.failedBatches += 1;
          },
          log: (line) => bench.log(`${label} poller: ${line}`),
        });
  /** Waits until no invocation is in flight and each one's measurement line has arrived. */
  const quiesce = () => waitFor(() => outstanding === 0 && measuredRecords >= invokedRecords);
  return {
    runId,
    queueUrl,
    queueArn,
    counts,
    measurements,
    measuredAt,
    invoke,
    quiesce,
    /** Sends bodies through the producer's client: one SendMessage for one body, else a batch. */
    async send(bodies: readonly string[]) {
      if (bodies.length === 1) await clients.producerSqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: bodies[0] }));
      else await clients.producerSqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: bodies.map((body, i) => ({ Id: String(i), MessageBody: body })) }));
    },
    /** Excluded from every figure: each worker's cold start at once, on a full batch of synthetic records. */
    async warmUp() {
      const warmed = await Promise.all(
        Array.from({ length: MAX_CONCURRENCY }, (_, w) =>
          invoke({ Records: Array.from({ length: BATCH_SIZE }, (_, i) => syntheticRecord(`warm-${runId}-${w}-${i}`, queueArn)) }),
        ),
      );
      const broken = warmed.find((invocation) => invocation.kind !== 'returned');
      if (broken) throw new Error(`${label} the warm-up invocation failed: ${JSON.stringify(broken)}`);
      await quiesce();
    },
    async close() {
      // Batches in flight end within the function timeout; whatever is left on the queue stays there.
      await poller?.stop(timings.functionTimeoutSeconds * 1000);
      await pool.close();
      for (const client of Object.values(clients)) client.destroy();
    },
  };
}

/**
 * The producer: sends `next()`'s bodies whenever `room()` says the window has room, until `next()`
 * has none or `until` (performance.now()) passes, then waits for `done()` or the window's end;
 * `tick` every 500 ms. False when nothing arrived at the receiver for STALL_MS (`quietSince`).
 */
export async function produce(
  consumer: Pick<Consumer, 'send'>,
  o: { room: () => boolean; next: () => readonly string[] | undefined; quietSince: () => number; until?: number; done?: () => boolean; tick: () => void },
): Promise<boolean> {
  const until = o.until ?? Infinity;
  const ticking = setInterval(o.tick, 500);
  try {
    for (;;) {
      if (!(await waitFor(() => o.room() || performance.now() >= until, o.quietSince))) return false;
      const bodies = performance.now() < until ? o.next() : undefined;
      if (!bodies) break;
      await consumer.send(bodies);
    }
    // A window closes on time: whatever is still on its way is not counted.
    if (until < Infinity) await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - performance.now())));
    return o.done ? await waitFor(o.done, o.quietSince) : true;
  } finally {
    clearInterval(ticking);
    o.tick();
  }
}

/** True once `condition` holds (checked every few ms); false when nothing moved for STALL_MS since the call or `quietSince()`. */
export async function waitFor(condition: () => boolean, quietSince?: () => number): Promise<boolean> {
  const startedAt = performance.now();
  while (!condition()) {
    if (performance.now() - Math.max(startedAt, quietSince?.() ?? startedAt) > STALL_MS) return false;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return true;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? Number.NaN : sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Nearest rank: the smallest value with at least p% of values at or below it. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return values.length === 0 ? Number.NaN : sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
}
