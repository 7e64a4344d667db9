/**
 * Shipment heads in a Map: the same semantics as `DynamoDbShipmentHeads`, for unit tests of pure
 * logic. Each write checks the predicates of `shipment-heads.ts` and applies its change, the ones
 * the DynamoDB adapter sends as its conditions and updates. A write runs without awaiting anything,
 * so it is atomic as a conditional write is. Heads are copied in and out.
 */
import {
  ADVANCE,
  ASSIGN,
  checkEventId,
  checkHeadKey,
  checkMaxSequence,
  checkSequence,
  emptyHead,
  refusalOf,
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
}

export class MemoryShipmentHeads implements ShipmentHeads {
  readonly #heads = new Map<string, MutableHead>();
  readonly #max: number;

  constructor(options: MemoryShipmentHeadsOptions = {}) {
    this.#max = checkMaxSequence(options.maxSequence);
  }

  async assign(shipmentId: string, endpoint: string, eventId: string): Promise<Assignment> {
    checkHeadKey(shipmentId, endpoint);
    checkEventId(eventId);
    const stored = this.#heads.get(headKey(shipmentId, endpoint));
    const context = { eventId, max: this.#max };
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
    const head = this.#heads.get(headKey(shipmentId, endpoint));
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
    const head = this.#heads.get(headKey(shipmentId, endpoint));
    if (head === undefined) return undefined;
    const context = { sequence, eventId };
    if (refusalOf(ADVANCE, head, context) === undefined) ADVANCE.apply(head, context);
    return structuredClone(head);
  }

  async get(shipmentId: string, endpoint: string): Promise<ShipmentHead | undefined> {
    checkHeadKey(shipmentId, endpoint);
    const head = this.#heads.get(headKey(shipmentId, endpoint));
    return head === undefined ? undefined : structuredClone(head);
  }
}

function headKey(shipmentId: string, endpoint: string): string {
  return JSON.stringify([shipmentId, endpoint]);
}
