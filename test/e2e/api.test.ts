/**
 * The management API end to end (docs/contract.md §16), against a real sandbox: its API server on
 * loopback (sandbox/api-server.ts) running the same handler as the deployment's function, the
 * emulators behind it, and real receivers on loopback that verify every request's signature with
 * the secret the API showed when it created their endpoint.
 *
 * Every answer, whatever its status, is checked against the API's own OpenAPI document
 * (`/v1/openapi.json`) by standard validators (test/helpers/openapi-validator.ts): an answer the
 * document does not describe (its status, its media type, its body) fails the test that got it.
 *
 * Secrets: the one an endpoint's creation answers with is never in a list, a read, a repeat of
 * the creation (Idempotency-Key), or the sandbox's log lines; neither is the API's bearer token.
 *
 * The tests share one sandbox and run in order (later ones use endpoints and deliveries earlier
 * ones made): run the file, not a single test. Each batch reads the registry (endpointsCacheMs 0),
 * so an event posted after a change meets it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { OpenApiValidator, type AnswerCheck } from '../helpers/openapi-validator';
import { signedWith, startTestReceiver, type ReceivedRequest, type TestReceiver } from '../helpers/receiver';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';

/** The seeded endpoint's secret (the endpoints file's, not the API's). */
const SEED_SECRET = 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=';
const SETTLE_MS = 45_000;
const PAGE_ENDPOINTS = 25;
const PAGE_LIMIT = 7;

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body as JSON (undefined: none). */
  readonly json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  readonly check: AnswerCheck;
}

interface CallOptions {
  readonly body?: unknown;
  /** The raw body, sent as it is (a body too large, a body not JSON). */
  readonly rawBody?: string;
  /** The bearer token; null: no Authorization header. Default: the sandbox's. */
  readonly token?: string | null;
  readonly idempotencyKey?: string;
}

let sandbox: SandboxProcess;
let clients: SandboxClients;
let validator: OpenApiValidator;
/** The document as the API served it. */
let document: { paths: Record<string, Record<string, { operationId: string }>> };
/** Receives the events of the endpoints the tests create. */
let hooks: TestReceiver;
/** Rejects what it gets (400: rejected, dead at once, §4; a 410 would disable its endpoint too). */
let refuser: TestReceiver;
/** Every answer the API gave, each with what the validator said of it. */
const answers: { method: string; path: string; status: number; check: AnswerCheck }[] = [];
/** Every secret the API showed: none may appear anywhere else. */
const secrets: string[] = [];

/** One call to the API, its answer validated against the document and recorded. */
async function call(method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const token = options.token === undefined ? sandbox.ready.apiToken : options.token;
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${sandbox.ready.apiUrl}${path}`, { method, headers, body });
  const text = await response.text();
  const answer = { method, url: path, status: response.status, contentType: response.headers.get('content-type') ?? undefined, body: text };
  const check = validator === undefined ? { valid: true, errors: [] } : validator.check(answer);
  answers.push({ method, path, status: response.status, check });
  expect(check.errors, `${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`).toEqual([]);
  return { status: response.status, headers: response.headers, text, json: text === '' ? undefined : JSON.parse(text), check };
}

function shipmentEvent(id: string, status: string, shipmentId = `shp_${id}`): Record<string, unknown> {
  return { id, shipmentId, status, occurredAt: '2026-12-04T10:15:00Z', data: { carrier: 'acme' } };
}

function requestsOf(receiver: TestReceiver, eventId: string): Promise<readonly ReceivedRequest[]> {
  return eventually(`a request for ${eventId}`, async () => (receiver.requestsFor(eventId).length > 0 ? receiver.requestsFor(eventId) : undefined), {
    timeoutMs: SETTLE_MS,
    describe: () => `requests so far: ${receiver.requests.map((r) => r.eventId).join(', ') || 'none'}`,
  });
}

/** Follows `next` from the first page to the last, each page through `call`. */
async function allPages(path: string): Promise<{ pages: number; items: any[] }> {
  const items: unknown[] = [];
  let pages = 0;
  let next: string | null = null;
  do {
    const separator = path.includes('?') ? '&' : '?';
    const page = await call('GET', next === null ? path : `${path}${separator}cursor=${encodeURIComponent(next)}`);
    expect(page.status).toBe(200);
    items.push(...(page.json.items as unknown[]));
    next = page.json.next as string | null;
    pages += 1;
  } while (next !== null);
  return { pages, items };
}

beforeAll(async () => {
  hooks = await startTestReceiver();
  refuser = await startTestReceiver();
  refuser.answerByDefault(400);
  const seed: EndpointFields = { name: 'seed', url: hooks.url, eventTypes: ['shipment.label_created'], secret: SEED_SECRET } as EndpointFields;
  sandbox = await startSandboxProcess({
    endpoints: [seed],
    env: { HANDOFF_RETRY_SCHEDULE: '1', HANDOFF_MAX_ATTEMPTS: '3', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000', HANDOFF_MAX_CONCURRENCY: '2' },
    endpointsCacheMs: 0,
  });
  clients = new SandboxClients(sandbox.ready);
  const served = await call('GET', '/v1/openapi.json');
  document = served.json;
  validator = await OpenApiValidator.of(document);
}, 120_000);

afterAll(async () => {
  clients?.close();
  await sandbox?.stop('SIGKILL');
  await hooks?.close();
  await refuser?.close();
});

describe('the management API in the sandbox', { timeout: 90_000 }, () => {
  it('serves an OpenAPI 3.1 document the standard schema accepts, with every resource of §16', async () => {
    // Prepare, Act
    const verdict = await OpenApiValidator.checkDocument(document);

    // Assess
    expect(verdict).toEqual({ valid: true, errors: [] });
    expect(Object.keys(document.paths).sort()).toEqual([
      '/v1/dead',
      '/v1/endpoints',
      '/v1/endpoints/{name}',
      '/v1/endpoints/{name}/disable',
      '/v1/endpoints/{name}/enable',
      '/v1/endpoints/{name}/rotate-secret',
      '/v1/endpoints/{name}/test',
      '/v1/events',
      '/v1/events/{eventId}',
      '/v1/openapi.json',
      '/v1/portal-links',
      '/v1/replays',
      '/v1/shipments/{shipmentId}/deliveries',
      '/v1/stats',
      '/v1/stats/minutes',
    ]);
  });

  it('answers 401 with a problem document to a request without the token, or with another', async () => {
    // Act
    const none = await call('GET', '/v1/openapi.json', { token: null });
    const wrong = await call('GET', '/v1/openapi.json', { token: `${sandbox.ready.apiToken.slice(0, -1)}x` });

    // Assess
    for (const answer of [none, wrong]) {
      expect(answer.status).toBe(401);
      expect(answer.headers.get('content-type')).toBe('application/problem+json');
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
      expect(answer.json).toMatchObject({ type: 'https://handoff.dev/problems/unauthenticated', status: 401, title: 'Unauthenticated' });
    }
  });

  it('answers 404 at a path the API does not have, and 413 to a body over the limit', async () => {
    // Act
    const unknown = await call('GET', '/v1/nothing-here');
    const tooLarge = await call('POST', '/v1/events', { rawBody: `{"id":"${'x'.repeat(1024 * 1024)}"}` });

    // Assess
    expect(unknown.status).toBe(404);
    expect(unknown.json.type).toBe('https://handoff.dev/problems/no-such-path');
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.json.type).toBe('https://handoff.dev/problems/too-large');
  });

  it('refuses an endpoint with a bad URL and a bad field with 400, naming both paths', async () => {
    // Act
    const answer = await call('POST', '/v1/endpoints', {
      body: { name: 'refused', url: 'ftp://example.com/hooks', eventTypes: ['shipment.delivered'], maxAttempts: 0 },
    });

    // Assess
    expect(answer.status).toBe(400);
    expect(answer.headers.get('content-type')).toBe('application/problem+json');
    const paths = (answer.json.errors as { path: string }[]).map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['url', 'maxAttempts']));
    // Nothing was made.
    expect((await call('GET', '/v1/endpoints/refused')).status).toBe(404);
  });

  it('creates an endpoint with 201, showing its secret that once: never in a read or a list', async () => {
    // Act
    const created = await call('POST', '/v1/endpoints', {
      body: { name: 'hooks', url: hooks.url, eventTypes: ['shipment.delivered', 'shipment.in_transit'], owner: 'acme-corp' },
    });

    // Assess
    expect(created.status).toBe(201);
    const secret = created.json.secret as string;
    expect(secret).toMatch(/^whsec_/);
    secrets.push(secret);
    expect(created.json).toMatchObject({ name: 'hooks', state: 'enabled', owner: 'acme-corp' });
    const read = await call('GET', '/v1/endpoints/hooks');
    expect(read.status).toBe(200);
    expect(read.json).toMatchObject({ name: 'hooks', state: 'enabled', owner: 'acme-corp' });
    const listed = await call('GET', '/v1/endpoints?owner=acme-corp');
    expect(listed.json.items.map((e: { name: string }) => e.name)).toEqual(['hooks']);
    for (const answer of [read, listed]) expect(answer.text).not.toContain(secret);
  });

  it('puts a posted event on the delivery queue: the endpoint it matches gets it, signed with the secret shown', async () => {
    // Act
    const posted = await call('POST', '/v1/events', { body: shipmentEvent('evt_api_one', 'delivered', 'shp_api_1') });

    // Assess
    expect(posted.status).toBe(202);
    expect(posted.json.refused).toEqual([]);
    expect(posted.json.accepted).toEqual([expect.objectContaining({ eventId: 'evt_api_one', messageId: expect.any(String) })]);
    const [request] = await requestsOf(hooks, 'evt_api_one');
    expect(signedWith(request!, secrets[0]!)).toBe(true);
    // The seeded endpoint takes only label_created: it got nothing.
    expect(hooks.requestsFor('evt_api_one')).toHaveLength(1);
  });

  it("posts a batch, refusing an invalid event by its index while the rest go on, and shows an event's deliveries with their attempts", async () => {
    // Act
    const posted = await call('POST', '/v1/events', {
      body: { events: [shipmentEvent('evt_api_two', 'in_transit', 'shp_api_1'), { id: 'evt_api_bad', status: 'lost' }] },
    });
    await requestsOf(hooks, 'evt_api_two');
    const delivered = await eventually(
      'evt_api_two delivered',
      async () => {
        const answer = await call('GET', '/v1/events/evt_api_two');
        return answer.json.deliveries?.[0]?.state === 'delivered' ? answer : undefined;
      },
      { timeoutMs: SETTLE_MS },
    );

    // Assess
    expect(posted.status).toBe(202);
    expect(posted.json.accepted).toEqual([expect.objectContaining({ eventId: 'evt_api_two', messageId: expect.any(String) })]);
    expect(posted.json.refused).toEqual([expect.objectContaining({ index: 1, error: expect.any(String) })]);
    expect(delivered.json.eventId).toBe('evt_api_two');
    expect(delivered.json.deliveries).toHaveLength(1);
    const [delivery] = delivered.json.deliveries;
    expect(delivery).toMatchObject({ eventId: 'evt_api_two', endpoint: 'hooks', state: 'delivered', attempts: 1 });
    expect(delivery.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'accepted', status: 200 })]);
    expect((await call('GET', '/v1/events/evt_api_never')).status).toBe(404);
  });

  it("finds a shipment's deliveries, newest first", async () => {
    // Act
    const found = await eventually(
      "shp_api_1's two deliveries",
      async () => {
        const answer = await call('GET', '/v1/shipments/shp_api_1/deliveries');
        return answer.json.items?.length === 2 ? answer : undefined;
      },
      { timeoutMs: SETTLE_MS },
    );

    // Assess
    expect(found.status).toBe(200);
    expect(found.json.items.map((d: { eventId: string }) => d.eventId).sort()).toEqual(['evt_api_one', 'evt_api_two']);
    expect(found.json.next).toBeNull();
  });

  it('lists a dead delivery, counts it in a dry-run bulk replay, and replays it once with the caller as operator', async () => {
    // Prepare: an endpoint whose receiver answers 400 (rejected: dead at once, §4).
    const startedAt = new Date(Date.now() - 1000).toISOString();
    const created = await call('POST', '/v1/endpoints', { body: { name: 'refuser', url: refuser.url, eventTypes: ['shipment.exception'] } });
    expect(created.status).toBe(201);
    secrets.push(created.json.secret as string);
    await call('POST', '/v1/events', { body: shipmentEvent('evt_api_dead', 'exception') });
    const dead = await eventually(
      'evt_api_dead dead at refuser',
      async () => {
        const answer = await call('GET', '/v1/dead?endpoint=refuser');
        return answer.json.items?.length === 1 ? answer : undefined;
      },
      { timeoutMs: SETTLE_MS },
    );
    refuser.answerByDefault(200);

    // Act
    const dryRun = await call('POST', '/v1/replays', { body: { endpoint: 'refuser', deadSince: startedAt, dryRun: true, reason: 'count them' } });
    const replayed = await call('POST', '/v1/replays', { body: { eventId: 'evt_api_dead', endpoint: 'refuser', reason: 'receiver fixed' } });
    await eventually('the replay delivered', async () => refuser.applied.includes('evt_api_dead'), { timeoutMs: SETTLE_MS });
    const after = await eventually(
      'evt_api_dead delivered',
      async () => {
        const answer = await call('GET', '/v1/events/evt_api_dead');
        return answer.json.deliveries?.[0]?.state === 'delivered' ? answer : undefined;
      },
      { timeoutMs: SETTLE_MS },
    );

    // Assess
    expect(dead.json.items[0]).toMatchObject({ eventId: 'evt_api_dead', endpoint: 'refuser', state: 'dead', deadReason: 'rejected' });
    expect(dryRun.status).toBe(200);
    expect(dryRun.json).toMatchObject({ endpoint: 'refuser', dryRun: true, matched: 1, replayed: 0 });
    expect([200, 202]).toContain(replayed.status);
    expect(after.json.deliveries[0]).toMatchObject({ state: 'delivered', replays: 1 });
    expect(after.json.deliveries[0].audit).toEqual([expect.objectContaining({ action: 'replay', operator: 'sandbox', reason: 'receiver fixed' })]);
    // Rejected once, delivered once on the replay: two requests, one applied.
    expect(refuser.requestsFor('evt_api_dead').map((r) => r.answer)).toEqual([400, 200]);
    expect(refuser.applied.filter((id) => id === 'evt_api_dead')).toHaveLength(1);
    expect(signedWith(refuser.requestsFor('evt_api_dead')[1]!, secrets[1]!)).toBe(true);
  });

  it('changes, disables and enables an endpoint as the caller, rotates its secret, sends it a test event signed with the new one, and removes it', async () => {
    // Prepare
    const created = await call('POST', '/v1/endpoints', { body: { name: 'lifecycle', url: hooks.url, eventTypes: ['shipment.out_for_delivery'] } });
    expect(created.status).toBe(201);
    secrets.push(created.json.secret as string);

    // Act
    const changed = await call('PATCH', '/v1/endpoints/lifecycle', { body: { eventTypes: ['shipment.out_for_delivery', 'shipment.returned'] } });
    const disabled = await call('POST', '/v1/endpoints/lifecycle/disable', { body: { reason: 'receiver maintenance' } });
    const enabled = await call('POST', '/v1/endpoints/lifecycle/enable', { body: {} });
    const rotated = await call('POST', '/v1/endpoints/lifecycle/rotate-secret', { body: { overlapSeconds: 0 } });
    const newSecret = rotated.json.secret as string;
    secrets.push(newSecret);
    const tested = await call('POST', '/v1/endpoints/lifecycle/test');
    const [testRequest] = await requestsOf(hooks, tested.json.eventId as string);
    const removed = await call('DELETE', '/v1/endpoints/lifecycle');

    // Assess
    expect(changed.status).toBe(200);
    expect(changed.json.eventTypes).toEqual(['shipment.out_for_delivery', 'shipment.returned']);
    expect(disabled.status).toBe(200);
    expect(disabled.json).toMatchObject({ state: 'disabled', stateChange: { by: 'sandbox', reason: 'receiver maintenance' } });
    expect(enabled.status).toBe(200);
    expect(enabled.json).toMatchObject({ state: 'enabled' });
    expect(rotated.status).toBe(200);
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(created.json.secret);
    expect(tested.status).toBe(202);
    // Overlap 0: the new secret alone signs.
    expect(signedWith(testRequest!, newSecret)).toBe(true);
    expect(signedWith(testRequest!, created.json.secret as string)).toBe(false);
    expect(JSON.parse(testRequest!.body)).toMatchObject({ status: 'test', data: { type: 'handoff.test' } });
    expect(removed.status).toBe(204);
    expect(removed.text).toBe('');
    expect((await call('GET', '/v1/endpoints/lifecycle')).status).toBe(404);
  });

  it('answers a repeated POST with the same Idempotency-Key with the first answer, doing nothing twice', async () => {
    // Act
    const first = await call('POST', '/v1/events', { body: shipmentEvent('evt_api_idem', 'delivered'), idempotencyKey: 'post-idem-1' });
    const second = await call('POST', '/v1/events', { body: shipmentEvent('evt_api_idem', 'delivered'), idempotencyKey: 'post-idem-1' });
    const createdOnce = await call('POST', '/v1/endpoints', {
      body: { name: 'idem', url: hooks.url, eventTypes: ['shipment.returned'] },
      idempotencyKey: 'create-idem-1',
    });
    const createdAgain = await call('POST', '/v1/endpoints', {
      body: { name: 'idem', url: hooks.url, eventTypes: ['shipment.returned'] },
      idempotencyKey: 'create-idem-1',
    });
    const otherBody = await call('POST', '/v1/endpoints', {
      body: { name: 'idem-2', url: hooks.url, eventTypes: ['shipment.returned'] },
      idempotencyKey: 'create-idem-1',
    });
    await requestsOf(hooks, 'evt_api_idem');
    await eventually('the delivery queue to drain', async () => (await clients.queueDepth()) === 0, { timeoutMs: SETTLE_MS });

    // Assess
    expect(second.status).toBe(first.status);
    expect(second.json).toEqual(first.json);
    // One message on the queue, so one request at the receiver.
    expect(hooks.requestsFor('evt_api_idem')).toHaveLength(1);
    expect(createdOnce.status).toBe(201);
    secrets.push(createdOnce.json.secret as string);
    // The repeat is the first answer without its secret: shown once.
    const { secret: _shownOnce, ...firstWithoutSecret } = createdOnce.json as Record<string, unknown>;
    expect(createdAgain.status).toBe(201);
    expect(createdAgain.json).toEqual({ ...firstWithoutSecret, secretShown: true });
    expect((await call('GET', '/v1/endpoints/idem')).status).toBe(200);
    expect(otherBody.status).toBe(409);
    expect((await call('GET', '/v1/endpoints/idem-2')).status).toBe(404);
  });

  it('pages through the endpoints by `next` to the end, without repeats or gaps', async () => {
    // Prepare
    const names = Array.from({ length: PAGE_ENDPOINTS }, (_, i) => `page-${String(i).padStart(2, '0')}`);
    for (const name of names) {
      const created = await call('POST', '/v1/endpoints', { body: { name, url: hooks.url, eventTypes: ['shipment.packed'], owner: 'pager' } });
      expect(created.status).toBe(201);
      secrets.push(created.json.secret as string);
    }

    // Act
    const { pages, items } = await allPages(`/v1/endpoints?owner=pager&limit=${PAGE_LIMIT}`);

    // Assess
    expect(pages).toBe(Math.ceil(PAGE_ENDPOINTS / PAGE_LIMIT));
    expect(items.map((e) => e.name).sort()).toEqual(names);
    for (const item of items) expect(JSON.stringify(item)).not.toMatch(/whsec_/);
  });

  it("gives stats, and a portal link whose token reaches only its owner's endpoints", async () => {
    // Act
    const stats = await call('GET', '/v1/stats?endpoint=hooks');
    const link = await call('POST', '/v1/portal-links', { body: { owner: 'acme-corp', ttlSeconds: 600 } });
    const portalToken = link.json.token as string;
    const own = await call('GET', '/v1/dead?owner=acme-corp', { token: portalToken });
    const others = await call('GET', '/v1/dead?owner=pager', { token: portalToken });
    const minting = await call('POST', '/v1/portal-links', { body: { owner: 'pager' }, token: portalToken });
    const ownEndpoints = await call('GET', '/v1/endpoints', { token: portalToken });
    const otherEndpoint = await call('GET', '/v1/endpoints/page-00', { token: portalToken });

    // Assess
    expect(stats.status).toBe(200);
    expect(link.status).toBe(201);
    expect(link.json).toMatchObject({ owner: 'acme-corp', url: expect.stringContaining(`#portal=${portalToken}`) });
    expect(own.status).toBe(200);
    // acme-corp's endpoint (hooks) has no dead delivery; refuser's (no owner) is not its to see.
    expect(own.json).toEqual({ items: [], next: null });
    expect(others.status).toBe(403);
    expect(minting.status).toBe(403);
    expect(ownEndpoints.status).toBe(200);
    expect(ownEndpoints.json.items.map((e: { name: string }) => e.name)).toEqual(['hooks']);
    expect(otherEndpoint.status).toBe(403);
    secrets.push(portalToken);
  });

  it('charts deliveries minute by minute from the metric sink: an operator any endpoint or all, a portal link its owner\'s endpoints', async () => {
    // Act: hooks got evt_api_one, evt_api_two and evt_api_idem in the last hour, each delivered at once.
    const minutes = await eventually(
      "hooks' deliveries in the series",
      async () => {
        const answer = await call('GET', '/v1/stats/minutes?endpoint=hooks');
        const delivered = (answer.json.points ?? []).reduce((sum: number, p: { delivered: number }) => sum + p.delivered, 0);
        return delivered >= 3 ? answer : undefined;
      },
      { timeoutMs: SETTLE_MS },
    );
    const totals = await call('GET', '/v1/stats/minutes?since=24h');
    const link = await call('POST', '/v1/portal-links', { body: { owner: 'acme-corp', ttlSeconds: 600 } });
    const portalToken = link.json.token as string;
    secrets.push(portalToken);
    const ownMinutes = await call('GET', '/v1/stats/minutes?endpoint=hooks', { token: portalToken });
    const allMinutes = await call('GET', '/v1/stats/minutes', { token: portalToken });

    // Assess
    expect(minutes.status).toBe(200);
    expect(minutes.json).toMatchObject({ endpoint: 'hooks', periodSeconds: 60 });
    expect(minutes.json.metricsError).toBeUndefined();
    expect(minutes.json.points).toHaveLength(60);
    const at = (minutes.json.points as { at: string }[]).map((p) => Date.parse(p.at));
    expect(at.every((t, i) => i === 0 || t - at[i - 1]! === 60_000)).toBe(true);
    expect(Date.now() - at.at(-1)!).toBeLessThan(2 * 60_000);
    // refuser rejected evt_api_dead once: a failed attempt among the totals.
    expect(totals.json.points).toHaveLength(1440);
    expect(totals.json.points.reduce((sum: number, p: { failed: number }) => sum + p.failed, 0)).toBeGreaterThanOrEqual(1);
    expect(ownMinutes.status).toBe(200);
    expect(allMinutes.status).toBe(403);
  });

  it("shows a portal link its owner's deliveries of an event and a shipment only, and replays none of another's", async () => {
    // Prepare: hooks is acme-corp's; refuser has no owner.
    const link = await call('POST', '/v1/portal-links', { body: { owner: 'acme-corp', ttlSeconds: 600 } });
    const portalToken = link.json.token as string;
    secrets.push(portalToken);

    // Act
    const own = await call('GET', '/v1/events/evt_api_two', { token: portalToken });
    const other = await call('GET', '/v1/events/evt_api_dead', { token: portalToken });
    const shipment = await call('GET', '/v1/shipments/shp_api_1/deliveries', { token: portalToken });
    const replayOther = await call('POST', '/v1/replays', { body: { eventId: 'evt_api_dead', endpoint: 'refuser', reason: 'not ours' }, token: portalToken });
    const replayAll = await call('POST', '/v1/replays', { body: { eventId: 'evt_api_dead', reason: 'every endpoint' }, token: portalToken });
    const replayOwn = await call('POST', '/v1/replays', { body: { eventId: 'evt_api_two', endpoint: 'hooks', reason: 'ours' }, token: portalToken });

    // Assess
    expect(own.status).toBe(200);
    expect(own.json.deliveries.map((d: { endpoint: string }) => d.endpoint)).toEqual(['hooks']);
    expect(other.status).toBe(404);
    expect(shipment.status).toBe(200);
    expect(shipment.json.items.map((d: { endpoint: string }) => d.endpoint)).toEqual(['hooks', 'hooks']);
    expect(replayOther.status).toBe(403);
    expect(replayAll.status).toBe(403);
    // In scope, and refused for what it is: a delivered delivery is not dead.
    expect(replayOwn.status).toBe(409);
    expect(replayOwn.json.type).toBe('https://handoff.dev/problems/not-dead');
  });

  it('answered every request as the document describes it, and never showed a secret or the token again', () => {
    // Assess
    expect(answers.filter((a) => !a.check.valid)).toEqual([]);
    expect(answers.length).toBeGreaterThan(40);
    // The one line that shows the token: the console's URL, printed at start for whoever started the sandbox.
    const consoleLine = `console: ${sandbox.ready.consoleUrl}`;
    expect(sandbox.stderr().filter((line) => line.includes(sandbox.ready.apiToken))).toEqual([consoleLine]);
    const log = sandbox.stderr().filter((line) => line !== consoleLine).join('\n');
    for (const secret of [...secrets, SEED_SECRET, sandbox.ready.apiToken]) expect(log).not.toContain(secret);
    // The API's lines: one per request, naming its ID and route, nothing the caller sent (no URL,
    // no owner, no event's contents).
    const apiLines = sandbox.stderr().filter((line) => line.startsWith('api: '));
    expect(apiLines.length).toBe(answers.length);
    expect(apiLines.join('\n')).toContain('"operation":"createEndpoint"');
    for (const sent of [hooks.url, refuser.url, 'acme-corp', 'carrier', 'receiver fixed']) expect(apiLines.join('\n')).not.toContain(sent);
  });
});
