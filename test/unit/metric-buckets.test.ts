import { describe, expect, it } from 'vitest';
import { HOUR_MS, MetricBuckets, parseBucket, parseMinute, storedMinute, summarizeBuckets } from '../../lib/metrics/metric-buckets';
import { MINUTE_MS } from '../../lib/metrics/minute-series';
import { deliveryMetrics } from '../helpers/delivery-metrics';

/** The start of an hour. */
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % HOUR_MS);
const DAY_MS = 24 * HOUR_MS;

describe('Class: MetricBuckets', () => {
  it('adds each document to the bucket of the minute it was written in', () => {
    const buckets = new MetricBuckets(DAY_MS);

    buckets.add({ timestampMs: T0 + 1_000, values: { Delivered: [2], Attempts: [3], RetriedAttempts: [1], DeliveryLatency: [100, 200] } });
    buckets.add({ timestampMs: T0 + 59_999, values: { Delivered: [1], Attempts: [1], DeliveryLatency: [300] } });
    buckets.add({ timestampMs: T0 + 60_000, values: { DeadLetters: [1], Attempts: [1], RetriedAttempts: [1] } });

    const list = buckets.list();
    expect(list.map((b) => [b.startMs, b.spanMs])).toEqual([
      [T0, MINUTE_MS],
      [T0 + MINUTE_MS, MINUTE_MS],
    ]);
    expect(list[0]!.counts).toEqual({ Delivered: 3, Attempts: 4, RetriedAttempts: 1, DeadLetters: 0 });
    expect(list[0]!.latency.count).toBe(3);
    expect(list[1]!.counts).toEqual({ Delivered: 0, Attempts: 1, RetriedAttempts: 1, DeadLetters: 1 });
  });

  it('keeps one bucket per minute however many documents arrive', () => {
    const buckets = new MetricBuckets(DAY_MS);

    for (let i = 0; i < 10_000; i += 1) buckets.add({ timestampMs: T0 + (i % 60_000), values: { Delivered: [1], DeliveryLatency: [i % 500] } });

    expect(buckets.list()).toHaveLength(1);
    expect(buckets.list()[0]!.counts.Delivered).toBe(10_000);
  });

  it('folds the minutes older than an hour into their hour’s bucket, keeping every count and latency', () => {
    // Prepare: a document in every minute of two hours.
    const buckets = new MetricBuckets(DAY_MS);
    for (let minute = 0; minute < 120; minute += 1) {
      buckets.add({ timestampMs: T0 + minute * MINUTE_MS, values: { Delivered: [1], Attempts: [1], DeliveryLatency: [minute + 10] } });
    }
    const before = summarizeBuckets(buckets.list(), { startMs: T0, endMs: T0 + 2 * HOUR_MS });

    // Act: an hour after the second hour began, the first hour's minutes are over an hour old.
    buckets.roll(T0 + 2 * HOUR_MS);

    // Assess
    const list = buckets.list();
    expect(list).toHaveLength(61);
    expect([list[0]!.startMs, list[0]!.spanMs, list[0]!.counts.Delivered]).toEqual([T0, HOUR_MS, 60]);
    expect(list.slice(1).every((b) => b.spanMs === MINUTE_MS)).toBe(true);
    expect(summarizeBuckets(list, { startMs: T0, endMs: T0 + 2 * HOUR_MS })).toEqual(before);
  });

  it('holds at most 60 minute buckets and one per hour of the retention, whatever the traffic', () => {
    const buckets = new MetricBuckets(DAY_MS);
    for (let minute = 0; minute < 3 * 24 * 60; minute += 1) {
      buckets.add({ timestampMs: T0 + minute * MINUTE_MS, values: { Delivered: [1] } });
      if (minute % 10 === 0) buckets.roll(T0 + minute * MINUTE_MS);
    }

    buckets.roll(T0 + 3 * DAY_MS);

    expect(buckets.list().length).toBeLessThanOrEqual(60 + 24 + 1);
  });

  it('drops the buckets that ended more than the retention ago', () => {
    const buckets = new MetricBuckets(2 * HOUR_MS);
    buckets.add({ timestampMs: T0, values: { Delivered: [1] } });
    buckets.add({ timestampMs: T0 + 2 * HOUR_MS, values: { Delivered: [1] } });

    buckets.roll(T0 + 3 * HOUR_MS + MINUTE_MS);

    expect(buckets.list().map((b) => b.startMs)).toEqual([T0 + 2 * HOUR_MS]);
  });
});

describe('Class: MetricBuckets, minute by minute', () => {
  it("keeps each minute's Delivered and Attempts after its bucket is folded into its hour, for the whole retention", () => {
    // Prepare: a document in every minute of three hours, then the roll an hour after they end.
    const buckets = new MetricBuckets(DAY_MS);
    for (let minute = 0; minute < 180; minute += 1) {
      buckets.add({ timestampMs: T0 + minute * MINUTE_MS + 5_000, values: { Delivered: [minute % 3], Attempts: [2], DeliveryLatency: [40] } });
    }

    // Act
    buckets.roll(T0 + 4 * HOUR_MS);

    // Assess: the buckets are hours now; the minutes are as they were, 180 of them.
    expect(buckets.list().map((b) => b.spanMs)).toEqual([HOUR_MS, HOUR_MS, HOUR_MS]);
    const minutes = buckets.minutes();
    expect(minutes).toHaveLength(180);
    expect(minutes.slice(0, 3)).toEqual([
      { startMs: T0, delivered: 0, attempts: 2 },
      { startMs: T0 + MINUTE_MS, delivered: 1, attempts: 2 },
      { startMs: T0 + 2 * MINUTE_MS, delivered: 2, attempts: 2 },
    ]);
  });

  it('adds the documents of one minute together, and keeps no minute that had neither a delivery nor an attempt', () => {
    const buckets = new MetricBuckets(DAY_MS);

    buckets.add({ timestampMs: T0 + 1_000, values: { Delivered: [1], Attempts: [1] } });
    buckets.add({ timestampMs: T0 + 50_000, values: { Attempts: [2] } });
    buckets.add({ timestampMs: T0 + MINUTE_MS, values: { PendingAge: [4], DeadLetters: [1] } });

    expect(buckets.minutes()).toEqual([{ startMs: T0, delivered: 1, attempts: 3 }]);
  });

  it('drops the minutes that ended more than the retention ago, and holds at most one a minute of it', () => {
    const buckets = new MetricBuckets(DAY_MS);
    for (let minute = 0; minute < 2 * 24 * 60; minute += 1) buckets.add({ timestampMs: T0 + minute * MINUTE_MS, values: { Attempts: [1] } });

    buckets.roll(T0 + 2 * DAY_MS);

    const minutes = buckets.minutes();
    expect(minutes).toHaveLength(24 * 60);
    expect(minutes[0]!.startMs).toBe(T0 + DAY_MS);
  });
});

describe('Function: parseMinute', () => {
  it('reads back what the file keeps of a minute', () => {
    const minute = { startMs: T0 + MINUTE_MS, delivered: 3, attempts: 5 };

    expect(parseMinute(JSON.parse(JSON.stringify(storedMinute(minute))))).toEqual(minute);
  });

  it('throws naming what is wrong', () => {
    expect(() => parseMinute({ startMs: T0 })).toThrow('a metric minute must be [startMs, delivered, attempts]');
    expect(() => parseMinute([T0 + 1, 0, 0])).toThrow('a metric minute must start at a whole minute');
    expect(() => parseMinute([T0, 1, -2])).toThrow(`metric minute ${T0}: bad count attempts`);
  });
});

describe('Function: summarizeBuckets', () => {
  it('sums the counts, merges the latencies and keeps the largest PendingAge (in ms) of the buckets that overlap the window', () => {
    const buckets = new MetricBuckets(DAY_MS);
    buckets.add({ timestampMs: T0 - 10 * MINUTE_MS, values: { Delivered: [100], Attempts: [100], DeliveryLatency: [9_999], PendingAge: [999] } });
    buckets.add({ timestampMs: T0, values: { Delivered: [3], Attempts: [4], RetriedAttempts: [1], DeliveryLatency: [100, 100, 100], PendingAge: [3, 7] } });
    buckets.add({ timestampMs: T0 + MINUTE_MS, values: { Delivered: [1], Attempts: [2], RetriedAttempts: [1], DeadLetters: [1], DeliveryLatency: [400], PendingAge: [5] } });

    const summary = summarizeBuckets(buckets.list(), { startMs: T0 + 30_000, endMs: T0 + 2 * MINUTE_MS });

    expect(summary).toEqual(deliveryMetrics({ delivered: 4, attempts: 6, retriedAttempts: 2, deadLettered: 1, latency: [4, 100, 400], oldestPendingAgeMs: 7_000 }));
  });
});

describe('Function: parseBucket', () => {
  it('reads back what JSON made of a bucket', () => {
    const buckets = new MetricBuckets(DAY_MS);
    buckets.add({ timestampMs: T0, values: { Delivered: [3], DeliveryLatency: [5, 50], PendingAge: [12.5] } });
    const [bucket] = buckets.list();

    expect(parseBucket(JSON.parse(JSON.stringify(bucket)))).toEqual(bucket);
  });

  it('throws naming the field that is wrong', () => {
    expect(() => parseBucket({ startMs: T0, spanMs: MINUTE_MS, counts: { Delivered: -1 }, latency: { count: 0, bins: {} } })).toThrow(
      `metric bucket ${T0}: bad count Delivered`,
    );
    expect(() => parseBucket({ startMs: T0, spanMs: 5, counts: {}, latency: { count: 0, bins: {} } })).toThrow(
      `metric bucket ${T0}: spanMs must be a minute or an hour`,
    );
  });
});
