/**
 * Fan-out end to end (docs/contract.md §11), in the sandbox: an endpoints file of three endpoints,
 * each on a loopback receiver of its own with its own secret, with overlapping subscriptions and a
 * `data.carrier` match:
 *
 * | endpoint       | receiver                        | subscribes to                                   |
 * |----------------|---------------------------------|-------------------------------------------------|
 * | `carrier-acme` | healthy                         | in_transit, out_for_delivery, delivered; acme   |
 * | `notifications`| 503 twice for evt_fan_all, then 200 | delivered, exception                        |
 * | `billing`      | rejects everything with 400     | delivered, returned                             |
 *
 * Each event reaches exactly the endpoints it routes to, once each, under the same event ID, signed
 * with each endpoint's own secret; trouble at one endpoint (retries at `notifications`, a dead
 * delivery at `billing`) neither delays nor repeats another's; an event nobody subscribes to reaches
 * nobody; `handoff replay --endpoint` replays one endpoint's delivery only; ten copies of one
 * producer message still make one request per endpoint.
 *
 * The tests share one sandbox and run in order (later ones build on the rows of earlier ones): run
 * the file, not a single test. Timings shortened: waits of 1 s; 5 s attempts, so a receiver
 * starved of CPU for a second does not turn an attempt into a timeout (an extra request).
 */
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { runHandoff, type CliRun } from '../helpers/cli';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import type { SandboxProcess } from '../helpers/sandbox';
import { useSandboxProcess } from '../helpers/sandbox-suite';
import { eventually, SandboxClients, type DeadLetter } from '../helpers/sandbox-clients';

const SECRETS = {
  'carrier-acme': 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=',
  notifications: 'whsec_/uCW0n0KPpd7EnSxkS82xgxojTF+Q5yIYx5I0pyVR/s=',
  billing: 'whsec_702+veGS/MiOVx7pe3/2NNAlE0qZ17uoSm4vo9rXhNE=',
} as const;
type Name = keyof typeof SECRETS;
const NAMES = Object.keys(SECRETS) as Name[];
const SETTLE_MS = 60_000;
const TEST_TIMEOUT_MS = 90_000;

const receivers = {} as Record<Name, TestReceiver>;
let sandbox: SandboxProcess;
let clients: SandboxClients;

function shipment(id: string, status: string, carrier: string): string {
  return JSON.stringify({ id, shipmentId: `shp_${id}`, status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier } });
}

/** What each event routes to, by the table above. */
const EVENTS = {
  /** delivered, acme: all three. */
  evt_fan_all: { body: shipment('evt_fan_all', 'delivered', 'acme'), to: ['billing', 'carrier-acme', 'notifications'] },
  /** in transit, acme: the carrier only (the match holds, the others do not take in_transit). */
  evt_fan_transit: { body: shipment('evt_fan_transit', 'in_transit', 'acme'), to: ['carrier-acme'] },
  /** delivered, zephyr: not the carrier (the match fails), both others. */
  evt_fan_zephyr: { body: shipment('evt_fan_zephyr', 'delivered', 'zephyr'), to: ['billing', 'notifications'] },
  /** an exception: notifications only. */
  evt_fan_exception: { body: shipment('evt_fan_exception', 'exception', 'acme'), to: ['notifications'] },
  /** in transit, zephyr: nobody (the carrier's match fails, nobody else takes in_transit). */
  evt_fan_none: { body: shipment('evt_fan_none', 'in_transit', 'zephyr'), to: [] },
} as const satisfies Record<string, { body: string; to: readonly Name[] }>;

useSandboxProcess(
  async () => {
    for (const name of NAMES) receivers[name] = await startTestReceiver();
    receivers.billing.answerByDefault({ status: 400, body: 'unknown shipment' });
    receivers.notifications.respondTo('evt_fan_all', 503, 503);
    const endpoints: EndpointFields[] = [
      {
        name: 'carrier-acme',
        url: receivers['carrier-acme'].url,
        eventTypes: ['shipment.in_transit', 'shipment.out_for_delivery', 'shipment.delivered'],
        match: { 'data.carrier': ['acme'] },
        secret: SECRETS['carrier-acme'],
      },
      { name: 'notifications', url: receivers.notifications.url, eventTypes: ['shipment.delivered', 'shipment.exception'], secret: SECRETS.notifications },
      { name: 'billing', url: receivers.billing.url, eventTypes: ['shipment.delivered', 'shipment.returned'], secret: SECRETS.billing },
    ];
    return {
      endpoints,
      env: { HANDOFF_RETRY_SCHEDULE: '1,1,1', HANDOFF_MAX_ATTEMPTS: '4', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000', HANDOFF_MAX_CONCURRENCY: '2' },
    };
  },
  (started) => ({ sandbox, clients } = started),
  async () => {
    for (const receiver of Object.values(receivers)) await receiver.close();
  },
);

function row(eventId: string, endpoint: string): Promise<DeliveryRecord | undefined> {
  return clients.ledger.get({ eventId, endpoint });
}

/** The row once it is delivered or dead. */
function settled(eventId: string, endpoint: string): Promise<DeliveryRecord> {
  return eventually(
    `${eventId} → ${endpoint} to be delivered or dead`,
    async () => {
      const record = await row(eventId, endpoint);
      return record !== undefined && record.state !== 'pending' ? record : undefined;
    },
    { timeoutMs: SETTLE_MS, describe: async () => describeRow(await row(eventId, endpoint)) },
  );
}

function describeRow(record: DeliveryRecord | undefined): string {
  if (record === undefined) return 'no row';
  return `${record.state}, ${record.attempts} attempt(s) [${record.history.map((h) => h.outcome).join(', ')}]`;
}

async function queueDrains(): Promise<void> {
  await eventually('the delivery queue to drain', async () => (await clients.queueDepth()) === 0, {
    timeoutMs: SETTLE_MS,
    describe: async () => `${await clients.queueDepth()} message(s)`,
  });
}

/** Event IDs of the requests a receiver got, sorted (one per request). */
function requestedIds(name: Name): string[] {
  return receivers[name].requests.map((r) => String(r.eventId)).sort();
}


function handoff(args: readonly string[]): Promise<CliRun> {
  return runHandoff(args, sandbox.stateFile);
}

/** Rows as they settled in the first test, to show later that replay left them alone. */
const settledRows = new Map<string, DeliveryRecord>();

describe('Fan-out: one event, each endpoint its own delivery', { timeout: TEST_TIMEOUT_MS }, () => {
  it('delivers each event to exactly the endpoints it routes to, each its own outcome', async () => {
    // Act
    await clients.sendAll(Object.values(EVENTS).map(({ body }) => body));
    for (const [eventId, { to }] of Object.entries(EVENTS)) {
      for (const endpoint of to) settledRows.set(`${eventId} → ${endpoint}`, await settled(eventId, endpoint));
    }
    await queueDrains();

    // Assess: healthy, retried, rejected: each on its own row
    expect(settledRows.get('evt_fan_all → carrier-acme')).toMatchObject({ state: 'delivered', attempts: 1 });
    const retried = settledRows.get('evt_fan_all → notifications')!;
    expect(retried).toMatchObject({ state: 'delivered', attempts: 3 });
    expect(retried.history.map((h) => [h.outcome, h.status])).toEqual([
      ['temporary', 503],
      ['temporary', 503],
      ['accepted', 200],
    ]);
    const rejected = settledRows.get('evt_fan_all → billing')!;
    expect(rejected).toMatchObject({ state: 'dead', deadReason: 'rejected', attempts: 1 });
    expect(rejected.deadDetail).toContain('400');
    expect(settledRows.get('evt_fan_zephyr → notifications')).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(settledRows.get('evt_fan_zephyr → billing')).toMatchObject({ state: 'dead', deadReason: 'rejected' });
    // … and no row for an endpoint an event does not route to
    for (const [eventId, { to }] of Object.entries(EVENTS)) {
      expect((await clients.ledger.deliveriesOf(eventId)).map((r) => r.endpoint).sort(), eventId).toEqual([...to]);
    }
  });

  it('each receiver saw exactly its events, each applied once, an event nobody wants by nobody', () => {
    expect(requestedIds('carrier-acme')).toEqual(['evt_fan_all', 'evt_fan_transit']);
    expect(requestedIds('notifications')).toEqual(['evt_fan_all', 'evt_fan_all', 'evt_fan_all', 'evt_fan_exception', 'evt_fan_zephyr']);
    expect(requestedIds('billing')).toEqual(['evt_fan_all', 'evt_fan_zephyr']);
    expect([...receivers['carrier-acme'].applied].sort()).toEqual(['evt_fan_all', 'evt_fan_transit']);
    expect([...receivers.notifications.applied].sort()).toEqual(['evt_fan_all', 'evt_fan_exception', 'evt_fan_zephyr']);
    expect(receivers.billing.applied).toEqual([]);
    for (const name of NAMES) expect(receivers[name].requestsFor('evt_fan_none'), name).toEqual([]);
  });

  it('sends every endpoint the same event ID and body, signed with that endpoint\'s own secret', () => {
    const requests = NAMES.flatMap((name) => receivers[name].requestsFor('evt_fan_all').map((request) => ({ name, request })));
    expect(requests).toHaveLength(1 + 3 + 1);
    for (const { name, request } of requests) {
      expect([request.headers['webhook-id'], request.headers['idempotency-key']], name).toEqual(['evt_fan_all', 'evt_fan_all']);
      expect(request.body, name).toBe(requests[0]!.request.body);
      // Its own secret verifies; neither other endpoint's does.
      expect(NAMES.filter((other) => receivers[name].verify(request, SECRETS[other])), name).toEqual([name]);
    }
  });

  it('dead-letters the rejected deliveries with their reason and endpoint, and only those', async () => {
    // Act
    await eventually('2 dead letters', async () => (await clients.queueDepth(sandbox.ready.deadLetterQueueUrl)) >= 2, { timeoutMs: SETTLE_MS });
    const deadLetters = await clients.readDeadLetters();

    // Assess
    const order = (list: DeadLetter[]) => [...list].sort((a, b) => String(a.eventId).localeCompare(String(b.eventId)));
    expect(order(deadLetters)).toEqual([
      { body: EVENTS.evt_fan_all.body, reason: 'rejected', eventId: 'evt_fan_all', endpoint: 'billing' },
      { body: EVENTS.evt_fan_zephyr.body, reason: 'rejected', eventId: 'evt_fan_zephyr', endpoint: 'billing' },
    ]);
  });

  it('shows each decision on standard error by event ID and endpoint, never a payload', () => {
    const log = sandbox.stderr();
    const decided = (pattern: RegExp) => log.some((line) => pattern.test(line));
    expect(decided(/^worker \d+: evt_fan_all → billing, carrier-acme, notifications fanned out$/)).toBe(true);
    expect(decided(/^worker \d+: evt_fan_none unrouted \(no endpoint subscribes\)$/)).toBe(true);
    expect(decided(/^worker \d+: evt_fan_all → carrier-acme delivered$/)).toBe(true);
    expect(decided(/^worker \d+: evt_fan_all → notifications retry in \d+ s \(temporary, after temporary \(503\)\)$/)).toBe(true);
    expect(decided(/^worker \d+: evt_fan_all → notifications delivered$/)).toBe(true);
    expect(decided(/^worker \d+: evt_fan_all → billing dead-letter \(rejected, after rejected \(400\)\)$/)).toBe(true);
    expect(log.join('\n')).not.toContain('shp_evt_fan');
    expect(log.join('\n')).not.toContain('unknown shipment');
  });
});

describe('Fan-out: replaying one endpoint\'s delivery', { timeout: TEST_TIMEOUT_MS }, () => {
  it('delivers once to that endpoint and leaves the other endpoints and the other dead delivery untouched', async () => {
    // Prepare: billing fixed what made it refuse.
    receivers.billing.answerByDefault(200);
    const requestsBefore = Object.fromEntries(NAMES.map((name) => [name, receivers[name].requests.length]));

    // Act
    const replayed = await handoff(['replay', 'evt_fan_all', '--endpoint', 'billing', '--operator', 'e2e', '--reason', 'billing fixed its schema']);
    const record = await settled('evt_fan_all', 'billing');
    await queueDrains();

    // Assess
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(record).toMatchObject({ state: 'delivered', replays: 1 });
    expect(receivers.billing.requests.length - requestsBefore.billing!).toBe(1);
    expect(receivers.billing.requestsFor('evt_fan_all').at(-1)!.answer).toBe(200);
    expect(receivers.billing.applied).toEqual(['evt_fan_all']);
    expect(receivers['carrier-acme'].requests.length).toBe(requestsBefore['carrier-acme']);
    expect(receivers.notifications.requests.length).toBe(requestsBefore.notifications);
    expect(await row('evt_fan_all', 'carrier-acme')).toEqual(settledRows.get('evt_fan_all → carrier-acme'));
    expect(await row('evt_fan_all', 'notifications')).toEqual(settledRows.get('evt_fan_all → notifications'));
    expect(await row('evt_fan_zephyr', 'billing')).toEqual(settledRows.get('evt_fan_zephyr → billing'));
  });

  it('status --json shows every endpoint\'s delivery of the event, and --endpoint just one', async () => {
    // Act
    const all = await handoff(['status', 'evt_fan_all', '--json']);
    const one = await handoff(['status', 'evt_fan_all', '--endpoint', 'billing', '--json']);

    // Assess
    expect([all.code, one.code], all.stderr + one.stderr).toEqual([0, 0]);
    const status = JSON.parse(all.stdout) as { eventId: string; deliveries: { endpoint: string; state: string; attempts: number }[] };
    expect(status.eventId).toBe('evt_fan_all');
    expect(status.deliveries.map(({ endpoint, state }) => [endpoint, state])).toEqual([
      ['billing', 'delivered'],
      ['carrier-acme', 'delivered'],
      ['notifications', 'delivered'],
    ]);
    expect(status.deliveries.find((d) => d.endpoint === 'notifications')).toMatchObject({ attempts: 3 });
    expect(JSON.parse(one.stdout)).toEqual(status.deliveries.find((d) => d.endpoint === 'billing'));
  });

  it("status --shipment finds a shipment's deliveries across its events and endpoints, newest first, a page at a time", async () => {
    // Prepare: two events of one shipment, to one endpoint each (in transit: the carrier; an exception: notifications).
    const lookup = (id: string, status: string) =>
      JSON.stringify({ id, shipmentId: 'shp_fan_lookup', status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier: 'acme' } });
    await clients.sendAll([lookup('evt_fan_lookup_1', 'in_transit')]);
    await settled('evt_fan_lookup_1', 'carrier-acme');
    await clients.sendAll([lookup('evt_fan_lookup_2', 'exception')]);
    await settled('evt_fan_lookup_2', 'notifications');

    // Act
    const all = await handoff(['status', '--shipment', 'shp_fan_lookup', '--json']);
    const first = await handoff(['status', '--shipment', 'shp_fan_lookup', '--limit', '1', '--json']);
    const firstPage = JSON.parse(first.stdout) as { next: string | null };
    const second = await handoff(['status', '--shipment', 'shp_fan_lookup', '--limit', '1', '--cursor', String(firstPage.next), '--json']);
    const human = await handoff(['status', '--shipment', 'shp_fan_lookup']);
    const event = await handoff(['status', 'evt_fan_lookup_2', '--json']);

    // Assess
    expect([all.code, first.code, second.code, human.code, event.code], all.stderr + first.stderr + second.stderr + human.stderr).toEqual([0, 0, 0, 0, 0]);
    const status = JSON.parse(all.stdout) as { shipmentId: string; deliveries: { eventId: string; endpoint: string; state: string }[]; next: string | null };
    expect(status.shipmentId).toBe('shp_fan_lookup');
    expect(status.deliveries.map(({ eventId, endpoint, state }) => [eventId, endpoint, state])).toEqual([
      ['evt_fan_lookup_2', 'notifications', 'delivered'],
      ['evt_fan_lookup_1', 'carrier-acme', 'delivered'],
    ]);
    expect(status.next).toBeNull();
    // Each delivery as `status --json` shows it.
    expect(status.deliveries[0]).toEqual((JSON.parse(event.stdout) as { deliveries: unknown[] }).deliveries[0]);
    expect(firstPage.next).toEqual(expect.any(String));
    expect([...(JSON.parse(first.stdout) as typeof status).deliveries, ...(JSON.parse(second.stdout) as typeof status).deliveries]).toEqual(status.deliveries);
    expect((JSON.parse(second.stdout) as typeof status).next).toBeNull();
    expect(human.stdout).toContain('shipment shp_fan_lookup: 2 deliveries, newest first');
  });
});

describe('Fan-out: copies of one producer message', { timeout: TEST_TIMEOUT_MS }, () => {
  it('sends one request per endpoint for ten copies of one message in one SendMessageBatch', async () => {
    // Prepare
    const eventId = 'evt_fan_copies';
    const body = shipment(eventId, 'delivered', 'acme');

    // Act
    await clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: sandbox.ready.queueUrl,
        Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `copy${i}`, MessageBody: body })),
      }),
    );
    const records = [];
    for (const endpoint of ['billing', 'carrier-acme', 'notifications']) records.push(await settled(eventId, endpoint));
    // Every copy answered (copies refused while a delivery was in flight return once its lease lapses).
    await queueDrains();

    // Assess
    for (const record of records) expect(record, record.endpoint).toMatchObject({ state: 'delivered', attempts: 1 });
    for (const name of NAMES) {
      expect(receivers[name].requestsFor(eventId), name).toHaveLength(1);
      expect(receivers[name].applied.filter((id) => id === eventId), name).toEqual([eventId]);
    }
  });

  it('still sent nothing for the event nobody subscribes to', () => {
    for (const name of NAMES) expect(receivers[name].requestsFor('evt_fan_none'), name).toEqual([]);
  });
});

