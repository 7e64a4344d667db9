/**
 * The management API's endpoint bodies as the client types them (docs/contract.md §11, §12, §18):
 * what creating and changing an endpoint takes, and how answers show it. Part of ./types.ts, which
 * exports them all; the same rule holds: written out here, the OpenAPI document the authority.
 */
import type { PageOptions } from './types';

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
  /** How requests are signed (§18): `v1` under a `whsec_` secret, or `v1a` under an ed25519 `whsk_` key. */
  readonly signature?: 'hmac-sha256' | 'ed25519';
}

/** A header's value (§18): text, or a secret one never shown after it is written. */
export type HeaderValue = string | { readonly secretArn: string } | { readonly secret: string };

/** A secret value in `auth` or `tls` (§18): by Secrets Manager ARN (AWS) or the value itself (the sandbox), never shown after it is written. */
export type SecretValue = { readonly secretArn: string } | { readonly secret: string };

/** An OAuth2 client-credentials grant (§18): every request carries the token it gets. */
export interface EndpointAuth<S = SecretValue> {
  readonly type: 'oauth2-client-credentials';
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: S;
  readonly scope?: string;
  readonly audience?: string;
}

/** A client certificate (§18), PEM: the certificate and CA public (inline, or kept in Secrets Manager), the key a secret value. */
export interface EndpointTls<S = SecretValue> {
  readonly clientCertificate: string | { readonly secretArn: string };
  readonly privateKey: S;
  readonly ca?: string | { readonly secretArn: string };
}

/** A secret value as answers show it: `{secret: true}`, or its ARN. */
export type ShownSecretValue = { readonly secret: true } | { readonly secretArn: string };

/** What creating an endpoint takes (§11). */
export interface EndpointCreate extends EndpointSettings {
  readonly name: string;
  readonly url: string;
  /** The subscribed types, or `["*"]`. */
  readonly eventTypes: readonly (EventType | '*' | (string & {}))[];
  /** Field path → accepted values, every key required: `{"data.carrier": ["acme"]}`. */
  readonly match?: Readonly<Record<string, readonly unknown[]>>;
  /** Its own signing secret (`whsec_…`, or `whsk_…` for ed25519); left out, one of `signature`'s scheme is generated and shown once in the answer. */
  readonly secret?: string;
  /** The account it belongs to. */
  readonly owner?: string;
  /** Extra request headers (§18): `{secretArn}` in AWS, `{secret}` in the sandbox for a value never shown again. */
  readonly headers?: Readonly<Record<string, HeaderValue>>;
  /** An OAuth2 client-credentials grant (§18). */
  readonly auth?: EndpointAuth;
  /** A client certificate presented to a receiver that asks for one (§18). */
  readonly tls?: EndpointTls;
}

/** A partial change: the fields given are set; `null` clears a field that may be cleared. */
export type EndpointUpdate = {
  readonly [K in Exclude<keyof EndpointCreate, 'name' | 'secret' | 'headers' | 'auth' | 'tls'>]?: EndpointCreate[K] | null;
} & {
  /** `{secret: true}` as the client secret (as answers show it) keeps the value it has. */
  readonly auth?: EndpointAuth<SecretValue | { readonly secret: true }> | null;
  /** `{secret: true}` as the key (as answers show it) keeps the value it has. */
  readonly tls?: EndpointTls<SecretValue | { readonly secret: true }> | null;
  /** The headers, all of them; `{secret: true}` (as answers show a secret value) keeps the value the header has. */
  readonly headers?: Readonly<Record<string, HeaderValue | { readonly secret: true }>> | null;
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
  /** An ed25519 secret's public key (`whpk_…`): what the receiver verifies `v1a` signatures with; null for an HMAC secret. */
  readonly publicKey: string | null;
  /** Its extra request headers: text as it is, a secret value as `{secret: true}`. */
  readonly headers: Readonly<Record<string, string | { readonly secret: true }>>;
  /** Its OAuth2 grant, the token URL redacted, the client secret never shown; null without one. */
  readonly auth: EndpointAuth<ShownSecretValue> | null;
  /** Its client certificate, the key never shown; null without one. */
  readonly tls: EndpointTls<ShownSecretValue> | null;
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
}

/**
 * An answer to a POST as an `Idempotency-Key` repeat may give it: the first answer with each field
 * shown once (a secret, a portal link) replaced by `<field>Shown: true`. The API does this to every
 * `secret` string it keeps, `"set"` and `"unset"` included.
 */
export type Repeatable<T, K extends keyof T & string = 'secret' & keyof T & string> = Omit<T, K> &
  ({ readonly [F in K]: T[F] } & { readonly [F in K as `${F}Shown`]?: never } | { readonly [F in K]?: never } & { readonly [F in K as `${F}Shown`]: true });

/**
 * The answer of a create or a rotation: the endpoint and its signing secret (`whsec_…`), shown this
 * once: give it to the receiver now, no answer shows it again. (`"set"` when the endpoint was created
 * with a Secrets Manager ARN: the secret is not the API's to show.) A repeat has `secretShown: true` instead.
 */
export type EndpointWithSecret = Repeatable<Omit<Endpoint, 'secret'> & { readonly secret: string }>;

/** A release of parked deliveries in progress (§12). */
export interface Release {
  readonly since: string;
  /** The most released per second. */
  readonly rate: number;
  /** The ramp's rate now. */
  readonly rateNow: number;
  readonly scheduledUntil: string | null;
}

/** One endpoint as `handoff endpoint show --json`: also its release, and every setting in effect against the deployment. */
export interface EndpointDetail extends Endpoint {
  readonly release: Release | null;
  /** Every setting in effect (null: none); null when it cannot be used with the deployment (`problem` says why). */
  readonly effective: Readonly<Record<string, unknown>> | null;
  readonly problem?: string;
  /** Where the deployment settings it was checked against came from. */
  readonly settingsFrom: string;
}

/** The answer of a change: the endpoint, and the fields that changed (none: nothing was written). */
export interface EndpointUpdated extends Endpoint {
  readonly changed: readonly string[];
}

/** The answer of a disable (a repeat: `secretShown` for `secret`). */
export type EndpointStateAnswer = Repeatable<Endpoint>;

/** The answer of an enable: the endpoint and the release of its parked deliveries it began. */
export type EndpointEnabled = Repeatable<Endpoint & { readonly release: Release | null }>;

export interface EndpointListFilters extends PageOptions {
  readonly owner?: string;
  readonly state?: 'enabled' | 'disabled';
}

export interface DisableRequest {
  /** Why, for the audit: recorded with the caller's identity. */
  readonly reason: string;
}

export interface EnableRequest {
  /** Why (default: "enabled by an operator"), kept with the caller's identity. */
  readonly reason?: string;
  /** The most parked deliveries released per second (the release ramps up to it). */
  readonly rate?: number;
}

export interface RotateSecretRequest {
  /** How long the previous secret still signs beside the new one (0: it stops at once). */
  readonly overlapSeconds?: number;
  /** The new secret's scheme, which the endpoint signs with from now (default: the endpoint's). */
  readonly signature?: 'hmac-sha256' | 'ed25519';
}

export interface TestEventAnswer {
  /** The `handoff.test` event sent to that endpoint alone: `getEvent(eventId)` follows its delivery. */
  readonly eventId: string;
}

// Events (docs/contract.md §2)
