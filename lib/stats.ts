/**
 * Operator statistics over ledger rows (SPEC §10): pure functions, so the numbers the `stats`
 * command prints are tested without a store. The caller reads the rows (from the by-state index,
 * never a scan) and says whether it stopped early; nothing here touches I/O.
 */
import type { DeliveryRecord } from './ledger/ledger';

export interface StatsInput {
  /** Epoch ms the figures are computed for. */
  readonly nowMs: number;
  /** Pending rows, oldest state change first (the index's order). */
  readonly pending: readonly DeliveryRecord[];
  readonly dead: readonly DeliveryRecord[];
  readonly delivered: readonly DeliveryRecord[];
}

export interface LedgerStats {
  readonly pendingCount: number;
  /** How long the longest-waiting pending row has been pending; null when none is. */
  readonly oldestPendingAgeMs: number | null;
  readonly deadCount: number;
  readonly deliveredCount: number;
  /** Attempts counted on the rows read (a replay resets a row's count). */
  readonly attempts: number;
  /** Attempts that were not a row's first: every attempt after the first one. */
  readonly retriedAttempts: number;
  /** retriedAttempts / attempts; null when nothing was attempted. */
  readonly retryRate: number | null;
  /** From admission (or the latest replay) to delivery, over the delivered rows read. */
  readonly latencyMs: { readonly p50: number | null; readonly p99: number | null };
}

/**
 * The nearest-rank percentile of values sorted ascending: the smallest value with at least `q`
 * percent of the values at or below it. Always one of the values; undefined when there are none.
 */
export function percentile(sortedAscending: readonly number[], q: number): number | undefined {
  if (!(q > 0 && q <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${q}`);
  if (sortedAscending.length === 0) return undefined;
  const rank = Math.ceil((q / 100) * sortedAscending.length);
  return sortedAscending[Math.min(rank, sortedAscending.length) - 1];
}

/**
 * When a row's current delivery began: its admission, or its last replay. A replay starts a new
 * delivery, so the time a row spent dead before it is not latency.
 */
export function deliveryStartedAt(record: Pick<DeliveryRecord, 'createdAt' | 'audit'>): number {
  return record.audit.reduce((latest, entry) => Math.max(latest, entry.at), record.createdAt);
}

/** Ms from when a delivered row's current delivery began to when it was delivered. */
export function deliveryLatencyMs(record: DeliveryRecord): number | undefined {
  if (record.deliveredAt === undefined) return undefined;
  return Math.max(0, record.deliveredAt - deliveryStartedAt(record));
}

export function ledgerStats(input: StatsInput): LedgerStats {
  const all = [...input.pending, ...input.dead, ...input.delivered];
  const attempts = sum(all.map((r) => r.attempts));
  const retriedAttempts = sum(all.map((r) => Math.max(r.attempts - 1, 0)));

  // The index lists oldest state change first, but do not rely on the caller's order here.
  const pendingSince = input.pending.map((r) => r.stateSince);
  const oldestPendingAgeMs =
    pendingSince.length === 0 ? null : Math.max(0, input.nowMs - Math.min(...pendingSince));

  const latencies = input.delivered
    .map(deliveryLatencyMs)
    .filter((ms): ms is number => ms !== undefined)
    .sort((a, b) => a - b);

  return {
    pendingCount: input.pending.length,
    oldestPendingAgeMs,
    deadCount: input.dead.length,
    deliveredCount: input.delivered.length,
    attempts,
    retriedAttempts,
    retryRate: attempts === 0 ? null : retriedAttempts / attempts,
    latencyMs: {
      p50: percentile(latencies, 50) ?? null,
      p99: percentile(latencies, 99) ?? null,
    },
  };
}

function sum(values: readonly number[]): number {
  return values.reduce((total, n) => total + n, 0);
}
