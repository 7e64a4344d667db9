/**
 * The endpoint registry's reads on DynamoDB (registry-schema.ts), beside its writes
 * (dynamodb-registry.ts): every item at once (a scan in parallel segments: a consumer's cold start,
 * the command's unpaged list), the change index since a time (what keeps a copy current,
 * registry-copy.ts), named items in batches, and the command's paged listing.
 *
 * Every read takes a removed endpoint's tombstone as absent, and every scan leaves out the rate
 * limit's schedule items (registry-schema.ts `isScheduleKey`). Items are read consistently; the
 * indexes (keys only) are eventually consistent, so what they name is read from the table before it
 * is believed.
 */
import { BatchGetCommand, QueryCommand, ScanCommand, type QueryCommandInput, type QueryCommandOutput } from '@aws-sdk/lib-dynamodb';
import { isTombstone, KEY, type Item, type RegistryTable } from './dynamodb-registry-table';
import type { EndpointRecord } from './endpoint';
import type { HealthRecord } from './health-rules';
import type { ChangeMark, RegistryEntry, RegistryPage, RegistryPageOptions } from './registry';
import { CHANGE_FEED, isScheduleKey, REGISTRY_SCHEMA } from './registry-schema';
import { cursorJson, encodeCursorJson } from '../cursor';
import { EndpointRegistryError } from '../errors';

const A = REGISTRY_SCHEMA.attributes;
/** Keys per BatchGetItem: DynamoDB's most. */
export const BATCH_GET_KEYS = 100;
/** Segments of the scan that reads every item: 100,000 items are not one long sequential walk. */
export const SCAN_SEGMENTS = 8;
/** Pages of the command's listing: at most this many endpoints each. */
export const MAX_PAGE_LIMIT = 100;
/** A page's items read at once by a state-filtered listing (a Query on a state has no index). */
const SCAN_PAGE_ITEMS = 200;

export class RegistryListing {
  constructor(
    private readonly table: RegistryTable,
    private readonly options: { readonly scanPageSize?: number | undefined; readonly segments?: number | undefined } = {},
  ) {}

  /** Every endpoint's item (tombstones and rate schedules left out), in segments read in parallel. @throws EndpointRegistryError (the store) */
  async readAll(): Promise<RegistryEntry[]> {
    return (await this.scanItems()).map((item) => this.#entryOf(item));
  }

  /**
   * Every endpoint's item but tombstones as stored, only `attributes` of each when given (the recovery
   * function reads no endpoint's fields), in segments read in parallel.
   */
  async scanItems(attributes?: readonly string[]): Promise<Item[]> {
    const segments = Math.max(1, this.options.segments ?? SCAN_SEGMENTS);
    const parts = await Promise.all(Array.from({ length: segments }, (_, segment) => this.#scanSegment(segment, segments, attributes)));
    return parts.flat();
  }

  /**
   * The change index's entries after `sinceMs` (exclusive), oldest first: one Query (one page per
   * 1 MB of keys), eventually consistent, so a change may show a moment late.
   */
  async changedSince(sinceMs: number): Promise<ChangeMark[]> {
    const index = REGISTRY_SCHEMA.changeIndex;
    const marks: ChangeMark[] = [];
    let startKey: Item | undefined;
    do {
      const page = await this.#queryIndex(index.name, {
        KeyConditionExpression: '#feed = :feed AND #changedAt > :since',
        ExpressionAttributeNames: { '#feed': index.partitionKey, '#changedAt': index.sortKey },
        ExpressionAttributeValues: { ':feed': CHANGE_FEED, ':since': sinceMs },
        ExclusiveStartKey: startKey,
      });
      for (const item of page.Items ?? []) {
        const name = item[KEY];
        const changedAt = item[A.changedAt];
        if (typeof name === 'string' && typeof changedAt === 'number') marks.push({ name, changedAt });
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return marks;
  }

  /**
   * The named items, read consistently, 100 keys a call (what DynamoDB leaves unprocessed asked
   * again). A name without an item, or with a tombstone, comes back absent. @throws EndpointRegistryError (the store)
   */
  async readNames(names: readonly string[]): Promise<RegistryEntry[]> {
    const unique = [...new Set(names)];
    const found = new Map((await this.readItems(unique)).map((item) => [item[KEY] as string, this.#entryOf(item)]));
    return unique.map((name) => found.get(name) ?? { name, changedAt: 0 });
  }

  /** The named items as stored (tombstones too; a missing one left out), only `attributes` when given, 100 keys a call. */
  async readItems(names: readonly string[], attributes?: readonly string[]): Promise<Item[]> {
    const batches: string[][] = [];
    for (let i = 0; i < names.length; i += BATCH_GET_KEYS) batches.push(names.slice(i, i + BATCH_GET_KEYS));
    return (await Promise.all(batches.map((batch) => this.#batchGet(batch, attributes)))).flat();
  }

  /**
   * A page of endpoints (tombstones and unreadable items left out: `scan` names those), with a
   * cursor while more may follow. By owner: a Query on the owner index in name order, then the
   * page's items read consistently. Without: the table scanned a page at a time (no order).
   * @throws RangeError for a cursor this listing did not issue, or a limit outside 1–100
   */
  async page(options: RegistryPageOptions): Promise<RegistryPage> {
    const limit = options.limit ?? MAX_PAGE_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_LIMIT) throw new RangeError(`limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}`);
    const filter = { owner: options.owner, state: options.state };
    let startKey = options.cursor === undefined ? undefined : decodeRegistryCursor(options.cursor, filter);
    const items: EndpointRecord[] = [];
    // A filtered read may find fewer than `limit` a call: read on until the page is full or the end.
    do {
      const room = limit - items.length;
      const { records, next } = options.owner !== undefined ? await this.#ownerPage(options.owner, room, startKey) : await this.#scanPage(room, startKey);
      items.push(...records.filter((record) => options.state === undefined || record.state === options.state));
      startKey = next;
    } while (items.length < limit && startKey !== undefined);
    return { items, ...(startKey !== undefined ? { next: encodeRegistryCursor(filter, startKey) } : {}) };
  }

  async #ownerPage(owner: string, limit: number, startKey: Item | undefined): Promise<{ records: EndpointRecord[]; next: Item | undefined }> {
    const index = REGISTRY_SCHEMA.ownerIndex;
    const page = await this.#queryIndex(index.name, {
      KeyConditionExpression: '#owner = :owner',
      ExpressionAttributeNames: { '#owner': index.partitionKey },
      ExpressionAttributeValues: { ':owner': owner },
      ExclusiveStartKey: startKey,
      Limit: limit,
    });
    const names = (page.Items ?? []).map((item) => item[KEY] as string);
    const entries = await this.readNames(names);
    // The index is a moment behind the table: an item whose owner changed since is not this owner's.
    const records = entries.flatMap((entry) => (entry.record !== undefined && entry.record.fields.owner === owner ? [entry.record] : []));
    return { records, next: page.LastEvaluatedKey };
  }

  async #scanPage(limit: number, startKey: Item | undefined): Promise<{ records: EndpointRecord[]; next: Item | undefined }> {
    const page = await this.table.guard('list endpoints', () =>
      this.table.client.send(new ScanCommand({ TableName: this.table.name, ConsistentRead: true, ExclusiveStartKey: startKey, Limit: Math.min(limit, SCAN_PAGE_ITEMS) })),
    );
    const records = (page.Items ?? []).flatMap((item) => (isScheduleKey(item[KEY]) ? [] : (this.#entryOf(item).record ?? [])));
    return { records, next: page.LastEvaluatedKey };
  }

  /** One page of a keys-only index (eventually consistent, as every index read is). */
  #queryIndex(indexName: string, input: Omit<QueryCommandInput, 'TableName' | 'IndexName'>): Promise<QueryCommandOutput> {
    return this.table.guard(`read the ${indexName} index`, () => this.table.client.send(new QueryCommand({ ...input, TableName: this.table.name, IndexName: indexName })));
  }

  async #scanSegment(segment: number, segments: number, attributes: readonly string[] | undefined): Promise<Item[]> {
    const items: Item[] = [];
    let startKey: Item | undefined;
    do {
      const page = await this.table.guard('list endpoints', () =>
        this.table.client.send(
          new ScanCommand({
            TableName: this.table.name,
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
            Limit: this.options.scanPageSize,
            ...(segments > 1 ? { Segment: segment, TotalSegments: segments } : {}),
            ...projection(attributes),
          }),
        ),
      );
      for (const item of page.Items ?? []) if (!isTombstone(item) && !isScheduleKey(item[KEY])) items.push(item);
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return items;
  }

  async #batchGet(names: readonly string[], attributes: readonly string[] | undefined): Promise<Item[]> {
    const items: Item[] = [];
    let keys: Item[] = names.map((name) => ({ [KEY]: name }));
    for (let round = 0; keys.length > 0; round += 1) {
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 25 * 2 ** round)));
      const asked = keys;
      const answer = await this.table.guard('read endpoints', () =>
        this.table.client.send(new BatchGetCommand({ RequestItems: { [this.table.name]: { Keys: asked, ConsistentRead: true, ...projection(attributes) } } })),
      );
      items.push(...(answer.Responses?.[this.table.name] ?? []));
      keys = answer.UnprocessedKeys?.[this.table.name]?.Keys ?? [];
    }
    return items;
  }

  /** An item as the copy keeps it: its record, or why it cannot be used; a tombstone as absent. */
  #entryOf(item: Item): RegistryEntry {
    const name = item[KEY] as string;
    const stamped = item[A.changedAt];
    const changedAt = typeof stamped === 'number' ? stamped : 0;
    if (isTombstone(item)) return { name, changedAt };
    try {
      const record: HealthRecord = this.table.recordFrom(item);
      return { name, changedAt, record };
    } catch (error) {
      if (!(error instanceof EndpointRegistryError)) throw error;
      return { name, changedAt, unreadable: error };
    }
  }
}

/** A read of only these attributes (and always the key and what tells a tombstone). */
function projection(attributes: readonly string[] | undefined): { ProjectionExpression?: string; ExpressionAttributeNames?: Record<string, string> } {
  if (attributes === undefined) return {};
  const all = [...new Set([KEY, A.removedAt, A.changedAt, ...attributes])];
  return { ProjectionExpression: all.map((_, i) => `#p${i}`).join(', '), ExpressionAttributeNames: Object.fromEntries(all.map((name, i) => [`#p${i}`, name])) };
}

type PageFilter = Pick<RegistryPageOptions, 'owner' | 'state'>;

function encodeRegistryCursor(filter: PageFilter, after: Item): string {
  return encodeCursorJson({ owner: filter.owner ?? null, state: filter.state ?? null, after });
}

/** @throws RangeError when the cursor is not one a listing with this filter issued. */
function decodeRegistryCursor(cursor: string, filter: PageFilter): Item {
  const p = cursorJson(cursor);
  const after = p?.after as Item | undefined;
  const valid =
    p !== undefined &&
    p.owner === (filter.owner ?? null) &&
    p.state === (filter.state ?? null) &&
    typeof after === 'object' &&
    after !== null &&
    typeof after[KEY] === 'string' &&
    Object.values(after).every((value) => typeof value === 'string');
  if (!valid) throw new RangeError('cursor is not one this listing issued with these --owner and --state filters');
  return after;
}
