/**
 * The ledger: one durable row per delivery, deciding what work is allowed to do (docs/contract.md
 * §1, §5). This file is the port; `memory-ledger.ts` and `dynamodb-ledger.ts` implement it with the
 * same semantics, which `test/helpers/ledger-contract.ts` holds both to. Defined once for both:
 * what a row holds (`delivery-record.ts`, re-exported here), when each write may happen
 * (`guards.ts`), what each changes (`transitions.ts`), what a stored row reads as (`rows.ts`) and
 * which rows are listed (`listing.ts`).
 *
 * Business states and their transitions, all of them:
 *
 *   (no row) ── claim (new event) ─────────────▶ pending
 *   (no row) ── admitInvalid ──────────────────▶ dead      (reason `invalid`; no event)
 *   dead, no event ── claim (valid event) ─────▶ pending   (the invalid message stays in `audit`)
 *   pending  ── recordAttempt: accepted ───────▶ delivered
 *   pending  ── recordAttempt: rejected ───────▶ dead      (reason `rejected`; `releasedAt` too if it passes its turn)
 *   pending  ── recordAttempt / markExhausted ─▶ dead      (reason `exhausted`)
 *   dead     ── recordAttempt: accepted ───────▶ delivered (a late 2xx still means delivered)
 *   dead     ── replay (operator, reason) ─────▶ pending   (budget reset, replays + 1, due at once)
 *   dead     ── release (operator, reason) ────▶ dead      (its audit entry and `releasedAt`; once a row)
 *
 * Parking (docs/contract.md §12) is a marker on a pending row, not a state: `park` admits an event
 * for a disabled endpoint, or marks an unleased pending row, without claiming it (no attempt is
 * counted); a parked row refuses claims until `unpark` releases it.
 *
 *   (no row) ── park ──────────────────────────▶ pending, parked   (attempts 0, no lease)
 *   dead, no event ── park (valid event) ──────▶ pending, parked   (the invalid message stays in `audit`)
 *   pending  ── park (no live lease) ──────────▶ pending, parked   (attempts and due time kept)
 *   pending, parked ── unpark ─────────────────▶ pending (listed as pending: its message is on its way)
 *   pending, parked ── recordAttempt: accepted ▶ delivered (a late 2xx of a lapsed claim; marker dropped)
 *
 * A parked row keeps its `state` (pending); `parkedAt` is stored only while it is parked, so a row
 * never parked carries not one byte more. Settling (delivered, dead) drops the marker.
 *
 * A row is listed (`listByState`) while dead, or pending after a replay, a release from parking or
 * recovery's send (`relist`), or parked (per endpoint, in admission order: its `createdAt`). A row
 * between attempts is not listed: its queue message brings it back.
 * An attempt's outcome is a diagnostic on the row, never a state. Rows are keyed by
 * (eventId, endpoint): an event has a row per endpoint it goes to.
 */
import type { ParsedEvent } from '../event';
import type { AttemptOutcome } from '../outcome';
import type { RetryPolicy } from '../policy';
import type { AttemptEntry, ClaimedRecord, DeliveryKey, DeliveryRecord } from './delivery-record';
import type { ListedState } from './listing';

export {
  appendBounded,
  DEFAULT_ENDPOINT,
  DELIVERY_STATES,
  isThisClaim,
  isThisRelease,
  isThisReplay,
  leaseIsLive,
  MAX_AUDIT,
  MAX_HISTORY,
  type AttemptEntry,
  type AuditEntry,
  type ClaimedRecord,
  type DeadReason,
  type DeliveryKey,
  type DeliveryRecord,
  type DeliveryState,
} from './delivery-record';

export interface ClaimInput {
  readonly event: ParsedEvent;
  readonly endpoint: string;
  readonly owner: string;
  readonly nowMs: number;
  readonly leaseMs: number;
  /** Used only when the row is created; an existing row keeps its own. */
  readonly policy: RetryPolicy;
  readonly retentionSeconds: number;
  /** Its shipment sequence (`ShipmentHeads.assign`) for an ordered endpoint: written where the row has none (`DeliveryRecord.sequence`). */
  readonly sequence?: number;
  /**
   * While tracing: the `traceparent` of this attempt's span (handoff's own, never a producer's
   * value as given), written where the row has none (`DeliveryRecord.traceparent`).
   */
  readonly traceparent?: string;
}

/** A delivery to a disabled endpoint, parked instead of claimed. */
export interface ParkInput {
  readonly event: ParsedEvent;
  readonly endpoint: string;
  readonly nowMs: number;
  /** Used only when the row is created; an existing row keeps its own. */
  readonly policy: RetryPolicy;
  readonly retentionSeconds: number;
  /** Its shipment sequence for an ordered endpoint, as the claim's; used only when the park creates the row. */
  readonly sequence?: number;
}

/** What a settled attempt leads to. */
export type AttemptNext =
  | { readonly state: 'delivered' }
  | { readonly state: 'pending'; readonly nextAttemptAt: number }
  | {
      readonly state: 'dead';
      readonly reason: 'rejected' | 'exhausted';
      readonly detail: string;
      /**
       * Its shipment goes on without it (an endpoint ordered per shipment with `onDead: continue`,
       * docs/contract.md §13): `releasedAt` is written in this same write, so the row says so as its
       * dead letter does (`ordering=continued`), and an operator's release of it is refused.
       */
      readonly passesTurn?: true;
    };
export interface RecordAttemptInput extends DeliveryKey {
  /** The token of the claim this attempt was made under (`ClaimedRecord.claimToken`). */
  readonly claimToken: string;
  /**
   * The event's canonical body: kept on the row, where it has none, unless the attempt delivered it
   * (the claim does not store it: see `DeliveryRecord.body`).
   */
  readonly body: string;
  readonly attempt: AttemptEntry;
  readonly outcome: AttemptOutcome;
  readonly next: AttemptNext;
  readonly nowMs: number;
}

/** An operator's action on one delivery, kept in its audit entry: who, why, when. */
export interface OperatorAction extends DeliveryKey {
  readonly operator: string;
  readonly reason: string;
  /** The authenticated caller (STS ARN in AWS), recorded in the audit entry beside `operator`. */
  readonly caller?: string;
  readonly nowMs: number;
}

/** Who replays a dead delivery, and why (docs/contract.md §6). */
export type ReplayInput = OperatorAction;

/** Who releases a dead delivery, and why (docs/contract.md §13): kept in its audit entry as a replay's. */
export type ReleaseInput = OperatorAction;

export interface Page {
  readonly records: readonly DeliveryRecord[];
  /** Opaque; pass back to get the next page. Absent on the last page. */
  readonly cursor?: string;
}

export interface ListOptions {
  readonly limit?: number;
  /** From the page before; it must come from a listing in the same state and order. */
  readonly cursor?: string;
  readonly newestFirst?: boolean;
  /**
   * Only the rows of this endpoint. Chosen from the index entries, which hold the row's key, so
   * rows of other endpoints are never read; pages and cursors work as without it. Required for
   * `parked`, whose entries are partitioned by endpoint: only that endpoint's are read at all.
   */
  readonly endpoint?: string;
  /** Only rows that entered the listing at or after this epoch ms (dead rows: died then or later). */
  readonly sinceMs?: number;
  /** Only rows that entered the listing before this epoch ms. */
  readonly untilMs?: number;
}

/** Which page of a shipment's deliveries (`Ledger.deliveriesOfShipment`). */
export interface ShipmentPageOptions {
  /** A positive integer; DEFAULT_PAGE_LIMIT (25) when not given. */
  readonly limit?: number;
  /** From the page before, of the same shipment. */
  readonly cursor?: string;
}

/** A page of a shipment's deliveries, newest admission first. */
export interface ShipmentPage {
  readonly items: readonly DeliveryRecord[];
  /** Opaque; pass it back as `cursor` for the next page. Absent on the last page. */
  readonly next?: string;
}

export interface Ledger {
  /**
   * Admits a new event or claims a pending one, in one conditional write, and counts the
   * attempt before anything is sent. Returns the row as it now stands, lease held by `owner`
   * under a token the ledger draws for this claim alone: two claims with identical inputs (two
   * copies of one event in one batch, in the same millisecond) are two claims, and one is refused.
   * A store client's retry of this very request after a lost answer carries the same token and is
   * answered with the row its first write left, counting nothing more (`isThisClaim`).
   * @throws ClaimRefusedError carrying the current row when the event may not be sent now.
   */
  claim(input: ClaimInput): Promise<ClaimedRecord>;

  /**
   * Records an attempt's outcome and what follows, releasing the lease. `pending` and `dead`
   * require the caller's claim (its token) to still hold the lease; `delivered` does not, since a 2xx is the truth
   * however late it comes. Resolves once the outcome is durable, with nothing: the caller already
   * decided what follows, and not returning the row spares every delivery its bytes (`get` reads it).
   * @throws LeaseLostError carrying the current row when the condition fails.
   */
  recordAttempt(input: RecordAttemptInput): Promise<void>;

  /**
   * Marks a pending row whose budget is spent and whose lease has lapsed dead (`exhausted`):
   * the case of a worker that died during the last attempt. `body`: the event's, kept on the row
   * where it has none (for a replay).
   * @throws LeaseLostError carrying the current row when it is not in that condition.
   */
  markExhausted(key: DeliveryKey, nowMs: number, body: string): Promise<DeliveryRecord>;

  /**
   * Writes a dead row (`invalid`) for an invalid message whose ID could be read, only if no row
   * exists for that ID. Returns false, and changes nothing, when one does. The row holds no event,
   * so the valid event with this ID, when it comes, takes it over with its claim; the invalid
   * message stays in the row's audit.
   */
  admitInvalid(
    key: DeliveryKey,
    detail: string,
    policy: RetryPolicy,
    nowMs: number,
    retentionSeconds: number,
  ): Promise<boolean>;

  /**
   * Returns a dead row to pending with its budget reset, replays + 1 and an audit entry, due at
   * once: no `nextAttemptAt`, since the operator's clock is not the workers' and one running ahead
   * would park the event as not yet due. The same replay again (as a store client's retry after a lost answer
   * sends it) returns the row its first write left, replaying nothing more: `isThisReplay`.
   * @throws ReplayRefusedError when there is no such row, it is not dead, or it has no event.
   */
  replay(input: ReplayInput): Promise<DeliveryRecord>;

  /**
   * Records an operator's release of a dead delivery (docs/contract.md §13): an audit entry
   * (`release`) and `releasedAt` on the row, which stays dead (listed, replayable). The caller then
   * passes its shipment's turn on. Once a row: a second release is refused (`released`), so the
   * audit holds one entry per release made. The same release again (a store client's retry after a
   * lost answer) returns the row its first write left: `isThisRelease`.
   * @throws ReleaseRefusedError when there is no such row, it is not dead, has no event, or was released.
   */
  release(input: ReleaseInput): Promise<DeliveryRecord>;

  /**
   * Parks a delivery whose endpoint is disabled (docs/contract.md §12), in one conditional write
   * where the row is new (or holds only an invalid message with this ID), else at most two: admits
   * the event as a pending row without claiming it (no attempt counted, no lease, nothing sent), or
   * marks an existing pending row with no live lease parked, whatever its budget or due time. Either
   * way the row is listed among its endpoint's parked rows at its admission time (`createdAt`), and
   * leaves the pending listing if it was there. Parking a parked row writes nothing and returns it.
   * @throws ClaimRefusedError carrying the current row when it may not be parked: other content
   * under this ID, settled (delivered or dead), or leased (being sent now).
   */
  park(input: ParkInput): Promise<DeliveryRecord>;

  /**
   * Admits an event without claiming it (docs/contract.md §13: an event of an ordered endpoint
   * that arrives before its turn waits, its message acknowledged): a pending row holding the event,
   * no attempt counted, no lease, not listed, expiring as a claimed row does. One conditional write
   * where the row is new (or holds only an invalid message); an existing row is returned as it
   * stands, unchanged (its content may differ: the caller's claim decides that later).
   */
  admit(input: ParkInput): Promise<DeliveryRecord>;

  /**
   * Releases a parked row: the marker goes and the row is listed as pending since `listedSinceMs`
   * (when its message, sent next, becomes visible), so the recovery sweep finds it should that
   * message never come. Returns the row as released, or undefined (writing nothing) when it was not
   * parked: another release took it first, or a late 2xx settled it. (Undefined too, on DynamoDB,
   * for a release whose answer was lost and which the store client sent again: its row is released
   * and listed as pending all the same, so the recovery sweep sends it if its caller does not.)
   */
  unpark(key: DeliveryKey, nowMs: number, listedSinceMs: number): Promise<DeliveryRecord | undefined>;

  /**
   * Lists a pending, unparked row as pending from `sinceMs`: the stuck-work recovery's mark on a row
   * it has just sent a message for, so it is not read again (and sent again) until another grace has
   * passed, however long that message waits behind a backlog. False (writing nothing) otherwise.
   */
  relist(key: DeliveryKey, sinceMs: number): Promise<boolean>;

  /**
   * Takes a row waiting for its first attempt out of the pending listing, so the recovery sweep
   * leaves it alone (an ordered event released from parking that must then wait its turn: the event
   * before it wakes it, docs/contract.md §13). Only a pending, unparked row with no attempt counted;
   * false (writing nothing) otherwise. One conditional write.
   */
  unlist(key: DeliveryKey): Promise<boolean>;

  get(key: DeliveryKey): Promise<DeliveryRecord | undefined>;

  /**
   * Every delivery of one event (one row per endpoint it was routed to), ordered by endpoint name,
   * read consistently; rows past their expiry are left out as `get` leaves them out. Empty when
   * the event has no row. For routing a message received again to the endpoints it already has rows
   * for, and for the operator commands that work per event (`status`, `replay`).
   */
  deliveriesOf(eventId: string): Promise<DeliveryRecord[]>;

  /**
   * Rows that need attention, from the sparse listing index (`listing.ts` says which): dead rows,
   * pending rows replayed, released from parking or relisted, or one endpoint's parked rows (`parked`
   * requires `endpoint`, and reads only that endpoint's entries); oldest entry into the listing first
   * unless `newestFirst`; of one endpoint and within a window of listing times when asked (the
   * window is a range of the index's sort key, read as such). Delivered rows are never listed. A
   * page has a cursor exactly when more rows follow it.
   * @throws RangeError for a cursor this ledger did not issue for the same listing and order, an
   * empty or malformed window, or `parked` without an endpoint.
   */
  listByState(state: ListedState, options?: ListOptions): Promise<Page>;

  /**
   * Every delivery of a shipment's events (one row per event and endpoint), newest admission first,
   * a page at a time, from the shipment index (docs/contract.md §5): the page's index entries (keys
   * only), then its rows read whole and consistently. A row created while the index was off, and an
   * invalid message's row (no event), are not in it. Rows gone or past their expiry are left out, so
   * a page may hold fewer than `limit`; it has `next` exactly when more entries follow it.
   * @throws ShipmentIndexOffError when the ledger has no shipment index.
   * @throws RangeError for a cursor not issued for this shipment, or a limit that is not a positive integer.
   */
  deliveriesOfShipment(shipmentId: string, options?: ShipmentPageOptions): Promise<ShipmentPage>;

  /**
   * How many rows the listing of `state` holds, or those of one endpoint when asked (`parked`
   * requires it), reading only its index entries (keys, never the rows): for counters and `stats`.
   * Like SQS's approximate counts, it may include a row that has just left the state or passed its
   * expiry and not yet been deleted.
   * @throws RangeError for `delivered`, or `parked` without an endpoint.
   */
  countByState(state: ListedState, options?: Pick<ListOptions, 'endpoint'>): Promise<number>;
}
