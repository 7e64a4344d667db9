/**
 * The client's pure parts: the URL of a call, the region of an API URL, SigV4 signing of a request,
 * and the error an answer other than 2xx stands for. HandoffClient (./client.ts) puts them together
 * around fetch.
 */
import { HandoffApiError, HandoffClientConfigError, type ApiFieldError } from './errors';

/** A query parameter's value; undefined leaves the parameter out. */
export type QueryValue = string | number | boolean | Date | undefined;
export type Query = Readonly<Record<string, QueryValue>>;

/** AWS credentials as the SDK gives them (structurally an `AwsCredentialIdentity`). */
export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  readonly expiration?: Date;
}

/**
 * RFC 3986 percent-encoding, everything but `A-Z a-z 0-9 - . _ ~`: what SigV4's canonical request
 * uses, so the query sent and the query signed are the same text (URLSearchParams would write a
 * space as `+`, which API Gateway would read as a plus and refuse the signature).
 */
export function encodeRfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A path from a template and its values, each value one encoded segment: `/v1/endpoints/{name}`, {name: 'a/b'} → `/v1/endpoints/a%2Fb`. */
export function pathOf(template: string, values: Readonly<Record<string, string>> = {}): string {
  return template.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new TypeError(`no value for the path parameter ${name}`);
    if (value === '') throw new TypeError(`the path parameter ${name} is empty`);
    return encodeRfc3986(value);
  });
}

/** The query's parameters as text, those undefined left out, a Date as its ISO time. */
export function queryParameters(query: Query = {}): Record<string, string> {
  const parameters: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    parameters[name] = value instanceof Date ? value.toISOString() : String(value);
  }
  return parameters;
}

/** The query string (without `?`), parameters in name order. */
export function queryString(parameters: Readonly<Record<string, string>>): string {
  return Object.keys(parameters)
    .sort()
    .map((name) => `${encodeRfc3986(name)}=${encodeRfc3986(parameters[name]!)}`)
    .join('&');
}

/** The API's base URL, checked: http or https, no query or fragment; a trailing slash dropped. @throws HandoffClientConfigError */
export function baseUrlOf(url: string | URL): URL {
  let base: URL;
  try {
    base = new URL(String(url));
  } catch {
    throw new HandoffClientConfigError('invalid-url', 'the API URL is not a URL (e.g. https://abc123.execute-api.eu-west-1.amazonaws.com)');
  }
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new HandoffClientConfigError('invalid-url', `the API URL must be http or https, not ${base.protocol}`);
  // Credentials in a URL would travel in logs and errors: the token belongs in `credentials`.
  if (base.username !== '' || base.password !== '') throw new HandoffClientConfigError('invalid-url', 'the API URL must not carry a user name or password');
  if (base.search !== '' || base.hash !== '') throw new HandoffClientConfigError('invalid-url', 'the API URL must not carry a query or a fragment');
  base.pathname = base.pathname.replace(/\/+$/, '');
  return base;
}

/** The full URL of a call: the base's path (a stage or a custom domain's mapping) followed by the API path. */
export function urlOf(base: URL, path: string, parameters: Readonly<Record<string, string>> = {}): URL {
  const url = new URL(base.href);
  url.pathname = `${base.pathname.replace(/\/+$/, '')}${path}`;
  const search = queryString(parameters);
  url.search = search === '' ? '' : `?${search}`;
  return url;
}

/** API Gateway's default host names: `{id}.execute-api.{region}.amazonaws.com` (`.com.cn` in China). */
const EXECUTE_API_HOST = /^[a-z0-9]+\.execute-api\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?$/;

/** The region in an API Gateway URL's host name; undefined for any other host (a custom domain). */
export function regionOfUrl(url: URL): string | undefined {
  return EXECUTE_API_HOST.exec(url.hostname.toLowerCase())?.[1];
}

/** The region to sign for: the option, else the API URL's, else AWS_REGION. @throws HandoffClientConfigError when none says */
export function signingRegion(option: string | undefined, url: URL, env: NodeJS.ProcessEnv = process.env): string {
  const region = option ?? regionOfUrl(url) ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined);
  if (region === undefined) {
    throw new HandoffClientConfigError(
      'no-region',
      `cannot tell the AWS region of ${url.host}: give the client a region, or set AWS_REGION`,
    );
  }
  return region;
}

/** A request about to be signed: what goes on the wire, the path encoded as sent. */
export interface RequestToSign {
  readonly method: string;
  readonly url: URL;
  /** Header names in lower case; `host` is added from the URL. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | undefined;
}

export interface SigningOptions {
  readonly credentials: AwsCredentials | (() => Promise<AwsCredentials>);
  readonly region: string;
  /** `execute-api` for the management API. */
  readonly service: string;
  /** The signing time (default: now); tests fix it. */
  readonly signingDate?: Date;
}

/**
 * The headers to send, with SigV4's: `authorization`, `x-amz-date` and, with temporary credentials,
 * `x-amz-security-token`. Signed: the method, the encoded path, the query, `host` and every header
 * given, and the body's SHA-256 (API Gateway checks it; no `x-amz-content-sha256` header is needed).
 * The signing code is loaded on first use, so a client with a bearer token never loads it.
 */
export async function signedHeaders(request: RequestToSign, options: SigningOptions): Promise<Record<string, string>> {
  const [{ SignatureV4 }, { Hash }] = await Promise.all([import('@smithy/signature-v4'), import('@smithy/hash-node')]);
  const signer = new SignatureV4({
    service: options.service,
    region: options.region,
    credentials: options.credentials,
    sha256: Hash.bind(null, 'sha256'),
    applyChecksum: false,
  });
  const query: Record<string, string> = {};
  for (const [name, value] of request.url.searchParams) query[name] = value;
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: request.url.protocol,
      hostname: request.url.hostname,
      ...(request.url.port === '' ? {} : { port: Number(request.url.port) }),
      path: request.url.pathname,
      query,
      headers: { ...request.headers, host: request.url.host },
      ...(request.body === undefined ? {} : { body: request.body }),
    },
    options.signingDate === undefined ? {} : { signingDate: options.signingDate },
  );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers)) {
    // fetch writes `host` itself, from the same URL, so the signed value is the one sent.
    if (name.toLowerCase() !== 'host') headers[name.toLowerCase()] = String(value);
  }
  return headers;
}

/** What the answer's status says when its body is no problem document (API Gateway's own answers). */
const STATUS_CODES: Readonly<Record<number, string>> = {
  400: 'invalid-request',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not-found',
  405: 'method-not-allowed',
  409: 'conflict',
  413: 'too-large',
  415: 'unsupported-media-type',
  429: 'throttled',
  500: 'internal',
  502: 'bad-gateway',
  503: 'unavailable',
  504: 'gateway-timeout',
};

/** The answer as received: its status, the headers the error needs, its body as text. */
export interface Answer {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  readonly text: string;
}

/**
 * The error an answer other than 2xx stands for. A problem document gives its code (the last
 * segment of `type`), title, detail, field errors and `instance`; anything else (API Gateway's
 * `{"message": "Forbidden"}`, a proxy's HTML page) gets a code from its status and no more of its
 * body than a short `message`.
 */
export function errorOfAnswer(answer: Answer): HandoffApiError {
  const body = parseObject(answer.text);
  const requestId = text(body?.instance) ?? answer.headers.get('apigw-requestid') ?? answer.headers.get('x-amzn-requestid') ?? undefined;
  const retryAfterSeconds = retryAfter(answer.headers.get('retry-after'));
  const fallbackCode = STATUS_CODES[answer.status] ?? `http-${answer.status}`;
  const type = text(body?.type);
  if (body !== undefined && type !== undefined) {
    const code = type.replace(/\/+$/, '').split('/').pop() || fallbackCode;
    return new HandoffApiError({
      status: answer.status,
      code,
      title: text(body.title) ?? fallbackCode,
      detail: text(body.detail) ?? text(body.title) ?? `the API answered ${answer.status}`,
      errors: fieldErrors(body.errors),
      requestId,
      retryAfterSeconds,
    });
  }
  const message = text(body?.message) ?? text(body?.Message);
  return new HandoffApiError({
    status: answer.status,
    code: fallbackCode,
    title: message ?? fallbackCode,
    detail: message === undefined ? `the API answered ${answer.status} without a problem document` : message.slice(0, 500),
    requestId,
    retryAfterSeconds,
  });
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The well-formed entries of a problem's `errors`; anything else in it is left out. */
function fieldErrors(value: unknown): ApiFieldError[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry: unknown) => {
    if (typeof entry !== 'object' || entry === null) return [];
    const { path, message } = entry as Record<string, unknown>;
    return typeof path === 'string' && typeof message === 'string' ? [{ path, message }] : [];
  });
}

/** `Retry-After` in seconds (a whole number, or an HTTP date as seconds from now, at least 0). */
function retryAfter(header: string | null, nowMs: number = Date.now()): number | undefined {
  if (header === null) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - nowMs) / 1000));
}
