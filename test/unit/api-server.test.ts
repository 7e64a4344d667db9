/**
 * The sandbox's API server (sandbox/api-server.ts) as an adapter only: the bearer check, the HTTP
 * API event it builds (as API Gateway's payload format 2.0 has it), and on a real loopback server
 * that every answer is the router's (401 without the token, 404, 413 for a body over the limit
 * with the rest left unread), and the console served beside it with no credential (its answers
 * written as the site makes them: gzip bytes, 304 and HEAD without a body). The routes' use cases
 * are not reached here: the e2e test (test/e2e/api.test.ts) drives them against a sandbox.
 */
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, requestOf } from '../../api/http';
import { MemoryIdempotencyStore } from '../../api/idempotency';
import { CommandContext, DISCARDED_OUTPUT } from '../../cli/context';
import { targetOfSandboxState } from '../../cli/target';
import { createLogger } from '../../lib/observability';
import { mintPortalToken, portalKeyFrom } from '../../api/portal-link';
import { MessageSeal } from '../../lib/queue/seal';
import { consoleFile, consoleSite } from '../../console/site';
import { apiEventOf, bearerMatches, callerOfBearer, generateApiToken, startApiServer, type ApiServer, type ReadRequest } from '../../sandbox/api-server';
import { parseSandboxState, SandboxStateError, type SandboxState } from '../../sandbox/state-file';

const STATE: SandboxState = {
  sqsEndpoint: 'http://127.0.0.1:1',
  dynamodbEndpoint: 'http://127.0.0.1:1',
  queueUrl: 'http://sqs.us-east-1.localhost:1/000000000000/handoff-deliveries',
  deadLetterQueueUrl: 'http://sqs.us-east-1.localhost:1/000000000000/handoff-dead-letters',
  ledgerTable: 'handoff-ledger',
  receiverUrl: 'http://127.0.0.1:4000/hooks',
  payloadLimitBytes: 4096,
};

function read(overrides: Partial<ReadRequest> = {}): ReadRequest {
  return { method: 'get', url: '/v1/endpoints', headers: { host: '127.0.0.1:9' }, sourceIp: '127.0.0.1', body: Buffer.alloc(0), overflowed: false, ...overrides };
}

describe('Function: bearerMatches', () => {
  it('takes exactly `Bearer <token>`, the scheme in any case, and nothing else', () => {
    const token = generateApiToken();
    expect(bearerMatches(`Bearer ${token}`, token)).toBe(true);
    expect(bearerMatches(`bearer ${token}`, token)).toBe(true);
    expect(bearerMatches(`Bearer ${token}x`, token)).toBe(false);
    expect(bearerMatches(`Bearer ${token.slice(1)}`, token)).toBe(false);
    expect(bearerMatches(token, token)).toBe(false);
    expect(bearerMatches(`Basic ${token}`, token)).toBe(false);
    expect(bearerMatches('Bearer ', token)).toBe(false);
    expect(bearerMatches(undefined, token)).toBe(false);
  });

  it('draws a new token of 32 random bytes each time', () => {
    const [a, b] = [generateApiToken(), generateApiToken()];
    expect(Buffer.from(a, 'base64url')).toHaveLength(32);
    expect(a).not.toBe(b);
  });
});

describe('Function: callerOfBearer', () => {
  const token = generateApiToken();
  const key = portalKeyFrom(MessageSeal.generateKey());
  const portal = { key: async () => key };
  const nowMs = Date.UTC(2026, 11, 5, 1);

  it("proves the API token's holder as `sandbox`, and a portal link's token as that owner's portal caller", async () => {
    const link = mintPortalToken('acme-corp', key, nowMs, 600).token;
    expect(await callerOfBearer(`Bearer ${token}`, token, portal, nowMs)).toBe('sandbox');
    expect(await callerOfBearer(`Bearer ${link}`, token, portal, nowMs)).toBe('portal:acme-corp');
  });

  it('proves nobody for a portal token expired, signed with another key, or with no portal key given', async () => {
    const link = mintPortalToken('acme-corp', key, nowMs, 600).token;
    const foreign = mintPortalToken('acme-corp', portalKeyFrom(MessageSeal.generateKey()), nowMs, 600).token;
    expect(await callerOfBearer(`Bearer ${link}`, token, portal, nowMs + 600_000)).toBeUndefined();
    expect(await callerOfBearer(`Bearer ${foreign}`, token, portal, nowMs)).toBeUndefined();
    expect(await callerOfBearer(`Bearer ${link}`, token, undefined, nowMs)).toBeUndefined();
    expect(await callerOfBearer(undefined, token, portal, nowMs)).toBeUndefined();
  });
});

describe('Function: apiEventOf', () => {
  it('builds the HTTP API event: path, query (repeats joined by commas), lower-case headers, the body, the caller', () => {
    // Act
    const event = apiEventOf(
      read({ method: 'post', url: '/v1/endpoints/a%2Fb/disable?x=1&y=2&x=3', headers: { Host: 'h', 'X-Many': ['a', 'b'] } as never, body: Buffer.from('{"reason":"é"}') }),
      true,
      'req-1',
      Date.UTC(2026, 11, 5),
    );

    // Assess
    expect(event).toMatchObject({
      version: '2.0',
      rawPath: '/v1/endpoints/a%2Fb/disable',
      rawQueryString: 'x=1&y=2&x=3',
      queryStringParameters: { x: '1,3', y: '2' },
      headers: { host: 'h', 'x-many': 'a,b' },
      body: '{"reason":"é"}',
      isBase64Encoded: false,
      requestContext: { requestId: 'req-1', http: { method: 'POST', path: '/v1/endpoints/a%2Fb/disable' }, authorizer: { lambda: { principal: 'sandbox' } }, timeEpoch: Date.UTC(2026, 11, 5) },
    });
    expect(requestOf(event)).toMatchObject({ method: 'POST', caller: 'sandbox', body: '{"reason":"é"}', query: { x: '1,3', y: '2' } });
  });

  it('leaves the Authorization header out: the credential ends at the bearer check', () => {
    const event = apiEventOf(read({ headers: { authorization: 'Bearer secret-token', host: 'h' } }), true, 'req-4', 0);
    expect(event.headers).toEqual({ host: 'h' });
    expect(JSON.stringify(event)).not.toContain('secret-token');
  });

  it('carries no authorizer, so no caller, when the token did not match', () => {
    const event = apiEventOf(read(), false, 'req-2', 0);
    expect(event.requestContext.authorizer).toBeUndefined();
    expect(requestOf(event).caller).toBeUndefined();
    expect(event.body).toBeUndefined();
    expect(event.queryStringParameters).toBeUndefined();
  });

  it('passes a body over the limit as its bytes, so the router counts them as sent', () => {
    const bytes = Buffer.alloc(MAX_BODY_BYTES + 1, 0xc3);
    const event = apiEventOf(read({ method: 'post', body: bytes, overflowed: true }), true, 'req-3', 0);
    expect(event.isBase64Encoded).toBe(true);
    expect(() => requestOf(event)).toThrow(`the request body is ${MAX_BODY_BYTES + 1} bytes`);
  });
});

describe('Function: parseSandboxState (the API fields)', () => {
  it('keeps apiUrl and apiToken, and refuses an apiUrl off loopback', () => {
    const state = { ...STATE, apiUrl: 'http://127.0.0.1:4100', apiToken: 'tok' };
    expect(parseSandboxState('/s.json', JSON.stringify(state))).toEqual(state);
    const act = () => parseSandboxState('/s.json', JSON.stringify({ ...state, apiUrl: 'http://203.0.113.7:4100' }));
    expect(act).toThrow(SandboxStateError);
    expect(act).toThrow('its apiUrl is not on loopback');
    expect(() => parseSandboxState('/s.json', JSON.stringify({ ...state, apiToken: '' }))).toThrow('has an apiToken that is not a token');
  });

  it("keeps the console's URL, and refuses one off loopback (the page would take the token to another host)", () => {
    const state = { ...STATE, apiUrl: 'http://127.0.0.1:4100', apiToken: 'tok', consoleUrl: 'http://127.0.0.1:4100/console/#token=tok' };
    expect(parseSandboxState('/s.json', JSON.stringify(state))).toEqual(state);
    const act = () => parseSandboxState('/s.json', JSON.stringify({ ...state, consoleUrl: 'https://console.example/#token=tok' }));
    expect(act).toThrow(SandboxStateError);
    expect(act).toThrow('its consoleUrl is not on loopback');
  });
});

describe('Function: startApiServer', () => {
  let server: ApiServer;
  const lines: string[] = [];

  beforeAll(async () => {
    // A target whose emulators are not there: no request here reaches a use case.
    const context = new CommandContext(targetOfSandboxState(STATE, '/nonexistent/sandbox.json'), DISCARDED_OUTPUT);
    server = await startApiServer({ port: 0, context, idempotency: new MemoryIdempotencyStore(), logger: createLogger({ service: 'test', write: (line) => lines.push(line) }) });
  });

  afterAll(async () => {
    await server?.close();
  });

  it('listens on 127.0.0.1 and answers 401, a problem document, to a request without the token', async () => {
    // Act
    const response = await fetch(`${server.url}/v1/openapi.json`);

    // Assess
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(((await response.json()) as { type: string }).type).toBe('https://handoff.dev/problems/unauthenticated');
  });

  it('answers with the router for a request with the token: the document, and 404 for an unknown path', async () => {
    const headers = { authorization: `Bearer ${server.token}` };
    const document = await fetch(`${server.url}/v1/openapi.json`, { headers });
    const unknown = await fetch(`${server.url}/v1/nothing`, { headers });
    expect(document.status).toBe(200);
    expect(((await document.json()) as { openapi: string }).openapi).toBe('3.1.0');
    expect(unknown.status).toBe(404);
    await unknown.body?.cancel();
  });

  it('answers 413 to a body over the limit while it is still being sent, and closes the connection', async () => {
    // Act: a body announced at 4 MiB, of which only the limit and a little more is ever sent; the
    // answer must come while the request is still open (a client racing to upload the rest of a
    // large body may see the connection reset first, which is the point of not reading it).
    const answer = await new Promise<{ status: number | undefined; connection: string | undefined; body: string }>((resolve, reject) => {
      const req = request(`${server.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json', 'content-length': String(4 * MAX_BODY_BYTES) },
      });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode, connection: res.headers.connection, body }));
      });
      req.on('error', reject);
      req.write(Buffer.alloc(MAX_BODY_BYTES + 4096, 0x20));
    });

    // Assess
    expect(answer.status).toBe(413);
    expect(answer.connection).toBe('close');
    expect((JSON.parse(answer.body) as { type: string }).type).toBe('https://handoff.dev/problems/too-large');
  });

  it('logs one line per request with its ID and status, never the token', () => {
    for (const line of lines) expect(line).not.toContain(server.token);
    const logged = lines.map((line) => JSON.parse(line) as { requestId: string; status: number });
    expect(logged.map((l) => l.status)).toEqual([401, 200, 404, 413]);
    for (const l of logged) expect(l.requestId).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('Function: startApiServer with the console', () => {
  const SCRIPT = Buffer.from(`console.log(${JSON.stringify('handoff '.repeat(200))});`);
  let server: ApiServer;
  const lines: string[] = [];

  beforeAll(async () => {
    const context = new CommandContext(targetOfSandboxState(STATE, '/nonexistent/sandbox.json'), DISCARDED_OUTPUT);
    const site = consoleSite([consoleFile('index.html', Buffer.from('<!doctype html><title>console</title>')), consoleFile('app.js', SCRIPT)], {});
    server = await startApiServer({
      port: 0,
      context,
      idempotency: new MemoryIdempotencyStore(),
      logger: createLogger({ service: 'test', write: (line) => lines.push(line) }),
      console: site,
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  /** One request, its body as the bytes sent (no decoding). */
  function get(path: string, method = 'GET', headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = request(`${server.url}${path}`, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('serves the console without a credential, gzipped bytes as they were made, and leaves /v1 to the router (401)', async () => {
    const page = await get('/console/');
    const gzipped = await get('/console/app.js', 'GET', { 'accept-encoding': 'gzip' });
    const api = await get('/v1/openapi.json');

    expect(page.status).toBe(200);
    expect(page.body.toString('utf8')).toBe('<!doctype html><title>console</title>');
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(Number(gzipped.headers['content-length'])).toBe(gzipped.body.byteLength);
    expect(gunzipSync(gzipped.body).equals(SCRIPT)).toBe(true);
    expect(api.status).toBe(401);
  });

  it('answers 304 and HEAD with no body, and logs no line for the console (the router logs its own requests)', async () => {
    const etag = (await get('/console/app.js')).headers.etag as string;

    const notModified = await get('/console/app.js', 'GET', { 'if-none-match': etag });
    const head = await get('/console/app.js', 'HEAD');

    expect(notModified.status).toBe(304);
    expect(notModified.body.byteLength).toBe(0);
    expect(head.status).toBe(200);
    expect(head.headers.etag).toBe(etag);
    expect(head.body.byteLength).toBe(0);
    expect(lines.map((line) => (JSON.parse(line) as { status: number }).status)).toEqual([401]);
  });
});
