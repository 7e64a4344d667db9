/**
 * The whole system on one machine (docs/contract.md §8): SQS and DynamoDB emulators on 127.0.0.1, the
 * delivery queue, dead-letter queue, ledger and endpoint registry created with the stack's settings,
 * the real consumer handler in worker processes driven by a poller that keeps Lambda's SQS contract.
 * The ordered intake (docs/contract.md §13) as the stack has it: a FIFO queue with a FIFO dead-letter
 * queue, polled as Lambda polls a FIFO queue, into the same workers.
 *
 * The endpoints (docs/contract.md §11), seeded into the registry at start, come from one of:
 * - the endpoints file `HANDOFF_ENDPOINTS_FILE` (sandbox/endpoints-file.ts);
 * - the single-URL settings `HANDOFF_WEBHOOK_URL` (+ `HANDOFF_WEBHOOK_SECRET`): the endpoint `default`, type `*`;
 * - neither: the demo, two demo receivers on loopback with overlapping subscriptions
 *   (DEMO_ENDPOINTS), so a newcomer sees one event fan out with no setup.
 *
 * The emulators live in this process, so their state survives a worker that crashes.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  checkEndpoint,
  ConfigError,
  derivedTimings,
  QUEUE_RETENTION_SECONDS,
  RESOURCE_ENV,
  settingsToEnvironment,
  VARIABLE_NAMES,
  type Settings,
} from '../lib/config';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { LocalSecretCipher } from '../lib/endpoints/secret-cipher';
import { MessageSeal } from '../lib/queue/seal';
import {
  defaultEndpointFields,
  deploymentToJson,
  resolveEndpoint,
  type DeploymentSettings,
  type DeploymentSettingsJson,
  type EndpointFields,
} from '../lib/endpoints/endpoint';
import { SECRET_PREFIX } from '../lib/webhook/signing-secret';
import { exposedSecretsWarning, readEndpointsFile, refuseSingleUrlSettings } from './endpoints-file';
import { createEndpointsTable, seedEndpoints } from './endpoints-table';
import { createLedgerTable } from './ledger-table';
import { SANDBOX_GUARD_OPTIONS } from '../lib/webhook/endpoint-guard';
import { redactUrl } from '../lib/webhook/redact-url';
import { Display, watchCounts } from './counters';
import { startDemoReceiver, type DemoReceiver } from './demo-receiver';
import { startEmulators, type Emulators } from './emulators';
import { startPoller, type Poller } from './poller';
import { metricsFileFor, MetricSink } from './metric-sink';
import { startRecoveryTimer } from './recovery-timer';
import { SANDBOX_CREDENTIALS, SANDBOX_REGION, sandboxStateFile, type SandboxState } from './state-file';
import { WorkerPool } from './worker-pool';
import { describeWorkerLine } from './worker-lines';
import { createQueue, ORDERED_QUEUE_ATTRIBUTES, queueArn } from './queues';

export { ORDERED_QUEUE_ATTRIBUTES };

export const SANDBOX_NAMES = {
  queue: 'handoff-deliveries',
  deadLetterQueue: 'handoff-dead-letters',
  redriveQueue: 'handoff-redrive',
  orderedQueue: 'handoff-ordered.fifo',
  orderedDeadLetterQueue: 'handoff-ordered-dead-letters.fifo',
  ledgerTable: 'handoff-ledger',
  endpointsTable: 'handoff-endpoints',
} as const;

/**
 * How long the sandbox's workers keep their copy of the registry: an `endpoint` command's change
 * reaches the next deliveries within a second (AWS: ENDPOINTS_CACHE_MS).
 */
export const SANDBOX_ENDPOINTS_CACHE_MS = 1000;

/**
 * How long the workers keep their copy of the registry: `endpointsCacheMs`, else the sandbox's own
 * `HANDOFF_ENDPOINTS_CACHE_MS` (0: every batch reads it, so a pause or a disabling one worker
 * writes holds every other worker's next batch; tests of endpoint health use it), else
 * SANDBOX_ENDPOINTS_CACHE_MS. @throws ConfigError naming the variable
 */
export function sandboxEndpointsCacheMs(options: Pick<SandboxOptions, 'endpointsCacheMs'>, env: NodeJS.ProcessEnv = process.env): number {
  if (options.endpointsCacheMs !== undefined) return options.endpointsCacheMs;
  const raw = env[RESOURCE_ENV.endpointsCacheMs];
  if (raw === undefined || raw === '') return SANDBOX_ENDPOINTS_CACHE_MS;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) > 300_000) {
    throw new ConfigError(RESOURCE_ENV.endpointsCacheMs, `must be whole milliseconds up to 300000, got "${raw.slice(0, 40)}"`);
  }
  return Number(raw);
}

/**
 * The demo's endpoints, each on a demo receiver of its own: a carrier's system that wants its own
 * shipments on the move, and a notification service that wants every delivery and exception. One
 * `shipment.delivered` event of carrier `acme` goes to both; an `in_transit` one of `acme` to the
 * first only; a `packed` one to neither (acknowledged, counted as unrouted).
 */
export const DEMO_ENDPOINTS: readonly Omit<EndpointFields, 'url' | 'secret'>[] = [
  {
    name: 'carrier-acme',
    eventTypes: ['shipment.in_transit', 'shipment.out_for_delivery', 'shipment.delivered'],
    match: { 'data.carrier': ['acme'] },
  },
  { name: 'notifications', eventTypes: ['shipment.delivered', 'shipment.exception'] },
];

/**
 * The consumer's fault-injection variable (functions/consumer.ts CRASH_AT_ENV), spelled out here
 * because importing that module runs its cold start, which needs a consumer's environment.
 */
export const CRASH_AT_ENV = 'HANDOFF_CRASH_AT';

export interface SandboxOptions {
  readonly settings: Settings;
  /** `HANDOFF_ENDPOINTS_FILE`: the endpoints, in place of the single-URL settings (sandbox/endpoints-file.ts). */
  readonly endpointsFile?: string;
  /** 0 = any free port. */
  readonly sqsPort: number;
  readonly dynamodbPort: number;
  /**
   * Sandbox only: the queue's visibility timeout, in place of the stack's 6x function timeout,
   * so a message held by a killed worker returns quickly. A live claim still guards it.
   */
  readonly visibilityTimeoutSeconds?: number;
  /** Passed through to the consumer (fault injection). */
  readonly crashAt?: string;
  /** How long the workers keep their copy of the registry (sandboxEndpointsCacheMs). */
  readonly endpointsCacheMs?: number;
  /** The handler module; defaults to functions/consumer.ts. */
  readonly handlerPath?: string;
  readonly display: Display;
  /** Show the consumer's own log lines. Default: only its delivery decisions and warnings. */
  readonly verbose?: boolean;
}

/** The READY object: the state file's fields, and what the sandbox's endpoints are. */
export interface SandboxReady extends SandboxState {
  /** The ordered intake's FIFO queue (docs/contract.md §13): always there in a running sandbox. */
  readonly orderedQueueUrl: string;
  /** The endpoint registry's table (`handoff endpoint` reads and writes it). */
  readonly endpointsTable: string;
  /** The settings an endpoint's defaults and limits come from, for `handoff endpoint add`. */
  readonly deployment: DeploymentSettingsJson;
  /** Each endpoint's URL by name: a demo receiver's exactly, a configured one redacted. */
  readonly receivers: Readonly<Record<string, string>>;
  /** The key that seals the sandbox's own messages (lib/queue/seal.ts), drawn at this start. */
  readonly sealKey: string;
  /** The key of the endpoint secrets `handoff endpoint` writes to its registry (`encrypted:local:…`), drawn at this start. */
  readonly secretsKey: string;
}

export interface Sandbox {
  readonly state: SandboxReady;
  /** Stops polling, lets batches in flight finish (bounded), then closes everything. */
  stop(): Promise<void>;
}

/**
 * The deployment's settings as the sandbox runs them: its receivers are local, so the consumer may
 * reach loopback over plain http. Every endpoint is checked against these, here and by `handoff endpoint`.
 */
export function sandboxDeployment(settings: Settings): DeploymentSettings & Pick<Settings, 'allowPrivateCidrs' | 'allowHttp'> {
  return {
    retryPolicy: settings.retryPolicy,
    attemptTimeoutMs: settings.attemptTimeoutMs,
    retentionDays: settings.retentionDays,
    allowPrivateCidrs: [...new Set([...settings.allowPrivateCidrs, ...(SANDBOX_GUARD_OPTIONS.allowPrivateCidrs ?? [])])],
    allowHttp: true,
  };
}

export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const { settings, display } = options;
  const timings = derivedTimings(settings);
  const deployment = sandboxDeployment(settings);
  const { allowPrivateCidrs } = deployment;
  const endpointsCacheMs = sandboxEndpointsCacheMs(options);
  // Refused now rather than reporting READY while every worker fails its cold start.
  if (options.endpointsFile !== undefined) refuseSingleUrlSettings(settings);
  const fileEndpoints = options.endpointsFile !== undefined ? readEndpointsFile(options.endpointsFile, deployment) : undefined;
  if (settings.webhookUrl !== undefined) checkEndpoint(settings.webhookUrl, deployment, VARIABLE_NAMES.webhookUrl);
  const closers: (() => Promise<unknown>)[] = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  };

  try {
    const emulators: Emulators = await startEmulators({ sqs: options.sqsPort, dynamodb: options.dynamodbPort });
    closers.push(() => emulators.close());
    const sqs = new SQSClient({ region: SANDBOX_REGION, endpoint: emulators.sqsEndpoint, credentials: SANDBOX_CREDENTIALS, useQueueUrlAsEndpoint: false });
    const dynamodb = new DynamoDBClient({ region: SANDBOX_REGION, endpoint: emulators.dynamodbEndpoint, credentials: SANDBOX_CREDENTIALS });
    closers.push(async () => {
      sqs.destroy();
      dynamodb.destroy();
    });

    // Both queues keep messages as long as the stack's do: the ledger's retention is checked against it.
    const deadLetterQueueUrl = await createQueue(sqs, SANDBOX_NAMES.deadLetterQueue, {
      MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS),
    });
    // SQS's redrive of a message the consumer kept failing on (the ledger dead-letters with a reason
    // first); the recovery timer sends it back (docs/contract.md §12 "Stuck work").
    const redriveQueueUrl = await createQueue(sqs, SANDBOX_NAMES.redriveQueue, {
      MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS),
    });
    const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? timings.visibilityTimeoutSeconds;
    const queueUrl = await createQueue(sqs, SANDBOX_NAMES.queue, {
      VisibilityTimeout: String(visibilityTimeoutSeconds),
      MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await queueArn(sqs, redriveQueueUrl), maxReceiveCount: timings.maxReceiveCount }),
    });
    const deliveryQueueArn = await queueArn(sqs, queueUrl);
    // The ordered intake: FIFO, deduplicated by the producer's MessageDeduplicationId (the event ID),
    // per shipment as the stack's is (high throughput), with its own FIFO dead-letter queue.
    const orderedDeadLetterQueueUrl = await createQueue(sqs, SANDBOX_NAMES.orderedDeadLetterQueue, {
      FifoQueue: 'true',
      MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS),
    });
    const orderedQueueUrl = await createQueue(sqs, SANDBOX_NAMES.orderedQueue, {
      ...ORDERED_QUEUE_ATTRIBUTES,
      VisibilityTimeout: String(visibilityTimeoutSeconds),
      MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS),
      RedrivePolicy: JSON.stringify({
        deadLetterTargetArn: await queueArn(sqs, orderedDeadLetterQueueUrl),
        maxReceiveCount: timings.maxReceiveCount,
      }),
    });
    const orderedQueueArn = await queueArn(sqs, orderedQueueUrl);
    await createLedgerTable(dynamodb, SANDBOX_NAMES.ledgerTable);
    await createEndpointsTable(dynamodb, SANDBOX_NAMES.endpointsTable);

    // The endpoints, and what READY shows of each URL: a demo receiver's is the sandbox's own and
    // holds no secret, shown exactly so it can be reached; a configured URL may carry a token,
    // shown redacted here, in READY, the state file and the log (the registry and the workers have it exact).
    let endpoints: EndpointFields[];
    const receivers: Record<string, string> = {};
    if (fileEndpoints !== undefined) {
      const warning = exposedSecretsWarning(options.endpointsFile!, fileEndpoints);
      if (warning !== undefined) display.log(`warning: ${warning}`);
      endpoints = fileEndpoints.map(({ fields }) => fields);
      for (const { name, url } of endpoints) receivers[name] = redactUrl(url);
    } else if (settings.webhookUrl !== undefined) {
      endpoints = [defaultEndpointFields(settings.webhookUrl, settings.webhookSecret)];
      receivers[endpoints[0]!.name] = redactUrl(settings.webhookUrl);
    } else {
      endpoints = [];
      for (const demo of DEMO_ENDPOINTS) {
        // Each its own secret, as every endpoint has (HANDOFF_WEBHOOK_SECRET, when set, for all):
        // the demo receivers verify every request. Never shown.
        const secret = settings.webhookSecret ?? `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
        const receiver: DemoReceiver = await startDemoReceiver({ secret, log: (line) => display.log(`receiver ${demo.name}: ${line}`) });
        closers.push(() => receiver.close());
        endpoints.push({ ...demo, url: receiver.url, secret });
        receivers[demo.name] = receiver.url;
      }
    }
    // The file's endpoints are resolved already; the others are the sandbox's own and pass too,
    // checked all the same: READY must not name an endpoint every attempt would fail.
    for (const fields of endpoints) resolveEndpoint({ fields, state: 'enabled', createdAt: 0, updatedAt: 0 }, deployment);
    const registry = new DynamoDbEndpointRegistry({ client: dynamodb, tableName: SANDBOX_NAMES.endpointsTable });
    await seedEndpoints(registry, endpoints, Date.now());
    for (const { name, eventTypes, match } of endpoints) {
      const filter = Object.entries(match ?? {}).map(([path, values]) => `; ${path} ${values.join(' | ')}`).join('');
      display.log(`endpoint ${name}: ${receivers[name]} (${eventTypes.join(', ')}${filter})`);
    }

    // The single-URL settings stay in the workers' environment where they were given (the consumer
    // reads its endpoints from the registry; `default` is seeded there from them).
    const consumerSettings: Settings = {
      ...settings,
      webhookUrl: fileEndpoints === undefined ? settings.webhookUrl : undefined,
      allowPrivateCidrs,
      allowHttp: true,
    };
    // The key that seals the sandbox's own messages (lib/queue/seal.ts), new at every start.
    const sealKey = MessageSeal.generateKey();
    // The key of the endpoint secrets `handoff endpoint` writes (`encrypted:local:…`, where AWS has
    // the registry's KMS key), new at every start as the registry is. The endpoints seeded above keep
    // their secrets as given: the file's are in the user's own file anyway, the demo's are the sandbox's.
    const secretsKey = LocalSecretCipher.generateKey();
    // The workers' EMF documents, kept for `handoff stats` and the counters (CloudWatch's part).
    // Closed after the pool (closers run in reverse), so the last workers' documents count.
    const metricSink = new MetricSink({ path: metricsFileFor(sandboxStateFile()) });
    closers.push(async () => metricSink.close());
    const pool = new WorkerPool({
      workerPath: fileURLToPath(new URL('./worker.ts', import.meta.url)),
      handlerPath: options.handlerPath ?? fileURLToPath(new URL('../functions/consumer.ts', import.meta.url)),
      env: {
        ...inheritedEnvironment(),
        AWS_REGION: SANDBOX_REGION,
        AWS_ACCESS_KEY_ID: SANDBOX_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: SANDBOX_CREDENTIALS.secretAccessKey,
        AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint,
        AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbEndpoint,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...settingsToEnvironment(consumerSettings),
        ...(settings.webhookUrl !== undefined && settings.webhookSecret !== undefined
          ? { [VARIABLE_NAMES.webhookSecret]: settings.webhookSecret }
          : {}),
        [RESOURCE_ENV.ledgerTable]: SANDBOX_NAMES.ledgerTable,
        [RESOURCE_ENV.endpointsTable]: SANDBOX_NAMES.endpointsTable,
        [RESOURCE_ENV.endpointsCacheMs]: String(endpointsCacheMs),
        [RESOURCE_ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
        [RESOURCE_ENV.queueUrl]: queueUrl,
        [RESOURCE_ENV.sealKey]: sealKey,
        [RESOURCE_ENV.endpointSecretsKey]: secretsKey,
        ...(options.crashAt ? { [CRASH_AT_ENV]: options.crashAt } : {}),
      },
      timeoutMs: timings.functionTimeoutSeconds * 1000,
      onOutput: (line, pid) => {
        if (metricSink.accept(line)) return;
        const shown = describeWorkerLine(line, options.verbose === true);
        if (shown !== undefined) display.log(`worker ${pid}: ${shown}`);
      },
      log: (line) => display.log(line),
    });
    closers.push(() => pool.close());

    const poller: Poller = startPoller({
      sqs,
      queueUrl,
      source: { queueArn: deliveryQueueArn, region: SANDBOX_REGION },
      batchSize: settings.batchSize,
      maxConcurrency: settings.maxConcurrency,
      invoke: (event) => pool.invoke(event),
      log: (line) => display.log(`poller: ${line}`),
    });
    // Shutdown waits at most one function timeout for batches in flight, then kills the workers:
    // whatever they held returns to the queue, which is what a crash would do anyway.
    closers.push(() => poller.stop(timings.functionTimeoutSeconds * 1000));
    // The ordered intake's event source, on the same workers: as Lambda polls a FIFO queue (10 a
    // batch at most, one batch per message group in flight, sandbox/poller.ts).
    const orderedPoller: Poller = startPoller({
      sqs,
      queueUrl: orderedQueueUrl,
      source: { queueArn: orderedQueueArn, region: SANDBOX_REGION },
      batchSize: settings.batchSize,
      maxConcurrency: settings.maxConcurrency,
      invoke: (event) => pool.invoke(event),
      log: (line) => display.log(`ordered poller: ${line}`),
    });
    closers.push(() => orderedPoller.stop(timings.functionTimeoutSeconds * 1000));
    // Stuck-work recovery (docs/contract.md §12): the scheduled function's code, on a timer here (HANDOFF_RECOVERY_INTERVAL_MS).
    const recovery = startRecoveryTimer({
      dynamodb,
      sqs,
      ledgerTable: SANDBOX_NAMES.ledgerTable,
      endpointsTable: SANDBOX_NAMES.endpointsTable,
      queueUrl,
      deadLetterQueueUrl,
      redriveQueueUrl,
      seal: new MessageSeal(sealKey),
      visibilityTimeoutSeconds,
      log: (line) => display.log(`recovery: ${line}`),
      metrics: (line) => metricSink.accept(line),
    });
    closers.push(() => recovery.stop());

    const stopCounts = watchCounts(
      { dynamodb, ledgerTable: SANDBOX_NAMES.ledgerTable, sqs, queueUrl, redriveQueueUrl, deadLetterQueueUrl, delivered: () => metricSink.totals().delivered },
      display,
    );
    closers.push(async () => {
      await stopCounts();
      display.close();
    });

    return {
      state: {
        sqsEndpoint: emulators.sqsEndpoint,
        dynamodbEndpoint: emulators.dynamodbEndpoint,
        queueUrl,
        deadLetterQueueUrl,
        redriveQueueUrl,
        orderedQueueUrl,
        ledgerTable: SANDBOX_NAMES.ledgerTable,
        // The first demo receiver's, `default`'s, or the file's first endpoint's (as `receivers` shows it).
        receiverUrl: receivers[endpoints[0]!.name]!,
        payloadLimitBytes: settings.payloadLimitBytes,
        endpointsTable: SANDBOX_NAMES.endpointsTable,
        deployment: deploymentToJson(deployment),
        receivers,
        sealKey,
        secretsKey,
      },
      stop: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * The ordered intake's FIFO attributes, as the stack sets them (infra/webhook-delivery.ts): no
 * content-based deduplication (the event ID is the deduplication ID), deduplication and throughput
 * per message group.
 */
/**
 * The parent's environment without its handoff and AWS settings: the consumer gets exactly the
 * sandbox's, never a profile or endpoint that points somewhere real.
 */
function inheritedEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_')),
  );
}
