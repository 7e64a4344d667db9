/**
 * The idempotency store: one record per `webhook-id`, created by exactly one request (the
 * uniqueness constraint), holding the first successful response so every repeat gets it back
 * without the business action running again.
 *
 * A record's life:
 *   (none) --begin--> running --complete(2xx)--> done --retention passes--> (none)
 *                       |  \--release (the action failed or answered non-2xx: nothing applied)--> (none)
 *                       \--lease passes (the receiver died mid-action)--> may be begun again
 */

/** What a repeat is answered with: the first successful response, byte for byte. */
export interface StoredResponse {
  readonly status: number;
  readonly body: string;
  readonly contentType?: string;
}

export type BeginResult =
  /** This request holds the record: run the action, then complete or release with `token`. */
  | { readonly kind: 'started'; readonly token: string }
  /** Done before: answer with the stored response. */
  | { readonly kind: 'completed'; readonly response: StoredResponse }
  /** Another request is running the action now. */
  | { readonly kind: 'in-progress' }
  /** The webhook ID was first seen with another body: not the same event. */
  | { readonly kind: 'body-mismatch' };

export interface IdempotencyStore {
  /** How long a completed record is kept: the window in which a repeat is recognised. */
  readonly retentionSeconds: number;
  /** Creates the record unless one lives. Atomic: of concurrent callers, one starts. */
  begin(webhookId: string, bodyHash: string, nowMs: number): Promise<BeginResult>;
  /** Keeps `response` for repeats. A holder whose lease was taken over changes nothing. */
  complete(webhookId: string, token: string, response: StoredResponse, nowMs: number): Promise<void>;
  /** Forgets a started record (nothing was applied), so the next request runs the action. */
  release(webhookId: string, token: string): Promise<void>;
}

export interface StoreOptions {
  /**
   * Seconds a completed record is kept. Must exceed the sender's retry window (see
   * checkReceiverRetention). Default 7 days.
   */
  readonly retentionSeconds?: number;
  /**
   * Seconds a started record blocks repeats (answered 425) before another request may run the
   * action: longer than the action can take, or a slow action would run twice. Default 300.
   */
  readonly leaseSeconds?: number;
}

/** Covers the default retry policy's window even with every wait stretched to 12 h by Retry-After. */
export const DEFAULT_RETENTION_SECONDS = 7 * 24 * 60 * 60;
export const DEFAULT_LEASE_SECONDS = 5 * 60;
