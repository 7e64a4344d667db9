/**
 * The rows the ledger stores and the rules it reads them by, defined once for both adapters: what
 * a stored row reads as, expiry and page limits (the writes are in `transitions.ts`, the listing's
 * own rules in `listing.ts`).
 */
import { randomFillSync } from 'node:crypto';
import type { AuditEntry, DeliveryRecord, ReleaseInput, ReplayInput } from './ledger';
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

const TOKEN_BYTES = 12;
/**
 * Random bytes drawn in blocks and handed out once each: every claim draws a token, and one call
 * into the system's generator per block costs far less than one per token.
 */
const tokenPool = Buffer.alloc(TOKEN_BYTES * 256);
let tokenPoolOffset = tokenPool.length;

/** A claim token or replay ID: 96 random bits, so no two claims or replays ever share one. */
export function newToken(): string {
  if (tokenPoolOffset === tokenPool.length) {
    randomFillSync(tokenPool);
    tokenPoolOffset = 0;
  }
  const start = tokenPoolOffset;
  tokenPoolOffset += TOKEN_BYTES;
  return tokenPool.toString('base64url', start, tokenPoolOffset);
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

/** A replay's (or, `release`, a release's) audit entry: who, why, when, and the write's own ID. */
export function auditEntry(input: ReplayInput | ReleaseInput, id: string, action: 'replay' | 'release' = 'replay'): AuditEntry {
  const { nowMs: at, operator, reason, caller } = input;
  return caller === undefined ? { at, action, operator, reason, id } : { at, action, operator, reason, caller, id };
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

/**
 * The record a stored row reads as, in either ledger. Rows omit what their state does not need,
 * and it is restored here: `replays` and `audit` until a first replay or invalid message (0 and
 * []), `createdAt` of an invalid message's row (its `deadAt`: the valid event that takes the row
 * over sets its own), and `stateSince`, the time of the state's own event.
 */
export function readRecord(row: Readonly<Partial<StoredRow>> & { readonly listing?: unknown }): DeliveryRecord {
  // Every field but those NOT_IN_RECORD.
  const record: Record<string, unknown> = {};
  for (const name of Object.keys(row)) if (!NOT_IN_RECORD.has(name)) record[name] = row[name as keyof typeof row];
  const audit = row.audit ?? [];
  const createdAt = row.createdAt ?? row.deadAt ?? 0;
  const lastReplay = audit.reduce((latest, entry) => (entry.action === 'replay' ? Math.max(latest, entry.at) : latest), createdAt);
  const stateSince = row.state === 'delivered' ? row.deliveredAt : row.state === 'dead' ? row.deadAt : lastReplay;
  record.replays = row.replays ?? 0;
  record.audit = audit;
  record.createdAt = createdAt;
  record.stateSince = stateSince ?? createdAt;
  return record as unknown as DeliveryRecord;
}

/** What a row holds for its writes (its retention, its listing), and what the record derives. */
const NOT_IN_RECORD: ReadonlySet<string> = new Set(['retentionSeconds', 'listing', 'stateSince']);

export function expiresAtSeconds(nowMs: number, retentionSeconds: number): number {
  return Math.floor(nowMs / 1000) + retentionSeconds;
}

/** Rows past their TTL count as absent: DynamoDB deletes them only eventually. */
export function isExpired(row: Pick<DeliveryRecord, 'expiresAt'>, nowMs: number): boolean {
  return row.expiresAt !== undefined && row.expiresAt * 1000 <= nowMs;
}

export function checkLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be a positive integer, got ${limit}`);
  return limit;
}
