/**
 * The use case: take one queue message through admit, claim, send and record, and answer what
 * the queue must do with it (SPEC §1, §4).
 */
import type { AttemptOutcome } from './outcome';
import type { Ledger } from './ledger/ledger';
import type { RetryPolicy } from './policy';
import type { WebhookSender } from './webhook/sender';

/** Dead-letter reasons, as the `reason` message attribute on the dead-letter queue. */
export type DeadLetterReason = 'rejected' | 'exhausted' | 'invalid' | 'identity-conflict';

/** What the queue must do with the message. */
export type QueueDecision =
  /** Delete it: the outcome is durable (delivered, or a duplicate of settled work). */
  | { readonly action: 'ack'; readonly eventId: string; readonly why: 'delivered' | 'duplicate' }
  /** Leave it in flight for `afterSeconds` (its new visibility), then try again. */
  | {
      readonly action: 'retry';
      readonly eventId: string;
      readonly afterSeconds: number;
      readonly why: 'temporary' | 'unknown' | 'in-flight' | 'not-due';
    }
  /** Send the original body to the dead-letter queue with this reason, then delete it. */
  | {
      readonly action: 'dead-letter';
      readonly eventId: string | undefined;
      readonly reason: DeadLetterReason;
      readonly detail: string;
    };

/** What an attempt made during this delivery saw, for logs and metrics. */
export interface AttemptReport {
  readonly number: number;
  readonly outcome: AttemptOutcome;
  readonly durationMs: number;
  /** Ms from the event's first admission to this attempt's end (delivery latency when accepted). */
  readonly sinceCreatedMs: number;
}

export interface DeliveryResult {
  readonly decision: QueueDecision;
  /** Present when this delivery sent a request. */
  readonly attempt?: AttemptReport;
}

export interface DeliverDeps {
  readonly ledger: Ledger;
  readonly sender: WebhookSender;
  /** Epoch ms. */
  readonly now: () => number;
  /** Who claims: unique per worker (process or invocation). */
  readonly owner: string;
  readonly endpoint?: string;
  readonly policy: RetryPolicy;
  readonly payloadLimitBytes: number;
  readonly leaseMs: number;
  readonly retentionSeconds: number;
}

export interface QueueMessage {
  readonly body: string;
}

export declare function deliver(message: QueueMessage, deps: DeliverDeps): Promise<DeliveryResult>;
