/**
 * The alarms; the topic they notify is infra/delivery/alarm-topic.ts. The dashboard
 * (infra/delivery/dashboard.ts) shows their state beside the metrics they watch.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { derivedTimings, type Settings } from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import { ALL_EVENT_TYPES, type EndpointFields } from '../../lib/endpoints/endpoint';
import type { WebhookDelivery, WebhookDeliveryProps } from '../webhook-delivery';
import { capacityCeilingAlarm, globalIndexNames } from './capacity';
import { DEFAULT_RECOVERY_INTERVAL } from './functions';
import { ENDPOINT_UNRESOLVED_METRIC, METRICS } from './metrics';

/**
 * The unrouted alarm's threshold (events in 5 minutes) where no endpoint takes every event: some
 * events matching no endpoint is then normal; where one does (`default`, or a declared `*` without
 * `match`), any unrouted event means it no longer takes them, and the threshold is 0.
 */
export const UNROUTED_ALARM_THRESHOLD = 100;

/** A dead letter this old is this close to SQS's 14-day retention: the dead-letter ageing alarms' threshold. */
export const DEAD_LETTER_AGE_ALARM = Duration.days(10);

/** Every alarm, by what it watches. */
export interface DeliveryAlarms {
  /** New messages on the dead-letter queue (sent by the consumer or recovery) in the last 5 minutes. */
  readonly deadLetters: cloudwatch.Alarm;
  /** A dead letter close to SQS's retention (10 days old of 14). */
  readonly deadLettersAgeing: cloudwatch.Alarm;
  /** New messages on the ordered intake's FIFO dead-letter queue (SQS's redrive) in the last 5 minutes. */
  readonly orderedDeadLetters: cloudwatch.Alarm;
  /** A message on the ordered intake's FIFO dead-letter queue close to SQS's retention. */
  readonly orderedDeadLettersAgeing: cloudwatch.Alarm;
  readonly pendingAge: cloudwatch.Alarm;
  /** The ordered intake's oldest message older than a failing one would stay before being set aside. */
  readonly orderedPendingAge: cloudwatch.Alarm;
  readonly consumerErrors: cloudwatch.Alarm;
  readonly consumerThrottles: cloudwatch.Alarm;
  /** The consumer's p99 duration above 80 % of its timeout for 15 minutes. */
  readonly consumerDuration: cloudwatch.Alarm;
  /** A message SQS redrove still on the redrive queue after three recovery runs. */
  readonly redriven: cloudwatch.Alarm;
  /** The recovery function failed in two runs in a row. */
  readonly recoveryErrors: cloudwatch.Alarm;
  /** Events no endpoint subscribes to, above `unroutedAlarmThreshold` in 5 minutes. */
  readonly unrouted: cloudwatch.Alarm;
  /** Deliveries held because an endpoint's secret or registry entry could not be read. */
  readonly endpointUnresolved: cloudwatch.Alarm;
  /** Throttled requests on the ledger (the table or any of its indexes) in two 5-minute periods in a row. */
  readonly ledgerThrottles: cloudwatch.Alarm;
  /** Provisioned ledger only (`ledgerCapacity`): consumed capacity near the auto scaling maximum (infra/delivery/capacity.ts). */
  readonly ledgerCapacityCeiling?: cloudwatch.Alarm;
  /** Throttled requests on the endpoint registry in two 5-minute periods in a row. */
  readonly registryThrottles: cloudwatch.Alarm;
}

type AlarmedParts = Pick<
  WebhookDelivery,
  | 'queue'
  | 'deadLetterQueue'
  | 'redriveQueue'
  | 'orderedQueue'
  | 'orderedDeadLetterQueue'
  | 'consumer'
  | 'recovery'
  | 'ledgerTable'
  | 'endpointRegistry'
  | 'alarmTopic'
  | 'consumerMetric'
>;

/**
 * The alarms (docs/operating.md), each saying in its description what to do. Every one treats
 * missing data as not breaching: a metric published only on activity (SQS's, Lambda's, DynamoDB's
 * throttles) is absent while all is quiet. Rate alarms (dead letters, errors, throttles) fire on
 * what is new in their period and return to OK once a period passes without it, so a later burst
 * notifies again even while earlier dead letters wait on their queue. Each notifies the alarm topic
 * on alarm and on OK.
 */
export function createAlarms(
  scope: Construct & AlarmedParts,
  props: Pick<WebhookDeliveryProps, 'pendingAgeAlarmThreshold' | 'recoveryInterval' | 'unroutedAlarmThreshold' | 'endpoints' | 'ledgerCapacity'>,
  settings: Settings,
  orderedMaxReceiveCount: number,
): DeliveryAlarms {
  const timings = derivedTimings(settings);
  const fiveMinutes = Duration.minutes(5);
  const alarm = (
    id: string,
    metric: cloudwatch.IMetric,
    description: string,
    threshold: number,
    evaluation: { periods?: number; toAlarm?: number } = {},
  ) =>
    new cloudwatch.Alarm(scope, id, {
      alarmDescription: `handoff: ${description}`,
      metric,
      threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: evaluation.periods ?? 1,
      datapointsToAlarm: evaluation.toAlarm ?? evaluation.periods ?? 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });

  // --- Dead letters: each new one notifies, and one close to SQS's retention notifies again. ---
  // The consumer (a reasoned dead letter) and the recovery function (a message it gave up on) put
  // them there with SendMessage, which NumberOfMessagesSent counts.
  const deadLetters = alarm(
    'DeadLettersAlarm',
    scope.deadLetterQueue.metricNumberOfMessagesSent({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
    'new events on the dead-letter queue in the last 5 minutes. Inspect with `handoff dead` (the reason is on each), fix the cause, then `handoff replay`; a message without a reason is one recovery gave up on (its row: `handoff status`). Returns to OK after 5 minutes without a new one: the queue is not drained by that.',
    0,
  );
  // SQS's own redrive (the FIFO dead-letter queue's only source) is not counted by
  // NumberOfMessagesSent: a rise in what the queue holds (visible plus in flight, so an operator's
  // reading it changes nothing) is a new dead letter. FILL: an idle queue publishes nothing.
  const orderedArrivals = new cloudwatch.MathExpression({
    expression: 'DIFF(FILL(visible, 0) + FILL(inFlight, 0))',
    usingMetrics: {
      visible: scope.orderedDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
      inFlight: scope.orderedDeadLetterQueue.metricApproximateNumberOfMessagesNotVisible({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
    },
    period: Duration.minutes(1),
    label: "New messages on the ordered intake's dead-letter queue",
  });
  const orderedDeadLetters = alarm(
    'OrderedDeadLettersAlarm',
    orderedArrivals,
    "new messages on the ordered intake's dead-letter queue in the last 5 minutes: the consumer kept failing them (or could not reach the registry, an endpoint's secret or the ledger) and their shipments' later messages went on without them. `handoff dead` does not list them: read them from the queue (OrderedDeadLetterQueue), fix the cause, send each again with `handoff send --ordered`, then delete it.",
    0,
    { periods: 5, toAlarm: 1 },
  );
  const ageing = (queue: sqs.Queue, id: string, what: string) =>
    alarm(
      id,
      queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(15), statistic: cloudwatch.Stats.MAXIMUM }),
      `a message on ${what} is ${DEAD_LETTER_AGE_ALARM.toDays()} days old: SQS deletes it at 14. Handle it now (see the dead-letter alarm's description), or copy it out.`,
      DEAD_LETTER_AGE_ALARM.toSeconds(),
    );
  const deadLettersAgeing = ageing(scope.deadLetterQueue, 'DeadLettersAgeingAlarm', 'the dead-letter queue');
  const orderedDeadLettersAgeing = ageing(scope.orderedDeadLetterQueue, 'OrderedDeadLettersAgeingAlarm', "the ordered intake's dead-letter queue");

  // --- Queues falling behind. -----------------------------------------------------------------
  const pendingAge = new cloudwatch.Alarm(scope, 'PendingAgeAlarm', {
    alarmDescription:
      'handoff: the oldest message on the delivery queue is older than expected; the consumer is not keeping up or not running. Check the consumer alarms (errors, throttles, duration) and the dashboard.',
    metric: scope.queue.metricApproximateAgeOfOldestMessage({
      period: Duration.minutes(1),
      statistic: cloudwatch.Stats.MAXIMUM,
    }),
    threshold: (props.pendingAgeAlarmThreshold ?? defaultPendingAgeThreshold(settings)).toSeconds(),
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 5,
    datapointsToAlarm: 5,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
  // A failing ordered message stays at most orderedMaxReceiveCount visibility timeouts (then SQS sets
  // it aside, and OrderedDeadLettersAlarm says so), holding its shipment's later messages as long:
  // older than that, and 5 minutes more, is the intake not being consumed at all.
  const orderedPendingAge = alarm(
    'OrderedPendingAgeAlarm',
    scope.orderedQueue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
    "the oldest message on the ordered intake is older than a failing one stays before SQS sets it aside: the consumer is not taking the ordered intake's messages (its event source disabled, the consumer failing or throttled). Check the consumer alarms and the event source mapping's state.",
    orderedMaxReceiveCount * timings.visibilityTimeoutSeconds + 5 * 60,
    { periods: 5 },
  );

  // --- The consumer. --------------------------------------------------------------------------
  // Expected failures (4xx, 5xx, timeouts) are outcomes, not errors: an invocation error means
  // the handler itself failed and its whole batch returned to the queue.
  const consumerErrors = alarm(
    'ConsumerErrorsAlarm',
    scope.consumer.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
    "the consumer Lambda failed invocations (its whole batch went back to the queue). Read the consumer's log for `error` lines and the function's timeouts; a deploy that broke it: roll back.",
    0,
  );
  // With no reserved concurrency and the event sources' maximum concurrency, only the account's
  // limit throttles the consumer: each throttled batch returns to its queue with a receive spent.
  const consumerThrottles = alarm(
    'ConsumerThrottlesAlarm',
    scope.consumer.metricThrottles({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
    "the consumer Lambda was throttled: the account's concurrency (or its reserved concurrency) is used up, and its batches return to the queue with a receive spent. Find what else runs (account ConcurrentExecutions), raise the account's limit or reserve concurrency (reservedConcurrency, at least twice maxConcurrency).",
    0,
  );
  // Attempts run at once within a batch, each bounded by the attempt timeout; a batch near the
  // function's timeout is a batch about to be cut off (an error, the batch returned).
  const timeoutMs = timings.functionTimeoutSeconds * 1000;
  const consumerDuration = alarm(
    'ConsumerDurationAlarm',
    scope.consumer.metricDuration({ period: fiveMinutes, statistic: cloudwatch.Stats.p(99) }),
    `the consumer's p99 duration has been above 80 % of its ${timings.functionTimeoutSeconds} s timeout for 15 minutes: invocations are close to being cut off. Look for slow receivers (delivery latency by endpoint), rate-limit waits and DynamoDB latency; lower the attempt timeout of a slow endpoint.`,
    Math.round(timeoutMs * 0.8),
    { periods: 3 },
  );

  // --- Stuck-work recovery. -------------------------------------------------------------------
  // The recovery function empties the redrive queue at every run: a message there for three runs
  // means recovery is not running (or cannot send), and its delivery waits.
  const interval = props.recoveryInterval ?? DEFAULT_RECOVERY_INTERVAL;
  const redriven = alarm(
    'RedrivenAlarm',
    scope.redriveQueue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
    "messages SQS redrove wait on the redrive queue longer than three recovery runs: check the recovery function's errors and log.",
    interval.toSeconds() * 3,
  );
  // One failed run is retried, and the next run does its work anyway: two runs in a row failing is not a blip.
  const recoveryErrors = alarm(
    'RecoveryErrorsAlarm',
    scope.recovery.metricErrors({ period: interval, statistic: cloudwatch.Stats.SUM }),
    "the stuck-work recovery function failed in two runs in a row: redriven messages and stranded deliveries wait, and parked releases stop. Read its log (and the failure notices on this topic); its permissions or the ledger's listing index are the usual causes.",
    0,
    { periods: 2 },
  );

  // --- Routing and endpoints. -----------------------------------------------------------------
  const unroutedThreshold = props.unroutedAlarmThreshold ?? (takesEveryEvent(props, settings) ? 0 : UNROUTED_ALARM_THRESHOLD);
  if (!Number.isInteger(unroutedThreshold) || unroutedThreshold < 0) {
    throw new ConfigError('unroutedAlarmThreshold', `must be a whole number, 0 or more, got ${unroutedThreshold}`);
  }
  const unrouted = alarm(
    'UnroutedAlarm',
    scope.consumerMetric(METRICS.names.unrouted, { period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
    `more than ${unroutedThreshold} events in 5 minutes matched no endpoint: they were acknowledged and stored nowhere. An endpoint that took them was removed or renamed, or its eventTypes or match narrowed (\`handoff endpoint list\`), or producers send an event type nobody subscribes to. Where some unmatched events are normal, set unroutedAlarmThreshold above them.`,
    unroutedThreshold,
  );
  const endpointUnresolved = alarm(
    'EndpointUnresolvedAlarm',
    scope.consumerMetric(ENDPOINT_UNRESOLVED_METRIC, { period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
    "deliveries are held because an endpoint's signing secret or registry entry cannot be read (a deleted secret, a revoked grant or key, an unreadable item). They wait on the queue and are not lost; ordered ones are set aside after orderedMaxReceiveCount tries. The consumer's log names the endpoint and the secret's ARN: restore access.",
    0,
  );

  // --- DynamoDB. ------------------------------------------------------------------------------
  // On-demand tables throttle a hot key (one endpoint's rate-limit schedule, a shipment head) or a
  // jump past twice the previous peak; the SDK retries, so a single burst is absorbed: two periods in a row is not.
  const throttles = (table: dynamodb.ITable, index?: string) => {
    const dimensionsMap: Record<string, string> = { TableName: table.tableName, ...(index ? { GlobalSecondaryIndexName: index } : {}) };
    const m = (name: string) => new cloudwatch.Metric({ namespace: 'AWS/DynamoDB', metricName: name, dimensionsMap, period: fiveMinutes, statistic: cloudwatch.Stats.SUM });
    return { read: m('ReadThrottleEvents'), write: m('WriteThrottleEvents') };
  };
  const ledger = throttles(scope.ledgerTable);
  // Every index too: a throttled index throttles the table's writes (provisioned, one at its maximum).
  const ledgerThrottleMetrics: Record<string, cloudwatch.IMetric> = { ledgerRead: ledger.read, ledgerWrite: ledger.write };
  for (const index of globalIndexNames(scope.ledgerTable)) {
    const id = index.replace(/[^A-Za-z0-9_]/g, '_');
    const indexThrottles = throttles(scope.ledgerTable, index);
    ledgerThrottleMetrics[`${id}Read`] = indexThrottles.read;
    ledgerThrottleMetrics[`${id}Write`] = indexThrottles.write;
  }
  const registry = throttles(scope.endpointRegistry.table);
  const ledgerThrottleSum = new cloudwatch.MathExpression({
    expression: Object.keys(ledgerThrottleMetrics)
      .map((id) => `FILL(${id}, 0)`)
      .join(' + '),
    usingMetrics: ledgerThrottleMetrics,
    period: fiveMinutes,
    label: 'Ledger throttle events',
  });
  const registryThrottleSum = new cloudwatch.MathExpression({
    expression: 'FILL(registryRead, 0) + FILL(registryWrite, 0)',
    usingMetrics: { registryRead: registry.read, registryWrite: registry.write },
    period: fiveMinutes,
    label: 'Registry throttle events',
  });
  const ledgerThrottles = alarm(
    'LedgerThrottlesAlarm',
    ledgerThrottleSum,
    'the ledger table (or one of its indexes) throttled requests in two 5-minute periods in a row: deliveries slow down and retry. A hot key (one shipment head, one event) or a traffic jump past twice the previous peak; with provisioned capacity (ledgerCapacity), consumption past the units auto scaling has reached or may reach (its ceiling alarm). See the dashboard and CloudWatch Contributor Insights for the table.',
    0,
    { periods: 2 },
  );
  const registryThrottles = alarm(
    'RegistryThrottlesAlarm',
    registryThrottleSum,
    "the endpoint registry throttled requests in two 5-minute periods in a row: usually one rate-limited endpoint's schedule item, written once per batch by many consumers at once. A larger batchSize (fewer batches) or a lower maxConcurrency relieves it; see the dashboard.",
    0,
    { periods: 2 },
  );

  const ledgerCapacityCeiling = capacityCeilingAlarm(scope, scope.ledgerTable, props.ledgerCapacity);

  const alarms = {
    deadLetters,
    deadLettersAgeing,
    orderedDeadLetters,
    orderedDeadLettersAgeing,
    pendingAge,
    orderedPendingAge,
    consumerErrors,
    consumerThrottles,
    consumerDuration,
    redriven,
    recoveryErrors,
    unrouted,
    endpointUnresolved,
    ledgerThrottles,
    registryThrottles,
    ...(ledgerCapacityCeiling === undefined ? {} : { ledgerCapacityCeiling }),
  };
  const action = new SnsAction(scope.alarmTopic);
  for (const each of Object.values(alarms)) {
    each.addAlarmAction(action);
    each.addOkAction(action);
  }
  return alarms;
}

/**
 * SQS stops counting a message in ApproximateAgeOfOldestMessage after its third receive, so a
 * healthy retrying message can make the metric reach about its first two waits; anything older is
 * backlog. Floor of 15 minutes.
 */
function defaultPendingAgeThreshold(settings: Settings): Duration {
  const [first = 0, second = first] = settings.retryPolicy.waitsSeconds;
  return Duration.seconds(Math.max(15 * 60, first + second + 5 * 60));
}

/**
 * Whether an endpoint declared here takes every event (every type, no `match`): `default` from
 * `webhookUrl`, or a declared one. Then an unrouted event means it no longer does.
 */
function takesEveryEvent(props: Pick<WebhookDeliveryProps, 'endpoints'>, settings: Settings): boolean {
  const all = (endpoint: Pick<EndpointFields, 'eventTypes' | 'match'>) =>
    endpoint.eventTypes.includes(ALL_EVENT_TYPES) && Object.keys(endpoint.match ?? {}).length === 0;
  return settings.webhookUrl !== undefined || (props.endpoints ?? []).some(all);
}
