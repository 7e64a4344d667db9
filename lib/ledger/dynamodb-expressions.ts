/**
 * The ledger's transitions (`transitions.ts`) as DynamoDB writes: each list of changes compiled
 * into one UpdateExpression, under the condition `guards.ts` gives it. Written readably
 * (`#attempts = if_not_exists(#attempts, :zero) + :attempts`, each `#name` a record field) and sent
 * with the short attribute names of `WIRE_NAMES` behind short placeholders, compiled once per shape.
 */
import type { ClaimInput, DeliveryKey, ParkInput, RecordAttemptInput, ReleaseInput, ReplayInput, AuditEntry } from './ledger';
import { hashValue, storedEntry, storedValue } from './dynamodb-item';
import { WIRE_NAMES } from './dynamodb-schema';
import { listingKey, listingSort } from './listing';
import {
  CLAIM_CONDITION,
  MAY_MARK_EXHAUSTED,
  MAY_RECORD,
  MAY_RELIST,
  MAY_UNLIST,
  MAY_UNPARK,
  PARK_EXISTING_CONDITION,
  PARK_NEW_CONDITION,
  RELEASE_CONDITION,
  REPLAY_CONDITION,
} from './guards';
import {
  admitChanges,
  claimChanges,
  markExhaustedChanges,
  parkChanges,
  recordChanges,
  releaseChanges,
  replayChanges,
  relistChanges, unlistChanges, unparkChanges,
  type Change,
} from './transitions';

export interface UpdateSpec {
  /** The update and condition as sent, compiled once per shape of write. */
  readonly compiled: CompiledExpressions;
  /** Each readable value placeholder (`:now`) to its value, as the codec stores it. */
  readonly values: Readonly<Record<string, unknown>>;
  /** What the write answers with: the new row, the row before it, or nothing (bytes not sent). */
  readonly returns: 'ALL_NEW' | 'ALL_OLD' | 'NONE';
}

/** How long each bounded list was when a write found it full; unknown on the first try. */
export type ListLengths = Partial<Record<'history' | 'audit', number>>;

/** The claim under `claimToken`. For a new event, nothing comes back (the adapter knows the row it created). */
export function claimSpec(input: ClaimInput, claimToken: string, indexShipment = false): UpdateSpec {
  const condition = { ':contentHash': hashValue(input.event.contentHash), ':pending': 'pending', ':now': input.nowMs };
  const key = { eventId: input.event.event.id, endpoint: input.endpoint };
  // A traced claim writes the traceparent too (where the row has none): a shape of its own.
  const shape = `${creationShape('claim', input.sequence, indexShipment)}${input.traceparent !== undefined ? ' traced' : ''}`;
  return updateSpec(shape, key, claimChanges(input, claimToken, indexShipment), CLAIM_CONDITION, condition, 'ALL_OLD');
}

/**
 * The shape of a write that may create a row (`updateSpec`): its new-row fields hold the sequence
 * and its shipment, or the shipment alone (the shipment index's key), or neither.
 */
function creationShape(write: string, sequence: number | undefined, indexShipment: boolean): string {
  if (sequence !== undefined) return `${write} sequenced`;
  return indexShipment ? `${write} indexed` : write;
}

/** The write of one attempt's outcome; a 2xx needs no lease, any other outcome this claim's. */
export function recordSpec(input: RecordAttemptInput, lengths: ListLengths = {}): UpdateSpec {
  const changes = recordChanges(input);
  const released = input.next.state === 'dead' && input.next.passesTurn === true ? ' released' : '';
  const shape = `record ${input.next.state}${released} ${lengths.history ?? ''}`;
  if (input.next.state === 'delivered') {
    return updateSpec(shape, input, changes, MAY_RECORD.delivered.expression, { ':delivered': 'delivered' }, 'NONE', lengths);
  }
  const condition = { ':claimToken': input.claimToken, ':pending': 'pending' };
  return updateSpec(shape, input, changes, MAY_RECORD.failure.expression, condition, 'NONE', lengths);
}

/** A pending row whose budget is spent and whose last claim's lease lapsed, marked dead. */
export function markExhaustedSpec(key: DeliveryKey, nowMs: number, body: string): UpdateSpec {
  const condition = { ':pending': 'pending', ':now': nowMs };
  return updateSpec('markExhausted', key, markExhaustedChanges(nowMs, body), MAY_MARK_EXHAUSTED.expression, condition, 'ALL_NEW');
}

/** A dead row back to pending, with its audit entry. */
export function replaySpec(input: ReplayInput, entry: AuditEntry, lengths: ListLengths = {}): UpdateSpec {
  const shape = `replay ${lengths.audit ?? ''}`;
  return updateSpec(shape, input, replayChanges(input, entry), REPLAY_CONDITION, { ':dead': 'dead' }, 'ALL_NEW', lengths);
}

/** A dead row's release recorded (docs/contract.md §13): its audit entry, once a row. */
export function releaseSpec(input: ReleaseInput, entry: AuditEntry, lengths: ListLengths = {}): UpdateSpec {
  const shape = `release ${lengths.audit ?? ''}`;
  return updateSpec(shape, input, releaseChanges(input, entry), RELEASE_CONDITION, { ':dead': 'dead' }, 'ALL_NEW', lengths);
}

/**
 * Parking's first write: the row created (or an invalid message's taken over) parked, listed at
 * now. Answers with the row before it (ALL_OLD): nothing for a new event, whose row the adapter knows.
 */
export function parkNewSpec(input: ParkInput, indexShipment = false): UpdateSpec {
  const key = { eventId: input.event.event.id, endpoint: input.endpoint };
  const shape = creationShape('park new', input.sequence, indexShipment);
  return updateSpec(shape, key, parkChanges(input, undefined, indexShipment), PARK_NEW_CONDITION, {}, 'ALL_OLD');
}

/** An event admitted without a claim (`Ledger.admit`): only where the row is new or holds no event. */
export function admitSpec(input: ParkInput, indexShipment = false): UpdateSpec {
  const key = { eventId: input.event.event.id, endpoint: input.endpoint };
  const shape = creationShape('admit', input.sequence, indexShipment);
  return updateSpec(shape, key, admitChanges(input, indexShipment), PARK_NEW_CONDITION, {}, 'ALL_OLD');
}

/**
 * Parking's second write, on the existing row read from the first's refusal: listed at that row's
 * `createdAt`, under every park clause and the condition that the row is still the one read.
 */
export function parkExistingSpec(input: ParkInput, createdAt: number): UpdateSpec {
  const key = { eventId: input.event.event.id, endpoint: input.endpoint };
  const condition = {
    ':contentHash': hashValue(input.event.contentHash),
    ':pending': 'pending',
    ':now': input.nowMs,
    ':admittedAt': createdAt,
  };
  return updateSpec('park existing', key, parkChanges(input, { createdAt }), PARK_EXISTING_CONDITION, condition, 'ALL_NEW');
}

/** A pending row listed again from `sinceMs`. */
export function relistSpec(key: DeliveryKey, sinceMs: number): UpdateSpec {
  return updateSpec('relist', key, relistChanges(sinceMs), MAY_RELIST.expression, { ':pending': 'pending' }, 'NONE');
}

/** A row waiting for its first attempt taken out of the listing. */
export function unlistSpec(key: DeliveryKey): UpdateSpec {
  return updateSpec('unlist', key, unlistChanges(), MAY_UNLIST.expression, { ':pending': 'pending', ':zero': 0 }, 'NONE');
}

/** A parked row released, listed as pending since `listedSinceMs`. */
export function unparkSpec(key: DeliveryKey, nowMs: number, listedSinceMs: number): UpdateSpec {
  return updateSpec('unpark', key, unparkChanges(nowMs, listedSinceMs), MAY_UNPARK.expression, { ':pending': 'pending' }, 'ALL_NEW');
}

/**
 * `changes` as one update under `condition` (whose placeholders `conditionValues` fills). Each
 * set value goes out under its field's name (`:state`), stored as the codec stores it.
 *
 * The expressions' text depends only on `shape`: each caller's changes are the same operations on
 * the same fields every time, and `shape` names which list lengths it knows. So the text is
 * written and compiled on the first write of a shape; every write computes its values.
 */
function updateSpec(
  shape: string,
  key: DeliveryKey,
  changes: readonly Change[],
  condition: string,
  conditionValues: Readonly<Record<string, unknown>>,
  returns: UpdateSpec['returns'],
  lengths: ListLengths = {},
): UpdateSpec {
  let compiled = compiledShapes.get(shape);
  if (compiled === undefined) {
    compiled = compile(expressionsOf(changes, condition, lengths));
    compiledShapes.set(shape, compiled);
  }
  const values: Record<string, unknown> = Object.assign({}, conditionValues);
  for (const change of changes) {
    switch (change.op) {
      case 'set':
      case 'init':
        values[`:${change.field}`] = storedValue(change.field, change.value);
        break;
      case 'add':
        values[':zero'] = 0;
        values[`:${change.field}`] = change.by;
        break;
      case 'append': {
        const entry = storedEntry(change.field, change.entry);
        const length = lengths[change.field];
        if (length !== undefined && length >= change.max) {
          values[`:${change.field}Entry`] = entry;
          values[`:${change.field}Length`] = length;
        } else {
          values[`:${change.field}Entries`] = [entry];
          values[`:${change.field}Max`] = change.max;
          values[':empty'] = [];
        }
        break;
      }
      case 'none':
        values[':zero'] = 0;
        break;
      case 'moveExpiry':
        values[':nowSeconds'] = Math.floor(change.nowMs / 1000);
        break;
      case 'list':
        values[':listingKey'] = listingKey(change.state, key);
        values[':listingSort'] = listingSort(change.sinceMs, key);
        break;
      case 'remove':
      case 'unlist':
        break;
    }
  }
  return { compiled, values, returns };
}

/** Compiled expressions by the shape of write (`updateSpec`): a handful of fixed shapes. */
const compiledShapes = new Map<string, CompiledExpressions>();

/** The readable text of `changes` under `condition`: what `updateSpec` compiles once per shape. */
function expressionsOf(changes: readonly Change[], condition: string, lengths: ListLengths): Expressions {
  const set: string[] = [];
  const remove: string[] = [];
  const conditions = [condition];
  for (const change of changes) {
    switch (change.op) {
      case 'set':
        set.push(`#${change.field} = :${change.field}`);
        break;
      case 'init':
        set.push(`#${change.field} = if_not_exists(#${change.field}, :${change.field})`);
        break;
      case 'add':
        set.push(`#${change.field} = if_not_exists(#${change.field}, :zero) + :${change.field}`);
        break;
      case 'append': {
        const append = appendBounded(change.field, change.max, lengths[change.field]);
        set.push(...append.set);
        remove.push(...append.remove);
        conditions.push(append.condition);
        break;
      }
      case 'remove':
        remove.push(...change.fields.map((field) => `#${field}`));
        break;
      case 'none':
        // Stored as 0, so the claim's clauses compare a number that is there.
        set.push(change.ifAbsent === true ? `#${change.field} = if_not_exists(#${change.field}, :zero)` : `#${change.field} = :zero`);
        break;
      case 'moveExpiry':
        set.push('#expiresAt = :nowSeconds + #retentionSeconds');
        break;
      case 'list':
        set.push('#listingKey = :listingKey', '#listingSort = :listingSort');
        break;
      case 'unlist':
        remove.push('#listingKey', '#listingSort');
        break;
    }
  }
  return { set, remove, condition: conditions.join(' AND ') };
}

/**
 * An entry appended to the list `field`, keeping its newest `max`, in the same write and without
 * reading the row first. DynamoDB cannot append and drop the head of one list in one expression
 * without knowing its length (`SET h = list_append(h, :e) REMOVE h[0]` is refused: the paths
 * overlap). So: append while `size(h) < max` holds (a list within its bound: one write); once the
 * list is full that clause fails, the caller reads the row (free on AWS: ALL_OLD) and retries with
 * the length it saw, `SET h[n] = :e REMOVE h[0]` under `size(h) = n`. Whichever order DynamoDB
 * applies the two actions in, the result is the last `max` entries. A row without the list (no
 * audit before its first replay) reads as empty. Its values are set in `updateSpec`.
 */
function appendBounded(field: 'history' | 'audit', max: number, length: number | undefined) {
  if (length !== undefined && length >= max) {
    return {
      set: [`#${field}[${length}] = :${field}Entry`],
      remove: Array.from({ length: length - max + 1 }, (_, i) => `#${field}[${i}]`),
      condition: `size(#${field}) = :${field}Length`,
    };
  }
  return {
    set: [`#${field} = list_append(if_not_exists(#${field}, :empty), :${field}Entries)`],
    remove: [],
    condition: `(attribute_not_exists(#${field}) OR size(#${field}) < :${field}Max)`,
  };
}

/** An update's clauses and its condition, readable (`#field`, `:value`). */
interface Expressions {
  readonly set: readonly string[];
  readonly remove: readonly string[];
  readonly condition: string;
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

/**
 * Every byte of an expression is sent, signed and parsed on every write, so placeholders go out
 * short (`#3 < #4`), compiled once per shape. `#field` stands for the record field's stored name.
 */
function compile(spec: Expressions): CompiledExpressions {
  const update = [...(spec.set.length > 0 ? [`SET ${spec.set.join(', ')}`] : []), ...(spec.remove.length > 0 ? [`REMOVE ${spec.remove.join(', ')}`] : [])].join(' ');
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
  return { update: shorten(update), condition: shorten(spec.condition), names, values };
}
