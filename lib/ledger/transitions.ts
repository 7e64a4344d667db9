/**
 * What each write changes on a row, defined once. A transition is a list of changes over record
 * fields; `guards.ts` says when it may happen. The in-memory ledger applies the changes to its row
 * object (`applyChanges`); the DynamoDB adapter compiles the same list into one UpdateExpression
 * (`dynamodb-expressions.ts`), with the stored names and encodings of `dynamodb-item.ts`. A new row
 * attribute is written here and named in the codec; neither adapter spells it.
 *
 * "No lease" and "due now" (`none`): absent from the record. DynamoDB stores them as 0 on a row that
 * can still be claimed, so the claim's clauses compare numbers that are there and rely on nothing
 * about how a comparison with a missing attribute evaluates. Settled rows drop both (`remove`).
 *
 * The listing (`listing.ts`) is written only by the transitions that make a row need it (death, a
 * replay, parking and its release) and dropped by delivery: neither the claim nor a failed attempt's
 * record touches it, so an event delivered at its first attempt, or after retries, writes no listing
 * entry at all (the shipment index's keys are new-row fields: `newRowFields`).
 *
 * The event's body is kept the same way: written by the first write after which handoff may have
 * to send the event from its row (death, parking, admission to wait its turn), never by the claim
 * nor a failed attempt's record. Until then the queue message holds it (a message is deleted only
 * once its outcome is recorded; SQS's redrive moves it to the redrive queue, whence recovery sends
 * it back), so a delivery accepted, at its first attempt or after retries, never stores it: its row
 * bills one write unit a write whatever the event's size (`contentHash` still tells a different
 * event under its ID).
 */
import {
  appendBounded,
  MAX_AUDIT,
  MAX_HISTORY,
  type AuditEntry,
  type ClaimInput,
  type DeliveryKey,
  type ParkInput,
  type RecordAttemptInput,
  type ReleaseInput,
  type ReplayInput,
} from './ledger';
import { listingSort, type Listing, type ListedState } from './listing';
import { EXHAUSTED_WITHOUT_OUTCOME_DETAIL, expiresAtSeconds, INVALID_MESSAGE_ACTOR, policyCopy, type StoredRow } from './rows';
import type { RetryPolicy } from '../policy';

/** A stored row's fields: the record's and its retention. */
export type Field = keyof StoredRow;

export type Change =
  /** `field` becomes `value`. */
  | { readonly op: 'set'; readonly field: Field; readonly value: unknown }
  /** `field` becomes `value` only where the row has none: what a claim writes on a new row alone. */
  | { readonly op: 'init'; readonly field: Field; readonly value: unknown }
  /** A counter moves by `by` (from 0 where the row has none). */
  | { readonly op: 'add'; readonly field: 'attempts' | 'replays'; readonly by: number }
  /** `entry` appended to a list kept to its newest `max`. */
  | { readonly op: 'append'; readonly field: 'history' | 'audit'; readonly entry: unknown; readonly max: number }
  | { readonly op: 'remove'; readonly fields: readonly Field[] }
  /** No lease, or due now (see above); `ifAbsent`: only where the row has no value. */
  | { readonly op: 'none'; readonly field: 'leaseExpiresAt' | 'nextAttemptAt'; readonly ifAbsent?: true }
  /** Expiry counts from this write, by the latest claim's retention (`retentionSeconds`). */
  | { readonly op: 'moveExpiry'; readonly nowMs: number }
  /** Listed in `state` since `sinceMs`. */
  | { readonly op: 'list'; readonly state: ListedState; readonly sinceMs: number }
  | { readonly op: 'unlist' };

const DEAD_FIELDS: Field[] = ['deadReason', 'deadDetail', 'deadAt'];
/** What a settled row no longer has: its lease or wait, and its parked marker (a late 2xx on a parked row). */
const SETTLED_DROPS: Field[] = ['leaseExpiresAt', 'nextAttemptAt', 'parkedAt'];

/** The event's body, where the row has none yet (a row's body never changes once written). */
function keepBody(body: string): Change {
  return { op: 'init', field: 'body', value: body };
}

/**
 * The claim of a row (the one a new event gets, where there was none) under `claimToken`;
 * `indexShipment`: the row is created in the shipment index (`newRowFields`).
 */
export function claimChanges(input: ClaimInput, claimToken: string, indexShipment = false): Change[] {
  const { nowMs } = input;
  return [
    // Not the body (see above).
    ...newRowFields(input, indexShipment),
    // Pending: a claimable row already is; a taken-over invalid row becomes so, and sheds its dead
    // fields (no other claimable row has them).
    { op: 'set', field: 'state', value: 'pending' },
    { op: 'remove', fields: DEAD_FIELDS },
    // Retention counts from the latest write to a pending row, by the latest claim's setting.
    { op: 'set', field: 'retentionSeconds', value: input.retentionSeconds },
    { op: 'set', field: 'expiresAt', value: expiresAtSeconds(nowMs, input.retentionSeconds) },
    // Counted before anything is sent: a worker that dies mid-send has still spent it.
    { op: 'add', field: 'attempts', by: 1 },
    { op: 'set', field: 'leaseOwner', value: input.owner },
    { op: 'set', field: 'leaseExpiresAt', value: nowMs + input.leaseMs },
    // This claim's own identity: its outcome is recorded against it, and a retry of this very
    // request (same token) is told from every other claim by it.
    { op: 'set', field: 'claimToken', value: claimToken },
    { op: 'none', field: 'nextAttemptAt', ifAbsent: true },
    // While tracing, the first traced attempt's span, kept for the links of a replay, a release or
    // a recovery send; none with tracing off, so the write is as it was (`claimSpec`'s shape).
    ...(input.traceparent !== undefined ? [{ op: 'init', field: 'traceparent', value: input.traceparent } as const] : []),
  ];
}

/** The write of one attempt's outcome and what follows it. */
export function recordChanges(input: RecordAttemptInput): Change[] {
  const { next, nowMs } = input;
  const common: Change[] = [
    { op: 'append', field: 'history', entry: input.attempt, max: MAX_HISTORY },
    { op: 'set', field: 'lastOutcome', value: input.outcome },
    // Settled or not, this claim ends with its outcome.
    { op: 'remove', fields: ['leaseOwner', 'claimToken'] },
    { op: 'moveExpiry', nowMs },
  ];
  switch (next.state) {
    case 'delivered':
      return [
        ...common,
        { op: 'set', field: 'state', value: 'delivered' },
        { op: 'set', field: 'deliveredAt', value: nowMs },
        { op: 'remove', fields: [...SETTLED_DROPS, ...DEAD_FIELDS] },
        // Delivered rows are never listed: the index entry, if any, goes.
        { op: 'unlist' },
      ];
    case 'pending':
      return [
        ...common,
        // No body: the message still holds it, and recovery sends the message itself back should
        // SQS's redrive take it away. So a retry bills what a first attempt does, whatever the size.
        // No lease, and due at the next attempt time.
        { op: 'none', field: 'leaseExpiresAt' },
        { op: 'set', field: 'nextAttemptAt', value: next.nextAttemptAt },
        // Not listed: its message is on the queue, held for the wait, and SQS's redrive of it goes
        // to the redrive queue, which recovery drains (lib/recovery.ts). A retry writes no index.
      ];
    case 'dead':
      return [
        ...common,
        // For a replay, and `status --body`.
        keepBody(input.body),
        ...died(nowMs),
        { op: 'set', field: 'deadReason', value: next.reason },
        { op: 'set', field: 'deadDetail', value: next.detail },
        // Its shipment goes on without it (onDead continue): said on the row, at no extra write.
        ...(next.passesTurn === true ? [{ op: 'set', field: 'releasedAt', value: nowMs } as const] : []),
      ];
  }
}

/**
 * The row of an invalid message whose ID could be read, where there was none: dead on arrival,
 * with no event to send, listed as dead from the start. No `createdAt`: it reads as `deadAt`, and
 * the claim of the valid event that takes the row over sets it.
 */
export function admitInvalidChanges(detail: string, policy: RetryPolicy, nowMs: number, retentionSeconds: number): Change[] {
  return [
    { op: 'set', field: 'state', value: 'dead' },
    { op: 'set', field: 'attempts', value: 0 },
    { op: 'set', field: 'maxAttempts', value: policy.maxAttempts },
    { op: 'set', field: 'policy', value: policyCopy(policy) },
    { op: 'set', field: 'history', value: [] },
    // The invalid message stays in the audit when the valid event takes the row over.
    { op: 'set', field: 'audit', value: [{ at: nowMs, action: 'invalid-message', operator: INVALID_MESSAGE_ACTOR, reason: detail }] },
    { op: 'set', field: 'deadReason', value: 'invalid' },
    { op: 'set', field: 'deadDetail', value: detail },
    { op: 'set', field: 'deadAt', value: nowMs },
    { op: 'set', field: 'retentionSeconds', value: retentionSeconds },
    { op: 'set', field: 'expiresAt', value: expiresAtSeconds(nowMs, retentionSeconds) },
    { op: 'list', state: 'dead', sinceMs: nowMs },
  ];
}

/** A pending row whose budget is spent and whose last claim's lease lapsed, marked dead. */
export function markExhaustedChanges(nowMs: number, body: string): Change[] {
  return [
    keepBody(body),
    ...died(nowMs),
    { op: 'moveExpiry', nowMs },
    { op: 'set', field: 'deadReason', value: 'exhausted' },
    // Written without reading the row: fixed words (`attempts` and `lastOutcome` stay on it).
    { op: 'set', field: 'deadDetail', value: EXHAUSTED_WITHOUT_OUTCOME_DETAIL },
    { op: 'remove', fields: ['leaseOwner', 'claimToken'] },
  ];
}

/** A dead row back to pending: a fresh budget, one more replay, its audit entry, due at once. */
export function replayChanges(input: ReplayInput, entry: AuditEntry): Change[] {
  const { nowMs } = input;
  return [
    { op: 'set', field: 'state', value: 'pending' },
    // A fresh budget under the row's own policy; the body and event ID are kept as they are.
    { op: 'set', field: 'attempts', value: 0 },
    // The total, which the bounded audit no longer shows.
    { op: 'add', field: 'replays', by: 1 },
    { op: 'append', field: 'audit', entry, max: MAX_AUDIT },
    { op: 'moveExpiry', nowMs },
    // No lease, and due at once: "due now", not the operator's clock, which may run ahead of the workers'.
    { op: 'none', field: 'leaseExpiresAt' },
    { op: 'none', field: 'nextAttemptAt' },
    { op: 'remove', fields: [...DEAD_FIELDS, 'leaseOwner', 'claimToken'] },
    // Listed as pending from now: if its message is lost, the recovery sweep finds it.
    { op: 'list', state: 'pending', sinceMs: nowMs },
  ];
}

/**
 * A dead row released by an operator (docs/contract.md §13): its audit entry and the time, nothing
 * else. It stays dead and listed as dead (still replayable); its expiry counts from this write.
 */
export function releaseChanges(input: ReleaseInput, entry: AuditEntry): Change[] {
  return [
    { op: 'set', field: 'releasedAt', value: input.nowMs },
    { op: 'append', field: 'audit', entry, max: MAX_AUDIT },
    { op: 'moveExpiry', nowMs: input.nowMs },
  ];
}

/**
 * An event admitted without a claim (`Ledger.admit`), on a new row or one holding only an invalid
 * message: the claim's new-row fields with no attempt counted, pending, no lease, due now, expiring
 * as the claim's row does, and not listed (it waits for its turn, not for attention).
 */
export function admitChanges(input: ParkInput, indexShipment = false): Change[] {
  return [
    ...unclaimedRow(input, indexShipment),
    { op: 'set', field: 'state', value: 'pending' },
    { op: 'remove', fields: DEAD_FIELDS },
    { op: 'set', field: 'retentionSeconds', value: input.retentionSeconds },
    { op: 'set', field: 'expiresAt', value: expiresAtSeconds(input.nowMs, input.retentionSeconds) },
    { op: 'none', field: 'leaseExpiresAt', ifAbsent: true },
    { op: 'none', field: 'nextAttemptAt', ifAbsent: true },
  ];
}

/**
 * A delivery parked for its disabled endpoint (docs/contract.md §12). On a new row (or one holding
 * only an invalid message: `existing` undefined) the claim's new-row fields, with no attempt
 * counted, listed at now, its admission. On an existing pending row, the marker alone, listed at
 * the row's `createdAt` as read (DynamoDB cannot compute the sort from the stored value, so the
 * write's condition checks it: `SAME_ADMISSION`). Either way pending with no lease (a lapsed one's
 * claim ends here: its failure can no longer be recorded, a 2xx still can), the row's own due time
 * kept, and the listing moved to the endpoint's parked rows.
 */
export function parkChanges(input: ParkInput, existing: { readonly createdAt: number } | undefined, indexShipment = false): Change[] {
  const { nowMs } = input;
  const marker: Change[] = [
    { op: 'set', field: 'state', value: 'pending' },
    { op: 'remove', fields: [...DEAD_FIELDS, 'leaseOwner', 'claimToken'] },
    // Never expires while parked: it waits for its endpoint however long that is disabled. The
    // retention is kept for the release, which counts the expiry from then (`moveExpiry`).
    { op: 'set', field: 'retentionSeconds', value: input.retentionSeconds },
    { op: 'remove', fields: ['expiresAt'] },
    { op: 'none', field: 'leaseExpiresAt' },
    { op: 'none', field: 'nextAttemptAt', ifAbsent: true },
    { op: 'set', field: 'parkedAt', value: nowMs },
    { op: 'list', state: 'parked', sinceMs: existing?.createdAt ?? nowMs },
  ];
  // Its release sends the event from the row (the message is acknowledged now): an existing row
  // between attempts holds no body yet.
  if (existing !== undefined) return [...marker, keepBody(input.event.body)];
  return [...unclaimedRow(input, indexShipment), ...marker];
}

/** A new row's fields as the claim's (`claimChanges`), with the body, but with nothing claimed: no attempt counted. */
function unclaimedRow(input: ParkInput, indexShipment: boolean): Change[] {
  return [keepBody(input.event.body), ...newRowFields(input, indexShipment), { op: 'init', field: 'attempts', value: 0 }];
}

/**
 * A new row's fields, for every write that may create one. An existing row keeps its own: its
 * content, and above all the policy it was created with, which a replay must follow too.
 * `createdAt` is absent on an invalid message's row, so the event that takes it over sets it.
 *
 * The shipment index's keys are two of them (`shipmentId`, `createdAt`: dynamodb-schema.ts): written
 * here once, with the row, so a delivery puts one index entry at its admission and no later write
 * changes a key of it (nor writes the index again: it projects keys only).
 */
function newRowFields(input: ClaimInput | ParkInput, indexShipment: boolean): Change[] {
  return [
    { op: 'init', field: 'contentHash', value: input.event.contentHash },
    { op: 'init', field: 'eventType', value: input.event.type },
    { op: 'init', field: 'policy', value: policyCopy(input.policy) },
    { op: 'init', field: 'maxAttempts', value: input.policy.maxAttempts },
    { op: 'init', field: 'history', value: [] },
    { op: 'init', field: 'createdAt', value: input.nowMs },
    ...shipmentChanges(input.sequence, input.event.event.shipmentId, indexShipment),
  ];
}

/** Listed as pending from `sinceMs` (`Ledger.relist`): the recovery sweep's mark on a row it sent again. */
export function relistChanges(sinceMs: number): Change[] {
  return [{ op: 'list', state: 'pending', sinceMs }];
}

/** Out of every listing (`Ledger.unlist`): an ordered event waiting for its turn needs no attention. */
export function unlistChanges(): Change[] {
  return [{ op: 'unlist' }];
}

/**
 * A parked row released: the marker goes, and it is listed as pending since `listedSinceMs` (when
 * its message, sent next, becomes visible), so the recovery sweep finds it if that message is lost.
 */
export function unparkChanges(nowMs: number, listedSinceMs: number): Change[] {
  return [
    { op: 'remove', fields: ['parkedAt'] },
    { op: 'moveExpiry', nowMs },
    { op: 'list', state: 'pending', sinceMs: listedSinceMs },
  ];
}

/**
 * The shipment sequence of a row of an ordered endpoint (docs/contract.md §13), and the row's
 * shipment where it is numbered or indexed: new-row fields, written where the row has none, never
 * changed after. Neither where there is no sequence and no index, so such a row carries not one
 * byte more (the DynamoDB shapes of these writes are told apart by both: `dynamodb-expressions.ts`).
 */
function shipmentChanges(sequence: number | undefined, shipmentId: string, indexShipment: boolean): Change[] {
  const changes: Change[] = [];
  if (sequence !== undefined) changes.push({ op: 'init', field: 'sequence', value: sequence });
  // Beside a number, which head gave it (lib/ordering.ts `holdsNumber`); either way the index's key.
  if (sequence !== undefined || indexShipment) changes.push({ op: 'init', field: 'shipmentId', value: shipmentId });
  return changes;
}

/** Dead from now, listed as dead from now, with no lease and no wait. */
function died(nowMs: number): Change[] {
  return [
    { op: 'set', field: 'state', value: 'dead' },
    { op: 'set', field: 'deadAt', value: nowMs },
    { op: 'remove', fields: SETTLED_DROPS },
    { op: 'list', state: 'dead', sinceMs: nowMs },
  ];
}

/** A row held as a plain object: the in-memory ledger's, or a record a claim's answer is built from. */
export type ChangeableRow = { -readonly [K in Field]?: StoredRow[K] } & { listing?: Listing };

/** A row holding only its key, for changes to fill in. */
export function newRow(key: DeliveryKey): ChangeableRow {
  return { eventId: key.eventId, endpoint: key.endpoint };
}

/** Applies `changes` to `row` in place, as DynamoDB applies their compiled expression to an item. */
export function applyChanges(row: ChangeableRow, key: DeliveryKey, changes: readonly Change[]): void {
  const fields = row as Record<string, unknown>;
  for (const change of changes) {
    switch (change.op) {
      case 'set':
        fields[change.field] = copyOf(change.value);
        break;
      case 'init':
        fields[change.field] ??= copyOf(change.value);
        break;
      case 'add':
        fields[change.field] = ((fields[change.field] as number | undefined) ?? 0) + change.by;
        break;
      case 'append':
        fields[change.field] = appendBounded((fields[change.field] as unknown[] | undefined) ?? [], copyOf(change.entry), change.max);
        break;
      case 'remove':
        for (const field of change.fields) delete fields[field];
        break;
      case 'none':
        if (change.ifAbsent !== true) delete fields[change.field];
        break;
      case 'moveExpiry':
        row.expiresAt = expiresAtSeconds(change.nowMs, row.retentionSeconds ?? 0);
        break;
      case 'list':
        row.listing = { state: change.state, sort: listingSort(change.sinceMs, key) };
        break;
      case 'unlist':
        delete row.listing;
        break;
    }
  }
}

/**
 * A value the row may keep: objects copied, so the caller's stay its own; primitives, and the
 * deeply frozen copies the ledger shares between rows (`policyCopy`), as they are.
 */
function copyOf<T>(value: T): T {
  return typeof value === 'object' && value !== null && !Object.isFrozen(value) ? structuredClone(value) : value;
}
