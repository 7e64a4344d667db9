/**
 * `handoff endpoint …` (docs/contract.md §11): the endpoints of a deployment, in its registry.
 *
 * list, show, add, update, disable, enable, remove, rotate-secret, test, against AWS and the sandbox
 * alike (the registry's table is on the target). Every endpoint written is first checked as the
 * consumer will use it: `parseEndpointFields` for each field's shape, then `resolveEndpoint` with
 * the deployment's settings (its defaults, its attempt timeout, its retention), so a refusal names
 * the field here rather than failing deliveries later.
 *
 * A signing secret is printed once: by `add` when it generated one, by `rotate-secret`. Nothing
 * else prints it (`secret: set`), in either form, nor a rotation's previous secret (only until when
 * it still signs). URLs are shown redacted (docs/contract.md §3). The registry stores every secret
 * the commands write encrypted (`encrypted:kms:…` with the registry's key, `encrypted:local:…` in
 * the sandbox: cli/context.ts `encryptSecret`).
 *
 * Parking (docs/contract.md §12): every endpoint's output counts its parked deliveries; `show` and
 * `enable` give the release in progress, which `enable --rate` begins and the recovery runs carry
 * out (lib/resume.ts).
 *
 * This file registers the subcommands; each group's work is in its own file (endpoint-read.ts:
 * list, show; endpoint-write.ts: add, update, remove; endpoint-state.ts: disable, enable;
 * endpoint-secret.ts: rotate-secret), the options of add and update are read off the fields table
 * (endpoint-options.ts), and every output is made by endpoint-view.ts.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { MAX_PAGE_LIMIT } from '../../lib/endpoints/dynamodb-registry-listing';
import { ENDPOINT_STATES } from '../../lib/endpoints/endpoint';
import { DEFAULT_RESUME_RATE } from '../../lib/resume';
import type { CommandContext } from '../context';
import type { TargetOptions } from '../target';
import { fieldOptions, type EndpointFieldOptions } from './endpoint-options';
import { endpointListCommand, endpointShowCommand, type ListOptions } from './endpoint-read';
import { DEFAULT_OVERLAP, endpointRotateSecretCommand, type RotateOptions } from './endpoint-secret';
import { ENABLE_REASON, endpointSetStateCommand, MAX_RESUME_RATE, type StateOptions } from './endpoint-state';
import { endpointAddCommand, endpointRemoveCommand, endpointUpdateCommand } from './endpoint-write';
import { endpointTestCommand } from './endpoint-test';
import type { CommandResult } from './result';

export { deploymentFor, parkedCount } from './endpoint-common';
export { fieldsFromOptions, matchFromOptions, type EndpointFieldOptions } from './endpoint-options';
export { endpointListCommand, endpointShowCommand, PARKED_COUNT_CONCURRENCY } from './endpoint-read';
export { DEFAULT_OVERLAP, endpointRotateSecretCommand, MAX_OVERLAP_MS, parseOverlap, type RotateOptions } from './endpoint-secret';
export { endpointSetStateCommand, MAX_RESUME_RATE, parseResumeRate, type StateOptions } from './endpoint-state';
export { endpointJson, releaseJson } from './endpoint-view';
export { endpointAddCommand, endpointRemoveCommand, endpointUpdateCommand } from './endpoint-write';
export { endpointTestCommand, sendTestEvent } from './endpoint-test';

export interface EndpointCommonOptions extends TargetOptions {
  readonly json?: boolean;
}

/** cli/main.ts's runner: resolves the target, runs the work, prints its result. */
export type EndpointRunner = (
  options: EndpointCommonOptions,
  work: (ctx: CommandContext) => Promise<CommandResult>,
) => Promise<void>;

const PARKED_NOTE = `parked: deliveries held for a disabled endpoint (docs/contract.md §12): neither attempted nor dead;
endpoint enable NAME releases them, oldest first`;
/** The JSON every endpoint command prints for an endpoint, as the help texts give it. */
const ENDPOINT_JSON_HELP = `an endpoint as JSON: {name, url (redacted), state, eventTypes, match, owner, secret ("set"|"unset"),
publicKey (an ed25519 secret's whpk_…, else null), headers (a secret value as {"secret": true}),
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
    .description('the endpoints events are delivered to: list, show, add, update, disable, enable, remove, rotate-secret, test')
    .addHelpText(
      'after',
      `
Each endpoint is checked as the consumer will use it, against the deployment's settings.
A signing secret is printed once (add, rotate-secret) and never again.`,
    );
  const target = (command: Command) => withEndpointsTable(withTarget(command));

  target(group.command('list').description('the endpoints: name, state, URL (redacted), event types; a page at a time with --limit, --owner or --state'))
    .option('--limit <n>', `endpoints per page (1–${MAX_PAGE_LIMIT}; default ${MAX_PAGE_LIMIT} with --owner, --state or --cursor)`, pageLimit)
    .option('--cursor <cursor>', 'the page after the one that printed it (give the same --owner and --state)')
    .option('--owner <owner>', "that owner's endpoints only, in name order (the owner index: one query a page)")
    .addOption(new Option('--state <state>', 'enabled or disabled endpoints only').choices([...ENDPOINT_STATES]))
    .addHelpText(
      'after',
      `\n${PARKED_NOTE}.\n--json: an array, each ${ENDPOINT_JSON_HELP}.\nWith --limit, --cursor, --owner or --state: one page, --json {items (that array), next (the cursor of the next page, or null)}.\n\nExamples:\n  handoff endpoint list\n  handoff endpoint list --json\n  handoff endpoint list --owner merchant-42 --limit 20`,
    )
    .action(async (options: EndpointCommonOptions & ListOptions) => {
      const { limit, cursor, owner, state } = options;
      await run(options, (ctx) => endpointListCommand(ctx, { limit, cursor, owner, state }));
    });

  target(group.command('show').description("one endpoint: its fields, its state and who set it, the settings in effect").argument('<name>', 'the endpoint'))
    .addHelpText(
      'after',
      `
The secret is never shown: only whether one is set; an ed25519 secret's public key is, and the
headers, a secret one's value as (secret). The parked count and a release in progress
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
--signature ed25519 generates an ed25519 key pair instead: requests are signed v1a, and the
receiver verifies with its public key (whpk_…), which show prints too.
--headers 'NAME: VALUE' adds a header to every request (repeatable); a secret one goes in
--from-file: {"headers": {"Authorization": {"secretArn": "arn:aws:secretsmanager:…"}}} in AWS,
{"secret": "…"} in the sandbox (stored encrypted); no command shows it again.
The registry stores the secret encrypted with its KMS key (stack output EndpointsKeyArn, or
HANDOFF_ENDPOINTS_KEY_ARN with names given: the caller needs kms:Encrypt on it); the sandbox
with its own key.

Examples:
  handoff endpoint add --name acme --url https://hooks.acme.example/handoff --event-types shipment.delivered,shipment.exception
  handoff endpoint add --name zephyr-ops --url https://ops.example/hook --event-types '*' --match 'data.carrier=acme,zephyr'
  handoff endpoint add --name erp --url https://erp.example/in --event-types '*' --signature ed25519 --headers 'X-Tenant: acme'
  handoff endpoint add --from-file endpoint.json`,
    )
    .action(async (options: EndpointCommonOptions & EndpointFieldOptions) => {
      await run(options, (ctx) => endpointAddCommand(ctx, options));
    });

  fieldOptions(target(group.command('update').description("change an endpoint's fields; those not given are kept").argument('<name>', 'the endpoint')), 'update')
    .addHelpText(
      'after',
      `
--match and --headers replace the whole filter or set of headers; --from-file merges the file's
fields over the current ones (a header given as {"secret": true}, as show prints one, keeps its value).
The state is kept (endpoint disable/enable change it); the secret too (endpoint rotate-secret, which
also changes the signature scheme: rotate-secret NAME --signature ed25519).

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
    .option('--secret <secret>', "the new secret (default: a generated one of the endpoint's signature scheme)")
    .option('--signature <scheme>', 'hmac-sha256 or ed25519: the new secret is of this scheme, and the endpoint signs with it from now')
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
An ed25519 endpoint gets a new key pair: its public key is printed and shown by show. With
--signature the scheme changes too, the old secret signing beside the new one as above (an HMAC
secret and an ed25519 key: v1a and v1 signatures during the overlap).
An endpoint whose secret is a Secrets Manager ARN is rotated in Secrets Manager, not here.

Examples:
  handoff endpoint rotate-secret acme
  handoff endpoint rotate-secret acme --overlap 2h
  handoff endpoint rotate-secret acme --overlap 0
  handoff endpoint rotate-secret acme --signature ed25519`,
    )
    .action(async (name: string, options: EndpointCommonOptions & RotateOptions) => {
      await run(options, (ctx) => endpointRotateSecretCommand(ctx, name, options));
    });

  target(group.command('test').description('send a signed handoff.test event to one endpoint alone, through the queue and the consumer').argument('<name>', 'the endpoint'))
    .addHelpText(
      'after',
      `
The event (status "test", data.type "handoff.test") is put on the delivery queue addressed to this
endpoint alone, sealed as handoff's own messages are: the consumer delivers it as any delivery,
signed with the endpoint's secret, retried, parked while the endpoint is disabled. No other
endpoint gets it. Follow it with handoff status EVENT_ID.
--json: {name, eventId}.

Example:
  handoff endpoint test acme`,
    )
    .action(async (name: string, options: EndpointCommonOptions) => {
      await run(options, (ctx) => endpointTestCommand(ctx, name));
    });

  return group;
}

function withEndpointsTable(command: Command): Command {
  if (command.options.some((option) => option.long === '--endpoints-table')) return command;
  return command.option('--endpoints-table <name>', 'the endpoint registry table name');
}

/** `--limit`: a whole number from 1 to MAX_PAGE_LIMIT. */
function pageLimit(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > MAX_PAGE_LIMIT) throw new InvalidArgumentError(`must be a whole number from 1 to ${MAX_PAGE_LIMIT}.`);
  return n;
}
