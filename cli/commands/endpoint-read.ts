/**
 * `handoff endpoint list` and `show`: the registry's endpoints, each with its parked deliveries
 * (the ledger's parked listing of that endpoint, docs/contract.md §12); `show` with the release in
 * progress and the settings in effect against the deployment's.
 */
import pLimit from 'p-limit';
import type { RegistryScan } from '../../lib/endpoints/dynamodb-registry';
import { MAX_PAGE_LIMIT } from '../../lib/endpoints/dynamodb-registry-listing';
import { resolveEndpoint, type Endpoint, type EndpointRecord } from '../../lib/endpoints/endpoint';
import { OWNER } from '../../lib/endpoints/field-schemas';
import { quoted } from '../../lib/terminal';

import { EndpointError } from '../../lib/errors';
import { redactUrl } from '../../lib/webhook/redact-url';
import type { CommandContext } from '../context';
import { table } from '../format';
import { checkName, deploymentFor, ListOptionError, parkedCount, registryCall, requireEndpoint } from './endpoint-common';
import { effectiveJson, endpointJson, matchText, overlapEnd, releaseJson, secretText, showText } from './endpoint-view';
import type { CommandResult } from './result';

/** Endpoints whose parked deliveries `list` counts at once (each count is one query per listing shard). */
export const PARKED_COUNT_CONCURRENCY = 4;

/** `endpoint list`'s paging: any of them given, the list is one page (`--json`: `{items, next}`). */
export interface ListOptions {
  readonly limit?: number;
  readonly cursor?: string;
  readonly owner?: string;
  readonly state?: EndpointRecord['state'];
}

export async function endpointListCommand(ctx: CommandContext, options: ListOptions = {}): Promise<CommandResult> {
  const paged = Object.values(options).some((value) => value !== undefined);
  // Unpaged: every item; those it cannot use are named after the list (exit 1), not allowed to hide
  // the others. Paged: one page of the usable ones (a page cannot say what it left out of a scan).
  const { records, unreadable, next } = paged ? await pageOf(ctx, options) : { ...(await registryCall(ctx, (registry) => registry.scan())), next: undefined };
  const nowMs = ctx.now();
  // Each count reads the endpoint's 16 listing shards: a few endpoints at a time.
  const limit = pLimit(PARKED_COUNT_CONCURRENCY);
  const parked = await Promise.all(records.map((r) => limit(() => parkedCount(ctx, r.fields.name))));
  const rows = records.map((r, i) => [
    r.fields.name,
    r.state,
    redactUrl(r.fields.url),
    r.fields.eventTypes.join(','),
    Object.keys(r.fields.match ?? {}).length === 0 ? '' : matchText(r.fields.match ?? {}),
    parked[i] === null ? 'n/a' : String(parked[i]),
  ]);
  // A rotation's overlap is worth a line of its own: until it ends the receiver may still use either secret.
  const overlaps = records
    .filter((r) => overlapEnd(r.fields, nowMs) !== undefined)
    .map((r) => `${r.fields.name}: secret ${secretText(r.fields, nowMs)}`);
  const human =
    rows.length === 0
      ? `no endpoints${paged ? ' on this page' : ''} in ${ctx.target.description}`
      : table(
          [{ header: 'name' }, { header: 'state' }, { header: 'url' }, { header: 'event types' }, { header: 'match' }, { header: 'parked', align: 'right' }],
          rows,
        ) + (overlaps.length > 0 ? `\n\n${overlaps.join('\n')}` : '');
  const failure =
    unreadable.length === 0
      ? undefined
      : `the registry holds ${unreadable.length} item(s) that cannot be used (endpoint remove NAME, then add it again): ${unreadable.map((e) => e.message).join('; ')}`;
  const noLedger = parked.some((count) => count === null) ? `\n\nparked: n/a, no ledger table in ${ctx.target.description} (--table NAME)` : '';
  const items = records.map((r, i) => endpointJson(r, nowMs, parked[i] ?? null));
  const more = next === undefined ? '' : `\n\nmore: ${listCommandText({ ...options, limit: options.limit ?? MAX_PAGE_LIMIT, cursor: next })}`;
  return {
    json: paged ? { items, next: next ?? null } : items,
    human: (rows.length === 0 ? human : human + noLedger) + more,
    ...(failure !== undefined ? { failure } : {}),
  };
}

async function pageOf(ctx: CommandContext, options: ListOptions): Promise<RegistryScan & { next: string | undefined }> {
  if (options.owner !== undefined && !OWNER.test(options.owner)) {
    throw new ListOptionError('owner', `--owner: ${quoted(options.owner)} is not an owner: 1–128 of A-Z a-z 0-9 . _ : @ + = -`);
  }
  let page;
  try {
    page = await registryCall(ctx, (registry) => registry.page(options));
  } catch (error) {
    // A cursor the listing did not issue (for these filters): as readPage (cli/errors.ts) says it, by its option.
    if (error instanceof RangeError && options.cursor !== undefined) throw new ListOptionError('cursor', `--cursor: ${error.message}; start again without --cursor`);
    throw error;
  }
  return { records: page.items, unreadable: [], next: page.next };
}

/** The command that reads the page after this one. */
function listCommandText(options: ListOptions): string {
  const parts = ['handoff endpoint list', `--limit ${options.limit}`, `--cursor ${options.cursor}`];
  if (options.owner !== undefined) parts.push(`--owner ${options.owner}`);
  if (options.state !== undefined) parts.push(`--state ${options.state}`);
  return parts.join(' ');
}

export async function endpointShowCommand(ctx: CommandContext, name: string): Promise<CommandResult> {
  const record = await requireEndpoint(ctx, checkName(name));
  const [parked, release] = await Promise.all([parkedCount(ctx, name), ctx.endpointRelease(name)]);
  const { settings, source } = deploymentFor(ctx.target);
  let effective: Endpoint | undefined;
  let problem: string | undefined;
  try {
    effective = resolveEndpoint(record, settings, undefined);
  } catch (error) {
    if (!(error instanceof EndpointError)) throw error;
    problem = error.message;
  }
  const nowMs = ctx.now();
  const json = {
    ...endpointJson(record, nowMs, parked),
    release: releaseJson(record.state === 'enabled' ? release : undefined, nowMs),
    effective: effective === undefined ? null : effectiveJson(effective),
    ...(problem !== undefined ? { problem } : {}),
    settingsFrom: source,
  };
  return { json, human: showText(record, { parked, release: record.state === 'enabled' ? release : undefined }, effective, problem, source, nowMs) };
}
