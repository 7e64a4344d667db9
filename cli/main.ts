/**
 * The `handoff` operator command (docs/contract.md §10). Parses with commander, resolves the target once,
 * runs one command, prints its result as aligned text or as JSON, and maps every failure to one
 * line and an exit status: 0 done, 1 refused or failed, 2 usage.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { ConfigError } from '../lib/errors';
import { ENDPOINT_NAME } from '../lib/endpoints/endpoint';
import { safe } from '../lib/terminal';
import { deadCommand } from './commands/dead';
import { addEndpointCommands } from './commands/endpoint';
import { releaseCommand, type ReleaseOptions } from './commands/release';
import { DEFAULT_REPLAY_RATE, isoTime, replayCommand, type ReplayOptions } from './commands/replay';
import type { CommandResult } from './commands/result';
import { readInput, sendCommand } from './commands/send';
import { payloadLimitFor } from './commands/send-events';
import { DEFAULT_STATS_SINCE_MS, parseSince, statsCommand } from './commands/stats';
import { statusOf, type StatusCommandOptions } from './commands/shipment-status';
import { CommandContext } from './context';
import { describeFailure, EXIT, type ExitCode } from './errors';
import { jsonText } from './format';
import { resolveTarget, unreachableHint, type Target, type TargetOptions } from './target';

export interface Io {
  readonly stdin: NodeJS.ReadStream;
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
}

interface CommonOptions extends TargetOptions {
  readonly json?: boolean;
}

const DEAD_PAGE_DEFAULT = 20;
const DEAD_PAGE_MAX = 100;
const STATS_MAX_ROWS_DEFAULT = 5000;

/** Runs the command line and returns the exit status; never throws. */
export async function main(argv: readonly string[], io: Io = process): Promise<ExitCode> {
  let target: Target | undefined;
  let json = false;

  const execute = async (options: CommonOptions, work: (ctx: CommandContext) => Promise<CommandResult>) => {
    json = options.json === true;
    target = await resolveTarget(options);
    const ctx = new CommandContext(target, { stdout: io.stdout, stderr: io.stderr });
    let result: CommandResult;
    try {
      result = await work(ctx);
    } finally {
      ctx.close();
    }
    io.stdout.write(json ? `${jsonText(result.json)}\n` : `${safe(result.human, { keepNewlines: true })}\n`);
    if (result.failure) {
      io.stderr.write(`handoff: ${safe(result.failure)}\n`);
      return EXIT.failed;
    }
    return EXIT.ok;
  };
  let exitCode: ExitCode = EXIT.ok;
  const program = buildProgram(io, async (options, work) => {
    exitCode = await execute(options, work);
  });

  try {
    await program.parseAsync(argv);
    return exitCode;
  } catch (error) {
    // Commander has already printed its own one-line message (or the help it was asked for).
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const failure =
      error instanceof ConfigError
        ? { exitCode: EXIT.usage, code: error.code, message: safe(error.message) }
        : describeFailure(error, (e) => unreachableHint(target, e));
    io.stderr.write(`handoff: ${failure.message}\n`);
    if (json) io.stdout.write(`${jsonText({ error: { code: failure.code, message: failure.message } })}\n`);
    return failure.exitCode;
  }
}

type Runner = (options: CommonOptions, work: (ctx: CommandContext) => Promise<CommandResult>) => Promise<void>;

export function buildProgram(io: Io, run: Runner): Command {
  const program = new Command('handoff')
    .description('Operate handoff: send events, inspect deliveries, replay dead ones, see how it is doing, manage endpoints.')
    .version(packageVersion(), '-V, --version')
    .addHelpText(
      'after',
      `
Target (first that applies):
  --queue-url/--dlq-url/--table   explicit names (--redrive-queue-url for stats,
                                  --endpoints-table for the endpoint commands), with
                                  the standard AWS environment (AWS_REGION,
                                  AWS_PROFILE, AWS_ENDPOINT_URL, ...)
  --stack NAME                    a deployed stack's CloudFormation outputs
  (nothing)                       the sandbox started by npm start on this machine

Exit status: 0 done, 1 refused or failed (one line on stderr), 2 usage.`,
    )
    // Settings the subcommands inherit: errors come back to main() instead of exiting the
    // process, and commander's messages (which quote the arguments typed) go to the streams
    // given, made inert like all other output.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(safe(text, { keepNewlines: true })),
      writeErr: (text) => io.stderr.write(safe(text, { keepNewlines: true })),
    })
    .showSuggestionAfterError();

  targetCommand(
    program,
    'send',
    'validate events and put them on the delivery queue (--ordered: the ordered intake)',
    ['[file]', 'a JSON event, or NDJSON (one event per line); "-" or omitted: stdin'],
  )
    .option('--ordered', "to the ordered intake (a FIFO queue): each shipment's events in input order, deduplicated by event ID")
    .option('--ordered-queue-url <url>', "the ordered intake's FIFO queue URL")
    .addHelpText(
      'after',
      '\nExamples:\n  handoff send event.json\n  handoff send events.ndjson\n  cat events.ndjson | handoff send --json\n  handoff send --ordered shipment-events.ndjson',
    )
    .action(async (file: string | undefined, options: CommonOptions & { ordered?: boolean }) => {
      await run(options, async (ctx) => {
        const text = await readInput(file, io.stdin);
        return sendCommand(ctx, text, { payloadLimit: payloadLimitFor(ctx.target, process.env), ordered: options.ordered === true });
      });
    });

  targetCommand(
    program,
    'status',
    "show an event's deliveries, one per endpoint: state, attempts with their outcomes, replays; or a shipment's (--shipment)",
    ['[eventId]', 'the event ID (omit with --shipment)'],
  )
    .option('--endpoint <name>', 'only the delivery to this endpoint', endpointName)
    .option('--body', 'print only the event as stored (canonical JSON), e.g. to pipe into handoff send')
    .option('--shipment <id>', "every delivery of this shipment's events, newest first, a page at a time (the shipment index)")
    .option('--limit <n>', `with --shipment: deliveries per page (1–${DEAD_PAGE_MAX})`, wholeNumber(1, DEAD_PAGE_MAX), DEAD_PAGE_DEFAULT)
    .option('--cursor <cursor>', 'with --shipment: continue from where the previous page ended')
    .addHelpText(
      'after',
      '\nWith --json: {"eventId", "deliveries": [ … ]}, or with --endpoint that one delivery\'s object;\n' +
        'with --shipment: {"shipmentId", "deliveries": [ … ], "next"}, next the cursor of the next page or null.\n\n' +
        'Examples:\n  handoff status evt_42\n  handoff status evt_42 --endpoint billing --json\n  handoff status evt_42 --body | handoff send\n  handoff status --shipment shp_1001',
    )
    .action(async (eventId: string | undefined, options: CommonOptions & StatusCommandOptions) => {
      await run(options, (ctx) => statusOf(ctx, eventId, options));
    });

  targetCommand(program, 'dead', 'list dead deliveries, a page at a time, oldest death first')
    .option('--endpoint <name>', "only this endpoint's dead deliveries", endpointName)
    .option('--limit <n>', `records per page (1–${DEAD_PAGE_MAX})`, wholeNumber(1, DEAD_PAGE_MAX), DEAD_PAGE_DEFAULT)
    .option('--cursor <cursor>', 'continue from where the previous page ended')
    .addHelpText(
      'after',
      '\nExamples:\n  handoff dead\n  handoff dead --endpoint billing\n  handoff dead --limit 50 --cursor <cursor from the previous page>',
    )
    .action(async (options: CommonOptions & { limit: number; cursor?: string; endpoint?: string }) => {
      await run(options, (ctx) => deadCommand(ctx, options));
    });

  targetCommand(
    program,
    'replay',
    "return dead deliveries to pending and enqueue their event again, each for its own endpoint",
    ['[eventId]', 'the event whose dead deliveries to replay (omit for a bulk replay)'],
  )
    .requiredOption('--reason <text>', 'why it is safe to deliver again (kept in the audit trail)')
    .requiredOption('--operator <name>', 'who is replaying (kept in the audit trail)')
    .option('--endpoint <name>', 'only the delivery to this endpoint (with --dead-since: the endpoint to replay)', endpointName)
    .option('--dead-since <time>', "bulk: replay the endpoint's deliveries that died at or after this ISO 8601 time", isoTimeOption)
    .option('--until <time>', 'bulk: … and before this ISO 8601 time (default: now)', isoTimeOption)
    .addOption(
      new Option('--dead-reason <reason>', 'bulk: only the deliveries that died for this reason').choices(['exhausted', 'rejected']),
    )
    .option('--dry-run', 'bulk: count the deliveries it would replay; write nothing')
    .option('--rate <n>', `bulk: replays per second at most (1–1000; default ${DEFAULT_REPLAY_RATE})`, wholeNumber(1, 1000))
    .addHelpText(
      'after',
      `
Without --endpoint, every dead delivery of the event is replayed, each with its own audit entry.
A bulk replay takes the endpoint's dead deliveries that died in the window, oldest first, at a
bounded rate; interrupted, the same command run again replays only what is still dead.
--dead-reason filters on how a delivery died; --reason is the audit text every replay needs.

Examples:
  handoff replay evt_42 --operator alice --reason "receiver fixed its schema (INC-123)"
  handoff replay evt_42 --endpoint billing --operator alice --reason "INC-123"
  handoff replay --endpoint billing --dead-since 2026-12-01T00:00:00Z --dead-reason exhausted \\
    --operator alice --reason "billing was down (INC-124)" --dry-run`,
    )
    .action(async (eventId: string | undefined, options: CommonOptions & ReplayOptions) => {
      await run(options, (ctx) => replayCommand(ctx, eventId, options));
    });

  targetCommand(
    program,
    'release',
    "let a shipment held by its dead event go on without it (an endpoint ordered per shipment, onDead hold)",
    ['<eventId>', 'the dead event holding its shipment'],
  )
    .requiredOption('--endpoint <name>', 'the endpoint ordered per shipment where it died', endpointName)
    .requiredOption('--reason <text>', 'why the shipment may go on without it (kept in the audit trail)')
    .requiredOption('--operator <name>', 'who is releasing (kept in the audit trail)')
    .addHelpText(
      'after',
      `
The delivery stays dead (and can still be replayed); its row gets an audit entry, and the
shipment's next event, if it waits, is sent. Refused, writing nothing, unless the delivery is
dead and its shipment waits on it. Run again after an interruption, it finishes the release.

With --json: {"eventId", "endpoint", "state", "deadReason", "sequence", "next", "woken",
"releasedAt", "recordedBefore", "operator", "caller", "reason"}.

Example:
  handoff release evt_42 --endpoint billing --operator alice --reason "billing will never take it (INC-125)"`,
    )
    .action(async (eventId: string, options: CommonOptions & ReleaseOptions) => {
      await run(options, (ctx) => releaseCommand(ctx, eventId, options));
    });

  targetCommand(
    program,
    'stats',
    'pending count (on the queues), oldest message received, retry rate, dead count, parked per endpoint, delivery latency, queue depths',
  )
    .option('--endpoint <name>', "this endpoint's figures (no pending count: the queues are shared; their depths stay the whole queues')", endpointName)
    .option(
      '--max-rows <n>',
      'read at most this many dead rows from the ledger',
      wholeNumber(1, 1_000_000),
      STATS_MAX_ROWS_DEFAULT,
    )
    .option('--since <duration>', 'the metrics window: the last 30m, 24h, 7d … (at most 15d; default: 24h)', sinceOption)
    .addHelpText(
      'after',
      `
parked: deliveries held for a disabled endpoint (docs/contract.md §12), counted per endpoint in the
registry; on no queue, so not part of pending. --json: parkedCount (null: no registry in the target and no --endpoint),
and byEndpoint.NAME.parkedCount without --endpoint.

Examples:
  handoff stats --since 7d --json
  handoff stats --endpoint billing`,
    )
    .action(async (options: CommonOptions & { maxRows: number; since?: number; endpoint?: string }) => {
      await run(options, (ctx) =>
        statsCommand(ctx, { maxRowsPerState: options.maxRows, sinceMs: options.since ?? DEFAULT_STATS_SINCE_MS, ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }) }),
      );
    });

  // `handoff endpoint …` (docs/contract.md §11): the registry's commands, with the same target options.
  addEndpointCommands(program, run, withTarget);

  return program;
}

/** `program`'s subcommand `name` with the target options (withTarget), after its positional argument if it takes one. */
function targetCommand(
  program: Command,
  name: string,
  description: string,
  argument?: readonly [name: string, description: string],
): Command {
  const command = program.command(name).description(description);
  return withTarget(argument === undefined ? command : command.argument(...argument));
}

function withTarget(command: Command): Command {
  return command
    .option('--json', 'print JSON for machines')
    .option('--stack <name>', 'a deployed stack: read its CloudFormation outputs')
    .option('--queue-url <url>', 'the delivery queue URL')
    .option('--dlq-url <url>', 'the dead-letter queue URL')
    .option('--redrive-queue-url <url>', "the redrive queue URL (where SQS's redrive moves a message the consumer kept failing on)")
    .option('--table <name>', 'the ledger table name');
}

/** An endpoint's name as the registry spells it (docs/contract.md §11), for commander. */
function endpointName(raw: string): string {
  if (!ENDPOINT_NAME.test(raw)) throw new InvalidArgumentError('must be an endpoint name: 1–64 of a-z 0-9 -.');
  return raw;
}

function isoTimeOption(raw: string): number {
  try {
    return isoTime(raw);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

function wholeNumber(min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > max) throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}.`);
    return n;
  };
}

function packageVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('../package.json') as { version: string }).version;
}

/** `parseSince` as commander's option parser: its refusal names the option and the value. */
export function sinceOption(raw: string): number {
  try {
    return parseSince(raw);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}
