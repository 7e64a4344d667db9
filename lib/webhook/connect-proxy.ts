/**
 * How the sender reaches a host (docs/contract.md §18 `proxyUrl`): the http(s) Agent its requests
 * (and an endpoint's token fetches) go through, directly or through an HTTP CONNECT proxy.
 *
 * Through a proxy the guard still decides where the request may go: the receiver's name is resolved
 * here with the guard's `lookup`, every address it has checked, and the proxy is asked to CONNECT to
 * the checked address (`Host` naming the name), so neither the proxy's resolver nor a name that moves
 * between check and connect can take the request to a private address. TLS then runs over the tunnel
 * with the name as its server name, so the receiver's certificate is checked against the name. The
 * proxy itself may be on a private address: it is the operator's, like the network it is in.
 *
 * A tunnel is opened by the Agent's `createConnection`, so a tunnelled connection is kept alive and
 * reused like a direct one, and by the time the request has its socket the tunnel and its TLS
 * handshake are done: whatever fails before (the proxy's refusal, the handshake) has sent nothing.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import type { EndpointGuard } from './endpoint-guard';
import { redactUrl } from './redact-url';

/** A proxy as `parseProxyUrl` read it. */
export interface ConnectProxy {
  readonly host: string;
  readonly port: number;
  /** `Basic …` from the URL's user and password, when it has them. */
  readonly authorization?: string;
}

/**
 * Reads an HTTP CONNECT proxy's URL: `http://[user:password@]host[:port]` (port 80 when none), the
 * user and password percent-decoded for `Proxy-Authorization: Basic`. An `https:` proxy (TLS to the
 * proxy itself) is not supported: the tunnel carries the receiver's own TLS end to end.
 * @throws RangeError saying what is wrong, the URL shown redacted
 */
export function parseProxyUrl(raw: string): ConnectProxy {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RangeError('must be an absolute URL such as http://proxy.internal:3128 (the value is not shown: it may hold a password)');
  }
  if (url.protocol !== 'http:') throw new RangeError(`must be an http:// URL (an HTTP CONNECT proxy; TLS to the proxy is not supported), got ${redactUrl(raw)}`);
  if (url.hostname === '') throw new RangeError(`must name the proxy's host, got ${redactUrl(raw)}`);
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '') {
    throw new RangeError(`must be the proxy's address only (no path, query or fragment), got ${redactUrl(raw)}`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? 80 : Number(url.port);
  if (url.username === '' && url.password === '') return { host, port };
  let credentials: string;
  try {
    credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  } catch {
    throw new RangeError(`has a user or password that is not percent-encoded UTF-8, got ${redactUrl(raw)}`);
  }
  return { host, port, authorization: `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}` };
}

/** The proxy refused the tunnel (its answer's `status`) or could not be reached (none): nothing was sent. */
export class ProxyError extends Error {
  override readonly name = 'ProxyError';
  readonly code = 'proxy';
  constructor(
    message: string,
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The TLS handshake over a tunnel failed, before the request had a socket: nothing was sent. */
export class TunnelTlsError extends Error {
  override readonly name = 'TunnelTlsError';
  readonly code: string;
  constructor(cause: unknown) {
    const code = (cause as { code?: unknown } | undefined)?.code;
    super(`the TLS handshake through the proxy failed${typeof code === 'string' ? ` (${code})` : ''}`, { cause });
    this.code = typeof code === 'string' ? code : 'tls';
  }
}

export interface AgentOptions {
  /** `https:` targets: TLS on each connection (through a tunnel, over it). */
  readonly secure: boolean;
  /** Keep connections for reuse; off for one-off requests (a token fetch, the fresh retry). */
  readonly keepAlive: boolean;
  /** How long an idle kept connection lives (keepAlive only). */
  readonly idleTimeoutMs?: number;
  /** The TLS context: roots and client certificate (client-tls.ts). Undefined: Node's default. */
  readonly secureContext?: tls.SecureContext;
  /** Checks every address a connection is made to. */
  readonly guard: EndpointGuard;
  /** Through this proxy when set. */
  readonly proxy?: ConnectProxy;
  /** Bounds opening a tunnel (the request's own deadline ends the attempt sooner; this ends the tunnel's work). */
  readonly connectTimeoutMs: number;
}

/** The Agent requests to one endpoint (or its token endpoint) go through. */
export function createAgent(options: AgentOptions): http.Agent {
  const { secure, keepAlive, idleTimeoutMs, secureContext, guard, proxy } = options;
  const base = { keepAlive, ...(keepAlive && idleTimeoutMs !== undefined ? { timeout: idleTimeoutMs } : {}) };
  // Directly: Node connects, to the addresses the guard's lookup checked (docs/contract.md §3).
  if (proxy === undefined) {
    return secure ? new https.Agent({ ...base, lookup: guard.lookup, ...(secureContext ? { secureContext } : {}) }) : new http.Agent({ ...base, lookup: guard.lookup });
  }
  const agent = secure ? new https.Agent(base) : new http.Agent(base);
  agent.createConnection = (connection, callback) => {
    const host = connection.hostname ?? connection.host ?? '';
    const port = Number(connection.port);
    const deadlineMs = performance.now() + options.connectTimeoutMs;
    openTunnel(proxy, guard, { host, port }, options.connectTimeoutMs)
      .then((socket): net.Socket | Promise<net.Socket> => (secure ? overTls(socket, host, secureContext, deadlineMs) : socket))
      .then(
        (socket) => callback?.(null, socket),
        (error: unknown) => callback?.(error as Error, undefined as unknown as Duplex),
      );
    return undefined;
  };
  return agent;
}

/**
 * A socket to `host:port` through the proxy: the name resolved and checked by the guard, the proxy
 * asked to CONNECT to the checked address. The guard's refusal (EndpointRefusedError) and a name
 * that does not resolve fail as they would without a proxy; everything the proxy does is ProxyError.
 */
export async function openTunnel(proxy: ConnectProxy, guard: EndpointGuard, target: { host: string; port: number }, timeoutMs: number): Promise<net.Socket> {
  const host = target.host.replace(/^\[(.*)\]$/, '$1');
  const address = await new Promise<string>((resolve, reject) => {
    guard.lookup(host, {}, (error, resolved) => (error ? reject(error) : resolve(resolved as string)));
  });
  const authority = (name: string) => `${net.isIPv6(name) ? `[${name}]` : name}:${target.port}`;
  return new Promise<net.Socket>((resolve, reject) => {
    const request = http.request({
      host: proxy.host,
      port: proxy.port,
      method: 'CONNECT',
      path: authority(address),
      headers: { host: authority(host), ...(proxy.authorization ? { 'proxy-authorization': proxy.authorization } : {}) },
      agent: false,
    });
    const timer = setTimeout(() => request.destroy(new ProxyError('the proxy did not open the tunnel in time')), timeoutMs);
    request.on('connect', (response: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      clearTimeout(timer);
      const status = response.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        socket.destroy();
        reject(new ProxyError(`the proxy refused the tunnel (${status})`, status));
        return;
      }
      // A proxy sends nothing of the receiver's before the client speaks; should it, it is the stream's start.
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    request.on('error', (error) => {
      clearTimeout(timer);
      reject(error instanceof ProxyError ? error : new ProxyError('the proxy could not be reached', undefined, { cause: error }));
    });
    request.end();
  });
}

/** TLS over the tunnel, its certificate checked against the name (an address when the URL has one). */
function overTls(socket: net.Socket, host: string, secureContext: tls.SecureContext | undefined, deadlineMs: number): Promise<tls.TLSSocket> {
  const name = host.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve, reject) => {
    const secured = tls.connect({ socket, host: name, ...(net.isIP(name) === 0 ? { servername: name } : {}), ...(secureContext ? { secureContext } : {}) });
    const fail = (error: unknown) => {
      clearTimeout(timer);
      secured.destroy();
      socket.destroy();
      reject(new TunnelTlsError(error));
    };
    const timer = setTimeout(() => fail(Object.assign(new Error('the TLS handshake did not end in time'), { code: 'ETIMEDOUT' })), Math.max(0, deadlineMs - performance.now()));
    secured.on('error', fail);
    secured.once('secureConnect', () => {
      clearTimeout(timer);
      secured.off('error', fail);
      resolve(secured);
    });
  });
}
