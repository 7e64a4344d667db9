import { describe, expect, it } from 'vitest';
import { MINUTE_MS, MinuteBuckets, parseBucket, summarizeBuckets } from '../../lib/metrics/minute-buckets';

const T0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE_MS);

describe('Class: MinuteBuckets', () => {
  it('adds each document to the bucket of the minute it was written in', () => {
    const buckets = new MinuteBuckets(3_600_000);

    buckets.add({ timestampMs: T0 + 1_000, values: { Delivered: [2], Attempts: [3], RetriedAttempts: [1], DeliveryLatency: [100, 200] } });
    buckets.add({ timestampMs: T0 + 59_999, values: { Delivered: [1], Attempts: [1], DeliveryLatency: [300] } });
    buckets.add({ timestampMs: T0 + 60_000, values: { DeadLetters: [1], Attempts: [1], RetriedAttempts: [1] } });

    const list = buckets.list();
    expect(list.map((b) => b.minuteMs)).toEqual([T0, T0 + MINUTE_MS]);
    expect(list[0]!.counts).toEqual({ Delivered: 3, Attempts: 4, RetriedAttempts: 1, DeadLetters: 0 });
    expect(list[0]!.latency.count).toBe(3);
    expect(list[1]!.counts).toEqual({ Delivered: 0, Attempts: 1, RetriedAttempts: 1, DeadLetters: 1 });
  });

  it('keeps one bucket per minute however many documents arrive', () => {
    const buckets = new MinuteBuckets(3_600_000);

    for (let i = 0; i < 10_000; i += 1) buckets.add({ timestampMs: T0 + (i % 60_000), values: { Delivered: [1], DeliveryLatency: [i % 500] } });

    expect(buckets.list()).toHaveLength(1);
    expect(buckets.list()[0]!.counts.Delivered).toBe(10_000);
  });

  it('drops the minutes that ended more than the retention ago', () => {
    const buckets = new MinuteBuckets(10 * MINUTE_MS);
    buckets.add({ timestampMs: T0, values: { Delivered: [1] } });
    buckets.add({ timestampMs: T0 + 5 * MINUTE_MS, values: { Delivered: [1] } });

    buckets.prune(T0 + 11 * MINUTE_MS);

    expect(buckets.list().map((b) => b.minuteMs)).toEqual([T0 + 5 * MINUTE_MS]);
  });
});

describe('Function: summarizeBuckets', () => {
  it('sums the counts and merges the latencies of the minutes that overlap the window', () => {
    const buckets = new MinuteBuckets(86_400_000);
    buckets.add({ timestampMs: T0 - 10 * MINUTE_MS, values: { Delivered: [100], Attempts: [100], DeliveryLatency: [9_999] } });
    buckets.add({ timestampMs: T0, values: { Delivered: [3], Attempts: [4], RetriedAttempts: [1], DeliveryLatency: [100, 100, 100] } });
    buckets.add({ timestampMs: T0 + MINUTE_MS, values: { Delivered: [1], Attempts: [2], RetriedAttempts: [1], DeadLetters: [1], DeliveryLatency: [400] } });

    const summary = summarizeBuckets(buckets.list(), { startMs: T0 + 30_000, endMs: T0 + 2 * MINUTE_MS });

    expect(summary).toEqual({
      delivered: 4,
      attempts: 6,
      retriedAttempts: 2,
      deadLettered: 1,
      latency: { samples: 4, p50Ms: 100, p99Ms: 400 },
    });
  });
});

describe('Function: parseBucket', () => {
  it('reads back what JSON made of a bucket', () => {
    const buckets = new MinuteBuckets(86_400_000);
    buckets.add({ timestampMs: T0, values: { Delivered: [3], DeliveryLatency: [5, 50] } });
    const [bucket] = buckets.list();

    expect(parseBucket(JSON.parse(JSON.stringify(bucket)))).toEqual(bucket);
  });

  it('throws naming the count that is wrong', () => {
    expect(() => parseBucket({ minuteMs: T0, counts: { Delivered: -1 }, latency: { count: 0, bins: {} } })).toThrow(
      `metric bucket ${T0}: bad count Delivered`,
    );
  });
});
