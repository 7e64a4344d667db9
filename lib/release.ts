/**
 * The release use case (docs/contract.md §13): at an endpoint ordered per shipment whose `onDead` is
 * `hold`, a dead event keeps its shipment's turn, and the shipment's later events wait. An operator
 * who decides the dead event is not to be sent again lets the shipment go on without it:
 *
 *   handoff release <eventId> --endpoint NAME --operator … --reason …
 *
 * 1. Checks: the endpoint is ordered per shipment, the delivery is dead with an event (and a
 *    sequence), and it holds its shipment: the head's `next` is its sequence. Anything else is
 *    refused before anything is written, saying what is the case instead (nothing to release).
 * 2. Records the release on the row (`Ledger.release`: an audit entry, `releasedAt`; the row stays
 *    dead, listed and replayable).
 * 3. Passes the turn on (`passTurn`, lib/ordering.ts): the head moves to the next sequence and the
 *    event waiting there, if any, gets its message.
 *
 * Order matters, as in a replay: the row first, then the head. Interrupted between the two, the row
 * says released and the head still waits on it; the same command run again sees that, writes no
 * second entry, and passes the turn (`recordedBefore`). Run again after it succeeded, it is refused:
 * the shipment has moved on (`released`). Two operators at once: one entry is written, the turn is
 * passed once (the head's write is conditional), the next event may get two messages (the ledger
 * sends it once).
 *
 * Messages name the event and the endpoint, never the payload or the shipment ID (producer data).
 */
import { parseEvent } from './event';
import type { Ordering } from './endpoints/endpoint';
import { ReleaseRefusedError } from './ledger/errors';
import type { DeliveryRecord, Ledger, ReleaseInput } from './ledger/ledger';
import type { ShipmentHead, ShipmentHeads } from './ledger/shipment-heads';
import type { Logger } from './observability';
import { passTurn } from './ordering';
import type { DeliveryQueue } from './queue/queue';
import { checkReplayInput } from './replay';
import { NothingToReleaseError } from './errors';

export interface ReleaseDeps {
  readonly ledger: Pick<Ledger, 'get' | 'release' | 'admit'>;
  readonly heads: ShipmentHeads;
  readonly queue: Pick<DeliveryQueue, 'enqueue'>;
  readonly logger?: Logger;
}

export interface ReleaseRequest extends ReleaseInput {
  /** The endpoint's `ordering` as configured now: only `per-shipment` holds shipments. */
  readonly ordering: Ordering;
}

export interface Released {
  /** The row as released: dead, with its `release` audit entry and `releasedAt`. */
  readonly record: DeliveryRecord;
  /** Its position among its shipment's events for the endpoint. */
  readonly sequence: number;
  /** The sequence whose turn it is now (sequence + 1). */
  readonly next: number;
  /** The event that was waiting for that turn and was sent its message, if one was waiting. */
  readonly woken?: string;
  /**
   * The row said released already, but the shipment still waited on it (an earlier run, or the
   * consumer dying it under `onDead: continue`, stopped before passing the turn): no second entry.
   */
  readonly recordedBefore: boolean;
}

/**
 * Releases a dead delivery that holds its shipment, and passes the turn on. Safe to run again: see
 * above.
 * @throws ReplayInputError before anything is read, when the operator, reason or caller cannot be kept.
 * @throws ReleaseRefusedError when there is no such delivery, it is not dead, or it holds no event.
 * @throws NothingToReleaseError when the endpoint is not ordered, or the shipment does not wait on it.
 * @throws what the ledger, the head or the queue throw (the release stays recorded; run it again).
 */
export async function releaseDelivery(request: ReleaseRequest, deps: ReleaseDeps): Promise<Released> {
  checkReplayInput(request);
  const { eventId, endpoint } = request;
  const delivery = `event ${eventId} at endpoint ${endpoint}`;
  if (request.ordering !== 'per-shipment') {
    throw new NothingToReleaseError(
      'not-ordered',
      eventId,
      endpoint,
      `endpoint ${endpoint} is not ordered per shipment (ordering: ${request.ordering}): no shipment waits on ${delivery}; nothing to release`,
    );
  }
  const record = await deps.ledger.get({ eventId, endpoint });
  if (record === undefined) throw new ReleaseRefusedError('not-found', eventId, endpoint);
  if (record.state !== 'dead') throw new ReleaseRefusedError('not-dead', eventId, endpoint, record);
  if (record.body === undefined) throw new ReleaseRefusedError('no-event', eventId, endpoint, record);
  const { sequence } = record;
  if (sequence === undefined) {
    throw new NothingToReleaseError(
      'not-sequenced',
      eventId,
      endpoint,
      `${delivery} has no place in a shipment's order (it was admitted before the endpoint was ordered): no shipment waits on it; nothing to release`,
    );
  }
  const shipmentId = shipmentOf(record.body, eventId);

  const head = await deps.heads.get(shipmentId, endpoint);
  if (head === undefined || head.next !== sequence) throw notHolding(record, sequence, head);

  const recordedBefore = record.releasedAt !== undefined;
  let released = record;
  if (!recordedBefore) {
    try {
      released = await deps.ledger.release(request);
    } catch (error) {
      // Another operator's release of the same row came first: it is recorded once, by them.
      if (!(error instanceof ReleaseRefusedError && error.refusal === 'released' && error.record !== undefined)) throw error;
      released = error.record;
    }
  }
  const woken = await passTurn(shipmentId, endpoint, { sequence, eventId }, deps, deps.logger);
  deps.logger?.info('released', { eventId, endpoint, sequence, recordedBefore, ...(woken === undefined ? {} : { woke: woken }) });
  return { record: released, sequence, next: sequence + 1, ...(woken === undefined ? {} : { woken }), recordedBefore };
}

/** The shipment ID from the stored body (canonical JSON of a valid event: its limit was checked on admission). */
function shipmentOf(body: string, eventId: string): string {
  // The ledger's own copy of an admitted event: a test event's too (lib/event.ts TEST_STATUS).
  const parsed = parseEvent(body, Number.MAX_SAFE_INTEGER, { sealed: true });
  if (!parsed.ok) throw new Error(`event ${eventId}: the stored event no longer reads as one (${parsed.error.field ?? 'body'})`);
  return parsed.value.event.shipmentId;
}

/** The shipment is not waiting on this delivery: say where its turn is instead. */
function notHolding(record: DeliveryRecord, sequence: number, head: ShipmentHead | undefined): NothingToReleaseError {
  const { eventId, endpoint } = record;
  const delivery = `event ${eventId} at endpoint ${endpoint}`;
  if (head === undefined) {
    return new NothingToReleaseError('not-holding', eventId, endpoint, `${delivery} is not holding its shipment: the shipment has no order recorded at this endpoint; nothing to release`);
  }
  const at = { next: head.next, assigned: head.assigned };
  if (head.next > sequence) {
    if (record.releasedAt !== undefined) {
      const by = record.audit.findLast((entry) => entry.action === 'release');
      const who = by === undefined ? '' : ` by ${by.operator}`;
      return new NothingToReleaseError(
        'released',
        eventId,
        endpoint,
        `${delivery} was released already (at ${new Date(record.releasedAt).toISOString()}${who}); its shipment has moved on to sequence ${head.next}: nothing more to release`,
        at,
      );
    }
    return new NothingToReleaseError(
      'not-holding',
      eventId,
      endpoint,
      `${delivery} is not holding its shipment: it is sequence ${sequence}, and the turn has passed on to sequence ${head.next} (onDead continue, or it was delivered or released before); nothing to release`,
      at,
    );
  }
  const holder = eventAt(head, head.next);
  return new NothingToReleaseError(
    'not-holding',
    eventId,
    endpoint,
    `${delivery} is not holding its shipment: it is sequence ${sequence}, and the turn is at sequence ${head.next}` +
      `${holder === undefined ? '' : ` (event ${holder})`}, earlier than its own; release or replay that one first`,
    at,
  );
}

/** The event with `sequence` in the head, if it has been assigned one. */
function eventAt(head: ShipmentHead, sequence: number): string | undefined {
  const waiting = head.waiting[sequence];
  if (waiting !== undefined) return waiting;
  for (const [eventId, n] of Object.entries(head.seq)) if (n === sequence) return eventId;
  return undefined;
}
