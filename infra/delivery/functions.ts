/**
 * The construct's functions, each with its own log group and role: the consumer
 * (functions/consumer.ts), fed by the delivery queue and the ordered intake, the stuck-work
 * recovery (functions/recovery.ts, docs/contract.md §12), run on a schedule, the management API's
 * function (functions/api.ts) and the portal API's authorizer (functions/api-portal-authorizer.ts).
 * What their roles may do besides writing their logs is granted in infra/delivery/grants.ts.
 */
import { dirname } from 'node:path';
import { AssetStaging, Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, OutputFormat, type BundlingOptions } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { RESOURCE_ENV, SETTING_VARIABLES, derivedTimings, settingsToEnvironment, type Settings } from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import { deploymentToJson } from '../../lib/endpoints/endpoint';
import { RECOVERY_ENV, RECOVERY_LIMIT, recoveryGraceMs } from '../../lib/recovery';
import type { WebhookDelivery, WebhookDeliveryProps } from '../webhook-delivery';
import { addTracingLayer, tracingSetup } from './tracing';

/** The consumer function's memory, MB, unless `memorySizeMb` says otherwise (the cost model prices it). */
export const CONSUMER_MEMORY_MB = 256;

/** How often the recovery function runs unless `recoveryInterval` says otherwise. */
export const DEFAULT_RECOVERY_INTERVAL = Duration.minutes(5);

/** The most records a FIFO queue's event source hands over at once (no batching window is allowed there). */
export const FIFO_MAX_BATCH_SIZE = 10;

/**
 * Where a function's code comes from: the package's pre-bundled asset directory and the handler in
 * it, or an entry bundled at synth.
 */
export type FunctionSource = { readonly assetDir: string; readonly handler: string } | { readonly entry: string };

/**
 * A function bundled at synth: ESM, minified, with source maps. The package build (scripts/build.ts)
 * pre-bundles the functions with the same settings.
 */
const BUNDLING = {
  format: OutputFormat.ESM,
  minify: true,
  sourceMap: true,
  // The Node.js 22+ runtimes ship AWS SDK v3: leave it out of the bundle.
  externalModules: ['@aws-sdk/*'],
  mainFields: ['module', 'main'],
  // Some bundled CommonJS dependencies call `require` for Node built-ins; ESM has none.
  banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
} satisfies BundlingOptions;

type ConsumerParts = Pick<
  WebhookDelivery,
  'ledgerTable' | 'deadLetterQueue' | 'queue' | 'orderedQueue' | 'endpointRegistry' | 'signingSecret' | 'sealKey' | 'alarmTopic'
>;

type RecoveryParts = Pick<WebhookDelivery, 'ledgerTable' | 'queue' | 'redriveQueue' | 'deadLetterQueue' | 'endpointRegistry' | 'sealKey' | 'alarmTopic'>;

/**
 * What every function reads of the deployment, by the variables lib/config.ts names (RESOURCE_ENV):
 * the ledger, the delivery and dead-letter queues, the registry, and the seal key by its ARN (a
 * secret's value is never in an environment).
 */
function resourceEnvironment(
  scope: Pick<WebhookDelivery, 'ledgerTable' | 'queue' | 'deadLetterQueue' | 'endpointRegistry' | 'sealKey'>,
): Record<string, string> {
  return {
    [RESOURCE_ENV.ledgerTable]: scope.ledgerTable.tableName,
    [RESOURCE_ENV.queueUrl]: scope.queue.queueUrl,
    [RESOURCE_ENV.deadLetterQueueUrl]: scope.deadLetterQueue.queueUrl,
    [RESOURCE_ENV.endpointsTable]: scope.endpointRegistry.table.tableName,
    [RESOURCE_ENV.sealKeyArn]: scope.sealKey.secretArn,
  };
}

/**
 * The consumer: routes each event to its endpoints and delivers it, recording every attempt in the
 * ledger. Both queues feed it through event sources with a maximum concurrency each. `network` puts it
 * in a VPC (static egress: infra/delivery/egress.ts); by default it is in none.
 */
export function createConsumer(
  scope: Construct & ConsumerParts,
  props: Pick<WebhookDeliveryProps, 'logRetention' | 'reservedConcurrency' | 'memorySizeMb' | 'maxBatchingWindow' | 'tracing' | 'tracingOtlpEndpoint'>,
  settings: Settings,
  source: FunctionSource,
  network: Pick<lambda.FunctionProps, 'vpc' | 'vpcSubnets' | 'securityGroups'> = {},
): { function: lambda.Function; role: iam.Role } {
  const timings = derivedTimings(settings);
  // Traces (docs/contract.md §19, infra/delivery/tracing.ts): X-Ray through active tracing and the ADOT collector layer by default.
  const traced = tracingSetup(props);
  const { logGroup, role } = logsAndRole(
    scope,
    'Consumer',
    'handoff consumer: the ledger, its queues, the endpoint registry (read), the signing secrets and its log group',
    props.logRetention,
  );

  const environment: Record<string, string> = {
    ...settingsToEnvironment(settings),
    ...resourceEnvironment(scope),
    // esbuild's source map is only read when Node is told to.
    NODE_OPTIONS: '--enable-source-maps',
    ...traced.environment,
  };
  // No URL in the environment: the registry (HANDOFF_ENDPOINTS_TABLE, always set here) holds every
  // endpoint, `default` seeded from webhookUrl, and a URL may carry a token in its query. The
  // consumer reads HANDOFF_WEBHOOK_URL only when it has no registry (functions/consumer.ts).
  delete environment[SETTING_VARIABLES.webhookUrl];
  // The secrets' ARNs, never their values: the consumer reads the values at cold start.
  if (scope.signingSecret) environment[RESOURCE_ENV.webhookSecretArn] = scope.signingSecret.secretArn;
  // An endpoint the consumer disables is announced on the default bus, and to the alarm topic.
  environment[RESOURCE_ENV.eventBus] = 'default';
  environment[RESOURCE_ENV.alarmTopicArn] = scope.alarmTopic.topicArn;
  const reservedConcurrency = checkReservedConcurrency(props.reservedConcurrency, settings);

  const consumer = handoffFunction(
    scope,
    'Consumer',
    {
      memorySize: props.memorySizeMb ?? CONSUMER_MEMORY_MB,
      // Covers one attempt's timeout plus the ledger writes around it (lib/config.ts).
      timeout: Duration.seconds(timings.functionTimeoutSeconds),
      role,
      logGroup,
      environment,
      description: 'handoff: delivers queued events to the webhook, recording each attempt in the ledger',
      ...(reservedConcurrency !== undefined ? { reservedConcurrentExecutions: reservedConcurrency } : {}),
      // With static egress (infra/delivery/egress.ts): its network interfaces in the VPC's private subnets.
      ...network,
      ...(traced.tracing !== undefined ? { tracing: traced.tracing } : {}),
    },
    source,
  );
  addTracingLayer(consumer, traced);

  consumer.addEventSource(
    new SqsEventSource(scope.queue, {
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
  consumer.addEventSource(
    new SqsEventSource(scope.orderedQueue, {
      reportBatchItemFailures: true,
      batchSize: Math.min(settings.batchSize, FIFO_MAX_BATCH_SIZE),
      maxConcurrency: settings.maxConcurrency,
    }),
  );
  return { function: consumer, role };
}

/**
 * The recovery function on an EventBridge schedule: sends back what SQS redrove, enqueues again the
 * deliveries left pending without a queue message, releases parked ones. A failed run is tried
 * twice more (Lambda's asynchronous retries, a minute and two apart: two runs at once are safe, the
 * claim and the release window decide), and one that failed all three times is reported to the
 * alarm topic (its on-failure destination: the record names the error), as one that waited out its
 * event age unrun would be. The recoveryErrors alarm watches its errors.
 */
export function createRecovery(
  scope: Construct & RecoveryParts,
  props: Pick<WebhookDeliveryProps, 'recoveryInterval' | 'logRetention'>,
  settings: Settings,
  source: FunctionSource,
): { function: lambda.Function; role: iam.Role; schedule: events.Rule } {
  const interval = props.recoveryInterval ?? DEFAULT_RECOVERY_INTERVAL;
  const minutes = interval.toMinutes({ integral: false });
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > 60) {
    throw new ConfigError('recoveryInterval', `must be whole minutes from 1 to 60, got ${interval.toHumanString()}`);
  }
  const { logGroup, role } = logsAndRole(
    scope,
    'Recovery',
    'handoff recovery: sends back what SQS redrove, reads the ledger listings and the endpoint names, enqueues again the stranded deliveries, releases parked ones, writes its log group',
    props.logRetention,
  );
  const alarmTopicArn = scope.alarmTopic.topicArn;
  const onFailure: lambda.IDestination = { bind: () => ({ destination: alarmTopicArn }) };
  const fn = handoffFunction(
    scope,
    'Recovery',
    {
      memorySize: 256,
      // A run reads RECOVERY_LIMIT rows at most: it ends well within this.
      timeout: Duration.minutes(2),
      role,
      logGroup,
      environment: {
        ...resourceEnvironment(scope),
        [RESOURCE_ENV.redriveQueueUrl]: scope.redriveQueue.queueUrl,
        [RECOVERY_ENV.graceMs]: String(recoveryGraceMs(derivedTimings(settings).visibilityTimeoutSeconds)),
        [RECOVERY_ENV.limit]: String(RECOVERY_LIMIT),
        [RECOVERY_ENV.intervalMs]: String(minutes * 60_000),
        NODE_OPTIONS: '--enable-source-maps',
      },
      description: 'handoff: sends back redriven messages and enqueues again the pending deliveries left without a queue message (stuck-work recovery)',
      retryAttempts: 2,
      onFailure,
    },
    source,
  );
  const schedule = new events.Rule(scope, 'RecoverySchedule', {
    description: 'handoff: runs the stuck-work recovery',
    schedule: events.Schedule.rate(interval),
    targets: [new targets.LambdaFunction(fn, { retryAttempts: 0 })],
  });
  return { function: fn, role, schedule };
}

type ApiParts = Pick<
  WebhookDelivery,
  'ledgerTable' | 'queue' | 'deadLetterQueue' | 'redriveQueue' | 'orderedQueue' | 'endpointRegistry' | 'sealKey'
>;

/** The management API function's memory, MB: JSON and SDK calls per request, where a person waits on the answer. */
export const API_MEMORY_MB = 512;

/**
 * The management API's one function (functions/api.ts, docs/contract.md §16), behind API Gateway.
 * Its environment names the resources the command's use cases run against, as the stack's outputs
 * name them to `handoff … --stack` (functions/api-target.ts); secrets by ARN only. The console's
 * variables (its sign-in, the portal console's URL) are added by infra/delivery/api.ts, which makes
 * what they name.
 *
 * It serves the console's files too (console/site.ts), from a `console/` folder beside its code: the
 * package build writes it into the pre-bundled asset (dist/consumer/console/); bundled at synth,
 * `consoleBuild` (console/build.ts, in a clone) writes it into the bundle after esbuild.
 */
export function createApiFunction(
  scope: Construct & ApiParts,
  props: Pick<WebhookDeliveryProps, 'logRetention'>,
  settings: Settings,
  source: FunctionSource,
  options: { readonly consoleBuild?: string } = {},
): { function: lambda.Function; role: iam.Role } {
  const { logGroup, role } = logsAndRole(
    scope,
    'Api',
    'handoff management API: the endpoint registry, the ledger, sends to the queues, the seal key, the metrics and its log group',
    props.logRetention,
  );
  const fn = handoffFunction(
    scope,
    'ApiFunction',
    {
      memorySize: API_MEMORY_MB,
      // Under API Gateway's 30 s integration limit, so a slow call ends as this function's error
      // (the 5xx alarm), not as a gateway timeout with the work still running.
      timeout: Duration.seconds(API_FUNCTION_TIMEOUT_SECONDS),
      role,
      logGroup,
      environment: {
        ...resourceEnvironment(scope),
        [RESOURCE_ENV.redriveQueueUrl]: scope.redriveQueue.queueUrl,
        [RESOURCE_ENV.orderedQueueUrl]: scope.orderedQueue.queueUrl,
        [RESOURCE_ENV.endpointsKeyArn]: scope.endpointRegistry.encryptionKey.keyArn,
        [RESOURCE_ENV.endpointDefaults]: JSON.stringify(deploymentToJson(settings)),
        [SETTING_VARIABLES.payloadLimitBytes]: String(settings.payloadLimitBytes),
        NODE_OPTIONS: '--enable-source-maps',
      },
      description: "handoff: the management API (docs/contract.md §16), the command's use cases over HTTP, and the console (§17)",
    },
    source,
    options.consoleBuild !== undefined ? { commandHooks: consoleHooks(options.consoleBuild) } : {},
  );
  return { function: fn, role };
}

/**
 * The console's files written into the API function's bundle, after esbuild: console/build.ts run
 * as a script on the output directory's `console/` (index.html, app.js, app.css). It runs from the
 * repository `script` is in, with the repository's own tsx and esbuild, only when the function is
 * bundled (never in tests that skip bundling). In Docker bundling (no local esbuild) the project
 * root is mounted at the input directory, and the script is found there.
 */
export function consoleHooks(script: string): NonNullable<BundlingOptions['commandHooks']> {
  const root = dirname(dirname(script));
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir, outputDir) => [
      `cd ${shellQuoted(inputDir === AssetStaging.BUNDLING_INPUT_DIR ? inputDir : root)} && node --import tsx console/build.ts ${shellQuoted(`${outputDir}/console`)}`,
    ],
  };
}

/** A path as one word for bash: single quotes, any single quote in it closed, escaped and reopened. */
function shellQuoted(path: string): string {
  return `'${path.replaceAll("'", `'\\''`)}'`;
}

/** The portal authorizer's memory, MB: Lambda's smallest. It checks one HMAC a request. */
export const PORTAL_AUTHORIZER_MEMORY_MB = 128;

/**
 * The portal API's Lambda authorizer (functions/api-portal-authorizer.ts): verifies a portal link's
 * token with the key derived from the seal key, named by its ARN. Its role may read that secret
 * (infra/delivery/grants.ts) and write its log group.
 */
export function createPortalAuthorizer(
  scope: Construct & Pick<WebhookDelivery, 'sealKey'>,
  props: Pick<WebhookDeliveryProps, 'logRetention'>,
  source: FunctionSource,
): { function: lambda.Function; role: iam.Role } {
  const { logGroup, role } = logsAndRole(
    scope,
    'PortalAuthorizer',
    "handoff portal API authorizer: reads the seal key (portal links' key is derived from it) and writes its log group",
    props.logRetention,
  );
  const fn = handoffFunction(
    scope,
    'PortalAuthorizerFunction',
    {
      memorySize: PORTAL_AUTHORIZER_MEMORY_MB,
      // API Gateway waits at most 10 s for a Lambda authorizer's answer.
      timeout: Duration.seconds(10),
      role,
      logGroup,
      environment: { [RESOURCE_ENV.sealKeyArn]: scope.sealKey.secretArn, NODE_OPTIONS: '--enable-source-maps' },
      description: "handoff: the portal API's authorizer, a portal link's token proves its owner",
    },
    source,
  );
  return { function: fn, role };
}

/** The management API function's timeout: API Gateway (HTTP API) waits at most 30 s for it. */
export const API_FUNCTION_TIMEOUT_SECONDS = 28;

/**
 * A function's log group, and a role of its own that may write to it: the default role would attach
 * the AWSLambdaBasicExecutionRole managed policy (logs on `*`).
 */
function logsAndRole(scope: Construct, name: string, description: string, retention: logs.RetentionDays | undefined) {
  const logGroup = new logs.LogGroup(scope, `${name}Logs`, { retention: retention ?? logs.RetentionDays.ONE_MONTH });
  const role = new iam.Role(scope, `${name}Role`, { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'), description });
  logGroup.grantWrite(role);
  return { logGroup, role };
}

/**
 * A Node.js function on ARM, from the pre-bundled asset or bundled at synth from its entry
 * (`bundling` over BUNDLING, for that case only).
 */
function handoffFunction(
  scope: Construct,
  id: string,
  props: Omit<lambda.FunctionProps, 'runtime' | 'code' | 'handler'>,
  source: FunctionSource,
  bundling: Partial<BundlingOptions> = {},
) {
  const common = { ...props, runtime: lambda.Runtime.NODEJS_24_X, architecture: lambda.Architecture.ARM_64 };
  return 'assetDir' in source
    ? new lambda.Function(scope, id, { ...common, code: lambda.Code.fromAsset(source.assetDir), handler: source.handler })
    : new NodejsFunction(scope, id, { ...common, entry: source.entry, handler: 'handler', bundling: { ...BUNDLING, ...bundling } });
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
