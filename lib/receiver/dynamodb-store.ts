/**
 * The idempotency store on a DynamoDB table (RECEIVER_TABLE): the uniqueness constraint is a
 * conditional put on the partition key, and DynamoDB's TTL deletes records after the retention.
 */
import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type CreateTableCommandInput,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { positiveSeconds } from './memory-store';
import {
  DEFAULT_LEASE_SECONDS,
  DEFAULT_RETENTION_SECONDS,
  type BeginResult,
  type IdempotencyStore,
  type StoredResponse,
  type StoreOptions,
} from './store';

/**
 * The table the store needs: partition key `webhookId` (string), no sort key, TTL enabled on
 * `expiresAt` (Unix seconds). On-demand billing suits webhook traffic.
 */
export const RECEIVER_TABLE = {
  partitionKey: 'webhookId',
  ttlAttribute: 'expiresAt',
} as const;

/** A CreateTable request for the table; enable TTL on RECEIVER_TABLE.ttlAttribute after it. */
export function receiverTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    AttributeDefinitions: [{ AttributeName: RECEIVER_TABLE.partitionKey, AttributeType: 'S' }],
    KeySchema: [{ AttributeName: RECEIVER_TABLE.partitionKey, KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  };
}

export interface DynamoDbStoreOptions extends StoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
}

/** Attribute names, as stored. */
const A = {
  id: RECEIVER_TABLE.partitionKey,
  expiresAt: RECEIVER_TABLE.ttlAttribute,
  state: 'state',
  owner: 'owner',
  bodyHash: 'bodyHash',
  leaseExpiresAtMs: 'leaseExpiresAtMs',
  status: 'responseStatus',
  body: 'responseBody',
  contentType: 'responseContentType',
} as const;

const NAMES = Object.fromEntries(Object.entries(A).map(([key, name]) => [`#${key}`, name]));

export class DynamoDbIdempotencyStore implements IdempotencyStore {
  readonly retentionSeconds: number;
  readonly leaseSeconds: number;
  private readonly client: DynamoDBClient;
  private readonly tableName: string;

  constructor(options: DynamoDbStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
    this.retentionSeconds = positiveSeconds('retentionSeconds', options.retentionSeconds ?? DEFAULT_RETENTION_SECONDS);
    this.leaseSeconds = positiveSeconds('leaseSeconds', options.leaseSeconds ?? DEFAULT_LEASE_SECONDS);
  }

  async begin(webhookId: string, bodyHash: string, nowMs: number): Promise<BeginResult> {
    const token = randomUUID();
    // A record released between our refused put and our read is gone: try again, a few times.
    for (let tries = 0; tries < 3; tries++) {
      try {
        await this.client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: {
              [A.id]: { S: webhookId },
              [A.state]: { S: 'running' },
              [A.owner]: { S: token },
              [A.bodyHash]: { S: bodyHash },
              [A.leaseExpiresAtMs]: { N: String(nowMs + this.leaseSeconds * 1000) },
              // A running record that is never completed or released still goes in the end.
              [A.expiresAt]: { N: String(unixSeconds(nowMs) + this.retentionSeconds) },
            },
            // Admitted only when no live record holds the ID:
            // - attribute_not_exists: never seen (or deleted by TTL or a release);
            // - expiresAt <= now: past its retention, but TTL has not deleted it yet (TTL is lazy);
            // - running with its lease lapsed: the request that held it died mid-action.
            ConditionExpression:
              'attribute_not_exists(#id) OR #expiresAt <= :nowSeconds OR (#state = :running AND #leaseExpiresAtMs <= :nowMs)',
            ExpressionAttributeNames: pick(NAMES, '#id', '#expiresAt', '#state', '#leaseExpiresAtMs'),
            ExpressionAttributeValues: {
              ':nowSeconds': { N: String(unixSeconds(nowMs)) },
              ':running': { S: 'running' },
              ':nowMs': { N: String(nowMs) },
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { kind: 'started', token };
      } catch (error) {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
        // AWS returns the live record with the refusal; emulators may not, so read it then.
        const item = error.Item ?? (await this.read(webhookId));
        if (item === undefined) continue;
        if (item[A.bodyHash]?.S !== bodyHash) return { kind: 'body-mismatch' };
        if (item[A.state]?.S !== 'done') return { kind: 'in-progress' };
        return { kind: 'completed', response: toResponse(item) };
      }
    }
    // Three puts refused and three reads found nothing: the ID is being taken and released
    // continuously. Tell the sender to come back, as for a running action.
    return { kind: 'in-progress' };
  }

  async complete(webhookId: string, token: string, response: StoredResponse, nowMs: number): Promise<void> {
    const values: Record<string, AttributeValue> = {
      ':done': { S: 'done' },
      ':running': { S: 'running' },
      ':token': { S: token },
      ':status': { N: String(response.status) },
      ':expiresAt': { N: String(unixSeconds(nowMs) + this.retentionSeconds) },
    };
    const sets = ['#state = :done', '#status = :status', '#expiresAt = :expiresAt'];
    // DynamoDB keeps no empty strings in some emulators: an absent body reads back as ''.
    if (response.body !== '') {
      sets.push('#body = :body');
      values[':body'] = { S: response.body };
    }
    if (response.contentType !== undefined) {
      sets.push('#contentType = :contentType');
      values[':contentType'] = { S: response.contentType };
    }
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { [A.id]: { S: webhookId } },
          UpdateExpression: `SET ${sets.join(', ')} REMOVE #leaseExpiresAtMs`,
          // Only the request that began the record completes it: after a lapsed lease another
          // request owns it and stores its own response.
          ConditionExpression: '#state = :running AND #owner = :token',
          ExpressionAttributeNames: pick(
            NAMES,
            '#state',
            '#status',
            '#expiresAt',
            '#leaseExpiresAtMs',
            '#owner',
            ...(response.body !== '' ? ['#body'] : []),
            ...(response.contentType !== undefined ? ['#contentType'] : []),
          ),
          ExpressionAttributeValues: values,
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async release(webhookId: string, token: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteItemCommand({
          TableName: this.tableName,
          Key: { [A.id]: { S: webhookId } },
          // Never delete a record another request has since taken over or completed.
          ConditionExpression: '#state = :running AND #owner = :token',
          ExpressionAttributeNames: pick(NAMES, '#state', '#owner'),
          ExpressionAttributeValues: { ':running': { S: 'running' }, ':token': { S: token } },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  private async read(webhookId: string): Promise<Record<string, AttributeValue> | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: { [A.id]: { S: webhookId } }, ConsistentRead: true }),
    );
    return Item;
  }
}

function toResponse(item: Record<string, AttributeValue>): StoredResponse {
  const contentType = item[A.contentType]?.S;
  return {
    status: Number(item[A.status]?.N),
    body: item[A.body]?.S ?? '',
    ...(contentType !== undefined ? { contentType } : {}),
  };
}

function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function pick(names: Record<string, string>, ...keys: string[]): Record<string, string> {
  return Object.fromEntries(keys.map((key) => [key, names[key]!]));
}
