/**
 * The management API as the page calls it: same-origin `/v1`, the session's bearer credential, JSON
 * in and out. An answer that is not 2xx becomes an ApiError holding the problem document (RFC 9457)
 * the API sent, so a form can show each bad field's message next to that field, word for word.
 */
import { actionKeys } from './action-keys';
import { ApiError, type FieldProblem } from './errors';
import { readPages, type Page, type PagesRead } from './paging';
import { currentCredential } from './session';

export { actionKeys, ApiError, type FieldProblem, type Page };

export type Query = Readonly<Record<string, string | number | boolean | undefined | null>>;

let unauthorized: () => void = () => {};

/** What to do when the API answers 401: the credential is gone or expired (the shell shows how to get another). */
export function onUnauthorized(handler: () => void): void {
  unauthorized = handler;
}

export function pathWith(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** `/v1/endpoints/{name}` with the name encoded. */
export function endpointPath(name: string, action?: string): string {
  return `/v1/endpoints/${encodeURIComponent(name)}${action === undefined ? '' : `/${action}`}`;
}

interface RequestOptions {
  readonly query?: Query;
  readonly body?: unknown;
  /** Sent as `Idempotency-Key`, so a double click or a retried request acts once. */
  readonly idempotencyKey?: string;
}

async function call<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const credential = currentCredential();
  if (credential !== undefined) headers.authorization = `Bearer ${credential.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  const response = await fetch(pathWith(path, options.query), {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    credentials: 'omit',
    cache: 'no-store',
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (response.ok) return body as T;
  if (response.status === 401) unauthorized();
  const problem = (body ?? {}) as { type?: unknown; title?: unknown; detail?: unknown; errors?: unknown };
  const errors = Array.isArray(problem.errors)
    ? problem.errors.filter((e): e is FieldProblem => typeof e?.path === 'string' && typeof e?.message === 'string')
    : [];
  throw new ApiError(
    response.status,
    typeof problem.type === 'string' ? problem.type : 'about:blank',
    typeof problem.title === 'string' ? problem.title : response.statusText,
    typeof problem.detail === 'string' ? problem.detail : '',
    errors,
  );
}

export const api = {
  get: <T>(path: string, query?: Query) => call<T>('GET', path, query === undefined ? {} : { query }),
  post: <T>(path: string, body: unknown, options: Omit<RequestOptions, 'body'> = {}) => call<T>('POST', path, { ...options, body }),
  patch: <T>(path: string, body: unknown) => call<T>('PATCH', path, { body }),
  delete: <T>(path: string) => call<T>('DELETE', path),
};

/**
 * The signing secret an answer shows, this once: `whsec_…` (HMAC-SHA256) or an ed25519 key `whsk_…`
 * (whose public key is the answer's `publicKey`). Undefined for a secret kept in Secrets Manager
 * (`set`), and for an answer repeated for an Idempotency-Key, which keeps no secret.
 */
export function shownSecret(answer: { readonly secret?: unknown }): string | undefined {
  return typeof answer.secret === 'string' && /^wh(sec|sk)_/.test(answer.secret) ? answer.secret : undefined;
}

/** Pages of a list, from its start, up to `maxItems` items in at most `maxRequests` requests of the API's largest page. */
export function allPages<T>(path: string, query: Query, limits: { maxItems: number; maxRequests: number }): Promise<PagesRead<T>> {
  return readPages<T>((cursor) => api.get<Page<T>>(path, { ...query, limit: 100, cursor }), limits);
}
