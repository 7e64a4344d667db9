/**
 * The fields of an endpoint (docs/contract.md §11), one entry each: its schema (its checks and
 * their messages), what it means while unset, whether `update --clear` may unset it, its option
 * and its row in `handoff endpoint`, its one-line doc. Derived from it: the `EndpointFields` type
 * and the settings of a resolved `Endpoint`, `parseEndpointFields` (which the registry, the
 * construct, the sandbox's endpoints file and the command all use), the command's options and
 * views, and the JSON Schema of an endpoint (json-schema.ts). A new field is an entry here, plus
 * the code that acts on it.
 *
 * The order is the order parsed fields are built in, which the digest of an endpoint the construct
 * declares hashes (infra/registry/seed-call.ts): moving an entry makes a deploy apply them again.
 */
import type * as v from 'valibot';
import * as s from './field-schemas';
import * as locks from './lock-schemas';
import type { FieldSchema } from './field-schemas';

/** What an unset field means in a resolved endpoint. */
export type FieldDefault<T> =
  /** This value. */
  | { readonly value: T }
  /** The deployment's setting of the same name (resolveEndpoint says how). */
  | 'deployment'
  /** Nothing: the setting is off, and stays unset. */
  | 'none';

export interface FieldSpec<T = unknown> {
  readonly schema: v.GenericSchema<unknown, T>;
  /** What it is, in a line: the option's help and the JSON Schema's description. */
  readonly doc: string;
  /** Every endpoint gives it. */
  readonly required?: boolean;
  /** Only settings have one. A field without one (what it subscribes to, its secrets) is resolved by hand. */
  readonly default?: FieldDefault<T>;
  /** `endpoint update --clear` may unset it. */
  readonly clearable?: boolean;
  /** Fields that must be given with this one, each with the problem named when it is not. */
  readonly requires?: readonly (readonly [field: string, problem: string])[];
  /** Its option of `endpoint add` and `update` (none: not set by an option) and its row in `show`. */
  readonly cli?: FieldCli<T>;
}

export interface FieldCli<T> {
  /** commander's flags; the option's name is the field's (`--max-attempts <n>`: maxAttempts). */
  readonly flag: string;
  /** Help for the option beyond the doc. */
  readonly help?: string;
  /** A boolean's `--no-…` option: its help. */
  readonly off?: string;
  /** Its row in `show` (a setting without one is shown in another's row). */
  readonly label?: string;
  /** The value in effect as its row shows it, with every setting in effect at hand (default: as given, lists comma-separated). */
  text?(value: T, settings: Readonly<Record<string, unknown>>): string;
  /** The row of a setting that is unset and has no default. */
  readonly unset?: string;
  /** Settings its row shows as well: the row is the endpoint's own when any of them is set. */
  readonly rowAlso?: readonly string[];
}

function field<S extends FieldSchema, const P extends Omit<FieldSpec<v.InferOutput<S>>, 'schema'>>(schema: S, spec: P): P & { readonly schema: S } {
  return { ...spec, schema };
}

const PREVIOUS_TOGETHER = 'needs previousSecret and previousSecretUntil together: the old secret and when it stops signing';
const YEAR_SECONDS = 366 * 24 * 60 * 60;

export const ENDPOINT_FIELDS = {
  name: field(s.name, {
    required: true,
    doc: 'unique; 1–64 of a-z 0-9 -',
    cli: { flag: '--name <name>', label: 'name' },
  }),
  url: field(s.url, {
    required: true,
    doc: 'where requests go: https (http only where the deployment allows it)',
    cli: { flag: '--url <url>', label: 'url' },
  }),
  eventTypes: field(s.eventTypes, {
    required: true,
    doc: `the event types it takes: ${s.EVENT_TYPES.join(', ')}; or '${s.ALL_EVENT_TYPES}' for all`,
    cli: { flag: '--event-types <types>', label: 'event types' },
  }),
  match: field(s.match, {
    clearable: true,
    doc: 'only events whose field holds one of the values; every field must match',
    cli: {
      flag: '--match <field=values>',
      help: "e.g. 'data.carrier=acme,zephyr' (repeatable; values are text: numbers and booleans via --from-file)",
      label: 'match',
    },
  }),
  secret: field(s.secret, {
    doc: 'its signing secret (whsec_…, or an ed25519 key whsk_…) or the ARN of a Secrets Manager secret holding one; never shown; unset: requests are not signed',
    cli: {
      flag: '--secret <secret>',
      help: "add generates one of the signature's scheme when not given (a value typed here stays in your shell history: prefer --from-file)",
      label: 'secret',
    },
  }),
  // Set by `endpoint rotate-secret`; clearing it ends the overlap at once.
  previousSecret: field(s.secret, {
    clearable: true,
    requires: [
      ['previousSecretUntil', PREVIOUS_TOGETHER],
      ['secret', 'needs a secret: during a rotation the new secret signs first'],
    ],
    doc: "a rotation's old secret: until previousSecretUntil every request also carries a signature under it; never shown",
  }),
  previousSecretUntil: field(s.epochMs, {
    requires: [['previousSecret', PREVIOUS_TOGETHER]],
    doc: 'when previousSecret stops signing, in epoch milliseconds',
  }),
  retrySchedule: field(s.waits, {
    default: 'deployment',
    clearable: true,
    doc: 'the waits in seconds after each failed attempt',
    cli: { flag: '--retry-schedule <seconds>', label: 'retry schedule', text: (waits) => `${waits.join(', ')} s` },
  }),
  maxAttempts: field(s.whole(1, 100), {
    default: 'deployment',
    clearable: true,
    doc: 'attempts in all',
    cli: { flag: '--max-attempts <n>', label: 'max attempts' },
  }),
  attemptTimeoutMs: field(s.whole(100, 880_000), {
    default: 'deployment',
    clearable: true,
    doc: "how long one request may take, in milliseconds: at most the deployment's",
    cli: { flag: '--attempt-timeout-ms <ms>', label: 'attempt timeout', text: (ms) => `${ms} ms` },
  }),
  disableAfterSeconds: field(s.whole(60, YEAR_SECONDS), {
    default: { value: 259_200 },
    clearable: true,
    doc: 'seconds without an accepted request before auto-disable (and disableAfterFailures failed attempts)',
    cli: { flag: '--disable-after-seconds <s>' },
  }),
  disableAfterFailures: field(s.whole(1, 1_000_000), {
    default: { value: 20 },
    clearable: true,
    doc: 'failed attempts before auto-disable (and disableAfterSeconds without an accepted request)',
    cli: { flag: '--disable-after-failures <n>' },
  }),
  rateLimitPerSecond: field(s.whole(1, 10_000), {
    default: 'none',
    clearable: true,
    doc: 'at most this many requests per second to it, over all consumers',
    cli: { flag: '--rate-limit-per-second <n>', label: 'rate limit', text: (n) => `${n}/s`, unset: '(none)' },
  }),
  receiverRetentionSeconds: field(s.whole(1, YEAR_SECONDS), {
    default: 'none',
    clearable: true,
    doc: 'how long the receiver remembers event IDs, in seconds; a longer retry window is refused',
    cli: { flag: '--receiver-retention-seconds <s>', label: 'receiver retention', text: (n) => `${n} s`, unset: '(not given)' },
  }),
  recovery: field(s.oneOf(s.RECOVERIES), {
    default: { value: 'review' },
    clearable: true,
    doc: 'review: a dead delivery is dead-lettered; drop: row kept, no dead letter',
    cli: { flag: '--recovery <mode>', label: 'recovery' },
  }),
  ordering: field(s.oneOf(s.ORDERINGS), {
    default: { value: 'none' },
    clearable: true,
    doc: "none, or per-shipment: a shipment's events delivered one at a time, in order (docs/contract.md §13)",
    cli: { flag: '--ordering <mode>', label: 'ordering' },
  }),
  onDead: field(s.oneOf(s.ON_DEAD), {
    default: { value: 'continue' },
    clearable: true,
    doc: 'when an event dies: continue, or hold the later events of its shipment',
    cli: { flag: '--on-dead <mode>', label: 'on dead' },
  }),
  autoDisable: field(s.yesNo, {
    default: { value: true },
    clearable: true,
    doc: 'disable it after a long run of failures (docs/contract.md §12)',
    cli: {
      flag: '--auto-disable',
      off: 'never disable it automatically',
      label: 'auto-disable',
      rowAlso: ['disableAfterSeconds', 'disableAfterFailures'],
      text: (on, settings) =>
        on ? `after ${settings.disableAfterSeconds} s without an accepted request and ${settings.disableAfterFailures} failed attempts` : 'off',
    },
  }),
  owner: field(s.owner, {
    clearable: true,
    doc: 'the account it belongs to (a merchant, a carrier account, a team): 1–128 of A-Z a-z 0-9 . _ : @ + = -; endpoint list --owner finds them',
    cli: { flag: '--owner <owner>', label: 'owner' },
  }),
  // docs/contract.md §18. Resolved, with their secrets read, by the consumer (lib/routing.ts) and
  // sent by the sender after the request's own, which they can never replace (lib/webhook/http-sender.ts).
  headers: field(s.headers, {
    clearable: true,
    doc: 'extra request headers, name → value, or → {"secretArn": ARN} (AWS) / {"secret": value} (the sandbox) for one never shown; at most 20; not host, content-length, content-type, user-agent, webhook-*, idempotency-key, traceparent, tracestate nor a hop-by-hop header',
    cli: {
      flag: '--headers <header>',
      help: "'Name: value' (repeatable; replaces every header the endpoint had; a secret value via --from-file)",
      label: 'headers',
    },
  }),
  signature: field(s.signature, {
    default: { value: 'hmac-sha256' },
    clearable: true,
    doc: "how requests are signed: hmac-sha256 (v1, a whsec_ secret) or ed25519 (v1a, a whsk_ key whose public key the receiver verifies with); must be the secret's scheme",
    cli: { flag: '--signature <scheme>', help: 'rotate-secret --signature changes the scheme of a signed endpoint', label: 'signature' },
  }),
  // Set by handoff from an ed25519 secret whenever one is written (add, update, rotate-secret), so
  // that neither `show` nor the API reads a secret to show it; given only beside a secret kept in
  // Secrets Manager, which handoff cannot read.
  publicKey: field(s.publicKey, {
    requires: [['secret', 'needs the ed25519 secret it is the public key of']],
    doc: "the public key (whpk_…) of its ed25519 secret, which receivers verify v1a signatures with: set from the secret; given only with a secret kept in Secrets Manager",
  }),
  // docs/contract.md §18. Resolved with their secrets read as `headers` are (lib/routing.ts), used by
  // the sender (lib/webhook/**). No option: an object with a secret in it is set with --from-file.
  auth: field(locks.auth, {
    clearable: true,
    doc: 'an OAuth2 client-credentials grant whose token every request carries (Authorization: Bearer): {"type": "oauth2-client-credentials", "tokenUrl", "clientId", "clientSecret": {"secretArn": ARN} (AWS) / {"secret": value} (the sandbox), "scope"?, "audience"?}; tokenUrl checked as url is; the client secret never shown; set with --from-file or the API',
  }),
  tls: field(locks.tls, {
    clearable: true,
    doc: 'a client certificate presented to a receiver that asks for one (mutual TLS): {"clientCertificate": PEM or {"secretArn": ARN}, "privateKey": {"secretArn": ARN} (AWS) / {"secret": PEM} (the sandbox), "ca"?: PEM or {"secretArn": ARN}, trusted for this endpoint alone}; only beside an https url; the key must be the certificate\'s and is never shown; set with --from-file or the API',
  }),
};

type Fields = typeof ENDPOINT_FIELDS;
export type FieldName = keyof Fields;
type Output<K extends FieldName> = v.InferOutput<Fields[K]['schema']>;
type NamesWhere<Condition> = { [K in FieldName]: Fields[K] extends Condition ? K : never }[FieldName];
type RequiredName = NamesWhere<{ required: true }>;
/** The settings: the fields with a default. */
export type SettingName = NamesWhere<{ default: unknown }>;
/** The settings whose default is the deployment's, resolved by hand (resolveEndpoint). */
export type DeploymentSettingName = NamesWhere<{ default: 'deployment' }>;
type OwnDefaultName = Exclude<SettingName, DeploymentSettingName>;
type SecretName = NamesWhere<{ schema: typeof s.secret }>;

/**
 * An endpoint as users write it (endpoints file, `endpoint add`, construct): the contract's field
 * names. Unset optional fields follow the deployment's settings, resolved when the endpoint is used.
 */
export type EndpointFields = { readonly [K in RequiredName]: Output<K> } & { readonly [K in Exclude<FieldName, RequiredName>]?: Output<K> };

/** The settings a resolved endpoint carries as they are, or their default while unset. */
export type ResolvedSettings = {
  readonly [K in OwnDefaultName]: Fields[K] extends { default: { value: unknown } } ? Output<K> : Output<K> | undefined;
};

/** The table, each entry seen alike. */
export const FIELD_SPECS: Readonly<Record<FieldName, FieldSpec>> = ENDPOINT_FIELDS;
export const FIELD_NAMES = Object.keys(ENDPOINT_FIELDS) as FieldName[];
export const SETTING_NAMES = FIELD_NAMES.filter((name) => FIELD_SPECS[name].default !== undefined) as SettingName[];
export const CLEARABLE_FIELDS = FIELD_NAMES.filter((name) => FIELD_SPECS[name].clearable === true);
/** The fields holding a signing secret: never shown, and in the sandbox a `whsec_…` value. */
export const SECRET_FIELDS = FIELD_NAMES.filter((name) => FIELD_SPECS[name].schema === s.secret) as SecretName[];

/** Whether `key` names a field: its own entry, never something an object inherits (`constructor`). */
export function isFieldName(key: string): key is FieldName {
  return Object.hasOwn(ENDPOINT_FIELDS, key);
}

/** A field's own settings resolved: as given, else their default (the contract's, or none). */
export function resolvedSettings(fields: EndpointFields): ResolvedSettings {
  const given = fields as Readonly<Record<string, unknown>>;
  const settings: Record<string, unknown> = {};
  for (const name of SETTING_NAMES) {
    const fallback = FIELD_SPECS[name].default;
    if (fallback === 'deployment') continue;
    settings[name] = given[name] ?? (fallback === 'none' ? undefined : fallback?.value);
  }
  return settings as ResolvedSettings;
}

/** The settings of an endpoint that sets none of its own (the single-URL settings' `default`). */
export const SETTING_DEFAULTS: ResolvedSettings = resolvedSettings({ name: 'default', url: '', eventTypes: [] });
