/**
 * The delivery queue as the batch use case needs it (docs/contract.md §4): hold a message back for a while,
 * move one to the dead-letter path, and put one on the queue. `sqs-queue.ts` implements it on SQS.
 *
 * The queue decides only *when* work runs; every decision here follows one the ledger already
 * made durable, so a failed call never loses an event: the message simply comes back.
 */
import type { DeadLetterReason } from '../deliver';
import { MAX_WAIT_SECONDS } from '../policy';
import type { ControlValues } from './seal';
import { TRACELINK_ATTRIBUTE, type TraceCarrier } from '../tracing/carrier';

export interface DeadLetterInfo {
  readonly reason: DeadLetterReason;
  /** The event ID, when one could be read from the body. */
  readonly eventId?: string;
  /** The endpoint whose delivery died (absent for a message that was never routed: invalid, say). */
  readonly endpoint?: string;
  /**
   * At an endpoint ordered per shipment (docs/contract.md §13): `continued` when its death passed the
   * turn to the shipment's next event (`onDead: continue`), `held` when its shipment waits for it.
   */
  readonly ordering?: 'continued' | 'held';
}

/**
 * The message attribute that makes a message one endpoint's delivery (absent, or not sealed: a
 * producer's message, to route). Every attribute below that steers a message is obeyed only under
 * the message's seal (lib/queue/seal.ts CONTROL_ATTRIBUTES).
 */
export const ENDPOINT_ATTRIBUTE = 'endpoint';

/**
 * The message attribute (a Number, epoch ms) saying the delivery's request slot is reserved already
 * (lib/endpoints/rate-limit.ts): it may be sent at that time, not before, without reserving again.
 * Honoured on the message's first receive only: a message received again (held, retried, its
 * consumer gone) has had its slot, used or not.
 */
export const RESERVED_SLOT_ATTRIBUTE = 'notBefore';
/** Beside it (a Number): the limit, per second, the slot was reserved at; a lower limit since voids the slot. */
export const RESERVED_RATE_ATTRIBUTE = 'notBeforeRate';

/**
 * An endpoint message for an endpoint ordered per shipment (docs/contract.md §13) may say what its
 * admission found: its number among its shipment's events for the endpoint (a Number) and whether its
 * turn had come when it was sent (`"true"`). A turn once come stays until the event settles (the
 * head's `next` only grows, and only by its own settling), so such a delivery is sent without asking
 * the shipment's head again; one that says its number only asks to wait at that number. Set by
 * handoff on the messages it sends (fan-out, wake-up, put-back), and obeyed only under their seal
 * (lib/queue/seal.ts), like every attribute here that steers.
 */
export const SEQUENCE_ATTRIBUTE = 'sequence';
export const IN_TURN_ATTRIBUTE = 'inTurn';

/** What an ordered delivery's admission found (SEQUENCE_ATTRIBUTE, IN_TURN_ATTRIBUTE). */
export interface Admission {
  readonly sequence: number;
  readonly inTurn: boolean;
}

/** SQS's longest delay of a message sent. */
export const MAX_DELAY_SECONDS = 900;

/** One endpoint's delivery of an event, as a message of its own. */
export interface EndpointMessage {
  readonly body: string;
  readonly endpoint: string;
  /** Received no sooner than this (0–900, SQS's limit; clamped). */
  readonly delaySeconds?: number;
  /** Its reserved request slot, epoch ms (RESERVED_SLOT_ATTRIBUTE). */
  readonly notBefore?: number;
  /** The limit the slot was reserved at, per second (RESERVED_RATE_ATTRIBUTE); only with `notBefore`. */
  readonly reservedRate?: number;
  /** At an endpoint ordered per shipment: what its admission found (SEQUENCE_ATTRIBUTE). */
  readonly admission?: Admission;
  /** While tracing: the trace context it carries (`traceparent`, `tracestate`), its delivery's parent (docs/contract.md §19). */
  readonly trace?: TraceCarrier;
  /** While tracing: the `traceparent` of the trace it comes from, which its delivery's span links to (sealed). */
  readonly link?: string;
}

/** What `enqueue` may add to a body. */
export interface EnqueueOptions {
  /** One endpoint's delivery (absent: a producer's message, to route). */
  readonly endpoint?: string;
  /** Received no sooner than this (0–900, SQS's limit; clamped). */
  readonly delaySeconds?: number;
  /** Its reserved request slot, epoch ms (RESERVED_SLOT_ATTRIBUTE); only with `endpoint`. */
  readonly notBefore?: number;
  /** The limit the slot was reserved at, per second (RESERVED_RATE_ATTRIBUTE); only with `notBefore`. */
  readonly reservedRate?: number;
  /** At an endpoint ordered per shipment: what its admission found (SEQUENCE_ATTRIBUTE); only with `endpoint`. */
  readonly admission?: Admission;
  /** The trace context it carries, as EndpointMessage's. */
  readonly trace?: TraceCarrier;
  /** The trace it comes from (a replay's original), as EndpointMessage's: sealed. */
  readonly link?: string;
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
   * (0–900, SQS's limit; clamped); carrying its reserved slot when `notBefore` is given.
   */
  enqueue(body: string, options?: EnqueueOptions): Promise<void>;

  /**
   * Puts one message per endpoint delivery on the delivery queue, batched (SQS takes ten per
   * request), each with its own delay and reserved slot where given (a delivery put back by the
   * rate limit). Resolves only once every one is sent. @throws QueueUnavailableError otherwise
   * (some may have been sent: a second copy of one is harmless, the ledger's claim decides).
   */
  fanOut(messages: readonly EndpointMessage[]): Promise<void>;
}

/**
 * The message attribute (a Number) counting how many times recovery has sent a redriven message back
 * to the delivery queue (lib/recovery.ts); absent on every other message.
 */
export const RECOVERIES_ATTRIBUTE = 'recoveries';

/** A message SQS's redrive moved off the delivery queue, as recovery sees it (docs/contract.md §12). */
export interface RedrivenMessage {
  /** The event ID in its body, when one could be read (for logs: never the body). */
  readonly eventId?: string;
  /** The endpoint it is a delivery to; absent for a producer's message, to route. */
  readonly endpoint?: string;
  /** How many times recovery has sent it back before (RECOVERIES_ATTRIBUTE; 0 when absent). */
  readonly recoveries: number;
}

/**
 * The redrive queue: where the delivery queue's redrive policy moves a message received
 * `maxReceiveCount` times without being deleted (the consumer kept failing before it could decide).
 * Recovery drains it (lib/recovery.ts). `sendBack` and `giveUp` remove a message from it only once
 * it is sent on, so a failure leaves it there, to return after its visibility timeout.
 */
export interface RedriveQueue<M extends RedrivenMessage = RedrivenMessage> {
  /** Up to `max` (1–10) messages; none when the queue has none to give now. */
  receive(max: number): Promise<M[]>;
  /**
   * Each back on the delivery queue, body and attributes unchanged but for its `recoveries` (one
   * more) and a reserved request slot (dropped: the slot was its first receive's). @throws QueueUnavailableError
   */
  sendBack(messages: readonly M[]): Promise<void>;
  /** Each to the dead-letter queue, body and attributes unchanged, without a `reason`. @throws QueueUnavailableError */
  giveUp(messages: readonly M[]): Promise<void>;
}

/**
 * SQS counts a message's 12 h visibility limit from its receive, and the consumer sets the wait
 * up to one invocation (at most 15 min) later. A longer wait brings the message back a little
 * early; the ledger then answers "not due" with the rest of the wait.
 */
export const MAX_VISIBILITY_SECONDS = MAX_WAIT_SECONDS - 15 * 60;

/** Whole seconds a message may be delayed by when sent (0–900). */
export function clampDelaySeconds(seconds: number): number {
  if (!Number.isFinite(seconds)) return seconds > 0 ? MAX_DELAY_SECONDS : 0;
  return Math.min(Math.max(Math.ceil(seconds), 0), MAX_DELAY_SECONDS);
}

/**
 * The control values of a message handoff sends for one endpoint's delivery (lib/queue/seal.ts seals
 * them): its endpoint, and where given its reserved slot (whole epoch ms, rounded up: never earlier
 * than reserved) and the limit it was reserved at, and what an ordered delivery's admission found.
 */
export function controlOfMessage(message: Omit<EndpointMessage, 'body' | 'delaySeconds' | 'trace'>): ControlValues {
  const { endpoint, notBefore, reservedRate, admission, link } = message;
  const control: ControlValues = { [ENDPOINT_ATTRIBUTE]: endpoint };
  if (notBefore !== undefined) {
    control[RESERVED_SLOT_ATTRIBUTE] = String(Math.ceil(notBefore));
    if (reservedRate !== undefined) control[RESERVED_RATE_ATTRIBUTE] = String(reservedRate);
  }
  if (admission !== undefined) {
    control[SEQUENCE_ATTRIBUTE] = String(admission.sequence);
    if (admission.inTurn) control[IN_TURN_ATTRIBUTE] = 'true';
  }
  if (link !== undefined) control[TRACELINK_ATTRIBUTE] = link;
  return control;
}

/**
 * A sealed message's reserved slot (RESERVED_SLOT_ATTRIBUTE) and the limit it was reserved at, when
 * it carries one and this is its first receive; undefined otherwise.
 */
export function reservedSlotOf(control: ControlValues, receiveCount: number): { readonly slot: number; readonly perSecond?: number } | undefined {
  const raw = control[RESERVED_SLOT_ATTRIBUTE];
  if (raw === undefined || receiveCount > 1) return undefined;
  const slot = Number(raw);
  if (!Number.isFinite(slot) || slot <= 0) return undefined;
  const perSecond = Number(control[RESERVED_RATE_ATTRIBUTE]);
  return Number.isFinite(perSecond) && perSecond > 0 ? { slot, perSecond } : { slot };
}

/** What a sealed message says its admission found (SEQUENCE_ATTRIBUTE), when it says; undefined otherwise. */
export function admissionOf(control: ControlValues): Admission | undefined {
  const sequence = Number(control[SEQUENCE_ATTRIBUTE]);
  if (!Number.isSafeInteger(sequence) || sequence < 1) return undefined;
  return { sequence, inTurn: control[IN_TURN_ATTRIBUTE] === 'true' };
}

/** Whole seconds within what a received message's visibility timeout can still be set to. */
export function clampVisibilitySeconds(seconds: number): number {
  if (!Number.isFinite(seconds)) return seconds > 0 ? MAX_VISIBILITY_SECONDS : 0;
  return Math.min(Math.max(Math.ceil(seconds), 0), MAX_VISIBILITY_SECONDS);
}
