/**
 * The metrics the construct's alarms and dashboard read, by the names the functions publish them
 * under (lib/observability.ts, lib/recovery.ts).
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { ENDPOINT_DIMENSION, METRIC_DIMENSIONS, METRICS_NAMESPACE, type MetricName } from '../../lib/observability';

/**
 * The consumer's CloudWatch metrics (embedded metric format), named by lib/observability.ts,
 * which writes them: namespace `Handoff`, one dimension `Service` = `handoff`. The dashboard and
 * the operator's `stats` read them by these names.
 */
export const METRICS = {
  namespace: METRICS_NAMESPACE,
  dimensions: METRIC_DIMENSIONS,
  names: {
    /** Count: webhooks answered 2xx. */
    delivered: 'Delivered',
    /** Count: attempts that ended temporary or unknown and were scheduled again. */
    retries: 'Retries',
    /** Count: events sent to the dead-letter path. */
    deadLetters: 'DeadLetters',
    /** Milliseconds: admission to accepted delivery. */
    deliveryLatency: 'DeliveryLatency',
    /** Seconds: how long a pending event had waited when an attempt started. */
    pendingAge: 'PendingAge',
    /** Count: valid events no endpoint subscribes to (acknowledged, not stored). */
    unrouted: 'Unrouted',
    /** Count: endpoint deliveries routing put on the queue as messages of their own. */
    fannedOut: 'FannedOut',
    /** Count: deliveries that died at an endpoint whose recovery is `drop` (no dead-letter message). */
    dropped: 'Dropped',
    /** Count: deliveries held back, no attempt spent, while their endpoint was paused (a 429, or a 503 with Retry-After). */
    paused: 'Paused',
    /** Count: deliveries parked, no attempt spent, while their endpoint was disabled. */
    parked: 'Parked',
    /** Count: parked deliveries released after their endpoint was enabled (published by the recovery function). */
    resumed: 'Resumed',
    /** Count: deliveries the endpoint's rate limit put back or held, no attempt spent. */
    rateLimited: 'RateLimited',
  },
  /** The per-endpoint dimension: a delivery's metrics are also published under `Service` and this. */
  endpointDimension: ENDPOINT_DIMENSION,
} as const satisfies {
  namespace: string;
  dimensions: Record<string, string>;
  names: Record<string, MetricName>;
  endpointDimension: string;
};

/**
 * Count: deliveries held, no attempt spent, because an endpoint's secret or registry entry could not
 * be read (lib/batch.ts, `endpoint-unresolved`); published as the other consumer metrics are.
 */
export const ENDPOINT_UNRESOLVED_METRIC: MetricName = 'EndpointUnresolved';

/** The recovery function's own metric (lib/recovery.ts): deliveries it enqueued again. */
export const RECOVERED_METRIC = 'Recovered';

/**
 * One series per endpoint: a CloudWatch SEARCH over the metrics published with the `Service` and
 * `Endpoint` dimensions (lib/observability.ts), labelled by the endpoint's name.
 */
export function endpointSearch(metricName: MetricName, statistic: string, period = Duration.minutes(5)): cloudwatch.MathExpression {
  const schema = `{${METRICS.namespace},${Object.keys(METRICS.dimensions).join(',')},${METRICS.endpointDimension}}`;
  const service = Object.entries(METRICS.dimensions).map(([key, value]) => `${key}="${value}"`).join(' ');
  return new cloudwatch.MathExpression({
    expression: `SEARCH('${schema} MetricName="${metricName}" ${service}', '${statistic}', ${period.toSeconds()})`,
    usingMetrics: {},
    // A dynamic label: each series is named by its endpoint.
    label: `\${PROP('Dim.${METRICS.endpointDimension}')}`,
    period,
  });
}
