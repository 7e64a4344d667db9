/**
 * `handoff endpoint …` (docs/contract.md §11): the endpoints of a deployment, in its registry.
 *
 * list, show, add, update, disable, enable, remove, rotate-secret, against AWS and the sandbox
 * alike (the registry's table is on the target). Every endpoint written is first checked as the
 * consumer will use it: `parseEndpointFields` for each field's shape, then `resolveEndpoint` with
 * the deployment's settings (its defaults, its attempt timeout, its retention), so a refusal names
 * the field here rather than failing deliveries later.
 *
 * A signing secret is printed once: by `add` when it generated one, by `rotate-secret`. Nothing
 * else prints it (`secret: set`), in either form, nor a rotation's previous secret (only until when
 * it still signs). URLs are shown redacted (docs/contract.md §3). The registry stores every secret
 * the commands write encrypted (`encrypted:kms:…` with the registry's key, `encrypted:local:…` in
 * the sandbox: cli/context.ts `encryptSecret`), so a stored secret is compared with one given only
 * while it is plain (`rotate-secret --secret` the current one is then not noticed).
 *
 * Parking (docs/contract.md §12): every endpoint's output counts its parked deliveries (the
 * ledger's parked listing of that endpoint, its index entries alone); `show` and `enable` give the
 * release in progress, which `enable --rate` begins and the recovery runs carry out (lib/resume.ts).
 */
import { describeHealth, healthJson, type HealthRecord } from '../../lib/endpoints/health';
import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { Command, Option } from 'commander';
import pLimit from 'p-limit';
import { readSettings, SETTING_VARIABLES, type Settings } from '../../lib/config';
import {
  ALL_EVENT_TYPES,
  EndpointError,
  EVENT_TYPES,
  ON_DEAD,
  ORDERINGS,
  parseEndpointFields,
  RECOVERIES,
  resolveEndpoint,
  type DeploymentSettings,
  type Endpoint,
  type EndpointFields,
  type EndpointRecord,
} from '../../lib/endpoints/endpoint';
import { EndpointConflictError, EndpointNotFoundError } from '../../lib/endpoints/registry';
import { generateSecret } from '../../lib/endpoints/secret';
import { auditTextProblem } from '../../lib/replay';
import { DEFAULT_RESUME_RATE, rampRate, type Resume } from '../../lib/resume';
import { quoted } from '../../lib/terminal';
import { redactUrl } from '../../lib/webhook/redact-url';
import type { CommandContext } from '../context';
import { CommandFailedError, UsageError } from '../errors';
import { formatDuration, formatInstant, keyValues, table } from '../format';
import { callerIdentity, type Target, type TargetOptions } from '../target';
import type { CommandResult } from './result';

export interface EndpointCommonOptions extends TargetOptions {
  readonly json?: boolean;
}

/** cli/main.ts's runner: resolves the target, runs the work, prints its result. */
export type EndpointRunner = (
  options: EndpointCommonOptions,
  work: (ctx: CommandContext) => Promise<CommandResult>,
) => Promise<void>;

/** Options of `add` and `update`, as commander parses them. */
export interface EndpointFieldOptions {
  readonly name?: string;
  readonly url?: string;
  readonly eventTypes?: string;
  readonly match?: readonly string[];
  readonly secret?: string;
  readonly unsigned?: boolean;
  readonly retrySchedule?: string;
  readonly maxAttempts?: string;
  readonly attemptTimeoutMs?: string;
  readonly recovery?: string;
  readonly ordering?: string;
  readonly onDead?: string;
  readonly autoDisable?: boolean;
  readonly disableAfterSeconds?: string;
  readonly disableAfterFailures?: string;
  readonly rateLimitPerSecond?: string;
  readonly receiverRetentionSeconds?: string;
  readonly fromFile?: string;
  readonly clear?: readonly string[];
}

export interface RotateOptions {
  readonly secret?: string;
  /** How long the old secret keeps signing (`--overlap`): `0`, or a number and s, m, h or d. Default 24h. */
  readonly overlap?: string;
}

export interface StateOptions {
  readonly reason?: string;
  readonly operator?: string;
  /** `enable --rate`: the most parked deliveries released per second, as given (checked by `parseResumeRate`). */
  readonly rate?: string;
}

/** Numeric fields given as options: whole numbers become numbers, anything else is left for the field's check to name. */
const WHOLE_NUMBER_OPTIONS = [
  'maxAttempts',
  'attemptTimeoutMs',
  'disableAfterSeconds',
  'disableAfterFailures',
  'rateLimitPerSecond',
  'receiverRetentionSeconds',
] as const;
/**
 * Optional fields `update --clear` may unset (the deployment's default applies again).
 * `previousSecret` ends a rotation's overlap at once (its end goes with it).
 */
const CLEARABLE: readonly (keyof EndpointFields)[] = [
  'match',
  'previousSecret',
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
const ENABLE_REASON = 'enabled by an operator';
/** How long both secrets sign after `rotate-secret` unless `--overlap` says otherwise, and the longest allowed. */
export const DEFAULT_OVERLAP = '24h';
export const MAX_OVERLAP_MS = 7 * 24 * 60 * 60 * 1000;
const OVERLAP_UNITS_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
/** Endpoints whose parked deliveries `list` counts at once (each count is one query per listing shard). */
export const PARKED_COUNT_CONCURRENCY = 4;
/** The most `enable --rate` allows: releases per second. */
export const MAX_RESUME_RATE = 1000;
const PARKED_NOTE = `parked: deliveries held for a disabled endpoint (docs/contract.md §12): neither attempted nor dead;
endpoint enable NAME releases them, oldest first`;
/** The JSON every endpoint command prints for an endpoint, as the help texts give it. */
const ENDPOINT_JSON_HELP = `an endpoint as JSON: {name, url (redacted), state, eventTypes, match, secret ("set"|"unset"),
previousSecretUntil, parked (a count; null when the target names no ledger table), health,
stateChange, settings, createdAt, updatedAt}`;
const RELEASE_JSON_HELP = `release: null, or the release of parked deliveries in progress {since, rate (most per second),
rateNow (the ramp's rate now), scheduledUntil}`;

/**
 * Registers `endpoint` and its subcommands on the program. `withTarget` adds the target options
 * every command has (cli/main.ts); `--endpoints-table` is added here when it does not.
 */
export function addEndpointCommands(program: Command, run: EndpointRunner, withTarget: (command: Command) => Command): Command {
  const group = program
    .command('endpoint')
    .description('the endpoints events are delivered to: list, show, add, update, disable, enable, remove, rotate-secret')
    .addHelpText(
      'after',
      `
Each endpoint is checked as the consumer will use it, against the deployment's settings.
A signing secret is printed once (add, rotate-secret) and never again.`,
    );
  const target = (command: Command) => withEndpointsTable(withTarget(command));

  target(group.command('list').description('every endpoint: name, state, URL (redacted), event types'))
    .addHelpText('after', `\n${PARKED_NOTE}.\n--json: an array, each ${ENDPOINT_JSON_HELP}.\n\nExamples:\n  handoff endpoint list\n  handoff endpoint list --json`)
    .action(async (options: EndpointCommonOptions) => {
      await run(options, (ctx) => endpointListCommand(ctx));
    });

  target(group.command('show').description("one endpoint: its fields, its state and who set it, the settings in effect").argument('<name>', 'the endpoint'))
    .addHelpText(
      'after',
      `
The secret is never shown: only whether one is set. The parked count and a release in progress
(after endpoint enable: since when, the ramp's rate now and its most) show how a release is going.
--json: ${ENDPOINT_JSON_HELP}, and effective, settingsFrom and
${RELEASE_JSON_HELP}.

Example:
  handoff endpoint show acme`,
    )
    .action(async (name: string, options: EndpointCommonOptions) => {
      await run(options, (ctx) => endpointShowCommand(ctx, name));
    });

  fieldOptions(target(group.command('add').description('add an endpoint, enabled')), 'add')
    .addHelpText(
      'after',
      `
Without --secret (or a secret in --from-file), a signing secret is generated and printed once:
store it with the receiver now; no command shows it again. --unsigned adds one without a secret.
The registry stores the secret encrypted with its KMS key (stack output EndpointsKeyArn, or
HANDOFF_ENDPOINTS_KEY_ARN with names given: the caller needs kms:Encrypt on it); the sandbox
with its own key.

Examples:
  handoff endpoint add --name acme --url https://hooks.acme.example/handoff --event-types shipment.delivered,shipment.exception
  handoff endpoint add --name zephyr-ops --url https://ops.example/hook --event-types '*' --match 'data.carrier=acme,zephyr'
  handoff endpoint add --from-file endpoint.json`,
    )
    .action(async (options: EndpointCommonOptions & EndpointFieldOptions) => {
      await run(options, (ctx) => endpointAddCommand(ctx, options));
    });

  fieldOptions(target(group.command('update').description("change an endpoint's fields; those not given are kept").argument('<name>', 'the endpoint')), 'update')
    .option('--clear <field>', `unset an optional field, so the deployment's default applies (repeatable): ${CLEARABLE.join(', ')}`, collect)
    .addHelpText(
      'after',
      `
--match replaces the whole filter; --from-file merges the file's fields over the current ones.
The state is kept (endpoint disable/enable change it); the secret too (endpoint rotate-secret).

Examples:
  handoff endpoint update acme --event-types '*'
  handoff endpoint update acme --max-attempts 8 --retry-schedule 60,300,1800
  handoff endpoint update acme --clear match`,
    )
    .action(async (name: string, options: EndpointCommonOptions & EndpointFieldOptions) => {
      await run(options, (ctx) => endpointUpdateCommand(ctx, name, options));
    });

  target(group.command('disable').description('stop delivering to an endpoint, recording who, why and when').argument('<name>', 'the endpoint'))
    .requiredOption('--reason <text>', 'why (kept with the endpoint)')
    .option('--operator <name>', 'who is disabling it (default: your user name)')
    .addHelpText(
      'after',
      `
Its deliveries are parked from then on (docs/contract.md §12): kept pending, neither attempted
nor dead, never lost, until endpoint enable releases them; a release in progress stops. Consumers
see the change within their copy of the registry's age (15 s in AWS).
--json: ${ENDPOINT_JSON_HELP}.

Example:
  handoff endpoint disable acme --reason "receiver down for maintenance (INC-77)" --operator alice`,
    )
    .action(async (name: string, options: EndpointCommonOptions & StateOptions) => {
      await run(options, (ctx) => endpointSetStateCommand(ctx, name, 'disabled', options));
    });

  target(group.command('enable').description('deliver to a disabled endpoint again, releasing its parked deliveries').argument('<name>', 'the endpoint'))
    .option('--reason <text>', 'why (kept with the endpoint)', ENABLE_REASON)
    .option('--operator <name>', 'who is enabling it (default: your user name)')
    .option('--rate <n>', `release its parked deliveries at most this many per second, a whole number from 1 to ${MAX_RESUME_RATE}`, String(DEFAULT_RESUME_RATE))
    .addHelpText(
      'after',
      `
Its parked deliveries are released oldest admission first by the recovery runs (the sandbox's
timer; in AWS the scheduled recovery function): at an eighth of --rate at first, doubling every
minute up to it. Follow it with endpoint show NAME (parked, release).
--json: ${ENDPOINT_JSON_HELP}, and
${RELEASE_JSON_HELP}.

Examples:
  handoff endpoint enable acme --operator alice
  handoff endpoint enable acme --rate 5`,
    )
    .action(async (name: string, options: EndpointCommonOptions & StateOptions) => {
      await run(options, (ctx) => endpointSetStateCommand(ctx, name, 'enabled', options));
    });

  target(group.command('remove').description('remove an endpoint from the registry').argument('<name>', 'the endpoint'))
    .addHelpText(
      'after',
      `
New events are no longer routed to it; a delivery to it still on the queue is acknowledged
without a request (logged endpoint-removed). Its ledger rows are kept until they expire.

Example:
  handoff endpoint remove acme`,
    )
    .action(async (name: string, options: EndpointCommonOptions) => {
      await run(options, (ctx) => endpointRemoveCommand(ctx, name));
    });

  target(group.command('rotate-secret').description("replace an endpoint's signing secret and print the new one once").argument('<name>', 'the endpoint'))
    .option('--secret <whsec>', 'the new secret (default: a generated one)')
    .option('--overlap <duration>', 'how long the old secret keeps signing beside the new one: a number and s, m, h or d, at most 7d; 0 switches at once', DEFAULT_OVERLAP)
    .addHelpText(
      'after',
      `
During the overlap every request carries two signatures in webhook-signature, space-separated,
the new secret's first: a receiver verifies with either secret, so it can switch to the new one
at any time within the overlap. Afterwards only the new secret signs. To end an overlap early:
  handoff endpoint update NAME --clear previousSecret
Rotating again during an overlap keeps only the secret being replaced as the previous one.
The new secret is stored encrypted, as add stores one; the old one is kept as it was stored.
An endpoint whose secret is a Secrets Manager ARN is rotated in Secrets Manager, not here.

Examples:
  handoff endpoint rotate-secret acme
  handoff endpoint rotate-secret acme --overlap 2h
  handoff endpoint rotate-secret acme --overlap 0`,
    )
    .action(async (name: string, options: EndpointCommonOptions & RotateOptions) => {
      await run(options, (ctx) => endpointRotateSecretCommand(ctx, name, options));
    });

  return group;
}

// ---------------------------------------------------------------------------------------------
// The commands, callable without commander.

export async function endpointListCommand(ctx: CommandContext): Promise<CommandResult> {
  // Items it cannot use are named after the list (exit 1), not allowed to hide the others.
  const { records, unreadable } = await registryCall(ctx, (registry) => registry.scan());
  const nowMs = ctx.now();
  // Each count reads the endpoint's 16 listing shards: a few endpoints at a time.
  const limit = pLimit(PARKED_COUNT_CONCURRENCY);
  const parked = await Promise.all(records.map((r) => limit(() => parkedCount(ctx, r.fields.name))));
  const rows = records.map((r, i) => [
    r.fields.name,
    r.state,
    redactUrl(r.fields.url),
    r.fields.eventTypes.join(','),
    Object.keys(r.fields.match ?? {}).length === 0 ? '' : matchText(r.fields.match ?? {}),
    parked[i] === null ? 'n/a' : String(parked[i]),
  ]);
  // A rotation's overlap is worth a line of its own: until it ends the receiver may still use either secret.
  const overlaps = records
    .filter((r) => overlapEnd(r.fields, nowMs) !== undefined)
    .map((r) => `${r.fields.name}: secret ${secretText(r.fields, nowMs)}`);
  const human =
    rows.length === 0
      ? `no endpoints in ${ctx.target.description}`
      : table(
          [{ header: 'name' }, { header: 'state' }, { header: 'url' }, { header: 'event types' }, { header: 'match' }, { header: 'parked', align: 'right' }],
          rows,
        ) + (overlaps.length > 0 ? `\n\n${overlaps.join('\n')}` : '');
  const failure =
    unreadable.length === 0
      ? undefined
      : `the registry holds ${unreadable.length} item(s) that cannot be used (endpoint remove NAME, then add it again): ${unreadable.map((e) => e.message).join('; ')}`;
  const noLedger = parked.some((count) => count === null) ? `\n\nparked: n/a, no ledger table in ${ctx.target.description} (--table NAME)` : '';
  return {
    json: records.map((r, i) => endpointJson(r, nowMs, parked[i] ?? null)),
    human: rows.length === 0 ? human : human + noLedger,
    ...(failure !== undefined ? { failure } : {}),
  };
}

export async function endpointShowCommand(ctx: CommandContext, name: string): Promise<CommandResult> {
  const record = await requireEndpoint(ctx, checkName(name));
  const [parked, release] = await Promise.all([parkedCount(ctx, name), ctx.endpointRelease(name)]);
  const { settings, source } = deploymentFor(ctx.target);
  let effective: Endpoint | undefined;
  let problem: string | undefined;
  try {
    effective = resolveEndpoint(record, settings, undefined);
  } catch (error) {
    if (!(error instanceof EndpointError)) throw error;
    problem = error.message;
  }
  const nowMs = ctx.now();
  const json = {
    ...endpointJson(record, nowMs, parked),
    release: releaseJson(record.state === 'enabled' ? release : undefined, nowMs),
    effective: effective === undefined ? null : effectiveJson(effective),
    ...(problem !== undefined ? { problem } : {}),
    settingsFrom: source,
  };
  return { json, human: showText(record, { parked, release: record.state === 'enabled' ? release : undefined }, effective, problem, source, nowMs) };
}

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
  const { fields, source } = checkFields(raw, ctx.target, nowMs);
  const record = await registryCall(ctx, (registry) => registry.add(fields, nowMs));
  const lines = [`added endpoint ${record.fields.name}, enabled (checked against ${source})`, '', showFields(record, nowMs)];
  if (generated !== undefined) {
    lines.push('', `signing secret: ${generated}`, 'shown once: give it to the receiver now; no command shows it again (rotate-secret makes a new one)');
  }
  const parked = await parkedAfterWrite(ctx, record.fields.name);
  return {
    json: { ...endpointJson(record, nowMs, parked), ...(generated !== undefined ? { generatedSecret: generated } : {}) },
    human: lines.join('\n'),
  };
}

export async function endpointUpdateCommand(ctx: CommandContext, name: string, options: EndpointFieldOptions): Promise<CommandResult> {
  checkName(name);
  if (options.unsigned) throw new UsageError('--unsigned is for endpoint add; an existing secret changes with endpoint rotate-secret');
  if (options.name !== undefined && options.name !== name) {
    throw new UsageError(`--name ${quoted(options.name)} differs from the endpoint updated (${name}): an endpoint cannot be renamed; add one and remove the other`);
  }
  const clear = options.clear ?? [];
  for (const field of clear) {
    if (!(CLEARABLE as readonly string[]).includes(field)) throw new UsageError(`--clear ${quoted(field)}: not an optional field (${CLEARABLE.join(', ')})`);
  }
  const fromFile = options.fromFile === undefined ? {} : await readFieldsFile(options.fromFile);
  if (fromFile.name !== undefined && fromFile.name !== name) {
    throw new UsageError(`--from-file names endpoint ${quoted(fromFile.name)}, not ${name}: an endpoint cannot be renamed`);
  }
  const changes: Record<string, unknown> = { ...fromFile, ...fieldsFromOptions(options) };
  delete changes.name;
  if (Object.keys(changes).length === 0 && clear.length === 0) throw new UsageError('nothing to change: give the fields to change, or --clear FIELD');
  const current = await requireEndpoint(ctx, name);
  const merged: Record<string, unknown> = { ...current.fields, ...changes };
  for (const field of clear) delete merged[field];
  const nowMs = ctx.now();
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
  if (changed.length === 0) {
    const parked = await parkedAfterWrite(ctx, name);
    return { json: { ...endpointJson(current, nowMs, parked), changed: [] }, human: `endpoint ${name} unchanged: the fields given are what it has` };
  }
  const record = await registryCall(ctx, (registry) => registry.update(fields, current.updatedAt, nowMs));
  const parked = await parkedAfterWrite(ctx, name);
  return {
    json: { ...endpointJson(record, nowMs, parked), changed },
    human: [`updated endpoint ${name}: ${changed.join(', ')} (checked against ${source})`, '', showFields(record, nowMs)].join('\n'),
  };
}

export async function endpointSetStateCommand(
  ctx: CommandContext,
  name: string,
  state: EndpointRecord['state'],
  options: StateOptions,
): Promise<CommandResult> {
  checkName(name);
  if (state !== 'enabled' && options.rate !== undefined) throw new UsageError('--rate is for endpoint enable: how fast its parked deliveries are released');
  const rate = state === 'enabled' ? parseResumeRate(options.rate ?? String(DEFAULT_RESUME_RATE)) : undefined;
  const reason = (options.reason ?? (state === 'enabled' ? ENABLE_REASON : '')).trim();
  const operator = (options.operator ?? localUser()).trim();
  if (!reason) throw new UsageError(`endpoint ${state === 'enabled' ? 'enable' : 'disable'} needs a reason: --reason "why"`);
  for (const [flag, field, value] of [
    ['--operator', 'operator', operator],
    ['--reason', 'reason', reason],
  ] as const) {
    const problem = auditTextProblem(field, value);
    if (problem) throw new UsageError(`${flag} ${problem}`);
  }
  const caller = await callerIdentity(ctx.target);
  const by = caller === undefined ? operator : `${operator} (${caller})`;
  const nowMs = ctx.now();
  const change = { by, reason, at: nowMs };
  // Enabling: counted first, since a recovery run may begin releasing them as soon as the write is made.
  const parkedBefore = rate === undefined ? undefined : await parkedCount(ctx, name);
  const record = await registryCall(ctx, (registry) =>
    rate === undefined ? registry.setState(name, state, change) : registry.setState(name, state, change, rate),
  );
  const parked = parkedBefore ?? (await parkedAfterWrite(ctx, name));
  const done = `endpoint ${name} ${state} by ${by}: ${reason}`;
  const count = parked === null ? 'its parked deliveries (not counted: no ledger table in the target)' : plural(parked, 'parked delivery', 'parked deliveries');
  if (rate === undefined) {
    return {
      json: endpointJson(record, nowMs, parked),
      human: [
        done,
        `its deliveries are parked from now on (once the consumers' copies of the registry have it, 15 s at most in AWS): neither attempted nor dead; endpoint enable ${name} releases them`,
        ...(parked === null || parked === 0 ? [] : [`${count} already`]),
      ].join('\n'),
    };
  }
  // The release the registry began with this write (lib/resume.ts): the ramp counts from its time.
  const release: Resume = { since: nowMs, rate };
  const how =
    parked === 0
      ? `no parked deliveries now; any a consumer still parks before it sees ${name} enabled are released`
      : `${count}: released oldest admission first, at ${rampRate(release, nowMs)}/s at first, doubling every minute up to ${rate}/s, by the recovery runs (the sandbox: its recovery timer; AWS: the scheduled recovery function)`;
  return {
    json: { ...endpointJson(record, nowMs, parked), release: releaseJson(release, nowMs) },
    human: [done, how, `follow it: handoff endpoint show ${name}`].join('\n'),
  };
}

/**
 * `enable --rate`: the most releases per second, a whole number from 1 to MAX_RESUME_RATE.
 * @throws UsageError naming --rate and what it takes
 */
export function parseResumeRate(text: string): number {
  const trimmed = text.trim();
  const value = /^\d{1,7}$/.test(trimmed) ? Number(trimmed) : NaN;
  if (!(value >= 1 && value <= MAX_RESUME_RATE)) {
    throw new UsageError(`--rate ${quoted(text.slice(0, 40))}: give the most parked deliveries released per second, a whole number from 1 to ${MAX_RESUME_RATE}`);
  }
  return value;
}

export async function endpointRemoveCommand(ctx: CommandContext, name: string): Promise<CommandResult> {
  await registryCall(ctx, (registry) => registry.remove(checkName(name)));
  return { json: { name, removed: true }, human: `removed endpoint ${name}` };
}

/**
 * A new secret, printed once when generated; the old one keeps signing beside it for the overlap
 * (`--overlap`, default 24h; `0`: it stops at once). One conditional update of the fields, so a
 * concurrent change is refused, not lost.
 */
export async function endpointRotateSecretCommand(ctx: CommandContext, name: string, options: RotateOptions): Promise<CommandResult> {
  checkName(name);
  const overlapMs = parseOverlap(options.overlap ?? DEFAULT_OVERLAP);
  const current = await requireEndpoint(ctx, name);
  const old = current.fields.secret;
  if (old !== undefined && old.startsWith('arn:')) {
    throw new CommandFailedError(
      `endpoint ${name}'s secret is kept in Secrets Manager (its ARN is in the registry): rotate it there`,
      'secret-in-secrets-manager',
    );
  }
  if (options.secret !== undefined && options.secret === old) throw new UsageError('--secret is the secret the endpoint has now: give a new one, or none to generate one');
  const secret = options.secret ?? generateSecret();
  const nowMs = ctx.now();
  const { previousSecret: _previous, previousSecretUntil: _until, ...rest } = current.fields;
  const overlapUntil = old !== undefined && overlapMs > 0 ? nowMs + overlapMs : undefined;
  const raw: Record<string, unknown> = { ...rest, secret, ...(overlapUntil !== undefined ? { previousSecret: old, previousSecretUntil: overlapUntil } : {}) };
  const { fields } = checkFields(raw, ctx.target, nowMs, current);
  const record = await registryCall(ctx, (registry) => registry.update(fields, current.updatedAt, nowMs));
  const shown = options.secret === undefined ? secret : undefined;
  // A rotation during an overlap: the secret before the one replaced stops signing now.
  const dropped = overlapEnd(current.fields, nowMs) !== undefined;
  const what =
    old === undefined
      ? `set a signing secret for endpoint ${name}: its requests were unsigned until now`
      : overlapUntil === undefined
        ? `rotated the signing secret of endpoint ${name}: the old one no longer signs`
        : `rotated the signing secret of endpoint ${name}: until ${formatInstant(overlapUntil, nowMs)} each request is signed with both the new and the old secret, then with the new one only`;
  const parked = await parkedAfterWrite(ctx, name);
  return {
    json: {
      ...endpointJson(record, nowMs, parked),
      rotated: true,
      ...(shown !== undefined ? { generatedSecret: shown } : {}),
    },
    human: [
      what,
      ...(dropped ? ['the secret before the old one, still in its own overlap, no longer signs'] : []),
      ...(shown !== undefined ? ['', `signing secret: ${shown}`, 'shown once: give it to the receiver now; no command shows it again'] : []),
    ].join('\n'),
  };
}

/**
 * `--overlap`: `0`, or a whole number and a unit, s m h or d, up to 7d. @throws UsageError saying how to write it
 */
export function parseOverlap(text: string): number {
  const match = /^(\d{1,9})([smhd])?$/.exec(text.trim());
  const problem = (why: string) => new UsageError(`--overlap ${quoted(text.slice(0, 40))}: ${why}`);
  if (match === null) throw problem('write a whole number and a unit, s, m, h or d (e.g. 24h, 90m), or 0 to switch at once');
  const amount = Number(match[1]);
  const unit = match[2] as keyof typeof OVERLAP_UNITS_MS | undefined;
  if (unit === undefined && amount !== 0) throw problem('give a unit, s, m, h or d (e.g. 24h), or 0 to switch at once');
  const ms = amount * (unit === undefined ? 0 : OVERLAP_UNITS_MS[unit]);
  if (ms > MAX_OVERLAP_MS) throw problem(`at most 7d, got ${formatDuration(ms)}`);
  return ms;
}

// ---------------------------------------------------------------------------------------------
// Validation and views.

/**
 * The deployment's settings an endpoint is checked against: the target's (sandbox state, stack
 * output `EndpointDefaults`); for a target that does not say (explicit names, an older stack),
 * the `HANDOFF_*` variables of those settings, else the defaults. Says which.
 * @throws ConfigError naming the variable
 */
export function deploymentFor(target: Pick<Target, 'deployment' | 'description'>, env: NodeJS.ProcessEnv = process.env): { settings: DeploymentSettings; source: string } {
  if (target.deployment !== undefined) return { settings: target.deployment, source: `the settings of ${target.description}` };
  const V = SETTING_VARIABLES;
  const names = [V.retrySchedule, V.maxAttempts, V.attemptTimeoutMs, V.retentionDays, V.allowPrivateCidrs, V.allowHttp];
  const given = Object.fromEntries(names.filter((n) => env[n] !== undefined && env[n] !== '').map((n) => [n, env[n]]));
  const settings: Settings = readSettings(given);
  const source = Object.keys(given).length > 0 ? `${Object.keys(given).join(', ')} and the defaults` : 'the default settings';
  return { settings, source: `${source} (no deployment settings from ${target.description})` };
}

/** Parses and resolves, as the consumer will. @throws UsageError naming the endpoint and the field */
function checkFields(raw: Record<string, unknown>, target: Target, nowMs: number, current?: EndpointRecord): { fields: EndpointFields; source: string } {
  const { settings, source } = deploymentFor(target);
  try {
    const fields = parseEndpointFields(raw);
    resolveEndpoint({ fields, state: current?.state ?? 'enabled', createdAt: current?.createdAt ?? nowMs, updatedAt: nowMs }, settings);
    return { fields, source };
  } catch (error) {
    if (error instanceof EndpointError) throw new UsageError(`${error.message} (checked against ${source})`);
    throw error;
  }
}

/** The fields the options give; numbers that are not whole are left as text for the field's check to name. */
export function fieldsFromOptions(options: EndpointFieldOptions): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (options.name !== undefined) fields.name = options.name;
  if (options.url !== undefined) fields.url = options.url;
  if (options.eventTypes !== undefined) fields.eventTypes = list(options.eventTypes);
  if (options.match !== undefined && options.match.length > 0) fields.match = matchFromOptions(options.match);
  if (options.secret !== undefined) fields.secret = options.secret;
  if (options.retrySchedule !== undefined) fields.retrySchedule = list(options.retrySchedule).map(wholeOrText);
  for (const key of WHOLE_NUMBER_OPTIONS) {
    const value = options[key];
    if (value !== undefined) fields[key] = wholeOrText(value);
  }
  if (options.recovery !== undefined) fields.recovery = options.recovery;
  if (options.ordering !== undefined) fields.ordering = options.ordering;
  if (options.onDead !== undefined) fields.onDead = options.onDead;
  if (options.autoDisable !== undefined) fields.autoDisable = options.autoDisable;
  return fields;
}

/**
 * `--match 'data.carrier=acme,zephyr'` (repeatable): each a field and its accepted values, as text.
 * Every key is kept as given, an own property even when it is `__proto__`, for `parseEndpointFields`
 * to accept or refuse exactly as it does the endpoints file's (lib/endpoints/endpoint.ts).
 */
export function matchFromOptions(given: readonly string[]): Record<string, string[]> {
  const match = new Map<string, string[]>();
  for (const item of given) {
    const equals = item.indexOf('=');
    if (equals <= 0) throw new UsageError(`--match ${quoted(item)}: write FIELD=VALUE[,VALUE…], e.g. data.carrier=acme,zephyr`);
    const key = item.slice(0, equals).trim();
    const values = list(item.slice(equals + 1));
    if (values.length === 0) throw new UsageError(`--match ${quoted(item)}: give at least one value after =`);
    if (match.has(key)) throw new UsageError(`--match names ${key} twice: give its values once, comma-separated`);
    match.set(key, values);
  }
  // Assigning `match['__proto__']` would set the object's prototype instead: no key, no filter.
  return Object.fromEntries(match);
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

/** Runs a registry call; its refusals become one line naming the target, exit 1. */
async function registryCall<T>(ctx: CommandContext, call: (registry: ReturnType<CommandContext['registry']>) => Promise<T>): Promise<T> {
  const registry = ctx.registry();
  try {
    return await call(registry);
  } catch (error) {
    if (error instanceof EndpointNotFoundError) {
      throw new CommandFailedError(`${error.message} in ${ctx.target.description}`, error.code, { cause: error });
    }
    // Anything else (EndpointRegistryError: the table unreachable, missing) goes to cli/errors.ts,
    // which names an unreachable target plainly.
    if (error instanceof EndpointConflictError) {
      throw new CommandFailedError(error.message, error.code, { cause: error });
    }
    throw error;
  }
}

async function requireEndpoint(ctx: CommandContext, name: string): Promise<EndpointRecord> {
  const record = await registryCall(ctx, (registry) => registry.get(name));
  if (record === undefined) throw new CommandFailedError(`no endpoint named ${quoted(name)} in ${ctx.target.description}`, 'endpoint-not-found');
  return record;
}

function checkName(name: string): string {
  if (!/^[a-z0-9-]{1,64}$/.test(name)) throw new UsageError(`${quoted(name.slice(0, 80))} is not an endpoint name (1–64 characters of a-z 0-9 -)`);
  return name;
}

/**
 * How many deliveries of the endpoint are parked (docs/contract.md §12), from the ledger's parked
 * listing of that endpoint (its index entries alone); null when the target names no ledger table.
 */
export async function parkedCount(ctx: CommandContext, name: string): Promise<number | null> {
  if (ctx.target.ledgerTable === undefined) return null;
  return ctx.ledger().countByState('parked', { endpoint: name });
}

/** `parkedCount` after the registry was written: a failure to count must not hide that the write was made. */
async function parkedAfterWrite(ctx: CommandContext, name: string): Promise<number | null> {
  try {
    return await parkedCount(ctx, name);
  } catch {
    return null;
  }
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

/**
 * An endpoint as the commands print it: never its secret nor a rotation's previous one, its URL
 * redacted; while an overlap lasts at `nowMs`, when the previous secret stops signing; its parked
 * deliveries as counted (`parkedCount`; null: not counted).
 */
export function endpointJson(record: EndpointRecord, nowMs: number = Date.now(), parked: number | null = null) {
  const { secret, previousSecret: _previous, previousSecretUntil: _until, url, name: _name, eventTypes: _types, match: _match, ...settings } = record.fields;
  const overlapUntil = overlapEnd(record.fields, nowMs);
  return {
    name: record.fields.name,
    url: redactUrl(url),
    state: record.state,
    eventTypes: record.fields.eventTypes,
    match: record.fields.match ?? {},
    secret: secret === undefined ? 'unset' : 'set',
    /** While a rotation's overlap lasts: when the previous secret stops signing (ISO). */
    previousSecretUntil: overlapUntil === undefined ? null : new Date(overlapUntil).toISOString(),
    /** Deliveries parked for it (docs/contract.md §12); null when not counted. */
    parked,
    /** Back-pressure and failures as the consumers last wrote them (docs/contract.md §12). */
    health: healthJson((record as HealthRecord).health, nowMs),
    stateChange: record.stateChange === undefined ? null : { ...record.stateChange, at: new Date(record.stateChange.at).toISOString() },
    /** The endpoint's own settings (unset: the deployment's default). */
    settings,
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(record.updatedAt).toISOString(),
  };
}

function effectiveJson(e: Endpoint) {
  return {
    retrySchedule: e.policy.waitsSeconds,
    maxAttempts: e.policy.maxAttempts,
    attemptTimeoutMs: e.attemptTimeoutMs,
    recovery: e.recovery,
    ordering: e.ordering,
    onDead: e.onDead,
    autoDisable: e.autoDisable,
    disableAfterSeconds: e.disableAfterSeconds,
    disableAfterFailures: e.disableAfterFailures,
    rateLimitPerSecond: e.rateLimitPerSecond ?? null,
    receiverRetentionSeconds: e.receiverRetentionSeconds ?? null,
  };
}

function showText(
  record: EndpointRecord,
  parking: { parked: number | null; release: Resume | undefined },
  effective: Endpoint | undefined,
  problem: string | undefined,
  source: string,
  nowMs: number,
): string {
  const f = record.fields;
  const pairs: [string, string][] = [
    ['name', f.name],
    ['state', stateText(record, nowMs)],
    ['health', describeHealth((record as HealthRecord).health, nowMs)],
    ['url', redactUrl(f.url)],
    ['event types', f.eventTypes.join(', ')],
    ['match', Object.keys(f.match ?? {}).length === 0 ? '(none)' : matchText(f.match ?? {})],
    ['secret', secretText(f, nowMs)],
    ['parked', parkedText(record, parking.parked, parking.release)],
    ['release', releaseText(parking.release, nowMs)],
    ['created', formatInstant(record.createdAt, nowMs)],
    ['updated', formatInstant(record.updatedAt, nowMs)],
  ];
  if (effective !== undefined) {
    const own = (field: keyof EndpointFields) => (f[field] === undefined ? ' (default)' : '');
    pairs.push(
      ['retry schedule', `${effective.policy.waitsSeconds.join(', ')} s${f.retrySchedule === undefined ? ' (default)' : ''}`],
      ['max attempts', `${effective.policy.maxAttempts}${own('maxAttempts')}`],
      ['attempt timeout', `${effective.attemptTimeoutMs} ms${own('attemptTimeoutMs')}`],
      ['recovery', `${effective.recovery}${own('recovery')}`],
      ['ordering', `${effective.ordering}${own('ordering')}`],
      ['on dead', `${effective.onDead}${own('onDead')}`],
      [
        'auto-disable',
        effective.autoDisable
          ? `after ${effective.disableAfterSeconds} s without an accepted request and ${effective.disableAfterFailures} failed attempts`
          : 'off',
      ],
      ['rate limit', effective.rateLimitPerSecond === undefined ? '(none)' : `${effective.rateLimitPerSecond}/s`],
      ['receiver retention', effective.receiverRetentionSeconds === undefined ? '(not given)' : `${effective.receiverRetentionSeconds} s`],
    );
  }
  const text = keyValues(pairs);
  const note = problem === undefined ? `defaults from ${source}` : `cannot be used with ${source}: ${problem}`;
  return `${text}\n\n${note}`;
}

/** The fields as given, after add or update. */
function showFields(record: EndpointRecord, nowMs: number): string {
  const f = record.fields;
  const { name: _n, url: _u, eventTypes: _e, match: _m, secret: _s, previousSecret: _p, previousSecretUntil: _pu, ...rest } = f;
  const pairs: [string, string][] = [
    ['name', f.name],
    ['state', record.state],
    ['url', redactUrl(f.url)],
    ['event types', f.eventTypes.join(', ')],
    ['match', Object.keys(f.match ?? {}).length === 0 ? '(none)' : matchText(f.match ?? {})],
    ['secret', secretText(f, nowMs)],
    ...Object.entries(rest).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)] as [string, string]),
  ];
  return keyValues(pairs);
}

function parkedText(record: EndpointRecord, parked: number | null, release: Resume | undefined): string {
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

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function stateText(record: EndpointRecord, nowMs: number): string {
  const c = record.stateChange;
  return c === undefined ? record.state : `${record.state} by ${c.by} at ${formatInstant(c.at, nowMs)}: ${c.reason}`;
}

/** Whether a secret is set, and until when a rotation's previous secret still signs; never a secret. */
function secretText(fields: Pick<EndpointFields, 'secret' | 'previousSecret' | 'previousSecretUntil'>, nowMs: number): string {
  const { secret } = fields;
  if (secret === undefined) return 'unset (requests are not signed)';
  const until = overlapEnd(fields, nowMs);
  const notes = [
    // A value (whsec_, or encrypted with the registry's key: lib/endpoints/secret-cipher.ts) is the registry's own.
    ...(secret.startsWith('arn:') ? ['in Secrets Manager'] : []),
    ...(until === undefined ? [] : [`previous secret accepted until ${formatInstant(until, nowMs)}`]),
  ];
  return notes.length === 0 ? 'set' : `set (${notes.join('; ')})`;
}

/** When a rotation's previous secret stops signing, while it still does at `nowMs`. */
function overlapEnd(fields: Pick<EndpointFields, 'secret' | 'previousSecret' | 'previousSecretUntil'>, nowMs: number): number | undefined {
  const until = fields.previousSecretUntil;
  return fields.secret !== undefined && fields.previousSecret !== undefined && until !== undefined && nowMs < until ? until : undefined;
}

function matchText(match: Readonly<Record<string, readonly unknown[]>>): string {
  return Object.entries(match)
    .map(([key, values]) => `${key}=${values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(',')}`)
    .join(' ');
}

function changedFields(before: EndpointFields, after: EndpointFields): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  const a = before as unknown as Record<string, unknown>;
  const b = after as unknown as Record<string, unknown>;
  return [...keys].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k])).sort();
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function wholeOrText(text: string): number | string {
  return /^\d{1,15}$/.test(text.trim()) ? Number(text.trim()) : text;
}

function localUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

function collect(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** The options of add and update: each field of docs/contract.md §11. */
function fieldOptions(command: Command, mode: 'add' | 'update'): Command {
  const choice = (flags: string, description: string, choices: readonly string[]) => new Option(flags, description).choices(choices);
  if (mode === 'add') command.option('--name <name>', 'unique; 1–64 of a-z 0-9 -');
  else command.addOption(new Option('--name <name>', 'the endpoint (an endpoint cannot be renamed)').hideHelp());
  return command
    .option('--url <url>', 'where requests go: https (http only where the deployment allows it)')
    .option('--event-types <types>', `comma-separated: ${EVENT_TYPES.join(', ')}; or '${ALL_EVENT_TYPES}' for all`)
    .option(
      '--match <field=values>',
      "only events whose field holds one of the values, e.g. 'data.carrier=acme,zephyr' (repeatable; every field must match; values are text: numbers and booleans via --from-file)",
      collect,
    )
    .option(
      '--secret <whsec>',
      'its signing secret (whsec_…) or the ARN of a Secrets Manager secret; add generates one when not given (a value typed here stays in your shell history: prefer --from-file)',
    )
    .option('--unsigned', 'add it without a signing secret (requests are not signed)')
    .option('--retry-schedule <seconds>', "comma-separated waits after each failed attempt (default: the deployment's)")
    .option('--max-attempts <n>', "attempts in all (default: the deployment's)")
    .option('--attempt-timeout-ms <ms>', "per request, at most the deployment's (default: the deployment's)")
    .addOption(choice('--recovery <mode>', 'review: a dead delivery is dead-lettered; drop: row kept, no dead letter', RECOVERIES))
    .addOption(choice('--ordering <mode>', 'none, or per-shipment (docs/contract.md §13)', ORDERINGS))
    .addOption(choice('--on-dead <mode>', 'continue, or hold later events of the shipment', ON_DEAD))
    .option('--auto-disable', 'disable it after a long run of failures (docs/contract.md §12; the default)')
    .option('--no-auto-disable', 'never disable it automatically')
    .option('--disable-after-seconds <s>', 'auto-disable after this long without an accepted request')
    .option('--disable-after-failures <n>', 'and this many failed attempts')
    .option('--rate-limit-per-second <n>', 'at most this many requests per second to it, over all consumers')
    .option('--receiver-retention-seconds <s>', 'how long the receiver remembers event IDs; a longer retry window is refused')
    .option('--from-file <path>', 'the fields as a JSON object (options given override them)');
}

function withEndpointsTable(command: Command): Command {
  if (command.options.some((option) => option.long === '--endpoints-table')) return command;
  return command.option('--endpoints-table <name>', 'the endpoint registry table name');
}
