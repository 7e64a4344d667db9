/**
 * DynamoDbRateLimiter with the real AWS SDK against dynalite on loopback: consumers reserving at
 * once on one endpoint's schedule never get overlapping slots nor more than the rate in any second;
 * the schedule is an item of its own in the registry table, never the endpoint's, never listed, and
 * expiring by itself; a missing table is a named error. And the real
 * consumer handler against fauxqs, dynalite and a loopback receiver: deliveries over the limit are
 * put back carrying their slots, with no ledger write, and delivered on their return without
 * reserving again. Assertions are on the slots handed out, never on how fast anything ran.
 */
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { RESOURCE_ENV } from '../../lib/config';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbRateLimiter } from '../../lib/endpoints/dynamodb-rate-limit';
import { MemoryRateLimiter, slotIntervalMs, type Reservation } from '../../lib/endpoints/rate-limit';
import { REGISTRY_SCHEMA, scheduleKey } from '../../lib/endpoints/registry-schema';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { captureStdout, CREDENTIALS, REGION, startConsumerHarness, type ConsumerHarness, type Handler } from '../helpers/consumer-harness';
import {
  countCommands,
  emulatorDynamoDbClient,
  readsAndWrites,
  returnOldItemOnConditionFailure,
  startDynalite,
  type Dynalite,
} from '../helpers/dynalite';
import { TEST_SECRET as SECRET } from '../helpers/secrets';

const T0 = Date.parse('2026-12-03T08:00:00Z');

let dynalite: Dynalite;
let client: DynamoDBClient;
let tableName: string;
let registry: DynamoDbEndpointRegistry;
let tables = 0;
const clients: DynamoDBClient[] = [];

/** A consumer of its own: its own client (so its own connections), as another Lambda container has. */
function consumerClient(awsRefusals = true): DynamoDBClient {
  const own = emulatorDynamoDbClient(dynalite.endpoint);
  // AWS returns the item with a refused write (ALL_OLD); dynalite does not, so this adds it.
  if (awsRefusals) returnOldItemOnConditionFailure(own, client);
  clients.push(own);
  return own;
}

/** Microseconds between two schedule values (ms to three decimals), exact. */
const microsBetween = (from: number, to: number) => Math.round((to - from) * 1000);

/** The most slots in any one-second window (half-open), over ascending slots. */
function mostInOneSecond(slots: readonly number[]): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < slots.length; end++) {
    while (microsBetween(slots[start]!, slots[end]!) >= 1_000_000) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

beforeAll(async () => {
  dynalite = await startDynalite();
  client = emulatorDynamoDbClient(dynalite.endpoint);
});

afterAll(async () => {
  for (const c of clients) c.destroy();
  client.destroy();
  await dynalite.close();
});

describe('Class: DynamoDbRateLimiter', () => {
  beforeEach(async () => {
    tableName = `endpoints-rate-${++tables}`;
    await createEndpointsTable(client, tableName);
    registry = new DynamoDbEndpointRegistry({ client, tableName });
    await registry.add({ name: 'acme', url: 'https://hooks.acme.example/handoff', eventTypes: ['*'], secret: SECRET, rateLimitPerSecond: 50 }, T0);
  });

  it('hands five consumers reserving at once slots that never overlap nor exceed the rate in any second', async () => {
    // Prepare: five consumers, each reserving for batches of 1–10 deliveries, all at the same instants.
    const perSecond = 50;
    const limiters = Array.from({ length: 5 }, () => new DynamoDbRateLimiter({ client: consumerClient(), tableName, horizonMs: 5_000 }));
    const asked: Reservation[] = [];
    const requests: { now: number; reservation: Reservation; count: number }[] = [];

    // Act: 12 rounds 100 ms apart; in each, every consumer reserves concurrently.
    for (let round = 0; round < 12; round++) {
      const now = T0 + round * 100;
      const results = await Promise.all(
        limiters.map(async (limiter, i) => {
          const count = ((round + i) % 10) + 1;
          return { now, count, reservation: await limiter.reserve('acme', count, perSecond, now) };
        }),
      );
      requests.push(...results);
      asked.push(...results.map((r) => r.reservation));
    }

    // Assess
    const slots = asked.flatMap((r) => r.slots).sort((a, b) => a - b);
    for (let i = 1; i < slots.length; i++) expect(microsBetween(slots[i - 1]!, slots[i]!)).toBeGreaterThanOrEqual(slotIntervalMs(perSecond) * 1000);
    expect(mostInOneSecond(slots)).toBeLessThanOrEqual(perSecond);
    for (const { now, count, reservation } of requests) {
      expect(reservation.slots.length).toBeLessThanOrEqual(count);
      for (const slot of reservation.slots) {
        expect(slot).toBeGreaterThanOrEqual(now);
        expect(slot).toBeLessThanOrEqual(now + 5_000);
      }
    }
    // Far more was asked (330 slots) than 5 s of horizon holds: the schedule is booked to its edge,
    // with no slot lost between reservations, and every consumer told how long to wait.
    expect(slots.length).toBeGreaterThanOrEqual(250);
    expect(microsBetween(slots[0]!, slots.at(-1)!)).toBe((slots.length - 1) * slotIntervalMs(perSecond) * 1000);
    expect(requests.filter((r) => r.reservation.slots.length < r.count).every((r) => r.reservation.waitMs! >= 0)).toBe(true);
  });

  it('reserves as the in-memory schedule does, one conditional write per reservation and no read on AWS', async () => {
    const own = consumerClient();
    const counter = countCommands(own);
    const limiter = new DynamoDbRateLimiter({ client: own, tableName });
    const reference = new MemoryRateLimiter();
    const steps = [
      { count: 10, at: 0 },
      { count: 3, at: 50 },
      { count: 1, at: 5_000 },
      { count: 7, at: 5_010 },
    ];

    for (const { count, at } of steps) {
      expect(await limiter.reserve('acme', count, 5, T0 + at)).toEqual(await reference.reserve('acme', count, 5, T0 + at));
    }

    // Idle, busy, idle, busy: each guessed from what the consumer saw last, so each one write.
    expect(readsAndWrites(counter.counts())).toEqual({ reads: 0, writes: steps.length });
  });

  it("learns another consumer's reservation from its refused write, and answers beyond the horizon without a request", async () => {
    const first = new DynamoDbRateLimiter({ client: consumerClient(), tableName, horizonMs: 2_000 });
    const own = consumerClient();
    const counter = countCommands(own);
    const second = new DynamoDbRateLimiter({ client: own, tableName, horizonMs: 2_000 });

    await first.reserve('acme', 10, 5, T0); // slots +0 … +1.8 s; next free +2 s
    const partly = await second.reserve('acme', 3, 5, T0); // new or busy, all 3 within the horizon: refused, learns +2 s, reserves the one that fits
    const none = await second.reserve('acme', 3, 5, T0 + 100); // knows +2.2 s is beyond +2.1 s: no request

    expect(partly).toEqual({ slots: [T0 + 2_000], waitMs: 200 });
    expect(none).toEqual({ slots: [], waitMs: 100 });
    expect(readsAndWrites(counter.counts())).toEqual({ reads: 0, writes: 2 });
  });

  it('reads the schedule once after a refusal where the store does not return the item (dynalite), and reserves all the same', async () => {
    const first = new DynamoDbRateLimiter({ client: consumerClient(false), tableName });
    const own = consumerClient(false);
    const second = new DynamoDbRateLimiter({ client: own, tableName });
    await second.reserve('acme', 1, 10, T0); // its slot passes: it next guesses the schedule idle
    await first.reserve('acme', 2, 10, T0 + 5_000);
    const counter = countCommands(own);

    const reservation = await second.reserve('acme', 2, 10, T0 + 5_000);

    expect(reservation).toEqual({ slots: [T0 + 5_200, T0 + 5_300] });
    expect(counter.counts()).toEqual({ UpdateItem: 2, GetItem: 1 });
  });

  it('lets consumers starting at once on a new schedule all reserve with one write each, none refused', async () => {
    const owns = Array.from({ length: 4 }, () => consumerClient());
    const counters = owns.map((own) => countCommands(own));
    const limiters = owns.map((own) => new DynamoDbRateLimiter({ client: own, tableName }));

    const reservations = await Promise.all(limiters.map((limiter) => limiter.reserve('acme', 10, 50, T0)));

    const slots = reservations.flatMap((r) => r.slots).sort((a, b) => a - b);
    expect(slots).toEqual(Array.from({ length: 40 }, (_, i) => T0 + i * 20));
    expect(counters.map((counter) => counter.counts())).toEqual(owns.map(() => ({ UpdateItem: 1 })));
  });

  it("keeps the schedule on an item of its own, expiring an hour past its horizon, never the endpoint's: the endpoint is as the operator left it", async () => {
    const before = await registry.get('acme');
    const limiter = new DynamoDbRateLimiter({ client: consumerClient(), tableName });

    await limiter.reserve('acme', 4, 50, T0 + 1_000);
    await limiter.reserve('acme', 4, 50, T0 + 1_000);

    const schedule = await client.send(new GetItemCommand({ TableName: tableName, Key: { name: { S: scheduleKey('acme') } }, ConsistentRead: true }));
    expect(schedule.Item).toEqual({
      name: { S: 'acme#rate' },
      [REGISTRY_SCHEMA.attributes.rateNext]: { N: String(T0 + 1_160) },
      [REGISTRY_SCHEMA.attributes.expiresAt]: { N: String((T0 + 61_000) / 1000 + 3_600) },
    });
    const endpoint = await client.send(new GetItemCommand({ TableName: tableName, Key: { name: { S: 'acme' } }, ConsistentRead: true }));
    expect(endpoint.Item?.[REGISTRY_SCHEMA.attributes.rateNext]).toBeUndefined();
    expect(await registry.get('acme')).toEqual(before);
    // Listed nowhere: the registry's scans and pages see one endpoint.
    expect((await registry.list()).map((r) => r.fields.name)).toEqual(['acme']);
    expect((await registry.readAll()).map((e) => e.name)).toEqual(['acme']);
    expect((await registry.page({ limit: 1 })).items.map((r) => r.fields.name)).toEqual(['acme']);
    expect((await registry.scan()).unreadable).toEqual([]);
    expect(await registry.get(scheduleKey('acme'))).toBeUndefined();
    // An operator's update conditioned on the updatedAt it read still succeeds.
    await expect(registry.update({ ...before!.fields, rateLimitPerSecond: 20 }, before!.updatedAt, T0 + 2_000)).resolves.toMatchObject({ updatedAt: T0 + 2_000 });
  });

  it('takes a schedule booked further ahead than any consumer reserves (a clock far ahead) as free', async () => {
    const ahead = new DynamoDbRateLimiter({ client: consumerClient(), tableName });
    const limiter = new DynamoDbRateLimiter({ client: consumerClient(), tableName });
    await ahead.reserve('acme', 1, 5, T0 + 3_600_000);

    const reservation = await limiter.reserve('acme', 2, 5, T0);
    const next = await limiter.reserve('acme', 1, 5, T0);

    expect(reservation).toEqual({ slots: [T0, T0 + 200] });
    expect(next).toEqual({ slots: [T0 + 400] });
  });

  it("needs no endpoint item: a removed endpoint's schedule is written on its own item, which never brings the endpoint back", async () => {
    const limiter = new DynamoDbRateLimiter({ client: consumerClient(), tableName });
    await registry.remove('acme');

    const reservation = await limiter.reserve('acme', 1, 5, T0);

    expect(reservation).toEqual({ slots: [T0] });
    expect(await registry.get('acme')).toBeUndefined();
    expect(await registry.list()).toEqual([]);
  });

  it('names the table and the endpoint when the store cannot be used', async () => {
    const limiter = new DynamoDbRateLimiter({ client: consumerClient(), tableName: 'no-such-table' });

    const failed = limiter.reserve('acme', 1, 5, T0);

    await expect(failed).rejects.toMatchObject({
      name: 'RateLimitError',
      code: 'rate-limit-unavailable',
      message: 'rate limit: endpoint registry no-such-table failed to reserve slots for endpoint "acme": ResourceNotFoundException',
    });
  });
});

describe('Function: handler (functions/consumer.ts) with a rate limit', () => {
  let harness: ConsumerHarness;
  let dynamodb: DynamoDBClient;

  beforeAll(async () => {
    harness = await startConsumerHarness('consumer-rate-limit');
    dynamodb = new DynamoDBClient({ region: REGION, endpoint: harness.emulators.dynamodbEndpoint, credentials: CREDENTIALS });
  });

  afterAll(async () => {
    dynamodb?.destroy();
    await harness?.close();
  });

  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  /** One invocation as the event source mapping makes it: the handler, then deletes what succeeded. */
  function invoke(handler: Handler, queueUrl: string, messages: Message[]) {
    return harness.invoke(handler, queueUrl, messages);
  }

  it('sends what is due within a second, puts the rest back carrying their slots with no ledger write, and delivers them on return without reserving again', async () => {
    // Prepare: an endpoint limited to 2 per second (slots 500 ms apart) and six events for it.
    const { queueUrl, deadLetterQueueUrl } = await harness.createQueues(30);
    const endpointsTable = 'handoff-endpoints-rate';
    await createEndpointsTable(dynamodb, endpointsTable);
    const endpoints = new DynamoDbEndpointRegistry({ client: dynamodb, tableName: endpointsTable });
    await seedEndpoints(endpoints, [{ name: 'limited', url: harness.receiver.url, eventTypes: ['*'], secret: SECRET, rateLimitPerSecond: 2 }], Date.now());
    const handler = await harness.coldStart({
      [RESOURCE_ENV.queueUrl]: queueUrl,
      [RESOURCE_ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
      [RESOURCE_ENV.endpointsTable]: endpointsTable,
      [RESOURCE_ENV.endpointsCacheMs]: '0',
    });
    const ids = Array.from({ length: 6 }, (_, i) => `evt_rate_${i + 1}`);
    for (const id of ids) {
      const body = JSON.stringify({ id, shipmentId: 'shp_1', status: 'delivered', occurredAt: '2026-12-03T08:00:00Z' });
      await harness.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    }
    const lines = captureStdout();

    // Act: the first batch; then the messages put back, as they return.
    const first = await invoke(handler, queueUrl, await harness.receive(queueUrl, 6));
    const sentFirst = harness.receiver.requests.map((r) => r.eventId);
    const rows = await Promise.all(ids.map((id) => harness.ledger.get({ eventId: id, endpoint: 'limited' })));
    const putBack = await harness.receive(queueUrl, 3);
    const rateNextAfterFirst = await rateNext(endpointsTable);
    const second = await invoke(handler, queueUrl, putBack);

    // Assess: three sent at once (slots +0, +0.5 s, +1 s), three put back and acknowledged.
    expect(first.batchItemFailures).toEqual([]);
    expect(sentFirst).toHaveLength(3);
    // No ledger row for a delivery put back: waiting wrote nothing.
    expect(rows.filter((row) => row !== undefined).map((row) => row!.eventId).sort()).toEqual([...sentFirst].sort());
    const slots = putBack.map((m) => Number(m.MessageAttributes?.notBefore?.StringValue)).sort((a, b) => a - b);
    expect(putBack.every((m) => m.MessageAttributes?.endpoint?.StringValue === 'limited' && m.MessageAttributes?.notBeforeRate?.StringValue === '2')).toBe(true);
    expect([slots[1]! - slots[0]!, slots[2]! - slots[1]!]).toEqual([500, 500]);
    expect(rateNextAfterFirst).toBe(slots[2]! + 500);
    // On return: delivered, with no reservation (the schedule is as the first batch left it).
    expect(second.batchItemFailures).toEqual([]);
    expect(await rateNext(endpointsTable)).toBe(rateNextAfterFirst);
    expect([...harness.receiver.applied].sort()).toEqual([...ids].sort());
    expect(harness.receiver.requests).toHaveLength(6);
    const held = lines.filter((l) => l.includes('"why":"rate-limited"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(held.map((l) => l.eventId).sort()).toEqual(ids.filter((id) => !sentFirst.includes(id)).sort());
    expect(lines.join('\n')).not.toContain('shp_1');
    const documents = lines.filter((l) => l.startsWith('{"_aws"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(documents.filter((d) => d.Endpoint === 'limited').reduce((sum, d) => sum + Number(d.RateLimited ?? 0), 0)).toBe(3);
  });

  async function rateNext(table: string): Promise<number> {
    const { Item } = await dynamodb.send(new GetItemCommand({ TableName: table, Key: { name: { S: scheduleKey('limited') } }, ConsistentRead: true }));
    return Number(Item?.[REGISTRY_SCHEMA.attributes.rateNext]?.N);
  }
});
