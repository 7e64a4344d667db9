/**
 * A consumer under test, once for every scenario: its queue and tables on the counting emulators
 * (bench/harness.ts), its handler in bench/worker.ts processes (sandbox/worker-pool.ts: one batch at
 * a time each, as Lambda environments) driven by sandbox/poller.ts (Lambda's SQS event-source
 * contract: receive up to the batch size, invoke, delete every record not reported failed), and the
 * producer that keeps a window.
 *
 * handoff's handler is functions/consumer.ts itself, `createConsumer(consumerDeps(env))`: the
 * deployed wiring, in processes of its own so each invocation's CPU is the handler's alone.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { derivedTimings, DEFAULT_SETTINGS, RESOURCE_ENV, settingsToEnvironment } from '../lib/config';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../lib/endpoints/endpoint';
import { MessageSeal } from '../lib/queue/seal';
import { createEndpointsTable, seedEndpoints } from '../sandbox/endpoints-table';
import { createLedgerTable } from '../sandbox/ledger-table';
import { startPoller, type Invocation } from '../sandbox/poller';
import { WorkerPool } from '../sandbox/worker-pool';
import type { Invocation as Measurement } from '../sandbox/worker-runtime';
import { sqsRecord } from '../test/helpers/sqs-records';
import type { Bench, Role } from './harness';

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

/** What bench/worker.ts writes before each invocation's measurement. */
const MEASUREMENT_PREFIX = '@@bench ';

/** SDK clients for the bench's own calls, each marked with its role in the user agent. */
function benchClients(bench: Bench) {
  const config = (role: Exclude<Role, 'handler'>) => ({ region: REGION, credentials: CREDENTIALS, customUserAgent: `bench-role/${role}` });
  const sqs = (role: Exclude<Role, 'handler'>) => new SQSClient({ ...config(role), endpoint: bench.emulators.sqsEndpoint, useQueueUrlAsEndpoint: false });
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
export const syntheticRecord = (id: string, queueArn: string): SQSRecord => sqsRecord(eventBody(id), { eventSourceARN: queueArn });

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
  options: {
    readonly label: string;
    readonly endpoints?: readonly EndpointFields[];
    readonly poll?: boolean;
    readonly take?: (line: string) => boolean;
    /** Variables over the worker's (tracing's OTEL_*: bench/tracing.ts). */
    readonly env?: Readonly<Record<string, string>>;
  },
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
  if (options.env) Object.assign(env, options.env);
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
