/**
 * The endpoint registry on DynamoDB (docs/contract.md §11): one item per endpoint in a table keyed
 * by `name` (registry-schema.ts), every change one conditional write, so two operators never lose
 * each other's changes: `add` only where no endpoint has the name, `update` only while the item is
 * the one its caller read (`updatedAt`), `setState` and `remove` only where it exists.
 *
 * Fields are stored as given (after `parseEndpointFields`), except a plain `whsec_…` or `whsk_…`
 * secret (or previous secret), and every other plain `{"secret": …}` value (a header's,
 * `auth.clientSecret`, `tls.privateKey`), when the registry has a `cipher`: those are stored
 * encrypted with it (`encrypted:<scheme>:…`, lib/endpoints/secret-cipher.ts), bound to their
 * endpoint (and header or path). A Secrets Manager ARN, or a
 * value encrypted already, is stored as it is. Reads are consistent and check every item
 * the same way, so the consumer and the command never act on an item they cannot read. A refused
 * condition becomes `EndpointNotFoundError` or `EndpointConflictError`; any other store failure
 * `EndpointRegistryError`. Nothing above this file sees an SDK error type.
 *
 * The registry is also the releases' `ResumeStore` (dynamodb-resume-store.ts): those writes are made
 * there, on the same table (dynamodb-registry-table.ts: the items, their attribute names, how a
 * store call fails). Health is written by the consumers through `DynamoDbHealthStore`
 * (dynamodb-health-store.ts) on the same table, not through the registry.
 */
import { type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  CHANGE_NAMES,
  changeValues,
  END_RESUME,
  HEALTH_ATTRIBUTES as H,
  isTombstone,
  itemOf,
  KEY,
  NAMES,
  RegistryTable,
  SET_CHANGE,
  STATE_CHANGE_NAMES,
  tombstoneOf,
  type Item,
} from './dynamodb-registry-table';
import { DynamoDbResumeStore } from './dynamodb-resume-store';
import { ENDPOINT_STATES, parseEndpointFields, type EndpointFields, type EndpointRecord, type StateChange } from './endpoint';
import type { HealthRecord } from './health-rules';
import { REGISTRY_SCHEMA } from './registry-schema';
import type { EndpointSecretCipher } from './secret-cipher';
import { RegistryListing } from './dynamodb-registry-listing';
import {
  withUnreadable,
  type ChangeMark,
  type EndpointRegistry,
  type RegistryChanges,
  type RegistryEntry,
  type RegistryPage,
  type RegistryPageOptions,
} from './registry';
import { EndpointConflictError, EndpointNotFoundError, EndpointRegistryError } from '../errors';
import { DEFAULT_RESUME_RATE, type ResumeStore } from '../resume';
import { quoted } from '../terminal';
import { isSecretValue } from '../webhook/signing-secret';
import { isEncryptedSecret } from './secret-cipher';
import { cipherPlace, mapSecretValuesAsync } from './secret-values';

export { HEALTH_ATTRIBUTES } from './dynamodb-registry-table';

export interface DynamoDbEndpointRegistryOptions {
  /** A DynamoDB client; a plain one is wrapped in a document client. */
  readonly client: DynamoDBDocumentClient | DynamoDBClient;
  readonly tableName: string;
  /** Items per Scan request (default: as many as fit DynamoDB's 1 MB page). */
  readonly scanPageSize?: number;
  /** Segments a scan of every item reads in parallel (default SCAN_SEGMENTS). */
  readonly scanSegments?: number;
  /**
   * Told of each item `list` cannot use (written by hand, or by a newer version), which `list` then
   * leaves out, so one bad item does not stop delivery to every other endpoint; the list it returns
   * still carries them (`unreadableOf`, lib/endpoints/registry.ts), for routing to hold the
   * deliveries that would go to them. Unset: `list` fails on such an item.
   */
  readonly onUnreadable?: (error: EndpointRegistryError) => void;
  /**
   * What encrypts a plain secret (and previous secret, and a header's secret value) before `add` or `update` writes it:
   * `handoff endpoint` gives the target's (the registry's KMS key, the sandbox's local key), so no
   * write of the command leaves a secret in the clear, and a plain value already stored is encrypted
   * when its endpoint is next written. Its failure (SecretEncryptionError, or what it throws) fails
   * the write, which writes nothing. Unset: secrets are stored as given (the sandbox's seeding).
   */
  readonly cipher?: Pick<EndpointSecretCipher, 'encrypt'>;
  /**
   * Epoch ms a write marks as its change (`changedAt`, the change index's sort key). Default: this
   * machine's clock, corrected by the SDK client's `systemClockOffset` when that is a minute or more
   * (`clockCorrection`), so a command run on a late laptop still writes a time within the copies'
   * lookback (lib/endpoints/registry-copy.ts).
   */
  readonly now?: () => number;
}

/** Every item of the table: those it can use, and why each other one cannot be. */
export interface RegistryScan {
  readonly records: HealthRecord[];
  readonly unreadable: EndpointRegistryError[];
}

export class DynamoDbEndpointRegistry implements EndpointRegistry, RegistryChanges, ResumeStore {
  readonly #table: RegistryTable;
  readonly #resume: DynamoDbResumeStore;
  readonly #listing: RegistryListing;
  readonly #onUnreadable: ((error: EndpointRegistryError) => void) | undefined;
  readonly #cipher: Pick<EndpointSecretCipher, 'encrypt'> | undefined;
  readonly #changeClock: () => number;

  constructor(options: DynamoDbEndpointRegistryOptions) {
    const client =
      options.client instanceof DynamoDBDocumentClient
        ? options.client
        : DynamoDBDocumentClient.from(options.client, { marshallOptions: { removeUndefinedValues: true } });
    this.#table = new RegistryTable(client, options.tableName);
    this.#resume = new DynamoDbResumeStore(this.#table);
    this.#listing = new RegistryListing(this.#table, { scanPageSize: options.scanPageSize, segments: options.scanSegments });
    this.#onUnreadable = options.onUnreadable;
    this.#cipher = options.cipher;
    const config = client.config as { systemClockOffset?: number };
    this.#changeClock = options.now ?? (() => Date.now() + clockCorrection(config.systemClockOffset));
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
    for (const entry of await this.#listing.readAll()) {
      if (entry.record !== undefined) records.push(entry.record);
      else if (entry.unreadable !== undefined) unreadable.push(entry.unreadable);
    }
    records.sort((a, b) => (a.fields.name < b.fields.name ? -1 : a.fields.name > b.fields.name ? 1 : 0));
    return { records, unreadable };
  }

  // The reads by change a consumer's copy makes (registry-copy.ts), and the paged listing (dynamodb-registry-listing.ts).

  readAll(): Promise<RegistryEntry[]> {
    return this.#listing.readAll();
  }

  changedSince(sinceMs: number): Promise<ChangeMark[]> {
    return this.#listing.changedSince(sinceMs);
  }

  readNames(names: readonly string[]): Promise<RegistryEntry[]> {
    return this.#listing.readNames(names);
  }

  /** @throws RangeError for a cursor it did not issue with these filters, or a limit outside 1–100 */
  page(options: RegistryPageOptions): Promise<RegistryPage> {
    return this.#listing.page(options);
  }

  async get(name: string): Promise<HealthRecord | undefined> {
    return this.#table.get(name);
  }

  async add(fields: EndpointFields, nowMs: number): Promise<EndpointRecord> {
    const checked = await this.#storedForm(parseEndpointFields(fields));
    const record: EndpointRecord = { fields: checked, state: 'enabled', createdAt: nowMs, updatedAt: nowMs };
    const result = await this.#table.write(checked.name, `add endpoint ${quoted(checked.name)}`, {
      put: {
        Item: itemOf(record, this.#changeClock()),
        // The name is free, or held only by a removed endpoint's tombstone, which the put replaces.
        ConditionExpression: 'attribute_not_exists(#name) OR attribute_exists(#removedAt)',
        ExpressionAttributeNames: { '#name': NAMES['#name'], '#removedAt': REGISTRY_SCHEMA.attributes.removedAt },
      },
    });
    if (!result.written) {
      throw new EndpointConflictError(checked.name, 'already exists: change it with endpoint update, or remove it first', { cause: result.cause });
    }
    return record;
  }

  async update(fields: EndpointFields, expectedUpdatedAt: number, nowMs: number): Promise<EndpointRecord> {
    const checked = await this.#storedForm(parseEndpointFields(fields));
    // Strictly later than the version read, so two updates within one millisecond still differ.
    const updatedAt = Math.max(nowMs, expectedUpdatedAt + 1);
    const result = await this.#table.write(
      checked.name,
      `update endpoint ${quoted(checked.name)}`,
      {
        update: {
          // The owner index's key follows the field: set with it, removed when it is cleared.
          UpdateExpression: `SET #fields = :fields, #updatedAt = :updatedAt, ${SET_CHANGE}${checked.owner !== undefined ? ', #owner = :owner' : ' REMOVE #owner'}`,
          // A tombstone has no `updatedAt`: updating a removed endpoint is refused, and reads as not found.
          ConditionExpression: 'attribute_exists(#name) AND #updatedAt = :expected',
          ExpressionAttributeNames: { '#name': NAMES['#name'], '#fields': NAMES['#fields'], '#updatedAt': NAMES['#updatedAt'], '#owner': REGISTRY_SCHEMA.attributes.owner, ...CHANGE_NAMES },
          ExpressionAttributeValues: {
            ':fields': checked,
            ':updatedAt': updatedAt,
            ':expected': expectedUpdatedAt,
            ...changeValues(this.#changeClock()),
            ...(checked.owner !== undefined ? { ':owner': checked.owner } : {}),
          },
          ReturnValues: 'ALL_NEW',
        },
      },
      true,
    );
    if (result.written) return this.#table.recordFrom(result.item);
    if (result.current === undefined) throw new EndpointNotFoundError(checked.name, { cause: result.cause });
    throw new EndpointConflictError(
      checked.name,
      `changed since it was read (updated at ${new Date(result.current.updatedAt).toISOString()}): read it again and retry`,
      { cause: result.cause },
    );
  }

  async setState(name: string, state: EndpointRecord['state'], change: StateChange, resumeRate = DEFAULT_RESUME_RATE): Promise<EndpointRecord> {
    if (!(ENDPOINT_STATES as readonly string[]).includes(state)) throw new RangeError(`state must be one of ${ENDPOINT_STATES.join(', ')}`);
    const stateChange: StateChange = { by: change.by, reason: change.reason, at: change.at };
    // Enabling begins the release of its parked deliveries (lib/resume.ts); disabling ends one.
    const enabling = state === 'enabled';
    const result = await this.#table.write(name, `set the state of endpoint ${quoted(name)}`, {
      update: {
        // Enabling also starts its health afresh: failures from before it was back do not count
        // towards disabling it again (docs/contract.md §12).
        UpdateExpression: enabling
          ? `SET #state = :state, #stateChange = :stateChange, #updatedAt = :updatedAt, ${SET_CHANGE}, #resumeSince = :updatedAt, #resumeRate = :rate, #failures = :zero REMOVE #resumeUntil, #failingSince`
          : `SET #state = :state, #stateChange = :stateChange, #updatedAt = :updatedAt, ${SET_CHANGE} ${END_RESUME}`,
        // A removed endpoint's tombstone has no state to change: not found.
        ConditionExpression: 'attribute_exists(#name) AND attribute_not_exists(#removedAt)',
        ExpressionAttributeNames: {
          ...STATE_CHANGE_NAMES,
          ...CHANGE_NAMES,
          '#removedAt': REGISTRY_SCHEMA.attributes.removedAt,
          ...(enabling ? { '#failures': H.failures, '#failingSince': H.failingSince } : {}),
        },
        ExpressionAttributeValues: {
          ':state': state,
          ':stateChange': stateChange,
          ':updatedAt': change.at,
          ...changeValues(this.#changeClock()),
          ...(enabling ? { ':rate': resumeRate, ':zero': 0 } : {}),
        },
        ReturnValues: 'ALL_NEW',
      },
    });
    if (!result.written) throw new EndpointNotFoundError(name, { cause: result.cause });
    return this.#table.recordFrom(result.item);
  }

  /**
   * Replaces the item with a tombstone (its key, `removedAt`, `expiresAt`, the change): its fields
   * and secrets go at once, and every copy learns of the removal from the change index (a deleted
   * item would leave nothing there to read). DynamoDB's TTL deletes the tombstone a day later.
   */
  async remove(name: string): Promise<void> {
    const result = await this.#table.write(name, `remove endpoint ${quoted(name)}`, {
      put: {
        Item: tombstoneOf(name, this.#changeClock()),
        // An endpoint, not already a tombstone.
        ConditionExpression: 'attribute_exists(#name) AND attribute_not_exists(#removedAt)',
        ExpressionAttributeNames: { '#name': NAMES['#name'], '#removedAt': REGISTRY_SCHEMA.attributes.removedAt },
      },
    });
    if (!result.written) throw new EndpointNotFoundError(name, { cause: result.cause });
  }

  // The releases' writes (dynamodb-resume-store.ts).

  takeWindow(name: string, since: number, from: number | undefined, to: number): Promise<boolean> {
    return this.#resume.takeWindow(name, since, from, to);
  }

  finishResume(name: string, since: number): Promise<boolean> {
    return this.#resume.finishResume(name, since);
  }

  beginResume(name: string, since: number, rate: number): Promise<boolean> {
    return this.#resume.beginResume(name, since, rate);
  }

  /**
   * The fields as they are written: with a cipher, a plain secret, previous secret and other secret
   * value (a header's, auth.clientSecret, tls.privateKey: lib/endpoints/secret-values.ts) encrypted
   * for this endpoint (each of the others under its own place). An ed25519 secret's public key was
   * set from it as it was parsed, so it stays after the secret is encrypted.
   */
  async #storedForm(fields: EndpointFields): Promise<EndpointFields> {
    const cipher = this.#cipher;
    if (cipher === undefined) return fields;
    const encrypt = (value: string | undefined) => (value !== undefined && isSecretValue(value) ? cipher.encrypt(value, fields.name) : Promise.resolve(value));
    const [secret, previousSecret, withValues] = await Promise.all([
      encrypt(fields.secret),
      encrypt(fields.previousSecret),
      mapSecretValuesAsync(fields, async ({ path, value }) =>
        'secret' in value && !isEncryptedSecret(value.secret) ? { secret: await cipher.encrypt(value.secret, fields.name, cipherPlace(path)) } : value,
      ),
    ]);
    return parseEndpointFields({
      ...withValues,
      ...(secret !== undefined ? { secret } : {}),
      ...(previousSecret !== undefined ? { previousSecret } : {}),
    });
  }
}

/**
 * The SDK's `systemClockOffset` as a correction of this machine's clock: only an offset of a minute
 * or more. The SDK sets it from each answer's Date header, whole seconds, so a smaller one is mostly
 * that rounding: applied, it would stamp every change of a second with the same time, and a copy
 * that read the first would take the second for it. A clock off by less is well within the lookback.
 */
export function clockCorrection(offsetMs: number | undefined): number {
  return offsetMs !== undefined && Math.abs(offsetMs) >= 60_000 ? offsetMs : 0;
}
