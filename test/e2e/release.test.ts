/**
 * `handoff release` end to end (docs/contract.md §13), in the sandbox, run as an operator runs it
 * (bin/handoff.js in a child process, the sandbox found through its state file):
 *
 * | endpoint | ordering     | onDead | receiver (kit-based, loopback)       |
 * |----------|--------------|--------|--------------------------------------|
 * | `held`   | per-shipment | hold   | rejects the shipment's first event (422), takes the rest |
 * | `plain`  | none         | —      | takes everything                     |
 *
 * Three events of one shipment, admitted in order. At `held` the first dies (dead-lettered
 * `ordering=held`) and the other two wait, unsent and unattempted, after the queues have drained.
 * Releasing the second, or the first at `plain`, is refused, writing nothing. Releasing the first at
 * `held` records the audit entry on its row (still dead) and the other two follow, in order, each
 * once, with `webhook-sequence` 2 and 3. Run again, it is refused: the shipment has moved on.
 *
 * Timings shortened: waits of 1 s; 5 s attempts, so a receiver starved of CPU for a second does
 * not turn an attempt into a timeout (an extra request).
 */
import { describe, expect, it } from 'vitest';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { runHandoff, type CliRun } from '../helpers/cli';
import { startTestReceiver, type ReceivedRequest, type TestReceiver } from '../helpers/receiver';
import type { SandboxProcess } from '../helpers/sandbox';
import { useSandboxProcess } from '../helpers/sandbox-suite';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';

const SETTLE_MS = 60_000;
const TEST_TIMEOUT_MS = 90_000;
const SHIPMENT = 'shp_e2e_release';
const EVENTS = ['evt_e2e_rel_1', 'evt_e2e_rel_2', 'evt_e2e_rel_3'] as const;
const [FIRST, SECOND, THIRD] = EVENTS;
const STATUSES = ['packed', 'in_transit', 'delivered'] as const;

let held: TestReceiver;
let plain: TestReceiver;
let sandbox: SandboxProcess;
let clients: SandboxClients;

function body(index: number): string {
  return JSON.stringify({ id: EVENTS[index], shipmentId: SHIPMENT, status: STATUSES[index], occurredAt: `2026-12-03T08:0${index}:00Z` });
}

useSandboxProcess(
  async () => {
    held = await startTestReceiver();
    plain = await startTestReceiver();
    held.respondTo(FIRST, { status: 422, body: 'unknown status' });
    const endpoints: EndpointFields[] = [
      { name: 'held', url: held.url, eventTypes: ['*'], ordering: 'per-shipment', onDead: 'hold' },
      { name: 'plain', url: plain.url, eventTypes: ['*'] },
    ];
    return {
      endpoints,
      env: { HANDOFF_RETRY_SCHEDULE: '1', HANDOFF_MAX_ATTEMPTS: '3', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000' },
    };
  },
  (started) => ({ sandbox, clients } = started),
  async () => {
    await held?.close();
    await plain?.close();
  },
);

/** `handoff <args>` as an operator runs it, against the sandbox. */
function handoff(args: readonly string[]): Promise<CliRun> {
  return runHandoff(args, sandbox.stateFile);
}

function row(eventId: string, endpoint: string): Promise<DeliveryRecord | undefined> {
  return clients.ledger.get({ eventId, endpoint });
}

/** Waits until the delivery's row satisfies `wanted`. */
function rowWhere(eventId: string, endpoint: string, wanted: (record: DeliveryRecord) => boolean, what: string): Promise<DeliveryRecord> {
  let last: DeliveryRecord | undefined;
  return eventually(
    `${eventId} at ${endpoint} to be ${what}`,
    async () => {
      last = await row(eventId, endpoint);
      return last !== undefined && wanted(last) ? last : undefined;
    },
    { timeoutMs: SETTLE_MS, intervalMs: 250, describe: () => `${last?.state ?? 'no row'} (attempts ${last?.attempts ?? '-'})` },
  );
}

async function queueDrains(): Promise<void> {
  await eventually('the queues to drain', async () => (await clients.queueDepth()) === 0, {
    timeoutMs: SETTLE_MS,
    describe: async () => `${await clients.queueDepth()} message(s)`,
  });
}

function sequenceOf(request: ReceivedRequest): string | undefined {
  const header = request.headers['webhook-sequence'];
  return Array.isArray(header) ? header.join(',') : header;
}

const audit = ['--operator', 'e2e-operator', '--reason', 'carrier will never take a packed event (INC-12)'];

describe('handoff release in the sandbox', () => {
  it(
    "holds a shipment behind its dead first event (onDead hold): the later events wait, unsent",
    async () => {
      // Act: admitted one after another, so their numbers are 1, 2, 3.
      await clients.send(body(0));
      await rowWhere(FIRST, 'held', (r) => r.state === 'dead', 'dead');
      await clients.send(body(1));
      await rowWhere(SECOND, 'held', (r) => r.sequence === 2, 'admitted (sequence 2)');
      await clients.send(body(2));
      await rowWhere(THIRD, 'held', (r) => r.sequence === 3, 'admitted (sequence 3)');
      await rowWhere(THIRD, 'plain', (r) => r.state === 'delivered', 'delivered');
      await queueDrains();

      // Assess
      expect(held.requests.map((r) => `${r.eventId}:${sequenceOf(r)}`)).toEqual([`${FIRST}:1`]);
      expect(await row(FIRST, 'held')).toMatchObject({ state: 'dead', deadReason: 'rejected', sequence: 1, audit: [] });
      for (const [i, id] of [SECOND, THIRD].entries()) {
        expect(await row(id, 'held')).toMatchObject({ state: 'pending', attempts: 0, sequence: i + 2 });
      }
      const deadLetters = await clients.readDeadLetters();
      expect(deadLetters.map(({ eventId, endpoint, reason, ordering }) => ({ eventId, endpoint, reason, ordering }))).toEqual([
        { eventId: FIRST, endpoint: 'held', reason: 'rejected', ordering: 'held' },
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'refuses, writing nothing, a release of a waiting event (not dead) or at an endpoint not ordered',
    async () => {
      // Act
      const waiting = await handoff(['release', SECOND, '--endpoint', 'held', ...audit]);
      const unordered = await handoff(['release', FIRST, '--endpoint', 'plain', ...audit, '--json']);

      // Assess
      expect(waiting.code).toBe(1);
      expect(waiting.stderr).toBe(
        `handoff: event ${SECOND} at endpoint held is pending, not dead: only a dead delivery can be released\n`,
      );
      expect(unordered.code).toBe(1);
      expect(JSON.parse(unordered.stdout)).toEqual({
        error: {
          code: 'not-ordered',
          message: `endpoint plain is not ordered per shipment (ordering: none): no shipment waits on event ${FIRST} at endpoint plain; nothing to release`,
        },
      });
      expect((await row(FIRST, 'held'))?.audit).toEqual([]);
      expect(held.requests).toHaveLength(1);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "releases the dead event: its audit entry on its row, still dead; the shipment's later events follow in order, each once",
    async () => {
      // Act
      const released = await handoff(['release', FIRST, '--endpoint', 'held', ...audit]);

      // Assess: the command's own words.
      expect(released.code, released.stderr).toBe(0);
      expect(released.stdout).toBe(
        `released ${FIRST} (endpoint held, sequence 1): still dead (rejected), released by e2e-operator; no caller identity against the sandbox\n` +
          `its shipment goes on at sequence 2: event ${SECOND} sent\n`,
      );
      await rowWhere(THIRD, 'held', (r) => r.state === 'delivered', 'delivered');
      await queueDrains();
      expect(held.requests.map((r) => `${r.eventId}:${sequenceOf(r)}`)).toEqual([`${FIRST}:1`, `${SECOND}:2`, `${THIRD}:3`]);
      expect(held.applied).toEqual([SECOND, THIRD]);
      const first = await row(FIRST, 'held');
      expect(first).toMatchObject({ state: 'dead', deadReason: 'rejected', sequence: 1, releasedAt: expect.any(Number) as number });
      expect(first?.audit).toEqual([
        {
          at: first?.releasedAt,
          action: 'release',
          operator: 'e2e-operator',
          reason: 'carrier will never take a packed event (INC-12)',
          id: expect.any(String) as string,
        },
      ]);
      expect(await row(SECOND, 'held')).toMatchObject({ state: 'delivered', attempts: 1 });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'refuses the same release run again, saying the shipment has moved on, and writes nothing',
    async () => {
      // Prepare
      const before = await row(FIRST, 'held');

      // Act
      const again = await handoff(['release', FIRST, '--endpoint', 'held', ...audit, '--json']);

      // Assess
      expect(again.code).toBe(1);
      expect(JSON.parse(again.stdout)).toEqual({
        error: {
          code: 'released',
          message:
            `event ${FIRST} at endpoint held was released already (at ${new Date(before!.releasedAt!).toISOString()} by e2e-operator); ` +
            'its shipment has moved on to sequence 4: nothing more to release',
        },
      });
      expect(await row(FIRST, 'held')).toEqual(before);
      expect(held.requests).toHaveLength(3);
      // `status` shows its place in the shipment and the release, beside the audit entry.
      const status = await handoff(['status', FIRST, '--endpoint', 'held']);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/^sequence +1 in its shipment \(webhook-sequence\)$/m);
      expect(status.stdout).toMatch(/^released +\S+Z \(.+ ago\): its shipment went on without it$/m);
      expect(status.stdout).toMatch(/ release +e2e-operator +\(none\) +carrier will never take a packed event \(INC-12\)$/m);
    },
    TEST_TIMEOUT_MS,
  );
});
