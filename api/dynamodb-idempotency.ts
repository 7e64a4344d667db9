/**
 * `Idempotency-Key` answers (api/idempotency.ts) on the ledger table: one item per key, partition
 * `api-idempotency#<storedKey>`, sort key `-`, expiring through the table's TTL attribute (`x`,
 * epoch seconds). No ledger read can meet such an item: an event ID never holds `#`
 * (lib/event.ts), the item has neither listing nor shipment index keys (both indexes are sparse),
 * and nothing scans the ledger table. DynamoDB's TTL deletes late (up to days), so every condition
 * compares `x` with the time itself rather than trusting an item's absence.
 *
 * Requests: claim is one PutItem (a refusal returns the holder: ALL_OLD, or one consistent GetItem
 * where the store does not), complete one UpdateItem, release one DeleteItem; all conditional.
 */
import { ConditionalCheckFailedException, DeleteItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, type Item } from '../lib/dynamodb/conditional-write';
import { LEDGER_SCHEMA } from '../lib/ledger/dynamodb-schema';
import { heldClaim, IDEMPOTENCY_CLAIM_MS, IDEMPOTENCY_PARTITION_PREFIX, IDEMPOTENCY_TTL_MS, keptBody, type IdempotencyClaim, type IdempotencyStore, type StoredAnswer } from './idempotency';

const SORT_KEY_VALUE = '-';
/** Attribute names on the wire: the fingerprint, the answer's status and body (JSON), the expiry. */
const FINGERPRINT = 'f';
const STATUS = 'st';
const BODY = 'bd';
const EXPIRES = LEDGER_SCHEMA.ttlAttribute;

export class IdempotencyStoreUnavailableError extends Error {
  override readonly name = 'IdempotencyStoreUnavailableError';
  readonly code = 'idempotency-store-unavailable';
}

export class DynamoDbIdempotencyStore implements IdempotencyStore {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;

  constructor(options: { readonly client: DynamoDBDocumentClient | DynamoDBClient; readonly tableName: string }) {
    // A document client is a DynamoDB client with the same configuration; these requests are written in attribute values.
    this.#client = options.client as DynamoDBClient;
    this.#tableName = options.tableName;
  }

  async claim(key: string, fingerprint: string, nowMs: number): Promise<IdempotencyClaim> {
    const result = await conditionalWrite(
      this.#client,
      {
        put: {
          TableName: this.#tableName,
          Item: { ...this.#key(key), [FINGERPRINT]: { S: fingerprint }, [EXPIRES]: { N: String(expirySeconds(nowMs + IDEMPOTENCY_CLAIM_MS)) } },
          // A key never used, or one whose claim or answer is over (TTL may not have deleted it yet).
          ConditionExpression: 'attribute_not_exists(#pk) OR #x <= :now',
          ExpressionAttributeNames: { '#pk': LEDGER_SCHEMA.partitionKey, '#x': EXPIRES },
          ExpressionAttributeValues: { ':now': { N: String(Math.floor(nowMs / 1000)) } },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      { unavailable: this.#unavailable, decode: decodeHeld, read: { TableName: this.#tableName, Key: this.#key(key), ConsistentRead: true } },
    );
    if (result.written) return { kind: 'claimed' };
    // Refused, and gone before the read (released or expired meanwhile): the caller may try again.
    if (result.current === undefined) return { kind: 'in-progress' };
    return heldClaim(result.current, fingerprint);
  }

  async complete(key: string, fingerprint: string, answer: StoredAnswer, nowMs: number): Promise<void> {
    const body = keptBody(answer);
    const result = await conditionalWrite(
      this.#client,
      {
        update: {
          TableName: this.#tableName,
          Key: this.#key(key),
          UpdateExpression: `SET #st = :st, #x = :x${body === undefined ? '' : ', #bd = :bd'}`,
          // Only the claim this request holds: the same request's, not yet answered.
          ConditionExpression: '#f = :f AND attribute_not_exists(#st)',
          ExpressionAttributeNames: { '#st': STATUS, '#x': EXPIRES, '#f': FINGERPRINT, ...(body === undefined ? {} : { '#bd': BODY }) },
          ExpressionAttributeValues: {
            ':st': { N: String(answer.status) },
            ':x': { N: String(expirySeconds(nowMs + IDEMPOTENCY_TTL_MS)) },
            ':f': { S: fingerprint },
            ...(body === undefined ? {} : { ':bd': { S: body } }),
          },
        },
      },
      { unavailable: this.#unavailable, decode: decodeHeld },
    );
    // Refused: the claim was lost (it outlived IDEMPOTENCY_CLAIM_MS and another request took the key).
    // The use case is done and this request still gets its answer; the other request's stands.
    void result;
  }

  async release(key: string): Promise<void> {
    try {
      await this.#client.send(
        new DeleteItemCommand({
          TableName: this.#tableName,
          Key: this.#key(key),
          // Only a claim still running: an answer kept is never forgotten.
          ConditionExpression: 'attribute_exists(#pk) AND attribute_not_exists(#st)',
          ExpressionAttributeNames: { '#pk': LEDGER_SCHEMA.partitionKey, '#st': STATUS },
        }),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return;
      throw this.#unavailable(error);
    }
  }

  #key(key: string): Record<string, AttributeValue> {
    return { [LEDGER_SCHEMA.partitionKey]: { S: `${IDEMPOTENCY_PARTITION_PREFIX}${key}` }, [LEDGER_SCHEMA.sortKey]: { S: SORT_KEY_VALUE } };
  }

  readonly #unavailable = (error: unknown): Error =>
    new IdempotencyStoreUnavailableError(`the Idempotency-Key store (${this.#tableName}) failed: ${error instanceof Error ? error.name : 'error'}`, { cause: error });
}

function expirySeconds(ms: number): number {
  return Math.ceil(ms / 1000);
}

function decodeHeld(item: Item): { fingerprint: string; status?: number; body?: string } {
  const status = item[STATUS]?.N;
  const body = item[BODY]?.S;
  return { fingerprint: item[FINGERPRINT]?.S ?? '', ...(status === undefined ? {} : { status: Number(status) }), ...(body === undefined ? {} : { body }) };
}
