/**
 * The ledger in a Map: the same semantics as `DynamoDbLedger`, for unit tests of pure logic.
 * `test/helpers/ledger-contract.ts` holds both adapters to one behaviour; where this file looks
 * like a DynamoDB condition written in TypeScript, that is on purpose.
 *
 * Rows are deep-copied in and out, so a caller can never change a stored row by mutating what it
 * passed or got back (as with a real store).
 */
import { ClaimRefusedError, LeaseLostError, ReplayRefusedError } from './errors';
import {
  appendHistory,
  leaseIsLive,
  type ClaimedRecord,
  type ClaimInput,
  type DeliveryKey,
  type DeliveryRecord,
  type DeliveryState,
  type Ledger,
  type ListOptions,
  type Page,
  type RecordAttemptInput,
  type ReplayInput,
} from './ledger';
import {
  checkLimit,
  decodeCursor,
  DEFAULT_PAGE_LIMIT,
  encodeCursor,
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
  type IndexPosition,
  type StoredRow,
} from './rows';
import type { RetryPolicy } from '../policy';

/** A stored row, changed in place by the writes below. */
type Row = { -readonly [K in keyof StoredRow]: StoredRow[K] };

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
      const created: Row = { ...newRow(input, claimToken), audit: row?.audit ?? [] };
      this.#rows.set(rowKey(key), created);
      return toRecord(created) as ClaimedRecord;
    }
    const claimable =
      row.contentHash === event.contentHash &&
      row.state === 'pending' &&
      row.attempts < row.maxAttempts &&
      !leaseIsLive(row, nowMs) &&
      (row.nextAttemptAt === undefined || row.nextAttemptAt <= nowMs);
    // A Map has no lost answers to retry, so no claim here meets its own token (`isThisClaim`).
    if (!claimable) throw new ClaimRefusedError(toRecord(row));
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
    if (next.state === 'delivered') {
      // A 2xx is the truth however late: no lease needed. Delivered twice is one delivery.
      if (row.state === 'delivered') return;
    } else if (row.claimToken !== input.claimToken || row.state !== 'pending') {
      throw new LeaseLostError(toRecord(row));
    }
    row.history = appendHistory(row.history, structuredClone(input.attempt));
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
        break;
      case 'pending':
        row.nextAttemptAt = next.nextAttemptAt;
        row.expiresAt = expiresAtSeconds(nowMs, row.retentionSeconds);
        break;
      case 'dead':
        row.state = 'dead';
        row.deadReason = next.reason;
        row.deadDetail = next.detail;
        row.deadAt = nowMs;
        changedState(row, nowMs);
        delete row.nextAttemptAt;
        break;
    }
  }

  async markExhausted(key: DeliveryKey, nowMs: number): Promise<DeliveryRecord> {
    const row = this.#rows.get(rowKey(key));
    if (row === undefined) throw missingRow(key.eventId);
    if (row.state !== 'pending' || row.attempts < row.maxAttempts || leaseIsLive(row, nowMs)) {
      throw new LeaseLostError(toRecord(row));
    }
    row.state = 'dead';
    row.deadReason = 'exhausted';
    row.deadDetail = EXHAUSTED_WITHOUT_OUTCOME_DETAIL;
    row.deadAt = nowMs;
    changedState(row, nowMs);
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
    this.#rows.set(rowKey(key), invalidRow(key, detail, policy, nowMs, retentionSeconds));
    return true;
  }

  async replay(input: ReplayInput): Promise<DeliveryRecord> {
    const { eventId, nowMs } = input;
    const row = this.#rows.get(rowKey(input));
    if (row === undefined) throw new ReplayRefusedError('not-found', eventId);
    // A Map has no lost answers to retry, so no replay here meets its own ID (`isThisReplay`).
    if (row.state !== 'dead') throw new ReplayRefusedError('not-dead', eventId, toRecord(row));
    if (row.body === undefined) throw new ReplayRefusedError('no-event', eventId, toRecord(row));
    row.state = 'pending';
    row.attempts = 0;
    row.replays += 1;
    row.audit = [...row.audit, auditEntry(input, newToken())];
    changedState(row, nowMs);
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

  async listByState(state: DeliveryState, options: ListOptions = {}): Promise<Page> {
    const limit = checkLimit(options.limit ?? DEFAULT_PAGE_LIMIT);
    const direction = options.newestFirst ? -1 : 1;
    const compare = (a: IndexPosition, b: IndexPosition) => direction * compareIndexOrder(a, b);
    const ordered = [...this.#rows.values()].filter((row) => row.state === state).sort(compare);
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor, state);
    const start = after === undefined ? 0 : ordered.findIndex((row) => compare(row, after) > 0);
    const scanned = start === -1 ? [] : ordered.slice(start, start + limit);
    // Like a DynamoDB Query with a filter: the limit counts rows read, expired ones included.
    const nowMs = this.#now();
    const records = scanned.filter((row) => !isExpired(row, nowMs)).map(toRecord);
    // Like DynamoDB's LastEvaluatedKey: a full page has a cursor even when nothing follows it.
    const last = scanned.at(-1);
    return scanned.length === limit && last !== undefined ? { records, cursor: cursorAfter(last) } : { records };
  }
}

function rowKey(key: DeliveryKey): string {
  return JSON.stringify([key.eventId, key.endpoint]);
}

function toRecord(row: Row): DeliveryRecord {
  return recordOf(structuredClone(row));
}

/** Every state change moves the row in the by-state index and restarts its retention. */
function changedState(row: Row, nowMs: number): void {
  row.stateSince = nowMs;
  row.expiresAt = expiresAtSeconds(nowMs, row.retentionSeconds);
}

/** The by-state index order: oldest state change first, ties by key. */
function compareIndexOrder(a: IndexPosition, b: IndexPosition): number {
  return (
    a.stateSince - b.stateSince ||
    (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0) ||
    (a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0)
  );
}

/** The same shape as a DynamoDB LastEvaluatedKey of the by-state index. */
function cursorAfter(row: Row): string {
  return encodeCursor({ eventId: row.eventId, endpoint: row.endpoint, state: row.state, stateSince: row.stateSince });
}
