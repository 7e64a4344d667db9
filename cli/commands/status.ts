/** `handoff status <eventId>`: one ledger row with its attempt history and audit trail. */
import { isEventId } from '../../lib/event';
import { DEFAULT_ENDPOINT } from '../../lib/ledger/ledger';
import type { CommandContext } from '../context';
import { CommandFailedError, UsageError } from '../errors';
import { escapeUnsafeInJson } from '../format';
import type { CommandResult } from './result';
import { recordDetails, recordJson } from './record-view';

export interface StatusOptions {
  readonly endpoint?: string;
  /** Print only the stored event body (for `| handoff send`), not the row. */
  readonly body?: boolean;
}

export async function statusCommand(ctx: CommandContext, eventId: string, options: StatusOptions): Promise<CommandResult> {
  if (!isEventId(eventId)) throw new UsageError(`"${eventId}" is not an event ID (1–128 characters of A-Z a-z 0-9 _ - . :)`);
  const record = await ctx.ledger().get({ eventId, endpoint: options.endpoint ?? DEFAULT_ENDPOINT });
  if (!record) throw new CommandFailedError(`no delivery record for event ${eventId}`, 'not-found');
  if (options.body) {
    // The event's content, only on explicit request: the row view never shows it.
    if (record.body === undefined) {
      throw new CommandFailedError(`event ${eventId} died as an invalid message: no event body was kept`, 'no-event');
    }
    // Escaped, not replaced: the text stays the same event for `| handoff send`, and inert.
    return { json: JSON.parse(record.body) as unknown, human: escapeUnsafeInJson(record.body) };
  }
  return { json: recordJson(record), human: recordDetails(record, ctx.now()) };
}
