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
  /**
   * The W3C trace context of this attempt's span (docs/contract.md §19), sent as `traceparent` and
   * `tracestate` so the receiver's own tracing continues the trace; unset while tracing is off.
   */
  readonly traceparent?: string;
  readonly tracestate?: string;
}

/**
 * An endpoint's OAuth2 client-credentials grant (docs/contract.md §18 `auth`), its secret read: the
 * sender fetches a token from `tokenUrl` and sends it as `Authorization: Bearer …`.
 */
export interface ClientCredentials {
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scope?: string;
  readonly audience?: string;
}

/**
 * An endpoint's client certificate (docs/contract.md §18 `tls`), PEM, its key read: presented on the
 * TLS handshake to a receiver that asks for one; `ca` trusted for this endpoint only.
 */
export interface ClientTls {
  readonly clientCertificate: string;
  readonly privateKey: string;
  readonly ca?: string;
}

export interface AttemptResult {
  readonly outcome: AttemptOutcome;
  readonly durationMs: number;
}

export interface WebhookSender {
  /** Makes one attempt. Never throws: every failure is an outcome. */
  send(request: WebhookRequest): Promise<AttemptResult>;
}
