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

/**
 * The claim's whole condition. No parentheses: AND binds before OR, so this reads
 * `new OR invalid-only OR (same AND pending AND … AND due)`.
 */
export const CLAIM_CONDITION = [
  'attribute_not_exists(#eventId)',
  'attribute_not_exists(#contentHash)',
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
