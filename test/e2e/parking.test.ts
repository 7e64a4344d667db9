/**
 * Parking end to end (docs/contract.md §12 "410", "Automatic disabling", "Parking"), in the
 * sandbox: three endpoints on loopback receivers of their own. `flaky` and `healthy` subscribe to
 * `shipment.delivered`, so each such event is one delivery to each; `gone` to `shipment.returned`:
 *
 * | endpoint  | receiver                                   | settings                                |
 * |-----------|--------------------------------------------|-----------------------------------------|
 * | `flaky`   | 503 (no Retry-After) until fixed, then 200 | autoDisable after 3 failures and 60 s   |
 * | `healthy` | 200                                        | the defaults                            |
 * | `gone`    | 410                                        | the defaults                            |
 *
 * `flaky` is disabled automatically (the `endpoint disabled` line on the sandbox's stderr), its
 * deliveries are parked (none dead, none lost, none dead-lettered), the command counts them, and
 * `handoff endpoint enable flaky` gets every one to the fixed receiver exactly once, in admission
 * order (the rows' `createdAt`), while `healthy` got every event once, at once, throughout. A 410
 * kills its own delivery (`rejected`, dead-lettered) and disables `gone`; its later deliveries are
 * parked, never sent.
 *
 * Shortened: retries wait 1 s; the recovery timer runs every second; at `--rate 8` the release's
 * ramp starts at 1 per second, so each run releases one delivery, its message undelayed, and the
 * receiver's order of first receipt is the release's. The 60 s without an accepted request (the
 * least `disableAfterSeconds` allows) are not waited for: one failure is recorded 61 s in the past
 * through the registry's own health write, as if `flaky` had been failing that long. The workers
 * read the registry on every batch (`endpointsCacheMs: 0`). Run the file, not a single test.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type Io } from '../../cli/main';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbHealthStore } from '../../lib/endpoints/dynamodb-health-store';
import { RegistryTable } from '../../lib/endpoints/dynamodb-registry-table';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { GONE_REASON } from '../../lib/endpoints/health';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';
import { startTimedReceiver, type TimedReceiver } from '../helpers/timed-receiver';

const SETTLE_MS = 60_000;
const TEST_TIMEOUT_MS = 150_000;
const EVENTS = 10;

let fixed = false;
let flaky: TimedReceiver;
let healthy: TimedReceiver;
let gone: TimedReceiver;
let sandbox: SandboxProcess;
let clients: SandboxClients;
let registry: DynamoDbEndpointRegistry;
/** Health's writes, as a consumer makes them. */
let health: DynamoDbHealthStore;
const ids = Array.from({ length: EVENTS }, (_, i) => `evt_parking_${String(i).padStart(2, '0')}`);

function shipment(id: string, status = 'delivered'): string {
  return JSON.stringify({ id, shipmentId: `shp_${id}`, status, occurredAt: '2026-12-03T07:00:00Z' });
}

function collector() {
  let text = '';
  const stream = { write: (chunk: string) => ((text += chunk), true) } as unknown as NodeJS.WriteStream;
  return { stream, text: () => text };
}

/** `handoff <args> --json` against the sandbox (found through its state file), in this process. */
async function handoff<T = Record<string, unknown>>(args: readonly string[]): Promise<T> {
  const stdout = collector();
  const stderr = collector();
  const code = await main(['node', 'handoff', ...args, '--json'], { stdin: process.stdin, stdout: stdout.stream, stderr: stderr.stream } as Io);
  if (code !== 0) throw new Error(`handoff ${args.join(' ')} exited ${code}: ${stderr.text()}`);
  return JSON.parse(stdout.text()) as T;
}

function row(eventId: string, endpoint: string): Promise<DeliveryRecord | undefined> {
  return clients.ledger.get({ eventId, endpoint });
}

beforeAll(async () => {
  flaky = await startTimedReceiver(() => ({ status: fixed ? 200 : 503 }));
  healthy = await startTimedReceiver(() => ({ status: 200 }));
  gone = await startTimedReceiver(() => ({ status: 410 }));
  const endpoints: EndpointFields[] = [
    { name: 'flaky', url: flaky.url, eventTypes: ['shipment.delivered'], disableAfterFailures: 3, disableAfterSeconds: 60 },
    { name: 'healthy', url: healthy.url, eventTypes: ['shipment.delivered'] },
    { name: 'gone', url: gone.url, eventTypes: ['shipment.returned'] },
  ];
  sandbox = await startSandboxProcess({
    endpoints,
    endpointsCacheMs: 0,
    env: {
      HANDOFF_RETRY_SCHEDULE: '1',
      HANDOFF_MAX_ATTEMPTS: '20',
      HANDOFF_ATTEMPT_TIMEOUT_MS: '5000',
      HANDOFF_MAX_CONCURRENCY: '2',
      HANDOFF_RECOVERY_INTERVAL_MS: '1000',
    },
  });
  clients = new SandboxClients(sandbox.ready);
  registry = new DynamoDbEndpointRegistry({ client: clients.dynamodb, tableName: sandbox.ready.endpointsTable });
  health = new DynamoDbHealthStore(new RegistryTable(DynamoDBDocumentClient.from(clients.dynamodb), sandbox.ready.endpointsTable));
  process.env.HANDOFF_SANDBOX_FILE = sandbox.stateFile;
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
}, 90_000);

afterAll(async () => {
  delete process.env.HANDOFF_SANDBOX_FILE;
  clients?.close();
  await sandbox?.stop('SIGKILL');
  for (const receiver of [flaky, healthy, gone]) await receiver?.close();
});

describe('Parking in the sandbox', () => {
  it(
    'auto-disables an endpoint answering 503 with its notification, parks its deliveries (none dead, none lost), and enable delivers each once in admission order; the healthy endpoint is unaffected',
    async () => {
      // Prepare: one failure recorded 61 s ago, as if flaky had been failing since.
      await health.recordFailure('flaky', Date.now() - 61_000);

      // Act: the events one after another, each admitted for flaky before the next is sent (distinct createdAt).
      for (const id of ids) {
        await clients.send(shipment(id));
        await eventually(`${id}'s delivery to flaky to be admitted`, () => row(id, 'flaky'), { timeoutMs: SETTLE_MS, intervalMs: 50 });
      }
      const line = await sandbox.waitForLog(/"message":"endpoint disabled".*"endpoint":"flaky"/, SETTLE_MS);
      const parked = await eventually(
        `all ${EVENTS} deliveries to flaky to be parked`,
        async () => {
          const rows = await Promise.all(ids.map((id) => row(id, 'flaky')));
          return rows.every((r) => r?.parkedAt !== undefined) ? (rows as DeliveryRecord[]) : undefined;
        },
        {
          timeoutMs: SETTLE_MS,
          describe: async () => (await Promise.all(ids.map((id) => row(id, 'flaky')))).map((r) => `${r?.eventId}:${r?.state}${r?.parkedAt ? ',parked' : ''}`).join(' '),
        },
      );
      const healthyRows = await eventually(
        'every delivery to healthy to be delivered',
        async () => {
          const rows = await Promise.all(ids.map((id) => row(id, 'healthy')));
          return rows.every((r) => r?.state === 'delivered') ? (rows as DeliveryRecord[]) : undefined;
        },
        { timeoutMs: SETTLE_MS },
      );
      const listed = await handoff<{ name: string; state: string; parked: number }[]>(['endpoint', 'list']);
      const stats = await handoff<{ parkedCount: number; byEndpoint: Record<string, { parkedCount?: number }> }>(['stats']);

      // Assess: disabled by handoff, with its notification once.
      const notice = JSON.parse(line.slice(line.indexOf('{'))) as Record<string, unknown>;
      expect(notice).toMatchObject({ level: 'error', endpoint: 'flaky' });
      expect(notice.reason).toMatch(/\(autoDisable: 60 s and 3 attempts\)$/);
      expect(sandbox.stderr().filter((l) => l.includes('"message":"endpoint disabled"') && l.includes('"endpoint":"flaky"'))).toHaveLength(1);
      expect(await registry.get('flaky')).toMatchObject({ state: 'disabled', stateChange: { by: 'handoff', reason: notice.reason } });
      // Every delivery to flaky parked: pending, none dead; the command counts them.
      expect(parked.map((r) => [r.eventId, r.state])).toEqual(ids.map((id) => [id, 'pending']));
      expect(await clients.ledger.countByState('parked', { endpoint: 'flaky' })).toBe(EVENTS);
      expect(listed).toEqual([
        expect.objectContaining({ name: 'flaky', state: 'disabled', parked: EVENTS }),
        expect.objectContaining({ name: 'gone', state: 'enabled', parked: 0 }),
        expect.objectContaining({ name: 'healthy', state: 'enabled', parked: 0 }),
      ]);
      expect(stats).toMatchObject({ parkedCount: EVENTS, byEndpoint: { flaky: { parkedCount: EVENTS } } });
      // Healthy got each event once, delivered on its first attempt, while flaky failed.
      expect(healthyRows.map((r) => [r.eventId, r.attempts])).toEqual(ids.map((id) => [id, 1]));
      expect(healthy.arrivals.map((a) => a.eventId).sort()).toEqual(ids);
      expect(flaky.arrivals.every((a) => a.status === 503)).toBe(true);

      // Act: the receiver is fixed and the endpoint enabled; the recovery timer releases the parked deliveries.
      fixed = true;
      const enabledAfter = flaky.arrivals.length;
      const enabled = await handoff<{ state: string; parked: number; release: { rate: number } }>(['endpoint', 'enable', 'flaky', '--rate', '8', '--operator', 'e2e']);
      const delivered = await eventually(
        `all ${EVENTS} deliveries to flaky to be delivered`,
        async () => {
          const rows = await Promise.all(ids.map((id) => row(id, 'flaky')));
          return rows.every((r) => r?.state === 'delivered') ? (rows as DeliveryRecord[]) : undefined;
        },
        { timeoutMs: SETTLE_MS, describe: () => `${flaky.arrivals.length - enabledAfter} request(s) since enable` },
      );
      const shown = await handoff<{ parked: number }>(['endpoint', 'show', 'flaky']);

      // Assess: each delivered exactly once, first received in admission order; nothing dead or dead-lettered.
      expect(enabled).toMatchObject({ state: 'enabled', parked: EVENTS, release: { rate: 8 } });
      expect(delivered.every((r) => r.parkedAt === undefined)).toBe(true);
      const released = flaky.arrivals.slice(enabledAfter);
      expect(released.every((a) => a.status === 200)).toBe(true);
      expect(released.map((a) => a.eventId).sort()).toEqual(ids);
      const admissionOrder = [...parked].sort((a, b) => a.createdAt - b.createdAt).map((r) => r.eventId);
      expect(new Set(parked.map((r) => r.createdAt)).size).toBe(EVENTS);
      expect(released.map((a) => a.eventId)).toEqual(admissionOrder);
      expect(shown.parked).toBe(0);
      expect((await clients.readDeadLetters()).filter((d) => ids.includes(d.eventId ?? ''))).toEqual([]);
      // Healthy was not touched again: still one request per event.
      expect(healthy.arrivals.map((a) => a.eventId).sort()).toEqual(ids);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'disables an endpoint that answers 410, by handoff with the reason, its delivery dead as rejected and dead-lettered; its later deliveries are parked, never sent',
    async () => {
      // Act
      await clients.send(shipment('evt_gone_1', 'returned'));
      const dead = await eventually('evt_gone_1 → gone to die', async () => {
        const r = await row('evt_gone_1', 'gone');
        return r?.state === 'dead' ? r : undefined;
      }, { timeoutMs: SETTLE_MS });
      const disabled = await eventually('gone to be disabled', async () => {
        const current = await registry.get('gone');
        return current?.state === 'disabled' ? current : undefined;
      }, { timeoutMs: SETTLE_MS });
      await clients.send(shipment('evt_gone_2', 'returned'));
      const parked = await eventually('evt_gone_2 → gone to be parked', async () => {
        const r = await row('evt_gone_2', 'gone');
        return r?.parkedAt !== undefined ? r : undefined;
      }, { timeoutMs: SETTLE_MS });

      // Assess
      expect([dead.deadReason, dead.attempts]).toEqual(['rejected', 1]);
      expect(disabled.stateChange).toMatchObject({ by: 'handoff', reason: GONE_REASON });
      expect(parked).toMatchObject({ state: 'pending', attempts: 0 });
      expect(gone.arrivals.map((a) => [a.eventId, a.status])).toEqual([['evt_gone_1', 410]]);
      expect((await clients.readDeadLetters()).map((d) => [d.eventId, d.reason, d.endpoint])).toEqual([['evt_gone_1', 'rejected', 'gone']]);
      expect(await handoff<{ parked: number }>(['endpoint', 'show', 'gone'])).toMatchObject({ state: 'disabled', parked: 1 });
    },
    TEST_TIMEOUT_MS,
  );
});
