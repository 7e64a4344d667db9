/**
 * Real AWS SDK clients aimed at a running sandbox (its READY object), and the reads that the
 * crash-point tests and the soak judge it by: a ledger row or all of them, the depth of a queue,
 * and what the dead-letter queue holds.
 */
import { DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { recordFromItem } from '../../lib/ledger/dynamodb-item';
import { DEFAULT_ENDPOINT, type DeliveryRecord } from '../../lib/ledger/ledger';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import { isHeadPartition } from '../../lib/ledger/shipment-heads';
import type { SandboxState } from '../../sandbox/state-file';

const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };
/** SQS accepts at most 10 entries per batch call. */
const MAX_BATCH_ENTRIES = 10;
/** Dead letters stay hidden this long once read, so a full read counts each message once. */
const READ_HIDE_SECONDS = 600;

/** One dead-letter message as docs/contract.md §4 describes it. */
export interface DeadLetter {
  readonly body: string;
  readonly reason: string | undefined;
  readonly eventId: string | undefined;
  /** The endpoint whose delivery died (docs/contract.md §11); absent for a message never routed. */
  readonly endpoint?: string | undefined;
  /** At an endpoint ordered per shipment (docs/contract.md §13): `continued` or `held`. */
  readonly ordering?: string | undefined;
}

export class SandboxClients {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  readonly documents: DynamoDBDocumentClient;
  readonly ledger: DynamoDbLedger;

  constructor(readonly ready: SandboxState) {
    this.sqs = new SQSClient({ region: REGION, endpoint: ready.sqsEndpoint, credentials: CREDENTIALS, useQueueUrlAsEndpoint: false });
    this.dynamodb = new DynamoDBClient({ region: REGION, endpoint: ready.dynamodbEndpoint, credentials: CREDENTIALS });
    this.documents = DynamoDBDocumentClient.from(this.dynamodb);
    this.ledger = new DynamoDbLedger({ client: this.documents, tableName: ready.ledgerTable });
  }

  /** A producer's plain `SendMessage` to the delivery queue. */
  async send(body: string): Promise<void> {
    await this.sqs.send(new SendMessageCommand({ QueueUrl: this.ready.queueUrl, MessageBody: body }));
  }

  /** Sends each body as its own message, up to 10 per `SendMessageBatch` call. */
  async sendAll(bodies: readonly string[]): Promise<void> {
    for (let start = 0; start < bodies.length; start += MAX_BATCH_ENTRIES) {
      const chunk = bodies.slice(start, start + MAX_BATCH_ENTRIES);
      const { Failed = [] } = await this.sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: this.ready.queueUrl,
          Entries: chunk.map((body, i) => ({ Id: String(i), MessageBody: body })),
        }),
      );
      if (Failed.length > 0) throw new Error(`SendMessageBatch refused ${Failed.length} message(s): ${Failed[0]?.Code}`);
    }
  }

  /** The event's delivery row for one endpoint (`default`: the single-URL settings' endpoint). */
  row(eventId: string, endpoint: string = DEFAULT_ENDPOINT): Promise<DeliveryRecord | undefined> {
    return this.ledger.get({ eventId, endpoint });
  }

  /**
   * Every row of the ledger, decoded (a full scan: for tests and the soak, never for production reads).
   * Shipment heads (docs/contract.md §13) share the table under partitions of their own: left out.
   */
  async scanLedger(): Promise<DeliveryRecord[]> {
    const rows: DeliveryRecord[] = [];
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await this.dynamodb.send(
        new ScanCommand({ TableName: this.ready.ledgerTable, ConsistentRead: true, ExclusiveStartKey: startKey }),
      );
      const items = (page.Items ?? []).filter((item) => !isHeadPartition(item[LEDGER_SCHEMA.partitionKey]?.S ?? ''));
      rows.push(...items.map(recordFromItem));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return rows;
  }

  /** Owners of the leases live at `nowMs`: the workers sending right now (from a scan). */
  async leaseOwners(nowMs: number): Promise<string[]> {
    return (await this.scanLedger())
      .filter((row) => row.leaseOwner !== undefined && (row.leaseExpiresAt ?? 0) > nowMs)
      .map((row) => row.leaseOwner!);
  }

  /** Messages on a queue, visible, in flight or delayed. */
  async queueDepth(queueUrl: string = this.ready.queueUrl): Promise<number> {
    const { Attributes = {} } = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return (
      Number(Attributes.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0) +
      Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0)
    );
  }

  /**
   * Reads every message on the dead-letter queue once. Read messages stay hidden for ten
   * minutes, so this is a final read: a second call sees only what arrived since.
   */
  async readDeadLetters(): Promise<DeadLetter[]> {
    const found: DeadLetter[] = [];
    for (;;) {
      const { Messages = [] } = await this.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.ready.deadLetterQueueUrl,
          MaxNumberOfMessages: MAX_BATCH_ENTRIES,
          VisibilityTimeout: READ_HIDE_SECONDS,
          MessageAttributeNames: ['All'],
        }),
      );
      if (Messages.length === 0) return found;
      for (const message of Messages) {
        found.push({
          body: message.Body ?? '',
          reason: message.MessageAttributes?.reason?.StringValue,
          eventId: message.MessageAttributes?.eventId?.StringValue,
          endpoint: message.MessageAttributes?.endpoint?.StringValue,
          ordering: message.MessageAttributes?.ordering?.StringValue,
        });
      }
    }
  }

  close(): void {
    this.sqs.destroy();
    this.dynamodb.destroy();
  }
}

/** The worker process named in a lease owner (`<container>:<pid>`, lib/consumer/environment.ts). */
export function ownerPid(owner: string | undefined): number | undefined {
  const match = /:(\d+)$/.exec(owner ?? '');
  return match ? Number(match[1]) : undefined;
}

/**
 * Polls `probe` until it yields a value (anything but undefined or false), or fails after
 * `timeoutMs` naming what it waited for and the last thing it saw.
 */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  options: { timeoutMs: number; intervalMs?: number; describe?: () => Promise<string> | string },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      const seen = options.describe ? `; last seen: ${await options.describe()}` : '';
      throw new Error(`gave up after ${options.timeoutMs} ms waiting for ${what}${seen}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 250));
  }
}
