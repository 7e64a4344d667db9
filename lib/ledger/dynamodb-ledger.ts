/**
 * The ledger on DynamoDB: one item per (eventId, endpoint), every transition a single
 * conditional write. A refused condition becomes a domain error carrying the row as it stands;
 * any other store failure becomes `LedgerUnavailableError`. Nothing above this file sees an SDK
 * error type.
 *
 * Reads on the happy path: none. `claim` and `recordAttempt` are one UpdateItem each. The claim
 * asks for the row as it was (ALL_OLD): nothing for a new event, whose row the adapter knows, and
 * for an existing one the row the claim's own change is applied to. The record asks for nothing. Only a refused write reads the row, and on AWS not even then:
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD` returns it with the error at no read cost.
 * Emulators ignore that option (dynalite does), so the adapter falls back to a consistent GetItem.
 *
 * Items carry one attribute the record does not: `retentionSeconds`, copied from the latest claim,
 * so that later transitions (whose inputs carry no retention) can extend the expiry in the same
 * write: `expiresAt = :nowSeconds + retentionSeconds`. And they lack two until
 * a first replay writes them: `replays` and `audit` (read as 0 and []).
 *
 * `leaseExpiresAt` and `nextAttemptAt` are on every row a claim created, always, as numbers: 0 is
 * "no lease" and "due now", and reads as absent in the record (`toRecord`). The conditions then
 * compare only attributes that are there, and rely on nothing about how a comparison with a
 * missing attribute evaluates.
 */
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { convertToAttr, unmarshall } from '@aws-sdk/util-dynamodb';
import { LEDGER_SCHEMA } from './dynamodb-schema';
import { ClaimRefusedError, LeaseLostError, LedgerUnavailableError, ReplayRefusedError } from './errors';
import {
  isThisClaim,
  isThisReplay,
  MAX_HISTORY,
  type ClaimedRecord,
  type ClaimInput,
  type DeliveryKey,
  type DeliveryRecord,
  type DeliveryState,
  type Ledger,
  type ListOptions,
  type Page,
  type RecordAttemptInput,
  type ReplayInput,
} from './ledger';
import {
  checkLimit,
  decodeCursor,
  DEFAULT_PAGE_LIMIT,
  encodeCursor,
  EXHAUSTED_WITHOUT_OUTCOME_DETAIL,
  invalidRow,
  isExpired,
  holdsNoEvent,
  missingRow,
  newRow,
  newToken,
  auditEntry,
  recordOf,
} from './rows';
import type { RetryPolicy } from '../policy';

export interface DynamoDbLedgerOptions {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  /** Epoch ms, for deciding which rows have expired on reads. Defaults to the system clock. */
  readonly now?: () => number;
}

/**
 * Writes retried after a refused condition whose cause was not a domain refusal (a full
 * history, a row deleted by TTL in between). Each retry follows another writer's success, so
 * more than a couple means something is wrong.
 */
const MAX_WRITE_ROUNDS = 3;

/*
 * The claim, clause by clause. A lease's life on one row:
 *
 *   claim(A): attempts+1   A sends...          leaseExpiresAt
 *   |----------- leased to A: claims refused ---|-------- claimable again (if due) --------> time
 *               A records its outcome here: lease released, nextAttemptAt set (or settled).
 *               A worker that died here leaves the lease to lapse; its attempt stays counted.
 */
// A new event: admit it and claim it in the same write.
const isNewEvent = 'attribute_not_exists(#eventId)';
// A row holding no event, only an invalid message with this ID: the valid event takes it over
// (its audit keeps the invalid message). Every row that holds an event has its content hash.
const isInvalidOnly = 'attribute_not_exists(#contentHash)';
// Same content. Another body under this ID is an identity conflict: refused, row left as it is.
const isSameContent = '#contentHash = :contentHash';
// Only pending work is sent; delivered and dead rows are settled.
const isPending = '#state = :pending';
// Budget left. `maxAttempts` is a top-level copy of the row's own policy, usable in a condition.
const hasBudget = '#attempts < #maxAttempts';
// No live lease: nobody else is sending now. This clause makes the claim a compare-and-set.
// A released lease is written as 0, never removed, so the comparison is always on a number that
// is there: how DynamoDB evaluates one with a missing attribute is not relied on.
const hasNoLiveLease = '#leaseExpiresAt <= :now';
// Due: the wait after the previous failed attempt is over (or there was none: 0, written by the
// claim that created the row and by every write that clears the wait, for the same reason).
const isDue = '#nextAttemptAt <= :now';
/*
 * Written without parentheses: AND binds before OR, so this reads `new OR no event OR (same AND … AND due)`.
 * Parentheses cost dynalite (the sandbox's DynamoDB) dearly: its expression parser backtracks
 * over every nested group, and the earlier `… OR (… AND (… OR …) AND (… OR …))` took about
 * 2 ms of its CPU per claim, against about 0.1 ms now. DynamoDB itself is indifferent.
 */
const CLAIM_CONDITION = `${isNewEvent} OR ${isInvalidOnly} OR ${[isSameContent, isPending, hasBudget, hasNoLiveLease, isDue].join(' AND ')}`;

// A 2xx is the truth however late: no lease needed, only a row that is not delivered yet
// (a dead one included). The row must exist: an update never creates one.
const MAY_RECORD_DELIVERED = 'attribute_exists(#eventId) AND #state <> :delivered';
// Any other outcome only under the claim that holds the lease (its token), on a row still pending.
const MAY_RECORD_FAILURE = '#claimToken = :claimToken AND #state = :pending';
// The history bound, when the current length is unknown: appending must keep it within MAX_HISTORY.
const HISTORY_HAS_ROOM = 'size(#history) < :maxHistory';

// Budget spent and the last claim's lease lapsed: its worker died mid-attempt.
const MAY_MARK_EXHAUSTED = `${isPending} AND #attempts >= #maxAttempts AND ${hasNoLiveLease}`;
// Only dead rows that hold an event (not those of invalid messages) can be sent again.
const MAY_REPLAY = '#state = :dead AND attribute_exists(#body)';

export class DynamoDbLedger implements Ledger {
  readonly #client: DynamoDBDocumentClient;
  readonly #tableName: string;
  readonly #now: () => number;

  constructor(options: DynamoDbLedgerOptions) {
    this.#client = options.client;
    this.#tableName = options.tableName;
    this.#now = options.now ?? Date.now;
  }

  async claim(input: ClaimInput): Promise<ClaimedRecord> {
    const key = { eventId: input.event.event.id, endpoint: input.endpoint };
    // The row a new event gets: the SET clauses below write exactly its fields where nothing was
    // (`replays` and `audit` aside, read as 0 and [] until a replay writes them).
    const claimToken = newToken();
    const row = newRow(input, claimToken);
    const spec: UpdateSpec = {
      set: [
        // A new row's fields. An existing row keeps its own: its content, and above all the
        // policy it was created with, which a replay must follow too.
        '#body = if_not_exists(#body, :body)',
        '#contentHash = if_not_exists(#contentHash, :contentHash)',
        '#eventType = if_not_exists(#eventType, :eventType)',
        // Pending: a claimable row already is; a taken-over invalid row becomes so, and sheds its
        // dead fields below (no other claimable row has them).
        '#state = :pending',
        '#policy = if_not_exists(#policy, :policy)',
        '#maxAttempts = if_not_exists(#maxAttempts, :maxAttempts)',
        // Retention counts from the latest write to a pending row, by the latest claim's setting:
        // a row never expires while its delivery is still running.
        '#retentionSeconds = :retentionSeconds',
        '#expiresAt = :expiresAt',
        '#history = if_not_exists(#history, :empty)',
        '#createdAt = if_not_exists(#createdAt, :now)',
        '#stateSince = if_not_exists(#stateSince, :now)',
        // Counted before anything is sent: a worker that dies mid-send has still spent it.
        '#attempts = if_not_exists(#attempts, :zero) + :one',
        '#leaseOwner = :owner',
        '#leaseExpiresAt = :leaseExpiresAt',
        // This claim's own identity: the outcome is recorded against it, and a retry of this very
        // request (same token) is told from every other claim by it.
        '#claimToken = :claimToken',
        // Due now on a new row: present, so that `isDue` compares a number (see the clause).
        '#nextAttemptAt = if_not_exists(#nextAttemptAt, :zero)',
      ],
      remove: ['#deadReason', '#deadDetail', '#deadAt'],
      condition: CLAIM_CONDITION,
      values: {
        ':body': row.body,
        ':contentHash': row.contentHash,
        ':eventType': row.eventType,
        ':pending': 'pending',
        ':policy': policyValue(row.policy),
        ':maxAttempts': row.maxAttempts,
        ':retentionSeconds': row.retentionSeconds,
        ':zero': 0,
        ':one': 1,
        ':empty': row.history,
        ':now': input.nowMs,
        ':expiresAt': row.expiresAt,
        ':owner': row.leaseOwner,
        ':leaseExpiresAt': row.leaseExpiresAt,
        ':claimToken': claimToken,
      },
      returns: 'ALL_OLD',
    };
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#update(key, spec);
      if (result.written) return afterClaim(result.item, recordOf(row));
      // The SDK retried this very claim after its answer was lost (a timeout, a reset, a 500), and
      // the lease its first write took refused it: that write stands, with the attempt counted.
      if (result.current !== undefined && isThisClaim(result.current, claimToken)) return result.current;
      if (result.current !== undefined) throw new ClaimRefusedError(result.current, { cause: result.cause });
      // The row went away (TTL) between the write and the read: the claim may succeed now.
    }
    throw contention(key.eventId);
  }

  async recordAttempt(input: RecordAttemptInput): Promise<void> {
    // The first write does not know the history's length and appends only while there is room.
    // If it was full, the second write knows the length and pushes while dropping the oldest.
    let historyLength: number | undefined;
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#update(input, { ...recordSpec(input, historyLength), returns: 'NONE' });
      if (result.written) return;
      const current = result.current;
      if (current === undefined) throw missingRow(input.eventId, result.cause);
      // Delivered twice is one delivery: the first write stands.
      if (input.next.state === 'delivered' && current.state === 'delivered') return;
      const mayRecord =
        input.next.state === 'delivered'
          ? current.state !== 'delivered'
          : current.claimToken === input.claimToken && current.state === 'pending';
      if (!mayRecord) throw new LeaseLostError(current, { cause: result.cause });
      historyLength = current.history.length;
    }
    throw contention(input.eventId);
  }

  async markExhausted(key: DeliveryKey, nowMs: number): Promise<DeliveryRecord> {
    const result = await this.#update(key, {
      set: [
        '#state = :dead',
        '#deadReason = :exhausted',
        '#deadDetail = :detail',
        '#deadAt = :now',
        '#stateSince = :now',
        '#expiresAt = :nowSeconds + #retentionSeconds',
        // No lease and nothing scheduled, written as 0 rather than removed (see `hasNoLiveLease`).
        '#leaseExpiresAt = :zero',
        '#nextAttemptAt = :zero',
      ],
      remove: ['#leaseOwner', '#claimToken'],
      condition: MAY_MARK_EXHAUSTED,
      values: {
        ':zero': 0,
        ':pending': 'pending',
        ':dead': 'dead',
        ':exhausted': 'exhausted',
        ':detail': EXHAUSTED_WITHOUT_OUTCOME_DETAIL,
        ':now': nowMs,
        ':nowSeconds': Math.floor(nowMs / 1000),
      },
    });
    if (result.written) return toRecord(result.item);
    if (result.current === undefined) throw missingRow(key.eventId, result.cause);
    throw new LeaseLostError(result.current, { cause: result.cause });
  }

  async admitInvalid(
    key: DeliveryKey,
    detail: string,
    policy: RetryPolicy,
    nowMs: number,
    retentionSeconds: number,
  ): Promise<boolean> {
    // Admitted without `replays` (see `toRecord`), and without `createdAt` and `stateSince`, read as
    // `deadAt`: so the claim of the valid event that takes the row over sets them, by `if_not_exists`.
    const {
      replays: _replays,
      createdAt: _createdAt,
      stateSince: _stateSince,
      ...item
    } = invalidRow(key, detail, policy, nowMs, retentionSeconds);
    try {
      await this.#guard(key.eventId, () =>
        this.#client.send(
          new PutCommand({
            TableName: this.#tableName,
            Item: plain(item),
            // Only where no row exists: an admitted event's row is never overwritten by a bad copy.
            ConditionExpression: 'attribute_not_exists(#eventId)',
            ExpressionAttributeNames: { '#eventId': LEDGER_SCHEMA.partitionKey },
          }),
        ),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async replay(input: ReplayInput): Promise<DeliveryRecord> {
    const { eventId, nowMs } = input;
    const replayId = newToken();
    const spec: UpdateSpec = {
      set: [
        '#state = :pending',
        // A fresh budget under the row's own policy; the body and event ID are kept as they are.
        '#attempts = :zero',
        '#replays = if_not_exists(#replays, :zero) + :one',
        '#audit = list_append(if_not_exists(#audit, :empty), :audit)',
        '#stateSince = :now',
        '#expiresAt = :nowSeconds + #retentionSeconds',
        // No lease, and due at once: 0, not `:now`, which is the operator's clock, and one running
        // ahead of the workers' would leave the event refused as not yet due. Written as 0 rather
        // than removed, so the claim's clauses compare numbers that are there.
        '#leaseExpiresAt = :zero',
        '#nextAttemptAt = :zero',
      ],
      remove: ['#deadReason', '#deadDetail', '#deadAt', '#leaseOwner', '#claimToken'],
      condition: MAY_REPLAY,
      values: {
        ':dead': 'dead',
        ':pending': 'pending',
        ':zero': 0,
        ':one': 1,
        ':empty': [],
        ':audit': [auditEntry(input, replayId)],
        ':now': nowMs,
        ':nowSeconds': Math.floor(nowMs / 1000),
      },
    };
    for (let round = 1; round <= MAX_WRITE_ROUNDS; round++) {
      const result = await this.#update(input, spec);
      if (result.written) return toRecord(result.item);
      const current = result.current;
      if (current === undefined) throw new ReplayRefusedError('not-found', eventId, undefined, { cause: result.cause });
      // The SDK retried this very replay after its answer was lost (a timeout, a reset, a 500): the
      // first write stands, and the caller must still get the row to enqueue the event.
      if (isThisReplay(current, replayId)) return current;
      if (current.state !== 'dead') throw new ReplayRefusedError('not-dead', eventId, current, { cause: result.cause });
      if (current.body === undefined) throw new ReplayRefusedError('no-event', eventId, current, { cause: result.cause });
      // Dead with an event by the time it was read: another writer moved it meanwhile. Again.
    }
    throw contention(eventId);
  }

  async get(key: DeliveryKey): Promise<DeliveryRecord | undefined> {
    const record = await this.#read(key);
    return record === undefined || isExpired(record, this.#now()) ? undefined : record;
  }

  async listByState(state: DeliveryState, options: ListOptions = {}): Promise<Page> {
    const limit = checkLimit(options.limit ?? DEFAULT_PAGE_LIMIT);
    const index = LEDGER_SCHEMA.stateIndex;
    const startKey = options.cursor === undefined ? undefined : startKeyAfter(options.cursor, state);
    const query = new QueryCommand({
      TableName: this.#tableName,
      IndexName: index.name,
      KeyConditionExpression: '#state = :state',
      // Emulators never delete expired rows and AWS does so only eventually: hide them here.
      // The limit counts rows read before this filter, so a page may hold fewer than `limit`.
      FilterExpression: '#expiresAt > :nowSeconds',
      ExpressionAttributeNames: { '#state': index.partitionKey, '#expiresAt': LEDGER_SCHEMA.ttlAttribute },
      ExpressionAttributeValues: { ':state': state, ':nowSeconds': this.#now() / 1000 },
      ScanIndexForward: !options.newestFirst,
      Limit: limit,
      ...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
    });
    const output = await this.#guard(`${state} rows`, () => this.#client.send(query));
    const records = (output.Items ?? []).map((item) => toRecord(item));
    return output.LastEvaluatedKey === undefined ? { records } : { records, cursor: encodeCursor(output.LastEvaluatedKey) };
  }

  /**
   * One conditional UpdateItem. A write answers with the item the spec asks for (`{}` for none); a
   * refused condition answers with the row as it now stands.
   */
  async #update(key: DeliveryKey, spec: UpdateSpec): Promise<UpdateResult> {
    try {
      const input = this.#updateInput(key, spec);
      // The updates are sent as the low-level command, their values marshalled here: the document
      // client would walk the whole input on every write to marshal it, constants included. The
      // document client is a DynamoDBClient with the same configuration and middleware, so the
      // request is the one the document command would send.
      const client = this.#client as unknown as DynamoDBClient;
      const output = await this.#guard(key.eventId, () => client.send(new UpdateItemCommand(input)));
      return { written: true, item: output.Attributes === undefined ? {} : unmarshall(output.Attributes) };
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = error.Item === undefined ? await this.#read(key) : toRecord(unmarshall(error.Item));
      return { written: false, current, cause: error };
    }
  }

  #updateInput(key: DeliveryKey, spec: UpdateSpec): UpdateItemCommandInput {
    const updateExpression = [
      `SET ${spec.set.join(', ')}`,
      ...(spec.remove === undefined || spec.remove.length === 0 ? [] : [`REMOVE ${spec.remove.join(', ')}`]),
    ].join(' ');
    const compiled = compile(updateExpression, spec.condition);
    const values: Record<string, AttributeValue> = {};
    for (const [placeholder, value] of Object.entries(spec.values)) {
      values[compiled.values[placeholder] ?? placeholder] = toAttribute(value);
    }
    return {
      TableName: this.#tableName,
      Key: { [LEDGER_SCHEMA.partitionKey]: { S: key.eventId }, [LEDGER_SCHEMA.sortKey]: { S: key.endpoint } },
      UpdateExpression: compiled.update,
      ConditionExpression: compiled.condition,
      ExpressionAttributeNames: compiled.names,
      ExpressionAttributeValues: values,
      ReturnValues: spec.returns ?? 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    };
  }

  /** The row as stored, expired or not: refusals report what is there. */
  async #read(key: DeliveryKey): Promise<DeliveryRecord | undefined> {
    const output = await this.#guard(key.eventId, () =>
      this.#client.send(new GetCommand({ TableName: this.#tableName, Key: keyOf(key), ConsistentRead: true })),
    );
    return output.Item === undefined ? undefined : toRecord(output.Item);
  }

  /**
   * Runs one store call. A refused condition passes through for the caller to turn into a domain
   * answer; every other failure is the store being unavailable. Messages name the event, never
   * its content.
   */
  async #guard<T>(subject: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) throw error;
      const what = error instanceof Error ? error.name : 'error';
      throw new LedgerUnavailableError(`ledger ${this.#tableName} failed for ${subject}: ${what}`, { cause: error });
    }
  }
}

/**
 * Creates the ledger table as the stack defines it (on-demand, the by-state index projecting
 * whole rows), for the sandbox and tests; waits until it is active. An existing table is kept.
 * TTL is not switched on here: dynalite has no UpdateTimeToLive, and in AWS the CDK stack sets it.
 */
export async function createLedgerTable(client: DynamoDBClient, tableName: string): Promise<void> {
  const index = LEDGER_SCHEMA.stateIndex;
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: LEDGER_SCHEMA.partitionKey, AttributeType: 'S' },
          { AttributeName: LEDGER_SCHEMA.sortKey, AttributeType: 'S' },
          { AttributeName: index.partitionKey, AttributeType: 'S' },
          { AttributeName: index.sortKey, AttributeType: 'N' },
        ],
        KeySchema: [
          { AttributeName: LEDGER_SCHEMA.partitionKey, KeyType: 'HASH' },
          { AttributeName: LEDGER_SCHEMA.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: index.name,
            KeySchema: [
              { AttributeName: index.partitionKey, KeyType: 'HASH' },
              { AttributeName: index.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (Table?.GlobalSecondaryIndexes ?? []).every((gsi) => gsi.IndexStatus === 'ACTIVE');
    if (Table?.TableStatus === 'ACTIVE' && indexesActive) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface UpdateSpec {
  readonly set: readonly string[];
  readonly remove?: readonly string[];
  readonly condition: string;
  readonly values: Record<string, unknown>;
  /**
   * What the write answers with: the new row (the default), the row before it, or nothing when the
   * caller has no use for a row (every byte returned is serialized, sent and parsed).
   */
  readonly returns?: 'ALL_NEW' | 'ALL_OLD' | 'NONE';
}

type UpdateResult =
  | { readonly written: true; readonly item: Record<string, unknown> }
  | { readonly written: false; readonly current: DeliveryRecord | undefined; readonly cause: ConditionalCheckFailedException };

/**
 * The write of one attempt's outcome. `historyLength` is unknown on the first try.
 *
 * The history is bounded in the same write, without reading the row first. DynamoDB cannot
 * append and drop the head of one list in one expression without knowing its length
 * (`SET h = list_append(h, :e) REMOVE h[0]` is refused: the paths overlap). So: append while
 * `size(h) < MAX_HISTORY` holds (every attempt of a row within the bound: one write); once the
 * list is full that clause fails, the caller reads the row (free on AWS: ALL_OLD) and retries with
 * the length it saw, `SET h[n] = :e REMOVE h[0]` under `size(h) = n`. Whichever order DynamoDB
 * applies the two actions in, the result is the last MAX_HISTORY entries.
 */
function recordSpec(input: RecordAttemptInput, historyLength: number | undefined): UpdateSpec {
  const { next, nowMs } = input;
  const full = historyLength !== undefined && historyLength >= MAX_HISTORY;
  const history = full
    ? {
        set: [`#history[${historyLength}] = :entry`],
        remove: Array.from({ length: historyLength - MAX_HISTORY + 1 }, (_, i) => `#history[${i}]`),
        condition: 'size(#history) = :historyLength',
        values: { ':entry': input.attempt, ':historyLength': historyLength },
      }
    : {
        set: ['#history = list_append(#history, :entries)'],
        remove: [],
        condition: HISTORY_HAS_ROOM,
        values: { ':entries': [input.attempt], ':maxHistory': MAX_HISTORY },
      };
  const common = {
    // Settled or not, this worker's claim ends with its outcome: the lease is released as 0, not
    // removed, so the claim's `hasNoLiveLease` compares a number that is there.
    set: [...history.set, '#lastOutcome = :outcome', '#leaseExpiresAt = :zero'],
    remove: [...history.remove, '#leaseOwner', '#claimToken'],
    values: { ...history.values, ':outcome': input.outcome, ':zero': 0 },
  };
  switch (next.state) {
    case 'delivered':
      return {
        set: [
          ...common.set,
          '#state = :delivered',
          '#deliveredAt = :now',
          '#stateSince = :now',
          '#expiresAt = :nowSeconds + #retentionSeconds',
          '#nextAttemptAt = :zero',
        ],
        remove: [...common.remove, '#deadReason', '#deadDetail', '#deadAt'],
        condition: `${MAY_RECORD_DELIVERED} AND ${history.condition}`,
        values: { ...common.values, ':delivered': 'delivered', ':now': nowMs, ':nowSeconds': Math.floor(nowMs / 1000) },
      };
    case 'pending':
      return {
        set: [...common.set, '#nextAttemptAt = :nextAttemptAt', '#expiresAt = :nowSeconds + #retentionSeconds'],
        remove: common.remove,
        condition: `${MAY_RECORD_FAILURE} AND ${history.condition}`,
        values: {
          ...common.values,
          ':claimToken': input.claimToken,
          ':pending': 'pending',
          ':nextAttemptAt': next.nextAttemptAt,
          ':nowSeconds': Math.floor(nowMs / 1000),
        },
      };
    case 'dead':
      return {
        set: [
          ...common.set,
          '#state = :dead',
          '#deadReason = :deadReason',
          '#deadDetail = :deadDetail',
          '#deadAt = :now',
          '#stateSince = :now',
          '#expiresAt = :nowSeconds + #retentionSeconds',
          '#nextAttemptAt = :zero',
        ],
        remove: common.remove,
        condition: `${MAY_RECORD_FAILURE} AND ${history.condition}`,
        values: {
          ...common.values,
          ':claimToken': input.claimToken,
          ':pending': 'pending',
          ':dead': 'dead',
          ':deadReason': next.reason,
          ':deadDetail': next.detail,
          ':now': nowMs,
          ':nowSeconds': Math.floor(nowMs / 1000),
        },
      };
  }
}

function keyOf(key: DeliveryKey): Record<string, string> {
  return { [LEDGER_SCHEMA.partitionKey]: key.eventId, [LEDGER_SCHEMA.sortKey]: key.endpoint };
}

/** An update and its condition as sent: placeholders shortened, with what they stand for. */
interface CompiledExpressions {
  readonly update: string;
  readonly condition: string;
  /** Short name placeholder (`#0`) to attribute name. */
  readonly names: Record<string, string>;
  /** Readable value placeholder (`:now`) to the short one sent (`:0`). */
  readonly values: Record<string, string>;
}

/** Compiled expressions by their readable text. The specs are a handful of fixed shapes. */
const compiledExpressions = new Map<string, CompiledExpressions>();
const MAX_COMPILED_EXPRESSIONS = 64;

/**
 * The expressions are written readably here (`#attempts < #maxAttempts`, each `#name` standing
 * for the attribute `name`) and sent with short placeholders (`#3 < #4`), compiled once per shape.
 * Every byte of an expression is sent, signed and parsed on every write; the claim's shrink by
 * about half, which the sandbox's DynamoDB (dynalite, parsing each one character by character)
 * feels most.
 */
function compile(update: string, condition: string): CompiledExpressions {
  const text = `${update}\n${condition}`;
  const known = compiledExpressions.get(text);
  if (known !== undefined) return known;
  const names: Record<string, string> = {};
  const shortNames = new Map<string, string>();
  const values: Record<string, string> = {};
  const shorten = (expression: string) =>
    expression
      .replace(/#(\w+)/g, (_, name: string) => {
        let short = shortNames.get(name);
        if (short === undefined) {
          short = `#${shortNames.size.toString(36)}`;
          shortNames.set(name, short);
          names[short] = name;
        }
        return short;
      })
      .replace(/:(\w+)/g, (placeholder: string) => (values[placeholder] ??= `:${Object.keys(values).length.toString(36)}`));
  const compiled = { update: shorten(update), condition: shorten(condition), names, values };
  if (compiledExpressions.size >= MAX_COMPILED_EXPRESSIONS) compiledExpressions.clear();
  compiledExpressions.set(text, compiled);
  return compiled;
}

/**
 * A JSON value without `undefined` members: the client may not have been built with
 * `removeUndefinedValues`, and an optional field left undefined must not fail the write.
 */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** A value already in DynamoDB's wire format: sent as it is. */
class Marshalled {
  constructor(readonly attribute: AttributeValue) {}
}

/** The policy as sent, by the rows' shared copy of it (one per container): marshalled once. */
const marshalledPolicies = new WeakMap<RetryPolicy, Marshalled>();

function policyValue(policy: RetryPolicy): Marshalled {
  let value = marshalledPolicies.get(policy);
  if (value === undefined) {
    value = new Marshalled(toAttribute(policy));
    marshalledPolicies.set(policy, value);
  }
  return value;
}

const MARSHALL_OPTIONS = { removeUndefinedValues: true } as const;

/**
 * One expression value in DynamoDB's wire format, `undefined` members left out (as `plain` and the
 * document client's `removeUndefinedValues` do). The JSON-like values the ledger writes (strings,
 * safe integers, plain objects and lists of them) are marshalled directly; anything else as the
 * document client would.
 */
function toAttribute(value: unknown): AttributeValue {
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

/**
 * The row after a claim, from the row before it (ALL_OLD). For a new event there was none, so the
 * claim that nearly every event makes answers with no item at all and the row is the one the
 * claim created. An existing row is the same row with the attempt counted and the lease taken:
 * all the claim changes on a row it does not create, with the expiry it moved.
 */
function afterClaim(before: Record<string, unknown>, created: ClaimedRecord): ClaimedRecord {
  if (before[LEDGER_SCHEMA.partitionKey] === undefined) return created;
  const row = toRecord(before);
  // A taken-over invalid row: the row the claim created, with the invalid message's audit.
  if (holdsNoEvent(row)) return { ...created, audit: row.audit };
  const { leaseOwner, leaseExpiresAt, claimToken, expiresAt } = created;
  return { ...row, attempts: row.attempts + 1, leaseOwner, leaseExpiresAt, claimToken, expiresAt };
}

/**
 * `replays` and `audit` are written by the first replay and read as 0 and [] until then: rows are
 * admitted without them, so the claim (the write every event pays for) sets two fields fewer.
 * `leaseExpiresAt` and `nextAttemptAt` are stored as 0 for "no lease" and "due now" (see
 * `hasNoLiveLease`) and read as absent, as the port defines them.
 */
function toRecord(item: Record<string, unknown>): DeliveryRecord {
  const { retentionSeconds: _retentionSeconds, leaseExpiresAt, nextAttemptAt, ...record } = item;
  const result: Record<string, unknown> = { replays: 0, audit: [], ...record };
  result.createdAt ??= record.deadAt;
  result.stateSince ??= record.deadAt;
  if (leaseExpiresAt !== undefined && leaseExpiresAt !== 0) result.leaseExpiresAt = leaseExpiresAt;
  if (nextAttemptAt !== undefined && nextAttemptAt !== 0) result.nextAttemptAt = nextAttemptAt;
  return result as unknown as DeliveryRecord;
}

function contention(eventId: string): LedgerUnavailableError {
  return new LedgerUnavailableError(`delivery record for event ${eventId} kept changing during the write`);
}

/** The listing's start after `cursor`: the row's key plus its index key, as the index names them. */
function startKeyAfter(cursor: string, state: DeliveryState): Record<string, string | number> {
  const position = decodeCursor(cursor, state);
  const index = LEDGER_SCHEMA.stateIndex;
  return {
    [LEDGER_SCHEMA.partitionKey]: position.eventId,
    [LEDGER_SCHEMA.sortKey]: position.endpoint,
    [index.partitionKey]: state,
    [index.sortKey]: position.stateSince,
  };
}
