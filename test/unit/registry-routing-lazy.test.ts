/**
 * Routing over a large registry (lib/routing.ts `registryRouting`, lib/endpoints/subscriptions.ts):
 * a batch's routes hold only its events' subscribers, an endpoint's secret is read when an event
 * first goes to it and again only when its item changes, and a copy's change is applied to the
 * subscription index alone. The copy is a RegistryCopy over an in-memory registry.
 */
import { describe, expect, it } from 'vitest';
import type { EndpointRecord } from '../../lib/endpoints/endpoint';
import type { ChangeMark, RegistryChanges, RegistryEntry } from '../../lib/endpoints/registry';
import { RegistryCopy } from '../../lib/endpoints/registry-copy';
import { SubscriptionIndex } from '../../lib/endpoints/subscriptions';
import { createLogger } from '../../lib/observability';
import { registryRouting, type RouteScope } from '../../lib/routing';
import { SHIPMENT_STATUSES, type ShipmentEvent } from '../../lib/event';
import type { WebhookSender } from '../../lib/webhook/sender';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { TEST_SECRET } from '../helpers/secrets';

const T0 = Date.parse('2026-12-04T12:00:00Z');
const ARN = (name: string) => `arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/${name}-AbCdEf`;

/** A registry in memory that answers as the DynamoDB adapter does: every item, the changes since, named items. */
class MemoryRegistry implements RegistryChanges {
  readonly items = new Map<string, RegistryEntry>();

  put(record: EndpointRecord, changedAt: number): void {
    this.items.set(record.fields.name, { name: record.fields.name, changedAt, record: { ...record } });
  }

  remove(name: string, changedAt: number): void {
    this.items.set(name, { name, changedAt });
  }

  readAll(): Promise<RegistryEntry[]> {
    return Promise.resolve([...this.items.values()].filter((entry) => entry.record !== undefined));
  }

  changedSince(sinceMs: number): Promise<ChangeMark[]> {
    return Promise.resolve([...this.items.values()].filter((entry) => entry.changedAt > sinceMs).map(({ name, changedAt }) => ({ name, changedAt })));
  }

  readNames(names: readonly string[]): Promise<RegistryEntry[]> {
    return Promise.resolve(names.map((name) => this.items.get(name) ?? { name, changedAt: 0 }));
  }
}

/** Endpoint `ep-<i>`: one event type (the statuses in turn), carrier `c-<i>` only, its secret by ARN. */
function record(i: number, extra: Partial<EndpointRecord['fields']> = {}): EndpointRecord {
  const name = `ep-${i}`;
  return {
    fields: {
      name,
      url: `https://${name}.example/hook`,
      eventTypes: [`shipment.${SHIPMENT_STATUSES[i % SHIPMENT_STATUSES.length]}`],
      match: { 'data.carrier': [`c-${i}`] },
      secret: ARN(name),
      ...extra,
    },
    state: 'enabled',
    createdAt: T0,
    updatedAt: T0,
  };
}

function eventFor(i: number, id = `evt_${i}`): ShipmentEvent {
  return { id, shipmentId: 'shp_1', status: SHIPMENT_STATUSES[i % SHIPMENT_STATUSES.length]!, occurredAt: '2026-12-04T12:00:00Z', data: { carrier: `c-${i}` } };
}

function setup(count: number) {
  let nowMs = T0;
  const registry = new MemoryRegistry();
  for (let i = 0; i < count; i += 1) registry.put(record(i), T0);
  const copy = new RegistryCopy(registry, { now: () => nowMs });
  const reads: string[] = [];
  const routing = registryRouting({
    records: () => copy.list(),
    deployment: DEFAULT_DEPLOYMENT,
    readSecret: (arn) => {
      reads.push(arn);
      return Promise.resolve(TEST_SECRET);
    },
    createSender: () => ({ send: () => Promise.reject(new Error('not sent')) }) as WebhookSender,
    logger: createLogger({ service: 'handoff', write: () => {} }),
    now: () => nowMs,
  });
  const scope = (...events: ShipmentEvent[]): RouteScope => ({ events, endpoints: [] });
  return { registry, routing, reads, scope, tick: (ms: number) => (nowMs += ms) };
}

describe('Class: SubscriptionIndex', () => {
  it("finds an event's candidates by type and by an endpoint's first filter, not among every subscriber of its type", () => {
    const index = new SubscriptionIndex();
    const sameType = Array.from({ length: 5000 }, (_, i) => record(i, { eventTypes: ['shipment.delivered'] }));
    const unfiltered = record(9001, { eventTypes: ['shipment.delivered'], match: {} });
    const everything = record(9002, { eventTypes: ['*'], match: { 'data.carrier': ['c-42', 'c-43'] } });
    index.sync([...sameType, unfiltered, everything]);

    const found = index.candidates([{ ...eventFor(42), status: 'delivered' }]);

    expect([...found].sort()).toEqual(['ep-42', 'ep-9001', 'ep-9002']);
  });
});

describe('Function: registryRouting over 5,000 endpoints', () => {
  it('resolves only the endpoints the batch\'s events go to: one secret read for one event, none at the cold start', async () => {
    const h = setup(5000);

    const routes = await h.routing.routes(h.scope(eventFor(4321)));

    expect([...routes.endpoints.keys()]).toEqual(['ep-4321']);
    expect(h.reads).toEqual([ARN('ep-4321')]);
  });

  it('reads an endpoint\'s secret once for every later batch, and the new endpoints\' as events first go to them', async () => {
    const h = setup(5000);
    await h.routing.routes(h.scope(eventFor(7)));
    await h.routing.routes(h.scope(eventFor(7, 'evt_again')));

    await h.routing.routes(h.scope(eventFor(7), eventFor(8), eventFor(9)));

    expect(h.reads).toEqual([ARN('ep-7'), ARN('ep-8'), ARN('ep-9')]);
  });

  it('resolves an endpoint again when its item changes, and no other', async () => {
    const h = setup(5000);
    await h.routing.routes(h.scope(eventFor(7), eventFor(8)));
    h.tick(15_000);
    h.registry.put(record(7, { url: 'https://ep-7.example/v2', secret: ARN('ep-7-rotated') }), T0 + 15_000);

    const routes = await h.routing.routes(h.scope(eventFor(7), eventFor(8)));

    expect(routes.endpoints.get('ep-7')?.url).toBe('https://ep-7.example/v2');
    expect(h.reads).toEqual([ARN('ep-7'), ARN('ep-8'), ARN('ep-7-rotated')]);
  });

  it('routes a new event type to an endpoint that subscribes to it since, and nowhere once it is removed', async () => {
    const h = setup(50);
    h.tick(15_000);
    h.registry.put(record(3, { eventTypes: ['*'] }), T0 + 15_000);
    const widened = await h.routing.routes(h.scope({ ...eventFor(3), status: 'exception' }));
    h.tick(15_000);
    h.registry.remove('ep-3', T0 + 30_000);

    const removed = await h.routing.routes(h.scope(eventFor(3)));

    expect([...widened.endpoints.keys()]).toEqual(['ep-3']);
    expect(removed.endpoints.size).toBe(0);
    expect(removed.unresolved.size).toBe(0);
  });

  it('resolves the endpoints a sealed message names, and those a message\'s rows name, on demand', async () => {
    const h = setup(100);

    const routes = await h.routing.routes({ events: [], endpoints: ['ep-5'] });
    const widened = await routes.including!(['ep-6', 'ep-404']);

    expect([...routes.endpoints.keys()]).toEqual(['ep-5']);
    expect([...widened.endpoints.keys()].sort()).toEqual(['ep-5', 'ep-6']);
    expect(h.reads).toEqual([ARN('ep-5'), ARN('ep-6')]);
  });
});
