/**
 * The ledger's transitions (`transitions.ts`) as DynamoDB writes: each list of changes compiled
 * into one UpdateExpression, under the condition `guards.ts` gives it. Written readably
 * (`#attempts = if_not_exists(#attempts, :zero) + :attempts`, each `#name` a record field) and sent
 * with the short attribute names of `WIRE_NAMES` behind short placeholders, compiled once per shape.
 */
import type { ClaimInput, DeliveryKey, RecordAttemptInput, ReplayInput, AuditEntry } from './ledger';
import { hashValue, storedEntry, storedValue } from './dynamodb-item';
import { WIRE_NAMES } from './dynamodb-schema';
import { listingKey, listingSort } from './listing';
import { CLAIM_CONDITION, MAY_MARK_EXHAUSTED, MAY_RECORD, REPLAY_CONDITION } from './guards';
import { claimChanges, markExhaustedChanges, recordChanges, replayChanges, type Change } from './transitions';

export interface UpdateSpec {
  readonly set: readonly string[];
  readonly remove?: readonly string[];
  readonly condition: string;
  readonly values: Readonly<Record<string, unknown>>;
  /** What the write answers with: the new row, the row before it, or nothing (bytes not sent). */
  readonly returns: 'ALL_NEW' | 'ALL_OLD' | 'NONE';
}

/** How long each bounded list was when a write found it full; unknown on the first try. */
export type ListLengths = Partial<Record<'history' | 'audit', number>>;

/** The claim under `claimToken`. For a new event, nothing comes back (the adapter knows the row it created). */
export function claimSpec(input: ClaimInput, claimToken: string): UpdateSpec {
  const condition = { ':contentHash': hashValue(input.event.contentHash), ':pending': 'pending', ':now': input.nowMs };
  const key = { eventId: input.event.event.id, endpoint: input.endpoint };
  return updateSpec(key, claimChanges(input, claimToken), CLAIM_CONDITION, condition, 'ALL_OLD');
}

/** The write of one attempt's outcome; a 2xx needs no lease, any other outcome this claim's. */
export function recordSpec(input: RecordAttemptInput, lengths: ListLengths = {}): UpdateSpec {
  const changes = recordChanges(input);
  if (input.next.state === 'delivered') {
    return updateSpec(input, changes, MAY_RECORD.delivered.expression, { ':delivered': 'delivered' }, 'NONE', lengths);
  }
  const condition = { ':claimToken': input.claimToken, ':pending': 'pending' };
  return updateSpec(input, changes, MAY_RECORD.failure.expression, condition, 'NONE', lengths);
}

/** A pending row whose budget is spent and whose last claim's lease lapsed, marked dead. */
export function markExhaustedSpec(key: DeliveryKey, nowMs: number): UpdateSpec {
  return updateSpec(key, markExhaustedChanges(nowMs), MAY_MARK_EXHAUSTED.expression, { ':pending': 'pending', ':now': nowMs }, 'ALL_NEW');
}

/** A dead row back to pending, with its audit entry. */
export function replaySpec(input: ReplayInput, entry: AuditEntry, lengths: ListLengths = {}): UpdateSpec {
  return updateSpec(input, replayChanges(input, entry), REPLAY_CONDITION, { ':dead': 'dead' }, 'ALL_NEW', lengths);
}

/**
 * `changes` as one update under `condition` (whose placeholders `conditionValues` fills). Each
 * set value goes out under its field's name (`:state`), stored as the codec stores it.
 */
function updateSpec(
  key: DeliveryKey,
  changes: readonly Change[],
  condition: string,
  conditionValues: Readonly<Record<string, unknown>>,
  returns: UpdateSpec['returns'],
  lengths: ListLengths = {},
): UpdateSpec {
  const set: string[] = [];
  const remove: string[] = [];
  const conditions = [condition];
  const values: Record<string, unknown> = { ...conditionValues };
  for (const change of changes) {
    switch (change.op) {
      case 'set':
        set.push(`#${change.field} = :${change.field}`);
        values[`:${change.field}`] = storedValue(change.field, change.value);
        break;
      case 'init':
        set.push(`#${change.field} = if_not_exists(#${change.field}, :${change.field})`);
        values[`:${change.field}`] = storedValue(change.field, change.value);
        break;
      case 'add':
        set.push(`#${change.field} = if_not_exists(#${change.field}, :zero) + :${change.field}`);
        values[':zero'] = 0;
        values[`:${change.field}`] = change.by;
        break;
      case 'append': {
        const append = appendBounded(change.field, storedEntry(change.field, change.entry), change.max, lengths[change.field]);
        set.push(...append.set);
        remove.push(...append.remove);
        conditions.push(append.condition);
        Object.assign(values, append.values);
        break;
      }
      case 'remove':
        remove.push(...change.fields.map((field) => `#${field}`));
        break;
      case 'none':
        // Stored as 0, so the claim's clauses compare a number that is there.
        set.push(change.ifAbsent === true ? `#${change.field} = if_not_exists(#${change.field}, :zero)` : `#${change.field} = :zero`);
        values[':zero'] = 0;
        break;
      case 'moveExpiry':
        set.push('#expiresAt = :nowSeconds + #retentionSeconds');
        values[':nowSeconds'] = Math.floor(change.nowMs / 1000);
        break;
      case 'list':
        set.push('#listingKey = :listingKey', change.keepSort === true ? '#listingSort = if_not_exists(#listingSort, :listingSort)' : '#listingSort = :listingSort');
        values[':listingKey'] = listingKey(change.state, key);
        values[':listingSort'] = listingSort(change.sinceMs, key);
        break;
      case 'unlist':
        remove.push('#listingKey', '#listingSort');
        break;
    }
  }
  return { set, remove, condition: conditions.join(' AND '), values, returns };
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
