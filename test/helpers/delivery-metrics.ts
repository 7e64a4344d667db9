/**
 * The delivery figures a metrics reader answers (lib/metrics/metrics-reader.ts), written the one way
 * the tests expect them.
 */
import type { DeliveryMetrics } from '../../lib/metrics/metrics-reader';

/** A window with nothing in it: every count 0, no latency values, no message received. */
export const NO_METRICS: DeliveryMetrics = {
  delivered: 0,
  attempts: 0,
  retriedAttempts: 0,
  deadLettered: 0,
  latency: { samples: 0, p50Ms: null, p99Ms: null },
  oldestPendingAgeMs: null,
};

type Figures = Partial<Omit<DeliveryMetrics, 'latency'>> & {
  /** `DeliveryLatency`: how many values, their p50 and their p99, in ms. */
  readonly latency?: readonly [samples: number, p50Ms: number | null, p99Ms: number | null];
};

/** The figures given, those not given as in a window with nothing in it (`NO_METRICS`). */
export function deliveryMetrics({ latency, ...figures }: Figures): DeliveryMetrics {
  const [samples, p50Ms, p99Ms] = latency ?? [0, null, null];
  return { ...NO_METRICS, ...figures, latency: { samples, p50Ms, p99Ms } };
}
