/**
 * An endpoint as the `handoff endpoint` commands print it, in JSON and in text: never its secret
 * nor a rotation's previous one (whether one is set, and until when the previous one signs), nor a
 * secret header value nor the other secret values of `auth` and `tls` (`{"secret": true}` in their
 * place; one kept in Secrets Manager by its ARN), its URLs redacted (docs/contract.md §3); an
 * ed25519 secret's public key as it is (docs/contract.md §18). Its settings, as given and in effect, are listed from the
 * fields table (lib/endpoints/fields.ts): each under its field's name in JSON, under its label in
 * `show`, marked `(default)` while the endpoint does not set it.
 */
import { effectiveSettings, type AuthField, type Endpoint, type EndpointFields, type EndpointRecord, type HeaderValue, type TlsField } from '../../lib/endpoints/endpoint';
import { certificateSummary } from '../../lib/endpoints/pem';
import type { SecretValue } from '../../lib/endpoints/secret-values';
import { safe } from '../../lib/terminal';
import { FIELD_SPECS, SETTING_NAMES, type FieldName } from '../../lib/endpoints/fields';
import { describeHealth, healthJson, type HealthRecord } from '../../lib/endpoints/health';
import { rampRate, type Resume } from '../../lib/resume';
import { redactUrl } from '../../lib/webhook/redact-url';
import { formatInstant, keyValues } from '../format';

type Row = [label: string, text: string];

/**
 * An endpoint as the commands print it: never its secret nor a rotation's previous one, its URL
 * redacted; while an overlap lasts at `nowMs`, when the previous secret stops signing; its parked
 * deliveries as counted (`parkedCount`; null: not counted).
 */
export function endpointJson(record: EndpointRecord, nowMs: number = Date.now(), parked: number | null = null) {
  const overlapUntil = overlapEnd(record.fields, nowMs);
  return {
    name: record.fields.name,
    url: redactUrl(record.fields.url),
    state: record.state,
    eventTypes: record.fields.eventTypes,
    match: record.fields.match ?? {},
    /** The account it belongs to (`--owner`), or null. */
    owner: record.fields.owner ?? null,
    secret: record.fields.secret === undefined ? 'unset' : 'set',
    /** An ed25519 secret's public key (`whpk_…`), what its receiver verifies with; null for an HMAC secret, or one whose key is not known. */
    publicKey: record.fields.publicKey ?? null,
    /** Its extra request headers: text as it is, a secret value as `{"secret": true}`. */
    headers: headersJson(record.fields.headers),
    /** Its OAuth2 grant (docs/contract.md §18), the client secret as `{"secret": true}` or its ARN; null without one. */
    auth: authJson(record.fields.auth),
    /** Its client certificate and CA as given (public), the key as `{"secret": true}` or its ARN; null without one. */
    tls: tlsJson(record.fields.tls),
    /** While a rotation's overlap lasts: when the previous secret stops signing (ISO). */
    previousSecretUntil: overlapUntil === undefined ? null : new Date(overlapUntil).toISOString(),
    /** Deliveries parked for it (docs/contract.md §12); null when not counted. */
    parked,
    /** Back-pressure and failures as the consumers last wrote them (docs/contract.md §12). */
    health: healthJson((record as HealthRecord).health, nowMs),
    stateChange: record.stateChange === undefined ? null : { ...record.stateChange, at: new Date(record.stateChange.at).toISOString() },
    /** The endpoint's own settings (unset: the deployment's default). */
    settings: Object.fromEntries(ownSettings(record.fields)),
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(record.updatedAt).toISOString(),
  };
}

/** The value every secret header is shown as: whether it is set, never what it is. */
export const SECRET_HEADER_SHOWN = { secret: true } as const;

/** An endpoint's headers as shown: each text value as it is, each secret one as `{"secret": true}`. */
export function headersJson(headers: Readonly<Record<string, HeaderValue>> | undefined): Record<string, string | typeof SECRET_HEADER_SHOWN> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name, typeof value === 'string' ? value : SECRET_HEADER_SHOWN]));
}

/**
 * A secret value of `auth` or `tls` as shown: a value as `{"secret": true}`, never what it is; an ARN
 * as itself, which says where it is kept and is no secret. Sent back so in an update, it keeps the value.
 */
function secretValueJson(value: SecretValue): SecretValue | typeof SECRET_HEADER_SHOWN {
  return 'secretArn' in value ? { secretArn: value.secretArn } : SECRET_HEADER_SHOWN;
}

/**
 * An endpoint's OAuth2 grant as shown: its token URL redacted as `url` is, its client secret never.
 * Sent back so in an update, the token URL is kept as `url` is (endpoint-write.ts).
 */
export function authJson(auth: AuthField | undefined) {
  if (auth === undefined) return null;
  return { ...auth, tokenUrl: redactUrl(auth.tokenUrl), clientSecret: secretValueJson(auth.clientSecret) };
}

/** An endpoint's client certificate as shown: the certificate and CA as given (PEM is public), the key never. */
export function tlsJson(tls: TlsField | undefined) {
  if (tls === undefined) return null;
  const shown = (value: string | SecretValue) => (typeof value === 'string' ? value : secretValueJson(value));
  return {
    clientCertificate: shown(tls.clientCertificate),
    privateKey: secretValueJson(tls.privateKey),
    ...(tls.ca !== undefined ? { ca: shown(tls.ca) } : {}),
  };
}

/** Every setting in effect, by its field's name (null: none). */
export function effectiveJson(endpoint: Endpoint): Record<string, unknown> {
  return Object.fromEntries(Object.entries(effectiveSettings(endpoint)).map(([name, value]) => [name, value ?? null]));
}

/** A release in progress as the commands print it: times as ISO, and the ramp's rate at `nowMs`. */
export function releaseJson(release: Resume | undefined, nowMs: number) {
  if (release === undefined) return null;
  return {
    since: new Date(release.since).toISOString(),
    rate: release.rate,
    rateNow: rampRate(release, nowMs),
    scheduledUntil: release.until === undefined ? null : new Date(release.until).toISOString(),
  };
}

/** `show`: its fields, state, health, parking, and the settings in effect unless it cannot be used (`problem`). */
export function showText(
  record: EndpointRecord,
  parking: { parked: number | null; release: Resume | undefined },
  effective: Endpoint | undefined,
  problem: string | undefined,
  source: string,
  nowMs: number,
): string {
  const f = record.fields;
  const rows: Row[] = [
    [label('name'), f.name],
    ['state', stateText(record, nowMs)],
    ['health', describeHealth((record as HealthRecord).health, nowMs)],
    ...subscriptionRows(f, nowMs).slice(1),
    ['parked', parkedText(record, parking.parked, parking.release)],
    ['release', releaseText(parking.release, nowMs)],
    ['created', formatInstant(record.createdAt, nowMs)],
    ['updated', formatInstant(record.updatedAt, nowMs)],
    ...(effective === undefined ? [] : settingRows(f, effective)),
  ];
  const note = problem === undefined ? `defaults from ${source}` : `cannot be used with ${source}: ${problem}`;
  return `${keyValues(rows)}\n\n${note}`;
}

/** The fields as given, after add or update: its settings under their fields' names. */
export function showFields(record: EndpointRecord, nowMs: number): string {
  const [name, ...subscription] = subscriptionRows(record.fields, nowMs);
  const settings = ownSettings(record.fields).map(([field, value]): Row => [field, plainText(value)]);
  return keyValues([name!, ['state', record.state], ...subscription, ...settings]);
}

/**
 * The rows of what it is and subscribes to, how it signs and what it adds: name, url, event types,
 * match, secret, its public key and headers when it has them.
 */
function subscriptionRows(f: EndpointFields, nowMs: number): Row[] {
  return [
    [label('name'), f.name],
    ...(f.owner !== undefined ? [[label('owner'), f.owner] as Row] : []),
    [label('url'), redactUrl(f.url)],
    [label('eventTypes'), f.eventTypes.join(', ')],
    [label('match'), Object.keys(f.match ?? {}).length === 0 ? '(none)' : matchText(f.match ?? {})],
    [label('secret'), secretText(f, nowMs)],
    ...(f.publicKey !== undefined ? [['public key', f.publicKey] as Row] : []),
    ...(f.headers !== undefined && Object.keys(f.headers).length > 0 ? [[label('headers'), headersText(f.headers)] as Row] : []),
    ...(f.auth !== undefined ? [['auth', authText(f.auth)] as Row] : []),
    ...(f.tls !== undefined ? [['tls', tlsText(f.tls, nowMs)] as Row] : []),
  ];
}

/** `auth` as its row shows it: the grant, token URL (redacted), client, scope and audience; the secret only as set. */
export function authText(auth: AuthField): string {
  return [
    `${auth.type} at ${redactUrl(auth.tokenUrl)}`,
    `client ${auth.clientId}`,
    ...(auth.scope !== undefined ? [`scope ${auth.scope}`] : []),
    ...(auth.audience !== undefined ? [`audience ${auth.audience}`] : []),
    `client secret ${whereKept(auth.clientSecret)}`,
  ].join('; ');
}

/** `tls` as its row shows it: the certificate's subject and expiry (when inline), the key only as set, the CA. */
export function tlsText(tls: TlsField, nowMs: number): string {
  const certificate = (value: string | SecretValue, what: string) => {
    if (typeof value !== 'string') return `${what} ${whereKept(value)}`;
    const summary = certificateSummary(value);
    if (summary === undefined) return `${what} given`;
    const expiry = Date.parse(summary.notAfter);
    return `${what} ${safe(summary.subject)}, ${expiry <= nowMs ? 'expired' : 'expires'} ${formatInstant(expiry, nowMs)}`;
  };
  return [certificate(tls.clientCertificate, 'certificate'), `key ${whereKept(tls.privateKey)}`, ...(tls.ca !== undefined ? [certificate(tls.ca, 'CA')] : [])].join('; ');
}

/** Where a secret value is, never what it is. */
function whereKept(value: SecretValue): string {
  return 'secretArn' in value ? `in Secrets Manager (${value.secretArn})` : 'set';
}

/** Headers as a row shows them: `Name: value`, a secret one's value `(secret)`, never what it is. */
export function headersText(headers: Readonly<Record<string, HeaderValue>>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${typeof value === 'string' ? value : 'secretArn' in value ? '(secret, in Secrets Manager)' : '(secret)'}`)
    .join('; ');
}

/** A row per setting with a label: the value in effect, `(default)` while neither it nor the settings its row shows are set. */
function settingRows(f: EndpointFields, effective: Endpoint): Row[] {
  const given = f as Readonly<Record<string, unknown>>;
  const settings = effectiveSettings(effective);
  return SETTING_NAMES.flatMap((name): Row[] => {
    const spec = FIELD_SPECS[name];
    const cli = spec.cli;
    if (cli?.label === undefined) return [];
    const value = settings[name];
    const text = value === undefined ? (cli.unset ?? '(none)') : cli.text !== undefined ? cli.text(value, settings) : plainText(value);
    const own = [name, ...(cli.rowAlso ?? [])].some((field) => given[field] !== undefined);
    return [[cli.label, own || value === undefined ? text : `${text} (default)`]];
  });
}

/** The settings the endpoint sets itself, in the table's order. */
function ownSettings(f: EndpointFields): [string, unknown][] {
  const given = f as Readonly<Record<string, unknown>>;
  return SETTING_NAMES.filter((name) => given[name] !== undefined).map((name) => [name, given[name]]);
}

function label(field: FieldName): string {
  return FIELD_SPECS[field].cli?.label ?? field;
}

function plainText(value: unknown): string {
  return Array.isArray(value) ? value.join(', ') : String(value);
}

export function parkedText(record: EndpointRecord, parked: number | null, release: Resume | undefined): string {
  if (parked === null) return 'n/a (no ledger table in the target: --table NAME)';
  if (parked === 0) return '0';
  if (record.state === 'disabled') return `${parked} (held until endpoint enable ${record.fields.name} releases them)`;
  // Enabled with none being released: parked by a consumer whose copy of the registry was older than the release.
  return release === undefined ? `${parked} (no release in progress: endpoint enable ${record.fields.name} releases them)` : String(parked);
}

function releaseText(release: Resume | undefined, nowMs: number): string {
  if (release === undefined) return '(none)';
  const scheduled = release.until === undefined ? 'no run yet' : `scheduled until ${formatInstant(release.until, nowMs)}`;
  return `since ${formatInstant(release.since, nowMs)}, oldest first at ${rampRate(release, nowMs)}/s now, up to ${release.rate}/s (${scheduled})`;
}

function stateText(record: EndpointRecord, nowMs: number): string {
  const c = record.stateChange;
  return c === undefined ? record.state : `${record.state} by ${c.by} at ${formatInstant(c.at, nowMs)}: ${c.reason}`;
}

/** Whether a secret is set, and until when a rotation's previous secret still signs; never a secret. */
export function secretText(fields: Pick<EndpointFields, 'secret' | 'previousSecret' | 'previousSecretUntil' | 'publicKey'>, nowMs: number): string {
  const { secret } = fields;
  if (secret === undefined) return 'unset (requests are not signed)';
  const until = overlapEnd(fields, nowMs);
  const notes = [
    // A value (whsec_, whsk_, or encrypted with the registry's key: lib/endpoints/secret-cipher.ts) is the registry's own.
    ...(fields.publicKey !== undefined ? ['ed25519 key pair'] : []),
    ...(secret.startsWith('arn:') ? ['in Secrets Manager'] : []),
    ...(until === undefined ? [] : [`previous secret accepted until ${formatInstant(until, nowMs)}`]),
  ];
  return notes.length === 0 ? 'set' : `set (${notes.join('; ')})`;
}

/** When a rotation's previous secret stops signing, while it still does at `nowMs`. */
export function overlapEnd(fields: Pick<EndpointFields, 'secret' | 'previousSecret' | 'previousSecretUntil'>, nowMs: number): number | undefined {
  const until = fields.previousSecretUntil;
  return fields.secret !== undefined && fields.previousSecret !== undefined && until !== undefined && nowMs < until ? until : undefined;
}

export function matchText(match: Readonly<Record<string, readonly unknown[]>>): string {
  return Object.entries(match)
    .map(([key, values]) => `${key}=${values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(',')}`)
    .join(' ');
}
