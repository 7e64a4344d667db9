/**
 * What AWS bills, as pure rules: DynamoDB units from the items before and after a write and the
 * table's shape (its key and global secondary indexes, as DescribeTable gives them), SQS requests
 * by payload, Lambda GB-seconds, and the published prices. The meter (meter.ts) supplies the
 * images and payloads.
 *
 * DynamoDB write units (on demand): the table 1 per KB, rounded up, of the larger of the item
 * before and after; a refused conditional write is billed on the item that is there (at least 1)
 * and changes no index. Each global secondary index whose key attributes the item has, before or
 * after: a new entry is a put of the projected item, a changed key a delete and a put, an entry the
 * item leaves a delete, a projected attribute changed under the same key an update on the larger
 * projection; each 1 unit per KB of the projected item (table key, index key, projected
 * attributes). An item without the index key costs that index nothing (a sparse index).
 * Read units: 1 per 4 KB, rounded up, halved when eventually consistent; a read that finds nothing
 * is the smallest read; BatchGetItem bills each item as its own GetItem. TTL deletions are free.
 */
import type { AttributeValue, TableDescription } from '@aws-sdk/client-dynamodb';
import { CONSUMER_MEMORY_MB } from '../../infra/webhook-delivery';
import { itemSizeBytes } from '../../lib/ledger/item-size';

export { itemSizeBytes };
export type Item = Record<string, AttributeValue>;

/** Published on-demand prices for one region on one date: name both wherever a cost is shown. */
export const PRICES = {
  region: 'us-east-1',
  /** DynamoDB's on-demand rates since its November 2024 cut. */
  asOf: '2026-12-02',
  dynamodbPerMillionWriteUnits: 0.625,
  dynamodbPerMillionReadUnits: 0.125,
  /** Standard queues: a request carries up to 10 messages; each 64 KB of payload is one request. */
  sqsPerMillionRequests: 0.4,
  /** arm64, the stack's architecture. */
  lambdaPerGbSecond: 0.0000133334,
  lambdaPerMillionInvocations: 0.2,
} as const;
export type Prices = Omit<typeof PRICES, 'region' | 'asOf'>;

/**
 * DynamoDB provisioned capacity, us-east-1, per unit-hour, as published on
 * https://aws.amazon.com/dynamodb/pricing/provisioned/ (unchanged by the November 2024 cut, which was
 * on-demand's). A unit provisioned is billed every hour whether it is used or not.
 */
export const PROVISIONED_PRICES = {
  source: 'aws.amazon.com/dynamodb/pricing/provisioned/',
  dynamodbPerWriteUnitHour: 0.00065,
  dynamodbPerReadUnitHour: 0.00013,
} as const;

/**
 * Amazon EventBridge, us-east-1, as published on https://aws.amazon.com/eventbridge/pricing/: custom
 * events put on a bus $1.00 per million, API destinations $0.20 per million invocations, each 64 KB
 * of payload one event (one invocation). What a delivery to one HTTP endpoint costs on EventBridge:
 * the event's ingestion and one invocation; a retry is another invocation; rules are not billed apart.
 */
export const EVENTBRIDGE_PRICES = {
  source: 'aws.amazon.com/eventbridge/pricing/',
  customEventsPerMillion: 1.0,
  apiDestinationInvocationsPerMillion: 0.2,
} as const;

/** The consumer's memory as the stack sets it by default: the cost follows the stack. */
export const MEMORY = {
  memoryMb: CONSUMER_MEMORY_MB,
  source: "infra/webhook-delivery.ts, CONSUMER_MEMORY_MB (the consumer's memorySize default)",
} as const;

export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 1024));
}

export function readUnits(bytes: number, consistent: boolean): number {
  const units = Math.max(1, Math.ceil(bytes / 4096));
  return consistent ? units : units / 2;
}

/** One table's part of a BatchGetItem; keys returned unprocessed are not read and cost nothing. */
export function batchGetReadUnits(foundItemBytes: readonly number[], keysRead: number, consistent: boolean): number {
  if (keysRead < foundItemBytes.length) throw new RangeError(`${foundItemBytes.length} items found for ${keysRead} keys read`);
  const found = foundItemBytes.reduce((sum, bytes) => sum + readUnits(bytes, consistent), 0);
  return found + (keysRead - foundItemBytes.length) * readUnits(0, consistent);
}

/** The table's units for one write request; `after` undefined: deleted. */
export function tableWriteUnits(before: Item | undefined, after: Item | undefined, refused: boolean): number {
  const size = (item: Item | undefined) => (item === undefined ? 0 : itemSizeBytes(item));
  return writeUnits(refused ? size(before) : Math.max(size(before), size(after)));
}

/** SQS bills each started 64 KB of a request's payload as one request. */
export function sqsBilledRequests(payloadBytes: number): number {
  return Math.max(1, Math.ceil(payloadBytes / (64 * 1024)));
}

/** A message's size as SQS counts it: the body, and each attribute's name, type and value. */
export function sqsMessageBytes(body: string, attributes: Readonly<Record<string, { type: string; value: string | Uint8Array }>>): number {
  let bytes = Buffer.byteLength(body);
  for (const [name, a] of Object.entries(attributes)) bytes += Buffer.byteLength(name) + Buffer.byteLength(a.type) + Buffer.byteLength(a.value);
  return bytes;
}

/** GB-seconds for invocations of these durations: each rounded up to the millisecond. */
export function lambdaGbSeconds(durationsMs: readonly number[], memoryMb: number): number {
  return (durationsMs.reduce((sum, ms) => sum + Math.ceil(ms), 0) / 1000) * (memoryMb / 1024);
}

/** What one delivered event used, on average. */
export interface UsagePerEvent {
  readonly writeUnits: number;
  readonly readUnits: number;
  readonly sqsRequests: number;
  readonly lambdaGbSeconds: number;
  readonly lambdaInvocations: number;
}

export interface CostPerMillion {
  readonly dynamodb: number;
  readonly sqs: number;
  readonly lambda: number;
  readonly total: number;
}

export function costPerMillionEvents(usage: Partial<UsagePerEvent>, prices: Prices = PRICES): CostPerMillion {
  const u = { writeUnits: 0, readUnits: 0, sqsRequests: 0, lambdaGbSeconds: 0, lambdaInvocations: 0, ...usage };
  const dynamodb = u.writeUnits * prices.dynamodbPerMillionWriteUnits + u.readUnits * prices.dynamodbPerMillionReadUnits;
  const sqs = u.sqsRequests * prices.sqsPerMillionRequests;
  const lambda = u.lambdaGbSeconds * prices.lambdaPerGbSecond * 1_000_000 + u.lambdaInvocations * prices.lambdaPerMillionInvocations;
  return { dynamodb, sqs, lambda, total: dynamodb + sqs + lambda };
}

/** Lambda dollars per million deliveries for `ms` more per batch of `perBatch` deliveries. */
export function lambdaPerMillion(ms: number, perBatch: number, memoryMb: number = MEMORY.memoryMb): number {
  return costPerMillionEvents({ lambdaGbSeconds: lambdaGbSeconds([ms], memoryMb) / perBatch }).lambda;
}

// --- table shapes and index writes --------------------------------------------------------------

export interface KeyShape {
  readonly partitionKey: string;
  readonly sortKey?: string;
}

export interface IndexShape extends KeyShape {
  readonly name: string;
  /** The attributes an entry carries besides the keys: every one (`all`), or those named. */
  readonly projects: 'all' | readonly string[];
}

export interface TableShape extends KeyShape {
  readonly name: string;
  readonly indexes: readonly IndexShape[];
}

/** The shape of a table as DescribeTable reports it. Local secondary indexes are refused. */
export function tableShape(description: TableDescription): TableShape {
  const name = description.TableName ?? '(unnamed)';
  if ((description.LocalSecondaryIndexes ?? []).length > 0) throw new Error(`table ${name}: local secondary indexes are not modelled`);
  return {
    name,
    ...keyShape(description.KeySchema, `table ${name}`),
    indexes: (description.GlobalSecondaryIndexes ?? []).map((index) => {
      const type = index.Projection?.ProjectionType;
      return {
        name: index.IndexName ?? '(unnamed)',
        ...keyShape(index.KeySchema, `index ${index.IndexName}`),
        projects: type === 'ALL' ? 'all' : type === 'INCLUDE' ? [...(index.Projection?.NonKeyAttributes ?? [])] : [],
      };
    }),
  };
}

function keyShape(schema: TableDescription['KeySchema'], what: string): KeyShape {
  const partitionKey = schema?.find((key) => key.KeyType === 'HASH')?.AttributeName;
  if (partitionKey === undefined) throw new Error(`${what} has no partition key`);
  const sortKey = schema?.find((key) => key.KeyType === 'RANGE')?.AttributeName;
  return sortKey === undefined ? { partitionKey } : { partitionKey, sortKey };
}

export type IndexWriteKind = 'put' | 'delete' | 'update';

export interface IndexWrite {
  readonly index: string;
  readonly kind: IndexWriteKind;
  /** The projected item's size (an update: the larger of before and after). */
  readonly bytes: number;
  readonly units: number;
  /** The index partition key's value, as text. */
  readonly partitionKeyValue: string;
}

/** The index writes one successful table write causes. */
export function indexWrites(table: TableShape, before: Item | undefined, after: Item | undefined): IndexWrite[] {
  const writes: IndexWrite[] = [];
  for (const index of table.indexes) {
    const wasIn = before !== undefined && hasKey(before, index);
    const isIn = after !== undefined && hasKey(after, index);
    const entry = (kind: IndexWriteKind, item: Item, bytes = itemSizeBytes(projected(table, index, item))) =>
      writes.push({ index: index.name, kind, bytes, units: writeUnits(bytes), partitionKeyValue: keyText(item[index.partitionKey]) });
    if (wasIn && !isIn) entry('delete', before);
    else if (!wasIn && isIn) entry('put', after);
    else if (wasIn && isIn) {
      if (!sameKey(before, after, index)) {
        entry('delete', before);
        entry('put', after);
      } else {
        const [old, now] = [projected(table, index, before), projected(table, index, after)];
        if (!sameItem(old, now)) entry('update', after, Math.max(itemSizeBytes(old), itemSizeBytes(now)));
      }
    }
  }
  return writes;
}

/** The entry an index holds for this item: the table's key, the index's key, the projection. */
export function projected(table: TableShape, index: IndexShape, item: Item): Item {
  if (index.projects === 'all') return item;
  const names = [table.partitionKey, table.sortKey, index.partitionKey, index.sortKey, ...index.projects];
  return Object.fromEntries(names.flatMap((name) => (name !== undefined && item[name] !== undefined ? [[name, item[name]]] : [])));
}

/** The item's primary key, as the table defines it. */
export function keyOf(table: KeyShape, item: Item): Item {
  const key: Item = {};
  for (const name of [table.partitionKey, table.sortKey]) {
    if (name === undefined) continue;
    const value = item[name];
    if (value === undefined) throw new Error(`item has no key attribute ${name}`);
    key[name] = value;
  }
  return key;
}

function hasKey(item: Item, index: KeyShape): boolean {
  return item[index.partitionKey] !== undefined && (index.sortKey === undefined || item[index.sortKey] !== undefined);
}

function sameKey(a: Item, b: Item, index: KeyShape): boolean {
  return sameValue(a[index.partitionKey], b[index.partitionKey]) && (index.sortKey === undefined || sameValue(a[index.sortKey], b[index.sortKey]));
}

/** A key value as text (`S`, `N` as written, `B` in base64), for counting writes per value. */
export function keyText(value: AttributeValue | undefined): string {
  if (value?.S !== undefined) return value.S;
  if (value?.N !== undefined) return value.N;
  if (value?.B !== undefined) return Buffer.from(value.B).toString('base64');
  return '(none)';
}

function sameItem(a: Item, b: Item): boolean {
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((name) => sameValue(a[name], b[name]));
}

/** Deep equality of two attribute values; a map's member order does not matter. */
function sameValue(a: AttributeValue | undefined, b: AttributeValue | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.M !== undefined || b.M !== undefined) return a.M !== undefined && b.M !== undefined && sameItem(a.M, b.M);
  if (a.L !== undefined || b.L !== undefined) {
    return a.L !== undefined && b.L !== undefined && a.L.length === b.L.length && a.L.every((element, i) => sameValue(element, b.L?.[i]));
  }
  if (a.B !== undefined || b.B !== undefined) return a.B !== undefined && b.B !== undefined && Buffer.from(a.B).equals(Buffer.from(b.B));
  return JSON.stringify(a) === JSON.stringify(b);
}
