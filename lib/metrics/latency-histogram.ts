/**
 * Latency percentiles in bounded memory: values go into fixed bins that grow by 2%, so any number
 * of values (and any number of merged histograms) takes at most a few hundred bins. A percentile
 * is the nearest rank over the bins: the upper bound of the bin holding the rank's value, in
 * whole ms rounded down, clamped to the smallest and largest values seen. For whole-ms values (the
 * consumer's latencies are) it is therefore never below the exact nearest-rank value and at most
 * 2% above it; when every value falls in one bin (a single value, say) it is exact. Pure data and
 * functions: the sandbox's metric sink persists these as JSON.
 */

/** Each bin's upper bound is this factor times the one before. */
const GROWTH = 1.02;
const LOG_GROWTH = Math.log(GROWTH);

export interface LatencyHistogram {
  readonly count: number;
  readonly minMs: number;
  readonly maxMs: number;
  /** Bin index (as a string, for JSON) to how many values fell in it. */
  readonly bins: Readonly<Record<string, number>>;
}

export const EMPTY_HISTOGRAM: LatencyHistogram = { count: 0, minMs: Infinity, maxMs: -Infinity, bins: {} };

/** Bin 0 holds values up to 1 ms; bin i holds (GROWTH^(i-1), GROWTH^i]. */
export function binOf(valueMs: number): number {
  if (valueMs <= 1) return 0;
  const bin = Math.ceil(Math.log(valueMs) / LOG_GROWTH);
  // The logarithm's rounding may land one bin low; a value never exceeds its bin's upper bound.
  return binUpperMs(bin) < valueMs ? bin + 1 : bin;
}

export function binUpperMs(bin: number): number {
  return GROWTH ** bin;
}

/** The histogram with `valuesMs` added; non-finite and negative values are not latencies and are skipped. */
export function addValues(histogram: LatencyHistogram, valuesMs: readonly number[]): LatencyHistogram {
  const valid = valuesMs.filter((v) => Number.isFinite(v) && v >= 0);
  if (valid.length === 0) return histogram;
  const bins: Record<string, number> = { ...histogram.bins };
  for (const value of valid) {
    const bin = String(binOf(value));
    bins[bin] = (bins[bin] ?? 0) + 1;
  }
  return {
    count: histogram.count + valid.length,
    minMs: Math.min(histogram.minMs, ...valid),
    maxMs: Math.max(histogram.maxMs, ...valid),
    bins,
  };
}

export function mergeHistograms(a: LatencyHistogram, b: LatencyHistogram): LatencyHistogram {
  if (b.count === 0) return a;
  if (a.count === 0) return b;
  const bins: Record<string, number> = { ...a.bins };
  for (const [bin, n] of Object.entries(b.bins)) bins[bin] = (bins[bin] ?? 0) + n;
  return { count: a.count + b.count, minMs: Math.min(a.minMs, b.minMs), maxMs: Math.max(a.maxMs, b.maxMs), bins };
}

/** The nearest-rank percentile `q` in (0, 100] as described above; null for an empty histogram. */
export function histogramPercentile(histogram: LatencyHistogram, q: number): number | null {
  if (!(q > 0 && q <= 100)) throw new RangeError(`percentile must be in (0, 100], got ${q}`);
  if (histogram.count === 0) return null;
  const rank = Math.ceil((q / 100) * histogram.count);
  const bins = Object.entries(histogram.bins)
    .map(([bin, n]) => [Number(bin), n] as const)
    .sort(([a], [b]) => a - b);
  let seen = 0;
  for (const [bin, n] of bins) {
    seen += n;
    if (seen >= rank) return Math.min(histogram.maxMs, Math.max(histogram.minMs, Math.floor(binUpperMs(bin))));
  }
  return histogram.maxMs;
}

/** A histogram read back from JSON, or an error naming what is wrong with it. */
export function parseHistogram(value: unknown): LatencyHistogram {
  const h = value as Partial<Record<keyof LatencyHistogram, unknown>> | null;
  if (typeof h !== 'object' || h === null) throw new TypeError('a latency histogram must be an object');
  const bins = h.bins as Record<string, unknown> | undefined;
  if (typeof h.count !== 'number' || typeof bins !== 'object' || bins === null) {
    throw new TypeError('a latency histogram needs count and bins');
  }
  if (h.count === 0) return EMPTY_HISTOGRAM;
  if (typeof h.minMs !== 'number' || typeof h.maxMs !== 'number') throw new TypeError('a latency histogram needs minMs and maxMs');
  const checked: Record<string, number> = {};
  let total = 0;
  for (const [bin, n] of Object.entries(bins)) {
    if (!/^\d+$/.test(bin) || typeof n !== 'number' || !Number.isInteger(n) || n < 0) throw new TypeError(`bad latency bin ${bin}`);
    checked[bin] = n;
    total += n;
  }
  if (total !== h.count) throw new TypeError(`latency bins hold ${total} values, count says ${h.count}`);
  return { count: h.count, minMs: h.minMs, maxMs: h.maxMs, bins: checked };
}
