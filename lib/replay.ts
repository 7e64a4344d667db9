/**
 * The replay use case (docs/contract.md §6, §11): an operator returns a dead delivery to `pending`
 * and the event goes on the queue again, with its original ID and body, as a message for that
 * delivery's endpoint alone (message attribute `endpoint`): the other endpoints of the event are
 * not sent it again. Three forms: one delivery (`replayDelivery`), every dead delivery of one event
 * (`replayEvent`), and every dead delivery of one endpoint in a window of death times, at a bounded
 * rate (`replayDeadDeliveries`).
 *
 * Order matters: the ledger first, then the queue. A message enqueued before the row is pending
 * could be received while the row is still dead, be treated as settled work and acknowledged:
 * the replay would be lost. Done this way round, a failed enqueue leaves a pending row and no
 * message, which `ReplayEnqueueError` reports so the operator can send the event again (its body is
 * on the row: the consumer treats it as the same event, since the content is the same).
 */
import { ReplayRefusedError } from './ledger/errors';
import type { DeadReason, DeliveryRecord, Ledger, ReplayInput } from './ledger/ledger';
import type { DeliveryQueue } from './queue/queue';
import { NothingToReplayError, ReplayEnqueueError, ReplayInputError } from './errors';
import { linkOf } from './tracing/carrier';

/**
 * The audit entry's texts are bounded, so a row stays small and an entry stays readable: the
 * name the operator typed, why, and the caller identity (an STS ARN is at most 2048 characters).
 * Lengths count characters (code points), not bytes.
 */
export const OPERATOR_MAX_CHARS = 128;
export const REASON_MAX_CHARS = 512;
export const CALLER_MAX_CHARS = 2048;

const AUDIT_TEXT_LIMITS = { operator: OPERATOR_MAX_CHARS, reason: REASON_MAX_CHARS, caller: CALLER_MAX_CHARS } as const;
export type AuditTextField = keyof typeof AUDIT_TEXT_LIMITS;

/**
 * Control characters, format characters (bidi overrides, zero-width) and line separators: an audit
 * entry is shown to the next operator, and must read as what it says.
 */
const HIDDEN_OR_CONTROL = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

/** Why an audit text is refused (`"is empty"`, `"is 600 characters, …"`), or undefined if it may be kept. */
export function auditTextProblem(field: AuditTextField, value: string): string | undefined {
  if (value.trim() === '') return 'is empty';
  const length = [...value].length;
  const max = AUDIT_TEXT_LIMITS[field];
  if (length > max) return `is ${length} characters, over the ${max}-character limit`;
  if (HIDDEN_OR_CONTROL.test(value)) return 'contains a control or invisible formatting character';
  return undefined;
}

/** @throws ReplayInputError naming the first field that cannot be kept */
export function checkReplayInput(input: Pick<ReplayInput, 'operator' | 'reason' | 'caller'>): void {
  const fields: [AuditTextField, string | undefined][] = [
    ['operator', input.operator],
    ['reason', input.reason],
    ['caller', input.caller],
  ];
  for (const [field, value] of fields) {
    if (value === undefined && field === 'caller') continue;
    const problem = auditTextProblem(field, value ?? '');
    if (problem) throw new ReplayInputError(field, problem);
  }
}

export interface ReplayDeps {
  readonly ledger: Pick<Ledger, 'replay'>;
  readonly queue: Pick<DeliveryQueue, 'enqueue'>;
}

/**
 * Replays a dead record and enqueues its event. Returns the row as the ledger left it (pending).
 * @throws ReplayInputError before anything is written, when the operator, reason or caller cannot be kept.
 * @throws ReplayRefusedError from the ledger when the record is missing, not dead, or has no event.
 * @throws ReplayEnqueueError when the row was replayed but the enqueue failed.
 */
export async function replayDelivery(input: ReplayInput, deps: ReplayDeps): Promise<DeliveryRecord> {
  checkReplayInput(input);
  const record = await deps.ledger.replay(input);
  // The ledger refuses rows without a body (`no-event`), so a replayed row always has one.
  const body = record.body;
  if (body === undefined) throw new ReplayEnqueueError(record);
  try {
    // Linked to the delivery's original trace, where the row keeps one (docs/contract.md §19).
    await deps.queue.enqueue(body, { endpoint: record.endpoint, ...linkOf(record) });
  } catch (error) {
    throw new ReplayEnqueueError(record, { cause: error });
  }
  return record;
}

/** Who replays and why: one audit entry per delivery replayed. */
export type ReplayActor = Pick<ReplayInput, 'operator' | 'reason' | 'caller'>;

/** What became of one delivery a per-event or bulk replay tried. */
export type ReplayResult =
  | { readonly endpoint: string; readonly eventId: string; readonly replayed: DeliveryRecord }
  | { readonly endpoint: string; readonly eventId: string; readonly enqueueFailed: DeliveryRecord; readonly error: ReplayEnqueueError };

/**
 * Replays every dead delivery of one event that holds the event (an invalid message's row does
 * not), each with its own audit entry and its own per-endpoint message; the rest are left alone.
 * A failed enqueue does not stop the others: it is in the results.
 * @throws NothingToReplayError when the event has no such delivery (or no row at all).
 * @throws ReplayRefusedError when the event has one delivery only, and the ledger refuses it.
 * @throws ReplayInputError before anything is written.
 */
export async function replayEvent(
  eventId: string,
  actor: ReplayActor,
  nowMs: number,
  deps: { readonly ledger: Pick<Ledger, 'replay' | 'deliveriesOf'>; readonly queue: Pick<DeliveryQueue, 'enqueue'> },
): Promise<ReplayResult[]> {
  checkReplayInput(actor);
  const deliveries = await deps.ledger.deliveriesOf(eventId);
  const [only] = deliveries;
  // One delivery: the ledger's own refusal says why it cannot be replayed.
  if (deliveries.length === 1 && only !== undefined) return [await replayOne({ eventId, endpoint: only.endpoint, ...actor, nowMs }, deps)];
  const dead = deliveries.filter((d) => d.state === 'dead' && d.body !== undefined);
  if (dead.length === 0) throw new NothingToReplayError(eventId, deliveries);
  const results: ReplayResult[] = [];
  for (const delivery of dead) {
    results.push(await replayOne({ eventId, endpoint: delivery.endpoint, ...actor, nowMs }, deps));
  }
  return results;
}

async function replayOne(input: ReplayInput, deps: ReplayDeps): Promise<ReplayResult> {
  try {
    return { eventId: input.eventId, endpoint: input.endpoint, replayed: await replayDelivery(input, deps) };
  } catch (error) {
    if (error instanceof ReplayEnqueueError) return { eventId: input.eventId, endpoint: input.endpoint, enqueueFailed: error.record, error };
    throw error;
  }
}

/** Which dead deliveries a bulk replay takes: one endpoint's, died in [sinceMs, untilMs). */
export interface DeadSelection {
  readonly endpoint: string;
  readonly sinceMs: number;
  readonly untilMs: number;
  /** Only those that died for this reason. */
  readonly deadReason?: Extract<DeadReason, 'exhausted' | 'rejected'>;
}

export interface BulkReplayOptions {
  /** Replays started per second at most. */
  readonly ratePerSecond: number;
  /** Count only: nothing written, nothing enqueued. */
  readonly dryRun?: boolean;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  /** Called after each delivery is settled (replayed, skipped or failed), with the tally so far. */
  readonly onProgress?: (tally: BulkReplayTally) => void;
  /**
   * Stop, at the end of a page of the listing, once this many deliveries matched: one bounded part of
   * a long run (the management API's, which must answer within a request). The answer's `cursor`
   * continues it. Unbounded when absent.
   */
  readonly maxMatched?: number;
  /** Stop likewise, at the end of a page, once this many dead rows were read (matching or not). */
  readonly maxRead?: number;
  /** Where a bounded run stopped (its answer's `cursor`): continue from there. */
  readonly cursor?: string;
}

/** What a bulk replay did, and where it stopped when bounded (`cursor`: more may follow). */
export interface BulkReplayRun extends BulkReplayTally {
  readonly cursor?: string;
}

export interface BulkReplayTally {
  /** Dead deliveries matching the selection, seen so far (with --dry-run: the count it would replay). */
  readonly matched: number;
  readonly replayed: number;
  /** Replayed, but the event could not be enqueued: pending with no message. */
  readonly enqueueFailed: readonly string[];
  /** No longer dead when its turn came (replayed by another run meanwhile, or delivered late). */
  readonly noLongerDead: number;
  /** Invalid messages' rows: dead, but holding no event to send. */
  readonly withoutEvent: number;
}

/** The page size a bulk replay reads the dead listing in. */
const BULK_PAGE = 100;

/**
 * Replays every dead delivery of one endpoint that died in the window (and for the reason, if
 * given), oldest death first, starting at most `ratePerSecond` a second, one audit entry each.
 * It reads the dead listing of that endpoint and window page by page, and a replayed row is
 * pending, no longer listed as dead: run again after an interruption, it replays only what is
 * still dead (a row the listing still shows as dead is refused by the ledger's own condition and
 * counted as no longer dead). A store failure stops it: the error propagates after the tally so
 * far has been reported through `onProgress`.
 * @throws ReplayInputError before anything is read or written.
 */
export async function replayDeadDeliveries(
  selection: DeadSelection,
  actor: ReplayActor,
  deps: ReplayDeps & { readonly ledger: Pick<Ledger, 'replay' | 'listByState'> },
  options: BulkReplayOptions,
): Promise<BulkReplayRun> {
  checkReplayInput(actor);
  if (!(Number.isFinite(options.ratePerSecond) && options.ratePerSecond > 0)) {
    throw new RangeError(`ratePerSecond must be above 0, not ${options.ratePerSecond}`);
  }
  const now = options.now ?? Date.now;
  const pace = pacer(options.ratePerSecond, now, options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))));
  const tally = { matched: 0, replayed: 0, enqueueFailed: [] as string[], noLongerDead: 0, withoutEvent: 0 };
  const report = () => options.onProgress?.({ ...tally, enqueueFailed: [...tally.enqueueFailed] });
  let cursor = options.cursor;
  let read = 0;
  do {
    // Bounded, a page holds no more rows than may still match: the bound is met at a page's end,
    // where the listing's cursor says exactly where the rest begins.
    const room = options.maxMatched === undefined ? BULK_PAGE : Math.min(BULK_PAGE, Math.max(1, options.maxMatched - tally.matched));
    const page = await deps.ledger.listByState('dead', {
      endpoint: selection.endpoint,
      sinceMs: selection.sinceMs,
      untilMs: selection.untilMs,
      limit: room,
      cursor,
    });
    read += page.records.length;
    for (const record of page.records) {
      if (!matches(record, selection)) continue;
      if (record.body === undefined) {
        tally.withoutEvent += 1;
        continue;
      }
      tally.matched += 1;
      if (options.dryRun) continue;
      await pace();
      try {
        const result = await replayOne({ eventId: record.eventId, endpoint: record.endpoint, ...actor, nowMs: now() }, deps);
        if ('replayed' in result) tally.replayed += 1;
        else tally.enqueueFailed.push(result.eventId);
      } catch (error) {
        if (!(error instanceof ReplayRefusedError) || error.refusal !== 'not-dead') throw error;
        tally.noLongerDead += 1;
      }
      report();
    }
    cursor = page.cursor;
    const bounded = (options.maxMatched !== undefined && tally.matched >= options.maxMatched) || (options.maxRead !== undefined && read >= options.maxRead);
    if (bounded && cursor !== undefined) return { ...tally, enqueueFailed: [...tally.enqueueFailed], cursor };
  } while (cursor !== undefined);
  return { ...tally, enqueueFailed: [...tally.enqueueFailed] };
}

/** The listing is chosen by endpoint and listing time; the row itself confirms both, and the reason. */
function matches(record: DeliveryRecord, selection: DeadSelection): boolean {
  if (record.state !== 'dead' || record.endpoint !== selection.endpoint) return false;
  if (record.deadAt !== undefined && (record.deadAt < selection.sinceMs || record.deadAt >= selection.untilMs)) return false;
  return selection.deadReason === undefined || record.deadReason === selection.deadReason;
}

/**
 * Spaces calls `1000 / ratePerSecond` ms apart: the first goes at once, each next one no sooner
 * than its slot. A slow call uses up its slot rather than bunching the next ones behind it.
 */
export function pacer(ratePerSecond: number, now: () => number, sleep: (ms: number) => Promise<void>): () => Promise<void> {
  const intervalMs = 1000 / ratePerSecond;
  let nextMs: number | undefined;
  return async () => {
    const at = now();
    if (nextMs !== undefined && at < nextMs) await sleep(nextMs - at);
    nextMs = Math.max(at, nextMs ?? at) + intervalMs;
  };
}
