/**
 * The endpoint registry on DynamoDB (docs/contract.md §11): one item per endpoint in a table keyed
 * by `name` (registry-schema.ts), every change one conditional write, so two operators never lose
 * each other's changes: `add` only where no endpoint has the name, `update` only while the item is
 * the one its caller read (`updatedAt`), `setState` and `remove` only where it exists.
 *
 * Fields are stored as given (after `parseEndpointFields`), except a plain `whsec_…` secret (or
 * previous secret) when the registry has a `cipher`: that is stored encrypted with it
 * (`encrypted:<scheme>:…`, lib/endpoints/secret-cipher.ts), bound to its endpoint. A Secrets Manager
 * ARN, or a value encrypted already, is stored as it is. Reads are consistent and check every item
 * the same way, so the consumer and the command never act on an item they cannot read. A refused
 * condition becomes `EndpointNotFoundError` or `EndpointConflictError`; any other store failure
 * `EndpointRegistryError`. Nothing above this file sees an SDK error type.
 *
 * The registry is also the consumers' `HealthStore` (dynamodb-health-store.ts) and the releases'
 * `ResumeStore` (dynamodb-resume-store.ts): those writes are made there, on the same table
 * (dynamodb-registry-table.ts: the items, their attribute names, how a store call fails).
 */
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbHealthStore } from './dynamodb-health-store';
import { END_RESUME, HEALTH_ATTRIBUTES as H, itemOf, KEY, NAMES, RegistryTable, STATE_CHANGE_NAMES, type Item } from './dynamodb-registry-table';
import { DynamoDbResumeStore } from './dynamodb-resume-store';
import { ENDPOINT_STATES, parseEndpointFields, type EndpointFields, type EndpointRecord, type StateChange } from './endpoint';
import type { EndpointHealth, HealthRecord, HealthStore, ProbeClaim } from './health-rules';
import type { EndpointSecretCipher } from './secret-cipher';
import {
  withUnreadable,
  type EndpointRegistry,
} from './registry';
import { EndpointConflictError, EndpointNotFoundError, EndpointRegistryError } from '../errors';
import { DEFAULT_RESUME_RATE, type ResumeStore } from '../resume';
import { quoted } from '../terminal';
import { SECRET_PREFIX } from '../webhook/signing-secret';

export { HEALTH_ATTRIBUTES } from './dynamodb-registry-table';

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
   * write of the command leaves a secret in the clear, and a plain value already stored is encrypted
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

export class DynamoDbEndpointRegistry implements EndpointRegistry, HealthStore, ResumeStore {
  readonly #table: RegistryTable;
  readonly #health: DynamoDbHealthStore;
  readonly #resume: DynamoDbResumeStore;
  readonly #scanPageSize: number | undefined;
  readonly #onUnreadable: ((error: EndpointRegistryError) => void) | undefined;
  readonly #cipher: Pick<EndpointSecretCipher, 'encrypt'> | undefined;

  constructor(options: DynamoDbEndpointRegistryOptions) {
    const client =
      options.client instanceof DynamoDBDocumentClient
        ? options.client
        : DynamoDBDocumentClient.from(options.client, { marshallOptions: { removeUndefinedValues: true } });
    this.#table = new RegistryTable(client, options.tableName);
    this.#health = new DynamoDbHealthStore(this.#table);
    this.#resume = new DynamoDbResumeStore(this.#table);
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
      const page = await this.#table.guard('list endpoints', () =>
        this.#table.client.send(new ScanCommand({ TableName: this.#table.name, ConsistentRead: true, ExclusiveStartKey: startKey, Limit: this.#scanPageSize })),
      );
      for (const item of page.Items ?? []) {
        try {
          records.push(this.#table.recordFrom(item));
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
    return this.#table.get(name);
  }

  async add(fields: EndpointFields, nowMs: number): Promise<EndpointRecord> {
    const checked = await this.#storedForm(parseEndpointFields(fields));
    const record: EndpointRecord = { fields: checked, state: 'enabled', createdAt: nowMs, updatedAt: nowMs };
    const result = await this.#table.write(checked.name, `add endpoint ${quoted(checked.name)}`, {
      put: { Item: itemOf(record), ConditionExpression: 'attribute_not_exists(#name)', ExpressionAttributeNames: { '#name': NAMES['#name'] } },
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
          UpdateExpression: 'SET #fields = :fields, #updatedAt = :updatedAt',
          ConditionExpression: 'attribute_exists(#name) AND #updatedAt = :expected',
          ExpressionAttributeNames: { '#name': NAMES['#name'], '#fields': NAMES['#fields'], '#updatedAt': NAMES['#updatedAt'] },
          ExpressionAttributeValues: { ':fields': checked, ':updatedAt': updatedAt, ':expected': expectedUpdatedAt },
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
          ? 'SET #state = :state, #stateChange = :stateChange, #updatedAt = :updatedAt, #resumeSince = :updatedAt, #resumeRate = :rate, #failures = :zero REMOVE #resumeUntil, #failingSince'
          : `SET #state = :state, #stateChange = :stateChange, #updatedAt = :updatedAt ${END_RESUME}`,
        ConditionExpression: 'attribute_exists(#name)',
        ExpressionAttributeNames: {
          ...STATE_CHANGE_NAMES,
          ...(enabling ? { '#failures': H.failures, '#failingSince': H.failingSince } : {}),
        },
        ExpressionAttributeValues: {
          ':state': state,
          ':stateChange': stateChange,
          ':updatedAt': change.at,
          ...(enabling ? { ':rate': resumeRate, ':zero': 0 } : {}),
        },
        ReturnValues: 'ALL_NEW',
      },
    });
    if (!result.written) throw new EndpointNotFoundError(name, { cause: result.cause });
    return this.#table.recordFrom(result.item);
  }

  async remove(name: string): Promise<void> {
    try {
      await this.#table.guard(`remove endpoint ${quoted(name)}`, () =>
        this.#table.client.send(
          new DeleteCommand({
            TableName: this.#table.name,
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

  // The consumers' health writes (dynamodb-health-store.ts).

  recordFailure(name: string, nowMs: number): Promise<EndpointHealth> {
    return this.#health.recordFailure(name, nowMs);
  }

  recordRecovery(name: string, nowMs: number): Promise<EndpointHealth> {
    return this.#health.recordRecovery(name, nowMs);
  }

  pause(name: string, untilMs: number): Promise<number> {
    return this.#health.pause(name, untilMs);
  }

  claimProbe(name: string, nowMs: number, untilMs: number): Promise<ProbeClaim> {
    return this.#health.claimProbe(name, nowMs, untilMs);
  }

  disableIfEnabled(name: string, change: StateChange): Promise<boolean> {
    return this.#health.disableIfEnabled(name, change);
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
}
