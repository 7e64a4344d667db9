/**
 * The store calls behind the listing (`listing.ts` says which rows are listed): one shard's index
 * entries after a position, one shard's count, and the page's rows read whole. The index projects
 * keys only, so a query returns each entry's table key and sort position, nothing more.
 */
import { BatchGetItemCommand, QueryCommand, type BatchGetItemCommandOutput, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { keyItem, recordFromItem, type Item } from './dynamodb-item';
import { LEDGER_SCHEMA, WIRE_NAMES } from './dynamodb-schema';
import type { DeliveryKey, DeliveryRecord } from './ledger';

const INDEX = LEDGER_SCHEMA.listingIndex;
/** BatchGetItem's limit. */
const MAX_KEYS_PER_BATCH = 100;

export interface ShardEntry {
  readonly sort: string;
  readonly key: DeliveryKey;
}

export interface ShardQuery {
  readonly shard: string;
  /** The sort position to start after (exclusive), in the listing's order. */
  readonly after: string | undefined;
  readonly newestFirst: boolean;
  readonly limit: number;
}

export async function queryShard(client: DynamoDBClient, tableName: string, query: ShardQuery): Promise<ShardEntry[]> {
  const { shard, after, newestFirst, limit } = query;
  const output = await client.send(
    new QueryCommand({
      TableName: tableName,
      IndexName: INDEX.name,
      KeyConditionExpression: after === undefined ? '#k = :k' : `#k = :k AND #s ${newestFirst ? '<' : '>'} :after`,
      ExpressionAttributeNames: { '#k': INDEX.partitionKey, ...(after === undefined ? {} : { '#s': INDEX.sortKey }) },
      ExpressionAttributeValues: { ':k': { S: shard }, ...(after === undefined ? {} : { ':after': { S: after } }) },
      ScanIndexForward: !newestFirst,
      Limit: limit,
    }),
  );
  return (output.Items ?? []).map((item) => ({
    sort: item[INDEX.sortKey]?.S ?? '',
    key: { eventId: item[WIRE_NAMES.eventId]?.S ?? '', endpoint: item[WIRE_NAMES.endpoint]?.S ?? '' },
  }));
}

/** One shard's entries, counted by the store (`Select: COUNT`), page by page. */
export async function countShard(client: DynamoDBClient, tableName: string, shard: string): Promise<number> {
  let count = 0;
  let startKey: Item | undefined;
  do {
    const output = await client.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: INDEX.name,
        KeyConditionExpression: '#k = :k',
        ExpressionAttributeNames: { '#k': INDEX.partitionKey },
        ExpressionAttributeValues: { ':k': { S: shard } },
        Select: 'COUNT',
        ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
      }),
    );
    count += output.Count ?? 0;
    startKey = output.LastEvaluatedKey;
  } while (startKey !== undefined);
  return count;
}

/** Rows by key, read whole (eventually consistent), unprocessed keys asked again; by `rowId`. */
export async function readRows(client: DynamoDBClient, tableName: string, keys: readonly DeliveryKey[]): Promise<Map<string, DeliveryRecord>> {
  const rows = new Map<string, DeliveryRecord>();
  for (let start = 0; start < keys.length; start += MAX_KEYS_PER_BATCH) {
    let pending: Item[] | undefined = keys.slice(start, start + MAX_KEYS_PER_BATCH).map(keyItem);
    while (pending !== undefined && pending.length > 0) {
      const request: Item[] = pending;
      const output: BatchGetItemCommandOutput = await client.send(new BatchGetItemCommand({ RequestItems: { [tableName]: { Keys: request } } }));
      for (const item of output.Responses?.[tableName] ?? []) {
        const record = recordFromItem(item);
        rows.set(rowId(record), record);
      }
      pending = output.UnprocessedKeys?.[tableName]?.Keys;
    }
  }
  return rows;
}

export function rowId(key: DeliveryKey): string {
  return `${key.eventId} ${key.endpoint}`;
}
