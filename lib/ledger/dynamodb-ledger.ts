/**
 * The ledger on DynamoDB: one item per (eventId, endpoint), every transition (`transitions.ts`) a
 * single conditional write (`dynamodb-expressions.ts`), items in the compact shape of
 * `dynamodb-item.ts`. A refused condition becomes a domain error carrying the row as it stands;
 * any other store failure becomes `LedgerUnavailableError`. Nothing above this file sees an SDK
 * error type.
 *
 * Reads on the happy path: none. `claim` and `recordAttempt` are one UpdateItem each. The claim
 * asks for the row as it was (ALL_OLD): nothing for a new event, whose row the adapter knows, and
 * for an existing one the row the claim's own change is applied to. The record asks for nothing.
 * Only a refused write reads the row, and on AWS not even then:
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD` returns it with the error at no read cost; where a
 * store does not, the adapter falls back to a consistent GetItem.
 *
 * Parking: `park` is one UpdateItem for a new event, two for an existing row (the first refused
 * with the row, whose `createdAt` the second sorts it by), one refused for a row already parked;
 * `unpark` is one, and reads nothing when refused.
 */
import { type ConditionalCheckFailedException, type DynamoDBClient, type GetItemCommandInput, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { conditionalWrite, errorName, readItem, type ConditionalWriteResult } from '../dynamodb/conditional-write';
import { itemOf, keyItem, recordFromItem, rowFromItem, toAttribute, type Item } from './dynamodb-item';
import {
  claimSpec,
  markExhaustedSpec,
  parkExistingSpec,
  parkNewSpec,
  admitSpec,
  recordSpec,
  releaseSpec,
  replaySpec,
  relistSpec,
  unlistSpec,
  unparkSpec,
  type ListLengths,
  type UpdateSpec,
} from './dynamodb-expressions';
import { countListed, listPage, queryDeliveries, shipmentPage, type ListingStore } from './dynamodb-listing';
import { WIRE_NAMES } from './dynamodb-schema';
import { ClaimRefusedError, LeaseLostError, LedgerError, LedgerUnavailableError, RecordMissingError, ReleaseRefusedError, ReplayRefusedError } from './errors';
import { claimRefusal, mayRecord, parkRefusal, releaseRefusal, replayRefusal } from './guards';
import {
  isThisClaim,
  isThisRelease,
  isThisReplay,
  type ClaimedRecord,
  type ClaimInput,
  type DeliveryKey,
  type DeliveryRecord,
  type Ledger,
  type ListOptions,
  type Page,
  type ParkInput,
  type RecordAttemptInput,
  type ReleaseInput,
  type ReplayInput,
  type ShipmentPage,
  type ShipmentPageOptions,
} from './ledger';
import type { ListedState } from './listing';
import { auditEntry, holdsNoEvent, isExpired, newToken, readRecord } from './rows';
import { isHeadPartition } from './shipment-heads';
import { admitChanges, admitInvalidChanges, applyChanges, claimChanges, newRow, parkChanges, type Change, type ChangeableRow } from './transitions';
import type { RetryPolicy } from '../policy';

export interface DynamoDbLedgerOptions {
  /** A DynamoDB client (a document client is one, with the same configuration). */
  readonly client: DynamoDBDocumentClient | DynamoDBClient;
  readonly tableName: string;
  /** Epoch ms, for deciding which rows have expired on reads. Defaults to the system clock. */
  readonly now?: () => number;
  /**
   * Whether the rows it creates get the shipment index's keys (docs/contract.md §5): as the table
   * was made (`ledgerTableDefinition`). Default true; false writes no key of it.
   */
  readonly shipmentIndex?: boolean;
}

/**
 * Writes retried after a refused condition whose cause was not a domain refusal (a full history,
 * a row deleted by TTL in between). Each retry follows another writer's success, so more than a
 * couple means something is wrong.
 */
const MAX_WRITE_ROUNDS = 3;

const W = WIRE_NAMES;

export class DynamoDbLedger implements Ledger {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;
  readonly #now: () => number;
  readonly #shipmentIndex: boolean;

  constructor(options: DynamoDbLedgerOptions) {
    // Items are marshalled here, in their compact shape: the low-level client is all that is used.
    this.#client = options.client as DynamoDBClient;
    this.#tableName = options.tableName;
    this.#now = options.now ?? Date.now;
    this.#shipmentIndex = options.shipmentIndex ?? true;
  }

  async claim(input: ClaimInput): Promise<ClaimedRecord> {
    const key = { eventId: input.event.event.id, endpoint: input.endpoint };
    const claimToken = newToken();
    const spec = claimSpec(input, claimToken, this.#shipmentIndex);
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#update(key, spec);
      if (result.written) return rowAfter(result.item, key, claimChanges(input, claimToken, this.#shipmentIndex));
      // The SDK retried this very claim after its answer was lost (a timeout, a reset, a 500), and
      // the lease its first write took refused it: that write stands, with the attempt counted.
      if (result.current !== undefined && isThisClaim(result.current, claimToken)) return result.current;
      const refusal = result.current && claimRefusal(result.current, { contentHash: input.event.contentHash, nowMs: input.nowMs });
      if (refusal !== undefined) throw new ClaimRefusedError(result.current!, refusal, { cause: result.cause });
      // The row went away (TTL), or became claimable, between the write and the read: write again.
    }
    throw contention(key.eventId);
  }

  async recordAttempt(input: RecordAttemptInput): Promise<void> {
    // The first write does not know the history's length and appends only while there is room.
    // If it was full, the second write knows the length and pushes while dropping the oldest.
    let lengths: ListLengths = {};
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#update(input, recordSpec(input, lengths));
      if (result.written) return;
      const current = result.current;
      if (current === undefined) throw new RecordMissingError(input.eventId, { cause: result.cause });
      // Delivered twice is one delivery: the first write stands.
      if (input.next.state === 'delivered' && current.state === 'delivered') return;
      // Refused for a domain reason, or only because the history was full: the guard tells which.
      if (!mayRecord(current, { claimToken: input.claimToken, delivered: input.next.state === 'delivered' })) {
        throw new LeaseLostError(current, { cause: result.cause });
      }
      lengths = { history: current.history.length };
    }
    throw contention(input.eventId);
  }

  async markExhausted(key: DeliveryKey, nowMs: number, body: string): Promise<DeliveryRecord> {
    const result = await this.#update(key, markExhaustedSpec(key, nowMs, body));
    if (result.written) return recordFromItem(result.item);
    if (result.current === undefined) throw new RecordMissingError(key.eventId, { cause: result.cause });
    throw new LeaseLostError(result.current, { cause: result.cause });
  }

  async admitInvalid(key: DeliveryKey, detail: string, policy: RetryPolicy, nowMs: number, retentionSeconds: number): Promise<boolean> {
    const row: ChangeableRow = newRow(key);
    applyChanges(row, key, admitInvalidChanges(detail, policy, nowMs, retentionSeconds));
    const item = itemOf(row, key);
    const result = await conditionalWrite(
      this.#client,
      {
        put: {
          TableName: this.#tableName,
          Item: item,
          // Only where no row exists: an admitted event's row is never overwritten by a bad copy.
          ConditionExpression: 'attribute_not_exists(#id)',
          ExpressionAttributeNames: { '#id': W.eventId },
        },
      },
      { unavailable: this.#unavailable(key.eventId), decode: recordFromItem },
    );
    return result.written;
  }

  async replay(input: ReplayInput): Promise<DeliveryRecord> {
    const { eventId } = input;
    const entry = auditEntry(input, newToken());
    // As the history in `recordAttempt`: the audit's length is learnt only if it was full.
    let lengths: ListLengths = {};
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#update(input, replaySpec(input, entry, lengths));
      if (result.written) return recordFromItem(result.item);
      const current = result.current;
      if (current === undefined) throw new ReplayRefusedError('not-found', eventId, undefined, { cause: result.cause });
      // The SDK retried this very replay after its answer was lost: the first write stands, and
      // the caller must still get the row to enqueue the event.
      if (entry.id !== undefined && isThisReplay(current, entry.id)) return current;
      const refusal = replayRefusal(current);
      if (refusal !== undefined) throw new ReplayRefusedError(refusal, eventId, current, { cause: result.cause });
      // Dead with an event: refused only because the audit was full, or another writer moved the
      // row meanwhile. Again, knowing the audit's length.
      lengths = { audit: current.audit.length };
    }
    throw contention(eventId);
  }

  /** As `replay`: one UpdateItem (two when the audit was full), the refusal answered with the row. */
  async release(input: ReleaseInput): Promise<DeliveryRecord> {
    const { eventId, endpoint } = input;
    const entry = auditEntry(input, newToken(), 'release');
    let lengths: ListLengths = {};
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#update(input, releaseSpec(input, entry, lengths));
      if (result.written) return recordFromItem(result.item);
      const current = result.current;
      if (current === undefined) throw new ReleaseRefusedError('not-found', eventId, endpoint, undefined, { cause: result.cause });
      // The SDK retried this very release after its answer was lost: the first write stands.
      if (entry.id !== undefined && isThisRelease(current, entry.id)) return current;
      const refusal = releaseRefusal(current);
      if (refusal !== undefined) throw new ReleaseRefusedError(refusal, eventId, endpoint, current, { cause: result.cause });
      // Refused only because the audit was full: again, knowing its length.
      lengths = { audit: current.audit.length };
    }
    throw contention(eventId);
  }

  /**
   * First the write that creates the row parked (no row, or an invalid message's): one UpdateItem
   * for a new event, answering with nothing. Refused, it answers with the row (ALL_OLD), which
   * says whether it may be parked; if so, the second write parks it at the `createdAt` it read,
   * under the condition that the row is still that one (`PARK_EXISTING_CONDITION`).
   */
  async park(input: ParkInput): Promise<DeliveryRecord> {
    const key = { eventId: input.event.event.id, endpoint: input.endpoint };
    const context = { contentHash: input.event.contentHash, nowMs: input.nowMs };
    let current: DeliveryRecord | undefined;
    let cause: ConditionalCheckFailedException | undefined;
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      if (current === undefined || holdsNoEvent(current)) {
        const result = await this.#update(key, parkNewSpec(input, this.#shipmentIndex));
        if (result.written) return rowAfter(result.item, key, parkChanges(input, undefined, this.#shipmentIndex));
        ({ current, cause } = result);
        // The row went away (TTL) between the write and the read: the first write may succeed now.
        if (current === undefined || holdsNoEvent(current)) continue;
      }
      // Parked already (by another copy of the message, or this very write whose answer was lost
      // and which the SDK sent again): nothing to write.
      const refusal = parkRefusal(current, context);
      if (refusal === 'parked') return current;
      if (refusal !== undefined) throw new ClaimRefusedError(current, refusal, { cause });
      const result = await this.#update(key, parkExistingSpec(input, current.createdAt));
      if (result.written) return recordFromItem(result.item);
      // Changed since it was read (claimed, settled, parked by another): decide again on the row now.
      ({ current, cause } = result);
    }
    throw contention(key.eventId);
  }

  /** One conditional UpdateItem where the row is new; an existing row comes back with the refusal (ALL_OLD). */
  async admit(input: ParkInput): Promise<DeliveryRecord> {
    const key = { eventId: input.event.event.id, endpoint: input.endpoint };
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#update(key, admitSpec(input, this.#shipmentIndex));
      if (result.written) return rowAfter(result.item, key, admitChanges(input, this.#shipmentIndex));
      // The row went away (TTL) between the write and the read: the write may succeed now.
      if (result.current !== undefined && !holdsNoEvent(result.current)) return result.current;
    }
    throw contention(key.eventId);
  }

  /**
   * One conditional UpdateItem, answering with the row as released. A refusal is the answer
   * `undefined`: not parked (another release came first, a late 2xx settled it) or no row at all.
   * (A store client's retry of a release whose answer was lost is refused too: its row is then
   * listed as pending all the same, and the recovery sweep sends it if nothing else does.)
   */
  async relist(key: DeliveryKey, sinceMs: number): Promise<boolean> {
    return (await this.#update(key, relistSpec(key, sinceMs), false)).written;
  }

  async unlist(key: DeliveryKey): Promise<boolean> {
    return (await this.#update(key, unlistSpec(key), false)).written;
  }

  async unpark(key: DeliveryKey, nowMs: number, listedSinceMs: number): Promise<DeliveryRecord | undefined> {
    const result = await this.#update(key, unparkSpec(key, nowMs, listedSinceMs), false);
    return result.written ? recordFromItem(result.item) : undefined;
  }

  async get(key: DeliveryKey): Promise<DeliveryRecord | undefined> {
    // A shipment head's partition (`shipment-heads.ts`) holds no delivery: not read as one.
    if (isHeadPartition(key.eventId)) return undefined;
    const record = await this.#read(key);
    return record === undefined || isExpired(record, this.#now()) ? undefined : record;
  }

  async deliveriesOf(eventId: string): Promise<DeliveryRecord[]> {
    // No event ID starts with `#`: such a partition holds a shipment's heads (`shipment-heads.ts`), no deliveries.
    if (isHeadPartition(eventId)) return [];
    const records = await this.#guard(eventId, () => queryDeliveries(this.#client, this.#tableName, eventId));
    const nowMs = this.#now();
    return records.filter((record) => !isExpired(record, nowMs));
  }

  listByState(state: ListedState, options: ListOptions = {}): Promise<Page> {
    return listPage(this.#store(), state, options);
  }

  deliveriesOfShipment(shipmentId: string, options: ShipmentPageOptions = {}): Promise<ShipmentPage> {
    return shipmentPage(this.#store(), shipmentId, options);
  }

  countByState(state: ListedState, options: Pick<ListOptions, 'endpoint'> = {}): Promise<number> {
    return countListed(this.#store(), state, options.endpoint);
  }

  #store(): ListingStore {
    return { client: this.#client, tableName: this.#tableName, nowMs: this.#now(), guard: (subject, call) => this.#guard(subject, call) };
  }

  /**
   * One conditional UpdateItem. A write answers with the item it asked for; a refusal with the row
   * as it stands (read, where the store did not return it, unless `readRefused` is false).
   */
  #update(key: DeliveryKey, spec: UpdateSpec, readRefused = true): Promise<ConditionalWriteResult<DeliveryRecord>> {
    return conditionalWrite(this.#client, { update: this.#updateInput(key, spec) }, {
      unavailable: this.#unavailable(key.eventId),
      decode: recordFromItem,
      ...(readRefused ? { read: this.#readInput(key) } : {}),
    });
  }

  #updateInput(key: DeliveryKey, spec: UpdateSpec): UpdateItemCommandInput {
    const { compiled } = spec;
    const values: Item = {};
    for (const [placeholder, value] of Object.entries(spec.values)) values[compiled.values[placeholder] ?? placeholder] = toAttribute(value);
    return {
      TableName: this.#tableName,
      Key: keyItem(key),
      UpdateExpression: compiled.update,
      ConditionExpression: compiled.condition,
      ExpressionAttributeNames: compiled.names,
      ExpressionAttributeValues: values,
      ReturnValues: spec.returns,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    };
  }

  /** The row as stored, expired or not: refusals report what is there. */
  async #read(key: DeliveryKey): Promise<DeliveryRecord | undefined> {
    const item = await readItem(this.#client, this.#readInput(key), this.#unavailable(key.eventId));
    return item === undefined ? undefined : recordFromItem(item);
  }

  #readInput(key: DeliveryKey): GetItemCommandInput {
    return { TableName: this.#tableName, Key: keyItem(key), ConsistentRead: true };
  }

  /**
   * Runs one store call: every failure is the store being unavailable, but for a domain error the
   * call itself decided on (no shipment index). Messages name the event, never its content.
   */
  async #guard<T>(subject: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof LedgerError) throw error;
      throw this.#unavailable(subject)(error);
    }
  }

  #unavailable(subject: string): (error: unknown) => LedgerUnavailableError {
    return (error) => {
      return new LedgerUnavailableError(`ledger ${this.#tableName} failed for ${subject}: ${errorName(error)}`, { cause: error });
    };
  }
}

/**
 * The row after a write that may create it (a claim, an admission, parking's first write): its
 * changes applied to the row before it (ALL_OLD), as the store applied them. For a new event there
 * was none, so the claim nearly every event makes answers with no item and reads nothing.
 */
function rowAfter(before: Item, key: DeliveryKey, changes: readonly Change[]): ClaimedRecord {
  const row = before[W.eventId] === undefined ? newRow(key) : rowFromItem(before);
  applyChanges(row, key, changes);
  return readRecord(row) as ClaimedRecord;
}

function contention(eventId: string): LedgerUnavailableError {
  return new LedgerUnavailableError(`delivery record for event ${eventId} kept changing during the write`);
}
