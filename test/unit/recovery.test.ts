/**
 * Stuck-work recovery's selection rules (lib/recovery.ts) on the memory ledger and a fake queue:
 * which pending rows are enqueued again, which are left alone, and how a run is bounded.
 */
import { describe, expect, it } from 'vitest';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import type { DeliveryKey } from '../../lib/ledger/ledger';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { createLogger, SERVICE_NAME } from '../../lib/observability';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { type EndpointMessage, type RedrivenMessage, type RedriveQueue } from '../../lib/queue/queue';
import { QueueUnavailableError } from '../../lib/errors';
import { isStranded, MAX_RECOVERIES, recoveredMetricDocument, recoverStuck, recoveryGraceMs, sendBackRedriven, type RecoveryDeps } from '../../lib/recovery';
import { recoveryIntervalMs } from '../../sandbox/recovery-timer';

const T0 = 1_800_000_000_000;
const LEASE_MS = 30_000;
const GRACE_MS = recoveryGraceMs(180, 60_000); // 240 s
const WAIT_MS = 60_000;

function event(id: string): ParsedEvent {
  const result = parseEvent(JSON.stringify({ id, shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' }));
  if (!result.ok) throw result.error;
  return result.value;
}

class FakeQueue {
  readonly sent: EndpointMessage[] = [];
  failNext = false;
  async fanOut(messages: readonly EndpointMessage[]): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new QueueUnavailableError('fan-out');
    }
    this.sent.push(...messages);
  }
}

const silent = createLogger({ service: SERVICE_NAME, write: () => {} });

/** A claim of `id` at `atMs` (attempt counted, leased). */
async function claim(ledger: MemoryLedger, id: string, atMs: number, endpoint = 'default') {
  return ledger.claim({
    event: event(id),
    endpoint,
    owner: 'w1',
    nowMs: atMs,
    leaseMs: LEASE_MS,
    policy: DEFAULT_RETRY_POLICY,
    retentionSeconds: 30 * 86_400,
  });
}

/**
 * `id` dead at `atMs` (a 400), replayed at once (so listed as pending, holding its body), then
 * claimed and failed (503), due again WAIT_MS later: pending and listed. (A failed attempt alone
 * lists nothing: a delivery between attempts is its message's to bring back.)
 */
async function failedOnce(ledger: MemoryLedger, id: string, atMs: number, endpoint = 'default'): Promise<DeliveryKey> {
  await rejected(ledger, id, atMs - 10, endpoint);
  await ledger.replay({ eventId: id, endpoint, operator: 'alice', reason: 'fixed', nowMs: atMs });
  await failed(ledger, id, atMs, endpoint);
  return { eventId: id, endpoint };
}

/** A ledger read at `nowMs` holding `count` rows failed once (`evt_0` at T0, `evt_1` at T0 + 1, …), and an empty queue. */
async function failedRows(count: number, nowMs: number): Promise<{ ledger: MemoryLedger; queue: FakeQueue }> {
  const ledger = new MemoryLedger({ now: () => nowMs });
  for (let i = 0; i < count; i++) await failedOnce(ledger, `evt_${i}`, T0 + i);
  return { ledger, queue: new FakeQueue() };
}

type AttemptRecord = Parameters<MemoryLedger['recordAttempt']>[0];

/** `id` claimed at `atMs` and answered `status` 10 ms later, as `outcome`, leaving it `next`. */
async function answered(
  ledger: MemoryLedger,
  id: string,
  atMs: number,
  endpoint: string,
  { status, outcome, next }: { status: number; outcome: AttemptRecord['outcome']; next: AttemptRecord['next'] },
): Promise<void> {
  const { claimToken } = await claim(ledger, id, atMs, endpoint);
  await ledger.recordAttempt({
    eventId: id,
    endpoint,
    claimToken,
    body: event(id).body,
    nowMs: atMs + 10,
    attempt: { attempt: 1, at: atMs, outcome: outcome.kind as AttemptRecord['attempt']['outcome'], status, durationMs: 10 },
    outcome,
    next,
  });
}

/** `id` claimed at `atMs` and answered 400 10 ms later: dead. */
function rejected(ledger: MemoryLedger, id: string, atMs: number, endpoint = 'default'): Promise<void> {
  return answered(ledger, id, atMs, endpoint, {
    status: 400,
    outcome: { kind: 'rejected', status: 400, responseStart: 'no' },
    next: { state: 'dead', reason: 'rejected', detail: '400 no' },
  });
}

/** `id` claimed at `atMs` and answered 503 10 ms later: pending, due again WAIT_MS after. */
function failed(ledger: MemoryLedger, id: string, atMs: number, endpoint = 'default'): Promise<void> {
  return answered(ledger, id, atMs, endpoint, {
    status: 503,
    outcome: { kind: 'temporary', status: 503 },
    next: { state: 'pending', nextAttemptAt: atMs + 10 + WAIT_MS },
  });
}

function deps(ledger: MemoryLedger, queue: FakeQueue, nowMs: number, extra: Partial<RecoveryDeps> = {}): RecoveryDeps {
  return { ledger, queue, now: () => nowMs, graceMs: GRACE_MS, limit: 1000, logger: silent, ...extra };
}

/** When a row failed at T0 is first stranded: its due time plus the grace. */
const STRANDED_AT = T0 + 10 + WAIT_MS + GRACE_MS;

describe('Function: recoverStuck', () => {
  it('enqueues a pending row quiet past its due time plus the grace, once, as a message for its endpoint', async () => {
    // Prepare
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_1', T0, 'billing');

    // Act
    const run = await recoverStuck(deps(ledger, queue, STRANDED_AT));

    // Assess
    expect(queue.sent).toEqual([{ body: event('evt_1').body, endpoint: 'billing' }]);
    expect(run).toEqual({ examined: 1, recovered: 1, orphaned: 0, held: 0, queueFailed: false });
  });

  it('leaves a row alone until its due time plus the grace has passed', async () => {
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_1', T0);

    const run = await recoverStuck(deps(ledger, queue, STRANDED_AT - 1));

    expect(queue.sent).toEqual([]);
    expect(run.recovered).toBe(0);
  });

  it('leaves a row alone while a claim holds its lease', async () => {
    // Prepare: failed long ago, then claimed again just now (its message is being worked on).
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_1', T0);
    const claimedAt = STRANDED_AT + 10 * GRACE_MS;
    await claim(ledger, 'evt_1', claimedAt);

    // Act
    const run = await recoverStuck(deps(ledger, queue, claimedAt + LEASE_MS - 1));

    // Assess: leased, so left alone, however long ago it was due.
    expect(queue.sent).toEqual([]);
    expect(run).toMatchObject({ examined: 1, recovered: 0 });
  });

  it('counts a claim that never settled from its lease expiry: enqueued only a grace after the lease lapsed', async () => {
    // Prepare: the second claim's worker died mid-send (no outcome recorded); its message comes
    // back one visibility timeout after the receive, so not before then.
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_1', T0);
    const claimedAt = T0 + 10 + WAIT_MS;
    await claim(ledger, 'evt_1', claimedAt);
    const lapsedPlusGrace = claimedAt + LEASE_MS + GRACE_MS;

    // Act
    await recoverStuck(deps(ledger, queue, lapsedPlusGrace - 1));
    const early = queue.sent.length;
    await recoverStuck(deps(ledger, queue, lapsedPlusGrace));

    // Assess
    expect(early).toBe(0);
    expect(queue.sent.map((m) => m.body)).toEqual([event('evt_1').body]);
  });

  it('enqueues a replayed row whose enqueue failed, a grace after the replay', async () => {
    // Prepare: dead, replayed at R (the replay's own enqueue lost).
    const ledger = new MemoryLedger({ now: () => T0 });
    const queue = new FakeQueue();
    await rejected(ledger, 'evt_r', T0);
    const replayedAt = T0 + 3_600_000;
    await ledger.replay({ eventId: 'evt_r', endpoint: 'default', operator: 'alice', reason: 'fixed', nowMs: replayedAt });

    // Act
    await recoverStuck(deps(ledger, queue, replayedAt + GRACE_MS - 1));
    const early = queue.sent.length;
    await recoverStuck(deps(ledger, queue, replayedAt + GRACE_MS));

    // Assess
    expect(early).toBe(0);
    expect(queue.sent).toEqual([{ body: event('evt_r').body, endpoint: 'default' }]);
  });

  it('does not see a row in its attempts (never listed): its message, or SQS\'s redrive of it, brings it back', async () => {
    // Prepare: one claimed once whose worker died, never settled; one that failed an attempt.
    const ledger = new MemoryLedger({ now: () => T0 });
    const queue = new FakeQueue();
    await claim(ledger, 'evt_first', T0);
    await failed(ledger, 'evt_retrying', T0);

    // Act
    const run = await recoverStuck(deps(ledger, queue, T0 + 100 * GRACE_MS));

    // Assess
    expect(run).toEqual({ examined: 0, recovered: 0, orphaned: 0, held: 0, queueFailed: false });
    expect(queue.sent).toEqual([]);
  });

  it('reads at most `limit` rows per run and carries the cursor to the next, starting over after the end, where a row it sent is read again only a grace later', async () => {
    // Prepare: five stranded rows.
    const nowMs = STRANDED_AT + 100;
    const { ledger, queue } = await failedRows(5, nowMs);

    // Act
    const first = await recoverStuck(deps(ledger, queue, nowMs, { limit: 2 }));
    const second = await recoverStuck(deps(ledger, queue, nowMs, { limit: 2, ...(first.cursor ? { cursor: first.cursor } : {}) }));
    const third = await recoverStuck(deps(ledger, queue, nowMs, { limit: 2, ...(second.cursor ? { cursor: second.cursor } : {}) }));
    const again = await recoverStuck(deps(ledger, queue, nowMs, { limit: 2 }));
    const fourth = await recoverStuck(deps(ledger, queue, nowMs + GRACE_MS + 1, { limit: 2 }));

    // Assess: oldest first, two per run, the end reached on the third; from the start again, nothing
    // before a grace has passed since they were sent (each was listed anew then), then the oldest.
    expect([first, second, third].map((run) => run.examined)).toEqual([2, 2, 1]);
    expect(first.cursor).toBeDefined();
    expect(second.cursor).toBeDefined();
    expect(third.cursor).toBeUndefined();
    expect(again.examined).toBe(0);
    expect(queue.sent.map((m) => JSON.parse(m.body).id)).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4', 'evt_0', 'evt_1']);
    expect(fourth.examined).toBe(2);
  });

  it('does not read rows that entered the listing less than the grace ago', async () => {
    // Prepare: one row listed long ago (stranded), one listed a moment ago.
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_old', T0);
    await failedOnce(ledger, 'evt_new', STRANDED_AT - 1000);

    // Act
    const run = await recoverStuck(deps(ledger, queue, STRANDED_AT));

    // Assess
    expect(run).toMatchObject({ examined: 1, recovered: 1 });
    expect(queue.sent.map((m) => JSON.parse(m.body).id)).toEqual(['evt_old']);
  });

  it('stops at a page the queue refused, keeping the cursor before it, and the next run enqueues it', async () => {
    // Prepare
    const nowMs = STRANDED_AT + 10;
    const { ledger, queue } = await failedRows(3, nowMs);
    const first = await recoverStuck(deps(ledger, queue, nowMs, { limit: 1 }));
    queue.failNext = true;

    // Act
    const refused = await recoverStuck(deps(ledger, queue, nowMs, { limit: 1, cursor: first.cursor! }));
    const again = await recoverStuck(deps(ledger, queue, nowMs, { limit: 1, ...(refused.cursor ? { cursor: refused.cursor } : {}) }));

    // Assess
    expect(refused).toMatchObject({ recovered: 0, queueFailed: true, cursor: first.cursor });
    expect(again).toMatchObject({ recovered: 1, queueFailed: false });
    expect(queue.sent.map((m) => JSON.parse(m.body).id)).toEqual(['evt_0', 'evt_1']);
  });

  it('leaves alone a stranded row whose endpoint left the registry, counting and logging it', async () => {
    // Prepare: two stranded rows, one of an endpoint since removed.
    const lines: string[] = [];
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_kept', T0, 'billing');
    await failedOnce(ledger, 'evt_orphan', T0, 'removed');
    let reads = 0;
    const endpoints = async () => {
      reads += 1;
      return new Map([
        ['billing', {}],
        ['default', {}],
      ]);
    };

    // Act
    const run = await recoverStuck(
      deps(ledger, queue, STRANDED_AT, { endpoints, logger: createLogger({ service: SERVICE_NAME, write: (line) => lines.push(line) }) }),
    );

    // Assess: the registry read once for the run.
    expect(queue.sent.map((m) => m.endpoint)).toEqual(['billing']);
    expect(run).toMatchObject({ recovered: 1, orphaned: 1 });
    expect(reads).toBe(1);
    expect(lines.map((line) => JSON.parse(line))).toContainEqual(
      expect.objectContaining({ level: 'warn', message: 'not recovered: endpoint removed', eventId: 'evt_orphan', endpoint: 'removed' }),
    );
  });

  it('does not read the registry when nothing is stranded', async () => {
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    await failedOnce(ledger, 'evt_1', T0);
    let reads = 0;

    await recoverStuck(deps(ledger, new FakeQueue(), STRANDED_AT - 1, { endpoints: async () => (reads++, new Map()) }));

    expect(reads).toBe(0);
  });

  it("leaves a paused endpoint's rows alone until the pause ends plus the grace (the consumer holds their messages until then)", async () => {
    // Prepare: stranded by its own times, but its endpoint paused (a 429) until well after.
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_held', T0, 'slow');
    const pausedUntil = STRANDED_AT + 3_600_000;
    const endpoints = async () => new Map([['slow', { pausedUntil }]]);

    // Act
    const during = await recoverStuck(deps(ledger, queue, pausedUntil + GRACE_MS - 1, { endpoints }));
    const sentDuring = queue.sent.length;
    const after = await recoverStuck(deps(ledger, queue, pausedUntil + GRACE_MS, { endpoints }));

    // Assess
    expect(during).toMatchObject({ recovered: 0, held: 1 });
    expect(sentDuring).toBe(0);
    expect(after).toMatchObject({ recovered: 1, held: 0 });
  });

  it('is safe to run twice at once: each run may enqueue a row, no more', async () => {
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_1', T0);

    await Promise.all([recoverStuck(deps(ledger, queue, STRANDED_AT)), recoverStuck(deps(ledger, queue, STRANDED_AT))]);

    // Each run enqueues it once: two messages, of which the claim lets one send at a time.
    expect(queue.sent.map((m) => JSON.parse(m.body).id)).toEqual(['evt_1', 'evt_1']);
  });

  it('refuses a limit or grace that is not a whole number, naming it', async () => {
    const ledger = new MemoryLedger();
    const queue = new FakeQueue();

    await expect(recoverStuck(deps(ledger, queue, T0, { limit: 0 }))).rejects.toThrow(/^limit must be/);
    await expect(recoverStuck(deps(ledger, queue, T0, { graceMs: 1.5 }))).rejects.toThrow(/^graceMs must be/);
  });

  it('logs each delivery it enqueues by event ID and endpoint, and never the body', async () => {
    const lines: string[] = [];
    const ledger = new MemoryLedger({ now: () => STRANDED_AT });
    const queue = new FakeQueue();
    await failedOnce(ledger, 'evt_1', T0);

    await recoverStuck(deps(ledger, queue, STRANDED_AT, { logger: createLogger({ service: SERVICE_NAME, write: (line) => lines.push(line) }) }));

    expect(lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({ level: 'info', message: 'recovered', eventId: 'evt_1', endpoint: 'default', attempts: 1 }),
    ]);
    expect(lines.join('\n')).not.toContain('shp_1');
  });
});

describe('Function: isStranded', () => {
  it('is false for rows that are not pending', async () => {
    const ledger = new MemoryLedger({ now: () => T0 });
    const { claimToken } = await claim(ledger, 'evt_d', T0);
    await ledger.recordAttempt({
      eventId: 'evt_d',
      endpoint: 'default',
      claimToken,
      body: event('evt_d').body,
      nowMs: T0 + 10,
      attempt: { attempt: 1, at: T0, outcome: 'accepted', status: 200, durationMs: 10 },
      outcome: { kind: 'accepted', status: 200 },
      next: { state: 'delivered' },
    });

    const row = (await ledger.get({ eventId: 'evt_d', endpoint: 'default' }))!;

    expect(isStranded(row, T0 + 100 * GRACE_MS, GRACE_MS)).toBe(false);
  });
});

describe('Function: recoveredMetricDocument', () => {
  it('is an EMF document of the Recovered and Resumed counts in the Handoff namespace under the Service dimension', () => {
    const document = JSON.parse(recoveredMetricDocument(3, T0, 7));

    expect(document).toEqual({
      _aws: {
        Timestamp: T0,
        CloudWatchMetrics: [
          {
            Namespace: 'Handoff',
            Dimensions: [['Service']],
            Metrics: [
              { Name: 'Recovered', Unit: 'Count' },
              { Name: 'Resumed', Unit: 'Count' },
            ],
          },
        ],
      },
      Service: 'handoff',
      Recovered: 3,
      Resumed: 7,
    });
  });
});

describe('Function: recoveryIntervalMs (the sandbox timer)', () => {
  it('is 5000 ms unless HANDOFF_RECOVERY_INTERVAL_MS says otherwise', () => {
    expect(recoveryIntervalMs({})).toBe(5000);
    expect(recoveryIntervalMs({ HANDOFF_RECOVERY_INTERVAL_MS: '' })).toBe(5000);
    expect(recoveryIntervalMs({ HANDOFF_RECOVERY_INTERVAL_MS: '500' })).toBe(500);
  });

  it.each(['0', '99', '3600001', '1.5', 'soon'])('refuses %j, naming the variable', (raw) => {
    expect(() => recoveryIntervalMs({ HANDOFF_RECOVERY_INTERVAL_MS: raw })).toThrow(
      expect.objectContaining({ name: 'ConfigError', variable: 'HANDOFF_RECOVERY_INTERVAL_MS' }),
    );
  });
});

/** A redrive queue of `waiting` messages, handing out at most `max` per receive, recording where each went. */
class FakeRedriveQueue implements RedriveQueue {
  readonly sentBack: RedrivenMessage[] = [];
  readonly gaveUp: RedrivenMessage[] = [];
  receives = 0;
  constructor(readonly waiting: RedrivenMessage[]) {}
  async receive(max: number): Promise<RedrivenMessage[]> {
    this.receives += 1;
    return this.waiting.splice(0, max);
  }
  async sendBack(messages: readonly RedrivenMessage[]): Promise<void> {
    this.sentBack.push(...messages);
  }
  async giveUp(messages: readonly RedrivenMessage[]): Promise<void> {
    this.gaveUp.push(...messages);
  }
}

describe('Function: sendBackRedriven', () => {
  it(`sends back each message recovered fewer than ${MAX_RECOVERIES} times, gives up on the others, until the queue is empty`, async () => {
    // Prepare
    const messages = Array.from({ length: 25 }, (_, i) => ({ eventId: `evt_${i}`, recoveries: i % 5 === 0 ? MAX_RECOVERIES : i % MAX_RECOVERIES }));
    const redrive = new FakeRedriveQueue([...messages]);

    // Act
    const run = await sendBackRedriven({ redrive, limit: 1000, logger: silent });

    // Assess
    expect(run).toEqual({ sentBack: 20, gaveUp: 5, queueFailed: false });
    expect(redrive.gaveUp.map((m) => m.eventId)).toEqual(['evt_0', 'evt_5', 'evt_10', 'evt_15', 'evt_20']);
    expect(redrive.sentBack.every((m) => m.recoveries < MAX_RECOVERIES)).toBe(true);
    expect(redrive.receives).toBe(4);
  });

  it('takes at most `limit` messages in a run, leaving the rest for the next', async () => {
    const redrive = new FakeRedriveQueue(Array.from({ length: 25 }, (_, i) => ({ eventId: `evt_${i}`, recoveries: 0 })));

    const run = await sendBackRedriven({ redrive, limit: 12, logger: silent });

    expect(run.sentBack).toBe(12);
    expect(redrive.waiting).toHaveLength(13);
  });
});
