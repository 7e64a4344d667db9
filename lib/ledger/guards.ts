/**
 * When each write to a row may happen, defined once. Every clause is a predicate over the row as
 * it stands, beside the DynamoDB condition that says the same thing: the in-memory ledger applies
 * the predicates, the DynamoDB adapter sends the conditions (`dynamodb-expressions.ts`) and, when
 * one is refused, asks the predicates why; `deliver` decides from the refusal the claim names.
 */
import { leaseIsLive, type DeliveryRecord } from './ledger';

export interface Clause<Context> {
  /** The DynamoDB condition, `#field` standing for the record field's stored name. */
  readonly expression: string;
  readonly holds: (row: DeliveryRecord, context: Context) => boolean;
}

export interface ClaimContext {
  readonly contentHash: string;
  readonly nowMs: number;
}

/*
 * The claim, clause by clause. A lease's life on one row:
 *
 *   claim(A): attempts+1   A sends...          leaseExpiresAt
 *   |----------- leased to A: claims refused ---|-------- claimable again (if due) --------> time
 *               A records its outcome here: lease released, nextAttemptAt set (or settled).
 *               A worker that died here leaves the lease to lapse; its attempt stays counted.
 *
 * A claim also succeeds where there is no row (a new event: `attribute_not_exists(#eventId)`) and
 * on a row that holds no event, only an invalid message with this ID, which the valid event takes
 * over (`attribute_not_exists(#contentHash)`: every row that holds an event has its hash).
 * Otherwise every clause below must hold; the first that does not is why the claim is refused.
 */
export const CLAIM_CLAUSES = {
  // Same content. Another body under this ID is an identity conflict: refused, row left as it is.
  'identity-conflict': {
    expression: '#contentHash = :contentHash',
    holds: (row, { contentHash }) => row.contentHash === contentHash,
  },
  // Only pending work is sent; delivered and dead rows are settled.
  settled: { expression: '#state = :pending', holds: (row) => row.state === 'pending' },
  // Not parked: a parked row waits for its endpoint to be enabled (`unpark`). Only a parked row has
  // the attribute, so a row never parked pays nothing for this clause.
  parked: { expression: 'attribute_not_exists(#parkedAt)', holds: (row) => row.parkedAt === undefined },
  // No live lease: nobody else is sending now. This clause makes the claim a compare-and-set.
  // Stored as 0 when released ("no lease"), so the condition compares a number that is there.
  leased: { expression: '#leaseExpiresAt <= :now', holds: (row, { nowMs }) => !leaseIsLive(row, nowMs) },
  // Budget left. `maxAttempts` is a top-level copy of the row's own policy's, usable in a condition.
  spent: { expression: '#attempts < #maxAttempts', holds: (row) => row.attempts < row.maxAttempts },
  // Due: the wait after the previous failed attempt is over (0, "due now", when there was none).
  'not-due': { expression: '#nextAttemptAt <= :now', holds: (row, { nowMs }) => (row.nextAttemptAt ?? 0) <= nowMs },
} as const satisfies Record<string, Clause<ClaimContext>>;

/** Why a claim on `row` is refused, in the order a caller should care; undefined when it may claim. */
export type ClaimRefusal = keyof typeof CLAIM_CLAUSES;

export function claimRefusal(row: DeliveryRecord, context: ClaimContext): ClaimRefusal | undefined {
  if (row.contentHash === undefined) return undefined;
  for (const [refusal, clause] of Object.entries(CLAIM_CLAUSES) as [ClaimRefusal, Clause<ClaimContext>][]) {
    if (!clause.holds(row, context)) return refusal;
  }
  return undefined;
}

/** Where a claim or a park creates the row: none there, or one that holds only an invalid message. */
const NEW_ROW = ['attribute_not_exists(#eventId)', 'attribute_not_exists(#contentHash)'] as const;

/**
 * The claim's whole condition. No parentheses: AND binds before OR, so this reads
 * `new OR invalid-only OR (same AND pending AND not parked AND … AND due)`.
 */
export const CLAIM_CONDITION = [
  ...NEW_ROW,
  Object.values(CLAIM_CLAUSES)
    .map((clause) => clause.expression)
    .join(' AND '),
].join(' OR ');

export interface RecordContext {
  readonly claimToken: string;
  readonly delivered: boolean;
}

/**
 * Recording an outcome. A 2xx is the truth however late: no lease needed, only a row that is not
 * delivered yet (a dead one included). Any other outcome only under the claim that holds the lease
 * (its token), on a row still pending. The row must exist: an update never creates one.
 */
export const MAY_RECORD = {
  delivered: {
    expression: 'attribute_exists(#eventId) AND #state <> :delivered',
    holds: (row) => row.state !== 'delivered',
  },
  failure: {
    expression: '#claimToken = :claimToken AND #state = :pending',
    holds: (row, { claimToken }) => row.claimToken === claimToken && row.state === 'pending',
  },
} as const satisfies Record<string, Clause<RecordContext>>;

export function mayRecord(row: DeliveryRecord, context: RecordContext): boolean {
  return (context.delivered ? MAY_RECORD.delivered : MAY_RECORD.failure).holds(row, context);
}

/** Budget spent and the last claim's lease lapsed: its worker died mid-attempt. */
export const MAY_MARK_EXHAUSTED: Clause<{ readonly nowMs: number }> = {
  expression: `${CLAIM_CLAUSES.settled.expression} AND #attempts >= #maxAttempts AND ${CLAIM_CLAUSES.leased.expression}`,
  holds: (row, { nowMs }) => row.state === 'pending' && row.attempts >= row.maxAttempts && !leaseIsLive(row, nowMs),
};

/** Only dead rows that hold an event (not those of invalid messages) can be sent again. */
export const REPLAY_CLAUSES = {
  'not-dead': { expression: '#state = :dead', holds: (row) => row.state === 'dead' },
  'no-event': { expression: 'attribute_exists(#body)', holds: (row) => row.body !== undefined },
} as const satisfies Record<string, Clause<undefined>>;

export type ReplayClauseRefusal = keyof typeof REPLAY_CLAUSES;

export const REPLAY_CONDITION = Object.values(REPLAY_CLAUSES)
  .map((clause) => clause.expression)
  .join(' AND ');

export function replayRefusal(row: DeliveryRecord): ReplayClauseRefusal | undefined {
  for (const [refusal, clause] of Object.entries(REPLAY_CLAUSES) as [ReplayClauseRefusal, Clause<undefined>][]) {
    if (!clause.holds(row, undefined)) return refusal;
  }
  return undefined;
}

/**
 * A release (docs/contract.md §13) is recorded on a dead row that holds an event, once: a row
 * released before keeps `releasedAt`, and its turn, once passed, is never its own again.
 */
export const RELEASE_CLAUSES = {
  ...REPLAY_CLAUSES,
  released: { expression: 'attribute_not_exists(#releasedAt)', holds: (row) => row.releasedAt === undefined },
} as const satisfies Record<string, Clause<undefined>>;

export type ReleaseClauseRefusal = keyof typeof RELEASE_CLAUSES;

export const RELEASE_CONDITION = Object.values(RELEASE_CLAUSES)
  .map((clause) => clause.expression)
  .join(' AND ');

export function releaseRefusal(row: DeliveryRecord): ReleaseClauseRefusal | undefined {
  for (const [refusal, clause] of Object.entries(RELEASE_CLAUSES) as [ReleaseClauseRefusal, Clause<undefined>][]) {
    if (!clause.holds(row, undefined)) return refusal;
  }
  return undefined;
}

export interface ParkContext extends ClaimContext {
  /** The admission time of the row as read: the second write's listing sort is computed from it. */
  readonly createdAt: number;
}

/*
 * Parking (docs/contract.md §12), in at most two conditional writes, since an update cannot compute
 * the listing's sort from the row's stored `createdAt`:
 *
 *   1. PARK_NEW_CONDITION: no row, or one holding only an invalid message. The row is created
 *      (taken over) parked, listed at now, its admission. Refused: the store answers with the row.
 *   2. PARK_EXISTING_CONDITION, with that row's `createdAt`: every clause of PARK_CLAUSES, and the
 *      row is still the one read (same admission time), so its listing sort is right.
 *
 * Between them, `parkRefusal` says why the row may not be parked; `parked` is no refusal: the row
 * already is, and is returned unchanged with no write.
 */
export const PARK_NEW_CONDITION = NEW_ROW.join(' OR ');

/** An existing row may be parked when each holds; the first that does not is why it is not. */
export const PARK_CLAUSES = {
  // Same content: another body under this ID is an identity conflict, refused as a claim is.
  'identity-conflict': CLAIM_CLAUSES['identity-conflict'],
  // Only pending work waits for its endpoint; delivered and dead rows are settled.
  settled: CLAIM_CLAUSES.settled,
  // Not parked yet (a parked row is answered as it is, without a write).
  parked: CLAIM_CLAUSES.parked,
  // No live lease: a row being sent now is left to its attempt.
  leased: CLAIM_CLAUSES.leased,
} as const satisfies Record<string, Clause<ClaimContext>>;

export type ParkRefusal = keyof typeof PARK_CLAUSES;

/** Why `row` may not be parked (or, `parked`, need not be); undefined when it may. */
export function parkRefusal(row: DeliveryRecord, context: ClaimContext): ParkRefusal | undefined {
  for (const [refusal, clause] of Object.entries(PARK_CLAUSES) as [ParkRefusal, Clause<ClaimContext>][]) {
    if (!clause.holds(row, context)) return refusal;
  }
  return undefined;
}

/** The row is still the one read: the same admission time, which the listing's sort was computed from. */
export const SAME_ADMISSION: Clause<ParkContext> = {
  expression: '#createdAt = :admittedAt',
  holds: (row, { createdAt }) => row.createdAt === createdAt,
};

/** The second write's condition: every park clause, on the row as read. */
export const PARK_EXISTING_CONDITION = [...Object.values(PARK_CLAUSES), SAME_ADMISSION].map((clause) => clause.expression).join(' AND ');

/** A pending row, not parked, may be listed again from a later time (`relist`). Refused where there is no row. */
export const MAY_RELIST: Clause<undefined> = {
  expression: '#state = :pending AND attribute_not_exists(#parkedAt)',
  holds: (row) => row.state === 'pending' && row.parkedAt === undefined,
};

/**
 * Only a row waiting for its first attempt leaves the pending listing (`unlist`): pending, not
 * parked, no attempt counted. Refused where there is no row.
 */
export const MAY_UNLIST: Clause<undefined> = {
  expression: '#state = :pending AND attribute_not_exists(#parkedAt) AND #attempts = :zero',
  holds: (row) => row.state === 'pending' && row.parkedAt === undefined && row.attempts === 0,
};

/** Only a parked row is released: pending, with its marker. Refused where there is no row. */
export const MAY_UNPARK: Clause<undefined> = {
  expression: '#state = :pending AND attribute_exists(#parkedAt)',
  holds: (row) => row.state === 'pending' && row.parkedAt !== undefined,
};
