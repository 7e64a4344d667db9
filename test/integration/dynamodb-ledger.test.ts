/**
 * DynamoDbLedger with the real AWS SDK against dynalite on loopback: the shared Ledger contract,
 * plus what only a real store can show (a compare-and-set under concurrency, request counts,
 * store failures).
 */
import {
  ConditionalCheckFailedException,
  DescribeTableCommand,
  DynamoDBServiceException,
  GetItemCommand,
  ResourceNotFoundException,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_PAYLOAD_LIMIT_BYTES } from '../../lib/config';
import { parseEvent } from '../../lib/event';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { LEDGER_SCHEMA, WIRE_NAMES } from '../../lib/ledger/dynamodb-schema';
import {
  ClaimRefusedError,
  LeaseLostError,
  LedgerUnavailableError,
  ReplayRefusedError,
} from '../../lib/ledger/errors';
import { itemSizeBytes } from '../../lib/ledger/item-size';
import {
  DEFAULT_ENDPOINT,
  MAX_AUDIT,
  MAX_HISTORY,
  type AttemptNext,
  type ClaimedRecord,
  type ClaimInput,
  type DeliveryRecord,
  type ParkInput,
  type RecordAttemptInput,
} from '../../lib/ledger/ledger';
import type { AttemptOutcome } from '../../lib/outcome';
import { DEFAULT_RETRY_POLICY, retryPolicy } from '../../lib/policy';
import { CALLER_MAX_CHARS, OPERATOR_MAX_CHARS, REASON_MAX_CHARS } from '../../lib/replay';
import {
  countCommands,
  emulatorDynamoDbClient,
  readsAndWrites,
  returnOldItemOnConditionFailure,
  type CommandCounter,
  type Dynalite,
} from '../helpers/dynalite';
import { droppableLedgerTable, freshTableEachTest, useDynalite } from '../helpers/dynalite-fixture';
import { deliverCopiesInOneBatch, ledgerContract, rejectionOf, shipmentEvent, T0 } from '../helpers/ledger-contract';

const LEASE_MS = 30_000;
const RETENTION_SECONDS = 86_400;
const POLICY = retryPolicy(3, [30, 120]);

let dynalite: Dynalite;
let client: DynamoDBClient;
let documents: DynamoDBDocumentClient;
let counter: CommandCounter;

useDynalite((started) => {
  ({ dynalite, client, counter } = started);
  documents = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
});


/**
 * What the consumer records of an attempt on a claimed row: its entry from the outcome (the claim's
 * attempt number and `shipmentEvent`'s body unless told), the attempt taking `durationMs` (40 unless
 * told) up to `nowMs` unless it started `at` another time.
 */
function attemptInput(
  claimed: ClaimedRecord,
  outcome: AttemptOutcome,
  next: AttemptNext,
  nowMs: number,
  options: { attempt?: number; at?: number; durationMs?: number; body?: string } = {},
): RecordAttemptInput {
  const { attempt = claimed.attempts, durationMs = 40, at = nowMs - durationMs, body = shipmentEvent(claimed.eventId).body } = options;
  const status = 'status' in outcome ? outcome.status : undefined;
  return {
    eventId: claimed.eventId,
    endpoint: claimed.endpoint,
    claimToken: claimed.claimToken,
    body,
    attempt: { attempt, at, outcome: outcome.kind, status, durationMs },
    outcome,
    next,
    nowMs,
  };
}

/**
 * Makes `lossy` lose the answer to its first `commandName` request: the request reaches the store
 * and is applied, then the connection resets before the answer arrives, as it can on AWS. The
 * SDK's own retry then sends the identical request again. Counts the requests that went out.
 */
function loseFirstAnswer(lossy: DynamoDBClient, commandName: string): { sent(): number } {
  let sent = 0;
  lossy.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== commandName) return next(args);
      sent += 1;
      const output = await next(args);
      if (sent === 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      return output;
    },
    // Inside the SDK's retry middleware (finalizeRequest, high priority), so its retry runs.
    { step: 'finalizeRequest', priority: 'low', name: 'loseFirstAnswer' },
  );
  return { sent: () => sent };
}

ledgerContract('DynamoDbLedger on dynalite', async ({ now }, options = {}) => {
  // Without the index, the table has none either, as a deployment with it off.
  const shipmentIndex = options.shipmentIndex ?? true;
  const { tableName, drop } = await droppableLedgerTable(client, 'ledger-test', { shipmentIndex });
  return { ledger: new DynamoDbLedger({ client: documents, tableName, now, shipmentIndex }), close: drop };
});

describe('DynamoDbLedger on dynalite', () => {
  let tableName: string;
  let ledger: DynamoDbLedger;

  freshTableEachTest(() => client, 'ledger-test', (created) => {
    tableName = created;
    ledger = new DynamoDbLedger({ client: documents, tableName, now: () => T0 });
    counter.reset();
  });

  function claimInput(eventId: string, overrides: Partial<ClaimInput> = {}): ClaimInput {
    return {
      event: shipmentEvent(eventId),
      endpoint: DEFAULT_ENDPOINT,
      owner: 'worker-a',
      nowMs: T0,
      leaseMs: LEASE_MS,
      policy: POLICY,
      retentionSeconds: RETENTION_SECONDS,
      ...overrides,
    };
  }

  describe('Method: claim under concurrency', () => {
    it('lets exactly one of 20 concurrent claims on a new event win', async () => {
      // Act
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => ledger.claim(claimInput('evt_race', { owner: `worker-${i}` }))),
      );

      // Assess
      const won = results.filter((r): r is PromiseFulfilledResult<ClaimedRecord> => r.status === 'fulfilled');
      const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(refused).toHaveLength(19);
      const winner = won[0]?.value;
      expect(winner?.attempts).toBe(1);
      for (const { reason } of refused) {
        expect(reason).toBeInstanceOf(ClaimRefusedError);
        expect((reason as ClaimRefusedError).record.leaseOwner).toBe(winner?.leaseOwner);
      }
      expect((await ledger.get({ eventId: 'evt_race', endpoint: DEFAULT_ENDPOINT }))?.attempts).toBe(1);
    });

    it('lets exactly one of 20 concurrent claims take over an expired lease', async () => {
      // Prepare: a worker claimed and vanished; its lease lapses at T0 + LEASE_MS.
      await ledger.claim(claimInput('evt_retake'));

      // Act
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          ledger.claim(claimInput('evt_retake', { owner: `worker-${i}`, nowMs: T0 + LEASE_MS })),
        ),
      );

      // Assess
      const won = results.filter((r): r is PromiseFulfilledResult<ClaimedRecord> => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      expect(won[0]?.value.attempts).toBe(2);
      expect(won[0]?.value.leaseExpiresAt).toBe(T0 + 2 * LEASE_MS);
      expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof ClaimRefusedError)).toHaveLength(19);
    });
  });

  describe('Method: claim with copies of one event in one batch', () => {
    it('sends one request for ten copies claimed with one owner in the same millisecond', async () => {
      const result = await deliverCopiesInOneBatch(ledger, 10);

      expect(result.requests).toBe(1);
      expect(result.record?.state).toBe('delivered');
      expect(result.record?.attempts).toBe(1);
    });
  });

  describe('Retries after a lost answer', () => {
    let lossy: DynamoDBClient;

    beforeEach(() => {
      lossy = emulatorDynamoDbClient(dynalite.endpoint);
    });

    afterEach(() => {
      lossy.destroy();
    });

    it('returns the replayed row when the SDK retries a replay whose write was applied', async () => {
      // Prepare: a dead row; then a replay whose first answer is lost.
      const claimed = await ledger.claim(claimInput('evt_lost_replay'));
      await ledger.recordAttempt(
        attemptInput(claimed, { kind: 'rejected', status: 400, responseStart: '' }, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 40),
      );
      const updates = loseFirstAnswer(lossy, 'UpdateItemCommand');
      const lossyLedger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(lossy), tableName, now: () => T0 });

      // Act
      const replayed = await lossyLedger.replay({
        eventId: 'evt_lost_replay',
        endpoint: DEFAULT_ENDPOINT,
        operator: 'ops',
        reason: 'receiver fixed',
        nowMs: T0 + 5000,
      });

      // Assess
      expect(updates.sent()).toBe(2);
      expect(replayed.state).toBe('pending');
      expect(replayed.replays).toBe(1);
      expect(replayed.audit).toStrictEqual([
        { at: T0 + 5000, action: 'replay', operator: 'ops', reason: 'receiver fixed', id: expect.any(String) as string },
      ]);
      expect(await ledger.get({ eventId: 'evt_lost_replay', endpoint: DEFAULT_ENDPOINT })).toStrictEqual(replayed);
    });

    it('returns the claimed row when the SDK retries a claim whose write was applied', async () => {
      const updates = loseFirstAnswer(lossy, 'UpdateItemCommand');
      const lossyLedger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(lossy), tableName, now: () => T0 });

      const claimed = await lossyLedger.claim(claimInput('evt_lost_claim'));

      expect(updates.sent()).toBe(2);
      expect(claimed.attempts).toBe(1);
      expect(claimed.leaseOwner).toBe('worker-a');
      expect(claimed.leaseExpiresAt).toBe(T0 + LEASE_MS);
      expect(await ledger.get({ eventId: 'evt_lost_claim', endpoint: DEFAULT_ENDPOINT })).toStrictEqual(claimed);
    });
  });

  describe('Request cost', () => {
    it('claims and records a delivery in 2 writes and 0 reads', async () => {
      const claimed = await ledger.claim(claimInput('evt_cheap'));
      await ledger.recordAttempt(attemptInput(claimed, { kind: 'accepted', status: 200 }, { state: 'delivered' }, T0 + 40));

      expect(counter.counts()).toStrictEqual({ UpdateItem: 2 });
      expect(readsAndWrites(counter.counts())).toStrictEqual({ reads: 0, writes: 2 });
    });

    it('pays one read for a refused claim when the store returns no row with the error', async () => {
      await ledger.claim(claimInput('evt_refused'));
      counter.reset();

      await rejectionOf(ledger.claim(claimInput('evt_refused', { owner: 'worker-b' })), ClaimRefusedError);

      expect(counter.counts()).toStrictEqual({ UpdateItem: 1, GetItem: 1 });
    });

    it('reads nothing for a refused claim when the store returns the row with the error, as AWS does', async () => {
      // Prepare: make dynalite answer like AWS with ReturnValuesOnConditionCheckFailure ALL_OLD.
      const claimed = await ledger.claim(claimInput('evt_all_old'));
      const awsLike = emulatorDynamoDbClient(dynalite.endpoint);
      const awsLikeCounter = countCommands(awsLike);
      returnOldItemOnConditionFailure(awsLike, client);
      const awsLedger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(awsLike), tableName });

      // Act
      const error = await rejectionOf(awsLedger.claim(claimInput('evt_all_old', { owner: 'worker-b' })), ClaimRefusedError);

      // Assess
      expect(error.record).toStrictEqual(claimed);
      expect(awsLikeCounter.counts()).toStrictEqual({ UpdateItem: 1 });
      awsLike.destroy();
    });

    it(`records on a full history (${MAX_HISTORY} entries) in 2 writes and 1 read`, async () => {
      // Prepare: fill the history.
      const policy = retryPolicy(MAX_HISTORY + 1, [1]);
      for (let n = 1; n <= MAX_HISTORY; n++) {
        const attempt = await ledger.claim(claimInput('evt_full', { policy, nowMs: T0 + n * 1000 }));
        await ledger.recordAttempt(
          attemptInput(attempt, { kind: 'temporary', status: 503 }, { state: 'pending', nextAttemptAt: T0 + (n + 1) * 1000 }, T0 + n * 1000 + 40, { attempt: n }),
        );
      }
      const claimed = await ledger.claim(claimInput('evt_full', { policy, nowMs: T0 + (MAX_HISTORY + 1) * 1000 }));
      counter.reset();

      // Act
      await ledger.recordAttempt(attemptInput(claimed, { kind: 'accepted', status: 200 }, { state: 'delivered' }, T0 + 100_040));

      // Assess
      expect(counter.counts()).toStrictEqual({ UpdateItem: 2, GetItem: 1 });
      const delivered = await ledger.get({ eventId: 'evt_full', endpoint: DEFAULT_ENDPOINT });
      expect(delivered?.state).toBe('delivered');
      expect(delivered?.history.map((h) => h.attempt)).toStrictEqual(
        Array.from({ length: MAX_HISTORY }, (_, i) => i + 2),
      );
    });
  });

  describe('Method: deliveriesOf on the store', () => {
    /** The input of every Query the ledger's client sent during the test. */
    let queries: Record<string, unknown>[];

    beforeEach(() => {
      queries = [];
      client.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName === 'QueryCommand') queries.push({ ...(args.input as Record<string, unknown>) });
          return next(args);
        },
        { step: 'initialize', name: 'captureQueries' },
      );
    });

    afterEach(() => {
      client.middlewareStack.remove('captureQueries');
    });

    it("reads an event's deliveries with one strongly consistent Query on the partition key, no scan and no index", async () => {
      const event = shipmentEvent('evt_fan_query');
      for (const endpoint of ['b', 'a', 'c']) await ledger.claim({ ...claimInput('evt_fan_query', { endpoint }), event });
      counter.reset();

      const deliveries = await ledger.deliveriesOf('evt_fan_query');

      expect(deliveries.map((d) => d.endpoint)).toStrictEqual(['a', 'b', 'c']);
      expect(counter.counts()).toStrictEqual({ Query: 1 });
      expect(queries).toHaveLength(1);
      expect(queries[0]).toMatchObject({ TableName: tableName, ConsistentRead: true, KeyConditionExpression: '#id = :id' });
      expect(queries[0]?.IndexName).toBeUndefined();
    });

    it('follows the Query past its 1 MB page: five deliveries of the largest event', async () => {
      // Prepare: five rows of 256 KB bodies (each stored by a rejected first attempt: dead), more than one Query page holds.
      const base = shipmentEvent('evt_fan_big', { data: { note: '' } }).body.length;
      const fields = { data: { note: 'x'.repeat(MAX_PAYLOAD_LIMIT_BYTES - base) } };
      const parsed = parseEvent(JSON.stringify({ ...JSON.parse(shipmentEvent('evt_fan_big').body), ...fields }), MAX_PAYLOAD_LIMIT_BYTES);
      if (!parsed.ok) throw parsed.error;
      const endpoints = ['e1', 'e2', 'e3', 'e4', 'e5'];
      for (const endpoint of endpoints) {
        const claimed = await ledger.claim({ ...claimInput('evt_fan_big', { endpoint }), event: parsed.value });
        await ledger.recordAttempt(
          attemptInput(claimed, { kind: 'rejected', status: 400, responseStart: 'no' }, { state: 'dead', reason: 'rejected', detail: 'rejected (400): no' }, T0 + 40, {
            attempt: 1,
            body: parsed.value.body,
          }),
        );
      }
      counter.reset();

      // Act
      const deliveries = await ledger.deliveriesOf('evt_fan_big');

      // Assess
      expect(deliveries.map((d) => d.endpoint)).toStrictEqual(endpoints);
      expect(deliveries.every((d) => d.body === parsed.value.body)).toBe(true);
      expect(counter.counts().Query).toBeGreaterThan(1);
    });

    it('fails as unavailable, naming the event, when the table cannot be read', async () => {
      const missing = new DynamoDbLedger({ client: documents, tableName: 'no-such-ledger', now: () => T0 });

      const error = await rejectionOf(missing.deliveriesOf('evt_fan_gone'), LedgerUnavailableError);

      expect(error.message).toContain('evt_fan_gone');
      expect(error.cause).toBeInstanceOf(ResourceNotFoundException);
    });
  });

  describe('Parking on the store', () => {
    const ACME = 'carrier-acme';

    function parkInput(eventId: string, overrides: Partial<ParkInput> = {}): ParkInput {
      return { event: shipmentEvent(eventId), endpoint: ACME, nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS, ...overrides };
    }

    async function storedItem(eventId: string, endpoint = ACME): Promise<Record<string, AttributeValue>> {
      const key = { eventId: { S: eventId }, endpoint: { S: endpoint } };
      const { Item } = await client.send(new GetItemCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
      if (Item === undefined) throw new Error(`no row for ${eventId}`);
      return Item;
    }

    /** A ledger whose refused writes carry the row, as on AWS; its own request counter. */
    function awsLikeLedger(): { ledger: DynamoDbLedger; counter: CommandCounter; close(): void } {
      const awsLike = emulatorDynamoDbClient(dynalite.endpoint);
      const awsLikeCounter = countCommands(awsLike);
      returnOldItemOnConditionFailure(awsLike, client);
      return {
        ledger: new DynamoDbLedger({ client: DynamoDBDocumentClient.from(awsLike), tableName, now: () => T0 }),
        counter: awsLikeCounter,
        close: () => awsLike.destroy(),
      };
    }

    it('stores the marker as `pa` and lists the row under its endpoint and shard at its admission; unpark moves it to pending', async () => {
      // Act
      await ledger.park(parkInput('evt_shape', { nowMs: T0 + 7 }));
      const parked = await storedItem('evt_shape');
      await ledger.unpark({ eventId: 'evt_shape', endpoint: ACME }, T0 + 100, T0 + 900);
      const released = await storedItem('evt_shape');

      // Assess
      expect(WIRE_NAMES.parkedAt).toBe('pa');
      expect(parked.pa).toStrictEqual({ N: String(T0 + 7) });
      expect(parked.lk?.S).toMatch(/^k\d\d:carrier-acme$/);
      expect(parked.ls).toStrictEqual({ S: `${T0 + 7} carrier-acme evt_shape` });
      // No claim: no attempt counted, "no lease" and "due now" stored as 0, no owner or token.
      expect([parked.n, parked.le, parked.na]).toStrictEqual([{ N: '0' }, { N: '0' }, { N: '0' }]);
      expect([parked.lo, parked.ct]).toStrictEqual([undefined, undefined]);
      expect(released.pa).toBeUndefined();
      expect(released.lk?.S).toMatch(/^p\d\d$/);
      expect(released.lk?.S?.slice(1)).toBe(parked.lk?.S?.slice(1, 3));
      expect(released.ls).toStrictEqual({ S: `${T0 + 900} carrier-acme evt_shape` });
    });

    it('adds nothing to a row never parked: a delivery claimed and recorded delivered has its attributes, the body (`b`) not among them', async () => {
      const claimed = await ledger.claim(claimInput('evt_never_parked', { endpoint: ACME }));
      const whileClaimed = Object.keys(await storedItem('evt_never_parked')).sort();
      await ledger.recordAttempt(attemptInput(claimed, { kind: 'accepted', status: 200 }, { state: 'delivered' }, T0 + 40, { attempt: 1 }));
      const delivered = Object.keys(await storedItem('evt_never_parked')).sort();

      // `sh` and `c`: the shipment index's keys (on by default).
      expect(whileClaimed).toStrictEqual(['c', 'ct', 'endpoint', 'eventId', 'h', 'hi', 'le', 'lo', 'm', 'n', 'na', 'p', 'rs', 's', 'sh', 't', 'x']);
      expect(delivered).toStrictEqual(['c', 'da', 'endpoint', 'eventId', 'h', 'hi', 'm', 'n', 'o', 'p', 'rs', 's', 'sh', 't', 'x']);
    });

    it('keeps a parked 300-byte event within one write unit, and its index entry to keys alone', async () => {
      const base = shipmentEvent('evt_01JEXAMPLE0000000000000000', { data: { note: '' } }).body.length;
      const event = shipmentEvent('evt_01JEXAMPLE0000000000000000', { data: { note: 'x'.repeat(300 - base) } });
      expect(event.body).toHaveLength(300);

      await ledger.park({ ...parkInput(event.event.id), event, policy: DEFAULT_RETRY_POLICY });
      const item = await storedItem(event.event.id);

      expect(itemSizeBytes(item)).toBeLessThanOrEqual(1024);
      const entry = { eventId: item.eventId, endpoint: item.endpoint, lk: item.lk, ls: item.ls } as Record<string, AttributeValue>;
      expect(itemSizeBytes(entry)).toBeLessThanOrEqual(1024);
    });

    it('parks a new event in one write and no read', async () => {
      await ledger.park(parkInput('evt_park_cost'));

      expect(counter.counts()).toStrictEqual({ UpdateItem: 1 });
    });

    it('parks an existing row in two writes and no read where refusals carry the row (AWS); a parked one in one refused write', async () => {
      // Prepare: a pending row after a failed attempt.
      const claimed = await ledger.claim(claimInput('evt_park_existing', { endpoint: ACME }));
      await ledger.recordAttempt(
        attemptInput(claimed, { kind: 'temporary', status: 503 }, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 40, { attempt: 1 }),
      );
      const aws = awsLikeLedger();

      // Act
      const parked = await aws.ledger.park(parkInput('evt_park_existing', { nowMs: T0 + 100 }));
      const parkCounts = aws.counter.counts();
      aws.counter.reset();
      const again = await aws.ledger.park(parkInput('evt_park_existing', { nowMs: T0 + 200 }));
      const againCounts = aws.counter.counts();
      aws.close();

      // Assess
      expect(parkCounts).toStrictEqual({ UpdateItem: 2 });
      expect(againCounts).toStrictEqual({ UpdateItem: 1 });
      expect(again).toStrictEqual(parked);
      expect((await storedItem('evt_park_existing')).ls).toStrictEqual({ S: `${T0} carrier-acme evt_park_existing` });
    });

    it('unparks in one write, and refuses one that is not parked in one write', async () => {
      await ledger.park(parkInput('evt_unpark_cost'));
      counter.reset();

      await ledger.unpark({ eventId: 'evt_unpark_cost', endpoint: ACME }, T0 + 10, T0 + 10);
      const first = counter.counts();
      counter.reset();
      await ledger.unpark({ eventId: 'evt_unpark_cost', endpoint: ACME }, T0 + 20, T0 + 20);

      expect(first).toStrictEqual({ UpdateItem: 1 });
      expect(counter.counts()).toStrictEqual({ UpdateItem: 1 });
    });

    it('lets exactly one of 10 concurrent releases have the row', async () => {
      await ledger.park(parkInput('evt_unpark_10'));

      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => ledger.unpark({ eventId: 'evt_unpark_10', endpoint: ACME }, T0 + 100 + i, T0 + 100 + i)),
      );

      const winner = results.findIndex((r) => r !== undefined);
      expect(results.filter((r) => r !== undefined)).toHaveLength(1);
      const item = await storedItem('evt_unpark_10');
      expect(item.pa).toBeUndefined();
      expect(item.ls).toStrictEqual({ S: `${T0 + 100 + winner} carrier-acme evt_unpark_10` });
    });

    it('lets either 10 concurrent parks or one of 10 concurrent claims of a new event win, never both', async () => {
      const results = await Promise.allSettled([
        ...Array.from({ length: 10 }, () => ledger.park(parkInput('evt_park_race'))),
        ...Array.from({ length: 10 }, (_, i) => ledger.claim(claimInput('evt_park_race', { endpoint: ACME, owner: `worker-${i}` }))),
      ]);

      const parks = results.slice(0, 10);
      const claims = results.slice(10);
      const parked = parks.filter((r) => r.status === 'fulfilled').length;
      const claimed = claims.filter((r) => r.status === 'fulfilled').length;
      // Parked first: every park answers with the parked row, every claim is refused. Claimed first:
      // the one claim holds the lease, so every park and every other claim is refused.
      expect([
        [10, 0],
        [0, 1],
      ]).toContainEqual([parked, claimed]);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toBeInstanceOf(ClaimRefusedError);
      const row = await ledger.get({ eventId: 'evt_park_race', endpoint: ACME });
      expect(row?.attempts).toBe(claimed);
      expect(row?.parkedAt).toBe(parked === 10 ? T0 : undefined);
    });

    it('returns the parked row when the SDK retries a park whose write was applied', async () => {
      const lossy = emulatorDynamoDbClient(dynalite.endpoint);
      const updates = loseFirstAnswer(lossy, 'UpdateItemCommand');
      const lossyLedger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(lossy), tableName, now: () => T0 });

      const parked = await lossyLedger.park(parkInput('evt_lost_park'));
      lossy.destroy();

      expect(updates.sent()).toBe(2);
      expect(parked.parkedAt).toBe(T0);
      expect(parked.attempts).toBe(0);
      expect(await ledger.get({ eventId: 'evt_lost_park', endpoint: ACME })).toStrictEqual(parked);
    });

    it('surfaces a refused park as a domain error, and store failures as LedgerUnavailableError', async () => {
      await ledger.claim(claimInput('evt_park_leased', { endpoint: ACME }));
      const missing = new DynamoDbLedger({ client: documents, tableName: 'no-such-table' });
      const key = { eventId: 'evt_nowhere', endpoint: ACME };

      const refused = await rejectionOf(ledger.park(parkInput('evt_park_leased')), ClaimRefusedError);
      const unavailable = [
        await rejectionOf(missing.park(parkInput('evt_nowhere')), LedgerUnavailableError),
        await rejectionOf(missing.unpark(key, T0, T0), LedgerUnavailableError),
        await rejectionOf(missing.listByState('parked', { endpoint: ACME }), LedgerUnavailableError),
        await rejectionOf(missing.countByState('parked', { endpoint: ACME }), LedgerUnavailableError),
      ];

      expect(refused.cause).toBeInstanceOf(ConditionalCheckFailedException);
      expect(refused.record.leaseOwner).toBe('worker-a');
      for (const error of unavailable) expect(error.cause).toBeInstanceOf(ResourceNotFoundException);
    });

    it("reads only the endpoint's 16 parked shards to list and count its rows", async () => {
      /** The partition of every Query sent. */
      const partitions: string[] = [];
      client.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName === 'QueryCommand') {
            const input = args.input as { ExpressionAttributeValues?: Record<string, { S?: string }> };
            partitions.push(input.ExpressionAttributeValues?.[':k']?.S ?? '');
          }
          return next(args);
        },
        { step: 'initialize', name: 'captureParkedShards' },
      );
      try {
        for (let i = 0; i < 5; i++) await ledger.park(parkInput(`evt_shards_${i}`, { nowMs: T0 + i }));
        await ledger.park(parkInput('evt_shards_other', { endpoint: 'carrier-other' }));

        const page = await ledger.listByState('parked', { endpoint: ACME });
        const count = await ledger.countByState('parked', { endpoint: ACME });

        expect(page.records.map((r) => r.eventId)).toStrictEqual(['evt_shards_0', 'evt_shards_1', 'evt_shards_2', 'evt_shards_3', 'evt_shards_4']);
        expect(count).toBe(5);
        const expected = Array.from({ length: 16 }, (_, shard) => `k${String(shard).padStart(2, '0')}:carrier-acme`);
        expect([...new Set(partitions)].sort()).toStrictEqual(expected);
        expect(partitions).toHaveLength(32);
      } finally {
        client.middlewareStack.remove('captureParkedShards');
      }
    });
  });

  describe('Method: listByState of one endpoint on the store', () => {
    it("finds a rare endpoint's rows among many, reading more index entries per request as it goes, and only those rows", async () => {
      // Prepare: 80 dead rows of a busy endpoint and 3 of a rare one, written as the consumer writes them.
      const dieAt = async (eventId: string, endpoint: string, atMs: number) => {
        const claimed = await ledger.claim(claimInput(eventId, { endpoint, nowMs: atMs - 10 }));
        await ledger.recordAttempt(
          attemptInput(claimed, { kind: 'rejected', status: 400, responseStart: 'no' }, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, atMs, {
            attempt: 1,
            at: atMs - 10,
            durationMs: 5,
          }),
        );
      };
      for (let i = 0; i < 80; i++) await dieAt(`evt_busy_${String(i).padStart(2, '0')}`, 'busy', T0 + i);
      for (const [i, id] of ['evt_rare_a', 'evt_rare_b', 'evt_rare_c'].entries()) await dieAt(id, 'rare', T0 + 20 * i + 5);
      counter.reset();

      // Act
      const first = await ledger.listByState('dead', { endpoint: 'rare', limit: 2 });
      const firstCounts = counter.counts();
      const second = await ledger.listByState('dead', { endpoint: 'rare', limit: 2, cursor: first.cursor });

      // Assess
      expect(first.records.map((r) => r.eventId)).toStrictEqual(['evt_rare_a', 'evt_rare_b']);
      expect(second.records.map((r) => r.eventId)).toStrictEqual(['evt_rare_c']);
      expect(second.cursor).toBeUndefined();
      // Each of the 16 shards holds about five busy entries: some needed a second, larger request.
      expect(firstCounts.Query).toBeGreaterThan(16);
      expect(firstCounts.BatchGetItem).toBe(1);
    });
  });

  describe('Errors', () => {
    it('surfaces refused conditions as domain errors, never as SDK errors', async () => {
      const claimed = await ledger.claim(claimInput('evt_domain'));
      const errors = [
        await rejectionOf(ledger.claim(claimInput('evt_domain', { owner: 'worker-b' })), ClaimRefusedError),
        await rejectionOf(ledger.markExhausted({ eventId: 'evt_domain', endpoint: DEFAULT_ENDPOINT }, T0, shipmentEvent('evt_domain').body), LeaseLostError),
        await rejectionOf(
          ledger.recordAttempt({
            ...attemptInput(claimed, { kind: 'temporary', status: 503 }, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 40),
            claimToken: 'not-this-claim',
          }),
          LeaseLostError,
        ),
        await rejectionOf(
          ledger.replay({ eventId: 'evt_domain', endpoint: DEFAULT_ENDPOINT, operator: 'ops', reason: 'x', nowMs: T0 }),
          ReplayRefusedError,
        ),
      ];

      for (const error of errors) {
        expect(error).not.toBeInstanceOf(DynamoDBServiceException);
        expect(error.cause).toBeInstanceOf(ConditionalCheckFailedException);
      }
    });

    it('turns store failures into LedgerUnavailableError with the SDK error as cause', async () => {
      const missing = new DynamoDbLedger({ client: documents, tableName: 'no-such-table' });
      const key = { eventId: 'evt_nowhere', endpoint: DEFAULT_ENDPOINT };

      const errors = [
        await rejectionOf(missing.claim(claimInput('evt_nowhere')), LedgerUnavailableError),
        await rejectionOf(missing.get(key), LedgerUnavailableError),
        await rejectionOf(missing.listByState('dead'), LedgerUnavailableError),
        await rejectionOf(missing.admitInvalid(key, 'bad', POLICY, T0, RETENTION_SECONDS), LedgerUnavailableError),
      ];

      for (const error of errors) {
        expect(error.code).toBe('ledger-unavailable');
        expect(error.cause).toBeInstanceOf(ResourceNotFoundException);
        expect(error.message).toBe(
          `ledger no-such-table failed for ${error === errors[2] ? 'dead rows' : 'evt_nowhere'}: ResourceNotFoundException`,
        );
      }
    });

    it('writes through a DocumentClient built without removeUndefinedValues', async () => {
      const plainClient = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(client), tableName, now: () => T0 });
      const claimed = await plainClient.claim(claimInput('evt_plain'));

      await plainClient.recordAttempt({
        eventId: 'evt_plain',
        endpoint: DEFAULT_ENDPOINT,
        claimToken: claimed.claimToken,
        body: shipmentEvent(claimed.eventId).body,
        attempt: { attempt: claimed.attempts, at: T0, outcome: 'temporary', status: undefined, cause: 'dns', durationMs: 3 },
        outcome: { kind: 'temporary', status: undefined, cause: 'dns', retryAfterSeconds: undefined },
        next: { state: 'pending', nextAttemptAt: T0 + 30_000 },
        nowMs: T0 + 3,
      });

      const recorded = await plainClient.get({ eventId: 'evt_plain', endpoint: DEFAULT_ENDPOINT });
      expect(recorded?.lastOutcome).toStrictEqual({ kind: 'temporary', cause: 'dns' });
      expect(recorded?.history).toStrictEqual([{ attempt: 1, at: T0, outcome: 'temporary', cause: 'dns', durationMs: 3 }]);
    });
  });

  describe('Function: createLedgerTable', () => {
    it('creates the table with its sparse, keys-only listing and shipment indexes, and keeps an existing one', async () => {
      await ledger.claim(claimInput('evt_kept'));

      await createLedgerTable(client, tableName);

      const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
      expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
      expect(Table?.GlobalSecondaryIndexes?.map((gsi) => [gsi.IndexName, gsi.KeySchema, gsi.Projection])).toStrictEqual([
        [
          'listing',
          [
            { AttributeName: 'lk', KeyType: 'HASH' },
            { AttributeName: 'ls', KeyType: 'RANGE' },
          ],
          { ProjectionType: 'KEYS_ONLY' },
        ],
        [
          'shipment',
          [
            { AttributeName: 'sh', KeyType: 'HASH' },
            { AttributeName: 'c', KeyType: 'RANGE' },
          ],
          { ProjectionType: 'KEYS_ONLY' },
        ],
      ]);
      expect((await ledger.get({ eventId: 'evt_kept', endpoint: DEFAULT_ENDPOINT }))?.attempts).toBe(1);
    });
  });

  describe('Row size and index writes', () => {
    /** The row as stored, in wire format. */
    async function storedItem(eventId: string): Promise<Record<string, AttributeValue>> {
      const { Item } = await client.send(
        new GetItemCommand({ TableName: tableName, Key: { eventId: { S: eventId }, endpoint: { S: DEFAULT_ENDPOINT } } }),
      );
      if (Item === undefined) throw new Error(`no row for ${eventId}`);
      return Item;
    }

    /** An event whose canonical body is `bytes` long. */
    function eventOfSize(eventId: string, bytes: number) {
      const base = shipmentEvent(eventId, { data: { note: '' } }).body.length;
      const event = shipmentEvent(eventId, { data: { note: 'x'.repeat(bytes - base) } });
      expect(event.body).toHaveLength(bytes);
      sized.set(eventId, event.body);
      return event;
    }

    /** The body a claim was for: this suite's events are `shipmentEvent(id)` but for the sized ones. */
    const sized = new Map<string, string>();
    const bodyOf = (claimed: ClaimedRecord) => sized.get(claimed.eventId) ?? shipmentEvent(claimed.eventId).body;

    async function record(claimed: ClaimedRecord, body: string, outcome: AttemptOutcome, next: AttemptNext, nowMs: number): Promise<void> {
      await ledger.recordAttempt(attemptInput(claimed, outcome, next, nowMs, { body, durationMs: 120 }));
    }

    it('keeps the row of a 500-byte event within one write unit (1 KB) through the default policy: five failures, then delivery', async () => {
      // Prepare: a lease owner as the consumer writes it in Lambda (the log stream's ID, the pid).
      const event = eventOfSize('evt_01JEXAMPLE0000000000000000', 500);
      const owner = `${'0123456789abcdef'.repeat(2)}:1234567`;
      const sizes: number[] = [];

      // Act
      const attempts = DEFAULT_RETRY_POLICY.maxAttempts;
      for (let n = 1; n <= attempts; n++) {
        const atMs = T0 + n * 60_000;
        const claimed = await ledger.claim({ ...claimInput(event.event.id, { owner, nowMs: atMs, policy: DEFAULT_RETRY_POLICY }), event });
        sizes.push(itemSizeBytes(await storedItem(event.event.id)));
        const last = n === attempts;
        const outcome: AttemptOutcome = last ? { kind: 'accepted', status: 200 } : { kind: 'temporary', status: 503 };
        await record(claimed, bodyOf(claimed), outcome, last ? { state: 'delivered' } : { state: 'pending', nextAttemptAt: atMs + 30_000 }, atMs + 200);
        sizes.push(itemSizeBytes(await storedItem(event.event.id)));
      }

      // Assess
      expect(Math.max(...sizes)).toBeLessThanOrEqual(1024);
    });

    it(`keeps the row of the largest event within 400 KB through ${2 * MAX_AUDIT} replays with the longest operator, reason and caller`, async () => {
      // Prepare: four UTF-8 bytes per character, the longest texts in bytes.
      const base = shipmentEvent('evt_replayed_often', { data: { note: '' } }).body.length;
      const note = 'x'.repeat(MAX_PAYLOAD_LIMIT_BYTES - base);
      const fields = { id: 'evt_replayed_often', shipmentId: 'shp_1001', status: 'in_transit', occurredAt: '2026-12-02T10:15:00Z', data: { note } };
      const parsed = parseEvent(JSON.stringify(fields), MAX_PAYLOAD_LIMIT_BYTES);
      if (!parsed.ok) throw parsed.error;
      const event = parsed.value;
      expect(event.body).toHaveLength(MAX_PAYLOAD_LIMIT_BYTES);
      sized.set(event.event.id, event.body);
      const wide = '\u{1F4E6}';
      const replayed = { operator: wide.repeat(OPERATOR_MAX_CHARS), reason: wide.repeat(REASON_MAX_CHARS), caller: wide.repeat(CALLER_MAX_CHARS) };
      const rejected: AttemptOutcome = { kind: 'rejected', status: 400, responseStart: 'bad carrier' };
      const sizes: number[] = [];

      // Act: each replay is claimed and rejected again.
      for (let n = 1; n <= 2 * MAX_AUDIT; n++) {
        const atMs = T0 + n * 60_000;
        const claimed = await ledger.claim({ ...claimInput(event.event.id, { nowMs: atMs }), event });
        await record(claimed, bodyOf(claimed), rejected, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, atMs + 100);
        await ledger.replay({ eventId: event.event.id, endpoint: DEFAULT_ENDPOINT, ...replayed, nowMs: atMs + 200 });
        sizes.push(itemSizeBytes(await storedItem(event.event.id)));
      }

      // Assess
      const row = await ledger.get({ eventId: event.event.id, endpoint: DEFAULT_ENDPOINT });
      expect(row?.replays).toBe(2 * MAX_AUDIT);
      expect(row?.audit).toHaveLength(MAX_AUDIT);
      expect(Math.max(...sizes)).toBeLessThan(400 * 1024);
    });

    it('writes the shipment index keys once, at admission: no later write of a retried, delivered, dead or replayed row changes them', async () => {
      // Prepare: the index entry as DynamoDB sizes it, the keys of the table and the index plus 100 bytes.
      const entryBytes = (item: Record<string, AttributeValue>) => {
        const keys = [LEDGER_SCHEMA.partitionKey, LEDGER_SCHEMA.sortKey, LEDGER_SCHEMA.shipmentIndex.partitionKey, LEDGER_SCHEMA.shipmentIndex.sortKey];
        return itemSizeBytes(Object.fromEntries(keys.map((name) => [name, item[name]!]))) + 100;
      };
      const indexKeys = (item: Record<string, AttributeValue>) => [item[LEDGER_SCHEMA.shipmentIndex.partitionKey], item[LEDGER_SCHEMA.shipmentIndex.sortKey]];
      const items: Record<string, AttributeValue>[] = [];

      // Act: 503, then 200 at the retry; then a second row of the event rejected and replayed.
      const first = await ledger.claim(claimInput('evt_indexed_once', { nowMs: T0 }));
      items.push(await storedItem('evt_indexed_once'));
      await record(first, bodyOf(first), { kind: 'temporary', status: 503 }, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 100);
      items.push(await storedItem('evt_indexed_once'));
      const second = await ledger.claim(claimInput('evt_indexed_once', { nowMs: T0 + 30_000 }));
      items.push(await storedItem('evt_indexed_once'));
      await record(second, bodyOf(second), { kind: 'rejected', status: 400, responseStart: 'bad carrier' }, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 30_100);
      items.push(await storedItem('evt_indexed_once'));
      await ledger.replay({ eventId: 'evt_indexed_once', endpoint: DEFAULT_ENDPOINT, operator: 'ops', reason: 'fixed', nowMs: T0 + 40_000 });
      items.push(await storedItem('evt_indexed_once'));

      // Assess: the keys of the first write on every later one; the entry, keys only, within 1 KB.
      expect(indexKeys(items[0]!)).toStrictEqual([{ S: 'shp_1001' }, { N: String(T0) }]);
      for (const item of items) expect(indexKeys(item)).toStrictEqual(indexKeys(items[0]!));
      expect(entryBytes(items[0]!)).toBeLessThanOrEqual(1024);
    });

    it('writes no listing index key on an event delivered at its first attempt', async () => {
      const claimed = await ledger.claim(claimInput('evt_unlisted'));
      const whileClaimed = await storedItem('evt_unlisted');
      await record(claimed, bodyOf(claimed), { kind: 'accepted', status: 200 }, { state: 'delivered' }, T0 + 100);
      const delivered = await storedItem('evt_unlisted');

      for (const item of [whileClaimed, delivered]) {
        expect(item[LEDGER_SCHEMA.listingIndex.partitionKey]).toBeUndefined();
        expect(item[LEDGER_SCHEMA.listingIndex.sortKey]).toBeUndefined();
      }
    });

    it('writes no listing key on a row through its failed attempts, nor at its delivery; on a row retried then dead, only its dead key', async () => {
      // Act: two rows fail three times each, then one is delivered and the other rejected; each
      // row's state and listing key as stored after every attempt.
      const policy = retryPolicy(6, [30]);
      const settlements: [string, AttemptOutcome, AttemptNext][] = [
        ['evt_retried', { kind: 'accepted', status: 200 }, { state: 'delivered' }],
        ['evt_retried_dead', { kind: 'rejected', status: 400, responseStart: 'no' }, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }],
      ];
      const stored: string[] = [];
      for (const [eventId, settledBy, settled] of settlements) {
        for (let n = 1; n <= 4; n++) {
          const atMs = T0 + n * 60_000;
          const claimed = await ledger.claim(claimInput(eventId, { nowMs: atMs, policy }));
          if (n < 4) await record(claimed, bodyOf(claimed), { kind: 'temporary', status: 503 }, { state: 'pending', nextAttemptAt: atMs + 30_000 }, atMs + 100);
          else await record(claimed, bodyOf(claimed), settledBy, settled, atMs + 100);
          const item = await storedItem(eventId);
          stored.push(`${eventId} ${item.s?.S} ${item.lk?.S ?? 'no lk'} ${item.ls?.S ?? 'no ls'}`);
        }
      }

      // Assess
      const deadKey = (await storedItem('evt_retried_dead')).lk?.S ?? '';
      expect(deadKey).toMatch(/^d\d\d$/);
      expect(stored).toStrictEqual([
        ...Array.from({ length: 3 }, () => 'evt_retried pending no lk no ls'),
        'evt_retried delivered no lk no ls',
        ...Array.from({ length: 3 }, () => 'evt_retried_dead pending no lk no ls'),
        `evt_retried_dead dead ${deadKey} ${T0 + 240_100} default evt_retried_dead`,
      ]);
    });

    it('keeps the listing key of a replayed row as it was through its failed attempts, and drops it on delivery', async () => {
      // Prepare: a row dead, then replayed at T0 + 5 s (listed as pending).
      const dying = await ledger.claim(claimInput('evt_replay_retried'));
      await record(dying, bodyOf(dying), { kind: 'rejected', status: 400, responseStart: 'no' }, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 100);
      await ledger.replay({ eventId: 'evt_replay_retried', endpoint: DEFAULT_ENDPOINT, operator: 'ops', reason: 'receiver fixed', nowMs: T0 + 5000 });
      const replayed = await storedItem('evt_replay_retried');

      // Act: two attempts fail, the third is delivered.
      const afterFailures: (string | undefined)[][] = [];
      for (let n = 1; n <= 2; n++) {
        const claimed = await ledger.claim(claimInput('evt_replay_retried', { nowMs: T0 + n * 10_000 }));
        await record(claimed, bodyOf(claimed), { kind: 'temporary', status: 503 }, { state: 'pending', nextAttemptAt: T0 + n * 10_000 + 5000 }, T0 + n * 10_000 + 100);
        const item = await storedItem('evt_replay_retried');
        afterFailures.push([item.lk?.S, item.ls?.S]);
      }
      const last = await ledger.claim(claimInput('evt_replay_retried', { nowMs: T0 + 30_000 }));
      await record(last, bodyOf(last), { kind: 'accepted', status: 200 }, { state: 'delivered' }, T0 + 30_100);
      const delivered = await storedItem('evt_replay_retried');

      // Assess
      expect(replayed.lk?.S).toMatch(/^p\d\d$/);
      expect(replayed.ls?.S).toBe(`${T0 + 5000} default evt_replay_retried`);
      expect(afterFailures).toStrictEqual([
        [replayed.lk?.S, replayed.ls?.S],
        [replayed.lk?.S, replayed.ls?.S],
      ]);
      expect([delivered.lk, delivered.ls]).toStrictEqual([undefined, undefined]);
    });
  });
});
