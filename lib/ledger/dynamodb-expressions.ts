/**
 * The ledger's transitions as DynamoDB writes: for each, the condition under which it may happen
 * and the changes it makes, in one UpdateItem. Written readably (`#attempts < #maxAttempts`, each
 * `#name` a record field) and sent with the short attribute names of `WIRE_NAMES` behind short
 * placeholders, compiled once per shape.
 *
 * `leaseExpiresAt` and `nextAttemptAt` are present, as numbers, on every row that can be claimed:
 * 0 is "no lease" and "due now". The claim's clauses then compare attributes that are there, and
 * rely on nothing about how a comparison with a missing attribute evaluates. Settled rows drop both.
 *
 * The listing index keys (`listingKey`, `listingSort`) are written only by the transitions that
 * make a row need listing (a failed attempt, death, a replay) and removed by delivery: the claim
 * never touches them, so an event delivered at its first attempt writes no index at all.
 */
import { MAX_AUDIT, MAX_HISTORY, type ClaimInput, type RecordAttemptInput, type ReplayInput } from './ledger';
import { auditValue, hashValue, historyValue, outcomeValue, policyValue } from './dynamodb-item';
import { WIRE_NAMES } from './dynamodb-schema';
import { listingKey, listingSort } from './listing';
import { CLAIM_CONDITION, MAY_MARK_EXHAUSTED, MAY_RECORD, REPLAY_CONDITION } from './guards';
import { EXHAUSTED_WITHOUT_OUTCOME_DETAIL, type StoredRow } from './rows';
import type { AuditEntry, DeliveryKey } from './ledger';

export interface UpdateSpec {
  readonly set: readonly string[];
  readonly remove?: readonly string[];
  readonly condition: string;
  readonly values: Readonly<Record<string, unknown>>;
  /** What the write answers with: the new row, the row before it, or nothing (bytes not sent). */
  readonly returns: 'ALL_NEW' | 'ALL_OLD' | 'NONE';
}

// The conditions are defined once, beside the predicates the in-memory ledger applies (`guards.ts`).
const MAY_RECORD_DELIVERED = MAY_RECORD.delivered.expression;
const MAY_RECORD_FAILURE = MAY_RECORD.failure.expression;

// What every settled row sheds: the claim, the wait, and (when delivered) its listing.
const RELEASE_CLAIM = ['#leaseOwner', '#claimToken'];
const NO_SCHEDULE = ['#leaseExpiresAt', '#nextAttemptAt'];
const DEAD_FIELDS = ['#deadReason', '#deadDetail', '#deadAt'];
// Expiry counts from this write, by the latest claim's retention (see `retentionSeconds`).
const MOVE_EXPIRY = '#expiresAt = :nowSeconds + #retentionSeconds';

/** The claim of `row` (the row a new event gets) under `claimToken`. */
export function claimSpec(input: ClaimInput, row: StoredRow & { claimToken: string }): UpdateSpec {
  return {
    set: [
      // A new row's fields. An existing row keeps its own: its content, and above all the policy it
      // was created with, which a replay must follow too. `createdAt` is absent on an invalid
      // message's row, so the event that takes it over sets it.
      '#body = if_not_exists(#body, :body)',
      '#contentHash = if_not_exists(#contentHash, :contentHash)',
      '#eventType = if_not_exists(#eventType, :eventType)',
      '#policy = if_not_exists(#policy, :policy)',
      '#maxAttempts = if_not_exists(#maxAttempts, :maxAttempts)',
      '#history = if_not_exists(#history, :empty)',
      '#createdAt = if_not_exists(#createdAt, :now)',
      // Pending: a claimable row already is; a taken-over invalid row becomes so, and sheds its
      // dead fields (no other claimable row has them).
      '#state = :pending',
      // Retention counts from the latest write to a pending row, by the latest claim's setting.
      '#retentionSeconds = :retentionSeconds',
      '#expiresAt = :expiresAt',
      // Counted before anything is sent: a worker that dies mid-send has still spent it.
      '#attempts = if_not_exists(#attempts, :zero) + :one',
      '#leaseOwner = :owner',
      '#leaseExpiresAt = :leaseExpiresAt',
      // This claim's own identity: its outcome is recorded against it, and a retry of this very
      // request (same token) is told from every other claim by it.
      '#claimToken = :claimToken',
      '#nextAttemptAt = if_not_exists(#nextAttemptAt, :zero)',
    ],
    remove: DEAD_FIELDS,
    condition: CLAIM_CONDITION,
    values: {
      ':body': row.body,
      ':contentHash': hashValue(input.event.contentHash),
      ':eventType': row.eventType,
      ':pending': 'pending',
      ':policy': policyValue(row.policy),
      ':maxAttempts': row.maxAttempts,
      ':retentionSeconds': row.retentionSeconds,
      ':zero': 0,
      ':one': 1,
      ':empty': [],
      ':now': input.nowMs,
      ':expiresAt': row.expiresAt,
      ':owner': row.leaseOwner,
      ':leaseExpiresAt': row.leaseExpiresAt,
      ':claimToken': row.claimToken,
    },
    // For a new event, nothing comes back (the adapter knows the row it created).
    returns: 'ALL_OLD',
  };
}

/** The write of one attempt's outcome. `historyLength` is unknown on the first try (`appendBounded`). */
export function recordSpec(input: RecordAttemptInput, historyLength: number | undefined): UpdateSpec {
  const { next, nowMs } = input;
  const history = appendBounded('history', historyValue(input.attempt), MAX_HISTORY, historyLength);
  const common = {
    // Settled or not, this claim ends with its outcome.
    set: [...history.set, '#lastOutcome = :outcome', MOVE_EXPIRY],
    remove: [...history.remove, ...RELEASE_CLAIM],
    values: { ...history.values, ':outcome': outcomeValue(input.outcome), ':nowSeconds': Math.floor(nowMs / 1000) },
  };
  switch (next.state) {
    case 'delivered':
      return {
        set: [...common.set, '#state = :delivered', '#deliveredAt = :now'],
        // Delivered rows are never listed: the index entry, if any, goes.
        remove: [...common.remove, ...NO_SCHEDULE, ...DEAD_FIELDS, '#listingKey', '#listingSort'],
        condition: `${MAY_RECORD_DELIVERED} AND ${history.condition}`,
        values: { ...common.values, ':delivered': 'delivered', ':now': nowMs },
        returns: 'NONE',
      };
    case 'pending':
      return {
        set: [
          ...common.set,
          // No lease (0) and due at the next attempt time.
          '#leaseExpiresAt = :zero',
          '#nextAttemptAt = :nextAttemptAt',
          // Listed as pending from its first failure on. Rewriting the same key costs no index
          // write; the sort position keeps the first failure's time (a later one would move the
          // entry: a delete and a put in the index on every retry).
          '#listingKey = :listingKey',
          '#listingSort = if_not_exists(#listingSort, :listingSort)',
        ],
        remove: common.remove,
        condition: `${MAY_RECORD_FAILURE} AND ${history.condition}`,
        values: {
          ...common.values,
          ':claimToken': input.claimToken,
          ':pending': 'pending',
          ':zero': 0,
          ':nextAttemptAt': next.nextAttemptAt,
          ':listingKey': listingKey('pending', input),
          ':listingSort': listingSort(nowMs, input),
        },
        returns: 'NONE',
      };
    case 'dead':
      return {
        set: [...common.set, ...died(), '#deadReason = :deadReason', '#deadDetail = :deadDetail'],
        remove: [...common.remove, ...NO_SCHEDULE],
        condition: `${MAY_RECORD_FAILURE} AND ${history.condition}`,
        values: {
          ...common.values,
          ...diedValues(input, nowMs),
          ':claimToken': input.claimToken,
          ':pending': 'pending',
          ':deadReason': next.reason,
          ':deadDetail': next.detail,
        },
        returns: 'NONE',
      };
  }
}

/** A pending row whose budget is spent and whose last claim's lease lapsed, marked dead. */
export function markExhaustedSpec(key: DeliveryKey, nowMs: number): UpdateSpec {
  return {
    set: [...died(), MOVE_EXPIRY, '#deadReason = :exhausted', '#deadDetail = :detail'],
    remove: [...RELEASE_CLAIM, ...NO_SCHEDULE],
    condition: MAY_MARK_EXHAUSTED.expression,
    values: {
      ...diedValues(key, nowMs),
      ':pending': 'pending',
      ':exhausted': 'exhausted',
      ':detail': EXHAUSTED_WITHOUT_OUTCOME_DETAIL,
      ':nowSeconds': Math.floor(nowMs / 1000),
    },
    returns: 'ALL_NEW',
  };
}

/**
 * A dead row back to pending: a fresh budget, one more replay, its audit entry, due at once.
 * `auditLength` is unknown on the first try (`appendBounded`).
 */
export function replaySpec(input: ReplayInput, entry: AuditEntry, auditLength: number | undefined): UpdateSpec {
  const { nowMs } = input;
  const audit = appendBounded('audit', auditValue(entry), MAX_AUDIT, auditLength);
  return {
    set: [
      '#state = :pending',
      // A fresh budget under the row's own policy; the body and event ID are kept as they are.
      '#attempts = :zero',
      // The total, which the bounded audit no longer shows.
      '#replays = if_not_exists(#replays, :zero) + :one',
      ...audit.set,
      MOVE_EXPIRY,
      // No lease, and due at once: 0, not the operator's clock, which may run ahead of the workers'.
      '#leaseExpiresAt = :zero',
      '#nextAttemptAt = :zero',
      // Listed as pending from now: if its message is lost, the recovery sweep finds it.
      '#listingKey = :listingKey',
      '#listingSort = :listingSort',
    ],
    remove: [...audit.remove, ...DEAD_FIELDS, ...RELEASE_CLAIM],
    condition: `${REPLAY_CONDITION} AND ${audit.condition}`,
    values: {
      ...audit.values,
      ':dead': 'dead',
      ':pending': 'pending',
      ':zero': 0,
      ':one': 1,
      ':nowSeconds': Math.floor(nowMs / 1000),
      ':listingKey': listingKey('pending', input),
      ':listingSort': listingSort(nowMs, input),
    },
    returns: 'ALL_NEW',
  };
}

/**
 * `entry` appended to the list `field`, keeping its newest `max`, in the same write and without
 * reading the row first. DynamoDB cannot append and drop the head of one list in one expression
 * without knowing its length (`SET h = list_append(h, :e) REMOVE h[0]` is refused: the paths
 * overlap). So: append while `size(h) < max` holds (a list within its bound: one write); once the
 * list is full that clause fails, the caller reads the row (free on AWS: ALL_OLD) and retries with
 * the length it saw, `SET h[n] = :e REMOVE h[0]` under `size(h) = n`. Whichever order DynamoDB
 * applies the two actions in, the result is the last `max` entries. A row without the list (no
 * audit before its first replay) reads as empty.
 */
function appendBounded(field: 'history' | 'audit', entry: unknown, max: number, length: number | undefined) {
  if (length !== undefined && length >= max) {
    return {
      set: [`#${field}[${length}] = :${field}Entry`],
      remove: Array.from({ length: length - max + 1 }, (_, i) => `#${field}[${i}]`),
      condition: `size(#${field}) = :${field}Length`,
      values: { [`:${field}Entry`]: entry, [`:${field}Length`]: length },
    };
  }
  return {
    set: [`#${field} = list_append(if_not_exists(#${field}, :empty), :${field}Entries)`],
    remove: [],
    condition: `(attribute_not_exists(#${field}) OR size(#${field}) < :${field}Max)`,
    values: { [`:${field}Entries`]: [entry], [`:${field}Max`]: max, ':empty': [] },
  };
}

/** Dead from now, listed as dead from now. */
function died(): string[] {
  return ['#state = :dead', '#deadAt = :now', '#listingKey = :listingKey', '#listingSort = :listingSort'];
}

function diedValues(key: DeliveryKey, nowMs: number): Record<string, unknown> {
  return { ':dead': 'dead', ':now': nowMs, ':listingKey': listingKey('dead', key), ':listingSort': listingSort(nowMs, key) };
}

/** An update and its condition as sent: placeholders shortened, with what they stand for. */
export interface CompiledExpressions {
  readonly update: string;
  readonly condition: string;
  /** Short name placeholder (`#0`) to the attribute's stored name. */
  readonly names: Record<string, string>;
  /** Readable value placeholder (`:now`) to the short one sent (`:0`). */
  readonly values: Record<string, string>;
}

/** Compiled expressions by their readable text. The specs are a handful of fixed shapes. */
const compiledExpressions = new Map<string, CompiledExpressions>();
const MAX_COMPILED_EXPRESSIONS = 64;

/**
 * Every byte of an expression is sent, signed and parsed on every write, so placeholders go out
 * short (`#3 < #4`), compiled once per shape. `#field` stands for the record field's stored name.
 */
export function compile(spec: Pick<UpdateSpec, 'set' | 'remove' | 'condition'>): CompiledExpressions {
  const update = [`SET ${spec.set.join(', ')}`, ...(spec.remove?.length ? [`REMOVE ${spec.remove.join(', ')}`] : [])].join(' ');
  const text = `${update}\n${spec.condition}`;
  const known = compiledExpressions.get(text);
  if (known !== undefined) return known;
  const names: Record<string, string> = {};
  const shortNames = new Map<string, string>();
  const values: Record<string, string> = {};
  const shorten = (expression: string) =>
    expression
      .replace(/#(\w+)/g, (_, field: string) => {
        let short = shortNames.get(field);
        if (short === undefined) {
          short = `#${shortNames.size.toString(36)}`;
          shortNames.set(field, short);
          names[short] = (WIRE_NAMES as Record<string, string>)[field] ?? field;
        }
        return short;
      })
      .replace(/:(\w+)/g, (placeholder: string) => (values[placeholder] ??= `:${Object.keys(values).length.toString(36)}`));
  const compiled = { update: shorten(update), condition: shorten(spec.condition), names, values };
  if (compiledExpressions.size >= MAX_COMPILED_EXPRESSIONS) compiledExpressions.clear();
  compiledExpressions.set(text, compiled);
  return compiled;
}
