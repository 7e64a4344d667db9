/**
 * The port `handoff stats` reads delivery figures through: the consumer's own metrics over a
 * window, never the ledger's delivered rows (a delivered row is in no index, docs/contract.md §5).
 * Adapters: CloudWatch (`cloudwatch-reader.ts`) for a deployed stack, the sandbox's metric sink
 * (`sandbox/metric-sink.ts`) locally. Both read the metrics lib/observability.ts names, as one
 * summary of a window (`read`) or minute by minute (`readMinutes`, the console's chart).
 */

/** Epoch ms, start inclusive, end exclusive. */
export interface MetricsWindow {
  readonly startMs: number;
  readonly endMs: number;
}

/** What the consumer's metrics say about a window. */
export interface DeliveryMetrics {
  /** `Delivered`: deliveries the receiver accepted. */
  readonly delivered: number;
  /** `Attempts`: requests sent, whatever their outcome. */
  readonly attempts: number;
  /** `RetriedAttempts`: attempts that were not their delivery's first. */
  readonly retriedAttempts: number;
  /** `DeadLetters`: messages sent to the dead-letter queue. */
  readonly deadLettered: number;
  /** `DeliveryLatency`: how many values, and their p50 and p99 (null when there are none). */
  readonly latency: { readonly samples: number; readonly p50Ms: number | null; readonly p99Ms: number | null };
  /**
   * `PendingAge`'s maximum, in ms: how long the oldest message the consumer received in the window
   * had been on the queue (since it was sent) when it was received; null when it received none.
   * Not the age of a message waiting now: a message never received is not in it.
   */
  readonly oldestPendingAgeMs: number | null;
}

/** `PendingAge` is published in seconds (lib/observability.ts); readers answer in ms. */
export const PENDING_AGE_UNIT_MS = 1000;

export interface MetricsReadOptions {
  /**
   * One endpoint's figures (a delivery's metrics carry its endpoint, docs/contract.md §11); the
   * totals of every endpoint when absent.
   */
  readonly endpoint?: string;
}

/** One minute's counts: what the consumer published in it. */
export interface MinuteMetrics {
  /** Epoch ms of the minute's start (a whole minute). */
  readonly startMs: number;
  /** `Delivered` in the minute. */
  readonly delivered: number;
  /** `Attempts` in the minute, whatever their outcome. */
  readonly attempts: number;
}

export interface MetricsReader {
  /** Where the figures come from, for the operator: "CloudWatch (namespace Handoff, Service=handoff)". */
  readonly source: string;
  /** How the percentiles are computed, for the operator. */
  readonly percentileMethod: string;
  /** The longest window it can answer for: how long its source keeps the figures it reads. */
  readonly maxWindowMs: number;
  read(window: MetricsWindow, options?: MetricsReadOptions): Promise<DeliveryMetrics>;
  /**
   * The counts of every minute the window touches, oldest first: from the minute its start falls
   * in to the one its last millisecond falls in, a minute with nothing published in it as zeros
   * (lib/metrics/minute-series.ts `minuteSeries`).
   */
  readMinutes(window: MetricsWindow, options?: MetricsReadOptions): Promise<MinuteMetrics[]>;
}

/** The metrics could not be read: no permission, no such file, a malformed answer. */
export class MetricsUnavailableError extends Error {
  readonly code = 'metrics-unavailable';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'MetricsUnavailableError';
  }
}
