/**
 * `handoff replay`: dead deliveries back to pending and their event back on the queue, each as a
 * message for its own endpoint (docs/contract.md §6, §11). Anything not dead is refused by the ledger.
 *
 *   replay <eventId> --endpoint NAME   that one delivery
 *   replay <eventId>                   every dead delivery of the event
 *   replay --endpoint NAME --dead-since TIME [--until TIME] [--dead-reason exhausted|rejected]
 *                                      every dead delivery of the endpoint that died in the window,
 *                                      at a bounded rate (`--rate`, default 10 a second); `--dry-run`
 *                                      counts them only
 *
 * Every replay writes its own audit entry: the name typed, the reason, and who the caller really
 * is (in AWS the STS identity of the credentials; against the sandbox there is none).
 *
 * The filter on how a delivery died is `--dead-reason`, not `--reason` as the contract's first
 * sketch spelled it: `--reason` is the audit text every replay requires (§6), and one option
 * cannot be both; `deadReason` is also the field's name in `status --json` and `dead --json`.
 */
import { isEventId } from '../../lib/event';
import { ReplayRefusedError } from '../../lib/ledger/errors';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import {
  replayDeadDeliveries,
  replayDelivery,
  replayEvent,
  type BulkReplayTally,
  type DeadSelection,
  type ReplayActor,
} from '../../lib/replay';
import { NothingToReplayError } from '../../lib/errors';
import type { CommandContext } from '../context';
import { checkAuditText, CommandFailedError, UsageError } from '../errors';
import { formatDuration } from '../format';
import { callerIdentity } from '../target';
import type { CommandResult } from './result';

/** Replays started per second in a bulk replay, unless `--rate` says otherwise. */
export const DEFAULT_REPLAY_RATE = 10;
/** How often a bulk replay reports its progress on stderr; a shorter run says nothing until done. */
const PROGRESS_EVERY_MS = 5_000;

export interface ReplayOptions {
  readonly reason: string;
  readonly operator: string;
  readonly endpoint?: string;
  /** Epoch ms (parsed by `isoTime`). */
  readonly deadSince?: number;
  readonly until?: number;
  readonly deadReason?: 'exhausted' | 'rejected';
  readonly dryRun?: boolean;
  readonly rate?: number;
  /**
   * Who is calling, as something else already proved it (the management API's authenticated
   * caller). Absent, the target's own credentials are asked (STS), as the command asks them.
   */
  readonly caller?: string;
  /**
   * A bulk replay in bounded parts (the management API's, which must answer within a request): stop
   * at the end of a page of the listing once this many deliveries matched, and answer `next`, the
   * listing's cursor, to continue from. Unbounded (the command) when absent.
   */
  readonly maxReplays?: number;
  /** With `maxReplays`: stop likewise once this many dead rows were read. */
  readonly maxRead?: number;
  /** With `maxReplays`: a `next` answered before, to continue from. */
  readonly cursor?: string;
}

export async function replayCommand(ctx: CommandContext, eventId: string | undefined, options: ReplayOptions): Promise<CommandResult> {
  // The options only a bulk replay takes, by flag: given with an event ID, they are a usage error.
  const bulkFlags = (
    [
      ['--dead-since', options.deadSince],
      ['--until', options.until],
      ['--dead-reason', options.deadReason],
      ['--dry-run', options.dryRun || undefined],
      ['--rate', options.rate],
    ] as const
  ).filter(([, value]) => value !== undefined);
  const bulk = bulkFlags.length > 0;
  if (eventId !== undefined && bulk) {
    const [flag] = bulkFlags[0]!;
    throw new UsageError(`${flag} is for a bulk replay, which takes no event ID: handoff replay --endpoint NAME --dead-since TIME …`);
  }
  if (eventId === undefined && !bulk) {
    throw new UsageError('replay needs an event ID, or --endpoint NAME --dead-since TIME to replay one endpoint\'s dead deliveries');
  }
  if (eventId !== undefined && !isEventId(eventId)) {
    throw new UsageError(`"${eventId}" is not an event ID (1–128 characters of A-Z a-z 0-9 _ - . :)`);
  }
  const actor = checkedActor(options);

  if (eventId === undefined) return bulkReplay(ctx, actor, options);
  const caller = options.caller ?? (await callerIdentity(ctx.target));
  const who = describeWho(ctx, actor.operator, caller);
  return options.endpoint === undefined
    ? eventReplay(ctx, eventId, { ...actor, caller }, who)
    : oneReplay(ctx, { eventId, endpoint: options.endpoint }, { ...actor, caller }, who);
}

/** The operator and reason, trimmed; usage errors (exit 2) before any call. */
function checkedActor(options: ReplayOptions): { operator: string; reason: string } {
  const reason = options.reason.trim();
  const operator = options.operator.trim();
  // An audit entry that names nobody or gives no reason is no audit entry.
  if (!reason) throw new UsageError('replay needs a reason: --reason "why it is safe to deliver again"');
  if (!operator) throw new UsageError('replay needs an operator: --operator NAME');
  // Checked here, before any call, as well as in lib/replay.ts: a usage error, not a failure.
  checkAuditText(operator, reason);
  return { operator, reason };
}

async function oneReplay(
  ctx: CommandContext,
  key: { eventId: string; endpoint: string },
  actor: ReplayActor,
  who: string,
): Promise<CommandResult> {
  let record: DeliveryRecord;
  try {
    record = await replayDelivery({ ...key, ...actor, nowMs: ctx.now() }, { ledger: ctx.ledger(), queue: ctx.queue() });
  } catch (error) {
    if (error instanceof ReplayRefusedError && error.refusal === 'not-found') throw await noSuchDelivery(ctx, key);
    throw error;
  }
  return {
    json: {
      eventId: record.eventId,
      endpoint: record.endpoint,
      state: record.state,
      attempts: record.attempts,
      replays: record.replays,
      operator: actor.operator,
      caller: actor.caller ?? null,
      reason: actor.reason,
      enqueued: true,
    },
    human: `replayed ${describeDelivery(record)}: ${record.state} again (replay ${record.replays}, ${who}), event enqueued`,
  };
}

/** The event has no row at that endpoint: say which it has, if any. */
async function noSuchDelivery(ctx: CommandContext, key: { eventId: string; endpoint: string }): Promise<CommandFailedError> {
  const deliveries = await ctx.ledger().deliveriesOf(key.eventId);
  if (deliveries.length === 0) return new CommandFailedError(`no delivery record for event ${key.eventId}`, 'not-found');
  return new CommandFailedError(
    `event ${key.eventId} has no delivery to endpoint ${key.endpoint} (its deliveries: ${deliveries.map((d) => d.endpoint).join(', ')})`,
    'not-found',
  );
}

async function eventReplay(ctx: CommandContext, eventId: string, actor: ReplayActor, who: string): Promise<CommandResult> {
  let results;
  try {
    results = await replayEvent(eventId, actor, ctx.now(), { ledger: ctx.ledger(), queue: ctx.queue() });
  } catch (error) {
    if (error instanceof NothingToReplayError) {
      throw new CommandFailedError(error.message, error.deliveries.length === 0 ? 'not-found' : 'not-dead');
    }
    throw error;
  }
  const replayed = results.flatMap((r) => ('replayed' in r ? [r.replayed] : []));
  const unsent = results.flatMap((r) => ('enqueueFailed' in r ? [r.enqueueFailed] : []));
  const deliveries = [...replayed, ...unsent]
    .sort((a, b) => (a.endpoint < b.endpoint ? -1 : 1))
    .map((record) => ({
      endpoint: record.endpoint,
      state: record.state,
      attempts: record.attempts,
      replays: record.replays,
      enqueued: !unsent.includes(record),
    }));
  const endpoints = (records: readonly DeliveryRecord[]) => records.map((r) => r.endpoint).join(', ');
  const lines = [
    `replayed ${eventId} to ${plural(deliveries.length, 'endpoint')} (${endpoints([...replayed, ...unsent])}): pending again (${who})` +
      (unsent.length === 0 ? ', event enqueued for each' : ''),
  ];
  if (unsent.length > 0) lines.push(`not enqueued: ${endpoints(unsent)}`);
  return {
    json: { eventId, operator: actor.operator, caller: actor.caller ?? null, reason: actor.reason, deliveries },
    human: lines.join('\n'),
    ...(unsent.length === 0
      ? {}
      : {
          failure:
            `event ${eventId} is pending again at ${endpoints(unsent)} but could not be enqueued there; ` +
            `put it on the queue with: handoff status ${eventId} --body | handoff send`,
        }),
  };
}

async function bulkReplay(ctx: CommandContext, actor: { operator: string; reason: string }, options: ReplayOptions): Promise<CommandResult> {
  if (options.endpoint === undefined) throw new UsageError('a bulk replay needs --endpoint NAME: the endpoint whose dead deliveries to replay');
  if (options.deadSince === undefined) throw new UsageError('a bulk replay needs --dead-since TIME: the earliest death to replay');
  const startMs = ctx.now();
  const untilMs = options.until ?? startMs;
  if (untilMs <= options.deadSince) {
    throw new UsageError(
      options.until === undefined ? '--dead-since must be in the past' : '--until must come after --dead-since',
    );
  }
  const ratePerSecond = options.rate ?? DEFAULT_REPLAY_RATE;
  const selection: DeadSelection = {
    endpoint: options.endpoint,
    sinceMs: options.deadSince,
    untilMs,
    ...(options.deadReason === undefined ? {} : { deadReason: options.deadReason }),
  };
  const what = `dead deliveries of endpoint ${selection.endpoint} that died from ${iso(selection.sinceMs)} to ${iso(untilMs)}${
    selection.deadReason === undefined ? '' : ` (${selection.deadReason})`
  }`;
  const summary = (tally: BulkReplayTally) => ({
    endpoint: selection.endpoint,
    deadSince: iso(selection.sinceMs),
    until: iso(untilMs),
    deadReason: selection.deadReason ?? null,
    dryRun: options.dryRun === true,
    matched: tally.matched,
    replayed: tally.replayed,
    noLongerDead: tally.noLongerDead,
    withoutEvent: tally.withoutEvent,
    enqueueFailed: tally.enqueueFailed,
  });
  const ledger = ctx.ledger();
  if (options.maxReplays !== undefined) return boundedBulkReplay(ctx, actor, options, selection, { ratePerSecond, what, summary });
  const count = await replayDeadDeliveries(selection, actor, { ledger, queue: { enqueue: unused } }, { ratePerSecond, dryRun: true });
  const skippedNote = withoutEventNote(count);
  if (options.dryRun) {
    return {
      json: { ...summary(count), ratePerSecond },
      human:
        `would replay ${plural(count.matched, 'delivery', 'deliveries')}: ${what}${skippedNote}; nothing written` +
        (count.matched === 0 ? '' : `\nat ${ratePerSecond} a second that takes about ${formatDuration((count.matched / ratePerSecond) * 1000)}`),
    };
  }

  const caller = options.caller ?? (await callerIdentity(ctx.target));
  const stderr = ctx.output.stderr;
  let lastReportMs = startMs;
  let latest: BulkReplayTally = { matched: 0, replayed: 0, enqueueFailed: [], noLongerDead: 0, withoutEvent: 0 };
  const onProgress = (tally: BulkReplayTally) => {
    latest = tally;
    const nowMs = ctx.now();
    if (nowMs - lastReportMs < PROGRESS_EVERY_MS) return;
    lastReportMs = nowMs;
    const done = `${tally.matched} of about ${count.matched} done (${describeTally(tally)})`;
    stderr.write(`handoff: replaying: ${done}, ${formatDuration(nowMs - startMs)} so far\n`);
  };
  let tally: BulkReplayTally;
  try {
    tally = await replayDeadDeliveries(
      selection,
      { ...actor, caller },
      { ledger, queue: ctx.queue() },
      { ratePerSecond, onProgress, now: ctx.now },
    );
  } catch (error) {
    // What was done stays done: a replayed delivery is pending, no longer dead, so the same
    // command run again continues with the rest.
    stderr.write(`handoff: stopped after ${describeTally(latest)}; the same command run again replays only what is still dead\n`);
    throw error;
  }
  const who = describeWho(ctx, actor.operator, caller);
  const lines = [`replayed ${plural(tally.replayed, 'delivery', 'deliveries')} (${who}): ${what}${skippedNote}`];
  if (tally.noLongerDead > 0) {
    const n = plural(tally.noLongerDead, 'delivery', 'deliveries');
    lines.push(`${n} no longer dead when reached (replayed or delivered meanwhile): left as they were`);
  }
  if (tally.enqueueFailed.length > 0) lines.push(`pending again but not enqueued: ${tally.enqueueFailed.join(', ')}`);
  return {
    json: { ...summary(tally), ratePerSecond, operator: actor.operator, caller: caller ?? null, reason: actor.reason },
    human: lines.join('\n'),
    ...(tally.enqueueFailed.length === 0
      ? {}
      : {
          failure:
            `${plural(tally.enqueueFailed.length, 'replayed delivery', 'replayed deliveries')} could not be enqueued; ` +
            `put each on the queue with: handoff status EVENT_ID --body | handoff send`,
        }),
  };
}

/**
 * One bounded part of a bulk replay (`maxReplays`): no count of the whole window first and no
 * progress lines, which a part too short to report on does not need; `next` says where the rest
 * begins (null: nothing follows). A dry run counts a part likewise.
 */
async function boundedBulkReplay(
  ctx: CommandContext,
  actor: { operator: string; reason: string },
  options: ReplayOptions,
  selection: DeadSelection,
  shared: { ratePerSecond: number; what: string; summary: (tally: BulkReplayTally) => Record<string, unknown> },
): Promise<CommandResult> {
  const { ratePerSecond, what, summary } = shared;
  const bounds = {
    ...(options.maxReplays === undefined ? {} : { maxMatched: options.maxReplays }),
    ...(options.maxRead === undefined ? {} : { maxRead: options.maxRead }),
    ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
  };
  const ledger = ctx.ledger();
  const next = (cursor: string | undefined) => ({ next: cursor ?? null });
  const more = (cursor: string | undefined) => (cursor === undefined ? '' : '; more follow: continue from next');
  if (options.dryRun) {
    const count = await replayDeadDeliveries(selection, actor, { ledger, queue: { enqueue: unused } }, { ratePerSecond, dryRun: true, ...bounds });
    return {
      json: { ...summary(count), ratePerSecond, ...next(count.cursor) },
      human: `would replay ${plural(count.matched, 'delivery', 'deliveries')}: ${what}${withoutEventNote(count)}; nothing written${more(count.cursor)}`,
    };
  }
  const caller = options.caller ?? (await callerIdentity(ctx.target));
  const run = await replayDeadDeliveries(selection, { ...actor, caller }, { ledger, queue: ctx.queue() }, { ratePerSecond, now: ctx.now, ...bounds });
  return {
    json: { ...summary(run), ratePerSecond, operator: actor.operator, caller: caller ?? null, reason: actor.reason, ...next(run.cursor) },
    human: `replayed ${plural(run.replayed, 'delivery', 'deliveries')} (${describeWho(ctx, actor.operator, caller)}): ${what}${withoutEventNote(run)}${more(run.cursor)}`,
    ...(run.enqueueFailed.length === 0
      ? {}
      : { failure: `${plural(run.enqueueFailed.length, 'replayed delivery', 'replayed deliveries')} could not be enqueued: ${run.enqueueFailed.join(', ')}` }),
  };
}

function withoutEventNote(tally: BulkReplayTally): string {
  return tally.withoutEvent === 0 ? '' : `; ${plural(tally.withoutEvent, 'invalid message')} left out (no event to send)`;
}

function describeWho(ctx: CommandContext, operator: string, caller: string | undefined): string {
  return caller === undefined ? `by ${operator}; no caller identity against ${ctx.target.description}` : `by ${operator} as ${caller}`;
}

function describeTally(tally: BulkReplayTally): string {
  const parts = [`${tally.replayed} replayed`];
  if (tally.noLongerDead > 0) parts.push(`${tally.noLongerDead} no longer dead`);
  if (tally.enqueueFailed.length > 0) parts.push(`${tally.enqueueFailed.length} not enqueued`);
  return parts.join(', ');
}

function describeDelivery(record: DeliveryRecord): string {
  return `${record.eventId} (endpoint ${record.endpoint})`;
}

/** A dry run enqueues nothing. */
async function unused(): Promise<void> {
  throw new Error('a dry run enqueues nothing');
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * An ISO 8601 time as epoch ms, for commander: a date (`2026-12-01`, UTC midnight) or a date and
 * time with its zone (`2026-12-01T10:00:00Z`, `…+01:00`): never local time, which would mean
 * different deliveries on different machines.
 */
export function isoTime(raw: string): number {
  const text = raw.trim();
  const form = /^(\d{4})-(\d\d)-(\d\d)(?:T([01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,3})?)?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d))?$/;
  const match = form.exec(text);
  const ms = match ? Date.parse(text) : NaN;
  // Date.parse rolls 2026-02-30 over into March: a day the month does not have is refused.
  const [year, month, day] = match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0];
  const realDay = new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day && month >= 1 && month <= 12;
  if (!Number.isFinite(ms) || ms < 0 || !realDay) {
    throw new RangeError('must be an ISO 8601 time with its zone, like 2026-12-01T10:00:00Z, or a date like 2026-12-01 (UTC).');
  }
  return ms;
}
