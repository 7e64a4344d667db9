/**
 * The store calls behind the listing (`listing.ts` says which rows are listed): one shard's index
 * entries after a position, one shard's count, and the page's rows read whole. The index projects
 * keys only, so a query returns each entry's table key and sort position, nothing more.
 */
import { BatchGetItemCommand, QueryCommand, type BatchGetItemCommandOutput, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { keyItem, recordFromItem, type Item } from './dynamodb-item';
import { LEDGER_SCHEMA, WIRE_NAMES } from './dynamodb-schema';
import type { DeliveryKey, DeliveryRecord } from './ledger';
import { rangeAfter, type SortRange } from './listing';

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
  /** The listing times asked for (`windowRange`); the whole listing when empty. */
  readonly window?: SortRange;
  /** Only entries of this endpoint's rows (the index holds each row's key). */
  readonly endpoint?: string;
  readonly newestFirst: boolean;
  readonly limit: number;
}

/** Entries examined per request at most when a filter may leave most of them out. */
const MAX_EXAMINED_PER_REQUEST = 1000;

/**
 * A shard's next `limit` entries in the listing's order, past `after`, within the window and of
 * the endpoint. The window and the position are the key condition (one range of the sort key:
 * inclusive, so the entry at `after` itself is dropped here). The endpoint is chosen here from the
 * entries' table key (every entry carries it: KEYS_ONLY projects the table's keys), so a request
 * may yield fewer than it read: then the next one reads more, up to MAX_EXAMINED_PER_REQUEST. (A
 * FilterExpression would cost the same reads; choosing here keeps the query to what every
 * DynamoDB implementation answers alike.)
 */
export async function queryShard(client: DynamoDBClient, tableName: string, query: ShardQuery): Promise<ShardEntry[]> {
  const { shard, after, newestFirst, limit, endpoint } = query;
  const range = rangeAfter(query.window ?? {}, after, newestFirst);
  const names: Record<string, string> = { '#k': INDEX.partitionKey };
  const values: Item = { ':k': { S: shard } };
  let condition = '#k = :k';
  if (range.from !== undefined || range.to !== undefined) names['#s'] = INDEX.sortKey;
  if (range.from !== undefined && range.to !== undefined) {
    // An empty range (a cursor past the window's end) reads nothing.
    if (range.from > range.to) return [];
    condition += ' AND #s BETWEEN :from AND :to';
    values[':from'] = { S: range.from };
    values[':to'] = { S: range.to };
  } else if (range.from !== undefined) {
    condition += ' AND #s >= :from';
    values[':from'] = { S: range.from };
  } else if (range.to !== undefined) {
    condition += ' AND #s <= :to';
    values[':to'] = { S: range.to };
  }

  const entries: ShardEntry[] = [];
  let startKey: Item | undefined;
  let examine = limit + 1;
  do {
    const output = await client.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: INDEX.name,
        KeyConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        ScanIndexForward: !newestFirst,
        Limit: examine,
        ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
      }),
    );
    for (const item of output.Items ?? []) {
      const sort = item[INDEX.sortKey]?.S ?? '';
      const key = { eventId: item[WIRE_NAMES.eventId]?.S ?? '', endpoint: item[WIRE_NAMES.endpoint]?.S ?? '' };
      if (sort === after || (endpoint !== undefined && key.endpoint !== endpoint)) continue;
      entries.push({ sort, key });
    }
    startKey = output.LastEvaluatedKey;
    examine = Math.min(examine * 4, MAX_EXAMINED_PER_REQUEST);
  } while (startKey !== undefined && entries.length < limit);
  return entries.slice(0, limit);
}

/**
 * One shard's entries, counted by the store (`Select: COUNT`), page by page; only those of
 * `endpoint` when given, chosen from the entries' table keys as `queryShard` chooses them (the
 * same reads: a count is billed by the entries it examines).
 */
export async function countShard(client: DynamoDBClient, tableName: string, shard: string, endpoint?: string): Promise<number> {
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
        ...(endpoint === undefined ? { Select: 'COUNT' } : {}),
        ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
      }),
    );
    count += endpoint === undefined ? (output.Count ?? 0) : (output.Items ?? []).filter((item) => item[WIRE_NAMES.endpoint]?.S === endpoint).length;
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
