/**
 * The consumer Lambda: SQS batch in, partial batch response out. Thin by design: it wires
 * settings, clients and adapters once per container, then hands each batch to `processBatch`.
 *
 * Environment: the `HANDOFF_*` settings and the resources in RESOURCE_ENV (lib/config.ts). A bad
 * or missing setting fails the cold start with a message naming the variable.
 */
import { unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { processBatch } from '../lib/batch';
import { checkEndpoint, ConfigError, derivedTimings, readSettings, RESOURCE_ENV } from '../lib/config';
import { CRASH_POINTS, type CrashPoint, type DeliverDeps } from '../lib/deliver';
import { DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import { createLogger, MetricsRecorder, SERVICE_NAME } from '../lib/observability';
import { SqsDeliveryQueue } from '../lib/queue/sqs-queue';
import { EndpointGuard } from '../lib/webhook/endpoint-guard';
import { HttpWebhookSender } from '../lib/webhook/http-sender';
import type { WebhookSender } from '../lib/webhook/sender';
import { createSigner, SigningSecretError } from '../lib/webhook/signing-secret';

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
const webhookUrl = required(settings.webhookUrl, 'HANDOFF_WEBHOOK_URL');
const secretArn = env[RESOURCE_ENV.webhookSecretArn] || undefined;
checkEndpoint(webhookUrl, settings, 'HANDOFF_WEBHOOK_URL');
const guard = new EndpointGuard({ allowPrivateCidrs: settings.allowPrivateCidrs, allowHttp: settings.allowHttp });

const logger = createLogger({ service: SERVICE_NAME });
const metrics = new MetricsRecorder({ service: SERVICE_NAME });
const ledger = new DynamoDbLedger({
  client: DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } }),
  tableName: required(env[RESOURCE_ENV.ledgerTable], RESOURCE_ENV.ledgerTable),
});
const queue = new SqsDeliveryQueue({
  // Calls go to the configured endpoint (AWS_ENDPOINT_URL_SQS or the region's), not to the host
  // in the queue URL: emulators return queue URLs whose host does not resolve.
  client: new SQSClient({ useQueueUrlAsEndpoint: false }),
  queueUrl: required(env[RESOURCE_ENV.queueUrl], RESOURCE_ENV.queueUrl),
  deadLetterQueueUrl: required(env[RESOURCE_ENV.deadLetterQueueUrl], RESOURCE_ENV.deadLetterQueueUrl),
});
const checkpoint = crashHook(env[CRASH_AT_ENV]);
/**
 * Who claims, shown on a leased row: the container (the log stream's ID in Lambda, where its logs
 * are; the host elsewhere) and the process. Short, since it is written on every claim; each claim's
 * identity is the token the ledger draws, not this.
 */
const worker = `${env.AWS_LAMBDA_LOG_STREAM_NAME?.split(']').at(-1) || hostname()}:${process.pid}`;

let sender: Promise<WebhookSender> | undefined;

/** The sender, built once the signing secret is known. A failed fetch is retried next time. */
function getSender(): Promise<WebhookSender> {
  if (sender === undefined) {
    sender = resolveSecret().then(
      (secret) => new HttpWebhookSender({ url: webhookUrl, secret, timeoutMs: settings.attemptTimeoutMs, guard }),
    );
    sender.catch(() => {
      sender = undefined;
    });
  }
  return sender;
}

/**
 * In AWS the secret stays in Secrets Manager and is read once per container; locally, the env
 * (checked by readSettings at cold start). A stored value that cannot sign fails the batch with
 * an error naming the secret's ARN, never its value; the messages return to the queue.
 */
async function resolveSecret(): Promise<string | undefined> {
  if (secretArn === undefined) return settings.webhookSecret;
  // Loaded only when used, so containers without a secret ARN never pay for the client.
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  const { SecretString } = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: secretArn }));
  const secret = SecretString?.trim();
  if (!secret) throw new ConfigError(RESOURCE_ENV.webhookSecretArn, `names a secret with no string value (${secretArn})`);
  try {
    createSigner(secret);
  } catch (error) {
    if (!(error instanceof SigningSecretError)) throw error;
    throw new ConfigError(
      RESOURCE_ENV.webhookSecretArn,
      `names a secret (${secretArn}) that cannot sign: its key ${error.message} (the value must be whsec_<base64> or bare base64)`,
    );
  }
  return secret;
}

async function consume(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  const delivery: DeliverDeps = {
    ledger,
    sender: await getSender(),
    now: Date.now,
    owner: worker,
    policy: settings.retryPolicy,
    payloadLimitBytes: settings.payloadLimitBytes,
    leaseMs: timings.leaseMs,
    retentionSeconds: timings.retentionSeconds,
    ...(checkpoint ? { checkpoint } : {}),
  };
  return processBatch(event.Records, {
    delivery,
    queue,
    logger: logger.child({ requestId: context.awsRequestId }),
    metrics,
    // One attempt's time per batch: every record of a batch is in flight at once.
    concurrency: settings.batchSize,
  });
}

export const handler = middy<SQSEvent, SQSBatchResponse>(consume).use({
  // Metrics are published whatever the outcome, so a failing batch still shows up.
  after: () => metrics.flush(),
  onError: () => metrics.flush(),
});

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
