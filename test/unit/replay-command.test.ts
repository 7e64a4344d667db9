/**
 * `handoff status`, `dead` and `replay` per delivery (docs/contract.md §10–11): one event with
 * deliveries to several endpoints, written through the in-memory ledger as the consumer writes
 * them, and the commands run against it with a recording queue. The command line itself (parsing,
 * exit codes) is covered in test/e2e/cli.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { deadCommand } from '../../cli/commands/dead';
import { isoTime, replayCommand, type ReplayOptions } from '../../cli/commands/replay';
import { statusCommand } from '../../cli/commands/status';
import type { CommandContext } from '../../cli/context';
import { CommandFailedError, UsageError } from '../../cli/errors';
import { parseEvent } from '../../lib/event';
import { LedgerUnavailableError, ReplayRefusedError } from '../../lib/ledger/errors';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import type { DeliveryQueue } from '../../lib/queue/queue';
import { rejectionOf } from '../helpers/ledger-contract';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const MINUTE_MS = 60_000;

interface Enqueued {
  readonly body: string;
  readonly endpoint: string | undefined;
  /** The row's state when the message was sent: the ledger is written first. */
  readonly stateThen: string | undefined;
}

/** The ledger, a queue that records what is enqueued, stderr captured, and a context over them. */
function setup(options: { failEnqueueFor?: string } = {}) {
  let clockMs = T0;
  const ledger = new MemoryLedger({ now: () => clockMs });
  const enqueued: Enqueued[] = [];
  const queue: Pick<DeliveryQueue, 'enqueue'> = {
    async enqueue(body, opts) {
      if (opts?.endpoint !== undefined && opts.endpoint === options.failEnqueueFor) throw new Error('scripted: queue down');
      const id = (JSON.parse(body) as { id: string }).id;
      const row = await ledger.get({ eventId: id, endpoint: opts?.endpoint ?? 'default' });
      enqueued.push({ body, endpoint: opts?.endpoint, stateThen: row?.state });
    },
  };
  const stderr: string[] = [];
  const ctx = {
    now: () => clockMs,
    target: { description: 'the sandbox', connection: { kind: 'sandbox' } },
    ledger: () => ledger,
    queue: () => queue,
    output: { stdout: { write: () => true }, stderr: { write: (text: string) => (stderr.push(text), true) } },
  } as unknown as CommandContext;
  return {
    ledger,
    ctx,
    enqueued,
    stderr,
    advance: (ms: number) => {
      clockMs += ms;
    },
  };
}

function body(id: string): string {
  const parsed = parseEvent(JSON.stringify({ id, shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-01T10:00:00Z' }));
  if (!parsed.ok) throw parsed.error;
  return parsed.value.body;
}

/** One delivery of `eventId` to `endpoint`, brought to `state` as the consumer would, at `atMs`. */
async function delivery(
  ledger: MemoryLedger,
  eventId: string,
  endpoint: string,
  state: 'pending' | 'delivered' | 'rejected' | 'exhausted' | 'first-attempt',
  atMs = T0,
): Promise<void> {
  const parsed = parseEvent(body(eventId));
  if (!parsed.ok) throw parsed.error;
  const policy = state === 'exhausted' ? { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 } : DEFAULT_RETRY_POLICY;
  const { claimToken } = await ledger.claim({
    event: parsed.value,
    endpoint,
    owner: 'worker',
    nowMs: atMs - 100,
    leaseMs: 30_000,
    policy,
    retentionSeconds: 86_400 * 30,
  });
  if (state === 'first-attempt') return;
  const outcome =
    state === 'delivered'
      ? ({ kind: 'accepted', status: 200 } as const)
      : state === 'rejected'
        ? ({ kind: 'rejected', status: 400, responseStart: 'no such shipment' } as const)
        : ({ kind: 'temporary', status: 503 } as const);
  await ledger.recordAttempt({
    eventId,
    endpoint,
    claimToken,
    body: parsed.value.body,
    nowMs: atMs,
    attempt: { attempt: 1, at: atMs - 100, outcome: outcome.kind, status: outcome.status, durationMs: 100 },
    outcome,
    next:
      state === 'delivered'
        ? { state: 'delivered' }
        : state === 'rejected'
          ? { state: 'dead', reason: 'rejected', detail: '400 no such shipment' }
          : state === 'exhausted'
            ? { state: 'dead', reason: 'exhausted', detail: 'attempt budget spent' }
            : { state: 'pending', nextAttemptAt: atMs + 600_000 },
  });
}

const ACTOR = { operator: 'alice', reason: 'receiver fixed (INC-7)' } as const;

describe('Command: status per delivery', () => {
  it('lists every delivery of an event as {eventId, deliveries}, each with its endpoint, state, attempts, replays and last outcome', async () => {
    // Prepare
    const { ledger, ctx } = setup();
    await delivery(ledger, 'evt_fan', 'billing', 'rejected');
    await delivery(ledger, 'evt_fan', 'crm', 'delivered');
    await delivery(ledger, 'evt_fan', 'warehouse', 'pending');

    // Act
    const result = await statusCommand(ctx, 'evt_fan', {});

    // Assess: as printed with --json.
    const json = JSON.parse(JSON.stringify(result.json)) as { eventId: string; deliveries: Record<string, unknown>[] };
    expect(json.eventId).toBe('evt_fan');
    expect(json.deliveries.map((d) => [d.endpoint, d.state, d.attempts, d.replays])).toStrictEqual([
      ['billing', 'dead', 1, 0],
      ['crm', 'delivered', 1, 0],
      ['warehouse', 'pending', 1, 0],
    ]);
    expect(json.deliveries[0]).toMatchObject({ eventId: 'evt_fan', deadReason: 'rejected', lastOutcome: { kind: 'rejected', status: 400 } });
    expect(json.deliveries[1]).not.toHaveProperty('deadReason');
    for (const d of json.deliveries) expect(d).not.toHaveProperty('body');
    const lines = result.human.split('\n');
    expect(lines[0]).toBe('event evt_fan: 3 deliveries');
    expect(lines).toContainEqual(expect.stringMatching(/^endpoint +state +attempts +replays +last outcome$/));
    expect(lines).toContainEqual(expect.stringMatching(/^billing +dead \(rejected\) +1 of 6 +0 +rejected \(400\)/));
    expect(lines.filter((l) => l.startsWith('delivery to '))).toStrictEqual(['delivery to billing', 'delivery to crm', 'delivery to warehouse']);
  });

  it('prints one delivery\'s object with --endpoint, and its details', async () => {
    const { ledger, ctx } = setup();
    await delivery(ledger, 'evt_fan', 'billing', 'rejected');
    await delivery(ledger, 'evt_fan', 'crm', 'delivered');

    const result = await statusCommand(ctx, 'evt_fan', { endpoint: 'crm' });

    expect(result.json).toMatchObject({ eventId: 'evt_fan', endpoint: 'crm', state: 'delivered', attempts: 1, replays: 0 });
    expect(result.json).not.toHaveProperty('deliveries');
    expect(result.human.split('\n')).toContain('endpoint      crm');
  });

  it('prints the stored event with --body, the same whichever delivery (one accepted at its first attempt stores none)', async () => {
    const { ledger, ctx } = setup();
    await delivery(ledger, 'evt_fan', 'billing', 'rejected');
    await delivery(ledger, 'evt_fan', 'crm', 'delivered');

    const all = await statusCommand(ctx, 'evt_fan', { body: true });
    const one = await statusCommand(ctx, 'evt_fan', { body: true, endpoint: 'crm' });

    expect(await ledger.get({ eventId: 'evt_fan', endpoint: 'crm' })).not.toHaveProperty('body');
    expect(all.human).toBe(body('evt_fan'));
    expect(one.human).toBe(body('evt_fan'));
  });

  it('says with --body that an event accepted everywhere keeps no body', async () => {
    const { ledger, ctx } = setup();
    await delivery(ledger, 'evt_quick', 'crm', 'delivered');

    const error = await rejectionOf(statusCommand(ctx, 'evt_quick', { body: true }), CommandFailedError);

    expect(error.code).toBe('no-body');
    expect(error.message).toBe(
      'event evt_quick keeps no body: no delivery of it is parked, waiting or dead (a delivery accepted or being retried leaves the body on its message)',
    );
  });

  it('fails with one line for an unknown event, and names the deliveries there are for an endpoint it has none to', async () => {
    const { ledger, ctx } = setup();
    await delivery(ledger, 'evt_fan', 'billing', 'rejected');
    await delivery(ledger, 'evt_fan', 'crm', 'delivered');

    const unknown = await rejectionOf(statusCommand(ctx, 'evt_never', {}), CommandFailedError);
    const elsewhere = await rejectionOf(statusCommand(ctx, 'evt_fan', { endpoint: 'warehouse' }), CommandFailedError);

    expect(unknown.message).toBe('no delivery record for event evt_never');
    expect(elsewhere.message).toBe('event evt_fan has no delivery to endpoint warehouse (its deliveries: billing, crm)');
  });
});

describe('Command: dead per endpoint', () => {
  it('shows the endpoint column, and with --endpoint pages through that endpoint\'s dead deliveries only, the cursor included', async () => {
    // Prepare: dead deliveries of two endpoints, interleaved in time.
    const { ledger, ctx } = setup();
    for (let i = 0; i < 5; i++) await delivery(ledger, `evt_d${i}`, i % 2 === 0 ? 'billing' : 'crm', 'rejected', T0 + i * 1000);

    // Act
    const all = await deadCommand(ctx, { limit: 20 });
    const first = await deadCommand(ctx, { limit: 2, endpoint: 'billing' });
    const cursor = (first.json as { cursor: string | null }).cursor;
    const second = await deadCommand(ctx, { limit: 2, endpoint: 'billing', cursor: cursor ?? undefined });

    // Assess
    const lines = all.human.split('\n');
    expect(lines[0]).toMatch(/^event +endpoint +reason +died +attempts +replays +why$/);
    expect(lines[1]).toMatch(/^evt_d0 +billing +rejected /);
    expect(lines[2]).toMatch(/^evt_d1 +crm +rejected /);
    const ids = (r: typeof first) => (r.json as { records: DeliveryRecord[] }).records.map((x) => `${x.eventId}@${x.endpoint}`);
    expect(ids(first)).toStrictEqual(['evt_d0@billing', 'evt_d2@billing']);
    expect(first.human.split('\n').at(-1)).toBe(`more: handoff dead --endpoint billing --limit 2 --cursor ${cursor}`);
    expect(ids(second)).toStrictEqual(['evt_d4@billing']);
    expect((second.json as { cursor: string | null }).cursor).toBeNull();
  });

  it('says when an endpoint has no dead deliveries', async () => {
    const { ledger, ctx } = setup();
    await delivery(ledger, 'evt_d0', 'billing', 'rejected');

    const result = await deadCommand(ctx, { limit: 20, endpoint: 'crm' });

    expect(result.human).toBe('no dead records of endpoint crm');
  });
});

describe('Command: replay of one event', () => {
  it("replays every dead delivery of the event, each its own audit entry and its own endpoint's message, ledger first; the rest untouched", async () => {
    // Prepare
    const { ledger, ctx, enqueued } = setup();
    await delivery(ledger, 'evt_fan', 'billing', 'rejected');
    await delivery(ledger, 'evt_fan', 'crm', 'delivered');
    await delivery(ledger, 'evt_fan', 'warehouse', 'exhausted');
    await delivery(ledger, 'evt_fan', 'zeta', 'pending');

    // Act
    const result = await replayCommand(ctx, 'evt_fan', ACTOR);

    // Assess
    expect(result.failure).toBeUndefined();
    expect(result.json).toStrictEqual({
      eventId: 'evt_fan',
      operator: 'alice',
      caller: null,
      reason: 'receiver fixed (INC-7)',
      deliveries: [
        { endpoint: 'billing', state: 'pending', attempts: 0, replays: 1, enqueued: true },
        { endpoint: 'warehouse', state: 'pending', attempts: 0, replays: 1, enqueued: true },
      ],
    });
    expect(enqueued).toStrictEqual([
      { body: body('evt_fan'), endpoint: 'billing', stateThen: 'pending' },
      { body: body('evt_fan'), endpoint: 'warehouse', stateThen: 'pending' },
    ]);
    const after = await ledger.deliveriesOf('evt_fan');
    expect(after.map((d) => [d.endpoint, d.state, d.replays, d.audit.map((a) => [a.operator, a.reason])])).toStrictEqual([
      ['billing', 'pending', 1, [['alice', 'receiver fixed (INC-7)']]],
      ['crm', 'delivered', 0, []],
      ['warehouse', 'pending', 1, [['alice', 'receiver fixed (INC-7)']]],
      ['zeta', 'pending', 0, []],
    ]);
    expect(result.human).toBe(
      'replayed evt_fan to 2 endpoints (billing, warehouse): pending again (by alice; no caller identity against the sandbox), event enqueued for each',
    );
  });

  it('replays only the delivery named with --endpoint', async () => {
    const { ledger, ctx, enqueued } = setup();
    await delivery(ledger, 'evt_fan', 'billing', 'rejected');
    await delivery(ledger, 'evt_fan', 'warehouse', 'rejected');

    const result = await replayCommand(ctx, 'evt_fan', { ...ACTOR, endpoint: 'warehouse' });

    expect(result.json).toMatchObject({ eventId: 'evt_fan', endpoint: 'warehouse', state: 'pending', replays: 1, enqueued: true });
    expect(enqueued.map((e) => e.endpoint)).toStrictEqual(['warehouse']);
    expect((await ledger.get({ eventId: 'evt_fan', endpoint: 'billing' }))?.state).toBe('dead');
  });

  it('is refused clearly when no delivery is dead, naming each one\'s state, and changes nothing', async () => {
    const { ledger, ctx, enqueued } = setup();
    await delivery(ledger, 'evt_fan', 'billing', 'delivered');
    await delivery(ledger, 'evt_fan', 'crm', 'pending');

    const error = await rejectionOf(replayCommand(ctx, 'evt_fan', ACTOR), CommandFailedError);

    expect(error.message).toBe('event evt_fan has no dead delivery with an event to replay (billing: delivered, crm: pending)');
    expect(error.code).toBe('not-dead');
    expect(enqueued).toStrictEqual([]);
  });

  it("is refused as the ledger refuses its one delivery when the event has only one", async () => {
    const { ledger, ctx } = setup();
    await delivery(ledger, 'evt_one', 'default', 'pending');
    await ledger.admitInvalid({ eventId: 'evt_bad', endpoint: 'default' }, 'status is missing', DEFAULT_RETRY_POLICY, T0, 86_400);

    const pending = await rejectionOf(replayCommand(ctx, 'evt_one', ACTOR), ReplayRefusedError);
    const invalid = await rejectionOf(replayCommand(ctx, 'evt_bad', ACTOR), ReplayRefusedError);

    expect(pending.message).toBe('event evt_one is pending, not dead: only dead records can be replayed');
    expect(invalid.message).toBe('event evt_bad died as an invalid message: there is no valid event to replay');
  });

  it('is refused for an unknown event, and for an endpoint the event has no delivery to, naming those it has', async () => {
    const { ledger, ctx } = setup();
    await delivery(ledger, 'evt_fan', 'billing', 'rejected');

    const unknown = await rejectionOf(replayCommand(ctx, 'evt_never', ACTOR), CommandFailedError);
    const elsewhere = await rejectionOf(replayCommand(ctx, 'evt_fan', { ...ACTOR, endpoint: 'crm' }), CommandFailedError);
    await replayCommand(ctx, 'evt_fan', { ...ACTOR, endpoint: 'billing' });
    const notDead = await rejectionOf(replayCommand(ctx, 'evt_fan', { ...ACTOR, endpoint: 'billing' }), ReplayRefusedError);

    expect(unknown.message).toBe('no delivery record for event evt_never');
    expect(elsewhere.message).toBe('event evt_fan has no delivery to endpoint crm (its deliveries: billing)');
    expect(notDead.message).toBe('event evt_fan at endpoint billing is pending, not dead: only dead records can be replayed');
  });

  it('replays the others when one enqueue fails, and fails naming the delivery left without a message', async () => {
    const { ledger, ctx, enqueued } = setup({ failEnqueueFor: 'billing' });
    await delivery(ledger, 'evt_fan', 'billing', 'rejected');
    await delivery(ledger, 'evt_fan', 'crm', 'rejected');

    const result = await replayCommand(ctx, 'evt_fan', ACTOR);

    expect(enqueued.map((e) => e.endpoint)).toStrictEqual(['crm']);
    expect(result.json).toMatchObject({
      deliveries: [
        { endpoint: 'billing', state: 'pending', enqueued: false },
        { endpoint: 'crm', state: 'pending', enqueued: true },
      ],
    });
    expect(result.failure).toBe(
      'event evt_fan is pending again at billing but could not be enqueued there; put it on the queue with: handoff status evt_fan --body | handoff send',
    );
  });
});

describe('Command: bulk replay', () => {
  /** Billing's dead deliveries: two rejected and two exhausted in the window, one before it, one after; crm's one in it. */
  async function seeded() {
    const s = setup();
    await delivery(s.ledger, 'evt_early', 'billing', 'rejected', T0 - 10 * MINUTE_MS);
    await delivery(s.ledger, 'evt_b1', 'billing', 'rejected', T0 + 1 * MINUTE_MS);
    await delivery(s.ledger, 'evt_b2', 'billing', 'exhausted', T0 + 2 * MINUTE_MS);
    await delivery(s.ledger, 'evt_b3', 'billing', 'rejected', T0 + 3 * MINUTE_MS);
    await delivery(s.ledger, 'evt_b4', 'billing', 'exhausted', T0 + 4 * MINUTE_MS);
    await delivery(s.ledger, 'evt_late', 'billing', 'rejected', T0 + 20 * MINUTE_MS);
    await delivery(s.ledger, 'evt_b1', 'crm', 'rejected', T0 + 1 * MINUTE_MS);
    s.advance(30 * MINUTE_MS);
    return s;
  }
  const window = { endpoint: 'billing', deadSince: T0, until: T0 + 10 * MINUTE_MS };

  it('counts with --dry-run what it would replay, and writes nothing', async () => {
    const { ctx, ledger, enqueued } = await seeded();

    const all = await replayCommand(ctx, undefined, { ...ACTOR, ...window, dryRun: true });
    const exhausted = await replayCommand(ctx, undefined, { ...ACTOR, ...window, deadReason: 'exhausted', dryRun: true });

    expect(all.json).toMatchObject({ endpoint: 'billing', dryRun: true, matched: 4, replayed: 0, deadReason: null, ratePerSecond: 10 });
    expect(exhausted.json).toMatchObject({ matched: 2, deadReason: 'exhausted' });
    expect(all.human.split('\n')[0]).toBe(
      'would replay 4 deliveries: dead deliveries of endpoint billing that died from 2026-12-01T12:00:00.000Z to 2026-12-01T12:10:00.000Z; nothing written',
    );
    expect(enqueued).toStrictEqual([]);
    expect((await ledger.listByState('dead', { endpoint: 'billing' })).records).toHaveLength(6);
  });

  it("replays every dead delivery of the endpoint in the window, oldest first, one audit entry each, each on its endpoint's message", async () => {
    const { ctx, ledger, enqueued } = await seeded();

    const result = await replayCommand(ctx, undefined, { ...ACTOR, ...window, rate: 1000 });

    expect(result.failure).toBeUndefined();
    expect(result.json).toMatchObject({ matched: 4, replayed: 4, noLongerDead: 0, enqueueFailed: [], operator: 'alice', caller: null });
    expect(enqueued.map((e) => [(JSON.parse(e.body) as { id: string }).id, e.endpoint, e.stateThen])).toStrictEqual([
      ['evt_b1', 'billing', 'pending'],
      ['evt_b2', 'billing', 'pending'],
      ['evt_b3', 'billing', 'pending'],
      ['evt_b4', 'billing', 'pending'],
    ]);
    for (const id of ['evt_b1', 'evt_b2', 'evt_b3', 'evt_b4']) {
      const row = await ledger.get({ eventId: id, endpoint: 'billing' });
      expect(row?.audit.map((a) => [a.action, a.operator, a.reason])).toStrictEqual([['replay', 'alice', 'receiver fixed (INC-7)']]);
    }
    const stillDead = (await ledger.listByState('dead')).records.map((r) => `${r.eventId}@${r.endpoint}`);
    expect(stillDead).toStrictEqual(['evt_early@billing', 'evt_b1@crm', 'evt_late@billing']);
    expect(result.human).toBe(
      'replayed 4 deliveries (by alice; no caller identity against the sandbox): dead deliveries of endpoint billing that died from 2026-12-01T12:00:00.000Z to 2026-12-01T12:10:00.000Z',
    );
  });

  it('run again after it finished (or was interrupted), replays nothing twice: replayed deliveries are pending, not dead', async () => {
    const { ctx, enqueued } = await seeded();
    await replayCommand(ctx, undefined, { ...ACTOR, ...window, deadReason: 'rejected', rate: 1000 });

    const again = await replayCommand(ctx, undefined, { ...ACTOR, ...window, deadReason: 'rejected', rate: 1000 });

    expect(again.json).toMatchObject({ matched: 0, replayed: 0 });
    expect(enqueued.map((e) => (JSON.parse(e.body) as { id: string }).id)).toStrictEqual(['evt_b1', 'evt_b3']);
  });

  it('reports its progress on stderr during a long run, against the clock it is given', async () => {
    // Prepare: a clock that moves two seconds at every reading, so the run looks long.
    const s = await seeded();
    let reads = 0;
    const clocked = { ...s.ctx, now: () => T0 + 30 * MINUTE_MS + 2_000 * reads++ } as unknown as CommandContext;

    // Act
    const result = await replayCommand(clocked, undefined, { ...ACTOR, ...window, rate: 1000 });

    // Assess
    expect(result.json).toMatchObject({ replayed: 4 });
    expect(s.stderr.length).toBeGreaterThan(0);
    for (const line of s.stderr) expect(line).toMatch(/^handoff: replaying: \d of about 4 done \(\d replayed\), .+ so far\n$/);
  });

  it('says how far it got, and that running it again continues, when the store fails midway', async () => {
    const s = await seeded();
    let replays = 0;
    const failing = Object.assign(Object.create(s.ledger) as MemoryLedger, {
      replay: (input: Parameters<MemoryLedger['replay']>[0]) =>
        ++replays > 2 ? Promise.reject(new LedgerUnavailableError('ledger down')) : s.ledger.replay(input),
      listByState: s.ledger.listByState.bind(s.ledger),
    });
    const ctx = { ...s.ctx, ledger: () => failing } as unknown as CommandContext;

    await rejectionOf(replayCommand(ctx, undefined, { ...ACTOR, ...window, rate: 1000 }), LedgerUnavailableError);

    expect(s.stderr.at(-1)).toBe('handoff: stopped after 2 replayed; the same command run again replays only what is still dead\n');
    const again = await replayCommand(s.ctx, undefined, { ...ACTOR, ...window, rate: 1000 });
    expect(again.json).toMatchObject({ matched: 2, replayed: 2 });
    expect(s.enqueued.map((e) => (JSON.parse(e.body) as { id: string }).id)).toStrictEqual(['evt_b1', 'evt_b2', 'evt_b3', 'evt_b4']);
  });

  it('refuses the mixes of forms and missing parts as usage errors', async () => {
    const { ctx } = await seeded();
    const usage = (eventId: string | undefined, options: Partial<ReplayOptions>) =>
      rejectionOf(replayCommand(ctx, eventId, { ...ACTOR, ...options }), UsageError).then((e) => e.message);

    expect(await usage('evt_b1', { deadSince: T0 })).toBe(
      '--dead-since is for a bulk replay, which takes no event ID: handoff replay --endpoint NAME --dead-since TIME …',
    );
    expect(await usage(undefined, {})).toBe(
      "replay needs an event ID, or --endpoint NAME --dead-since TIME to replay one endpoint's dead deliveries",
    );
    expect(await usage(undefined, { deadSince: T0 })).toBe('a bulk replay needs --endpoint NAME: the endpoint whose dead deliveries to replay');
    expect(await usage(undefined, { endpoint: 'billing', dryRun: true })).toBe('a bulk replay needs --dead-since TIME: the earliest death to replay');
    expect(await usage(undefined, { endpoint: 'billing', deadSince: T0 + MINUTE_MS, until: T0 })).toBe('--until must come after --dead-since');
  });
});

describe('Function: isoTime', () => {
  it('reads a date (UTC) or a date and time with its zone', () => {
    expect(isoTime('2026-12-01')).toBe(Date.UTC(2026, 11, 1));
    expect(isoTime('2026-12-01T10:00:00Z')).toBe(Date.UTC(2026, 11, 1, 10));
    expect(isoTime('2026-12-01T10:00+01:00')).toBe(Date.UTC(2026, 11, 1, 9));
    expect(isoTime('2026-12-01T10:00:00.250Z')).toBe(Date.UTC(2026, 11, 1, 10, 0, 0, 250));
  });

  it.each(['2026-12-01T10:00:00', 'yesterday', '2026-02-30', '2026-13-01', '2026-12-01T24:00Z', '1700000000000', ''])(
    'refuses "%s", saying the form it wants',
    (text) => {
      expect(() => isoTime(text)).toThrow('must be an ISO 8601 time with its zone, like 2026-12-01T10:00:00Z, or a date like 2026-12-01 (UTC).');
    },
  );
});
