/**
 * `handoff dead`: dead deliveries, one page at a time, oldest death first, read from the ledger's
 * sparse listing index, which holds only rows that need listing (queries, never a table scan).
 * `--cursor` continues where the last page ended. `--endpoint NAME`: that endpoint's only, chosen
 * by the ledger from the index entries, so pages and cursors work the same.
 *
 * The management API's `GET /v1/dead` reads the same pages (`deadPage`), with more filters: a window
 * of death times (the ledger's own, as a bulk replay selects), how it died, and an owner's endpoints.
 */
import type { DeadReason, DeliveryRecord, Ledger, Page } from '../../lib/ledger/ledger';
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
    deadPage(ctx.ledger(), { ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }) }, { limit: options.limit, cursor: options.cursor }),
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

/** Which dead deliveries a listing takes: every filter given must hold. */
export interface DeadFilter {
  readonly endpoint?: string;
  /** Only these endpoints' (an owner's, `ownerEndpoints`); empty: none at all. */
  readonly endpoints?: ReadonlySet<string>;
  /** Died at or after this epoch ms. */
  readonly sinceMs?: number;
  /** Died before this epoch ms. */
  readonly untilMs?: number;
  readonly deadReason?: DeadReason;
}

/**
 * Ledger pages read for one page of a listing that filters rows itself (by how they died, or by a
 * set of endpoints): enough to fill most pages, few enough that a page is answered promptly. A page
 * may then hold fewer than `limit`, even none, and still have a cursor.
 */
export const MAX_READS_PER_PAGE = 8;

/**
 * A page of dead deliveries, oldest death first. An endpoint and a window of death times are the
 * ledger listing's own (read from its index, rows of other endpoints never read), so a page is full
 * while more follow. How a row died, and an owner's endpoints, are known from the row only: those
 * rows are read and checked here, page after page of the same listing, each read asking only for
 * the room left, so the cursor given back is exactly where reading stopped and following it to the
 * end yields every match once, with no repeat and no gap.
 * @throws RangeError for a cursor the ledger did not issue for the dead listing, or an empty window
 */
export async function deadPage(ledger: Pick<Ledger, 'listByState'>, filter: DeadFilter, options: { readonly limit: number; readonly cursor?: string | undefined }): Promise<Page> {
  const { endpoints } = filter;
  const only = endpoints === undefined ? filter.endpoint : [...endpoints].filter((name) => filter.endpoint === undefined || name === filter.endpoint);
  // No endpoint can match (an owner without any, or the endpoint asked for is not the owner's).
  if (Array.isArray(only) && only.length === 0) return { records: [] };
  const endpoint = Array.isArray(only) ? (only.length === 1 ? only[0] : undefined) : only;
  const inRows = filter.deadReason !== undefined || (Array.isArray(only) && only.length > 1);
  const listing = {
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(filter.sinceMs === undefined ? {} : { sinceMs: filter.sinceMs }),
    ...(filter.untilMs === undefined ? {} : { untilMs: filter.untilMs }),
  };
  if (!inRows) return ledger.listByState('dead', { ...listing, limit: options.limit, ...(options.cursor === undefined ? {} : { cursor: options.cursor }) });
  const wanted = Array.isArray(only) ? new Set(only) : undefined;
  const records: DeliveryRecord[] = [];
  let cursor = options.cursor;
  for (let reads = 0; reads < MAX_READS_PER_PAGE && records.length < options.limit; reads += 1) {
    const page = await ledger.listByState('dead', { ...listing, limit: options.limit - records.length, ...(cursor === undefined ? {} : { cursor }) });
    records.push(...page.records.filter((r) => (wanted === undefined || wanted.has(r.endpoint)) && (filter.deadReason === undefined || r.deadReason === filter.deadReason)));
    cursor = page.cursor;
    if (cursor === undefined) break;
  }
  return { records, ...(cursor === undefined ? {} : { cursor }) };
}

/** The names of an owner's endpoints, from the registry's owner index, every page. */
export async function ownerEndpoints(ctx: CommandContext, owner: string): Promise<Set<string>> {
  const registry = ctx.registry();
  const names = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await registry.page({ owner, limit: 100, ...(cursor === undefined ? {} : { cursor }) });
    for (const record of page.items) names.add(record.fields.name);
    cursor = page.next;
  } while (cursor !== undefined);
  return names;
}
