/**
 * Releasing parked deliveries (lib/resume.ts, docs/contract.md §12 "Parking") against dynalite and
 * fauxqs: rows parked through the real ledger for a disabled endpoint, `setState(enabled)` on the
 * real registry table (sandbox/endpoints-table.ts), and the release runs as the recovery function
 * and the sandbox's timer make them (the registry read by lib/recovery-endpoints.ts `registryEndpoints`).
 *
 * The runs are given a clock of their own, so the slots, the message delays and the settle time
 * are exact without the test sleeping; the queue the runs send to is the real one, wrapped to note
 * each send (its body, endpoint and delay) in the order made.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import type { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { createLogger, SERVICE_NAME } from '../../lib/observability';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import type { DeliveryQueue, EnqueueOptions } from '../../lib/queue/queue';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { registryEndpoints } from '../../lib/recovery-endpoints';
import { DEFAULT_RESUME_RATE, releaseParked, releaseResuming, STRAY_RECENT_MS, StraySweep, type ReleaseDeps, type Resume } from '../../lib/resume';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { useConsumerHarness, type ConsumerHarness, type Queues } from '../helpers/consumer-harness';
import { TEST_SEAL } from '../helpers/sqs-records';

const RETENTION_SECONDS = 86_400;
/** How long after `enable` a release may end (lib/resume.ts SETTLE_MS: twice the consumers' registry cache). */
const SETTLE_MS = 30_000;
const REGISTRY_TABLE = 'handoff-endpoints-resume-test';

let harness: ConsumerHarness;
let sqs: SQSClient;
let ledger: DynamoDbLedger;
let dynamodb: DynamoDBClient;
let registry: DynamoDbEndpointRegistry;
let readRegistry: ReturnType<typeof registryEndpoints>;
/** Near the real clock, so no row is past its expiry for the ledger's readers. */
const T0 = Date.now();

useConsumerHarness('resume-test', async (started) => {
  harness = started;
  ({ sqs, ledger, dynamodb } = harness);
  await createEndpointsTable(dynamodb, REGISTRY_TABLE);
  registry = new DynamoDbEndpointRegistry({ client: dynamodb, tableName: REGISTRY_TABLE });
  readRegistry = registryEndpoints(DynamoDBDocumentClient.from(dynamodb), REGISTRY_TABLE);
});

function shipmentEvent(id: string): ParsedEvent {
  const parsed = parseEvent(JSON.stringify({ id, shipmentId: `shp_${id}`, status: 'delivered', occurredAt: '2026-12-03T06:00:00Z' }));
  if (!parsed.ok) throw parsed.error;
  return parsed.value;
}

/** An endpoint in the registry, disabled, so its deliveries are parked. */
async function disabledEndpoint(name: string): Promise<void> {
  await seedEndpoints(registry, [{ name, url: 'https://hooks.example/in', eventTypes: ['*'] }], T0);
  await registry.setState(name, 'disabled', { by: 'test', reason: 'receiver down', at: T0 });
}

/** Parks each event for `endpoint` through the real ledger, admitted at its given time. */
async function park(endpoint: string, admissions: readonly (readonly [eventId: string, admittedAt: number])[]): Promise<void> {
  for (const [eventId, admittedAt] of admissions) {
    const row = await ledger.park({ event: shipmentEvent(eventId), endpoint, nowMs: admittedAt, policy: DEFAULT_RETRY_POLICY, retentionSeconds: RETENTION_SECONDS });
    expect(row).toMatchObject({ state: 'pending', attempts: 0, parkedAt: admittedAt, createdAt: admittedAt });
  }
}

async function enable(name: string, at: number, rate: number): Promise<void> {
  await registry.setState(name, 'enabled', { by: 'test', reason: 'receiver back', at }, rate);
}

/** The release in progress as the recovery runs read it from the registry. */
async function view(name: string): Promise<{ state?: string; resume?: Resume; enabledAt?: number }> {
  const endpoints = await readRegistry();
  const found = endpoints.get(name);
  if (found === undefined) throw new Error(`no endpoint ${name} in the registry`);
  return found;
}

interface Sent {
  readonly eventId: string;
  readonly endpoint: string | undefined;
  readonly delaySeconds: number | undefined;
}

/** The real queue, noting each send in the order made. */
function recordingQueue(queues: Queues): { queue: Pick<DeliveryQueue, 'enqueue'>; sent: Sent[] } {
  const real = new SqsDeliveryQueue({ client: sqs, queueUrl: queues.queueUrl, deadLetterQueueUrl: queues.deadLetterQueueUrl, seal: TEST_SEAL });
  const sent: Sent[] = [];
  return {
    sent,
    queue: {
      async enqueue(body: string, options: EnqueueOptions = {}) {
        sent.push({ eventId: (JSON.parse(body) as { id: string }).id, endpoint: options.endpoint, delaySeconds: options.delaySeconds });
        await real.enqueue(body, options);
      },
    },
  };
}

function deps(queue: Pick<DeliveryQueue, 'enqueue'>, clock: { now: number }, horizonMs: number, lines: string[] = []): ReleaseDeps {
  return {
    ledger,
    queue,
    store: registry,
    now: () => clock.now,
    horizonMs,
    logger: createLogger({ service: SERVICE_NAME, write: (line) => lines.push(line) }),
  };
}

async function parkedIds(endpoint: string): Promise<string[]> {
  const page = await ledger.listByState('parked', { endpoint, limit: 1000 });
  return page.records.map((r) => r.eventId);
}

async function pendingIds(endpoint: string): Promise<string[]> {
  const page = await ledger.listByState('pending', { endpoint, limit: 1000 });
  return page.records.map((r) => r.eventId);
}

const bodyId = (body: string | undefined) => (JSON.parse(body ?? '{}') as { id?: string }).id;

describe('Function: releaseParked, on the emulators', () => {
  it('releases oldest admission first at the slots, takes each window once, goes on in the next, and ends once none is left and the settle time is over', async () => {
    // Prepare: six rows parked in an order other than their admission.
    const name = 'release-acme';
    await disabledEndpoint(name);
    const admitted = (i: number) => T0 + 100 + i * 10;
    await park(name, [
      ['evt_rel_3', admitted(3)],
      ['evt_rel_0', admitted(0)],
      ['evt_rel_5', admitted(5)],
      ['evt_rel_1', admitted(1)],
      ['evt_rel_4', admitted(4)],
      ['evt_rel_2', admitted(2)],
    ]);
    expect(await ledger.countByState('parked', { endpoint: name })).toBe(6);
    const enabledAt = T0 + 1_000;
    await enable(name, enabledAt, 8); // the ramp: 1 per second for the first minute
    const queues = await harness.createQueues(30);
    const { queue, sent } = recordingQueue(queues);
    const clock = { now: enabledAt };
    const begun = await view(name);
    expect(begun).toEqual({ state: 'enabled', resume: { since: enabledAt, rate: 8 }, enabledAt });

    // Act: the first run schedules 4 s (4 slots, a second apart); a second run at once with the same view.
    const first = await releaseParked(name, begun.resume!, deps(queue, clock, 4_000));
    const again = await releaseParked(name, begun.resume!, deps(queue, clock, 4_000));

    // Assess
    expect(first).toEqual({ endpoint: name, released: 4, finished: false, skipped: false });
    expect(again).toEqual({ endpoint: name, released: 0, finished: false, skipped: true });
    expect(sent).toEqual([
      { eventId: 'evt_rel_0', endpoint: name, delaySeconds: 0 },
      { eventId: 'evt_rel_1', endpoint: name, delaySeconds: 1 },
      { eventId: 'evt_rel_2', endpoint: name, delaySeconds: 2 },
      { eventId: 'evt_rel_3', endpoint: name, delaySeconds: 3 },
    ]);
    expect(await parkedIds(name)).toEqual(['evt_rel_4', 'evt_rel_5']);
    // Each released row is listed as pending (recovery finds it should its message be lost), no longer parked.
    expect(await pendingIds(name)).toEqual(['evt_rel_0', 'evt_rel_1', 'evt_rel_2', 'evt_rel_3']);
    const released = await ledger.get({ eventId: 'evt_rel_0', endpoint: name });
    expect(released).toMatchObject({ state: 'pending', attempts: 0 });
    expect(released).not.toHaveProperty('parkedAt');
    expect((await view(name)).resume).toEqual({ since: enabledAt, rate: 8, until: enabledAt + 4_000 });

    // Act: the next run, at the end of the window taken: the two rows left, nothing more.
    clock.now = enabledAt + 4_000;
    const second = await releaseParked(name, (await view(name)).resume!, deps(queue, clock, 4_000));

    // Assess: released, but the release goes on until the settle time (a consumer may still park one).
    expect(second).toEqual({ endpoint: name, released: 2, finished: false, skipped: false });
    expect(sent.slice(4)).toEqual([
      { eventId: 'evt_rel_4', endpoint: name, delaySeconds: 0 },
      { eventId: 'evt_rel_5', endpoint: name, delaySeconds: 1 },
    ]);
    expect(await parkedIds(name)).toEqual([]);
    expect((await view(name)).resume).toEqual({ since: enabledAt, rate: 8, until: enabledAt + 8_000 });

    // Act: a run after the settle time, with none left.
    clock.now = enabledAt + SETTLE_MS;
    const last = await releaseParked(name, (await view(name)).resume!, deps(queue, clock, 4_000));

    // Assess: the release is over; the registry no longer holds it.
    expect(last).toEqual({ endpoint: name, released: 0, finished: true, skipped: false });
    expect(await view(name)).toEqual({ state: 'enabled', enabledAt: expect.any(Number) });
    expect(sent).toHaveLength(6);
    // Every release is on the real queue, once, for its endpoint.
    const messages = await harness.receive(queues.queueUrl, 6, { delete: true });
    expect(messages.map((m) => bodyId(m.Body)).sort()).toEqual(['evt_rel_0', 'evt_rel_1', 'evt_rel_2', 'evt_rel_3', 'evt_rel_4', 'evt_rel_5']);
    expect(messages.every((m) => m.MessageAttributes?.endpoint?.StringValue === name)).toBe(true);
  });

  it('does not end a release before the settle time even with none left', async () => {
    const name = 'release-early';
    await disabledEndpoint(name);
    await park(name, [['evt_early_0', T0 + 100]]);
    const enabledAt = T0 + 1_000;
    await enable(name, enabledAt, 8);
    const { queue } = recordingQueue(await harness.createQueues(30));
    const clock = { now: enabledAt };

    const first = await releaseParked(name, (await view(name)).resume!, deps(queue, clock, 4_000));
    clock.now = enabledAt + SETTLE_MS - 1;
    const beforeSettle = await releaseParked(name, (await view(name)).resume!, deps(queue, clock, 4_000));

    expect(first).toMatchObject({ released: 1, finished: false });
    expect(beforeSettle).toEqual({ endpoint: name, released: 0, finished: false, skipped: false });
    expect((await view(name)).resume).toMatchObject({ since: enabledAt, rate: 8 });
  });

  it('a disable during a release ends it: no run releases more, and the rows left stay parked', async () => {
    // Prepare: three parked, a release begun, one run releasing one (a window of one slot).
    const name = 'release-disabled';
    await disabledEndpoint(name);
    await park(name, [
      ['evt_dis_0', T0 + 100],
      ['evt_dis_1', T0 + 110],
      ['evt_dis_2', T0 + 120],
    ]);
    const enabledAt = T0 + 1_000;
    await enable(name, enabledAt, 8);
    const { queue, sent } = recordingQueue(await harness.createQueues(30));
    const clock = { now: enabledAt };
    await releaseParked(name, (await view(name)).resume!, deps(queue, clock, 1_000));
    const during = await view(name);
    expect(sent.map((s) => s.eventId)).toEqual(['evt_dis_0']);

    // Act: disabled; then the runs, one with the view read before the disable.
    await registry.setState(name, 'disabled', { by: 'test', reason: 'down again', at: enabledAt + 500 });
    clock.now = enabledAt + 1_000;
    const stale = await releaseParked(name, during.resume!, deps(queue, clock, 1_000));
    const runs = await releaseResuming(new Map([[name, await view(name)]]), deps(queue, clock, 1_000));

    // Assess
    expect(await view(name)).toEqual({ state: 'disabled' });
    expect(stale).toEqual({ endpoint: name, released: 0, finished: false, skipped: true });
    expect(runs).toEqual([]);
    expect(sent).toHaveLength(1);
    expect(await parkedIds(name)).toEqual(['evt_dis_1', 'evt_dis_2']);
  });

  it("begins a release for an enabled endpoint with parked deliveries and none in progress (a stale consumer's park after its release ended)", async () => {
    // Prepare: enabled, its release over, and then a delivery parked by a consumer with an old copy.
    const name = 'release-stray';
    await disabledEndpoint(name);
    await enable(name, T0 + 1_000, 8);
    expect(await registry.finishResume(name, T0 + 1_000)).toBe(true);
    await park(name, [['evt_stray', T0 + 90_000]]);
    const { queue, sent } = recordingQueue(await harness.createQueues(30));
    const clock = { now: T0 + 100_000 };
    const lines: string[] = [];

    // Act: one run; then another, with nothing left.
    const runs = await releaseResuming(new Map([[name, await view(name)]]), deps(queue, clock, 1_000, lines));
    const resumed = await view(name);
    clock.now += 60_000;
    const next = await releaseResuming(new Map([[name, resumed]]), deps(queue, clock, 1_000, lines));

    // Assess
    expect(runs).toEqual([{ endpoint: name, released: 1, finished: false, skipped: false }]);
    expect(resumed.resume).toMatchObject({ since: T0 + 100_000, rate: DEFAULT_RESUME_RATE });
    expect(sent.map((s) => [s.eventId, s.endpoint])).toEqual([['evt_stray', name]]);
    expect(await parkedIds(name)).toEqual([]);
    expect(lines.some((line) => line.includes('release begun: deliveries parked for an enabled endpoint'))).toBe(true);
    expect(next).toEqual([{ endpoint: name, released: 0, finished: true, skipped: false }]);
    expect((await view(name)).resume).toBeUndefined();
  });

  it('looks for strays only at enabled endpoints, and begins nothing where none is parked', async () => {
    await disabledEndpoint('release-quiet');
    await enable('release-quiet', T0, 8);
    await registry.finishResume('release-quiet', T0);
    const { queue, sent } = recordingQueue(await harness.createQueues(30));

    const runs = await releaseResuming(new Map([['release-quiet', await view('release-quiet')]]), deps(queue, { now: T0 + 60_000 }, 1_000));

    expect(runs).toEqual([]);
    expect(sent).toEqual([]);
    expect((await view('release-quiet')).resume).toBeUndefined();
  });

  it('checks an endpoint enabled again over an hour before the run only in its turn of the sweep, a share of the endpoints per run', async () => {
    // Prepare: three enabled endpoints, their releases over, a stray parked delivery at the last in name order.
    const names = ['sweep-a', 'sweep-b', 'sweep-c'];
    for (const name of names) {
      await disabledEndpoint(name);
      await enable(name, T0, 8);
      await registry.finishResume(name, T0);
    }
    await park('sweep-c', [['evt_sweep', T0 + 1_000]]);
    const endpoints = new Map(await Promise.all(names.map(async (name) => [name, await view(name)] as const)));
    const later = T0 + STRAY_RECENT_MS + 60_000;
    const { queue, sent } = recordingQueue(await harness.createQueues(30));
    const sweep = new StraySweep(2);

    // Act: a run without a sweep; then two runs sharing one, two endpoints a run.
    const unswept = await releaseResuming(endpoints, deps(queue, { now: later }, 1_000));
    const first = await releaseResuming(endpoints, { ...deps(queue, { now: later }, 1_000), sweep });
    const second = await releaseResuming(endpoints, { ...deps(queue, { now: later + 60_000 }, 1_000), sweep });

    // Assess
    expect(unswept).toEqual([]);
    expect(first).toEqual([]);
    expect(second).toEqual([{ endpoint: 'sweep-c', released: 1, finished: false, skipped: false }]);
    expect(sent.map((s) => [s.eventId, s.endpoint])).toEqual([['evt_sweep', 'sweep-c']]);
    expect(await parkedIds('sweep-c')).toEqual([]);
  });

  it('releases 150 rows across listing pages in admission order, each once, and goes on in the next run where a window holds fewer', async () => {
    // Prepare: 150 rows, admitted a millisecond apart, parked in reverse; a ramp of 125 per second.
    const name = 'release-bulk';
    await disabledEndpoint(name);
    const ids = Array.from({ length: 150 }, (_, i) => `evt_bulk_${String(i).padStart(3, '0')}`);
    await park(
      name,
      ids.map((id, i) => [id, T0 + 100 + i] as const).reverse(),
    );
    const enabledAt = T0 + 1_000;
    await enable(name, enabledAt, 1000);
    const queues = await harness.createQueues(30);
    const { queue, sent } = recordingQueue(queues);
    const clock = { now: enabledAt };

    // Act: a window of one second holds 125 slots; the next run takes the rest.
    const first = await releaseParked(name, (await view(name)).resume!, deps(queue, clock, 1_000));
    clock.now = enabledAt + 1_000;
    const second = await releaseParked(name, (await view(name)).resume!, deps(queue, clock, 1_000));

    // Assess
    expect(first).toMatchObject({ released: 125, skipped: false });
    expect(second).toMatchObject({ released: 25, skipped: false });
    expect(sent.map((s) => s.eventId)).toEqual(ids);
    expect(sent.every((s) => s.endpoint === name)).toBe(true);
    // Slots 8 ms apart: the first of each window at once, the rest within its second.
    const delays = (n: number) => Array.from({ length: n }, (_, i) => (i === 0 ? 0 : 1));
    expect(sent.map((s) => s.delaySeconds)).toEqual([...delays(125), ...delays(25)]);
    expect(await ledger.countByState('parked', { endpoint: name })).toBe(0);
    expect((await pendingIds(name)).sort()).toEqual(ids);
    const messages = await harness.receive(queues.queueUrl, 150, { delete: true });
    expect(messages.map((m) => bodyId(m.Body)).sort()).toEqual(ids);
  });

  it('lays a long window out with delays that follow the slots, up to the ramp', async () => {
    // 40 rows, a ramp of 2.5 per second (the default 20/s's first minute), a window of 10 s: 25 slots, 400 ms apart.
    const name = 'release-spread';
    await disabledEndpoint(name);
    const ids = Array.from({ length: 40 }, (_, i) => `evt_spread_${String(i).padStart(2, '0')}`);
    await park(name, ids.map((id, i) => [id, T0 + 100 + i] as const));
    const enabledAt = T0 + 1_000;
    await enable(name, enabledAt, 20);
    const { queue, sent } = recordingQueue(await harness.createQueues(30));
    const clock = { now: enabledAt };

    const run = await releaseParked(name, (await view(name)).resume!, deps(queue, clock, 10_000));

    expect(run).toMatchObject({ released: 25 });
    expect(sent.map((s) => s.eventId)).toEqual(ids.slice(0, 25));
    // Slot i at 400·i ms: delayed ⌈0.4·i⌉ s.
    expect(sent.map((s) => s.delaySeconds)).toEqual(Array.from({ length: 25 }, (_, i) => Math.ceil((400 * i) / 1000)));
    expect(await ledger.countByState('parked', { endpoint: name })).toBe(15);
  });
});
