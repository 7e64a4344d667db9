/**
 * The API client against a real HTTP server on loopback that records each request and answers
 * what the test sets: the credentials it sends (a bearer token; SigV4 under AWS credentials, its
 * signature recomputed by the server from the request as received), the paths, queries, bodies and
 * `Idempotency-Key` of the operations, lists followed page by page, and the answers it throws.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HandoffClient } from '../../api/client/client';
import { HandoffApiError, HandoffConnectionError } from '../../api/client/errors';
import type { Endpoint, ShipmentEvent } from '../../api/client/types';
import { listenOnLoopback, type Listening } from '../helpers/loopback';
import { specificationSignature } from '../helpers/sigv4-spec';

interface Recorded {
  readonly method: string;
  /** The path and query as sent. */
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

interface Canned {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
}

/** The server: records every request; answers with `answer(request)`. */
const requests: Recorded[] = [];
let answer: (request: Recorded) => Canned = () => ({ status: 200, body: {} });
let server: Listening;
let origin: string;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const recorded: Recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
  requests.push(recorded);
  const canned = answer(recorded);
  const body = canned.body === undefined ? '' : typeof canned.body === 'string' ? canned.body : JSON.stringify(canned.body);
  res.writeHead(canned.status, { 'content-type': 'application/json', ...canned.headers });
  res.end(body);
}

beforeAll(async () => {
  server = await listenOnLoopback(createServer((req, res) => void handle(req, res)));
  origin = new URL(server.url).origin;
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  requests.length = 0;
  answer = () => ({ status: 200, body: {} });
});

const TOKEN = 'sandbox-token-abc123';
const bearerClient = () => new HandoffClient({ url: origin, credentials: { token: TOKEN } });

/** An endpoint as the API answers it. */
function endpoint(name: string): Endpoint {
  return {
    name,
    url: 'https://hooks.example.com/in',
    state: 'enabled',
    eventTypes: ['*'],
    match: {},
    owner: 'acme',
    secret: 'set',
    publicKey: null,
    headers: {},
    auth: null,
    tls: null,
    previousSecretUntil: null,
    parked: 0,
    health: { paused: false, pausedUntil: null, failures: 0, failingSince: null, lastAcceptedAt: null },
    stateChange: null,
    settings: {},
    createdAt: '2026-12-04T10:00:00.000Z',
    updatedAt: '2026-12-04T10:00:00.000Z',
  };
}

/** The error `promise` rejects with, asserting its class: fails the test when it resolves or rejects with another. */
async function rejectionOf<E extends Error>(promise: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const outcome = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (outcome === undefined) throw new Error(`expected a ${type.name}, got an answer`);
  expect(outcome).toBeInstanceOf(type);
  return outcome as E;
}

const PROBLEM = {
  type: 'https://handoff.dev/problems/invalid-request',
  title: 'Invalid request',
  status: 400,
  detail: '2 fields are invalid: url, timeoutMs',
  instance: 'req-42',
  errors: [
    { path: 'url', message: 'must be https' },
    { path: 'timeoutMs', message: 'is not a field' },
  ],
};

describe('Class: HandoffClient', () => {
  describe('with a bearer token (the sandbox, a JWT)', () => {
    it('sends the token and the filters of a list, and reads the page', async () => {
      // Prepare
      answer = () => ({ status: 200, body: { items: [endpoint('a')], next: 'c2' } });

      // Act
      const page = await bearerClient().listEndpoints({ owner: 'acme corp', state: 'enabled', limit: 10, cursor: undefined });

      // Assess
      expect(page).toEqual({ items: [endpoint('a')], next: 'c2' });
      expect(requests).toHaveLength(1);
      expect(requests[0]!.method).toBe('GET');
      expect(requests[0]!.url).toBe('/v1/endpoints?limit=10&owner=acme%20corp&state=enabled');
      expect(requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
      expect(requests[0]!.headers.accept).toBe('application/json, application/problem+json');
      expect(requests[0]!.body).toBe('');
    });

    it('asks a token function before each request, so a JWT can be refreshed', async () => {
      // Prepare
      let issued = 0;
      const client = new HandoffClient({ url: origin, credentials: { token: async () => `jwt-${++issued}` } });

      // Act
      await client.getEndpoint('a');
      await client.getEndpoint('a');

      // Assess
      expect(requests.map((r) => r.headers.authorization)).toEqual(['Bearer jwt-1', 'Bearer jwt-2']);
    });

    it("keeps the base URL's path before the API's", async () => {
      await new HandoffClient({ url: `${origin}/stage/`, credentials: { token: TOKEN } }).stats({ endpoint: 'a', since: '1h' });
      expect(requests[0]!.url).toBe('/stage/v1/stats?endpoint=a&since=1h');
    });
  });

  describe('with AWS credentials', () => {
    const credentials = { accessKeyId: 'AKIDCLIENTTEST', secretAccessKey: 'secret/key+1', sessionToken: 'the-session' };

    it('signs each request with SigV4 for execute-api, a signature the server computes again from what it received', async () => {
      // Prepare
      answer = () => ({ status: 200, body: { eventId: 'evt:1', deliveries: [] } });
      const client = new HandoffClient({ url: origin, credentials, region: 'eu-west-1' });

      // Act
      await client.replay({ eventId: 'evt:1', reason: 'receiver fixed' }, { idempotencyKey: 'replay-evt-1' });

      // Assess
      const [request] = requests;
      const authorization = String(request!.headers.authorization);
      expect(authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDCLIENTTEST\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=accept;content-type;host;idempotency-key;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
      );
      expect(request!.headers['x-amz-security-token']).toBe('the-session');
      const signedNames = /SignedHeaders=([^,]+)/.exec(authorization)![1]!.split(';');
      const amzDate = String(request!.headers['x-amz-date']);
      const expected = specificationSignature({
        method: request!.method,
        url: new URL(request!.url, `http://${request!.headers.host}`),
        headers: Object.fromEntries(signedNames.map((name) => [name, String(request!.headers[name])])),
        body: request!.body,
        ...credentials,
        region: 'eu-west-1',
        service: 'execute-api',
        amzDate,
      });
      expect(authorization).toBe(expected);
    });

    it('signs the encoded path and query as sent', async () => {
      // Prepare
      const client = new HandoffClient({ url: origin, credentials, region: 'us-east-1' });

      // Act
      await client.shipmentDeliveries('shp 1/2', { cursor: 'a+b=', limit: 5 });

      // Assess
      const [request] = requests;
      expect(request!.url).toBe('/v1/shipments/shp%201%2F2/deliveries?cursor=a%2Bb%3D&limit=5');
      const authorization = String(request!.headers.authorization);
      const signedNames = /SignedHeaders=([^,]+)/.exec(authorization)![1]!.split(';');
      expect(signedNames).toEqual(['accept', 'host', 'x-amz-date', 'x-amz-security-token']);
      const expected = specificationSignature({
        method: 'GET',
        url: new URL(request!.url, `http://${request!.headers.host}`),
        headers: Object.fromEntries(signedNames.map((name) => [name, String(request!.headers[name])])),
        body: '',
        ...credentials,
        region: 'us-east-1',
        service: 'execute-api',
        amzDate: String(request!.headers['x-amz-date']),
      });
      expect(authorization).toBe(expected);
    });

    it('asks a credentials provider for each request', async () => {
      // Prepare
      let asked = 0;
      const client = new HandoffClient({
        url: origin,
        region: 'eu-west-1',
        credentials: async () => {
          asked += 1;
          return { accessKeyId: `AKID${asked}`, secretAccessKey: 's' };
        },
      });

      // Act
      await client.openApiDocument();
      await client.openApiDocument();

      // Assess
      expect(requests.map((r) => /Credential=(\w+)\//.exec(String(r.headers.authorization))?.[1])).toEqual(['AKID1', 'AKID2']);
      expect(requests[0]!.headers['x-amz-security-token']).toBeUndefined();
    });
  });

  describe('operations', () => {
    it('creates an endpoint with an Idempotency-Key and reads the secret from the 201', async () => {
      // Prepare
      const created = { ...endpoint('orders'), secret: 'whsec_shownonce' };
      answer = () => ({ status: 201, body: created });
      const fields = { name: 'orders', url: 'https://hooks.example.com/in', eventTypes: ['shipment.delivered'], owner: 'acme' } as const;

      // Act
      const answered = await bearerClient().createEndpoint(fields, { idempotencyKey: 'create-orders-1' });

      // Assess
      expect(answered).toEqual(created);
      expect(requests[0]!.method).toBe('POST');
      expect(requests[0]!.url).toBe('/v1/endpoints');
      expect(requests[0]!.headers['idempotency-key']).toBe('create-orders-1');
      expect(requests[0]!.headers['content-type']).toBe('application/json');
      expect(JSON.parse(requests[0]!.body)).toEqual(fields);
    });

    it('sends no Idempotency-Key when none is given', async () => {
      await bearerClient().disableEndpoint('orders', { reason: 'receiver down' });
      expect(requests[0]!.headers['idempotency-key']).toBeUndefined();
      expect([requests[0]!.url, JSON.parse(requests[0]!.body)]).toEqual(['/v1/endpoints/orders/disable', { reason: 'receiver down' }]);
    });

    it('calls each endpoint operation at its method and path, the name one encoded segment', async () => {
      // Prepare
      answer = (r) => (r.method === 'DELETE' ? { status: 204 } : { status: 200, body: endpoint('a b') });
      const client = bearerClient();

      // Act
      const removed = await client.removeEndpoint('a b');
      await client.getEndpoint('a b');
      await client.updateEndpoint('a b', { maxAttempts: 5, rateLimitPerSecond: null });
      await client.enableEndpoint('a b', { rate: 20 });
      await client.rotateSecret('a b', { overlapSeconds: 3600 });
      await client.sendTestEvent('a b');

      // Assess
      expect(removed).toBeUndefined();
      expect(requests.map((r) => [r.method, r.url, r.body])).toEqual([
        ['DELETE', '/v1/endpoints/a%20b', ''],
        ['GET', '/v1/endpoints/a%20b', ''],
        ['PATCH', '/v1/endpoints/a%20b', '{"maxAttempts":5,"rateLimitPerSecond":null}'],
        ['POST', '/v1/endpoints/a%20b/enable', '{"rate":20}'],
        ['POST', '/v1/endpoints/a%20b/rotate-secret', '{"overlapSeconds":3600}'],
        ['POST', '/v1/endpoints/a%20b/test', ''],
      ]);
    });

    it('posts one event as itself, and a list as {events}, ordered ones to ?ordered=true', async () => {
      // Prepare
      const event: ShipmentEvent = { id: 'evt_1', shipmentId: 'shp_1', status: 'delivered', occurredAt: '2026-12-04T10:00:00Z' };
      answer = () => ({ status: 202, body: { accepted: [{ eventId: 'evt_1', messageId: 'm-1' }], refused: [] } });
      const client = bearerClient();

      // Act
      const one = await client.postEvents(event);
      await client.postEvents([event, { ...event, id: 'evt_2' }], { ordered: true, idempotencyKey: 'batch-7' });

      // Assess
      expect(one).toEqual({ accepted: [{ eventId: 'evt_1', messageId: 'm-1' }], refused: [] });
      expect(requests.map((r) => [r.url, JSON.parse(r.body), r.headers['idempotency-key']])).toEqual([
        ['/v1/events', event, undefined],
        ['/v1/events?ordered=true', { events: [event, { ...event, id: 'evt_2' }] }, 'batch-7'],
      ]);
    });

    it('reads events, dead deliveries with their filters, replays and portal links at their paths', async () => {
      // Prepare
      const client = bearerClient();

      // Act
      await client.getEvent('evt:1');
      await client.listDead({ endpoint: 'orders', owner: 'acme', since: new Date('2026-12-01T00:00:00Z'), until: '2026-12-02T00:00:00Z', reason: 'exhausted', limit: 100 });
      await client.replay({ endpoint: 'orders', deadSince: new Date('2026-12-01T00:00:00Z'), dryRun: true, reason: 'fixed' });
      await client.createPortalLink({ owner: 'acme', ttlSeconds: 600 });

      // Assess
      expect(requests.map((r) => [r.method, r.url, r.body])).toEqual([
        ['GET', '/v1/events/evt%3A1', ''],
        ['GET', '/v1/dead?endpoint=orders&limit=100&owner=acme&reason=exhausted&since=2026-12-01T00%3A00%3A00.000Z&until=2026-12-02T00%3A00%3A00Z', ''],
        ['POST', '/v1/replays', '{"endpoint":"orders","deadSince":"2026-12-01T00:00:00.000Z","dryRun":true,"reason":"fixed"}'],
        ['POST', '/v1/portal-links', '{"owner":"acme","ttlSeconds":600}'],
      ]);
    });
  });

  describe('paging', () => {
    it('follows next to the last page, each item once, the filters kept on every page', async () => {
      // Prepare: five endpoints served two a page, the cursor the index of the next.
      const all = ['a', 'b', 'c', 'd', 'e'].map(endpoint);
      answer = (r) => {
        const query = new URL(r.url, origin).searchParams;
        const from = Number(query.get('cursor') ?? '0');
        const to = from + Number(query.get('limit'));
        return { status: 200, body: { items: all.slice(from, to), next: to < all.length ? String(to) : null } };
      };

      // Act
      const names: string[] = [];
      for await (const item of bearerClient().paginate.endpoints({ owner: 'acme', limit: 2 })) names.push(item.name);

      // Assess
      expect(names).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect(requests.map((r) => r.url)).toEqual([
        '/v1/endpoints?limit=2&owner=acme',
        '/v1/endpoints?cursor=2&limit=2&owner=acme',
        '/v1/endpoints?cursor=4&limit=2&owner=acme',
      ]);
    });

    it('asks for no page beyond the one being used when the caller stops early', async () => {
      // Prepare
      answer = () => ({ status: 200, body: { items: [endpoint('a'), endpoint('b')], next: 'more' } });

      // Act
      for await (const item of bearerClient().paginate.endpoints()) if (item.name === 'a') break;

      // Assess
      expect(requests).toHaveLength(1);
    });

    it("follows a shipment's deliveries and dead deliveries the same way", async () => {
      // Prepare
      const delivery = (eventId: string) => ({ eventId, endpoint: 'orders', state: 'dead' });
      answer = (r) => {
        const cursor = new URL(r.url, origin).searchParams.get('cursor');
        return { status: 200, body: cursor === null ? { items: [delivery('e1')], next: 'p2' } : { items: [delivery('e2')], next: null } };
      };
      const client = bearerClient();

      // Act
      const shipment: string[] = [];
      for await (const d of client.paginate.shipmentDeliveries('shp_1', { limit: 1 })) shipment.push(d.eventId);
      const dead: string[] = [];
      for await (const d of client.paginate.dead({ endpoint: 'orders' })) dead.push(d.eventId);

      // Assess
      expect([shipment, dead]).toEqual([
        ['e1', 'e2'],
        ['e1', 'e2'],
      ]);
      expect(requests.map((r) => r.url)).toEqual([
        '/v1/shipments/shp_1/deliveries?limit=1',
        '/v1/shipments/shp_1/deliveries?cursor=p2&limit=1',
        '/v1/dead?endpoint=orders',
        '/v1/dead?cursor=p2&endpoint=orders',
      ]);
    });

    it('sends a bulk replay again with each part’s next as its cursor until the selection is done', async () => {
      // Prepare: three parts.
      const part = (replayed: number, next: string | null) => ({
        endpoint: 'orders',
        deadSince: '2026-12-01T00:00:00.000Z',
        until: '2026-12-02T00:00:00.000Z',
        deadReason: null,
        dryRun: false,
        matched: replayed,
        replayed,
        noLongerDead: 0,
        withoutEvent: 0,
        enqueueFailed: [],
        ratePerSecond: 10,
        operator: 'alice',
        caller: 'arn:aws:iam::123456789012:user/alice',
        reason: 'fixed',
        next,
      });
      answer = (r) => {
        const cursor = (JSON.parse(r.body) as { cursor?: string }).cursor;
        return { status: 202, body: cursor === undefined ? part(100, 'p2') : cursor === 'p2' ? part(100, 'p3') : part(7, null) };
      };
      const request = { endpoint: 'orders', deadSince: '2026-12-01T00:00:00Z', until: '2026-12-02T00:00:00Z', reason: 'fixed' };

      // Act
      const replayed: number[] = [];
      for await (const done of bearerClient().paginate.bulkReplay(request)) replayed.push(done.replayed);

      // Assess
      expect(replayed).toEqual([100, 100, 7]);
      expect(requests.map((r) => JSON.parse(r.body))).toEqual([request, { ...request, cursor: 'p2' }, { ...request, cursor: 'p3' }]);
    });

    it('stops with an error when the API answers a cursor it answered before, rather than page forever', async () => {
      // Prepare
      answer = (r) => ({ status: 200, body: { items: [endpoint(r.url)], next: 'same' } });

      // Act
      const seen: string[] = [];
      const paging = (async () => {
        for await (const item of bearerClient().paginate.endpoints()) seen.push(item.name);
      })();

      // Assess
      await expect(paging).rejects.toThrow('the API answered a cursor it had answered before: paging stopped');
      expect(seen).toEqual(['/v1/endpoints', '/v1/endpoints?cursor=same']);
    });
  });

  describe('errors', () => {
    it('throws a problem document as HandoffApiError naming each bad field, the token in no message', async () => {
      // Prepare
      answer = () => ({ status: 400, headers: { 'content-type': 'application/problem+json' }, body: PROBLEM });

      // Act
      const apiError = await rejectionOf(bearerClient().createEndpoint({ name: 'x', url: 'http://x', eventTypes: ['*'] }), HandoffApiError);

      // Assess
      expect([apiError.status, apiError.code, apiError.title, apiError.requestId]).toEqual([400, 'invalid-request', 'Invalid request', 'req-42']);
      expect(apiError.errors.map((e) => e.path)).toEqual(['url', 'timeoutMs']);
      expect(apiError.message).not.toContain(TOKEN);
      expect(apiError.stack ?? '').not.toContain(TOKEN);
    });

    it('reads a 404 and a 409 by their codes', async () => {
      // Prepare
      const problem = (status: number, code: string) => ({ type: `https://handoff.dev/problems/${code}`, title: 't', status, detail: 'd', instance: 'r' });
      answer = (r) => (r.method === 'GET' ? { status: 404, body: problem(404, 'endpoint-not-found') } : { status: 409, body: problem(409, 'idempotency-key-reused') });
      const client = bearerClient();

      // Act
      const missing = await rejectionOf(client.getEndpoint('nope'), HandoffApiError);
      const reused = await rejectionOf(client.replay({ eventId: 'e', reason: 'r' }, { idempotencyKey: 'k' }), HandoffApiError);

      // Assess
      expect([missing.status, missing.code, reused.status, reused.code]).toEqual([404, 'endpoint-not-found', 409, 'idempotency-key-reused']);
    });

    it('follows no redirect: the credentials never go where it points', async () => {
      // Prepare
      answer = (r) => (r.url.startsWith('/elsewhere') ? { status: 200, body: {} } : { status: 302, headers: { location: `${origin}/elsewhere` } });

      // Act
      const error = await rejectionOf(bearerClient().stats(), HandoffApiError);

      // Assess
      expect([error.status, error.code]).toEqual([302, 'http-302']);
      expect(requests.map((r) => r.url)).toEqual(['/v1/stats']);
    });

    it('throws an answer of 2xx that is not JSON as an unreadable answer', async () => {
      answer = () => ({ status: 200, body: 'not json' });
      const error = await rejectionOf(bearerClient().stats(), HandoffApiError);
      expect([error.status, error.code]).toEqual([200, 'unreadable-answer']);
    });

    it('wraps a connection that fails as HandoffConnectionError, naming the origin only', async () => {
      // Prepare: a port nothing listens on any more.
      const closed = await listenOnLoopback(createServer());
      const closedOrigin = new URL(closed.url).origin;
      await closed.close();
      const client = new HandoffClient({ url: `${closedOrigin}/stage`, credentials: { token: TOKEN } });

      // Act
      const error = await rejectionOf(client.listDead({ owner: 'acme' }), HandoffConnectionError);

      // Assess
      expect(error.code).toBe('unreachable');
      expect(error.origin).toBe(closedOrigin);
      expect(error.message).toBe(`could not reach the handoff API at ${closedOrigin}: fetch failed`);
      expect(error.cause).toBeInstanceOf(Error);
      expect(error.message).not.toContain(TOKEN);
    });
  });
});
