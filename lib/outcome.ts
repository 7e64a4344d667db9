/**
 * What one delivery attempt saw, and what it means (docs/contract.md §4). Classification happens here and
 * nowhere else; everything downstream switches on `kind`.
 *
 * - accepted:  a 2xx. Delivered, even if it arrives late.
 * - rejected:  the receiver refused the event for good (410, other 3xx/4xx). Dead.
 * - temporary: nothing was sent (refused, DNS, TLS, no token, the proxy's refusal), or the receiver
 *              asked for a retry (408, 425, 429, 5xx; a 401 where the sender fetches its token).
 *              Retry per policy.
 * - unknown:   the request was written but no answer came (timeout, reset). The receiver may
 *              have committed it: retry with the same event ID, never count it as failed.
 */
import { parseRetryAfter } from './policy';

export const OUTCOME_KINDS = ['accepted', 'rejected', 'temporary', 'unknown'] as const;
export type OutcomeKind = (typeof OUTCOME_KINDS)[number];

/**
 * Transport failures, named by whether the request could have reached the receiver. Two are before
 * the receiver's connection (docs/contract.md §18): `auth`, no token from the endpoint's token
 * endpoint (its status on the outcome when it answered), and `proxy`, the HTTP CONNECT proxy refused
 * the tunnel (its status when it answered) or could not be reached.
 */
export type NotSentCause = 'connection-refused' | 'dns' | 'tls' | 'connect-timeout' | 'blocked-address' | 'network' | 'auth' | 'proxy';
export type NoAnswerCause = 'timeout' | 'connection-reset';

export type AttemptOutcome =
  | { readonly kind: 'accepted'; readonly status: number }
  | { readonly kind: 'rejected'; readonly status: number; readonly responseStart: string }
  | {
      readonly kind: 'temporary';
      readonly status?: number;
      readonly cause?: NotSentCause;
      readonly retryAfterSeconds?: number;
    }
  | { readonly kind: 'unknown'; readonly cause: NoAnswerCause };

/**
 * Causes that say the receiver could not be reached or did not answer in time: the request timed
 * out or its connection was reset after it was written, or no connection could be made (refused,
 * its name did not resolve, the connect timed out, the network failed). Repeated, they pause the
 * endpoint like a 429 does (the circuit breaker, lib/endpoints/health-rules.ts): one that never answers
 * would otherwise hold every batch it is in for a whole attempt timeout. Not among them: a TLS
 * failure and an address the guard refused, which fail at once and are the endpoint's settings
 * to mend; no token (`auth`) and the proxy's refusal (`proxy`), which are another server's, not the
 * receiver's silence (a tunnel not opened in time is `connect-timeout`, which is); and every HTTP
 * answer.
 */
export const UNREACHABLE_CAUSES: ReadonlySet<NotSentCause | NoAnswerCause> = new Set([
  'timeout',
  'connection-reset',
  'connection-refused',
  'dns',
  'connect-timeout',
  'network',
]);

/** Whether the attempt found its receiver unreachable or silent (UNREACHABLE_CAUSES): no HTTP answer came. */
export function unreachable(outcome: AttemptOutcome): boolean {
  return (outcome.kind === 'unknown' || outcome.kind === 'temporary') && outcome.cause !== undefined && UNREACHABLE_CAUSES.has(outcome.cause);
}

/** Statuses that ask for a retry; every other non-2xx is a refusal. */
const RETRYABLE_STATUSES = new Set([408, 425, 429]);

/** Classifies an HTTP response. `responseStart` is the start of the body, already bounded. */
export function classifyResponse(
  status: number,
  retryAfterHeader: string | undefined,
  responseStart: string,
  nowMs: number,
): AttemptOutcome {
  if (status >= 200 && status < 300) return { kind: 'accepted', status };
  if (RETRYABLE_STATUSES.has(status) || status >= 500) {
    const retryAfterSeconds = parseRetryAfter(retryAfterHeader, nowMs);
    return retryAfterSeconds === undefined
      ? { kind: 'temporary', status }
      : { kind: 'temporary', status, retryAfterSeconds };
  }
  return { kind: 'rejected', status, responseStart };
}

/** One line for logs and the CLI: never the payload, at most the receiver's first bytes. */
export function describeOutcome(outcome: AttemptOutcome): string {
  switch (outcome.kind) {
    case 'accepted':
      return `accepted (${outcome.status})`;
    case 'rejected':
      return `rejected (${outcome.status})`;
    case 'temporary':
      // Both when the status is another server's: the token endpoint's (`auth 503`), the proxy's (`proxy 407`).
      if (outcome.cause !== undefined && outcome.status !== undefined) return `temporary (${outcome.cause} ${outcome.status})`;
      return `temporary (${outcome.status ?? outcome.cause ?? 'error'})`;
    case 'unknown':
      return `unknown (${outcome.cause})`;
  }
}
