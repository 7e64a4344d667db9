/**
 * The ShipmentHeads port's contract (docs/contract.md §13): one behaviour, held against every
 * adapter (the in-memory one in unit tests, DynamoDB against dynalite in integration tests). Each
 * adapter comes with a ledger on the same store, to show that heads never pass for deliveries.
 * Adapter-specific checks (stored shape, request counts, sizes) live beside the adapter's tests.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClaimedRecord, Ledger } from '../../lib/ledger/ledger';
import { type ShipmentHead, type ShipmentHeads } from '../../lib/ledger/shipment-heads';
import { SequenceLimitError } from '../../lib/ledger/errors';
import { retryPolicy } from '../../lib/policy';
import { rejectionOf, shipmentEvent, T0 } from './ledger-contract';

export interface ShipmentHeadsUnderTest {
  readonly heads: ShipmentHeads;
  /** A ledger on the same store as the heads. */
  readonly ledger: Ledger;
  close(): Promise<void>;
}

/**
 * `maxSequence`: the adapter's limit of sequences per head (MAX_SEQUENCE when not given); `now` and
 * `retentionSeconds`: its clock and a settled head's retention (the system's, the default's).
 */
export type MakeShipmentHeads = (options?: {
  readonly maxSequence?: number;
  readonly now?: () => number;
  readonly retentionSeconds?: number;
}) => Promise<ShipmentHeadsUnderTest>;

const SHIPMENT = 'shp_1001';
const ACME = 'carrier-acme';
const POLICY = retryPolicy(3, [30, 120]);
/** Rounds of the wait-against-advance race, each on its own shipment, all at once. */
const RACE_ROUNDS = 50;

export function shipmentHeadsContract(name: string, makeHeads: MakeShipmentHeads): void {
  describe(`ShipmentHeads contract: ${name}`, () => {
    let subject: ShipmentHeadsUnderTest;
    let heads: ShipmentHeads;

    beforeEach(async () => {
      subject = await makeHeads();
      heads = subject.heads;
    });

    afterEach(async () => {
      await subject.close();
    });

    /** Assigns each event in turn on SHIPMENT at ACME; the sequences answered. */
    async function assignAll(eventIds: readonly string[], shipmentId = SHIPMENT, endpoint = ACME): Promise<number[]> {
      const sequences: number[] = [];
      for (const eventId of eventIds) sequences.push((await heads.assign(shipmentId, endpoint, eventId)).sequence);
      return sequences;
    }

    describe('Method: assign', () => {
      it("numbers a shipment's first events 1, 2, 3 in call order, with next at 1", async () => {
        const first = await heads.assign(SHIPMENT, ACME, 'evt_b');
        const second = await heads.assign(SHIPMENT, ACME, 'evt_a');
        const third = await heads.assign(SHIPMENT, ACME, 'evt_c');

        expect([first, second, third]).toStrictEqual([
          { sequence: 1, next: 1 },
          { sequence: 2, next: 1 },
          { sequence: 3, next: 1 },
        ]);
        expect(await heads.get(SHIPMENT, ACME)).toStrictEqual({
          shipmentId: SHIPMENT,
          endpoint: ACME,
          assigned: 3,
          next: 1,
          seq: { evt_b: 1, evt_a: 2, evt_c: 3 },
          waiting: {},
        });
      });

      it('answers the same event again with its number, changing nothing: the next event gets the next number', async () => {
        await assignAll(['evt_1', 'evt_2']);
        const before = await heads.get(SHIPMENT, ACME);

        const again = await heads.assign(SHIPMENT, ACME, 'evt_1');
        const unchanged = await heads.get(SHIPMENT, ACME);
        const third = await heads.assign(SHIPMENT, ACME, 'evt_3');

        expect(again).toStrictEqual({ sequence: 1, next: 1 });
        expect(unchanged).toStrictEqual(before);
        expect(third).toStrictEqual({ sequence: 3, next: 1 });
      });

      it('gives 20 distinct events assigned at once 20 distinct numbers, 1 to 20', async () => {
        const eventIds = Array.from({ length: 20 }, (_, i) => `evt_concurrent_${i}`);

        const assignments = await Promise.all(eventIds.map((eventId) => heads.assign(SHIPMENT, ACME, eventId)));

        const sequences = assignments.map((a) => a.sequence).sort((a, b) => a - b);
        expect(sequences).toStrictEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        const head = await heads.get(SHIPMENT, ACME);
        expect(head?.assigned).toBe(20);
        expect(eventIds.map((eventId) => head?.seq[eventId])).toStrictEqual(assignments.map((a) => a.sequence));
      });

      it('gives one event assigned 10 times at once one number, and the counter moves by one', async () => {
        await heads.assign(SHIPMENT, ACME, 'evt_first');

        const assignments = await Promise.all(Array.from({ length: 10 }, () => heads.assign(SHIPMENT, ACME, 'evt_copied')));

        expect(new Set(assignments.map((a) => a.sequence))).toStrictEqual(new Set([2]));
        expect((await heads.get(SHIPMENT, ACME))?.assigned).toBe(2);
      });

      it('answers a late copy of a settled event with its old number, below next: it never takes a new one', async () => {
        await assignAll(['evt_1', 'evt_2']);
        await heads.advance(SHIPMENT, ACME, 1, 'evt_1');

        const late = await heads.assign(SHIPMENT, ACME, 'evt_1');
        const third = await heads.assign(SHIPMENT, ACME, 'evt_3');

        expect(late).toStrictEqual({ sequence: 1, next: 2 });
        expect(third).toStrictEqual({ sequence: 3, next: 2 });
      });

      it('keeps the heads of different shipments and of different endpoints apart', async () => {
        await assignAll(['evt_1', 'evt_2']);
        await heads.advance(SHIPMENT, ACME, 1, 'evt_1');

        const otherShipment = await heads.assign('shp_2002', ACME, 'evt_1');
        const otherEndpoint = await heads.assign(SHIPMENT, 'billing', 'evt_2');

        expect(otherShipment).toStrictEqual({ sequence: 1, next: 1 });
        expect(otherEndpoint).toStrictEqual({ sequence: 1, next: 1 });
        expect(await heads.get(SHIPMENT, ACME)).toMatchObject({ assigned: 2, next: 2 });
        expect(await heads.get('shp_2002', ACME)).toMatchObject({ assigned: 1, next: 1, seq: { evt_1: 1 } });
        expect(await heads.get(SHIPMENT, 'billing')).toMatchObject({ assigned: 1, next: 1, seq: { evt_2: 1 } });
      });

      it('takes every character an event ID or a shipment ID may hold', async () => {
        const shipmentId = 'Sendung Nr. 7 / Zürich #12 📦';
        const eventIds = ['evt.with.dots', 'evt:with:colons', 'evt-with-dashes_and_underscores', 'E'.repeat(128)];

        const sequences = await assignAll(eventIds, shipmentId);

        expect(sequences).toStrictEqual([1, 2, 3, 4]);
        const head = await heads.get(shipmentId, ACME);
        expect(head?.shipmentId).toBe(shipmentId);
        expect(head?.seq).toStrictEqual(Object.fromEntries(eventIds.map((eventId, i) => [eventId, i + 1])));
      });

      it('refuses a number past its limit with SequenceLimitError naming the event, not the shipment; numbered events keep theirs', async () => {
        // Prepare: an adapter limited to 8 sequences per head, its head filled at once.
        await subject.close();
        subject = await makeHeads({ maxSequence: 8 });
        heads = subject.heads;
        await Promise.all(Array.from({ length: 8 }, (_, i) => heads.assign(SHIPMENT, ACME, `evt_${i + 1}`)));
        const full = await heads.get(SHIPMENT, ACME);

        // Act
        const error = await rejectionOf(heads.assign(SHIPMENT, ACME, 'evt_one_too_many'), SequenceLimitError);
        const numbered = await heads.assign(SHIPMENT, ACME, 'evt_7');

        // Assess
        expect(error.code).toBe('sequence-limit');
        expect(error.message).toBe(
          `event evt_one_too_many gets no sequence: its shipment has 8 events for endpoint ${ACME}, the most it may order`,
        );
        expect(error.shipmentId).toBe(SHIPMENT);
        expect(numbered).toStrictEqual({ sequence: full?.seq.evt_7, next: 1 });
        expect(await heads.get(SHIPMENT, ACME)).toStrictEqual(full);
        expect(full?.assigned).toBe(8);
        expect(error.max).toBe(8);
      });

      it('refuses input it cannot store, naming the field', async () => {
        await expect(heads.assign('', ACME, 'evt_1')).rejects.toThrow(new RangeError('shipmentId must be a non-empty string'));
        await expect(heads.assign(SHIPMENT, '', 'evt_1')).rejects.toThrow(new RangeError('endpoint must be a non-empty string'));
        await expect(heads.assign(SHIPMENT, ACME, '')).rejects.toThrow(new RangeError('eventId must be a non-empty string'));
        await expect(heads.assign(SHIPMENT, ACME, '#evt')).rejects.toThrow(new RangeError('eventId must not start with #, got #evt'));
        await expect(heads.wait(SHIPMENT, ACME, 0, 'evt_1')).rejects.toThrow(new RangeError('sequence must be a positive integer, got 0'));
        await expect(heads.advance(SHIPMENT, ACME, 1.5, 'evt_1')).rejects.toThrow(new RangeError('sequence must be a positive integer, got 1.5'));
        expect(await heads.get(SHIPMENT, ACME)).toBeUndefined();
      });
    });

    describe('Method: wait', () => {
      it("is refused when it is the event's turn (next = its sequence), recording nothing", async () => {
        await assignAll(['evt_1', 'evt_2']);
        await heads.advance(SHIPMENT, ACME, 1, 'evt_1');

        const waited = await heads.wait(SHIPMENT, ACME, 2, 'evt_2');

        expect(waited).toBe('its-turn');
        expect((await heads.get(SHIPMENT, ACME))?.waiting).toStrictEqual({});
      });

      it('is refused for the first event, whose turn it is from the start', async () => {
        await assignAll(['evt_1']);

        expect(await heads.wait(SHIPMENT, ACME, 1, 'evt_1')).toBe('its-turn');
      });

      it('records the event while an earlier one is unsettled; recording it again changes nothing', async () => {
        await assignAll(['evt_1', 'evt_2', 'evt_3']);

        const first = await heads.wait(SHIPMENT, ACME, 3, 'evt_3');
        const again = await heads.wait(SHIPMENT, ACME, 3, 'evt_3');
        const second = await heads.wait(SHIPMENT, ACME, 2, 'evt_2');

        expect([first, again, second]).toStrictEqual(['waiting', 'waiting', 'waiting']);
        expect(await heads.get(SHIPMENT, ACME)).toMatchObject({ next: 1, waiting: { 2: 'evt_2', 3: 'evt_3' } });
      });

      it('is refused when its turn has passed, or there is no head at all', async () => {
        await assignAll(['evt_1', 'evt_2']);
        await heads.advance(SHIPMENT, ACME, 1, 'evt_1');
        await heads.advance(SHIPMENT, ACME, 2, 'evt_2');

        expect(await heads.wait(SHIPMENT, ACME, 1, 'evt_1')).toBe('its-turn');
        expect(await heads.wait('shp_unknown', ACME, 2, 'evt_x')).toBe('not-its-number');
        expect(await heads.get('shp_unknown', ACME)).toBeUndefined();
      });

      it("is refused at a number that is not the event's, recording nothing: nobody waits in another's place", async () => {
        await assignAll(['evt_1', 'evt_2', 'evt_3']);
        await heads.wait(SHIPMENT, ACME, 2, 'evt_2');

        const forged = await heads.wait(SHIPMENT, ACME, 2, 'evt_3');
        const unknown = await heads.wait(SHIPMENT, ACME, 3, 'evt_never_assigned');

        expect([forged, unknown]).toStrictEqual(['not-its-number', 'not-its-number']);
        expect((await heads.get(SHIPMENT, ACME))?.waiting).toStrictEqual({ 2: 'evt_2' });
      });
    });

    describe('Method: advance', () => {
      it('moves next on from its sequence only, dropping its waiting entry, and answers the head after', async () => {
        await assignAll(['evt_1', 'evt_2', 'evt_3']);
        await heads.wait(SHIPMENT, ACME, 2, 'evt_2');
        await heads.wait(SHIPMENT, ACME, 3, 'evt_3');

        const notYet = await heads.advance(SHIPMENT, ACME, 2, 'evt_2');
        const first = await heads.advance(SHIPMENT, ACME, 1, 'evt_1');
        const second = await heads.advance(SHIPMENT, ACME, 2, 'evt_2');

        expect(notYet).toMatchObject({ next: 1, waiting: { 2: 'evt_2', 3: 'evt_3' } });
        expect(first).toStrictEqual({
          shipmentId: SHIPMENT,
          endpoint: ACME,
          assigned: 3,
          next: 2,
          seq: { evt_1: 1, evt_2: 2, evt_3: 3 },
          waiting: { 2: 'evt_2', 3: 'evt_3' },
        });
        expect(second).toMatchObject({ next: 3, waiting: { 3: 'evt_3' } });
        expect(await heads.get(SHIPMENT, ACME)).toStrictEqual(second);
      });

      it('writes nothing when done again and answers the head as it is, so a rerun wakes the same event', async () => {
        await assignAll(['evt_1', 'evt_2']);
        await heads.wait(SHIPMENT, ACME, 2, 'evt_2');
        const after = await heads.advance(SHIPMENT, ACME, 1, 'evt_1');

        const again = await heads.advance(SHIPMENT, ACME, 1, 'evt_1');

        expect(again).toStrictEqual(after);
        expect(again?.waiting[again.next]).toBe('evt_2');
        expect(await heads.get(SHIPMENT, ACME)).toStrictEqual(after);
      });

      it('lets one of 10 concurrent advances of a sequence move next, by one', async () => {
        await assignAll(['evt_1', 'evt_2', 'evt_3']);

        const answers = await Promise.all(Array.from({ length: 10 }, () => heads.advance(SHIPMENT, ACME, 1, 'evt_1')));

        for (const answer of answers) expect(answer?.next).toBe(2);
        expect((await heads.get(SHIPMENT, ACME))?.next).toBe(2);
      });

      it("moves nothing for an event that does not hold the number, whatever number it names", async () => {
        await assignAll(['evt_1', 'evt_2']);
        await heads.wait(SHIPMENT, ACME, 2, 'evt_2');

        const byOther = await heads.advance(SHIPMENT, ACME, 1, 'evt_2');
        const byUnknown = await heads.advance(SHIPMENT, ACME, 1, 'evt_never_assigned');

        expect(byOther).toMatchObject({ next: 1, waiting: { 2: 'evt_2' } });
        expect(byUnknown).toMatchObject({ next: 1, waiting: { 2: 'evt_2' } });
        expect((await heads.get(SHIPMENT, ACME))?.next).toBe(1);
      });

      it('answers undefined where there is no head', async () => {
        expect(await heads.advance('shp_unknown', ACME, 1, 'evt_1')).toBeUndefined();
        expect(await heads.get('shp_unknown', ACME)).toBeUndefined();
      });

      it('reaches assigned + 1 once every event is settled, and numbers the next event after them', async () => {
        await assignAll(['evt_1', 'evt_2']);
        await heads.advance(SHIPMENT, ACME, 1, 'evt_1');
        const done = await heads.advance(SHIPMENT, ACME, 2, 'evt_2');

        const later = await heads.assign(SHIPMENT, ACME, 'evt_3');

        expect(done).toMatchObject({ assigned: 2, next: 3, waiting: {} });
        expect(later).toStrictEqual({ sequence: 3, next: 3 });
      });
    });

    describe('Wait against advance: no lost wake-up', () => {
      /** Event 2 of a fresh shipment asks to wait while event 1 settles: both orders, or at once. */
      async function race(shipmentId: string, order: 'wait first' | 'advance first' | 'at once') {
        await heads.assign(shipmentId, ACME, 'evt_1');
        const { sequence } = await heads.assign(shipmentId, ACME, 'evt_2');
        const wait = async () => (await heads.wait(shipmentId, ACME, sequence, 'evt_2')) === 'waiting';
        const advance = () => heads.advance(shipmentId, ACME, 1, 'evt_1');
        if (order === 'wait first') {
          const waited = await wait();
          return { waited, head: await advance() };
        }
        if (order === 'advance first') {
          const head = await advance();
          return { waited: await wait(), head };
        }
        const [waited, head] = await Promise.all([wait(), advance()]);
        return { waited, head };
      }

      /** Either the wait was refused (its caller sends), or the advance's answer shows the waiter to wake. */
      function expectNoLostWakeUp({ waited, head }: { waited: boolean; head: ShipmentHead | undefined }) {
        expect(head?.next).toBe(2);
        if (waited) expect(head?.waiting[2]).toBe('evt_2');
        else expect(head?.waiting[2]).toBeUndefined();
      }

      it('a wait before the advance is recorded, and the advance answers with the waiter', async () => {
        const result = await race('shp_wait_first', 'wait first');

        expect(result.waited).toBe(true);
        expectNoLostWakeUp(result);
      });

      it('a wait after the advance is refused: its caller sends', async () => {
        const result = await race('shp_advance_first', 'advance first');

        expect(result.waited).toBe(false);
        expectNoLostWakeUp(result);
        expect((await heads.get('shp_advance_first', ACME))?.waiting).toStrictEqual({});
      });

      it(`${RACE_ROUNDS} waits and advances at once, each on its own shipment: every waiter is refused or shown to its waker`, async () => {
        const results = await Promise.all(Array.from({ length: RACE_ROUNDS }, (_, i) => race(`shp_race_${i}`, 'at once')));

        for (const result of results) expectNoLostWakeUp(result);
      });
    });

    describe('Heads beside deliveries', () => {
      it('never appear among deliveries, in listings or in counts', async () => {
        // Prepare: heads of the shipment at two endpoints, with a waiter; rows of its events, pending, dead and parked.
        await assignAll(['evt_row_1', 'evt_row_2']);
        await heads.wait(SHIPMENT, ACME, 2, 'evt_row_2');
        await heads.assign(SHIPMENT, 'billing', 'evt_row_1');
        const { ledger } = subject;
        const claimOf = (eventId: string, endpoint: string): Promise<ClaimedRecord> =>
          ledger.claim({
            event: shipmentEvent(eventId),
            endpoint,
            owner: 'worker-a',
            nowMs: T0,
            leaseMs: 30_000,
            policy: POLICY,
            retentionSeconds: 86_400,
            sequence: 1,
          });
        const dying = await claimOf('evt_row_1', ACME);
        await ledger.recordAttempt({
          eventId: 'evt_row_1',
          endpoint: ACME,
          claimToken: dying.claimToken,
          body: shipmentEvent('evt_row_1').body,
          attempt: { attempt: 1, at: T0, outcome: 'rejected', status: 400, durationMs: 5 },
          outcome: { kind: 'rejected', status: 400, responseStart: 'no' },
          next: { state: 'dead', reason: 'rejected', detail: 'rejected (400)' },
          nowMs: T0 + 10,
        });
        await ledger.park({ event: shipmentEvent('evt_row_2'), endpoint: ACME, nowMs: T0, policy: POLICY, retentionSeconds: 86_400, sequence: 2 });
        await claimOf('evt_row_1', 'billing');

        // Act
        const partitions = [`#${SHIPMENT}`, SHIPMENT];
        const deliveries = await Promise.all(partitions.map((partition) => ledger.deliveriesOf(partition)));
        const got = await Promise.all(partitions.map((partition) => ledger.get({ eventId: partition, endpoint: ACME })));
        const dead = await ledger.listByState('dead');
        const pending = await ledger.listByState('pending');
        const parked = await ledger.listByState('parked', { endpoint: ACME });

        // Assess
        expect(deliveries).toStrictEqual([[], []]);
        expect(got).toStrictEqual([undefined, undefined]);
        expect(dead.records.map((r) => [r.eventId, r.endpoint])).toStrictEqual([['evt_row_1', ACME]]);
        expect(pending.records).toStrictEqual([]);
        expect(parked.records.map((r) => [r.eventId, r.endpoint])).toStrictEqual([['evt_row_2', ACME]]);
        expect(await ledger.countByState('dead')).toBe(1);
        expect(await ledger.countByState('parked', { endpoint: ACME })).toBe(1);
        expect((await ledger.deliveriesOf('evt_row_1')).map((r) => [r.endpoint, r.state, r.sequence])).toStrictEqual([
          ['billing', 'pending', 1],
          [ACME, 'dead', 1],
        ]);
        expect(await heads.get(SHIPMENT, ACME)).toMatchObject({ assigned: 2, next: 1, waiting: { 2: 'evt_row_2' } });
      });
    });

    describe('Expiry (the TTL attribute: only a settled head expires)', () => {
      const RETENTION_SECONDS = 3600;
      let clockMs: number;
      let timed: ShipmentHeadsUnderTest;

      beforeEach(async () => {
        clockMs = T0;
        timed = await makeHeads({ now: () => clockMs, retentionSeconds: RETENTION_SECONDS });
      });

      afterEach(async () => {
        await timed.close();
      });

      const expiryAt = (ms: number) => Math.floor(ms / 1000) + RETENTION_SECONDS;

      it('sets the expiry by the advance that settles the last number, its retention from then', async () => {
        await timed.heads.assign(SHIPMENT, ACME, 'evt_1');
        clockMs = T0 + 5_000;

        const settled = await timed.heads.advance(SHIPMENT, ACME, 1, 'evt_1');

        expect(settled).toMatchObject({ assigned: 1, next: 2, expiresAt: expiryAt(T0 + 5_000) });
        expect((await timed.heads.get(SHIPMENT, ACME))?.expiresAt).toBe(expiryAt(T0 + 5_000));
      });

      it('removes it with each assignment, and sets it later again by the next settling advance: each settled write extends it', async () => {
        await timed.heads.assign(SHIPMENT, ACME, 'evt_1');
        await timed.heads.advance(SHIPMENT, ACME, 1, 'evt_1');
        clockMs = T0 + 60_000;

        await timed.heads.assign(SHIPMENT, ACME, 'evt_2');
        const unsettled = await timed.heads.get(SHIPMENT, ACME);
        clockMs = T0 + 120_000;
        const settledAgain = await timed.heads.advance(SHIPMENT, ACME, 2, 'evt_2');

        expect(unsettled?.expiresAt).toBeUndefined();
        expect(settledAgain?.expiresAt).toBe(expiryAt(T0 + 120_000));
      });

      it('sets none while a number is unsettled: an advance with later numbers assigned, a wait, a head held by its dead event', async () => {
        // Prepare: evt_2 waits behind evt_1; evt_3 comes after.
        await timed.heads.assign(SHIPMENT, ACME, 'evt_1');
        await timed.heads.assign(SHIPMENT, ACME, 'evt_2');
        await timed.heads.wait(SHIPMENT, ACME, 2, 'evt_2');
        await timed.heads.assign(SHIPMENT, ACME, 'evt_3');

        // Act: evt_1 settles; evt_2 dies under `hold` (the head stays at 2), evt_3 waits behind it.
        const advanced = await timed.heads.advance(SHIPMENT, ACME, 1, 'evt_1');
        await timed.heads.wait(SHIPMENT, ACME, 3, 'evt_3');
        const held = await timed.heads.get(SHIPMENT, ACME);

        // Assess
        expect(advanced).toMatchObject({ next: 2 });
        expect(advanced?.expiresAt).toBeUndefined();
        expect(held).toMatchObject({ assigned: 3, next: 2, waiting: { 3: 'evt_3' } });
        expect(held?.expiresAt).toBeUndefined();
      });

      it('sets nothing with a refused advance (a second one, or another event naming the number)', async () => {
        await timed.heads.assign(SHIPMENT, ACME, 'evt_1');
        await timed.heads.advance(SHIPMENT, ACME, 1, 'evt_1');
        clockMs = T0 + 60_000;

        const again = await timed.heads.advance(SHIPMENT, ACME, 1, 'evt_1');
        const forged = await timed.heads.advance(SHIPMENT, ACME, 2, 'evt_9');

        expect(again?.expiresAt).toBe(expiryAt(T0));
        expect(forged?.expiresAt).toBe(expiryAt(T0));
      });
    });
  });
}
