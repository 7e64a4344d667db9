/**
 * An endpoint: one receiver, what it subscribes to and how it is delivered to (docs/contract.md
 * §11). The one definition of an endpoint's settings and their validation: the registry, the
 * `handoff endpoint` commands, the construct and the sandbox's endpoints file all go through
 * `parseEndpointFields` (the shape of each field) and `resolveEndpoint` (the deployment's defaults
 * and the rules between settings). Errors name the endpoint and the field.
 */
import { FORBIDDEN_KEYS, SHIPMENT_STATUSES, type ShipmentEvent } from '../event';
import { checkEndpoint, ConfigError, validateSettings, type SettingNames, type Settings } from '../config';
import { MAX_WAIT_SECONDS, retryPolicy, type RetryPolicy } from '../policy';
import { quoted, safe } from '../terminal';
import { createSigner, SigningSecretError } from '../webhook/signing-secret';
import { isEncryptedSecret } from './secret-cipher';

/** The endpoint of the single-URL settings (`HANDOFF_WEBHOOK_URL`, the construct's `webhookUrl`). */
export const DEFAULT_ENDPOINT_NAME = 'default';
export const ENDPOINT_NAME = /^[a-z0-9-]{1,64}$/;
/** Every event type an endpoint can subscribe to, and `*` for all of them. */
export const EVENT_TYPES = SHIPMENT_STATUSES.map((status) => `shipment.${status}`);
export const ALL_EVENT_TYPES = '*';
export const RECOVERIES = ['review', 'drop'] as const;
export const ORDERINGS = ['none', 'per-shipment'] as const;
export const ON_DEAD = ['continue', 'hold'] as const;
export const ENDPOINT_STATES = ['enabled', 'disabled'] as const;
/**
 * `match` keys: the event's fields, dotted into `data` (`data.carrier`), none of them a forbidden
 * key (lib/event.ts). Checked by `parseEndpointFields` alone, for the endpoints file, `--match`,
 * `--from-file`, the construct and the registry's items alike.
 */
const MATCH_KEY = /^(shipmentId|status|data(\.[A-Za-z0-9_-]{1,64}){1,8})$/;
const MAX_MATCH_KEYS = 16;
const MAX_MATCH_VALUES = 64;
const MAX_ENDPOINT_RETENTION_SECONDS = 366 * 24 * 60 * 60;
const MAX_URL_LENGTH = 2048;
/** The latest time a JavaScript Date holds, in epoch ms. */
const MAX_EPOCH_MS = 8_640_000_000_000_000;
/** A Secrets Manager secret's ARN, in any partition (aws, aws-cn, aws-us-gov). */
const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}$/;

export type Recovery = (typeof RECOVERIES)[number];
export type Ordering = (typeof ORDERINGS)[number];
export type OnDead = (typeof ON_DEAD)[number];
export type EndpointState = (typeof ENDPOINT_STATES)[number];
export type MatchValue = string | number | boolean;

/**
 * An endpoint as users write it (endpoints file, `endpoint add`, construct): the contract's field
 * names. Unset optional fields follow the deployment's settings, resolved when the endpoint is used.
 */
export interface EndpointFields {
  readonly name: string;
  readonly url: string;
  readonly eventTypes: readonly string[];
  readonly match?: Readonly<Record<string, readonly MatchValue[]>>;
  /**
   * Its signing secret: a `whsec_…` value, `arn:…` of a Secrets Manager secret holding one (endpoints
   * the construct declares), or a value encrypted with the registry's key (`encrypted:kms:…`, in the
   * sandbox `encrypted:local:…`: lib/endpoints/secret-cipher.ts), which is how the registry stores
   * a value `handoff endpoint` writes. Never shown again. Unset: requests go unsigned.
   */
  readonly secret?: string;
  /**
   * A rotation's old secret (docs/contract.md §12), in either form `secret` takes: until
   * `previousSecretUntil` every request also carries a signature under it. Set by
   * `endpoint rotate-secret`, never shown; both or neither, and only beside a `secret`.
   */
  readonly previousSecret?: string;
  /** Epoch ms: when `previousSecret` stops signing. */
  readonly previousSecretUntil?: number;
  readonly retrySchedule?: readonly number[];
  readonly maxAttempts?: number;
  readonly attemptTimeoutMs?: number;
  readonly recovery?: Recovery;
  readonly ordering?: Ordering;
  readonly onDead?: OnDead;
  readonly autoDisable?: boolean;
  readonly disableAfterSeconds?: number;
  readonly disableAfterFailures?: number;
  readonly rateLimitPerSecond?: number;
  readonly receiverRetentionSeconds?: number;
}

/** Who changed an endpoint's state, why and when (epoch ms). */
export interface StateChange {
  readonly by: string;
  readonly reason: string;
  readonly at: number;
}

/** An endpoint as the registry holds it: its fields and its state. */
export interface EndpointRecord {
  readonly fields: EndpointFields;
  readonly state: EndpointState;
  /** The last change of state (absent while it was never disabled). */
  readonly stateChange?: StateChange;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** An endpoint ready to deliver to: every setting resolved against the deployment's. */
export interface Endpoint {
  readonly name: string;
  readonly url: string;
  readonly eventTypes: readonly string[];
  readonly match: Readonly<Record<string, readonly MatchValue[]>>;
  readonly secret: string | undefined;
  /**
   * A rotation's old secret while its overlap lasted when resolved, with its end (epoch ms): the
   * sender decides per request, since a resolved endpoint may be used past the end. Else both unset.
   */
  readonly previousSecret: string | undefined;
  readonly previousSecretUntil: number | undefined;
  readonly policy: RetryPolicy;
  readonly attemptTimeoutMs: number;
  readonly recovery: Recovery;
  readonly ordering: Ordering;
  readonly onDead: OnDead;
  readonly autoDisable: boolean;
  readonly disableAfterSeconds: number;
  readonly disableAfterFailures: number;
  readonly rateLimitPerSecond: number | undefined;
  readonly receiverRetentionSeconds: number | undefined;
  readonly state: EndpointState;
  readonly stateChange: StateChange | undefined;
}

/** The deployment's settings an endpoint's defaults and limits come from. */
export type DeploymentSettings = Pick<
  Settings,
  'retryPolicy' | 'attemptTimeoutMs' | 'retentionDays' | 'allowPrivateCidrs' | 'allowHttp'
>;

/**
 * An endpoint setting that cannot be used; the message names the endpoint and the field, and
 * quotes what was given inert (lib/terminal.ts), whatever file or option it came from.
 */
export class EndpointError extends Error {
  override readonly name = 'EndpointError';
  readonly code = 'invalid-endpoint';
  constructor(
    readonly endpoint: string,
    readonly field: string,
    problem: string,
  ) {
    super(`endpoint ${quoted(endpoint)}: ${field} ${problem}`);
  }
}

const FIELD_NAMES: readonly (keyof EndpointFields)[] = [
  'name',
  'url',
  'eventTypes',
  'match',
  'secret',
  'previousSecret',
  'previousSecretUntil',
  'retrySchedule',
  'maxAttempts',
  'attemptTimeoutMs',
  'recovery',
  'ordering',
  'onDead',
  'autoDisable',
  'disableAfterSeconds',
  'disableAfterFailures',
  'rateLimitPerSecond',
  'receiverRetentionSeconds',
];

export const DISABLE_DEFAULTS = { disableAfterSeconds: 259_200, disableAfterFailures: 20 } as const;

/**
 * Checks the shape of every field of an endpoint as given (JSON from a file, the CLI's options,
 * construct properties): unknown fields, types, ranges. @throws EndpointError naming the field
 */
export function parseEndpointFields(input: unknown): EndpointFields {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new EndpointError('?', 'endpoint', 'must be a JSON object');
  }
  const raw = input as Record<string, unknown>;
  const name = raw.name;
  if (typeof name !== 'string' || !ENDPOINT_NAME.test(name)) {
    throw new EndpointError(typeof name === 'string' ? name.slice(0, 64) : '?', 'name', 'must be 1–64 characters of a-z 0-9 -');
  }
  const fail = (field: string, problem: string): never => {
    throw new EndpointError(name, field, problem);
  };
  for (const key of Object.keys(raw)) {
    if (!(FIELD_NAMES as readonly string[]).includes(key)) fail(safe(key.slice(0, 64)), `is not an endpoint field (fields: ${FIELD_NAMES.join(', ')})`);
  }
  if (typeof raw.url !== 'string' || raw.url.length === 0) fail('url', 'must be an absolute https URL');
  // Not shown: a URL may carry a credential (docs/contract.md §3).
  if ((raw.url as string).length > MAX_URL_LENGTH) fail('url', `must be at most ${MAX_URL_LENGTH} characters, got ${(raw.url as string).length}`);
  const eventTypes = raw.eventTypes;
  if (!Array.isArray(eventTypes) || eventTypes.length === 0) fail('eventTypes', `must be a non-empty list of event types or ["${ALL_EVENT_TYPES}"]`);
  for (const type of eventTypes as unknown[]) {
    if (type !== ALL_EVENT_TYPES && !EVENT_TYPES.includes(type as string)) {
      fail('eventTypes', `holds ${quoted(type)}: each must be one of ${EVENT_TYPES.join(', ')} or "${ALL_EVENT_TYPES}"`);
    }
  }
  const fields: Record<string, unknown> = { name, url: raw.url, eventTypes: [...new Set(eventTypes as string[])] };
  if (raw.match !== undefined) fields.match = parseMatch(raw.match, fail);
  for (const field of ['secret', 'previousSecret'] as const) {
    if (raw[field] !== undefined) fields[field] = parseSecret(raw[field], field, fail);
  }
  if (raw.previousSecretUntil !== undefined) {
    if (!isWhole(raw.previousSecretUntil, 0, MAX_EPOCH_MS)) fail('previousSecretUntil', `must be a time in epoch milliseconds, got ${quoted(raw.previousSecretUntil)}`);
    fields.previousSecretUntil = raw.previousSecretUntil;
  }
  if ((fields.previousSecret === undefined) !== (fields.previousSecretUntil === undefined)) {
    fail(fields.previousSecret === undefined ? 'previousSecretUntil' : 'previousSecret', 'needs previousSecret and previousSecretUntil together: the old secret and when it stops signing');
  }
  if (fields.previousSecret !== undefined) {
    if (fields.secret === undefined) fail('previousSecret', 'needs a secret: during a rotation the new secret signs first');
    if (fields.previousSecret === fields.secret) fail('previousSecret', 'is the same as secret (the value is not shown)');
  }
  if (raw.retrySchedule !== undefined) {
    const waits = raw.retrySchedule;
    if (!Array.isArray(waits) || waits.length === 0 || waits.length > 100 || !waits.every((w) => isWhole(w, 0, MAX_WAIT_SECONDS))) {
      fail('retrySchedule', `must be a list of 1–100 waits in whole seconds from 0 to ${MAX_WAIT_SECONDS}`);
    }
    fields.retrySchedule = [...(waits as number[])];
  }
  const wholeFields: [keyof EndpointFields, number, number][] = [
    ['maxAttempts', 1, 100],
    ['attemptTimeoutMs', 100, 880_000],
    ['disableAfterSeconds', 60, 366 * 24 * 60 * 60],
    ['disableAfterFailures', 1, 1_000_000],
    ['rateLimitPerSecond', 1, 10_000],
    ['receiverRetentionSeconds', 1, MAX_ENDPOINT_RETENTION_SECONDS],
  ];
  for (const [field, min, max] of wholeFields) {
    const value = raw[field];
    if (value === undefined) continue;
    if (!isWhole(value, min, max)) fail(field, `must be a whole number from ${min} to ${max}, got ${quoted(value)}`);
    fields[field] = value;
  }
  const choices: [keyof EndpointFields, readonly string[]][] = [
    ['recovery', RECOVERIES],
    ['ordering', ORDERINGS],
    ['onDead', ON_DEAD],
  ];
  for (const [field, allowed] of choices) {
    const value = raw[field];
    if (value === undefined) continue;
    if (typeof value !== 'string' || !allowed.includes(value)) fail(field, `must be one of ${allowed.join(', ')}, got ${quoted(value)}`);
    fields[field] = value;
  }
  if (raw.autoDisable !== undefined) {
    if (typeof raw.autoDisable !== 'boolean') fail('autoDisable', 'must be true or false');
    fields.autoDisable = raw.autoDisable;
  }
  return fields as unknown as EndpointFields;
}

/**
 * An endpoint ready to use: defaults from the deployment, and the rules between settings: the URL
 * passes the endpoint guard, the attempt timeout fits the consumer's (its function timeout is the
 * deployment's), the schedule fits the ledger's retention and the queue's, and a receiver's retention
 * outlasts the schedule. A secret given as an ARN must be resolved by the caller first (`secret`,
 * `previous.secret`). A rotation's previous secret is kept while `previous.nowMs` is before its end.
 * @throws EndpointError naming the field
 */
export function resolveEndpoint(
  record: EndpointRecord,
  deployment: DeploymentSettings,
  secret: string | undefined = whsecValue(record.fields.secret),
  previous: { readonly secret?: string | undefined; readonly nowMs?: number } = {},
): Endpoint {
  const f = record.fields;
  const fail = (field: string, problem: string): never => {
    throw new EndpointError(f.name, field, problem);
  };
  // As for HANDOFF_WEBHOOK_URL (lib/config.ts): userinfo would travel in a header no log redacts.
  if (hasCredentials(f.url)) {
    fail('url', 'must not carry credentials (user:password@): a receiver takes a token in the query or checks the signature (the URL is not shown)');
  }
  // Only beside a secret: the old one never signs alone.
  const overlapping = secret !== undefined && f.previousSecretUntil !== undefined && (previous.nowMs ?? Date.now()) < f.previousSecretUntil;
  const previousSecret = overlapping ? ('secret' in previous ? previous.secret : whsecValue(f.previousSecret)) : undefined;
  try {
    checkEndpoint(f.url, deployment, 'url');
  } catch (error) {
    if (error instanceof ConfigError) fail('url', error.message.replace(/^url /, ''));
    throw error;
  }
  const attemptTimeoutMs = f.attemptTimeoutMs ?? deployment.attemptTimeoutMs;
  if (attemptTimeoutMs > deployment.attemptTimeoutMs) {
    fail('attemptTimeoutMs', `must be at most the deployment's attemptTimeoutMs (${deployment.attemptTimeoutMs}), which the consumer's timeout is built on; got ${attemptTimeoutMs}`);
  }
  const policy =
    f.retrySchedule !== undefined || f.maxAttempts !== undefined
      ? retryPolicy(f.maxAttempts ?? deployment.retryPolicy.maxAttempts, f.retrySchedule ?? deployment.retryPolicy.waitsSeconds)
      : deployment.retryPolicy;
  if (policy !== deployment.retryPolicy || f.receiverRetentionSeconds !== undefined) {
    // The deployment's own rules (lib/config.ts), applied to this endpoint's policy, naming its fields.
    // With the deployment's attempt timeout: the queue's visibility timeout, which bounds how long a
    // message can stay in flight, is built on it, whatever shorter timeout this endpoint's requests use.
    try {
      validateSettings(settingsShape({ ...deployment, retryPolicy: policy, receiverRetentionSeconds: f.receiverRetentionSeconds }), FIELD_NAMES_AS_SETTINGS);
    } catch (error) {
      if (error instanceof ConfigError) fail(error.variable, error.message.slice(error.variable.length + 1));
      throw error;
    }
  }
  return {
    name: f.name,
    url: f.url,
    eventTypes: f.eventTypes,
    match: f.match ?? {},
    secret,
    previousSecret,
    previousSecretUntil: previousSecret === undefined ? undefined : f.previousSecretUntil,
    policy,
    attemptTimeoutMs,
    recovery: f.recovery ?? 'review',
    ordering: f.ordering ?? 'none',
    onDead: f.onDead ?? 'continue',
    autoDisable: f.autoDisable ?? true,
    disableAfterSeconds: f.disableAfterSeconds ?? DISABLE_DEFAULTS.disableAfterSeconds,
    disableAfterFailures: f.disableAfterFailures ?? DISABLE_DEFAULTS.disableAfterFailures,
    rateLimitPerSecond: f.rateLimitPerSecond,
    receiverRetentionSeconds: f.receiverRetentionSeconds,
    state: record.state,
    stateChange: record.stateChange,
  };
}

function whsecValue(secret: string | undefined): string | undefined {
  return secret?.startsWith('whsec_') ? secret : undefined;
}

function hasCredentials(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false; // not a URL: the endpoint guard names that
  }
}

/** Whether `endpoint` subscribes to `event`: its type is among `eventTypes`, and every `match` key holds one of its values. */
export function subscribes(endpoint: Pick<Endpoint, 'eventTypes' | 'match'>, event: ShipmentEvent): boolean {
  const type = `shipment.${event.status}`;
  if (!endpoint.eventTypes.includes(ALL_EVENT_TYPES) && !endpoint.eventTypes.includes(type)) return false;
  for (const [path, values] of Object.entries(endpoint.match)) {
    const value = fieldAt(event, path);
    if (!values.some((wanted) => wanted === value)) return false;
  }
  return true;
}

/**
 * The endpoints an event is delivered to: every one, enabled or disabled, that subscribes to it
 * (a disabled one parks its delivery), in name order so every consumer routes alike.
 */
export function route<E extends Pick<Endpoint, 'name' | 'eventTypes' | 'match'>>(endpoints: readonly E[], event: ShipmentEvent): E[] {
  return endpoints.filter((endpoint) => subscribes(endpoint, event)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The single-URL settings as an endpoint: `default`, subscribed to every event type. */
export function defaultEndpointFields(url: string, secret?: string): EndpointFields {
  return { name: DEFAULT_ENDPOINT_NAME, url, eventTypes: [ALL_EVENT_TYPES], ...(secret !== undefined ? { secret } : {}) };
}

function fieldAt(event: ShipmentEvent, path: string): unknown {
  let value: unknown = event;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function parseMatch(raw: unknown, fail: (field: string, problem: string) => never): Record<string, MatchValue[]> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('match', 'must be an object of field → list of values, e.g. {"data.carrier": ["acme"]}');
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > MAX_MATCH_KEYS) fail('match', `may have at most ${MAX_MATCH_KEYS} keys`);
  const match: Record<string, MatchValue[]> = {};
  for (const [key, values] of entries) {
    if (!MATCH_KEY.test(key)) fail(`match.${safe(key.slice(0, 80))}`, 'is not a field to match: use shipmentId, status or data.<field>[.<field>…]');
    // No event holds one (lib/event.ts refuses them anywhere in an event): the filter would match nothing.
    const forbidden = key.split('.').find((part) => FORBIDDEN_KEYS.has(part));
    if (forbidden !== undefined) fail(`match.${key}`, `is not a field to match: ${forbidden} is a forbidden key, which no event holds`);
    if (!Array.isArray(values) || values.length === 0 || values.length > MAX_MATCH_VALUES) {
      fail(`match.${key}`, `must be a list of 1–${MAX_MATCH_VALUES} values`);
    }
    for (const value of values as unknown[]) {
      const scalar = typeof value === 'string' ? value.length <= 256 : typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
      if (!scalar) fail(`match.${key}`, 'values must be strings (up to 256 characters), numbers or booleans');
    }
    match[key] = [...(values as MatchValue[])];
  }
  return match;
}

/**
 * A signing secret field: a whsec value the signer accepts, a Secrets Manager ARN, or a value
 * encrypted with the registry's key (`ENCRYPTED_SECRET`, lib/endpoints/secret-cipher.ts: its
 * plaintext is checked where it was encrypted, and decrypted by the consumer alone). Never echoed.
 */
function parseSecret(raw: unknown, field: string, fail: (field: string, problem: string) => never): string {
  if (typeof raw !== 'string' || !(raw.startsWith('whsec_') || SECRET_ARN.test(raw) || isEncryptedSecret(raw))) {
    fail(field, 'must be a whsec_… signing secret, the ARN of a Secrets Manager secret holding one, or one the registry encrypted (encrypted:kms:… or encrypted:local:…) (the value is not shown)');
  }
  // A value that cannot sign would fail every attempt: refused here, by the signer itself.
  const secret = raw as string;
  if (secret.startsWith('whsec_')) {
    try {
      createSigner(secret);
    } catch (error) {
      if (error instanceof SigningSecretError) fail(field, `${error.message} (the value is not shown)`);
      throw error;
    }
  }
  return secret;
}

function isWhole(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}

/** The deployment settings with an endpoint's policy, in the shape the deployment's own checks take. */
function settingsShape(s: DeploymentSettings & { receiverRetentionSeconds: number | undefined }): Settings {
  return {
    webhookUrl: undefined,
    webhookSecret: undefined,
    retryPolicy: s.retryPolicy,
    attemptTimeoutMs: s.attemptTimeoutMs,
    payloadLimitBytes: 65_536,
    batchSize: 1,
    maxConcurrency: 2,
    retentionDays: s.retentionDays,
    receiverRetentionSeconds: s.receiverRetentionSeconds,
    allowPrivateCidrs: s.allowPrivateCidrs,
    allowHttp: s.allowHttp,
  };
}

/** The deployment's settings as an endpoint's fields call them (the ones it has no field for keep their names). */
const FIELD_NAMES_AS_SETTINGS: SettingNames = {
  webhookUrl: 'url',
  webhookSecret: 'secret',
  retryPolicy: 'retrySchedule/maxAttempts',
  attemptTimeoutMs: 'attemptTimeoutMs',
  payloadLimitBytes: 'payloadLimitBytes',
  batchSize: 'batchSize',
  maxConcurrency: 'maxConcurrency',
  retentionDays: "the deployment's retentionDays",
  receiverRetentionSeconds: 'receiverRetentionSeconds',
  allowPrivateCidrs: 'allowPrivateCidrs',
  allowHttp: 'allowHttp',
};

/** The deployment's settings as the sandbox's state file and the stack's `EndpointDefaults` output carry them. */
export interface DeploymentSettingsJson {
  readonly retrySchedule: readonly number[];
  readonly maxAttempts: number;
  readonly attemptTimeoutMs: number;
  readonly retentionDays: number;
  readonly allowPrivateCidrs: readonly string[];
  readonly allowHttp: boolean;
}

export function deploymentToJson(settings: DeploymentSettings): DeploymentSettingsJson {
  return {
    retrySchedule: settings.retryPolicy.waitsSeconds,
    maxAttempts: settings.retryPolicy.maxAttempts,
    attemptTimeoutMs: settings.attemptTimeoutMs,
    retentionDays: settings.retentionDays,
    allowPrivateCidrs: settings.allowPrivateCidrs,
    allowHttp: settings.allowHttp,
  };
}

/** @throws RangeError naming `source` when the JSON is not what `deploymentToJson` writes */
export function deploymentFromJson(json: unknown, source: string): DeploymentSettings {
  const j = json as Partial<DeploymentSettingsJson> | null;
  const ok =
    typeof j === 'object' &&
    j !== null &&
    Array.isArray(j.retrySchedule) &&
    j.retrySchedule.every((w) => isWhole(w, 0, MAX_WAIT_SECONDS)) &&
    isWhole(j.maxAttempts, 1, 100) &&
    isWhole(j.attemptTimeoutMs, 100, 880_000) &&
    isWhole(j.retentionDays, 1, 3650) &&
    Array.isArray(j.allowPrivateCidrs) &&
    j.allowPrivateCidrs.every((c) => typeof c === 'string') &&
    typeof j.allowHttp === 'boolean';
  if (!ok) throw new RangeError(`${source} does not hold the deployment's endpoint defaults`);
  return {
    retryPolicy: retryPolicy(j.maxAttempts!, j.retrySchedule!),
    attemptTimeoutMs: j.attemptTimeoutMs!,
    retentionDays: j.retentionDays!,
    allowPrivateCidrs: j.allowPrivateCidrs!,
    allowHttp: j.allowHttp!,
  };
}
