/**
 * The recovery Lambda (docs/contract.md §12 "Stuck work", "Parking"): run on a schedule
 * (EventBridge, every 5 minutes by default), it sends back to the delivery queue what SQS's redrive
 * moved to the redrive queue, enqueues again the pending deliveries no queue message will bring
 * back (lib/recovery.ts says which, and why that is safe), and releases the
 * parked deliveries of endpoints enabled again, up to its next run (lib/resume.ts). Thin by design, like functions/consumer.ts:
 * clients once per container, then one bounded run per invocation.
 *
 * The cursor where a run stopped is kept in the container for the next run; a new container starts
 * at the oldest listed row (lib/recovery.ts).
 *
 * Environment: RESOURCE_ENV's ledger table, queue, redrive queue and dead-letter queue URLs (lib/config.ts), and its endpoint registry
 * table when there is one (rows of endpoints no longer in it, or paused, are left alone; releases
 * run only with one); RECOVERY_ENV's grace (required), limit and interval (lib/recovery.ts). A bad
 * or missing one fails the cold start naming it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RESOURCE_ENV } from '../lib/config';
import { ConfigError } from '../lib/errors';
import { DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import { createLogger, SERVICE_NAME } from '../lib/observability';
import { sealFromEnvironment, sealSource } from '../lib/queue/seal';
import { SqsDeliveryQueue } from '../lib/queue/sqs-queue';
import { SqsRedriveQueue } from '../lib/queue/sqs-redrive-queue';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { RECOVERY_ENV, RECOVERY_LIMIT, recoverStuck, recoveredMetricDocument, sendBackRedriven, type RecoveryRun } from '../lib/recovery';
import { registryEndpoints } from '../lib/recovery-endpoints';
import { releaseResuming, StraySweep, straySweepPerRun } from '../lib/resume';

/** The schedule's default (infra/webhook-delivery.ts sets the variable from `recoveryInterval`). */
const DEFAULT_INTERVAL_MS = 5 * 60_000;

const env = process.env;
const graceMs = wholeNumber(env[RECOVERY_ENV.graceMs], RECOVERY_ENV.graceMs);
if (graceMs === undefined) throw new ConfigError(RECOVERY_ENV.graceMs, 'must be set');
const limit = wholeNumber(env[RECOVERY_ENV.limit], RECOVERY_ENV.limit) ?? RECOVERY_LIMIT;
if (limit < 1) throw new ConfigError(RECOVERY_ENV.limit, 'must be 1 or more');

const logger = createLogger({ service: SERVICE_NAME, fields: { function: 'recovery' } });
const dynamodb = DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } });
const ledger = new DynamoDbLedger({ client: dynamodb, tableName: required(env[RESOURCE_ENV.ledgerTable], RESOURCE_ENV.ledgerTable) });
// As the consumer: calls go to the configured endpoint, not to the host in the queue URL.
const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
const queueUrl = required(env[RESOURCE_ENV.queueUrl], RESOURCE_ENV.queueUrl);
const deadLetterQueueUrl = required(env[RESOURCE_ENV.deadLetterQueueUrl], RESOURCE_ENV.deadLetterQueueUrl);
const redriveQueueUrl = required(env[RESOURCE_ENV.redriveQueueUrl], RESOURCE_ENV.redriveQueueUrl);
if (!env[RESOURCE_ENV.sealKeyArn] && !env[RESOURCE_ENV.sealKey]) throw new ConfigError(RESOURCE_ENV.sealKeyArn, 'must be set');
/** The seal key (lib/queue/seal.ts: what recovery sends is handoff's own), read once per container; a failed read is tried again next run. */
const seal = sealSource(() => sealFromEnvironment(env));
const queue = new SqsDeliveryQueue({ client: sqs, queueUrl, deadLetterQueueUrl, seal });

const endpointsTable = env[RESOURCE_ENV.endpointsTable] || undefined;
const endpoints = endpointsTable !== undefined ? registryEndpoints(dynamodb, endpointsTable) : undefined;
const registry = endpointsTable !== undefined ? new DynamoDbEndpointRegistry({ client: dynamodb, tableName: endpointsTable }) : undefined;
const intervalMs = wholeNumber(env[RECOVERY_ENV.intervalMs], RECOVERY_ENV.intervalMs) ?? DEFAULT_INTERVAL_MS;

/** Where the last run of this container stopped. */
let cursor: string | undefined;
/** Where this container's check of long-enabled endpoints for stray parked deliveries is up to. */
const sweep = new StraySweep(straySweepPerRun(intervalMs));

export async function handler(): Promise<Omit<RecoveryRun, 'cursor'> & { complete: boolean; resumed: number; sentBack: number; gaveUp: number }> {
  // A short receive samples some of SQS's servers; a second's wait asks them all.
  const redrive = new SqsRedriveQueue({ client: sqs, redriveQueueUrl, queueUrl, deadLetterQueueUrl, seal: await seal(), waitSeconds: 1 });
  // First what SQS redrove: those messages are lost to the queue until sent back.
  const redriven = await sendBackRedriven({ redrive, limit, logger });
  let run: RecoveryRun;
  try {
    run = await recoverStuck({
      ledger,
      queue,
      now: Date.now,
      graceMs: graceMs!,
      limit,
      logger,
      ...(cursor !== undefined ? { cursor } : {}),
      ...(endpoints !== undefined ? { endpoints } : {}),
    });
  } catch (error) {
    // The next run starts over at the oldest row, whatever failed here (the ledger, a stale cursor).
    cursor = undefined;
    throw error;
  }
  cursor = run.cursor;
  // Parked deliveries of endpoints enabled again, released up to the next run (lib/resume.ts).
  const releases =
    endpoints !== undefined && registry !== undefined
      ? await releaseResuming(await endpoints(), { ledger, queue, store: registry, now: Date.now, horizonMs: intervalMs, logger, sweep })
      : [];
  const resumed = releases.reduce((sum, release) => sum + release.released, 0);
  process.stdout.write(`${recoveredMetricDocument(run.recovered + redriven.sentBack, Date.now(), resumed)}\n`);
  const summary = {
    sentBack: redriven.sentBack,
    gaveUp: redriven.gaveUp,
    examined: run.examined,
    recovered: run.recovered,
    orphaned: run.orphaned,
    held: run.held,
    queueFailed: run.queueFailed || redriven.queueFailed,
    complete: run.cursor === undefined,
    resumed,
  };
  logger.info('recovery run', summary);
  return summary;
}

function wholeNumber(raw: string | undefined, variable: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new ConfigError(variable, `must be a whole number, got "${raw}"`);
  return Number(raw);
}

function required(value: string | undefined, variable: string): string {
  if (!value) throw new ConfigError(variable, 'must be set');
  return value;
}
