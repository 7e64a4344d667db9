/**
 * The retry policy as data (docs/contract.md §4), and the pure function that turns it into a wait.
 *
 * The queue does the waiting (a message's visibility timeout), so a wait can never exceed what
 * SQS allows for one message: 12 hours. The policy carries a version and is stored on each
 * ledger row, so an attempt or a replay always follows the schedule its record was created with.
 */
import { createHash } from 'node:crypto';

/** SQS's ceiling on a message's visibility timeout. */
export const MAX_WAIT_SECONDS = 12 * 60 * 60;

export interface RetryPolicy {
  readonly version: string;
  /** Attempts in all, the first one included. */
  readonly maxAttempts: number;
  /** Waits after the 1st, 2nd, … failed attempt. Past its end, the last wait repeats. */
  readonly waitsSeconds: readonly number[];
}

/** Builds a policy whose version is derived from its content, so equal schedules share one. */
export function retryPolicy(maxAttempts: number, waitsSeconds: readonly number[]): RetryPolicy {
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new RangeError(`maxAttempts must be a positive integer, got ${maxAttempts}`);
  }
  if (waitsSeconds.length === 0 || waitsSeconds.some((w) => !Number.isInteger(w) || w < 0 || w > MAX_WAIT_SECONDS)) {
    throw new RangeError(`waits must be whole seconds from 0 to ${MAX_WAIT_SECONDS}, got ${waitsSeconds.join(',')}`);
  }
  const content = `${maxAttempts}:${waitsSeconds.join(',')}`;
  const version = `p-${createHash('sha256').update(content).digest('hex').slice(0, 8)}`;
  return { version, maxAttempts, waitsSeconds: [...waitsSeconds] };
}

/** 6 attempts in all; waits of 30 s, 2 min, 10 min, 30 min, 2 h. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = retryPolicy(6, [30, 120, 600, 1800, 7200]);

/**
 * Seconds to wait after the `attemptsMade`-th attempt failed. A receiver's `Retry-After` may
 * lengthen the wait, never shorten it, and nothing goes past the queue's 12 h limit.
 */
export function nextWaitSeconds(
  policy: RetryPolicy,
  attemptsMade: number,
  retryAfterSeconds?: number,
): number {
  const index = Math.min(Math.max(attemptsMade, 1), policy.waitsSeconds.length) - 1;
  const scheduled = policy.waitsSeconds[index] ?? 0;
  return Math.min(Math.max(scheduled, retryAfterSeconds ?? 0), MAX_WAIT_SECONDS);
}

/** Whether another attempt is allowed after `attemptsMade` attempts. */
export function hasAttemptsLeft(policy: Pick<RetryPolicy, 'maxAttempts'>, attemptsMade: number): boolean {
  return attemptsMade < policy.maxAttempts;
}

/**
 * The three HTTP-date forms a recipient must accept (RFC 9110 §5.6.7): IMF-fixdate
 * `Sun, 06 Nov 1994 08:49:37 GMT`, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`, and asctime
 * `Sun Nov  6 08:49:37 1994`. Anything else is unreadable, not guessed at.
 */
const HTTP_DATE = new RegExp(
  [
    String.raw`^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$`,
    String.raw`^[A-Z][a-z]+day, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$`,
    String.raw`^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$`,
  ].join('|'),
);

/**
 * Reads a `Retry-After` header: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
 * Returns whole seconds from `nowMs`, or undefined when absent or unreadable.
 */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Math.min(Number(text), MAX_WAIT_SECONDS);
  if (!HTTP_DATE.test(text)) return undefined;
  // asctime carries no zone; HTTP dates are always GMT, whatever the machine's zone.
  const at = Date.parse(text.endsWith('GMT') ? text : `${text} GMT`);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, Math.ceil((at - nowMs) / 1000)), MAX_WAIT_SECONDS);
}
