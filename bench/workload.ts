/**
 * One consumer through the bench's workload, on the sandbox's machinery: a fresh queue (and
 * table) on the shared counting emulators, the handler in bench/worker.ts processes (one batch
 * at a time each, as Lambda environments) from sandbox/worker-pool.ts, driven by
 * sandbox/poller.ts, which keeps Lambda's SQS event-source contract (receive up to the batch
 * size, invoke, delete every record not reported failed).
 *
 * Phases, each timed on `performance.now()` in this process:
 * - warm-up (excluded): every worker started and used once, then a short run through the queue;
 * - loaded: `events` events, the producer keeping at most `window` of them sent but not yet
 *   received, so the poller always has full batches waiting. Counts, CPU, throughput and
 *   latency under load come from here;
 * - unloaded: events sent one at a time, each after the previous one arrived: the latency of a
 *   single event through an idle system.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { derivedTimings, DEFAULT_SETTINGS, RESOURCE_ENV, settingsToEnvironment } from '../lib/config';
import { createLedgerTable } from '../sandbox/ledger-table';
import { startPoller, type BatchReport, type Invocation } from '../sandbox/poller';
import { WorkerPool } from '../sandbox/worker-pool';
import { countsBetween, roleAgent, type CountingEmulators, type RequestCounts } from './counting';
import { parseMeasurement, type Measurement } from './measurement';
import type { BenchReceiver } from './receiver';
import { MessageSeal } from '../lib/queue/seal';

export type ConsumerName = 'handoff' | 'naive' | 'powertools';

export const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const LOOPBACK_CIDRS = ['127.0.0.0/8', '::1/128'];
/** The stack's defaults: 10 records per batch, 5 batches at once. The same for every consumer. */
export const BATCH_SIZE = DEFAULT_SETTINGS.batchSize;
export const MAX_CONCURRENCY = DEFAULT_SETTINGS.maxConcurrency;
/** A phase with no arrival for this long is given up (a consumer that loses events). */
const STALL_MS = 30_000;

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
export const HANDLER_PATHS: Record<ConsumerName | 'empty' | 'sdk-clients', string> = {
  handoff: here('../functions/consumer.ts'),
  naive: here('./consumers/naive.ts'),
  powertools: here('./consumers/powertools.ts'),
  empty: here('./consumers/empty.ts'),
  'sdk-clients': here('./consumers/sdk-clients.ts'),
};

export interface PhaseResult {
  readonly events: number;
  readonly delivered: number;
  readonly wallSeconds: number;
  readonly latenciesMs: readonly number[];
  readonly complete: boolean;
}

export interface ConsumerRun {
  readonly name: ConsumerName;
  readonly loaded: PhaseResult;
  readonly unloaded: PhaseResult;
  /** Requests during the loaded phase, by role and operation. */
  readonly requests: RequestCounts;
  /** Handler CPU during the loaded phase, microseconds, summed over invocations. */
  readonly handlerCpuMicros: number;
  /**
   * CPU of the bench process itself during the loaded phase, microseconds: the emulators
   * answering the handler's and poller's requests, the poller, the producer and the receiver.
   */
  readonly sandboxCpuMicros: number;
  readonly invocations: number;
  /** Requests for an event the receiver already had, over the whole run. */
  readonly repeats: number;
  /** Batches the poller had to return whole (threw, timed out, died): should be 0. */
  readonly failedBatches: number;
}

export interface Bench {
  readonly emulators: CountingEmulators;
  readonly receiver: BenchReceiver;
  /** Where the run is: replaces the previous progress line on a terminal. */
  readonly progress: (line: string) => void;
  /** Something worth keeping on screen (a warning, a failed batch). */
  readonly log: (line: string) => void;
}

/** SDK clients for the bench's own calls, marked with their role (bench/counting.ts). */
export function benchClients(bench: Bench) {
  const sqs = (role: 'poller' | 'producer' | 'setup') =>
    new SQSClient({
      region: REGION,
      endpoint: bench.emulators.sqsEndpoint,
      credentials: CREDENTIALS,
      useQueueUrlAsEndpoint: false,
      customUserAgent: roleAgent(role),
    });
  return {
    setupSqs: sqs('setup'),
    pollerSqs: sqs('poller'),
    producerSqs: sqs('producer'),
    setupDynamodb: new DynamoDBClient({
      region: REGION,
      endpoint: bench.emulators.dynamodbEndpoint,
      credentials: CREDENTIALS,
      customUserAgent: roleAgent('setup'),
    }),
  };
}

export type Clients = ReturnType<typeof benchClients>;

/** A valid event (docs/contract.md §2) with this ID; about 200 bytes, like a typical shipment update. */
export function eventBody(id: string): string {
  return JSON.stringify({
    id,
    shipmentId: `shp_${id.slice(-8)}`,
    status: 'in_transit',
    occurredAt: new Date().toISOString(),
    data: { carrier: 'acme', hub: 'FRA-3', eta: '2026-12-03T09:00:00Z' },
  });
}

/** Creates the consumer's queues and tables; returns the environment its handler runs with. */
export async function provision(name: ConsumerName, bench: Bench, clients: Clients, runId: string) {
  const timings = derivedTimings(DEFAULT_SETTINGS);
  const createQueue = async (queueName: string, attributes: Record<string, string>) => {
    const { QueueUrl } = await clients.setupSqs.send(new CreateQueueCommand({ QueueName: queueName, Attributes: attributes }));
    if (!QueueUrl) throw new Error(`CreateQueue ${queueName} returned no URL`);
    return QueueUrl;
  };
  const deadLetterQueueUrl = await createQueue(`bench-${runId}-${name}-dlq`, {});
  const queueUrl = await createQueue(`bench-${runId}-${name}`, {
    VisibilityTimeout: String(timings.visibilityTimeoutSeconds),
  });
  const { Attributes } = await clients.setupSqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  const queueArn = Attributes?.QueueArn ?? `arn:aws:sqs:${REGION}:000000000000:bench-${name}`;

  const env: Record<string, string> = {
    ...inheritedEnvironment(),
    AWS_REGION: REGION,
    AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_SQS: bench.emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: bench.emulators.dynamodbEndpoint,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    AWS_LAMBDA_FUNCTION_NAME: `bench-${name}`,
    HANDOFF_WEBHOOK_URL: bench.receiver.url,
  };
  switch (name) {
    case 'handoff': {
      const ledgerTable = `bench-${runId}-ledger`;
      await createLedgerTable(clients.setupDynamodb, ledgerTable);
      Object.assign(
        env,
        settingsToEnvironment({
          ...DEFAULT_SETTINGS,
          webhookUrl: bench.receiver.url,
          allowHttp: true,
          allowPrivateCidrs: LOOPBACK_CIDRS,
        }),
        {
          [RESOURCE_ENV.ledgerTable]: ledgerTable,
          [RESOURCE_ENV.queueUrl]: queueUrl,
          [RESOURCE_ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
          [RESOURCE_ENV.sealKey]: MessageSeal.generateKey(),
        },
      );
      break;
    }
    case 'powertools': {
      const table = `bench-${runId}-idempotency`;
      await clients.setupDynamodb.send(
        new CreateTableCommand({
          TableName: table,
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        }),
      );
      env.IDEMPOTENCY_TABLE = table;
      break;
    }
    case 'naive':
      break;
  }
  return { env, queueUrl, queueArn, functionTimeoutMs: timings.functionTimeoutSeconds * 1000 };
}

/** The bench's environment without handoff or AWS settings: workers get exactly theirs. */
function inheritedEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith('HANDOFF_') && !key.startsWith('AWS_') && !key.startsWith('POWERTOOLS_')) {
      env[key] = value;
    }
  }
  return env;
}

/**
 * A consumer's workers, with the bench's measurements collected from their stderr and the
 * invocations in flight tracked, so a phase can wait until every invocation has been measured.
 */
export function startWorkers(
  handlerPath: string,
  env: Record<string, string>,
  timeoutMs: number,
  output: {
    readonly progress: (line: string) => void;
    readonly log: (line: string) => void;
    /** Sees every line a handler writes (its log lines and metric documents) first; true: taken, not shown. */
    readonly take?: (line: string) => boolean;
  },
) {
  const measurements: Measurement[] = [];
  /** When each measurement arrived (performance.now()): about when its invocation ended. */
  const measuredAt: number[] = [];
  let invokedRecords = 0;
  let measuredRecords = 0;
  let outstanding = 0;
  const pool = new WorkerPool({
    workerPath: here('./worker.ts'),
    handlerPath,
    env,
    timeoutMs,
    onOutput: (line) => {
      const measurement = parseMeasurement(line);
      if (measurement) {
        measurements.push(measurement);
        measuredAt.push(performance.now());
        measuredRecords += measurement.records;
      } else if (output.take?.(line)) {
        // The scenario's own.
      } else if (/"level":"(WARN|ERROR)"|Error/.test(line)) {
        // The handlers' info lines and metric documents are dropped: thousands of event IDs.
        output.log(`worker: ${line.slice(0, 300)}`);
      }
    },
    log: output.progress,
  });
  return {
    measurements,
    measuredAt,
    async invoke(event: SQSEvent): Promise<Invocation> {
      invokedRecords += event.Records.length;
      outstanding += 1;
      try {
        return await pool.invoke(event);
      } finally {
        outstanding -= 1;
      }
    },
    /** Waits until no invocation is in flight and each one's measurement line has arrived. */
    quiesce: () => waitFor(() => outstanding === 0 && measuredRecords >= invokedRecords, STALL_MS),
    close: () => pool.close(),
  };
}

/**
 * Lambda's event source for a consumer's workers: sandbox/poller.ts on the queue, batches of
 * BATCH_SIZE, MAX_CONCURRENCY at once, counting the records settled (deleted) and the batches that
 * failed whole.
 */
export function pollInto(
  bench: Bench,
  clients: Clients,
  queue: { readonly queueUrl: string; readonly queueArn: string },
  workers: Pick<ReturnType<typeof startWorkers>, 'invoke'>,
  label: string,
) {
  const counts = { settledRecords: 0, failedBatches: 0 };
  const poller = startPoller({
    sqs: clients.pollerSqs,
    queueUrl: queue.queueUrl,
    source: { queueArn: queue.queueArn, region: REGION },
    batchSize: BATCH_SIZE,
    maxConcurrency: MAX_CONCURRENCY,
    invoke: (event) => workers.invoke(event),
    onBatch: (report: BatchReport) => {
      if (report.settlement.kind === 'settled') counts.settledRecords += report.settlement.deleteIds.length;
      else counts.failedBatches += 1;
    },
    log: (line) => bench.log(`${label} poller: ${line}`),
  });
  return { counts, stop: (graceMs: number) => poller.stop(graceMs) };
}

/** A made-up SQS record for direct invocations (success paths never use its receipt handle). */
export function syntheticRecord(id: string, queueArn: string): SQSRecord {
  const nowMs = String(Date.now());
  return {
    messageId: randomUUID(),
    receiptHandle: `bench-${randomUUID()}`,
    body: eventBody(id),
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: nowMs, SenderId: 'BENCH', ApproximateFirstReceiveTimestamp: nowMs },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: REGION,
  };
}

export async function runConsumer(
  name: ConsumerName,
  bench: Bench,
  options: { readonly events: number; readonly unloadedEvents: number; readonly window: number },
): Promise<ConsumerRun> {
  const runId = randomUUID().slice(0, 8);
  const clients = benchClients(bench);
  const { env, queueUrl, queueArn, functionTimeoutMs } = await provision(name, bench, clients, runId);
  const workers = startWorkers(HANDLER_PATHS[name], env, functionTimeoutMs, {
    progress: (line) => bench.progress(`[${name}] ${line}`),
    log: (line) => bench.log(`[${name}] ${line}`),
  });
  const poller = pollInto(bench, clients, { queueUrl, queueArn }, workers, `[${name}]`);
  const { counts } = poller;
  const repeatsBefore = bench.receiver.repeats;
  /** Waits until `records` more records are settled (deleted) than at `from`, and measured. */
  const settle = async (from: number, records: number) => {
    await waitFor(() => counts.settledRecords - from >= records || counts.failedBatches > 0, STALL_MS);
    await workers.quiesce();
  };

  try {
    // Warm-up, excluded: start every worker at once (each a cold start), then once more
    // through the queue so the poller's and producer's connections are warm too.
    bench.progress(`[${name}] warm-up: ${MAX_CONCURRENCY} workers`);
    const warmEvents: SQSEvent[] = Array.from({ length: MAX_CONCURRENCY }, (_, w) => ({
      Records: Array.from({ length: BATCH_SIZE }, (_, i) => syntheticRecord(`warm-${runId}-${name}-${w}-${i}`, queueArn)),
    }));
    const warmed = await Promise.all(warmEvents.map((event) => workers.invoke(event)));
    const broken = warmed.find((invocation) => invocation.kind !== 'returned');
    if (broken) throw new Error(`${name}: the warm-up invocation failed: ${JSON.stringify(broken)}`);
    const warmUp = await runPhase(bench, clients, queueUrl, `warm2-${runId}-${name}`, 50, 50, () => {});
    if (!warmUp.complete) throw new Error(`${name}: the warm-up did not complete`);
    await settle(0, 50);

    // Loaded: counts and CPU between two quiet points.
    const measuredBefore = workers.measurements.length;
    const countsBefore = bench.emulators.snapshot();
    const settledBefore = counts.settledRecords;
    const cpuBefore = process.cpuUsage();
    const loaded = await runPhase(bench, clients, queueUrl, `load-${runId}-${name}`, options.events, options.window, (done) =>
      bench.progress(`[${name}] loaded: ${done}/${options.events} delivered`),
    );
    // The handler's last writes (and the poller's deletes) follow the webhook's answer.
    await settle(settledBefore, loaded.delivered);
    const sandboxCpu = process.cpuUsage(cpuBefore);
    const requests = countsBetween(countsBefore, bench.emulators.snapshot());
    const loadedInvocations = workers.measurements.slice(measuredBefore);

    // Unloaded.
    const unloaded = await runPhase(bench, clients, queueUrl, `idle-${runId}-${name}`, options.unloadedEvents, 1, (done) =>
      bench.progress(`[${name}] unloaded: ${done}/${options.unloadedEvents} delivered`),
    );

    return {
      name,
      loaded,
      unloaded,
      requests,
      handlerCpuMicros: loadedInvocations.reduce((sum, m) => sum + m.cpuMicros, 0),
      sandboxCpuMicros: sandboxCpu.user + sandboxCpu.system,
      invocations: loadedInvocations.length,
      repeats: bench.receiver.repeats - repeatsBefore,
      failedBatches: counts.failedBatches,
    };
  } finally {
    await poller.stop(functionTimeoutMs);
    await workers.close();
    for (const client of [clients.setupSqs, clients.pollerSqs, clients.producerSqs, clients.setupDynamodb]) client.destroy();
  }
}

/**
 * Sends `events` events, keeping at most `window` sent but not yet received, and waits for all
 * to arrive. Latency per event: from just before its send call to its first arrival.
 */
async function runPhase(
  bench: Bench,
  clients: Clients,
  queueUrl: string,
  prefix: string,
  events: number,
  window: number,
  onProgress: (delivered: number) => void,
): Promise<PhaseResult> {
  const { receiver } = bench;
  const sentAt = new Map<string, number>();
  const arrivedBefore = receiver.arrivals.size;
  const arrived = () => receiver.arrivals.size - arrivedBefore;
  const chunk = Math.min(window, 10);
  let lastArrivalAt = performance.now();
  const stopListening = receiver.onArrival(() => {
    lastArrivalAt = performance.now();
  });
  const progress = setInterval(() => onProgress(arrived()), 1000);
  const firstSendAt = performance.now();
  let complete = true;

  try {
    for (let next = 0; next < events; next += chunk) {
      const ids = Array.from({ length: Math.min(chunk, events - next) }, (_, i) => `${prefix}-${next + i}`);
      const room = window - ids.length;
      if (!(await waitFor(() => sentAt.size - arrived() <= room, STALL_MS, () => lastArrivalAt))) {
        complete = false;
        break;
      }
      const now = performance.now();
      for (const id of ids) sentAt.set(id, now);
      if (ids.length === 1) {
        await clients.producerSqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: eventBody(ids[0]!) }));
      } else {
        await clients.producerSqs.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: ids.map((id, i) => ({ Id: String(i), MessageBody: eventBody(id) })),
          }),
        );
      }
    }
    if (complete) complete = await waitFor(() => arrived() >= events, STALL_MS, () => lastArrivalAt);
  } finally {
    clearInterval(progress);
    stopListening();
  }

  const latenciesMs: number[] = [];
  let lastAt = firstSendAt;
  for (const [id, sent] of sentAt) {
    const at = receiver.arrivals.get(id);
    if (at === undefined) continue;
    latenciesMs.push(at - sent);
    lastAt = Math.max(lastAt, at);
  }
  onProgress(latenciesMs.length);
  return {
    events,
    delivered: latenciesMs.length,
    wallSeconds: (lastAt - firstSendAt) / 1000,
    latenciesMs,
    complete,
  };
}

/**
 * Resolves true once `condition` holds (checked every few ms), false when nothing moved for
 * `stallMs`: by default since the call; with `lastProgressAt`, since the last progress.
 */
export async function waitFor(condition: () => boolean, stallMs: number, lastProgressAt?: () => number): Promise<boolean> {
  const startedAt = performance.now();
  while (!condition()) {
    const since = Math.max(startedAt, lastProgressAt?.() ?? startedAt);
    if (performance.now() - since > stallMs) return false;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return true;
}
