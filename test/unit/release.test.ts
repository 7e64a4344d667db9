/**
 * The release use case (lib/release.ts, docs/contract.md §13) over the in-memory ledger and heads
 * (the same semantics as DynamoDB's, held to by the contract suites): a dead event holding its
 * shipment is released and the event waiting next is woken; every refusal says what is the case;
 * running it again, or after an interruption, is safe.
 */
import { describe, expect, it } from 'vitest';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import { ReleaseRefusedError } from '../../lib/ledger/errors';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { MemoryShipmentHeads } from '../../lib/ledger/memory-shipment-heads';
import { takeTurn, passTurn, type OrderingDeps } from '../../lib/ordering';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { releaseDelivery, type ReleaseRequest } from '../../lib/release';
import { NothingToReleaseError, ReplayInputError } from '../../lib/errors';
const T0 = 1_796_200_000_000;
const ENDPOINT = { name: 'carrier-acme', policy: DEFAULT_RETRY_POLICY };
const SHIPMENT = 'shp_secret_4711';

function shipmentEvent(id: string, shipmentId = SHIPMENT): ParsedEvent {
  const parsed = parseEvent(JSON.stringify({ id, shipmentId, status: 'in_transit', occurredAt: '2026-12-03T06:00:00Z' }));
  if (!parsed.ok) throw parsed.error;
  return parsed.value;
}

function setup() {
  const sent: { eventId: string; endpoint: string | undefined }[] = [];
  const ledger = new MemoryLedger({ now: () => T0 });
  const heads = new MemoryShipmentHeads();
  const deps = {
    heads,
    ledger,
    queue: {
      async enqueue(body, options) {
        sent.push({ eventId: (JSON.parse(body) as { id: string }).id, endpoint: options?.endpoint });
      },
    },
    now: () => T0,
    retentionSeconds: 86_400,
  } satisfies OrderingDeps;
  return { deps, ledger, heads, sent };
}

type Setup = ReturnType<typeof setup>;

/** The event takes its turn, is claimed and sent, and dies (a 4xx), as the consumer does it. */
/** How a delivery is claimed and then rejected, dead: the owner, lease and retention of its claim, the rejection's status and duration. */
interface Rejection {
  readonly owner: string;
  readonly leaseMs: number;
  readonly retentionSeconds: number;
  readonly status: number;
  readonly durationMs: number;
}

/** Claims the event (with `sequence` when given) and records its one attempt rejected, dead. */
async function claimAndReject(ledger: Setup['ledger'], event: ParsedEvent, how: Rejection, sequence?: number): Promise<void> {
  const claimed = await ledger.claim({
    event,
    endpoint: ENDPOINT.name,
    owner: how.owner,
    nowMs: T0,
    leaseMs: how.leaseMs,
    policy: ENDPOINT.policy,
    retentionSeconds: how.retentionSeconds,
    ...(sequence !== undefined ? { sequence } : {}),
  });
  await ledger.recordAttempt({
    eventId: event.event.id,
    endpoint: ENDPOINT.name,
    claimToken: claimed.claimToken,
    body: event.body,
    attempt: { attempt: 1, at: T0, outcome: 'rejected', status: how.status, durationMs: how.durationMs },
    outcome: { kind: 'rejected', status: how.status, responseStart: '' },
    next: { state: 'dead', reason: 'rejected', detail: `rejected (${how.status})` },
    nowMs: T0 + how.durationMs,
  });
}

/**
 * Claimed and rejected (400, dead) without a turn of its own: with `sequence`, as a delivery
 * sent out of turn; without, as one admitted before its endpoint was ordered.
 */
function diesOutOfTurn(eventId: string, { ledger }: Setup, sequence?: number): Promise<void> {
  return claimAndReject(ledger, shipmentEvent(eventId), { owner: 'w', leaseMs: 1000, retentionSeconds: 60, status: 400, durationMs: 1 }, sequence);
}

async function dies(eventId: string, { deps, ledger }: Setup): Promise<void> {
  const event = shipmentEvent(eventId);
  const turn = await takeTurn(event, ENDPOINT, deps);
  if (turn.kind !== 'go') throw new Error(`${eventId} was to have its turn`);
  await claimAndReject(ledger, event, { owner: 'worker', leaseMs: 30_000, retentionSeconds: 86_400, status: 422, durationMs: 12 }, turn.sequence);
}

function request(eventId: string, overrides: Partial<ReleaseRequest> = {}): ReleaseRequest {
  return { eventId, endpoint: ENDPOINT.name, operator: 'alice', reason: 'receiver cannot take it (INC-9)', nowMs: T0 + 60_000, ordering: 'per-shipment', ...overrides };
}

async function refusal<E extends Error>(promise: Promise<unknown>, type: new (...args: never[]) => E): Promise<E> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as E;
}

describe('Function: releaseDelivery', () => {
  it('records the release on the dead row and passes its turn: the event waiting next is woken', async () => {
    // Prepare: evt_1 dies holding the shipment (onDead hold: the consumer does not pass the turn); evt_2 waits.
    const s = setup();
    await dies('evt_1', s);
    expect(await takeTurn(shipmentEvent('evt_2'), ENDPOINT, s.deps)).toEqual({ kind: 'wait', sequence: 2, waitingFor: 1 });

    // Act
    const released = await releaseDelivery(request('evt_1', { caller: 'arn:aws:sts::1:assumed-role/ops/alice' }), s.deps);

    // Assess
    expect(released).toMatchObject({ sequence: 1, next: 2, woken: 'evt_2', recordedBefore: false });
    expect(released.record).toMatchObject({ state: 'dead', deadReason: 'rejected', releasedAt: T0 + 60_000, sequence: 1 });
    expect(released.record.audit).toEqual([
      {
        at: T0 + 60_000,
        action: 'release',
        operator: 'alice',
        reason: 'receiver cannot take it (INC-9)',
        caller: 'arn:aws:sts::1:assumed-role/ops/alice',
        id: expect.any(String) as string,
      },
    ]);
    expect(await s.ledger.get({ eventId: 'evt_1', endpoint: ENDPOINT.name })).toEqual(released.record);
    expect(s.sent).toEqual([{ eventId: 'evt_2', endpoint: ENDPOINT.name }]);
    expect((await s.heads.get(SHIPMENT, ENDPOINT.name))?.next).toBe(2);
    // The woken event's turn has come.
    expect(await takeTurn(shipmentEvent('evt_2'), ENDPOINT, s.deps)).toEqual({ kind: 'go', sequence: 2 });
  });

  it('passes the turn when nothing waits yet: the next event, when it comes, goes at once', async () => {
    const s = setup();
    await dies('evt_1', s);

    const released = await releaseDelivery(request('evt_1'), s.deps);

    expect(released).toMatchObject({ sequence: 1, next: 2, recordedBefore: false });
    expect(released.woken).toBeUndefined();
    expect(s.sent).toEqual([]);
    expect(await takeTurn(shipmentEvent('evt_2'), ENDPOINT, s.deps)).toEqual({ kind: 'go', sequence: 2 });
  });

  it('refuses to run again once done, saying when and by whom, and writes and sends nothing more', async () => {
    // Prepare
    const s = setup();
    await dies('evt_1', s);
    await takeTurn(shipmentEvent('evt_2'), ENDPOINT, s.deps);
    const first = await releaseDelivery(request('evt_1'), s.deps);

    // Act
    const error = await refusal(releaseDelivery(request('evt_1', { operator: 'bob', nowMs: T0 + 90_000 }), s.deps), NothingToReleaseError);

    // Assess
    expect(error.reason).toBe('released');
    expect(error.code).toBe('nothing-to-release');
    expect(error.message).toBe(
      `event evt_1 at endpoint carrier-acme was released already (at ${new Date(T0 + 60_000).toISOString()} by alice); its shipment has moved on to sequence 2: nothing more to release`,
    );
    expect(await s.ledger.get({ eventId: 'evt_1', endpoint: ENDPOINT.name })).toEqual(first.record);
    expect(s.sent).toEqual([{ eventId: 'evt_2', endpoint: ENDPOINT.name }]);
  });

  it('finishes a release interrupted after it was recorded: no second audit entry, the turn passed, the next woken', async () => {
    // Prepare: the row says released, the head still waits on it (the run stopped in between).
    const s = setup();
    await dies('evt_1', s);
    await takeTurn(shipmentEvent('evt_2'), ENDPOINT, s.deps);
    const recorded = await s.ledger.release({ eventId: 'evt_1', endpoint: ENDPOINT.name, operator: 'alice', reason: 'first run', nowMs: T0 + 30_000 });

    // Act
    const released = await releaseDelivery(request('evt_1'), s.deps);

    // Assess
    expect(released).toMatchObject({ next: 2, woken: 'evt_2', recordedBefore: true });
    expect(released.record).toEqual(recorded);
    expect(released.record.audit.map((entry) => entry.reason)).toEqual(['first run']);
    expect(s.sent).toEqual([{ eventId: 'evt_2', endpoint: ENDPOINT.name }]);
  });

  it('records one release of two run at once, and passes the turn once', async () => {
    const s = setup();
    await dies('evt_1', s);
    await takeTurn(shipmentEvent('evt_2'), ENDPOINT, s.deps);

    const results = await Promise.allSettled([releaseDelivery(request('evt_1'), s.deps), releaseDelivery(request('evt_1', { operator: 'bob' }), s.deps)]);

    expect(results.filter((r) => r.status === 'fulfilled').length).toBeGreaterThanOrEqual(1);
    for (const result of results) if (result.status === 'rejected') expect(result.reason).toMatchObject({ reason: 'released' });
    const row = await s.ledger.get({ eventId: 'evt_1', endpoint: ENDPOINT.name });
    expect(row?.audit.filter((entry) => entry.action === 'release')).toHaveLength(1);
    expect((await s.heads.get(SHIPMENT, ENDPOINT.name))?.next).toBe(2);
    expect(new Set(s.sent.map((m) => m.eventId))).toEqual(new Set(['evt_2']));
  });

  it('refuses an endpoint not ordered per shipment before reading anything', async () => {
    const s = setup();
    await dies('evt_1', s);

    const error = await refusal(releaseDelivery(request('evt_1', { ordering: 'none' }), s.deps), NothingToReleaseError);

    expect(error.reason).toBe('not-ordered');
    expect(error.message).toBe(
      'endpoint carrier-acme is not ordered per shipment (ordering: none): no shipment waits on event evt_1 at endpoint carrier-acme; nothing to release',
    );
    expect((await s.ledger.get({ eventId: 'evt_1', endpoint: ENDPOINT.name }))?.audit).toEqual([]);
  });

  it('refuses a delivery that is not dead, or that there is none of, naming event and endpoint', async () => {
    const s = setup();
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, s.deps);
    await takeTurn(shipmentEvent('evt_2'), ENDPOINT, s.deps);

    const pending = await refusal(releaseDelivery(request('evt_2'), s.deps), ReleaseRefusedError);
    const missing = await refusal(releaseDelivery(request('evt_9'), s.deps), ReleaseRefusedError);

    expect(pending.refusal).toBe('not-dead');
    expect(pending.message).toBe('event evt_2 at endpoint carrier-acme is pending, not dead: only a dead delivery can be released');
    expect(missing.refusal).toBe('not-found');
    expect(missing.message).toBe('no delivery record for event evt_9 at endpoint carrier-acme');
  });

  it('refuses a dead event whose turn has not come, naming the event that holds the shipment; never the shipment ID', async () => {
    // Prepare: evt_1 holds the turn (pending); evt_2 waited, then was sent and died anyway (a replay of a wake-up race, say).
    const s = setup();
    await takeTurn(shipmentEvent('evt_1'), ENDPOINT, s.deps);
    await takeTurn(shipmentEvent('evt_2'), ENDPOINT, s.deps);
    await diesOutOfTurn('evt_2', s, 2);

    // Act
    const error = await refusal(releaseDelivery(request('evt_2'), s.deps), NothingToReleaseError);

    // Assess
    expect(error.reason).toBe('not-holding');
    expect(error.message).toBe(
      'event evt_2 at endpoint carrier-acme is not holding its shipment: it is sequence 2, and the turn is at sequence 1 (event evt_1), earlier than its own; release or replay that one first',
    );
    expect(error.message).not.toContain(SHIPMENT);
    expect(error.head).toEqual({ next: 1, assigned: 2 });
    expect((await s.ledger.get({ eventId: 'evt_2', endpoint: ENDPOINT.name }))?.audit).toEqual([]);
  });

  it("refuses a dead event whose turn was passed on already (onDead continue), writing nothing", async () => {
    const s = setup();
    await dies('evt_1', s);
    await passTurn(SHIPMENT, ENDPOINT.name, { sequence: 1, eventId: 'evt_1' }, s.deps);

    const error = await refusal(releaseDelivery(request('evt_1'), s.deps), NothingToReleaseError);

    expect(error.reason).toBe('not-holding');
    expect(error.message).toBe(
      'event evt_1 at endpoint carrier-acme is not holding its shipment: it is sequence 1, and the turn has passed on to sequence 2 (onDead continue, or it was delivered or released before); nothing to release',
    );
    expect((await s.ledger.get({ eventId: 'evt_1', endpoint: ENDPOINT.name }))?.releasedAt).toBeUndefined();
  });

  it('refuses a dead delivery with no sequence (admitted before its endpoint was ordered)', async () => {
    const s = setup();
    await diesOutOfTurn('evt_old', s);

    const error = await refusal(releaseDelivery(request('evt_old'), s.deps), NothingToReleaseError);

    expect(error.reason).toBe('not-sequenced');
  });

  it('refuses an audit text it cannot keep before anything is read, naming the field', async () => {
    const s = setup();
    await dies('evt_1', s);

    const error = await refusal(releaseDelivery(request('evt_1', { reason: '  ' }), s.deps), ReplayInputError);

    expect(error.message).toBe('reason is empty');
    expect((await s.heads.get(SHIPMENT, ENDPOINT.name))?.next).toBe(1);
  });
});
