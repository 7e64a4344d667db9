/**
 * `Idempotency-Key` (docs/contract.md §16): a `POST` repeated with the same key by the same caller
 * within 24 h gets the first answer, and its use case runs once. The key is claimed before the use
 * case runs (a conditional write), so two requests racing with one key run it once: the second is
 * told the first is still running (409) or, once it is done, gets its answer.
 *
 * An answer is kept without any signing secret it held: a secret is shown once, when it is made,
 * and a repeat says it was shown (`secret` replaced by `secretShown: true`).
 */
import { createHash } from 'node:crypto';

/**
 * The partition of a key's item in the ledger table (api/dynamodb-idempotency.ts): `#` keeps it
 * apart from every event ID. Here, with no SDK import, so the stack's grant can name it.
 */
export const IDEMPOTENCY_PARTITION_PREFIX = 'api-idempotency#';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long a claim whose request never finished (its function timed out or crashed) holds the key:
 * longer than any request runs (API Gateway gives up after 30 s), so a claim still running is never
 * taken over, and short enough that a caller whose request died may repeat it with the same key.
 */
export const IDEMPOTENCY_CLAIM_MS = 5 * 60 * 1000;
/**
 * The largest answer body kept (its JSON, UTF-8 bytes): a DynamoDB item holds at most 400 KB. A
 * larger answer is not kept; the key remembers that its request was done (`unkept`), so a repeat
 * neither runs it again nor gets an answer that is not the first.
 */
export const MAX_KEPT_ANSWER_BYTES = 300 * 1024;
/** Keys as callers send them: printable, 1–255 characters (as Stripe and the IETF draft take them). */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export interface StoredAnswer {
  readonly status: number;
  readonly body: unknown;
}

export type IdempotencyClaim =
  /** The key is new: run the use case, then `complete` (or `release` when it failed). */
  | { readonly kind: 'claimed' }
  /** The key was used for this same request: its answer. */
  | { readonly kind: 'answered'; readonly answer: StoredAnswer }
  /** The key is being used right now by another request. */
  | { readonly kind: 'in-progress' }
  /** The key was used for a different request (another method, path or body). */
  | { readonly kind: 'mismatch' }
  /** The key's request was done, but its answer was over MAX_KEPT_ANSWER_BYTES and not kept. */
  | { readonly kind: 'unkept'; readonly status: number };

export interface IdempotencyStore {
  /** Claims `key` for a request whose fingerprint is `fingerprint`, unless it is already used. */
  claim(key: string, fingerprint: string, nowMs: number): Promise<IdempotencyClaim>;
  /** Keeps the answer (withoutSecrets; a marker when over MAX_KEPT_ANSWER_BYTES) for repeats until the key's 24 h are over. */
  complete(key: string, fingerprint: string, answer: StoredAnswer, nowMs: number): Promise<void>;
  /** Forgets a claim whose use case failed, so a repeat may try again. */
  release(key: string): Promise<void>;
}

/** The stored key: the caller's and the key's hash, so neither a key nor a caller is stored as sent. */
export function storedKey(caller: string, key: string): string {
  return createHash('sha256').update(caller).update('\n').update(key).digest('base64url');
}

/** What makes two requests the same: method, path, query and body. */
export function fingerprintOf(method: string, path: string, query: Readonly<Record<string, string | undefined>>, body: string | undefined): string {
  const q = Object.entries(query)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash('sha256').update(`${method} ${path}\n${JSON.stringify(q)}\n`).update(body ?? '').digest('base64url');
}

/** The fields every answer is kept without: a signing secret is shown once. */
export const SHOWN_ONCE = ['secret'] as const;

/** What an endpoint's view says in `secret` (whether it has one): no secret, so kept as it is. */
const SECRET_STATES: ReadonlySet<unknown> = new Set(['set', 'unset']);

/**
 * The answer as kept: every field named in `shownOnce` (SHOWN_ONCE, plus a route's own, such as a
 * portal link's `token` and `url`) taken out where it holds a string, and `<name>Shown: true` in its place.
 */
export function withoutSecrets(body: unknown, shownOnce: readonly string[] = SHOWN_ONCE): unknown {
  if (Array.isArray(body)) return body.map((item) => withoutSecrets(item, shownOnce));
  if (typeof body !== 'object' || body === null) return body;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    const shown = (k === 'secret' && !SECRET_STATES.has(v)) || (k !== 'secret' && shownOnce.includes(k));
    if (shown && typeof v === 'string') out[`${k}Shown`] = true;
    else out[k] = withoutSecrets(v, shownOnce);
  }
  return out;
}

/** The answer as kept: its body as JSON without secrets, or undefined when that is over MAX_KEPT_ANSWER_BYTES. */
export function keptBody(answer: StoredAnswer): string | undefined {
  const json = JSON.stringify(withoutSecrets(answer.body)) ?? 'null';
  return Buffer.byteLength(json, 'utf8') > MAX_KEPT_ANSWER_BYTES ? undefined : json;
}

/** What a claim meets when the key is held: the same request's answer (or its marker), or why not. */
export function heldClaim(held: { fingerprint: string; status?: number; body?: string }, fingerprint: string): IdempotencyClaim {
  if (held.fingerprint !== fingerprint) return { kind: 'mismatch' };
  if (held.status === undefined) return { kind: 'in-progress' };
  if (held.body === undefined) return { kind: 'unkept', status: held.status };
  return { kind: 'answered', answer: { status: held.status, body: JSON.parse(held.body) as unknown } };
}

/** In memory: for unit tests of the router alone; the same rules as DynamoDbIdempotencyStore (api/dynamodb-idempotency.ts). */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #entries = new Map<string, { fingerprint: string; status?: number; body?: string; expiresAt: number }>();

  async claim(key: string, fingerprint: string, nowMs: number): Promise<IdempotencyClaim> {
    const entry = this.#entries.get(key);
    if (entry !== undefined && entry.expiresAt > nowMs) return heldClaim(entry, fingerprint);
    this.#entries.set(key, { fingerprint, expiresAt: nowMs + IDEMPOTENCY_CLAIM_MS });
    return { kind: 'claimed' };
  }

  async complete(key: string, fingerprint: string, answer: StoredAnswer, nowMs: number): Promise<void> {
    const entry = this.#entries.get(key);
    // Only the claim this request holds, still unanswered: as the DynamoDB store's condition.
    if (entry === undefined || entry.fingerprint !== fingerprint || entry.status !== undefined) return;
    const body = keptBody(answer);
    this.#entries.set(key, { fingerprint, status: answer.status, ...(body === undefined ? {} : { body }), expiresAt: nowMs + IDEMPOTENCY_TTL_MS });
  }

  async release(key: string): Promise<void> {
    if (this.#entries.get(key)?.status === undefined) this.#entries.delete(key);
  }
}
