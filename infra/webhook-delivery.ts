/**
 * WebhookDelivery: the reusable construct behind handoff (docs/contract.md §1, §4, §5, §7), composed
 * of the parts in infra/delivery/:
 *
 *   queues.ts       the delivery queue, its redrive and dead-letter queues, the ordered FIFO intake
 *   ledger.ts       the ledger table
 *   secrets.ts      the signing secret and the seal key
 *   functions.ts    the consumer, the stuck-work recovery function, the management API's function and
 *                   the portal API's authorizer, their event sources and schedule
 *   api.ts          the management API (docs/contract.md §16): API Gateway HTTP APIs, IAM (and JWT)
 *                   auth, the portal links' API, the console on the APIs people open (§17)
 *   grants.ts       what each function's role may do
 *   alarms.ts       the alarms
 *   alarm-topic.ts  the topic they notify
 *   dashboard.ts    the dashboard
 *   metrics.ts      the metrics the alarms and the dashboard read
 *   egress.ts       static egress (`egress.staticIps`): the consumer in a VPC whose NAT gateways have
 *                   Elastic IPs, the VPC endpoints that keep AWS traffic off them
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
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import type * as cognito from 'aws-cdk-lib/aws-cognito';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { derivedTimings, type Settings } from '../lib/config';
import { ALL_EVENT_TYPES } from '../lib/endpoints/endpoint';
import type { MetricName } from '../lib/observability';
import { createAlarmTopic } from './delivery/alarm-topic';
import { createManagementApi, type ApiAlarms, type ApiAuth, type ApiThrottle } from './delivery/api';
import { createAlarms, type DeliveryAlarms } from './delivery/alarms';
import { createDashboard } from './delivery/dashboard';
import { checkEgressPorts, createStaticEgress, grantNetworkInterfaces, type EgressOptions, type StaticEgress } from './delivery/egress';
import { createApiFunction, createConsumer, createPortalAuthorizer, createRecovery, type FunctionSource } from './delivery/functions';
import { grantApiAccess, grantConsumerAccess, grantPortalAuthorizerAccess, grantRecoveryAccess } from './delivery/grants';
import { createLedgerTable } from './delivery/ledger';
import type { LedgerCapacity } from './delivery/capacity';
import { METRICS } from './delivery/metrics';
import { createQueues, orderedMaxReceiveCount } from './delivery/queues';
import { createSealKey, createSigningSecret } from './delivery/secrets';
import { resolveSettings } from './delivery/settings';
import type { TracingMode } from './delivery/tracing';
import { EndpointRegistry, type EndpointDeclaration } from './endpoint-registry';
import { DEFAULT_ENDPOINT } from '../lib/ledger/delivery-record';

export { DECLARED_ATTRIBUTE, EndpointRegistry, type EndpointDeclaration } from './endpoint-registry';
export { DEAD_LETTER_AGE_ALARM, UNROUTED_ALARM_THRESHOLD } from './delivery/alarms';
export type { CapacityRange, LedgerCapacity, ProvisionedLedgerCapacity } from './delivery/capacity';
export { API_MEMORY_MB, CONSUMER_MEMORY_MB, DEFAULT_RECOVERY_INTERVAL, FIFO_MAX_BATCH_SIZE, PORTAL_AUTHORIZER_MEMORY_MB } from './delivery/functions';
export {
  ACCESS_LOG_FIELDS,
  API_ROUTE_KEYS,
  CONSOLE_ROUTE_KEYS,
  DEFAULT_API_THROTTLE,
  type ApiAlarms,
  type ApiAuth,
  type ApiThrottle,
} from './delivery/api';
export { ENDPOINT_UNRESOLVED_METRIC, METRICS, RECOVERED_METRIC, endpointSearch } from './delivery/metrics';
export { EGRESS_INTERFACE_ENDPOINTS, EGRESS_ZONES, NETWORK_INTERFACE_ACTIONS, type EgressOptions, type StaticEgress } from './delivery/egress';

// The functions' code is found relative to this module, which the package build bundles into
// dist/cdk.js: one folder below the root, as infra/ is, so each path holds in a clone and in the package.

/** The Lambda entry this construct deploys unless told otherwise. */
export const CONSUMER_ENTRY = fileURLToPath(new URL('../functions/consumer.ts', import.meta.url));
/** The stuck-work recovery function's entry (docs/contract.md §12). */
export const RECOVERY_ENTRY = fileURLToPath(new URL('../functions/recovery.ts', import.meta.url));
/** The management API's function (docs/contract.md §16). */
export const API_ENTRY = fileURLToPath(new URL('../functions/api.ts', import.meta.url));
/** The portal API's Lambda authorizer (portal links' tokens). */
export const PORTAL_AUTHORIZER_ENTRY = fileURLToPath(new URL('../functions/api-portal-authorizer.ts', import.meta.url));
/**
 * The console's build (docs/contract.md §17), run into the API function's bundle when it is bundled
 * at synth. Absent from the package, whose pre-bundled asset holds the console's files already.
 */
const CONSOLE_BUILD_SCRIPT = fileURLToPath(new URL('../console/build.ts', import.meta.url));

/**
 * The functions pre-bundled by the package build (scripts/build.ts, with the bundling settings of
 * infra/delivery/functions.ts), beside this module once it is compiled into dist/: `index.mjs` the
 * consumer, `recovery.mjs` the recovery function, `api.mjs` the management API (with the console's
 * files in `console/`), `portal-authorizer.mjs` the portal API's authorizer, one asset for all.
 * Absent in a clone.
 */
const PREBUILT_CONSUMER_DIR = fileURLToPath(new URL('./consumer', import.meta.url));
const PREBUILT_RECOVERY_FILE = 'recovery.mjs';
const PREBUILT_API_FILE = 'api.mjs';
const PREBUILT_PORTAL_AUTHORIZER_FILE = 'portal-authorizer.mjs';

export interface WebhookDeliveryProps {
  /**
   * Settings over DEFAULT_SETTINGS (lib/config.ts). `webhookUrl` is the endpoint `default` (every
   * event type, signed with `signingSecret`); required in AWS unless `endpoints` declares some.
   * `webhookSecret` is for the local sandbox only: in AWS use `signingSecret`. `shipmentIndex: false`
   * leaves the ledger's shipment index out (docs/contract.md §5): no index, no write to it.
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
   * first two retry waits plus 5 min when longer (infra/delivery/alarms.ts, `defaultPendingAgeThreshold`).
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
   * The ledger's billing mode: `'on-demand'` (default), or `{ provisioned: { minReadUnits, maxReadUnits,
   * minWriteUnits, maxWriteUnits, targetUtilizationPercent? } }`: provisioned capacity with target-tracking
   * auto scaling (default target 70 %) on the table and on each of its indexes, each in that range or
   * its own (`indexes`), and an alarm when consumed capacity nears the maximum (infra/delivery/capacity.ts). At a steady load it
   * bills writes at about 40 % of on-demand's price; past the maximum, requests are throttled.
   */
  readonly ledgerCapacity?: LedgerCapacity;
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
  /**
   * How the management API's callers prove who they are (docs/contract.md §16, docs/deploying.md).
   * Always: IAM (SigV4) on every route of the API at `apiUrl` (grant callers with `grantApiInvoke`),
   * and the portal API, whose routes take portal links' tokens, with the console on it
   * (`portalConsoleUrl`). `jwt`: another API, `apiJwtUrl`, with the same routes behind a JWT
   * authorizer, for people: an OIDC issuer's tokens (`{ issuer, audience }`) or those of a Cognito
   * user pool made here (`{ userPool: true }`, with its hosted sign-in); the console on it
   * (`consoleUrl`) signs in there.
   */
  readonly apiAuth?: ApiAuth;
  /** The management API's stage throttling. Default DEFAULT_API_THROTTLE: 50 requests a second, bursts of 100. */
  readonly apiThrottle?: ApiThrottle;
  /** The management API's function entry. Default `functions/api.ts`; tests point it at a stand-in. */
  readonly apiEntry?: string;
  /**
   * `{ staticIps: true }`: the consumer in a VPC of two zones whose NAT gateways leave from two Elastic
   * IPs of this stack (`egressIps`), so receivers can allowlist them; VPC endpoints keep its AWS calls
   * off the NAT gateways (infra/delivery/egress.ts). Its security group reaches TCP 443, 80 with
   * `allowHttp`, and `extraPorts`; a declared endpoint on another port fails the synth. Priced in
   * docs/cost-and-benchmarks.md. Default: no VPC.
   */
  readonly egress?: EgressOptions;
  /**
   * The consumer's traces (docs/contract.md §19, infra/delivery/tracing.ts): `'xray'` (default)
   * Lambda's active tracing with the ADOT collector layer sending its spans to X-Ray; `'otlp'` spans
   * to `tracingOtlpEndpoint` (a collector of yours); `'off'` none, no OpenTelemetry loaded.
   */
  readonly tracing?: TracingMode;
  /** With `tracing: 'otlp'`: the collector's base URL (https, or http://localhost for one beside the function). */
  readonly tracingOtlpEndpoint?: string;
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
  /** The management API's function (functions/api.ts): the command's use cases behind API Gateway. */
  readonly apiFunction: lambda.Function;
  /** The management API: every route IAM-authorized (docs/contract.md §16). */
  readonly api: apigw.HttpApi;
  /** Its URL (`https://{id}.execute-api.{region}.amazonaws.com/`), the stack output `ApiUrl`. */
  readonly apiUrl: string;
  /** The same routes behind the JWT authorizer, and its URL (`apiAuth.jwt`); undefined without it. */
  readonly jwtApi: apigw.HttpApi | undefined;
  readonly apiJwtUrl: string | undefined;
  /** The console on the JWT API (`<apiJwtUrl>console/`, the stack output `ConsoleUrl`); undefined without `apiAuth.jwt`. */
  readonly consoleUrl: string | undefined;
  /**
   * The API portal links open: its /v1 routes behind `portalAuthorizer` (a portal token proves
   * `portal:<owner>`), the console on it at `portalConsoleUrl` (the stack output `PortalConsoleUrl`),
   * where `POST /v1/portal-links` points its links.
   */
  readonly portalApi: apigw.HttpApi;
  readonly portalApiUrl: string;
  readonly portalConsoleUrl: string;
  readonly portalAuthorizer: lambda.Function;
  /** The user pool, app client and hosted sign-in domain made for the API's people (`apiAuth.jwt.userPool`); undefined otherwise. */
  readonly apiUserPool: cognito.UserPool | undefined;
  readonly apiUserPoolClient: cognito.UserPoolClient | undefined;
  readonly apiUserPoolDomain: cognito.UserPoolDomain | undefined;
  /** The VPC, NAT gateways, Elastic IPs and endpoints of `egress.staticIps`; undefined without it. */
  readonly egress: StaticEgress | undefined;
  /** The addresses every webhook leaves from, comma-separated (the stack output `EgressIps`); undefined without `egress.staticIps`. */
  readonly egressIps: string | undefined;
  /** Every alarm, each notifying `alarmTopic` on alarm and on OK (docs/operating.md). */
  readonly alarms: DeliveryAlarms & ApiAlarms;
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: WebhookDeliveryProps) {
    super(scope, id);
    this.settings = resolveSettings(props.settings, { endpointsDeclared: (props.endpoints ?? []).length > 0 });
    const settings = this.settings;
    const timings = derivedTimings(settings);

    const orderedReceives = orderedMaxReceiveCount(props, timings);
    const queues = createQueues(this, timings, orderedReceives);
    this.deadLetterQueue = queues.deadLetterQueue;
    this.redriveQueue = queues.redriveQueue;
    this.queue = queues.queue;
    this.orderedDeadLetterQueue = queues.orderedDeadLetterQueue;
    this.orderedQueue = queues.orderedQueue;

    this.ledgerTable = createLedgerTable(this, props, settings);

    // It signs for `default`: without a webhook URL there is nothing for a generated one to sign.
    this.signingSecret = createSigningSecret(this, props.signingSecret ?? (settings.webhookUrl === undefined ? 'none' : 'generate'));
    this.sealKey = createSealKey(this);

    const alarmTopic = createAlarmTopic(this, props.alarmTopic);
    this.alarmTopic = alarmTopic.topic;
    this.alarmTopicKey = alarmTopic.key;

    this.endpointRegistry = new EndpointRegistry(this, 'Endpoints', {
      deployment: settings,
      ...(props.logRetention !== undefined ? { logRetention: props.logRetention } : {}),
      ...(props.endpointsSeededAt !== undefined ? { seededAt: props.endpointsSeededAt } : {}),
      ...(props.deletionProtection !== undefined ? { deletionProtection: props.deletionProtection } : {}),
    });
    if (settings.webhookUrl !== undefined) {
      this.endpointRegistry.seed({
        name: DEFAULT_ENDPOINT,
        url: settings.webhookUrl,
        eventTypes: [ALL_EVENT_TYPES],
        ...(this.signingSecret ? { secret: this.signingSecret } : {}),
      });
    }
    for (const endpoint of props.endpoints ?? []) this.endpointRegistry.seed(endpoint);

    this.egress = createStaticEgress(this, props.egress, settings, props.logRetention);
    this.egressIps = this.egress?.addresses;
    if (this.egress) {
      // A declared receiver on a port the security group shuts out would time out on every attempt.
      checkEgressPorts(
        [...(settings.webhookUrl !== undefined ? [{ name: DEFAULT_ENDPOINT, url: settings.webhookUrl }] : []), ...(props.endpoints ?? [])],
        this.egress,
      );
    }

    // From an installed package the functions come pre-bundled, so a user's app needs neither
    // esbuild nor this repository's sources; from a clone (or with `entry`) they are bundled at synth.
    const consumerSource: FunctionSource =
      props.entry === undefined && existsSync(PREBUILT_CONSUMER_DIR)
        ? { assetDir: PREBUILT_CONSUMER_DIR, handler: 'index.handler' }
        : { entry: props.entry ?? CONSUMER_ENTRY };
    const consumer = createConsumer(this, props, settings, consumerSource, this.egress?.functionNetwork);
    this.consumer = consumer.function;
    grantConsumerAccess(consumer.role, this);
    if (this.egress) grantNetworkInterfaces(consumer.role);
    // On an update from the single-URL consumer, the new one (which routes by the registry) starts
    // only once `default` is in it: an event routed against an empty registry would be dropped.
    for (const seed of this.endpointRegistry.seedResources) this.consumer.node.addDependency(seed);

    const recoverySource: FunctionSource = existsSync(`${PREBUILT_CONSUMER_DIR}/${PREBUILT_RECOVERY_FILE}`)
      ? { assetDir: PREBUILT_CONSUMER_DIR, handler: 'recovery.handler' }
      : { entry: RECOVERY_ENTRY };
    const recovery = createRecovery(this, props, settings, recoverySource);
    this.recovery = recovery.function;
    this.recoverySchedule = recovery.schedule;
    grantRecoveryAccess(recovery.role, this);

    const apiSource: FunctionSource =
      props.apiEntry === undefined && existsSync(`${PREBUILT_CONSUMER_DIR}/${PREBUILT_API_FILE}`)
        ? { assetDir: PREBUILT_CONSUMER_DIR, handler: 'api.handler' }
        : { entry: props.apiEntry ?? API_ENTRY };
    // Bundled at synth, the API's function gets the console's files from its build; pre-bundled, they are in the asset.
    const apiFunction = createApiFunction(this, props, settings, apiSource, {
      ...('entry' in apiSource && existsSync(CONSOLE_BUILD_SCRIPT) ? { consoleBuild: CONSOLE_BUILD_SCRIPT } : {}),
    });
    this.apiFunction = apiFunction.function;
    grantApiAccess(apiFunction.role, this, { shipmentIndex: settings.shipmentIndex });
    const portalAuthorizerSource: FunctionSource = existsSync(`${PREBUILT_CONSUMER_DIR}/${PREBUILT_PORTAL_AUTHORIZER_FILE}`)
      ? { assetDir: PREBUILT_CONSUMER_DIR, handler: 'portal-authorizer.handler' }
      : { entry: PORTAL_AUTHORIZER_ENTRY };
    const portalAuthorizer = createPortalAuthorizer(this, props, portalAuthorizerSource);
    this.portalAuthorizer = portalAuthorizer.function;
    grantPortalAuthorizerAccess(portalAuthorizer.role, this);
    const api = createManagementApi(
      this,
      { api: this.apiFunction, apiRole: apiFunction.role, portalAuthorizer: this.portalAuthorizer },
      this.alarmTopic,
      props,
    );
    this.api = api.api;
    this.apiUrl = api.url;
    this.jwtApi = api.jwtApi;
    this.apiJwtUrl = api.jwtUrl;
    this.consoleUrl = api.consoleUrl;
    this.portalApi = api.portalApi;
    this.portalApiUrl = api.portalUrl;
    this.portalConsoleUrl = api.portalConsoleUrl;
    this.apiUserPool = api.userPool;
    this.apiUserPoolClient = api.userPoolClient;
    this.apiUserPoolDomain = api.userPoolDomain;

    this.alarms = { ...createAlarms(this, props, settings, orderedReceives), ...api.alarms };
    this.dashboard = createDashboard(this, props, settings);
  }

  /**
   * Lets `grantee` call every route of the management API at `apiUrl` (execute-api:Invoke, SigV4):
   * what the typed client (`handoff/client`) and `curl --aws-sigv4` need. The API's function then
   * records the grantee's principal as the operator of what it does.
   */
  grantApiInvoke(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({ grantee, actions: ['execute-api:Invoke'], resourceArns: [this.api.arnForExecuteApi()] });
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
}
