/**
 * Per-shipment ordering end to end (docs/contract.md §13), in the sandbox, with loopback receivers
 * built on the receiver kit:
 *
 * | endpoint    | ordering     | onDead   | subscribes to            | receiver                                  |
 * |-------------|--------------|----------|--------------------------|-------------------------------------------|
 * | `ordered`   | per-shipment | continue | every event, lane `main` | 503s, timeouts after commit; one 400      |
 * | `held`      | per-shipment | hold     | every event, lane `hold` | one 400                                   |
 * | `unordered` | none         | continue | every event              | some 503s                                 |
 *
 * 50 shipments of 5 events each (lane `main`): 25 sent to the ordered intake (the FIFO queue,
 * grouped by shipment, deduplicated by event ID) each in a shuffled order of its own, which is
 * their admission order; 25 to the standard intake, all 125 messages shuffled together, whose
 * admission order is the numbers the shipments' heads gave them (the rows' `sequence`). One more
 * shipment in lane `main` has its third event rejected by `ordered` (dead, `continue`); one in lane
 * `hold` has its second rejected by `held` (dead, `hold`).
 *
 * Proven: at `ordered`, each shipment's events arrive in admission order with `webhook-sequence`
 * 1..5, each applied once, and no request for an event comes before the last request for the event
 * before it, which is the one that delivered it; `unordered` gets every event once, no sequence; the
 * rejected event with `continue` is dead-lettered `ordering=continued` and the next ones follow; with
 * `hold` it is dead-lettered `ordering=held` and its shipment's later events wait unsent (no attempt)
 * after everything else has drained, until `handoff replay` of it is delivered: then they follow,
 * in order.
 *
 * Timings shortened: waits of 1 s, 1 s attempts.
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../lib/config';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { DynamoDbShipmentHeads } from '../../lib/ledger/dynamodb-shipment-heads';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { runHandoff, type CliRun } from '../helpers/cli';
import { startTestReceiver, type ReceivedRequest, type ScriptedResponse, type TestReceiver } from '../helpers/receiver';
import { mulberry32 } from '../helpers/prng';
import type { SandboxProcess } from '../helpers/sandbox';
import { useSandboxProcess } from '../helpers/sandbox-suite';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';

const SHIPMENTS = 50;
const EVENTS_PER_SHIPMENT = 5;
const STATUSES = ['label_created', 'packed', 'in_transit', 'out_for_delivery', 'delivered'] as const;
/** Generous: a loaded machine (2 cores shared) has taken 60 s for what takes 30 s alone. */
const SETTLE_MS = 80_000;
/** A test settles, then drains the queues: each may take SETTLE_MS. */
const TEST_TIMEOUT_MS = 2 * SETTLE_MS + 20_000;

/** Deterministic (mulberry32), so a failure can be replayed exactly. */
const random = mulberry32(12);

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

interface Shipment {
  readonly id: string;
  readonly intake: 'ordered' | 'standard';
  /** Its event IDs, in the order sent (for the ordered intake: its admission order). */
  readonly sent: readonly string[];
}

function eventId(shipment: number, k: number): string {
  return `evt_e2eo_${String(shipment).padStart(2, '0')}_${k}`;
}

function body(id: string, shipmentId: string, k: number, lane: string): string {
  return JSON.stringify({ id, shipmentId, status: STATUSES[k - 1], occurredAt: '2026-12-03T08:30:00Z', data: { lane } });
}

const shipments: Shipment[] = Array.from({ length: SHIPMENTS }, (_, s) => {
  const ids = Array.from({ length: EVENTS_PER_SHIPMENT }, (_, k) => eventId(s, k + 1));
  return { id: `shp_e2eo_${String(s).padStart(2, '0')}`, intake: s < SHIPMENTS / 2 ? 'ordered' : 'standard', sent: shuffled(ids) };
});
/** The shipment whose third event `ordered` rejects, and the one whose second `held` rejects. */
const CONTINUED = { id: 'shp_e2eo_continued', sent: [1, 2, 3, 4, 5].map((k) => `evt_e2eo_c_${k}`) };
const HELD = { id: 'shp_e2eo_held', sent: [1, 2, 3, 4, 5].map((k) => `evt_e2eo_h_${k}`) };

const receivers = {} as Record<'ordered' | 'held' | 'unordered', TestReceiver>;
let sandbox: SandboxProcess;
let clients: SandboxClients;
/** Faults scripted at `ordered`, by kind: to show the mix was met. */
const faults = { '503': 0, 'commit-then-hang': 0, '503, commit-then-hang': 0 };

useSandboxProcess(
  async () => {
    receivers.ordered = await startTestReceiver();
    receivers.held = await startTestReceiver();
    receivers.unordered = await startTestReceiver();
    for (const shipment of shipments) {
      for (const id of shipment.sent) {
        const draw = random();
        const script: ScriptedResponse[] =
          draw < 0.2 ? [503] : draw < 0.3 ? ['commit-then-hang'] : draw < 0.35 ? [503, 'commit-then-hang'] : [];
        if (script.length > 0) {
          receivers.ordered.respondTo(id, ...script);
          faults[script.join(', ') as keyof typeof faults] += 1;
        }
        if (random() < 0.15) receivers.unordered.respondTo(id, 503);
      }
    }
    receivers.ordered.respondTo(CONTINUED.sent[2]!, { status: 422, body: 'unknown status' });
    receivers.held.respondTo(HELD.sent[1]!, { status: 400, body: 'unknown status' });
    const endpoints: EndpointFields[] = [
      { name: 'ordered', url: receivers.ordered.url, eventTypes: ['*'], match: { 'data.lane': ['main'] }, ordering: 'per-shipment', onDead: 'continue' },
      { name: 'held', url: receivers.held.url, eventTypes: ['*'], match: { 'data.lane': ['hold'] }, ordering: 'per-shipment', onDead: 'hold' },
      { name: 'unordered', url: receivers.unordered.url, eventTypes: ['*'] },
    ];
    return {
      endpoints,
      // Verbose: the workers' delivery lines on stderr, to count the events that waited for their turn.
      env: { HANDOFF_RETRY_SCHEDULE: '1,1,1,1,1', HANDOFF_MAX_ATTEMPTS: '6', HANDOFF_ATTEMPT_TIMEOUT_MS: '1000', HANDOFF_SANDBOX_VERBOSE: '1' },
    };
  },
  (started) => ({ sandbox, clients } = started),
  async () => {
    for (const receiver of Object.values(receivers)) await receiver?.close();
  },
);

/** Sends one shipment's events to the ordered intake, in the order given, as one batch. */
async function sendOrdered(shipmentId: string, bodies: readonly { id: string; body: string }[]): Promise<void> {
  const { Failed = [] } = await clients.sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: sandbox.ready.orderedQueueUrl,
      Entries: bodies.map(({ id, body }, i) => ({ Id: String(i), MessageBody: body, MessageGroupId: shipmentId, MessageDeduplicationId: id })),
    }),
  );
  if (Failed.length > 0) throw new Error(`SendMessageBatch refused ${Failed.length} message(s): ${Failed[0]?.Code}`);
}

function kOf(id: string): number {
  return Number(id.slice(id.lastIndexOf('_') + 1));
}

function handoff(args: readonly string[]): Promise<CliRun> {
  return runHandoff(args, sandbox.stateFile);
}

/** Rows by `eventId endpoint`, from one scan. */
async function rowsByKey(): Promise<Map<string, DeliveryRecord>> {
  return new Map((await clients.scanLedger()).map((row) => [`${row.eventId} ${row.endpoint}`, row]));
}

/** Waits until each of these deliveries is in the state wanted (one scan per look). */
async function settle(wanted: readonly (readonly [eventId: string, endpoint: string, state: DeliveryRecord['state']])[]): Promise<Map<string, DeliveryRecord>> {
  let last = new Map<string, DeliveryRecord>();
  const missing = () => wanted.filter(([id, endpoint, state]) => last.get(`${id} ${endpoint}`)?.state !== state);
  return eventually(
    `${wanted.length} deliveries to settle`,
    async () => {
      last = await rowsByKey();
      return missing().length === 0 ? last : undefined;
    },
    {
      timeoutMs: SETTLE_MS,
      intervalMs: 500,
      describe: () =>
        `${missing().length} not there, e.g. ${missing()
          .slice(0, 5)
          .map(([id, endpoint]) => `${id} → ${endpoint}: ${last.get(`${id} ${endpoint}`)?.state ?? 'no row'}`)
          .join('; ')}`,
    },
  );
}

async function queuesDrain(): Promise<void> {
  const depth = async () => (await clients.queueDepth()) + (await clients.queueDepth(sandbox.ready.orderedQueueUrl));
  await eventually('both intakes and the delivery queue to drain', async () => (await depth()) === 0, {
    timeoutMs: SETTLE_MS,
    describe: async () => `${await depth()} message(s)`,
  });
}

function sequenceOf(request: ReceivedRequest): string | undefined {
  const header = request.headers['webhook-sequence'];
  return typeof header === 'string' ? header : undefined;
}

/** A request the kit answered with a 2xx: the one after which its event is delivered. */
function answered2xx(request: ReceivedRequest): boolean {
  const status = typeof request.answer === 'number' ? request.answer : typeof request.answer === 'object' ? request.answer.status : undefined;
  return status !== undefined && status >= 200 && status < 300;
}

/**
 * Checks one shipment's requests at an ordered endpoint against its admission order: each event's
 * requests carry its position, all come after the last request for the event before it, which the
 * receiver answered 2xx; and each event was applied once, in that order.
 */
function expectInOrder(receiver: TestReceiver, admission: readonly string[]): void {
  const requests = receiver.requests.filter((r) => admission.includes(String(r.eventId)));
  admission.forEach((id, i) => {
    const own = requests.filter((r) => r.eventId === id);
    expect(own.length, `requests for ${id}`).toBeGreaterThan(0);
    expect(new Set(own.map(sequenceOf)), `webhook-sequence of ${id}`).toEqual(new Set([String(i + 1)]));
    if (i === 0) return;
    const before = requests.filter((r) => r.eventId === admission[i - 1]);
    const lastBefore = requests.lastIndexOf(before.at(-1)!);
    expect(requests.indexOf(own[0]!), `${id} sent before ${admission[i - 1]} was delivered`).toBeGreaterThan(lastBefore);
    expect(answered2xx(before.at(-1)!), `the last request for ${admission[i - 1]} delivered it`).toBe(true);
  });
  expect(receiver.applied.filter((id) => admission.includes(id))).toEqual([...admission]);
}

describe('Ordering: 50 shipments × 5 events, both intakes, a faulty receiver', { timeout: TEST_TIMEOUT_MS }, () => {
  /** The standard intake's admission order per shipment: its events by the sequence the head gave them. */
  const standardAdmission = new Map<string, string[]>();

  it('delivers each shipment to the ordered endpoint in admission order with webhook-sequence 1..5, and every event to the unordered one', async () => {
    // Act: the ordered intake, shipment by shipment in its own shuffled order; the standard intake,
    // every event of its shipments shuffled together; both at once; the two dead-event shipments on
    // the ordered intake.
    const standardBodies = shuffled(
      shipments.filter((s) => s.intake === 'standard').flatMap((s) => s.sent.map((id) => body(id, s.id, kOf(id), 'main'))),
    );
    await Promise.all([
      ...shipments
        .filter((s) => s.intake === 'ordered')
        .map((s) => sendOrdered(s.id, s.sent.map((id) => ({ id, body: body(id, s.id, kOf(id), 'main') })))),
      clients.sendAll(standardBodies),
      sendOrdered(CONTINUED.id, CONTINUED.sent.map((id) => ({ id, body: body(id, CONTINUED.id, kOf(id), 'main') }))),
      sendOrdered(HELD.id, HELD.sent.map((id) => ({ id, body: body(id, HELD.id, kOf(id), 'hold') }))),
    ]);
    const everyEvent = [...shipments.flatMap((s) => s.sent), ...CONTINUED.sent, ...HELD.sent];
    const rows = await settle([
      ...shipments.flatMap((s) => s.sent.map((id) => [id, 'ordered', 'delivered'] as const)),
      ...everyEvent.map((id) => [id, 'unordered', 'delivered'] as const),
      ...CONTINUED.sent.map((id, i) => [id, 'ordered', i === 2 ? 'dead' : 'delivered'] as const),
      [HELD.sent[0]!, 'held', 'delivered'],
      [HELD.sent[1]!, 'held', 'dead'],
    ]);
    await queuesDrain();

    // Assess: the fault mix was met (each kind scripted, each consumed: no script left unused).
    expect(faults['503']).toBeGreaterThan(10);
    expect(faults['commit-then-hang']).toBeGreaterThan(5);
    expect(faults['503, commit-then-hang']).toBeGreaterThan(0);
    const hungUp = receivers.ordered.requests.filter((r) => r.answer === 'commit-then-hang').length;
    expect(hungUp).toBe(faults['commit-then-hang'] + faults['503, commit-then-hang']);

    // Events did arrive before their turn and were acknowledged waiting (then woken: all delivered).
    const waits = sandbox.stderr().filter((line) => / → ordered waiting \(sequence \d+, after \d+\)$/.test(line)).length;
    expect(waits).toBeGreaterThan(0);

    // Assess, ordered intake: the order sent is the order received, 1..5.
    for (const shipment of shipments.filter((s) => s.intake === 'ordered')) {
      expectInOrder(receivers.ordered, shipment.sent);
      shipment.sent.forEach((id, i) => expect(rows.get(`${id} ordered`)).toMatchObject({ state: 'delivered', sequence: i + 1 }));
    }
    // Standard intake: the numbers the heads gave are 1..5, and that order is the order received.
    for (const shipment of shipments.filter((s) => s.intake === 'standard')) {
      const admission = [...shipment.sent].sort((a, b) => rows.get(`${a} ordered`)!.sequence! - rows.get(`${b} ordered`)!.sequence!);
      expect(admission.map((id) => rows.get(`${id} ordered`)!.sequence)).toEqual([1, 2, 3, 4, 5]);
      standardAdmission.set(shipment.id, admission);
      expectInOrder(receivers.ordered, admission);
    }
    // Every event of lane main, and only those, reached `ordered`; each applied once.
    const mainEvents = [...shipments.flatMap((s) => s.sent), ...CONTINUED.sent];
    expect([...receivers.ordered.applied].sort()).toEqual(mainEvents.filter((id) => id !== CONTINUED.sent[2]).sort());
    // The unordered endpoint: every event once, in any order, no sequence, its rows without one.
    expect([...receivers.unordered.applied].sort()).toEqual([...everyEvent].sort());
    expect(receivers.unordered.requests.every((r) => sequenceOf(r) === undefined)).toBe(true);
    for (const id of everyEvent) expect(rows.get(`${id} unordered`)).not.toHaveProperty('sequence');
  });

  it('passes the turn on from a dead event with onDead continue: the ones after it follow, in order', async () => {
    const rows = await rowsByKey();
    const requests = receivers.ordered.requests.filter((r) => CONTINUED.sent.includes(String(r.eventId)));

    expect(requests.map((r) => `${r.eventId}:${sequenceOf(r)}`)).toEqual(CONTINUED.sent.map((id, i) => `${id}:${i + 1}`));
    expect(rows.get(`${CONTINUED.sent[2]} ordered`)).toMatchObject({ state: 'dead', deadReason: 'rejected', sequence: 3 });
    expect(rows.get(`${CONTINUED.sent[4]} ordered`)).toMatchObject({ state: 'delivered', attempts: 1, sequence: 5 });
  });

  it('holds a shipment behind a dead event with onDead hold until a replay of it is delivered', async () => {
    // Assess: everything else has drained; the held shipment's later events are unsent, unattempted.
    const rows = await rowsByKey();
    expect(receivers.held.requests.map((r) => `${r.eventId}:${sequenceOf(r)}`)).toEqual([`${HELD.sent[0]}:1`, `${HELD.sent[1]}:2`]);
    for (const [i, id] of HELD.sent.entries()) {
      if (i < 2) continue;
      expect(rows.get(`${id} held`)).toMatchObject({ state: 'pending', attempts: 0, sequence: i + 1 });
    }
    const heads = new DynamoDbShipmentHeads({ client: clients.documents, tableName: sandbox.ready.ledgerTable });
    const held = await heads.get(HELD.id, 'held');
    expect(held).toMatchObject({ assigned: 5, next: 2, waiting: { 3: HELD.sent[2], 4: HELD.sent[3], 5: HELD.sent[4] } });
    // Held by its dead event: the head has no expiry, however long the operator takes.
    expect(held?.expiresAt).toBeUndefined();

    // Act: the operator replays the dead event at that endpoint.
    const replayed = await handoff(['replay', HELD.sent[1]!, '--endpoint', 'held', '--operator', 'e2e', '--reason', 'receiver fixed']);
    expect(replayed.code, replayed.stderr).toBe(0);
    await settle(HELD.sent.map((id) => [id, 'held', 'delivered'] as const));
    await queuesDrain();
    const settled = await heads.get(HELD.id, 'held');
    expect(settled).toMatchObject({ next: 6, waiting: {} });
    // Settled: it expires the rows' retention after the advance that settled it (within this test's minutes).
    const retentionSeconds = DEFAULT_SETTINGS.retentionDays * 24 * 60 * 60;
    expect(settled?.expiresAt).toBeGreaterThan(Math.floor(Date.now() / 1000) + retentionSeconds - 600);
    expect(settled?.expiresAt).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + retentionSeconds);

    // Assess: the dead event (same number) and then the rest, in order, each applied once.
    expect(receivers.held.requests.map((r) => `${r.eventId}:${sequenceOf(r)}`)).toEqual([
      `${HELD.sent[0]}:1`,
      `${HELD.sent[1]}:2`,
      ...HELD.sent.slice(1).map((id, i) => `${id}:${i + 2}`),
    ]);
    expect(receivers.held.applied).toEqual(HELD.sent);
  });

  it('dead-letters each dead event once, saying whether its shipment continued or is held', async () => {
    const deadLetters = await clients.readDeadLetters();

    expect(deadLetters.map(({ eventId, endpoint, reason, ordering }) => ({ eventId, endpoint, reason, ordering }))).toEqual(
      expect.arrayContaining([
        { eventId: CONTINUED.sent[2], endpoint: 'ordered', reason: 'rejected', ordering: 'continued' },
        { eventId: HELD.sent[1], endpoint: 'held', reason: 'rejected', ordering: 'held' },
      ]),
    );
    expect(deadLetters).toHaveLength(2);
  });
});
