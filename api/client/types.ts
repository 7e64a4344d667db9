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

// Endpoints (docs/contract.md §11, §12)

export type EventType =
  | 'shipment.label_created'
  | 'shipment.packed'
  | 'shipment.in_transit'
  | 'shipment.out_for_delivery'
  | 'shipment.delivered'
  | 'shipment.exception'
  | 'shipment.returned';

/** The settings an endpoint may set itself; unset ones are the deployment's. */
export interface EndpointSettings {
  /** Waits in seconds after each failed attempt. */
  readonly retrySchedule?: readonly number[];
  readonly maxAttempts?: number;
  readonly attemptTimeoutMs?: number;
  readonly disableAfterSeconds?: number;
  readonly disableAfterFailures?: number;
  readonly rateLimitPerSecond?: number;
  readonly receiverRetentionSeconds?: number;
  readonly recovery?: 'review' | 'drop';
  readonly ordering?: 'none' | 'per-shipment';
  readonly onDead?: 'continue' | 'hold';
  readonly autoDisable?: boolean;
}

/** What creating an endpoint takes (§11). */
export interface EndpointCreate extends EndpointSettings {
  readonly name: string;
  readonly url: string;
  /** The subscribed types, or `["*"]`. */
  readonly eventTypes: readonly (EventType | '*' | (string & {}))[];
  /** Field path → accepted values, every key required: `{"data.carrier": ["acme"]}`. */
  readonly match?: Readonly<Record<string, readonly unknown[]>>;
  /** Its own signing secret (`whsec_…`); left out, one is generated and shown once in the answer. */
  readonly secret?: string;
  /** The account it belongs to. */
  readonly owner?: string;
}

/** A partial change: the fields given are set; `null` clears a field that may be cleared. */
export type EndpointUpdate = {
  readonly [K in Exclude<keyof EndpointCreate, 'name' | 'secret'>]?: EndpointCreate[K] | null;
};

export interface EndpointHealth {
  readonly paused: boolean;
  readonly pausedUntil: string | null;
  readonly failures: number;
  readonly failingSince: string | null;
  readonly lastAcceptedAt: string | null;
}

export interface EndpointStateChange {
  /** Who changed it: the authenticated caller for a change made through the API. */
  readonly by: string;
  readonly reason: string;
  /** ISO time. */
  readonly at: string;
  readonly [more: string]: unknown;
}

/** An endpoint as the API answers it: never its secret, its URL redacted. */
export interface Endpoint {
  readonly name: string;
  /** Redacted (no credentials, no query values). */
  readonly url: string;
  readonly state: 'enabled' | 'disabled';
  readonly eventTypes: readonly string[];
  readonly match: Readonly<Record<string, readonly unknown[]>>;
  readonly owner: string | null;
  /** Whether a signing secret is set; the secret itself is only in the answer that created or rotated it. */
  readonly secret: 'set' | 'unset';
  /** While a rotation's overlap lasts: when the previous secret stops signing (ISO). */
  readonly previousSecretUntil: string | null;
  /** Deliveries parked for it (§12); null when not counted. */
  readonly parked: number | null;
  readonly health: EndpointHealth;
  readonly stateChange: EndpointStateChange | null;
  /** The settings it sets itself. */
  readonly settings: EndpointSettings;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly [more: string]: unknown;
}

/** The answer of a create or a rotation: the endpoint and its new signing secret, shown this once. */
export type EndpointWithSecret = Omit<Endpoint, 'secret'> & {
  /** The signing secret (`whsec_…`): give it to the receiver now; no answer shows it again. */
  readonly secret: string;
};

export interface EndpointListFilters extends PageOptions {
  readonly owner?: string;
  readonly state?: 'enabled' | 'disabled';
}

export interface DisableRequest {
  /** Why, for the audit: recorded with the caller's identity. */
  readonly reason: string;
}

export interface EnableRequest {
  /** Deliveries per second the parked backlog is released at (ramping up to it). */
  readonly rate?: number;
}

export interface RotateSecretRequest {
  /** How long the previous secret still signs beside the new one (0: it stops at once). */
  readonly overlapSeconds?: number;
}

export interface TestEventAnswer {
  /** The `handoff.test` event sent to that endpoint alone. */
  readonly eventId: string;
  readonly [more: string]: unknown;
}

// Events (docs/contract.md §2)

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

/**
 * One event's dead deliveries (`eventId`, with `endpoint`: that one), or in bulk an endpoint's
 * deliveries that died in a window (`endpoint`, `deadSince`, `until?`, `deadReason?`). The
 * operator recorded is the authenticated caller, never a field of the request.
 */
export interface ReplayRequest {
  readonly eventId?: string;
  readonly endpoint?: string;
  readonly deadSince?: string | Date;
  readonly until?: string | Date;
  readonly deadReason?: 'exhausted' | 'rejected';
  /** Count what would be replayed; do nothing. */
  readonly dryRun?: boolean;
  /** Why it is safe to deliver again: the audit's reason. */
  readonly reason: string;
}

/** What a replay did (or, dry, would do): its shape depends on the kind of replay; see the OpenAPI document. */
export interface ReplayAnswer {
  readonly [field: string]: unknown;
}

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

// Portal links

export interface PortalLinkRequest {
  readonly owner: string;
  /** How long the link is valid (at most 86400: 24 h). */
  readonly ttlSeconds?: number;
}

export interface PortalLink {
  /** The console's address with the token: give it to the owner; whoever holds it sees that owner's endpoints until it expires. */
  readonly url: string;
  /** The signed token the link carries. */
  readonly token: string;
  readonly owner: string;
  /** ISO time. */
  readonly expiresAt: string;
}
