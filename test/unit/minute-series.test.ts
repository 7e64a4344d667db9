/**
 * The per-minute series' arithmetic (lib/metrics/minute-series.ts): which minutes a window is,
 * one entry for each of them with the counts summed into the minute they fall in and zeros where
 * none fell, and the failed attempts of a minute.
 */
import { describe, expect, it } from 'vitest';
import { failedAttempts, lastMinutes, MINUTE_MS, minuteOf, minuteSeries } from '../../lib/metrics/minute-series';

/** The start of a minute. */
const T0 = Date.UTC(2026, 11, 2, 10, 0, 0);

describe('Function: lastMinutes', () => {
  it('is the last N whole minutes, the current one (still filling) the last', () => {
    const window = lastMinutes(T0 + 37_250, 60);

    expect(window).toEqual({ startMs: T0 - 59 * MINUTE_MS, endMs: T0 + MINUTE_MS });
    expect(minuteSeries(window, [])).toHaveLength(60);
  });

  it('counts the current minute as one of them when now is its very start', () => {
    expect(lastMinutes(T0, 1)).toEqual({ startMs: T0, endMs: T0 + MINUTE_MS });
    expect(minuteSeries(lastMinutes(T0, 1440), [])).toHaveLength(1440);
  });

  it('refuses a count of minutes that is not a whole number of at least 1', () => {
    expect(() => lastMinutes(T0, 0)).toThrow(RangeError);
    expect(() => lastMinutes(T0, 1.5)).toThrow(RangeError);
  });
});

describe('Function: minuteSeries', () => {
  it('gives every minute of the window, oldest first, zeros where nothing was counted', () => {
    const series = minuteSeries({ startMs: T0, endMs: T0 + 4 * MINUTE_MS }, [{ startMs: T0 + 2 * MINUTE_MS, delivered: 5, attempts: 7 }]);

    expect(series).toEqual([
      { startMs: T0, delivered: 0, attempts: 0 },
      { startMs: T0 + MINUTE_MS, delivered: 0, attempts: 0 },
      { startMs: T0 + 2 * MINUTE_MS, delivered: 5, attempts: 7 },
      { startMs: T0 + 3 * MINUTE_MS, delivered: 0, attempts: 0 },
    ]);
  });

  it('adds the counts given for one minute (a source may split it, as pages split a metric), each in the minute its start falls in', () => {
    const series = minuteSeries({ startMs: T0, endMs: T0 + 2 * MINUTE_MS }, [
      { startMs: T0, delivered: 3, attempts: 0 },
      { startMs: T0, delivered: 0, attempts: 4 },
      { startMs: T0 + 59_999, delivered: 1, attempts: 1 },
      { startMs: T0 + MINUTE_MS, delivered: 2, attempts: 2 },
    ]);

    expect(series).toEqual([
      { startMs: T0, delivered: 4, attempts: 5 },
      { startMs: T0 + MINUTE_MS, delivered: 2, attempts: 2 },
    ]);
  });

  it('leaves out counts before and after the window', () => {
    const series = minuteSeries({ startMs: T0, endMs: T0 + MINUTE_MS }, [
      { startMs: T0 - MINUTE_MS, delivered: 9, attempts: 9 },
      { startMs: T0 + MINUTE_MS, delivered: 8, attempts: 8 },
      { startMs: T0, delivered: 1, attempts: 1 },
    ]);

    expect(series).toEqual([{ startMs: T0, delivered: 1, attempts: 1 }]);
  });

  it('widens a window that does not start or end on a minute to the minutes it touches', () => {
    const series = minuteSeries({ startMs: T0 + 30_000, endMs: T0 + MINUTE_MS + 1 }, [{ startMs: T0 + MINUTE_MS, delivered: 1, attempts: 2 }]);

    expect(series.map((m) => m.startMs)).toEqual([T0, T0 + MINUTE_MS]);
    expect(series[1]).toEqual({ startMs: T0 + MINUTE_MS, delivered: 1, attempts: 2 });
  });

  it('is empty for an empty window', () => {
    expect(minuteSeries({ startMs: T0, endMs: T0 }, [{ startMs: T0, delivered: 1, attempts: 1 }])).toEqual([]);
  });
});

describe('Function: failedAttempts', () => {
  it('is the attempts that did not deliver: Attempts less Delivered', () => {
    expect(failedAttempts({ delivered: 7, attempts: 10 })).toBe(3);
    expect(failedAttempts({ delivered: 0, attempts: 0 })).toBe(0);
  });

  it('is never below zero, whatever the counts say', () => {
    expect(failedAttempts({ delivered: 5, attempts: 3 })).toBe(0);
  });
});

describe('Function: minuteOf', () => {
  it("is the start of the minute a time falls in", () => {
    expect(minuteOf(T0 + 59_999)).toBe(T0);
    expect(minuteOf(T0)).toBe(T0);
  });
});
