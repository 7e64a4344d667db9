/**
 * DynamoDbShipmentHeads with the real AWS SDK against dynalite on loopback, on the ledger table
 * beside a DynamoDbLedger: the shared ShipmentHeads contract, plus what only the store shows (the
 * stored shape, requests per operation, a lost answer, sizes and write units, store failures), and
 * the delivery row's `sequence` attribute on the wire.
 */
import {
  GetItemCommand,
  ResourceNotFoundException,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DynamoDbShipmentHeads } from '../../lib/ledger/dynamodb-shipment-heads';
import { LedgerUnavailableError } from '../../lib/ledger/errors';
import { itemSizeBytes } from '../../lib/ledger/item-size';
import type { ClaimInput } from '../../lib/ledger/ledger';
import { DEFAULT_HEAD_RETENTION_SECONDS, MAX_SEQUENCE } from '../../lib/ledger/shipment-heads';
import { retryPolicy } from '../../lib/policy';
import {
  countCommands,
  emulatorDynamoDbClient,
  returnOldItemOnConditionFailure,
  type CommandCounter,
  type Dynalite,
} from '../helpers/dynalite';
import { droppableLedgerTable, freshTableEachTest, useDynalite } from '../helpers/dynalite-fixture';
import { rejectionOf, shipmentEvent, T0 } from '../helpers/ledger-contract';
import { shipmentHeadsContract } from '../helpers/shipment-heads-contract';

const SHIPMENT = 'shp_1001';
const ACME = 'carrier-acme';
const KB = 1024;

let dynalite: Dynalite;
let client: DynamoDBClient;
let counter: CommandCounter;

useDynalite((started) => {
  ({ dynalite, client, counter } = started);
});


shipmentHeadsContract('DynamoDbShipmentHeads on dynalite', async (options = {}) => {
  const { tableName, drop } = await droppableLedgerTable(client, 'heads-test');
  const documents = DynamoDBDocumentClient.from(client);
  return {
    heads: new DynamoDbShipmentHeads({ client: documents, tableName, ...options }),
    ledger: new DynamoDbLedger({ client: documents, tableName, now: () => T0 }),
    close: drop,
  };
});

describe('DynamoDbShipmentHeads on dynalite', () => {
  let tableName: string;
  let heads: DynamoDbShipmentHeads;

  freshTableEachTest(() => client, 'heads-test', (created) => {
    tableName = created;
    heads = new DynamoDbShipmentHeads({ client, tableName, now: () => T0 });
    counter.reset();
  });

  async function storedItem(eventId: string, endpoint: string): Promise<Record<string, AttributeValue>> {
    const { Item } = await client.send(new GetItemCommand({ TableName: tableName, Key: { eventId: { S: eventId }, endpoint: { S: endpoint } } }));
    if (Item === undefined) throw new Error(`no item ${eventId} ${endpoint}`);
    return Item;
  }

  /** Heads whose refused writes carry the item, as on AWS; their own request counter. */
  function awsLikeHeads(): { heads: DynamoDbShipmentHeads; counter: CommandCounter; close(): void } {
    const awsLike = emulatorDynamoDbClient(dynalite.endpoint);
    const awsLikeCounter = countCommands(awsLike);
    returnOldItemOnConditionFailure(awsLike, client);
    return { heads: new DynamoDbShipmentHeads({ client: awsLike, tableName, now: () => T0 }), counter: awsLikeCounter, close: () => awsLike.destroy() };
  }

  describe('Stored shape', () => {
    it('stores a head under `#` + shipment ID and the endpoint: counters, an attribute per event and per waiter, its retention, no index key, no expiry while unsettled', async () => {
      await heads.assign(SHIPMENT, ACME, 'evt_1');
      await heads.assign(SHIPMENT, ACME, 'evt.2:b');
      await heads.wait(SHIPMENT, ACME, 2, 'evt.2:b');

      expect(await storedItem(`#${SHIPMENT}`, ACME)).toStrictEqual({
        eventId: { S: '#shp_1001' },
        endpoint: { S: ACME },
        ha: { N: '2' },
        hn: { N: '1' },
        hr: { N: String(DEFAULT_HEAD_RETENTION_SECONDS) },
        's:evt_1': { N: '1' },
        's:evt.2:b': { N: '2' },
        'w:2': { S: 'evt.2:b' },
      });
    });

    it('drops a waiter on its advance and keeps every event’s number; settled, it expires its retention after the settling advance', async () => {
      await heads.assign(SHIPMENT, ACME, 'evt_1');
      await heads.assign(SHIPMENT, ACME, 'evt_2');
      await heads.wait(SHIPMENT, ACME, 2, 'evt_2');
      await heads.advance(SHIPMENT, ACME, 1, 'evt_1');
      await heads.advance(SHIPMENT, ACME, 2, 'evt_2');

      expect(await storedItem(`#${SHIPMENT}`, ACME)).toStrictEqual({
        eventId: { S: '#shp_1001' },
        endpoint: { S: ACME },
        ha: { N: '2' },
        hn: { N: '3' },
        hr: { N: String(DEFAULT_HEAD_RETENTION_SECONDS) },
        's:evt_1': { N: '1' },
        's:evt_2': { N: '2' },
        x: { N: String(Math.floor(T0 / 1000) + DEFAULT_HEAD_RETENTION_SECONDS) },
      });
    });
  });

  describe('Requests per operation', () => {
    it('assigns in one UpdateItem, the first of a head included, and reads nothing', async () => {
      await heads.assign(SHIPMENT, ACME, 'evt_1');
      const first = counter.counts();
      counter.reset();
      await heads.assign(SHIPMENT, ACME, 'evt_2');

      expect(first).toStrictEqual({ UpdateItem: 1 });
      expect(counter.counts()).toStrictEqual({ UpdateItem: 1 });
    });

    it('answers an event that has its number from the refusal as AWS returns it (one UpdateItem), or reads it on dynalite', async () => {
      await heads.assign(SHIPMENT, ACME, 'evt_1');
      const aws = awsLikeHeads();
      counter.reset();

      const onAws = await aws.heads.assign(SHIPMENT, ACME, 'evt_1');
      const awsCounts = aws.counter.counts();
      // (The AWS-like client's stand-in for ALL_OLD read through this one.)
      counter.reset();
      const onDynalite = await heads.assign(SHIPMENT, ACME, 'evt_1');
      aws.close();

      expect(onAws).toStrictEqual({ sequence: 1, next: 1 });
      expect(awsCounts).toStrictEqual({ UpdateItem: 1 });
      expect(onDynalite).toStrictEqual({ sequence: 1, next: 1 });
      expect(counter.counts()).toStrictEqual({ UpdateItem: 1, GetItem: 1 });
    });

    it('waits in one UpdateItem; refused, it tells why from the head that comes with the refusal on AWS (dynalite: one consistent read more)', async () => {
      await heads.assign(SHIPMENT, ACME, 'evt_1');
      await heads.assign(SHIPMENT, ACME, 'evt_2');
      counter.reset();
      const aws = awsLikeHeads();

      const recorded = await heads.wait(SHIPMENT, ACME, 2, 'evt_2');
      const recordedCounts = counter.counts();
      counter.reset();
      const refused = await heads.wait(SHIPMENT, ACME, 1, 'evt_1');
      const refusedCounts = counter.counts();
      const awsRefused = await aws.heads.wait(SHIPMENT, ACME, 1, 'evt_1');
      const awsForged = await aws.heads.wait(SHIPMENT, ACME, 2, 'evt_1');
      const awsCounts = aws.counter.counts();
      aws.close();

      expect([recorded, refused, awsRefused, awsForged]).toStrictEqual(['waiting', 'its-turn', 'its-turn', 'not-its-number']);
      expect(recordedCounts).toStrictEqual({ UpdateItem: 1 });
      expect(refusedCounts).toStrictEqual({ UpdateItem: 1, GetItem: 1 });
      expect(awsCounts).toStrictEqual({ UpdateItem: 2 });
    });

    it('advances the last number in one UpdateItem (it settles the head), an earlier one in two on AWS (the first refused, with the head); a second advance is one refused UpdateItem', async () => {
      await heads.assign(SHIPMENT, ACME, 'evt_1');
      await heads.assign(SHIPMENT, ACME, 'evt_2');
      const aws = awsLikeHeads();
      const counts: Record<string, number>[] = [];
      const advance = async (sequence: number, eventId: string) => {
        aws.counter.reset();
        const head = await aws.heads.advance(SHIPMENT, ACME, sequence, eventId);
        counts.push(aws.counter.counts());
        return head;
      };

      const earlier = await advance(1, 'evt_1');
      const last = await advance(2, 'evt_2');
      const again = await advance(2, 'evt_2');
      aws.close();

      expect([earlier?.next, earlier?.expiresAt, last?.next, last?.expiresAt]).toStrictEqual([2, undefined, 3, Math.floor(T0 / 1000) + DEFAULT_HEAD_RETENTION_SECONDS]);
      expect(again).toStrictEqual(last);
      expect(counts).toStrictEqual([{ UpdateItem: 2 }, { UpdateItem: 1 }, { UpdateItem: 1 }]);
    });
  });

  describe('A lost answer', () => {
    it("answers the store client's retry of an assignment whose write was applied with the same number, counted once", async () => {
      // Prepare: a client that loses the answer to its first UpdateItem after the store applied it.
      const lossy = emulatorDynamoDbClient(dynalite.endpoint);
      let sent = 0;
      lossy.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName !== 'UpdateItemCommand') return next(args);
          sent += 1;
          const output = await next(args);
          if (sent === 1) throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
          return output;
        },
        { step: 'finalizeRequest', priority: 'low', name: 'loseFirstAnswer' },
      );
      await heads.assign(SHIPMENT, ACME, 'evt_1');

      // Act
      const assignment = await new DynamoDbShipmentHeads({ client: lossy, tableName }).assign(SHIPMENT, ACME, 'evt_2');
      lossy.destroy();

      // Assess
      expect(sent).toBe(2);
      expect(assignment).toStrictEqual({ sequence: 2, next: 1 });
      expect(await heads.get(SHIPMENT, ACME)).toMatchObject({ assigned: 2, seq: { evt_1: 1, evt_2: 2 } });
    });
  });

  describe('Size and write units', () => {
    /** A 32-character event ID, the length of `evt_` and a ULID-like suffix. */
    const eventId = (i: number) => `evt_01JEXAMPLE${String(i).padStart(18, '0')}`;

    /** The head of a shipment of `events` events, in order, and then with all but the first waiting. */
    async function sizes(events: number): Promise<{ inOrder: number; othersWaiting: number }> {
      const shipmentId = `shp_${events}`;
      for (let i = 1; i <= events; i++) await heads.assign(shipmentId, ACME, eventId(i));
      const inOrder = itemSizeBytes(await storedItem(`#${shipmentId}`, ACME));
      for (let i = 2; i <= events; i++) await heads.wait(shipmentId, ACME, i, eventId(i));
      const othersWaiting = itemSizeBytes(await storedItem(`#${shipmentId}`, ACME));
      return { inOrder, othersWaiting };
    }

    /** Write units of a write to an item of this size, as DynamoDB bills it (the larger of before and after). */
    const writeUnits = (bytes: number) => Math.ceil(bytes / KB);

    it('costs 1 WU per write at 5 events, 1 at 20 (2 with the others waiting), 4 at 100 (8 with the others waiting)', async () => {
      const measured = [await sizes(5), await sizes(20), await sizes(100)];

      expect(measured.map(({ inOrder, othersWaiting }) => [writeUnits(inOrder), writeUnits(othersWaiting)])).toStrictEqual([
        [1, 1],
        [1, 2],
        [4, 8],
      ]);
      // The figures docs/design.md gives (Shipment heads: size and cost).
      expect(measured.map((m) => m.inOrder)).toStrictEqual([227, 768, 3649]);
    });

    it(`fits a head of ${MAX_SEQUENCE} events with the longest IDs, all but one waiting, in DynamoDB's 400 KB item`, () => {
      // Built by the adapter's naming rules rather than written: filling it takes dynalite minutes.
      const longest = (i: number) => `E${String(i).padStart(127, '0')}`;
      const item: Record<string, AttributeValue> = {
        eventId: { S: `#${'\u{1F4E6}'.repeat(128)}` },
        endpoint: { S: 'e'.repeat(64) },
        ha: { N: String(MAX_SEQUENCE) },
        hn: { N: '1' },
      };
      for (let i = 1; i <= MAX_SEQUENCE; i++) {
        item[`s:${longest(i)}`] = { N: String(i) };
        if (i > 1) item[`w:${i}`] = { S: longest(i) };
      }

      expect(itemSizeBytes(item)).toBeLessThan(400 * KB);
      expect(itemSizeBytes(item)).toBeGreaterThan(260 * KB);
    });
  });

  describe('Errors', () => {
    it('turns store failures into LedgerUnavailableError naming the endpoint, never the shipment', async () => {
      const missing = new DynamoDbShipmentHeads({ client, tableName: 'no-such-table' });

      const errors = [
        await rejectionOf(missing.assign(SHIPMENT, ACME, 'evt_1'), LedgerUnavailableError),
        await rejectionOf(missing.wait(SHIPMENT, ACME, 2, 'evt_2'), LedgerUnavailableError),
        await rejectionOf(missing.advance(SHIPMENT, ACME, 1, 'evt_1'), LedgerUnavailableError),
        await rejectionOf(missing.get(SHIPMENT, ACME), LedgerUnavailableError),
      ];

      for (const error of errors) {
        expect(error.cause).toBeInstanceOf(ResourceNotFoundException);
        expect(error.message).toBe(`ledger no-such-table failed for a shipment head of endpoint ${ACME}: ResourceNotFoundException`);
      }
    });
  });

  describe('Row attribute: sequence, on the wire', () => {
    const POLICY = retryPolicy(3, [30, 120]);

    function claimInput(eventId: string, sequence?: number): ClaimInput {
      return {
        event: shipmentEvent(eventId),
        endpoint: ACME,
        owner: 'worker-a',
        nowMs: T0,
        leaseMs: 30_000,
        policy: POLICY,
        retentionSeconds: 86_400,
        ...(sequence === undefined ? {} : { sequence }),
      };
    }

    it('writes a row without a sequence with exactly the attributes it had before; with one, `sq` and its shipment `sh` alone more', async () => {
      // The shipment index off: else every row carries its shipment (`sh`) anyway.
      const ledger = new DynamoDbLedger({ client, tableName, now: () => T0, shipmentIndex: false });
      // Alternating, so a write of each shape (compiled once per process) follows one of the other.
      await ledger.claim(claimInput('evt_with_a', 7));
      await ledger.claim(claimInput('evt_none_a'));
      await ledger.claim(claimInput('evt_none_b'));
      await ledger.claim(claimInput('evt_with_b', 8));

      const without = [await storedItem('evt_none_a', ACME), await storedItem('evt_none_b', ACME)];
      const withSequence = [await storedItem('evt_with_a', ACME), await storedItem('evt_with_b', ACME)];

      const before = ['c', 'ct', 'endpoint', 'eventId', 'h', 'hi', 'le', 'lo', 'm', 'n', 'na', 'p', 'rs', 's', 't', 'x'];
      for (const item of without) expect(Object.keys(item).sort()).toStrictEqual(before);
      for (const item of withSequence) expect(Object.keys(item).sort()).toStrictEqual([...before, 'sh', 'sq'].sort());
      expect(withSequence.map((item) => item.sq)).toStrictEqual([{ N: '7' }, { N: '8' }]);
      expect(withSequence.map((item) => item.sh)).toStrictEqual([{ S: 'shp_1001' }, { S: 'shp_1001' }]);
      // Same ID lengths and token lengths: the sequence adds its name (2 bytes) and its number (2), the
      // shipment its name (2) and the shipment ID (8).
      expect(itemSizeBytes(withSequence[0] ?? {}) - itemSizeBytes(without[0] ?? {})).toBe(14);
    });

    it('writes a row parked with a sequence with `sq`, and one parked without with none', async () => {
      const ledger = new DynamoDbLedger({ client, tableName, now: () => T0 });
      const park = (eventId: string, sequence?: number) => {
        const input = { event: shipmentEvent(eventId), endpoint: ACME, nowMs: T0, policy: POLICY, retentionSeconds: 86_400 };
        return ledger.park(sequence === undefined ? input : { ...input, sequence });
      };

      await park('evt_park_seq', 3);
      await park('evt_park_none');

      expect((await storedItem('evt_park_seq', ACME)).sq).toStrictEqual({ N: '3' });
      expect((await storedItem('evt_park_none', ACME)).sq).toBeUndefined();
    });
  });
});
