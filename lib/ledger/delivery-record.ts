/**
 * A delivery's row as the ledger reads it (`DeliveryRecord`), keyed by (eventId, endpoint), and the
 * questions asked of one: whether its lease is live, and whether it is what a given claim, replay or
 * release wrote (a store client's retry of a write whose answer was lost meets its own row).
 */
import type { AttemptOutcome, OutcomeKind } from '../outcome';
import type { RetryPolicy } from '../policy';

export const DELIVERY_STATES = ['pending', 'delivered', 'dead'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** Why a row is dead. An identity conflict never touches a row, so it is not among them. */
export type DeadReason = 'rejected' | 'exhausted' | 'invalid';

/** The endpoint of the single-URL settings (a deployment without a registry). */
export const DEFAULT_ENDPOINT = 'default';
/** Attempt history kept on a row; older entries are dropped (the count stays in `attempts`). */
export const MAX_HISTORY = 20;
/**
 * Audit entries kept on a row; older ones are dropped (the count of replays stays in `replays`).
 * An entry of the longest texts (`lib/replay.ts`) in 4-byte characters is about 11 KB: ten of them
 * beside the largest event keep its row within DynamoDB's 400 KB item limit however often it is
 * replayed.
 */
export const MAX_AUDIT = 10;

export interface AttemptEntry {
  readonly attempt: number;
  /** Epoch ms when the attempt started. */
  readonly at: number;
  readonly outcome: OutcomeKind;
  readonly status?: number;
  readonly cause?: string;
  readonly durationMs: number;
}

export interface AuditEntry {
  readonly at: number;
  /**
   * `replay`: an operator's replay. `invalid-message`: an invalid message with this ID came first
   * (its row was then taken over by the valid event); the operator is `consumer`, the reason the
   * validation error. `release`: an operator passed the turn of its held shipment on from this dead
   * delivery (docs/contract.md §13, `handoff release`); the row stays dead.
   */
  readonly action: 'replay' | 'invalid-message' | 'release';
  /** The name the operator typed (`consumer` for an invalid message). */
  readonly operator: string;
  readonly reason: string;
  /** The authenticated caller that ran the replay (in AWS, the STS caller ARN); absent locally. */
  readonly caller?: string;
  /** Drawn by the ledger per replay or release: tells a store client's retry of it from any other. */
  readonly id?: string;
}

export interface DeliveryKey {
  readonly eventId: string;
  readonly endpoint: string;
}

export interface DeliveryRecord extends DeliveryKey {
  readonly state: DeliveryState;
  /**
   * The webhook body (canonical JSON), stored once handoff may have to send the event from its
   * row: from a failed attempt, death, parking or waiting for its turn on. Absent on a row whose
   * first attempt is under way or delivered it (its message held the body), and on rows of invalid
   * messages.
   */
  readonly body?: string;
  readonly contentHash?: string;
  readonly eventType?: string;
  /** Attempts claimed so far, counted before sending; reset by a replay. */
  readonly attempts: number;
  /** The budget of the policy the row was created with (copied for use in conditions). */
  readonly maxAttempts: number;
  readonly policy: RetryPolicy;
  readonly history: readonly AttemptEntry[];
  readonly lastOutcome?: AttemptOutcome;
  /** Epoch ms before which no attempt may be claimed. */
  readonly nextAttemptAt?: number;
  /** The claim: who may send now, and until when (epoch ms). */
  readonly leaseOwner?: string;
  readonly leaseExpiresAt?: number;
  /**
   * The claim's own identity, random per claim and present while its lease is: the outcome is
   * recorded against it, so no other claim (another copy of the message in the same batch, an
   * earlier invocation) can pass for this one.
   */
  readonly claimToken?: string;
  readonly replays: number;
  readonly audit: readonly AuditEntry[];
  readonly deadReason?: DeadReason;
  /** One line on why it died: the status and the start of the response, or the validation error. */
  readonly deadDetail?: string;
  readonly createdAt: number;
  readonly deliveredAt?: number;
  readonly deadAt?: number;
  /** Epoch ms of the last state change: admission or the last replay, delivery, death. */
  readonly stateSince: number;
  /**
   * Epoch seconds after which the row may be deleted (DynamoDB TTL). Readers ignore expired rows.
   * Absent while the row is parked: a parked delivery waits for its endpoint however long it is
   * disabled, and its release sets the expiry again.
   */
  readonly expiresAt?: number;
  /**
   * Epoch ms it was parked: present while its endpoint is disabled and until `unpark` releases it.
   * A parked row is pending, unleased and refuses claims (`parked`).
   */
  readonly parkedAt?: number;
  /**
   * Its position among its shipment's events for this endpoint (1, 2, 3, …; docs/contract.md §13),
   * sent as `webhook-sequence`: only on a row of an endpoint with `ordering: per-shipment`, so a row
   * of any other endpoint carries not one byte more. Written as the row's other new-row fields are,
   * where the row has none (by the claim or park that creates it, or the first claim carrying one
   * of a row created before its endpoint was ordered), and never changed after: replays keep it.
   */
  readonly sequence?: number;
  /**
   * Beside `sequence`: the shipment whose head gave the number, so that a message of another shipment
   * under the same event ID (an identity conflict) is told from the row's own event. A numbered row
   * without it is taken at its number (lib/ordering.ts `holdsNumber`).
   */
  readonly shipmentId?: string;
  /**
   * Epoch ms its shipment went on without it: dead at an endpoint ordered per shipment, its turn
   * passed on to the shipment's next event, by an operator (`Ledger.release`, with its audit entry)
   * or by the consumer as it died (`onDead: continue`: `AttemptNext.passesTurn`). Only on such a row
   * (any other carries not one byte more), and kept: a row is released once (its turn, once passed,
   * is never its own again), which makes a second release refused rather than recorded twice.
   */
  readonly releasedAt?: number;
  /**
   * The `traceparent` of its first traced attempt's span (docs/contract.md §19): what a replay, a
   * release or a recovery send links its new trace to (lib/tracing/carrier.ts `linkOf`). Written by
   * the first claim that carries one (while tracing is on) and never changed after, so the row names
   * the trace the delivery began in however often it is retried or replayed; a row claimed with
   * tracing off carries not one byte more.
   */
  readonly traceparent?: string;
}

/** The row as a successful claim returns it: leased, with the claim's token. */
export type ClaimedRecord = DeliveryRecord & {
  readonly leaseOwner: string;
  readonly leaseExpiresAt: number;
  readonly claimToken: string;
};

/** Whether a row's lease is held by anyone at `nowMs`. */
export function leaseIsLive(record: DeliveryRecord, nowMs: number): boolean {
  return record.leaseExpiresAt !== undefined && record.leaseExpiresAt > nowMs;
}

/** Appends an entry, keeping the newest `max` (`MAX_HISTORY`, `MAX_AUDIT`). */
export function appendBounded<T>(list: readonly T[], entry: T, max: number): T[] {
  return [...list, entry].slice(-max);
}

/**
 * Whether `record` is the row the claim with `claimToken` wrote, still leased to it. A claim whose
 * write was applied but whose answer was lost is retried by the store client with the same
 * request, token included, and its own lease refuses it; this tells that retry from any other
 * claim, since tokens are drawn per claim and never repeat.
 */
export function isThisClaim(record: DeliveryRecord, claimToken: string): record is ClaimedRecord {
  return record.state === 'pending' && record.claimToken === claimToken;
}

/**
 * Whether `record` is the row the replay with `replayId` wrote: pending, its last audit entry that
 * replay's. Tells a retried replay whose first write succeeded (its answer lost) from a replay of a
 * row that was never dead, or another replay with the same operator, reason and time.
 */
export function isThisReplay(record: DeliveryRecord, replayId: string): boolean {
  const last = record.audit.at(-1);
  return record.state === 'pending' && last !== undefined && last.action === 'replay' && last.id === replayId;
}

/**
 * Whether `record` is the row the release with `releaseId` wrote: dead, released, its last audit
 * entry that release's. Tells a retried release whose first write succeeded (its answer lost) from
 * a second release of a row released before.
 */
export function isThisRelease(record: DeliveryRecord, releaseId: string): boolean {
  const last = record.audit.at(-1);
  return record.state === 'dead' && record.releasedAt !== undefined && last !== undefined && last.action === 'release' && last.id === releaseId;
}
