/**
 * The three consumers side by side (issue 4): one workload through each, and a batch against a
 * slow receiver.
 *
 * Workload phases, each timed on `performance.now()` in this process:
 * - warm-up (excluded): every worker's cold start on a full batch, then 50 events through the queue;
 * - loaded: `events` events, the producer keeping at most `window` sent but not yet received, so the
 *   poller always has full batches waiting. Counts, CPU, throughput and latency come from here;
 * - unloaded: events sent one at a time, each after the previous arrived: an idle system's latency.
 *
 * The batch: the handler invoked directly (as Lambda invokes it), not through the queue, against a
 * receiver answering after a delay: single deliveries one after another give the slowest single
 * delivery; a batch whose records go out at once takes about as long, one by one ten times as long.
 */
import { performance } from 'node:perf_hooks';
import { countsBetween, median, percentile, perDelivery, type Bench } from './harness';
import { eventBody, produce, startConsumer, syntheticRecord, waitFor, type Consumer, type ConsumerName } from './pipeline';

export type ConsumerFigures = Awaited<ReturnType<typeof runConsumer>>;
export type BatchConcurrencyResult = Awaited<ReturnType<typeof runBatchConcurrency>>;

/** One consumer through the workload: figures per delivered event over the loaded phase, latencies of both. */
export async function runConsumer(
  name: ConsumerName,
  bench: Bench,
  options: { readonly events: number; readonly unloadedEvents: number; readonly window: number; readonly label?: string; readonly env?: Readonly<Record<string, string>> },
) {
  const consumer = await startConsumer(bench, name, { label: options.label ?? `[${name}]`, ...(options.env ? { env: options.env } : {}) });
  const repeatsBefore = bench.receiver.repeats;
  /** Until `records` more records than `from` are settled (deleted) and measured. */
  const settle = async (from: number, records: number) => {
    await waitFor(() => consumer.counts.settledRecords - from >= records || consumer.counts.failedBatches > 0);
    await consumer.quiesce();
  };
  try {
    bench.progress(`[${name}] warm-up`);
    await consumer.warmUp();
    // Once more through the queue, so the poller's and producer's connections are warm too.
    if (!(await runPhase(bench, consumer, 'warm2', 50, 50)).complete) throw new Error(`${name}: the warm-up did not complete`);
    await settle(0, 50);

    const measuredBefore = consumer.measurements.length;
    const countsBefore = bench.emulators.snapshot();
    const settledBefore = consumer.counts.settledRecords;
    const cpuBefore = process.cpuUsage();
    const loaded = await runPhase(bench, consumer, 'load', options.events, options.window, `[${name}] loaded`);
    // The handler's last writes (and the poller's deletes) follow the webhook's answer.
    await settle(settledBefore, loaded.delivered);
    const sandboxCpu = process.cpuUsage(cpuBefore);
    const requests = countsBetween(countsBefore, bench.emulators.snapshot());
    const invocations = consumer.measurements.slice(measuredBefore);
    const unloaded = await runPhase(bench, consumer, 'idle', options.unloadedEvents, 1, `[${name}] unloaded`);
    const delivered = loaded.delivered;
    const per = (n: number) => (delivered > 0 ? n / delivered : Number.NaN);
    const p = perDelivery(requests, delivered);
    // The bench process's own CPU: the emulators answering, the poller, the producer, the receiver.
    const sandboxCpuMicros = sandboxCpu.user + sandboxCpu.system;
    return {
      delivered,
      complete: loaded.complete && unloaded.complete,
      dynamodbWritesPerEvent: p.dynamodbWrites,
      dynamodbReadsPerEvent: p.dynamodbReads,
      dynamodbBytesPerEvent: p.dynamodbBytesSent + p.dynamodbBytesReceived,
      dynamodbBytesSentPerEvent: p.dynamodbBytesSent,
      dynamodbBytesReceivedPerEvent: p.dynamodbBytesReceived,
      handlerSqsPerEvent: p.handlerSqs,
      pollerSqsPerEvent: p.pollerSqs,
      handlerCpuMsPerEvent: per(invocations.reduce((sum, m) => sum + m.cpuMicros, 0) / 1000),
      sandboxCpuMsPerEvent: per(sandboxCpuMicros / 1000),
      eventsPerSecond: loaded.wallSeconds > 0 ? delivered / loaded.wallSeconds : Number.NaN,
      p50Ms: percentile(loaded.latenciesMs, 50),
      p99Ms: percentile(loaded.latenciesMs, 99),
      unloadedP50Ms: percentile(unloaded.latenciesMs, 50),
      unloadedP99Ms: percentile(unloaded.latenciesMs, 99),
      invocations: invocations.length,
      repeats: bench.receiver.repeats - repeatsBefore,
      failedBatches: consumer.counts.failedBatches,
      handlerRequests: requests.handler,
      pollerRequests: requests.poller,
    };
  } finally {
    await consumer.close();
  }
}

/** Sends `events` events, at most `window` sent but not yet received; latency: from just before its send to its first arrival. */
async function runPhase(bench: Bench, consumer: Consumer, phase: string, events: number, window: number, label?: string) {
  const { receiver } = bench;
  const sentAt = new Map<string, number>();
  const arrivedBefore = receiver.arrivals.size;
  const arrived = () => receiver.arrivals.size - arrivedBefore;
  const chunk = Math.min(window, 10);
  const firstSendAt = performance.now();
  const complete = await produce(consumer, {
    room: () => sentAt.size - arrived() <= window - chunk,
    next: () => {
      const ids = Array.from({ length: Math.min(chunk, events - sentAt.size) }, (_, i) => `${phase}-${consumer.runId}-${sentAt.size + i}`);
      for (const id of ids) sentAt.set(id, performance.now());
      return ids.length > 0 ? ids.map((id) => eventBody(id)) : undefined;
    },
    quietSince: () => receiver.lastArrivalAt,
    done: () => arrived() >= events,
    tick: () => label && bench.progress(`${label}: ${arrived()}/${events} delivered`),
  });
  const latenciesMs = [...sentAt].flatMap(([id, sent]) => (receiver.arrivals.has(id) ? [receiver.arrivals.get(id)! - sent] : []));
  const lastAt = Math.max(firstSendAt, ...[...sentAt.keys()].map((id) => receiver.arrivals.get(id) ?? firstSendAt));
  return { events, delivered: latenciesMs.length, wallSeconds: (lastAt - firstSendAt) / 1000, latenciesMs, complete };
}

/**
 * One figure set from rounds of one consumer: each number's median (one round disturbed by the
 * shared machine does not decide), the counts summed, requests by operation from the first round.
 */
export function combine(rounds: readonly ConsumerFigures[]): ConsumerFigures {
  if (!rounds[0]) throw new Error('no rounds to combine');
  const out: Record<string, unknown> = { ...rounds[0] };
  for (const [key, value] of Object.entries(rounds[0])) {
    if (typeof value === 'number') out[key] = median(rounds.map((round) => round[key as keyof ConsumerFigures] as number));
  }
  const sum = (key: 'delivered' | 'repeats' | 'failedBatches') => rounds.reduce((total, round) => total + round[key], 0);
  return { ...(out as ConsumerFigures), complete: rounds.every((round) => round.complete), delivered: sum('delivered'), repeats: sum('repeats'), failedBatches: sum('failedBatches') };
}

export function ratios(a: ConsumerFigures, b: ConsumerFigures) {
  return {
    handlerCpuPerEvent: a.handlerCpuMsPerEvent / b.handlerCpuMsPerEvent,
    eventsPerSecond: a.eventsPerSecond / b.eventsPerSecond,
    p50: a.p50Ms / b.p50Ms,
    p99: a.p99Ms / b.p99Ms,
    unloadedP50: a.unloadedP50Ms / b.unloadedP50Ms,
  };
}

/** `singles` single deliveries, then `batches` batches of `batchSize`, against a receiver answering in `receiverDelayMs`. */
export async function runBatchConcurrency(
  name: ConsumerName,
  bench: Bench,
  options: { readonly receiverDelayMs: number; readonly batchSize: number; readonly singles: number; readonly batches: number },
) {
  const label = `[batch ${name}]`;
  const consumer = await startConsumer(bench, name, { label, poll: false });
  const arrivals = (ids: readonly string[]) => ids.map((id) => bench.receiver.arrivals.get(id) ?? Number.NaN);
  let next = 0;
  /** One invocation: the handler's wall time as the worker measured it (no IPC), and when each request reached the receiver. */
  const timed = async (records: number) => {
    const event = { Records: Array.from({ length: records }, () => syntheticRecord(`batch-${consumer.runId}-${next++}`, consumer.queueArn)) };
    const invokedAt = performance.now();
    const invocation = await consumer.invoke(event);
    if (invocation.kind !== 'returned') throw new Error(`${label} the handler ${invocation.kind}`);
    await consumer.quiesce();
    const at = arrivals(event.Records.map((record) => (JSON.parse(record.body) as { id: string }).id));
    return { ms: consumer.measurements.at(-1)!.wallMs, beforeSendMs: Math.min(...at) - invokedAt, spreadMs: Math.max(...at) - Math.min(...at) };
  };
  const repeat = async (times: number, records: number, what: string) => {
    const runs: Awaited<ReturnType<typeof timed>>[] = [];
    for (let i = 0; i < times; i += 1) {
      runs.push(await timed(records));
      bench.progress(`${label} ${what}: ${i + 1}/${times}`);
    }
    return runs;
  };
  bench.receiver.delayMs = options.receiverDelayMs;
  try {
    // Warm-up, excluded: the cold start, and a batch so the agent has sockets to reuse.
    await timed(1);
    await timed(options.batchSize);
    const singles = await repeat(options.singles, 1, 'single deliveries');
    const batches = await repeat(options.batches, options.batchSize, `batches of ${options.batchSize}`);
    const slowestSingleMs = Math.max(...singles.map((s) => s.ms));
    const batchesMs = batches.map((b) => b.ms);
    const batchMs = [...batchesMs].sort((a, b) => a - b)[Math.floor(batchesMs.length / 2)] ?? Number.NaN;
    return {
      consumer: name,
      receiverDelayMs: options.receiverDelayMs,
      batchSize: options.batchSize,
      singlesMs: singles.map((s) => s.ms),
      batchesMs,
      slowestSingleMs,
      batchMs,
      /** 1: the records sent at once; `batchSize`: one after another. */
      ratio: batchMs / slowestSingleMs,
      /** Per batch, ms from its first request reaching the receiver to its last. */
      arrivalSpreadsMs: batches.map((b) => b.spreadMs),
      /** Ms from invoking to the first request (the claims, and IPC): where a batch's time above a single's goes. */
      singlesBeforeSendMs: singles.map((s) => s.beforeSendMs),
      batchesBeforeSendMs: batches.map((b) => b.beforeSendMs),
    };
  } finally {
    bench.receiver.delayMs = 0;
    await consumer.close();
  }
}
