/**
 * WebhookDelivery: the reusable construct behind handoff (docs/contract.md §1, §4, §5, §7).
 *
 * Producers send events to the delivery queue; the consumer Lambda claims each event in the
 * ledger table, sends the webhook, records the outcome, and only then lets the queue forget the
 * message. The queue decides *when* work runs (visibility timeout = the retry wait), the ledger
 * decides *what* work may do. Settings come from lib/config.ts, the same definition the local
 * sandbox reads, so the numbers here (timeouts, redrive count) are derived, never repeated.
 *
 * Endpoints (docs/contract.md §11) live in the endpoint registry (infra/endpoint-registry.ts), which
 * the consumer reads and `handoff endpoint …` writes. The single-URL settings (`webhookUrl`, the
 * stack's signing secret) are the endpoint `default`, subscribed to every event type, and the
 * construct's `endpoints` are seeded beside it at deploy; the consumer is deployed after the seeds,
 * so it never reads a registry that lacks them.
 *
 * Endpoint health (docs/contract.md §12): the consumer writes an endpoint's health on its registry
 * item, and tells operators of one it disables with an event on the default EventBridge bus and a
 * message to the alarm topic. Stuck work: the delivery queue's redrive policy moves a message the
 * consumer kept failing on to the redrive queue, and a scheduled function (functions/recovery.ts,
 * every `recoveryInterval`) sends it back, and enqueues again the replayed or released deliveries
 * left without a queue message.
 *
 * Alarms (createAlarms) notify the alarm topic, given or made here (SSE with a key of its own, TLS
 * only), on alarm and on OK; the dashboard shows their state beside the metrics they watch.
 *
 * The ordered intake (docs/contract.md §13): a FIFO queue beside the delivery queue for producers
 * that need a shipment's events handled in the order they sent them (`MessageGroupId` = the
 * shipment ID, `MessageDeduplicationId` = the event ID; content-based deduplication off), with a
 * FIFO dead-letter queue of its own and a second event source on the same consumer. The consumer
 * routes its messages as it routes the delivery queue's and puts every per-endpoint message on the
 * delivery queue; its dead letters, whatever queue the message came from, go to the standard
 * dead-letter queue (lib/queue/sqs-queue.ts `deadLetter` sends there without a group). The FIFO
 * dead-letter queue receives only what SQS itself redrives after `maxReceiveCount` receives.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ArnFormat, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  checkEndpoint,
  ConfigError,
  DEFAULT_SETTINGS,
  QUEUE_RETENTION_SECONDS,
  RESOURCE_ENV,
  SETTING_VARIABLES,
  derivedTimings,
  settingsToEnvironment,
  validateSettings,
  type Settings,
} from '../lib/config';
import { ALL_EVENT_TYPES, DEFAULT_ENDPOINT_NAME, type EndpointFields } from '../lib/endpoints/endpoint';
import { LEDGER_SCHEMA } from '../lib/ledger/dynamodb-schema';
import { ENDPOINT_DIMENSION, METRIC_DIMENSIONS, METRICS_NAMESPACE, type MetricName } from '../lib/observability';
import { RECOVERY_ENV, RECOVERY_LIMIT, recoveryGraceMs } from '../lib/recovery';
import { EndpointRegistry, type EndpointDeclaration } from './endpoint-registry';

export { DECLARED_ATTRIBUTE, EndpointRegistry, type EndpointDeclaration } from './endpoint-registry';

/** The consumer function's memory, MB, unless `memorySizeMb` says otherwise (the cost model prices it). */
export const CONSUMER_MEMORY_MB = 256;

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
 * be read (lib/batch.ts, `endpoint-unresolved`); published as the other consumer metrics are. Cast:
 * lib/observability.ts METRICS adds the name (until then MetricName does not include it).
 */
export const ENDPOINT_UNRESOLVED_METRIC = 'EndpointUnresolved' as string as MetricName;

/**
 * The unrouted alarm's threshold (events in 5 minutes) where no endpoint takes every event: some
 * events matching no endpoint is then normal; where one does (`default`, or a declared `*` without
 * `match`), any unrouted event means it no longer takes them, and the threshold is 0.
 */
export const UNROUTED_ALARM_THRESHOLD = 100;

/** A dead letter this old is this close to SQS's 14-day retention: the dead-letter ageing alarms' threshold. */
export const DEAD_LETTER_AGE_ALARM = Duration.days(10);

/** The Lambda entry this construct deploys unless told otherwise. */
export const CONSUMER_ENTRY = fileURLToPath(new URL('../functions/consumer.ts', import.meta.url));
/** The stuck-work recovery function's entry (docs/contract.md §12). */
export const RECOVERY_ENTRY = fileURLToPath(new URL('../functions/recovery.ts', import.meta.url));

/**
 * The functions pre-bundled by the package build (scripts/build.ts, with the bundling settings
 * below), beside this module once it is compiled into dist/: `index.mjs` the consumer,
 * `recovery.mjs` the recovery function, one asset for both. Absent in a clone.
 */
const PREBUILT_CONSUMER_DIR = fileURLToPath(new URL('./consumer', import.meta.url));
const PREBUILT_RECOVERY_FILE = 'recovery.mjs';

/** How often the recovery function runs unless `recoveryInterval` says otherwise. */
export const DEFAULT_RECOVERY_INTERVAL = Duration.minutes(5);

/** The recovery function's own metric (lib/recovery.ts): deliveries it enqueued again. */
export const RECOVERED_METRIC = 'Recovered';

/** The most records a FIFO queue's event source hands over at once (no batching window is allowed there). */
export const FIFO_MAX_BATCH_SIZE = 10;

/** SQS's longest message retention; every queue of the construct keeps messages this long. */
const MAX_RETENTION = Duration.seconds(QUEUE_RETENTION_SECONDS);

export interface WebhookDeliveryProps {
  /**
   * Settings over DEFAULT_SETTINGS (lib/config.ts). `webhookUrl` is the endpoint `default` (every
   * event type, signed with `signingSecret`); required in AWS unless `endpoints` declares some.
   * `webhookSecret` is for the local sandbox only: in AWS use `signingSecret`.
   */
  readonly settings: Partial<Settings>;
  /**
   * Endpoints seeded into the registry at deploy, beside `default` (docs/contract.md §11): the
   * fields of an endpoint, with its secret as a Secrets Manager secret. Checked at synth (errors
   * name the endpoint and the field). A deploy applies a declaration when it changed and never
   * resets an endpoint's state; operators manage endpoints with `handoff endpoint …`.
   */
  readonly endpoints?: readonly EndpointDeclaration[];
  /**
   * The time stamp (epoch ms) the seeds write as an endpoint's `updatedAt` (and `createdAt` when
   * new). Default: the deploy's, taken by the seed function when it writes. Either way the template
   * holds the same at every synth, and a seed runs only on the deploy that changes its declaration.
   */
  readonly endpointsSeededAt?: number;
  /**
   * The Standard Webhooks signing secret, kept in Secrets Manager:
   * - `'generate'` (default): a new secret, 64 random letters and digits, i.e. a bare base64 key
   *   (Secrets Manager cannot generate the `whsec_` prefix; the consumer accepts either form);
   * - an existing `ISecret` whose value is `whsec_<base64>` or bare base64;
   * - `'none'`: webhooks are sent unsigned.
   */
  readonly signingSecret?: secretsmanager.ISecret | 'generate' | 'none';
  /**
   * Where alarms notify (alarm and OK), where the consumer announces an endpoint it disabled, and
   * where a recovery run that failed all its attempts is reported. Unset: the construct makes one
   * (SSE with a KMS key of its own, TLS only) and exposes it as `alarmTopic`; subscribe to it. A
   * topic given here encrypted with a customer-managed key must let the consumer and recovery roles
   * (kms:GenerateDataKey, kms:Decrypt) and cloudwatch.amazonaws.com use that key.
   */
  readonly alarmTopic?: sns.ITopic;
  /** How long the event source gathers records before invoking. Default 1 s. */
  readonly maxBatchingWindow?: Duration;
  /**
   * The age of the oldest queued message that raises the pending-age alarm. Default: 15 min, or the
   * first two retry waits plus 5 min when longer (see `defaultPendingAgeThreshold`).
   */
  readonly pendingAgeAlarmThreshold?: Duration;
  /** Default 256. */
  readonly memorySizeMb?: number;
  /** Default one month. */
  readonly logRetention?: logs.RetentionDays;
  /** The Lambda entry file. Default `functions/consumer.ts`; tests point it at a stand-in. */
  readonly entry?: string;
  /**
   * How often the stuck-work recovery runs (docs/contract.md §12): whole minutes, 1 to 60. Default 5.
   * A delivery left pending without a queue message is enqueued again within about its quiet time
   * plus the grace (the queue's visibility timeout plus 5 minutes) plus this.
   */
  readonly recoveryInterval?: Duration;
  /**
   * DynamoDB deletion protection on the ledger and the endpoint registry (both retained with the
   * stack anyway): neither can be deleted by hand (DeleteTable) until it is turned off. Default true;
   * false for throwaway test stacks, whose retained tables are then deleted by hand.
   */
  readonly deletionProtection?: boolean;
  /**
   * Reserved concurrency for the consumer. Default none: the event sources' maximum concurrency
   * (`maxConcurrency` each, so twice it in all) bounds it, and a reservation below that would
   * throttle the event sources (messages return to their queue, a receive spent). Set, it must be at
   * least twice `maxConcurrency`; it then also guarantees the consumer that many executions
   * whatever else runs in the account (and takes them from the account's unreserved pool).
   */
  readonly reservedConcurrency?: number;
  /**
   * Receives the ordered intake allows a message before SQS moves it to the FIFO dead-letter queue
   * (1 to 1000). Default: the delivery queue's (derivedTimings' maxReceiveCount, 17 × 180 s, about
   * 51 minutes). Nothing on the ordered intake is retried for its own sake (an invalid message is
   * dead-lettered at once, with its reason): a record comes back only while something routing needs
   * is failing (the registry, an endpoint's secret, the ledger, the queue), so the receives allowed
   * are the outage its shipment rides out, held meanwhile (that shipment alone), before its
   * messages are set aside out of order. Lower it to set them aside sooner.
   */
  readonly orderedMaxReceiveCount?: number;
  /**
   * The unrouted alarm's threshold: events in 5 minutes that no endpoint subscribes to. Default 0 when
   * an endpoint declared here takes every event (`default` from `webhookUrl`, or `*` with no `match`),
   * otherwise UNROUTED_ALARM_THRESHOLD (100). Set it above the deployment's normal unmatched traffic.
   */
  readonly unroutedAlarmThreshold?: number;
  /**
   * The dashboard's name (dashboards are global to an account). Default
   * `<stack name>-<construct id>-<region>`, unique per stack, construct and region.
   */
  readonly dashboardName?: string;
}

export class WebhookDelivery extends Construct {
  /** The settings in force: props over the defaults, validated. */
  readonly settings: Settings;
  readonly queue: sqs.Queue;
  /** The consumer's dead letters, each with its reason (docs/contract.md §4). */
  readonly deadLetterQueue: sqs.Queue;
  /** SQS's redrive of a delivery-queue message the consumer kept failing on; the recovery function drains it. */
  readonly redriveQueue: sqs.Queue;
  /** The ordered intake (docs/contract.md §13): a FIFO queue, one message group per shipment. */
  readonly orderedQueue: sqs.Queue;
  /** The ordered intake's FIFO dead-letter queue: SQS's redrive of a message the consumer kept failing. */
  readonly orderedDeadLetterQueue: sqs.Queue;
  readonly ledgerTable: dynamodb.Table;
  /** The endpoint registry: its table, its key, the seeds of the declared endpoints. */
  readonly endpointRegistry: EndpointRegistry;
  readonly consumer: lambda.Function;
  /** The stuck-work recovery function (functions/recovery.ts) and the schedule that runs it. */
  readonly recovery: lambda.Function;
  readonly recoverySchedule: events.Rule;
  /** Where the alarms notify: the topic given, or the one made here. */
  readonly alarmTopic: sns.ITopic;
  /** The key of the alarm topic made here; undefined when a topic was given. */
  readonly alarmTopicKey: kms.Key | undefined;
  /** Undefined when webhooks are sent unsigned. */
  readonly signingSecret: secretsmanager.ISecret | undefined;
  /**
   * The key that seals handoff's own messages (lib/queue/seal.ts): only a sealed message's control
   * attributes steer the consumer, so producers, who may send to the delivery queue, cannot. Read by
   * the consumer and the recovery function; operators who replay or release need GetSecretValue on it.
   */
  readonly sealKey: secretsmanager.Secret;
  /** Every alarm, each notifying `alarmTopic` on alarm and on OK (README, Operating). */
  readonly alarms: {
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
    /** Throttled requests on the ledger (table or listing index) in two 5-minute periods in a row. */
    readonly ledgerThrottles: cloudwatch.Alarm;
    /** Throttled requests on the endpoint registry in two 5-minute periods in a row. */
    readonly registryThrottles: cloudwatch.Alarm;
  };
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: WebhookDeliveryProps) {
    super(scope, id);
    this.settings = resolveSettings(props.settings, { endpointsDeclared: (props.endpoints ?? []).length > 0 });
    const settings = this.settings;
    const timings = derivedTimings(settings);

    // --- Queues -------------------------------------------------------------------------------
    // The dead-letter, redrive and FIFO dead-letter queues may hold the only copy of a message (one
    // that never reached the ledger, an ordered one SQS set aside): they outlive the stack, as the
    // ledger does. The intake queues go with it, so producers' sends fail rather than pile up unread.
    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: MAX_RETENTION,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // cdk-nag (AwsSolutions-SQS3) knows a dead-letter queue only as some queue's redrive target or
    // a function's dead-letter config; this one is filled by SendMessage, so the finding is
    // acknowledged on this queue alone (a new queue without a dead-letter queue still fails the synth).
    Validations.of(this.deadLetterQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'The dead-letter queue is where deliveries end, not a work queue: the consumer (a dead letter with its reason) and the recovery function (a message SQS redrove too often) send to it; nothing consumes it, an operator replays by event ID. No queue redrives to it: the delivery queue redrives to the redrive queue, which the recovery function drains.',
    });
    // Not a dead end: the recovery function sends what lands here back to the delivery queue
    // (lib/recovery.ts), so the ledger decides, and gives up on a message after a few rounds.
    this.redriveQueue = new sqs.Queue(this, 'RedriveQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: MAX_RETENTION,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    this.queue = new sqs.Queue(this, 'DeliveryQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Retention outlasts the whole retry schedule (lib/config.ts checkLifetimes), so a message
      // cannot expire between two attempts; a backlog during an outage survives as long as SQS allows.
      retentionPeriod: MAX_RETENTION,
      // Longer than any invocation can run (6x the function timeout), so a message never
      // reappears while a live worker still holds it.
      visibilityTimeout: Duration.seconds(timings.visibilityTimeoutSeconds),
      // Every receive counts, retries included, so SQS's redrive must stay above the ledger's
      // attempt budget: the ledger dead-letters with a reason; this is only a backstop for a
      // consumer that keeps crashing on one message (or cannot reach the ledger for a long time).
      deadLetterQueue: { queue: this.redriveQueue, maxReceiveCount: timings.maxReceiveCount },
    });
    // The ordered intake (docs/contract.md §13): FIFO, so SQS hands out a shipment's messages in the
    // order sent and none of a group while one of it is in flight. CloudFormation names both queues
    // with the `.fifo` suffix. A FIFO queue's dead-letter queue must be FIFO too.
    this.orderedDeadLetterQueue = new sqs.Queue(this, 'OrderedDeadLetterQueue', {
      fifo: true,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: MAX_RETENTION,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const orderedMaxReceiveCount = props.orderedMaxReceiveCount ?? timings.maxReceiveCount;
    if (!Number.isInteger(orderedMaxReceiveCount) || orderedMaxReceiveCount < 1 || orderedMaxReceiveCount > 1000) {
      throw new ConfigError('orderedMaxReceiveCount', `must be a whole number from 1 to 1000, got ${orderedMaxReceiveCount}`);
    }
    this.orderedQueue = new sqs.Queue(this, 'OrderedQueue', {
      fifo: true,
      // Producers give the event ID as MessageDeduplicationId (`handoff send --ordered` does): two
      // events with equal bodies are not one event, and one event sent twice is deduplicated by ID.
      contentBasedDeduplication: false,
      // High-throughput FIFO: the limit is per shipment rather than per queue, and deduplication is
      // per shipment, which an event ID (one shipment's) never crosses.
      deduplicationScope: sqs.DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: MAX_RETENTION,
      visibilityTimeout: Duration.seconds(timings.visibilityTimeoutSeconds),
      // Its records are routed and fanned out, never retried for a receiver (the delivery queue's
      // messages are), so it needs no receive budget above the attempt budget: a message that keeps
      // failing holds its shipment orderedMaxReceiveCount × the visibility timeout, then is set aside.
      deadLetterQueue: { queue: this.orderedDeadLetterQueue, maxReceiveCount: orderedMaxReceiveCount },
    });

    // --- Ledger -------------------------------------------------------------------------------
    this.ledgerTable = new dynamodb.Table(this, 'Ledger', {
      partitionKey: { name: LEDGER_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: LEDGER_SCHEMA.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: LEDGER_SCHEMA.ttlAttribute,
      // The ledger is the authority on what was delivered: it outlives the stack, and cannot be
      // deleted by hand either until its deletion protection is turned off.
      removalPolicy: RemovalPolicy.RETAIN,
      deletionProtection: props.deletionProtection ?? true,
    });
    // The sparse, sharded listing index (lib/ledger/dynamodb-schema.ts): only rows that need
    // listing have its keys, so a delivered event costs nothing in it; keys only are projected.
    const listing = LEDGER_SCHEMA.listingIndex;
    this.ledgerTable.addGlobalSecondaryIndex({
      indexName: listing.name,
      partitionKey: { name: listing.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: listing.sortKey, type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType[listing.projection],
    });

    // --- Signing secret -----------------------------------------------------------------------
    // It signs for `default`: without a webhook URL there is nothing for a generated one to sign.
    const signing = props.signingSecret ?? (settings.webhookUrl === undefined ? 'none' : 'generate');
    this.signingSecret = this.createSigningSecret(signing);
    this.sealKey = this.createSealKey();

    // --- Alarm topic --------------------------------------------------------------------------
    const alarmTopic = this.createAlarmTopic(props.alarmTopic);
    this.alarmTopic = alarmTopic.topic;
    this.alarmTopicKey = alarmTopic.key;

    // --- Endpoint registry --------------------------------------------------------------------
    this.endpointRegistry = new EndpointRegistry(this, 'Endpoints', {
      deployment: settings,
      ...(props.logRetention !== undefined ? { logRetention: props.logRetention } : {}),
      ...(props.endpointsSeededAt !== undefined ? { seededAt: props.endpointsSeededAt } : {}),
      ...(props.deletionProtection !== undefined ? { deletionProtection: props.deletionProtection } : {}),
    });
    if (settings.webhookUrl !== undefined) {
      this.endpointRegistry.seed({
        name: DEFAULT_ENDPOINT_NAME,
        url: settings.webhookUrl,
        eventTypes: [ALL_EVENT_TYPES],
        ...(this.signingSecret ? { secret: this.signingSecret } : {}),
      });
    }
    for (const endpoint of props.endpoints ?? []) this.endpointRegistry.seed(endpoint);

    // --- Consumer -----------------------------------------------------------------------------
    const logGroup = new logs.LogGroup(this, 'ConsumerLogs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
    });
    // An own role instead of the default one: the default attaches the AWSLambdaBasicExecutionRole
    // managed policy (logs on `*`); this one may write to its own log group and nothing else.
    const role = new iam.Role(this, 'ConsumerRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'handoff consumer: the ledger, its queues, the endpoint registry (read), the signing secrets and its log group',
    });
    logGroup.grantWrite(role);

    const environment: Record<string, string> = {
      ...settingsToEnvironment(settings),
      [RESOURCE_ENV.ledgerTable]: this.ledgerTable.tableName,
      [RESOURCE_ENV.deadLetterQueueUrl]: this.deadLetterQueue.queueUrl,
      [RESOURCE_ENV.queueUrl]: this.queue.queueUrl,
      [RESOURCE_ENV.endpointsTable]: this.endpointRegistry.table.tableName,
      // esbuild's source map is only read when Node is told to.
      NODE_OPTIONS: '--enable-source-maps',
    };
    // No URL in the environment: the registry (HANDOFF_ENDPOINTS_TABLE, always set here) holds every
    // endpoint, `default` seeded from webhookUrl, and a URL may carry a token in its query. The
    // consumer reads HANDOFF_WEBHOOK_URL only when it has no registry (functions/consumer.ts).
    delete environment[SETTING_VARIABLES.webhookUrl];
    // The secrets' ARNs, never their values: the consumer reads the values at cold start.
    if (this.signingSecret) environment[RESOURCE_ENV.webhookSecretArn] = this.signingSecret.secretArn;
    environment[RESOURCE_ENV.sealKeyArn] = this.sealKey.secretArn;
    // An endpoint the consumer disables is announced on the default bus, and to the alarm topic.
    environment[RESOURCE_ENV.eventBus] = 'default';
    environment[RESOURCE_ENV.alarmTopicArn] = this.alarmTopic.topicArn;
    const reservedConcurrency = checkReservedConcurrency(props.reservedConcurrency, settings);

    const consumerProps = {
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySizeMb ?? CONSUMER_MEMORY_MB,
      // Covers one attempt's timeout plus the ledger writes around it (lib/config.ts).
      timeout: Duration.seconds(timings.functionTimeoutSeconds),
      role,
      logGroup,
      environment,
      description: 'handoff: delivers queued events to the webhook, recording each attempt in the ledger',
      ...(reservedConcurrency !== undefined ? { reservedConcurrentExecutions: reservedConcurrency } : {}),
    };
    // From an installed package the consumer comes pre-bundled, so a user's app needs neither
    // esbuild nor this repository's sources; from a clone (or with `entry`) it is bundled at synth.
    if (props.entry === undefined && existsSync(PREBUILT_CONSUMER_DIR)) {
      this.consumer = new lambda.Function(this, 'Consumer', {
        ...consumerProps,
        code: lambda.Code.fromAsset(PREBUILT_CONSUMER_DIR),
        handler: 'index.handler',
      });
    } else {
      this.consumer = new NodejsFunction(this, 'Consumer', {
        ...consumerProps,
        entry: props.entry ?? CONSUMER_ENTRY,
        handler: 'handler',
        bundling: {
          format: OutputFormat.ESM,
          minify: true,
          sourceMap: true,
          // The Node.js 22+ runtimes ship AWS SDK v3: leave it out of the bundle.
          externalModules: ['@aws-sdk/*'],
          mainFields: ['module', 'main'],
          // Some bundled CommonJS dependencies call `require` for Node built-ins; ESM has none.
          banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        },
      });
    }

    this.consumer.addEventSource(
      new SqsEventSource(this.queue, {
        // One bad message must not return its whole batch (docs/contract.md §4): the handler reports the
        // failed items and only those come back.
        reportBatchItemFailures: true,
        batchSize: settings.batchSize,
        maxBatchingWindow: props.maxBatchingWindow ?? Duration.seconds(1),
        // Bounds the consumer on the event source, not with reserved concurrency: Lambda throttling
        // would return messages to the queue and burn their receive count.
        maxConcurrency: settings.maxConcurrency,
      }),
    );
    // The ordered intake on the same function (docs/contract.md §13). Lambda hands a FIFO queue's
    // records over in group order, one batch per group at a time; the handler handles a group's
    // records in order and reports the rest of a group after its first failure (lib/fifo.ts). FIFO
    // allows no batching window and at most 10 records a batch. The mapping grants the consumer
    // receive, delete, change-visibility and attribute reads on this queue, nothing more.
    this.consumer.addEventSource(
      new SqsEventSource(this.orderedQueue, {
        reportBatchItemFailures: true,
        batchSize: Math.min(settings.batchSize, FIFO_MAX_BATCH_SIZE),
        maxConcurrency: settings.maxConcurrency,
      }),
    );
    this.grantConsumerAccess(role);
    // On an update from the single-URL consumer, the new one (which routes by the registry) starts
    // only once `default` is in it: an event routed against an empty registry would be dropped.
    for (const seed of this.endpointRegistry.seedResources) this.consumer.node.addDependency(seed);

    // --- Stuck-work recovery --------------------------------------------------------------------
    const recovery = this.createRecovery(props, timings.visibilityTimeoutSeconds);
    this.recovery = recovery.function;
    this.recoverySchedule = recovery.schedule;

    // --- Alarms and dashboard -----------------------------------------------------------------
    this.alarms = this.createAlarms(props, settings, orderedMaxReceiveCount);
    const action = new SnsAction(this.alarmTopic);
    for (const alarm of Object.values(this.alarms)) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }
    this.dashboard = this.createDashboard(props, settings);
  }

  /** A metric the consumer emits (EMF), with its `Service` dimension. */
  consumerMetric(metricName: MetricName, props: cloudwatch.MetricOptions = {}): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS.namespace,
      metricName,
      dimensionsMap: { ...METRICS.dimensions },
      period: Duration.minutes(5),
      ...props,
    });
  }

  private createSigningSecret(choice: NonNullable<WebhookDeliveryProps['signingSecret']>) {
    if (choice === 'none') return undefined;
    if (choice !== 'generate') return choice;
    // Secrets Manager cannot generate `whsec_<base64>` directly (its generator draws from a
    // character set and adds no prefix). 64 letters and digits are valid base64 (length a multiple
    // of 4, no padding) and decode to a 48-byte key, within Standard Webhooks' 24–64 bytes. The
    // consumer treats a value without the `whsec_` prefix as that base64 key; the receiver
    // configures `whsec_` + the same value.
    // Retained: the registry (retained) names it as `default`'s secret, and the receiver holds it.
    const secret = new secretsmanager.Secret(this, 'SigningSecret', {
      description: 'handoff: Standard Webhooks signing key (base64; the receiver uses whsec_ + this value)',
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Rotated by the documented procedure (put-secret-value; consumers re-read the secret within 5 minutes and sign with both versions during the 24-hour overlap); no rotation Lambda, since the receiver must switch keys in step.',
    });
    return secret;
  }

  /**
   * 64 letters and digits: valid base64 of a 48-byte key (lib/queue/seal.ts wants 32 at least).
   * Never shared outside handoff's functions and operators, so nobody else has to switch with it.
   */
  private createSealKey(): secretsmanager.Secret {
    // Retained: the retained dead-letter and redrive queues hold messages sealed with it.
    const secret = new secretsmanager.Secret(this, 'SealKey', {
      description: "handoff: the key that seals handoff's own queue messages (only sealed control attributes steer the consumer)",
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'Rotated by the documented procedure (put-secret-value): the functions read it again within 5 minutes and still accept what the previous version sealed; no rotation Lambda, since a second rotation while messages sealed two versions ago are queued (up to 14 days) would unseal them, and the key never leaves handoff\'s roles.',
    });
    return secret;
  }

  /**
   * The topic the alarms notify: the one given, or one made here, encrypted with a key of its own (an
   * AWS-managed key cannot be used: CloudWatch must be allowed in the key's policy), TLS only, which
   * CloudWatch's alarms of this account may publish to. The key goes with the stack (it keeps nothing).
   */
  private createAlarmTopic(given: sns.ITopic | undefined): { topic: sns.ITopic; key: kms.Key | undefined } {
    if (given) return { topic: given, key: undefined };
    const stack = Stack.of(this);
    const key = new kms.Key(this, 'AlarmTopicKey', {
      description: "handoff: encrypts the alarm topic's messages",
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: ['*'],
      }),
    );
    const topic = new sns.Topic(this, 'AlarmTopic', {
      displayName: 'handoff alarms',
      masterKey: key,
      enforceSSL: true,
    });
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
        },
      }),
    );
    return { topic, key };
  }

  /** Lets a role publish to the alarm topic (and use its key, when the topic is the construct's own). */
  private grantAlarmTopicPublish(role: iam.IRole, sid: string): void {
    role.addToPrincipalPolicy(new iam.PolicyStatement({ sid, actions: ['sns:Publish'], resources: [this.alarmTopic.topicArn] }));
    if (this.alarmTopicKey) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({ sid: `${sid}Encrypt`, actions: ['kms:Decrypt', 'kms:GenerateDataKey'], resources: [this.alarmTopicKey.keyArn] }),
      );
    }
  }

  /** Lets a role read the seal key (the consumer, the recovery function). */
  private grantSealKeyRead(role: iam.IRole): void {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'SealKeyRead', actions: ['secretsmanager:GetSecretValue'], resources: [this.sealKey.secretArn] }),
    );
  }

  /**
   * Least privilege on exact ARNs. The event source mappings grant the delivery queue's and the
   * ordered intake's receive, delete, attribute and ChangeMessageVisibility actions (the last is how
   * the handler defers a retry) on each queue's ARN. The consumer sends to neither FIFO queue: its
   * per-endpoint messages go to the delivery queue and its dead letters to the standard dead-letter
   * queue, whichever queue the message came from. `table.grant*()` is avoided: it adds an
   * `index/*` resource the consumer does not need.
   */
  private grantConsumerAccess(role: iam.IRole) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'LedgerReadWrite',
        // Query on the table's key only (an event's deliveries, when its message is received again); not on the index.
        actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
        resources: [this.ledgerTable.tableArn],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'QueueSend',
        // The delivery queue: routing's one message per endpoint; the dead-letter queue: dead letters.
        actions: ['sqs:SendMessage'],
        resources: [this.queue.queueArn, this.deadLetterQueue.queueArn],
      }),
    );
    if (this.signingSecret) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'SigningSecretRead',
          actions: ['secretsmanager:GetSecretValue'],
          // A secret imported by name has no full ARN: match its six-character suffix.
          resources: [this.signingSecret.secretFullArn ?? `${this.signingSecret.secretArn}-??????`],
        }),
      );
      this.signingSecret.encryptionKey?.grantDecrypt(role);
    }
    this.grantSealKeyRead(role);
    // The registry: read, and the endpoints' health written (operators write the rest), and the
    // secrets of the declared endpoints.
    this.endpointRegistry.grantRead(role);
    this.endpointRegistry.grantHealthWrite(role);
    // An endpoint it disables, announced on the default bus and to the alarm topic.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'EndpointDisabledEvent',
        actions: ['events:PutEvents'],
        resources: [Stack.of(this).formatArn({ service: 'events', resource: 'event-bus', resourceName: 'default' })],
      }),
    );
    this.grantAlarmTopicPublish(role, 'EndpointDisabledAlarm');
    this.endpointRegistry.seededSecrets.forEach((secret, i) => {
      if (secret === this.signingSecret) return;
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: `EndpointSecretRead${i}`,
          actions: ['secretsmanager:GetSecretValue'],
          resources: [secret.secretFullArn ?? `${secret.secretArn}-??????`],
        }),
      );
      secret.encryptionKey?.grantDecrypt(role);
    });
  }

  /**
   * The recovery function (functions/recovery.ts) on an EventBridge schedule: drains the redrive
   * queue (Receive, Delete) into the delivery queue or, after a few rounds, the dead-letter queue
   * (SendMessage); reads the ledger's pending and parked listings (Query on the index, BatchGetItem
   * of the rows it lists) and the registry's endpoint names, pauses and releases (Scan, with the
   * key's Decrypt), releases parked rows (UpdateItem on the ledger, and on the registry for the
   * release's window), and sends to the delivery queue; nothing else. A failed run is tried twice
   * more (Lambda's asynchronous retries, a minute and two apart: two runs at once are safe, the claim
   * and the release window decide), and one that failed all three times is reported to the alarm
   * topic (its on-failure destination: the record names the error), as one that waited out its
   * event age unrun would be. The recoveryErrors alarm watches its errors.
   */
  private createRecovery(props: WebhookDeliveryProps, visibilityTimeoutSeconds: number) {
    const interval = props.recoveryInterval ?? DEFAULT_RECOVERY_INTERVAL;
    const minutes = interval.toMinutes({ integral: false });
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > 60) {
      throw new ConfigError('recoveryInterval', `must be whole minutes from 1 to 60, got ${interval.toHumanString()}`);
    }
    const logGroup = new logs.LogGroup(this, 'RecoveryLogs', { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH });
    const role = new iam.Role(this, 'RecoveryRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'handoff recovery: sends back what SQS redrove, reads the ledger listings and the endpoint names, enqueues again the stranded deliveries, releases parked ones, writes its log group',
    });
    logGroup.grantWrite(role);
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'LedgerListingQuery',
        actions: ['dynamodb:Query'],
        resources: [`${this.ledgerTable.tableArn}/index/${LEDGER_SCHEMA.listingIndex.name}`],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'LedgerRowsRead', actions: ['dynamodb:BatchGetItem'], resources: [this.ledgerTable.tableArn] }),
    );
    // Releasing parked deliveries (lib/resume.ts, unpark) and marking the rows it sent again
    // (lib/recovery.ts, relist): one conditional UpdateItem per row.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'LedgerRowsRelease', actions: ['dynamodb:UpdateItem'], resources: [this.ledgerTable.tableArn] }),
    );
    // Sending back what SQS redrove (to the delivery queue), or giving up on it (to the dead-letter queue).
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'DeliveryQueueSend', actions: ['sqs:SendMessage'], resources: [this.queue.queueArn, this.deadLetterQueue.queueArn] }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'RedriveQueueDrain', actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage'], resources: [this.redriveQueue.queueArn] }),
    );
    // The registry's names, pauses and releases (a Scan projecting those attributes), so rows of
    // removed endpoints are left alone; and the releases' own writes (their window, their end).
    this.endpointRegistry.grantNamesRead(role);
    this.endpointRegistry.grantHealthWrite(role);
    // What it sends back is sealed again, as the consumer's own messages are.
    this.grantSealKeyRead(role);
    // Its on-failure destination: a run that failed every attempt, told to whoever takes the alarms.
    this.grantAlarmTopicPublish(role, 'RecoveryFailureNotice');
    const alarmTopicArn = this.alarmTopic.topicArn;
    const onFailure: lambda.IDestination = { bind: () => ({ destination: alarmTopicArn }) };
    const functionProps = {
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: 256,
      // A run reads RECOVERY_LIMIT rows at most: about 10 s.
      timeout: Duration.minutes(2),
      role,
      logGroup,
      environment: {
        [RESOURCE_ENV.ledgerTable]: this.ledgerTable.tableName,
        [RESOURCE_ENV.queueUrl]: this.queue.queueUrl,
        [RESOURCE_ENV.redriveQueueUrl]: this.redriveQueue.queueUrl,
        [RESOURCE_ENV.deadLetterQueueUrl]: this.deadLetterQueue.queueUrl,
        [RESOURCE_ENV.endpointsTable]: this.endpointRegistry.table.tableName,
        [RESOURCE_ENV.sealKeyArn]: this.sealKey.secretArn,
        [RECOVERY_ENV.graceMs]: String(recoveryGraceMs(visibilityTimeoutSeconds)),
        [RECOVERY_ENV.limit]: String(RECOVERY_LIMIT),
        [RECOVERY_ENV.intervalMs]: String(minutes * 60_000),
        NODE_OPTIONS: '--enable-source-maps',
      },
      description: 'handoff: sends back redriven messages and enqueues again the pending deliveries left without a queue message (stuck-work recovery)',
      retryAttempts: 2,
      onFailure,
    };
    const fn =
      existsSync(`${PREBUILT_CONSUMER_DIR}/${PREBUILT_RECOVERY_FILE}`)
        ? new lambda.Function(this, 'Recovery', {
            ...functionProps,
            code: lambda.Code.fromAsset(PREBUILT_CONSUMER_DIR),
            handler: 'recovery.handler',
          })
        : new NodejsFunction(this, 'Recovery', {
            ...functionProps,
            entry: RECOVERY_ENTRY,
            handler: 'handler',
            bundling: {
              format: OutputFormat.ESM,
              minify: true,
              sourceMap: true,
              externalModules: ['@aws-sdk/*'],
              mainFields: ['module', 'main'],
              banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
            },
          });
    const schedule = new events.Rule(this, 'RecoverySchedule', {
      description: 'handoff: runs the stuck-work recovery',
      schedule: events.Schedule.rate(interval),
      targets: [new targets.LambdaFunction(fn, { retryAttempts: 0 })],
    });
    return { function: fn, schedule };
  }

  /**
   * The alarms (README, Operating), each saying in its description what to do. Every one treats
   * missing data as not breaching: a metric published only on activity (SQS's, Lambda's, DynamoDB's
   * throttles) is absent while all is quiet. Rate alarms (dead letters, errors, throttles) fire on
   * what is new in their period and return to OK once a period passes without it, so a later burst
   * notifies again even while earlier dead letters wait on their queue.
   */
  private createAlarms(props: WebhookDeliveryProps, settings: Settings, orderedMaxReceiveCount: number) {
    const timings = derivedTimings(settings);
    const fiveMinutes = Duration.minutes(5);
    const alarm = (
      id: string,
      metric: cloudwatch.IMetric,
      description: string,
      threshold: number,
      evaluation: { periods?: number; toAlarm?: number } = {},
    ) =>
      new cloudwatch.Alarm(this, id, {
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
      this.deadLetterQueue.metricNumberOfMessagesSent({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      'new events on the dead-letter queue in the last 5 minutes. Inspect with `handoff dead` (the reason is on each), fix the cause, then `handoff replay`; a message without a reason is one recovery gave up on (its row: `handoff status`). Returns to OK after 5 minutes without a new one: the queue is not drained by that.',
      0,
    );
    // SQS's own redrive (the FIFO dead-letter queue's only source) is not counted by
    // NumberOfMessagesSent: a rise in what the queue holds (visible plus in flight, so an operator's
    // reading it changes nothing) is a new dead letter. FILL: an idle queue publishes nothing.
    const orderedArrivals = new cloudwatch.MathExpression({
      expression: 'DIFF(FILL(visible, 0) + FILL(inFlight, 0))',
      usingMetrics: {
        visible: this.orderedDeadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
        inFlight: this.orderedDeadLetterQueue.metricApproximateNumberOfMessagesNotVisible({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
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
    const deadLettersAgeing = ageing(this.deadLetterQueue, 'DeadLettersAgeingAlarm', 'the dead-letter queue');
    const orderedDeadLettersAgeing = ageing(this.orderedDeadLetterQueue, 'OrderedDeadLettersAgeingAlarm', "the ordered intake's dead-letter queue");

    // --- Queues falling behind. -----------------------------------------------------------------
    const pendingAge = new cloudwatch.Alarm(this, 'PendingAgeAlarm', {
      alarmDescription:
        'handoff: the oldest message on the delivery queue is older than expected; the consumer is not keeping up or not running. Check the consumer alarms (errors, throttles, duration) and the dashboard.',
      metric: this.queue.metricApproximateAgeOfOldestMessage({
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
      this.orderedQueue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
      "the oldest message on the ordered intake is older than a failing one stays before SQS sets it aside: the consumer is not taking the ordered intake's messages (its event source disabled, the consumer failing or throttled). Check the consumer alarms and the event source mapping's state.",
      orderedMaxReceiveCount * timings.visibilityTimeoutSeconds + 5 * 60,
      { periods: 5 },
    );

    // --- The consumer. --------------------------------------------------------------------------
    // Expected failures (4xx, 5xx, timeouts) are outcomes, not errors: an invocation error means
    // the handler itself failed and its whole batch returned to the queue.
    const consumerErrors = alarm(
      'ConsumerErrorsAlarm',
      this.consumer.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      "the consumer Lambda failed invocations (its whole batch went back to the queue). Read the consumer's log for `error` lines and the function's timeouts; a deploy that broke it: roll back.",
      0,
    );
    // With no reserved concurrency and the event sources' maximum concurrency, only the account's
    // limit throttles the consumer: each throttled batch returns to its queue with a receive spent.
    const consumerThrottles = alarm(
      'ConsumerThrottlesAlarm',
      this.consumer.metricThrottles({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      "the consumer Lambda was throttled: the account's concurrency (or its reserved concurrency) is used up, and its batches return to the queue with a receive spent. Find what else runs (account ConcurrentExecutions), raise the account's limit or reserve concurrency (reservedConcurrency, at least twice maxConcurrency).",
      0,
    );
    // Attempts run at once within a batch, each bounded by the attempt timeout; a batch near the
    // function's timeout is a batch about to be cut off (an error, the batch returned).
    const timeoutMs = timings.functionTimeoutSeconds * 1000;
    const consumerDuration = alarm(
      'ConsumerDurationAlarm',
      this.consumer.metricDuration({ period: fiveMinutes, statistic: cloudwatch.Stats.p(99) }),
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
      this.redriveQueue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: cloudwatch.Stats.MAXIMUM }),
      "messages SQS redrove wait on the redrive queue longer than three recovery runs: check the recovery function's errors and log.",
      interval.toSeconds() * 3,
    );
    // One failed run is retried, and the next run does its work anyway: two runs in a row failing is not a blip.
    const recoveryErrors = alarm(
      'RecoveryErrorsAlarm',
      this.recovery.metricErrors({ period: interval, statistic: cloudwatch.Stats.SUM }),
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
      this.consumerMetric(METRICS.names.unrouted, { period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      `more than ${unroutedThreshold} events in 5 minutes matched no endpoint: they were acknowledged and stored nowhere. An endpoint that took them was removed or renamed, or its eventTypes or match narrowed (\`handoff endpoint list\`), or producers send an event type nobody subscribes to. Where some unmatched events are normal, set unroutedAlarmThreshold above them.`,
      unroutedThreshold,
    );
    const endpointUnresolved = alarm(
      'EndpointUnresolvedAlarm',
      this.consumerMetric(ENDPOINT_UNRESOLVED_METRIC, { period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
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
    const ledger = throttles(this.ledgerTable);
    const listing = throttles(this.ledgerTable, LEDGER_SCHEMA.listingIndex.name);
    const registry = throttles(this.endpointRegistry.table);
    const ledgerThrottleSum = new cloudwatch.MathExpression({
      expression: 'FILL(ledgerRead, 0) + FILL(ledgerWrite, 0) + FILL(listingRead, 0) + FILL(listingWrite, 0)',
      usingMetrics: { ledgerRead: ledger.read, ledgerWrite: ledger.write, listingRead: listing.read, listingWrite: listing.write },
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
      'the ledger table (or its listing index) throttled requests in two 5-minute periods in a row: deliveries slow down and retry. A hot key (one shipment head, one event) or a traffic jump past twice the previous peak; see the dashboard and CloudWatch Contributor Insights for the table.',
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

    return {
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
    };
  }

  /**
   * The alarms' state first, then the four signals of docs/contract.md §10 `stats` (pending age,
   * retries, dead letters, delivery latency), routing and endpoint health, the functions and the
   * tables, and each endpoint's own.
   */
  private createDashboard(props: WebhookDeliveryProps, settings: Settings) {
    const metric = (name: MetricName, statistic: string, label: string) =>
      this.consumerMetric(name, { statistic, label });
    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName ?? defaultDashboardName(this),
    });
    dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        alarms: Object.values(this.alarms),
        width: 24,
        height: 4,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Pending age (seconds)',
        left: [
          this.queue.metricApproximateAgeOfOldestMessage({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Oldest queued message' }),
          this.orderedQueue.metricApproximateAgeOfOldestMessage({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Oldest on the ordered intake' }),
          // Redriven by SQS, waiting for the recovery function to send it back (RedrivenAlarm).
          this.redriveQueue.metricApproximateAgeOfOldestMessage({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Oldest on the redrive queue' }),
          metric(METRICS.names.pendingAge, cloudwatch.Stats.MAXIMUM, 'Pending age at attempt (max)'),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Deliveries and retries',
        left: [
          metric(METRICS.names.delivered, cloudwatch.Stats.SUM, 'Delivered'),
          metric(METRICS.names.retries, cloudwatch.Stats.SUM, 'Retries'),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead letters',
        left: [metric(METRICS.names.deadLetters, cloudwatch.Stats.SUM, 'Dead-lettered')],
        right: [
          this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
            statistic: cloudwatch.Stats.MAXIMUM,
            label: 'On the dead-letter queue',
          }),
          this.orderedDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
            statistic: cloudwatch.Stats.MAXIMUM,
            label: "On the ordered intake's dead-letter queue",
          }),
        ],
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Delivery latency (ms)',
        left: [
          metric(METRICS.names.deliveryLatency, cloudwatch.Stats.p(50), 'p50'),
          metric(METRICS.names.deliveryLatency, cloudwatch.Stats.p(99), 'p99'),
        ],
        width: 12,
      }),
    );
    // Routing (docs/contract.md §11): events no endpoint wanted, fanned-out deliveries, dropped deaths.
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Routing',
        left: [
          metric(METRICS.names.unrouted, cloudwatch.Stats.SUM, 'Unrouted'),
          metric(METRICS.names.fannedOut, cloudwatch.Stats.SUM, 'Fanned out'),
          metric(METRICS.names.dropped, cloudwatch.Stats.SUM, 'Dropped'),
          metric(ENDPOINT_UNRESOLVED_METRIC, cloudwatch.Stats.SUM, 'Held: endpoint unresolved'),
        ],
        width: 12,
      }),
      // Endpoint health (docs/contract.md §12): deliveries held, parked, released and rate-limited, no attempt spent.
      new cloudwatch.GraphWidget({
        title: 'Held for an endpoint',
        left: [
          metric(METRICS.names.paused, cloudwatch.Stats.SUM, 'Paused'),
          metric(METRICS.names.parked, cloudwatch.Stats.SUM, 'Parked'),
          metric(METRICS.names.resumed, cloudwatch.Stats.SUM, 'Released'),
          metric(METRICS.names.rateLimited, cloudwatch.Stats.SUM, 'Rate-limited'),
        ],
        width: 12,
      }),
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
      { fn: this.consumer, name: 'Consumer' },
      { fn: this.recovery, name: 'Recovery' },
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
          this.consumer.metricDuration({ statistic: cloudwatch.Stats.p(99), label: 'Consumer p99' }),
          this.consumer.metricDuration({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Consumer max' }),
          this.recovery.metricDuration({ statistic: cloudwatch.Stats.MAXIMUM, label: 'Recovery max' }),
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
      { table: this.ledgerTable, name: 'Ledger' },
      { table: this.endpointRegistry.table, name: 'Registry' },
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
        left: [this.alarms.ledgerThrottles.metric, this.alarms.registryThrottles.metric],
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
}

/**
 * Props over the defaults, validated, plus what only the deployed stack requires: a webhook URL,
 * unless endpoints are declared. @throws ConfigError
 */
export function resolveSettings(overrides: Partial<Settings>, options: { endpointsDeclared?: boolean } = {}): Settings {
  const url = overrides.webhookUrl;
  if (url !== undefined && Token.isUnresolved(url)) {
    // Known only at deploy time (a CloudFormation parameter): its pattern checks it then, and the
    // consumer's endpoint guard refuses a bad one at cold start.
    return { ...resolveSettings({ ...overrides, webhookUrl: 'https://deploy-time.invalid/' }, options), webhookUrl: url };
  }
  const settings = validateSettings({ ...DEFAULT_SETTINGS, ...overrides });
  if (settings.webhookUrl === undefined) {
    if (!options.endpointsDeclared) {
      throw new ConfigError('webhookUrl', 'is required unless `endpoints` declares some: the stack has no demo receiver to fall back to');
    }
  } else {
    checkEndpoint(settings.webhookUrl, settings, 'webhookUrl');
  }
  if (settings.webhookSecret !== undefined) {
    throw new ConfigError(
      'webhookSecret',
      'is for the local sandbox only: in AWS pass a Secrets Manager secret as `signingSecret` (a value here would end up in the template)',
    );
  }
  // The schedule against the queue's retention, and the ledger's retention against the longest
  // delivery, were checked by validateSettings (lib/config.ts checkLifetimes), as the sandbox and
  // the handler check them: a bad pair fails the synth.
  return settings;
}

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
function takesEveryEvent(props: WebhookDeliveryProps, settings: Settings): boolean {
  const all = (endpoint: Pick<EndpointFields, 'eventTypes' | 'match'>) =>
    endpoint.eventTypes.includes(ALL_EVENT_TYPES) && Object.keys(endpoint.match ?? {}).length === 0;
  return settings.webhookUrl !== undefined || (props.endpoints ?? []).some(all);
}

/**
 * The consumer's reserved concurrency, if any: at least what both event sources may run at once
 * (`maxConcurrency` each), or they would be throttled. @throws ConfigError naming the prop
 */
function checkReservedConcurrency(value: number | undefined, settings: Settings): number | undefined {
  if (value === undefined) return undefined;
  const floor = 2 * settings.maxConcurrency;
  if (!Number.isInteger(value) || value < floor) {
    throw new ConfigError(
      'reservedConcurrency',
      `must be a whole number of at least ${floor} (twice maxConcurrency: both event sources run the consumer up to maxConcurrency at once; fewer would throttle them), got ${value}`,
    );
  }
  return value;
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
