/**
 * The management API's request and answer bodies as the client types them (docs/contract.md §16).
 * Answers are the command's `--json` shapes, so `handoff … --json` and the API agree; these types
 * are written out here rather than imported so that `handoff/client` carries no server code. The
 * OpenAPI document (`GET /v1/openapi.json`, `client.openApiDocument()`) is the authority: where a
 * type here says less than it, an answer may carry more fields than typed.
 */

/** Every list: a page of items and an opaque cursor for the next page (null: the last). */
export interface Page<T> {
  readonly items: readonly T[];
  readonly next: string | null;
}

/** What a list call takes besides its filters. */
export interface PageOptions {
  /** The `next` of the previous page. */
  readonly cursor?: string;
  /** 1–100. */
  readonly limit?: number;
}

/** The options of every POST. */
export interface PostOptions {
  /**
   * Sent as `Idempotency-Key`: a repeat with the same key within 24 h gets the first answer and
   * does nothing twice (a different request under the same key is refused with 409).
   */
  readonly idempotencyKey?: string;
}

// Endpoints (docs/contract.md §11, §12, §18): ./endpoint-types.ts
export * from './endpoint-types';
import type { Repeatable } from './endpoint-types';

/** One event as producers send it (§2). */
export interface ShipmentEvent {
  readonly id: string;
  readonly shipmentId: string;
  readonly status: 'label_created' | 'packed' | 'in_transit' | 'out_for_delivery' | 'delivered' | 'exception' | 'returned';
  /** ISO time with an offset. */
  readonly occurredAt: string;
  readonly data?: Readonly<Record<string, unknown>>;
}

export interface PostEventsOptions extends PostOptions {
  /** Onto the ordered intake (in order per shipment, §13) rather than the delivery queue. */
  readonly ordered?: boolean;
}

export interface AcceptedEvent {
  readonly eventId: string;
  /** The queue's message ID. */
  readonly messageId: string;
}

export interface RefusedEvent {
  /** Its position in what was sent (0 for a single event). */
  readonly index: number;
  /**
   * Why, in one line: the check it failed, naming the field; the queue's code and message; or, on
   * the ordered intake, that an earlier event of its shipment was not sent (held back, so its order holds).
   */
  readonly error: string;
}

/** What became of each event, in input order. A single event that is invalid is a 400 instead (nothing was sent). */
export interface PostEventsAnswer {
  readonly accepted: readonly AcceptedEvent[];
  /** Events refused; the others were accepted all the same. */
  readonly refused: readonly RefusedEvent[];
}

// Deliveries (docs/contract.md §5, §10)

export interface AttemptEntry {
  readonly attempt: number;
  /** Epoch ms the attempt started. */
  readonly at: number;
  readonly outcome: 'accepted' | 'rejected' | 'temporary' | 'unknown';
  readonly status?: number;
  readonly cause?: string;
  readonly durationMs: number;
}

export interface AuditEntry {
  readonly at: number;
  readonly action: 'replay' | 'invalid-message' | 'release';
  readonly operator: string;
  readonly reason: string;
  readonly caller?: string;
  readonly id?: string;
}

export type AttemptOutcome =
  | { readonly kind: 'accepted'; readonly status: number }
  | { readonly kind: 'rejected'; readonly status: number; readonly responseStart: string }
  | { readonly kind: 'temporary'; readonly status?: number; readonly cause?: string; readonly retryAfterSeconds?: number }
  | { readonly kind: 'unknown'; readonly cause: string };

/** One delivery (an event at one endpoint) as `handoff status --json` prints it: everything but the payload; times in epoch ms. */
export interface Delivery {
  readonly eventId: string;
  readonly endpoint: string;
  readonly state: 'pending' | 'delivered' | 'dead';
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly replays: number;
  readonly lastOutcome?: AttemptOutcome;
  readonly deadReason?: 'rejected' | 'exhausted' | 'invalid';
  readonly deadDetail?: string;
  readonly contentHash?: string;
  readonly eventType?: string;
  readonly policy: { readonly version: string; readonly maxAttempts: number; readonly waitsSeconds: readonly number[] };
  /** The latest attempts (at most 20; `attempts` counts them all). */
  readonly history: readonly AttemptEntry[];
  readonly audit: readonly AuditEntry[];
  readonly createdAt: number;
  readonly deliveredAt?: number;
  readonly deadAt?: number;
  readonly stateSince: number;
  readonly nextAttemptAt?: number;
  /** The worker sending it now, and until when its claim holds. */
  readonly leaseOwner?: string;
  readonly leaseExpiresAt?: number;
  /** The current claim's identity (not a credential). */
  readonly claimToken?: string;
  /** When the row may be deleted (epoch seconds). */
  readonly expiresAt?: number;
  readonly parkedAt?: number;
  readonly sequence?: number;
  readonly shipmentId?: string;
  /** The W3C traceparent of its first traced attempt (docs/contract.md §19). */
  readonly traceparent?: string;
  readonly releasedAt?: number;
}

export interface EventDeliveries {
  readonly eventId: string;
  readonly deliveries: readonly Delivery[];
}

export interface DeadFilters extends PageOptions {
  readonly endpoint?: string;
  readonly owner?: string;
  /** Died at or after (ISO time, or a Date). */
  readonly since?: string | Date;
  /** Died before (ISO time, or a Date). */
  readonly until?: string | Date;
  readonly reason?: 'exhausted' | 'rejected' | 'invalid';
}

// Replays (docs/contract.md §6)

/** Replay one delivery: the event's to that endpoint. */
export interface DeliveryReplayRequest {
  readonly eventId: string;
  readonly endpoint: string;
  /** Why it is safe to deliver again: the audit's reason. */
  readonly reason: string;
}

/** Replay every dead delivery of one event. */
export interface EventReplayRequest {
  readonly eventId: string;
  readonly endpoint?: undefined;
  readonly reason: string;
}

/**
 * Replay, in bulk, one endpoint's deliveries that died from `deadSince` to `until` (default: now),
 * paced by the API. One request does one bounded part; its answer's `next`, sent back as `cursor`
 * with the same selection, continues it (`client.paginate.bulkReplay` does so to the end).
 */
export interface BulkReplayRequest {
  readonly eventId?: undefined;
  readonly endpoint: string;
  /** ISO time (with its zone) or a UTC date, or a Date. */
  readonly deadSince: string | Date;
  readonly until?: string | Date;
  readonly deadReason?: 'exhausted' | 'rejected';
  /** Count what would be replayed; write nothing. */
  readonly dryRun?: boolean;
  readonly reason: string;
  /** The previous part's `next`. */
  readonly cursor?: string;
  /** At most this many in this part (replays: at most 100; a dry run counts up to 2000). */
  readonly limit?: number;
}

/** What a replay takes; the operator recorded is the authenticated caller, never a field of the request. */
export type ReplayRequest = DeliveryReplayRequest | EventReplayRequest | BulkReplayRequest;

interface ReplayAudit {
  /** The authenticated caller (its last characters when longer than an operator name may be). */
  readonly operator: string;
  /** The authenticated caller, whole. */
  readonly caller: string | null;
  readonly reason: string;
}

export interface DeliveryReplayAnswer extends ReplayAudit {
  readonly eventId: string;
  readonly endpoint: string;
  readonly state: 'pending';
  readonly attempts: number;
  readonly replays: number;
  readonly enqueued: true;
}

export interface EventReplayAnswer extends ReplayAudit {
  readonly eventId: string;
  readonly deliveries: readonly {
    readonly endpoint: string;
    readonly state: 'pending';
    readonly attempts: number;
    readonly replays: number;
    /** False: pending again, but its message could not be sent (send the event again). */
    readonly enqueued: boolean;
  }[];
}

/** One part of a bulk replay (or of its dry run's count). */
export interface BulkReplayAnswer extends Partial<ReplayAudit> {
  readonly endpoint: string;
  readonly deadSince: string;
  readonly until: string;
  readonly deadReason: 'exhausted' | 'rejected' | null;
  readonly dryRun: boolean;
  /** Dead deliveries this part found in the selection (a dry run: what it would replay). */
  readonly matched: number;
  readonly replayed: number;
  /** Replayed or delivered by something else before their turn: left as they were. */
  readonly noLongerDead: number;
  /** Invalid messages' rows: dead, with no event to send. */
  readonly withoutEvent: number;
  /** Event IDs pending again whose message could not be sent. */
  readonly enqueueFailed: readonly string[];
  readonly ratePerSecond: number;
  /** More may follow: send the same request with `cursor` set to this. Null: the selection is done. */
  readonly next: string | null;
}

export type ReplayAnswer = DeliveryReplayAnswer | EventReplayAnswer | BulkReplayAnswer;

// Stats (docs/contract.md §10)

export interface StatsFilters {
  readonly endpoint?: string;
  /** The metrics window, as the command's `--since`: the last `30m`, `24h`, `7d` (1m to 15d; default 24h). */
  readonly since?: string;
}

export interface QueueDepth {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

/** As `handoff stats --json`. */
export interface Stats {
  readonly endpoint: string | null;
  readonly pendingCount: number | null;
  readonly oldestPendingAgeMs: number | null;
  readonly deadCount: number;
  readonly parkedCount: number | null;
  /** Whether the dead count stopped at `maxRowsPerState` rows. */
  readonly capped: { readonly dead: boolean };
  readonly maxRowsPerState: number;
  readonly byEndpoint?: Readonly<Record<string, { readonly deadCount: number; readonly parkedCount?: number }>>;
  readonly deliveredCount: number | null;
  readonly attempts: number | null;
  readonly retriedAttempts: number | null;
  readonly retryRate: number | null;
  readonly deadLettered: number | null;
  readonly latencyMs: { readonly p50: number | null; readonly p99: number | null };
  readonly latencySamples: number | null;
  readonly queue: QueueDepth | null;
  readonly redriveQueue: QueueDepth | null;
  readonly deadLetterQueue: QueueDepth | null;
  /** Where each figure comes from, in words. */
  readonly sources: Readonly<Record<'pending' | 'dead' | 'parked' | 'metrics' | 'percentiles' | 'oldestPendingAge' | 'queues', string>>;
  readonly window: { readonly since: string; readonly startMs: number; readonly endMs: number };
  /** Why the metrics could not be read (their figures are then null). */
  readonly metricsError?: string;
}

export interface StatsMinutesFilters {
  readonly endpoint?: string;
  /** The window: the last `30m`, `1h`, `24h` as whole minutes, the current one last (1m to 24h; default 1h). */
  readonly since?: string;
}

/** One minute of `GET /v1/stats/minutes`. */
export interface MinutePoint {
  /** The minute's start, ISO 8601 (UTC). */
  readonly at: string;
  /** `Delivered` in the minute. */
  readonly delivered: number;
  /** `Attempts` less `Delivered` in the minute: attempts that did not deliver. */
  readonly failed: number;
}

/** Deliveries and failed attempts minute by minute, every minute of the window, oldest first. */
export interface StatsMinutes {
  readonly endpoint: string | null;
  readonly periodSeconds: 60;
  readonly source: string;
  /** Empty when the metrics could not be read (`metricsError` says why). */
  readonly points: readonly MinutePoint[];
  readonly metricsError?: string;
}

// Portal links

export interface PortalLinkRequest {
  readonly owner: string;
  /** How long the link is valid (at most 86400: 24 h). */
  readonly ttlSeconds?: number;
}

/**
 * A console link for one owner. `url` (the console's address with the token) and `token` are shown
 * in this answer only: whoever holds them sees that owner's endpoints until `expiresAt`. An
 * `Idempotency-Key` repeat has `urlShown` and `tokenShown` instead.
 */
export type PortalLink = Repeatable<
  {
    readonly owner: string;
    /** ISO time. */
    readonly expiresAt: string;
    readonly url: string;
    readonly token: string;
  },
  'url' | 'token'
>;
