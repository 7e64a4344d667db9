/**
 * A delivery's turn at an endpoint ordered per shipment (docs/contract.md §13, lib/ordering.ts), as
 * the batch takes and passes it: `takeTurn` before the delivery (its number, and whether its turn
 * has come), `passTurn` once the ledger has decided it (the turn passed on, or a number given up).
 * A death that passes the turn is also marked released on its row by the write that records it
 * (lib/deliver.ts, given the delivery's number and `onDead`), so the row says what its dead letter
 * says and an operator's release of it is refused.
 */
import type { BatchDeps } from '../batch';
import type { DeadLetterReason, DeliveryResult } from '../deliver';
import type { OnDead } from '../endpoints/endpoint';
import type { ParsedEvent } from '../event';
import type { Logger } from '../observability';
import { admitOrdered, giveUpNumber, holdsNumber, passTurn as passOn, takeTurn as take, type OrderingDeps } from '../ordering';
import { isOrdered, type Deliver } from './plan';

/** What ordering needs for one delivery. */
interface Ordering {
  readonly event: ParsedEvent;
  readonly endpoint: string;
  readonly onDead: OnDead;
  readonly deps: OrderingDeps;
}

/** A delivery's turn, before it is delivered. */
export type Turn =
  /** Deliver it: at an ordered endpoint with its number (`ordering` set); elsewhere with none. */
  | { readonly kind: 'go'; readonly sequence?: number; readonly ordering?: Ordering }
  /** Its turn has not come: recorded as waiting on its shipment's head, its message acknowledged. */
  | { readonly kind: 'wait'; readonly eventId: string; readonly sequence: number; readonly waitingFor: number };

/** What passing the turn did, once the delivery was decided. */
export type Passed =
  | { readonly kind: 'passed'; readonly sequence?: number; readonly woke?: string; readonly shipment?: 'continued' | 'held' }
  /** The head or the queue could not be reached: the message is kept, and passes the turn when it returns. */
  | { readonly kind: 'failed'; readonly error: unknown };

/**
 * At an endpoint ordered per shipment: its number, and (unless parked) whether its turn has come.
 * @throws what the head or the ledger throw
 */
export async function takeTurn(plan: Deliver, parking: boolean, deps: BatchDeps): Promise<Turn> {
  const ordering = orderingOf(plan, deps);
  if (ordering === undefined) return { kind: 'go' };
  const turn = parking ? undefined : await take(ordering.event, plan.endpoint, ordering.deps, plan.admission);
  if (turn?.kind === 'wait') return { kind: 'wait', eventId: ordering.event.event.id, sequence: turn.sequence, waitingFor: turn.waitingFor };
  const sequence = turn?.sequence ?? plan.admission?.sequence ?? (await admitOrdered(ordering.event, plan.endpoint.name, ordering.deps)).sequence;
  return { kind: 'go', sequence, ordering };
}

/**
 * The turn passes on once the event is settled: delivered (or a duplicate of a delivered one), or
 * dead at an endpoint whose onDead is `continue`. Repeated on every return of a settled event's
 * message (idempotent), so a crash between recording and passing loses no turn.
 *
 * A row numbered while its endpoint was ordered passes its turn on as well after ordering was turned
 * off (as with `continue`): the events waiting behind it are woken and then sent, unordered, never
 * stranded. Rows numbered none (events since) touch no head.
 *
 * An identity conflict took a number of its shipment's head that no row will ever settle (another
 * shipment's event holds its ID, or one admitted unnumbered): given up, so that shipment goes on.
 */
export async function passTurn(plan: Deliver, turn: Extract<Turn, { kind: 'go' }> | undefined, result: DeliveryResult, logger: Logger, deps: BatchDeps): Promise<Passed> {
  const { decision } = result;
  const ordering = turn?.ordering;
  const sequence = turn?.sequence ?? result.sequence;
  const settling = ordering ?? (sequence !== undefined ? orderingOf(plan, deps, { numbered: true }) : undefined);
  const passes =
    settling !== undefined &&
    sequence !== undefined &&
    ((decision.action === 'ack' && decision.why !== 'parked') ||
      (decision.action === 'dead-letter' && settlesTurn(decision.reason) && settling.onDead === 'continue'));
  const givesUp =
    ordering !== undefined &&
    sequence !== undefined &&
    decision.action === 'dead-letter' &&
    decision.reason === 'identity-conflict' &&
    !holdsNumber(result, ordering.event.event.shipmentId, sequence);
  let woke: string | undefined;
  if (settling !== undefined && sequence !== undefined && (passes || givesUp)) {
    const shipmentId = settling.event.event.shipmentId;
    const own = { sequence, eventId: settling.event.event.id };
    try {
      woke = passes ? await passOn(shipmentId, settling.endpoint, own, settling.deps, logger) : await giveUpNumber(shipmentId, settling.endpoint, own, settling.deps, logger);
    } catch (error) {
      return { kind: 'failed', error };
    }
  }
  // Only the event's own death says what became of its shipment: an identity conflict (another
  // content under its ID) leaves the event's row, and the turn, to the event's own delivery.
  const shipment = decision.action === 'dead-letter' && settling !== undefined && sequence !== undefined && settlesTurn(decision.reason) ? (passes ? 'continued' : 'held') : undefined;
  return {
    kind: 'passed',
    ...(sequence !== undefined ? { sequence } : {}),
    ...(woke !== undefined ? { woke } : {}),
    ...(shipment !== undefined ? { shipment } : {}),
  };
}

/** Whether a dead-letter reason is the delivery's own death (its row dead), which settles its turn. */
function settlesTurn(reason: DeadLetterReason): boolean {
  return reason === 'rejected' || reason === 'exhausted';
}

/**
 * What ordering needs for a delivery to an endpoint ordered per shipment; undefined for any other,
 * unless `numbered`: its row has a number from when its endpoint was ordered (its turn is passed on
 * as under `continue`).
 */
function orderingOf(plan: Deliver, deps: BatchDeps, options: { readonly numbered?: boolean } = {}): Ordering | undefined {
  const { heads } = deps;
  if (heads === undefined || (!isOrdered(plan.endpoint) && options.numbered !== true) || plan.parsed === undefined) return undefined;
  const orderingDeps: OrderingDeps = {
    heads,
    ledger: deps.delivery.ledger,
    queue: deps.queue,
    now: deps.delivery.now,
    retentionSeconds: deps.delivery.retentionSeconds,
  };
  const onDead = isOrdered(plan.endpoint) ? plan.endpoint.onDead : 'continue';
  return { event: plan.parsed, endpoint: plan.endpoint.name, onDead, deps: orderingDeps };
}
