/**
 * `handoff status --shipment ID`: every delivery of a shipment's events, newest admission first, a
 * page at a time, from the ledger's shipment index (docs/contract.md §5, §10): what support staff
 * who know the shipment, not the event ID, ask about. `--cursor` continues where a page ended.
 */
import { isShipmentId } from '../../lib/event';
import type { ShipmentPage } from '../../lib/ledger/ledger';
import { describeOutcome } from '../../lib/outcome';
import type { CommandContext } from '../context';
import { readPage, UsageError } from '../errors';
import { formatInstant, table } from '../format';
import type { CommandResult } from './result';
import { describeState, recordJson } from './record-view';
import { statusCommand } from './status';

/** `status`'s options: an event's deliveries, or with `--shipment` a shipment's, a page at a time. */
export interface StatusCommandOptions {
  readonly endpoint?: string;
  readonly body?: boolean;
  readonly shipment?: string;
  readonly limit: number;
  readonly cursor?: string;
}

/** `status <eventId>` or `status --shipment ID`: one of the two. */
export function statusOf(ctx: CommandContext, eventId: string | undefined, options: StatusCommandOptions): Promise<CommandResult> {
  const { shipment } = options;
  if (shipment === undefined) {
    if (eventId === undefined) throw new UsageError('status needs an event ID, or --shipment ID');
    if (options.cursor !== undefined) throw new UsageError("--cursor pages a shipment's deliveries: give it with --shipment");
    return statusCommand(ctx, eventId, options);
  }
  if (eventId !== undefined) throw new UsageError('status takes an event ID or --shipment, not both');
  if (options.endpoint !== undefined || options.body === true) throw new UsageError('--endpoint and --body are for one event: not with --shipment');
  return shipmentStatusCommand(ctx, shipment, { limit: options.limit, ...(options.cursor === undefined ? {} : { cursor: options.cursor }) });
}

export interface ShipmentStatusOptions {
  readonly limit: number;
  readonly cursor?: string;
}

export async function shipmentStatusCommand(ctx: CommandContext, shipmentId: string, options: ShipmentStatusOptions): Promise<CommandResult> {
  if (!isShipmentId(shipmentId)) throw new UsageError('--shipment: not a shipment ID (1–128 printable characters)');
  const { limit, cursor } = options;
  const page: ShipmentPage = await readPage(cursor, () => ctx.ledger().deliveriesOfShipment(shipmentId, { limit, ...(cursor === undefined ? {} : { cursor }) }));
  const nowMs = ctx.now();
  const rows = page.items.map((d) => [
    d.eventId,
    d.endpoint,
    describeState(d),
    `${d.attempts} of ${d.maxAttempts}`,
    formatInstant(d.createdAt, nowMs),
    d.lastOutcome ? describeOutcome(d.lastOutcome) : '',
  ]);
  const heading = `shipment ${shipmentId}: ${page.items.length} ${page.items.length === 1 ? 'delivery' : 'deliveries'}${page.next ? ' on this page' : ''}, newest first`;
  const listing =
    rows.length === 0
      ? `no deliveries of shipment ${shipmentId}${page.next ? ' on this page' : ''}`
      : `${heading}\n\n${table(
          [
            { header: 'event' },
            { header: 'endpoint' },
            { header: 'state' },
            { header: 'attempts', align: 'right' },
            { header: 'admitted' },
            { header: 'last outcome' },
          ],
          rows,
        )}`;
  const more = page.next ? `\n\nmore: handoff status --shipment ${shellWord(shipmentId)} --limit ${options.limit} --cursor ${page.next}` : '';
  return {
    json: { shipmentId, deliveries: page.items.map(recordJson), next: page.next ?? null },
    human: `${listing}${more}\n\none delivery in full: handoff status <event> --endpoint <endpoint>`,
  };
}

/** A shipment ID as a shell word: as it is when plain, else single-quoted. */
function shellWord(text: string): string {
  return /^[\w.:-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}
