/**
 * The consumer's metrics aggregated by time, in bounded memory: a bucket per minute for the last
 * hour, then a bucket per hour, each holding its counts, a latency histogram and the largest
 * `PendingAge` (CloudWatch's `Maximum`: the oldest message received), kept for
 * `retentionMs`. Whatever the traffic, that is at most 60 + one per hour of retention buckets,
 * each of bounded size. Beside them, for the console's per-minute chart, each minute's `Delivered`
 * and `Attempts` alone, kept minute by minute for the whole retention (two numbers a minute that
 * had any: at most 1,440 a day, where a bucket's histogram would be hundreds of bins). Pure: the
 * sandbox's metric sink fills and persists these; its reader summarizes them over a window.
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
import { PENDING_AGE_UNIT_MS, type MetricsWindow, type DeliveryMetrics, type MinuteMetrics } from './metrics-reader';
import { MINUTE_MS } from './minute-series';

export const HOUR_MS = 60 * MINUTE_MS;

/** The counts `handoff stats` reads. */
const COUNTED = ['Delivered', 'Attempts', 'RetriedAttempts', 'DeadLetters'] as const satisfies readonly MetricName[];
type Counted = (typeof COUNTED)[number];

export interface MetricBucket {
  /** Epoch ms of the bucket's start: a whole minute, or a whole hour for an hour's bucket. */
  readonly startMs: number;
  /** `MINUTE_MS` or `HOUR_MS`. */
  readonly spanMs: number;
  readonly counts: Readonly<Record<Counted, number>>;
  readonly latency: LatencyHistogram;
  /** The largest `PendingAge` in the bucket, in seconds as published; absent when it has none. */
  readonly pendingAgeMax?: number;
}


function emptyBucket(startMs: number, spanMs: number): MetricBucket {
  return { startMs, spanMs, counts: { Delivered: 0, Attempts: 0, RetriedAttempts: 0, DeadLetters: 0 }, latency: EMPTY_HISTOGRAM };
}

type BucketFigures = Pick<MetricBucket, 'counts' | 'latency' | 'pendingAgeMax'>;

function merged(a: MetricBucket, b: BucketFigures): MetricBucket {
  const counts = { ...a.counts };
  for (const name of COUNTED) counts[name] += b.counts[name];
  const pendingAgeMax = largest([a.pendingAgeMax, b.pendingAgeMax]);
  return { ...a, counts, latency: mergeHistograms(a.latency, b.latency), ...(pendingAgeMax === null ? {} : { pendingAgeMax }) };
}

export class MetricBuckets {
  readonly #retentionMs: number;
  /** By start; a minute's and an hour's bucket never share a start (see `roll`). */
  readonly #buckets = new Map<number, MetricBucket>();
  /** Each minute's `Delivered` and `Attempts`, by the minute's start; never folded into an hour. */
  readonly #minutes = new Map<number, MinuteMetrics>();

  constructor(retentionMs: number) {
    this.#retentionMs = retentionMs;
  }

  /** Adds a document's counts, latencies and pending ages to the bucket of the minute it was written in. */
  add(document: MetricDocument): void {
    const startMs = Math.floor(document.timestampMs / MINUTE_MS) * MINUTE_MS;
    const counts = emptyBucket(0, 0).counts as Record<Counted, number>;
    for (const name of COUNTED) counts[name] = sum(document.values[name] ?? []);
    const latency = addValues(EMPTY_HISTOGRAM, document.values.DeliveryLatency ?? []);
    const pendingAgeMax = largest(document.values.PendingAge ?? []);
    this.#merge(emptyBucket(startMs, MINUTE_MS), { counts, latency, ...(pendingAgeMax === null ? {} : { pendingAgeMax }) });
    if (counts.Delivered > 0 || counts.Attempts > 0) {
      const minute = this.#minutes.get(startMs);
      this.#minutes.set(startMs, {
        startMs,
        delivered: (minute?.delivered ?? 0) + counts.Delivered,
        attempts: (minute?.attempts ?? 0) + counts.Attempts,
      });
    }
  }

  /**
   * Folds the minutes older than an hour before `nowMs` into their hour's bucket, and drops the
   * buckets that ended more than the retention before `nowMs`.
   */
  roll(nowMs: number): void {
    for (const bucket of [...this.#buckets.values()]) {
      if (bucket.spanMs === MINUTE_MS && bucket.startMs + MINUTE_MS <= nowMs - HOUR_MS) {
        this.#buckets.delete(bucket.startMs);
        this.#merge(emptyBucket(Math.floor(bucket.startMs / HOUR_MS) * HOUR_MS, HOUR_MS), bucket);
      }
    }
    for (const bucket of [...this.#buckets.values()]) {
      if (bucket.startMs + bucket.spanMs <= nowMs - this.#retentionMs) this.#buckets.delete(bucket.startMs);
    }
    for (const startMs of [...this.#minutes.keys()]) {
      if (startMs + MINUTE_MS <= nowMs - this.#retentionMs) this.#minutes.delete(startMs);
    }
  }

  /** Oldest first. */
  list(): MetricBucket[] {
    return [...this.#buckets.values()].sort((a, b) => a.startMs - b.startMs);
  }

  /** The minutes with a delivery or an attempt in them, oldest first. */
  minutes(): MinuteMetrics[] {
    return [...this.#minutes.values()].sort((a, b) => a.startMs - b.startMs);
  }

  /**
   * Into the bucket of `empty`'s span at its start. A minute's bucket at the start of an hour
   * already folded (a late document) goes into that hour's bucket instead.
   */
  #merge(empty: MetricBucket, add: BucketFigures): void {
    const existing = this.#buckets.get(empty.startMs);
    this.#buckets.set(empty.startMs, merged(existing ?? empty, add));
  }
}

/**
 * The figures over a window, from every bucket that overlaps it: the window is widened to the
 * buckets' edges (whole minutes within the last hour, whole hours before), never narrowed.
 */
export function summarizeBuckets(buckets: readonly MetricBucket[], window: MetricsWindow): DeliveryMetrics {
  const inWindow = buckets.filter((b) => b.startMs + b.spanMs > window.startMs && b.startMs < window.endMs);
  const total = (name: Counted) => sum(inWindow.map((b) => b.counts[name]));
  const latency = inWindow.reduce((all, b) => mergeHistograms(all, b.latency), EMPTY_HISTOGRAM);
  const oldest = largest(inWindow.map((b) => b.pendingAgeMax));
  return {
    delivered: total('Delivered'),
    attempts: total('Attempts'),
    retriedAttempts: total('RetriedAttempts'),
    deadLettered: total('DeadLetters'),
    latency: { samples: latency.count, p50Ms: histogramPercentile(latency, 50), p99Ms: histogramPercentile(latency, 99) },
    oldestPendingAgeMs: oldest === null ? null : oldest * PENDING_AGE_UNIT_MS,
  };
}

/** A bucket read back from JSON, or a TypeError naming what is wrong with it. */
export function parseBucket(value: unknown): MetricBucket {
  const b = value as { startMs?: unknown; spanMs?: unknown; counts?: Record<string, unknown>; latency?: unknown; pendingAgeMax?: unknown } | null;
  if (typeof b !== 'object' || b === null || typeof b.startMs !== 'number' || typeof b.counts !== 'object' || b.counts === null) {
    throw new TypeError('a metric bucket needs startMs and counts');
  }
  if (b.spanMs !== MINUTE_MS && b.spanMs !== HOUR_MS) throw new TypeError(`metric bucket ${b.startMs}: spanMs must be a minute or an hour`);
  const counts = emptyBucket(0, 0).counts as Record<Counted, number>;
  for (const name of COUNTED) {
    const n = b.counts[name];
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new TypeError(`metric bucket ${b.startMs}: bad count ${name}`);
    counts[name] = n;
  }
  // Absent from a bucket that received none.
  const { pendingAgeMax } = b;
  if (pendingAgeMax !== undefined && (typeof pendingAgeMax !== 'number' || !Number.isFinite(pendingAgeMax) || pendingAgeMax < 0)) {
    throw new TypeError(`metric bucket ${b.startMs}: bad pendingAgeMax`);
  }
  return { startMs: b.startMs, spanMs: b.spanMs, counts, latency: parseHistogram(b.latency), ...(pendingAgeMax === undefined ? {} : { pendingAgeMax }) };
}

/** A minute as the sink's file keeps it: `[startMs, delivered, attempts]`, three numbers. */
export type StoredMinute = readonly [startMs: number, delivered: number, attempts: number];

export function storedMinute(minute: MinuteMetrics): StoredMinute {
  return [minute.startMs, minute.delivered, minute.attempts];
}

/** A minute read back from JSON, or a TypeError naming what is wrong with it. */
export function parseMinute(value: unknown): MinuteMetrics {
  if (!Array.isArray(value) || value.length !== 3) throw new TypeError('a metric minute must be [startMs, delivered, attempts]');
  const [startMs, delivered, attempts] = value as unknown[];
  if (typeof startMs !== 'number' || !Number.isInteger(startMs) || startMs % MINUTE_MS !== 0) throw new TypeError('a metric minute must start at a whole minute');
  for (const [name, n] of [['delivered', delivered], ['attempts', attempts]] as const) {
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new TypeError(`metric minute ${startMs}: bad count ${name}`);
  }
  return { startMs, delivered: delivered as number, attempts: attempts as number };
}

/** The largest of the values given; null when there are none. */
function largest(values: readonly (number | undefined)[]): number | null {
  const present = values.filter((v): v is number => v !== undefined);
  return present.length === 0 ? null : Math.max(...present);
}

function sum(values: readonly number[]): number {
  return values.reduce((total, n) => total + n, 0);
}
