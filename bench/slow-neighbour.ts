/**
 * One slow endpoint and its neighbours (issue 26): a healthy endpoint's delivery rate beside a
 * neighbour that answers, then beside the same neighbour timing out on every request, the load
 * otherwise the same, on the bench's pipeline (batches of 10, 5 at once).
 *
 * Two endpoints in a registry, one event type each. The neighbour's attempt timeout is short (1 s)
 * and both retry after 1, 2 and 4 s, so a run takes seconds; the healthy one keeps the deployment's
 * 10 s, as a short one would only add false timeouts on a busy machine. Each send of 10 holds
 * `neighbourPerTen` events for the neighbour (2: nearly every batch holds one); at most `window`
 * healthy events are in flight (the neighbour's are never waited for), for `seconds`. Measured: the
 * healthy endpoint's first arrivals per second (over the window and its second half, once whatever
 * the consumer does about the neighbour has started), the batches' wall times, what the neighbour
 * was sent, and the consumers' `endpoint paused` lines about it.
 */
import { performance } from 'node:perf_hooks';
import { countsBetween, median, percentile, perDelivery, startReceiver, type Bench } from './harness';
import { BATCH_SIZE, eventBody, MAX_CONCURRENCY, produce, startConsumer } from './pipeline';
import { fixed, table } from './report';

export type NeighbourMode = 'answers' | 'times-out';
/** `seconds` the producer sends; `neighbourPerTen` of each 10 events for the neighbour; its `attemptTimeoutMs`. */
export type SlowNeighbourOptions = typeof SLOW_NEIGHBOUR_DEFAULTS;
export type NeighbourRun = Awaited<ReturnType<typeof runNeighbour>>;
export type SlowNeighbourResult = Awaited<ReturnType<typeof runSlowNeighbour>>;

export const SLOW_NEIGHBOUR_DEFAULTS = { seconds: 40, neighbourPerTen: 2, window: 2 * BATCH_SIZE * MAX_CONCURRENCY, attemptTimeoutMs: 1000 };
const RETRY_SCHEDULE = [1, 2, 4];
const HEALTHY_STATUS = 'in_transit';
const NEIGHBOUR_STATUS = 'delivered';

/** The healthy rate with the timing-out neighbour over the rate with the answering one. Pure. */
export function neighbourRatio(runs: readonly NeighbourRun[], pick: (run: NeighbourRun) => number = (run) => run.healthyPerSecond): number {
  const alone = runs.find((run) => run.mode === 'answers');
  const slow = runs.find((run) => run.mode === 'times-out');
  return alone && slow ? pick(slow) / pick(alone) : Number.NaN;
}

/** Which of the 10 events of a send go to the neighbour: spread over the ten, so every consumer batch gets its share. Pure. */
export function neighbourSlots(perTen: number): ReadonlySet<number> {
  return new Set(Array.from({ length: perTen }, (_, k) => Math.floor(((k + 0.5) * 10) / perTen)));
}

/** One run: a fresh consumer with both endpoints, each on a receiver of its own; the workload for `seconds`; its figures. */
export async function runNeighbour(mode: NeighbourMode, bench: Bench, options: SlowNeighbourOptions = SLOW_NEIGHBOUR_DEFAULTS) {
  const healthy = await startReceiver();
  // Timing out: no answer; the sender gives up at its attempt timeout and closes the connection.
  const neighbour = await startReceiver(() => (mode === 'times-out' ? { status: 0, afterMs: Infinity } : { status: 200 }));
  const label = `[neighbour ${mode}]`;
  let pausedLines = 0;
  const consumer = await startConsumer(bench, 'handoff', {
    label,
    endpoints: [
      // The deployment's attempt timeout (10 s): its receiver answers at once, and a shared machine's
      // stall (a cold worker) must not make a healthy request time out.
      { name: 'healthy', url: healthy.url, eventTypes: [`shipment.${HEALTHY_STATUS}`], retrySchedule: RETRY_SCHEDULE },
      { name: 'neighbour', url: neighbour.url, eventTypes: [`shipment.${NEIGHBOUR_STATUS}`], retrySchedule: RETRY_SCHEDULE, attemptTimeoutMs: options.attemptTimeoutMs },
    ],
    // The consumers' lines about the neighbour are the scenario's subject: its pauses counted, none shown.
    take: (line) => {
      if (!line.includes('"endpoint":"neighbour"')) return false;
      if (line.includes('"message":"endpoint paused"')) pausedLines += 1;
      return true;
    },
  });
  try {
    // Excluded: every worker's cold start and a first batch to the healthy endpoint.
    await consumer.warmUp();
    const slots = neighbourSlots(options.neighbourPerTen);
    const healthyIds: string[] = [];
    let neighbourSent = 0;
    // Only this phase's healthy events arrive from here on (the warm-up's are all in).
    const arrivedBefore = healthy.arrivals.size;
    const answered = () => healthy.arrivals.size - arrivedBefore;
    const measuredBefore = consumer.measurements.length;
    const countsBefore = bench.emulators.snapshot();
    const startedAt = performance.now();
    const endsAt = startedAt + options.seconds * 1000;
    let sends = 0;
    await produce(consumer, {
      room: () => healthyIds.length - answered() <= options.window - (10 - slots.size),
      next: () => {
        sends += 1;
        return Array.from({ length: 10 }, (_, i) => {
          const id = `nb-${consumer.runId}-${sends}-${i}`;
          if (slots.has(i)) neighbourSent += 1;
          else healthyIds.push(id);
          return eventBody(id, `shp_${id.slice(-8)}`, slots.has(i) ? NEIGHBOUR_STATUS : HEALTHY_STATUS);
        });
      },
      quietSince: () => healthy.lastArrivalAt,
      until: endsAt,
      tick: () => {
        const elapsed = Math.round((performance.now() - startedAt) / 1000);
        bench.progress(`${label} ${elapsed}/${options.seconds} s, healthy ${answered()} delivered, neighbour ${neighbour.requests} requests`);
      },
    });
    const requests = countsBetween(countsBefore, bench.emulators.snapshot());
    const arrivals = healthyIds.map((id) => healthy.arrivals.get(id)).filter((at): at is number => at !== undefined && at <= endsAt);
    const batches = consumer.measurements.slice(measuredBefore);
    const batchEnds = consumer.measuredAt.slice(measuredBefore);
    const healthyPerTenSeconds = Array.from({ length: Math.ceil(options.seconds / 10) }, () => 0);
    for (const at of arrivals) healthyPerTenSeconds[Math.min(healthyPerTenSeconds.length - 1, Math.floor((at - startedAt) / 10_000))]! += 1;
    const wall = batches.map((m) => m.wallMs);
    return {
      mode,
      seconds: options.seconds,
      healthySent: healthyIds.length,
      /** Healthy events answered 200 within the window. */
      healthyDelivered: arrivals.length,
      healthyPerSecond: arrivals.length / options.seconds,
      /** Over the window's second half. */
      healthyPerSecondLate: arrivals.filter((at) => at > startedAt + (options.seconds * 1000) / 2).length / (options.seconds / 2),
      neighbourSent,
      /** Requests the neighbour's receiver got (each an attempt). */
      neighbourRequests: neighbour.requests,
      neighbourDelivered: neighbour.applied.size,
      /** Invocations within the window and their wall times. */
      batches: { count: batches.length, medianMs: median(wall), p90Ms: percentile(wall, 90), atLeastTimeout: wall.filter((ms) => ms >= options.attemptTimeoutMs).length },
      /** `endpoint paused` lines the consumers wrote about the neighbour. */
      pausedLines,
      /** Healthy arrivals in each 10 s of the window, and when (s into it) each batch at least as long as the timeout began. */
      timeline: {
        healthyPerTenSeconds,
        slowBatchesAt: batches.flatMap((m, i) => (m.wallMs >= options.attemptTimeoutMs ? [Math.round((batchEnds[i]! - m.wallMs - startedAt) / 100) / 10] : [])),
      },
      /** The handler's requests and CPU within the window, per healthy delivery. */
      perHealthyDelivery: { ...perDelivery(requests, arrivals.length), handlerCpuMs: batches.reduce((sum, m) => sum + m.cpuMicros, 0) / 1000 / arrivals.length },
      requests,
      repeats: healthy.repeats + neighbour.repeats,
      failedBatches: consumer.counts.failedBatches,
    };
  } finally {
    // Batches in flight end within an attempt timeout; the neighbour's backlog is left on the queue.
    await consumer.close();
    await healthy.close();
    await neighbour.close();
  }
}

/** The neighbour answering, then timing out, on the same emulators. */
export async function runSlowNeighbour(bench: Bench, options: SlowNeighbourOptions = SLOW_NEIGHBOUR_DEFAULTS) {
  const runs: NeighbourRun[] = [];
  for (const mode of ['answers', 'times-out'] as const) {
    const run = await runNeighbour(mode, bench, options);
    runs.push(run);
    bench.log(
      `slow neighbour, neighbour ${mode}: healthy ${run.healthyDelivered} delivered in ${run.seconds} s, ${run.healthyPerSecond.toFixed(0)}/s ` +
        `(second half ${run.healthyPerSecondLate.toFixed(0)}/s); neighbour ${run.neighbourRequests} requests`,
    );
  }
  /** Healthy deliveries/s with the timing-out neighbour over those with the answering one (target ≥ 0.8). */
  return { options, runs, ratio: neighbourRatio(runs), ratioLate: neighbourRatio(runs, (run) => run.healthyPerSecondLate) };
}

/** The printed table and verdict (markdown). Pure. */
export function slowNeighbourMarkdown(result: Pick<SlowNeighbourResult, 'options' | 'runs' | 'ratio' | 'ratioLate'>): string {
  const { options, runs } = result;
  const [f0, f2] = [fixed(0), fixed(2)];
  const verdict = (x: number) => `${f2(x)}x (target ≥ 0.80: ${x >= 0.8 ? 'met' : 'MISSED'})`;
  return [
    `Slow neighbour: ${options.seconds} s per run, ${options.neighbourPerTen} in 10 events for the neighbour, window ${options.window} healthy events, ` +
      `the neighbour's attempt timeout ${options.attemptTimeoutMs} ms, retries after ${RETRY_SCHEDULE.join(', ')} s, batches of ${BATCH_SIZE}, ${MAX_CONCURRENCY} at once.`,
    '',
    ...table(
      ['neighbour', 'healthy delivered / sent', 'healthy/s', 'healthy/s, 2nd half', 'neighbour requests / events', 'batches (≥ timeout)', 'batch ms median / p90',
        '`endpoint paused` lines', 'DDB writes / handler SQS per healthy delivery', 'handler CPU ms per healthy delivery', 'repeats / failed batches'],
      runs.map((r) => [
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
      ]),
    ),
    '',
    `Healthy endpoint's rate with the timing-out neighbour over its rate with the answering one: ${verdict(result.ratio)}; second half ${verdict(result.ratioLate)}.`,
    '',
  ].join('\n');
}
