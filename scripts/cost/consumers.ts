/**
 * The consumers `npm run cost` prices, each invoked as Lambda invokes it (a batch of SQS records
 * in, a partial batch response out), every SDK client pointed at the meter through the environment:
 *
 * - handoff: made as functions/consumer.ts makes it, `createConsumer(consumerDeps(env))`, with the
 *   single-URL settings or an endpoint registry table (`HANDOFF_ENDPOINTS_TABLE`); its clock, logger
 *   and metrics replaced, so a run can move time and read the decisions it logs;
 * - Powertools: bench/consumers/powertools.ts (`BatchProcessor` + `makeIdempotent`);
 * - naive: bench/consumers/naive.ts (POST, no ledger).
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DEFAULT_SETTINGS, derivedTimings, RESOURCE_ENV, SETTING_VARIABLES } from '../../lib/config';
import { createConsumer } from '../../lib/consumer/consumer';
import { consumerDeps } from '../../lib/consumer/environment';
import { createLogger, MetricsRecorder } from '../../lib/observability';
import { TEST_SEAL_KEY } from '../../test/helpers/sqs-records';

export type ConsumerName = 'handoff' | 'handoff-unindexed' | 'powertools' | 'naive';
export const CONSUMER_LABELS: Record<ConsumerName, string> = {
  handoff: 'handoff',
  'handoff-unindexed': 'handoff, shipment index off',
  powertools: 'Powertools BatchProcessor + makeIdempotent',
  naive: 'naive (POST, no ledger)',
};
export type Invoke = (records: readonly SQSRecord[]) => Promise<SQSBatchResponse>;

/** The stack's settings: batches of 10, every record of a batch at once. */
export const SETTINGS = DEFAULT_SETTINGS;
const TIMINGS = derivedTimings(SETTINGS);
/** The queue URLs the adapter names (the meter answers every SQS call). */
export const QUEUE_URLS = {
  queue: 'https://sqs.us-east-1.amazonaws.com/000000000000/handoff-deliveries',
  deadLetterQueue: 'https://sqs.us-east-1.amazonaws.com/000000000000/handoff-dead-letters',
} as const;

/** The SDK's view of the world for every consumer in this process: the meter, as the emulators. */
export function pointAwsAt(meterEndpoint: string): void {
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'cost',
    AWS_SECRET_ACCESS_KEY: 'cost',
    AWS_ENDPOINT_URL_DYNAMODB: meterEndpoint,
    AWS_ENDPOINT_URL_SQS: meterEndpoint,
  });
}

export interface HandoffConsumer {
  readonly invoke: Invoke;
  /** Every record's decision as the consumer logs it, `action:why` (or `action:reason`), in order. */
  readonly decisions: string[];
}

/**
 * handoff's consumer on `ledgerTable`, to `webhookUrl` or through `registryTable`, at `nowMs` (every
 * stage's clock); `sleep` replaces the wait for a rate-limit slot (a simulated clock does not wait);
 * `shipmentIndex: false` as a deployment that turned the shipment index off (HANDOFF_SHIPMENT_INDEX=false,
 * on a ledger table created without it).
 */
export function handoffConsumer(options: {
  ledgerTable: string;
  webhookUrl?: string;
  registryTable?: string;
  nowMs?: () => number;
  sleep?: (ms: number) => Promise<void>;
  shipmentIndex?: boolean;
}): HandoffConsumer {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    [RESOURCE_ENV.ledgerTable]: options.ledgerTable,
    [RESOURCE_ENV.queueUrl]: QUEUE_URLS.queue,
    [RESOURCE_ENV.deadLetterQueueUrl]: QUEUE_URLS.deadLetterQueue,
    [RESOURCE_ENV.sealKey]: TEST_SEAL_KEY,
    HANDOFF_ALLOW_HTTP: 'true',
    HANDOFF_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8',
    ...(options.registryTable !== undefined ? { [RESOURCE_ENV.endpointsTable]: options.registryTable } : { HANDOFF_WEBHOOK_URL: options.webhookUrl }),
    ...(options.shipmentIndex === false ? { [SETTING_VARIABLES.shipmentIndex]: 'false' } : {}),
  };
  const decisions: string[] = [];
  const logger = createLogger({
    service: 'handoff',
    write: (line) => {
      const entry = JSON.parse(line) as { message?: string; action?: string; why?: string; reason?: string };
      if (entry.message === 'delivery' && entry.action !== undefined) decisions.push(`${entry.action}:${entry.why ?? entry.reason ?? ''}`);
    },
  });
  const deps = consumerDeps(env, options.nowMs !== undefined ? { now: options.nowMs } : {});
  const handler = createConsumer({
    ...deps,
    ...(options.sleep !== undefined ? { sleep: options.sleep } : {}),
    // A claim's owner as long as a Lambda log stream's ID and pid, or longer: the row is not flattered.
    delivery: { ...deps.delivery, now: options.nowMs ?? Date.now, owner: `cost:${randomUUID()}` },
    logger,
    metrics: new MetricsRecorder({ service: 'handoff', write: () => {} }),
  });
  return { invoke: (records) => handler({ Records: [...records] }, lambdaContext('handoff')), decisions };
}

/** The Powertools consumer's idempotency table, as bench/pipeline.ts creates it. */
export async function createPowertoolsTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    }),
  );
}

/** A bench consumer's handler, imported once with its environment (its own clients reach the meter). */
export async function benchConsumer(name: 'powertools' | 'naive', environment: { webhookUrl: string; idempotencyTable: string }): Promise<Invoke> {
  Object.assign(process.env, {
    AWS_LAMBDA_FUNCTION_NAME: `cost-${name}`,
    HANDOFF_WEBHOOK_URL: environment.webhookUrl,
    IDEMPOTENCY_TABLE: environment.idempotencyTable,
  });
  const module = (await import(name === 'powertools' ? '../../bench/consumers/powertools' : '../../bench/consumers/naive')) as {
    handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  };
  return (records) => module.handler({ Records: [...records] }, lambdaContext(name));
}

function lambdaContext(name: string): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: `cost-${name}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:cost-${name}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/cost-${name}`,
    logStreamName: 'cost',
    getRemainingTimeInMillis: () => TIMINGS.functionTimeoutSeconds * 1000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}
