/**
 * Per-shipment ordering (docs/contract.md §13), the use case: an endpoint whose `ordering` is
 * `per-shipment` receives one shipment's events in the order they were admitted, while other
 * shipments go on. The order is kept by the shipment's head (lib/ledger/shipment-heads.ts), not by
 * the queue:
 *
 * 1. **Admission** (`assign`): the event takes the next number of its (shipment, endpoint), once;
 *    the same event again gets the same number. Routing does it as it handles the producer's
 *    message, so admission order is the order producers' messages are handled (exact, per group,
 *    on the ordered intake, a FIFO queue). The endpoint message it sends carries the answer (its
 *    number, and whether its turn had come: `Admission`), as do a wake-up and a put-back; a
 *    re-received message finds it on its claimed row. Then the head is not asked twice.
 * 2. **Its turn** (`takeTurn`): it may be sent when every earlier number is settled (the head's
 *    `next` has reached it). If not, its row is written without a claim (`Ledger.admit`: it holds
 *    the body) and it is recorded as waiting on the head; its message is acknowledged. Nothing polls:
 *    it costs nothing while it waits. The head's conditional write decides the race with the event
 *    before it settling at that moment: either the wait is refused (its turn came: send now) or the
 *    settling event's advance sees it waiting.
 * 3. **Passing the turn** (`passTurn`): once an event is delivered, or dead with `onDead: continue`,
 *    the head moves to the next number and the event waiting there, if any, gets a message of its
 *    own (its body from its row). With `onDead: hold` a dead event keeps the turn: its shipment waits
 *    until an operator replays it (delivered, it passes the turn) or releases it (`handoff release`).
 *
 * Crashes: every step is idempotent and re-run by the message's return. An event re-received after
 * it settled passes the turn again (refused when already passed) and wakes the next if its turn is
 * still there, which covers a crash between recording the outcome and passing the turn, or a lost
 * wake-up message. A wake-up message that SQS's own redrive takes off the delivery queue (the
 * consumer kept failing on it) lands on the redrive queue, and recovery sends it back, as it does
 * any delivery's message (lib/recovery.ts `sendBackRedriven`).
 */
import type { ParsedEvent } from './event';
import type { DeliveryRecord, Ledger } from './ledger/ledger';
import type { ShipmentHeads } from './ledger/shipment-heads';
import type { Logger } from './observability';
import type { RetryPolicy } from './policy';
import type { Admission, DeliveryQueue } from './queue/queue';

export interface OrderingDeps {
  readonly heads: ShipmentHeads;
  readonly ledger: Pick<Ledger, 'admit' | 'get' | 'unlist'>;
  readonly queue: Pick<DeliveryQueue, 'enqueue'>;
  readonly now: () => number;
  readonly retentionSeconds: number;
}

/** An event and the number it holds in its shipment's order at one endpoint. */
export interface NumberedEvent {
  readonly sequence: number;
  readonly eventId: string;
}

/** What passing a turn on touches: the head, the queue that wakes the next event, the rows it reads. */
export type PassDeps = Pick<OrderingDeps, 'heads' | 'queue'> & { readonly ledger: Pick<Ledger, 'get'> };

export type Turn =
  /** Send it now (its turn, or a turn already passed: the claim decides what a settled row gets). */
  | { readonly kind: 'go'; readonly sequence: number }
  /** Acknowledge it: it waits on the head for the event before it (`waitingFor`). */
  | { readonly kind: 'wait'; readonly sequence: number; readonly waitingFor: number };

/** Its number among its shipment's events for `endpoint` (assigned once; the same on every call). */
export async function admitOrdered(event: ParsedEvent, endpoint: string, deps: Pick<OrderingDeps, 'heads'>): Promise<{ sequence: number; next: number }> {
  return deps.heads.assign(event.event.shipmentId, endpoint, event.event.id);
}

/**
 * Whether an event of an ordered endpoint may be sent now; if not, it is recorded as waiting.
 * `admission`, when its message or its row says what the admission found, spares asking the head
 * again: a turn that had come is still there (only the event's own settling moves `next` past it),
 * and a number known to be waiting goes straight to the conditional `wait`.
 */
export async function takeTurn(
  event: ParsedEvent,
  endpoint: { readonly name: string; readonly policy: RetryPolicy },
  deps: OrderingDeps,
  admission?: Admission,
): Promise<Turn> {
  const { sequence, inTurn } = admission ?? admissionFrom(await admitOrdered(event, endpoint.name, deps));
  if (inTurn) return { kind: 'go', sequence };
  const nowMs = deps.now();
  const row = await deps.ledger.admit({ event, endpoint: endpoint.name, nowMs, policy: endpoint.policy, retentionSeconds: deps.retentionSeconds, sequence });
  // Another content holds the event's ID at this endpoint: it must not wait in line. Sent on, the
  // claim refuses it as an identity conflict (nothing reaches the receiver) and the batch gives its
  // number up where no row will ever settle it (`giveUpNumber`).
  if (row.contentHash !== undefined && row.contentHash !== event.contentHash) return { kind: 'go', sequence };
  const answer = await deps.heads.wait(event.event.shipmentId, endpoint.name, sequence, event.event.id);
  if (answer === 'its-turn') return { kind: 'go', sequence };
  // A number that is not the event's (never expected: what its message says is sealed): ask the head.
  if (answer === 'not-its-number') return admission === undefined ? { kind: 'go', sequence } : takeTurn(event, endpoint, deps);
  // A row that was there before (released from parking: listed as pending, so that a lost message
  // is recovered) leaves the listing while it waits: else the recovery sweep would send it again at
  // every run, only for it to wait again. The event before it wakes it.
  if (row.createdAt !== nowMs && row.attempts === 0) await deps.ledger.unlist(row);
  return { kind: 'wait', sequence, waitingFor: sequence - 1 };
}

/** What an assignment says: its number, and whether every earlier number was settled then. Pure. */
export function admissionFrom(assignment: { readonly sequence: number; readonly next: number }): Admission {
  return { sequence: assignment.sequence, inTurn: assignment.next >= assignment.sequence };
}

/**
 * What a delivery's row says of its admission: a row with an attempt was claimed, which only happens
 * in its turn, and the turn stays until it settles (and after, the claim answers). Undefined for a row
 * never claimed (waiting, parked) or without a number. Pure.
 */
export function admissionOfRow(row: Pick<DeliveryRecord, 'sequence' | 'attempts'>): Admission | undefined {
  return row.sequence !== undefined && row.attempts > 0 ? { sequence: row.sequence, inTurn: true } : undefined;
}

/**
 * Passes the turn on from `sequence` (delivered, or dead with `continue`) and wakes the event whose
 * turn it now is, if it waits. Safe to repeat: a turn already passed is not passed again, and the
 * wake-up is sent again only while the turn is still the next one's. Returns the event woken, if any.
 *
 * A waiting event whose row is gone (its retention ran out while it waited, behind a held shipment
 * say) or is not the shipment's own (a number an identity conflict gave up) can never be sent: its
 * turn is passed on as if it had settled, with a warning naming it, and the event after it is woken
 * instead, so the shipment is not held on its account for good. A repeat that finds the turn moved
 * on beyond its own (by such a pass, or by the events after it) wakes whoever waits at the turn now:
 * after a crash between passing over and the wake-up that wake-up is owed, and otherwise a second
 * wake-up is a copy, which the claim answers.
 * @throws what the ledger, the head or the queue throw: the caller keeps its message, which returns.
 */
export async function passTurn(shipmentId: string, endpoint: string, settling: NumberedEvent, deps: PassDeps, logger?: Logger): Promise<string | undefined> {
  let { sequence: settled, eventId } = settling;
  for (;;) {
    const head = await deps.heads.advance(shipmentId, endpoint, settled, eventId);
    if (head === undefined || head.next <= settled) return undefined;
    const waiter = head.waiting[head.next];
    if (waiter === undefined) return undefined;
    const row: DeliveryRecord | undefined = await deps.ledger.get({ eventId: waiter, endpoint });
    if (row?.body !== undefined && holdsNumber(row, shipmentId, head.next)) {
      await deps.queue.enqueue(row.body, { endpoint, admission: { sequence: head.next, inTurn: true } });
      return waiter;
    }
    // Its row is gone (expired), or is another shipment's event under the same ID (a number given
    // up): nothing to send, and nothing may hold the shipment on its account.
    logger?.warn(row === undefined ? 'waiting event has no row: its turn is passed on' : 'number given up: its turn is passed on', {
      eventId: waiter,
      endpoint,
      sequence: head.next,
    });
    settled = head.next;
    eventId = waiter;
  }
}

/**
 * Whether a row is the event that `shipmentId`'s head gave `sequence` to. An identity conflict (the
 * event's ID already admitted with other content) finds another event's row: one of another shipment
 * (its own head gave the number), or one that took no number here (admitted before its endpoint was
 * ordered, its shipment's head has given the conflicting message a new one). Either way no row will
 * ever settle that number. A numbered row without its shipment (`shipmentId` unset) is taken at its number.
 */
export function holdsNumber(row: Pick<DeliveryRecord, 'sequence' | 'shipmentId'>, shipmentId: string, sequence: number): boolean {
  return row.sequence === sequence && (row.shipmentId ?? shipmentId) === shipmentId;
}

/**
 * Gives up the number an identity conflict took at its shipment's head (`holdsNumber` is false for
 * the row it met), so that its shipment goes on without it: passed on at once when its turn has come,
 * else left waiting at it, to be passed over when its turn comes (`passTurn` finds no row of its own).
 * Returns the event woken, if any. Safe to repeat.
 */
export async function giveUpNumber(shipmentId: string, endpoint: string, given: NumberedEvent, deps: PassDeps, logger?: Logger): Promise<string | undefined> {
  const answer = await deps.heads.wait(shipmentId, endpoint, given.sequence, given.eventId);
  if (answer !== 'its-turn') return undefined;
  return passTurn(shipmentId, endpoint, given, deps, logger);
}
