/**
 * `npm run rate-limit`: how closely the per-endpoint rate limit (`rateLimitPerSecond`, docs/contract.md
 * §11) holds, and what it costs per delivery, measured on the sandbox's machinery.
 *
 * For each limit (default 5, then 50): fresh emulators (fauxqs, dynalite on 127.0.0.1), the stack's
 * queue settings, one endpoint with that limit on a loopback receiver that answers 200 at once and
 * notes when each request arrived, and a backlog of events large enough to keep the endpoint
 * saturated for the whole run. The real consumer (functions/consumer.ts, limiter included) runs in
 * the sandbox's worker processes (sandbox/worker-pool.ts) driven by its poller (sandbox/poller.ts,
 * Lambda's SQS contract) with 5 batches of 10 at once: 5 consumers sharing the endpoint's schedule.
 * After a warm-up, requests are counted for the window (60 s by default).
 *
 * Printed per limit: mean requests per second over the window and its error against the limit, the
 * most requests in any 1 s (sliding, exact arrival times) and the range of whole-second buckets,
 * duplicates and dead letters; and per delivery, over the whole backlog once drained (a delivery's
 * reservation and put-back come up to the horizon before its request), the registry writes the
 * reservations made (refused conditional writes included) in write units at the registry item's
 * size, and the SQS requests (the consumer's put-backs and holds, the poller's receives and deletes)
 * and RateLimited.
 *
 * First, a control: the same pipeline with no limit for `--control` seconds (default 15; 0 skips it),
 * which shows what these consumers can deliver on this machine at the time: a limit above that
 * cannot be reached, whatever the limiter does.
 *
 * Options: --limits 5,50  --seconds 60  --warmup 10  --control 15  --json (one JSON object on stdout).
 * Run it on a quiet machine: it measures wall-clock rates.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DEFAULT_SETTINGS, derivedTimings, QUEUE_RETENTION_SECONDS, RESOURCE_ENV, settingsToEnvironment } from '../lib/config';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { RATE_HORIZON_MS } from '../lib/endpoints/rate-limit';
import { generateSecret } from '../lib/endpoints/secret';
import { itemSizeBytes } from '../lib/ledger/item-size';
import { readMetricDocument } from '../lib/observability';
import { safe } from '../lib/terminal';
import { startEmulators } from '../sandbox/emulators';
import { createEndpointsTable } from '../sandbox/endpoints-table';
import { createLedgerTable } from '../sandbox/ledger-table';
import { startPoller } from '../sandbox/poller';
import { WorkerPool } from '../sandbox/worker-pool';
import { listenOnLoopback } from '../test/helpers/loopback';
import { MessageSeal } from '../lib/queue/seal';

const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'ratelimit', secretAccessKey: 'ratelimit' };
const CONSUMERS = 5;
const BATCH_SIZE = 10;
const ENDPOINT = 'limited';
const ENDPOINTS_TABLE = 'handoff-endpoints';
const LEDGER_TABLE = 'handoff-ledger';
/** This script's own clients mark their requests, so the consumer's are told apart at the emulators. */
const MARK = 'ratelimit-role/';
/** The control's backlog: more than these consumers deliver in its window on this machine. */
const CONTROL_BACKLOG = 6000;
type Role = 'consumer' | 'poller' | 'producer' | 'setup';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

interface Counts {
  /** `SQS.SendMessageBatch`, `DynamoDB.UpdateItem` …, by role. */
  readonly requests: Record<Role, Record<string, number>>;
  /** The consumer's requests on the registry table: `UpdateItem ok`, `UpdateItem refused`, `GetItem`, `Scan`. */
  readonly registry: Record<string, number>;
}

function emptyCounts(): Counts {
  return { requests: { consumer: {}, poller: {}, producer: {}, setup: {} }, registry: {} };
}

function minus(after: Counts, before: Counts): Counts {
  const out = emptyCounts();
  for (const role of Object.keys(after.requests) as Role[]) {
    for (const [op, n] of Object.entries(after.requests[role])) out.requests[role][op] = n - (before.requests[role][op] ?? 0);
  }
  for (const [op, n] of Object.entries(after.registry)) out.registry[op] = n - (before.registry[op] ?? 0);
  return out;
}

interface RunResult {
  /** Undefined: the control run, with no limit. */
  readonly limit: number | undefined;
  readonly backlog: number;
  readonly windowSeconds: number;
  readonly requests: number;
  readonly meanRps: number;
  readonly errorPercent: number;
  readonly maxInAnySecond: number;
  readonly bucketMin: number;
  readonly bucketMax: number;
  readonly duplicates: number;
  readonly deadLetters: number;
  /** Events not yet delivered when the window closed: above 0, the endpoint was saturated throughout. */
  readonly backlogLeftAtEnd: number;
  readonly registryItemBytes: number;
  readonly perDelivery: {
    readonly reservationWrites: number;
    readonly refusedWrites: number;
    readonly writeUnits: number;
    readonly registryReads: number;
    readonly sqs: Record<string, number>;
    readonly sqsTotal: number;
  };
  /** Deliveries over the whole run (the backlog, once drained): the cost's denominator. */
  readonly delivered: number;
  /** RateLimited over the whole run (the consumers' metric documents). */
  readonly rateLimited: number;
}

/** `limit` undefined: the control, the same pipeline with no limit (what these consumers can do on this machine now). */
async function run(limit: number | undefined, windowSeconds: number, warmupSeconds: number, log: (line: string) => void): Promise<RunResult> {
  const label = limit === undefined ? 'no limit (control)' : `limit ${limit}/s`;
  const counts = emptyCounts();
  const roleOf = (request: IncomingMessage): Role => {
    const agent = String(request.headers['x-amz-user-agent'] ?? request.headers['user-agent'] ?? '');
    const at = agent.indexOf(MARK);
    return at === -1 ? 'consumer' : (agent.slice(at + MARK.length).split(/[\s/]/)[0] as Role);
  };
  const onRequest = (service: 'SQS' | 'DynamoDB', request: IncomingMessage, response: ServerResponse) => {
    const target = request.headers['x-amz-target'];
    const operation = typeof target === 'string' ? (target.split('.')[1] ?? target) : 'unknown';
    const role = roleOf(request);
    const key = `${service}.${operation}`;
    counts.requests[role][key] = (counts.requests[role][key] ?? 0) + 1;
    if (service !== 'DynamoDB' || role !== 'consumer') return;
    // The table a request names is in its body; dynalite reads the same stream.
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    response.on('finish', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!body.includes(`"TableName":"${ENDPOINTS_TABLE}"`)) return;
      const what = operation === 'UpdateItem' ? `UpdateItem ${response.statusCode === 200 ? 'ok' : 'refused'}` : operation;
      counts.registry[what] = (counts.registry[what] ?? 0) + 1;
    });
  };
  const emulators = await startEmulators({ onRequest });
  const client = (role: Role) => ({ region: REGION, credentials: CREDENTIALS, customUserAgent: `${MARK}${role}` });
  const setupSqs = new SQSClient({ ...client('setup'), endpoint: emulators.sqsEndpoint, useQueueUrlAsEndpoint: false });
  const producerSqs = new SQSClient({ ...client('producer'), endpoint: emulators.sqsEndpoint, useQueueUrlAsEndpoint: false });
  const pollerSqs = new SQSClient({ ...client('poller'), endpoint: emulators.sqsEndpoint, useQueueUrlAsEndpoint: false });
  const dynamodb = new DynamoDBClient({ ...client('setup'), endpoint: emulators.dynamodbEndpoint });

  // The receiver: 200 at once, each request's arrival noted (by event ID, to see duplicates).
  const arrivals: number[] = [];
  const seen = new Set<string>();
  let duplicates = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.push(performance.now());
      const id = String(req.headers['idempotency-key'] ?? '');
      if (seen.has(id)) duplicates += 1;
      else seen.add(id);
      res.writeHead(200, { 'content-length': '0' });
      res.end();
    });
  });
  const receiver = await listenOnLoopback(server);

  const closers: (() => Promise<unknown>)[] = [];
  try {
    const settings = { ...DEFAULT_SETTINGS, allowHttp: true, allowPrivateCidrs: ['127.0.0.0/8'] };
    const timings = derivedTimings(settings);
    const createQueue = async (name: string, attributes: Record<string, string>) => {
      const { QueueUrl } = await setupSqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
      return QueueUrl!;
    };
    const deadLetterQueueUrl = await createQueue('handoff-dead-letters', { MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS) });
    const { Attributes: dlq } = await setupSqs.send(new GetQueueAttributesCommand({ QueueUrl: deadLetterQueueUrl, AttributeNames: ['QueueArn'] }));
    const queueUrl = await createQueue('handoff-deliveries', {
      VisibilityTimeout: String(timings.visibilityTimeoutSeconds),
      MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq!.QueueArn, maxReceiveCount: timings.maxReceiveCount }),
    });
    const { Attributes: q } = await setupSqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
    await createLedgerTable(dynamodb, LEDGER_TABLE);
    await createEndpointsTable(dynamodb, ENDPOINTS_TABLE);
    const registry = new DynamoDbEndpointRegistry({ client: dynamodb, tableName: ENDPOINTS_TABLE });
    await registry.add(
      { name: ENDPOINT, url: receiver.url, eventTypes: ['*'], secret: generateSecret(), ...(limit !== undefined ? { rateLimitPerSecond: limit } : {}) },
      Date.now(),
    );

    // Enough to keep the endpoint saturated past the window, with a quarter to spare.
    const backlog = limit === undefined ? CONTROL_BACKLOG : Math.ceil(limit * (warmupSeconds + windowSeconds) * 1.25) + 50;
    log(`${label}: sending a backlog of ${backlog} events`);
    for (let start = 0; start < backlog; start += 10) {
      const entries = Array.from({ length: Math.min(10, backlog - start) }, (_, i) => {
        const n = start + i;
        const body = JSON.stringify({ id: `evt_rl_${limit ?? 'control'}_${n}`, shipmentId: `shp_${n}`, status: 'in_transit', occurredAt: new Date().toISOString() });
        return { Id: String(i), MessageBody: body };
      });
      await producerSqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    }

    let rateLimited = 0;
    const beforeAll = structuredClone(counts);
    const pool = new WorkerPool({
      workerPath: here('../sandbox/worker.ts'),
      handlerPath: here('../functions/consumer.ts'),
      env: {
        ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_'))),
        AWS_REGION: REGION,
        AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
        AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint,
        AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbEndpoint,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...settingsToEnvironment({ ...settings, webhookUrl: undefined }),
        [RESOURCE_ENV.ledgerTable]: LEDGER_TABLE,
        [RESOURCE_ENV.endpointsTable]: ENDPOINTS_TABLE,
        [RESOURCE_ENV.queueUrl]: queueUrl,
        [RESOURCE_ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
        [RESOURCE_ENV.sealKey]: MessageSeal.generateKey(),
      },
      timeoutMs: timings.functionTimeoutSeconds * 1000,
      onOutput: (line) => {
        const document = readMetricDocument(line);
        if (document?.endpoint === ENDPOINT) rateLimited += (document.values.RateLimited ?? []).reduce((a, b) => a + b, 0);
        else if (/"level":"(warn|error)"/.test(line)) log(`consumer: ${line.slice(0, 300)}`);
      },
      log: () => {},
    });
    closers.push(() => pool.close());
    const poller = startPoller({
      sqs: pollerSqs,
      queueUrl,
      source: { queueArn: q!.QueueArn!, region: REGION },
      batchSize: BATCH_SIZE,
      maxConcurrency: CONSUMERS,
      invoke: (event) => pool.invoke(event),
      log: (line) => log(`poller: ${line}`),
    });
    closers.push(() => poller.stop(5_000));

    // Warm-up from the first request; then the window.
    while (arrivals.length === 0) await sleep(50);
    const firstAt = arrivals[0]!;
    await sleep(Math.max(0, firstAt + warmupSeconds * 1000 - performance.now()));
    const start = performance.now();
    log(`${label}: measuring for ${windowSeconds} s`);
    await sleep(windowSeconds * 1000);
    const end = start + windowSeconds * 1000;
    const deliveredBeforeEnd = arrivals.filter((t) => t < end).length;
    // The cost is counted over the whole backlog, start to drained: a delivery's reservation and
    // put-back happen long before its request (up to the horizon), so a window's counts would not match its deliveries.
    if (limit !== undefined) {
      log(`${label}: draining the rest of the backlog for the cost`);
      const drainDeadline = performance.now() + (backlog / limit + 120) * 1000;
      while (seen.size < backlog && performance.now() < drainDeadline) await sleep(200);
    }
    await sleep(1_500); // the last batches' deletes and metric documents
    const whole = minus(structuredClone(counts), beforeAll);

    const inWindow = arrivals.filter((t) => t >= start && t < end);
    const buckets = new Array<number>(windowSeconds).fill(0);
    for (const t of inWindow) buckets[Math.floor((t - start) / 1000)]! += 1;
    let maxInAnySecond = 0;
    for (let i = 0, j = 0; j < inWindow.length; j++) {
      while (inWindow[j]! - inWindow[i]! >= 1000) i++;
      maxInAnySecond = Math.max(maxInAnySecond, j - i + 1);
    }
    const { Item } = await dynamodb.send(new GetItemCommand({ TableName: ENDPOINTS_TABLE, Key: { name: { S: ENDPOINT } }, ConsistentRead: true }));
    const registryItemBytes = itemSizeBytes(Item ?? {});
    const { Attributes: dl } = await setupSqs.send(new GetQueueAttributesCommand({ QueueUrl: deadLetterQueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }));

    const n = inWindow.length;
    const delivered = seen.size;
    const per = (value: number) => (delivered === 0 ? 0 : value / delivered);
    const ok = whole.registry['UpdateItem ok'] ?? 0;
    const refused = whole.registry['UpdateItem refused'] ?? 0;
    const sqs: Record<string, number> = {};
    for (const role of ['consumer', 'poller'] as const) {
      for (const [op, count] of Object.entries(whole.requests[role])) {
        if (op.startsWith('SQS.')) sqs[`${role} ${op.slice(4)}`] = per(count);
      }
    }
    const meanRps = n / windowSeconds;
    return {
      limit,
      backlog,
      windowSeconds,
      requests: n,
      meanRps,
      errorPercent: limit === undefined ? Number.NaN : ((meanRps - limit) / limit) * 100,
      maxInAnySecond,
      bucketMin: Math.min(...buckets),
      bucketMax: Math.max(...buckets),
      duplicates,
      deadLetters: Number(dl?.ApproximateNumberOfMessages ?? 0),
      backlogLeftAtEnd: backlog - deliveredBeforeEnd,
      registryItemBytes,
      perDelivery: {
        reservationWrites: per(ok + refused),
        refusedWrites: per(refused),
        writeUnits: per((ok + refused) * Math.ceil(registryItemBytes / 1024)),
        registryReads: per(whole.registry.GetItem ?? 0),
        sqs,
        sqsTotal: Object.values(sqs).reduce((a, b) => a + b, 0),
      },
      delivered,
      rateLimited,
    };
  } finally {
    for (const close of closers.reverse()) await close().catch(() => {});
    await receiver.close();
    for (const c of [setupSqs, producerSqs, pollerSqs, dynamodb]) c.destroy();
    await emulators.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function table(results: readonly RunResult[]): string {
  const f = (x: number, d = 2) => x.toFixed(d);
  const lines = [
    '| limit (rps) | observed mean rps | error | max in any 1 s | 1 s buckets | duplicates | dead letters | backlog left at end |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.limit} | ${f(r.meanRps)} | ${r.errorPercent >= 0 ? '+' : ''}${f(r.errorPercent, 1)} % | ${r.maxInAnySecond} | ${r.bucketMin}–${r.bucketMax} | ${r.duplicates} | ${r.deadLetters} | ${r.backlogLeftAtEnd} |`,
    ),
    '',
    '| per delivery, limit (rps) | deliveries | RateLimited | reservation writes | of them refused | write units (item size) | registry reads | SQS requests (consumer + poller) | of them |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...results.map(
      (r) =>
        `| ${r.limit} | ${r.delivered} | ${f(r.rateLimited / Math.max(1, r.delivered), 3)} | ${f(r.perDelivery.reservationWrites, 3)} | ${f(r.perDelivery.refusedWrites, 3)} | ${f(r.perDelivery.writeUnits, 3)} (${r.registryItemBytes} B) | ${f(r.perDelivery.registryReads, 3)} | ${f(r.perDelivery.sqsTotal, 3)} | ${Object.entries(r.perDelivery.sqs)
          .sort()
          .map(([op, v]) => `${op} ${f(v, 3)}`)
          .join(', ')} |`,
    ),
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      limits: { type: 'string', default: '5,50' },
      seconds: { type: 'string', default: '60' },
      warmup: { type: 'string', default: '10' },
      json: { type: 'boolean', default: false },
      control: { type: 'string', default: '15' },
    },
  });
  const limits = values.limits.split(',').map((raw) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 10_000) throw new Error(`--limits: each must be a whole number from 1 to 10000, got "${raw}"`);
    return n;
  });
  const seconds = Number(values.seconds);
  const warmup = Number(values.warmup);
  if (!Number.isInteger(seconds) || seconds < 5) throw new Error(`--seconds must be a whole number from 5, got "${values.seconds}"`);
  if (!Number.isInteger(warmup) || warmup < 0) throw new Error(`--warmup must be a whole number, got "${values.warmup}"`);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  log(`rate limit: ${CONSUMERS} consumers (batches of ${BATCH_SIZE}), horizon ${RATE_HORIZON_MS / 1000} s, window ${seconds} s after ${warmup} s`);
  const controlSeconds = Number(values.control);
  if (!Number.isInteger(controlSeconds) || controlSeconds < 0) throw new Error(`--control must be whole seconds (0: none), got "${values.control}"`);
  const control = controlSeconds > 0 ? await run(undefined, controlSeconds, 3, log) : undefined;
  const results: RunResult[] = [];
  for (const limit of limits) results.push(await run(limit, seconds, warmup, log));
  const load = loadavg().map((x) => x.toFixed(1)).join('/');
  if (values.json) process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), loadAverageAtEnd: load, control, results }, null, 2)}\n`);
  else {
    if (control) {
      process.stdout.write(
        `Control, no limit: ${control.meanRps.toFixed(1)} requests/s over ${control.windowSeconds} s (what these ${CONSUMERS} consumers deliver on this machine now).\n\n`,
      );
    }
    process.stdout.write(`${table(results)}\n\nLoad average at the end: ${load}.\n`);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`rate-limit: ${safe(error instanceof Error ? error.message : String(error))}\n`);
  process.exitCode = 1;
});
