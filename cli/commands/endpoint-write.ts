/**
 * `handoff endpoint add`, `update` and `remove`. What is written is first checked as the consumer
 * will use it (`checkFields`), so a refusal names the field here rather than failing deliveries
 * later. `add` prints a secret it generated, once; nothing else prints one.
 */
import { readFile } from 'node:fs/promises';
import { ALL_EVENT_TYPES, type EndpointFields, type EndpointRecord } from '../../lib/endpoints/endpoint';
import { generateSecret } from '../../lib/endpoints/secret';
import { quoted } from '../../lib/terminal';
import type { CommandContext } from '../context';
import { CommandFailedError, UsageError } from '../errors';
import { checkFields, checkName, parkedAfterWrite, registryCall, requireEndpoint } from './endpoint-common';
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
  const generated = raw.secret === undefined && !options.unsigned ? generateSecret() : undefined;
  if (generated !== undefined) raw.secret = generated;
  const nowMs = ctx.now();
  const { record, source, parked } = await addEndpoint(ctx, raw, nowMs);
  const lines = [`added endpoint ${record.fields.name}, enabled (checked against ${source})`, '', showFields(record, nowMs)];
  if (generated !== undefined) {
    lines.push('', `signing secret: ${generated}`, 'shown once: give it to the receiver now; no command shows it again (rotate-secret makes a new one)');
  }
  return {
    json: { ...endpointJson(record, nowMs, parked), ...(generated !== undefined ? { generatedSecret: generated } : {}) },
    human: lines.join('\n'),
  };
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
 * is written when nothing changes (`changed` empty). Its state and name are kept.
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
  const merged: Record<string, unknown> = { ...current.fields, ...changes };
  for (const field of clear) delete merged[field];
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
