/**
 * The endpoint registry on DynamoDB (docs/contract.md §11): one item per endpoint in a table keyed
 * by `name` (registry-schema.ts), every change one conditional write, so two operators never lose
 * each other's changes: `add` only where no endpoint has the name, `update` only while the item is
 * the one its caller read (`updatedAt`), `setState` and `remove` only where it exists.
 *
 * Fields are stored as given (after `parseEndpointFields`), except a plain `whsec_…` secret (or
 * previous secret) when the registry has a `cipher`: that is stored encrypted with it
 * (`encrypted:<scheme>:…`, lib/endpoints/secret-cipher.ts), bound to its endpoint. A Secrets Manager
 * ARN, or a value encrypted already, is stored as it is. Reads are consistent and check every item the same way, so the
 * consumer and the command never act on an item they cannot read. A refused condition becomes
 * `EndpointNotFoundError` or `EndpointConflictError`; any other store failure
 * `EndpointRegistryError`. Nothing above this file sees an SDK error type.
 *
 * Health (lib/endpoints/health.ts) is written by consumers with UpdateItem on attributes of its own
 * beside `fields` (HEALTH_ATTRIBUTES), never touching `fields` or `updatedAt`, so an operator's
 * update is never refused because a consumer counted a failure. They are top-level attributes, not
 * one map: DynamoDB cannot SET a path inside a map that does not exist yet, so a map would cost a
 * second conditional write on every endpoint's first failure.
 */
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { ENDPOINT_STATES, EndpointError, parseEndpointFields, type EndpointFields, type EndpointRecord, type StateChange } from './endpoint';
import type { EndpointHealth, HealthRecord, HealthStore, ProbeClaim } from './health';
import type { EndpointSecretCipher } from './secret-cipher';
import {
  EndpointConflictError,
  EndpointNotFoundError,
  EndpointRegistryError,
  withUnreadable,
  type EndpointRegistry,
  type Subscription,
} from './registry';
import { REGISTRY_SCHEMA } from './registry-schema';
import { DEFAULT_RESUME_RATE, type ResumeStore } from '../resume';
import { quoted } from '../terminal';
import { SECRET_PREFIX } from '../webhook/signing-secret';

export interface DynamoDbEndpointRegistryOptions {
  /** A DynamoDB client; a plain one is wrapped in a document client. */
  readonly client: DynamoDBDocumentClient | DynamoDBClient;
  readonly tableName: string;
  /** Items per Scan request (default: as many as fit DynamoDB's 1 MB page). */
  readonly scanPageSize?: number;
  /**
   * Told of each item `list` cannot use (written by hand, or by a newer version), which `list` then
   * leaves out, so one bad item does not stop delivery to every other endpoint; the list it returns
   * still carries them (`unreadableOf`, lib/endpoints/registry.ts), for routing to hold the
   * deliveries that would go to them. Unset: `list` fails on such an item.
   */
  readonly onUnreadable?: (error: EndpointRegistryError) => void;
  /**
   * What encrypts a plain `whsec_…` secret (and previous secret) before `add` or `update` writes it:
   * `handoff endpoint` gives the target's (the registry's KMS key, the sandbox's local key), so no
   * write of the command leaves a secret in the clear, and a plain value from before is encrypted
   * when its endpoint is next written. Its failure (SecretEncryptionError, or what it throws) fails
   * the write, which writes nothing. Unset: secrets are stored as given (the sandbox's seeding).
   */
  readonly cipher?: Pick<EndpointSecretCipher, 'encrypt'>;
}

/** Every item of the table: those it can use, and why each other one cannot be. */
export interface RegistryScan {
  readonly records: HealthRecord[];
  readonly unreadable: EndpointRegistryError[];
}

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
const KEY = REGISTRY_SCHEMA.partitionKey;
/** Expression names, the same in every write. */
const NAMES = {
  '#name': KEY,
  '#fields': A.fields,
  '#state': A.state,
  '#stateChange': A.stateChange,
  '#updatedAt': A.updatedAt,
} as const;

/** A release of parked deliveries (lib/resume.ts): its attributes, and the clause that ends one. */
const RESUME_NAMES = { '#resumeSince': A.resumeSince, '#resumeRate': A.resumeRate, '#resumeUntil': A.resumeUntil } as const;
const END_RESUME = 'REMOVE #resumeSince, #resumeRate, #resumeUntil';

type Item = Record<string, unknown>;

export class DynamoDbEndpointRegistry implements EndpointRegistry, HealthStore, ResumeStore {
  readonly #client: DynamoDBDocumentClient;
  readonly #tableName: string;
  readonly #scanPageSize: number | undefined;
  readonly #onUnreadable: ((error: EndpointRegistryError) => void) | undefined;
  readonly #cipher: Pick<EndpointSecretCipher, 'encrypt'> | undefined;

  constructor(options: DynamoDbEndpointRegistryOptions) {
    this.#client =
      options.client instanceof DynamoDBDocumentClient
        ? options.client
        : DynamoDBDocumentClient.from(options.client, { marshallOptions: { removeUndefinedValues: true } });
    this.#tableName = options.tableName;
    this.#scanPageSize = options.scanPageSize;
    this.#onUnreadable = options.onUnreadable;
    this.#cipher = options.cipher;
  }

  /** @throws EndpointRegistryError for an item it cannot use, unless `onUnreadable` is given */
  async list(): Promise<HealthRecord[]> {
    const { records, unreadable } = await this.scan();
    if (unreadable.length > 0 && this.#onUnreadable === undefined) throw unreadable[0];
    for (const error of unreadable) this.#onUnreadable?.(error);
    return withUnreadable(records, unreadable);
  }

  /** Every item, in name order, with the ones it cannot use set apart (the command lists both). */
  async scan(): Promise<RegistryScan> {
    const records: HealthRecord[] = [];
    const unreadable: EndpointRegistryError[] = [];
    let startKey: Item | undefined;
    do {
      const page = await this.#guard('list endpoints', () =>
        this.#client.send(new ScanCommand({ TableName: this.#tableName, ConsistentRead: true, ExclusiveStartKey: startKey, Limit: this.#scanPageSize })),
      );
      for (const item of page.Items ?? []) {
        try {
          records.push(this.#recordFrom(item));
        } catch (error) {
          if (!(error instanceof EndpointRegistryError)) throw error;
          unreadable.push(error);
        }
      }
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    records.sort((a, b) => (a.fields.name < b.fields.name ? -1 : a.fields.name > b.fields.name ? 1 : 0));
    return { records, unreadable };
  }

  async get(name: string): Promise<HealthRecord | undefined> {
    const { Item } = await this.#guard(`read endpoint ${quoted(name)}`, () =>
      this.#client.send(new GetCommand({ TableName: this.#tableName, Key: { [KEY]: name }, ConsistentRead: true })),
    );
    return Item === undefined ? undefined : this.#recordFrom(Item);
  }

  async add(fields: EndpointFields, nowMs: number): Promise<EndpointRecord> {
    const checked = await this.#storedForm(parseEndpointFields(fields));
    const record: EndpointRecord = { fields: checked, state: 'enabled', createdAt: nowMs, updatedAt: nowMs };
    try {
      await this.#guard(`add endpoint ${quoted(checked.name)}`, () =>
        this.#client.send(
          new PutCommand({
            TableName: this.#tableName,
            Item: itemOf(record),
            ConditionExpression: 'attribute_not_exists(#name)',
            ExpressionAttributeNames: { '#name': NAMES['#name'] },
          }),
        ),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        throw new EndpointConflictError(checked.name, 'already exists: change it with endpoint update, or remove it first', { cause: error });
      }
      throw error;
    }
    return record;
  }

  async update(fields: EndpointFields, expectedUpdatedAt: number, nowMs: number): Promise<EndpointRecord> {
    const checked = await this.#storedForm(parseEndpointFields(fields));
    // Strictly later than the version read, so two updates within one millisecond still differ.
    const updatedAt = Math.max(nowMs, expectedUpdatedAt + 1);
    const subject = `update endpoint ${quoted(checked.name)}`;
    try {
      const { Attributes } = await this.#guard(subject, () =>
        this.#client.send(
          new UpdateCommand({
            TableName: this.#tableName,
            Key: { [KEY]: checked.name },
            UpdateExpression: 'SET #fields = :fields, #updatedAt = :updatedAt',
            ConditionExpression: 'attribute_exists(#name) AND #updatedAt = :expected',
            ExpressionAttributeNames: { '#name': NAMES['#name'], '#fields': NAMES['#fields'], '#updatedAt': NAMES['#updatedAt'] },
            ExpressionAttributeValues: { ':fields': checked, ':updatedAt': updatedAt, ':expected': expectedUpdatedAt },
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      return this.#recordFrom(Attributes ?? {});
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = await this.get(checked.name);
      if (current === undefined) throw new EndpointNotFoundError(checked.name, { cause: error });
      throw new EndpointConflictError(
        checked.name,
        `changed since it was read (updated at ${new Date(current.updatedAt).toISOString()}): read it again and retry`,
        { cause: error },
      );
    }
  }

  async setState(name: string, state: EndpointRecord['state'], change: StateChange, resumeRate = DEFAULT_RESUME_RATE): Promise<EndpointRecord> {
    if (!(ENDPOINT_STATES as readonly string[]).includes(state)) throw new RangeError(`state must be one of ${ENDPOINT_STATES.join(', ')}`);
    const stateChange: StateChange = { by: change.by, reason: change.reason, at: change.at };
    // Enabling begins the release of its parked deliveries (lib/resume.ts); disabling ends one.
    const enabling = state === 'enabled';
    try {
      const { Attributes } = await this.#guard(`set the state of endpoint ${quoted(name)}`, () =>
        this.#client.send(
          new UpdateCommand({
            TableName: this.#tableName,
            Key: { [KEY]: name },
            // Enabling also starts its health afresh: failures from before it was back do not count
            // towards disabling it again (docs/contract.md §12).
            UpdateExpression: enabling
              ? 'SET #state = :state, #stateChange = :stateChange, #updatedAt = :updatedAt, #resumeSince = :updatedAt, #resumeRate = :rate, #failures = :zero REMOVE #resumeUntil, #failingSince'
              : `SET #state = :state, #stateChange = :stateChange, #updatedAt = :updatedAt ${END_RESUME}`,
            ConditionExpression: 'attribute_exists(#name)',
            ExpressionAttributeNames: {
              '#name': NAMES['#name'],
              '#state': NAMES['#state'],
              '#stateChange': NAMES['#stateChange'],
              '#updatedAt': NAMES['#updatedAt'],
              ...RESUME_NAMES,
              ...(enabling ? { '#failures': H.failures, '#failingSince': H.failingSince } : {}),
            },
            ExpressionAttributeValues: {
              ':state': state,
              ':stateChange': stateChange,
              ':updatedAt': change.at,
              ...(enabling ? { ':rate': resumeRate, ':zero': 0 } : {}),
            },
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      return this.#recordFrom(Attributes ?? {});
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new EndpointNotFoundError(name, { cause: error });
      throw error;
    }
  }

  /** A failed attempt: failures + 1, and failingSince set when unset. @throws EndpointNotFoundError */
  async recordFailure(name: string, nowMs: number): Promise<EndpointHealth> {
    return this.#writeHealth(name, 'record a failure of', {
      UpdateExpression: 'SET #failures = if_not_exists(#failures, :zero) + :one, #failingSince = if_not_exists(#failingSince, :now)',
      ExpressionAttributeNames: { '#failures': H.failures, '#failingSince': H.failingSince },
      ExpressionAttributeValues: { ':zero': 0, ':one': 1, ':now': nowMs },
    });
  }

  /** The first accepted attempt after failures: failures 0, failingSince removed, lastAcceptedAt. @throws EndpointNotFoundError */
  async recordRecovery(name: string, nowMs: number): Promise<EndpointHealth> {
    return this.#writeHealth(name, 'record the recovery of', {
      UpdateExpression: 'SET #failures = :zero, #lastAcceptedAt = :now REMOVE #failingSince, #probeUntil',
      ExpressionAttributeNames: { '#failures': H.failures, '#failingSince': H.failingSince, '#lastAcceptedAt': H.lastAcceptedAt, '#probeUntil': H.probeUntil },
      ExpressionAttributeValues: { ':zero': 0, ':now': nowMs },
    });
  }

  /**
   * Pauses until `untilMs`, unless a later pause is set already. Resolves to the pause in force.
   * @throws EndpointNotFoundError
   */
  async pause(name: string, untilMs: number): Promise<number> {
    try {
      const health = await this.#writeHealth(
        name,
        'pause',
        {
          UpdateExpression: 'SET #pausedUntil = :until',
          ExpressionAttributeNames: { '#pausedUntil': H.pausedUntil },
          ExpressionAttributeValues: { ':until': untilMs },
        },
        'attribute_not_exists(#pausedUntil) OR #pausedUntil < :until',
      );
      return health.pausedUntil ?? untilMs;
    } catch (error) {
      if (!(error instanceof EndpointNotFoundError)) throw error;
      // Refused: the endpoint is gone, or a later pause is set (read it: not every DynamoDB returns the item).
      const current = await this.get(name);
      if (current === undefined) throw error;
      return current.health?.pausedUntil ?? untilMs;
    }
  }

  /**
   * The half-open breaker's probe, for one consumer at a time: `probeUntil` set while the endpoint is
   * failing, not paused, and no other consumer's probe runs. The health after the claim, or the
   * item's health as it refused it. @throws EndpointNotFoundError
   */
  async claimProbe(name: string, nowMs: number, untilMs: number): Promise<ProbeClaim> {
    try {
      const health = await this.#writeHealth(
        name,
        'claim the probe of',
        {
          UpdateExpression: 'SET #probeUntil = :until',
          ExpressionAttributeNames: { '#probeUntil': H.probeUntil, '#pausedUntil': H.pausedUntil, '#failingSince': H.failingSince },
          ExpressionAttributeValues: { ':until': untilMs, ':now': nowMs },
        },
        'attribute_exists(#failingSince) AND (attribute_not_exists(#pausedUntil) OR #pausedUntil <= :now) AND (attribute_not_exists(#probeUntil) OR #probeUntil <= :now)',
      );
      return { claimed: true, health };
    } catch (error) {
      if (!(error instanceof EndpointNotFoundError)) throw error;
      // Refused: the endpoint is gone, or recovered, paused or probed by another consumer (read which).
      const current = await this.get(name);
      if (current === undefined) throw error;
      return { claimed: false, health: current.health ?? { failures: 0 } };
    }
  }

  /**
   * Disables the endpoint with who, why and when, only while it is enabled: of consumers that decide
   * to disable it at once, one does (and tells operators). False when it was not enabled or is gone.
   */
  async disableIfEnabled(name: string, change: StateChange): Promise<boolean> {
    const stateChange: StateChange = { by: change.by, reason: change.reason, at: change.at };
    try {
      await this.#guard(`disable endpoint ${quoted(name)}`, () =>
        this.#client.send(
          new UpdateCommand({
            TableName: this.#tableName,
            Key: { [KEY]: name },
            UpdateExpression: `SET #state = :disabled, #stateChange = :stateChange, #updatedAt = :updatedAt ${END_RESUME}`,
            ConditionExpression: 'attribute_exists(#name) AND #state = :enabled',
            ExpressionAttributeNames: {
              '#name': NAMES['#name'],
              '#state': NAMES['#state'],
              '#stateChange': NAMES['#stateChange'],
              '#updatedAt': NAMES['#updatedAt'],
              ...RESUME_NAMES,
            },
            ExpressionAttributeValues: { ':disabled': 'disabled', ':enabled': 'enabled', ':stateChange': stateChange, ':updatedAt': change.at },
          }),
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /**
   * The releases' writes (lib/resume.ts `ResumeStore`): each conditional on the release begun at
   * `since` still being the endpoint's, so a newer `enable`, or a `disable`, is never undone.
   */
  async takeWindow(name: string, since: number, from: number | undefined, to: number): Promise<boolean> {
    return this.#writeResume(name, `take a release window of`, {
      UpdateExpression: 'SET #resumeUntil = :to',
      ConditionExpression: `#resumeSince = :since AND ${from === undefined ? 'attribute_not_exists(#resumeUntil)' : '#resumeUntil = :from'}`,
      ExpressionAttributeValues: { ':since': since, ':to': to, ...(from === undefined ? {} : { ':from': from }) },
    });
  }

  async finishResume(name: string, since: number): Promise<boolean> {
    return this.#writeResume(name, 'end the release of', {
      UpdateExpression: END_RESUME,
      ConditionExpression: '#resumeSince = :since',
      ExpressionAttributeValues: { ':since': since },
    });
  }

  async beginResume(name: string, since: number, rate: number): Promise<boolean> {
    return this.#writeResume(name, 'begin a release of', {
      UpdateExpression: 'SET #resumeSince = :since, #resumeRate = :rate',
      ConditionExpression: '#state = :enabled AND attribute_not_exists(#resumeSince)',
      ExpressionAttributeValues: { ':since': since, ':rate': rate, ':enabled': 'enabled' },
    });
  }

  /** A conditional write of the release's attributes alone. False when its condition is refused. */
  async #writeResume(
    name: string,
    what: string,
    update: { UpdateExpression: string; ConditionExpression: string; ExpressionAttributeValues: Record<string, unknown> },
  ): Promise<boolean> {
    const text = `${update.UpdateExpression} ${update.ConditionExpression}`;
    const names = Object.fromEntries(Object.entries({ ...RESUME_NAMES, '#state': NAMES['#state'] }).filter(([placeholder]) => text.includes(placeholder)));
    try {
      await this.#guard(`${what} endpoint ${quoted(name)}`, () =>
        this.#client.send(new UpdateCommand({ TableName: this.#tableName, Key: { [KEY]: name }, ...update, ExpressionAttributeNames: names })),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** One health write: an UpdateItem on an existing item that touches only health attributes. */
  async #writeHealth(
    name: string,
    what: string,
    update: { UpdateExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues: Record<string, unknown> },
    condition?: string,
  ): Promise<EndpointHealth> {
    try {
      const { Attributes } = await this.#guard(`${what} endpoint ${quoted(name)}`, () =>
        this.#client.send(
          new UpdateCommand({
            TableName: this.#tableName,
            Key: { [KEY]: name },
            UpdateExpression: update.UpdateExpression,
            ConditionExpression: `attribute_exists(#name)${condition ? ` AND (${condition})` : ''}`,
            ExpressionAttributeNames: { '#name': NAMES['#name'], ...update.ExpressionAttributeNames },
            ExpressionAttributeValues: update.ExpressionAttributeValues,
            ReturnValues: 'ALL_NEW',
          }),
        ),
      );
      return healthFrom(Attributes ?? {}) ?? { failures: 0 };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new EndpointNotFoundError(name, { cause: error });
      throw error;
    }
  }

  async remove(name: string): Promise<void> {
    try {
      await this.#guard(`remove endpoint ${quoted(name)}`, () =>
        this.#client.send(
          new DeleteCommand({
            TableName: this.#tableName,
            Key: { [KEY]: name },
            ConditionExpression: 'attribute_exists(#name)',
            ExpressionAttributeNames: { '#name': NAMES['#name'] },
          }),
        ),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw new EndpointNotFoundError(name, { cause: error });
      throw error;
    }
  }

  /** The fields as they are written: with a cipher, a plain secret and previous secret encrypted for this endpoint. */
  async #storedForm(fields: EndpointFields): Promise<EndpointFields> {
    const cipher = this.#cipher;
    if (cipher === undefined) return fields;
    const encrypt = (value: string | undefined) => (value?.startsWith(SECRET_PREFIX) ? cipher.encrypt(value, fields.name) : Promise.resolve(value));
    const [secret, previousSecret] = await Promise.all([encrypt(fields.secret), encrypt(fields.previousSecret)]);
    return parseEndpointFields({
      ...fields,
      ...(secret !== undefined ? { secret } : {}),
      ...(previousSecret !== undefined ? { previousSecret } : {}),
    });
  }

  /** An item as a record, checked as the fields of a new endpoint are. @throws EndpointRegistryError */
  #recordFrom(item: Item): HealthRecord {
    const key = typeof item[KEY] === 'string' ? (item[KEY] as string) : '?';
    const invalid = (problem: string, cause?: unknown): never => {
      const subscription = subscriptionOf(item[A.fields]);
      throw new EndpointRegistryError(
        'registry-item-invalid',
        `endpoint registry ${this.#tableName}: the item of endpoint ${quoted(key.slice(0, 64))} cannot be used: ${problem}`,
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
   * Runs one store call. A refused condition passes through for the caller to turn into a domain
   * answer; every other failure is the registry being unavailable.
   */
  async #guard<T>(subject: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw error;
      const what = error instanceof Error ? error.name : 'error';
      throw new EndpointRegistryError('registry-unavailable', `endpoint registry ${this.#tableName} failed to ${subject}: ${what}`, { cause: error });
    }
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

function itemOf(record: EndpointRecord): Item {
  return {
    [KEY]: record.fields.name,
    [A.fields]: record.fields,
    [A.state]: record.state,
    ...(record.stateChange !== undefined ? { [A.stateChange]: record.stateChange } : {}),
    [A.createdAt]: record.createdAt,
    [A.updatedAt]: record.updatedAt,
  };
}

/**
 * The health an item holds, if any. Consumers write it, so a value they could not have written is
 * left out rather than making the endpoint unusable: health only ever holds deliveries back.
 */
function healthFrom(item: Item): EndpointHealth | undefined {
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
