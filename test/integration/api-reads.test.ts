/**
 * The management API's read routes (docs/contract.md §16) through its one handler, against real
 * emulators and rows the real ledger wrote: a shipment's deliveries (newest first), the dead ones
 * (oldest death first, by endpoint, owner, window and reason), stats as `handoff stats --json`, and
 * the per-minute series from the sandbox's metric sink on a real file. Pages are followed by `next`
 * to the end; every answer is checked against the OpenAPI document.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryIdempotencyStore } from '../../api/idempotency';
import { createApiHandler } from '../../api/router';
import { apiDocument, ROUTES } from '../../api/routes';
import { recordJson } from '../../cli/commands/record-view';
import { statsCommand } from '../../cli/commands/stats';
import { CommandContext } from '../../cli/context';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { createLogger, MetricsRecorder } from '../../lib/observability';
import { metricsFileFor, MetricSink } from '../../sandbox/metric-sink';
import { apiEvent } from '../helpers/api-events';
import { ownedEndpoint, parsed, settledDelivery, shipmentEvent, startTestbed, TEST_CALLER, type ApiAnswer, type ApiRequestSpec, type Testbed } from '../helpers/api-testbed';
import { OpenApiValidator } from '../helpers/openapi-validator';

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

  it("shows a portal link's holder its owner's deliveries only, each page reading on past other owners' to hold `limit`", async () => {
    // Prepare: four events of shp_p, each to o1's billing and o2's crm (crm's row 100 ms later, so first in the listing).
    await bed.registry.add(ownedEndpoint('billing', 'o1'), T0);
    await bed.registry.add(ownedEndpoint('crm', 'o2'), T0);
    for (const [i, id] of ['evt_p1', 'evt_p2', 'evt_p3', 'evt_p4'].entries()) {
      for (const [j, endpoint] of ['billing', 'crm'].entries()) {
        await settledDelivery(bed.ledger, parsed(shipmentEvent(id, 'shp_p')), endpoint, T0 + i * SECOND + j * 100, 'delivered');
      }
    }

    // Act: pages of 3 of the listing's 8 rows.
    const own = await allPages('/v1/shipments/shp_p/deliveries', { limit: '3' }, 'portal:o1');
    const operator = await allPages('/v1/shipments/shp_p/deliveries', { limit: '3' });
    const none = await allPages('/v1/shipments/shp_p/deliveries', {}, 'portal:o3');

    // Assess: the operator's rows without crm's, in full pages of 3 but the last; nothing for an owner with none.
    expect(operator.sizes).toEqual([3, 3, 2]);
    expect(own.sizes).toEqual([3, 1]);
    expect(keys(own.items)).toEqual(['evt_p4@billing', 'evt_p3@billing', 'evt_p2@billing', 'evt_p1@billing']);
    expect(own.items).toEqual(operator.items.filter((d) => d.endpoint === 'billing'));
    expect(none).toEqual({ sizes: [0], items: [] });
  });

  it("never answers a portal link's holder an empty or short page with `next`: other owners' deliveries before, between or after its own leave no trace", async () => {
    // Prepare: shp_q's listing, newest first: 6 of o2's (crm), then o1's evt_q1 (billing), 4 more of o2's, o1's evt_q0, then 5 of o2's.
    await bed.registry.add(ownedEndpoint('billing', 'o1'), T0);
    await bed.registry.add(ownedEndpoint('crm', 'o2'), T0);
    const order: [string, string][] = [
      ...[...Array(6).keys()].map((i): [string, string] => [`evt_c${i}`, 'crm']),
      ['evt_q1', 'billing'],
      ...[...Array(4).keys()].map((i): [string, string] => [`evt_d${i}`, 'crm']),
      ['evt_q0', 'billing'],
      ...[...Array(5).keys()].map((i): [string, string] => [`evt_e${i}`, 'crm']),
    ];
    for (const [i, [id, endpoint]] of order.entries()) {
      await settledDelivery(bed.ledger, parsed(shipmentEvent(id, 'shp_q')), endpoint, T0 + (order.length - i) * SECOND, 'delivered');
    }

    // Act: pages of 1 and of 2, and another owner's.
    const ones = await allPages('/v1/shipments/shp_q/deliveries', { limit: '1' }, 'portal:o1');
    const twos = await allPages('/v1/shipments/shp_q/deliveries', { limit: '2' }, 'portal:o1');
    const theirs = await allPages('/v1/shipments/shp_q/deliveries', { limit: '10' }, 'portal:o2');

    // Assess: one full page per delivery of o1's, the last with no `next` though o2's follow; o2's 15 in full pages of 10.
    expect(ones.sizes).toEqual([1, 1]);
    expect(keys(ones.items)).toEqual(['evt_q1@billing', 'evt_q0@billing']);
    expect(twos.sizes).toEqual([2]);
    expect(keys(twos.items)).toEqual(['evt_q1@billing', 'evt_q0@billing']);
    expect(theirs.sizes).toEqual([10, 5]);
    expect(theirs.items.every((d) => d.endpoint === 'crm')).toBe(true);
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

describe('GET /v1/stats/minutes', () => {
  const NOW = Date.parse('2026-12-01T10:37:25Z');
  const minute = (iso: string) => Date.parse(iso);
  let validator: OpenApiValidator;
  let directory: string;
  let closers: (() => void)[] = [];

  beforeAll(async () => {
    validator = await OpenApiValidator.of(apiDocument());
  });

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'handoff-api-minutes-'));
  });

  afterEach(() => {
    for (const close of closers) close();
    closers = [];
    rmSync(directory, { recursive: true, force: true });
  });

  /**
   * The API over the testbed's queues and tables as a sandbox whose state file is in `directory`,
   * at the clock `NOW`, and that sandbox's metric sink (the file the API's reader reads). Each
   * answer is checked against the OpenAPI document, as the testbed checks its own.
   */
  function sandboxWithMetrics(): { sink: MetricSink; call: (spec: ApiRequestSpec) => Promise<ApiAnswer> } {
    const { connection } = bed.target;
    if (connection.kind !== 'sandbox') throw new Error('the testbed is a sandbox target');
    const stateFile = join(directory, 'sandbox.json');
    const silent = () => new PassThrough() as unknown as NodeJS.WriteStream;
    const context = new CommandContext({ ...bed.target, connection: { ...connection, stateFile } }, { stdout: silent(), stderr: silent() }, () => NOW);
    const sink = new MetricSink({ path: metricsFileFor(stateFile), now: () => NOW });
    closers.push(() => context.close(), () => sink.close());
    const handler = createApiHandler(ROUTES, {
      context,
      idempotency: new MemoryIdempotencyStore(),
      now: () => NOW,
      logger: createLogger({ service: 'handoff-api-test', write: () => {} }),
    });
    return {
      sink,
      call: async (spec) => {
        const event = apiEvent({ ...spec, caller: spec.caller === null ? null : (spec.caller ?? TEST_CALLER) });
        const result = await handler(event);
        const text = typeof result.body === 'string' ? result.body : '';
        const contentType = result.headers?.['content-type'] as string | undefined;
        const url = event.rawQueryString === '' ? spec.path : `${spec.path}?${event.rawQueryString}`;
        const check = validator.check({ method: spec.method, url, status: result.statusCode ?? 200, contentType, body: text });
        expect(check.errors, `${spec.method} ${url} answered ${result.statusCode} ${text}`).toEqual([]);
        return { status: result.statusCode ?? 200, contentType, body: text === '' ? undefined : JSON.parse(text) };
      },
    };
  }

  /** The metric documents a consumer writes at `atMs` for these attempts (each delivered or not) at their endpoints. */
  function attemptsAt(sink: MetricSink, atMs: number, attempts: readonly { endpoint: string; delivered: boolean }[]): void {
    const lines: string[] = [];
    const metrics = new MetricsRecorder({ service: 'handoff', write: (line) => void lines.push(line), now: () => atMs });
    for (const attempt of attempts) {
      metrics.attempted(1, attempt.endpoint);
      if (attempt.delivered) {
        metrics.add('Delivered', 1, attempt.endpoint);
        metrics.add('DeliveryLatency', 50, attempt.endpoint);
      }
    }
    metrics.flush();
    for (const line of lines) sink.accept(line);
    sink.flush();
  }

  it('answers every minute of the last hour, oldest first, delivered and failed (Attempts less Delivered) from the metrics', async () => {
    // Prepare: at 10:37 billing delivers 2 and fails 1, crm fails 2; at 10:05 billing delivers 1; at 09:30 (before the hour) billing delivers 4.
    const api = sandboxWithMetrics();
    const deliveries = (endpoint: string, delivered: number, failed: number) => [
      ...Array.from({ length: delivered }, () => ({ endpoint, delivered: true })),
      ...Array.from({ length: failed }, () => ({ endpoint, delivered: false })),
    ];
    attemptsAt(api.sink, minute('2026-12-01T09:30:10Z'), deliveries('billing', 4, 0));
    attemptsAt(api.sink, minute('2026-12-01T10:05:59Z'), deliveries('billing', 1, 0));
    attemptsAt(api.sink, minute('2026-12-01T10:37:01Z'), [...deliveries('billing', 2, 1), ...deliveries('crm', 0, 2)]);

    // Act
    const totals = await api.call({ method: 'GET', path: '/v1/stats/minutes' });
    const billing = await api.call({ method: 'GET', path: '/v1/stats/minutes', query: { endpoint: 'billing', since: '90m' } });

    // Assess
    expect(totals.status).toBe(200);
    expect(totals.body).toMatchObject({ endpoint: null, periodSeconds: 60, source: expect.stringMatching(/^the sandbox's metric sink \(/) });
    expect(totals.body.metricsError).toBeUndefined();
    const points = totals.body.points as { at: string; delivered: number; failed: number }[];
    expect(points).toHaveLength(60);
    expect([points[0]!.at, points.at(-1)!.at]).toEqual(['2026-12-01T09:38:00.000Z', '2026-12-01T10:37:00.000Z']);
    expect(points.filter((p) => p.delivered + p.failed > 0)).toEqual([
      { at: '2026-12-01T10:05:00.000Z', delivered: 1, failed: 0 },
      { at: '2026-12-01T10:37:00.000Z', delivered: 2, failed: 3 },
    ]);
    expect(billing.body).toMatchObject({ endpoint: 'billing', source: expect.stringMatching(/, endpoint billing only$/) });
    const billingPoints = billing.body.points as { at: string; delivered: number; failed: number }[];
    expect(billingPoints).toHaveLength(90);
    expect(billingPoints[0]!.at).toBe('2026-12-01T09:08:00.000Z');
    expect(billingPoints.filter((p) => p.delivered + p.failed > 0)).toEqual([
      { at: '2026-12-01T09:30:00.000Z', delivered: 4, failed: 0 },
      { at: '2026-12-01T10:05:00.000Z', delivered: 1, failed: 0 },
      { at: '2026-12-01T10:37:00.000Z', delivered: 2, failed: 1 },
    ]);
  });

  it('answers a day as 1,440 minutes, and no points with metricsError when the metrics cannot be read', async () => {
    // Prepare
    const api = sandboxWithMetrics();

    // Act
    const day = await api.call({ method: 'GET', path: '/v1/stats/minutes', query: { since: '24h' } });
    const unread = await bed.call({ method: 'GET', path: '/v1/stats/minutes', query: { endpoint: 'billing' } });

    // Assess
    expect(day.body.points).toHaveLength(1440);
    expect(day.body.points.every((p: { delivered: number; failed: number }) => p.delivered === 0 && p.failed === 0)).toBe(true);
    expect(unread.status).toBe(200);
    expect(unread.body).toMatchObject({ endpoint: 'billing', periodSeconds: 60, points: [] });
    expect(unread.body.metricsError).toMatch(/^no sandbox metrics file /);
  });

  it('refuses a window over a day or not a duration, and a parameter it does not take, naming each', async () => {
    // Act
    const long = await bed.call({ method: 'GET', path: '/v1/stats/minutes', query: { since: '25h' } });
    const week = await bed.call({ method: 'GET', path: '/v1/stats/minutes', query: { since: '7d' } });
    const several = await bed.call({ method: 'GET', path: '/v1/stats/minutes', query: { since: '1s', endpoint: 'Not A Name', period: '5m' } });

    // Assess
    for (const answer of [long, week]) {
      expect(answer.status).toBe(400);
      expect(answer.body.errors).toEqual([{ path: 'query.since', message: 'must be a duration like 30m, 1h or 24h, from 1m to 24h.' }]);
    }
    expect(several.body.errors).toEqual([
      { path: 'query.period', message: 'is not a parameter of this operation (it takes endpoint, since)' },
      { path: 'query.endpoint', message: 'must be an endpoint name: 1–64 of a-z 0-9 -' },
      { path: 'query.since', message: 'must be a duration like 30m, 1h or 24h, from 1m to 24h.' },
    ]);
  });

  it("lets a portal link's holder read one of its owner's endpoints only", async () => {
    // Prepare
    await bed.registry.add(ownedEndpoint('a', 'o1'), T0);
    await bed.registry.add(ownedEndpoint('c', 'o2'), T0);

    // Act
    const own = await bed.call({ method: 'GET', path: '/v1/stats/minutes', query: { endpoint: 'a' }, caller: 'portal:o1' });
    const other = await bed.call({ method: 'GET', path: '/v1/stats/minutes', query: { endpoint: 'c' }, caller: 'portal:o1' });
    const unknown = await bed.call({ method: 'GET', path: '/v1/stats/minutes', query: { endpoint: 'zz' }, caller: 'portal:o1' });
    const totals = await bed.call({ method: 'GET', path: '/v1/stats/minutes', caller: 'portal:o1' });

    // Assess
    expect(own.status).toBe(200);
    expect(own.body.endpoint).toBe('a');
    for (const answer of [other, unknown, totals]) {
      expect(answer.status).toBe(403);
      expect(answer.body.type).toBe('https://handoff.dev/problems/out-of-scope');
    }
  });
});
