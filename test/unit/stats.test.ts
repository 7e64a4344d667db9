import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { deliveryLatencyMs, ledgerStats, percentile } from '../../lib/stats';

const NOW_MS = 1_800_000_000_000;

function row(overrides: Partial<DeliveryRecord>): DeliveryRecord {
  return {
    eventId: 'evt_1',
    endpoint: 'default',
    state: 'pending',
    attempts: 1,
    maxAttempts: DEFAULT_RETRY_POLICY.maxAttempts,
    policy: DEFAULT_RETRY_POLICY,
    history: [],
    replays: 0,
    audit: [],
    createdAt: NOW_MS - 60_000,
    stateSince: NOW_MS - 60_000,
    expiresAt: NOW_MS / 1000 + 86_400,
    ...overrides,
  };
}

function delivered(latencyMs: number, attempts = 1): DeliveryRecord {
  const createdAt = NOW_MS - 100_000;
  return row({ state: 'delivered', attempts, createdAt, deliveredAt: createdAt + latencyMs, stateSince: createdAt + latencyMs });
}

describe('Function: percentile', () => {
  it('returns the nearest-rank value: the smallest with at least q% of values at or below it', () => {
    const values = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];

    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 90)).toBe(90);
    expect(percentile(values, 99)).toBe(100);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile(values, 1)).toBe(10);
  });

  it('returns the only value of a single-value list for every percentile', () => {
    expect(percentile([42], 50)).toBe(42);
    expect(percentile([42], 99)).toBe(42);
  });

  it('is the 99th of 100 values for p99, not the maximum', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);

    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 50)).toBe(50);
  });

  it('returns undefined for no values', () => {
    expect(percentile([], 50)).toBeUndefined();
  });

  it('throws for a percentile outside (0, 100]', () => {
    expect(() => percentile([1], 0)).toThrow(RangeError);
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], Number.NaN)).toThrow(RangeError);
  });
});

describe('Function: deliveryLatencyMs', () => {
  it('measures from admission to delivery', () => {
    expect(deliveryLatencyMs(delivered(1_250))).toBe(1_250);
  });

  it('measures from the latest replay, not from the first admission, for a replayed row', () => {
    // Prepare: admitted, dead for an hour, replayed twice, delivered 3 s after the last replay.
    const createdAt = NOW_MS - 3_600_000;
    const record = row({
      state: 'delivered',
      createdAt,
      replays: 2,
      audit: [
        { at: createdAt + 1_000_000, action: 'replay', operator: 'a', reason: 'r' },
        { at: createdAt + 2_000_000, action: 'replay', operator: 'b', reason: 'r' },
      ],
      deliveredAt: createdAt + 2_003_000,
    });

    expect(deliveryLatencyMs(record)).toBe(3_000);
  });

  it('is undefined for a row that was never delivered', () => {
    expect(deliveryLatencyMs(row({ state: 'dead' }))).toBeUndefined();
  });
});

describe('Function: ledgerStats', () => {
  it('counts rows per state and reports how long the oldest pending row has waited', () => {
    const stats = ledgerStats({
      nowMs: NOW_MS,
      pending: [row({ stateSince: NOW_MS - 5_000 }), row({ stateSince: NOW_MS - 90_000 }), row({ stateSince: NOW_MS - 1_000 })],
      dead: [row({ state: 'dead' })],
      delivered: [delivered(100), delivered(200)],
    });

    expect(stats.pendingCount).toBe(3);
    expect(stats.oldestPendingAgeMs).toBe(90_000);
    expect(stats.deadCount).toBe(1);
    expect(stats.deliveredCount).toBe(2);
  });

  it('computes the retry rate as attempts after each row’s first over all attempts', () => {
    // Prepare: 1 + 3 + 2 = 6 attempts, of which 0 + 2 + 1 = 3 were retries.
    const stats = ledgerStats({
      nowMs: NOW_MS,
      pending: [row({ attempts: 2 })],
      dead: [row({ state: 'dead', attempts: 3 })],
      delivered: [delivered(100, 1)],
    });

    expect(stats.attempts).toBe(6);
    expect(stats.retriedAttempts).toBe(3);
    expect(stats.retryRate).toBe(0.5);
  });

  it('does not count a replayed row that has not been attempted yet as a retry', () => {
    const stats = ledgerStats({ nowMs: NOW_MS, pending: [row({ attempts: 0, replays: 1 })], dead: [], delivered: [delivered(10)] });

    expect(stats.attempts).toBe(1);
    expect(stats.retriedAttempts).toBe(0);
    expect(stats.retryRate).toBe(0);
  });

  it('reports latency p50 and p99 over the delivered rows', () => {
    const latencies = [900, 100, 500, 300, 700, 200, 800, 400, 600, 1_000];

    const stats = ledgerStats({ nowMs: NOW_MS, pending: [], dead: [], delivered: latencies.map((ms) => delivered(ms)) });

    expect(stats.latencyMs).toEqual({ p50: 500, p99: 1_000 });
  });

  it('reports nulls, not zeros, when there is nothing to measure', () => {
    const stats = ledgerStats({ nowMs: NOW_MS, pending: [], dead: [], delivered: [] });

    expect(stats).toEqual({
      pendingCount: 0,
      oldestPendingAgeMs: null,
      deadCount: 0,
      deliveredCount: 0,
      attempts: 0,
      retriedAttempts: 0,
      retryRate: null,
      latencyMs: { p50: null, p99: null },
    });
  });

  it('never reports a negative age for a row whose state changed after `nowMs` (clock skew)', () => {
    const stats = ledgerStats({ nowMs: NOW_MS, pending: [row({ stateSince: NOW_MS + 2_000 })], dead: [], delivered: [] });

    expect(stats.oldestPendingAgeMs).toBe(0);
  });
});
