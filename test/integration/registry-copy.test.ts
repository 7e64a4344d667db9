/**
 * The registry read by change (lib/endpoints/registry-copy.ts over lib/endpoints/dynamodb-registry-listing.ts)
 * against dynalite: a copy sees every change consumers must see on its next refresh, a refresh with
 * nothing changed is one Query and no item read, a writer whose clock is behind is still seen, a
 * removed endpoint's tombstone reads as absent everywhere and a name can be added again, and the
 * paged listing by owner and state.
 */
import { GetItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { clockCorrection, DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { SCAN_SEGMENTS } from '../../lib/endpoints/dynamodb-registry-listing';
import { DynamoDbRateLimiter } from '../../lib/endpoints/dynamodb-rate-limit';
import { changeStamp } from '../../lib/endpoints/dynamodb-registry-table';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { CHANGE_LOOKBACK_MS, FULL_READ_AFTER_MS, ONE_CLOCK_CHANGE_WINDOW, RegistryCopy, changesOf, type ChangeWindow } from '../../lib/endpoints/registry-copy';
import { CHANGE_FEED, REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';
import { EndpointNotFoundError } from '../../lib/errors';
import type { ShipmentEvent } from '../../lib/event';
import { createLogger } from '../../lib/observability';
import { registryEndpoints } from '../../lib/recovery-endpoints';
import { registryRouting } from '../../lib/routing';
import type { WebhookSender } from '../../lib/webhook/sender';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { TEST_SECRET } from '../helpers/secrets';
import type { CommandCounter } from '../helpers/dynalite';
import { useDynalite } from '../helpers/dynalite-fixture';

const T0 = Date.parse('2026-12-04T10:00:00Z');
const MINUTE = 60_000;

let client: DynamoDBClient;
let counter: CommandCounter;
let tableName: string;
let registry: DynamoDbEndpointRegistry;
let tables = 0;
/** The writers' clock and the copy's, moved by the tests. */
let nowMs = T0;

const endpoint = (name: string, extra: Partial<EndpointFields> = {}): EndpointFields => ({
  name,
  url: `https://${name}.example/hook`,
  eventTypes: ['shipment.delivered'],
  ...extra,
});

useDynalite((started) => {
  ({ client, counter } = started);
});

beforeEach(async () => {
  tableName = `registry-copy-${++tables}`;
  await createEndpointsTable(client, tableName);
  nowMs = T0;
  registry = new DynamoDbEndpointRegistry({ client, tableName, now: () => nowMs });
  counter.reset();
});

/** A copy on the table, its cold start made. */
async function warmCopy(): Promise<{ copy: RegistryCopy; names: () => Promise<string[]> }> {
  const copy = new RegistryCopy(registry, { now: () => nowMs });
  await copy.list();
  const names = async () => (await copy.list()).map((record) => record.fields.name).sort();
  return { copy, names };
}

describe('Class: RegistryCopy on DynamoDB', () => {
  it('sees an add, an update, a disable and a removal on its next refresh', async () => {
    await registry.add(endpoint('acme'), nowMs);
    const { copy, names } = await warmCopy();

    nowMs += 1000;
    await registry.add(endpoint('zephyr'), nowMs);
    expect(await names()).toEqual(['acme', 'zephyr']);

    nowMs += 1000;
    const acme = (await registry.get('acme'))!;
    await registry.update({ ...acme.fields, url: 'https://acme.example/v2' }, acme.updatedAt, nowMs);
    nowMs += 1000;
    await registry.setState('zephyr', 'disabled', { by: 'ops', reason: 'maintenance', at: nowMs });
    const changed = await copy.list();
    expect(changed.find((r) => r.fields.name === 'acme')?.fields.url).toBe('https://acme.example/v2');
    expect(changed.find((r) => r.fields.name === 'zephyr')?.state).toBe('disabled');

    nowMs += 1000;
    await registry.remove('acme');
    expect(await names()).toEqual(['zephyr']);
  });

  it('sees a health write that marks its change (a pause), and keeps the other records as they were', async () => {
    await registry.add(endpoint('acme'), nowMs);
    await registry.add(endpoint('zephyr'), nowMs);
    const { copy } = await warmCopy();
    const before = await copy.list();

    nowMs += 1000;
    const A = REGISTRY_SCHEMA.attributes;
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { name: { S: 'acme' } },
        UpdateExpression: 'SET #paused = :until, #changedAt = :now, #feed = :feed',
        ExpressionAttributeNames: { '#paused': A.pausedUntil, '#changedAt': A.changedAt, '#feed': A.feed },
        ExpressionAttributeValues: { ':until': { N: String(nowMs + 30_000) }, ':now': { N: String(nowMs) }, ':feed': { S: CHANGE_FEED } },
      }),
    );
    const after = await copy.list();

    expect(after).not.toBe(before);
    expect(after.find((r) => r.fields.name === 'acme')?.health?.pausedUntil).toBe(nowMs + 30_000);
    expect(after.find((r) => r.fields.name === 'zephyr')).toBe(before.find((r) => r.fields.name === 'zephyr'));
    expect([...changesOf(after)!.changed.keys()]).toEqual(['acme']);
  });

  it('reads every item at its cold start in parallel scan segments, each endpoint once', async () => {
    for (let i = 0; i < 40; i += 1) await registry.add(endpoint(`ep-${i}`), nowMs);
    counter.reset();

    const records = await new RegistryCopy(registry, { now: () => nowMs }).list();

    expect(counter.counts()).toEqual({ Scan: SCAN_SEGMENTS });
    expect(new Set(records.map((r) => r.fields.name)).size).toBe(40);
    expect(records).toHaveLength(40);
  });

  it('refreshes with nothing changed in exactly one Query, reading no item, and hands out the same array', async () => {
    for (let i = 0; i < 50; i += 1) await registry.add(endpoint(`ep-${i}`), nowMs);
    const { copy } = await warmCopy();
    const held = await copy.list();
    counter.reset();

    nowMs += 15_000;
    const again = await copy.list();

    expect(counter.counts()).toEqual({ Query: 1 });
    expect(again).toBe(held);
  });

  /** 30 endpoints added at once, then a copy refreshed after each step: how many index entries each refresh's Query got back. */
  async function bulkLoadAnswers(steps: readonly number[], window?: ChangeWindow): Promise<number[]> {
    for (let i = 0; i < 30; i += 1) await registry.add(endpoint(`ep-${i}`), nowMs);
    const answers: number[] = [];
    const source = {
      readAll: () => registry.readAll(),
      readNames: (names: readonly string[]) => registry.readNames(names),
      changedSince: async (since: number) => {
        const marks = await registry.changedSince(since);
        answers.push(marks.length);
        return marks;
      },
    };
    const copy = new RegistryCopy(source, { now: () => nowMs, ...(window !== undefined ? { window } : {}) });
    await copy.list();
    for (const step of steps) {
      nowMs += step;
      await copy.list();
    }
    return answers;
  }

  it('asks from 15 minutes before its last refresh, so a bulk load\'s keys stop coming back once that has passed', async () => {
    // The third refresh a millisecond past 15 minutes after the load, so the fourth asks from after its stamps.
    expect(await bulkLoadAnswers([5 * MINUTE, 5 * MINUTE, 5 * MINUTE + 1, 15_000])).toEqual([30, 30, 30, 0]);
  });

  it('on one clock (the sandbox\'s window), stops getting a bulk load\'s keys back once its 30 s have passed', async () => {
    expect(await bulkLoadAnswers([15_000, 15_001, 1_000], ONE_CLOCK_CHANGE_WINDOW)).toEqual([30, 30, 0]);
  });

  it('reads only the changed endpoints, in one BatchGetItem, after the one Query', async () => {
    for (let i = 0; i < 20; i += 1) await registry.add(endpoint(`ep-${i}`), nowMs);
    const { copy } = await warmCopy();
    nowMs += 1000;
    await registry.setState('ep-3', 'disabled', { by: 'ops', reason: 'r', at: nowMs });
    counter.reset();

    await copy.list();

    expect(counter.counts()).toEqual({ Query: 1, BatchGetItem: 1 });
  });

  it('sees a change written by a writer whose clock is 4 minutes behind', async () => {
    await registry.add(endpoint('acme'), nowMs);
    const { names } = await warmCopy();
    nowMs += 10 * MINUTE;
    await registry.add(endpoint('fresh'), nowMs);
    expect(await names()).toEqual(['acme', 'fresh']);

    nowMs += 15_000;
    const late = new DynamoDbEndpointRegistry({ client, tableName, now: () => nowMs - 4 * MINUTE });
    await late.add(endpoint('late'), nowMs);

    expect(await names()).toEqual(['acme', 'fresh', 'late']);
  });

  it('sees two changes of one endpoint made within a second by a writer on its own clock (the SDK\'s whole-second offset not applied)', async () => {
    const writer = new DynamoDbEndpointRegistry({ client, tableName });
    await writer.add(endpoint('acme'), Date.now());
    const copy = new RegistryCopy(writer);
    await copy.list();

    const first = (await writer.get('acme'))!;
    const second = await writer.update({ ...first.fields, url: 'https://acme.example/1' }, first.updatedAt, Date.now());
    const seenFirst = (await copy.list())[0]?.fields.url;
    await writer.update({ ...second.fields, url: 'https://acme.example/2' }, second.updatedAt, Date.now());
    const seenSecond = (await copy.list())[0]?.fields.url;

    expect([seenFirst, seenSecond]).toEqual(['https://acme.example/1', 'https://acme.example/2']);
    expect([clockCorrection(-370), clockCorrection(-240_000)]).toEqual([0, -240_000]);
  });

  it('reads everything again after going longer than the lookback allows without a refresh', async () => {
    await registry.add(endpoint('acme'), nowMs);
    const { copy } = await warmCopy();
    counter.reset();

    nowMs += FULL_READ_AFTER_MS + 1;
    await copy.list();

    expect(counter.counts().Query).toBeUndefined();
    expect(counter.counts().Scan).toBeGreaterThanOrEqual(1);
    expect(FULL_READ_AFTER_MS).toBeLessThan(CHANGE_LOOKBACK_MS - 5 * MINUTE);
  });

  it('keeps the copy when a refresh fails, and fails its cold start', async () => {
    await registry.add(endpoint('acme'), nowMs);
    const { copy, names } = await warmCopy();
    const broken = new DynamoDbEndpointRegistry({ client, tableName: 'no-such-table' });

    await expect(new RegistryCopy(broken).list()).rejects.toThrow(/no-such-table/);
    expect(await names()).toEqual(['acme']);
    expect(await copy.list()).toBe(await copy.list());
  });
});

describe('Function: registryRouting over a copy of the registry on DynamoDB', () => {
  it('routes nowhere once an endpoint is removed (its tombstone read), and to it again once its name is added back', async () => {
    await registry.add(endpoint('acme', { secret: TEST_SECRET }), nowMs);
    const copy = new RegistryCopy(registry, { now: () => nowMs });
    const routing = registryRouting({
      records: () => copy.list(),
      deployment: DEFAULT_DEPLOYMENT,
      createSender: () => ({ send: () => Promise.reject(new Error('not sent')) }) as WebhookSender,
      logger: createLogger({ service: 'handoff', write: () => {} }),
      now: () => nowMs,
    });
    const delivered: ShipmentEvent = { id: 'evt_1', shipmentId: 'shp_1', status: 'delivered', occurredAt: '2026-12-04T10:00:00Z' };
    const routed = async () => [...(await routing.routes({ events: [delivered], endpoints: ['acme'] })).endpoints.keys()];

    const before = await routed();
    nowMs += 15_000;
    await registry.remove('acme');
    const removed = await routed();
    nowMs += 15_000;
    await registry.add(endpoint('acme', { secret: TEST_SECRET }), nowMs);
    const again = await routed();

    expect([before, removed, again]).toEqual([['acme'], [], ['acme']]);
  });
});

describe('Function: registryEndpoints (the recovery runs\' reader)', () => {
  it('reads every item once, then with nothing changed one Query a run; a pause, a release and a removal on the next run', async () => {
    await registry.add(endpoint('acme'), nowMs);
    await registry.add(endpoint('zephyr'), nowMs);
    // A rate limit's schedule item beside them: never an endpoint's view.
    await new DynamoDbRateLimiter({ client, tableName }).reserve('acme', 1, 5, nowMs);
    const documents = DynamoDBDocumentClient.from(client);
    const endpoints = registryEndpoints(documents, tableName, { now: () => nowMs });
    await endpoints();
    counter.reset();

    nowMs += 60_000;
    const quiet = await endpoints();
    const quietCounts = counter.counts();
    nowMs += 1000;
    await registry.setState('acme', 'disabled', { by: 'ops', reason: 'r', at: nowMs });
    nowMs += 1000;
    await registry.setState('acme', 'enabled', { by: 'ops', reason: 'r', at: nowMs }, 5);
    await registry.remove('zephyr');
    const changed = await endpoints();
    await registry.takeWindow('acme', nowMs, undefined, nowMs + 60_000);
    counter.reset();
    const windowMoved = await endpoints();

    expect(quietCounts).toEqual({ Query: 1 });
    expect([...quiet.keys()].sort()).toEqual(['acme', 'zephyr']);
    expect([...changed.keys()]).toEqual(['acme']);
    expect(changed.get('acme')).toEqual({ state: 'enabled', resume: { since: nowMs, rate: 5 }, enabledAt: nowMs });
    expect(windowMoved.get('acme')?.resume).toEqual({ since: nowMs, rate: 5, until: nowMs + 60_000 });
    expect(counter.counts()).toEqual({ Query: 1, BatchGetItem: 1 });
  });
});

describe('Function: changeStamp', () => {
  it('stamps a change within its millisecond, with a random thousandth, so two changes of one millisecond seldom share a stamp', () => {
    const t = 1_796_400_000_000;
    const stamps = Array.from({ length: 1000 }, () => changeStamp(t));

    expect(stamps.every((stamp) => stamp > t && stamp < t + 1 && Number(String(stamp)) === stamp && /^\d+\.\d{1,3}$/.test(String(stamp)))).toBe(true);
    // 1,000 draws of 999 values: about 632 distinct; fewer than 500 would be a broken source.
    expect(new Set(stamps).size).toBeGreaterThan(500);
  });
});

describe('Class: DynamoDbEndpointRegistry tombstones', () => {
  it('reads a removed endpoint as absent everywhere, refuses to change it, and lets its name be added again', async () => {
    await registry.add(endpoint('acme', { owner: 'merchant-1' }), nowMs);
    await registry.remove('acme');

    expect(await registry.get('acme')).toBeUndefined();
    expect(await registry.list()).toEqual([]);
    expect((await registry.page({ owner: 'merchant-1' })).items).toEqual([]);
    expect(await registry.readNames(['acme'])).toEqual([{ name: 'acme', changedAt: expect.any(Number) }]);
    expect(Math.trunc((await registry.readNames(['acme']))[0]!.changedAt)).toBe(nowMs);
    await expect(registry.remove('acme')).rejects.toBeInstanceOf(EndpointNotFoundError);
    await expect(registry.setState('acme', 'disabled', { by: 'ops', reason: 'r', at: nowMs })).rejects.toBeInstanceOf(EndpointNotFoundError);
    await expect(registry.update(endpoint('acme'), nowMs, nowMs + 1)).rejects.toBeInstanceOf(EndpointNotFoundError);

    nowMs += 1000;
    const again = await registry.add(endpoint('acme'), nowMs);

    expect(await registry.get('acme')).toEqual(again);
  });

  it('keeps only the key, the removal and the change on the tombstone, expiring a day later', async () => {
    await registry.add(endpoint('acme', { owner: 'merchant-1', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }), nowMs);
    await registry.remove('acme');

    const { Item } = await client.send(new GetItemCommand({ TableName: tableName, Key: { name: { S: 'acme' } } }));

    expect(Item).toEqual({
      name: { S: 'acme' },
      removedAt: { N: String(nowMs) },
      expiresAt: { N: String(nowMs / 1000 + 86_400) },
      changedAt: { N: expect.stringMatching(new RegExp(`^${nowMs}\\.\\d{1,3}$`)) },
      feed: { S: CHANGE_FEED },
    });
  });
});

describe('Method: DynamoDbEndpointRegistry.page', () => {
  beforeEach(async () => {
    for (const [name, owner] of [
      ['a-1', 'merchant-1'],
      ['a-2', 'merchant-1'],
      ['a-3', 'merchant-1'],
      ['a-4', 'merchant-1'],
      ['a-5', 'merchant-1'],
      ['b-1', 'merchant-2'],
      ['c-1', undefined],
    ] as const) {
      await registry.add(endpoint(name, owner !== undefined ? { owner } : {}), nowMs);
    }
    await registry.setState('a-2', 'disabled', { by: 'ops', reason: 'r', at: nowMs });
    await registry.setState('a-4', 'disabled', { by: 'ops', reason: 'r', at: nowMs });
  });

  it("pages an owner's endpoints in name order with a cursor, the last page without one", async () => {
    const names: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await registry.page({ owner: 'merchant-1', limit: 2, ...(cursor !== undefined ? { cursor } : {}) });
      names.push(page.items.map((r) => r.fields.name));
      cursor = page.next;
    } while (cursor !== undefined);

    expect(names.flat()).toEqual(['a-1', 'a-2', 'a-3', 'a-4', 'a-5']);
    expect(names[0]).toEqual(['a-1', 'a-2']);
  });

  it("filters an owner's endpoints by state, filling each page", async () => {
    const first = await registry.page({ owner: 'merchant-1', state: 'enabled', limit: 2 });
    const second = await registry.page({ owner: 'merchant-1', state: 'enabled', limit: 2, cursor: first.next! });

    expect(first.items.map((r) => r.fields.name)).toEqual(['a-1', 'a-3']);
    expect(second.items.map((r) => r.fields.name)).toEqual(['a-5']);
  });

  it('pages every endpoint, and by state alone, each once', async () => {
    const all: string[] = [];
    const disabled: string[] = [];
    for (const [into, state] of [
      [all, undefined],
      [disabled, 'disabled'],
    ] as const) {
      let cursor: string | undefined;
      do {
        const page = await registry.page({ limit: 3, ...(state !== undefined ? { state } : {}), ...(cursor !== undefined ? { cursor } : {}) });
        into.push(...page.items.map((r) => r.fields.name));
        cursor = page.next;
      } while (cursor !== undefined);
    }

    expect(all.sort()).toEqual(['a-1', 'a-2', 'a-3', 'a-4', 'a-5', 'b-1', 'c-1']);
    expect(disabled.sort()).toEqual(['a-2', 'a-4']);
  });

  it('moves an endpoint to its new owner on update, and out of the index when its owner is cleared', async () => {
    const b1 = (await registry.get('b-1'))!;
    await registry.update({ ...b1.fields, owner: 'merchant-1' }, b1.updatedAt, nowMs + 1);
    const a1 = (await registry.get('a-1'))!;
    const { owner: _dropped, ...cleared } = a1.fields;
    await registry.update(cleared, a1.updatedAt, nowMs + 1);

    expect((await registry.page({ owner: 'merchant-1' })).items.map((r) => r.fields.name)).toEqual(['a-2', 'a-3', 'a-4', 'a-5', 'b-1']);
    expect((await registry.page({ owner: 'merchant-2' })).items).toEqual([]);
  });

  it('refuses a cursor it did not issue, or one issued with other filters, and a limit outside 1–100', async () => {
    const first = await registry.page({ owner: 'merchant-1', limit: 2 });

    await expect(registry.page({ cursor: 'not-a-cursor' })).rejects.toThrow(RangeError);
    await expect(registry.page({ owner: 'merchant-2', cursor: first.next! })).rejects.toThrow(/--owner and --state/);
    await expect(registry.page({ limit: 0 })).rejects.toThrow(/1 to 100/);
    await expect(registry.page({ limit: 101 })).rejects.toThrow(/1 to 100/);
  });
});
