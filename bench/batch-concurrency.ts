/**
 * Concurrency inside a batch: a consumer's handler against a receiver that answers after 200 ms.
 * Single deliveries one after another give the slowest single delivery; a batch of 10 records
 * that are delivered at once takes about as long, one delivered after another ten times as long.
 * Invoked directly (as Lambda invokes it), not through the queue: only the handler is timed.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { SQSEvent } from 'aws-lambda';
import { benchClients, HANDLER_PATHS, provision, startWorkers, syntheticRecord, type Bench, type ConsumerName } from './workload';

export interface BatchConcurrencyResult {
  readonly consumer: ConsumerName;
  readonly receiverDelayMs: number;
  readonly batchSize: number;
  /** Wall time of each single-record invocation, ms. */
  readonly singlesMs: readonly number[];
  /** Wall time of each batch invocation, ms. */
  readonly batchesMs: readonly number[];
  readonly slowestSingleMs: number;
  /** The median batch. */
  readonly batchMs: number;
  /** batchMs / slowestSingleMs: 1 = fully concurrent, `batchSize` = one after another. */
  readonly ratio: number;
  /**
   * Per batch, ms from the first of its requests reaching the receiver to the last: near 0 when
   * the records are sent at once, at least (batchSize - 1) x the delay when sent one by one.
   */
  readonly arrivalSpreadsMs: readonly number[];
  /**
   * Ms from invoking to the first request reaching the receiver (the claims, and IPC), for
   * the single deliveries and the batches: where a batch's time above a single's goes.
   */
  readonly singlesBeforeSendMs: readonly number[];
  readonly batchesBeforeSendMs: readonly number[];
}

export async function runBatchConcurrency(
  name: ConsumerName,
  bench: Bench,
  options: { readonly receiverDelayMs: number; readonly batchSize: number; readonly singles: number; readonly batches: number },
): Promise<BatchConcurrencyResult> {
  const runId = randomUUID().slice(0, 8);
  const clients = benchClients(bench);
  const { env, queueArn, functionTimeoutMs } = await provision(name, bench, clients, runId);
  const workers = startWorkers(HANDLER_PATHS[name], env, functionTimeoutMs, {
    progress: (line) => bench.progress(`[batch ${name}] ${line}`),
    log: (line) => bench.log(`[batch ${name}] ${line}`),
  });
  let next = 0;
  const event = (records: number): SQSEvent => ({
    Records: Array.from({ length: records }, () => syntheticRecord(`batch-${runId}-${next++}`, queueArn)),
  });
  let lastIds: string[] = [];
  let lastInvokedAt = 0;
  const arrivalsOfLast = () => lastIds.map((id) => bench.receiver.arrivals.get(id) ?? Number.NaN);
  /** One invocation, timed by the worker (handler only, no IPC). */
  const timed = async (records: number) => {
    const batch = event(records);
    lastIds = batch.Records.map((record) => (JSON.parse(record.body) as { id: string }).id);
    lastInvokedAt = performance.now();
    const invocation = await workers.invoke(batch);
    if (invocation.kind !== 'returned') throw new Error(`batch concurrency: the handler ${invocation.kind}`);
    await workers.quiesce();
    const measurement = workers.measurements.at(-1);
    if (!measurement) throw new Error('batch concurrency: no measurement');
    return measurement.wallMs;
  };

  bench.receiver.setDelay(options.receiverDelayMs);
  try {
    // Warm-up, excluded: the cold start, and a batch so the agent has sockets to reuse.
    await timed(1);
    await timed(options.batchSize);
    const singlesMs: number[] = [];
    const singlesBeforeSendMs: number[] = [];
    for (let i = 0; i < options.singles; i += 1) {
      singlesMs.push(await timed(1));
      singlesBeforeSendMs.push(Math.min(...arrivalsOfLast()) - lastInvokedAt);
      bench.progress(`[batch ${name}] single deliveries: ${i + 1}/${options.singles}`);
    }
    const batchesMs: number[] = [];
    const arrivalSpreadsMs: number[] = [];
    const batchesBeforeSendMs: number[] = [];
    for (let i = 0; i < options.batches; i += 1) {
      batchesMs.push(await timed(options.batchSize));
      const arrivals = arrivalsOfLast();
      arrivalSpreadsMs.push(Math.max(...arrivals) - Math.min(...arrivals));
      batchesBeforeSendMs.push(Math.min(...arrivals) - lastInvokedAt);
      bench.progress(`[batch ${name}] batches of ${options.batchSize}: ${i + 1}/${options.batches}`);
    }
    const slowestSingleMs = Math.max(...singlesMs);
    const batchMs = [...batchesMs].sort((a, b) => a - b)[Math.floor(batchesMs.length / 2)] ?? Number.NaN;
    return {
      consumer: name,
      receiverDelayMs: options.receiverDelayMs,
      batchSize: options.batchSize,
      singlesMs,
      batchesMs,
      slowestSingleMs,
      batchMs,
      ratio: batchMs / slowestSingleMs,
      arrivalSpreadsMs,
      singlesBeforeSendMs,
      batchesBeforeSendMs,
    };
  } finally {
    bench.receiver.setDelay(0);
    await workers.close();
    clients.setupSqs.destroy();
    clients.pollerSqs.destroy();
    clients.producerSqs.destroy();
    clients.setupDynamodb.destroy();
  }
}
