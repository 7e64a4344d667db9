/** The port through which an attempt reaches the receiver. */
import type { AttemptOutcome } from '../outcome';

export interface WebhookRequest {
  /** The event ID: `idempotency-key` and `webhook-id` on every attempt and replay. */
  readonly eventId: string;
  /** The exact bytes to POST; the same on every attempt. */
  readonly body: string;
}

export interface AttemptResult {
  readonly outcome: AttemptOutcome;
  readonly durationMs: number;
}

export interface WebhookSender {
  /** Makes one attempt. Never throws: every failure is an outcome. */
  send(request: WebhookRequest): Promise<AttemptResult>;
}
