/**
 * What the client throws. An answer other than 2xx is a `HandoffApiError` read from the API's
 * RFC 9457 problem document (or from API Gateway's own `{message}` answers: a throttle, a refused
 * signature); a request that got no answer is a `HandoffConnectionError` wrapping its cause; a
 * client that cannot be built as asked is a `HandoffClientConfigError`. No message carries the
 * caller's token, a signature or a secret: they are built from the status and what the API said.
 */

/** One bad field of a refused request, as the API names it (`url`, `events.3.id`, `query.limit`). */
export interface ApiFieldError {
  readonly path: string;
  readonly message: string;
}

/** The problem document as read (every field the API may leave out is optional). */
export interface ProblemDocument {
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  readonly instance?: string;
  readonly errors?: readonly ApiFieldError[];
}

/** The API answered, but not with success. */
export class HandoffApiError extends Error {
  override readonly name = 'HandoffApiError';
  /** The HTTP status of the answer. */
  readonly status: number;
  /**
   * The problem's stable code: the last segment of its `type` (`invalid-request`,
   * `endpoint-not-found`, `idempotency-key-reused`…); for an answer that is not a problem document,
   * one named after the status (`throttled`, `forbidden`, `http-502`…). Decide by this, not by the message.
   */
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  /** Each bad field of invalid input; empty otherwise. */
  readonly errors: readonly ApiFieldError[];
  /** The request's ID (the problem's `instance`, or API Gateway's request ID header): quote it when asking about a failure. */
  readonly requestId: string | undefined;
  /** On a 429 or 503 that said so: how long to wait before repeating, in seconds. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: {
    status: number;
    code: string;
    title: string;
    detail: string;
    errors?: readonly ApiFieldError[];
    requestId?: string | undefined;
    retryAfterSeconds?: number | undefined;
  }) {
    const errors = init.errors ?? [];
    const fields = errors.length === 0 ? '' : ` (${errors.map((e) => `${e.path}: ${e.message}`).join('; ')})`;
    // Inert text: the detail and paths are the server's, and the message may reach a terminal.
    super(inert(`${init.status} ${init.code}: ${init.detail}${fields}`));
    this.status = init.status;
    this.code = init.code;
    this.title = init.title;
    this.detail = init.detail;
    this.errors = errors;
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** The request got no answer: the API could not be reached, or the connection failed on the way. */
export class HandoffConnectionError extends Error {
  override readonly name = 'HandoffConnectionError';
  readonly code = 'unreachable';
  constructor(
    /** The API's origin (scheme, host, port): never the path, query or headers. */
    readonly origin: string,
    cause: unknown,
  ) {
    super(`could not reach the handoff API at ${origin}: ${cause instanceof Error ? inert(cause.message) : 'the request failed'}`, { cause });
  }
}

/** The client cannot be built, or cannot sign, as its options ask. */
export class HandoffClientConfigError extends Error {
  override readonly name = 'HandoffClientConfigError';
  constructor(
    /** `invalid-url`, `no-region`, `invalid-credentials`. */
    readonly code: 'invalid-url' | 'no-region' | 'invalid-credentials',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The text without control, format (bidi, zero-width) or separator characters, each shown as a
 * `\u` escape: what a server said can then be printed without steering a terminal.
 */
export function inert(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}
