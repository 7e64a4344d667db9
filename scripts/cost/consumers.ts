/**
 * The three consumers `npm run cost` prices, each as Lambda invokes it (a batch of SQS records in,
 * a partial batch response out), on the metering proxy's DynamoDB:
 *
 * - handoff: the real consumer (`createConsumer`, lib/consumer/consumer.ts) with the real
 *   DynamoDB ledger, HTTP senders and SQS queue adapter, as functions/consumer.ts makes it:
 *   with the single-URL settings (the one endpoint `default`, no registry), or with an endpoint
 *   registry table read through the meter (`registryTable`), as a stack with endpoints runs (endpoint
 *   health and the rate limit's schedule on that table too);
 * - Powertools: bench/consumers/powertools.ts (`BatchProcessor` + `makeIdempotent` on its DynamoDB
 *   persistence layer), imported with its environment set, so it builds its own client;
 * - naive: bench/consumers/naive.ts (POST, no ledger).
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { createConsumer, registryConsumer, type ConsumerDeps } from '../../lib/consumer/consumer';
import { DEFAULT_SETTINGS, derivedTimings } from '../../lib/config';
import { deliver, type DeliverDeps, type DeliveryResult, type QueueMessage } from '../../lib/deliver';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbRateLimiter } from '../../lib/endpoints/dynamodb-rate-limit';
import type { DeploymentSettings } from '../../lib/endpoints/endpoint';
import { ENDPOINTS_CACHE_MS } from '../../lib/endpoints/registry';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DynamoDbShipmentHeads } from '../../lib/ledger/dynamodb-shipment-heads';
import { createLogger, MetricsRecorder } from '../../lib/observability';
import { MessageSeal } from '../../lib/queue/seal';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { singleEndpoint, staticRouting, type Routing, type SenderFactory } from '../../lib/routing';
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../../lib/webhook/endpoint-guard';
import { HttpWebhookSender } from '../../lib/webhook/http-sender';
import { emulatorDynamoDbClient, returnOldItemOnConditionFailure } from '../../test/helpers/dynalite';

export type ConsumerName = 'handoff' | 'powertools' | 'naive';

export const CONSUMER_LABELS: Record<ConsumerName, string> = {
  handoff: 'handoff',
  powertools: 'Powertools BatchProcessor + makeIdempotent',
  naive: 'naive (POST, no ledger)',
};

export type Invoke = (records: readonly SQSRecord[]) => Promise<SQSBatchResponse>;

export interface Clock {
  nowMs(): number;
}

export interface HandoffOptions {
  /** The metering proxy. */
  readonly dynamodbEndpoint: string;
  /** Straight to dynalite: reads the row a refused write returns on AWS, unmetered. */
  readonly direct: DynamoDBClient;
  readonly tableName: string;
  readonly sqs: SQSClient;
  /** The single-URL settings' receiver; unused with `registryTable`. */
  readonly webhookUrl: string;
  /**
   * An endpoint registry table (created and seeded): the consumer routes every message against it,
   * read through the meter and cached as in AWS (ENDPOINTS_CACHE_MS). Absent: the single-URL settings.
   */
  readonly registryTable?: string;
  readonly clock: Clock;
  /** Sees every delivery's result (the scenarios check their decisions). */
  readonly onResult?: (result: DeliveryResult) => void;
  /**
   * Sees every record's decision as the consumer logs it (`action`, `why` or `reason`): also those
   * no delivery makes (a pause's hold, a park, a fan-out).
   */
  readonly onDecision?: (decision: { readonly action: string; readonly why?: string; readonly eventId?: string }) => void;
}

/** The stack's settings: batches of 10, every record of a batch at once. */
export const SETTINGS = DEFAULT_SETTINGS;
const TIMINGS = derivedTimings(SETTINGS);
/** The queue URLs the adapter names (the SQS meter answers every call; nothing is sent). */
export const QUEUE_URLS = {
  queue: 'https://sqs.us-east-1.amazonaws.com/000000000000/handoff-deliveries',
  deadLetterQueue: 'https://sqs.us-east-1.amazonaws.com/000000000000/handoff-dead-letters',
} as const;
/** The deployment endpoints are checked against: the stack's, with the loopback receivers allowed. */
export const COST_DEPLOYMENT: DeploymentSettings = {
  retryPolicy: SETTINGS.retryPolicy,
  attemptTimeoutMs: SETTINGS.attemptTimeoutMs,
  retentionDays: SETTINGS.retentionDays,
  allowPrivateCidrs: SANDBOX_GUARD_OPTIONS.allowPrivateCidrs ?? [],
  allowHttp: true,
};

export function handoffConsumer(options: HandoffOptions): { invoke: Invoke; close(): void } {
  const client = emulatorDynamoDbClient(options.dynamodbEndpoint);
  // AWS returns the current row with a refused write (ALL_OLD) at no read cost; dynalite does not,
  // and the adapter would read it. This answers as AWS does, through the unmetered client.
  returnOldItemOnConditionFailure(client, options.direct);
  const ledger = new DynamoDbLedger({
    client: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
    tableName: options.tableName,
    now: () => options.clock.nowMs(),
  });
  // Shipment heads in the ledger's table, as functions/consumer.ts passes them: used by endpoints
  // ordered per shipment only (docs/contract.md §13).
  const heads = new DynamoDbShipmentHeads({ client, tableName: options.tableName });
  const guard = new EndpointGuard(SANDBOX_GUARD_OPTIONS);
  const senders: HttpWebhookSender[] = [];
  const createSender: SenderFactory = (endpoint) => {
    const sender = new HttpWebhookSender({ url: endpoint.url, secret: endpoint.secret, timeoutMs: endpoint.attemptTimeoutMs, guard });
    senders.push(sender);
    return sender;
  };
  // The cost of sealing is an HMAC per message, no request: any key measures it.
  const seal = new MessageSeal(MessageSeal.generateKey());
  const queue = new SqsDeliveryQueue({
    client: options.sqs,
    queueUrl: QUEUE_URLS.queue,
    deadLetterQueueUrl: QUEUE_URLS.deadLetterQueue,
    seal,
  });
  const silent = () => {};
  const onDecision = options.onDecision;
  const logLine = onDecision
    ? (line: string) => {
        const entry = JSON.parse(line) as { message?: string; action?: string; why?: string; reason?: string; eventId?: string };
        if (entry.message !== 'delivery' || entry.action === undefined) return;
        const why = entry.why ?? entry.reason;
        onDecision({ action: entry.action, ...(why !== undefined ? { why } : {}), ...(entry.eventId !== undefined ? { eventId: entry.eventId } : {}) });
      }
    : silent;
  const logger = createLogger({ service: 'handoff', write: logLine });
  const metrics = new MetricsRecorder({ service: 'handoff', write: silent });
  // As functions/consumer.ts makes it, once per container: with a registry, routing and endpoint
  // health share one cached read of it (health writes only on failures, pauses and recoveries), and
  // the rate limit's schedule is kept on its table.
  let routing: Routing;
  let health: ConsumerDeps['health'];
  const rateLimiter = options.registryTable !== undefined ? new DynamoDbRateLimiter({ client, tableName: options.registryTable }) : undefined;
  if (options.registryTable !== undefined) {
    ({ routing, health } = registryConsumer(new DynamoDbEndpointRegistry({ client, tableName: options.registryTable }), {
      cacheMs: ENDPOINTS_CACHE_MS,
      deployment: COST_DEPLOYMENT,
      readSecret: (arn) => Promise.reject(new Error(`the cost run's endpoints hold no secret ARN (${arn})`)),
      createSender,
      logger,
    }));
  } else {
    routing = staticRouting(
      [singleEndpoint({ url: options.webhookUrl, policy: SETTINGS.retryPolicy, attemptTimeoutMs: SETTINGS.attemptTimeoutMs })],
      createSender,
    );
  }
  const onResult = options.onResult;
  const observed = onResult
    ? async (message: QueueMessage, deps: DeliverDeps) => {
        const result = await deliver(message, deps);
        onResult(result);
        return result;
      }
    : undefined;
  const handler = createConsumer({
    delivery: {
      ledger,
      now: () => options.clock.nowMs(),
      owner: `cost:${randomUUID()}`,
      policy: SETTINGS.retryPolicy,
      payloadLimitBytes: SETTINGS.payloadLimitBytes,
      leaseMs: TIMINGS.leaseMs,
      retentionSeconds: TIMINGS.retentionSeconds,
    },
    routing,
    ...(health !== undefined ? { health } : {}),
    ...(rateLimiter !== undefined ? { rateLimiter } : {}),
    queue,
    seal: () => Promise.resolve(seal),
    heads,
    logger,
    metrics,
    concurrency: SETTINGS.batchSize,
    receiveLimit: TIMINGS.maxReceiveCount,
    ...(observed ? { deliver: observed } : {}),
  });
  return {
    invoke: (records) => handler({ Records: [...records] }, lambdaContext('handoff')),
    close() {
      for (const sender of senders) sender.close();
      client.destroy();
    },
  };
}

/** The Powertools consumer's idempotency table, as bench/workload.ts creates it. */
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

type LambdaHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/**
 * A bench consumer's handler, imported once with its environment: its own SDK clients reach the
 * metering proxy through `AWS_ENDPOINT_URL_DYNAMODB`.
 */
export async function benchConsumer(
  name: 'powertools' | 'naive',
  environment: { dynamodbEndpoint: string; webhookUrl: string; idempotencyTable: string },
): Promise<Invoke> {
  Object.assign(process.env, {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'cost',
    AWS_SECRET_ACCESS_KEY: 'cost',
    AWS_ENDPOINT_URL_DYNAMODB: environment.dynamodbEndpoint,
    AWS_LAMBDA_FUNCTION_NAME: `cost-${name}`,
    HANDOFF_WEBHOOK_URL: environment.webhookUrl,
    IDEMPOTENCY_TABLE: environment.idempotencyTable,
  });
  const module = (await import(name === 'powertools' ? '../../bench/consumers/powertools' : '../../bench/consumers/naive')) as {
    handler: LambdaHandler;
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
