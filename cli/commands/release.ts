/**
 * `handoff release <eventId> --endpoint NAME --operator … --reason …` (docs/contract.md §13): at an
 * endpoint ordered per shipment with `onDead: hold`, a dead event keeps its shipment's later events
 * waiting; the release lets the shipment go on without it. The delivery stays dead (and replayable);
 * its row gets an audit entry (`release`: the name typed, the reason, and in AWS the STS caller), and
 * the event waiting next, if any, is sent.
 *
 * Refused, writing nothing, when the endpoint is not ordered per shipment, the delivery is not dead,
 * or its shipment is not waiting on it (the refusal says where the turn is). Run again after it
 * succeeded: refused, the shipment having moved on; after an interruption: it finishes the release.
 */
import { isEventId } from '../../lib/event';
import { ReleaseRefusedError } from '../../lib/ledger/errors';
import { DynamoDbShipmentHeads } from '../../lib/ledger/dynamodb-shipment-heads';
import { releaseDelivery, type Released } from '../../lib/release';
import { NothingToReleaseError } from '../../lib/errors';
import { quoted } from '../../lib/terminal';
import type { CommandContext } from '../context';
import { checkAuditText, CommandFailedError, UsageError } from '../errors';
import { callerIdentity, dynamoDbClient, requireName } from '../target';
import type { CommandResult } from './result';

export interface ReleaseOptions {
  readonly endpoint: string;
  readonly operator: string;
  readonly reason: string;
}

export async function releaseCommand(ctx: CommandContext, eventId: string, options: ReleaseOptions): Promise<CommandResult> {
  if (!isEventId(eventId)) throw new UsageError(`"${eventId}" is not an event ID (1–128 characters of A-Z a-z 0-9 _ - . :)`);
  const operator = options.operator.trim();
  const reason = options.reason.trim();
  if (!reason) throw new UsageError('release needs a reason: --reason "why the shipment may go on without this event"');
  if (!operator) throw new UsageError('release needs an operator: --operator NAME');
  checkAuditText(operator, reason);
  const { endpoint } = options;

  const record = await ctx.registry().get(endpoint);
  if (record === undefined) {
    throw new CommandFailedError(`no endpoint named ${quoted(endpoint)} in ${ctx.target.description}`, 'endpoint-not-found');
  }
  const ordering = record.fields.ordering ?? 'none';
  const caller = await callerIdentity(ctx.target);
  // Shipment heads live in the ledger's table (lib/ledger/shipment-heads.ts).
  const client = dynamoDbClient(ctx.target);
  let released: Released;
  try {
    const heads = new DynamoDbShipmentHeads({ client, tableName: requireName(ctx.target, 'ledgerTable') });
    released = await releaseDelivery(
      { eventId, endpoint, operator, reason, ...(caller === undefined ? {} : { caller }), nowMs: ctx.now(), ordering },
      { ledger: ctx.ledger(), heads, queue: ctx.queue() },
    );
  } catch (error) {
    if (error instanceof NothingToReleaseError) throw new CommandFailedError(error.message, error.reason, { cause: error });
    if (error instanceof ReleaseRefusedError) throw new CommandFailedError(error.message, error.refusal, { cause: error });
    throw error;
  } finally {
    client.destroy();
  }

  const who = caller === undefined ? `by ${operator}; no caller identity against ${ctx.target.description}` : `by ${operator} as ${caller}`;
  const { record: row, sequence, next, woken } = released;
  const releasedAt = row.releasedAt ?? ctx.now();
  const goesOn =
    woken === undefined
      ? `its shipment goes on at sequence ${next} (no event waits for it yet: the next one is sent when it comes)`
      : `its shipment goes on at sequence ${next}: event ${woken} sent`;
  const before = released.recordedBefore ? ' (its row said so already; the shipment still waited on it)' : '';
  return {
    json: {
      eventId,
      endpoint,
      state: row.state,
      deadReason: row.deadReason ?? null,
      sequence,
      next,
      woken: woken ?? null,
      releasedAt: new Date(releasedAt).toISOString(),
      recordedBefore: released.recordedBefore,
      operator,
      caller: caller ?? null,
      reason,
    },
    human:
      `released ${eventId} (endpoint ${endpoint}, sequence ${sequence}): still dead${row.deadReason ? ` (${row.deadReason})` : ''}, ` +
      `released ${who}${before}\n${goesOn}`,
  };
}
