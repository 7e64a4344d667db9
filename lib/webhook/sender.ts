/** The port through which an attempt reaches the receiver. */
import type { AttemptOutcome } from '../outcome';

export interface WebhookRequest {
  /** The event ID: `idempotency-key` and `webhook-id` on every attempt and replay. */
  readonly eventId: string;
  /** The exact bytes to POST; the same on every attempt. */
  readonly body: string;
  /**
   * For an endpoint ordered per shipment (docs/contract.md §13): the event's position among its
   * shipment's events for that endpoint, sent as `webhook-sequence`; the same on every attempt.
   */
  readonly sequence?: number;
}

export interface AttemptResult {
  readonly outcome: AttemptOutcome;
  readonly durationMs: number;
}

export interface WebhookSender {
  /** Makes one attempt. Never throws: every failure is an outcome. */
  send(request: WebhookRequest): Promise<AttemptResult>;
}
