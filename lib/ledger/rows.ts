/**
 * The rows the ledger writes and the rules it reads them by, defined once for both adapters: the
 * row a new event gets, the row of an invalid message, expiry and page limits (the listing's own
 * rules are in `listing.ts`).
 * `DynamoDbLedger` writes these rows with conditional expressions and `MemoryLedger` with plain
 * assignments; what a row holds is decided here, so the two cannot drift apart.
 */
import { randomBytes } from 'node:crypto';
import { LedgerUnavailableError } from './errors';
import type { AuditEntry, ClaimedRecord, ClaimInput, DeliveryKey, DeliveryRecord, ReplayInput } from './ledger';
import type { RetryPolicy } from '../policy';

/** Page size of `listByState` when none is given. */
export const DEFAULT_PAGE_LIMIT = 25;

/**
 * The dead detail of `markExhausted`. DynamoDB marks the row without reading it, so the text is
 * fixed (`attempts` and `lastOutcome` stay on the row); the ledger contract checks these words.
 */
export const EXHAUSTED_WITHOUT_OUTCOME_DETAIL = 'attempt budget spent; the last attempt recorded no outcome';

/** A row as stored: the record plus what later writes need to refresh its expiry. */
export type StoredRow = DeliveryRecord & {
  /** Copied from the latest claim: every write to the row extends the expiry by it. */
  readonly retentionSeconds: number;
};

/** A claim token or replay ID: 96 random bits, so no two claims or replays ever share one. */
export function newToken(): string {
  return randomBytes(12).toString('base64url');
}

/** The row a claim creates for a new event: admitted, pending, its first attempt counted and leased. */
export function newRow(input: ClaimInput, claimToken: string): StoredRow & ClaimedRecord {
  const { event, nowMs } = input;
  return {
    eventId: event.event.id,
    endpoint: input.endpoint,
    state: 'pending',
    body: event.body,
    contentHash: event.contentHash,
    eventType: event.type,
    attempts: 1,
    maxAttempts: input.policy.maxAttempts,
    policy: policyCopy(input.policy),
    history: [],
    replays: 0,
    audit: [],
    leaseOwner: input.owner,
    leaseExpiresAt: nowMs + input.leaseMs,
    claimToken,
    createdAt: nowMs,
    stateSince: nowMs,
    expiresAt: expiresAtSeconds(nowMs, input.retentionSeconds),
    retentionSeconds: input.retentionSeconds,
  };
}

/** Who the audit names for an invalid message: the consumer that received it, not an operator. */
export const INVALID_MESSAGE_ACTOR = 'consumer';

/**
 * Whether a row holds no event: the row of an invalid message, which the valid event with its ID
 * may take over in its claim.
 */
export function holdsNoEvent(row: Pick<DeliveryRecord, 'contentHash'>): boolean {
  return row.contentHash === undefined;
}

/** A replay's audit entry: who, why, when, and the replay's own ID. */
export function auditEntry(input: ReplayInput, id: string): AuditEntry {
  const { nowMs: at, operator, reason, caller } = input;
  return caller === undefined ? { at, action: 'replay', operator, reason, id } : { at, action: 'replay', operator, reason, caller, id };
}

/** The row of an invalid message whose ID could be read: dead on arrival, with no event to send. */
export function invalidRow(
  key: DeliveryKey,
  detail: string,
  policy: RetryPolicy,
  nowMs: number,
  retentionSeconds: number,
): StoredRow {
  return {
    eventId: key.eventId,
    endpoint: key.endpoint,
    state: 'dead',
    attempts: 0,
    maxAttempts: policy.maxAttempts,
    policy: policyCopy(policy),
    history: [],
    replays: 0,
    audit: [{ at: nowMs, action: 'invalid-message', operator: INVALID_MESSAGE_ACTOR, reason: detail }],
    deadReason: 'invalid',
    deadDetail: detail,
    createdAt: nowMs,
    deadAt: nowMs,
    stateSince: nowMs,
    expiresAt: expiresAtSeconds(nowMs, retentionSeconds),
    retentionSeconds,
  };
}

/** Copies by policy object: a container claims every event under one (policies are read-only). */
const policyCopies = new WeakMap<RetryPolicy, RetryPolicy>();

/**
 * The policy as rows store it: a frozen JSON copy (no `undefined` members), made once per policy
 * object and shared by the rows written under it, so no row aliases the caller's object and no
 * claim pays for a copy.
 */
export function policyCopy(policy: RetryPolicy): RetryPolicy {
  let copy = policyCopies.get(policy);
  if (copy === undefined) {
    const json = JSON.parse(JSON.stringify(policy)) as RetryPolicy;
    copy = Object.freeze({ ...json, waitsSeconds: Object.freeze([...json.waitsSeconds]) });
    policyCopies.set(policy, copy);
  }
  return copy;
}

/** The record a stored row reads as: everything but the retention. */
export function recordOf<R extends StoredRow>(row: R): Omit<R, 'retentionSeconds'> {
  const { retentionSeconds: _retentionSeconds, ...record } = row;
  return record;
}

export function expiresAtSeconds(nowMs: number, retentionSeconds: number): number {
  return Math.floor(nowMs / 1000) + retentionSeconds;
}

/** Rows past their TTL count as absent: DynamoDB deletes them only eventually, emulators never. */
export function isExpired(row: Pick<DeliveryRecord, 'expiresAt'>, nowMs: number): boolean {
  return row.expiresAt * 1000 <= nowMs;
}

/** A write that needs an existing row found none (deleted by TTL, or never admitted). */
export function missingRow(eventId: string, cause?: unknown): LedgerUnavailableError {
  const message = `no delivery record for event ${eventId} to write to`;
  return new LedgerUnavailableError(message, cause === undefined ? undefined : { cause });
}

export function checkLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  return limit;
}
