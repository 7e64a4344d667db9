/**
 * The management API in the sandbox (docs/contract.md §16): a Node HTTP server on 127.0.0.1 that
 * turns each request into the event API Gateway's HTTP API would hand the API's function (payload
 * format 2.0, api/http.ts) and runs the same handler on it (`createApiHandler(ROUTES, deps)`), so the
 * sandbox answers exactly as a deployment does. This adapter decides nothing: every answer, a 401 or
 * a 413 included, is the router's.
 *
 * Authentication: `Authorization: Bearer <apiToken>`, the token drawn at each start and kept only in
 * READY and the 0600 state file. A request carrying it is passed with the authorizer a Lambda
 * authorizer would add (`principal: 'sandbox'`, the audit's operator). A bearer that is a portal
 * link's token this sandbox signed (POST /v1/portal-links, api/portal-link.ts) is passed as that
 * owner's portal caller, whom the router keeps to the owner's endpoints. Any other request is passed
 * with no authorizer at all, which the router answers 401.
 *
 * The console (docs/contract.md §17) is served beside it at /console/ (console/site.ts
 * `withConsole`): its files need no credential, since they hold no data; the page calls /v1 with one.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CommandContext } from '../cli/context';
import { MAX_BODY_BYTES, type ApiEvent, type ApiResult } from '../api/http';
import type { IdempotencyStore } from '../api/idempotency';
import { PortalTokenError, portalCallerOf, verifyPortalToken } from '../api/portal-link';
import type { ApiDeps, PortalLinkDeps } from '../api/route';
import { createApiHandler, type ApiHandler } from '../api/router';
import { ROUTES } from '../api/routes';
import { withConsole, type ConsoleSite } from '../console/site';
import type { Logger } from '../lib/observability';

/** The caller every request with the sandbox's token is, as the audit records it. */
export const SANDBOX_API_PRINCIPAL = 'sandbox';

export interface ApiServerOptions {
  /** 0: any free port. */
  readonly port: number;
  readonly context: CommandContext;
  readonly idempotency: IdempotencyStore;
  /** The router's one line per request (IDs only). */
  readonly logger: Logger;
  /** The bearer token taken; drawn here when not given. */
  readonly token?: string;
  /** What portal links are signed with (the sandbox's seal key); without it, no portal links. */
  readonly portal?: PortalLinkDeps;
  /** The console served at /console/ (console/site.ts); without it, /console is the API's 404. */
  readonly console?: ConsoleSite;
  readonly now?: () => number;
}

export interface ApiServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly token: string;
  /** The handler behind the server, for callers in this process (the bench). */
  readonly handler: ApiHandler;
  /** Stops taking requests and closes every connection. */
  close(): Promise<void>;
}

/** A new bearer token: 32 random bytes, base64url. */
export function generateApiToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The credential of `Authorization: Bearer <credential>`, or undefined for any other header. */
export function bearerOf(authorization: string | undefined): string | undefined {
  return /^Bearer[ ]+(\S+)[ ]*$/i.exec(authorization ?? '')?.[1];
}

/**
 * Whether `authorization` is `Bearer <token>`. Both sides are hashed before the constant-time
 * compare, so neither the token's content nor its length shows in the time taken.
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const given = bearerOf(authorization);
  if (given === undefined) return false;
  const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();
  return timingSafeEqual(digest(given), digest(token));
}

/**
 * Who the request's credential proves the caller is: `sandbox` for the API token, a portal caller
 * for a portal link's token this sandbox signed and that has not expired, else nobody.
 */
export async function callerOfBearer(authorization: string | undefined, token: string, portal: PortalLinkDeps | undefined, nowMs: number): Promise<string | undefined> {
  if (bearerMatches(authorization, token)) return SANDBOX_API_PRINCIPAL;
  const given = bearerOf(authorization);
  if (given === undefined || portal === undefined) return undefined;
  try {
    return portalCallerOf(verifyPortalToken(given, await portal.key(), nowMs).owner);
  } catch (error) {
    if (error instanceof PortalTokenError) return undefined;
    throw error;
  }
}

/** The request as it was read: its body's bytes, at most MAX_BODY_BYTES + 1 (more were not read). */
export interface ReadRequest {
  readonly method: string;
  /** The request target as sent: path and query. */
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly sourceIp: string;
  readonly body: Buffer;
  /** Whether the body went on past MAX_BODY_BYTES (only its first MAX_BODY_BYTES + 1 bytes are here). */
  readonly overflowed: boolean;
}

/**
 * The HTTP API event (payload format 2.0) API Gateway would build for this request: header names in
 * lower case, repeated ones joined by commas as API Gateway joins them, repeated query parameters
 * too, the path as sent. `principal`: who the credential proved the caller is (`true`: the API
 * token's holder, `sandbox`); undefined or false: nobody, so the event carries no authorizer.
 */
export function apiEventOf(request: ReadRequest, principal: string | boolean | undefined, requestId: string, nowMs: number): ApiEvent {
  const caller = principal === true ? SANDBOX_API_PRINCIPAL : principal === false ? undefined : principal;
  const questionMark = request.url.indexOf('?');
  const rawPath = questionMark === -1 ? request.url : request.url.slice(0, questionMark);
  const rawQueryString = questionMark === -1 ? '' : request.url.slice(questionMark + 1);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    // The credential stops here: the authorizer's verdict is `principal`, and nothing past this
    // point (the router, a route, a log line) has any use for the token itself.
    if (value === undefined || name.toLowerCase() === 'authorization') continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(rawQueryString)) {
    query[name] = query[name] === undefined ? value : `${query[name]},${value}`;
  }
  // A body past the limit goes on as its bytes (base64), so the router counts them as they came.
  const body = request.body.byteLength === 0 ? undefined : request.overflowed ? request.body.toString('base64') : request.body.toString('utf8');
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: 'sandbox',
      apiId: 'sandbox',
      domainName: headers.host ?? '127.0.0.1',
      domainPrefix: 'sandbox',
      http: { method: request.method.toUpperCase(), path: rawPath, protocol: 'HTTP/1.1', sourceIp: request.sourceIp, userAgent: headers['user-agent'] ?? '' },
      requestId,
      routeKey: '$default',
      stage: '$default',
      time: new Date(nowMs).toISOString(),
      timeEpoch: nowMs,
      ...(caller !== undefined ? { authorizer: { lambda: { principal: caller } } } : {}),
    },
    ...(body !== undefined ? { body } : {}),
    isBase64Encoded: request.overflowed && body !== undefined,
  };
}

/** Writes the handler's result as the HTTP answer. */
function writeResult(res: ServerResponse, result: ApiResult, closeAfter: boolean): void {
  const body = result.body === undefined ? undefined : Buffer.from(result.body, result.isBase64Encoded === true ? 'base64' : 'utf8');
  const headers: Record<string, string | number> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  if (body !== undefined) headers['content-length'] = body.byteLength;
  // The rest of an oversized body was never read: the connection cannot carry another request.
  if (closeAfter) headers.connection = 'close';
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(body);
}

/** How long a connection refused 413 may go on sending the rest of its body, read and dropped. */
const LINGER_MS = 5_000;

/** Reads at most MAX_BODY_BYTES + 1 bytes of the body, then stops reading. */
function readBody(req: IncomingMessage): Promise<{ body: Buffer; overflowed: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.byteLength;
      if (size > MAX_BODY_BYTES) {
        req.off('data', onData);
        req.pause();
        resolve({ body: Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES + 1), overflowed: true });
      }
    };
    req.on('data', onData);
    req.once('end', () => resolve({ body: Buffer.concat(chunks), overflowed: false }));
    req.once('error', reject);
    // A client gone before its body ended: nothing to answer (a settled promise ignores this).
    req.once('close', () => reject(new Error('the request closed before its body ended')));
  });
}


export async function startApiServer(options: ApiServerOptions): Promise<ApiServer> {
  const token = options.token ?? generateApiToken();
  const now = options.now ?? Date.now;
  const deps: ApiDeps = {
    context: options.context,
    idempotency: options.idempotency,
    now,
    logger: options.logger,
    ...(options.portal !== undefined ? { portal: options.portal } : {}),
  };
  const handler = createApiHandler(ROUTES, deps);
  const served = options.console === undefined ? handler : withConsole(handler, options.console);

  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const { body, overflowed } = await readBody(req);
    const request: ReadRequest = {
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: req.headers,
      sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
      body,
      overflowed,
    };
    const nowMs = now();
    const caller = await callerOfBearer(req.headers.authorization, token, options.portal, nowMs);
    const event = apiEventOf(request, caller, randomUUID(), nowMs);
    writeResult(res, await served(event), overflowed);
    if (overflowed) {
      // A lingering close: what the client still sends is read and dropped, not left unread, since
      // closing a socket with unread bytes resets the connection, and a reset can discard the 413
      // before the client reads it. The connection ends once the client has sent its body (the
      // answer said `connection: close`), or after LINGER_MS whatever it does.
      res.once('finish', () => {
        req.resume();
        setTimeout(() => req.destroy(), LINGER_MS).unref();
      });
    }
  };

  const server: Server = createServer((req, res) => {
    answer(req, res).catch(() => {
      // The handler answers every failure itself; this is a connection that broke while reading.
      if (!res.headersSent) res.writeHead(400, { connection: 'close' });
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    handler,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
