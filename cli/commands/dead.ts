/**
 * `handoff dead`: dead deliveries, one page at a time, oldest death first, read from the ledger's
 * sparse listing index, which holds only rows that need listing (queries, never a table scan).
 * `--cursor` continues where the last page ended. `--endpoint NAME`: that endpoint's only, chosen
 * by the ledger from the index entries, so pages and cursors work the same.
 */
import type { Page } from '../../lib/ledger/ledger';
import type { CommandContext } from '../context';
import { readPage } from '../errors';
import { formatInstant, table, truncate } from '../format';
import type { CommandResult } from './result';
import { recordJson } from './record-view';

export interface DeadOptions {
  readonly limit: number;
  readonly cursor?: string;
  readonly endpoint?: string;
}

export async function deadCommand(ctx: CommandContext, options: DeadOptions): Promise<CommandResult> {
  const page: Page = await readPage(options.cursor, () =>
    ctx.ledger().listByState('dead', { limit: options.limit, cursor: options.cursor, endpoint: options.endpoint }),
  );
  const nowMs = ctx.now();
  const rows = page.records.map((r) => [
    r.eventId,
    r.endpoint,
    r.deadReason ?? '',
    r.deadAt === undefined ? '' : formatInstant(r.deadAt, nowMs),
    String(r.attempts),
    String(r.replays),
    truncate(r.deadDetail ?? '', 60),
  ]);
  const of = options.endpoint === undefined ? '' : ` of endpoint ${options.endpoint}`;
  const listing =
    rows.length === 0
      ? page.cursor
        ? `no dead records${of} on this page`
        : `no dead records${of}`
      : table(
          [
            { header: 'event' },
            { header: 'endpoint' },
            { header: 'reason' },
            { header: 'died' },
            { header: 'attempts', align: 'right' },
            { header: 'replays', align: 'right' },
            { header: 'why' },
          ],
          rows,
        );
  const next = page.cursor
    ? `\n\nmore: handoff dead${options.endpoint === undefined ? '' : ` --endpoint ${options.endpoint}`} --limit ${options.limit} --cursor ${page.cursor}`
    : '';
  return {
    json: { records: page.records.map(recordJson), cursor: page.cursor ?? null },
    human: listing + next,
  };
}
