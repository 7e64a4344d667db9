/**
 * Operator statistics (docs/contract.md §10): pure functions, so the numbers `handoff stats`
 * prints are tested without a store. Three sources:
 * - pending: SQS's approximate counts of the delivery queue and the redrive queue. A delivery
 *   being retried is a message on the delivery queue (in flight between its attempts) and in no
 *   listing: a failed attempt does not list its row (lib/ledger/transitions.ts);
 * - dead: the ledger's listing of its dead rows, which reads only those rows;
 * - delivery figures (delivered count, retry rate, latency percentiles) and the oldest message
 *   received (`PendingAge`'s maximum) from the consumer's metrics over a window (lib/metrics/).
 */
import type { DeliveryRecord } from './ledger/ledger';
import type { DeliveryMetrics } from './metrics/metrics-reader';

/** A queue's approximate depth (SQS's `ApproximateNumberOfMessages*` attributes). */
export interface QueueDepth {
  /** Messages waiting to be received. */
  readonly visible: number;
  /** Received and not yet deleted: being worked on, or held back for a retry. */
  readonly inFlight: number;
  readonly delayed: number;
}

export interface DeliveryStats {
  readonly deliveredCount: number;
  readonly attempts: number;
  /** Attempts that were not their delivery's first. */
  readonly retriedAttempts: number;
  /** retriedAttempts / attempts; null when nothing was attempted. */
  readonly retryRate: number | null;
  /** Messages the consumer sent to the dead-letter queue in the window. */
  readonly deadLettered: number;
  /** From admission (or the latest replay) to delivery, over the deliveries in the window. */
  readonly latencyMs: { readonly p50: number | null; readonly p99: number | null };
  /** How many deliveries the percentiles are computed over. */
  readonly latencySamples: number;
  /**
   * How long the oldest message the consumer received in the window had been on the queue when it
   * was received; null when it received none.
   */
  readonly oldestPendingAgeMs: number | null;
}

/** Every message on a queue: waiting, in flight and delayed. */
export function messagesOn(depth: QueueDepth): number {
  return depth.visible + depth.inFlight + depth.delayed;
}

/**
 * The deliveries not yet settled, as SQS counts them: the delivery queue's messages and the
 * redrive queue's (null: the target names none). Approximate, as SQS's counts are; a producer's
 * message not yet routed counts once whatever its endpoints; parked deliveries are on no queue.
 * Null when the target names no delivery queue.
 */
export function pendingCount(queue: QueueDepth | null, redriveQueue: QueueDepth | null): number | null {
  if (queue === null) return null;
  return messagesOn(queue) + (redriveQueue === null ? 0 : messagesOn(redriveQueue));
}

export interface EndpointBacklog {
  readonly deadCount: number;
}

/** The dead rows counted by their endpoints, by name; endpoints with none are absent. */
export function deadByEndpoint(dead: readonly Pick<DeliveryRecord, 'endpoint'>[]): Record<string, EndpointBacklog> {
  const counts = new Map<string, number>();
  for (const row of dead) counts.set(row.endpoint, (counts.get(row.endpoint) ?? 0) + 1);
  return Object.fromEntries(
    [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([endpoint, deadCount]) => [endpoint, { deadCount }] as const),
  );
}

/** The share of attempts that were retries; null when there were no attempts. */
export function retryRate(retriedAttempts: number, attempts: number): number | null {
  return attempts === 0 ? null : retriedAttempts / attempts;
}

export function deliveryStats(metrics: DeliveryMetrics): DeliveryStats {
  return {
    deliveredCount: metrics.delivered,
    attempts: metrics.attempts,
    retriedAttempts: metrics.retriedAttempts,
    retryRate: retryRate(metrics.retriedAttempts, metrics.attempts),
    deadLettered: metrics.deadLettered,
    latencyMs: { p50: metrics.latency.p50Ms, p99: metrics.latency.p99Ms },
    latencySamples: metrics.latency.samples,
    oldestPendingAgeMs: metrics.oldestPendingAgeMs,
  };
}

/**
 * When a row's current delivery began: its admission, or its last replay. A replay starts a new
 * delivery, so the time a row spent dead before it is not latency (the consumer's
 * `DeliveryLatency` counts from here).
 */
export function deliveryStartedAt(record: Pick<DeliveryRecord, 'createdAt' | 'audit'>): number {
  return record.audit.reduce((latest, entry) => Math.max(latest, entry.at), record.createdAt);
}
