/**
 * One slow endpoint and its neighbours (issue 26): a healthy endpoint's delivery rate with a
 * neighbour that answers, then with the same neighbour timing out on every request, the load mix
 * otherwise the same, on the bench's machinery (the counting emulators, handoff's consumer in
 * sandbox/worker-pool.ts workers, sandbox/poller.ts with Lambda's event-source contract, batches of
 * 10, 5 at once).
 *
 * Two endpoints in a registry, each subscribed to one event type, so each event goes to one of them
 * on the producer's own message: `healthy` (its receiver answers 200 at once) and `neighbour` (200 at
 * once, or no answer at all: every request runs into the attempt timeout). The neighbour's attempt
 * timeout is short (1 s) and both retry after 1, 2 and 4 s, so the scenario takes seconds, not
 * minutes; the healthy endpoint keeps the deployment's 10 s (it answers at once: a short timeout
 * would only add false timeouts on a busy machine). The producer sends
 * batches of 10 with `neighbourShare` of them for the neighbour (2 in 10: nearly every consumer
 * batch holds one), keeping at most `window` healthy events sent but not yet answered (the neighbour's
 * are sent alongside, never waited for), for `seconds`.
 *
 * Measured: the healthy endpoint's first arrivals within the window, per second (over the whole
 * window, and over its second half, once the start-up of whatever the consumer does about the
 * neighbour is behind it); the batches' wall times (a batch lasts as long as its slowest record);
 * what the neighbour was sent; and the consumers' lines about it (`endpoint paused`).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { RESOURCE_ENV } from '../lib/config';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { createEndpointsTable, seedEndpoints } from '../sandbox/endpoints-table';
import { listenOnLoopback } from '../test/helpers/loopback';
import { countsBetween, summarize, type RequestCounts } from './counting';
import { median } from './bundle';
import { percentile } from './report';
import { BATCH_SIZE, benchClients, HANDLER_PATHS, MAX_CONCURRENCY, pollInto, provision, startWorkers, syntheticRecord, waitFor, type Bench } from './workload';

export type NeighbourMode = 'answers' | 'times-out';

export interface SlowNeighbourOptions {
  /** How long the producer sends, seconds. */
  readonly seconds: number;
  /** Of every 10 events sent, how many go to the neighbour (0–10). */
  readonly neighbourPerTen: number;
  /** Healthy events sent but not yet answered, at most. */
  readonly window: number;
  /** The neighbour's attempt timeout (the healthy endpoint has the deployment's, 10 s). */
  readonly attemptTimeoutMs: number;
}

export const SLOW_NEIGHBOUR_DEFAULTS: SlowNeighbourOptions = {
  seconds: 40,
  neighbourPerTen: 2,
  window: 2 * BATCH_SIZE * MAX_CONCURRENCY,
  attemptTimeoutMs: 1000,
};
/** Both endpoints' waits after a failed attempt (the ordering scenario's). */
const RETRY_SCHEDULE = [1, 2, 4];
const HEALTHY_TYPE = 'shipment.in_transit';
const NEIGHBOUR_TYPE = 'shipment.delivered';
const STALL_MS = 30_000;

export interface NeighbourRun {
  readonly mode: NeighbourMode;
  readonly seconds: number;
  readonly healthySent: number;
  /** Healthy events answered 200 within the window. */
  readonly healthyDelivered: number;
  readonly healthyPerSecond: number;
  /** Over the window's second half. */
  readonly healthyPerSecondLate: number;
  readonly neighbourSent: number;
  /** Requests the neighbour's receiver got (each an attempt). */
  readonly neighbourRequests: number;
  readonly neighbourDelivered: number;
  /** Invocations within the window and their wall times. */
  readonly batches: { readonly count: number; readonly medianMs: number; readonly p90Ms: number; readonly atLeastTimeout: number };
  /** `endpoint paused` lines the consumers wrote about the neighbour. */
  readonly pausedLines: number;
  /** Healthy arrivals in each 10 s of the window, and when (s into it) each batch at least as long as the timeout began. */
  readonly timeline: { readonly healthyPerTenSeconds: readonly number[]; readonly slowBatchesAt: readonly number[] };
  /** The handler's requests within the window, per healthy delivery. */
  readonly perHealthyDelivery: { readonly dynamodbWrites: number; readonly dynamodbReads: number; readonly handlerSqs: number; readonly handlerCpuMs: number };
  readonly requests: RequestCounts;
  readonly repeats: number;
  readonly failedBatches: number;
}

export interface SlowNeighbourResult {
  readonly options: SlowNeighbourOptions;
  readonly runs: readonly NeighbourRun[];
  /** Healthy deliveries/s with the timing-out neighbour over those with the answering one (target ≥ 0.8). */
  readonly ratio: number;
  readonly ratioLate: number;
}

/** The healthy rate with the timing-out neighbour over the rate with the answering one. Pure. */
export function neighbourRatio(runs: readonly NeighbourRun[], pick: (run: NeighbourRun) => number = (run) => run.healthyPerSecond): number {
  const alone = runs.find((run) => run.mode === 'answers');
  const slow = runs.find((run) => run.mode === 'times-out');
  return alone && slow ? pick(slow) / pick(alone) : Number.NaN;
}

/** Which of the 10 events of a send go to the neighbour: spread over the ten, so every consumer batch gets its share. Pure. */
export function neighbourSlots(perTen: number): ReadonlySet<number> {
  const slots = new Set<number>();
  for (let k = 0; k < perTen; k += 1) slots.add(Math.floor(((k + 0.5) * 10) / perTen));
  return slots;
}

interface TwoReceivers {
  readonly url: string;
  /** Healthy event ID → first arrival (performance.now()). */
  readonly healthy: Map<string, number>;
  readonly neighbour: { requests: number; delivered: Set<string> };
  repeats: number;
  close(): Promise<void>;
}

/** One server for both endpoints, told apart by path: `/healthy` answers 200; `/neighbour` 200, or never. */
async function startReceivers(mode: NeighbourMode): Promise<TwoReceivers> {
  const hanging = new Set<ServerResponse>();
  const state: TwoReceivers = { url: '', healthy: new Map(), neighbour: { requests: 0, delivered: new Set() }, repeats: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const header = req.headers['idempotency-key'];
      const id = typeof header === 'string' ? header : '';
      if (req.url?.endsWith('/neighbour')) {
        state.neighbour.requests += 1;
        if (mode === 'times-out') {
          // No answer: the sender gives up at its attempt timeout and closes the connection.
          hanging.add(res);
          res.on('close', () => hanging.delete(res));
          return;
        }
        if (state.neighbour.delivered.has(id)) state.repeats += 1;
        state.neighbour.delivered.add(id);
      } else if (state.healthy.has(id)) state.repeats += 1;
      else state.healthy.set(id, performance.now());
      res.writeHead(200, { 'content-length': '0' });
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  const listening = await listenOnLoopback(server);
  return Object.assign(state, {
    url: listening.url,
    close: async () => {
      for (const res of hanging) res.destroy();
      await listening.close();
    },
  });
}

function eventOf(id: string, type: string): string {
  return JSON.stringify({
    id,
    shipmentId: `shp_${id.slice(-8)}`,
    status: type.slice('shipment.'.length),
    occurredAt: new Date().toISOString(),
    data: { carrier: 'acme', hub: 'FRA-3', eta: '2026-12-03T09:00:00Z' },
  });
}

/** One run: fresh queue, ledger and registry (both endpoints), workers, poller; the workload for `seconds`; its figures. */
export async function runNeighbour(mode: NeighbourMode, bench: Bench, options: SlowNeighbourOptions = SLOW_NEIGHBOUR_DEFAULTS): Promise<NeighbourRun> {
  const runId = randomUUID().slice(0, 8);
  const clients = benchClients(bench);
  const receivers = await startReceivers(mode);
  const { env, queueUrl, queueArn, functionTimeoutMs } = await provision('handoff', bench, clients, runId);
  const endpointsTable = `bench-${runId}-endpoints`;
  await createEndpointsTable(clients.setupDynamodb, endpointsTable);
  await seedEndpoints(
    new DynamoDbEndpointRegistry({ client: clients.setupDynamodb, tableName: endpointsTable }),
    [
      // The deployment's attempt timeout (10 s): its receiver answers at once, and a shared machine's
      // stall (a cold worker) must not make a healthy request time out.
      { name: 'healthy', url: `${receivers.url}/healthy`, eventTypes: [HEALTHY_TYPE], retrySchedule: RETRY_SCHEDULE },
      { name: 'neighbour', url: `${receivers.url}/neighbour`, eventTypes: [NEIGHBOUR_TYPE], retrySchedule: RETRY_SCHEDULE, attemptTimeoutMs: options.attemptTimeoutMs },
    ],
    Date.now(),
  );
  env[RESOURCE_ENV.endpointsTable] = endpointsTable;
  const label = `[neighbour ${mode}]`;
  let pausedLines = 0;
  const workers = startWorkers(HANDLER_PATHS.handoff, env, functionTimeoutMs, {
    progress: (line) => bench.progress(`${label} ${line}`),
    log: (line) => bench.log(`${label} ${line}`),
    // The consumers' lines about the neighbour are the scenario's subject: its pauses counted, none shown.
    take: (line) => {
      if (!line.includes('"endpoint":"neighbour"')) return false;
      if (line.includes('"message":"endpoint paused"')) pausedLines += 1;
      return true;
    },
  });
  const poller = pollInto(bench, clients, { queueUrl, queueArn }, workers, label);
  try {
    // Warm-up, excluded: every worker's cold start and a first batch to the healthy endpoint.
    const warm: SQSEvent[] = Array.from({ length: MAX_CONCURRENCY }, (_, w) => ({
      Records: Array.from({ length: BATCH_SIZE }, (_, i): SQSRecord => syntheticRecord(`warm-${runId}-${w}-${i}`, queueArn)),
    }));
    const warmed = await Promise.all(warm.map((event) => workers.invoke(event)));
    const broken = warmed.find((invocation) => invocation.kind !== 'returned');
    if (broken) throw new Error(`slow neighbour: the warm-up invocation failed: ${JSON.stringify(broken)}`);
    await workers.quiesce();

    const slots = neighbourSlots(options.neighbourPerTen);
    const healthyIds: string[] = [];
    let neighbourSent = 0;
    // Only this phase's healthy events arrive from here on (the warm-up's are all in).
    const arrivedBefore = receivers.healthy.size;
    const answered = () => receivers.healthy.size - arrivedBefore;
    let lastArrivalAt = performance.now();
    let seen = 0;
    const progress = setInterval(() => {
      const now = answered();
      if (now !== seen) lastArrivalAt = performance.now();
      seen = now;
      bench.progress(`${label} ${Math.round((performance.now() - startedAt) / 1000)}/${options.seconds} s, healthy ${now} delivered, neighbour ${receivers.neighbour.requests} requests`);
    }, 500);
    const measuredBefore = workers.measurements.length;
    const countsBefore = bench.emulators.snapshot();
    const startedAt = performance.now();
    const endsAt = startedAt + options.seconds * 1000;
    let sends = 0;
    try {
      while (performance.now() < endsAt) {
        const healthyInSend = 10 - slots.size;
        const room = () => healthyIds.length - answered() <= options.window - healthyInSend;
        if (!(await waitFor(() => room() || performance.now() >= endsAt, STALL_MS, () => lastArrivalAt))) break;
        if (performance.now() >= endsAt) break;
        const entries = Array.from({ length: 10 }, (_, i) => {
          const neighbour = slots.has(i);
          const id = `nb-${runId}-${sends}-${i}`;
          if (neighbour) neighbourSent += 1;
          else healthyIds.push(id);
          return { Id: String(i), MessageBody: eventOf(id, neighbour ? NEIGHBOUR_TYPE : HEALTHY_TYPE) };
        });
        sends += 1;
        await clients.producerSqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
      }
      // The window closes on time: whatever is still on its way is not counted.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, endsAt - performance.now())));
    } finally {
      clearInterval(progress);
    }
    const requests = countsBetween(countsBefore, bench.emulators.snapshot());
    const arrivals = healthyIds.map((id) => receivers.healthy.get(id)).filter((at): at is number => at !== undefined && at <= endsAt);
    const halfway = startedAt + (options.seconds * 1000) / 2;
    const batches = workers.measurements.slice(measuredBefore);
    const batchEnds = workers.measuredAt.slice(measuredBefore);
    const healthyPerTenSeconds = Array.from({ length: Math.ceil(options.seconds / 10) }, () => 0);
    for (const at of arrivals) healthyPerTenSeconds[Math.min(healthyPerTenSeconds.length - 1, Math.floor((at - startedAt) / 10_000))]! += 1;
    const slowBatchesAt = batches.flatMap((m, i) => (m.wallMs >= options.attemptTimeoutMs ? [Math.round((batchEnds[i]! - m.wallMs - startedAt) / 100) / 10] : []));
    const handler = summarize(requests.handler);
    const delivered = arrivals.length;
    const per = (n: number) => (delivered > 0 ? n / delivered : Number.NaN);
    const wall = batches.map((m) => m.wallMs);
    return {
      mode,
      seconds: options.seconds,
      healthySent: healthyIds.length,
      healthyDelivered: delivered,
      healthyPerSecond: delivered / options.seconds,
      healthyPerSecondLate: arrivals.filter((at) => at > halfway).length / (options.seconds / 2),
      neighbourSent,
      neighbourRequests: receivers.neighbour.requests,
      neighbourDelivered: receivers.neighbour.delivered.size,
      batches: {
        count: batches.length,
        medianMs: median(wall),
        p90Ms: percentile(wall, 90),
        atLeastTimeout: wall.filter((ms) => ms >= options.attemptTimeoutMs).length,
      },
      pausedLines,
      timeline: { healthyPerTenSeconds, slowBatchesAt },
      perHealthyDelivery: {
        dynamodbWrites: per(handler.dynamodbWrites),
        dynamodbReads: per(handler.dynamodbReads),
        handlerSqs: per(handler.sqs),
        handlerCpuMs: per(batches.reduce((sum, m) => sum + m.cpuMicros, 0) / 1000),
      },
      requests,
      repeats: receivers.repeats,
      failedBatches: poller.counts.failedBatches,
    };
  } finally {
    // Batches in flight end within an attempt timeout; the neighbour's backlog is left on the queue.
    await poller.stop(functionTimeoutMs);
    await workers.close();
    await receivers.close();
    for (const client of [clients.setupSqs, clients.pollerSqs, clients.producerSqs, clients.setupDynamodb]) client.destroy();
  }
}

/** The neighbour answering, then timing out, on the same emulators. */
export async function runSlowNeighbour(bench: Bench, options: SlowNeighbourOptions = SLOW_NEIGHBOUR_DEFAULTS): Promise<SlowNeighbourResult> {
  const runs: NeighbourRun[] = [];
  for (const mode of ['answers', 'times-out'] as const) {
    const run = await runNeighbour(mode, bench, options);
    runs.push(run);
    bench.log(
      `slow neighbour, neighbour ${mode}: healthy ${run.healthyDelivered} delivered in ${run.seconds} s, ${run.healthyPerSecond.toFixed(0)}/s ` +
        `(second half ${run.healthyPerSecondLate.toFixed(0)}/s); neighbour ${run.neighbourRequests} requests`,
    );
  }
  return { options, runs, ratio: neighbourRatio(runs), ratioLate: neighbourRatio(runs, (run) => run.healthyPerSecondLate) };
}

/** The printed table and verdict (markdown). Pure. */
export function slowNeighbourMarkdown(result: SlowNeighbourResult): string {
  const { options, runs } = result;
  const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : 'n/a');
  const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
  const rows = runs.map((r) =>
    [
      r.mode === 'answers' ? 'answers 200' : `times out (${options.attemptTimeoutMs} ms)`,
      `${r.healthyDelivered}/${r.healthySent}`,
      f0(r.healthyPerSecond),
      f0(r.healthyPerSecondLate),
      `${r.neighbourRequests} / ${r.neighbourSent}`,
      `${r.batches.count} (${r.batches.atLeastTimeout})`,
      `${f0(r.batches.medianMs)} / ${f0(r.batches.p90Ms)}`,
      String(r.pausedLines),
      `${f2(r.perHealthyDelivery.dynamodbWrites)} / ${f2(r.perHealthyDelivery.handlerSqs)}`,
      f2(r.perHealthyDelivery.handlerCpuMs),
      `${r.repeats} / ${r.failedBatches}`,
    ].join(' | '),
  );
  const verdict = (x: number) => `${f2(x)}x (target ≥ 0.80: ${x >= 0.8 ? 'met' : 'MISSED'})`;
  return [
    `Slow neighbour: ${options.seconds} s per run, ${options.neighbourPerTen} in 10 events for the neighbour, window ${options.window} healthy events, ` +
      `the neighbour's attempt timeout ${options.attemptTimeoutMs} ms, retries after ${RETRY_SCHEDULE.join(', ')} s, batches of ${BATCH_SIZE}, ${MAX_CONCURRENCY} at once.`,
    '',
    '| neighbour | healthy delivered / sent | healthy/s | healthy/s, 2nd half | neighbour requests / events | batches (≥ timeout) | batch ms median / p90 | `endpoint paused` lines | DDB writes / handler SQS per healthy delivery | handler CPU ms per healthy delivery | repeats / failed batches |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map((row) => `| ${row} |`),
    '',
    `Healthy endpoint's rate with the timing-out neighbour over its rate with the answering one: ${verdict(result.ratio)}; second half ${verdict(result.ratioLate)}.`,
    '',
  ].join('\n');
}
