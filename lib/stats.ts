/**
 * Operator statistics (docs/contract.md §10): pure functions, so the numbers `handoff stats`
 * prints are tested without a store. Two sources, because a delivered row is in no index
 * (docs/contract.md §5):
 * - the backlog (pending count, oldest pending age, dead count) from the ledger's listing of its
 *   pending and dead rows, which reads only those rows;
 * - delivery figures (delivered count, retry rate, latency percentiles) from the consumer's
 *   metrics over a window (lib/metrics/).
 */
import type { DeliveryRecord } from './ledger/ledger';
import type { DeliveryMetrics } from './metrics/metrics-reader';

export interface BacklogInput {
  /** Epoch ms the figures are computed for. */
  readonly nowMs: number;
  readonly pending: readonly Pick<DeliveryRecord, 'stateSince'>[];
  readonly dead: readonly unknown[];
}

export interface BacklogStats {
  readonly pendingCount: number;
  /** How long the longest-waiting pending row has been pending; null when none is. */
  readonly oldestPendingAgeMs: number | null;
  readonly deadCount: number;
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
}

export function backlogStats(input: BacklogInput): BacklogStats {
  // Do not rely on the listing's order: a sharded listing need not be oldest first overall.
  const oldestSince = input.pending.reduce((oldest, r) => Math.min(oldest, r.stateSince), Infinity);
  return {
    pendingCount: input.pending.length,
    oldestPendingAgeMs: input.pending.length === 0 ? null : Math.max(0, input.nowMs - oldestSince),
    deadCount: input.dead.length,
  };
}

export interface EndpointBacklog {
  readonly pendingCount: number;
  readonly deadCount: number;
}

/** The backlog's counts split by the rows' endpoints, by name; endpoints with neither are absent. */
export function backlogByEndpoint(input: {
  readonly pending: readonly Pick<DeliveryRecord, 'endpoint'>[];
  readonly dead: readonly Pick<DeliveryRecord, 'endpoint'>[];
}): Record<string, EndpointBacklog> {
  const counts = new Map<string, { pendingCount: number; deadCount: number }>();
  const entry = (endpoint: string) => {
    let found = counts.get(endpoint);
    if (found === undefined) counts.set(endpoint, (found = { pendingCount: 0, deadCount: 0 }));
    return found;
  };
  for (const row of input.pending) entry(row.endpoint).pendingCount += 1;
  for (const row of input.dead) entry(row.endpoint).deadCount += 1;
  return Object.fromEntries([...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
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
