/**
 * The endpoint routes of the management API (docs/contract.md §16) through its one handler
 * (`createApiHandler(ROUTES, …)`), on real emulators (dynalite, fauxqs) with the same
 * CommandContext the command builds for a target, and every answer checked against the API's own
 * OpenAPI document with standard validators: 401 without a caller, 400 naming every bad field, 201
 * with the signing secret once (never in a read or a list), 404, 409, a partial change, removal,
 * disable and enable recorded as the caller, rotation with its overlap, paging, Idempotency-Key.
 *
 * The test event goes through the normal pipeline: on the delivery queue sealed for the one
 * endpoint, then the real consumer handler (functions/consumer.ts, as the harness cold-starts it)
 * delivers it signed with the secret the API showed, and to no other endpoint, even one subscribed
 * to every type; a producer's message with the test event's status is invalid.
 *
 * The registry is shared within the file: each test uses endpoints of its own names.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryIdempotencyStore } from '../../api/idempotency';
import { portalCallerOf } from '../../api/portal-link';
import { createApiHandler, type ApiHandler } from '../../api/router';
import { apiDocument, ROUTES } from '../../api/routes';
import { endpointTestCommand } from '../../cli/commands/endpoint';
import { CommandContext } from '../../cli/context';
import type { Target } from '../../cli/target';
import { RESOURCE_ENV } from '../../lib/config';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import type { DeploymentSettings } from '../../lib/endpoints/endpoint';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { createLogger } from '../../lib/observability';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { apiEvent, DEFAULT_CALLER, urlOf, type ApiEventSpec } from '../helpers/api-events';
import { coldStartOnRegistry, isolateEachTest, useConsumerHarness, type ConsumerHarness, type Queues } from '../helpers/consumer-harness';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { OpenApiValidator } from '../helpers/openapi-validator';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { TEST_SEAL_KEY } from '../helpers/sqs-records';

const NAME = 'api-endpoints';
const ENDPOINTS_TABLE = 'handoff-endpoints-api-endpoints';
/** The harness's ledger table (test/helpers/consumer-harness.ts names it after the harness). */
const LEDGER_TABLE = `handoff-ledger-${NAME}`;
const SECRETS_KEY = LocalSecretCipher.generateKey();
/** Loopback receivers over http: allowed here as the sandbox allows them. */
const DEPLOYMENT: DeploymentSettings = { ...DEFAULT_DEPLOYMENT, allowHttp: true, allowPrivateCidrs: ['127.0.0.0/8'] };
const OPERATOR = 'arn:aws:iam::123456789012:role/ops-oncall';

let harness: ConsumerHarness;
let acme: TestReceiver;
let everything: TestReceiver;
let started: Queues;
let registry: DynamoDbEndpointRegistry;
let handler: ApiHandler;
let context: CommandContext;
let validator: OpenApiValidator;
/** The API's clock: set to the time at each test's start, so each time it writes is known. */
let clock = Date.now();
/** Every secret the API showed, and every answer's text: a secret may be in its own answer only. */
const shown: { secret: string; text: string }[] = [];
const answers: string[] = [];

interface Answer {
  readonly status: number;
  readonly contentType: string | undefined;
  readonly body: any;
  readonly text: string;
}

useConsumerHarness(NAME, async (h) => {
  harness = h;
  acme = h.receiver;
  everything = await startTestReceiver();
  const queues = await h.createQueues(30);
  await createEndpointsTable(h.dynamodb, ENDPOINTS_TABLE);
  registry = new DynamoDbEndpointRegistry({ client: h.dynamodb, tableName: ENDPOINTS_TABLE });
  const target: Target = {
    description: 'the test emulators',
    connection: { kind: 'sandbox', sqsEndpoint: h.emulators.sqsEndpoint, dynamodbEndpoint: h.emulators.dynamodbEndpoint, stateFile: `/nonexistent/${NAME}/sandbox.json` },
    ...queues,
    ledgerTable: LEDGER_TABLE,
    endpointsTable: ENDPOINTS_TABLE,
    deployment: DEPLOYMENT,
    sealKey: { key: TEST_SEAL_KEY },
    endpointSecretsKey: { key: SECRETS_KEY },
  };
  context = new CommandContext(target, { stdout: process.stdout, stderr: process.stderr }, () => clock);
  handler = createApiHandler(ROUTES, { context, idempotency: new MemoryIdempotencyStore(), now: () => clock, logger: createLogger({ service: 'api-test', write: () => {} }) });
  validator = await OpenApiValidator.of(apiDocument());
  started = queues;
  return async () => {
    context.close();
    await everything.close();
  };
});

// The consumer's log lines and metric documents: captured, not printed.
isolateEachTest(() => {});

beforeEach(() => {
  clock = Date.now();
});

afterAll(() => {
  // Assess (the file): a secret the API showed is in no other answer.
  for (const { secret, text } of shown) for (const answer of answers.filter((a) => a !== text)) expect(answer).not.toContain(secret);
});

/** One request through the handler, its answer checked against the OpenAPI document. */
async function call(spec: ApiEventSpec): Promise<Answer> {
  const event = apiEvent(spec);
  const result = await handler(event);
  const text = typeof result.body === 'string' ? result.body : '';
  const contentType = result.headers?.['content-type'] as string | undefined;
  const check = validator.check({ method: spec.method, url: urlOf(event), status: result.statusCode ?? 200, contentType, body: text });
  expect(check.errors, `${spec.method} ${spec.path} answered ${result.statusCode} ${text}`).toEqual([]);
  answers.push(text);
  return { status: result.statusCode ?? 200, contentType, body: text === '' ? undefined : JSON.parse(text), text };
}

/** Creates an endpoint through the API; its secret kept as shown. */
async function create(body: Record<string, unknown>): Promise<Answer> {
  const answer = await call({ method: 'POST', path: '/v1/endpoints', body });
  expect(answer.status, answer.text).toBe(201);
  shown.push({ secret: answer.body.secret, text: answer.text });
  return answer;
}

const iso = (ms: number) => new Date(ms).toISOString();

describe('Document: /v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document describing every endpoint route', async () => {
    // Act
    const check = await OpenApiValidator.checkDocument(apiDocument());

    // Assess
    expect(check.errors).toEqual([]);
    const paths = (apiDocument() as { paths: Record<string, Record<string, unknown>> }).paths;
    expect(Object.keys(paths['/v1/endpoints']!).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/v1/endpoints/{name}']!).sort()).toEqual(['delete', 'get', 'patch']);
    for (const action of ['disable', 'enable', 'rotate-secret', 'test']) expect(Object.keys(paths[`/v1/endpoints/{name}/${action}`]!)).toEqual(['post']);
  });
});

describe('Route: the endpoints, without credentials', () => {
  it('answers 401 with a problem document and does nothing', async () => {
    // Act
    const listed = await call({ method: 'GET', path: '/v1/endpoints', caller: null });
    const created = await call({ method: 'POST', path: '/v1/endpoints', caller: null, body: { name: 'nobody', url: acme.url, eventTypes: ['*'] } });

    // Assess
    for (const answer of [listed, created]) {
      expect(answer.status).toBe(401);
      expect(answer.contentType).toBe('application/problem+json');
      expect(answer.body.type).toBe('https://handoff.dev/problems/unauthenticated');
    }
    expect(await registry.get('nobody')).toBeUndefined();
  });
});

describe('Route: POST /v1/endpoints', () => {
  it('refuses an endpoint with 400 naming every bad field: an unknown one, a bad shape and a URL the endpoint guard refuses', async () => {
    // Act
    const answer = await call({
      method: 'POST',
      path: '/v1/endpoints',
      body: { name: 'refused', url: 'ftp://example.com/hooks', eventTypes: ['shipment.delivered'], attemptTimeoutMs: 5, colour: 'red' },
    });

    // Assess
    expect(answer.status).toBe(400);
    expect(answer.contentType).toBe('application/problem+json');
    expect(answer.body.type).toBe('https://handoff.dev/problems/invalid-request');
    expect(answer.body.errors).toEqual([
      { path: 'colour', message: expect.stringMatching(/^is not an endpoint field \(fields: name, url, /) },
      { path: 'attemptTimeoutMs', message: 'must be a whole number from 100 to 880000, got 5' },
      { path: 'url', message: 'is refused: the webhook URL must be http(s), got ftp:' },
    ]);
    expect(await registry.get('refused')).toBeUndefined();
  });

  it('adds it enabled with 201, showing its generated secret that once: a read and a list show only that one is set', async () => {
    // Act
    const created = await create({ name: 'hooks', url: `${acme.url}/hooks?token=abc`, eventTypes: ['shipment.delivered'], owner: 'acme-corp' });
    const read = await call({ method: 'GET', path: '/v1/endpoints/hooks' });
    const listed = await call({ method: 'GET', path: '/v1/endpoints', query: { owner: 'acme-corp' } });

    // Assess
    const secret = created.body.secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(created.body).toEqual({
      name: 'hooks',
      url: `${acme.url}/hooks?token=***`,
      state: 'enabled',
      eventTypes: ['shipment.delivered'],
      match: {},
      owner: 'acme-corp',
      secret,
      publicKey: null,
      headers: {},
      auth: null,
      tls: null,
      previousSecretUntil: null,
      parked: 0,
      health: { paused: false, pausedUntil: null, failures: 0, failingSince: null, lastAcceptedAt: null },
      stateChange: null,
      settings: {},
      createdAt: iso(clock),
      updatedAt: iso(clock),
    });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ name: 'hooks', secret: 'set', owner: 'acme-corp', release: null, settingsFrom: 'the settings of the test emulators' });
    expect(read.body.effective).toMatchObject({ maxAttempts: DEPLOYMENT.retryPolicy.maxAttempts, recovery: 'review' });
    expect(listed.body).toEqual({ items: [{ ...created.body, secret: 'set' }], next: null });
    for (const answer of [read, listed]) expect(answer.text).not.toContain(secret);
    // Stored encrypted with the deployment's key, never as shown.
    const stored = await registry.get('hooks');
    expect(stored?.fields.secret).toMatch(/^encrypted:local:/);
    expect(await new LocalSecretCipher(SECRETS_KEY).decrypt(stored!.fields.secret!, 'hooks')).toBe(secret);
  });

  it('answers 409 when the name is taken, changing nothing', async () => {
    // Prepare
    await create({ name: 'taken', url: acme.url, eventTypes: ['shipment.packed'] });
    const before = await registry.get('taken');

    // Act
    const again = await call({ method: 'POST', path: '/v1/endpoints', body: { name: 'taken', url: everything.url, eventTypes: ['*'] } });

    // Assess
    expect(again.status).toBe(409);
    expect(again.body.type).toBe('https://handoff.dev/problems/endpoint-conflict');
    expect(await registry.get('taken')).toEqual(before);
  });

  it('answers a repeat with the same Idempotency-Key with the first answer, its secret left out, adding one endpoint', async () => {
    // Act
    const headers = { 'Idempotency-Key': 'create-once-1' };
    const first = await call({ method: 'POST', path: '/v1/endpoints', headers, body: { name: 'once', url: acme.url, eventTypes: ['shipment.returned'] } });
    const repeat = await call({ method: 'POST', path: '/v1/endpoints', headers, body: { name: 'once', url: acme.url, eventTypes: ['shipment.returned'] } });
    shown.push({ secret: first.body.secret, text: first.text });

    // Assess
    expect(first.status).toBe(201);
    expect(repeat.status).toBe(201);
    const { secret: _secret, ...rest } = first.body;
    expect(repeat.body).toEqual({ ...rest, secretShown: true });
    expect((await registry.list()).filter((r) => r.fields.name === 'once')).toHaveLength(1);
  });
});

describe('Route: GET /v1/endpoints', () => {
  it('pages by `next` to the end, without repeats or gaps, and names a bad parameter', async () => {
    // Prepare
    const names = ['pager-a', 'pager-b', 'pager-c', 'pager-d', 'pager-e'];
    for (const name of names) await create({ name, url: acme.url, eventTypes: ['shipment.packed'], owner: 'pager' });

    // Act
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const page: Answer = await call({ method: 'GET', path: '/v1/endpoints', query: { owner: 'pager', limit: '2', ...(cursor === null ? {} : { cursor }) } });
      expect(page.status).toBe(200);
      pages.push(page.body.items.map((item: { name: string }) => item.name));
      cursor = page.body.next;
    } while (cursor !== null);
    const badLimit = await call({ method: 'GET', path: '/v1/endpoints', query: { limit: '0', state: 'asleep' } });
    const badCursor = await call({ method: 'GET', path: '/v1/endpoints', query: { owner: 'pager', cursor: 'bm90LWEtY3Vyc29y' } });

    // Assess: in name order (the owner index), two at a time.
    expect(pages.flat()).toEqual(names);
    expect(pages.slice(0, 2).map((page) => page.length)).toEqual([2, 2]);
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.errors).toEqual([
      { path: 'query.limit', message: 'must be a whole number from 1 to 100' },
      { path: 'query.state', message: 'must be one of enabled, disabled' },
    ]);
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.errors).toEqual([{ path: 'query.cursor', message: 'is not a cursor this listing issued with these owner and state filters: start again without it' }]);
  });
});

describe('Route: GET /v1/endpoints/{name}', () => {
  it('answers 404 with a problem document for an endpoint that does not exist', async () => {
    // Act
    const missing = await call({ method: 'GET', path: '/v1/endpoints/nowhere' });
    const malformed = await call({ method: 'GET', path: '/v1/endpoints/Not_A_Name' });

    // Assess
    for (const answer of [missing, malformed]) {
      expect(answer.status).toBe(404);
      expect(answer.body.type).toBe('https://handoff.dev/problems/endpoint-not-found');
    }
  });
});

describe('Route: PATCH /v1/endpoints/{name}', () => {
  it('changes the fields given, unsets those given as null, and names what changed', async () => {
    // Prepare
    await create({ name: 'patched', url: acme.url, eventTypes: ['shipment.packed'], owner: 'team-a', maxAttempts: 4 });
    clock += 1000;

    // Act
    const answer = await call({ method: 'PATCH', path: '/v1/endpoints/patched', body: { eventTypes: ['*'], retrySchedule: [5, 60], owner: null, name: 'patched' } });

    // Assess
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ name: 'patched', eventTypes: ['*'], owner: null, settings: { maxAttempts: 4, retrySchedule: [5, 60] }, updatedAt: iso(clock) });
    expect(answer.body.changed).toEqual(['eventTypes', 'owner', 'retrySchedule']);
    const stored = await registry.get('patched');
    expect(stored?.fields).toMatchObject({ eventTypes: ['*'], retrySchedule: [5, 60], maxAttempts: 4 });
    expect(stored?.fields.owner).toBeUndefined();
  });

  it('refuses a rename, unsetting a required field and a bad value, naming each; 404 for an unknown endpoint', async () => {
    // Prepare
    await create({ name: 'kept', url: acme.url, eventTypes: ['shipment.packed'] });
    const before = await registry.get('kept');

    // Act
    const refused = await call({ method: 'PATCH', path: '/v1/endpoints/kept', body: { name: 'other', url: null } });
    const badValue = await call({ method: 'PATCH', path: '/v1/endpoints/kept', body: { maxAttempts: 0, recovery: 'shred' } });
    const unknown = await call({ method: 'PATCH', path: '/v1/endpoints/nowhere', body: { maxAttempts: 3 } });

    // Assess
    expect(refused.status).toBe(400);
    expect(refused.body.errors.map((e: { path: string }) => e.path)).toEqual(['name', 'url']);
    expect(badValue.status).toBe(400);
    expect(badValue.body.errors).toEqual([
      { path: 'maxAttempts', message: 'must be a whole number from 1 to 100, got 0' },
      { path: 'recovery', message: 'must be one of review, drop, got "shred"' },
    ]);
    expect(unknown.status).toBe(404);
    expect(await registry.get('kept')).toEqual(before);
  });
});

describe('Route: DELETE /v1/endpoints/{name}', () => {
  it('removes it with 204; then it is not found', async () => {
    // Prepare
    await create({ name: 'doomed', url: acme.url, eventTypes: ['shipment.packed'] });

    // Act
    const removed = await call({ method: 'DELETE', path: '/v1/endpoints/doomed' });
    const read = await call({ method: 'GET', path: '/v1/endpoints/doomed' });
    const again = await call({ method: 'DELETE', path: '/v1/endpoints/doomed' });

    // Assess
    expect(removed.status).toBe(204);
    expect(removed.body).toBeUndefined();
    expect(read.status).toBe(404);
    expect(again.status).toBe(404);
    expect(await registry.get('doomed')).toBeUndefined();
  });
});

describe('Route: POST /v1/endpoints/{name}/disable and /enable', () => {
  it('records the authenticated caller as who changed its state, with the reason; enable begins the release at the rate given', async () => {
    // Prepare
    await create({ name: 'paused', url: acme.url, eventTypes: ['shipment.packed'] });

    // Act
    const disabled = await call({ method: 'POST', path: '/v1/endpoints/paused/disable', caller: OPERATOR, body: { reason: 'receiver down (INC-77)' } });
    const stateWhileDisabled = await registry.get('paused');
    clock += 1000;
    const enabled = await call({ method: 'POST', path: '/v1/endpoints/paused/enable', body: { rate: 8 } });

    // Assess
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ state: 'disabled', stateChange: { by: OPERATOR, reason: 'receiver down (INC-77)', at: iso(clock - 1000) } });
    expect(stateWhileDisabled?.stateChange).toEqual({ by: OPERATOR, reason: 'receiver down (INC-77)', at: clock - 1000 });
    expect(enabled.status).toBe(200);
    expect(enabled.body).toMatchObject({
      state: 'enabled',
      stateChange: { by: DEFAULT_CALLER, reason: 'enabled by an operator', at: iso(clock) },
      release: { since: iso(clock), rate: 8, rateNow: 1, scheduledUntil: null },
    });
    expect((await registry.get('paused'))?.stateChange).toEqual({ by: DEFAULT_CALLER, reason: 'enabled by an operator', at: clock });
  });

  it('refuses a disable without a reason, or with an operator in the body, naming each field', async () => {
    // Prepare
    await create({ name: 'steady', url: acme.url, eventTypes: ['shipment.packed'] });

    // Act
    const answer = await call({ method: 'POST', path: '/v1/endpoints/steady/disable', body: { operator: 'mallory' } });
    const badRate = await call({ method: 'POST', path: '/v1/endpoints/steady/enable', body: { rate: 0 } });

    // Assess
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([
      { path: 'operator', message: 'is not a field of this request (fields: reason)' },
      { path: 'reason', message: 'is required: a text saying why' },
    ]);
    expect(badRate.status).toBe(400);
    expect(badRate.body.errors).toEqual([{ path: 'rate', message: 'must be a whole number from 1 to 1000' }]);
    expect((await registry.get('steady'))?.state).toBe('enabled');
  });
});

describe('Route: POST /v1/endpoints/{name}/rotate-secret', () => {
  it('answers the new secret once; the old one keeps signing beside it for the overlap', async () => {
    // Prepare
    const created = await create({ name: 'rotated', url: acme.url, eventTypes: ['shipment.packed'] });
    const old = created.body.secret as string;

    // Act
    const rotated = await call({ method: 'POST', path: '/v1/endpoints/rotated/rotate-secret', body: { overlapSeconds: 3600 } });
    shown.push({ secret: rotated.body.secret, text: rotated.text });
    const read = await call({ method: 'GET', path: '/v1/endpoints/rotated' });

    // Assess
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(old);
    expect(rotated.body.previousSecretUntil).toBe(iso(clock + 3_600_000));
    expect(read.body).toMatchObject({ secret: 'set', previousSecretUntil: iso(clock + 3_600_000) });
    const stored = await registry.get('rotated');
    const cipher = new LocalSecretCipher(SECRETS_KEY);
    expect(await cipher.decrypt(stored!.fields.secret!, 'rotated')).toBe(rotated.body.secret);
    expect(await cipher.decrypt(stored!.fields.previousSecret!, 'rotated')).toBe(old);
    expect(stored?.fields.previousSecretUntil).toBe(clock + 3_600_000);
  });
});

describe('Routes: the endpoints, for a portal link', () => {
  it("lists, reads, tests, rotates and changes the URL of its owner's endpoints only; anything else is 403", async () => {
    // Prepare
    await create({ name: 'portal-mine', url: acme.url, eventTypes: ['shipment.packed'], owner: 'merchant-7' });
    await create({ name: 'portal-theirs', url: acme.url, eventTypes: ['shipment.packed'], owner: 'merchant-8' });
    const portal = { caller: portalCallerOf('merchant-7'), authorizer: 'lambda' } as const;

    // Act
    const listed = await call({ method: 'GET', path: '/v1/endpoints', ...portal });
    const listedOther = await call({ method: 'GET', path: '/v1/endpoints', query: { owner: 'merchant-8' }, ...portal });
    const read = await call({ method: 'GET', path: '/v1/endpoints/portal-mine', ...portal });
    const readOther = await call({ method: 'GET', path: '/v1/endpoints/portal-theirs', ...portal });
    const moved = await call({ method: 'PATCH', path: '/v1/endpoints/portal-mine', body: { url: `${acme.url}/moved` }, ...portal });
    const retuned = await call({ method: 'PATCH', path: '/v1/endpoints/portal-mine', body: { maxAttempts: 3 }, ...portal });
    const rotated = await call({ method: 'POST', path: '/v1/endpoints/portal-mine/rotate-secret', body: { overlapSeconds: 0 }, ...portal });
    shown.push({ secret: rotated.body.secret, text: rotated.text });
    const tested = await call({ method: 'POST', path: '/v1/endpoints/portal-mine/test', ...portal });
    const sent = await harness.receive(started.queueUrl, 1, { delete: true });
    const testedOther = await call({ method: 'POST', path: '/v1/endpoints/portal-theirs/test', ...portal });
    const disabled = await call({ method: 'POST', path: '/v1/endpoints/portal-mine/disable', body: { reason: 'no' }, ...portal });
    const removed = await call({ method: 'DELETE', path: '/v1/endpoints/portal-mine', ...portal });
    const added = await call({ method: 'POST', path: '/v1/endpoints', body: { name: 'portal-new', url: acme.url, eventTypes: ['*'] }, ...portal });

    // Assess
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((item: { name: string }) => item.name)).toEqual(['portal-mine']);
    expect(read.status).toBe(200);
    expect(moved.status).toBe(200);
    expect(moved.body.changed).toEqual(['url']);
    expect(rotated.status).toBe(200);
    expect(tested.status).toBe(202);
    expect(sent[0]?.MessageAttributes?.endpoint?.StringValue).toBe('portal-mine');
    for (const answer of [listedOther, readOther, retuned, testedOther, disabled, removed, added]) {
      expect(answer.status).toBe(403);
      expect(answer.body.type).toBe('https://handoff.dev/problems/out-of-scope');
    }
    expect((await registry.get('portal-mine'))?.fields).toMatchObject({ url: `${acme.url}/moved`, owner: 'merchant-7' });
    expect((await registry.get('portal-mine'))?.state).toBe('enabled');
    expect((await registry.get('portal-mine'))?.fields.maxAttempts).toBeUndefined();
    expect(await registry.get('portal-new')).toBeUndefined();
  });
});

describe('Route: POST /v1/endpoints/{name}/test', () => {
  it('sends a signed handoff.test event to that endpoint alone through the queue and the consumer', async () => {
    // Prepare: the endpoint tested, and one subscribed to every type.
    const created = await create({ name: 'tested', url: `${acme.url}/tested`, eventTypes: ['shipment.delivered'] });
    await create({ name: 'everything', url: everything.url, eventTypes: ['*'] });
    const consumer = await coldStartOnRegistry(harness, started, ENDPOINTS_TABLE, { [RESOURCE_ENV.endpointSecretsKey]: SECRETS_KEY });

    // Act
    const answer = await call({ method: 'POST', path: '/v1/endpoints/tested/test' });
    const messages = await harness.receive(started.queueUrl, 1);
    const response = await harness.invoke(consumer, started.queueUrl, messages);

    // Assess: addressed to the one endpoint, sealed; delivered there once, signed with the secret the API showed.
    expect(answer.status).toBe(202);
    const eventId = answer.body.eventId as string;
    expect(eventId).toMatch(/^test_[0-9a-f]{32}$/);
    expect(messages[0]?.MessageAttributes?.endpoint?.StringValue).toBe('tested');
    expect(response.batchItemFailures).toEqual([]);
    const requests = acme.requestsFor(eventId);
    expect(requests).toHaveLength(1);
    expect(requests[0]?.path).toBe(`${new URL(acme.url).pathname}/tested`);
    expect(acme.verify(requests[0]!, created.body.secret)).toBe(true);
    expect(JSON.parse(requests[0]!.body)).toEqual({
      id: eventId,
      shipmentId: `handoff.test:${eventId}`,
      status: 'test',
      occurredAt: iso(clock),
      data: { type: 'handoff.test', endpoint: 'tested' },
    });
    expect(everything.requestsFor(eventId)).toHaveLength(0);
    expect(await harness.ledger.get({ eventId, endpoint: 'tested' })).toMatchObject({ state: 'delivered', attempts: 1, eventType: 'handoff.test' });
    expect(await harness.ledger.get({ eventId, endpoint: 'everything' })).toBeUndefined();
  });

  it("dead-letters a producer's message with the test event's status as invalid, delivering it nowhere", async () => {
    // Prepare
    await create({ name: 'bystander', url: everything.url, eventTypes: ['*'] });
    const consumer = await coldStartOnRegistry(harness, started, ENDPOINTS_TABLE, { [RESOURCE_ENV.endpointSecretsKey]: SECRETS_KEY });
    const body = JSON.stringify({ id: 'evt_forged_test', shipmentId: 'shp_1', status: 'test', occurredAt: '2026-12-04T10:00:00Z', data: { endpoint: 'bystander' } });
    await harness.sqs.send(new SendMessageCommand({ QueueUrl: started.queueUrl, MessageBody: body, MessageAttributes: { endpoint: { DataType: 'String', StringValue: 'bystander' } } }));

    // Act
    const response = await harness.invoke(consumer, started.queueUrl, await harness.receive(started.queueUrl, 1));
    const deadLetters = await harness.receive(started.deadLetterQueueUrl, 1, { delete: true });

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(deadLetters[0]?.Body).toBe(body);
    expect(deadLetters[0]?.MessageAttributes?.reason?.StringValue).toBe('invalid');
    expect(everything.requestsFor('evt_forged_test')).toHaveLength(0);
  });

  it('is the use case `handoff endpoint test` runs: the same event, addressed the same way', async () => {
    // Prepare
    const created = await create({ name: 'cli-tested', url: acme.url, eventTypes: ['shipment.packed'] });
    const consumer = await coldStartOnRegistry(harness, started, ENDPOINTS_TABLE, { [RESOURCE_ENV.endpointSecretsKey]: SECRETS_KEY });

    // Act
    const result = await endpointTestCommand(context, 'cli-tested');
    const messages = await harness.receive(started.queueUrl, 1);
    await harness.invoke(consumer, started.queueUrl, messages);

    // Assess
    const { eventId } = result.json as { name: string; eventId: string };
    expect(result.json).toEqual({ name: 'cli-tested', eventId: expect.stringMatching(/^test_[0-9a-f]{32}$/) });
    expect(result.human).toBe(`sent a handoff.test event to endpoint cli-tested: ${eventId}\nfollow it: handoff status ${eventId}`);
    expect(messages[0]?.MessageAttributes?.endpoint?.StringValue).toBe('cli-tested');
    expect(acme.requestsFor(eventId)).toHaveLength(1);
    expect(acme.verify(acme.requestsFor(eventId)[0]!, created.body.secret)).toBe(true);
  });

  it('answers 404 for an endpoint that does not exist, sending nothing', async () => {
    // Act
    const answer = await call({ method: 'POST', path: '/v1/endpoints/nowhere/test' });

    // Assess
    expect(answer.status).toBe(404);
    expect(answer.body.type).toBe('https://handoff.dev/problems/endpoint-not-found');
  });
});
