import { describe, expect, it } from 'vitest';
import {
  addValues,
  binOf,
  binUpperMs,
  EMPTY_HISTOGRAM,
  histogramPercentile,
  mergeHistograms,
  parseHistogram,
} from '../../lib/metrics/latency-histogram';

/** The exact nearest-rank percentile: the smallest value with at least q% of values at or below it. */
function exactPercentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((q / 100) * sorted.length) - 1]!;
}

/** A deterministic spread of latencies from 1 ms to about 20 s. */
function latencies(count: number): number[] {
  let x = 7;
  return Array.from({ length: count }, () => {
    x = (x * 48_271) % 2_147_483_647;
    return Math.round(Math.exp((x / 2_147_483_647) * Math.log(20_000)));
  });
}

describe('Function: binOf', () => {
  it('puts every value at or below its bin’s upper bound and above the bin before', () => {
    for (const value of [1.5, 2, 10, 99, 100, 101, 1_234, 60_000, 3_600_000]) {
      const bin = binOf(value);

      expect(value).toBeLessThanOrEqual(binUpperMs(bin));
      expect(value).toBeGreaterThan(binUpperMs(bin - 1) * (1 - 1e-12));
    }
  });

  it('puts values up to 1 ms in bin 0', () => {
    expect(binOf(0)).toBe(0);
    expect(binOf(1)).toBe(0);
  });
});

describe('Function: histogramPercentile', () => {
  it('is exact when every value falls in one bin (a single value)', () => {
    const histogram = addValues(EMPTY_HISTOGRAM, [250]);

    expect(histogramPercentile(histogram, 50)).toBe(250);
    expect(histogramPercentile(histogram, 99)).toBe(250);
  });

  it('is never below the exact nearest-rank value and at most 2% above it', () => {
    const values = latencies(5_000);
    const histogram = addValues(EMPTY_HISTOGRAM, values);

    for (const q of [1, 50, 90, 99, 100]) {
      const exact = exactPercentile(values, q);
      const reported = histogramPercentile(histogram, q)!;

      expect(reported).toBeGreaterThanOrEqual(exact);
      expect(reported).toBeLessThanOrEqual(Math.ceil(exact * 1.02));
    }
  });

  it('never reports more than the largest value nor less than the smallest', () => {
    const histogram = addValues(EMPTY_HISTOGRAM, [1_000, 1_001, 1_002]);

    expect(histogramPercentile(histogram, 100)).toBe(1_002);
    expect(histogramPercentile(histogram, 1)).toBeGreaterThanOrEqual(1_000);
  });

  it('is null for an empty histogram', () => {
    expect(histogramPercentile(EMPTY_HISTOGRAM, 50)).toBeNull();
  });

  it('throws for a percentile outside (0, 100]', () => {
    expect(() => histogramPercentile(EMPTY_HISTOGRAM, 0)).toThrow(RangeError);
    expect(() => histogramPercentile(EMPTY_HISTOGRAM, 101)).toThrow(RangeError);
  });
});

describe('Function: addValues', () => {
  it('keeps a bounded number of bins whatever the number of values', () => {
    const histogram = addValues(EMPTY_HISTOGRAM, latencies(20_000));

    expect(histogram.count).toBe(20_000);
    // 1 ms to 20 s in 2% steps: ln(20000)/ln(1.02) is about 500 bins at most.
    expect(Object.keys(histogram.bins).length).toBeLessThanOrEqual(501);
  });

  it('skips values that are not latencies (negative, not finite)', () => {
    const histogram = addValues(EMPTY_HISTOGRAM, [-5, Number.NaN, Number.POSITIVE_INFINITY, 40]);

    expect(histogram.count).toBe(1);
    expect(histogram.minMs).toBe(40);
  });
});

describe('Function: mergeHistograms', () => {
  it('gives the same percentiles as one histogram of all the values', () => {
    const values = latencies(3_000);
    const whole = addValues(EMPTY_HISTOGRAM, values);

    const merged = mergeHistograms(addValues(EMPTY_HISTOGRAM, values.slice(0, 1_000)), addValues(EMPTY_HISTOGRAM, values.slice(1_000)));

    expect(merged).toEqual(whole);
  });
});

describe('Function: parseHistogram', () => {
  it('reads back what JSON made of a histogram, the empty one included', () => {
    const histogram = addValues(EMPTY_HISTOGRAM, [3, 30, 300]);

    expect(parseHistogram(JSON.parse(JSON.stringify(histogram)))).toEqual(histogram);
    expect(parseHistogram(JSON.parse(JSON.stringify(EMPTY_HISTOGRAM)))).toEqual(EMPTY_HISTOGRAM);
  });

  it('throws naming the problem when the bins do not add up to the count', () => {
    expect(() => parseHistogram({ count: 3, minMs: 1, maxMs: 2, bins: { '0': 1 } })).toThrow(
      'latency bins hold 1 values, count says 3',
    );
  });
});
