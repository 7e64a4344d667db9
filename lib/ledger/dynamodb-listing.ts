/**
 * The ledger's reads on DynamoDB: an event's deliveries, a shipment's (its index), and the listing
 * (`listing.ts` says which rows are listed): one shard's index entries after a position, one shard's
 * count, and the page's rows read whole. Both indexes project keys only, so a query returns each
 * entry's table key and sort position, nothing more.
 */
import { BatchGetItemCommand, QueryCommand, type BatchGetItemCommandOutput, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { keyItem, recordFromItem, type Item } from './dynamodb-item';
import { LEDGER_SCHEMA, WIRE_NAMES } from './dynamodb-schema';
import { ShipmentIndexOffError } from './errors';
import type { DeliveryKey, DeliveryRecord, ListOptions, Page, ShipmentPage, ShipmentPageOptions } from './ledger';
import {
  belongsIn,
  checkListedState,
  comesAfter,
  decodeCursor,
  encodeCursor,
  listingShards,
  rangeAfter,
  windowRange,
  type ListedState,
  type SortRange,
} from './listing';
import { checkLimit, DEFAULT_PAGE_LIMIT, isExpired } from './rows';
import { decodeShipmentCursor, encodeShipmentCursor, isOfShipment, type ShipmentPosition } from './shipment-index';

const INDEX = LEDGER_SCHEMA.listingIndex;
const SHIPMENT_INDEX = LEDGER_SCHEMA.shipmentIndex;
/** BatchGetItem's limit. */
const MAX_KEYS_PER_BATCH = 100;

/** The ledger's table as its reads see it: every store call goes through `guard`, which names its failure. */
export interface ListingStore {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  readonly nowMs: number;
  readonly guard: <T>(subject: string, call: () => Promise<T>) => Promise<T>;
}

/**
 * An event's rows, expired or not: one strongly consistent Query on the partition key, page by page.
 * The sort key is the endpoint, so the rows come in endpoint order; an event has one row per
 * endpoint it was routed to, so this reads a handful of rows, never a scan.
 */
export async function queryDeliveries(client: DynamoDBClient, tableName: string, eventId: string): Promise<DeliveryRecord[]> {
  const records: DeliveryRecord[] = [];
  let startKey: Item | undefined;
  do {
    const output = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: '#id = :id',
        ExpressionAttributeNames: { '#id': WIRE_NAMES.eventId },
        ExpressionAttributeValues: { ':id': { S: eventId } },
        ConsistentRead: true,
        ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
      }),
    );
    for (const item of output.Items ?? []) records.push(recordFromItem(item));
    startKey = output.LastEvaluatedKey;
  } while (startKey !== undefined);
  return records;
}

/**
 * A page of one listing: each shard's next `limit + 1` index entries after the cursor (keys only;
 * within the window and of the endpoint when asked), merged in order, the first `limit` read whole
 * from the table. One more than a page per shard tells exactly whether anything follows. Rows gone,
 * expired or no longer in the listed state (the index is eventually consistent) are left out, so a
 * page may hold fewer.
 */
export async function listPage(store: ListingStore, state: ListedState, options: ListOptions): Promise<Page> {
  const listed = checkListedState(state, options.endpoint);
  const limit = checkLimit(options.limit ?? DEFAULT_PAGE_LIMIT);
  const newestFirst = options.newestFirst === true;
  const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor, listed, newestFirst);
  const window = windowRange(options.sinceMs, options.untilMs);
  // A parked shard holds its endpoint's entries alone; the others are chosen from by endpoint.
  const endpoint = listed === 'parked' ? undefined : options.endpoint;
  const query = (shard: string) =>
    store.guard(`${listed} rows`, () => queryShard(store.client, store.tableName, { shard, after, window, endpoint, newestFirst, limit: limit + 1 }));
  const entries = (await Promise.all(listingShards(listed, options.endpoint).map(query))).flat();
  entries.sort((a, b) => (comesAfter(a.sort, b.sort, newestFirst) ? 1 : -1));
  const page = entries.slice(0, limit);
  const rows = await store.guard('listed rows', () => readRows(store.client, store.tableName, page.map((entry) => entry.key)));
  const records = page
    .map((entry) => rows.get(rowId(entry.key)))
    .filter((record): record is DeliveryRecord => record !== undefined && belongsIn(record, listed) && !isExpired(record, store.nowMs));
  const last = page.at(-1);
  return entries.length > limit && last !== undefined ? { records, cursor: encodeCursor(listed, newestFirst, last.sort) } : { records };
}

/** Each shard's index entries counted by the store (`Select: COUNT`): keys read, no rows. */
export async function countListed(store: ListingStore, state: ListedState, endpoint?: string): Promise<number> {
  const listed = checkListedState(state, endpoint);
  const chosen = listed === 'parked' ? undefined : endpoint;
  const counts = await Promise.all(
    listingShards(listed, endpoint).map((shard) => store.guard(`${listed} rows`, () => countShard(store.client, store.tableName, shard, chosen))),
  );
  return counts.reduce((sum, count) => sum + count, 0);
}

interface ShardEntry {
  readonly sort: string;
  readonly key: DeliveryKey;
}

interface ShardQuery {
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
async function queryShard(client: DynamoDBClient, tableName: string, query: ShardQuery): Promise<ShardEntry[]> {
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
async function countShard(client: DynamoDBClient, tableName: string, shard: string, endpoint?: string): Promise<number> {
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

/**
 * A page of a shipment's deliveries (`Ledger.deliveriesOfShipment`): the shipment index's next
 * `limit + 1` entries, newest admission first, after the cursor's position (keys only), then the
 * first `limit` rows read whole and consistently. One more than a page tells exactly whether
 * anything follows. Rows gone or expired since their entry was read are left out, so a page may
 * hold fewer. A table without the index answers `ShipmentIndexOffError`.
 */
export async function shipmentPage(store: ListingStore, shipmentId: string, options: ShipmentPageOptions): Promise<ShipmentPage> {
  const limit = checkLimit(options.limit ?? DEFAULT_PAGE_LIMIT);
  const after = options.cursor === undefined ? undefined : decodeShipmentCursor(options.cursor, shipmentId);
  const entries = await store.guard("a shipment's deliveries", () => queryShipment(store, shipmentId, after, limit + 1));
  const page = entries.slice(0, limit);
  const rows = await store.guard("a shipment's rows", () => readRows(store.client, store.tableName, page, true));
  const items = page
    .map((entry) => rows.get(rowId(entry)))
    .filter((record): record is DeliveryRecord => record !== undefined && isOfShipment(record, shipmentId) && !isExpired(record, store.nowMs));
  const last = page.at(-1);
  return entries.length > limit && last !== undefined ? { items, next: encodeShipmentCursor(shipmentId, last) } : { items };
}

/** The shipment's next `count` index entries, newest first, after `after` (the query's exclusive start). */
async function queryShipment(store: ListingStore, shipmentId: string, after: ShipmentPosition | undefined, count: number): Promise<ShipmentPosition[]> {
  const positions: ShipmentPosition[] = [];
  let startKey: Item | undefined = after === undefined ? undefined : shipmentEntryKey(shipmentId, after);
  do {
    const output = await store.client
      .send(
        new QueryCommand({
          TableName: store.tableName,
          IndexName: SHIPMENT_INDEX.name,
          KeyConditionExpression: '#s = :s',
          ExpressionAttributeNames: { '#s': SHIPMENT_INDEX.partitionKey },
          ExpressionAttributeValues: { ':s': { S: shipmentId } },
          ScanIndexForward: false,
          Limit: count - positions.length,
          ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
        }),
      )
      .catch((error: unknown) => {
        throw isMissingIndex(error) ? new ShipmentIndexOffError(store.tableName, { cause: error }) : error;
      });
    for (const item of output.Items ?? []) {
      positions.push({
        createdAt: Number(item[SHIPMENT_INDEX.sortKey]?.N),
        eventId: item[WIRE_NAMES.eventId]?.S ?? '',
        endpoint: item[WIRE_NAMES.endpoint]?.S ?? '',
      });
    }
    startKey = output.LastEvaluatedKey;
  } while (startKey !== undefined && positions.length < count);
  return positions;
}

/** An index entry's whole key, as the query's exclusive start: the index's keys and the table's. */
function shipmentEntryKey(shipmentId: string, position: ShipmentPosition): Item {
  return {
    ...keyItem(position),
    [SHIPMENT_INDEX.partitionKey]: { S: shipmentId },
    [SHIPMENT_INDEX.sortKey]: { N: String(position.createdAt) },
  };
}

/** DynamoDB's (and dynalite's) answer to a query of an index the table does not have. */
function isMissingIndex(error: unknown): boolean {
  return error instanceof Error && error.name === 'ValidationException' && /specified index/i.test(error.message);
}

/** Rows by key, read whole (consistently when asked), unprocessed keys asked again; by `rowId`. */
async function readRows(client: DynamoDBClient, tableName: string, keys: readonly DeliveryKey[], consistent = false): Promise<Map<string, DeliveryRecord>> {
  const rows = new Map<string, DeliveryRecord>();
  for (let start = 0; start < keys.length; start += MAX_KEYS_PER_BATCH) {
    let pending: Item[] | undefined = keys.slice(start, start + MAX_KEYS_PER_BATCH).map(keyItem);
    while (pending !== undefined && pending.length > 0) {
      const request: Item[] = pending;
      const output: BatchGetItemCommandOutput = await client.send(
        new BatchGetItemCommand({ RequestItems: { [tableName]: { Keys: request, ...(consistent ? { ConsistentRead: true } : {}) } } }),
      );
      for (const item of output.Responses?.[tableName] ?? []) {
        const record = recordFromItem(item);
        rows.set(rowId(record), record);
      }
      pending = output.UnprocessedKeys?.[tableName]?.Keys;
    }
  }
  return rows;
}

function rowId(key: DeliveryKey): string {
  return `${key.eventId} ${key.endpoint}`;
}
