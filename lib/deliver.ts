/**
 * The use case: take one queue message through admit, claim, send and record, and answer what
 * the queue must do with it (docs/contract.md §1, §4).
 */
import type { OnDead } from './endpoints/endpoint';
import { parseEvent, type ParsedEvent } from './event';
import { type InvalidEventError } from './errors';
import { ClaimRefusedError, LeaseLostError } from './ledger/errors';
import { claimRefusal, type ClaimRefusal } from './ledger/guards';
import {
  DEFAULT_ENDPOINT,
  type AttemptNext,
  type ClaimedRecord,
  type DeliveryKey,
  type DeliveryRecord,
  type Ledger,
} from './ledger/ledger';
import { describeOutcome, type AttemptOutcome } from './outcome';
import { hasAttemptsLeft, nextWaitSeconds, type RetryPolicy } from './policy';
import { deliveryStartedAt } from './stats';
import type { ActiveSpan } from './tracing/tracing';
import type { WebhookSender } from './webhook/sender';

/** Dead-letter reasons, as the `reason` message attribute on the dead-letter queue. */
export type DeadLetterReason = 'rejected' | 'exhausted' | 'invalid' | 'identity-conflict';

/** What the queue must do with the message. */
export type QueueDecision =
  /**
   * Delete it: the outcome is durable (delivered, or a duplicate of settled work), or the delivery
   * is parked for its disabled endpoint, to be released when it is enabled (docs/contract.md §12).
   */
  | { readonly action: 'ack'; readonly eventId: string; readonly why: 'delivered' | 'duplicate' | 'parked' }
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
  /** Ms from the start of this delivery (admission or last replay) to this attempt's end: the latency when accepted. */
  readonly sinceStartMs: number;
}

export interface DeliveryResult {
  readonly decision: QueueDecision;
  /** Present when this delivery sent a request. */
  readonly attempt?: AttemptReport;
  /** The row's shipment sequence, when it has one (numbered at an endpoint ordered per shipment). */
  readonly sequence?: number;
  /** Beside it, the shipment whose head gave it (absent on rows numbered before rows kept it). */
  readonly shipmentId?: string;
}

/** A decision about a row, with the row's shipment sequence (and its shipment) if it has one. */
function about(row: Pick<DeliveryRecord, 'sequence' | 'shipmentId'>, decision: QueueDecision, attempt?: AttemptReport): DeliveryResult {
  return {
    decision,
    ...(attempt ? { attempt } : {}),
    ...(row.sequence !== undefined ? { sequence: row.sequence } : {}),
    ...(row.shipmentId !== undefined ? { shipmentId: row.shipmentId } : {}),
  };
}

export interface DeliverDeps {
  readonly ledger: Ledger;
  readonly sender: WebhookSender;
  /** Epoch ms. */
  readonly now: () => number;
  /** Who claims, for operators and crash tests: the ledger draws each claim's own token. */
  readonly owner: string;
  readonly endpoint?: string;
  /** Its number among its shipment's events, at an endpoint ordered per shipment (docs/contract.md §13). */
  readonly sequence?: number;
  /** At such an endpoint: whether a death passes its shipment's turn on (`continue`) or holds it. */
  readonly onDead?: OnDead;
  readonly policy: RetryPolicy;
  readonly payloadLimitBytes: number;
  readonly leaseMs: number;
  readonly retentionSeconds: number;
  /**
   * Called at each boundary where a crash matters. Production wiring leaves it unset; the
   * fault-injection tests set it (through an environment-gated hook) to kill the process there.
   */
  readonly checkpoint?: (point: CrashPoint) => void;
  /**
   * The delivery's span while tracing (docs/contract.md §19): claim, send and record are its events,
   * the attempt its attributes, and the request carries its context. Unset while tracing is off.
   */
  readonly span?: Pick<ActiveSpan, 'carrier' | 'event' | 'set'>;
}

/**
 * The boundaries between durable steps, in order; `after-fan-out` is routing's (lib/consumer/plan.ts): an
 * event's endpoint messages are sent and its producer message is not yet acknowledged.
 */
export const CRASH_POINTS = ['before-send', 'after-send', 'after-record', 'after-fan-out'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export interface QueueMessage {
  readonly body: string;
  /** The body already parsed (routing did), so it is not parsed twice. */
  readonly parsed?: ParsedEvent;
}

/**
 * Delivers one queue message. Throws only when the ledger is unavailable or the record it wrote
 * went missing (the message then returns to the queue untouched); every other failure is a decision.
 *
 * The order is the design:
 * 1. Validate. Bad input is dead-lettered with its reason and never reaches the receiver.
 * 2. Claim (one conditional write): admits a new event or takes the lease on a pending one,
 *    and counts the attempt *before* anything is sent, so a worker that dies mid-send still
 *    spends budget and a crash loop cannot retry forever.
 * 3. Send, with the stored body and the event ID as the idempotency key.
 * 4. Record the outcome. Only once it is durable does the queue hear what to do with the
 *    message, so a crash anywhere before this returns the message and the ledger decides again.
 */
export async function deliver(message: QueueMessage, deps: DeliverDeps): Promise<DeliveryResult> {
  let event = message.parsed;
  if (event === undefined) {
    const parsed = parseEvent(message.body, deps.payloadLimitBytes);
    if (!parsed.ok) return { decision: await deadLetterInvalid(parsed.error, deps) };
    event = parsed.value;
  }
  const key: DeliveryKey = { eventId: event.event.id, endpoint: deps.endpoint ?? DEFAULT_ENDPOINT };

  const span = deps.span;
  let claimed: ClaimedRecord;
  try {
    claimed = await deps.ledger.claim({
      event,
      endpoint: key.endpoint,
      owner: deps.owner,
      nowMs: deps.now(),
      leaseMs: deps.leaseMs,
      policy: deps.policy,
      retentionSeconds: deps.retentionSeconds,
      ...(deps.sequence !== undefined ? { sequence: deps.sequence } : {}),
      // While tracing, this attempt's span: the row keeps its first traced attempt's, which a
      // replay, a release or a recovery send links to (docs/contract.md §19). Tracing off: nothing.
      ...(span !== undefined ? { traceparent: span.carrier().traceparent } : {}),
    });
  } catch (error) {
    if (error instanceof ClaimRefusedError) return about(error.record, await decideWithoutSending(error.record, error.reason, event, deps));
    throw error;
  }

  span?.event('claimed', { 'handoff.attempt': claimed.attempts });
  deps.checkpoint?.('before-send');
  const startedAt = deps.now();
  // The stored body, not this message's: every attempt and replay sends the same bytes. (None is
  // stored before a first failure: this message's is the canonical body then, as it was admitted.)
  const body = claimed.body ?? event.body;
  const sequence = claimed.sequence ?? deps.sequence;
  const { outcome, durationMs } = await deps.sender.send({
    eventId: key.eventId,
    body,
    ...(sequence !== undefined ? { sequence } : {}),
    // The receiver's own tracing continues from this attempt's span.
    ...span?.carrier(),
  });
  deps.checkpoint?.('after-send');
  if (span !== undefined) attemptOnSpan(span, claimed.attempts, outcome, durationMs);

  const endedAt = deps.now();
  const followed = whatFollows(outcome, claimed, endedAt);
  const { decision } = followed;
  // At an endpoint ordered per shipment whose onDead is `continue`, a death passes the shipment's
  // turn on: the same write says so on the row (`releasedAt`), as its dead letter does.
  const next: AttemptNext =
    followed.next.state === 'dead' && deps.sequence !== undefined && deps.onDead === 'continue' ? { ...followed.next, passesTurn: true } : followed.next;
  const attempt: AttemptReport = {
    number: claimed.attempts,
    outcome,
    durationMs,
    sinceStartMs: endedAt - deliveryStartedAt(claimed),
  };
  try {
    await deps.ledger.recordAttempt({
      ...key,
      claimToken: claimed.claimToken,
      body,
      attempt: {
        attempt: claimed.attempts,
        at: startedAt,
        outcome: outcome.kind,
        status: 'status' in outcome ? outcome.status : undefined,
        cause: 'cause' in outcome ? outcome.cause : undefined,
        durationMs,
      },
      outcome,
      next,
      nowMs: endedAt,
    });
  } catch (error) {
    // Our lease lapsed and another worker moved the row on: its state decides, not our outcome.
    if (error instanceof LeaseLostError) {
      const reason = claimRefusal(error.record, { contentHash: event.contentHash, nowMs: deps.now() });
      // Claimable again already (the other worker's lease lapsed too): look again shortly.
      if (reason === undefined) return about(error.record, { action: 'retry', eventId: error.record.eventId, afterSeconds: 1, why: 'in-flight' }, attempt);
      return about(error.record, await decideWithoutSending(error.record, reason, event, deps), attempt);
    }
    throw error;
  }
  deps.checkpoint?.('after-record');
  span?.event('recorded', { 'handoff.state': next.state });
  return about(claimed, decision, attempt);
}

/**
 * Parks one queue message for its disabled endpoint (docs/contract.md §12): the ledger keeps the
 * delivery pending with a parked marker, spending no attempt and sending nothing, and the message
 * is acknowledged; `endpoint enable` releases it. Where it may not be parked, the row decides as for
 * a refused claim: a duplicate of settled work, a conflict, or work another worker is sending now.
 * Throws only when the ledger is unavailable.
 */
export async function park(message: QueueMessage, deps: Omit<DeliverDeps, 'sender'>): Promise<DeliveryResult> {
  let event = message.parsed;
  if (event === undefined) {
    const parsed = parseEvent(message.body, deps.payloadLimitBytes);
    if (!parsed.ok) return { decision: await deadLetterInvalid(parsed.error, deps) };
    event = parsed.value;
  }
  try {
    const row = await deps.ledger.park({
      event,
      endpoint: deps.endpoint ?? DEFAULT_ENDPOINT,
      nowMs: deps.now(),
      policy: deps.policy,
      retentionSeconds: deps.retentionSeconds,
      ...(deps.sequence !== undefined ? { sequence: deps.sequence } : {}),
    });
    return { decision: { action: 'ack', eventId: row.eventId, why: 'parked' } };
  } catch (error) {
    if (error instanceof ClaimRefusedError) return { decision: await decideWithoutSending(error.record, error.reason, event, deps) };
    throw error;
  }
}

/** An attempt on its delivery's span: its number, outcome and status, and its `sent` event. */
function attemptOnSpan(span: NonNullable<DeliverDeps['span']>, number: number, outcome: AttemptOutcome, durationMs: number): void {
  const status = 'status' in outcome ? outcome.status : undefined;
  const cause = 'cause' in outcome ? outcome.cause : undefined;
  span.set({ 'handoff.attempt': number, 'handoff.outcome': outcome.kind, 'http.response.status_code': status, 'handoff.cause': cause });
  span.event('sent', { 'handoff.outcome': outcome.kind, 'http.response.status_code': status, 'handoff.duration_ms': durationMs });
}

/** From an attempt's outcome to the row's next state and the queue's action. Pure. */
export function whatFollows(
  outcome: AttemptOutcome,
  claimed: Pick<DeliveryRecord, 'eventId' | 'attempts' | 'policy'>,
  nowMs: number,
): { next: AttemptNext; decision: QueueDecision } {
  const eventId = claimed.eventId;
  switch (outcome.kind) {
    case 'accepted':
      return { next: { state: 'delivered' }, decision: { action: 'ack', eventId, why: 'delivered' } };
    case 'rejected': {
      const detail = `HTTP ${outcome.status}${outcome.responseStart ? `: ${outcome.responseStart.slice(0, 200)}` : ''}`;
      return {
        next: { state: 'dead', reason: 'rejected', detail },
        decision: { action: 'dead-letter', eventId, reason: 'rejected', detail },
      };
    }
    case 'temporary':
    case 'unknown': {
      if (!hasAttemptsLeft(claimed.policy, claimed.attempts)) {
        const detail = `${claimed.attempts} attempts; last: ${describeOutcome(outcome)}`;
        return {
          next: { state: 'dead', reason: 'exhausted', detail },
          decision: { action: 'dead-letter', eventId, reason: 'exhausted', detail },
        };
      }
      const retryAfter = outcome.kind === 'temporary' ? outcome.retryAfterSeconds : undefined;
      const afterSeconds = nextWaitSeconds(claimed.policy, claimed.attempts, retryAfter);
      return {
        next: { state: 'pending', nextAttemptAt: nowMs + afterSeconds * 1000 },
        decision: { action: 'retry', eventId, afterSeconds, why: outcome.kind },
      };
    }
  }
}

/**
 * Decides, from why a claim is refused and the row refused on, when this message may not send: a duplicate, a conflict, work another worker holds, work not yet due, or a budget spent
 * by a worker that died.
 */
async function decideWithoutSending(
  record: DeliveryRecord,
  reason: ClaimRefusal,
  event: ParsedEvent,
  deps: Pick<DeliverDeps, 'ledger' | 'now'>,
): Promise<QueueDecision> {
  const eventId = record.eventId;
  const nowMs = deps.now();
  switch (reason) {
    case 'identity-conflict':
      // The row is left exactly as it was: the first admitted content is the event.
      return { action: 'dead-letter', eventId, reason: 'identity-conflict', detail: `event ${eventId} was already admitted with other content` };
    case 'settled':
      if (record.state === 'delivered') return { action: 'ack', eventId, why: 'duplicate' };
      // Dead-lettering again is harmless (the ledger is the authority) and covers a worker that
      // died between marking the row dead and sending to the dead-letter queue.
      return { action: 'dead-letter', eventId, reason: record.deadReason ?? 'rejected', detail: record.deadDetail ?? 'dead' };
    case 'parked':
      // Parked for its disabled endpoint: released, with a message of its own, when it is enabled.
      return { action: 'ack', eventId, why: 'parked' };
    case 'leased':
      return { action: 'retry', eventId, afterSeconds: secondsUntil(record.leaseExpiresAt, nowMs), why: 'in-flight' };
    case 'spent':
      // The budget is spent and no lease is live: the last attempt's worker died before recording.
      try {
        const dead = await deps.ledger.markExhausted(record, nowMs, record.body ?? event.body);
        return { action: 'dead-letter', eventId, reason: 'exhausted', detail: dead.deadDetail ?? 'exhausted' };
      } catch (error) {
        if (error instanceof LeaseLostError) return { action: 'retry', eventId, afterSeconds: 1, why: 'in-flight' };
        throw error;
      }
    case 'not-due':
      return { action: 'retry', eventId, afterSeconds: secondsUntil(record.nextAttemptAt, nowMs), why: 'not-due' };
  }
}

/**
 * An invalid message: dead-lettered with its reason, and a dead row written for its ID where one
 * could be read and no row exists (at the `default` endpoint's key: an invalid message is never
 * routed, and the valid event with this ID takes the row over if it goes there).
 */
export async function deadLetterInvalid(
  error: InvalidEventError,
  deps: Pick<DeliverDeps, 'ledger' | 'endpoint' | 'policy' | 'now' | 'retentionSeconds'>,
): Promise<QueueDecision> {
  if (error.eventId !== undefined) {
    // A row only if none exists: an invalid message never overwrites an admitted event.
    await deps.ledger.admitInvalid(
      { eventId: error.eventId, endpoint: deps.endpoint ?? DEFAULT_ENDPOINT },
      error.message,
      deps.policy,
      deps.now(),
      deps.retentionSeconds,
    );
  }
  return { action: 'dead-letter', eventId: error.eventId, reason: 'invalid', detail: error.message };
}

function secondsUntil(epochMs: number | undefined, nowMs: number): number {
  return Math.max(1, Math.ceil(((epochMs ?? nowMs) - nowMs) / 1000));
}
