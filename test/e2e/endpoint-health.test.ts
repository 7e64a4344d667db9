/**
 * Endpoint health end to end (docs/contract.md §12), in the sandbox: an endpoints file of three
 * endpoints, each on a loopback receiver of its own that notes when each request arrives, each
 * subscribed to one event type so every event goes to one of them:
 *
 * | endpoint | type      | receiver                                              |
 * |----------|-----------|-------------------------------------------------------|
 * | `slow`   | in_transit| 429 with `Retry-After: 3` to its first request, then 200 |
 * | `gone`   | returned  | 410 to everything                                     |
 * | `down`   | exception | 503 to everything; auto-disabled after 3 failures and 60 s |
 *
 * - a 429 with `Retry-After: 3` pauses `slow`: the other deliveries to it start no earlier than 3 s
 *   after the 429, and spend no attempt while held;
 * - a 410 disables `gone` (by handoff, with the reason) and its delivery dies as `rejected`;
 * - `down` is disabled automatically, with the `endpoint disabled` line on the sandbox's stderr.
 *   Its 60 s without an accepted request (the least `disableAfterSeconds` allows) are not waited
 *   for: the test records one failure 61 s in the past through the registry's own health write, as
 *   if it had been failing that long, and the consumer's own failures then cross the threshold.
 *
 * The workers read the registry on every batch (`endpointsCacheMs: 0`), so a pause one worker
 * writes holds every other worker's next batch. Run the file, not a single test.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbHealthStore } from '../../lib/endpoints/dynamodb-health-store';
import { RegistryTable } from '../../lib/endpoints/dynamodb-registry-table';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { GONE_REASON } from '../../lib/endpoints/health';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';
import { startTimedReceiver, type TimedReceiver } from '../helpers/timed-receiver';

const SETTLE_MS = 45_000;
const TEST_TIMEOUT_MS = 90_000;

let slow: TimedReceiver;
let gone: TimedReceiver;
let down: TimedReceiver;
let sandbox: SandboxProcess;
let clients: SandboxClients;
let registry: DynamoDbEndpointRegistry;
/** Health's writes, as a consumer makes them. */
let health: DynamoDbHealthStore;

function shipment(id: string, status: string): string {
  return JSON.stringify({ id, shipmentId: `shp_${id}`, status, occurredAt: '2026-12-03T05:00:00Z' });
}

beforeAll(async () => {
  slow = await startTimedReceiver((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200 }));
  gone = await startTimedReceiver(() => ({ status: 410 }));
  down = await startTimedReceiver(() => ({ status: 503 }));
  const endpoints: EndpointFields[] = [
    { name: 'slow', url: slow.url, eventTypes: ['shipment.in_transit'] },
    { name: 'gone', url: gone.url, eventTypes: ['shipment.returned'] },
    { name: 'down', url: down.url, eventTypes: ['shipment.exception'], disableAfterFailures: 3, disableAfterSeconds: 60 },
  ];
  sandbox = await startSandboxProcess({
    endpoints,
    endpointsCacheMs: 0,
    env: { HANDOFF_RETRY_SCHEDULE: '1,1,1', HANDOFF_MAX_ATTEMPTS: '4', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000', HANDOFF_MAX_CONCURRENCY: '2' },
  });
  clients = new SandboxClients(sandbox.ready);
  registry = new DynamoDbEndpointRegistry({ client: clients.dynamodb, tableName: sandbox.ready.endpointsTable });
  health = new DynamoDbHealthStore(new RegistryTable(DynamoDBDocumentClient.from(clients.dynamodb), sandbox.ready.endpointsTable));
}, 90_000);

afterAll(async () => {
  clients?.close();
  await sandbox?.stop('SIGKILL');
  for (const receiver of [slow, gone, down]) await receiver?.close();
});

function settled(eventId: string, endpoint: string): Promise<DeliveryRecord> {
  return eventually(
    `${eventId} → ${endpoint} to be delivered or dead`,
    async () => {
      const record = await clients.ledger.get({ eventId, endpoint });
      return record !== undefined && record.state !== 'pending' ? record : undefined;
    },
    { timeoutMs: SETTLE_MS },
  );
}

/** The delivery once parked for its disabled endpoint (docs/contract.md §12). */
function parked(eventId: string, endpoint: string): Promise<DeliveryRecord> {
  return eventually(
    `${eventId} → ${endpoint} to be parked`,
    async () => {
      const record = await clients.ledger.get({ eventId, endpoint });
      return record?.state === 'pending' && record.parkedAt !== undefined ? record : undefined;
    },
    { timeoutMs: SETTLE_MS },
  );
}

describe('Endpoint health in the sandbox', () => {
  it(
    "pauses an endpoint that answers 429 with Retry-After: 3: its other deliveries start no earlier than 3 s after it, spending no attempt while held",
    async () => {
      // Act: the first delivery draws the 429; the others are sent once the pause is in the registry.
      await clients.send(shipment('evt_pause_0', 'in_transit'));
      const pausedUntil = await eventually('slow to be paused', async () => (await registry.get('slow'))?.health?.pausedUntil, { timeoutMs: SETTLE_MS, intervalMs: 50 });
      // Its worker done with it, so a warm worker takes the others at once (a cold start could
      // outlast the 3-s pause, and they would find nothing to wait for).
      await sandbox.waitForLog(/evt_pause_0 → slow retry/, SETTLE_MS);
      const others = ['evt_pause_1', 'evt_pause_2', 'evt_pause_3', 'evt_pause_4'];
      await clients.sendAll(others.map((id) => shipment(id, 'in_transit')));
      const rows = await Promise.all(others.map((id) => settled(id, 'slow')));
      const first = await settled('evt_pause_0', 'slow');

      // Assess
      const the429 = slow.arrivals[0]!;
      expect(the429).toMatchObject({ eventId: 'evt_pause_0', status: 429 });
      expect(pausedUntil).toBeGreaterThanOrEqual(the429.at + 3_000);
      for (const arrival of slow.arrivals.slice(1)) expect(arrival.at - the429.at).toBeGreaterThanOrEqual(3_000);
      expect(rows.map((row) => [row.eventId, row.state, row.attempts])).toEqual(others.map((id) => [id, 'delivered', 1]));
      // The 429's own delivery waited as its Retry-After asked, and was delivered on its second attempt.
      expect([first.state, first.attempts]).toEqual(['delivered', 2]);
      expect(slow.arrivals.map((a) => a.eventId).sort()).toEqual(['evt_pause_0', 'evt_pause_0', ...others].sort());
      expect(sandbox.stderr().some((line) => /evt_pause_\d → slow retry in \d+ s \(paused\)/.test(line))).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'disables an endpoint that answers 410, by handoff with the reason, its delivery dead as rejected; later deliveries to it are parked',
    async () => {
      await clients.send(shipment('evt_gone_1', 'returned'));

      const row = await settled('evt_gone_1', 'gone');
      const record = await eventually('gone to be disabled', async () => {
        const current = await registry.get('gone');
        return current?.state === 'disabled' ? current : undefined;
      }, { timeoutMs: SETTLE_MS });
      await clients.send(shipment('evt_gone_2', 'returned'));
      const later = await parked('evt_gone_2', 'gone');

      expect([row.state, row.deadReason]).toEqual(['dead', 'rejected']);
      expect(record.stateChange).toMatchObject({ by: 'handoff', reason: GONE_REASON });
      expect([later.attempts, later.history]).toEqual([0, []]);
      expect(gone.arrivals.map((a) => a.eventId)).toEqual(['evt_gone_1']);
      expect((await clients.readDeadLetters()).filter((d) => d.eventId === 'evt_gone_1').map((d) => [d.reason, d.endpoint])).toEqual([
        ['rejected', 'gone'],
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'disables an endpoint automatically once it has failed often enough for long enough, with the endpoint disabled line on stderr',
    async () => {
      // Prepare: one failure recorded 61 s ago, as if it had been failing since.
      const firstFailure = Date.now() - 61_000;
      await health.recordFailure('down', firstFailure);

      // Act: its two events fail (503) until the failures the item counts cross the threshold (3; a
      // worker adds what it counted at most once a second, so the one that crosses may add two).
      await clients.sendAll([shipment('evt_down_1', 'exception'), shipment('evt_down_2', 'exception')]);
      const line = await sandbox.waitForLog(/"message":"endpoint disabled".*"endpoint":"down"/, SETTLE_MS);

      // Assess
      const notice = JSON.parse(line.slice(line.indexOf('{'))) as Record<string, unknown>;
      expect(notice).toMatchObject({ level: 'error', endpoint: 'down' });
      expect(Number(notice.failures)).toBeGreaterThanOrEqual(3);
      const reason = new RegExp(`^no accepted request for (\\d+) s and ${String(notice.failures)} failed attempts \\(autoDisable: 60 s and 3 attempts\\)$`).exec(String(notice.reason));
      expect(reason, String(notice.reason)).not.toBeNull();
      // Counted from the first failure to the third: at least the 61 s set up, at most until now.
      expect(Number(reason![1])).toBeGreaterThanOrEqual(61);
      expect(Number(reason![1])).toBeLessThanOrEqual(Math.ceil((Date.now() - firstFailure) / 1000));
      const record = await registry.get('down');
      expect(record).toMatchObject({ state: 'disabled', stateChange: { by: 'handoff', reason: notice.reason } });
      expect(sandbox.stderr().filter((l) => l.includes('"message":"endpoint disabled"') && l.includes('"endpoint":"down"'))).toHaveLength(1);
      // Its deliveries, still retrying when it was disabled, park at their next turn: none dies.
      const rows = await Promise.all(['evt_down_1', 'evt_down_2'].map((id) => parked(id, 'down')));
      expect(rows.map((r) => r.state)).toEqual(['pending', 'pending']);
    },
    TEST_TIMEOUT_MS,
  );
});
