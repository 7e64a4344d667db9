/**
 * The management API's read routes (docs/contract.md §16) through its one handler, against real
 * emulators and rows the real ledger wrote: a shipment's deliveries (newest first), the dead ones
 * (oldest death first, by endpoint, owner, window and reason), and stats as `handoff stats --json`.
 * Pages are followed by `next` to the end; every answer is checked against the OpenAPI document.
 */
import { PassThrough } from 'node:stream';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { recordJson } from '../../cli/commands/record-view';
import { statsCommand } from '../../cli/commands/stats';
import { CommandContext } from '../../cli/context';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { ownedEndpoint, parsed, settledDelivery, shipmentEvent, startTestbed, type ApiAnswer, type Testbed } from '../helpers/api-testbed';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const SECOND = 1000;

let bed: Testbed;

beforeAll(async () => {
  bed = await startTestbed('api-reads');
});

afterAll(async () => {
  await bed?.close();
});

beforeEach(async () => {
  await bed.reset();
});

/** Every item of a listing, following `next` from the first page to the last, and the pages' sizes. */
async function allPages(path: string, query: Record<string, string>, caller?: string): Promise<{ sizes: number[]; items: DeliveryRecord[] }> {
  const items: DeliveryRecord[] = [];
  const sizes: number[] = [];
  let next: string | null = null;
  do {
    const page: ApiAnswer = await bed.call({ method: 'GET', path, query: next === null ? query : { ...query, cursor: next }, ...(caller === undefined ? {} : { caller }) });
    expect(page.status).toBe(200);
    items.push(...(page.body.items as DeliveryRecord[]));
    sizes.push(page.body.items.length);
    next = page.body.next;
  } while (next !== null);
  return { sizes, items };
}

const keys = (items: readonly Pick<DeliveryRecord, 'eventId' | 'endpoint'>[]) => items.map((d) => `${d.eventId}@${d.endpoint}`);
/** The rows as the API shows them: recordJson, through JSON. */
const shown = (rows: readonly DeliveryRecord[]) => JSON.parse(JSON.stringify(rows.map(recordJson))) as unknown;

describe('GET /v1/shipments/{shipmentId}/deliveries', () => {
  it("pages through every delivery of the shipment's events, newest admission first, without repeats or gaps", async () => {
    // Prepare: three events of shp_r (admitted a second apart), each to two endpoints (crm's row 100 ms after billing's); one event of another shipment.
    const rows: DeliveryRecord[] = [];
    for (const [i, id] of ['evt_r1', 'evt_r2', 'evt_r3'].entries()) {
      for (const [j, endpoint] of ['billing', 'crm'].entries()) {
        rows.push(await settledDelivery(bed.ledger, parsed(shipmentEvent(id, 'shp_r')), endpoint, T0 + i * SECOND + j * 100, i === 1 ? 'rejected' : 'delivered'));
      }
    }
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_other', 'shp_other')), 'billing', T0, 'delivered');

    // Act
    const { sizes, items } = await allPages('/v1/shipments/shp_r/deliveries', { limit: '4' });

    // Assess
    expect(sizes).toEqual([4, 2]);
    expect(keys(items)).toEqual(['evt_r3@crm', 'evt_r3@billing', 'evt_r2@crm', 'evt_r2@billing', 'evt_r1@crm', 'evt_r1@billing']);
    const byKey = new Map(rows.map((r) => [`${r.eventId}@${r.endpoint}`, r]));
    expect(items).toEqual(shown(keys(items).map((k) => byKey.get(k)!)));
  });

  it('answers 409 shipment-index-off where the deployment keeps no shipment index', async () => {
    // Prepare
    await bed.reset({ shipmentIndex: false });

    // Act
    const answer = await bed.call({ method: 'GET', path: '/v1/shipments/shp_r/deliveries' });

    // Assess
    expect(answer.status).toBe(409);
    expect(answer.body.type).toBe('https://handoff.dev/problems/shipment-index-off');
  });

  it('names each bad query parameter and a cursor it did not give, in 400s', async () => {
    // Act
    const bad = await bed.call({ method: 'GET', path: '/v1/shipments/shp_r/deliveries', query: { limit: '101', sort: 'asc' } });
    const zero = await bed.call({ method: 'GET', path: '/v1/shipments/shp_r/deliveries', query: { limit: '0' } });
    const cursor = await bed.call({ method: 'GET', path: '/v1/shipments/shp_r/deliveries', query: { cursor: 'not-a-cursor' } });
    const blank = await bed.call({ method: 'GET', path: '/v1/shipments/%20/deliveries' });

    // Assess
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([
      { path: 'query.sort', message: 'is not a parameter of this operation (it takes cursor, limit)' },
      { path: 'query.limit', message: 'must be a whole number from 1 to 100' },
    ]);
    expect(zero.body.errors).toEqual([{ path: 'query.limit', message: 'must be a whole number from 1 to 100' }]);
    expect(cursor.status).toBe(400);
    expect(cursor.body.errors).toEqual([{ path: 'query.cursor', message: 'is not a cursor this listing gave for this shipment: start again without it' }]);
    expect(blank.status).toBe(400);
    expect(blank.body.errors).toEqual([{ path: 'path.shipmentId', message: 'must be 1–128 printable characters, not only spaces' }]);
  });
});

describe('GET /v1/dead', () => {
  /**
   * Dead rows at endpoints a and b (owner o1) and c (owner o2), one dying each second from T0 + 1 s:
   * evt_d0@a rejected, evt_d1@b exhausted, evt_d2@c rejected, evt_d3@a exhausted, … (12 in all).
   * Also a delivered row, which is never listed.
   */
  async function seedDead(): Promise<DeliveryRecord[]> {
    await bed.registry.add(ownedEndpoint('a', 'o1'), T0);
    await bed.registry.add(ownedEndpoint('b', 'o1'), T0);
    await bed.registry.add(ownedEndpoint('c', 'o2'), T0);
    const rows: DeliveryRecord[] = [];
    for (let i = 0; i < 12; i++) {
      const endpoint = ['a', 'b', 'c'][i % 3]!;
      rows.push(await settledDelivery(bed.ledger, parsed(shipmentEvent(`evt_d${i}`)), endpoint, T0 + i * SECOND, i % 2 === 0 ? 'rejected' : 'exhausted'));
    }
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_fine')), 'a', T0, 'delivered');
    return rows;
  }

  it('pages through every dead delivery, oldest death first, without repeats or gaps', async () => {
    // Prepare
    const rows = await seedDead();

    // Act
    const { sizes, items } = await allPages('/v1/dead', { limit: '5' });

    // Assess
    expect(sizes).toEqual([5, 5, 2]);
    expect(items).toEqual(shown(rows));
  });

  it("keeps an owner's deliveries that died for one reason, page after page, every match once", async () => {
    // Prepare
    const rows = await seedDead();
    const expected = rows.filter((r) => ['a', 'b'].includes(r.endpoint) && r.deadReason === 'rejected');

    // Act
    const { sizes, items } = await allPages('/v1/dead', { owner: 'o1', reason: 'rejected', limit: '2' });

    // Assess: d0@a, d4@b, d6@a, d10@b.
    expect(keys(items)).toEqual(['evt_d0@a', 'evt_d4@b', 'evt_d6@a', 'evt_d10@b']);
    expect(items).toEqual(shown(expected));
    expect(sizes.reduce((sum, n) => sum + n, 0)).toBe(4);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(2);
  });

  it('keeps one endpoint, and a window of death times, as the ledger lists them', async () => {
    // Prepare
    const rows = await seedDead();

    // Act: deaths at T0+1s … T0+12s; the window [T0+3s, T0+7s) holds d2 … d5.
    const ofA = await allPages('/v1/dead', { endpoint: 'a' });
    const window = await allPages('/v1/dead', { since: new Date(T0 + 3 * SECOND).toISOString(), until: new Date(T0 + 7 * SECOND).toISOString(), limit: '3' });

    // Assess
    expect(items(ofA)).toEqual(['evt_d0@a', 'evt_d3@a', 'evt_d6@a', 'evt_d9@a']);
    expect(items(window)).toEqual(['evt_d2@c', 'evt_d3@a', 'evt_d4@b', 'evt_d5@c']);
    expect(window.items).toEqual(shown(rows.slice(2, 6)));
  });

  it('answers an empty last page for an owner with no endpoints', async () => {
    // Prepare
    await seedDead();

    // Act
    const answer = await bed.call({ method: 'GET', path: '/v1/dead', query: { owner: 'nobody' } });

    // Assess
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ items: [], next: null });
  });

  it("shows a portal link's holder its owner's dead deliveries only, and refuses another owner's", async () => {
    // Prepare
    await seedDead();

    // Act
    const own = await allPages('/v1/dead', {}, 'portal:o2');
    const other = await bed.call({ method: 'GET', path: '/v1/dead', query: { owner: 'o1' }, caller: 'portal:o2' });

    // Assess
    expect(items(own)).toEqual(['evt_d2@c', 'evt_d5@c', 'evt_d8@c', 'evt_d11@c']);
    expect(other.status).toBe(403);
    expect(other.body.type).toBe('https://handoff.dev/problems/out-of-scope');
  });

  it('names each bad filter in one 400', async () => {
    // Act
    const answer = await bed.call({
      method: 'GET',
      path: '/v1/dead',
      query: { endpoint: 'Not A Name', since: 'last tuesday', reason: 'bored', limit: 'ten' },
    });
    const backwards = await bed.call({ method: 'GET', path: '/v1/dead', query: { since: '2026-12-02', until: '2026-12-01' } });
    const cursor = await bed.call({ method: 'GET', path: '/v1/dead', query: { cursor: 'bm90IG91cnM' } });

    // Assess
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([
      { path: 'query.endpoint', message: 'must be an endpoint name: 1–64 of a-z 0-9 -' },
      { path: 'query.since', message: 'must be an ISO 8601 time with its zone, like 2026-12-01T10:00:00Z, or a date like 2026-12-01 (UTC).' },
      { path: 'query.reason', message: 'must be one of rejected, exhausted, invalid' },
      { path: 'query.limit', message: 'must be a whole number from 1 to 100' },
    ]);
    expect(backwards.body.errors).toEqual([{ path: 'query.until', message: 'must come after since' }]);
    expect(cursor.status).toBe(400);
    expect(cursor.body.errors).toEqual([{ path: 'query.cursor', message: 'is not a cursor the dead listing gave: start again without it' }]);
  });

  function items(listing: { items: readonly DeliveryRecord[] }): string[] {
    return keys(listing.items);
  }
});

describe('GET /v1/stats', () => {
  /** `handoff stats --json` on the same target, as the command runs it. */
  async function commandStats(options: { sinceMs: number; endpoint?: string }): Promise<Record<string, unknown>> {
    const silent = () => new PassThrough() as unknown as NodeJS.WriteStream;
    const ctx = new CommandContext(bed.target, { stdout: silent(), stderr: silent() });
    try {
      return JSON.parse(JSON.stringify((await statsCommand(ctx, { maxRowsPerState: 5000, ...options })).json)) as Record<string, unknown>;
    } finally {
      ctx.close();
    }
  }
  const withoutWindow = ({ window: _window, ...rest }: Record<string, unknown>) => rest;

  it('answers what `handoff stats --json` says: dead and parked from the ledger, queue depths, and why the metrics are missing', async () => {
    // Prepare: two dead deliveries at a, one message waiting on the delivery queue, no metrics file.
    await bed.registry.add(ownedEndpoint('a', 'o1'), T0);
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_s1')), 'a', T0, 'rejected');
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_s2')), 'a', T0, 'exhausted');
    await bed.sqs.send(new SendMessageCommand({ QueueUrl: bed.target.queueUrl, MessageBody: parsed(shipmentEvent('evt_s3')).body }));

    // Act
    const answer = await bed.call({ method: 'GET', path: '/v1/stats', query: { since: '7d' } });
    const command = await commandStats({ sinceMs: 7 * 24 * 3_600_000 });

    // Assess
    expect(answer.status).toBe(200);
    expect(withoutWindow(answer.body)).toEqual(withoutWindow(command));
    expect(answer.body).toMatchObject({
      endpoint: null,
      pendingCount: 1,
      deadCount: 2,
      parkedCount: 0,
      byEndpoint: { a: { deadCount: 2, parkedCount: 0 } },
      deliveredCount: null,
      queue: { visible: 1, inFlight: 0, delayed: 0 },
      window: { since: '24h' },
    });
    // The sandbox's metric sink keeps a day: the window is shortened to it, as the command does.
    expect(answer.body.window.endMs - answer.body.window.startMs).toBe(24 * 3_600_000);
    expect(answer.body.metricsError).toMatch(/^no sandbox metrics file /);
  });

  it("answers one endpoint's figures, and names a since it cannot read", async () => {
    // Prepare
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_s4')), 'a', T0, 'rejected');

    // Act
    const one = await bed.call({ method: 'GET', path: '/v1/stats', query: { endpoint: 'a', since: '30m' } });
    const bad = await bed.call({ method: 'GET', path: '/v1/stats', query: { since: '1s' } });

    // Assess
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ endpoint: 'a', pendingCount: null, deadCount: 1, parkedCount: 0, window: { since: '30min' } });
    expect(one.body.byEndpoint).toBeUndefined();
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'query.since', message: 'must be a duration like 30m, 24h or 7d, from 1m to 15d.' }]);
  });

  it("lets a portal link's holder read one of its owner's endpoints only", async () => {
    // Prepare
    await bed.registry.add(ownedEndpoint('a', 'o1'), T0);
    await bed.registry.add(ownedEndpoint('c', 'o2'), T0);

    // Act
    const own = await bed.call({ method: 'GET', path: '/v1/stats', query: { endpoint: 'a' }, caller: 'portal:o1' });
    const other = await bed.call({ method: 'GET', path: '/v1/stats', query: { endpoint: 'c' }, caller: 'portal:o1' });
    const totals = await bed.call({ method: 'GET', path: '/v1/stats', caller: 'portal:o1' });

    // Assess
    expect(own.status).toBe(200);
    expect(own.body.endpoint).toBe('a');
    expect(other.status).toBe(403);
    expect(totals.status).toBe(403);
  });
});
