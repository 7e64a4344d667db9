/**
 * The consumer's dependencies from the environment (functions/consumer.ts): settings, clients and
 * adapters, made once per container. A bad or missing setting throws a ConfigError naming the
 * variable, which fails the cold start.
 */
import { unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { checkEndpoint, derivedTimings, readSettings, RESOURCE_ENV } from '../config';
import { ConfigError } from '../errors';
import { CRASH_POINTS, type CrashPoint } from '../deliver';
import { DynamoDbEndpointRegistry } from '../endpoints/dynamodb-registry';
import { DynamoDbHealthStore } from '../endpoints/dynamodb-health-store';
import { RegistryTable } from '../endpoints/dynamodb-registry-table';
import { DynamoDbRateLimiter } from '../endpoints/dynamodb-rate-limit';
import { BlockRateLimiter } from '../endpoints/rate-limit';
import { defaultEndpointFields, type EndpointRecord } from '../endpoints/endpoint';
import { disabledNotifier } from '../endpoints/health';
import { ENDPOINTS_CACHE_MS } from '../endpoints/registry';
import { CHANGE_WINDOW } from '../endpoints/registry-copy';
import { SecretCache, secretsManagerClient, secretsManagerValue, secretsManagerVersions } from '../endpoints/secret';
import { kmsClient, KmsSecretCipher, LocalSecretCipher, type EndpointSecretCipher } from '../endpoints/secret-cipher';
import { DynamoDbLedger } from '../ledger/dynamodb-ledger';
import { DynamoDbShipmentHeads } from '../ledger/dynamodb-shipment-heads';
import { createLogger, MetricsRecorder, SERVICE_NAME } from '../observability';
import { sealFromEnvironment, sealSource } from '../queue/seal';
import { SqsDeliveryQueue } from '../queue/sqs-queue';
import { tracingFromEnvironment } from '../tracing/tracing';
import { registryRouting, singleEndpoint, staticRouting, type Routing, type SenderFactory } from '../routing';
import { EndpointGuard } from '../webhook/endpoint-guard';
import { HttpWebhookSender } from '../webhook/http-sender';
import { registryConsumer, type ConsumerDeps } from './consumer';

/**
 * Fault injection only: kill the process at this crash point (lib/deliver.ts CRASH_POINTS).
 * `<point>` kills every time; `<point>@<marker file>` kills only while the marker exists and
 * removes it first, so a test arms one crash and the restarted worker runs clean (otherwise the
 * replacement would die at the same point on every attempt).
 */
export const CRASH_AT_ENV = 'HANDOFF_CRASH_AT';

/** `now`: the clock every stage reads (a test's or a simulation's; Date.now by default). */
export function consumerDeps(env: NodeJS.ProcessEnv, options: { readonly now?: () => number } = {}): ConsumerDeps {
  const now = options.now ?? Date.now;
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
    // As the table was made: off, the rows get no key of an index it does not have.
    shipmentIndex: settings.shipmentIndex,
  });
  // Shipment heads live in the ledger's table (docs/contract.md §13): used for endpoints ordered per shipment only.
  // A settled head expires by the rows' retention, from the advance that settled it (lib/ledger/shipment-heads.ts).
  const heads = new DynamoDbShipmentHeads({
    client: dynamodb,
    tableName: required(env[RESOURCE_ENV.ledgerTable], RESOURCE_ENV.ledgerTable),
    now,
    retentionSeconds: timings.retentionSeconds,
  });
  // Calls go to the configured endpoint (AWS_ENDPOINT_URL_SQS or the region's), not to the host
  // in the queue URL: emulators return queue URLs whose host does not resolve.
  const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
  const queueUrl = required(env[RESOURCE_ENV.queueUrl], RESOURCE_ENV.queueUrl);
  const deadLetterQueueUrl = required(env[RESOURCE_ENV.deadLetterQueueUrl], RESOURCE_ENV.deadLetterQueueUrl);
  if (!env[RESOURCE_ENV.sealKeyArn] && !env[RESOURCE_ENV.sealKey]) throw new ConfigError(RESOURCE_ENV.sealKeyArn, 'must be set');
  // The seal key (lib/queue/seal.ts): read by the first batch, then again as `sealSource` says; a failed read is tried again by the next batch.
  const seal = sealSource(() => sealFromEnvironment(env));
  const queue = new SqsDeliveryQueue({ client: sqs, queueUrl, deadLetterQueueUrl, seal });
  const checkpoint = crashHook(env[CRASH_AT_ENV]);
  // Traces (docs/contract.md §19) when OpenTelemetry's variables name an OTLP endpoint: its modules
  // are imported by the first batch then, never while it is off (lib/tracing/tracing.ts).
  const tracing = tracingFromEnvironment(env, SERVICE_NAME);
  // Who claims, shown on a leased row: the container (the log stream's ID in Lambda, where its logs
  // are; the host elsewhere) and the process. Short, since it is written on every claim; each claim's
  // identity is the token the ledger draws, not this.
  const worker = `${env.AWS_LAMBDA_LOG_STREAM_NAME?.split(']').at(-1) || hostname()}:${process.pid}`;

  const createSender: SenderFactory = (endpoint) =>
    new HttpWebhookSender({
      url: endpoint.url,
      secret: endpoint.secret,
      // During a rotation's overlap each request is signed with both secrets.
      previousSecret: endpoint.previousSecret,
      previousSecretUntil: endpoint.previousSecretUntil,
      // Its extra headers (docs/contract.md §18), secret ones read once per container (lib/routing.ts).
      headers: endpoint.headers,
      // Its OAuth2 grant and client certificate (§18), their secrets read as its headers' are.
      auth: endpoint.auth,
      tls: endpoint.tls,
      // The deployment's HTTP CONNECT proxy (HANDOFF_PROXY_URL), for every endpoint; the guard still checks each receiver's address.
      proxyUrl: settings.proxyUrl,
      timeoutMs: endpoint.attemptTimeoutMs,
      guard,
    });

  // The rate limit's schedule, on the registry's table (with a registry only).
  // Reserved in blocks (a second's demand at once), so the item is written about once a second per container.
  const rateLimiter = endpointsTable !== undefined ? new BlockRateLimiter(new DynamoDbRateLimiter({ client: dynamodb, tableName: endpointsTable })) : undefined;
  // Signing secrets named by ARN (the registry's, or `HANDOFF_WEBHOOK_SECRET_ARN`): read from Secrets
  // Manager with a rotation's previous version, each kept for at most 5 minutes, and while its reads
  // fail for at most an hour (lib/endpoints/secret.ts). One cache per container.
  const getSecretValue = secretsManagerClient();
  const secrets = new SecretCache(secretsManagerVersions(getSecretValue, { logger }), { logger });
  // Every other secret value an endpoint names by ARN (a header's, auth.clientSecret, tls.*): read the same way, as plain values.
  const readSecretValue = secretsManagerValue(getSecretValue);
  // What decrypts the secrets the registry holds encrypted: KMS always (its client made at the first
  // `encrypted:kms:` secret; no key ID needed to decrypt), and the sandbox's local key when it is in
  // the environment (a bad one fails the cold start, naming the variable).
  const ciphers: EndpointSecretCipher[] = [new KmsSecretCipher({ calls: kmsClient() }), ...localCipher(env[RESOURCE_ENV.endpointSecretsKey])];

  let routing: Routing;
  let health: ConsumerDeps['health'];
  if (endpointsTable !== undefined) {
    const registry = new DynamoDbEndpointRegistry({
      client: dynamodb,
      tableName: endpointsTable,
      // An item it cannot read does not stop delivery to the others: it travels with the read to
      // routing, which holds the deliveries that would go to it, and logs it (`endpoint unresolved`).
      onUnreadable: () => {},
    });
    ({ routing, health } = registryConsumer(registry, {
      // Health's writes straight on the table: each flush adds its count in one write.
      store: new DynamoDbHealthStore(new RegistryTable(dynamodb, endpointsTable)),
      now,
      cacheMs: wholeMs(env, RESOURCE_ENV.endpointsCacheMs, ENDPOINTS_CACHE_MS, 0, 300_000),
      // The copy's look-back (lib/endpoints/registry-copy.ts): AWS's, unless the sandbox shortens it.
      window: { ...CHANGE_WINDOW, lookbackMs: wholeMs(env, RESOURCE_ENV.endpointsLookbackMs, CHANGE_WINDOW.lookbackMs, 1000, CHANGE_WINDOW.lookbackMs) },
      notify: disabledNotifier({ eventBus: env[RESOURCE_ENV.eventBus] || undefined, alarmTopicArn: env[RESOURCE_ENV.alarmTopicArn] || undefined }),
      deployment: settings,
      secrets,
      readSecretValue,
      ciphers,
      createSender,
      logger,
    }));
  } else if (secretArn !== undefined) {
    // The one endpoint `default`, its secret in Secrets Manager: read as a registry's would be (kept
    // 5 minutes, rotations signed with both versions); while it cannot be read, its deliveries wait
    // on the queue. The single-URL settings are checked at cold start, as one registry item.
    const single: readonly EndpointRecord[] = [{ fields: defaultEndpointFields(webhookUrl!, secretArn), state: 'enabled', createdAt: 0, updatedAt: 0 }];
    routing = registryRouting({ records: () => Promise.resolve(single), deployment: settings, secrets, createSender, logger });
  } else {
    routing = staticRouting(
      [singleEndpoint({ url: webhookUrl!, secret: settings.webhookSecret, policy: settings.retryPolicy, attemptTimeoutMs: settings.attemptTimeoutMs })],
      createSender,
    );
  }

  return {
    delivery: {
      ledger,
      now,
      owner: worker,
      policy: settings.retryPolicy,
      payloadLimitBytes: settings.payloadLimitBytes,
      leaseMs: timings.leaseMs,
      retentionSeconds: timings.retentionSeconds,
      ...(checkpoint ? { checkpoint } : {}),
    },
    routing,
    seal,
    ...(health !== undefined ? { health } : {}),
    ...(rateLimiter !== undefined ? { rateLimiter } : {}),
    heads,
    queue,
    logger,
    metrics,
    ...(tracing !== undefined ? { tracing } : {}),
    // One attempt's time per batch: every record of a batch is in flight at once.
    concurrency: settings.batchSize,
    receiveLimit: timings.maxReceiveCount,
  };
}

/** A setting in whole milliseconds from `min` to `max`, or `fallback` when unset. @throws ConfigError naming the variable */
function wholeMs(env: NodeJS.ProcessEnv, variable: string, fallback: number, min: number, max: number): number {
  const raw = env[variable];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    const range = min === 0 ? `up to ${max}` : `from ${min} to ${max}`;
    throw new ConfigError(variable, `must be whole milliseconds ${range}, got "${raw.slice(0, 40)}"`);
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
