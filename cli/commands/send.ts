/**
 * `handoff send [file]`: puts events on the delivery queue the way a producer would (a plain SQS
 * message, docs/contract.md §2), after validating every one of them with the consumer's own rules.
 *
 * Input is one JSON event (pretty-printed or not) or NDJSON, one event per line, from a file or
 * stdin. Validation is all or nothing: one bad line and nothing is sent, so a fixed file can be
 * sent again without guessing which half went out.
 *
 * Events are checked against the target's payload limit (the sandbox's state file, the stack's
 * output), since that is what its consumer will accept; the operator's own environment is used
 * only when the target does not say, and the command then says which limit it used.
 *
 * `--ordered` sends to the ordered intake instead (docs/contract.md §13), in input order per
 * shipment; an event whose shipment had an earlier one not sent is listed as failed with code
 * `held-back`, so a second run of the same file sends the rest in order. The sending itself is
 * send-events.ts, which the management API runs too.
 */
import { readFile } from 'node:fs/promises';
import cliProgress from 'cli-progress';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import { safe } from '../../lib/terminal';
import type { CommandContext } from '../context';
import { CommandFailedError, UsageError } from '../errors';
import { table } from '../format';
import { requireName, requireOrderedQueue } from '../target';
import type { CommandResult } from './result';
import { BATCH_ENTRIES, sendEvents, type PayloadLimit, type SendOutcome } from './send-events';

/** Above this many events a TTY gets a progress bar; below it the command is done before one would help. */
const PROGRESS_ABOVE = BATCH_ENTRIES;
/** Human output lists each event up to this many; `--json` always lists all. */
const LIST_UP_TO = 20;

export interface SendOptions {
  readonly payloadLimit: PayloadLimit;
  /** `--ordered`: to the ordered intake (docs/contract.md §13), in input order per shipment. */
  readonly ordered?: boolean;
}

/** Reads the file, or stdin when the file is `-` or absent and stdin is piped. */
export async function readInput(file: string | undefined, stdin: NodeJS.ReadStream): Promise<string> {
  if (file !== undefined && file !== '-') {
    try {
      return await readFile(file, 'utf8');
    } catch (error) {
      throw new CommandFailedError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  if (file === undefined && stdin.isTTY) {
    throw new UsageError('give events to send: handoff send FILE, or pipe them in (NDJSON for many)');
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Parses the input into events, or throws one line naming the first problem. A single JSON
 * object is one event even across lines; otherwise each non-blank line is one.
 */
export function parseEvents(text: string, limit: PayloadLimit): ParsedEvent[] {
  const problem = (body: string, error: { readonly eventId?: string; readonly message: string }) => {
    // Over the limit, the line names whose limit it is: the operator's and the target's may differ.
    const size = Buffer.byteLength(body, 'utf8');
    const why = size > limit.bytes ? `message is ${size} bytes, over the ${limit.bytes}-byte payload limit of ${limit.source}` : error.message;
    return `${invalidLabel(error.eventId)}: ${why}`;
  };
  const trimmed = text.trim();
  if (trimmed === '') throw new UsageError('the input has no events');
  let whole: unknown;
  try {
    whole = JSON.parse(trimmed);
  } catch {
    whole = undefined;
  }
  if (Array.isArray(whole)) throw new UsageError('a JSON array is not an event: put one event per line (NDJSON)');
  if (whole !== undefined) {
    const result = parseEvent(trimmed, limit.bytes);
    if (!result.ok) throw new CommandFailedError(`${problem(trimmed, result.error)}; nothing sent`, 'invalid');
    return [result.value];
  }

  const events: ParsedEvent[] = [];
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '') return;
    const result = parseEvent(line, limit.bytes);
    if (result.ok) events.push(result.value);
    else problems.push(`line ${index + 1}, ${problem(line, result.error)}`);
  });
  if (problems.length > 0) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more invalid lines)` : '';
    throw new CommandFailedError(`${problems[0]}${more}; nothing sent`, 'invalid');
  }
  return events;
}

export async function sendCommand(ctx: CommandContext, text: string, options: SendOptions): Promise<CommandResult> {
  const { payloadLimit } = options;
  if (!payloadLimit.fromTarget) {
    ctx.output.stderr.write(
      safe(`handoff: note: no payload limit from ${ctx.target.description}; checking events against ${payloadLimit.bytes} bytes (${payloadLimit.source})`) + '\n',
    );
  }
  const events = parseEvents(text, payloadLimit);
  const ordered = options.ordered === true;
  // Refused before the progress bar shows (sendEvents asks the same again).
  if (ordered) requireOrderedQueue(ctx.target);
  else requireName(ctx.target, 'queueUrl');

  const bar =
    events.length > PROGRESS_ABOVE && ctx.output.stderr.isTTY
      ? new cliProgress.SingleBar(
          { stream: ctx.output.stderr, format: 'sending [{bar}] {value}/{total} events', hideCursor: true },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  bar?.start(events.length, 0);
  let outcome: SendOutcome;
  try {
    outcome = await sendEvents(ctx, events, { ordered, onProgress: (settled) => bar?.increment(settled) });
  } finally {
    bar?.stop();
  }
  const withoutPosition = <T extends { position: number }>(items: readonly T[]): Omit<T, 'position'>[] =>
    items.map(({ position: _position, ...rest }) => rest);
  const sentEvents = withoutPosition(outcome.sent);
  const unsentEvents = withoutPosition(outcome.unsent);

  const human = [
    `sent ${sentEvents.length} of ${events.length} event${events.length === 1 ? '' : 's'} to ${ordered ? 'the ordered intake (in order per shipment)' : 'the delivery queue'}`,
    sentEvents.length > 0 && sentEvents.length <= LIST_UP_TO
      ? table(
          [{ header: 'event' }, { header: 'message' }],
          sentEvents.map((s) => [s.eventId, s.messageId]),
        )
      : undefined,
  ]
    .filter(Boolean)
    .join('\n');

  const first = unsentEvents[0];
  return {
    json: { sent: sentEvents, failed: unsentEvents },
    human,
    failure: first
      ? `${unsentEvents.length} of ${events.length} events not sent; first: ${first.eventId}: ${first.code} ${first.message}`.trim()
      : undefined,
  };
}

function invalidLabel(eventId: string | undefined): string {
  return eventId ? `invalid event ${eventId}` : 'invalid event';
}
