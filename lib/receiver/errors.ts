/**
 * The receiver kit's errors. Each has a stable `code`; verification failures also name the HTTP
 * status the receiver answers with, so the handler maps them without inspecting messages.
 */
export abstract class ReceiverError extends Error {
  abstract readonly code: string;
}

export type VerificationProblem =
  /** `webhook-id`, `webhook-timestamp` or `webhook-signature` is absent or empty. */
  | 'missing-header'
  /** `webhook-timestamp` is not whole Unix seconds. */
  | 'bad-timestamp'
  /** The timestamp is further from now than the tolerance, in either direction. */
  | 'stale-timestamp'
  /** No `v1` signature matches a secret, nor `v1a` signature a public key. */
  | 'bad-signature';

/** The request is not a genuine, fresh webhook: answered 401, whichever the problem. */
export class WebhookVerificationError extends ReceiverError {
  override readonly name = 'WebhookVerificationError';
  readonly code = 'webhook-verification';
  readonly status = 401;
  constructor(
    readonly problem: VerificationProblem,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A receiver option is unusable; thrown when the receiver or store is created. */
export class ReceiverConfigError extends ReceiverError {
  override readonly name = 'ReceiverConfigError';
  readonly code = 'receiver-config';
  constructor(
    readonly option: string,
    problem: string,
  ) {
    super(`${option} ${problem}`);
  }
}

/** The receiver forgets webhook IDs sooner than the sender may still retry them. */
export class ReceiverRetentionError extends ReceiverError {
  override readonly name = 'ReceiverRetentionError';
  readonly code = 'receiver-retention';
  constructor(
    readonly retryWindowSeconds: number,
    readonly receiverRetentionSeconds: number,
  ) {
    super(
      `receiverRetentionSeconds ${receiverRetentionSeconds} must exceed the retry policy's window of ` +
        `${retryWindowSeconds} s: a retry after the receiver forgot the webhook ID would apply the event again`,
    );
  }
}
