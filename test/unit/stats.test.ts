import { describe, expect, it } from 'vitest';
import type { DeliveryMetrics } from '../../lib/metrics/metrics-reader';
import { deadByEndpoint, deliveryStartedAt, deliveryStats, messagesOn, pendingCount, retryRate } from '../../lib/stats';
import { NO_METRICS } from '../helpers/delivery-metrics';

const NOW_MS = 1_800_000_000_000;

function metrics(overrides: Partial<DeliveryMetrics> = {}): DeliveryMetrics {
  return { ...NO_METRICS, ...overrides };
}

describe('Function: pendingCount', () => {
  const empty = { visible: 0, inFlight: 0, delayed: 0 };

  it("counts every message on the delivery queue and the redrive queue: waiting, in flight (a delivery between its attempts) and delayed", () => {
    expect(messagesOn({ visible: 2, inFlight: 3, delayed: 4 })).toBe(9);
    expect(pendingCount({ visible: 2, inFlight: 3, delayed: 4 }, { visible: 1, inFlight: 1, delayed: 0 })).toBe(11);
    expect(pendingCount(empty, empty)).toBe(0);
  });

  it('counts the delivery queue alone when the target names no redrive queue', () => {
    expect(pendingCount({ visible: 0, inFlight: 1, delayed: 0 }, null)).toBe(1);
  });

  it('is null, not zero, when the target names no delivery queue', () => {
    expect(pendingCount(null, empty)).toBeNull();
    expect(pendingCount(null, null)).toBeNull();
  });
});

describe('Function: deadByEndpoint', () => {
  it('counts dead rows per endpoint, by name, leaving out endpoints with none', () => {
    const split = deadByEndpoint([{ endpoint: 'crm' }, { endpoint: 'billing' }, { endpoint: 'crm' }]);

    expect(Object.entries(split)).toEqual([
      ['billing', { deadCount: 1 }],
      ['crm', { deadCount: 2 }],
    ]);
    expect(deadByEndpoint([])).toEqual({});
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
  it('reads the delivered count, retry rate, dead-lettered count, latency percentiles and oldest message received from the metrics', () => {
    const stats = deliveryStats(
      metrics({
        delivered: 40,
        attempts: 50,
        retriedAttempts: 10,
        deadLettered: 2,
        latency: { samples: 40, p50Ms: 120, p99Ms: 2_400 },
        oldestPendingAgeMs: 180_000,
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
      oldestPendingAgeMs: 180_000,
    });
  });

  it('reports nulls, not zeros, for the rate, percentiles and oldest message of a window with no traffic', () => {
    const stats = deliveryStats(metrics());

    expect(stats.retryRate).toBeNull();
    expect(stats.oldestPendingAgeMs).toBeNull();
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
