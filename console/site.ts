/**
 * The console's files as the API serves them (docs/contract.md §17), beside the management API:
 * the sandbox's server and the API's Lambda answer `GET /console/*` from here, and every other path
 * goes on to the API's router unchanged.
 *
 * - `GET|HEAD /console` → 308 to `console/` (relative, so it holds under a path prefix too), the
 *   query kept (a sign-in's `?code&state` comes back to the console's URL).
 * - `/console/` → index.html; `/console/<file>` → one of the built files; `/console/config.json` →
 *   the deployment's `ConsoleConfig`; anything else under /console/ → 404 text. Not GET or HEAD → 405.
 *   On the portal console's host (`portalConsoleUrl`), the configuration has no sign-in: that API
 *   takes portal tokens only, so a "Sign in" there could never work.
 * - Every answer: a strict Content-Security-Policy (the page's own script, style and API only, plus
 *   the sign-in issuer's origins where there is a sign-in), `nosniff`, `no-referrer`; the files with
 *   `cache-control: no-cache` and a strong ETag, so a browser revalidates and gets 304 when nothing changed.
 * - gzip when the browser takes it (`vary: accept-encoding`): the size stated for the console is
 *   what is sent.
 *
 * The files hold no data: no credential is asked for them. Every `/v1` call the page makes carries one.
 * Loaded by the Lambda bundle: Node built-ins only (no esbuild; console/build.ts makes the files).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { ApiEvent, ApiResult } from '../api/http';
import type { ApiHandler } from '../api/router';
import { ConfigError } from '../lib/errors';
import type { ConsoleConfig, ConsoleSignIn } from './config';

/** The variables the construct gives the API's function for the console (infra/delivery/api.ts). */
export const CONSOLE_ENV = {
  /** JSON `ConsoleSignIn`: how people sign in to the console through the JWT authorizer's issuer. Unset: no sign-in. */
  signIn: 'HANDOFF_CONSOLE_SIGN_IN',
  /** The console URL portal links point at (`<url>#portal=<token>`): the portal API's `/console/`. */
  portalConsoleUrl: 'HANDOFF_PORTAL_CONSOLE_URL',
} as const;

export type { ConsoleConfig, ConsoleSignIn } from './config';

/** Where the console is served: `/console/`, and `/console` redirected there. */
export const CONSOLE_PATH = '/console';

/** One of the console's files, ready to serve. */
export interface ConsoleFile {
  /** Its name under /console/: `index.html`, `app.js`, `app.css`. */
  readonly path: string;
  readonly contentType: string;
  readonly body: Buffer;
  /** A strong ETag of `body` (quoted). */
  readonly etag: string;
  /** `body` gzipped, sent to a browser that takes gzip (a text file only). */
  readonly gzip?: Buffer;
}

/** The content types the console's files are served with, by extension. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/** Files smaller than this are sent as they are: gzip would gain a few bytes at best. */
const GZIP_FROM_BYTES = 256;

/** A strong ETag: the first 128 bits of the body's SHA-256, base64url, quoted. */
export function etagOf(body: Buffer | string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
}

/** A file to serve: its content type from its extension, its ETag, and its gzipped body when it is text worth compressing. */
export function consoleFile(path: string, body: Buffer): ConsoleFile {
  const contentType = CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
  const compressible = /^text\/|^application\/json|^image\/svg/.test(contentType) && body.byteLength >= GZIP_FROM_BYTES;
  return { path, contentType, body, etag: etagOf(body), ...(compressible ? { gzip: gzipSync(body, { level: 9 }) } : {}) };
}

/**
 * The console's files as a build wrote them to `dir` (console/build.ts: the package's
 * dist/consumer/console/, a clone's function bundle). Undefined when the directory or its
 * index.html is not there: the API then serves /v1 all the same, and /console/ says the files are missing.
 */
export function readConsoleFiles(dir: URL | string): ConsoleFile[] | undefined {
  const path = typeof dir === 'string' ? dir : fileURLToPath(dir);
  if (!existsSync(join(path, 'index.html'))) return undefined;
  return readdirSync(path)
    .filter((name) => statSync(join(path, name)).isFile())
    .sort()
    .map((name) => consoleFile(name, readFileSync(join(path, name))));
}

/**
 * The console's configuration from the variables the construct sets (`CONSOLE_ENV.signIn`): no
 * sign-in when unset. @throws ConfigError naming the variable when it is not a `ConsoleSignIn` as JSON
 */
export function consoleConfigFromEnvironment(env: Readonly<Record<string, string | undefined>>): ConsoleConfig {
  const raw = env[CONSOLE_ENV.signIn]?.trim();
  if (!raw) return {};
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new ConfigError(CONSOLE_ENV.signIn, 'must hold the console\'s sign-in as JSON ({"issuer", "clientId", "scopes", "authorizeUrl"?, "tokenUrl"?})');
  }
  return { signIn: signInOf(json) };
}

/** @throws ConfigError naming the variable and the field */
function signInOf(json: unknown): ConsoleSignIn {
  const bad = (problem: string) => new ConfigError(CONSOLE_ENV.signIn, problem);
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw bad('must be a JSON object');
  const fields = json as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!['issuer', 'clientId', 'scopes', 'authorizeUrl', 'tokenUrl'].includes(key)) throw bad(`has ${JSON.stringify(key.slice(0, 40))}, not a field of the sign-in`);
  }
  const url = (name: string): string | undefined => {
    const value = fields[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !isWebUrl(value)) throw bad(`must have ${name} as an https:// URL (http:// on loopback)`);
    return value;
  };
  const issuer = url('issuer');
  if (issuer === undefined) throw bad('must have issuer as an https:// URL (http:// on loopback)');
  const { clientId, scopes } = fields;
  if (typeof clientId !== 'string' || clientId.trim() === '') throw bad('must have clientId as a non-empty string');
  if (!Array.isArray(scopes) || !scopes.every((scope) => typeof scope === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope))) {
    throw bad('must have scopes as a list of OAuth scopes');
  }
  const authorizeUrl = url('authorizeUrl');
  const tokenUrl = url('tokenUrl');
  return {
    issuer,
    clientId,
    scopes: scopes as string[],
    ...(authorizeUrl !== undefined ? { authorizeUrl } : {}),
    ...(tokenUrl !== undefined ? { tokenUrl } : {}),
  };
}

/**
 * The URL portal links point at (`CONSOLE_ENV.portalConsoleUrl`), undefined when unset: the portal
 * links route then names the request's own origin's /console/. @throws ConfigError naming the variable
 */
export function portalConsoleUrlFromEnvironment(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const raw = env[CONSOLE_ENV.portalConsoleUrl]?.trim();
  if (!raw) return undefined;
  if (!isWebUrl(raw)) throw new ConfigError(CONSOLE_ENV.portalConsoleUrl, 'must be the console\'s https:// URL (http:// on loopback)');
  return raw;
}

/** https, or http to a loopback host. */
function isWebUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && /^(?:127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(url.hostname);
}

/** The Content-Security-Policy of every console answer: the page's own files and API, and the sign-in's issuer. */
export function contentSecurityPolicy(config: ConsoleConfig): string {
  const connect = new Set(["'self'"]);
  const signIn = config.signIn;
  if (signIn !== undefined) {
    // The discovery document is read from the issuer, the code traded at the token URL.
    for (const url of [signIn.issuer, signIn.tokenUrl]) if (url !== undefined) connect.add(new URL(url).origin);
  }
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${[...connect].join(' ')}`,
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export interface ConsoleSite {
  /** The answer to a request for a console path; undefined for any other path (the API's). */
  answer(event: ApiEvent): ApiResult | undefined;
}

export interface ConsoleSiteOptions {
  /** Why there are no files, for the 404 /console/ answers when `files` is undefined. */
  readonly missing?: string;
  /**
   * The console portal links open (`CONSOLE_ENV.portalConsoleUrl`): a request to its host is
   * answered the configuration without sign-in, and a CSP without the issuer's origins.
   */
  readonly portalConsoleUrl?: string;
}

/** What one host's answers carry: the security headers and config.json. */
interface SiteView {
  readonly security: Readonly<Record<string, string>>;
  readonly config: ConsoleFile;
}

function siteView(config: ConsoleConfig): SiteView {
  return {
    security: {
      'content-security-policy': contentSecurityPolicy(config),
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    },
    config: consoleFile('config.json', Buffer.from(JSON.stringify(config))),
  };
}

/**
 * The console's site over its files and the deployment's configuration. Without files (a bundle
 * built without them), every console path answers 404 with `options.missing`, or a sentence saying so.
 * With `options.portalConsoleUrl`, requests to that URL's host get the configuration without its
 * sign-in: the portal API's routes take portal tokens, never the issuer's.
 */
export function consoleSite(files: readonly ConsoleFile[] | undefined, config: ConsoleConfig, options: ConsoleSiteOptions = {}): ConsoleSite {
  const operators = siteView(config);
  const portalHost = options.portalConsoleUrl === undefined ? undefined : new URL(options.portalConsoleUrl).hostname.toLowerCase();
  const { signIn: _, ...withoutSignIn } = config;
  const portal = portalHost === undefined || config.signIn === undefined ? operators : siteView(withoutSignIn);
  const byPath = new Map<string, ConsoleFile>();
  for (const file of files ?? []) byPath.set(file.path, file);
  const missing = options.missing ?? 'The console is not in this deployment: its files were not bundled with the API.';

  return {
    answer(event) {
      const path = event.rawPath;
      if (path !== CONSOLE_PATH && !path.startsWith(`${CONSOLE_PATH}/`)) return undefined;
      const { security, config: configFile } = portalHost !== undefined && hostOf(event) === portalHost ? portal : operators;
      const text = (statusCode: number, body: string, headers: Record<string, string> = {}): ApiResult => ({
        statusCode,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...security, ...headers },
        body: `${body}\n`,
      });
      const method = event.requestContext.http.method.toUpperCase();
      if (method !== 'GET' && method !== 'HEAD') return text(405, `${method} is not allowed on the console: its files are read with GET.`, { allow: 'GET, HEAD' });
      if (path === CONSOLE_PATH) {
        const query = event.rawQueryString ? `?${event.rawQueryString}` : '';
        return { statusCode: 308, headers: { location: `console/${query}`, 'cache-control': 'no-cache', ...security } };
      }
      if (files === undefined) return text(404, missing);
      const name = path.slice(CONSOLE_PATH.length + 1) || 'index.html';
      const file = name === 'config.json' ? configFile : byPath.get(name);
      if (file === undefined) return text(404, 'No such file in the console. The console is at /console/.');
      return fileResult(file, event, method === 'HEAD', security);
    },
  };
}

/**
 * The host a request was made to, in lower case without a port: API Gateway's `domainName` (the
 * API's own, or its custom domain), else the `Host` header (the sandbox's server).
 */
function hostOf(event: ApiEvent): string | undefined {
  const host = event.requestContext.domainName ?? event.headers?.host;
  if (host === undefined || host === '') return undefined;
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

/** A file's answer: 304 when the browser's copy is current, gzip when it takes it, no body for HEAD. */
function fileResult(file: ConsoleFile, event: ApiEvent, head: boolean, security: Readonly<Record<string, string>>): ApiResult {
  // API Gateway's header names are in lower case, as the sandbox's server gives them (api/http.ts).
  const header = (name: string): string | undefined => event.headers?.[name];
  const gzipped = file.gzip !== undefined && acceptsGzip(header('accept-encoding'));
  // A strong ETag names one representation: the gzipped one has its own.
  const etag = gzipped ? `${file.etag.slice(0, -1)}-gz"` : file.etag;
  const common: Record<string, string> = {
    'content-type': file.contentType,
    'cache-control': 'no-cache',
    etag,
    ...(file.gzip !== undefined ? { vary: 'accept-encoding' } : {}),
    ...security,
  };
  if (matchesEtag(header('if-none-match'), etag)) return { statusCode: 304, headers: common };
  const headersOut = gzipped ? { ...common, 'content-encoding': 'gzip' } : common;
  if (head) return { statusCode: 200, headers: headersOut };
  const body = gzipped ? file.gzip! : file.body;
  const text = !gzipped && /^text\/|^application\/json|^image\/svg/.test(file.contentType);
  return text
    ? { statusCode: 200, headers: headersOut, body: body.toString('utf8') }
    : { statusCode: 200, headers: headersOut, body: body.toString('base64'), isBase64Encoded: true };
}

/** Whether `Accept-Encoding` takes gzip (not refused with q=0). */
function acceptsGzip(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  return accept.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') return false;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    return q === undefined || Number(q) > 0;
  });
}

/** If-None-Match's comparison (weak: a `W/` prefix is ignored), `*` matching any. */
function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

/**
 * The API's handler with the console in front: a console path is answered by the site, any other
 * goes to the API as it came. The console's files need no credential; the API's routes each do.
 */
export function withConsole(handler: ApiHandler, site: ConsoleSite): ApiHandler {
  return async (event) => site.answer(event) ?? handler(event);
}
