/**
 * The batch use case: deliver each record of an SQS batch and answer Lambda's partial batch
 * response (docs/contract.md §4: one bad message never fails or delays the others).
 *
 * What reaches Lambda, per record:
 * - ack:          not reported, so Lambda deletes it. The ledger already holds the outcome.
 * - retry:        its visibility is set to the wait, then it is reported as a failure so it
 *                 stays on the queue. If setting the visibility fails it is still reported and
 *                 returns after the queue's default visibility: later, never lost.
 * - dead-letter:  the original body goes to the dead-letter queue, then it is not reported
 *                 (deleted). If that send fails it is reported: the ledger says dead, so the
 *                 next receive dead-letters it again.
 * - a throw:      reported alone. The batch itself never throws, since a thrown error would
 *                 return every message of the batch.
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import pLimit from 'p-limit';
import { deliver as deliverOne, type DeliverDeps, type DeliveryResult, type QueueMessage } from './deliver';
import { errorFields, type Logger, type MetricsRecorder } from './observability';
import { describeOutcome } from './outcome';
import type { DeliveryQueue } from './queue/queue';

export interface BatchDeps {
  readonly delivery: DeliverDeps;
  readonly queue: DeliveryQueue;
  readonly logger: Logger;
  readonly metrics: MetricsRecorder;
  /** Records delivered at once. At least the batch size, so a batch takes one attempt's time. */
  readonly concurrency: number;
  /** The use case; replaceable so tests can script decisions. */
  readonly deliver?: (message: QueueMessage, deps: DeliverDeps) => Promise<DeliveryResult>;
}

export async function processBatch(records: readonly SQSRecord[], deps: BatchDeps): Promise<SQSBatchResponse> {
  const limit = pLimit(Math.max(1, deps.concurrency));
  const reported = await Promise.all(records.map((record) => limit(() => processRecord(record, deps))));
  const failed = records.filter((_, i) => reported[i]);
  // An empty item identifier fails the whole batch in Lambda anyway; say so plainly instead.
  // Lambda always sets one, so this guards against a broken event, not a normal path.
  if (failed.some((record) => !record.messageId)) {
    throw new Error('a record to report as failed has no messageId: returning the whole batch');
  }
  return { batchItemFailures: failed.map((record) => ({ itemIdentifier: record.messageId })) };
}

/** Handles one record. Returns true when Lambda must keep the message (a batch item failure). */
async function processRecord(record: SQSRecord, deps: BatchDeps): Promise<boolean> {
  const { delivery, queue, metrics } = deps;
  const startedAt = delivery.now();
  const logger = deps.logger.child({ messageId: record.messageId });
  const sentAtMs = Number(record.attributes?.SentTimestamp);
  if (Number.isFinite(sentAtMs) && sentAtMs > 0) metrics.add('PendingAge', Math.max(0, (startedAt - sentAtMs) / 1000));

  let result: DeliveryResult;
  try {
    result = await (deps.deliver ?? deliverOne)({ body: record.body }, delivery);
  } catch (error) {
    // The ledger could not be reached (or something unforeseen): leave the message untouched.
    logger.error('delivery failed', { action: 'error', durationMs: delivery.now() - startedAt, ...errorFields(error) });
    return true;
  }

  const { decision, attempt } = result;
  const fields = {
    eventId: decision.eventId,
    action: decision.action,
    ...(attempt ? { attempt: attempt.number, outcome: describeOutcome(attempt.outcome), attemptMs: attempt.durationMs } : {}),
  };
  if (attempt !== undefined) metrics.attempted(attempt.number);
  if (attempt?.outcome.kind === 'accepted') metrics.add('DeliveryLatency', attempt.sinceStartMs);
  const done = (report: boolean, extra: Record<string, unknown>) => {
    const line = { ...fields, ...extra, durationMs: delivery.now() - startedAt };
    if (report && extra.queueError) logger.warn('delivery', line);
    else logger.info('delivery', line);
    return report;
  };

  switch (decision.action) {
    case 'ack':
      if (decision.why === 'delivered') metrics.add('Delivered', 1);
      return done(false, { why: decision.why });
    case 'retry':
      // Retries counts failed attempts that will be tried again, not re-receives of work that
      // is in flight elsewhere or not yet due.
      if (attempt) metrics.add('Retries', 1);
      try {
        await queue.retryAfter(record.receiptHandle, decision.afterSeconds);
        return done(true, { why: decision.why, afterSeconds: decision.afterSeconds });
      } catch (error) {
        return done(true, { why: decision.why, afterSeconds: decision.afterSeconds, queueError: true, ...errorFields(error) });
      }
    case 'dead-letter':
      // The detail is not logged: a validation message or a receiver's response can echo
      // payload contents. It is on the ledger row for operators.
      try {
        await queue.deadLetter(record.body, {
          reason: decision.reason,
          ...(decision.eventId !== undefined ? { eventId: decision.eventId } : {}),
        });
        metrics.add('DeadLetters', 1);
        return done(false, { reason: decision.reason });
      } catch (error) {
        return done(true, { reason: decision.reason, queueError: true, ...errorFields(error) });
      }
  }
}
