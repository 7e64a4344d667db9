/**
 * The delivery use case over the in-memory ledger and a scripted receiver: the pure decision
 * logic under the ugly outcomes. The same flows run for real (DynamoDB emulator, HTTP on
 * loopback, killed processes) in the integration and end-to-end suites.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { deliver, type CrashPoint, type DeliverDeps } from '../../lib/deliver';
import { ReplayRefusedError } from '../../lib/ledger/errors';
import { DEFAULT_ENDPOINT } from '../../lib/ledger/ledger';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import type { AttemptOutcome } from '../../lib/outcome';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import type { AttemptResult, WebhookRequest, WebhookSender } from '../../lib/webhook/sender';

const T0 = Date.parse('2026-12-02T10:15:00Z');
const LEASE_MS = 30_000;

const event = (id = 'evt_42', status = 'delivered') =>
  JSON.stringify({ id, shipmentId: 'shp_1001', status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier: 'acme' } });

/** A receiver that dedupes by event ID, answering from a script of outcomes, one per request. */
class ScriptedReceiver implements WebhookSender {
  readonly seen: string[] = [];
  readonly applied = new Set<string>();
  constructor(private readonly script: AttemptOutcome[] = []) {}

  async send(request: WebhookRequest): Promise<AttemptResult> {
    this.seen.push(`${request.eventId}:${(JSON.parse(request.body) as { id: string }).id}`);
    const outcome = this.script.shift() ?? { kind: 'accepted', status: 200 };
    // A timeout after the request was written may still have been committed by the receiver.
    if (outcome.kind === 'accepted' || outcome.kind === 'unknown') this.applied.add(request.eventId);
    return { outcome, durationMs: 5 };
  }
}

class Crash extends Error {}

describe('Function: deliver', () => {
  let ledger: MemoryLedger;
  let nowMs: number;

  beforeEach(() => {
    ledger = new MemoryLedger({ now: () => nowMs });
    nowMs = T0;
  });

  const worker = (sender: WebhookSender, owner = 'worker-a', crashAt?: CrashPoint): DeliverDeps => ({
    ledger,
    sender,
    now: () => nowMs,
    owner,
    policy: DEFAULT_RETRY_POLICY,
    payloadLimitBytes: 65_536,
    leaseMs: LEASE_MS,
    retentionSeconds: 86_400,
    checkpoint: (point) => {
      if (point === crashAt) throw new Crash(point);
    },
  });
  const row = (eventId = 'evt_42') => ledger.get({ eventId, endpoint: DEFAULT_ENDPOINT });

  it('delivers a new event with one request and acknowledges the message', async () => {
    const receiver = new ScriptedReceiver();

    const result = await deliver({ body: event() }, worker(receiver));

    expect(result.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'delivered' });
    expect(receiver.seen).toEqual(['evt_42:evt_42']);
    expect(await row()).toMatchObject({ state: 'delivered', attempts: 1, lastOutcome: { kind: 'accepted' } });
  });

  it('retries a timeout after the receiver recorded the event with the same key, and ends delivered', async () => {
    // Prepare: the receiver commits the first request but the answer never arrives.
    const receiver = new ScriptedReceiver([{ kind: 'unknown', cause: 'timeout' }]);

    // Act
    const first = await deliver({ body: event() }, worker(receiver));
    nowMs += 30_000;
    const second = await deliver({ body: event() }, worker(receiver));

    // Assess
    expect(first.decision).toEqual({ action: 'retry', eventId: 'evt_42', afterSeconds: 30, why: 'unknown' });
    expect(second.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'delivered' });
    expect(receiver.seen).toEqual(['evt_42:evt_42', 'evt_42:evt_42']);
    expect([...receiver.applied]).toEqual(['evt_42']);
    expect(await row()).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it('does not send a second request for a duplicate message while the first is in flight', async () => {
    // Prepare: worker A holds the lease and dies before sending.
    const receiver = new ScriptedReceiver();
    await expect(deliver({ body: event() }, worker(receiver, 'worker-a', 'before-send'))).rejects.toThrow(Crash);

    // Act: the duplicate message reaches worker B while A's lease is live.
    nowMs += 1_000;
    const duplicate = await deliver({ body: event() }, worker(receiver, 'worker-b'));

    // Assess
    expect(duplicate.decision).toEqual({ action: 'retry', eventId: 'evt_42', afterSeconds: 29, why: 'in-flight' });
    expect(receiver.seen).toEqual([]);
  });

  it('acknowledges a duplicate message of a delivered event without sending', async () => {
    const receiver = new ScriptedReceiver();
    await deliver({ body: event() }, worker(receiver));

    const duplicate = await deliver({ body: event() }, worker(receiver, 'worker-b'));

    expect(duplicate.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'duplicate' });
    expect(receiver.seen).toHaveLength(1);
  });

  it('sends the same ID again after a crash between the response and the ledger write, and ends delivered', async () => {
    // Prepare: the receiver answered 200, then the worker died before recording it.
    const receiver = new ScriptedReceiver();
    await expect(deliver({ body: event() }, worker(receiver, 'worker-a', 'after-send'))).rejects.toThrow(Crash);
    expect(await row()).toMatchObject({ state: 'pending', attempts: 1 });

    // Act: the message returns after its visibility timeout, past the lease.
    nowMs += LEASE_MS + 1;
    const retry = await deliver({ body: event() }, worker(receiver, 'worker-b'));

    // Assess
    expect(retry.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'delivered' });
    expect(receiver.seen).toEqual(['evt_42:evt_42', 'evt_42:evt_42']);
    expect(receiver.applied.size).toBe(1);
    expect(await row()).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it.each([
    [404, 'no such shipment'],
    [410, 'gone'],
  ])('dead-letters a %i at once with the status attached', async (status, responseStart) => {
    const receiver = new ScriptedReceiver([{ kind: 'rejected', status, responseStart }]);

    const result = await deliver({ body: event() }, worker(receiver));

    const detail = `HTTP ${status}: ${responseStart}`;
    expect(result.decision).toEqual({ action: 'dead-letter', eventId: 'evt_42', reason: 'rejected', detail });
    expect(await row()).toMatchObject({ state: 'dead', attempts: 1, deadReason: 'rejected', deadDetail: detail });
    expect(receiver.seen).toHaveLength(1);
  });

  it('lets another worker reclaim an expired lease', async () => {
    const receiver = new ScriptedReceiver();
    await expect(deliver({ body: event() }, worker(receiver, 'worker-a', 'before-send'))).rejects.toThrow(Crash);

    nowMs += LEASE_MS;
    const reclaimed = await deliver({ body: event() }, worker(receiver, 'worker-b'));

    expect(reclaimed.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'delivered' });
    expect(receiver.seen).toEqual(['evt_42:evt_42']);
    expect(await row()).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it('does not let another worker take a live lease', async () => {
    const receiver = new ScriptedReceiver();
    await expect(deliver({ body: event() }, worker(receiver, 'worker-a', 'before-send'))).rejects.toThrow(Crash);

    nowMs += LEASE_MS - 1;
    const refused = await deliver({ body: event() }, worker(receiver, 'worker-b'));

    expect(refused.decision).toMatchObject({ action: 'retry', why: 'in-flight' });
    expect(receiver.seen).toEqual([]);
    expect(await row()).toMatchObject({ state: 'pending', attempts: 1, leaseOwner: 'worker-a' });
  });

  it('waits per the schedule, honouring a longer Retry-After', async () => {
    const receiver = new ScriptedReceiver([
      { kind: 'temporary', status: 503 },
      { kind: 'temporary', status: 429, retryAfterSeconds: 900 },
    ]);

    const first = await deliver({ body: event() }, worker(receiver));
    nowMs += 30_000;
    const second = await deliver({ body: event() }, worker(receiver));

    expect(first.decision).toMatchObject({ action: 'retry', afterSeconds: 30, why: 'temporary' });
    expect(second.decision).toMatchObject({ action: 'retry', afterSeconds: 900, why: 'temporary' });
    expect(await row()).toMatchObject({ state: 'pending', attempts: 2, nextAttemptAt: nowMs + 900_000 });
  });

  it('refuses to send before the next attempt is due', async () => {
    const receiver = new ScriptedReceiver([{ kind: 'temporary', status: 503 }]);
    await deliver({ body: event() }, worker(receiver));

    nowMs += 10_000;
    const early = await deliver({ body: event() }, worker(receiver, 'worker-b'));

    expect(early.decision).toEqual({ action: 'retry', eventId: 'evt_42', afterSeconds: 20, why: 'not-due' });
    expect(receiver.seen).toHaveLength(1);
  });

  it('dead-letters after the 6th attempt with the last outcome kept', async () => {
    // Prepare: every attempt fails; the 6th with a 502.
    const script: AttemptOutcome[] = [
      ...Array.from({ length: 5 }, () => ({ kind: 'temporary', status: 503 }) as const),
      { kind: 'temporary', status: 502 },
    ];
    const receiver = new ScriptedReceiver(script);

    // Act: each retry arrives when it is due.
    const decisions = [];
    for (let i = 0; i < 6; i++) {
      const { decision } = await deliver({ body: event() }, worker(receiver));
      decisions.push(decision);
      if (decision.action === 'retry') nowMs += decision.afterSeconds * 1000;
    }

    // Assess
    expect(decisions.map((d) => (d.action === 'retry' ? d.afterSeconds : d.action))).toEqual([
      30, 120, 600, 1800, 7200, 'dead-letter',
    ]);
    expect(decisions[5]).toEqual({
      action: 'dead-letter',
      eventId: 'evt_42',
      reason: 'exhausted',
      detail: '6 attempts; last: temporary (502)',
    });
    expect(await row()).toMatchObject({
      state: 'dead',
      attempts: 6,
      deadReason: 'exhausted',
      lastOutcome: { kind: 'temporary', status: 502 },
    });
    expect(receiver.seen).toHaveLength(6);
  });

  it('dead-letters a spent budget whose last worker died holding the lease', async () => {
    const policy = { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 };
    const receiver = new ScriptedReceiver();
    await expect(
      deliver({ body: event() }, { ...worker(receiver, 'worker-a', 'before-send'), policy }),
    ).rejects.toThrow(Crash);

    nowMs += LEASE_MS;
    const result = await deliver({ body: event() }, worker(receiver, 'worker-b'));

    expect(result.decision).toMatchObject({ action: 'dead-letter', reason: 'exhausted' });
    expect(receiver.seen).toEqual([]);
    expect(await row()).toMatchObject({ state: 'dead', deadReason: 'exhausted' });
  });

  it('replays a dead record with its ID and body, a fresh budget and one more replay', async () => {
    // Prepare
    const receiver = new ScriptedReceiver([{ kind: 'rejected', status: 400, responseStart: 'bad' }]);
    await deliver({ body: event() }, worker(receiver));
    const dead = await row();

    // Act
    nowMs += 60_000;
    const replayed = await ledger.replay({
      eventId: 'evt_42',
      endpoint: DEFAULT_ENDPOINT,
      operator: 'ops@example.com',
      reason: 'receiver fixed',
      nowMs,
    });
    const result = await deliver({ body: replayed.body ?? '' }, worker(receiver));

    // Assess
    expect(replayed).toMatchObject({ eventId: 'evt_42', state: 'pending', attempts: 0, replays: 1 });
    expect(replayed.body).toBe(dead?.body);
    expect(replayed.audit).toEqual([
      { at: nowMs, action: 'replay', operator: 'ops@example.com', reason: 'receiver fixed', id: expect.any(String) },
    ]);
    expect(result.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'delivered' });
    expect(receiver.seen).toEqual(['evt_42:evt_42', 'evt_42:evt_42']);
    expect(await row()).toMatchObject({ state: 'delivered', attempts: 1, replays: 1 });
    // Latency counts from the replay, not from the first admission a minute earlier.
    expect(result.attempt?.sinceStartMs).toBe(0);
  });

  it.each([
    ['pending', [{ kind: 'temporary', status: 503 }] as AttemptOutcome[]],
    ['delivered', [] as AttemptOutcome[]],
  ])('refuses to replay a %s record', async (state, script) => {
    await deliver({ body: event() }, worker(new ScriptedReceiver(script)));

    const replay = ledger.replay({ eventId: 'evt_42', endpoint: DEFAULT_ENDPOINT, operator: 'ops', reason: 'why', nowMs });

    await expect(replay).rejects.toThrow(ReplayRefusedError);
    await expect(replay).rejects.toMatchObject({ refusal: 'not-dead' });
    expect(await row()).toMatchObject({ state, replays: 0 });
  });

  it('still ends delivered when a 2xx arrives after the attempt timed out and was counted', async () => {
    // Prepare: worker A's request is slow; its lease lapses and worker B claims a second attempt.
    let answerA!: (result: AttemptResult) => void;
    const slow: WebhookSender = { send: () => new Promise((resolve) => (answerA = resolve)) };
    const sendingA = deliver({ body: event() }, worker(slow, 'worker-a'));
    await new Promise((resolve) => setImmediate(resolve));
    nowMs += LEASE_MS;
    let answerB!: (result: AttemptResult) => void;
    const slowB: WebhookSender = { send: () => new Promise((resolve) => (answerB = resolve)) };
    const sendingB = deliver({ body: event() }, worker(slowB, 'worker-b'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(await row()).toMatchObject({ attempts: 2, leaseOwner: 'worker-b' });

    // Act: B times out locally; then A's late 2xx arrives.
    answerB({ outcome: { kind: 'unknown', cause: 'timeout' }, durationMs: 10_000 });
    const b = await sendingB;
    answerA({ outcome: { kind: 'accepted', status: 200 }, durationMs: 40_000 });
    const a = await sendingA;

    // Assess
    expect(b.decision).toMatchObject({ action: 'retry', why: 'unknown' });
    expect(a.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'delivered' });
    expect(await row()).toMatchObject({ state: 'delivered', attempts: 2 });
    // B's message comes back later and is acknowledged as a duplicate, with no request.
    nowMs += 60_000;
    const later = await deliver({ body: event() }, worker(new ScriptedReceiver(), 'worker-b'));
    expect(later.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'duplicate' });
  });

  it('dead-letters an identity conflict and leaves the existing row exactly as it was', async () => {
    const receiver = new ScriptedReceiver();
    await deliver({ body: event() }, worker(receiver));
    const before = await row();

    const conflict = await deliver({ body: event('evt_42', 'returned') }, worker(receiver));

    expect(conflict.decision).toEqual({
      action: 'dead-letter',
      eventId: 'evt_42',
      reason: 'identity-conflict',
      detail: 'event evt_42 was already admitted with other content',
    });
    expect(await row()).toEqual(before);
    expect(receiver.seen).toHaveLength(1);
  });

  it('treats the same content in other JSON formatting as a duplicate, not a conflict', async () => {
    const receiver = new ScriptedReceiver();
    await deliver({ body: event() }, worker(receiver));
    const reordered = JSON.stringify({
      status: 'delivered',
      data: { carrier: 'acme' },
      occurredAt: '2026-12-02T10:15:00Z',
      shipmentId: 'shp_1001',
      id: 'evt_42',
    });

    const duplicate = await deliver({ body: `  ${reordered}\n` }, worker(receiver));

    expect(duplicate.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'duplicate' });
  });

  it('dead-letters an invalid message with a readable ID and marks it dead, sending nothing', async () => {
    const receiver = new ScriptedReceiver();
    const body = JSON.stringify({ id: 'evt_7', shipmentId: 'shp_1', status: 'lost', occurredAt: '2026-12-02T10:15:00Z' });

    const result = await deliver({ body }, worker(receiver));

    expect(result.decision).toMatchObject({ action: 'dead-letter', eventId: 'evt_7', reason: 'invalid' });
    expect(result.decision.action === 'dead-letter' && result.decision.detail).toMatch(/^status must be one of/);
    expect(await row('evt_7')).toMatchObject({ state: 'dead', deadReason: 'invalid', attempts: 0 });
    expect(receiver.seen).toEqual([]);
  });

  it('delivers the valid event once when an invalid message with its ID came first, keeping the invalid note', async () => {
    // Prepare: an invalid message with a readable ID, then the valid event with that ID.
    const receiver = new ScriptedReceiver();
    const invalid = JSON.stringify({ id: 'evt_42', shipmentId: 'shp_1', status: 'lost', occurredAt: '2026-12-02T10:15:00Z' });
    await deliver({ body: invalid }, worker(receiver));
    nowMs += 1000;

    // Act
    const result = await deliver({ body: event() }, worker(receiver));
    const again = await deliver({ body: event() }, worker(receiver, 'worker-b'));

    // Assess
    expect(result.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'delivered' });
    expect(again.decision).toEqual({ action: 'ack', eventId: 'evt_42', why: 'duplicate' });
    expect(receiver.seen).toEqual(['evt_42:evt_42']);
    const delivered = await row();
    expect(delivered).toMatchObject({ state: 'delivered', attempts: 1, createdAt: T0 + 1000 });
    expect(delivered?.audit).toEqual([
      { at: T0, action: 'invalid-message', operator: 'consumer', reason: expect.stringMatching(/^status must be one of/) },
    ]);
  });

  it('dead-letters a body that is not JSON without writing a row', async () => {
    const result = await deliver({ body: '{"id": "evt_1",' }, worker(new ScriptedReceiver()));

    expect(result.decision).toEqual({
      action: 'dead-letter',
      eventId: undefined,
      reason: 'invalid',
      detail: 'message body is not JSON',
    });
    expect((await ledger.listByState('dead')).records).toEqual([]);
  });
});
