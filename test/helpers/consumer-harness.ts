/**
 * Plays Lambda's SQS event source around the real consumer handler: fauxqs and dynalite on
 * loopback, a test receiver, fresh queues per test, a cold start with a given environment (the
 * handler functions/consumer.ts exports, made as it makes it), and receives that return real
 * messages (real receipt handles). Shared by the integration tests that run the consumer in-process.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, expect, vi } from 'vitest';
import { RESOURCE_ENV } from '../../lib/config';
import { createConsumer } from '../../lib/consumer/consumer';
import { consumerDeps } from '../../lib/consumer/environment';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { startEmulators, type Emulators } from '../../sandbox/emulators';
import { startTestReceiver, type TestReceiver } from './receiver';
import { queueArnFromUrl, recordFromMessage, sqsEvent, TEST_SEAL_KEY } from './sqs-records';

export const REGION = 'us-east-1';
export const CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

export type Handler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
export interface Queues {
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  /** Where the delivery queue's redrive policy moves a message received `maxReceiveCount` times. */
  readonly redriveQueueUrl: string;
}

export interface ConsumerHarness {
  readonly emulators: Emulators;
  readonly receiver: TestReceiver;
  readonly sqs: SQSClient;
  readonly ledger: DynamoDbLedger;
  /** A client of the emulators' DynamoDB (the ledger table's and any other the test makes). */
  readonly dynamodb: DynamoDBClient;
  /**
   * A fresh delivery queue, dead-letter queue and redrive queue, so no test sees another's messages;
   * SQS's redrive after `maxReceiveCount` receives (default 100: out of the way).
   */
  createQueues(visibilityTimeoutSeconds: number, options?: { maxReceiveCount?: number }): Promise<Queues>;
  /**
   * A consumer made from the environment, as a cold start makes it, with the emulators, the
   * receiver (loopback over http allowed), the ledger table and `env` on top.
   */
  coldStart(env: Record<string, string>): Promise<Handler>;
  /** Receives exactly `count` messages (long polls until they are all in), deleting them if asked. */
  receive(queueUrl: string, count: number, options?: { delete?: boolean }): Promise<Message[]>;
  /**
   * One invocation as the event source mapping makes it: the handler on `messages`, then deletes
   * what it did not report. `context`: the invocation's, or only its request ID (default `req-1`).
   */
  invoke(handler: Handler, queueUrl: string, messages: readonly Message[], context?: string | Context): Promise<SQSBatchResponse>;
  close(): Promise<void>;
}

export async function startConsumerHarness(name: string): Promise<ConsumerHarness> {
  const emulators = await startEmulators();
  const receiver = await startTestReceiver();
  const sqs = new SQSClient({ region: REGION, endpoint: emulators.sqsEndpoint, credentials: CREDENTIALS, useQueueUrlAsEndpoint: false });
  const dynamodb = new DynamoDBClient({ region: REGION, endpoint: emulators.dynamodbEndpoint, credentials: CREDENTIALS });
  const ledgerTable = `handoff-ledger-${name}`;
  await createLedgerTable(dynamodb, ledgerTable);
  const ledger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(dynamodb), tableName: ledgerTable });
  let queueCount = 0;

  return {
    emulators,
    receiver,
    sqs,
    ledger,
    dynamodb,
    async createQueues(visibilityTimeoutSeconds, options = {}) {
      queueCount += 1;
      const create = async (queueName: string, attributes: Record<string, string> = {}) => {
        const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: queueName, Attributes: attributes }));
        return QueueUrl!;
      };
      const deadLetterQueueUrl = await create(`${name}-dlq-${queueCount}`);
      const redriveQueueUrl = await create(`${name}-redrive-${queueCount}`);
      const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: redriveQueueUrl, AttributeNames: ['QueueArn'] }));
      const queueUrl = await create(`${name}-${queueCount}`, {
        VisibilityTimeout: String(visibilityTimeoutSeconds),
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: Attributes!.QueueArn, maxReceiveCount: options.maxReceiveCount ?? 100 }),
      });
      return { queueUrl, deadLetterQueueUrl, redriveQueueUrl };
    },
    async coldStart(env) {
      const base: Record<string, string> = {
        AWS_REGION: REGION,
        AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
        AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint,
        AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbEndpoint,
        HANDOFF_WEBHOOK_URL: receiver.url,
        HANDOFF_ALLOW_HTTP: 'true',
        HANDOFF_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8',
        [RESOURCE_ENV.ledgerTable]: ledgerTable,
        [RESOURCE_ENV.sealKey]: TEST_SEAL_KEY,
      };
      for (const [variable, value] of Object.entries({ ...base, ...env })) vi.stubEnv(variable, value);
      return createConsumer(consumerDeps(process.env));
    },
    async receive(queueUrl, count, options = {}) {
      const messages: Message[] = [];
      for (let round = 0; messages.length < count && round < count + 10; round += 1) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: Math.min(10, count - messages.length),
            WaitTimeSeconds: 1,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
        );
        messages.push(...Messages);
      }
      expect(messages).toHaveLength(count);
      if (options.delete) {
        for (const m of messages) await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
      }
      return messages;
    },
    async invoke(handler, queueUrl, messages, context = 'req-1') {
      const records = messages.map((m) => recordFromMessage(m, queueArnFromUrl(queueUrl)));
      const response = await handler(sqsEvent(records), typeof context === 'string' ? ({ awsRequestId: context } as Context) : context);
      const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
      for (const record of records.filter((r) => !failed.has(r.messageId))) {
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: record.receiptHandle }));
      }
      return response;
    },
    async close() {
      sqs.destroy();
      dynamodb.destroy();
      await receiver.close();
      await emulators.close();
    },
  };
}

/**
 * A cold start on `queues` that reads its endpoints from the registry table `tableName` with no
 * cache, retrying at once and then after 30 s, with 3 s attempts; `env` on top.
 */
export function coldStartOnRegistry(harness: ConsumerHarness, queues: Queues, tableName: string, env: Record<string, string> = {}): Promise<Handler> {
  return harness.coldStart({
    [RESOURCE_ENV.queueUrl]: queues.queueUrl,
    [RESOURCE_ENV.deadLetterQueueUrl]: queues.deadLetterQueueUrl,
    HANDOFF_RETRY_SCHEDULE: '0,30',
    HANDOFF_ATTEMPT_TIMEOUT_MS: '3000',
    [RESOURCE_ENV.endpointsTable]: tableName,
    [RESOURCE_ENV.endpointsCacheMs]: '0',
    ...env,
  });
}

/** A handler cold-started on fresh queues. */
export interface ColdStarted extends Queues {
  readonly handler: Handler;
}

let registryTables = 0;

/** A fresh endpoint registry table on the harness's DynamoDB (`handoff-endpoints-<name>-<n>`), seeded with `fields`. */
export async function seededRegistry(
  harness: ConsumerHarness,
  name: string,
  fields: readonly EndpointFields[],
): Promise<{ registry: DynamoDbEndpointRegistry; tableName: string }> {
  registryTables += 1;
  const tableName = `handoff-endpoints-${name}-${registryTables}`;
  await createEndpointsTable(harness.dynamodb, tableName);
  const registry = new DynamoDbEndpointRegistry({ client: harness.dynamodb, tableName });
  await seedEndpoints(registry, fields, Date.now());
  return { registry, tableName };
}

/** A Lambda context as the runtime hands the consumer one, with 60 s left. */
export function lambdaContext(requestId = 'req-1'): Context {
  return {
    awsRequestId: requestId,
    functionName: 'handoff-consumer',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:handoff-consumer',
    memoryLimitInMB: '256',
    logGroupName: '/aws/lambda/handoff-consumer',
    logStreamName: 'test',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => 60_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** Captures what the handler writes to stdout (its logs and metric documents), line by line. */
export function captureStdout(): string[] {
  const lines: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  });
  return lines;
}

/**
 * The file-level hooks the in-process consumer tests share: a harness started before all the
 * file's tests (handed to `onStart`) and closed after them. What `onStart` answers (stopping what
 * it started beside the harness) runs first; so does an `afterAll` the file registers after this
 * call (after hooks run in reverse order).
 */
export function useConsumerHarness(
  name: string,
  onStart: (harness: ConsumerHarness) => void | Promise<void> | Promise<() => Promise<void>>,
): void {
  let harness: ConsumerHarness | undefined;
  let stop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    harness = await startConsumerHarness(name);
    stop = (await onStart(harness)) ?? undefined;
  });
  afterAll(async () => {
    await stop?.();
    await harness?.close();
  });
}

/**
 * The per-test hooks the in-process consumer tests share: with `onCapture`, stdout captured before
 * each test (the lines handed to it); after each, the stubbed environment and the mocks undone.
 */
export function isolateEachTest(onCapture?: (lines: string[]) => void): void {
  if (onCapture) {
    beforeEach(() => {
      onCapture(captureStdout());
    });
  }
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });
}
