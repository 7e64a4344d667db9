import { describe, expect, it } from 'vitest';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import { LedgerUnavailableError, ReplayRefusedError } from '../../lib/ledger/errors';
import { DEFAULT_ENDPOINT } from '../../lib/ledger/ledger';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import {
  CALLER_MAX_CHARS,
  OPERATOR_MAX_CHARS,
  pacer,
  REASON_MAX_CHARS,
  replayDeadDeliveries,
  replayDelivery,
  type BulkReplayTally,
} from '../../lib/replay';
import { ReplayEnqueueError, ReplayInputError } from '../../lib/errors';
import type { Ledger, ReplayInput } from '../../lib/ledger/ledger';

const NOW_MS = 1_800_000_000_000;
const key = { eventId: 'evt_r', endpoint: DEFAULT_ENDPOINT };

function parsed(): ParsedEvent {
  const result = parseEvent(JSON.stringify({ id: 'evt_r', shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' }));
  if (!result.ok) throw result.error;
  return result.value;
}

/** A ledger holding one row for evt_r, rejected (dead) or left pending. */
async function ledgerWith(state: 'dead' | 'pending'): Promise<MemoryLedger> {
  const ledger = new MemoryLedger({ now: () => NOW_MS });
  const event = parsed();
  const { claimToken } = await ledger.claim({
    event,
    endpoint: DEFAULT_ENDPOINT,
    owner: 'w1',
    nowMs: NOW_MS,
    leaseMs: 30_000,
    policy: DEFAULT_RETRY_POLICY,
    retentionSeconds: 86_400,
  });
  const rejected = { kind: 'rejected', status: 400, responseStart: 'no' } as const;
  const temporary = { kind: 'temporary', status: 503 } as const;
  await ledger.recordAttempt({
    ...key,
    claimToken,
    body: event.body,
    nowMs: NOW_MS + 10,
    attempt: { attempt: 1, at: NOW_MS, outcome: state === 'dead' ? 'rejected' : 'temporary', status: state === 'dead' ? 400 : 503, durationMs: 10 },
    outcome: state === 'dead' ? rejected : temporary,
    next: state === 'dead' ? { state: 'dead', reason: 'rejected', detail: '400 no' } : { state: 'pending', nextAttemptAt: NOW_MS + 30_000 },
  });
  return ledger;
}

const input = { ...key, operator: 'alice', reason: 'fixed', nowMs: NOW_MS + 1_000 };

describe('Function: replayDelivery', () => {
  it('returns the row to pending first, then enqueues the original body', async () => {
    // Prepare
    const ledger = await ledgerWith('dead');
    const enqueued: { body: string; endpoint: string | undefined; stateThen: string | undefined }[] = [];
    const queue = {
      enqueue: async (body: string, options?: { endpoint?: string }) => {
        enqueued.push({ body, endpoint: options?.endpoint, stateThen: (await ledger.get(key))?.state });
      },
    };

    // Act
    const record = await replayDelivery(input, { ledger, queue });

    // Assess
    expect(record).toMatchObject({ state: 'pending', replays: 1, attempts: 0 });
    // A message for that delivery's endpoint alone: the event's other endpoints are not sent it again.
    expect(enqueued).toEqual([{ body: parsed().body, endpoint: DEFAULT_ENDPOINT, stateThen: 'pending' }]);
  });

  it('refuses a pending record and enqueues nothing', async () => {
    const ledger = await ledgerWith('pending');
    const enqueued: string[] = [];

    const replay = replayDelivery(input, { ledger, queue: { enqueue: async (body) => void enqueued.push(body) } });

    await expect(replay).rejects.toBeInstanceOf(ReplayRefusedError);
    await expect(replay).rejects.toMatchObject({ refusal: 'not-dead' });
    expect(enqueued).toEqual([]);
  });

  it('reports a failed enqueue after the replay was recorded, keeping the cause', async () => {
    // Prepare
    const ledger = await ledgerWith('dead');
    const cause = new Error('queue down');

    // Act
    const replay = replayDelivery(input, { ledger, queue: { enqueue: async () => Promise.reject(cause) } });

    // Assess
    await expect(replay).rejects.toBeInstanceOf(ReplayEnqueueError);
    await expect(replay).rejects.toMatchObject({ cause, record: { state: 'pending', replays: 1 } });
    expect(await ledger.get(key)).toMatchObject({ state: 'pending', replays: 1 });
  });
});

describe('Function: replayDelivery, the audit texts', () => {
  /** A ledger that records what it was asked to replay and refuses nothing: the check must come first. */
  function recordingLedger(): { ledger: Pick<Ledger, 'replay'>; asked: ReplayInput[] } {
    const asked: ReplayInput[] = [];
    return {
      asked,
      ledger: {
        replay: async (replay) => {
          asked.push(replay);
          const ledger = await ledgerWith('dead');
          return ledger.replay(replay);
        },
      },
    };
  }
  const queue = { enqueue: async () => {} };

  it('caps the operator, the reason and the caller at exported lengths', () => {
    expect([OPERATOR_MAX_CHARS, REASON_MAX_CHARS, CALLER_MAX_CHARS]).toEqual([128, 512, 2048]);
  });

  it.each([
    ['operator', { operator: 'a'.repeat(129) }, 'operator is 129 characters, over the 128-character limit'],
    ['reason', { reason: 'r'.repeat(513) }, 'reason is 513 characters, over the 512-character limit'],
    ['caller', { caller: `arn:aws:iam::1:user/${'c'.repeat(2048)}` }, 'caller is 2068 characters, over the 2048-character limit'],
    ['operator', { operator: 'alice\u001b[2J' }, 'operator contains a control or invisible formatting character'],
    ['reason', { reason: 'fixed \u202eKCA' }, 'reason contains a control or invisible formatting character'],
    ['reason', { reason: 'line\u0085two' }, 'reason contains a control or invisible formatting character'],
    ['operator', { operator: '   ' }, 'operator is empty'],
  ] as const)('refuses a bad %s before the ledger is asked: %s', async (field, change, message) => {
    // Prepare
    const { ledger, asked } = recordingLedger();

    // Act
    const replay = replayDelivery({ ...input, ...change }, { ledger, queue });

    // Assess
    await expect(replay).rejects.toBeInstanceOf(ReplayInputError);
    await expect(replay).rejects.toMatchObject({ field, code: 'invalid-replay-input', message });
    expect(asked).toEqual([]);
  });

  it('accepts texts at the limits, counting characters rather than bytes, and passes the caller to the ledger', async () => {
    // Prepare
    const { ledger, asked } = recordingLedger();
    const operator = 'é'.repeat(OPERATOR_MAX_CHARS);
    const reason = '📦'.repeat(REASON_MAX_CHARS);
    const caller = 'arn:aws:sts::123456789012:assumed-role/ops/alice';

    // Act
    await replayDelivery({ ...input, operator, reason, caller }, { ledger, queue });

    // Assess
    expect(asked).toEqual([{ ...input, operator, reason, caller }]);
  });
});

describe('Function: pacer', () => {
  it('lets the first call go at once and spaces the next ones 1000 / rate ms apart, on the clock it is given', async () => {
    // Prepare: a clock that moves only when slept on, or when the "work" between calls takes time.
    let clockMs = 0;
    const slept: number[] = [];
    const sleep = async (ms: number) => {
      slept.push(ms);
      clockMs += ms;
    };
    const pace = pacer(4, () => clockMs, sleep);

    // Act: three calls back to back, then one after work slower than the interval.
    await pace();
    await pace();
    await pace();
    clockMs += 1000;
    await pace();
    await pace();

    // Assess
    expect(slept).toEqual([250, 250, 250]);
  });
});

describe('Function: replayDeadDeliveries', () => {
  const selection = { endpoint: DEFAULT_ENDPOINT, sinceMs: NOW_MS - 60_000, untilMs: NOW_MS + 60_000 };
  const actor = { operator: 'alice', reason: 'fixed' };
  const noSleep = async () => {};

  it('counts a delivery the listing still shows as dead but the ledger finds replayed meanwhile as no longer dead, and goes on', async () => {
    // Prepare: a listing read before another run replayed the row (an eventually consistent index).
    const ledger = await ledgerWith('dead');
    const stale = await ledger.listByState('dead');
    await ledger.replay({ ...key, operator: 'bob', reason: 'first', nowMs: NOW_MS + 500 });
    const enqueued: string[] = [];
    const staleLedger = { replay: ledger.replay.bind(ledger), listByState: async () => stale };

    // Act
    const tally = await replayDeadDeliveries(
      selection,
      actor,
      { ledger: staleLedger, queue: { enqueue: async (body) => void enqueued.push(body) } },
      { ratePerSecond: 100, sleep: noSleep },
    );

    // Assess
    expect(tally).toEqual({ matched: 1, replayed: 0, enqueueFailed: [], noLongerDead: 1, withoutEvent: 0 });
    expect(enqueued).toEqual([]);
    expect((await ledger.get(key))?.replays).toBe(1);
  });

  it('leaves out invalid messages, which hold no event, counting them', async () => {
    const ledger = new MemoryLedger({ now: () => NOW_MS });
    await ledger.admitInvalid(key, 'status is missing', DEFAULT_RETRY_POLICY, NOW_MS, 86_400);

    const tally = await replayDeadDeliveries(selection, actor, { ledger, queue: { enqueue: async () => {} } }, { ratePerSecond: 100, sleep: noSleep });

    expect(tally).toMatchObject({ matched: 0, replayed: 0, withoutEvent: 1 });
  });

  it('reports its progress after each delivery, and stops on a store failure with what it did reported', async () => {
    // Prepare: a ledger whose replay fails as an unreachable store does.
    const ledger = await ledgerWith('dead');
    const failing = {
      listByState: ledger.listByState.bind(ledger),
      replay: async () => Promise.reject(new LedgerUnavailableError('ledger down')),
    };
    const progress: BulkReplayTally[] = [];

    // Act
    const run = replayDeadDeliveries(selection, actor, { ledger: failing, queue: { enqueue: async () => {} } }, {
      ratePerSecond: 100,
      sleep: noSleep,
      onProgress: (tally) => progress.push(tally),
    });

    // Assess
    await expect(run).rejects.toBeInstanceOf(LedgerUnavailableError);
    expect(progress).toEqual([]);
    const fine = await ledgerWith('dead');
    await replayDeadDeliveries(selection, actor, { ledger: fine, queue: { enqueue: async () => {} } }, {
      ratePerSecond: 100,
      sleep: noSleep,
      onProgress: (tally) => progress.push(tally),
    });
    expect(progress).toEqual([{ matched: 1, replayed: 1, enqueueFailed: [], noLongerDead: 0, withoutEvent: 0 }]);
  });

  /** A ledger holding a dead row for each ID, dying 1 ms apart in the order given. */
  async function ledgerWithDead(ids: readonly string[]): Promise<MemoryLedger> {
    const ledger = new MemoryLedger({ now: () => NOW_MS });
    for (const [i, id] of ids.entries()) {
      const result = parseEvent(JSON.stringify({ id, shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' }));
      if (!result.ok) throw result.error;
      const at = NOW_MS + i;
      const { claimToken } = await ledger.claim({ event: result.value, endpoint: DEFAULT_ENDPOINT, owner: 'w1', nowMs: at, leaseMs: 30_000, policy: DEFAULT_RETRY_POLICY, retentionSeconds: 86_400 });
      await ledger.recordAttempt({
        eventId: id,
        endpoint: DEFAULT_ENDPOINT,
        claimToken,
        body: result.value.body,
        nowMs: at,
        attempt: { attempt: 1, at, outcome: 'rejected', status: 400, durationMs: 10 },
        outcome: { kind: 'rejected', status: 400, responseStart: 'no' },
        next: { state: 'dead', reason: 'rejected', detail: '400 no' },
      });
    }
    return ledger;
  }

  it('stops a bounded run at a page end once maxMatched matched, and its cursor continues without repeats or gaps', async () => {
    // Prepare
    const ids = ['evt_a', 'evt_b', 'evt_c', 'evt_d', 'evt_e'];
    const ledger = await ledgerWithDead(ids);
    const enqueued: string[] = [];
    const deps = { ledger, queue: { enqueue: async (body: string) => void enqueued.push((JSON.parse(body) as { id: string }).id) } };

    // Act
    const runs = [await replayDeadDeliveries(selection, actor, deps, { ratePerSecond: 100, sleep: noSleep, maxMatched: 2 })];
    while (runs.at(-1)!.cursor !== undefined && runs.length < 10) {
      runs.push(await replayDeadDeliveries(selection, actor, deps, { ratePerSecond: 100, sleep: noSleep, maxMatched: 2, cursor: runs.at(-1)!.cursor }));
    }

    // Assess
    expect(runs.map((r) => r.replayed)).toEqual([2, 2, 1]);
    expect(runs.map((r) => r.cursor === undefined)).toEqual([false, false, true]);
    expect(enqueued).toEqual(ids);
  });

  it('counts a bounded dry run likewise, and stops after maxRead rows read whether they matched or not', async () => {
    const ledger = await ledgerWithDead(['evt_a', 'evt_b', 'evt_c']);
    const deps = { ledger, queue: { enqueue: async () => {} } };

    const counted = await replayDeadDeliveries(selection, actor, deps, { ratePerSecond: 1, dryRun: true, maxMatched: 2 });
    const none = await replayDeadDeliveries({ ...selection, deadReason: 'exhausted' }, actor, deps, { ratePerSecond: 1, dryRun: true, maxMatched: 2, maxRead: 1 });

    expect(counted).toMatchObject({ matched: 2, replayed: 0, cursor: expect.any(String) });
    expect(none).toMatchObject({ matched: 0, cursor: expect.any(String) });
    expect((await ledger.get({ eventId: 'evt_a', endpoint: DEFAULT_ENDPOINT }))?.state).toBe('dead');
  });

  it('refuses a rate that is not above 0 and audit texts it cannot keep, before reading anything', async () => {
    const ledger = await ledgerWith('dead');
    const deps = { ledger, queue: { enqueue: async () => {} } };

    await expect(replayDeadDeliveries(selection, actor, deps, { ratePerSecond: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(replayDeadDeliveries(selection, { ...actor, operator: ' ' }, deps, { ratePerSecond: 1 })).rejects.toBeInstanceOf(ReplayInputError);
    expect((await ledger.get(key))?.state).toBe('dead');
  });
});
