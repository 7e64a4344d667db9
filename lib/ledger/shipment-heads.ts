/**
 * The shipment head (docs/contract.md §13): per (shipment, endpoint) of an endpoint with
 * `ordering: per-shipment`, which number each admitted event has and whose turn it is. This file is
 * the port and its writes, defined once: `memory-shipment-heads.ts` applies them to a head in a Map,
 * `dynamodb-shipment-heads.ts` sends them as conditional UpdateItems; `test/helpers/
 * shipment-heads-contract.ts` holds both to one behaviour.
 *
 * A head holds:
 *   assigned   the last sequence assigned (0 before the first): numbers go 1, 2, 3, … in call order
 *   next       the lowest unsettled sequence (1 at first): the event whose turn it is
 *   seq        event ID -> its sequence, for every event ever assigned one (idempotent assignment)
 *   waiting    sequence -> event ID, for events acknowledged before their turn, to wake when it comes
 *
 * Its writes, each one atomic on the head (one conditional UpdateItem on DynamoDB):
 *
 *   assign(e)     e has no number: seq[e] = assigned + 1, assigned + 1 (both from the head before the
 *                 write), next = 1 if the head is new. e has one: that number and next, nothing
 *                 written. So the same event (a copy of its message, a replay, a redrive) always
 *                 gets the same number, and a number is never given twice.
 *   wait(s, e)    seq[e] = s (the number is e's) and next < s (its turn has not come): waiting[s] =
 *                 e, answered `waiting`. Its turn came meanwhile: `its-turn`, and the caller sends
 *                 now. s is not e's number: `not-its-number`, nothing written.
 *   advance(s, e) seq[e] = s and next = s: next = s + 1, waiting[s] removed, answered with the head
 *                 after, whose waiting[next] the caller wakes. Otherwise nothing written (already
 *                 advanced, by this caller's own earlier run or another copy; or not e's number):
 *                 answered with the head as it is.
 *
 * A head owns its numbers: only the event a number was given to may wait or settle at it, so nothing
 * a message says (a number it was not given, an event of another shipment under the same ID) can
 * take another event's turn or its place in the waiting line.
 *
 * No lost wake-up: an event at s waits only while next < s, and next reaches s only by advance(s-1),
 * which answers with the head after it. The two writes on one head are serialised by the store: if
 * the wait comes first, the advance's answer shows waiting[s]; if the advance comes first, the wait
 * is refused and the event is sent by whoever asked to wait.
 *
 * Why `seq` keeps its entries after an event settles: a late duplicate of a settled event (a copy of
 * its message, a producer's retry) must get its old number, below `next`, and be answered from its
 * settled row. Without the entry it would take a new number that no row ever settles, and its
 * shipment would stall behind it. A `waiting` entry goes when its event settles (its `advance`).
 *
 * What bounds a head: the events of one shipment for one endpoint. Each costs its `seq` entry for
 * good and a `waiting` entry while it waits (docs/design.md gives the bytes and what a write
 * costs). Assignment stops at MAX_SEQUENCE (`SequenceLimitError`): far beyond any shipment's
 * status history, and a head that full still fits DynamoDB's 400 KB item with the longest IDs.
 *
 * Where heads live: in the ledger table, under the partition `#` + shipment ID and the endpoint's
 * name as sort key. Event IDs never start with `#` (`lib/event.ts`: letters, digits, `_-.:`), so a
 * head never shares a partition with an event's rows and `deliveriesOf` never meets one; a head has
 * no listing or shipment index attributes, so it is in no index.
 *
 * Expiry (the table's TTL attribute, `expiresAt`): a head expires only once it is settled, a
 * retention after the write that settled it. A write that leaves every assigned number settled
 * (next > assigned, so nothing waits) sets it: the advance of the last number assigned. A write
 * that leaves a number unsettled removes it: an assignment. So a head with an event waiting, being
 * retried, parked (for however long its endpoint is disabled: a parked row has no expiry either) or
 * dead and holding its shipment (`onDead: hold`, until an operator replays or releases it) never
 * goes, whatever its age. The retention is the rows' own (`retentionSeconds`, stored on the head
 * by each assignment), counted from the settling advance, which comes after the last write of the
 * row it settles and of every row settled before: the head outlives its shipment's rows. An event
 * of the shipment that comes after the head is gone starts a new head at 1: by then every row it
 * could be ordered against has expired too (or, replayed after its shipment settled, was sent out
 * of turn anyway), so only the numbering starts again, as for a new shipment.
 */
import { DEFAULT_SETTINGS } from '../config-settings';
import { LedgerError } from './errors';

/** The partition prefix of heads in the ledger table: no event ID starts with it. */
export const HEAD_PARTITION_PREFIX = '#';

/**
 * Sequences assigned per (shipment, endpoint) at most. A head that full holds 1,000 `seq` entries
 * and at most 999 `waiting` ones: about 270 KB with 128-character event IDs, within DynamoDB's 400 KB.
 */
export const MAX_SEQUENCE = 1000;

/** A settled head's retention when the head holds none (written before heads expired): the rows' default. */
export const DEFAULT_HEAD_RETENTION_SECONDS = DEFAULT_SETTINGS.retentionDays * 24 * 60 * 60;

export interface ShipmentHeadKey {
  readonly shipmentId: string;
  /** The endpoint's name. */
  readonly endpoint: string;
}

export interface ShipmentHead extends ShipmentHeadKey {
  /** The last sequence assigned: how many events have one. */
  readonly assigned: number;
  /** The lowest unsettled sequence: the event whose turn it is (assigned + 1 once every event is settled). */
  readonly next: number;
  /** Every event assigned a number, to its number. */
  readonly seq: Readonly<Record<string, number>>;
  /** Events acknowledged before their turn, by sequence: woken when `next` reaches theirs. */
  readonly waiting: Readonly<Record<number, string>>;
  /** Epoch seconds after which the head may be deleted (TTL): only while settled (next > assigned). */
  readonly expiresAt?: number;
}

/** What `wait` did: recorded the event as waiting, or nothing because its turn came, or because the number is not its. */
export type WaitAnswer = 'waiting' | 'its-turn' | 'not-its-number';

export interface Assignment {
  /** The event's position among its shipment's events for the endpoint (1, 2, 3, …). */
  readonly sequence: number;
  /** The lowest unsettled sequence as the assignment found it (or left it, for a new head: 1). */
  readonly next: number;
}

export interface ShipmentHeads {
  /**
   * The event's sequence: a new one (the head's last + 1) for an event without one, else the one
   * it has, writing nothing. Answers with the head's `next` too: `next < sequence` means an earlier
   * event is unsettled, `next = sequence` that it is the event's turn, `next > sequence` that the
   * event was settled already (a late copy).
   * @throws SequenceLimitError when the event has no number and MAX_SEQUENCE are assigned.
   */
  assign(shipmentId: string, endpoint: string, eventId: string): Promise<Assignment>;

  /**
   * Records the event at `sequence` as waiting for its turn, atomically with the checks that the
   * number is the event's and its turn has not come (`next < sequence`): `waiting` when recorded.
   * Writing nothing: `its-turn` when its turn came meanwhile (or passed): the caller sends it now;
   * `not-its-number` when the event was not given `sequence` (or there is no head).
   */
  wait(shipmentId: string, endpoint: string, sequence: number, eventId: string): Promise<WaitAnswer>;

  /**
   * Settles `sequence` for `eventId`: only where the number is that event's and `next = sequence`,
   * next becomes sequence + 1 and its waiting entry goes; settling the last number assigned, the
   * head's expiry is set: the retention the assignments stored (the adapter's `retentionSeconds`)
   * from now, by the adapter's clock. Answers with the head after; the caller
   * wakes `waiting[next]` if there is one. Otherwise (already advanced: this is a retry or another
   * copy's; or not the event's number) nothing is written and the head is answered as it is, so a
   * caller that crashed after settling and runs again wakes the same event. Undefined when there is
   * no head.
   */
  advance(shipmentId: string, endpoint: string, sequence: number, eventId: string): Promise<ShipmentHead | undefined>;

  /** The head as stored, read consistently; undefined when no event of the shipment was assigned one. */
  get(shipmentId: string, endpoint: string): Promise<ShipmentHead | undefined>;
}

/** The ledger table's partition of a shipment's heads. */
export function headPartition(shipmentId: string): string {
  return `${HEAD_PARTITION_PREFIX}${shipmentId}`;
}

/** Whether a partition of the ledger table holds heads rather than an event's rows. */
export function isHeadPartition(partition: string): boolean {
  return partition.startsWith(HEAD_PARTITION_PREFIX);
}

/*
 * The writes, each a predicate over the head as it stands beside the DynamoDB condition that says
 * the same thing, and a change beside the DynamoDB update that makes it. In the expressions,
 * `#assigned` and `#next` are the head's counters, `#seqEntry` the event's entry of `seq` and
 * `#waitingEntry` the sequence's entry of `waiting` (`dynamodb-shipment-heads.ts` names them);
 * `:sequence` is the write's sequence, `:following` the one after it.
 */

export interface HeadClause<Context> {
  readonly expression: string;
  readonly holds: (head: ShipmentHead | undefined, context: Context) => boolean;
}

export interface HeadWrite<Context> {
  /** Every clause must hold; the first that does not is why the write is refused. */
  readonly clauses: Readonly<Record<string, HeadClause<Context>>>;
  /** The DynamoDB update: every operand read from the item before the write. */
  readonly update: string;
  /** The same change on a head held in memory (a new one where there is none). */
  readonly apply: (head: MutableHead, context: Context) => void;
}

/** A head held as a plain object, for the changes to fill in. */
export interface MutableHead {
  shipmentId: string;
  endpoint: string;
  assigned: number;
  next: number;
  seq: Record<string, number>;
  waiting: Record<number, string>;
  expiresAt?: number;
  /** The retention a settled head expires by: the latest assignment's. */
  retentionSeconds?: number;
}

export interface AssignContext {
  readonly eventId: string;
  /** The most sequences the head may assign (MAX_SEQUENCE unless an adapter was given less). */
  readonly max: number;
  /** Stored on the head: what its expiry counts by once it is settled. */
  readonly retentionSeconds: number;
}

export const ASSIGN = {
  clauses: {
    // The event has no number yet. Refused, the head (ALL_OLD) holds it: the answer, nothing written.
    assigned: { expression: 'attribute_not_exists(#seqEntry)', holds: (head, { eventId }) => head?.seq[eventId] === undefined },
    // Room for one more (a new head has all of it).
    full: {
      expression: '(attribute_not_exists(#assigned) OR #assigned < :max)',
      holds: (head, { max }) => head === undefined || head.assigned < max,
    },
  },
  // The new number from the head before the write, twice: DynamoDB evaluates every operand against
  // the item as it was, so the entry and the counter agree. A new head starts at next = 1. The number
  // is unsettled, so the head no longer expires (an expired head not yet deleted is kept by it).
  update:
    'SET #assigned = if_not_exists(#assigned, :zero) + :one, #seqEntry = if_not_exists(#assigned, :zero) + :one, #next = if_not_exists(#next, :one), #retention = :retention REMOVE #expiry',
  apply: (head, { eventId, retentionSeconds }) => {
    head.assigned += 1;
    head.seq[eventId] = head.assigned;
    head.retentionSeconds = retentionSeconds;
    delete head.expiresAt;
  },
} as const satisfies HeadWrite<AssignContext>;

export interface WaitContext {
  readonly sequence: number;
  readonly eventId: string;
}

export const WAIT = {
  clauses: {
    // The number is the event's: nobody waits in another's place. A missing head has no entry.
    owns: { expression: '#seqEntry = :sequence', holds: (head, { sequence, eventId }) => head?.seq[eventId] === sequence },
    // Its turn has not come.
    turn: { expression: '#next < :sequence', holds: (head, { sequence }) => head !== undefined && head.next < sequence },
  },
  update: 'SET #waitingEntry = :eventId',
  apply: (head, { sequence, eventId }) => {
    head.waiting[sequence] = eventId;
  },
} as const satisfies HeadWrite<WaitContext>;

export interface AdvanceContext {
  readonly sequence: number;
  readonly eventId: string;
  /** Epoch ms of the write: a settled head's expiry counts from it. */
  readonly nowMs: number;
}

/** Who may advance the head from `sequence`: the event holding that number, in its turn. */
const ADVANCE_CLAUSES = {
  // The number is the settling event's: no other event, whatever number it names, moves the head.
  owns: { expression: '#seqEntry = :sequence', holds: (head, { sequence, eventId }) => head?.seq[eventId] === sequence },
  // Only the event whose turn it is settles it: a second advance of the same sequence is refused.
  turn: { expression: '#next = :sequence', holds: (head, { sequence }) => head !== undefined && head.next === sequence },
} as const satisfies HeadWrite<AdvanceContext>['clauses'];

/**
 * The advance that settles the head: of the last number assigned, so nothing is left unsettled or
 * waiting. The head expires its retention from now (a head from before heads expired holds no
 * retention: the default's). Refused only by `last`, the plain ADVANCE follows.
 */
export const SETTLE = {
  clauses: {
    ...ADVANCE_CLAUSES,
    last: { expression: '#assigned = :sequence', holds: (head, { sequence }) => head !== undefined && head.assigned === sequence },
  },
  update: 'SET #next = :following, #expiry = if_not_exists(#retention, :retention) + :nowSeconds REMOVE #waitingEntry',
  apply: (head, context) => {
    ADVANCE.apply(head, context);
    head.expiresAt = Math.floor(context.nowMs / 1000) + (head.retentionSeconds ?? DEFAULT_HEAD_RETENTION_SECONDS);
  },
} as const satisfies HeadWrite<AdvanceContext>;

/** An advance that leaves later numbers unsettled: the head keeps no expiry (its assignments removed it). */
export const ADVANCE = {
  clauses: {
    ...ADVANCE_CLAUSES,
    more: { expression: '#assigned > :sequence', holds: (head, { sequence }) => head !== undefined && head.assigned > sequence },
  },
  update: 'SET #next = :following REMOVE #waitingEntry',
  apply: (head, { sequence }) => {
    head.next = sequence + 1;
    delete head.waiting[sequence];
  },
} as const satisfies HeadWrite<AdvanceContext>;

/** The whole condition of a write: its clauses joined. */
export function conditionOf<Context>(write: HeadWrite<Context>): string {
  return Object.values(write.clauses)
    .map((clause) => clause.expression)
    .join(' AND ');
}

/** The first clause of `write` that does not hold on `head`, or undefined when it may happen. */
export function refusalOf<Context>(write: HeadWrite<Context>, head: ShipmentHead | undefined, context: Context): string | undefined {
  for (const [refusal, clause] of Object.entries(write.clauses)) if (!clause.holds(head, context)) return refusal;
  return undefined;
}

/** A head with nothing assigned: what `assign` starts from where there is none. */
export function emptyHead(shipmentId: string, endpoint: string): MutableHead {
  return { shipmentId, endpoint, assigned: 0, next: 1, seq: {}, waiting: {} };
}

/** Checks what every operation takes, naming the field. */
export function checkHeadKey(shipmentId: string, endpoint: string): void {
  if (typeof shipmentId !== 'string' || shipmentId.length === 0) throw new RangeError('shipmentId must be a non-empty string');
  if (typeof endpoint !== 'string' || endpoint.length === 0) throw new RangeError('endpoint must be a non-empty string');
}

export function checkEventId(eventId: string): void {
  if (typeof eventId !== 'string' || eventId.length === 0) throw new RangeError('eventId must be a non-empty string');
  if (isHeadPartition(eventId)) throw new RangeError(`eventId must not start with ${HEAD_PARTITION_PREFIX}, got ${eventId}`);
}

/** An adapter's limit of sequences per head: MAX_SEQUENCE, or less (for tests that fill a head). */
export function checkMaxSequence(max: number | undefined): number {
  if (max === undefined) return MAX_SEQUENCE;
  if (!Number.isSafeInteger(max) || max < 1 || max > MAX_SEQUENCE) {
    throw new RangeError(`maxSequence must be an integer from 1 to ${MAX_SEQUENCE}, got ${max}`);
  }
  return max;
}

export function checkSequence(sequence: number): void {
  if (!Number.isSafeInteger(sequence) || sequence < 1) throw new RangeError(`sequence must be a positive integer, got ${sequence}`);
}
