/**
 * The dashboard: the alarms' state, then the metrics they watch and the ones operators read beside
 * them (lib/observability.ts publishes the consumer's).
 */
import { Duration, Stack, Token } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type { Construct } from 'constructs';
import { derivedTimings, type Settings } from '../../lib/config';
import type { MetricName } from '../../lib/observability';
import type { WebhookDelivery, WebhookDeliveryProps } from '../webhook-delivery';
import { ENDPOINT_UNRESOLVED_METRIC, METRICS, RECOVERED_METRIC, endpointSearch } from './metrics';

type DashboardParts = Pick<
  WebhookDelivery,
  | 'alarms'
  | 'queue'
  | 'orderedQueue'
  | 'redriveQueue'
  | 'deadLetterQueue'
  | 'orderedDeadLetterQueue'
  | 'consumer'
  | 'recovery'
  | 'ledgerTable'
  | 'endpointRegistry'
  | 'consumerMetric'
>;

/**
 * The alarms' state first, then the four signals of docs/contract.md §10 `stats` (pending age,
 * retries, dead letters, delivery latency), routing and endpoint health, the functions and the
 * tables, and each endpoint's own.
 */
export function createDashboard(
  scope: Construct & DashboardParts,
  props: Pick<WebhookDeliveryProps, 'dashboardName'>,
  settings: Settings,
): cloudwatch.Dashboard {
  const metric = (name: MetricName, statistic: string, label: string) =>
    scope.consumerMetric(name, { statistic, label });
  // A half-width graph of the consumer's own metrics, each [name, statistic, label].
  const consumerGraph = (title: string, metrics: readonly (readonly [MetricName, string, string])[]) =>
    new cloudwatch.GraphWidget({ title, left: metrics.map((args) => metric(...args)), width: 12 });
  const dashboard = new cloudwatch.Dashboard(scope, 'Dashboard', {
    dashboardName: props.dashboardName ?? defaultDashboardName(scope),
  });
  dashboard.addWidgets(
    new cloudwatch.AlarmStatusWidget({
      title: 'Alarms',
      alarms: Object.values(scope.alarms),
      width: 24,
      height: 4,
    }),
  );
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Pending age (seconds)',
      left: [
        scope.queue.metricApproximateAgeOfOldestMessage({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Oldest queued message' }),
        scope.orderedQueue.metricApproximateAgeOfOldestMessage({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Oldest on the ordered intake' }),
        // Redriven by SQS, waiting for the recovery function to send it back (RedrivenAlarm).
        scope.redriveQueue.metricApproximateAgeOfOldestMessage({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Oldest on the redrive queue' }),
        metric(METRICS.names.pendingAge, cloudwatch.Stats.MAXIMUM, 'Pending age at attempt (max)'),
      ],
      width: 12,
    }),
    consumerGraph('Deliveries and retries', [
      [METRICS.names.delivered, cloudwatch.Stats.SUM, 'Delivered'],
      [METRICS.names.retries, cloudwatch.Stats.SUM, 'Retries'],
    ]),
    new cloudwatch.GraphWidget({
      title: 'Dead letters',
      left: [metric(METRICS.names.deadLetters, cloudwatch.Stats.SUM, 'Dead-lettered')],
      right: [
        scope.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          statistic: cloudwatch.Stats.MAXIMUM,
          label: 'On the dead-letter queue',
        }),
        scope.orderedDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
          statistic: cloudwatch.Stats.MAXIMUM,
          label: "On the ordered intake's dead-letter queue",
        }),
      ],
      width: 12,
    }),
    consumerGraph('Delivery latency (ms)', [
      [METRICS.names.deliveryLatency, cloudwatch.Stats.p(50), 'p50'],
      [METRICS.names.deliveryLatency, cloudwatch.Stats.p(99), 'p99'],
    ]),
  );
  // Routing (docs/contract.md §11): events no endpoint wanted, fanned-out deliveries, dropped deaths.
  dashboard.addWidgets(
    consumerGraph('Routing', [
      [METRICS.names.unrouted, cloudwatch.Stats.SUM, 'Unrouted'],
      [METRICS.names.fannedOut, cloudwatch.Stats.SUM, 'Fanned out'],
      [METRICS.names.dropped, cloudwatch.Stats.SUM, 'Dropped'],
      [ENDPOINT_UNRESOLVED_METRIC, cloudwatch.Stats.SUM, 'Held: endpoint unresolved'],
    ]),
    // Endpoint health (docs/contract.md §12): deliveries held, parked, released and rate-limited, no attempt spent.
    consumerGraph('Held for an endpoint', [
      [METRICS.names.paused, cloudwatch.Stats.SUM, 'Paused'],
      [METRICS.names.parked, cloudwatch.Stats.SUM, 'Parked'],
      [METRICS.names.resumed, cloudwatch.Stats.SUM, 'Released'],
      [METRICS.names.rateLimited, cloudwatch.Stats.SUM, 'Rate-limited'],
    ]),
  );
  // Stuck-work recovery (docs/contract.md §12): deliveries the recovery function enqueued again.
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Stuck work recovered',
      left: [
        new cloudwatch.Metric({
          namespace: METRICS.namespace,
          metricName: RECOVERED_METRIC,
          dimensionsMap: { ...METRICS.dimensions },
          period: Duration.minutes(5),
          statistic: cloudwatch.Stats.SUM,
          label: 'Enqueued again',
        }),
      ],
      width: 12,
    }),
  );
  // The functions: the consumer and the recovery function, side by side.
  const functions = [
    { fn: scope.consumer, name: 'Consumer' },
    { fn: scope.recovery, name: 'Recovery' },
  ];
  const timings = derivedTimings(settings);
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'Lambda invocations, errors and throttles',
      left: functions.flatMap(({ fn, name }) => [
        fn.metricInvocations({ statistic: cloudwatch.Stats.SUM, label: `${name} invocations` }),
        fn.metricErrors({ statistic: cloudwatch.Stats.SUM, label: `${name} errors` }),
        fn.metricThrottles({ statistic: cloudwatch.Stats.SUM, label: `${name} throttles` }),
      ]),
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: 'Lambda duration (ms)',
      left: [
        scope.consumer.metricDuration({ statistic: cloudwatch.Stats.p(99), label: 'Consumer p99' }),
        scope.consumer.metricDuration({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Consumer max' }),
        scope.recovery.metricDuration({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Recovery max' }),
      ],
      leftAnnotations: [{ value: timings.functionTimeoutSeconds * 1000, label: 'Consumer timeout' }],
      width: 8,
    }),
    new cloudwatch.GraphWidget({
      title: 'Lambda concurrent executions',
      left: functions.map(({ fn, name }) =>
        fn.metric('ConcurrentExecutions', { statistic: cloudwatch.Stats.MAXIMUM, label: name }),
      ),
      // Both event sources together may run the consumer this many times at once.
      leftAnnotations: [{ value: 2 * settings.maxConcurrency, label: 'Event sources’ maximum' }],
      width: 8,
    }),
  );
  // The tables: capacity consumed (on demand: what is billed) and throttles.
  const tables = [
    { table: scope.ledgerTable, name: 'Ledger' },
    { table: scope.endpointRegistry.table, name: 'Registry' },
  ];
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: 'DynamoDB consumed capacity',
      left: tables.flatMap(({ table, name }) => [
        table.metricConsumedReadCapacityUnits({ statistic: cloudwatch.Stats.SUM, label: `${name} read units` }),
        table.metricConsumedWriteCapacityUnits({ statistic: cloudwatch.Stats.SUM, label: `${name} write units` }),
      ]),
      width: 12,
    }),
    new cloudwatch.GraphWidget({
      title: 'DynamoDB throttles',
      left: [scope.alarms.ledgerThrottles.metric, scope.alarms.registryThrottles.metric],
      width: 12,
    }),
  );
  // Per endpoint: every endpoint the consumer has published metrics for, found by SEARCH over the
  // Endpoint dimension, so an endpoint added with `handoff endpoint add` appears with no deploy.
  const perEndpoint = (title: string, name: MetricName, statistic: string) =>
    new cloudwatch.GraphWidget({
      title: `${title} by endpoint`,
      left: [endpointSearch(name, statistic)],
      width: 12,
    });
  dashboard.addWidgets(
    perEndpoint('Delivered', METRICS.names.delivered, cloudwatch.Stats.SUM),
    perEndpoint('Retries', METRICS.names.retries, cloudwatch.Stats.SUM),
    perEndpoint('Dead letters', METRICS.names.deadLetters, cloudwatch.Stats.SUM),
    perEndpoint('Dropped', METRICS.names.dropped, cloudwatch.Stats.SUM),
    perEndpoint('Paused', METRICS.names.paused, cloudwatch.Stats.SUM),
    perEndpoint('Parked', METRICS.names.parked, cloudwatch.Stats.SUM),
    perEndpoint('Rate-limited', METRICS.names.rateLimited, cloudwatch.Stats.SUM),
    perEndpoint('Delivery latency p99 (ms)', METRICS.names.deliveryLatency, cloudwatch.Stats.p(99)),
    perEndpoint('Pending age at attempt, max (s)', METRICS.names.pendingAge, cloudwatch.Stats.MAXIMUM),
  );
  return dashboard;
}

/**
 * `<stack name>-<construct id>-<region>`: a dashboard's name is global to the account, so one stack
 * name in two regions, or two constructs in one stack, must not share it. Characters other than
 * letters, digits, `-` and `_` become `-`; the region may be a deploy-time token.
 */
function defaultDashboardName(scope: Construct): string {
  const stack = Stack.of(scope);
  const clean = (text: string) => (Token.isUnresolved(text) ? text : text.replace(/[^\w-]+/g, '-'));
  return [clean(stack.stackName), clean(scope.node.id), stack.region].join('-');
}
