/**
 * `handoff endpoint add`, `update` and `remove`. What is written is first checked as the consumer
 * will use it (`checkFields`), so a refusal names the field here rather than failing deliveries
 * later. `add` prints a secret it generated, once, of the endpoint's signature scheme (an ed25519
 * key's public key beside it, which every view shows); nothing else prints one, nor a secret header,
 * nor a secret value of `auth` or `tls`.
 */
import { readFile } from 'node:fs/promises';
import { ALL_EVENT_TYPES, type EndpointFieldProblem, type EndpointFields, type EndpointRecord, type HeaderValue } from '../../lib/endpoints/endpoint';
import { generateSecret } from '../../lib/endpoints/secret';
import { isSecretValueObject } from '../../lib/endpoints/secret-values';
import { REDACTED, redactUrl } from '../../lib/webhook/redact-url';
import type { SignatureScheme } from '../../lib/webhook/signing-secret';
import { quoted } from '../../lib/terminal';
import type { CommandContext } from '../context';
import { CommandFailedError, UsageError } from '../errors';
import { checkFields, checkName, EndpointFieldsUsageError, parkedAfterWrite, registryCall, requireEndpoint } from './endpoint-common';
import { clearedFields, fieldsFromOptions, type EndpointFieldOptions } from './endpoint-options';
import { endpointJson, showFields } from './endpoint-view';
import type { CommandResult } from './result';

export async function endpointAddCommand(ctx: CommandContext, options: EndpointFieldOptions): Promise<CommandResult> {
  if (options.secret !== undefined && options.unsigned) throw new UsageError('--secret and --unsigned cannot be used together');
  const fromFile = options.fromFile === undefined ? {} : await readFieldsFile(options.fromFile);
  const raw: Record<string, unknown> = { ...fromFile, ...fieldsFromOptions(options) };
  if (raw.name === undefined) throw new UsageError('endpoint add needs a name: --name NAME (or "name" in --from-file)');
  if (raw.url === undefined) throw new UsageError('endpoint add needs a URL: --url URL (or "url" in --from-file)');
  if (raw.eventTypes === undefined) {
    throw new UsageError(`endpoint add needs its event types: --event-types a,b or '${ALL_EVENT_TYPES}' (or "eventTypes" in --from-file)`);
  }
  if (options.unsigned) delete raw.secret;
  const generated = raw.secret === undefined && !options.unsigned ? generateSecret(schemeOf(raw.signature)) : undefined;
  if (generated !== undefined) raw.secret = generated;
  const nowMs = ctx.now();
  const { record, source, parked } = await addEndpoint(ctx, raw, nowMs);
  const lines = [`added endpoint ${record.fields.name}, enabled (checked against ${source})`, '', showFields(record, nowMs)];
  if (generated !== undefined) lines.push('', ...secretShownLines(generated, record.fields.publicKey, '(rotate-secret makes a new one)'));
  return {
    json: { ...endpointJson(record, nowMs, parked), ...(generated !== undefined ? { generatedSecret: generated } : {}) },
    human: lines.join('\n'),
  };
}

/** The scheme a secret is generated in for a `signature` as given: its own when it is one, else the default (a bad one is the field check's to name). */
export function schemeOf(signature: unknown): SignatureScheme {
  return signature === 'ed25519' ? 'ed25519' : 'hmac-sha256';
}

/**
 * The lines that show a new secret once: for an ed25519 key, its public key too, which is all the
 * receiver needs (the secret key stays with handoff; shown only so it can be kept elsewhere too).
 */
export function secretShownLines(secret: string, publicKey: string | undefined, more = ''): string[] {
  const tail = more === '' ? '' : ` ${more}`;
  if (publicKey === undefined) return [`signing secret: ${secret}`, `shown once: give it to the receiver now; no command shows it again${tail}`];
  return [
    `signing secret: ${secret}`,
    `public key: ${publicKey}`,
    `the secret key is shown once and no command shows it again${tail}; give the receiver the public key (endpoint show prints it): it verifies v1a signatures with it`,
  ];
}

/**
 * Adds an endpoint, enabled, from its fields as given (`endpoint add`, `POST /v1/endpoints`),
 * checked as the consumer will use it; its plain secret is stored encrypted. Counts its parked
 * deliveries after (a name used before may have some).
 * @throws EndpointFieldsUsageError naming every bad field; CommandFailedError (endpoint-conflict) when the name is taken
 */
export async function addEndpoint(ctx: CommandContext, raw: Record<string, unknown>, nowMs: number): Promise<{ record: EndpointRecord; source: string; parked: number | null }> {
  const { fields, source } = checkFields(raw, ctx.target, nowMs);
  const record = await registryCall(ctx, (registry) => registry.add(fields, nowMs));
  return { record, source, parked: await parkedAfterWrite(ctx, record.fields.name) };
}

export async function endpointUpdateCommand(ctx: CommandContext, name: string, options: EndpointFieldOptions): Promise<CommandResult> {
  checkName(name);
  if (options.unsigned) throw new UsageError('--unsigned is for endpoint add; an existing secret changes with endpoint rotate-secret');
  if (options.name !== undefined && options.name !== name) {
    throw new UsageError(`--name ${quoted(options.name)} differs from the endpoint updated (${name}): an endpoint cannot be renamed; add one and remove the other`);
  }
  const clear = clearedFields(options.clear);
  const fromFile = options.fromFile === undefined ? {} : await readFieldsFile(options.fromFile);
  if (fromFile.name !== undefined && fromFile.name !== name) {
    throw new UsageError(`--from-file names endpoint ${quoted(fromFile.name)}, not ${name}: an endpoint cannot be renamed`);
  }
  const changes: Record<string, unknown> = { ...fromFile, ...fieldsFromOptions(options) };
  delete changes.name;
  if (Object.keys(changes).length === 0 && clear.length === 0) throw new UsageError('nothing to change: give the fields to change, or --clear FIELD');
  const nowMs = ctx.now();
  const { record, changed, source, parked } = await updateEndpoint(ctx, name, changes, clear, nowMs);
  if (changed.length === 0) {
    return { json: { ...endpointJson(record, nowMs, parked), changed: [] }, human: `endpoint ${name} unchanged: the fields given are what it has` };
  }
  return {
    json: { ...endpointJson(record, nowMs, parked), changed },
    human: [`updated endpoint ${name}: ${changed.join(', ')} (checked against ${source})`, '', showFields(record, nowMs)].join('\n'),
  };
}

/**
 * Changes an endpoint's fields (`endpoint update`, `PATCH /v1/endpoints/{name}`): `changes` merged
 * over the current ones, `clear` unset (each a clearable field), the result checked as `add` checks
 * it, and written with one conditional update (a concurrent change is refused, not lost). Nothing
 * is written when nothing changes (`changed` empty). Its state and name are kept. What every view
 * shows in place of a value (a secret's `{"secret": true}`, a URL redacted) keeps the value when sent
 * back (keptShownValues); a URL edited from its redacted form is refused (redactedUrlProblems).
 * @throws EndpointFieldsUsageError naming every bad field; CommandFailedError (endpoint-not-found, endpoint-conflict)
 */
export async function updateEndpoint(
  ctx: CommandContext,
  name: string,
  changes: Readonly<Record<string, unknown>>,
  clear: readonly string[],
  nowMs: number,
): Promise<{ record: EndpointRecord; changed: string[]; source: string; parked: number | null }> {
  const current = await requireEndpoint(ctx, name);
  const given = keptShownValues(changes, current.fields);
  const redacted = redactedUrlProblems(given, current.fields);
  if (redacted.length > 0) throw new EndpointFieldsUsageError(`endpoint ${quoted(name)}: ${redacted[0]!.field} ${redacted[0]!.problem}`, redacted);
  const merged: Record<string, unknown> = { ...current.fields, ...given };
  for (const field of clear) delete merged[field];
  // An ed25519 secret's public key is set from it (lib/endpoints/endpoint.ts): a secret replaced
  // here takes the old key's with it. Given, one must be checkable: beside a secret written plain
  // here, or one kept in Secrets Manager (an encrypted secret's is the one set when it was written).
  if (changes.secret !== undefined && changes.publicKey === undefined) delete merged.publicKey;
  if (changes.publicKey !== undefined && changes.secret === undefined && typeof merged.secret === 'string' && !merged.secret.startsWith('arn:')) {
    throw new EndpointFieldsUsageError(`endpoint ${quoted(name)}: publicKey is set from the secret: give it only beside a secret kept in Secrets Manager`, [
      { field: 'publicKey', problem: 'is set from the secret: give it only beside a secret kept in Secrets Manager' },
    ]);
  }
  // A rotation's old secret goes with an overlap cleared, with a secret replaced here (at once, as
  // the option says; rotate-secret is the way with an overlap) and once its overlap is over.
  const secretReplaced = changes.secret !== undefined && changes.secret !== current.fields.secret && changes.previousSecret === undefined;
  const overlapOver = typeof merged.previousSecretUntil === 'number' && merged.previousSecretUntil <= nowMs;
  if (clear.includes('previousSecret') || secretReplaced || overlapOver) {
    delete merged.previousSecret;
    delete merged.previousSecretUntil;
  }
  const { fields, source } = checkFields(merged, ctx.target, nowMs, current);
  const changed = changedFields(current.fields, fields);
  if (changed.length === 0) return { record: current, changed, source, parked: await parkedAfterWrite(ctx, name) };
  const record = await registryCall(ctx, (registry) => registry.update(fields, current.updatedAt, nowMs));
  return { record, changed, source, parked: await parkedAfterWrite(ctx, name) };
}

export async function endpointRemoveCommand(ctx: CommandContext, name: string): Promise<CommandResult> {
  await registryCall(ctx, (registry) => registry.remove(checkName(name)));
  return { json: { name, removed: true }, human: `removed endpoint ${name}` };
}

/**
 * The headers given to an update with each `{"secret": true}` (what every view shows for a secret
 * value) taken as "keep it": the value the endpoint has under that name (in any case), so headers
 * read, edited and sent back keep their secrets. One the endpoint has no secret under is left as it
 * is, for the field's check to refuse.
 */
function keptHeaderSecrets(given: unknown, current: Readonly<Record<string, HeaderValue>> | undefined): unknown {
  if (typeof given !== 'object' || given === null || Array.isArray(given) || current === undefined) return given;
  const secrets = new Map(Object.entries(current).filter(([, value]) => typeof value === 'object').map(([name, value]) => [name.toLowerCase(), value]));
  return Object.fromEntries(
    Object.entries(given).map(([name, value]) => {
      const kept = isShownSecret(value) ? secrets.get(name.toLowerCase()) : undefined;
      return [name, kept ?? value];
    }),
  );
}

/**
 * The changes with every value sent back as shown taken as "keep it": a secret value shown as
 * `{"secret": true}` (a header's: keptHeaderSecrets; in `auth` and `tls`, the value the endpoint has at
 * the same path), and `url` and `auth.tokenUrl` shown redacted (keptUrl), so an object read, edited
 * and sent back keeps its secrets and its URLs. A secret the endpoint has none at is left as it is,
 * for the field's check to refuse.
 */
function keptShownValues(changes: Readonly<Record<string, unknown>>, current: EndpointFields): Readonly<Record<string, unknown>> {
  const out: Record<string, unknown> = { ...changes };
  if (changes.headers !== undefined) out.headers = keptHeaderSecrets(changes.headers, current.headers);
  if (changes.url !== undefined) out.url = keptUrl(changes.url, current.url);
  for (const field of ['auth', 'tls'] as const) {
    const given = changes[field];
    const had = current[field] as Readonly<Record<string, unknown>> | undefined;
    if (typeof given !== 'object' || given === null || Array.isArray(given) || had === undefined) continue;
    out[field] = Object.fromEntries(
      Object.entries(given).map(([key, value]) => {
        if (field === 'auth' && key === 'tokenUrl') return [key, keptUrl(value, had[key])];
        return [key, isShownSecret(value) && isSecretValueObject(had[key]) ? had[key] : value];
      }),
    );
  }
  return out;
}

/**
 * A URL given to an update: the one the endpoint has when it is that one as every view shows it
 * (docs/contract.md §3: each query value, the user and the fragment as `***`), which would otherwise be
 * stored with `***` in place of a token. Any other URL is the one given.
 */
function keptUrl(given: unknown, had: unknown): unknown {
  return typeof given === 'string' && typeof had === 'string' && given !== had && given === redactUrl(had) ? had : given;
}

/**
 * `url` and `auth.tokenUrl` given to an update that hold a part as views show it redacted (`***` for a
 * query value, the user, the fragment) and are not the URL shown: edited from the redacted form
 * (another path, the same `?tenant=***`), they would send `***` where a value was. Each named.
 */
function redactedUrlProblems(given: Readonly<Record<string, unknown>>, current: EndpointFields): EndpointFieldProblem[] {
  const auth = typeof given.auth === 'object' && given.auth !== null ? (given.auth as Readonly<Record<string, unknown>>) : {};
  const places: [field: string, url: unknown, had: string | undefined][] = [
    ['url', given.url, current.url],
    ['auth.tokenUrl', auth.tokenUrl, current.auth?.tokenUrl],
  ];
  return places
    .filter(([, url, had]) => typeof url === 'string' && url !== had && holdsRedacted(url))
    .map(([field]) => ({ field, problem: `holds ${REDACTED} where views show a value redacted: give the whole URL as it is to change it, or send it back as shown to keep it (the URL is not shown)` }));
}

function holdsRedacted(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false; // not a URL: the field's check names that
  }
  const query = parsed.search.slice(1).split('&');
  return parsed.username === REDACTED || parsed.hash === `#${REDACTED}` || query.some((part) => part === REDACTED || part.endsWith(`=${REDACTED}`));
}

function isShownSecret(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.keys(value).length === 1 && (value as { secret?: unknown }).secret === true;
}

function changedFields(before: EndpointFields, after: EndpointFields): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  const a = before as Readonly<Record<string, unknown>>;
  const b = after as Readonly<Record<string, unknown>>;
  return [...keys].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort();
}

async function readFieldsFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CommandFailedError(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UsageError(`--from-file ${path} is not JSON`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new UsageError(`--from-file ${path} must hold one endpoint as a JSON object of its fields`);
  }
  return json as Record<string, unknown>;
}
