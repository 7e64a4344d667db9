/**
 * `handoff replay <eventId> --reason … --operator …`: a dead record back to pending and its
 * event back on the queue (SPEC §6). Anything not dead is refused by the ledger.
 */
import { isEventId } from '../../lib/event';
import { DEFAULT_ENDPOINT } from '../../lib/ledger/ledger';
import { replayDelivery } from '../../lib/replay';
import type { CommandContext } from '../context';
import { UsageError } from '../errors';
import { safe } from '../format';
import type { CommandResult } from './result';

export interface ReplayOptions {
  readonly reason: string;
  readonly operator: string;
  readonly endpoint?: string;
}

export async function replayCommand(ctx: CommandContext, eventId: string, options: ReplayOptions): Promise<CommandResult> {
  if (!isEventId(eventId)) throw new UsageError(`"${eventId}" is not an event ID (1–128 characters of A-Z a-z 0-9 _ - . :)`);
  const reason = options.reason.trim();
  const operator = options.operator.trim();
  // An audit entry that names nobody or gives no reason is no audit entry.
  if (!reason) throw new UsageError('replay needs a reason: --reason "why it is safe to deliver again"');
  if (!operator) throw new UsageError('replay needs an operator: --operator NAME');

  const queue = ctx.queue();
  const record = await replayDelivery(
    { eventId, endpoint: options.endpoint ?? DEFAULT_ENDPOINT, operator, reason, nowMs: ctx.now() },
    { ledger: ctx.ledger(), queue },
  );
  return {
    json: {
      eventId: record.eventId,
      endpoint: record.endpoint,
      state: record.state,
      attempts: record.attempts,
      replays: record.replays,
      operator,
      reason,
      enqueued: true,
    },
    human: `replayed ${record.eventId}: ${record.state} again (replay ${record.replays}, by ${safe(operator)}), event enqueued`,
  };
}
