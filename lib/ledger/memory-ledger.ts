/**
 * The ledger in a Map: the same semantics as `DynamoDbLedger`, for unit tests of pure logic.
 * `test/helpers/ledger-contract.ts` holds both adapters to one behaviour; where this file looks
 * like a DynamoDB condition written in TypeScript, that is on purpose.
 *
 * Rows are deep-copied in and out, so a caller can never change a stored row by mutating what it
 * passed or got back (as with a real store).
 */
import { ClaimRefusedError, LeaseLostError, ReplayRefusedError } from './errors';
import { claimRefusal, MAY_MARK_EXHAUSTED, mayRecord, replayRefusal } from './guards';
import {
  appendBounded,
  type ClaimedRecord,
  type ClaimInput,
  type DeliveryKey,
  type DeliveryRecord,
  type Ledger,
  type ListOptions,
  MAX_AUDIT,
  MAX_HISTORY,
  type Page,
  type RecordAttemptInput,
  type ReplayInput,
} from './ledger';
import { checkListedState, comesAfter, decodeCursor, encodeCursor, listingSort, type Listing, type ListedState } from './listing';
import {
  checkLimit,
  DEFAULT_PAGE_LIMIT,
  EXHAUSTED_WITHOUT_OUTCOME_DETAIL,
  expiresAtSeconds,
  invalidRow,
  isExpired,
  holdsNoEvent,
  missingRow,
  newRow,
  newToken,
  auditEntry,
  recordOf,
  type StoredRow,
} from './rows';
import type { RetryPolicy } from '../policy';

/** A stored row, changed in place by the writes below, with its place in a listing if it has one. */
type Row = { -readonly [K in keyof StoredRow]: StoredRow[K] } & { listing?: Listing };

export interface MemoryLedgerOptions {
  /** Epoch ms, for deciding which rows have expired on reads. Defaults to the system clock. */
  readonly now?: () => number;
}

export class MemoryLedger implements Ledger {
  readonly #rows = new Map<string, Row>();
  readonly #now: () => number;

  constructor(options: MemoryLedgerOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  async claim(input: ClaimInput): Promise<ClaimedRecord> {
    const { event, nowMs } = input;
    const key = { eventId: event.event.id, endpoint: input.endpoint };
    const claimToken = newToken();
    const row = this.#rows.get(rowKey(key));
    if (row === undefined || holdsNoEvent(row)) {
      // A new event, or the first valid one with the ID of an invalid message: that row holds no
      // event, and the invalid message stays in its audit.
      // A taken-over row keeps its listing as dead until its first outcome moves it (as in DynamoDB,
      // whose claim never writes the listing): listings show only rows in the listed state.
      const created: Row = { ...newRow(input, claimToken), audit: row?.audit ?? [] };
      if (row?.listing !== undefined) created.listing = row.listing;
      this.#rows.set(rowKey(key), created);
      return toRecord(created) as ClaimedRecord;
    }
    // A Map has no lost answers to retry, so no claim here meets its own token (`isThisClaim`).
    if (claimRefusal(row, { contentHash: event.contentHash, nowMs }) !== undefined) throw new ClaimRefusedError(toRecord(row));
    row.attempts += 1;
    // Retention counts from the latest write to a pending row, by the latest claim's setting.
    row.retentionSeconds = input.retentionSeconds;
    row.expiresAt = expiresAtSeconds(nowMs, input.retentionSeconds);
    row.leaseOwner = input.owner;
    row.leaseExpiresAt = nowMs + input.leaseMs;
    row.claimToken = claimToken;
    return toRecord(row) as ClaimedRecord;
  }

  async recordAttempt(input: RecordAttemptInput): Promise<void> {
    const { next, nowMs } = input;
    const row = this.#rows.get(rowKey(input));
    if (row === undefined) throw missingRow(input.eventId);
    // Delivered twice is one delivery: the first write stands.
    if (next.state === 'delivered' && row.state === 'delivered') return;
    if (!mayRecord(row, { claimToken: input.claimToken, delivered: next.state === 'delivered' })) {
      throw new LeaseLostError(toRecord(row));
    }
    row.history = appendBounded(row.history, structuredClone(input.attempt), MAX_HISTORY);
    row.lastOutcome = structuredClone(input.outcome);
    delete row.leaseOwner;
    delete row.leaseExpiresAt;
    delete row.claimToken;
    switch (next.state) {
      case 'delivered':
        row.state = 'delivered';
        row.deliveredAt = nowMs;
        changedState(row, nowMs);
        delete row.nextAttemptAt;
        delete row.deadReason;
        delete row.deadDetail;
        delete row.deadAt;
        delete row.listing;
        break;
      case 'pending':
        row.nextAttemptAt = next.nextAttemptAt;
        row.expiresAt = expiresAtSeconds(nowMs, row.retentionSeconds);
        // Listed from the first failure on, at that failure's time.
        row.listing = { state: 'pending', sort: row.listing?.sort ?? listingSort(nowMs, row) };
        break;
      case 'dead':
        row.state = 'dead';
        row.deadReason = next.reason;
        row.deadDetail = next.detail;
        row.deadAt = nowMs;
        changedState(row, nowMs);
        delete row.nextAttemptAt;
        row.listing = { state: 'dead', sort: listingSort(nowMs, row) };
        break;
    }
  }

  async markExhausted(key: DeliveryKey, nowMs: number): Promise<DeliveryRecord> {
    const row = this.#rows.get(rowKey(key));
    if (row === undefined) throw missingRow(key.eventId);
    if (!MAY_MARK_EXHAUSTED.holds(row, { nowMs })) throw new LeaseLostError(toRecord(row));
    row.state = 'dead';
    row.deadReason = 'exhausted';
    row.deadDetail = EXHAUSTED_WITHOUT_OUTCOME_DETAIL;
    row.deadAt = nowMs;
    changedState(row, nowMs);
    row.listing = { state: 'dead', sort: listingSort(nowMs, row) };
    delete row.leaseOwner;
    delete row.leaseExpiresAt;
    delete row.claimToken;
    delete row.nextAttemptAt;
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
    const row: Row = invalidRow(key, detail, policy, nowMs, retentionSeconds);
    row.listing = { state: 'dead', sort: listingSort(nowMs, key) };
    this.#rows.set(rowKey(key), row);
    return true;
  }

  async replay(input: ReplayInput): Promise<DeliveryRecord> {
    const { eventId, nowMs } = input;
    const row = this.#rows.get(rowKey(input));
    if (row === undefined) throw new ReplayRefusedError('not-found', eventId);
    // A Map has no lost answers to retry, so no replay here meets its own ID (`isThisReplay`).
    const refusal = replayRefusal(row);
    if (refusal !== undefined) throw new ReplayRefusedError(refusal, eventId, toRecord(row));
    row.state = 'pending';
    row.attempts = 0;
    row.replays += 1;
    row.audit = appendBounded(row.audit, auditEntry(input, newToken()), MAX_AUDIT);
    changedState(row, nowMs);
    row.listing = { state: 'pending', sort: listingSort(nowMs, row) };
    // Due at once: the operator's clock is not the workers', and one running ahead would park it.
    delete row.nextAttemptAt;
    delete row.deadReason;
    delete row.deadDetail;
    delete row.deadAt;
    delete row.leaseOwner;
    delete row.leaseExpiresAt;
    delete row.claimToken;
    return toRecord(row);
  }

  async get(key: DeliveryKey): Promise<DeliveryRecord | undefined> {
    const row = this.#rows.get(rowKey(key));
    return row === undefined || isExpired(row, this.#now()) ? undefined : toRecord(row);
  }

  async countByState(state: ListedState): Promise<number> {
    const listed = checkListedState(state);
    return [...this.#rows.values()].filter((row) => row.listing?.state === listed).length;
  }

  async listByState(state: ListedState, options: ListOptions = {}): Promise<Page> {
    const listed = checkListedState(state);
    const limit = checkLimit(options.limit ?? DEFAULT_PAGE_LIMIT);
    const newestFirst = options.newestFirst === true;
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor, listed, newestFirst);
    const entries = [...this.#rows.values()]
      .filter((row) => row.listing?.state === listed && (after === undefined || comesAfter(row.listing.sort, after, newestFirst)))
      .sort((a, b) => (comesAfter(a.listing?.sort ?? '', b.listing?.sort ?? '', newestFirst) ? 1 : -1));
    const page = entries.slice(0, limit);
    // Like the DynamoDB listing: rows no longer in the listed state or expired are left out.
    const nowMs = this.#now();
    const records = page.filter((row) => row.state === listed && !isExpired(row, nowMs)).map(toRecord);
    const last = page.at(-1)?.listing;
    return entries.length > limit && last !== undefined ? { records, cursor: encodeCursor(listed, newestFirst, last.sort) } : { records };
  }
}

function rowKey(key: DeliveryKey): string {
  return JSON.stringify([key.eventId, key.endpoint]);
}

function toRecord(row: Row): DeliveryRecord {
  const { listing: _listing, ...stored } = structuredClone(row);
  return recordOf(stored);
}

/** Every state change is the row's new `stateSince`, and restarts its retention. */
function changedState(row: Row, nowMs: number): void {
  row.stateSince = nowMs;
  row.expiresAt = expiresAtSeconds(nowMs, row.retentionSeconds);
}
