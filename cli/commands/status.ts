/**
 * `handoff status <eventId>`: an event's deliveries, one ledger row per endpoint it was routed to
 * (docs/contract.md §10–11), each with its attempt history and audit trail. `--endpoint NAME`:
 * that one delivery. `--body`: the stored event, the same in every delivery that keeps one.
 */
import { isEventId } from '../../lib/event';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { escapeUnsafeInJson } from '../../lib/terminal';
import type { CommandContext } from '../context';
import { CommandFailedError, UsageError } from '../errors';
import { table } from '../format';
import type { CommandResult } from './result';
import { describeState, recordDetails, recordJson } from './record-view';
import { describeOutcome } from '../../lib/outcome';

export interface StatusOptions {
  /** Only this endpoint's delivery. */
  readonly endpoint?: string;
  /** Print only the stored event body (for `| handoff send`), not the row. */
  readonly body?: boolean;
}

export async function statusCommand(ctx: CommandContext, eventId: string, options: StatusOptions): Promise<CommandResult> {
  if (!isEventId(eventId)) throw new UsageError(`"${eventId}" is not an event ID (1–128 characters of A-Z a-z 0-9 _ - . :)`);
  const deliveries = await deliveriesToShow(ctx, eventId, options.endpoint);
  if (options.body) {
    // The event's content, only on explicit request: the row view never shows it. It is the same in
    // every delivery that keeps it (whichever was asked for): one stores it when parked, waiting for
    // its turn or dead; one accepted or being retried (its message holds it), or an invalid
    // message's, does not.
    const all = options.endpoint === undefined ? deliveries : await ctx.ledger().deliveriesOf(eventId);
    const body = all.find((d) => d.body !== undefined)?.body;
    if (body === undefined) {
      if (all.every((d) => d.contentHash === undefined)) {
        throw new CommandFailedError(`event ${eventId} died as an invalid message: no event body was kept`, 'no-event');
      }
      throw new CommandFailedError(
        `event ${eventId} keeps no body: no delivery of it is parked, waiting or dead (a delivery accepted or being retried leaves the body on its message)`,
        'no-body',
      );
    }
    // Escaped, not replaced: the text stays the same event for `| handoff send`, and inert.
    return { json: JSON.parse(body) as unknown, human: escapeUnsafeInJson(body) };
  }
  const nowMs = ctx.now();
  const [only] = deliveries;
  if (options.endpoint !== undefined && only !== undefined) return { json: recordJson(only), human: recordDetails(only, nowMs) };
  return {
    json: { eventId, deliveries: deliveries.map(recordJson) },
    human: deliveries.length === 1 && only !== undefined ? recordDetails(only, nowMs) : overview(eventId, deliveries, nowMs),
  };
}

/** The event's deliveries, or the one asked for; refused with one line when there is none. */
async function deliveriesToShow(ctx: CommandContext, eventId: string, endpoint: string | undefined): Promise<DeliveryRecord[]> {
  const ledger = ctx.ledger();
  if (endpoint !== undefined) {
    const record = await ledger.get({ eventId, endpoint });
    if (record !== undefined) return [record];
  }
  const deliveries = await ledger.deliveriesOf(eventId);
  if (deliveries.length === 0) throw new CommandFailedError(`no delivery record for event ${eventId}`, 'not-found');
  if (endpoint !== undefined) {
    const names = deliveries.map((d) => d.endpoint).join(', ');
    throw new CommandFailedError(`event ${eventId} has no delivery to endpoint ${endpoint} (its deliveries: ${names})`, 'not-found');
  }
  return deliveries;
}

/** Several deliveries: one line each, then each one in full. */
function overview(eventId: string, deliveries: readonly DeliveryRecord[], nowMs: number): string {
  const summary = table(
    [{ header: 'endpoint' }, { header: 'state' }, { header: 'attempts', align: 'right' }, { header: 'replays', align: 'right' }, { header: 'last outcome' }],
    deliveries.map((d) => [
      d.endpoint,
      describeState(d),
      `${d.attempts} of ${d.maxAttempts}`,
      String(d.replays),
      d.lastOutcome ? describeOutcome(d.lastOutcome) : '',
    ]),
  );
  const details = deliveries.map((d) => `delivery to ${d.endpoint}\n${recordDetails(d, nowMs)}`);
  return [`event ${eventId}: ${deliveries.length} deliveries`, summary, ...details].join('\n\n');
}
