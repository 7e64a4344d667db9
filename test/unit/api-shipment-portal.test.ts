/**
 * `GET /v1/shipments/{shipmentId}/deliveries` for a portal link's holder, over an in-memory ledger
 * with every read counted: a page reads on past other owners' deliveries to hold `limit` of its
 * owner's, reads no more rows than PORTAL_SHIPMENT_ROWS_PER_REQUEST in one request however many
 * other owners' come first, reads each endpoint's owner once per request, and, followed by `next`
 * to the end, yields every one of the owner's deliveries once. (Against the real ledger on dynalite,
 * with the OpenAPI document's check: test/integration/api-reads.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { MemoryIdempotencyStore } from '../../api/idempotency';
import { createApiHandler } from '../../api/router';
import { PORTAL_SHIPMENT_ROWS_PER_REQUEST } from '../../api/routes/deliveries';
import { ROUTES } from '../../api/routes/index';
import type { CommandContext } from '../../cli/context';
import { parseEvent } from '../../lib/event';
import type { ShipmentPageOptions } from '../../lib/ledger/ledger';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { createLogger } from '../../lib/observability';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { apiEvent } from '../helpers/api-events';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const OWNERS: Readonly<Record<string, string>> = { billing: 'o1', crm: 'o2' };

interface Bed {
  /** One page as `caller`: its status, items' keys and next. */
  page(query: Record<string, string>, caller?: string): Promise<{ status: number; keys: string[]; next: string | null }>;
  /** Rows each ledger read of the last page asked for (its `limit`s). */
  readonly reads: number[];
  /** Registry reads of the last page, by endpoint. */
  readonly lookups: string[];
}

/** A ledger holding shp_9's deliveries, newest first in `listing` order ([eventId, endpoint]), and the API over it. */
async function bedOf(listing: readonly (readonly [string, string])[]): Promise<Bed> {
  const ledger = new MemoryLedger({ now: () => T0 });
  for (const [i, [id, endpoint]] of listing.entries()) {
    const parsed = parseEvent(JSON.stringify({ id, shipmentId: 'shp_9', status: 'packed', occurredAt: '2026-12-01T10:00:00Z' }));
    if (!parsed.ok) throw parsed.error;
    // The first of the listing is the newest: admitted last.
    const nowMs = T0 + (listing.length - i) * 1000;
    await ledger.claim({ event: parsed.value, endpoint, owner: 'w', nowMs, leaseMs: 30_000, policy: DEFAULT_RETRY_POLICY, retentionSeconds: 86_400 * 365 });
  }
  const reads: number[] = [];
  const lookups: string[] = [];
  // The one ledger read the route makes, counted.
  const counted = {
    deliveriesOfShipment: (shipmentId: string, options: ShipmentPageOptions = {}) => {
      reads.push(options.limit ?? 25);
      return ledger.deliveriesOfShipment(shipmentId, options);
    },
  };
  const registry = {
    get: async (name: string) => {
      lookups.push(name);
      const owner = OWNERS[name];
      return owner === undefined ? undefined : { fields: { name, owner } };
    },
  };
  const context = { now: () => T0, ledger: () => counted, registry: () => registry } as unknown as CommandContext;
  const handler = createApiHandler(ROUTES, { context, idempotency: new MemoryIdempotencyStore(), now: () => T0, logger: createLogger({ service: 'test', write: () => {} }) });
  return {
    reads,
    lookups,
    async page(query, caller = 'portal:o1') {
      reads.length = 0;
      lookups.length = 0;
      const result = await handler(apiEvent({ method: 'GET', path: '/v1/shipments/shp_9/deliveries', query, caller }));
      const body = JSON.parse(String(result.body)) as { items?: { eventId: string; endpoint: string }[]; next?: string | null };
      return { status: result.statusCode ?? 200, keys: (body.items ?? []).map((d) => `${d.eventId}@${d.endpoint}`), next: body.next ?? null };
    },
  };
}

const times = (count: number, endpoint: string, prefix: string) => [...Array(count).keys()].map((i) => [`${prefix}${i}`, endpoint] as const);

describe("a shipment's deliveries for a portal link's holder", () => {
  it('reads limit + 1 rows for a page when every delivery is the owner’s, and tells from the extra row that more follow', async () => {
    const bed = await bedOf(times(7, 'billing', 'evt_'));

    const first = await bed.page({ limit: '3' });
    const firstReads = [...bed.reads];
    const second = await bed.page({ limit: '3', cursor: first.next! });
    const third = await bed.page({ limit: '3', cursor: second.next! });

    expect(first.keys).toEqual(['evt_0@billing', 'evt_1@billing', 'evt_2@billing']);
    expect(firstReads).toEqual([4]);
    expect(second.keys).toEqual(['evt_3@billing', 'evt_4@billing', 'evt_5@billing']);
    expect(third).toEqual({ status: 200, keys: ['evt_6@billing'], next: null });
  });

  it("reads on past other owners' deliveries, twice as many rows each read, each endpoint's owner looked up once", async () => {
    const bed = await bedOf([...times(40, 'crm', 'evt_c'), ['evt_a', 'billing'], ...times(40, 'crm', 'evt_d'), ['evt_b', 'billing'], ...times(3, 'crm', 'evt_e')]);

    const page = await bed.page({ limit: '2' });

    expect(page).toEqual({ status: 200, keys: ['evt_a@billing', 'evt_b@billing'], next: null });
    expect(bed.reads).toEqual([3, 6, 12, 24, 48]);
    expect(bed.lookups.sort()).toEqual(['billing', 'crm']);
  });

  it(`reads at most ${PORTAL_SHIPMENT_ROWS_PER_REQUEST} rows a request, answering what it found with next where it stopped; followed to the end, every one of the owner's once`, async () => {
    const bed = await bedOf([
      ['evt_a', 'billing'],
      ...times(PORTAL_SHIPMENT_ROWS_PER_REQUEST, 'crm', 'evt_c'),
      ['evt_b', 'billing'],
      ...times(2 * PORTAL_SHIPMENT_ROWS_PER_REQUEST + 500, 'crm', 'evt_d'),
      ['evt_z', 'billing'],
    ]);

    const pages: { keys: string[]; rows: number }[] = [];
    let next: string | null = null;
    do {
      const page = await bed.page({ limit: '5', ...(next === null ? {} : { cursor: next }) });
      expect(page.status).toBe(200);
      pages.push({ keys: page.keys, rows: bed.reads.reduce((sum, n) => sum + n, 0) });
      next = page.next;
    } while (next !== null && pages.length < 20);

    for (const { rows } of pages) expect(rows).toBeLessThanOrEqual(PORTAL_SHIPMENT_ROWS_PER_REQUEST);
    expect(pages.flatMap((p) => p.keys)).toEqual(['evt_a@billing', 'evt_b@billing', 'evt_z@billing']);
    // Only past the bound, with more than that many other owners' deliveries in a row, is a page short or empty with next.
    expect(pages.map((p) => p.keys.length)).toEqual([1, 1, 0, 1]);
  });

  it("answers an operator the ledger's page as it is, every owner's", async () => {
    const bed = await bedOf([['evt_a', 'crm'], ['evt_b', 'billing'], ['evt_c', 'crm']]);

    const page = await bed.page({ limit: '2' }, 'arn:aws:iam::123456789012:user/alice');

    expect(page.keys).toEqual(['evt_a@crm', 'evt_b@billing']);
    expect(page.next).not.toBeNull();
    expect(bed.reads).toEqual([2]);
    expect(bed.lookups).toEqual([]);
  });
});
