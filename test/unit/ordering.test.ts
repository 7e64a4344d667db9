/**
 * Per-shipment ordering's use case (lib/ordering.ts) over the in-memory ledger and heads (the same
 * semantics as DynamoDB's, held to by the contract suites): turns, waiting without a claim, passing
 * the turn and the wake-up, and that repeating any step is harmless.
 */
import { describe, expect, it } from 'vitest';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { MemoryShipmentHeads } from '../../lib/ledger/memory-shipment-heads';
import { admissionFrom, admissionOfRow, admitOrdered, giveUpNumber, passTurn, takeTurn, type OrderingDeps } from '../../lib/ordering';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import type { Admission } from '../../lib/queue/queue';

const T0 = 1_796_200_000_000;
const ENDPOINT = { name: 'carrier-acme', policy: DEFAULT_RETRY_POLICY };

function shipmentEvent(id: string, shipmentId = 'shp_1'): ParsedEvent {
  const parsed = parseEvent(JSON.stringify({ id, shipmentId, status: 'in_transit', occurredAt: '2026-12-03T06:00:00Z' }));
  if (!parsed.ok) throw parsed.error;
  return parsed.value;
}

function setup() {
  const sent: { eventId: string; endpoint: string | undefined; admission?: Admission }[] = [];
  const deps: OrderingDeps = {
    heads: new MemoryShipmentHeads(),
    ledger: new MemoryLedger({ now: () => T0 }),
    queue: {
      async enqueue(body, options) {
        sent.push({ eventId: (JSON.parse(body) as { id: string }).id, endpoint: options?.endpoint, ...(options?.admission ? { admission: options.admission } : {}) });
      },
    },
    now: () => T0,
    retentionSeconds: 86_400,
  };
  return { deps, sent };
}

describe('Function: takeTurn', () => {
  it("lets a shipment's first event go, and makes the next wait, its row written without a claim", async () => {
    const { deps } = setup();

    const first = await takeTurn(shipmentEvent('evt_1'), ENDPOINT, deps);
    const second = await takeTurn(shipmentEvent('evt_2'), ENDPOINT, deps);

    expect(first).toEqual({ kind: 'go', sequence: 1 });
    expect(second).toEqual({ kind: 'wait', sequence: 2, waitingFor: 1 });
    expect(await deps.ledger.get({ eventId: 'evt_2', endpoint: ENDPOINT.name })).toMatchObject({ state: 'pending', attempts: 0, sequence: 2 });
    expect(await deps.ledger.get({ eventId: 'evt_1', endpoint: ENDPOINT.name })).toBeUndefined();
  });

  it('keeps shipments apart: each one’s first event goes', async () => {
    const { deps } = setup();

    const turns = await Promise.all(['shp_a', 'shp_b', 'shp_c'].map((shipment, i) => takeTurn(shipmentEvent(`evt_${i}`, shipment), ENDPOINT, deps)));

    expect(turns).toEqual([1, 1, 1].map((sequence) => ({ kind: 'go', sequence })));
  });

  it('gives an event the same number however often it comes, and lets it go once its turn has come', async () => {
    const { deps } = setup();
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, deps);
    await takeTurn(shipmentEvent('evt_2'), ENDPOINT, deps);

    await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, deps);
    const again = await takeTurn(shipmentEvent('evt_2'), ENDPOINT, deps);

    expect(again).toEqual({ kind: 'go', sequence: 2 });
  });
});

describe('Function: takeTurn, told what its admission found', () => {
  it('lets an event whose turn had come go without asking the head', async () => {
    const { deps } = setup();

    const turn = await takeTurn(shipmentEvent('evt_7'), ENDPOINT, deps, { sequence: 7, inTurn: true });

    expect(turn).toEqual({ kind: 'go', sequence: 7 });
    expect(await deps.heads.get('shp_1', ENDPOINT.name)).toBeUndefined();
  });

  it('makes an event numbered before its turn wait at that number, taking no new one', async () => {
    const { deps } = setup();
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, deps);
    const admission = admissionFrom(await deps.heads.assign('shp_1', ENDPOINT.name, 'evt_2'));

    const turn = await takeTurn(shipmentEvent('evt_2'), ENDPOINT, deps, admission);

    expect(admission).toEqual({ sequence: 2, inTurn: false });
    expect(turn).toEqual({ kind: 'wait', sequence: 2, waitingFor: 1 });
    expect(await deps.heads.get('shp_1', ENDPOINT.name)).toMatchObject({ assigned: 2, next: 1, waiting: { 2: 'evt_2' } });
  });

  it('lets an event numbered before its turn go when the turn came since (its wait refused)', async () => {
    const { deps } = setup();
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, deps);
    const admission = admissionFrom(await deps.heads.assign('shp_1', ENDPOINT.name, 'evt_2'));
    await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, deps);

    const turn = await takeTurn(shipmentEvent('evt_2'), ENDPOINT, deps, admission);

    expect(turn).toEqual({ kind: 'go', sequence: 2 });
    expect(await deps.heads.get('shp_1', ENDPOINT.name)).toMatchObject({ next: 2, waiting: {} });
  });
});

describe('Function: admissionOfRow', () => {
  it('reads a claimed row as numbered and in its turn, and says nothing of a row never claimed or unnumbered', () => {
    expect(admissionOfRow({ sequence: 3, attempts: 1 })).toEqual({ sequence: 3, inTurn: true });
    expect(admissionOfRow({ sequence: 3, attempts: 0 })).toBeUndefined();
    expect(admissionOfRow({ attempts: 2 })).toBeUndefined();
  });
});

describe('Function: takeTurn, for an event released from parking', () => {
  it('takes its row out of the pending listing while it waits, so recovery does not send it again and again', async () => {
    const { deps } = setup();
    const ledger = deps.ledger as MemoryLedger;
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, deps);
    const parked = shipmentEvent('evt_2');
    await ledger.park({ event: parked, endpoint: ENDPOINT.name, nowMs: T0 - 5_000, policy: DEFAULT_RETRY_POLICY, retentionSeconds: 86_400 });
    await ledger.unpark({ eventId: 'evt_2', endpoint: ENDPOINT.name }, T0 - 1_000, T0 - 1_000);
    expect((await ledger.listByState('pending')).records.map((r) => r.eventId)).toEqual(['evt_2']);

    const turn = await takeTurn(parked, ENDPOINT, deps);

    expect(turn).toEqual({ kind: 'wait', sequence: 2, waitingFor: 1 });
    expect((await ledger.listByState('pending')).records).toEqual([]);
    expect(await ledger.get({ eventId: 'evt_2', endpoint: ENDPOINT.name })).toMatchObject({ state: 'pending', attempts: 0 });
  });
});

describe('Function: passTurn', () => {
  it('moves the turn on and sends the waiting event a message of its own; repeated, it sends nothing more', async () => {
    const { deps, sent } = setup();
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, deps);
    await takeTurn(shipmentEvent('evt_2'), ENDPOINT, deps);
    await takeTurn(shipmentEvent('evt_3'), ENDPOINT, deps);

    const woken = await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, deps);
    const repeated = await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, deps);

    expect(woken).toBe('evt_2');
    expect(repeated).toBe('evt_2');
    // The wake-up says its number and that its turn has come.
    const wakeUp = { eventId: 'evt_2', endpoint: ENDPOINT.name, admission: { sequence: 2, inTurn: true } };
    expect(sent).toEqual([wakeUp, wakeUp]);
    expect(await deps.heads.get('shp_1', ENDPOINT.name)).toMatchObject({ next: 2 });
  });

  it('wakes nobody when the next event has not arrived yet; it then goes at once', async () => {
    const { deps, sent } = setup();
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, deps);

    expect(await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, deps)).toBeUndefined();
    expect(await takeTurn(shipmentEvent('evt_2'), ENDPOINT, deps)).toEqual({ kind: 'go', sequence: 2 });
    expect(sent).toEqual([]);
  });

  it('passes the turn on past a waiting event whose row has expired, waking the one after it', async () => {
    // Prepare: e2 and e3 wait behind e1; e1 takes longer than the rows' retention (held, say).
    let clock = T0;
    const { deps, sent } = setup();
    const ledger = new MemoryLedger({ now: () => clock });
    const withLedger: OrderingDeps = { ...deps, ledger, now: () => clock };
    for (const id of ['evt_1', 'evt_2']) await takeTurn(shipmentEvent(id), ENDPOINT, withLedger);
    clock = T0 + 60_000;
    await takeTurn(shipmentEvent('evt_3'), ENDPOINT, withLedger);
    clock = T0 + 86_400_000 + 30_000;

    // Act
    const woken = await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, withLedger);

    // Assess: evt_2 (gone) skipped, evt_3 (still kept) woken, the head at its turn.
    expect(await ledger.get({ eventId: 'evt_2', endpoint: ENDPOINT.name })).toBeUndefined();
    expect(woken).toBe('evt_3');
    expect(sent.map((s) => s.eventId)).toEqual(['evt_3']);
    expect(await deps.heads.get('shp_1', ENDPOINT.name)).toMatchObject({ next: 3, waiting: { 3: 'evt_3' } });
  });

  it('passes no turn twice from an old sequence once later ones have moved it on: a late repeat only wakes again whoever waits now', async () => {
    const { deps, sent } = setup();
    for (const id of ['evt_1', 'evt_2', 'evt_3']) await takeTurn(shipmentEvent(id), ENDPOINT, deps);
    await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, deps);
    await passTurn('shp_1', ENDPOINT.name, { sequence: 2, eventId: 'evt_2' }, deps);

    const late = await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, deps);

    // A copy of evt_3's wake-up (the claim answers it); the head stays at evt_3's turn.
    expect(late).toBe('evt_3');
    expect(sent.map((s) => s.eventId)).toEqual(['evt_2', 'evt_3', 'evt_3']);
    expect(await deps.heads.get('shp_1', ENDPOINT.name)).toMatchObject({ next: 3, waiting: { 3: 'evt_3' } });
  });

  it('wakes the event after a given-up number on a repeat, when a crash came between passing over it and the wake-up', async () => {
    // Prepare: evt_1 in its turn; number 2 taken by a conflict of another shipment's event under its ID
    // and given up before its turn; evt_3 waits at 3. The first wake-up's send fails (the crash).
    const { deps, sent } = setup();
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, deps);
    const { sequence } = await admitOrdered(shipmentEvent('evt_reused'), ENDPOINT.name, deps);
    await giveUpNumber('shp_1', ENDPOINT.name, { sequence, eventId: 'evt_reused' }, deps);
    await takeTurn(shipmentEvent('evt_3'), ENDPOINT, deps);
    const failing: OrderingDeps = { ...deps, queue: { enqueue: () => Promise.reject(new Error('killed')) } };
    await expect(passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, failing)).rejects.toThrow('killed');

    // Act: evt_1's message returns.
    const woken = await passTurn('shp_1', ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, deps);

    // Assess
    expect(woken).toBe('evt_3');
    expect(sent.map((s) => s.eventId)).toEqual(['evt_3']);
    expect(await deps.heads.get('shp_1', ENDPOINT.name)).toMatchObject({ next: 3, waiting: { 3: 'evt_3' } });
  });
});
