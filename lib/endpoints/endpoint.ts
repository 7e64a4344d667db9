/**
 * An endpoint: one receiver, what it subscribes to and how it is delivered to (docs/contract.md
 * §11). Its fields are defined in fields.ts; here are the checks every endpoint goes through: the
 * registry, the `handoff endpoint` commands, the construct and the sandbox's endpoints file all use
 * `parseEndpointFields` (the shape of each field) and `resolveEndpoint` (the deployment's defaults
 * and the rules between settings). Errors name the endpoint and the field.
 */
import * as v from 'valibot';
import { checkEndpoint, validateSettings, type SettingNames, type Settings } from '../config';
import { ConfigError, EndpointError } from '../errors';
import { retryPolicy, type RetryPolicy } from '../policy';
import { quoted, safe } from '../terminal';
import { isSecretValue, publicKeyOf, schemeOfSecret, type SignatureScheme } from '../webhook/signing-secret';
import type { ClientCredentials, ClientTls } from '../webhook/sender';
import { ALL_EVENT_TYPES, type MatchValue } from './field-schemas';
import { isEncryptedSecret } from './secret-cipher';
import {
  FIELD_NAMES,
  FIELD_SPECS,
  isFieldName,
  resolvedSettings,
  SETTING_NAMES,
  type DeploymentSettingName,
  type EndpointFields,
  type ResolvedSettings,
  type SettingName,
} from './fields';
import { DEFAULT_ENDPOINT } from '../ledger/delivery-record';
export {
  ALL_EVENT_TYPES,
  ENDPOINT_NAME,
  EVENT_TYPES,
  ON_DEAD,
  ORDERINGS,
  RECOVERIES,
  SIGNATURE_SCHEMES,
  type HeaderValue,
  type MatchValue,
  type OnDead,
  type Ordering,
  type Recovery,
  type SignatureScheme,
} from './field-schemas';
export { SETTING_DEFAULTS, type EndpointFields } from './fields';
export { fieldAt, route, subscribes } from './subscriptions';
export { AUTH_TYPES, type AuthField, type TlsField } from './lock-schemas';

export const ENDPOINT_STATES = ['enabled', 'disabled'] as const;
export type EndpointState = (typeof ENDPOINT_STATES)[number];

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
export interface Endpoint extends ResolvedSettings {
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
  /**
   * Its extra request headers, every value as sent (a secret one read or decrypted): set where its
   * secrets are read (lib/routing.ts), unset when it has none. Lives in the consumer's memory only.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** Its OAuth2 grant with the client secret read (`auth`), set where its secrets are read, as `headers` is; unset without one. */
  readonly auth?: ClientCredentials;
  /** Its client certificate with the key read (`tls`), set as `auth` is; unset without one. */
  readonly tls?: ClientTls;
  readonly policy: RetryPolicy;
  readonly attemptTimeoutMs: number;
  readonly state: EndpointState;
  readonly stateChange: StateChange | undefined;
}

/** The deployment's settings an endpoint's defaults and limits come from. */
export type DeploymentSettings = Pick<
  Settings,
  'retryPolicy' | 'attemptTimeoutMs' | 'retentionDays' | 'allowPrivateCidrs' | 'allowHttp'
>;

/** One field an endpoint cannot have as given, and why (the words after the field's name). */
export interface EndpointFieldProblem {
  /** The field (`url`), or the key inside it a refusal is about (`match.data.carrier`). */
  readonly field: string;
  readonly problem: string;
}

/**
 * Every field of an endpoint that cannot be used as given, not only the first: an API caller is told
 * each bad field at once. Its message (and `field`) are the first problem's, as a refusal of one.
 */
export class EndpointFieldsError extends EndpointError {
  constructor(
    endpoint: string,
    readonly problems: readonly [EndpointFieldProblem, ...EndpointFieldProblem[]],
  ) {
    super(endpoint, problems[0].field, problems[0].problem);
  }
}

/**
 * Checks the shape of every field of an endpoint as given (JSON from a file, the CLI's options,
 * construct properties, a registry item) against its schema in fields.ts: unknown fields, types,
 * ranges, the fields that go together. @throws EndpointFieldsError naming every bad field (its
 * message the first's)
 */
export function parseEndpointFields(input: unknown): EndpointFields {
  const { fields, problems, name } = checkEndpointFields(input);
  if (problems.length > 0) throw new EndpointFieldsError(name, problems as [EndpointFieldProblem, ...EndpointFieldProblem[]]);
  return fields as EndpointFields;
}

/**
 * The fields of an endpoint that parse, and the problem of each that does not, in the order a
 * refusal of one names them: the name first (every other refusal names the endpoint by it), unknown
 * fields, each field in the table's order, then the fields that go together. One problem a field.
 */
export function checkEndpointFields(input: unknown): { fields: Partial<EndpointFields>; problems: EndpointFieldProblem[]; name: string } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { fields: {}, problems: [{ field: 'endpoint', problem: 'must be a JSON object' }], name: '?' };
  }
  const raw = input as Record<string, unknown>;
  const problems: EndpointFieldProblem[] = [];
  const named = v.safeParse(FIELD_SPECS.name.schema, raw.name);
  const name = named.success ? (raw.name as string) : typeof raw.name === 'string' ? raw.name.slice(0, 64) : '?';
  if (!named.success) problems.push({ field: 'name', problem: named.issues[0].message });
  for (const key of Object.keys(raw)) {
    if (!isFieldName(key)) problems.push({ field: safe(key.slice(0, 64)), problem: `is not an endpoint field (fields: ${FIELD_NAMES.join(', ')})` });
  }
  const fields: Record<string, unknown> = named.success ? { name: named.output } : {};
  for (const field of FIELD_NAMES) {
    if (field === 'name') continue;
    const spec = FIELD_SPECS[field];
    if (raw[field] === undefined && spec.required !== true) continue;
    const checked = v.safeParse(spec.schema, raw[field], { abortEarly: true });
    if (!checked.success) problems.push({ field: field + keyNamed(checked.issues[0]), problem: checked.issues[0].message });
    else fields[field] = checked.output;
  }
  for (const field of FIELD_NAMES) {
    if (fields[field] === undefined) continue;
    // A field given but refused above is named once, for what it is, not again as missing here.
    for (const [needed, problem] of FIELD_SPECS[field].requires ?? []) {
      if (fields[needed] === undefined && raw[needed] === undefined) problems.push({ field, problem });
    }
  }
  if (fields.previousSecret !== undefined && fields.previousSecret === fields.secret) {
    problems.push({ field: 'previousSecret', problem: 'is the same as secret (the value is not shown)' });
  }
  problems.push(...keyProblems(fields, raw));
  return { fields: fields as Partial<EndpointFields>, problems, name };
}

/**
 * The signature scheme and the key agree (docs/contract.md §18): an ed25519 secret's public key is
 * its own (set here from a `whsk_` value, so every write of one carries it), an HMAC secret has
 * none, and `signature` names the secret's scheme. The scheme of a secret is its prefix; of one the
 * registry encrypted, whether it has a public key (set when it was written plain); of one kept in
 * Secrets Manager, unknown here (the consumer checks it when it reads it, resolveEndpoint).
 * `fields` holds the parsed fields, and gets the public key of a plain `whsk_` secret.
 */
function keyProblems(fields: Record<string, unknown>, raw: Readonly<Record<string, unknown>>): EndpointFieldProblem[] {
  const secret = fields.secret as string | undefined;
  const given = fields.publicKey as string | undefined;
  const problems: EndpointFieldProblem[] = [];
  if (secret !== undefined && isSecretValue(secret)) {
    const derived = schemeOfSecret(secret) === 'ed25519' ? publicKeyOf(secret) : undefined;
    if (given !== undefined && given !== derived) {
      problems.push({
        field: 'publicKey',
        problem: derived === undefined ? 'is for an ed25519 secret (whsk_…), and the secret is an HMAC-SHA256 one (whsec_…)' : "is not the secret's public key: leave it out, it is set from the secret",
      });
    } else if (derived !== undefined) {
      fields.publicKey = derived;
    }
  }
  const scheme = schemeOfField(secret, fields.publicKey as string | undefined);
  const signature = (fields.signature as SignatureScheme | undefined) ?? 'hmac-sha256';
  // A signature refused by its own check is named once, for that.
  if (scheme !== undefined && scheme !== signature && (raw.signature === undefined || fields.signature !== undefined)) {
    problems.push({ field: 'signature', problem: signatureMismatch(signature, scheme, fields.signature !== undefined) });
  }
  return problems;
}

/** The scheme of a secret field's value as far as it can be told without reading it (keyProblems). */
function schemeOfField(secret: string | undefined, publicKey: string | undefined): SignatureScheme | undefined {
  if (secret === undefined) return undefined;
  if (isSecretValue(secret)) return schemeOfSecret(secret);
  if (isEncryptedSecret(secret)) return publicKey !== undefined ? 'ed25519' : 'hmac-sha256';
  return publicKey !== undefined ? 'ed25519' : undefined;
}

function signatureMismatch(signature: SignatureScheme, scheme: SignatureScheme, given: boolean): string {
  return signature === 'ed25519'
    ? 'is ed25519, but the secret is an HMAC-SHA256 one (whsec_…): rotate-secret --signature ed25519 replaces it with an ed25519 key pair (a secret kept in Secrets Manager: put a whsk_ key there)'
    : `is hmac-sha256${given ? '' : ' (the default)'}, but the secret is an ${scheme} key (whsk_…): set signature to ${scheme}`;
}

/** The key a refusal inside an object field is about (`match.data.carrier`), inert; none for a list's item. */
function keyNamed(issue: v.BaseIssue<unknown>): string {
  const step = issue.path?.[0];
  if (step?.type !== 'object') return '';
  const key = String(step.key);
  return `.${safe(step.origin === 'key' ? key.slice(0, 80) : key)}`;
}

/**
 * An endpoint ready to use: defaults from the deployment, and the rules between settings: the URL
 * passes the endpoint guard, the attempt timeout fits the consumer's (its function timeout is the
 * deployment's), the schedule fits the ledger's retention and the queue's, and a receiver's retention
 * outlasts the schedule. A secret given as an ARN must be resolved by the caller first (`secret`,
 * `previous.secret`), and so must its other secret values (the caller adds `headers`, `auth`, `tls`). A rotation's
 * previous secret is kept while `previous.nowMs` is before its end. A secret given must be of the
 * endpoint's signature scheme: one read from Secrets Manager is checked only here.
 * @throws EndpointError naming the field
 */
export function resolveEndpoint(
  record: EndpointRecord,
  deployment: DeploymentSettings,
  secret: string | undefined = secretValue(record.fields.secret),
  previous: { readonly secret?: string | undefined; readonly nowMs?: number } = {},
): Endpoint {
  const f = record.fields;
  const [first] = ruleProblems(f, deployment);
  if (first !== undefined) throw new EndpointError(f.name, first.field, first.problem);
  const signature = f.signature ?? 'hmac-sha256';
  if (secret !== undefined && schemeOfSecret(secret) !== signature) {
    throw new EndpointError(f.name, 'signature', signatureMismatch(signature, schemeOfSecret(secret), f.signature !== undefined));
  }
  // Only beside a secret: the old one never signs alone.
  const overlapping = secret !== undefined && f.previousSecretUntil !== undefined && (previous.nowMs ?? Date.now()) < f.previousSecretUntil;
  const previousSecret = overlapping ? ('secret' in previous ? previous.secret : secretValue(f.previousSecret)) : undefined;
  const attemptTimeoutMs = f.attemptTimeoutMs ?? deployment.attemptTimeoutMs;
  const policy = policyOf(f, deployment);
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
    ...resolvedSettings(f),
    state: record.state,
    stateChange: record.stateChange,
  };
}

/**
 * The rules between an endpoint's settings and the deployment's, each broken one named: the URL
 * passes the endpoint guard, carries no credentials and is https with `tls`, the attempt timeout fits
 * the consumer's, the retry window fits the ledger's retention and the queue's, and a receiver's
 * retention outlasts it.
 * Checks only what `fields` holds: a field left out (refused by its shape) is not judged again.
 * `resolveEndpoint` refuses with the first.
 */
export function ruleProblems(f: Partial<EndpointFields>, deployment: DeploymentSettings): EndpointFieldProblem[] {
  const problems: EndpointFieldProblem[] = [];
  if (f.url !== undefined) {
    const urlProblem = urlRuleProblem(f.url, deployment, 'url');
    if (urlProblem !== undefined) problems.push({ field: 'url', problem: urlProblem });
  }
  // Presented in a TLS handshake, which an http URL never makes: the sender could not be built.
  if (f.tls !== undefined && f.url !== undefined && parsedUrl(f.url)?.protocol === 'http:') {
    problems.push({ field: 'tls', problem: 'needs an https url: a client certificate is presented in a TLS handshake, which an http URL never makes' });
  }
  // The token endpoint is asked with the client's secret: the same guard as the receiver's URL.
  if (f.auth !== undefined) {
    const tokenUrlProblem = urlRuleProblem(f.auth.tokenUrl, deployment, 'auth.tokenUrl');
    if (tokenUrlProblem !== undefined) problems.push({ field: 'auth.tokenUrl', problem: tokenUrlProblem });
  }
  const attemptTimeoutMs = f.attemptTimeoutMs ?? deployment.attemptTimeoutMs;
  if (attemptTimeoutMs > deployment.attemptTimeoutMs) {
    problems.push({
      field: 'attemptTimeoutMs',
      problem: `must be at most the deployment's attemptTimeoutMs (${deployment.attemptTimeoutMs}), which the consumer's timeout is built on; got ${attemptTimeoutMs}`,
    });
  }
  const policy = policyOf(f, deployment);
  if (policy !== deployment.retryPolicy || f.receiverRetentionSeconds !== undefined) {
    // The deployment's own rules (lib/config.ts), applied to this endpoint's policy, naming its fields.
    // With the deployment's attempt timeout: the queue's visibility timeout, which bounds how long a
    // message can stay in flight, is built on it, whatever shorter timeout this endpoint's requests use.
    try {
      validateSettings(settingsShape({ ...deployment, retryPolicy: policy, receiverRetentionSeconds: f.receiverRetentionSeconds }), FIELD_NAMES_AS_SETTINGS);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push({ field: error.variable, problem: error.message.slice(error.variable.length + 1) });
    }
  }
  return problems;
}

/** Why the endpoint guard (or the credentials rule) refuses a URL (the field `name`), or undefined. */
function urlRuleProblem(url: string, deployment: DeploymentSettings, name: string): string | undefined {
  // As for HANDOFF_WEBHOOK_URL (lib/config.ts): userinfo would travel in a header no log redacts.
  if (hasCredentials(url)) {
    return 'must not carry credentials (user:password@): a receiver takes a token in the query or checks the signature (the URL is not shown)';
  }
  try {
    checkEndpoint(url, deployment, name);
  } catch (error) {
    if (error instanceof ConfigError) return error.message.slice(name.length + 1);
    throw error;
  }
  return undefined;
}

function policyOf(f: Partial<EndpointFields>, deployment: DeploymentSettings): RetryPolicy {
  return f.retrySchedule !== undefined || f.maxAttempts !== undefined
    ? retryPolicy(f.maxAttempts ?? deployment.retryPolicy.maxAttempts, f.retrySchedule ?? deployment.retryPolicy.waitsSeconds)
    : deployment.retryPolicy;
}

/**
 * Every problem an endpoint as given has, of its fields' shapes and of the rules against the
 * deployment's settings: what the API names, field by field, when it refuses one. A rule is judged
 * only on fields whose shape is good (a retry window only when neither of its fields is refused).
 */
export function endpointProblems(input: unknown, deployment: DeploymentSettings): { fields: Partial<EndpointFields>; problems: EndpointFieldProblem[]; name: string } {
  const { fields, problems, name } = checkEndpointFields(input);
  const refused = new Set(problems.map((p) => p.field.split('.')[0]));
  const judged: Partial<EndpointFields> =
    refused.has('retrySchedule') || refused.has('maxAttempts') || refused.has('receiverRetentionSeconds')
      ? { ...fields, retrySchedule: undefined, maxAttempts: undefined, receiverRetentionSeconds: undefined }
      : fields;
  const rules = ruleProblems(judged, deployment).filter((p) => !refused.has(p.field));
  return { fields, problems: [...problems, ...rules], name };
}

/** A secret field's value when it is one itself (`whsec_…`, `whsk_…`), not a reference or a ciphertext. */
function secretValue(secret: string | undefined): string | undefined {
  return secret !== undefined && isSecretValue(secret) ? secret : undefined;
}

/** A URL as `URL` reads it; undefined for no URL, which the endpoint guard names. */
function parsedUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

function hasCredentials(url: string): boolean {
  const parsed = parsedUrl(url);
  return parsed !== undefined && (parsed.username !== '' || parsed.password !== '');
}

/** How each setting whose default is the deployment's appears in a resolved endpoint. */
const FROM_DEPLOYMENT: { readonly [K in DeploymentSettingName]: (endpoint: Endpoint) => unknown } = {
  retrySchedule: (endpoint) => endpoint.policy.waitsSeconds,
  maxAttempts: (endpoint) => endpoint.policy.maxAttempts,
  attemptTimeoutMs: (endpoint) => endpoint.attemptTimeoutMs,
};

/** Every setting of a resolved endpoint by its field's name: the value in effect (undefined: none). */
export function effectiveSettings(endpoint: Endpoint): Readonly<Record<SettingName, unknown>> {
  const own = endpoint as unknown as Readonly<Record<string, unknown>>;
  return Object.fromEntries(
    SETTING_NAMES.map((name) => [name, Object.hasOwn(FROM_DEPLOYMENT, name) ? FROM_DEPLOYMENT[name as DeploymentSettingName](endpoint) : own[name]]),
  ) as Record<SettingName, unknown>;
}

/** The single-URL settings as an endpoint: `default`, subscribed to every event type. */
export function defaultEndpointFields(url: string, secret?: string): EndpointFields {
  return { name: DEFAULT_ENDPOINT, url, eventTypes: [ALL_EVENT_TYPES], ...(secret !== undefined ? { secret } : {}) };
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
    shipmentIndex: true,
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
  shipmentIndex: 'shipmentIndex',
};

export { deploymentFromJson, deploymentToJson, type DeploymentSettingsJson } from './deployment-json';
