/**
 * The consumer Lambda: SQS batch in, partial batch response out. Thin by design: it wires
 * settings, clients and adapters once per container, then hands each batch to `processBatch`.
 *
 * Environment: the `HANDOFF_*` settings and the resources in RESOURCE_ENV (lib/config.ts). A bad
 * or missing setting fails the cold start with a message naming the variable. With an endpoint
 * registry (`HANDOFF_ENDPOINTS_TABLE`) the endpoints are the registry's; without one, the single-URL
 * settings are the one endpoint `default`.
 *
 * With a registry, endpoint health (docs/contract.md §12) is kept on it: an endpoint this consumer
 * disables is told to operators by an error log line `endpoint disabled` and, where set, an event
 * on the EventBridge bus `HANDOFF_EVENT_BUS` (source `handoff`, detail-type
 * `handoff.endpoint.disabled`) and a message to the SNS topic `HANDOFF_ALARM_TOPIC_ARN`. Neither is
 * set in the sandbox, whose stderr shows the line.
 *
 * Signing secrets named by ARN (the registry's, or `HANDOFF_WEBHOOK_SECRET_ARN`) are read from
 * Secrets Manager and kept at most 5 minutes (an hour while re-reads fail); after a rotation there
 * the previous version signs too for 24 h (lib/endpoints/secret.ts). An endpoint that cannot be
 * resolved (its secret unreadable, its item undecodable) holds its deliveries on the queue, as a
 * registry that cannot be read holds the whole batch (lib/batch.ts, `EndpointUnresolved`).
 *
 * Signing secrets the registry holds encrypted (what `handoff endpoint` writes: lib/endpoints/
 * secret-cipher.ts) are decrypted once per container: `encrypted:kms:…` with the registry's KMS key
 * (the ciphertext names it; the function's `kms:Decrypt` on it suffices), `encrypted:local:…` with
 * the sandbox's key (`HANDOFF_ENDPOINT_SECRETS_KEY`, set by the sandbox alone). One that cannot be
 * decrypted leaves its endpoint unresolved, as an unreadable Secrets Manager secret does.
 *
 * With a registry, an endpoint's `rateLimitPerSecond` (docs/contract.md §11) is kept across every
 * consumer by a schedule on its registry item (lib/endpoints/dynamodb-rate-limit.ts, the health
 * writes' UpdateItem grant). Without one there is no limit: the single-URL settings have none.
 */
import { unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { processBatch, type BatchDeps } from '../lib/batch';
import { checkEndpoint, ConfigError, derivedTimings, readSettings, RESOURCE_ENV } from '../lib/config';
import { CRASH_POINTS, type CrashPoint } from '../lib/deliver';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { DynamoDbRateLimiter } from '../lib/endpoints/dynamodb-rate-limit';
import { disabledNotifier, HealthTracker } from '../lib/endpoints/health';
import { defaultEndpointFields, type EndpointRecord } from '../lib/endpoints/endpoint';
import { cachedEndpoints, ENDPOINTS_CACHE_MS } from '../lib/endpoints/registry';
import { SecretCache, secretsManagerClient, secretsManagerVersions } from '../lib/endpoints/secret';
import { kmsClient, KmsSecretCipher, LocalSecretCipher, type EndpointSecretCipher } from '../lib/endpoints/secret-cipher';
import { DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import { DynamoDbShipmentHeads } from '../lib/ledger/dynamodb-shipment-heads';
import { createLogger, MetricsRecorder, SERVICE_NAME } from '../lib/observability';
import { sealFromEnvironment, sealSource } from '../lib/queue/seal';
import { SqsDeliveryQueue } from '../lib/queue/sqs-queue';
import { registryRouting, singleEndpoint, staticRouting, type Routing, type SenderFactory } from '../lib/routing';
import { EndpointGuard } from '../lib/webhook/endpoint-guard';
import { HttpWebhookSender } from '../lib/webhook/http-sender';

/**
 * Fault injection only: kill the process at this crash point (lib/deliver.ts CRASH_POINTS).
 * `<point>` kills every time; `<point>@<marker file>` kills only while the marker exists and
 * removes it first, so a test arms one crash and the restarted worker runs clean (otherwise the
 * replacement would die at the same point on every attempt).
 */
export const CRASH_AT_ENV = 'HANDOFF_CRASH_AT';

const env = process.env;
const settings = readSettings(env);
const timings = derivedTimings(settings);
const endpointsTable = env[RESOURCE_ENV.endpointsTable] || undefined;
const webhookUrl = endpointsTable === undefined ? required(settings.webhookUrl, 'HANDOFF_WEBHOOK_URL') : undefined;
const secretArn = env[RESOURCE_ENV.webhookSecretArn] || undefined;
if (webhookUrl !== undefined) checkEndpoint(webhookUrl, settings, 'HANDOFF_WEBHOOK_URL');
const guard = new EndpointGuard({ allowPrivateCidrs: settings.allowPrivateCidrs, allowHttp: settings.allowHttp });

const logger = createLogger({ service: SERVICE_NAME });
const metrics = new MetricsRecorder({ service: SERVICE_NAME });
const dynamodb = DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } });
const ledger = new DynamoDbLedger({
  client: dynamodb,
  tableName: required(env[RESOURCE_ENV.ledgerTable], RESOURCE_ENV.ledgerTable),
});
/** Shipment heads live in the ledger's table (docs/contract.md §13): used for endpoints ordered per shipment only. */
const heads = new DynamoDbShipmentHeads({ client: dynamodb, tableName: required(env[RESOURCE_ENV.ledgerTable], RESOURCE_ENV.ledgerTable) });
// Calls go to the configured endpoint (AWS_ENDPOINT_URL_SQS or the region's), not to the host
// in the queue URL: emulators return queue URLs whose host does not resolve.
const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
const queueUrl = required(env[RESOURCE_ENV.queueUrl], RESOURCE_ENV.queueUrl);
const deadLetterQueueUrl = required(env[RESOURCE_ENV.deadLetterQueueUrl], RESOURCE_ENV.deadLetterQueueUrl);
if (!env[RESOURCE_ENV.sealKeyArn] && !env[RESOURCE_ENV.sealKey]) throw new ConfigError(RESOURCE_ENV.sealKeyArn, 'must be set');
/** The seal key (lib/queue/seal.ts), read once per container; a failed read is tried again by the next batch. */
const seal = sealSource(() => sealFromEnvironment(env));
const queue = new SqsDeliveryQueue({ client: sqs, queueUrl, deadLetterQueueUrl, seal });
const checkpoint = crashHook(env[CRASH_AT_ENV]);
/**
 * Who claims, shown on a leased row: the container (the log stream's ID in Lambda, where its logs
 * are; the host elsewhere) and the process. Short, since it is written on every claim; each claim's
 * identity is the token the ledger draws, not this.
 */
const worker = `${env.AWS_LAMBDA_LOG_STREAM_NAME?.split(']').at(-1) || hostname()}:${process.pid}`;

const createSender: SenderFactory = (endpoint) =>
  new HttpWebhookSender({
    url: endpoint.url,
    secret: endpoint.secret,
    // During a rotation's overlap each request is signed with both secrets.
    previousSecret: endpoint.previousSecret,
    previousSecretUntil: endpoint.previousSecretUntil,
    timeoutMs: endpoint.attemptTimeoutMs,
    guard,
  });

const eventBus = env[RESOURCE_ENV.eventBus] || undefined;
const alarmTopicArn = env[RESOURCE_ENV.alarmTopicArn] || undefined;

let routing: Routing | undefined;
/** Endpoint health, with a registry only. */
let health: HealthTracker | undefined;
/** The rate limit's schedule, on the registry's table (with a registry only). */
const rateLimiter = endpointsTable !== undefined ? new DynamoDbRateLimiter({ client: dynamodb, tableName: endpointsTable }) : undefined;

/**
 * Signing secrets named by ARN (the registry's, or `HANDOFF_WEBHOOK_SECRET_ARN`): read from Secrets
 * Manager with a rotation's previous version, each kept for at most 5 minutes, and while its reads
 * fail for at most an hour (lib/endpoints/secret.ts). One cache per container.
 */
const secrets = new SecretCache(secretsManagerVersions(secretsManagerClient(), { logger }), { logger });

/**
 * What decrypts the secrets the registry holds encrypted: KMS always (its client made at the first
 * `encrypted:kms:` secret; no key ID needed to decrypt), and the sandbox's local key when it is in the
 * environment (a bad one fails the cold start, naming the variable).
 */
const ciphers: EndpointSecretCipher[] = [new KmsSecretCipher({ calls: kmsClient() }), ...localCipher(env[RESOURCE_ENV.endpointSecretsKey])];

/** The single-URL settings with a secret by ARN, as one registry item (checked at cold start). */
const singleRecord: readonly EndpointRecord[] =
  webhookUrl !== undefined && secretArn !== undefined ? [{ fields: defaultEndpointFields(webhookUrl, secretArn), state: 'enabled', createdAt: 0, updatedAt: 0 }] : [];

/** Where messages go. */
function getRouting(): Routing {
  routing ??=
    endpointsTable !== undefined
      ? registryMode(endpointsTable)
      : secretArn !== undefined
        ? // The one endpoint `default`, its secret in Secrets Manager: read as a registry's would be
          // (kept 5 minutes, rotations signed with both versions); while it cannot be read, its
          // deliveries wait on the queue.
          registryRouting({
            records: () => Promise.resolve(singleRecord),
            deployment: settings,
            secrets,
            createSender,
            logger,
          })
        : staticRouting(
            [singleEndpoint({ url: webhookUrl!, secret: settings.webhookSecret, policy: settings.retryPolicy, attemptTimeoutMs: settings.attemptTimeoutMs })],
            createSender,
          );
  return routing;
}

/** Routing and health on the registry: one cached read of it serves both. */
function registryMode(tableName: string): Routing {
  const registry = new DynamoDbEndpointRegistry({
    client: dynamodb,
    tableName,
    // An item it cannot read does not stop delivery to the others: it travels with the read to
    // routing, which holds the deliveries that would go to it, and logs it (`endpoint unresolved`).
    onUnreadable: () => {},
  });
  let records: ReturnType<typeof cachedEndpoints> | undefined;
  const tracker = new HealthTracker({
    store: registry,
    records: () => records!(),
    notify: disabledNotifier({ eventBus, alarmTopicArn }),
  });
  records = cachedEndpoints(tracker.listing(registry), { ttlMs: cacheMs(env[RESOURCE_ENV.endpointsCacheMs]) });
  health = tracker;
  return registryRouting({ records, deployment: settings, secrets, ciphers, createSender, logger });
}

async function consume(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  const delivery: BatchDeps['delivery'] = {
    ledger,
    now: Date.now,
    owner: worker,
    policy: settings.retryPolicy,
    payloadLimitBytes: settings.payloadLimitBytes,
    leaseMs: timings.leaseMs,
    retentionSeconds: timings.retentionSeconds,
    ...(checkpoint ? { checkpoint } : {}),
  };
  const sealed = await seal();
  return processBatch(event.Records, {
    delivery,
    routing: getRouting(),
    seal: sealed,
    ...(health !== undefined ? { health } : {}),
    ...(rateLimiter !== undefined ? { rateLimiter } : {}),
    heads,
    queue,
    logger: logger.child({ requestId: context.awsRequestId }),
    metrics,
    // One attempt's time per batch: every record of a batch is in flight at once.
    concurrency: settings.batchSize,
    receiveLimit: timings.maxReceiveCount,
  });
}

export const handler = middy<SQSEvent, SQSBatchResponse>(consume).use({
  // Metrics are published whatever the outcome, so a failing batch still shows up.
  after: () => metrics.flush(),
  onError: () => metrics.flush(),
});

function cacheMs(raw: string | undefined): number {
  if (raw === undefined || raw === '') return ENDPOINTS_CACHE_MS;
  if (!/^\d+$/.test(raw) || Number(raw) > 300_000) {
    throw new ConfigError(RESOURCE_ENV.endpointsCacheMs, `must be whole milliseconds up to 300000, got "${raw}"`);
  }
  return Number(raw);
}

function localCipher(key: string | undefined): EndpointSecretCipher[] {
  if (!key) return [];
  try {
    return [new LocalSecretCipher(key)];
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new ConfigError(RESOURCE_ENV.endpointSecretsKey, `cannot decrypt: ${error.message}`);
  }
}

function required(value: string | undefined, variable: string): string {
  if (!value) throw new ConfigError(variable, 'must be set');
  return value;
}

function crashHook(raw: string | undefined): ((point: CrashPoint) => void) | undefined {
  if (!raw) return undefined;
  const at = raw.indexOf('@');
  const crashAt = at === -1 ? raw : raw.slice(0, at);
  const marker = at === -1 ? undefined : raw.slice(at + 1);
  if (!(CRASH_POINTS as readonly string[]).includes(crashAt) || marker === '') {
    throw new ConfigError(CRASH_AT_ENV, `must be one of ${CRASH_POINTS.join(', ')}, optionally @<marker file>, got "${raw}"`);
  }
  return (point) => {
    if (point !== crashAt) return;
    // Removing the marker is the arming check: of workers racing here, exactly one succeeds.
    if (marker !== undefined && !removed(marker)) return;
    process.kill(process.pid, 'SIGKILL');
  };
}

function removed(path: string): boolean {
  try {
    unlinkSync(path);
    return true;
  } catch {
    return false;
  }
}
