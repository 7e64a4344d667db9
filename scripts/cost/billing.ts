/**
 * What DynamoDB bills for one write or read, from the items before and after it and the table's
 * shape (its key and its global secondary indexes, as DescribeTable gives them). Pure: the
 * metering proxy supplies the images.
 *
 * Write units (on-demand "write request units"):
 * - The table: 1 per KB (1,024 bytes), rounded up, of the larger of the item before and after.
 *   A refused conditional write is billed too, on the size of the item that is there (at least
 *   1). A write that is refused changes no index.
 * - Each global secondary index whose key attributes (all of them) the item has, before or
 *   after: a new entry is a put of the projected item; an entry whose key changes is a delete and
 *   a put; an entry the item leaves (a key attribute removed, or the item deleted) is a delete; an
 *   entry whose key stays while a projected attribute changes is an update, billed on the larger
 *   projection. Each is 1 unit per KB of the projected item, rounded up. An item without the key
 *   attributes costs that index nothing (a sparse index).
 * - The projected item: the table's key, the index's key, and the projected attributes (ALL: the
 *   whole item; KEYS_ONLY: nothing more; INCLUDE: the attributes named).
 *
 * Read units: 1 per 4 KB read, rounded up, halved for an eventually consistent read; a read that
 * finds nothing is billed as the smallest read; BatchGetItem bills each item as its own GetItem.
 * Time-to-live deletions are free.
 */
import type { AttributeValue, TableDescription } from '@aws-sdk/client-dynamodb';
import { itemSizeBytes, type Item } from './item-size';

export const WRITE_UNIT_BYTES = 1024;
export const READ_UNIT_BYTES = 4096;

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
  if ((description.LocalSecondaryIndexes ?? []).length > 0) {
    throw new Error(`table ${name}: local secondary indexes are not modelled`);
  }
  return {
    name,
    ...keyShape(description.KeySchema, `table ${name}`),
    indexes: (description.GlobalSecondaryIndexes ?? []).map((index) => {
      const indexName = index.IndexName ?? '(unnamed)';
      const projection = index.Projection ?? {};
      return {
        name: indexName,
        ...keyShape(index.KeySchema, `index ${indexName}`),
        projects:
          projection.ProjectionType === 'ALL'
            ? 'all'
            : projection.ProjectionType === 'INCLUDE'
              ? [...(projection.NonKeyAttributes ?? [])]
              : [],
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

/** Write units for an item (or projected item) of this many bytes: at least 1. */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / WRITE_UNIT_BYTES));
}

/** Read units for this many bytes read: at least the smallest read. */
export function readUnits(bytes: number, consistent: boolean): number {
  const units = Math.max(1, Math.ceil(bytes / READ_UNIT_BYTES));
  return consistent ? units : units / 2;
}

/**
 * Read units for one table's part of a BatchGetItem: each item is read (and billed) as a GetItem
 * would be, on its own size rounded up to 4 KB; a key that finds nothing is billed as the smallest
 * read; keys returned unprocessed are not read and cost nothing.
 */
export function batchGetReadUnits(foundItemBytes: readonly number[], keysRead: number, consistent: boolean): number {
  if (keysRead < foundItemBytes.length) throw new RangeError(`${foundItemBytes.length} items found for ${keysRead} keys read`);
  const found = foundItemBytes.reduce((sum, bytes) => sum + readUnits(bytes, consistent), 0);
  return found + (keysRead - foundItemBytes.length) * readUnits(0, consistent);
}

/** The table's units for one write request. `after` is what the item became (undefined: deleted). */
export function tableWriteUnits(before: Item | undefined, after: Item | undefined, refused: boolean): number {
  const size = (item: Item | undefined) => (item === undefined ? 0 : itemSizeBytes(item));
  if (refused) return writeUnits(size(before));
  return writeUnits(Math.max(size(before), size(after)));
}

export type IndexWriteKind = 'put' | 'delete' | 'update';

export interface IndexWrite {
  readonly index: string;
  readonly kind: IndexWriteKind;
  /** The projected item's size (for an update, the larger of before and after). */
  readonly bytes: number;
  readonly units: number;
  /** The index partition key's value this entry is written under, as text. */
  readonly partitionKeyValue: string;
}

/** The index writes one successful table write causes. */
export function indexWrites(table: TableShape, before: Item | undefined, after: Item | undefined): IndexWrite[] {
  const writes: IndexWrite[] = [];
  for (const index of table.indexes) {
    const wasIn = before !== undefined && hasKey(before, index);
    const isIn = after !== undefined && hasKey(after, index);
    const entry = (kind: IndexWriteKind, item: Item, bytes = itemSizeBytes(projected(table, index, item))) =>
      writes.push({
        index: index.name,
        kind,
        bytes,
        units: writeUnits(bytes),
        partitionKeyValue: keyText(item[index.partitionKey]),
      });
    if (wasIn && !isIn) entry('delete', before);
    else if (!wasIn && isIn) entry('put', after);
    else if (wasIn && isIn) {
      if (!sameKey(before, after, index)) {
        entry('delete', before);
        entry('put', after);
      } else {
        const old = projected(table, index, before);
        const now = projected(table, index, after);
        if (!sameItem(old, now)) entry('update', after, Math.max(itemSizeBytes(old), itemSizeBytes(now)));
      }
    }
  }
  return writes;
}

/** The entry an index holds for this item: the table's key, the index's key, the projection. */
export function projected(table: TableShape, index: IndexShape, item: Item): Item {
  if (index.projects === 'all') return item;
  const names = new Set([
    table.partitionKey,
    ...(table.sortKey === undefined ? [] : [table.sortKey]),
    index.partitionKey,
    ...(index.sortKey === undefined ? [] : [index.sortKey]),
    ...index.projects,
  ]);
  const entry: Item = {};
  for (const name of names) {
    const value = item[name];
    if (value !== undefined) entry[name] = value;
  }
  return entry;
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
  return (
    sameValue(a[index.partitionKey], b[index.partitionKey]) &&
    (index.sortKey === undefined || sameValue(a[index.sortKey], b[index.sortKey]))
  );
}

/** A key value as text (`S`, `N` as written, `B` in base64), for counting writes per value. */
export function keyText(value: AttributeValue | undefined): string {
  if (value?.S !== undefined) return value.S;
  if (value?.N !== undefined) return value.N;
  if (value?.B !== undefined) return Buffer.from(value.B).toString('base64');
  return '(none)';
}

export function sameItem(a: Item, b: Item): boolean {
  const names = Object.keys(a);
  return names.length === Object.keys(b).length && names.every((name) => sameValue(a[name], b[name]));
}

/** Deep equality of two attribute values; a map's member order does not matter. */
export function sameValue(a: AttributeValue | undefined, b: AttributeValue | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.M !== undefined || b.M !== undefined) return a.M !== undefined && b.M !== undefined && sameItem(a.M, b.M);
  if (a.L !== undefined || b.L !== undefined) {
    return (
      a.L !== undefined && b.L !== undefined && a.L.length === b.L.length && a.L.every((element, i) => sameValue(element, b.L?.[i]))
    );
  }
  if (a.B !== undefined || b.B !== undefined) {
    return a.B !== undefined && b.B !== undefined && Buffer.from(a.B).equals(Buffer.from(b.B));
  }
  return JSON.stringify(a) === JSON.stringify(b);
}
