import { describe, expect, it } from 'vitest';
import type { DeliveryMetrics } from '../../lib/metrics/metrics-reader';
import { backlogByEndpoint, backlogStats, deliveryStartedAt, deliveryStats, retryRate } from '../../lib/stats';

const NOW_MS = 1_800_000_000_000;

function metrics(overrides: Partial<DeliveryMetrics> = {}): DeliveryMetrics {
  return {
    delivered: 0,
    attempts: 0,
    retriedAttempts: 0,
    deadLettered: 0,
    latency: { samples: 0, p50Ms: null, p99Ms: null },
    ...overrides,
  };
}

describe('Function: backlogStats', () => {
  it('counts the pending and dead rows and reports how long the oldest pending row has waited', () => {
    const stats = backlogStats({
      nowMs: NOW_MS,
      // Not oldest first: a sharded listing need not be.
      pending: [{ stateSince: NOW_MS - 5_000 }, { stateSince: NOW_MS - 90_000 }, { stateSince: NOW_MS - 1_000 }],
      dead: [{}, {}],
    });

    expect(stats).toEqual({ pendingCount: 3, oldestPendingAgeMs: 90_000, deadCount: 2 });
  });

  it('reports a null age, not zero, when nothing is pending', () => {
    expect(backlogStats({ nowMs: NOW_MS, pending: [], dead: [] })).toEqual({
      pendingCount: 0,
      oldestPendingAgeMs: null,
      deadCount: 0,
    });
  });

  it('never reports a negative age for a row whose state changed after `nowMs` (clock skew)', () => {
    const stats = backlogStats({ nowMs: NOW_MS, pending: [{ stateSince: NOW_MS + 2_000 }], dead: [] });

    expect(stats.oldestPendingAgeMs).toBe(0);
  });
});

describe('Function: backlogByEndpoint', () => {
  it('counts pending and dead rows per endpoint, by name, leaving out endpoints with neither', () => {
    const split = backlogByEndpoint({
      pending: [{ endpoint: 'warehouse' }, { endpoint: 'billing' }, { endpoint: 'warehouse' }],
      dead: [{ endpoint: 'crm' }, { endpoint: 'billing' }],
    });

    expect(Object.entries(split)).toEqual([
      ['billing', { pendingCount: 1, deadCount: 1 }],
      ['crm', { pendingCount: 0, deadCount: 1 }],
      ['warehouse', { pendingCount: 2, deadCount: 0 }],
    ]);
    expect(backlogByEndpoint({ pending: [], dead: [] })).toEqual({});
  });
});

describe('Function: retryRate', () => {
  it('is the share of attempts that were not their delivery’s first', () => {
    expect(retryRate(3, 12)).toBe(0.25);
    expect(retryRate(0, 5)).toBe(0);
  });

  it('is null when nothing was attempted', () => {
    expect(retryRate(0, 0)).toBeNull();
  });
});

describe('Function: deliveryStats', () => {
  it('reads the delivered count, retry rate, dead-lettered count and latency percentiles from the metrics', () => {
    const stats = deliveryStats(
      metrics({
        delivered: 40,
        attempts: 50,
        retriedAttempts: 10,
        deadLettered: 2,
        latency: { samples: 40, p50Ms: 120, p99Ms: 2_400 },
      }),
    );

    expect(stats).toEqual({
      deliveredCount: 40,
      attempts: 50,
      retriedAttempts: 10,
      retryRate: 0.2,
      deadLettered: 2,
      latencyMs: { p50: 120, p99: 2_400 },
      latencySamples: 40,
    });
  });

  it('reports nulls, not zeros, for the rate and percentiles of a window with no traffic', () => {
    const stats = deliveryStats(metrics());

    expect(stats.retryRate).toBeNull();
    expect(stats.latencyMs).toEqual({ p50: null, p99: null });
    expect(stats.deliveredCount).toBe(0);
  });
});

describe('Function: deliveryStartedAt', () => {
  it('is the admission for a row never replayed', () => {
    expect(deliveryStartedAt({ createdAt: NOW_MS, audit: [] })).toBe(NOW_MS);
  });

  it('is the latest replay for a replayed row, so time spent dead is not latency', () => {
    const audit = [
      { at: NOW_MS + 2_000_000, action: 'replay' as const, operator: 'b', reason: 'r' },
      { at: NOW_MS + 1_000_000, action: 'replay' as const, operator: 'a', reason: 'r' },
    ];

    expect(deliveryStartedAt({ createdAt: NOW_MS, audit })).toBe(NOW_MS + 2_000_000);
  });
});
