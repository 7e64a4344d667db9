/**
 * The client and the API's routes agree: every route (api/routes/index.ts ROUTES) has a client
 * method that calls its method and path, with query parameters the route declares and a body its
 * schema takes, and the client calls no route the API does not have; either kind of drift fails here. The client's requests are caught by its `fetch`
 * option, so nothing is sent; the routes are read as data, not run.
 */
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { HandoffClient } from '../../api/client/client';
import { ROUTES } from '../../api/routes/index';

interface Caught {
  readonly method: string;
  readonly url: URL;
  readonly body: string | undefined;
}

/** A client whose fetch records the request and answers `{items: [], next: null}`. */
function recordingClient(): { client: HandoffClient; caught: Caught[] } {
  const caught: Caught[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    caught.push({ method: String(init?.method), url: new URL(String(input)), body: init?.body === undefined ? undefined : String(init.body) });
    return new Response(JSON.stringify({ items: [], next: null }), { status: 200, headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  return { client: new HandoffClient({ url: 'http://127.0.0.1:9', credentials: { token: 't' }, fetch }), caught };
}

const EVENT = { id: 'evt_1', shipmentId: 'shp_1', status: 'delivered', occurredAt: '2026-12-04T10:00:00Z' } as const;

/**
 * Each client method, called with every option it has, by the route it should call
 * (`METHOD /path/{template}`).
 */
const CALLS: Readonly<Record<string, (client: HandoffClient) => Promise<unknown>>> = {
  'GET /v1/endpoints': (c) => c.listEndpoints({ owner: 'acme', state: 'enabled', cursor: 'c', limit: 10 }),
  'POST /v1/endpoints': (c) => c.createEndpoint({ name: 'orders', url: 'https://hooks.example.com/in', eventTypes: ['*'], owner: 'acme', maxAttempts: 5 }),
  'GET /v1/endpoints/{name}': (c) => c.getEndpoint('orders'),
  'PATCH /v1/endpoints/{name}': (c) => c.updateEndpoint('orders', { maxAttempts: 3 }),
  'DELETE /v1/endpoints/{name}': (c) => c.removeEndpoint('orders'),
  'POST /v1/endpoints/{name}/disable': (c) => c.disableEndpoint('orders', { reason: 'receiver down' }),
  'POST /v1/endpoints/{name}/enable': (c) => c.enableEndpoint('orders', { rate: 5 }),
  'POST /v1/endpoints/{name}/rotate-secret': (c) => c.rotateSecret('orders', { overlapSeconds: 3600 }),
  'POST /v1/endpoints/{name}/test': (c) => c.sendTestEvent('orders'),
  'POST /v1/events': (c) => c.postEvents([EVENT], { ordered: true }),
  'GET /v1/events/{eventId}': (c) => c.getEvent('evt_1'),
  'GET /v1/shipments/{shipmentId}/deliveries': (c) => c.shipmentDeliveries('shp_1', { cursor: 'c', limit: 10 }),
  'GET /v1/dead': (c) => c.listDead({ endpoint: 'orders', owner: 'acme', since: '2026-12-01T00:00:00Z', until: '2026-12-02T00:00:00Z', reason: 'exhausted', cursor: 'c', limit: 10 }),
  'POST /v1/replays': (c) => c.replay({ endpoint: 'orders', deadSince: '2026-12-01T00:00:00Z', until: '2026-12-02T00:00:00Z', deadReason: 'exhausted', dryRun: true, reason: 'fixed' }),
  'GET /v1/stats': (c) => c.stats({ endpoint: 'orders', since: '24h' }),
  'GET /v1/stats/minutes': (c) => c.statsMinutes({ endpoint: 'orders', since: '1h' }),
  'POST /v1/portal-links': (c) => c.createPortalLink({ owner: 'acme', ttlSeconds: 600 }),
  'GET /v1/openapi.json': (c) => c.openApiDocument(),
};

/** The path a template names once its parameters are filled as CALLS fills them. */
function filled(template: string): string {
  return template.replace('{name}', 'orders').replace('{eventId}', 'evt_1').replace('{shipmentId}', 'shp_1');
}

const ajv = new Ajv2020({ strict: false, allErrors: true });

describe('HandoffClient and the routes', () => {
  it('has a method for every route of the API, and none for a route it does not have', () => {
    const routes = ROUTES.map((route) => `${route.method} ${route.path}`);
    expect(Object.keys(CALLS).sort()).toEqual(routes.sort());
  });

  it.each(ROUTES.map((route) => [`${route.method} ${route.path}`, route] as const))('calls %s with what the route takes', async (key, route) => {
    // Prepare
    const call = CALLS[key];
    if (call === undefined) throw new Error(`no client method for ${key}`);
    const { client, caught } = recordingClient();

    // Act
    await call(client);

    // Assess
    expect(caught).toHaveLength(1);
    const [request] = caught;
    expect([request!.method, request!.url.pathname]).toEqual([route.method, filled(route.path)]);
    const declared = (route.query ?? []).map((q) => q.name);
    expect([...request!.url.searchParams.keys()].filter((name) => !declared.includes(name))).toEqual([]);
    if (route.body === undefined) {
      expect(request!.body).toBeUndefined();
    } else {
      expect(request!.body).toBeDefined();
      const validate = ajv.compile(route.body.schema as object);
      expect(validate(JSON.parse(request!.body!)), JSON.stringify(validate.errors)).toBe(true);
    }
  });
});
