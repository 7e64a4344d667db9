/**
 * Numbers that follow from the settings, shared by the stack, the sandbox and the handler so all
 * behave alike: the queue's and the function's timeouts, and how long a delivery can live.
 */
import { MAX_WAIT_SECONDS } from './policy';
import type { Settings } from './config-settings';

/**
 * How long SQS keeps a message: the stack's delivery and dead-letter queues and the sandbox's all
 * keep messages this long (SQS's maximum).
 */
export const QUEUE_RETENTION_SECONDS = 14 * 24 * 60 * 60;

/** A ledger row outlives the longest life of its delivery by at least this much. */
export const RETENTION_MARGIN_SECONDS = 24 * 60 * 60;
export const DAY_SECONDS = 24 * 60 * 60;

/**
 * The longest a delivery can live from its row's last write, in seconds:
 * - every wait at its cap, since a receiver's `Retry-After` may lengthen any wait up to the 12 h a
 *   message can stay invisible (the ledger's due time is then up to 12 h away), one wait after
 *   each attempt but the last;
 * - every attempt at the queue's visibility timeout: a worker that dies mid-attempt leaves its
 *   message invisible that long (it covers the attempt timeout too);
 * - the queue's message retention: a copy of the message (SQS delivers at least once, producers
 *   re-send) can arrive as long as the queue keeps it.
 * A replay writes the row, so the same bound runs again from the replay.
 */
export function longestDeliverySeconds(settings: Pick<Settings, 'retryPolicy' | 'attemptTimeoutMs'>): number {
  const attempts = settings.retryPolicy.maxAttempts;
  const { visibilityTimeoutSeconds } = visibilityOf(settings.attemptTimeoutMs);
  return (attempts - 1) * MAX_WAIT_SECONDS + attempts * visibilityTimeoutSeconds + QUEUE_RETENTION_SECONDS;
}

/** The shortest `retentionDays` the other settings allow: the longest delivery, a margin, rounded up. */
export function minimumRetentionDays(settings: Pick<Settings, 'retryPolicy' | 'attemptTimeoutMs'>): number {
  return Math.ceil((longestDeliverySeconds(settings) + RETENTION_MARGIN_SECONDS) / DAY_SECONDS);
}

/**
 * The timings the stack and the sandbox derive alike:
 * - A worker may hold a claim for as long as its invocation can run.
 * - The queue's visibility timeout is 6x the function timeout (AWS's guidance for SQS sources),
 *   so a message never reappears while a live invocation still works on it.
 * - The redrive count exceeds the attempt budget: the ledger decides exhaustion and dead-letters
 *   with a reason; SQS's own redrive is only a backstop for a consumer that keeps failing.
 */
export function derivedTimings(settings: Settings) {
  const { functionTimeoutSeconds, visibilityTimeoutSeconds } = visibilityOf(settings.attemptTimeoutMs);
  return {
    functionTimeoutSeconds,
    leaseMs: functionTimeoutSeconds * 1000,
    visibilityTimeoutSeconds,
    maxReceiveCount: settings.retryPolicy.maxAttempts * 2 + 5,
    retentionSeconds: settings.retentionDays * DAY_SECONDS,
  } as const;
}

function visibilityOf(attemptTimeoutMs: number) {
  const functionTimeoutSeconds = Math.ceil(attemptTimeoutMs / 1000) + 20;
  return { functionTimeoutSeconds, visibilityTimeoutSeconds: Math.min(functionTimeoutSeconds * 6, MAX_WAIT_SECONDS) };
}
