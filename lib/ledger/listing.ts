/**
 * Which rows are listed, and in what order, for both adapters. A row is listed while it needs an
 * operator's or the recovery sweep's attention, and only then:
 *
 *   dead                                         listed as dead, since it died
 *   pending after a replay, or released          listed as pending, since the replay (or its message's send)
 *   pending and parked                           listed as parked, per endpoint, since its admission (`createdAt`)
 *   pending in its attempts, delivered           not listed: nothing to look at, nothing to pay for
 *
 * A delivery between attempts is not listed: its message waits on the queue, and should SQS's
 * redrive take that message away, it lands on the redrive queue, which recovery drains
 * (lib/recovery.ts). A replayed or released row has a message handoff sent, not the producer: the
 * listing is how recovery finds the row should that send have failed.
 *
 * A parked row leaves the pending listing (its entry moves), and `unpark` moves it back.
 * The order is the time the row entered its listing, then its key: `listingSort` spells that as one
 * string, so that a page can end anywhere, ties included, and the next start exactly after it.
 */
import { LISTING_SHARDS } from './dynamodb-schema';
import type { DeliveryKey, DeliveryRecord } from './ledger';
import { cursorJson, encodeCursorJson } from '../cursor';

export const LISTED_STATES = ['pending', 'dead', 'parked'] as const;
export type ListedState = (typeof LISTED_STATES)[number];

/** Where a row stands in a listing. */
export interface Listing {
  readonly state: ListedState;
  readonly sort: string;
}

/** `1796206560000 default evt_1`: 13-digit epoch ms, then the key (IDs and endpoints hold no space). */
export function listingSort(sinceMs: number, key: DeliveryKey): string {
  return `${String(sinceMs).padStart(13, '0')} ${key.endpoint} ${key.eventId}`;
}

/**
 * The index partition a row is listed under: the state's letter and the row's shard, a hash of its
 * key modulo LISTING_SHARDS (FNV-1a: cheap, and spreads similar IDs); for a parked row, then `:`
 * and its endpoint (`k07:carrier-acme`), so one endpoint's parked rows are read without any other's.
 */
export function listingKey(state: ListedState, key: DeliveryKey, shards = LISTING_SHARDS): string {
  return shardKey(state, shardOf(key, shards), key.endpoint);
}

/** One shard's partition (`d07`, `p12`, `k07:carrier-acme`); `endpoint` is used for parked rows only. */
export function shardKey(state: ListedState, shard: number, endpoint?: string): string {
  const nn = String(shard).padStart(2, '0');
  switch (state) {
    case 'dead':
      return `d${nn}`;
    case 'pending':
      return `p${nn}`;
    case 'parked':
      return `k${nn}:${endpoint ?? ''}`;
  }
}

/** Every partition a listing reads: the state's LISTING_SHARDS shards, of the endpoint for `parked`. */
export function listingShards(state: ListedState, endpoint: string | undefined, shards = LISTING_SHARDS): string[] {
  return Array.from({ length: shards }, (_, shard) => shardKey(state, shard, endpoint));
}

export function shardOf(key: DeliveryKey, shards = LISTING_SHARDS): number {
  let hash = 0x811c9dc5;
  const text = `${key.eventId} ${key.endpoint}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

/**
 * Whether a row read back from a listing of `state` still belongs in it (an index entry may lag
 * its row): dead; pending and not parked; pending and parked.
 */
export function belongsIn(record: Pick<DeliveryRecord, 'state' | 'parkedAt'>, state: ListedState): boolean {
  switch (state) {
    case 'dead':
      return record.state === 'dead';
    case 'pending':
      return record.state === 'pending' && record.parkedAt === undefined;
    case 'parked':
      return record.state === 'pending' && record.parkedAt !== undefined;
  }
}

/**
 * Whether `state` can be listed (`delivered` rows never are), and read as asked: parked rows are
 * listed per endpoint only, so `parked` needs `endpoint`.
 */
export function checkListedState(state: string, endpoint?: string): ListedState {
  if (!(LISTED_STATES as readonly string[]).includes(state)) {
    throw new RangeError(`only ${LISTED_STATES.join(', ')} rows are listed, not ${state}`);
  }
  if (state === 'parked' && (endpoint === undefined || endpoint === '')) {
    throw new RangeError('endpoint is required for parked rows: they are listed and counted per endpoint');
  }
  return state as ListedState;
}

/** The cursor: the listing, order and sort position of a page's last row. Opaque to callers. */
export function encodeCursor(state: ListedState, newestFirst: boolean, after: string): string {
  return encodeCursorJson({ state, newestFirst, after });
}

/** @throws RangeError when the cursor is not one a listing of `state` rows in this order issued. */
export function decodeCursor(cursor: string, state: ListedState, newestFirst: boolean): string {
  const p = cursorJson(cursor);
  if (p === undefined || p.state !== state || p.newestFirst !== newestFirst || typeof p.after !== 'string') {
    throw new RangeError(`cursor is not one this ledger issued for ${state} rows in this order`);
  }
  return p.after;
}

/**
 * A listing's range of sort positions, both ends inclusive: rows that entered the listing in
 * [sinceMs, untilMs) (for dead rows, the time they died; for parked rows, their admission). A position is 13 digits of epoch ms, a
 * space and the key, whose characters all sort above the space and below `~`: so every position
 * of a millisecond lies between its digits and its digits followed by `~`.
 */
export interface SortRange {
  readonly from?: string;
  readonly to?: string;
}

/** @throws RangeError for a bound that is not a whole epoch ms, or an empty window. */
export function windowRange(sinceMs: number | undefined, untilMs: number | undefined): SortRange {
  for (const [name, value] of [
    ['sinceMs', sinceMs],
    ['untilMs', untilMs],
  ] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value >= 0 && value < 1e13)) {
      throw new RangeError(`${name} must be a whole epoch ms from 0 to 13 digits, not ${value}`);
    }
  }
  if (sinceMs !== undefined && untilMs !== undefined && untilMs <= sinceMs) {
    throw new RangeError(`untilMs (${untilMs}) must come after sinceMs (${sinceMs})`);
  }
  return {
    ...(sinceMs === undefined ? {} : { from: String(sinceMs).padStart(13, '0') }),
    ...(untilMs === undefined ? {} : { to: `${String(untilMs - 1).padStart(13, '0')}~` }),
  };
}

/**
 * The range left to read: the window, narrowed by the cursor's position. The position itself is
 * included (ranges are inclusive), so the reader drops the one entry at it (`isPast`).
 */
export function rangeAfter(window: SortRange, after: string | undefined, newestFirst: boolean): SortRange {
  if (after === undefined) return window;
  if (newestFirst) return { ...window, to: window.to === undefined || after < window.to ? after : window.to };
  return { ...window, from: window.from === undefined || after > window.from ? after : window.from };
}

/** Whether a sort position lies in the range and past the cursor's position (if any). */
export function inRange(sort: string, range: SortRange, after: string | undefined, newestFirst: boolean): boolean {
  if (range.from !== undefined && sort < range.from) return false;
  if (range.to !== undefined && sort > range.to) return false;
  return after === undefined || comesAfter(sort, after, newestFirst);
}

/** Whether sort position `a` comes after `b` in the listing's order. */
export function comesAfter(a: string, b: string, newestFirst: boolean): boolean {
  return newestFirst ? a < b : a > b;
}
