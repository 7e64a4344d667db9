/**
 * The HTTP sender against real servers on loopback: the request it writes (docs/contract.md §3) and the
 * outcome it records for each thing an attempt can see (docs/contract.md §4).
 */
import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import pkg from '../../package.json' with { type: 'json' };
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../../lib/webhook/endpoint-guard';
import { EndpointRefusedError, SigningSecretError } from '../../lib/errors';
import { HttpWebhookSender, type HttpWebhookSenderOptions } from '../../lib/webhook/http-sender';
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
/** Fixed, but close to the real clock: `Webhook.verify` refuses timestamps over 5 min away. */
const ATTEMPT_MS = Math.floor(Date.now() / 1000) * 1000 + 250;
const EVENT_ID = 'evt_42';
/** Canonical JSON with non-ASCII text, so bytes and characters differ. */
const BODY =
  '{"data":{"carrier":"acme","signedBy":"Zoë at the front desk"},"id":"evt_42","occurredAt":"2026-12-02T10:15:00Z","shipmentId":"shp_1001","status":"delivered"}';

interface Received {
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

interface TestServer {
  readonly url: string;
  readonly received: Received[];
  connections: number;
  /** Stops accepting connections; open ones stay. */
  stopListening(): void;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void;

const servers: http.Server[] = [];
const senders: HttpWebhookSender[] = [];

afterEach(async () => {
  for (const sender of senders.splice(0)) sender.close();
  await Promise.all(
    servers.splice(0).map(
      (server) =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    ),
  );
});

/** A receiver on 127.0.0.1 that records each complete request, then lets `handle` answer. */
async function startServer(handle: Handler): Promise<TestServer> {
  const server = http.createServer();
  const state: TestServer = { url: '', received: [], connections: 0, stopListening: () => server.close() };
  server.on('connection', () => {
    state.connections += 1;
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received = { method: req.method, path: req.url, headers: req.headers, body: Buffer.concat(chunks) };
      state.received.push(received);
      handle(req, res, received);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return Object.assign(state, { url: `http://127.0.0.1:${port}/hooks/shipments` });
}

function answer(status: number, headers: http.OutgoingHttpHeaders = {}, body = ''): Handler {
  return (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };
}

function sender(options: Partial<HttpWebhookSenderOptions> & { url: string }): HttpWebhookSender {
  const created = new HttpWebhookSender({
    timeoutMs: 5_000,
    now: () => ATTEMPT_MS,
    guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS),
    ...options,
  });
  senders.push(created);
  return created;
}

const request = { eventId: EVENT_ID, body: BODY };

describe('HttpWebhookSender: the request (docs/contract.md §3)', () => {
  it('POSTs the exact body bytes, the same on every attempt, with the event ID as both keys', async () => {
    // Prepare
    const server = await startServer(answer(204));
    const client = sender({ url: server.url, secret: SECRET });

    // Act
    await client.send(request);
    await client.send(request);

    // Assess
    expect(server.received).toHaveLength(2);
    const [first, second] = server.received;
    expect(first?.method).toBe('POST');
    expect(first?.path).toBe('/hooks/shipments');
    expect(first?.body.equals(Buffer.from(BODY, 'utf8'))).toBe(true);
    expect(second?.body.equals(first?.body ?? Buffer.alloc(0))).toBe(true);
    expect(first?.headers['idempotency-key']).toBe(EVENT_ID);
    expect(first?.headers['webhook-id']).toBe(EVENT_ID);
    expect(second?.headers['idempotency-key']).toBe(EVENT_ID);
    expect(second?.headers['webhook-id']).toBe(EVENT_ID);
  });

  it('sends content-type, content-length in bytes, the attempt time and handoff/<version>', async () => {
    const server = await startServer(answer(200));

    await sender({ url: server.url }).send(request);

    const headers = server.received[0]?.headers;
    expect(headers?.['content-type']).toBe('application/json');
    expect(headers?.['content-length']).toBe(String(Buffer.byteLength(BODY, 'utf8')));
    expect(headers?.['webhook-timestamp']).toBe(String(Math.floor(ATTEMPT_MS / 1000)));
    expect(headers?.['user-agent']).toBe(`handoff/${pkg.version}`);
  });

  it("sends webhook-sequence with an ordered endpoint's request, and none otherwise", async () => {
    const server = await startServer(answer(200));
    const client = sender({ url: server.url });

    await client.send({ ...request, sequence: 3 });
    await client.send(request);

    expect(server.received.map((r) => r.headers['webhook-sequence'])).toEqual(['3', undefined]);
  });

  it('signs per Standard Webhooks: the reference implementation verifies it', async () => {
    const server = await startServer(answer(200));

    await sender({ url: server.url, secret: SECRET }).send(request);

    const received = server.received[0];
    const headers = {
      'webhook-id': String(received?.headers['webhook-id']),
      'webhook-timestamp': String(received?.headers['webhook-timestamp']),
      'webhook-signature': String(received?.headers['webhook-signature']),
    };
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
    const verifier = new Webhook(SECRET);
    expect(verifier.verify(received?.body ?? '', headers)).toEqual(JSON.parse(BODY));
    expect(() => verifier.verify(`${BODY} `, headers)).toThrow(WebhookVerificationError);
  });

  it("signs under both secrets during a rotation's overlap, new first, each verified by the reference implementation; after it, under the new only", async () => {
    const server = await startServer(answer(200));
    const oldSecret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const verifies = (secret: string, received: Received | undefined) => {
      try {
        new Webhook(secret).verify(received?.body ?? '', {
          'webhook-id': String(received?.headers['webhook-id']),
          'webhook-timestamp': String(received?.headers['webhook-timestamp']),
          'webhook-signature': String(received?.headers['webhook-signature']),
        });
        return true;
      } catch (error) {
        if (error instanceof WebhookVerificationError) return false;
        throw error;
      }
    };

    await sender({ url: server.url, secret: SECRET, previousSecret: oldSecret, previousSecretUntil: ATTEMPT_MS + 1 }).send(request);
    await sender({ url: server.url, secret: SECRET, previousSecret: oldSecret, previousSecretUntil: ATTEMPT_MS }).send(request);

    const [during, after] = server.received;
    expect(String(during?.headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/]+={0,2} v1,[A-Za-z0-9+/]+={0,2}$/);
    expect(verifies(SECRET, during)).toBe(true);
    expect(verifies(oldSecret, during)).toBe(true);
    expect(String(after?.headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
    expect(verifies(SECRET, after)).toBe(true);
    expect(verifies(oldSecret, after)).toBe(false);
  });

  it('sends no webhook-signature when no secret is configured', async () => {
    const server = await startServer(answer(200));

    await sender({ url: server.url }).send(request);

    expect(server.received[0]?.headers).not.toHaveProperty('webhook-signature');
  });

  it.each([
    ['whsec_abc', 'not-base64'],
    ['whsec_AAAA', 'too-short'],
  ])('refuses to be built with a secret that cannot sign (%s), before any request', (secret, code) => {
    const build = () => new HttpWebhookSender({ url: 'http://127.0.0.1:9/hook', secret, timeoutMs: 5_000, guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS) });

    expect(build).toThrow(SigningSecretError);
    expect(build).toThrow(expect.objectContaining({ code }));
  });

  it('reuses one keep-alive connection across attempts', async () => {
    const server = await startServer(answer(200, {}, 'ok'));
    const client = sender({ url: server.url });

    await client.send(request);
    await client.send(request);
    await client.send(request);

    expect(server.received).toHaveLength(3);
    expect(server.connections).toBe(1);
  });

  it('opens a fresh connection when the clock says the idle one is stale (as after a Lambda thaw)', async () => {
    // Prepare: Node's idle timer never fires while a Lambda environment is frozen; only the clock moves.
    const server = await startServer(answer(200, {}, 'ok'));
    let clockMs = ATTEMPT_MS;
    const client = sender({ url: server.url, now: () => clockMs });
    await client.send(request);
    clockMs += 60_000;

    // Act
    const { outcome } = await client.send(request);

    // Assess
    expect(outcome).toEqual({ kind: 'accepted', status: 200 });
    expect(server.connections).toBe(2);
  });
});

describe('HttpWebhookSender: outcomes (docs/contract.md §4)', () => {
  it('records a 2xx as accepted', async () => {
    const server = await startServer(answer(202, {}, 'queued'));

    const { outcome } = await sender({ url: server.url }).send(request);

    expect(outcome).toEqual({ kind: 'accepted', status: 202 });
  });

  it.each([408, 425, 429, 500, 503])('records %i as temporary', async (status) => {
    const server = await startServer(answer(status, {}, 'try later'));

    const { outcome } = await sender({ url: server.url }).send(request);

    expect(outcome).toEqual({ kind: 'temporary', status });
  });

  it('keeps a Retry-After given in seconds', async () => {
    const server = await startServer(answer(429, { 'retry-after': '90' }));

    const { outcome } = await sender({ url: server.url }).send(request);

    expect(outcome).toEqual({ kind: 'temporary', status: 429, retryAfterSeconds: 90 });
  });

  it('keeps a Retry-After given as an HTTP-date, counted from the attempt time', async () => {
    const retryAt = new Date(ATTEMPT_MS - 250 + 300_000).toUTCString();
    const server = await startServer(answer(503, { 'retry-after': retryAt }));

    const { outcome } = await sender({ url: server.url }).send(request);

    // The date has whole seconds; the attempt is 250 ms past one, so 299.75 s rounds up to 300.
    expect(outcome).toEqual({ kind: 'temporary', status: 503, retryAfterSeconds: 300 });
  });

  it('records 410 as rejected: the endpoint asked to stop', async () => {
    const server = await startServer(answer(410, {}, 'gone'));

    const { outcome } = await sender({ url: server.url }).send(request);

    expect(outcome).toEqual({ kind: 'rejected', status: 410, responseStart: 'gone' });
  });

  it('records another 4xx as rejected, with the status and the start of the response', async () => {
    const server = await startServer(answer(422, {}, '  {"error":"unknown shipment"}\n'));

    const { outcome } = await sender({ url: server.url }).send(request);

    expect(outcome).toEqual({ kind: 'rejected', status: 422, responseStart: '{"error":"unknown shipment"}' });
  });

  it('reads at most maxResponseBytes of a huge response body', async () => {
    const huge = 'x'.repeat(8 * 1024 * 1024);
    const server = await startServer(answer(400, {}, huge));

    const { outcome } = await sender({ url: server.url, maxResponseBytes: 100 }).send(request);

    expect(outcome).toEqual({ kind: 'rejected', status: 400, responseStart: 'x'.repeat(100) });
  });

  it('does not cut a multi-byte character in half at the byte limit', async () => {
    const server = await startServer(answer(400, {}, 'aé…'));

    const { outcome } = await sender({ url: server.url, maxResponseBytes: 2 }).send(request);

    expect(outcome).toEqual({ kind: 'rejected', status: 400, responseStart: 'a' });
  });

  it('does not follow a redirect: 3xx is rejected and the target receives nothing', async () => {
    const target = await startServer(answer(200));
    const server = await startServer(answer(307, { location: target.url }));

    const { outcome } = await sender({ url: server.url }).send(request);

    expect(outcome).toEqual({ kind: 'rejected', status: 307, responseStart: '' });
    expect(target.received).toEqual([]);
  });

  it('records a refused connection as temporary: nothing was sent', async () => {
    const url = await closedPortUrl();

    const { outcome } = await sender({ url }).send(request);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'connection-refused' });
  });

  it('records a DNS failure as temporary: nothing was sent', async () => {
    const { outcome } = await sender({ url: 'http://no-such-host.invalid/hook', timeoutMs: 10_000 }).send(request);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'dns' });
  });

  it('records a TLS failure as temporary: nothing was sent', async () => {
    // An https client talking to a plain http server fails in the handshake.
    const server = await startServer(answer(200));

    const { outcome } = await sender({ url: server.url.replace('http:', 'https:') }).send(request);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'tls' });
    expect(server.received).toEqual([]);
  });

  it('records a name that resolves to a blocked address as temporary: nothing was sent', async () => {
    const server = await startServer(answer(200));
    const url = server.url.replace('127.0.0.1', 'localhost');

    const { outcome } = await sender({ url, guard: new EndpointGuard({ allowHttp: true }) }).send(request);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'blocked-address' });
    expect(server.connections).toBe(0);
  });

  it('records no answer after the request was written as unknown (timeout)', async () => {
    const server = await startServer(() => {
      // Reads the whole request, never answers.
    });

    // Long enough that a busy machine writes the request before the timeout fires (else it is a
    // connect timeout: temporary, nothing sent).
    const { outcome } = await sender({ url: server.url, timeoutMs: 2_000 }).send(request);

    expect(outcome).toEqual({ kind: 'unknown', cause: 'timeout' });
    expect(server.received).toHaveLength(1);
  });

  it('records a connection reset after the request was read as unknown (connection-reset)', async () => {
    const server = await startServer((req) => req.socket.resetAndDestroy());

    const { outcome } = await sender({ url: server.url }).send(request);

    expect(outcome).toEqual({ kind: 'unknown', cause: 'connection-reset' });
    // A fresh connection is never retried within the attempt.
    expect(server.received).toHaveLength(1);
  });

  it('records a connection closed without an answer as unknown (connection-reset)', async () => {
    const server = await startServer((req) => req.socket.destroy());

    const { outcome } = await sender({ url: server.url }).send(request);

    expect(outcome).toEqual({ kind: 'unknown', cause: 'connection-reset' });
    expect(server.received).toHaveLength(1);
  });

  it('tries once more on a fresh connection when a reused keep-alive socket was closed', async () => {
    // The receiver drops every second request on a connection unanswered, the way a server
    // that closed an idle socket looks to the client.
    const perConnection = new Map<net.Socket, number>();
    const server = await startServer((req, res) => {
      const count = (perConnection.get(req.socket) ?? 0) + 1;
      perConnection.set(req.socket, count);
      if (count === 2) req.socket.destroy();
      else res.end('ok');
    });
    const client = sender({ url: server.url });
    await client.send(request);

    const { outcome } = await client.send(request);

    expect(outcome).toEqual({ kind: 'accepted', status: 200 });
    expect(server.received.map((r) => r.headers['webhook-id'])).toEqual([EVENT_ID, EVENT_ID, EVENT_ID]);
    expect(server.connections).toBe(2);
  });

  it('keeps unknown when the retry on a fresh connection cannot even connect', async () => {
    const server = await startServer((req, res) => {
      if (server.received.length === 1) {
        res.end('ok');
        return;
      }
      // Second request: close this connection and stop listening, so the retry is refused.
      server.stopListening();
      req.socket.destroy();
    });
    const client = sender({ url: server.url });
    await client.send(request);

    const { outcome } = await client.send(request);

    expect(outcome).toEqual({ kind: 'unknown', cause: 'connection-reset' });
    expect(server.received).toHaveLength(2);
  });
});

describe('HttpWebhookSender: construction', () => {
  it('refuses a plain http URL by default', () => {
    expect(() => new HttpWebhookSender({ url: 'http://hooks.example.com/', timeoutMs: 1000 })).toThrow(
      expect.objectContaining({ name: 'EndpointRefusedError', code: 'insecure-scheme' }),
    );
  });

  it('refuses a literal private address by default', () => {
    const create = () => new HttpWebhookSender({ url: 'https://[::ffff:10.0.0.1]/hook', timeoutMs: 1000 });
    expect(create).toThrow(EndpointRefusedError);
    expect(create).toThrow(expect.objectContaining({ code: 'blocked-address', address: '::ffff:a00:1' }));
  });

});

/** A URL on a loopback port that was just bound and released: connecting is refused. */
async function closedPortUrl(): Promise<string> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}/hook`;
}
