/**
 * The HTTP sender through an HTTP CONNECT proxy (docs/contract.md §18 `proxyUrl`), a real one on
 * loopback that counts its tunnels: delivered through it (plain http, and TLS over the tunnel with a
 * client certificate, checked against the URL's name), one tunnel for several requests (kept alive);
 * the tunnel asked for the address the guard checked, the name in `Host`; a receiver's private address
 * still refused by the guard while the proxy's own is not; the proxy's refusals (407, 403, 502) and
 * its absence `temporary`/`proxy`, nothing sent; a token fetch goes through it too.
 */
import { lookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../../lib/webhook/endpoint-guard';
import { HttpWebhookSender, type HttpWebhookSenderOptions } from '../../lib/webhook/http-sender';
import { closedAfterEach } from '../helpers/cleanup';

const pem = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}.pem`, import.meta.url), 'utf8');
const REQUEST = { eventId: 'evt_proxy_1', body: '{"id":"evt_proxy_1"}' };
/** The address `localhost` resolves to first here (127.0.0.1, or ::1 where the resolver puts it first): the one the guard hands the tunnel. */
const LOCALHOST = (await lookup('localhost')).address;
/** As a CONNECT target writes it. */
const authority = (address: string, port: number) => `${net.isIPv6(address) ? `[${address}]` : address}:${port}`;

interface Tunnel {
  /** The CONNECT request's target, its Host header and its Proxy-Authorization. */
  readonly target: string;
  readonly host: string | undefined;
  readonly authorization: string | undefined;
}

const cleanup = closedAfterEach();
const listen = cleanup.listen;

/**
 * A CONNECT proxy: records each tunnel asked for, answers `refuse` when given (a status), else
 * requires `credentials` (user:password) when given, and pipes the tunnel to its target.
 */
async function startProxy(options: { credentials?: string; refuse?: number } = {}) {
  const tunnels: Tunnel[] = [];
  const server = http.createServer((_, res) => res.writeHead(405).end());
  const sockets = new Set<net.Socket>();
  server.on('connect', (req: http.IncomingMessage, client: net.Socket) => {
    sockets.add(client);
    tunnels.push({ target: req.url ?? '', host: req.headers.host, authorization: req.headers['proxy-authorization'] });
    const expected = options.credentials && `Basic ${Buffer.from(options.credentials).toString('base64')}`;
    if (options.refuse !== undefined || (expected && req.headers['proxy-authorization'] !== expected)) {
      const status = options.refuse ?? 407;
      client.end(`HTTP/1.1 ${status} Refused\r\nproxy-authenticate: Basic realm="ops"\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    const { hostname, port } = new URL(`http://${req.url}`);
    const upstream = net.connect(Number(port), hostname.replace(/^\[(.*)\]$/, '$1'), () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
  });
  const port = await listen(server);
  cleanup.add(() => {
    for (const socket of sockets) socket.destroy();
  });
  return { port, tunnels };
}

/** A receiver over plain http that counts the requests it read. */
async function startReceiver(host = '127.0.0.1') {
  const received: (string | undefined)[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(req.headers.authorization);
      res.writeHead(204).end();
    });
  });
  const port = await listen(server, host);
  return { port, received };
}

function sender(options: Partial<HttpWebhookSenderOptions> & { url: string }): HttpWebhookSender {
  const created = new HttpWebhookSender({ timeoutMs: 5_000, guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS), ...options });
  cleanup.add(() => created.close());
  return created;
}

describe('HttpWebhookSender: through an HTTP CONNECT proxy', () => {
  it('delivers through one tunnel, asked for the address the guard checked with the name as Host, kept alive', async () => {
    const proxy = await startProxy();
    const receiver = await startReceiver(LOCALHOST);
    const client = sender({ url: `http://localhost:${receiver.port}/in`, proxyUrl: `http://127.0.0.1:${proxy.port}` });

    for (let i = 0; i < 3; i++) expect((await client.send(REQUEST)).outcome).toEqual({ kind: 'accepted', status: 204 });

    expect(receiver.received).toHaveLength(3);
    expect(proxy.tunnels).toEqual([{ target: authority(LOCALHOST, receiver.port), host: `localhost:${receiver.port}`, authorization: undefined }]);
  });

  it('runs TLS over the tunnel, the receiver’s certificate checked against the URL’s name, the client certificate presented', async () => {
    const proxy = await startProxy();
    let servername: unknown;
    let peer: unknown;
    const server = https.createServer({ cert: pem('server'), key: pem('server.key'), ca: pem('ca'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      servername = (req.socket as tls.TLSSocket).servername;
      peer = (req.socket as tls.TLSSocket).getPeerCertificate().subject?.CN;
      req.resume();
      req.on('end', () => res.writeHead(200).end());
    });
    const port = await listen(server, LOCALHOST);
    const tlsMaterial = { clientCertificate: pem('client'), privateKey: pem('client.key'), ca: pem('ca') };

    const { outcome } = await sender({ url: `https://localhost:${port}/in`, proxyUrl: `http://127.0.0.1:${proxy.port}`, tls: tlsMaterial }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'accepted', status: 200 });
    expect(servername).toBe('localhost');
    expect(peer).toBe('handoff-test-client');
    expect(proxy.tunnels).toEqual([{ target: authority(LOCALHOST, port), host: `localhost:${port}`, authorization: undefined }]);
  });

  it('is temporary (tls) when the receiver’s certificate is not trusted over the tunnel', async () => {
    const proxy = await startProxy();
    const server = https.createServer({ cert: pem('server'), key: pem('server.key') }, (_, res) => res.writeHead(200).end());
    const port = await listen(server, LOCALHOST);

    const { outcome } = await sender({ url: `https://localhost:${port}/in`, proxyUrl: `http://127.0.0.1:${proxy.port}` }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'tls' });
    expect(proxy.tunnels).toHaveLength(1);
  });

  it('sends the URL’s user and password as Proxy-Authorization: Basic', async () => {
    const proxy = await startProxy({ credentials: 'ops@acme:p:ss w' });
    const receiver = await startReceiver();

    const { outcome } = await sender({ url: `http://127.0.0.1:${receiver.port}/in`, proxyUrl: `http://ops%40acme:p%3Ass%20w@127.0.0.1:${proxy.port}` }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(proxy.tunnels[0]?.authorization).toBe(`Basic ${Buffer.from('ops@acme:p:ss w').toString('base64')}`);
  });

  it.each([407, 403, 502])('is temporary (proxy) with the status when the proxy answers CONNECT with %i, nothing sent', async (status) => {
    const proxy = await startProxy(status === 407 ? { credentials: 'ops:right' } : { refuse: status });
    const receiver = await startReceiver();
    const proxyUrl = status === 407 ? `http://ops:wrong@127.0.0.1:${proxy.port}` : `http://127.0.0.1:${proxy.port}`;

    const { outcome } = await sender({ url: `http://127.0.0.1:${receiver.port}/in`, proxyUrl }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'proxy', status });
    expect(receiver.received).toEqual([]);
  });

  it('is temporary (proxy) when the proxy cannot be reached', async () => {
    const receiver = await startReceiver();
    const closed = http.createServer();
    const port = await listen(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const { outcome } = await sender({ url: `http://127.0.0.1:${receiver.port}/in`, proxyUrl: `http://127.0.0.1:${port}` }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'proxy' });
    expect(receiver.received).toEqual([]);
  });
});

describe('HttpWebhookSender: the guard through a proxy', () => {
  it('refuses a receiver whose name resolves to a private address, before asking the proxy (itself on loopback) for anything', async () => {
    const proxy = await startProxy();
    const receiver = await startReceiver();
    const guard = new EndpointGuard({ allowHttp: true });

    const { outcome } = await sender({ url: `http://localhost:${receiver.port}/in`, proxyUrl: `http://127.0.0.1:${proxy.port}`, guard }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'temporary', cause: 'blocked-address' });
    expect(proxy.tunnels).toEqual([]);
    expect(receiver.received).toEqual([]);
  });

  it('reaches an allowed receiver through a proxy on an address the guard does not allow (the proxy is the operator’s)', async () => {
    const proxy = await startProxy();
    const receiver = await startReceiver('127.0.0.2');
    const guard = new EndpointGuard({ allowHttp: true, allowPrivateCidrs: ['127.0.0.2/32'] });

    const { outcome } = await sender({ url: `http://127.0.0.2:${receiver.port}/in`, proxyUrl: `http://127.0.0.1:${proxy.port}`, guard }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(proxy.tunnels.map((t) => t.target)).toEqual([`127.0.0.2:${receiver.port}`]);
  });
});

describe('HttpWebhookSender: a token fetch through the proxy', () => {
  it('tunnels to the token endpoint as to the receiver', async () => {
    const proxy = await startProxy();
    const tokenServer = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}'));
    });
    const tokenPort = await listen(tokenServer, LOCALHOST);
    const receiver = await startReceiver(LOCALHOST);

    const { outcome } = await sender({
      url: `http://localhost:${receiver.port}/in`,
      proxyUrl: `http://127.0.0.1:${proxy.port}`,
      auth: { tokenUrl: `http://localhost:${tokenPort}/token`, clientId: 'id', clientSecret: 'secret' },
    }).send(REQUEST);

    expect(outcome).toEqual({ kind: 'accepted', status: 204 });
    expect(receiver.received).toEqual(['Bearer tok-1']);
    expect(proxy.tunnels.map((t) => t.host)).toEqual([`localhost:${tokenPort}`, `localhost:${receiver.port}`]);
  });
});
