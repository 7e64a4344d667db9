/**
 * The errors handoff's library throws, each with a stable `code` to decide on (the message is for
 * people, and never holds an event's content or a secret): one place for the command's exit
 * statuses to be chosen from. The ledger's own are in `ledger/errors.ts`; the receiver kit's, a
 * package entry of their own, in `receiver/errors.ts`.
 */
import type { Subscription } from './endpoints/registry';
import type { DeliveryRecord } from './ledger/delivery-record';
import type { ShipmentHead } from './ledger/shipment-heads';
import type { AuditTextField } from './replay';
import { quoted } from './terminal';

// The event and the settings.

/** A message that is not a valid event. `eventId` is set when an ID could still be read. */
export class InvalidEventError extends Error {
  override readonly name = 'InvalidEventError';
  readonly code = 'invalid';
  constructor(
    message: string,
    readonly field: string | undefined,
    readonly eventId: string | undefined,
  ) {
    super(message);
  }
}

/** A setting that cannot be used. Its message names the variable (and any other setting it conflicts with). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'invalid-setting';
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
  }
}

// Endpoints: their fields, the registry, their rate limit, secrets and addresses.

/**
 * An endpoint setting that cannot be used; the message names the endpoint and the field, and
 * quotes what was given inert (lib/terminal.ts), whatever file or option it came from.
 */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';
  readonly code = 'invalid-endpoint';
  constructor(
    readonly endpoint: string,
    readonly field: string,
    problem: string,
  ) {
    super(`endpoint ${quoted(endpoint)}: ${field} ${problem}`);
  }
}

export class EndpointNotFoundError extends Error {
  override readonly name = 'EndpointNotFoundError';
  readonly code = 'endpoint-not-found';
  constructor(
    readonly endpoint: string,
    options?: ErrorOptions,
  ) {
    super(`no endpoint named ${quoted(endpoint)}`, options);
  }
}

export class EndpointConflictError extends Error {
  override readonly name = 'EndpointConflictError';
  readonly code = 'endpoint-conflict';
  constructor(
    readonly endpoint: string,
    problem: string,
    options?: ErrorOptions,
  ) {
    super(`endpoint ${quoted(endpoint)} ${problem}`, options);
  }
}

/**
 * The registry's table could not be used: unreachable, throttled, missing, or holding an item this
 * code cannot read (`registry-item-invalid`: written by hand, or by a newer version). The message
 * names the table, the operation and the endpoint, never a secret.
 */
export class EndpointRegistryError extends Error {
  override readonly name = 'EndpointRegistryError';
  constructor(
    readonly code: 'registry-unavailable' | 'registry-item-invalid',
    message: string,
    options?: ErrorOptions & {
      /** `registry-item-invalid`: the item's key, the endpoint's name. */
      readonly endpoint?: string;
      /**
       * `registry-item-invalid`: what the item subscribes to, when its `eventTypes` and `match` can be
       * read (routing needs nothing else to know which events would go to it). Unset: unknown.
       */
      readonly subscription?: Subscription;
    },
  ) {
    super(message, options);
    this.endpoint = options?.endpoint;
    this.subscription = options?.subscription;
  }

  readonly endpoint: string | undefined;
  readonly subscription: Subscription | undefined;
}

/**
 * The schedule could not be advanced: its store is unavailable (`rate-limit-unavailable`), or
 * other consumers kept changing it for every round allowed (`rate-limit-contention`). Nothing was
 * reserved; the caller holds the deliveries (fails closed): a request sent without a slot could
 * exceed the limit.
 */
export class RateLimitError extends Error {
  override readonly name = 'RateLimitError';
  constructor(
    readonly code: 'rate-limit-unavailable' | 'rate-limit-contention',
    readonly endpoint: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A secret that cannot be used now: its read failed (outage, throttle, access denied, deleted), or its value cannot sign. */
export class SecretUnavailableError extends Error {
  override readonly name = 'SecretUnavailableError';
  constructor(
    readonly code: 'secret-unreadable' | 'secret-invalid' | 'secret-expired',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A secret that could not be encrypted (the key refused, none given): nothing is written. Names the endpoint, never the secret. */
export class SecretEncryptionError extends Error {
  override readonly name = 'SecretEncryptionError';
  readonly code = 'secret-unencryptable';
}

/** `wrong-length` and `key-mismatch` are an ed25519 key's (`whsk_`, `whpk_`): not 32 or 64 bytes; a pair whose halves disagree. */
export type SigningSecretProblem = 'empty' | 'not-base64' | 'too-short' | 'wrong-length' | 'key-mismatch';

/** A secret that cannot sign. Decide on `code`; the message never contains the secret. */
export class SigningSecretError extends Error {
  override readonly name = 'SigningSecretError';
  constructor(
    readonly code: SigningSecretProblem,
    message: string,
  ) {
    super(message);
  }
}

export type EndpointRefusedCode = 'invalid-url' | 'insecure-scheme' | 'blocked-address';

/** An endpoint the guard will not let the sender reach. Decide on `code`, not the message. */
export class EndpointRefusedError extends Error {
  override readonly name = 'EndpointRefusedError';
  constructor(
    readonly code: EndpointRefusedCode,
    message: string,
    /** The refused address, for `blocked-address`. */
    readonly address?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

// The queue.

/** The queue could not carry out a call. `cause` keeps the underlying error. */
export class QueueUnavailableError extends Error {
  override readonly name = 'QueueUnavailableError';
  readonly code = 'queue-unavailable';
  constructor(
    readonly operation: 'retry-after' | 'dead-letter' | 'enqueue' | 'fan-out' | 'redrive-receive' | 'redrive-send',
    options?: ErrorOptions,
  ) {
    super(`queue ${operation} failed`, options);
  }
}

/** A key that cannot seal: too short, or not base64. */
export class SealKeyError extends Error {
  override readonly name = 'SealKeyError';
  readonly code = 'seal-key';
}

// An operator's replay and release.

/** An operator name, reason or caller that an audit entry cannot keep. Its message names the field. */
export class ReplayInputError extends Error {
  override readonly name = 'ReplayInputError';
  readonly code = 'invalid-replay-input';
  constructor(
    readonly field: AuditTextField,
    problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}

/** The ledger recorded the replay, but the event could not be put on the queue. */
export class ReplayEnqueueError extends Error {
  override readonly name = 'ReplayEnqueueError';
  readonly code = 'replay-enqueue-failed';
  constructor(
    readonly record: DeliveryRecord,
    options?: ErrorOptions,
  ) {
    super(
      `event ${record.eventId} is pending again (replay ${record.replays} recorded) but could not be enqueued`,
      options,
    );
  }
}

/** An event has deliveries, none of them dead with an event to send. */
export class NothingToReplayError extends Error {
  override readonly name = 'NothingToReplayError';
  readonly code = 'nothing-to-replay';
  constructor(
    readonly eventId: string,
    readonly deliveries: readonly DeliveryRecord[],
  ) {
    const states = deliveries.map((d) => `${d.endpoint}: ${d.state === 'dead' && d.deadReason ? `dead (${d.deadReason})` : d.state}`);
    super(
      deliveries.length === 0
        ? `no delivery record for event ${eventId}`
        : `event ${eventId} has no dead delivery with an event to replay (${states.join(', ')})`,
    );
  }
}

/**
 * Why nothing is released, the delivery being dead: its endpoint holds no shipments, it has no
 * sequence, or its shipment is not waiting on it (its turn has not come, or was passed on).
 */
export type NothingToReleaseReason = 'not-ordered' | 'not-sequenced' | 'not-holding' | 'released';

export class NothingToReleaseError extends Error {
  override readonly name = 'NothingToReleaseError';
  readonly code = 'nothing-to-release';
  constructor(
    readonly reason: NothingToReleaseReason,
    readonly eventId: string,
    readonly endpoint: string,
    message: string,
    /** The shipment's head as found (`not-holding`, `released`). */
    readonly head?: Pick<ShipmentHead, 'next' | 'assigned'>,
  ) {
    super(message);
  }
}
