/**
 * The consumer's metrics aggregated per minute, in bounded memory: one bucket per minute that saw
 * a metric document (its counts and a latency histogram), kept for `retentionMs`. Whatever the
 * traffic, that is at most one bucket per minute of the retention, each of bounded size. Pure:
 * the sandbox's metric sink fills and persists these; its reader summarizes them over a window.
 */
import type { MetricDocument, MetricName } from '../observability';
import {
  addValues,
  EMPTY_HISTOGRAM,
  histogramPercentile,
  mergeHistograms,
  parseHistogram,
  type LatencyHistogram,
} from './latency-histogram';
import type { DeliveryMetrics, MetricsWindow } from './metrics-reader';

export const MINUTE_MS = 60_000;

/** The counts `handoff stats` reads. */
const COUNTED = ['Delivered', 'Attempts', 'RetriedAttempts', 'DeadLetters'] as const satisfies readonly MetricName[];
type Counted = (typeof COUNTED)[number];

export interface MinuteBucket {
  /** Epoch ms of the minute's start. */
  readonly minuteMs: number;
  readonly counts: Readonly<Record<Counted, number>>;
  readonly latency: LatencyHistogram;
}

function emptyBucket(minuteMs: number): MinuteBucket {
  return { minuteMs, counts: { Delivered: 0, Attempts: 0, RetriedAttempts: 0, DeadLetters: 0 }, latency: EMPTY_HISTOGRAM };
}

export class MinuteBuckets {
  readonly #retentionMs: number;
  readonly #buckets = new Map<number, MinuteBucket>();

  constructor(retentionMs: number, buckets: readonly MinuteBucket[] = []) {
    this.#retentionMs = retentionMs;
    for (const bucket of buckets) this.#buckets.set(bucket.minuteMs, bucket);
  }

  /** Adds a document's counts and latencies to the bucket of the minute it was written in. */
  add(document: MetricDocument): void {
    const minuteMs = Math.floor(document.timestampMs / MINUTE_MS) * MINUTE_MS;
    const bucket = this.#buckets.get(minuteMs) ?? emptyBucket(minuteMs);
    const counts = { ...bucket.counts };
    for (const name of COUNTED) counts[name] += sum(document.values[name] ?? []);
    this.#buckets.set(minuteMs, {
      minuteMs,
      counts,
      latency: addValues(bucket.latency, document.values.DeliveryLatency ?? []),
    });
  }

  /** Drops the buckets of minutes that ended more than the retention before `nowMs`. */
  prune(nowMs: number): void {
    for (const minuteMs of this.#buckets.keys()) {
      if (minuteMs + MINUTE_MS <= nowMs - this.#retentionMs) this.#buckets.delete(minuteMs);
    }
  }

  /** Oldest first. */
  list(): MinuteBucket[] {
    return [...this.#buckets.values()].sort((a, b) => a.minuteMs - b.minuteMs);
  }
}

/**
 * The figures over a window, from the buckets of every minute that overlaps it: the window is
 * widened to whole minutes, never narrowed.
 */
export function summarizeBuckets(buckets: readonly MinuteBucket[], window: MetricsWindow): DeliveryMetrics {
  const inWindow = buckets.filter((b) => b.minuteMs + MINUTE_MS > window.startMs && b.minuteMs < window.endMs);
  const total = (name: Counted) => sum(inWindow.map((b) => b.counts[name]));
  const latency = inWindow.reduce((merged, b) => mergeHistograms(merged, b.latency), EMPTY_HISTOGRAM);
  return {
    delivered: total('Delivered'),
    attempts: total('Attempts'),
    retriedAttempts: total('RetriedAttempts'),
    deadLettered: total('DeadLetters'),
    latency: { samples: latency.count, p50Ms: histogramPercentile(latency, 50), p99Ms: histogramPercentile(latency, 99) },
  };
}

/** A bucket read back from JSON, or a TypeError naming what is wrong with it. */
export function parseBucket(value: unknown): MinuteBucket {
  const b = value as { minuteMs?: unknown; counts?: Record<string, unknown>; latency?: unknown } | null;
  if (typeof b !== 'object' || b === null || typeof b.minuteMs !== 'number' || typeof b.counts !== 'object' || b.counts === null) {
    throw new TypeError('a metric bucket needs minuteMs and counts');
  }
  const counts = emptyBucket(b.minuteMs).counts as Record<Counted, number>;
  for (const name of COUNTED) {
    const n = b.counts[name];
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new TypeError(`metric bucket ${b.minuteMs}: bad count ${name}`);
    counts[name] = n;
  }
  return { minuteMs: b.minuteMs, counts, latency: parseHistogram(b.latency) };
}

function sum(values: readonly number[]): number {
  return values.reduce((total, n) => total + n, 0);
}
