/**
 * The WebhookSender port over node:http/https: one signed POST per attempt (docs/contract.md §3), and the
 * outcome it saw (docs/contract.md §4).
 *
 * The one distinction this adapter exists for: was the request written? Until the request's
 * `finish` event (every byte handed to the OS) the receiver cannot hold a complete request, so a
 * failure is `temporary` with a NotSentCause. From `finish` until the first response byte, a
 * timeout or reset is `unknown`: the receiver may have committed the event, and the next attempt
 * must carry the same event ID. `fetch` hides that boundary, so it is not used here.
 *
 * Receivers behind locks (docs/contract.md §18) add what comes before that boundary: a bearer token
 * from the endpoint's token endpoint (oauth2-token.ts; none, and nothing is sent: `auth`), a client
 * certificate on the handshake (client-tls.ts), a tunnel through an HTTP CONNECT proxy
 * (connect-proxy.ts; its refusal: `proxy`).
 */
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { urlToHttpOptions } from 'node:url';
// A named import lets bundlers keep only this one field of package.json.
import { version } from '../../package.json';
import { classifyResponse, type AttemptOutcome, type NotSentCause } from '../outcome';
import { isTlsRefusal, secureContextFor, tokenContextFor } from './client-tls';
import { createAgent, parseProxyUrl, ProxyError, TunnelTlsError, type ConnectProxy } from './connect-proxy';
import { refusedHeaderProblem } from './custom-headers';
import { EndpointGuard } from './endpoint-guard';
import { EndpointRefusedError } from '../errors';
import { TokenError, TokenSource } from './oauth2-token';
import type { AttemptResult, ClientCredentials, ClientTls, WebhookRequest, WebhookSender } from './sender';
import { RequestSigner } from './signing-secret';

export const DEFAULT_USER_AGENT = `handoff/${version}`;
export const DEFAULT_MAX_RESPONSE_BYTES = 1024;

/**
 * How long an idle keep-alive socket is kept. Below Node's own server default (5 s) and far
 * below load balancers' (60 s), so the client usually drops an idle socket before the server
 * does; Node also honours a shorter `Keep-Alive: timeout=N` hint from the server.
 */
const IDLE_SOCKET_TIMEOUT_MS = 4_000;

export interface HttpWebhookSenderOptions {
  readonly url: string;
  /** Standard Webhooks secret: `whsec_…` (HMAC-SHA256, `v1`) or `whsk_…` (ed25519, `v1a`). Unset: requests are not signed. */
  readonly secret?: string;
  /**
   * A rotation's old secret (docs/contract.md §12): requests made before `previousSecretUntil`
   * also carry a signature under it, after the new one's. Needs `secret` and `previousSecretUntil`.
   */
  readonly previousSecret?: string;
  /** Epoch ms: the first attempt time at which `previousSecret` no longer signs. */
  readonly previousSecretUntil?: number;
  /**
   * The endpoint's extra headers (docs/contract.md §18), each value as sent. Sent before the
   * request's own, which always win: a name the request keeps for itself is left out here too, as
   * the endpoint's field refuses it.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The endpoint's OAuth2 client-credentials grant (docs/contract.md §18 `auth`): each request carries
   * `Authorization: Bearer` and a token from it, which replaces an `authorization` of `headers`.
   */
  readonly auth?: ClientCredentials;
  /** The endpoint's client certificate and private CA (docs/contract.md §18 `tls`); needs an https URL. */
  readonly tls?: ClientTls;
  /**
   * An HTTP CONNECT proxy every request goes through, token fetches too (`http://[user:password@]host[:port]`,
   * the deployment's `HANDOFF_PROXY_URL`); the guard still checks the receiver's address.
   */
  readonly proxyUrl?: string;
  /** One attempt's budget: connect, write, response headers and the bounded body read. */
  readonly timeoutMs: number;
  readonly userAgent?: string;
  /** How much of the response body is kept as `responseStart`. */
  readonly maxResponseBytes?: number;
  /** Epoch ms: the `webhook-timestamp` and the reference for a `Retry-After` date. */
  readonly now?: () => number;
  /** Which addresses may be reached. Default: public addresses over https only. */
  readonly guard?: EndpointGuard;
}

/** One request/response exchange, before the attempt decides whether to try a fresh socket. */
interface Exchange {
  readonly outcome: AttemptOutcome;
  /** A reused keep-alive socket failed before any response byte: worth one fresh connection. */
  readonly staleSocket: boolean;
}

export class HttpWebhookSender implements WebhookSender {
  private readonly url: URL;
  /** The URL as request options, worked out once rather than from the URL on every request. */
  private readonly target: http.RequestOptions;
  private readonly transport: typeof http | typeof https;
  private readonly agent: http.Agent;
  /** For the one retry on a fresh connection: made the same way (tunnel, certificate), never kept. */
  private readonly freshAgent: http.Agent;
  /** The bearer token's source, for an endpoint with `auth`. */
  private readonly tokens: TokenSource | undefined;
  private readonly tokenAgent: http.Agent | undefined;
  private readonly signer: RequestSigner | undefined;
  /** The endpoint's extra headers, their names in lower case; undefined when it has none (nothing added per request). */
  private readonly extraHeaders: Readonly<Record<string, string>> | undefined;
  private readonly guard: EndpointGuard;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly maxResponseBytes: number;
  private readonly now: () => number;
  /** Clock time (`now`) the last exchange ended: every free socket has been idle since then. */
  private lastExchangeEndMs = 0;

  /**
   * @throws EndpointRefusedError when the guard refuses the URL or `auth.tokenUrl`; SigningSecretError
   * for a secret that cannot sign; ClientTlsError for a certificate, key or CA that cannot be used
   * (naming the field); RangeError for a previous secret without a secret or an end, `tls` on an
   * http URL, or a proxy URL that is not one.
   */
  constructor(options: HttpWebhookSenderOptions) {
    this.guard = options.guard ?? new EndpointGuard();
    this.guard.checkUrl(options.url);
    this.url = new URL(options.url);
    this.target = urlToHttpOptions(this.url);
    this.transport = this.url.protocol === 'https:' ? https : http;
    if (!(options.timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${options.timeoutMs}`);
    this.timeoutMs = options.timeoutMs;
    if (options.tls !== undefined && this.transport === http) throw new RangeError('tls needs an https URL: a client certificate is presented on a TLS handshake');
    const proxy = proxyOf(options.proxyUrl);
    const agents = { guard: this.guard, proxy, connectTimeoutMs: this.timeoutMs };
    const secureContext = secureContextFor(options.tls);
    this.agent = createAgent({ ...agents, secure: this.transport === https, keepAlive: true, idleTimeoutMs: IDLE_SOCKET_TIMEOUT_MS, secureContext });
    this.freshAgent = createAgent({ ...agents, secure: this.transport === https, keepAlive: false, secureContext });
    this.signer = signerFor(options);
    this.extraHeaders = extraHeadersOf(options.headers);
    this.userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.now = options.now ?? Date.now;
    if (options.auth !== undefined) {
      checkTokenUrl(this.guard, options.auth.tokenUrl);
      const secure = new URL(options.auth.tokenUrl).protocol === 'https:';
      this.tokenAgent = createAgent({ ...agents, secure, keepAlive: false, secureContext: secure ? tokenContextFor(options.tls) : undefined });
      this.tokens = new TokenSource({ credentials: options.auth, agent: this.tokenAgent, userAgent: this.userAgent, attemptTimeoutMs: this.timeoutMs, now: this.now });
    }
  }

  async send(request: WebhookRequest): Promise<AttemptResult> {
    this.dropSocketsIdleSince(this.now());
    const startedMs = performance.now();
    const deadlineMs = startedMs + this.timeoutMs;
    let outcome: AttemptOutcome;
    let token: string | undefined;
    if (this.tokens !== undefined) {
      try {
        token = await this.tokens.token(deadlineMs);
      } catch (error) {
        // No token, no request: nothing reaches the receiver, and the token endpoint's status says why.
        const status = error instanceof TokenError ? error.status : undefined;
        return this.ended({ kind: 'temporary', cause: 'auth', ...(status !== undefined ? { status } : {}) }, startedMs);
      }
    }
    try {
      const body = Buffer.from(request.body, 'utf8');
      const headers = this.headers(request, body.length, token);
      const first = await this.exchange(body, headers, this.agent, deadlineMs);
      outcome = first.outcome;
      /*
       * A keep-alive socket the server has already closed fails on reuse, usually as ECONNRESET
       * ("socket hang up") after our bytes were handed to the OS. Node cannot tell that race from
       * a receiver that read the request and then dropped the connection, so the first outcome
       * stays honest (`unknown` when written). As Node's documentation suggests, the request is
       * then tried once on a fresh connection within the same deadline: it carries the same
       * event ID, so the receiver sees at most one business event. An answer on the fresh
       * connection is the truth; if it could not even be sent, the first outcome stands, since
       * "nothing was sent" would no longer be true of the attempt as a whole.
       */
      if (first.staleSocket && performance.now() < deadlineMs) {
        const retry = await this.exchange(body, headers, this.freshAgent, deadlineMs);
        const retryNotSent = retry.outcome.kind === 'temporary' && retry.outcome.cause !== undefined;
        outcome = retryNotSent && first.outcome.kind === 'unknown' ? first.outcome : retry.outcome;
      }
    } catch {
      // Only a synchronous failure while building the request lands here (transport failures
      // are outcomes above), so nothing was sent; send() never throws.
      outcome = { kind: 'temporary', cause: 'network' };
    }
    /*
     * A 401 where handoff fetches the token says the token would not do (revoked, or expired early),
     * not that the event is refused for good: the token is dropped, so the next attempt fetches one,
     * and the attempt is `temporary`. Dropped only if still held: fifty deliveries refused together
     * cost one fetch.
     */
    if (token !== undefined && outcome.kind === 'rejected' && outcome.status === 401) {
      this.tokens?.refused(token);
      outcome = { kind: 'temporary', status: 401 };
    }
    this.lastExchangeEndMs = this.now();
    return this.ended(outcome, startedMs);
  }

  private ended(outcome: AttemptOutcome, startedMs: number): AttemptResult {
    return { outcome, durationMs: Math.round(performance.now() - startedMs) };
  }

  /**
   * Node's idle-socket timer does not run while a Lambda environment is frozen, so after a thaw
   * the agent would hand out sockets the server (or a NAT on the way) dropped long ago: at best
   * a reset, at worst a silent black hole that ends in a timeout and an `unknown` outcome.
   * The wall clock does move across a freeze, so idle sockets are dropped by it before reuse.
   */
  private dropSocketsIdleSince(nowMs: number): void {
    if (nowMs - this.lastExchangeEndMs <= IDLE_SOCKET_TIMEOUT_MS) return;
    for (const sockets of Object.values(this.agent.freeSockets)) {
      for (const socket of sockets ?? []) socket.destroy();
    }
  }

  /** Closes idle keep-alive sockets; call when the process stops. */
  close(): void {
    this.agent.destroy();
    this.freshAgent.destroy();
    this.tokenAgent?.destroy();
  }

  private headers({ eventId, body, sequence, traceparent, tracestate }: WebhookRequest, contentLength: number, token: string | undefined): http.OutgoingHttpHeaders {
    const attemptMs = this.now();
    // The endpoint's headers first, the request's own after them: no name of the request's can be
    // replaced, whatever they hold (every name here is lower case, so one key each).
    const headers: http.OutgoingHttpHeaders = {
      ...this.extraHeaders,
      'content-type': 'application/json',
      'content-length': String(contentLength),
      'idempotency-key': eventId,
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(attemptMs / 1000)),
      'user-agent': this.userAgent,
    };
    // The grant's token replaces an `authorization` of the endpoint's headers: with `auth` set, handoff answers for the credential.
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (sequence !== undefined) headers['webhook-sequence'] = String(sequence);
    if (traceparent !== undefined) headers.traceparent = traceparent;
    if (tracestate !== undefined) headers.tracestate = tracestate;
    if (this.signer) headers['webhook-signature'] = this.signer.sign(eventId, attemptMs, body);
    return headers;
  }

  private exchange(
    body: Buffer,
    headers: http.OutgoingHttpHeaders,
    agent: http.Agent,
    deadlineMs: number,
  ): Promise<Exchange> {
    return new Promise((resolve) => {
      // How far the exchange got; the outcome of a failure depends only on this.
      let connected = false; // TCP connected
      let secured = this.transport === http; // TLS handshake done (or none needed)
      // The whole request handed to the OS. A TLS socket reports `finish` as soon as the bytes
      // reach the TLS layer, even mid-handshake; application data cannot leave before the
      // handshake ends, so over TLS "written" also needs `secured`.
      let finished = false;
      const isWritten = () => finished && secured;
      let answered = false; // response headers received
      let timedOut = false;
      let settled = false;

      const req = this.transport.request({
        ...this.target,
        method: 'POST',
        headers,
        // The agent connects through the guard's lookup (connect-proxy.ts), or tunnels to the address it checked.
        agent,
      });
      const settle = (outcome: AttemptOutcome, staleSocket = false) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ outcome, staleSocket });
      };
      const timer = setTimeout(
        () => {
          timedOut = true;
          req.destroy();
        },
        Math.max(0, deadlineMs - performance.now()),
      );

      req.on('socket', (socket) => {
        if (!socket.connecting) {
          // A reused keep-alive socket: connected and secured long ago.
          connected = true;
          secured = true;
          return;
        }
        socket.once('connect', () => {
          connected = true;
        });
        socket.once('secureConnect', () => {
          secured = true;
        });
      });
      req.on('finish', () => {
        finished = true;
      });
      req.on('error', (error) => {
        if (answered) return; // the response handlers settle it
        // The server's TLS layer refused our certificate (or its absence) after our side of a TLS 1.3
        // handshake ended: the request was handed over, but never read (client-tls.ts).
        if (!req.reusedSocket && isTlsRefusal(error)) {
          settle({ kind: 'temporary', cause: 'tls' });
          return;
        }
        if (isWritten()) {
          const outcome: AttemptOutcome = { kind: 'unknown', cause: timedOut ? 'timeout' : 'connection-reset' };
          settle(outcome, req.reusedSocket && !timedOut);
          return;
        }
        settle(notSent(error, { connected, secured, timedOut }), req.reusedSocket && !timedOut);
      });
      // A destroyed request without an error event (destroy() after the timer) lands here.
      req.on('close', () => {
        if (answered || settled) return;
        settle(
          isWritten()
            ? { kind: 'unknown', cause: timedOut ? 'timeout' : 'connection-reset' }
            : notSent(undefined, { connected, secured, timedOut }),
        );
      });

      req.on('response', (res) => {
        answered = true;
        const status = res.statusCode ?? 0;
        const retryAfter = res.headers['retry-after'];
        // Decoding in stream mode drops a multi-byte character cut at the byte limit.
        const decoder = new TextDecoder('utf-8');
        let text = '';
        let bytes = 0;
        // Whatever ends the read (end of body, limit, timeout, reset), the status decides.
        const done = () => settle(classifyResponse(status, retryAfter, text.trim(), this.now()));
        res.on('data', (chunk: Buffer) => {
          const part = chunk.subarray(0, Math.max(0, this.maxResponseBytes - bytes));
          text += decoder.decode(part, { stream: true });
          bytes += part.length;
          if (bytes >= this.maxResponseBytes) {
            done();
            // Never buffer a large body: the socket is dropped instead of drained.
            res.destroy();
          }
        });
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      });

      req.end(body);
    });
  }
}

function signerFor(options: HttpWebhookSenderOptions): RequestSigner | undefined {
  const { secret, previousSecret, previousSecretUntil } = options;
  if (previousSecret === undefined) return secret === undefined ? undefined : new RequestSigner(secret);
  if (secret === undefined) throw new RangeError('previousSecret needs secret: a rotation signs with the new secret first');
  if (previousSecretUntil === undefined) throw new RangeError('previousSecret needs previousSecretUntil: when the old secret stops signing');
  return new RequestSigner(secret, { secret: previousSecret, untilMs: previousSecretUntil });
}

/**
 * The headers an endpoint adds, named in lower case (Node takes names without case; one key each
 * here), any name the request keeps for itself left out: the field refuses those, and an item
 * written by hand must not get them past it.
 */
function extraHeadersOf(headers: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> | undefined {
  if (headers === undefined) return undefined;
  const kept = Object.entries(headers).filter(([name]) => refusedHeaderProblem(name) === undefined);
  return kept.length === 0 ? undefined : Object.fromEntries(kept.map(([name, value]) => [name.toLowerCase(), value]));
}

/** The proxy's URL as the agents take it. @throws RangeError naming `proxyUrl` */
function proxyOf(proxyUrl: string | undefined): ConnectProxy | undefined {
  if (proxyUrl === undefined) return undefined;
  try {
    return parseProxyUrl(proxyUrl);
  } catch (error) {
    throw new RangeError(`proxyUrl ${(error as Error).message}`);
  }
}

/** The token endpoint is reached as a receiver is: the guard refuses a private or metadata address. @throws EndpointRefusedError naming `auth.tokenUrl` */
function checkTokenUrl(guard: EndpointGuard, tokenUrl: string): void {
  try {
    guard.checkUrl(tokenUrl);
  } catch (error) {
    if (!(error instanceof EndpointRefusedError)) throw error;
    throw new EndpointRefusedError(error.code, `auth.tokenUrl: ${error.message.replace('the webhook URL', 'the URL')}`, error.address);
  }
}

const DNS_ERROR_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME', 'ENODATA']);

/** The outcome of a request that was never fully written: the proxy's status, when it refused the tunnel. */
function notSent(error: unknown, progress: { connected: boolean; secured: boolean; timedOut: boolean }): AttemptOutcome {
  const cause = notSentCause(error, progress);
  const status = cause === 'proxy' && error instanceof ProxyError ? error.status : undefined;
  return status === undefined ? { kind: 'temporary', cause } : { kind: 'temporary', cause, status };
}

/** Why a request that was never fully written failed, from how far it got. */
function notSentCause(
  error: unknown,
  progress: { connected: boolean; secured: boolean; timedOut: boolean },
): NotSentCause {
  if (error instanceof EndpointRefusedError) return 'blocked-address';
  if (progress.timedOut) return progress.connected && progress.secured ? 'network' : 'connect-timeout';
  // Before the request had a socket, in opening a tunnel (connect-proxy.ts).
  if (error instanceof ProxyError) return 'proxy';
  if (error instanceof TunnelTlsError) return 'tls';
  if (progress.connected && !progress.secured) return 'tls';
  if (progress.connected) return 'network';
  const { code, syscall } = (error ?? {}) as { code?: unknown; syscall?: unknown };
  if (code === 'ECONNREFUSED') return 'connection-refused';
  if (syscall === 'getaddrinfo' || (typeof code === 'string' && DNS_ERROR_CODES.has(code))) return 'dns';
  return 'network';
}
