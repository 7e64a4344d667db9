/**
 * A ledger row as a DynamoDB item, and back: short attribute names (`WIRE_NAMES`), and compact
 * values where the bytes are paid on every write: the content hash as its 32 bytes, each history
 * entry as one short string, the policy without the budget it repeats. Nothing here knows about
 * conditions or what a transition changes; `dynamodb-expressions.ts` and the put of an invalid
 * message's row write every field through `storedValue`, and every read comes back through
 * `rowFromItem`.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { convertToAttr } from '@aws-sdk/util-dynamodb';
import { WIRE_NAMES } from './dynamodb-schema';
import type { AttemptEntry, AuditEntry, DeliveryKey, DeliveryRecord } from './ledger';
import { listingKey } from './listing';
import { readRecord } from './rows';
import type { ChangeableRow, Field } from './transitions';
import type { AttemptOutcome, OutcomeKind } from '../outcome';
import type { RetryPolicy } from '../policy';

export type Item = Record<string, AttributeValue>;

const W = WIRE_NAMES;

/** A value already in DynamoDB's wire format: sent as it is. */
export class Marshalled {
  constructor(readonly attribute: AttributeValue) {}
}

const MARSHALL_OPTIONS = { removeUndefinedValues: true } as const;

/**
 * One value in DynamoDB's wire format, `undefined` members left out. The JSON-like values the
 * ledger writes (strings, safe integers, plain objects and lists of them) are marshalled directly;
 * anything else as the document client would.
 */
export function toAttribute(value: unknown): AttributeValue {
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number' && Number.isSafeInteger(value)) return { N: String(value) };
  if (typeof value === 'boolean') return { BOOL: value };
  if (value instanceof Marshalled) return value.attribute;
  if (Array.isArray(value)) return { L: value.filter((item) => item !== undefined).map(toAttribute) };
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    const members: Record<string, AttributeValue> = {};
    for (const [name, member] of Object.entries(value)) if (member !== undefined) members[name] = toAttribute(member);
    return { M: members };
  }
  return convertToAttr(value as never, MARSHALL_OPTIONS);
}

export function keyItem(key: DeliveryKey): Item {
  return { [W.eventId]: { S: key.eventId }, [W.endpoint]: { S: key.endpoint } };
}

/** The SHA-256 content hash (hex in the record) as its 32 bytes: half the size. */
export function hashValue(contentHash: string): Marshalled {
  return new Marshalled({ B: Buffer.from(contentHash, 'hex') });
}

/** The policy as stored: its version and waits (the budget is the row's own `maxAttempts`). Marshalled once per policy. */
const policyValues = new WeakMap<RetryPolicy, Marshalled>();
export function policyValue(policy: RetryPolicy): Marshalled {
  let value = policyValues.get(policy);
  if (value === undefined) {
    value = new Marshalled(toAttribute({ v: policy.version, w: policy.waitsSeconds }));
    policyValues.set(policy, value);
  }
  return value;
}

/**
 * One history entry as one string, `attempt:at:outcome:durationMs[:status[:cause]]`: a list of
 * short strings instead of maps with six member names each. The fields hold no `:`.
 */
export function historyValue(entry: AttemptEntry): string {
  const tail = entry.cause !== undefined ? `:${entry.status ?? ''}:${entry.cause}` : entry.status !== undefined ? `:${entry.status}` : '';
  return `${entry.attempt}:${entry.at}:${entry.outcome}:${entry.durationMs}${tail}`;
}

function historyEntry(text: string): AttemptEntry {
  const [attempt, at, outcome, durationMs, status, cause] = text.split(':');
  const entry: { -readonly [K in keyof AttemptEntry]: AttemptEntry[K] } = {
    attempt: Number(attempt),
    at: Number(at),
    outcome: outcome as OutcomeKind,
    durationMs: Number(durationMs),
  };
  if (status !== undefined && status !== '') entry.status = Number(status);
  if (cause !== undefined) entry.cause = cause;
  return entry;
}

const OUTCOME_MEMBERS = { kind: 'k', status: 's', responseStart: 'r', cause: 'c', retryAfterSeconds: 'ra' } as const;

export function outcomeValue(outcome: AttemptOutcome): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const [member, short] of Object.entries(OUTCOME_MEMBERS)) {
    const field = (outcome as Record<string, unknown>)[member];
    if (field !== undefined) value[short] = field;
  }
  return value;
}

const AUDIT_MEMBERS = { at: 't', action: 'a', operator: 'op', reason: 'r', caller: 'cl', id: 'id' } as const;

export function auditValue(entry: AuditEntry): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const [member, short] of Object.entries(AUDIT_MEMBERS)) {
    const field = (entry as unknown as Record<string, unknown>)[member];
    if (field !== undefined) value[short] = field;
  }
  return value;
}

function fromShort<T>(members: Readonly<Record<string, string>>, value: AttributeValue | undefined): T {
  const stored = value?.M ?? {};
  const result: Record<string, unknown> = {};
  for (const [member, short] of Object.entries(members)) {
    const field = stored[short];
    if (field !== undefined) result[member] = field.N !== undefined ? Number(field.N) : field.S;
  }
  return result as T;
}

/** The record an item reads as (`readRecord`: what a row omits, restored). */
export function recordFromItem(item: Item): DeliveryRecord {
  return readRecord(rowFromItem(item));
}

/**
 * A row as the item stores it, with each attribute's record field and value: a lease or wait
 * stored as 0 ("none") is absent. Not the listing: no transition reads it back.
 */
export function rowFromItem(item: Item): ChangeableRow {
  const s = (name: string) => item[name]?.S;
  const n = (name: string) => (item[name]?.N === undefined ? undefined : Number(item[name]?.N));
  const positive = (name: string) => {
    const value = n(name);
    return value === undefined || value === 0 ? undefined : value;
  };
  const hash = item[W.contentHash]?.B;
  const policy = item[W.policy]?.M;
  const maxAttempts = n(W.maxAttempts);
  const row: Record<string, unknown> = {
    eventId: s(W.eventId),
    endpoint: s(W.endpoint),
    state: s(W.state),
    body: s(W.body),
    contentHash: hash === undefined ? undefined : Buffer.from(hash).toString('hex'),
    eventType: s(W.eventType),
    attempts: n(W.attempts) ?? 0,
    maxAttempts: maxAttempts ?? 0,
    policy: {
      version: policy?.v?.S ?? '',
      maxAttempts: maxAttempts ?? 0,
      waitsSeconds: (policy?.w?.L ?? []).map((wait) => Number(wait.N)),
    },
    history: (item[W.history]?.L ?? []).map((entry) => historyEntry(entry.S ?? '')),
    lastOutcome: item[W.lastOutcome] === undefined ? undefined : fromShort<AttemptOutcome>(OUTCOME_MEMBERS, item[W.lastOutcome]),
    nextAttemptAt: positive(W.nextAttemptAt),
    leaseOwner: s(W.leaseOwner),
    leaseExpiresAt: positive(W.leaseExpiresAt),
    claimToken: s(W.claimToken),
    replays: n(W.replays),
    audit: item[W.audit]?.L?.map((entry) => fromShort<AuditEntry>(AUDIT_MEMBERS, entry)),
    deadReason: s(W.deadReason),
    deadDetail: s(W.deadDetail),
    createdAt: n(W.createdAt),
    deliveredAt: n(W.deliveredAt),
    deadAt: n(W.deadAt),
    expiresAt: n(W.expiresAt),
    retentionSeconds: n(W.retentionSeconds),
    parkedAt: n(W.parkedAt),
    sequence: n(W.sequence),
    shipmentId: s(W.shipmentId),
    releasedAt: n(W.releasedAt),
    traceparent: s(W.traceparent),
  };
  for (const name of Object.keys(row)) if (row[name] === undefined) delete row[name];
  return row as ChangeableRow;
}

/** How each field's value is stored, where not as it is (`toAttribute`). */
const STORED_AS: Partial<Record<Field, (value: never) => unknown>> = {
  contentHash: hashValue,
  policy: policyValue,
  lastOutcome: outcomeValue,
  history: (entries: readonly AttemptEntry[]) => entries.map(historyValue),
  audit: (entries: readonly AuditEntry[]) => entries.map(auditValue),
};

/** A field's value as the item stores it. */
export function storedValue(field: Field, value: unknown): unknown {
  const encode = STORED_AS[field] as ((value: unknown) => unknown) | undefined;
  return encode === undefined ? value : encode(value);
}

/** One entry of a stored list as the item stores it. */
export function storedEntry(field: 'history' | 'audit', entry: unknown): unknown {
  return (storedValue(field, [entry]) as unknown[])[0];
}

/** The item of a whole row, as a put writes it: each field under its stored name, and its listing. */
export function itemOf(row: ChangeableRow, key: DeliveryKey): Item {
  const item: Item = keyItem(key);
  for (const [field, value] of Object.entries(row)) {
    const name = (W as Record<string, string>)[field];
    if (name !== undefined && value !== undefined && !(name in item)) item[name] = toAttribute(storedValue(field as Field, value));
  }
  if (row.listing !== undefined) {
    item[W.listingKey] = { S: listingKey(row.listing.state, key) };
    item[W.listingSort] = { S: row.listing.sort };
  }
  return item;
}
