/**
 * Shipment heads in a Map: the same semantics as `DynamoDbShipmentHeads`, for unit tests of pure
 * logic. Each write checks the predicates of `shipment-heads.ts` and applies its change, the ones
 * the DynamoDB adapter sends as its conditions and updates. A write runs without awaiting anything,
 * so it is atomic as a conditional write is. Heads are copied in and out.
 *
 * Expiry is modelled as DynamoDB's TTL deletes: a head past its `expiresAt` by the adapter's clock is
 * gone, for every operation (DynamoDB deletes it some time after; until then it reads as it is).
 */
import {
  ADVANCE,
  ASSIGN,
  checkEventId,
  checkHeadKey,
  checkMaxSequence,
  checkSequence,
  DEFAULT_HEAD_RETENTION_SECONDS,
  emptyHead,
  refusalOf,
  SETTLE,
  WAIT,
  type Assignment,
  type MutableHead,
  type ShipmentHead,
  type ShipmentHeads,
  type WaitAnswer,
} from './shipment-heads';
import { SequenceLimitError } from './errors';

export interface MemoryShipmentHeadsOptions {
  /** Sequences per head at most: MAX_SEQUENCE unless less is given. */
  readonly maxSequence?: number;
  /** Epoch ms: when a settled head expires, and when it is gone. Defaults to the system clock. */
  readonly now?: () => number;
  /** A settled head's retention, stored by each assignment: the rows' (DEFAULT_HEAD_RETENTION_SECONDS unless given). */
  readonly retentionSeconds?: number;
}

export class MemoryShipmentHeads implements ShipmentHeads {
  readonly #heads = new Map<string, MutableHead>();
  readonly #max: number;
  readonly #now: () => number;
  readonly #retentionSeconds: number;

  constructor(options: MemoryShipmentHeadsOptions = {}) {
    this.#max = checkMaxSequence(options.maxSequence);
    this.#now = options.now ?? Date.now;
    this.#retentionSeconds = options.retentionSeconds ?? DEFAULT_HEAD_RETENTION_SECONDS;
  }

  async assign(shipmentId: string, endpoint: string, eventId: string): Promise<Assignment> {
    checkHeadKey(shipmentId, endpoint);
    checkEventId(eventId);
    const stored = this.#live(shipmentId, endpoint);
    const context = { eventId, max: this.#max, retentionSeconds: this.#retentionSeconds };
    const refusal = refusalOf(ASSIGN, stored, context);
    if (refusal === 'assigned' && stored !== undefined) return { sequence: stored.seq[eventId] ?? 0, next: stored.next };
    if (refusal !== undefined) throw new SequenceLimitError(shipmentId, endpoint, eventId, this.#max);
    const head = stored ?? emptyHead(shipmentId, endpoint);
    ASSIGN.apply(head, context);
    this.#heads.set(headKey(shipmentId, endpoint), head);
    return { sequence: head.assigned, next: head.next };
  }

  async wait(shipmentId: string, endpoint: string, sequence: number, eventId: string): Promise<WaitAnswer> {
    checkHeadKey(shipmentId, endpoint);
    checkSequence(sequence);
    checkEventId(eventId);
    const head = this.#live(shipmentId, endpoint);
    const context = { sequence, eventId };
    const refusal = refusalOf(WAIT, head, context);
    if (refusal !== undefined || head === undefined) return refusal === 'turn' ? 'its-turn' : 'not-its-number';
    WAIT.apply(head, context);
    return 'waiting';
  }

  async advance(shipmentId: string, endpoint: string, sequence: number, eventId: string): Promise<ShipmentHead | undefined> {
    checkHeadKey(shipmentId, endpoint);
    checkSequence(sequence);
    checkEventId(eventId);
    const head = this.#live(shipmentId, endpoint);
    if (head === undefined) return undefined;
    const context = { sequence, eventId, nowMs: this.#now() };
    // The last number settles the head (SETTLE); any other leaves it unsettled (ADVANCE).
    if (refusalOf(SETTLE, head, context) === undefined) SETTLE.apply(head, context);
    else if (refusalOf(ADVANCE, head, context) === undefined) ADVANCE.apply(head, context);
    return view(head);
  }

  async get(shipmentId: string, endpoint: string): Promise<ShipmentHead | undefined> {
    checkHeadKey(shipmentId, endpoint);
    const head = this.#live(shipmentId, endpoint);
    return head === undefined ? undefined : view(head);
  }

  /** The head, unless it has expired: then it is deleted, as DynamoDB's TTL deletes it. */
  #live(shipmentId: string, endpoint: string): MutableHead | undefined {
    const key = headKey(shipmentId, endpoint);
    const head = this.#heads.get(key);
    if (head?.expiresAt !== undefined && head.expiresAt * 1000 <= this.#now()) {
      this.#heads.delete(key);
      return undefined;
    }
    return head;
  }
}

function headKey(shipmentId: string, endpoint: string): string {
  return JSON.stringify([shipmentId, endpoint]);
}

/** A copy of the head as the port shows it: not the retention it keeps for its writes. */
function view(head: MutableHead): ShipmentHead {
  const { retentionSeconds: _retention, ...shown } = structuredClone(head);
  return shown;
}
