/**
 * `handoff replay <eventId> --reason … --operator …`: a dead record back to pending and its
 * event back on the queue (docs/contract.md §6). Anything not dead is refused by the ledger.
 *
 * The audit entry keeps the name typed, the reason, and who the caller really is: in AWS the STS
 * identity of the credentials (the typed name is free text); against the sandbox there is none.
 */
import { isEventId } from '../../lib/event';
import { DEFAULT_ENDPOINT } from '../../lib/ledger/ledger';
import { auditTextProblem, replayDelivery } from '../../lib/replay';
import type { CommandContext } from '../context';
import { UsageError } from '../errors';
import { callerIdentity } from '../target';
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
  // Checked here, before any call, as well as in replayDelivery: a usage error, not a failure.
  for (const [flag, field, value] of [
    ['--operator', 'operator', operator],
    ['--reason', 'reason', reason],
  ] as const) {
    const problem = auditTextProblem(field, value);
    if (problem) throw new UsageError(`${flag} ${problem}`);
  }

  const caller = await callerIdentity(ctx.target);
  const queue = ctx.queue();
  const record = await replayDelivery(
    { eventId, endpoint: options.endpoint ?? DEFAULT_ENDPOINT, operator, reason, caller, nowMs: ctx.now() },
    { ledger: ctx.ledger(), queue },
  );
  const who = caller === undefined ? `by ${operator}; no caller identity against ${ctx.target.description}` : `by ${operator} as ${caller}`;
  return {
    json: {
      eventId: record.eventId,
      endpoint: record.endpoint,
      state: record.state,
      attempts: record.attempts,
      replays: record.replays,
      operator,
      caller: caller ?? null,
      reason,
      enqueued: true,
    },
    human: `replayed ${record.eventId}: ${record.state} again (replay ${record.replays}, ${who}), event enqueued`,
  };
}
