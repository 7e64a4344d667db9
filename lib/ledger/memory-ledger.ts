/**
 * The ledger in a Map: the same semantics as `DynamoDbLedger`, for unit tests of pure logic.
 * `test/helpers/ledger-contract.ts` holds both adapters to one behaviour. Each write checks the
 * predicates of `guards.ts` and applies the changes of `transitions.ts`, the ones the DynamoDB
 * adapter compiles into its conditions and expressions; rows read as its items do (`readRecord`).
 *
 * Rows are deep-copied in and out, so a caller can never change a stored row by mutating what it
 * passed or got back (as with a real store).
 */
import { ClaimRefusedError, LeaseLostError, RecordMissingError, ReleaseRefusedError, ReplayRefusedError, ShipmentIndexOffError } from './errors';
import { claimRefusal, MAY_MARK_EXHAUSTED, MAY_RELIST, MAY_UNLIST, MAY_UNPARK, mayRecord, parkRefusal, releaseRefusal, replayRefusal } from './guards';
import type {
  ClaimedRecord,
  ClaimInput,
  DeliveryKey,
  DeliveryRecord,
  Ledger,
  ListOptions,
  Page,
  ParkInput,
  RecordAttemptInput,
  ReleaseInput,
  ReplayInput,
  ShipmentPage,
  ShipmentPageOptions,
} from './ledger';
import {
  belongsIn,
  checkListedState,
  comesAfter,
  decodeCursor,
  encodeCursor,
  inRange,
  windowRange,
  type ListedState,
} from './listing';
import { auditEntry, checkLimit, DEFAULT_PAGE_LIMIT, holdsNoEvent, isExpired, newToken, readRecord } from './rows';
import { decodeShipmentCursor, encodeShipmentCursor, inShipmentOrder, newerInShipment, type ShipmentPosition } from './shipment-index';
import {
  admitInvalidChanges,
  applyChanges,
  claimChanges,
  markExhaustedChanges,
  newRow,
  admitChanges,
  parkChanges,
  recordChanges,
  releaseChanges,
  replayChanges,
  relistChanges,
  unlistChanges,
  unparkChanges,
  type ChangeableRow,
} from './transitions';
import type { RetryPolicy } from '../policy';

/** A stored row, changed in place by the transitions, with its place in a listing if it has one. */
type Row = ChangeableRow;

export interface MemoryLedgerOptions {
  /** Epoch ms, for deciding which rows have expired on reads. Defaults to the system clock. */
  readonly now?: () => number;
  /** Whether rows are created in the shipment index (docs/contract.md §5). Default true. */
  readonly shipmentIndex?: boolean;
}

export class MemoryLedger implements Ledger {
  readonly #rows = new Map<string, Row>();
  readonly #now: () => number;
  readonly #shipmentIndex: boolean;

  constructor(options: MemoryLedgerOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#shipmentIndex = options.shipmentIndex ?? true;
  }

  async claim(input: ClaimInput): Promise<ClaimedRecord> {
    const { event, nowMs } = input;
    const key = { eventId: event.event.id, endpoint: input.endpoint };
    // A new event; or the first valid one with the ID of an invalid message, whose row holds no
    // event and is taken over (the invalid message stays in its audit); or a claim of a pending row.
    const stored = this.#rows.get(rowKey(key));
    // A Map has no lost answers to retry, so no claim here meets its own token (`isThisClaim`).
    if (stored !== undefined && !holdsNoEvent(stored)) {
      const record = toRecord(stored);
      const refusal = claimRefusal(record, { contentHash: event.contentHash, nowMs });
      if (refusal !== undefined) throw new ClaimRefusedError(record, refusal);
    }
    const row = stored ?? newRow(key);
    applyChanges(row, key, claimChanges(input, newToken(), this.#shipmentIndex));
    this.#rows.set(rowKey(key), row);
    return toRecord(row) as ClaimedRecord;
  }

  async recordAttempt(input: RecordAttemptInput): Promise<void> {
    const row = this.#rows.get(rowKey(input));
    if (row === undefined) throw new RecordMissingError(input.eventId);
    const record = toRecord(row);
    // Delivered twice is one delivery: the first write stands.
    if (input.next.state === 'delivered' && record.state === 'delivered') return;
    if (!mayRecord(record, { claimToken: input.claimToken, delivered: input.next.state === 'delivered' })) {
      throw new LeaseLostError(record);
    }
    applyChanges(row, input, recordChanges(input));
  }

  async markExhausted(key: DeliveryKey, nowMs: number, body: string): Promise<DeliveryRecord> {
    const row = this.#rows.get(rowKey(key));
    if (row === undefined) throw new RecordMissingError(key.eventId);
    if (!MAY_MARK_EXHAUSTED.holds(toRecord(row), { nowMs })) throw new LeaseLostError(toRecord(row));
    applyChanges(row, key, markExhaustedChanges(nowMs, body));
    return toRecord(row);
  }

  async admitInvalid(
    key: DeliveryKey,
    detail: string,
    policy: RetryPolicy,
    nowMs: number,
    retentionSeconds: number,
  ): Promise<boolean> {
    if (this.#rows.has(rowKey(key))) return false;
    const row: Row = newRow(key);
    applyChanges(row, key, admitInvalidChanges(detail, policy, nowMs, retentionSeconds));
    this.#rows.set(rowKey(key), row);
    return true;
  }

  async replay(input: ReplayInput): Promise<DeliveryRecord> {
    const { eventId } = input;
    const row = this.#rows.get(rowKey(input));
    if (row === undefined) throw new ReplayRefusedError('not-found', eventId);
    // A Map has no lost answers to retry, so no replay here meets its own ID (`isThisReplay`).
    const refusal = replayRefusal(toRecord(row));
    if (refusal !== undefined) throw new ReplayRefusedError(refusal, eventId, toRecord(row));
    applyChanges(row, input, replayChanges(input, auditEntry(input, newToken())));
    return toRecord(row);
  }

  async release(input: ReleaseInput): Promise<DeliveryRecord> {
    const { eventId, endpoint } = input;
    const row = this.#rows.get(rowKey(input));
    if (row === undefined) throw new ReleaseRefusedError('not-found', eventId, endpoint);
    // A Map has no lost answers to retry, so no release here meets its own ID (`isThisRelease`).
    const refusal = releaseRefusal(toRecord(row));
    if (refusal !== undefined) throw new ReleaseRefusedError(refusal, eventId, endpoint, toRecord(row));
    applyChanges(row, input, releaseChanges(input, auditEntry(input, newToken(), 'release')));
    return toRecord(row);
  }

  async park(input: ParkInput): Promise<DeliveryRecord> {
    const { event, nowMs } = input;
    const key = { eventId: event.event.id, endpoint: input.endpoint };
    const stored = this.#rows.get(rowKey(key));
    // A new event, or an invalid message's row taken over: created parked. Else the row as it is.
    const existing = stored === undefined || holdsNoEvent(stored) ? undefined : toRecord(stored);
    if (existing !== undefined) {
      const refusal = parkRefusal(existing, { contentHash: event.contentHash, nowMs });
      if (refusal === 'parked') return existing;
      if (refusal !== undefined) throw new ClaimRefusedError(existing, refusal);
    }
    const row = stored ?? newRow(key);
    applyChanges(row, key, parkChanges(input, existing, this.#shipmentIndex));
    this.#rows.set(rowKey(key), row);
    return toRecord(row);
  }

  async admit(input: ParkInput): Promise<DeliveryRecord> {
    const key = { eventId: input.event.event.id, endpoint: input.endpoint };
    const stored = this.#rows.get(rowKey(key));
    if (stored !== undefined && !holdsNoEvent(stored)) return toRecord(stored);
    const row = stored ?? newRow(key);
    applyChanges(row, key, admitChanges(input, this.#shipmentIndex));
    this.#rows.set(rowKey(key), row);
    return toRecord(row);
  }

  async relist(key: DeliveryKey, sinceMs: number): Promise<boolean> {
    const row = this.#rows.get(rowKey(key));
    if (row === undefined || !MAY_RELIST.holds(toRecord(row), undefined)) return false;
    applyChanges(row, key, relistChanges(sinceMs));
    return true;
  }

  async unlist(key: DeliveryKey): Promise<boolean> {
    const row = this.#rows.get(rowKey(key));
    if (row === undefined || !MAY_UNLIST.holds(toRecord(row), undefined)) return false;
    applyChanges(row, key, unlistChanges());
    return true;
  }

  async unpark(key: DeliveryKey, nowMs: number, listedSinceMs: number): Promise<DeliveryRecord | undefined> {
    const row = this.#rows.get(rowKey(key));
    if (row === undefined || !MAY_UNPARK.holds(toRecord(row), undefined)) return undefined;
    applyChanges(row, key, unparkChanges(nowMs, listedSinceMs));
    return toRecord(row);
  }

  async get(key: DeliveryKey): Promise<DeliveryRecord | undefined> {
    const row = this.#rows.get(rowKey(key));
    const record = row === undefined ? undefined : toRecord(row);
    return record === undefined || isExpired(record, this.#now()) ? undefined : record;
  }

  async deliveriesOf(eventId: string): Promise<DeliveryRecord[]> {
    const nowMs = this.#now();
    return [...this.#rows.values()]
      .filter((row) => row.eventId === eventId)
      .map(toRecord)
      .filter((record) => !isExpired(record, nowMs))
      .sort((a, b) => (a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0));
  }

  async deliveriesOfShipment(shipmentId: string, options: ShipmentPageOptions = {}): Promise<ShipmentPage> {
    if (!this.#shipmentIndex) throw new ShipmentIndexOffError('in memory');
    const limit = checkLimit(options.limit ?? DEFAULT_PAGE_LIMIT);
    const after = options.cursor === undefined ? undefined : decodeShipmentCursor(options.cursor, shipmentId);
    // The index's entries: the rows created with the shipment's key (an invalid message's has none).
    const entries = inShipmentOrder(
      [...this.#rows.values()].filter((row): row is Row & ShipmentPosition => row.shipmentId === shipmentId && row.createdAt !== undefined),
    ).filter((row) => after === undefined || newerInShipment(after, row));
    const page = entries.slice(0, limit);
    const nowMs = this.#now();
    const items = page.map(toRecord).filter((record) => !isExpired(record, nowMs));
    const last = page.at(-1);
    return entries.length > limit && last !== undefined ? { items, next: encodeShipmentCursor(shipmentId, last) } : { items };
  }

  async countByState(state: ListedState, options: Pick<ListOptions, 'endpoint'> = {}): Promise<number> {
    const { endpoint } = options;
    const listed = checkListedState(state, endpoint);
    return [...this.#rows.values()].filter((row) => row.listing?.state === listed && (endpoint === undefined || row.endpoint === endpoint)).length;
  }

  async listByState(state: ListedState, options: ListOptions = {}): Promise<Page> {
    const listed = checkListedState(state, options.endpoint);
    const limit = checkLimit(options.limit ?? DEFAULT_PAGE_LIMIT);
    const newestFirst = options.newestFirst === true;
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor, listed, newestFirst);
    const range = windowRange(options.sinceMs, options.untilMs);
    const { endpoint } = options;
    const entries = [...this.#rows.values()]
      .filter(
        (row) =>
          row.listing?.state === listed &&
          (endpoint === undefined || row.endpoint === endpoint) &&
          inRange(row.listing.sort, range, after, newestFirst),
      )
      .sort((a, b) => (comesAfter(a.listing?.sort ?? '', b.listing?.sort ?? '', newestFirst) ? 1 : -1));
    const page = entries.slice(0, limit);
    // Like the DynamoDB listing: rows no longer in the listed state or expired are left out.
    const nowMs = this.#now();
    const records = page.map(toRecord).filter((record) => belongsIn(record, listed) && !isExpired(record, nowMs));
    const last = page.at(-1)?.listing;
    return entries.length > limit && last !== undefined ? { records, cursor: encodeCursor(listed, newestFirst, last.sort) } : { records };
  }
}

function rowKey(key: DeliveryKey): string {
  return JSON.stringify([key.eventId, key.endpoint]);
}

/** A copy of the record the row reads as, as DynamoDB's codec reads its item (`readRecord`). */
function toRecord(row: Row): DeliveryRecord {
  return readRecord(structuredClone(row));
}
