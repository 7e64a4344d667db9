/**
 * The HTTP sender's OAuth2 client credentials (docs/contract.md §18 `auth`) against a real token
 * server and a receiver that requires its tokens, on loopback: one token fetch however many deliveries
 * wait for it, one more once it is within a minute of its expiry, one after a receiver's 401 (itself
 * `temporary`, not `rejected`); a token endpoint that fails (an error status, no JSON, no token, no
 * answer) makes the attempt `temporary`/`auth` with its status, and nothing reaches the receiver; a
 * refresh that fails or is slow leaves the held token in use until it expires (never one a receiver
 * refused), asked again after a back-off; a fetch outlasts the deadline of the send that started it,
 * each send waiting for it until its own; the token endpoint is reached through the guard.
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { EndpointRefusedError } from '../../lib/errors';
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../../lib/webhook/endpoint-guard';
import { HttpWebhookSender, type HttpWebhookSenderOptions } from '../../lib/webhook/http-sender';
import { DEFAULT_LIFETIME_SECONDS, REFRESH_BACKOFF_MS } from '../../lib/webhook/oauth2-token';
import type { ClientCredentials } from '../../lib/webhook/sender';
import { closedAfterEach } from '../helpers/cleanup';

const T0 = Date.UTC(2026, 11, 5, 8, 0, 0);
const REQUEST = { eventId: 'evt_oauth_1', body: '{"id":"evt_oauth_1"}' };
const CLIENT_ID = 'handoff client:eu';
const CLIENT_SECRET = 's3cr&t=+ value';

interface TokenRequest {
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly form: URLSearchParams;
}

/** What the token server answers: a status and a body, `hang` (never), or its next token once `after` settles. */
type TokenAnswer = { status: number; body: string } | 'hang' | { after: Promise<void> };

const cleanup = closedAfterEach();
const listen = cleanup.listen;

/** A token server issuing tok-1, tok-2, … (each valid at the receiver until revoked), or answering as `answer` says when it says. */
async function startTokenServer(options: { expiresIn?: number; answer?: () => TokenAnswer | undefined; host?: string } = {}) {
  const requests: TokenRequest[] = [];
  const valid = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ authorization: req.headers.authorization, contentType: req.headers['content-type'], form: new URLSearchParams(Buffer.concat(chunks).toString()) });
      const answer = options.answer?.();
      if (answer === 'hang') return;
      const token = `tok-${requests.length}`;
      const issue = () => {
        valid.add(token);
        const body: Record<string, unknown> = { access_token: token, token_type: 'Bearer' };
        if (options.expiresIn !== undefined) body.expires_in = options.expiresIn;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      if (answer === undefined) issue();
      else if ('after' in answer) void answer.after.then(issue);
      else res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  const host = options.host ?? '127.0.0.1';
  const port = await listen(server, host);
  return { tokenUrl: `http://${host}:${port}/oauth/token`, requests, valid };
}

/** A receiver that takes a request only with `Authorization: Bearer` and a valid token. */
async function startReceiver(valid: ReadonlySet<string>, host = '127.0.0.1') {
  const authorizations: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    req.resume();
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    req.on('end', () => res.writeHead(token !== undefined && valid.has(token) ? 204 : 401).end());
  });
  const port = await listen(server, host);
  return { url: `http://${host}:${port}/in`, authorizations };
}

function sender(options: Partial<HttpWebhookSenderOptions> & { url: string; auth: ClientCredentials }): HttpWebhookSender {
  const created = new HttpWebhookSender({ timeoutMs: 5_000, guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS), ...options });
  cleanup.add(() => created.close());
  return created;
}

const credentials = (tokenUrl: string, extra: Partial<ClientCredentials> = {}): ClientCredentials => ({ tokenUrl, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, ...extra });

function sendMany(client: HttpWebhookSender, count: number) {
  return Promise.all(Array.from({ length: count }, (_, i) => client.send({ eventId: `evt_oauth_${i}`, body: '{}' })));
}

describe('HttpWebhookSender: OAuth2 client credentials', () => {
  it('asks with HTTP Basic (id and secret form-encoded), grant_type, scope and audience, and sends the token as a bearer', async () => {
    const tokens = await startTokenServer({ expiresIn: 3600 });
    const receiver = await startReceiver(tokens.valid);

    const { outcome } = await sender({ url: receiver.url, auth: credentials(tokens.tokenUrl, { scope: 'shipments:write events', audience: 'https://api.carrier.example' }) }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(receiver.authorizations).toEqual(['Bearer tok-1']);
    const [asked] = tokens.requests;
    const basic = Buffer.from(asked!.authorization!.replace(/^Basic /, ''), 'base64').toString();
    expect(basic).toBe('handoff+client%3Aeu:s3cr%26t%3D%2B+value');
    expect(asked!.contentType).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(asked!.form)).toEqual({ grant_type: 'client_credentials', scope: 'shipments:write events', audience: 'https://api.carrier.example' });
  });

  it('fetches one token for 50 concurrent deliveries, and uses it until a minute before it expires', async () => {
    let clock = T0;
    const tokens = await startTokenServer({ expiresIn: 600 });
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl), now: () => clock });

    const first = await sendMany(client, 50);
    clock = T0 + 539_999;
    const before = await sendMany(client, 50);

    expect([...first, ...before].map((r) => r.outcome)).toEqual(Array(100).fill({ kind: 'accepted', status: 204 }));
    expect(tokens.requests).toHaveLength(1);

    clock = T0 + 540_000;
    const after = await sendMany(client, 50);

    expect(after.map((r) => r.outcome)).toEqual(Array(50).fill({ kind: 'accepted', status: 204 }));
    expect(tokens.requests).toHaveLength(2);
    expect(new Set(receiver.authorizations.slice(100))).toEqual(new Set(['Bearer tok-2']));
  });

  it('keeps a token without expires_in for DEFAULT_LIFETIME_SECONDS less a minute', async () => {
    let clock = T0;
    const tokens = await startTokenServer();
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl), now: () => clock });

    await client.send(REQUEST);
    clock = T0 + (DEFAULT_LIFETIME_SECONDS - 60) * 1000 - 1;
    await client.send(REQUEST);
    expect(tokens.requests).toHaveLength(1);

    clock += 1;
    await client.send(REQUEST);
    expect(tokens.requests).toHaveLength(2);
  });

  it('takes a receiver’s 401 as temporary, and fetches exactly one new token after 20 of them', async () => {
    const tokens = await startTokenServer({ expiresIn: 3600 });
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl) });
    await client.send(REQUEST);

    tokens.valid.delete('tok-1'); // revoked
    const refused = await sendMany(client, 20);
    const again = await sendMany(client, 20);

    expect(refused.map((r) => r.outcome)).toEqual(Array(20).fill({ kind: 'temporary', status: 401 }));
    expect(again.map((r) => r.outcome)).toEqual(Array(20).fill({ kind: 'accepted', status: 204 }));
    expect(tokens.requests).toHaveLength(2);
  });

  it('sends its token in place of an authorization among the endpoint’s headers', async () => {
    const tokens = await startTokenServer({ expiresIn: 3600 });
    const receiver = await startReceiver(tokens.valid);

    const { outcome } = await sender({ url: receiver.url, auth: credentials(tokens.tokenUrl), headers: { Authorization: 'Bearer static', 'X-Tenant': 'acme' } }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(receiver.authorizations).toEqual(['Bearer tok-1']);
  });

  it('leaves a 401 rejected for an endpoint without auth', async () => {
    const receiver = await startReceiver(new Set());

    const { outcome } = await new HttpWebhookSender({ url: receiver.url, timeoutMs: 5_000, guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS) }).send(REQUEST);

    expect(outcome).toMatchObject({ kind: 'rejected', status: 401 });
  });
});

describe('HttpWebhookSender: a token endpoint that fails', () => {
  it.each<[string, TokenAnswer, number]>([
    ['an error status', { status: 500, body: '{"error":"server_error"}' }, 500],
    ['a refusal of the client', { status: 401, body: '{"error":"invalid_client"}' }, 401],
    ['an answer that is not JSON', { status: 200, body: '<html>login</html>' }, 200],
    ['no access_token', { status: 200, body: '{"token_type":"Bearer"}' }, 200],
    ['a token_type other than Bearer', { status: 200, body: '{"access_token":"abc","token_type":"mac"}' }, 200],
    ['a token that is no header value', { status: 200, body: '{"access_token":"a\\nb"}' }, 200],
    ['an answer over the bound', { status: 200, body: `{"access_token":"${'a'.repeat(70_000)}"}` }, 200],
  ])('makes the attempt temporary (auth) with its status for %s, nothing sent to the receiver', async (_, answer, status) => {
    const tokens = await startTokenServer({ answer: () => answer });
    const receiver = await startReceiver(tokens.valid);

    const { outcome } = await sender({ url: receiver.url, auth: credentials(tokens.tokenUrl) }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'auth', status });
    expect(receiver.authorizations).toEqual([]);
  });

  it('makes it temporary (auth) without a status when the token endpoint cannot be reached', async () => {
    const receiver = await startReceiver(new Set());
    const closed = http.createServer();
    const port = await listen(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const { outcome } = await sender({ url: receiver.url, auth: credentials(`http://127.0.0.1:${port}/token`) }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'auth' });
    expect(receiver.authorizations).toEqual([]);
  });

  it('makes it temporary (auth) when no token comes within the attempt’s time, every waiting delivery alike', async () => {
    const tokens = await startTokenServer({ answer: () => 'hang' });
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl), timeoutMs: 300 });

    const results = await sendMany(client, 5);

    expect(results.map((r) => r.outcome)).toEqual(Array(5).fill({ kind: 'temporary', cause: 'auth' }));
    expect(tokens.requests).toHaveLength(1);
    expect(receiver.authorizations).toEqual([]);
  });

  it('fetches again at the next attempt after a failure', async () => {
    let fail = true;
    const tokens = await startTokenServer({ expiresIn: 3600, answer: () => (fail ? { status: 503, body: '' } : undefined) });
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl) });

    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'temporary', cause: 'auth', status: 503 });
    fail = false;
    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(tokens.requests).toHaveLength(2);
  });
});

describe('HttpWebhookSender: the token endpoint and the guard', () => {
  it('refuses, when made, a token URL on a private address the guard does not allow, naming auth.tokenUrl', () => {
    const make = () => new HttpWebhookSender({ url: 'https://hooks.example.com/in', timeoutMs: 1000, auth: credentials('https://169.254.169.254/token') });

    expect(make).toThrow(EndpointRefusedError);
    expect(make).toThrow(/^auth\.tokenUrl: the webhook endpoint 169\.254\.169\.254 is a private/);
  });

  it('refuses a token endpoint whose name resolves to a private address: temporary (auth), no request made', async () => {
    // The receiver is on an allowed address; the token server on one the guard refuses, reached by name.
    const tokens = await startTokenServer({ expiresIn: 3600 });
    const receiver = await startReceiver(tokens.valid, '127.0.0.2');
    const guard = new EndpointGuard({ allowHttp: true, allowPrivateCidrs: ['127.0.0.2/32'] });

    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl.replace('127.0.0.1', 'localhost')), guard });
    const { outcome } = await client.send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'auth' });
    expect(tokens.requests).toEqual([]);
    expect(receiver.authorizations).toEqual([]);
  });
});

/** A promise and what settles it. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}

describe('HttpWebhookSender: a refresh that fails or is slow', () => {
  it('delivers with the held token while it is valid when its refresh answers 500, asks again after the back-off, and fails auth once it expired', async () => {
    let clock = T0;
    let fail = false;
    const tokens = await startTokenServer({ expiresIn: 600, answer: () => (fail ? { status: 500, body: '{"error":"server_error"}' } : undefined) });
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl), now: () => clock });
    await client.send(REQUEST);

    fail = true;
    clock = T0 + 540_000; // within the refresh margin: the refresh fails
    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(tokens.requests).toHaveLength(2);

    clock += REFRESH_BACKOFF_MS - 1; // in the back-off: the held token, no request to the token endpoint
    expect((await sendMany(client, 10)).map((r) => r.outcome)).toEqual(Array(10).fill({ kind: 'accepted', status: 204 }));
    expect(tokens.requests).toHaveLength(2);

    clock += 1; // after it: asked again (one request for five sends), failing again, the held token still
    expect((await sendMany(client, 5)).map((r) => r.outcome)).toEqual(Array(5).fill({ kind: 'accepted', status: 204 }));
    expect(tokens.requests).toHaveLength(3);
    expect(new Set(receiver.authorizations)).toEqual(new Set(['Bearer tok-1']));

    clock = T0 + 600_000; // expired: no fallback, nothing sent
    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'temporary', cause: 'auth', status: 500 });
    expect(tokens.requests).toHaveLength(4);
    expect(receiver.authorizations).toHaveLength(17);

    fail = false;
    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(receiver.authorizations.at(-1)).toBe('Bearer tok-5');
  });

  it('never falls back to a token the receiver refused: its 401 drops it, and the next send fails auth while the refresh fails', async () => {
    let clock = T0;
    let fail = false;
    const tokens = await startTokenServer({ expiresIn: 600, answer: () => (fail ? { status: 503, body: '' } : undefined) });
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl), now: () => clock });
    await client.send(REQUEST);

    fail = true;
    tokens.valid.delete('tok-1'); // revoked
    clock = T0 + 540_000;
    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'temporary', status: 401 });
    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'temporary', cause: 'auth', status: 503 });

    expect(receiver.authorizations).toEqual(['Bearer tok-1', 'Bearer tok-1']);
    expect(tokens.requests).toHaveLength(3);
  });

  it('goes with the held token when its refresh does not answer within half the send’s time, and the next send takes the refreshed one', async () => {
    let clock = T0;
    const release = deferred();
    const tokens = await startTokenServer({ expiresIn: 600, answer: () => (tokens.requests.length === 2 ? { after: release.promise } : undefined) });
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl), now: () => clock, timeoutMs: 2_000 });
    await client.send(REQUEST);

    clock = T0 + 540_000;
    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'accepted', status: 204 });
    release.resolve(); // the refresh, still under way, answers
    expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'accepted', status: 204 });

    expect(receiver.authorizations).toEqual(['Bearer tok-1', 'Bearer tok-1', 'Bearer tok-2']);
    expect(tokens.requests).toHaveLength(2);
  });

  it('lets each send wait for a fetch until its own deadline: the first gives up, the fetch goes on, and a later one gets its token', async () => {
    const asked = deferred();
    const release = deferred();
    const tokens = await startTokenServer({ expiresIn: 3600, answer: () => (asked.resolve(), { after: release.promise }) });
    const receiver = await startReceiver(tokens.valid);
    const client = sender({ url: receiver.url, auth: credentials(tokens.tokenUrl), timeoutMs: 1_500 });

    const first = client.send({ eventId: 'evt_oauth_first', body: '{}' });
    await asked.promise;
    await sleep(750); // the second starts half an attempt later: its deadline is that much later
    const second = client.send({ eventId: 'evt_oauth_second', body: '{}' });

    expect((await first).outcome).toEqual({ kind: 'temporary', cause: 'auth' });
    release.resolve(); // after the first's deadline, before the second's
    expect((await second).outcome).toEqual({ kind: 'accepted', status: 204 });

    expect(tokens.requests).toHaveLength(1);
    expect(receiver.authorizations).toEqual(['Bearer tok-1']);
  });
});
