/**
 * An endpoint's OAuth2 client-credentials grant (docs/contract.md §18 `auth`): the bearer token its
 * requests carry, fetched from its token endpoint and kept by its sender (one per endpoint version per
 * container) until shortly before it expires.
 *
 * - One fetch at a time: every send that finds no usable token waits for the same fetch, so a batch
 *   of fifty deliveries to an endpoint whose token just expired costs its token endpoint one request.
 * - The token endpoint is called as receivers are: through the guard (its address checked where the
 *   connection is made), the proxy when there is one, within the attempt's deadline, its answer read
 *   to a bound, redirects not followed.
 * - The client authenticates with HTTP Basic, its id and secret each form-encoded first (RFC 6749
 *   §2.3.1); the body is `grant_type=client_credentials`, with `scope` and `audience` when given.
 * - A token is used until MAX_REFRESH_MARGIN_MS before its `expires_in` ends (half its life for a
 *   short one), so a request never carries one that expires on the way. An answer without
 *   `expires_in` is kept DEFAULT_LIFETIME_SECONDS.
 * - A receiver's 401 drops the token it refused (`refused`), so the next send fetches one.
 *
 * Neither a token nor the client's secret is ever in an error, a log or an outcome: a failure says
 * what the token endpoint did (its status, if it answered), never what it sent.
 */
import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { urlToHttpOptions } from 'node:url';
import { HEADER_VALUE } from './custom-headers';
import type { ClientCredentials } from './sender';

/**
 * How long a token whose answer has no `expires_in` is used. RFC 6749 leaves the lifetime to the
 * server's documentation then; five minutes is shorter than any common default (an hour is usual), so
 * a token is never used long past a lifetime nobody stated, and it still costs one fetch per five
 * minutes per container, not one per delivery. A receiver's 401 drops one sooner.
 */
export const DEFAULT_LIFETIME_SECONDS = 300;
/** A token is refreshed this long before it expires (at most half its life). */
export const MAX_REFRESH_MARGIN_MS = 60_000;
/** The most of a token endpoint's answer read: a JSON object holding a long JWT fits many times over. */
export const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
/** A token's longest: it travels in a header, and servers take about 8 KiB of headers. */
export const MAX_TOKEN_CHARS = 8192;

/** No token could be had: the token endpoint's `status` when it answered. Nothing reached the receiver. */
export class TokenError extends Error {
  override readonly name = 'TokenError';
  readonly code = 'auth';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface TokenSourceOptions {
  readonly credentials: ClientCredentials;
  /** A one-off Agent (connect-proxy.ts `createAgent`): through the guard, and the proxy when there is one. */
  readonly agent: http.Agent;
  readonly userAgent: string;
  /** Epoch ms: when a token expires. */
  readonly now: () => number;
}

interface Held {
  readonly token: string;
  /** Epoch ms from which a fresh token is fetched. */
  readonly refreshAtMs: number;
}

export class TokenSource {
  readonly #options: TokenSourceOptions;
  readonly #url: URL;
  readonly #authorization: string;
  readonly #body: string;
  #held: Held | undefined;
  #fetching: Promise<string> | undefined;

  constructor(options: TokenSourceOptions) {
    this.#options = options;
    const { tokenUrl, clientId, clientSecret, scope, audience } = options.credentials;
    this.#url = new URL(tokenUrl);
    this.#authorization = `Basic ${Buffer.from(`${formEncode(clientId)}:${formEncode(clientSecret)}`, 'utf8').toString('base64')}`;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (scope !== undefined) form.set('scope', scope);
    if (audience !== undefined) form.set('audience', audience);
    this.#body = form.toString();
  }

  /**
   * The token to send now: the one held while it is fresh, else the one being fetched (one fetch at a
   * time, started with this deadline when none is under way).
   * @param deadlineMs `performance.now()` time by which this send needs it
   * @throws TokenError
   */
  token(deadlineMs: number): Promise<string> {
    const held = this.#held;
    if (held !== undefined && this.#options.now() < held.refreshAtMs) return Promise.resolve(held.token);
    this.#fetching ??= this.#fetch(deadlineMs).finally(() => {
      this.#fetching = undefined;
    });
    return byDeadline(this.#fetching, deadlineMs);
  }

  /** The receiver refused `token` (a 401): dropped, unless a newer one already replaced it. */
  refused(token: string): void {
    if (this.#held?.token === token) this.#held = undefined;
  }

  async #fetch(deadlineMs: number): Promise<string> {
    const askedMs = this.#options.now();
    const { status, text } = await this.#post(deadlineMs);
    if (status < 200 || status >= 300) throw new TokenError(`the token endpoint answered ${status}`, status);
    const held = heldToken(text, status, askedMs);
    this.#held = held;
    return held.token;
  }

  #post(deadlineMs: number): Promise<{ status: number; text: string }> {
    const { agent, userAgent } = this.#options;
    const secure = this.#url.protocol === 'https:';
    const body = Buffer.from(this.#body, 'utf8');
    return new Promise((resolve, reject) => {
      const { auth: _userinfo, ...target } = urlToHttpOptions(this.#url);
      const request = (secure ? https : http).request({
        ...target,
        method: 'POST',
        agent,
        headers: {
          authorization: this.#authorization,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': String(body.length),
          accept: 'application/json',
          'user-agent': userAgent,
        },
      });
      const fail = (message: string, status?: number) => {
        clearTimeout(timer);
        reject(new TokenError(message, status));
        request.destroy();
      };
      const timer = setTimeout(() => fail('the token endpoint did not answer in time'), Math.max(0, deadlineMs - performance.now()));
      request.on('error', () => fail('the token endpoint could not be reached'));
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let bytes = 0;
        response.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > MAX_TOKEN_RESPONSE_BYTES) fail(`the token endpoint's answer is over ${MAX_TOKEN_RESPONSE_BYTES} bytes`, status);
          else chunks.push(chunk);
        });
        response.on('error', () => fail('the token endpoint’s answer was cut short', status));
        response.on('close', () => {
          if (!response.complete) fail('the token endpoint’s answer was cut short', status);
        });
        response.on('end', () => {
          clearTimeout(timer);
          resolve({ status, text: Buffer.concat(chunks).toString('utf8') });
        });
      });
      request.end(body);
    });
  }
}

/** The token and until when to use it, from a 2xx answer. @throws TokenError, saying what is wrong but never what was sent */
function heldToken(text: string, status: number, askedMs: number): Held {
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new TokenError('the token endpoint’s answer is not JSON', status);
  }
  const { access_token: token, token_type: type, expires_in: expiresIn } = (typeof answer === 'object' && answer !== null ? answer : {}) as Record<string, unknown>;
  if (typeof token !== 'string' || token === '') throw new TokenError('the token endpoint’s answer has no access_token', status);
  if (token.length > MAX_TOKEN_CHARS || !HEADER_VALUE.test(token)) {
    throw new TokenError(`the token endpoint’s access_token is not a header value of at most ${MAX_TOKEN_CHARS} visible ASCII characters`, status);
  }
  if (type !== undefined && (typeof type !== 'string' || type.toLowerCase() !== 'bearer')) {
    throw new TokenError('the token endpoint’s token_type is not Bearer', status);
  }
  // Some servers send the number as a string; anything else that is not a positive number means "not said".
  const seconds = typeof expiresIn === 'string' && /^\d+$/.test(expiresIn) ? Number(expiresIn) : expiresIn;
  const lifetimeMs = (typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_LIFETIME_SECONDS) * 1000;
  return { token, refreshAtMs: askedMs + lifetimeMs - Math.min(MAX_REFRESH_MARGIN_MS, lifetimeMs / 2) };
}

/** `promise`, or a TokenError once `deadlineMs` (`performance.now()`) passes: a send waits no longer than its attempt. */
function byDeadline<T>(promise: Promise<T>, deadlineMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TokenError('no token within the attempt’s time')), Math.max(0, deadlineMs - performance.now()));
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** application/x-www-form-urlencoded, as RFC 6749 §2.3.1 encodes the client's id and secret before Basic. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}
