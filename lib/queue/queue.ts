/**
 * The delivery queue as the batch use case needs it (docs/contract.md §4): hold a message back for a while,
 * move one to the dead-letter path, and put one on the queue. `sqs-queue.ts` implements it on SQS.
 *
 * The queue decides only *when* work runs; every decision here follows one the ledger already
 * made durable, so a failed call never loses an event: the message simply comes back.
 */
import type { DeadLetterReason } from '../deliver';
import { MAX_WAIT_SECONDS } from '../policy';

export interface DeadLetterInfo {
  readonly reason: DeadLetterReason;
  /** The event ID, when one could be read from the body. */
  readonly eventId?: string;
  /** The endpoint whose delivery died (absent for a message that was never routed: invalid, say). */
  readonly endpoint?: string;
}

/** The message attribute that makes a message one endpoint's delivery (absent: a producer's message, to route). */
export const ENDPOINT_ATTRIBUTE = 'endpoint';

/** One endpoint's delivery of an event, as a message of its own. */
export interface EndpointMessage {
  readonly body: string;
  readonly endpoint: string;
}

export interface DeliveryQueue {
  /**
   * Leaves a received message in flight for `seconds` (0..12 h, clamped) before it is received
   * again. Counts from now and is not remembered: the receive after that uses the queue default.
   */
  retryAfter(receiptHandle: string, seconds: number): Promise<void>;

  /** Sends the original body, unchanged, to the dead-letter queue with the reason attached. */
  deadLetter(body: string, info: DeadLetterInfo): Promise<void>;

  /**
   * Sends a body to the delivery queue (replay): for one endpoint's delivery when `endpoint` is
   * given, as a producer's message to route otherwise; received no sooner than `delaySeconds`
   * (0–900, SQS's limit; clamped).
   */
  enqueue(body: string, options?: { readonly endpoint?: string; readonly delaySeconds?: number }): Promise<void>;

  /**
   * Puts one message per endpoint delivery on the delivery queue, batched (SQS takes ten per
   * request). Resolves only once every one is sent. @throws QueueUnavailableError otherwise
   * (some may have been sent: a second copy of one is harmless, the ledger's claim decides).
   */
  fanOut(messages: readonly EndpointMessage[]): Promise<void>;
}

/** The queue could not carry out a call. `cause` keeps the underlying error. */
export class QueueUnavailableError extends Error {
  override readonly name = 'QueueUnavailableError';
  readonly code = 'queue-unavailable';
  constructor(
    readonly operation: 'retry-after' | 'dead-letter' | 'enqueue' | 'fan-out',
    options?: ErrorOptions,
  ) {
    super(`queue ${operation} failed`, options);
  }
}

/**
 * SQS counts a message's 12 h visibility limit from its receive, and the consumer sets the wait
 * up to one invocation (at most 15 min) later. A longer wait brings the message back a little
 * early; the ledger then answers "not due" with the rest of the wait.
 */
export const MAX_VISIBILITY_SECONDS = MAX_WAIT_SECONDS - 15 * 60;

/** Whole seconds within what a received message's visibility timeout can still be set to. */
export function clampVisibilitySeconds(seconds: number): number {
  if (!Number.isFinite(seconds)) return seconds > 0 ? MAX_VISIBILITY_SECONDS : 0;
  return Math.min(Math.max(Math.ceil(seconds), 0), MAX_VISIBILITY_SECONDS);
}
