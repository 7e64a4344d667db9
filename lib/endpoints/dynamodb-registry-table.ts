/**
 * The endpoint registry's table on DynamoDB (registry-schema.ts), as the registry and its health and
 * resume writes share it: the attribute names every write uses, an item to and from a record, and
 * how a store call fails.
 *
 * Health's attributes are top-level, not one map: DynamoDB cannot SET a path inside a map that does
 * not exist yet, so a map would cost a second conditional write on every endpoint's first failure.
 */
import { ConditionalCheckFailedException, type DynamoDBClient, type PutItemCommandInput, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { randomInt } from 'node:crypto';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { conditionalWrite, errorName, type ConditionalWriteInput, type Item as StoredItem } from '../dynamodb/conditional-write';
import { ENDPOINT_STATES, parseEndpointFields, type EndpointFields, type EndpointRecord, type StateChange } from './endpoint';
import { EndpointError, EndpointRegistryError } from '../errors';
import type { EndpointHealth, HealthRecord } from './health-rules';
import { type Subscription } from './registry';
import { CHANGE_FEED, isScheduleKey, REGISTRY_SCHEMA } from './registry-schema';
import { quoted } from '../terminal';

const A = REGISTRY_SCHEMA.attributes;
/** The health's attributes on an endpoint's item (epoch ms, and a count). */
export const HEALTH_ATTRIBUTES = {
  pausedUntil: A.pausedUntil,
  failures: A.failures,
  failingSince: A.failingSince,
  lastAcceptedAt: A.lastAcceptedAt,
  probeUntil: A.probeUntil,
} as const;
const H = HEALTH_ATTRIBUTES;
export const KEY = REGISTRY_SCHEMA.partitionKey;
/** Expression names, the same in every write. */
export const NAMES = {
  '#name': KEY,
  '#fields': A.fields,
  '#state': A.state,
  '#stateChange': A.stateChange,
  '#updatedAt': A.updatedAt,
} as const;

/** What marks a write consumers must see (the change index's keys): `changedAt` then `feed`. */
export const CHANGE_NAMES = { '#changedAt': A.changedAt, '#feed': A.feed } as const;
export const SET_CHANGE = '#changedAt = :changedAt, #feed = :feed';
export function changeValues(nowMs: number): { ':changedAt': number; ':feed': string } {
  return { ':changedAt': changeStamp(nowMs), ':feed': CHANGE_FEED };
}

/**
 * A change's stamp: the writer's epoch ms and a random thousandth of a millisecond. A copy knows an
 * item changed by its stamp differing from the one it holds (lib/endpoints/registry-copy.ts), so two
 * changes of one item within one millisecond (a consumer's pause and an operator's update) must not
 * share one; with the fraction they do once in a thousand such pairs, not always. Three decimals
 * keep the value exact through DynamoDB's decimal numbers and back into a double.
 */
export function changeStamp(nowMs: number): number {
  return Math.trunc(nowMs) + randomInt(1, 1000) / 1000;
}

/** A removed endpoint's item (registry-schema.ts `removedAt`): every read takes it as absent. */
export function isTombstone(item: Item): boolean {
  return item[A.removedAt] !== undefined;
}

/** A release of parked deliveries (lib/resume.ts): its attributes, and the clause that ends one. */
export const RESUME_NAMES = { '#resumeSince': A.resumeSince, '#resumeRate': A.resumeRate, '#resumeUntil': A.resumeUntil } as const;
export const END_RESUME = 'REMOVE #resumeSince, #resumeRate, #resumeUntil';
/** What a change of state names: the item, its state, who changed it and when, and the release it begins or ends. */
export const STATE_CHANGE_NAMES = {
  '#name': NAMES['#name'],
  '#state': NAMES['#state'],
  '#stateChange': NAMES['#stateChange'],
  '#updatedAt': NAMES['#updatedAt'],
  ...RESUME_NAMES,
} as const;

export type Item = Record<string, unknown>;

/** A conditional write on one endpoint's item, its values as the document client takes them. */
export type RegistryWrite =
  | { readonly update: Omit<UpdateItemCommandInput, 'TableName' | 'Key' | 'ExpressionAttributeValues'> & { readonly ExpressionAttributeValues?: Item } }
  | { readonly put: Omit<PutItemCommandInput, 'TableName' | 'Item'> & { readonly Item: Item } };

/** Written, the item the write asked for; refused, the endpoint as it stands when asked to read it (none: gone). */
export type RegistryWriteResult =
  | { readonly written: true; readonly item: Item }
  | { readonly written: false; readonly current: HealthRecord | undefined; readonly cause: ConditionalCheckFailedException };

/** The table as the registry's writes share it: its client and name, each read and call made one way. */
export class RegistryTable {
  constructor(
    readonly client: DynamoDBDocumentClient,
    readonly name: string,
  ) {}

  /** One endpoint's item as a record, read consistently (a tombstone, or a rate schedule's key: none). @throws EndpointRegistryError */
  async get(name: string): Promise<HealthRecord | undefined> {
    if (isScheduleKey(name)) return undefined;
    const { Item } = await this.guard(`read endpoint ${quoted(name)}`, () =>
      this.client.send(new GetCommand({ TableName: this.name, Key: { [KEY]: name }, ConsistentRead: true })),
    );
    return Item === undefined || isTombstone(Item) ? undefined : this.recordFrom(Item);
  }

  /** An item as a record, checked as the fields of a new endpoint are. @throws EndpointRegistryError */
  recordFrom(item: Item): HealthRecord {
    const key = typeof item[KEY] === 'string' ? (item[KEY] as string) : '?';
    const invalid = (problem: string, cause?: unknown): never => {
      const subscription = subscriptionOf(item[A.fields]);
      throw new EndpointRegistryError(
        'registry-item-invalid',
        `endpoint registry ${this.name}: the item of endpoint ${quoted(key.slice(0, 64))} cannot be used: ${problem}`,
        { cause, endpoint: key, ...(subscription !== undefined ? { subscription } : {}) },
      );
    };
    let fields: EndpointFields;
    try {
      fields = parseEndpointFields(item[A.fields]);
    } catch (error) {
      if (error instanceof EndpointError) return invalid(`${A.fields}: ${error.message}`, error);
      throw error;
    }
    if (fields.name !== key) invalid(`${A.fields}.name is ${quoted(fields.name)}, not its key`);
    const state = item[A.state];
    if (typeof state !== 'string' || !(ENDPOINT_STATES as readonly string[]).includes(state)) {
      invalid(`${A.state} must be one of ${ENDPOINT_STATES.join(', ')}`);
    }
    const createdAt = item[A.createdAt];
    const updatedAt = item[A.updatedAt];
    if (!isEpochMs(createdAt)) invalid(`${A.createdAt} must be epoch milliseconds`);
    if (!isEpochMs(updatedAt)) invalid(`${A.updatedAt} must be epoch milliseconds`);
    const change = item[A.stateChange] as Partial<StateChange> | undefined;
    if (change !== undefined && (typeof change !== 'object' || change === null || typeof change.by !== 'string' || typeof change.reason !== 'string' || !isEpochMs(change.at))) {
      invalid(`${A.stateChange} must hold by, reason and at`);
    }
    const health = healthFrom(item);
    return {
      fields,
      state: state as EndpointRecord['state'],
      ...(change !== undefined ? { stateChange: { by: change.by!, reason: change.reason!, at: change.at! } } : {}),
      createdAt: createdAt as number,
      updatedAt: updatedAt as number,
      ...(health !== undefined ? { health } : {}),
    };
  }

  /**
   * One conditional write on the item of endpoint `name` (lib/dynamodb/conditional-write.ts), its
   * values marshalled as the document client marshals them. With `readRefused`, a refusal reads the
   * endpoint consistently, as `get` does. @throws EndpointRegistryError (the registry unavailable, or
   * the item read cannot be used)
   */
  async write(name: string, subject: string, write: RegistryWrite, readRefused = false): Promise<RegistryWriteResult> {
    // As the client's own commands marshal, each item here a whole item (the document client's
    // commands change these shared options to marshal their own inputs).
    const { marshallOptions, unmarshallOptions } = this.client.config.translateConfig ?? {};
    const toStored = (item: Item): StoredItem => marshall(item, { ...marshallOptions, convertTopLevelContainer: false });
    const fromStored = (item: StoredItem): Item => unmarshall(item, { ...unmarshallOptions, convertWithoutMapWrapper: false });
    const key = toStored({ [KEY]: name });
    let input: ConditionalWriteInput;
    if ('update' in write) {
      const { ExpressionAttributeValues: values, ...update } = write.update;
      input = { update: { ...update, TableName: this.name, Key: key, ...(values !== undefined ? { ExpressionAttributeValues: toStored(values) } : {}) } };
    } else {
      input = { put: { ...write.put, TableName: this.name, Item: toStored(write.put.Item) } };
    }
    const result = await conditionalWrite<HealthRecord | undefined>(this.client as unknown as DynamoDBClient, input, {
      unavailable: (error, call) => this.#unavailable(call === 'write' ? subject : `read endpoint ${quoted(name)}`, error),
      decode: (item) => {
        const stored = fromStored(item);
        return isTombstone(stored) ? undefined : this.recordFrom(stored);
      },
      ...(readRefused ? { read: { TableName: this.name, Key: key, ConsistentRead: true } } : {}),
    });
    return result.written ? { written: true, item: fromStored(result.item) } : result;
  }

  /**
   * Runs one store call. A refused condition passes through for the caller to turn into a domain
   * answer; every other failure is the registry being unavailable.
   */
  async guard<T>(subject: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw error;
      throw this.#unavailable(subject, error);
    }
  }

  #unavailable(subject: string, error: unknown): EndpointRegistryError {
    return new EndpointRegistryError('registry-unavailable', `endpoint registry ${this.name} failed to ${subject}: ${errorName(error)}`, { cause: error });
  }
}

/**
 * What an item that cannot be used subscribes to, when its `eventTypes` and `match` pass the checks
 * every endpoint's do: the deliveries routing must hold for it are then only the events it subscribes
 * to (unknown: every event's).
 */
function subscriptionOf(fields: unknown): Subscription | undefined {
  if (typeof fields !== 'object' || fields === null) return undefined;
  const { eventTypes, match } = fields as Record<string, unknown>;
  try {
    const checked = parseEndpointFields({ name: 'unreadable', url: 'https://unreadable.invalid/', eventTypes, ...(match !== undefined ? { match } : {}) });
    return { eventTypes: checked.eventTypes, match: checked.match ?? {} };
  } catch {
    return undefined;
  }
}

/** A new endpoint's item, marked as a change (`changedAt`) and with its owner at the top level for the owner index. */
export function itemOf(record: EndpointRecord, nowMs: number): Item {
  return {
    [KEY]: record.fields.name,
    [A.fields]: record.fields,
    [A.state]: record.state,
    ...(record.stateChange !== undefined ? { [A.stateChange]: record.stateChange } : {}),
    [A.createdAt]: record.createdAt,
    [A.updatedAt]: record.updatedAt,
    [A.changedAt]: changeStamp(nowMs),
    [A.feed]: CHANGE_FEED,
    ...(record.fields.owner !== undefined ? { [A.owner]: record.fields.owner } : {}),
  };
}

/** A removed endpoint's item: its key and when, so copies learn of the removal, gone by TTL a day later. */
export function tombstoneOf(name: string, nowMs: number): Item {
  return {
    [KEY]: name,
    [A.removedAt]: nowMs,
    [A.expiresAt]: Math.floor(nowMs / 1000) + TOMBSTONE_SECONDS,
    [A.changedAt]: changeStamp(nowMs),
    [A.feed]: CHANGE_FEED,
  };
}

/** How long a tombstone is kept: far longer than any copy goes without reading the changes. */
export const TOMBSTONE_SECONDS = 24 * 60 * 60;

/**
 * The health an item holds, if any. Consumers write it, so a value they could not have written is
 * left out rather than making the endpoint unusable: health only ever holds deliveries back.
 */
export function healthFrom(item: Item): EndpointHealth | undefined {
  const pausedUntil = item[H.pausedUntil];
  const failures = item[H.failures];
  const failingSince = item[H.failingSince];
  const lastAcceptedAt = item[H.lastAcceptedAt];
  const probeUntil = item[H.probeUntil];
  if (pausedUntil === undefined && failures === undefined && failingSince === undefined && lastAcceptedAt === undefined) return undefined;
  return {
    failures: isEpochMs(failures) ? failures : 0,
    ...(isEpochMs(pausedUntil) ? { pausedUntil } : {}),
    ...(isEpochMs(failingSince) ? { failingSince } : {}),
    ...(isEpochMs(lastAcceptedAt) ? { lastAcceptedAt } : {}),
    ...(isEpochMs(probeUntil) ? { probeUntil } : {}),
  };
}

function isEpochMs(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
