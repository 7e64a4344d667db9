/**
 * An endpoint's OAuth2 client-credentials grant (docs/contract.md §18 `auth`): the bearer token its
 * requests carry, fetched from its token endpoint and kept by its sender (one per endpoint version per
 * container) until shortly before it expires.
 *
 * - One fetch at a time: every send that needs a token fetched waits for the same fetch, so a batch
 *   of fifty deliveries to an endpoint whose token just expired costs its token endpoint one request.
 *   The fetch is bounded by its own time (FETCH_TIMEOUT_ATTEMPTS attempt timeouts), not by the
 *   deadline of the send that started it; each send waits for it until its own deadline only.
 * - The token endpoint is called as receivers are: through the guard (its address checked where the
 *   connection is made), the proxy when there is one, its answer read to a bound, redirects not
 *   followed.
 * - The client authenticates with HTTP Basic, its id and secret each form-encoded first (RFC 6749
 *   §2.3.1); the body is `grant_type=client_credentials`, with `scope` and `audience` when given.
 * - A token is refreshed from MAX_REFRESH_MARGIN_MS before its `expires_in` ends (half its life for
 *   a short one), so a request does not carry one that expires on the way. An answer without
 *   `expires_in` is kept DEFAULT_LIFETIME_SECONDS.
 * - A refresh that fails (or is slow) does not fail the sends while the token held is valid: they go
 *   with it until it expires. A send gives a refresh at most half of its time left, then goes with
 *   the held token (the fetch going on for the next sends); after a failed refresh the held token is
 *   used REFRESH_BACKOFF_MS without asking again, so a failing token endpoint is asked about once per
 *   back-off, not once per delivery, until the token expires. Then sends wait for a fetch as when
 *   none is held, and fail `auth` when none comes.
 * - A receiver's 401 drops the token it refused (`refused`), so the next send fetches one: a refused
 *   token is never the fallback.
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
/**
 * After a refresh failed, the held token (while valid) is used this long before the token endpoint is
 * asked again: one request per back-off from each container, not one per delivery, and a send is not
 * kept waiting on a token endpoint known to fail.
 */
export const REFRESH_BACKOFF_MS = 5_000;
/**
 * A fetch is given this many attempt timeouts, whoever started it: a send that finds it under way as
 * the one that started it gives up still has its whole attempt for it, and a token endpoint slower
 * than one attempt still yields a token, held for the sends that follow.
 */
export const FETCH_TIMEOUT_ATTEMPTS = 2;
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
  /** The sender's attempt timeout: a fetch is bounded by FETCH_TIMEOUT_ATTEMPTS of them. */
  readonly attemptTimeoutMs: number;
  /** Epoch ms: when a token expires. */
  readonly now: () => number;
}

interface Held {
  readonly token: string;
  /** Epoch ms from which a fresh token is fetched. */
  readonly refreshAtMs: number;
  /** Epoch ms when it expires: until then it is used when a refresh fails. */
  readonly expiresAtMs: number;
}

export class TokenSource {
  readonly #options: TokenSourceOptions;
  readonly #url: URL;
  readonly #authorization: string;
  readonly #body: string;
  #held: Held | undefined;
  #fetching: Promise<string> | undefined;
  /** Epoch ms before which a valid held token is used without a refresh (REFRESH_BACKOFF_MS after one failed). */
  #backoffUntilMs = 0;

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
   * The token to send now: the one held while it is fresh (or valid, in a back-off), else the one
   * being fetched (one fetch at a time, started when none is under way), falling back to the one
   * held while it is valid.
   * @param deadlineMs `performance.now()` time by which this send needs it
   * @throws TokenError
   */
  token(deadlineMs: number): Promise<string> {
    const nowMs = this.#options.now();
    const held = this.#valid(nowMs);
    if (held !== undefined && (nowMs < held.refreshAtMs || nowMs < this.#backoffUntilMs)) return Promise.resolve(held.token);
    this.#fetching ??= this.#fetch().finally(() => {
      this.#fetching = undefined;
    });
    return held === undefined ? byDeadline(this.#fetching, deadlineMs) : this.#refreshed(this.#fetching, deadlineMs);
  }

  /** The refresh's token, or the held one if still valid once the refresh failed or half the send's time is gone. */
  async #refreshed(fetching: Promise<string>, deadlineMs: number): Promise<string> {
    const startMs = performance.now();
    try {
      return await byDeadline(fetching, startMs + Math.max(0, deadlineMs - startMs) / 2);
    } catch {
      // Read again: a 401 may have dropped it meanwhile, or it may have expired while the refresh ran.
      const held = this.#valid(this.#options.now());
      if (held !== undefined) return held.token;
      return byDeadline(fetching, deadlineMs);
    }
  }

  #valid(nowMs: number): Held | undefined {
    const held = this.#held;
    return held !== undefined && nowMs < held.expiresAtMs ? held : undefined;
  }

  /** The receiver refused `token` (a 401): dropped, unless a newer one already replaced it. */
  refused(token: string): void {
    if (this.#held?.token === token) this.#held = undefined;
  }

  async #fetch(): Promise<string> {
    const askedMs = this.#options.now();
    try {
      const { status, text } = await this.#post(this.#options.attemptTimeoutMs * FETCH_TIMEOUT_ATTEMPTS);
      if (status < 200 || status >= 300) throw new TokenError(`the token endpoint answered ${status}`, status);
      const held = heldToken(text, status, askedMs);
      this.#held = held;
      return held.token;
    } catch (error) {
      this.#backoffUntilMs = this.#options.now() + REFRESH_BACKOFF_MS;
      throw error;
    }
  }

  #post(timeoutMs: number): Promise<{ status: number; text: string }> {
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
      const timer = setTimeout(() => fail('the token endpoint did not answer in time'), timeoutMs);
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
  return { token, refreshAtMs: askedMs + lifetimeMs - Math.min(MAX_REFRESH_MARGIN_MS, lifetimeMs / 2), expiresAtMs: askedMs + lifetimeMs };
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
