/**
 * The deliver stage (lib/batch.ts): the ledger decides a paced delivery. At an endpoint ordered per
 * shipment its turn is taken first (lib/consumer/turns.ts); then it is delivered (claim, send,
 * record: lib/deliver.ts), or parked at a disabled endpoint. A producer's message that is not a
 * valid event is dead-lettered with its reason, nothing sent.
 */
import type { BatchDeps } from '../batch';
import { deadLetterInvalid, deliver as deliverOne, park, type DeliveryResult, type QueueMessage } from '../deliver';
import type { ActiveSpan } from '../tracing/tracing';
import type { Deliver, Invalid } from './plan';
import { takeTurn, type Turn } from './turns';

/** What the ledger made of a delivery. */
export type Delivered =
  /** Decided: the queue's action, and the turn it was delivered in (none for an invalid message). */
  | { readonly kind: 'decided'; readonly result: DeliveryResult; readonly turn?: Extract<Turn, { kind: 'go' }> }
  /** Its turn has not come: it waits on its shipment's head, nothing sent. */
  | Extract<Turn, { kind: 'wait' }>
  /** The ledger (or a shipment head) could not be reached, or something unforeseen: its message is left untouched. */
  | { readonly kind: 'failed'; readonly error: unknown };

/**
 * Delivers (or parks) a paced delivery, or dead-letters an invalid message. Never throws. `span`: its
 * span while tracing (lib/consumer/trace.ts): the attempt's events go on it, and its context on the request.
 */
export async function deliver(record: { readonly body: string }, plan: Deliver | Invalid, parking: boolean, deps: BatchDeps, span?: ActiveSpan): Promise<Delivered> {
  const delivered = await decide(record, plan, parking, deps, span);
  if (span !== undefined) decided(span, delivered);
  return delivered;
}

async function decide(record: { readonly body: string }, plan: Deliver | Invalid, parking: boolean, deps: BatchDeps, span: ActiveSpan | undefined): Promise<Delivered> {
  const { delivery } = deps;
  try {
    if (plan.kind === 'invalid') return { kind: 'decided', result: { decision: await deadLetterInvalid(plan.error, delivery) } };
    const message: QueueMessage = plan.parsed ? { body: record.body, parsed: plan.parsed } : { body: record.body };
    const turn = await takeTurn(plan, parking, deps);
    if (turn.kind === 'wait') return turn;
    const endpointDeps = {
      ...delivery,
      endpoint: plan.endpoint.name,
      policy: plan.endpoint.policy,
      ...(turn.sequence !== undefined ? { sequence: turn.sequence, onDead: plan.endpoint.onDead } : {}),
      ...(span !== undefined ? { span } : {}),
    };
    const result = parking
      ? await park(message, endpointDeps)
      : await (deps.deliver ?? deliverOne)(message, { ...endpointDeps, sender: await deps.routing.sender(plan.endpoint) });
    return { kind: 'decided', result, turn };
  } catch (error) {
    return { kind: 'failed', error };
  }
}

/** What the ledger decided, on the delivery's span: its action and why, or that it failed. */
function decided(span: ActiveSpan, delivered: Delivered): void {
  switch (delivered.kind) {
    case 'decided': {
      const { decision } = delivered.result;
      span.set({
        'handoff.event_id': decision.eventId,
        'handoff.action': decision.action,
        'handoff.why': decision.action === 'dead-letter' ? decision.reason : decision.why,
        ...(decision.action === 'retry' ? { 'handoff.wait_s': decision.afterSeconds } : {}),
      });
      return;
    }
    case 'wait':
      span.set({ 'handoff.event_id': delivered.eventId, 'handoff.action': 'ack', 'handoff.why': 'waiting' });
      span.event('waiting', { 'handoff.sequence': delivered.sequence, 'handoff.waiting_for': delivered.waitingFor });
      return;
    case 'failed':
      span.event('failed', { 'error.type': delivered.error instanceof Error ? delivered.error.name : 'unknown' });
      span.fail();
  }
}
