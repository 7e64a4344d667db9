/**
 * Crash points (docs/contract.md §1): the process that runs the consumer is killed for real (SIGKILL) at
 * each boundary of the design, the sandbox starts a fresh one, and the event still ends
 * delivered exactly once at an idempotent receiver, or dead with a reason. Nothing is lost.
 *
 * The kills come from `HANDOFF_CRASH_AT` (functions/consumer.ts), inert unless set:
 * `<point>@<marker>` kills the worker at that point once per marker file the test creates, so
 * the restarted worker runs clean; a bare `<point>` kills on every attempt. The lease case needs
 * no hook: the test kills the worker that the ledger names as the lease owner.
 *
 * Each case has its own sandbox (the crash point is a start-up setting), and the cases run
 * concurrently: most of their time is a dead worker's lease lapsing. Timings shortened for the
 * run: 1 s attempts (so a lease of 21 s, the function timeout), waits of 1 s, and a 10 s
 * visibility timeout, so the message returns while the lease still holds and is deferred to its
 * expiry: the ledger, not the queue, decides when the next attempt may go. Not shorter: a worker's
 * cold start on a busy machine would hand a copy of its message to another worker mid-claim.
 *
 * With two endpoints (an endpoints file, docs/contract.md §11) there is one more boundary:
 * `after-fan-out`, the per-endpoint messages sent and the producer's message not yet acknowledged.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it, type ExpectStatic, type TestContext } from 'vitest';
import type { CrashPoint } from '../../lib/deliver';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { DEFAULT_ENDPOINT, type DeliveryRecord } from '../../lib/ledger/ledger';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { eventually, ownerPid, SandboxClients, type DeadLetter } from '../helpers/sandbox-clients';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';

const MAX_ATTEMPTS = 4;
const SHORT_TIMINGS = {
  HANDOFF_RETRY_SCHEDULE: '1,1,1',
  HANDOFF_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
  HANDOFF_ATTEMPT_TIMEOUT_MS: '1000',
  HANDOFF_VISIBILITY_TIMEOUT_SECONDS: '10',
  HANDOFF_MAX_CONCURRENCY: '2',
};
/** Generous: a sandbox start, one or more 21 s leases, on a machine shared by several runs. */
const CASE_TIMEOUT_MS = 240_000;
const WAIT_MS = 180_000;

let receiver: TestReceiver;

beforeAll(async () => {
  receiver = await startTestReceiver();
});

afterAll(async () => {
  await receiver?.close();
});

interface Rig {
  readonly sandbox: SandboxProcess;
  readonly clients: SandboxClients;
  /** Arms one crash at the configured point: the next worker to reach it dies. */
  arm(): void;
  /** Whether an armed crash is still waiting for a worker. */
  armed(): boolean;
}

/**
 * A sandbox of its own for one case, stopped when the case ends. `crash`: where workers die;
 * `once` arms one crash per `arm()`, otherwise every attempt dies there. `endpoints`: an endpoints
 * file in place of the shared receiver as the one endpoint `default`.
 */
async function startRig(
  context: TestContext,
  options: { crash?: { at: CrashPoint; once: boolean }; env?: Record<string, string>; endpoints?: readonly EndpointFields[] } = {},
): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-crash-'));
  const marker = join(dir, 'armed');
  const crashAt = options.crash && (options.crash.once ? `${options.crash.at}@${marker}` : options.crash.at);
  const sandbox = await startSandboxProcess({
    ...(options.endpoints !== undefined ? { endpoints: options.endpoints } : {}),
    env: {
      ...SHORT_TIMINGS,
      ...(options.endpoints === undefined ? { HANDOFF_WEBHOOK_URL: receiver.url } : {}),
      ...(crashAt ? { HANDOFF_CRASH_AT: crashAt } : {}),
      ...options.env,
    },
  });
  const clients = new SandboxClients(sandbox.ready);
  context.onTestFinished(async () => {
    clients.close();
    await sandbox.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    sandbox,
    clients,
    arm: () => writeFileSync(marker, ''),
    armed: () => existsSync(marker),
  };
}

function shipment(id: string): string {
  return JSON.stringify({ id, shipmentId: `shp_${id}`, status: 'out_for_delivery', occurredAt: '2026-12-02T10:15:00Z' });
}

/** The worker process holding the row's claim. */
function holderPid(record: DeliveryRecord | undefined): number {
  const pid = ownerPid(record?.leaseOwner);
  if (pid === undefined) throw new Error(`no lease owner on the row: ${JSON.stringify(record?.leaseOwner)}`);
  return pid;
}

/** The row once a worker has claimed it (attempt 1 counted, lease held). */
function claimed(rig: Rig, eventId: string): Promise<DeliveryRecord> {
  return eventually(`a claim on ${eventId}`, async () => {
    const row = await rig.clients.row(eventId);
    return row?.leaseOwner !== undefined ? row : undefined;
  }, { timeoutMs: WAIT_MS });
}

function settled(rig: Rig, eventId: string, endpoint = DEFAULT_ENDPOINT): Promise<DeliveryRecord> {
  const row = () => rig.clients.ledger.get({ eventId, endpoint });
  return eventually(
    `${eventId} → ${endpoint} to be delivered or dead`,
    async () => {
      const record = await row();
      return record !== undefined && record.state !== 'pending' ? record : undefined;
    },
    { timeoutMs: WAIT_MS, describe: async () => JSON.stringify(await row()) },
  );
}

function killedBySigkill(rig: Rig, pid: number): Promise<string> {
  return rig.sandbox.waitForLog(new RegExp(`^worker ${pid} exited \\(SIGKILL\\)$`), WAIT_MS);
}

/** Waits until the delivery queue is empty, then reads the dead-letter queue: the end state. */
async function endState(rig: Rig): Promise<{ deadLetters: DeadLetter[] }> {
  await eventually('the delivery queue to drain', async () => (await rig.clients.queueDepth()) === 0, {
    timeoutMs: WAIT_MS,
    describe: async () => `${await rig.clients.queueDepth()} message(s)`,
  });
  return { deadLetters: await rig.clients.readDeadLetters() };
}

/** Decision lines the sandbox showed for one event and endpoint, as `<pid>: <decision>`. */
function decisions(rig: Rig, eventId: string, endpoint = DEFAULT_ENDPOINT): string[] {
  const pattern = new RegExp(`^worker (\\d+): ${eventId} → ${endpoint} (.+)$`);
  return rig.sandbox
    .stderr()
    .map((line) => pattern.exec(line))
    .filter((match) => match !== null)
    .map((match) => `${match[1]}: ${match[2]}`);
}

/** The worker PID at the start of a sandbox log line (`worker <pid> …`). */
function pidOf(line: string): number {
  return Number(/^worker (\d+)/.exec(line)![1]);
}

function keysSeen(eventId: string): (string | undefined)[] {
  return receiver.requestsFor(eventId).map((request) => request.eventId);
}

function timesApplied(eventId: string): number {
  return receiver.applied.filter((id) => id === eventId).length;
}

/** A rig whose next worker to reach `at` dies there, once. */
async function armedRig(context: TestContext, at: CrashPoint): Promise<Rig> {
  const rig = await startRig(context, { crash: { at, once: true } });
  rig.arm();
  return rig;
}

/** Sends the event, waits for a worker's claim on it and for that worker's death; the claimed row. */
async function sendAndLoseTheHolder(rig: Rig, eventId: string): Promise<DeliveryRecord> {
  await rig.clients.send(shipment(eventId));
  const held = await claimed(rig, eventId);
  await killedBySigkill(rig, holderPid(held));
  return held;
}

/**
 * Sends the event to a receiver told to hang on it, kills the worker holding the lease while its
 * request is open, and waits for that worker's death; the row as the worker left it when killed.
 */
async function killTheHolderMidRequest(rig: Rig, eventId: string): Promise<DeliveryRecord> {
  await rig.clients.send(shipment(eventId));
  await eventually(`the request for ${eventId}`, async () => receiver.requestsFor(eventId).length > 0, { timeoutMs: WAIT_MS });
  const held = (await rig.clients.row(eventId))!;
  process.kill(holderPid(held), 'SIGKILL');
  await killedBySigkill(rig, holderPid(held));
  return held;
}

/** Delivered by the second attempt, which went only once the killed worker's lease had lapsed. */
function expectDeliveredAfterTheLease(expect: ExpectStatic, record: DeliveryRecord, held: DeliveryRecord): void {
  expect(record).toMatchObject({ state: 'delivered', attempts: 2 });
  expect(record.history.map((h) => [h.attempt, h.outcome])).toEqual([[2, 'accepted']]);
  expect(record.history[0]!.at).toBeGreaterThanOrEqual(held.leaseExpiresAt!);
}

describe('Crash points: a worker killed at each boundary', () => {
  it.concurrent(
    'before-send: the worker dies holding a fresh claim, nothing sent; the event is delivered once after the lease lapses',
    async (context) => {
      const { expect } = context;
      // Prepare
      const id = 'evt_cp_before_send';
      const rig = await armedRig(context, 'before-send');

      // Act
      const held = await sendAndLoseTheHolder(rig, id);
      const afterKill = await rig.clients.row(id);
      const record = await settled(rig, id);
      const { deadLetters } = await endState(rig);

      // Assess: the claim counted an attempt and outlived its worker; nothing had been sent.
      expect(afterKill).toMatchObject({ state: 'pending', attempts: 1, history: [], leaseOwner: held.leaseOwner });
      expectDeliveredAfterTheLease(expect, record, held);
      expect(keysSeen(id)).toEqual([id]);
      expect(timesApplied(id)).toBe(1);
      expect(rig.armed()).toBe(false);
      expect(deadLetters).toEqual([]);
    },
    CASE_TIMEOUT_MS,
  );

  it.concurrent(
    'after-send: the worker dies with the receiver committed and the ledger unwritten; the retry carries the same key and is applied once',
    async (context) => {
      const { expect } = context;
      // Prepare
      const id = 'evt_cp_after_send';
      const rig = await armedRig(context, 'after-send');

      // Act
      const held = await sendAndLoseTheHolder(rig, id);
      const appliedAtKill = timesApplied(id);
      const afterKill = await rig.clients.row(id);
      const record = await settled(rig, id);
      const { deadLetters } = await endState(rig);

      // Assess: the response was in hand when the worker died; only the receiver knew.
      expect(appliedAtKill).toBe(1);
      expect(afterKill).toMatchObject({ state: 'pending', attempts: 1, history: [] });
      expectDeliveredAfterTheLease(expect, record, held);
      const requests = receiver.requestsFor(id);
      expect(keysSeen(id)).toEqual([id, id]);
      expect(requests[1]!.body).toBe(requests[0]!.body);
      expect(timesApplied(id)).toBe(1);
      expect(deadLetters).toEqual([]);
    },
    CASE_TIMEOUT_MS,
  );

  it.concurrent(
    'after-record: the worker dies after marking delivered, before acknowledging; the returning message is acknowledged as a duplicate, not sent again',
    async (context) => {
      const { expect } = context;
      // Prepare
      const id = 'evt_cp_after_record';
      const rig = await armedRig(context, 'after-record');

      // Act
      await rig.clients.send(shipment(id));
      const killedPid = pidOf(await rig.sandbox.waitForLog(/^worker \d+ exited \(SIGKILL\)$/, WAIT_MS));
      const acknowledgedBy = pidOf(await rig.sandbox.waitForLog(new RegExp(`^worker \\d+: ${id} → default ack \\(duplicate\\)$`), WAIT_MS));
      const record = await rig.clients.row(id);
      const { deadLetters } = await endState(rig);

      // Assess: the killed worker never reported a decision; fresh ones only acknowledged the
      // message (more than once when the visibility timeout lapsed before a worker's cold start ended:
      // the ledger, not the queue, keeps that from becoming a second request).
      expect(rig.armed()).toBe(false);
      expect(acknowledgedBy).not.toBe(killedPid);
      const seen = decisions(rig, id);
      expect(seen.length).toBeGreaterThanOrEqual(1);
      for (const decision of seen) expect(decision).toMatch(/^\d+: ack \(duplicate\)$/);
      expect(seen.some((decision) => decision.startsWith(`${killedPid}:`))).toBe(false);
      expect(record).toMatchObject({ state: 'delivered', attempts: 1 });
      expect(record!.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'accepted']]);
      expect(keysSeen(id)).toEqual([id]);
      expect(timesApplied(id)).toBe(1);
      expect(deadLetters).toEqual([]);
    },
    CASE_TIMEOUT_MS,
  );

  it.concurrent(
    'after-record: the worker dies after marking dead, before dead-lettering; the returning message is dead-lettered with its reason',
    async (context) => {
      const { expect } = context;
      // Prepare
      const id = 'evt_cp_after_record_dead';
      receiver.respondTo(id, { status: 400, body: 'unknown shipment' });
      const rig = await armedRig(context, 'after-record');

      // Act
      await rig.clients.send(shipment(id));
      await rig.sandbox.waitForLog(/^worker \d+ exited \(SIGKILL\)$/, WAIT_MS);
      const record = await settled(rig, id);
      await rig.sandbox.waitForLog(new RegExp(`^worker \\d+: ${id} → default dead-letter \\(rejected\\)$`), WAIT_MS);
      const { deadLetters } = await endState(rig);

      // Assess
      expect(rig.armed()).toBe(false);
      expect(record).toMatchObject({ state: 'dead', deadReason: 'rejected', attempts: 1 });
      // At least one dead letter, each the original body with its reason: a second one, from a
      // message received again while a fresh worker started, is harmless (the ledger is the authority).
      expect(deadLetters.length).toBeGreaterThanOrEqual(1);
      for (const letter of deadLetters) expect(letter).toEqual({ body: shipment(id), reason: 'rejected', eventId: id, endpoint: 'default' });
      expect(keysSeen(id)).toEqual([id]);
      expect(timesApplied(id)).toBe(0);
    },
    CASE_TIMEOUT_MS,
  );

  const leaseCases: readonly { title: string; id: string; answer: 'commit-then-hang' | 'hang'; committed: boolean }[] = [
    {
      title: 'while holding a lease, the receiver having committed: nobody sends until the lease lapses, then the event is delivered and applied once',
      id: 'evt_cp_lease_committed',
      answer: 'commit-then-hang',
      committed: true,
    },
    {
      title: 'while holding a lease, the receiver not having committed: the next attempt, after the lease lapses, is applied once',
      id: 'evt_cp_lease_uncommitted',
      answer: 'hang',
      committed: false,
    },
  ];
  for (const { title, id, answer, committed } of leaseCases) {
    it.concurrent(
      title,
      async (context) => {
        const { expect } = context;
        // Prepare: a 5 s attempt, so the test surely kills the worker while its request is open.
        receiver.respondTo(id, answer);
        const rig = await startRig(context, { env: { HANDOFF_ATTEMPT_TIMEOUT_MS: '5000' } });

        // Act
        const held = await killTheHolderMidRequest(rig, id);
        // As the killed worker left it: the committed receiver holds the row's claim; the other applied nothing.
        if (committed) expect(await rig.clients.row(id)).toMatchObject({ state: 'pending', attempts: 1, history: [], leaseOwner: held.leaseOwner });
        else expect(timesApplied(id)).toBe(0);
        const record = await settled(rig, id);
        const { deadLetters } = await endState(rig);

        // Assess
        expectDeliveredAfterTheLease(expect, record, held);
        expect(keysSeen(id)).toEqual([id, id]);
        expect(timesApplied(id)).toBe(1);
        expect(deadLetters).toEqual([]);
      },
      CASE_TIMEOUT_MS,
    );
  }

  it.concurrent(
    'a crash on every attempt spends the budget: the event ends dead "exhausted", on the dead-letter queue with its reason',
    async (context) => {
      const { expect } = context;
      // Prepare: three attempts, each dying right after its claim.
      const id = 'evt_cp_crash_loop';
      const rig = await startRig(context, {
        crash: { at: 'before-send', once: false },
        env: { HANDOFF_MAX_ATTEMPTS: '3' },
      });

      // Act
      await rig.clients.send(shipment(id));
      const record = await settled(rig, id);
      const { deadLetters } = await endState(rig);

      // Assess
      expect(record).toMatchObject({ state: 'dead', deadReason: 'exhausted', attempts: 3, maxAttempts: 3, history: [] });
      expect(rig.sandbox.stderr().filter((line) => /^worker \d+ exited \(SIGKILL\)$/.test(line))).toHaveLength(3);
      expect(deadLetters).toEqual([{ body: shipment(id), reason: 'exhausted', eventId: id, endpoint: 'default' }]);
      expect(keysSeen(id)).toEqual([]);
    },
    CASE_TIMEOUT_MS,
  );
  it.concurrent(
    'after-fan-out: the worker dies with the per-endpoint messages sent and the producer message unacknowledged; it is routed again and each endpoint receives the event once',
    async (context) => {
      const { expect } = context;
      // Prepare: two endpoints on receivers of their own, both subscribed to the event.
      const id = 'evt_cp_after_fan_out';
      const secrets = { first: 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=', second: 'whsec_/uCW0n0KPpd7EnSxkS82xgxojTF+Q5yIYx5I0pyVR/s=' };
      const receivers = { first: await startTestReceiver(), second: await startTestReceiver() };
      context.onTestFinished(async () => {
        for (const r of Object.values(receivers)) await r.close();
      });
      const rig = await startRig(context, {
        crash: { at: 'after-fan-out', once: true },
        endpoints: [
          { name: 'first', url: receivers.first.url, eventTypes: ['shipment.out_for_delivery'], secret: secrets.first },
          { name: 'second', url: receivers.second.url, eventTypes: ['*'], secret: secrets.second },
        ],
      });
      rig.arm();

      // Act
      await rig.clients.send(shipment(id));
      const killedPid = pidOf(await rig.sandbox.waitForLog(/^worker \d+ exited \(SIGKILL\)$/, WAIT_MS));
      const reroutedBy = pidOf(await rig.sandbox.waitForLog(new RegExp(`^worker \\d+: ${id} → first, second fanned out$`), WAIT_MS));
      const records = [await settled(rig, id, 'first'), await settled(rig, id, 'second')];
      const { deadLetters } = await endState(rig);

      // Assess: the crash happened after the fan-out, the returning producer message was routed
      // again by a fresh worker, and the ledger kept each endpoint's delivery to one request
      // whatever number of per-endpoint messages it got.
      expect(rig.armed()).toBe(false);
      expect(reroutedBy).not.toBe(killedPid);
      for (const endpoint of ['first', 'second']) {
        expect(decisions(rig, id, endpoint).filter((d) => d.endsWith(': delivered')), endpoint).toHaveLength(1);
      }
      for (const record of records) {
        expect(record).toMatchObject({ state: 'delivered', attempts: 1 });
        expect(record.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, 'accepted']]);
      }
      for (const [name, r] of Object.entries(receivers)) {
        expect(r.requestsFor(id).map((request) => request.eventId), name).toEqual([id]);
        expect(r.applied, name).toEqual([id]);
        expect(r.verify(r.requestsFor(id)[0]!, secrets[name as keyof typeof secrets]), name).toBe(true);
      }
      expect(await rig.clients.ledger.deliveriesOf(id)).toHaveLength(2);
      expect(deadLetters).toEqual([]);
    },
    CASE_TIMEOUT_MS,
  );
});
