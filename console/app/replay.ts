/**
 * Replaying dead deliveries from the Dead letters page: what a replay will do, counted before the
 * reason is asked (`countAllMatching`), and doing it (`runReplay`).
 *
 * A selection is replayed a delivery at a time (`POST /v1/replays {eventId, endpoint, reason}`).
 * "All matching the filter" is one bulk replay per endpoint (`{endpoint, deadSince, until,
 * deadReason}`: the filter's endpoint, else each of the owner's), which the API does a paced part
 * at a time, `next` carrying on. It needs an endpoint or an owner: at every endpoint of a large
 * deployment the dry runs alone, one endpoint after another, would take hours. Its window's end is
 * fixed when it is counted, so the replay sends what the dry run counted and nothing that died
 * after.
 *
 * The API's calls come in as `ReplayCalls`: nothing here touches the DOM or the session, so the
 * plan and its parts are tested without a browser.
 */
import type { BulkReplayAnswer, Delivery } from '../../api/client/types';
import { ApiError, errorText } from './errors';

/** The Dead letters page's filters, as its route keeps them (times in ISO 8601). */
export interface DeadFilters {
  readonly endpoint?: string;
  readonly owner?: string;
  readonly since?: string;
  readonly until?: string;
  readonly reason?: string;
}

/** The API's calls a replay makes. */
export interface ReplayCalls {
  /** `POST /v1/replays` with this body, and the Idempotency-Key when given. */
  replay<T>(body: Readonly<Record<string, unknown>>, idempotencyKey?: string): Promise<T>;
  /** The names of the owner's endpoints, at most `max`, and whether those are all of them. */
  endpointsOf(owner: string, max: number): Promise<{ readonly names: readonly string[]; readonly complete: boolean }>;
}

/** A bulk replay with no `since` filter starts here: every death the ledger still keeps. */
export const BEGINNING = '1970-01-01T00:00:00Z';
/**
 * Replays per bulk request: well under the API's 100, so each part answers within a few seconds
 * (the API paces about 10 a second) and the progress shown moves as they do.
 */
export const BULK_PART_LIMIT = 20;
/** The dry run's reason: the API asks one of every replay request, though a dry run writes nothing. */
export const DRY_RUN_REASON = 'counting what a replay would send (dry run)';
/** An owner's endpoints one "all matching" replay covers at most: each is a dry run, then a replay, one after another. */
export const MAX_OWNER_ENDPOINTS = 1000;

export const ALL_MATCHING_NEEDS_A_FILTER =
  '"All matching the filter" needs an endpoint or an owner in the filter: every endpoint of the deployment would be counted one after another.';

/** What a replay will do, as counted before the reason is asked. */
export type ReplayPlan =
  | { readonly kind: 'selected'; readonly deliveries: readonly Delivery[]; readonly count: number }
  | {
      readonly kind: 'all';
      /** Each endpoint's bulk replay, with the dry run's count for it. */
      readonly parts: readonly { readonly endpoint: string; readonly matched: number }[];
      readonly deadSince: string;
      readonly until: string;
      readonly deadReason: 'rejected' | 'exhausted' | undefined;
      readonly count: number;
      /** Invalid messages' rows in the window: dead, with no event to send, so left out. */
      readonly withoutEvent: number;
    };

export interface ReplayOutcome {
  readonly total: number;
  readonly replayed: number;
  /** Replayed or delivered by something else before their turn. */
  readonly noLongerDead: number;
  /** Pending again, but their message could not be sent. */
  readonly enqueueFailed: readonly string[];
  /** What the API refused, in its own words, and the requests that got no answer at all. */
  readonly refused: readonly { readonly what: string; readonly message: string }[];
  /**
   * Requests that got no answer (the network failed): the API may have acted on them. Run again
   * with the same `keyFor`, each is sent with the same Idempotency-Key, so it acts once.
   */
  readonly unanswered: number;
}

/** Whether "all matching the filter" may be replayed: the filter names an endpoint or an owner. */
export function allMatchingAllowed(filters: DeadFilters): boolean {
  return filters.endpoint !== undefined || filters.owner !== undefined;
}

/**
 * The bulk replays "all matching the filter" makes, and a dry run's count of each, the window's
 * end fixed now. `say` tells the page how far the counting got.
 * @throws Error when the filter names neither an endpoint nor an owner, or the owner has more endpoints than one replay covers
 */
export async function countAllMatching(filters: DeadFilters, calls: ReplayCalls, say: (text: string) => void): Promise<ReplayPlan> {
  let endpoints: readonly string[];
  if (filters.endpoint !== undefined) endpoints = [filters.endpoint];
  else if (filters.owner !== undefined) {
    const owned = await calls.endpointsOf(filters.owner, MAX_OWNER_ENDPOINTS);
    if (!owned.complete) {
      throw new Error(`${filters.owner} has more than ${MAX_OWNER_ENDPOINTS} endpoints: replay all matching one endpoint at a time (the Endpoint filter).`);
    }
    endpoints = owned.names;
  } else throw new Error(ALL_MATCHING_NEEDS_A_FILTER);
  const deadSince = filters.since ?? BEGINNING;
  const until = filters.until ?? new Date().toISOString();
  const deadReason = filters.reason === 'rejected' || filters.reason === 'exhausted' ? filters.reason : undefined;
  const parts: { endpoint: string; matched: number }[] = [];
  let withoutEvent = 0;
  for (const [index, endpoint] of endpoints.entries()) {
    if (endpoints.length > 1) say(`Counting what would be replayed: endpoint ${index + 1} of ${endpoints.length}…`);
    let matched = 0;
    let cursor: string | null = null;
    do {
      const answer: BulkReplayAnswer = await calls.replay<BulkReplayAnswer>({
        endpoint,
        deadSince,
        until,
        ...(deadReason === undefined ? {} : { deadReason }),
        dryRun: true,
        reason: DRY_RUN_REASON,
        ...(cursor === null ? {} : { cursor }),
      });
      matched += answer.matched;
      withoutEvent += answer.withoutEvent;
      cursor = answer.next;
    } while (cursor !== null);
    if (matched > 0) parts.push({ endpoint, matched });
  }
  const count = parts.reduce((sum, part) => sum + part.matched, 0);
  return { kind: 'all', parts, deadSince, until, deadReason, count, withoutEvent };
}

/**
 * Runs the plan with the reason given, reporting how many are done as it goes. Refusals are
 * collected, not thrown. Each request's Idempotency-Key is `keyFor(its body)`: run again with the
 * same `keyFor` (the dialog's), a request whose answer was lost acts once.
 */
export async function runReplay(
  plan: ReplayPlan,
  reason: string,
  calls: ReplayCalls,
  keyFor: (body: unknown) => string,
  report: (done: number) => void,
): Promise<ReplayOutcome> {
  let replayed = 0;
  let noLongerDead = 0;
  let done = 0;
  let unanswered = 0;
  const enqueueFailed: string[] = [];
  const refused: { what: string; message: string }[] = [];
  const failed = (what: string, error: unknown) => {
    if (!(error instanceof ApiError)) unanswered += 1;
    refused.push({ what, message: errorText(error) });
  };
  if (plan.kind === 'selected') {
    // One request each, one after another: each is a single replay.
    for (const d of plan.deliveries) {
      const body = { eventId: d.eventId, endpoint: d.endpoint, reason };
      try {
        await calls.replay(body, keyFor(body));
        replayed += 1;
      } catch (error) {
        failed(`${d.eventId} to ${d.endpoint}`, error);
      }
      report(++done);
    }
    return { total: plan.count, replayed, noLongerDead, enqueueFailed, refused, unanswered };
  }
  // Each endpoint's bulk replay, a paced part at a time, one part after another (parallel parts add up at the receivers).
  for (const part of plan.parts) {
    let cursor: string | null = null;
    try {
      do {
        const body: Record<string, unknown> = {
          endpoint: part.endpoint,
          deadSince: plan.deadSince,
          until: plan.until,
          ...(plan.deadReason === undefined ? {} : { deadReason: plan.deadReason }),
          reason,
          limit: BULK_PART_LIMIT,
          ...(cursor === null ? {} : { cursor }),
        };
        const answer: BulkReplayAnswer = await calls.replay<BulkReplayAnswer>(body, keyFor(body));
        replayed += answer.replayed;
        noLongerDead += answer.noLongerDead;
        enqueueFailed.push(...answer.enqueueFailed);
        done += answer.replayed + answer.noLongerDead;
        report(done);
        cursor = answer.next;
      } while (cursor !== null);
    } catch (error) {
      failed(`the dead deliveries of ${part.endpoint}`, error);
    }
  }
  return { total: plan.count, replayed, noLongerDead, enqueueFailed, refused, unanswered };
}
