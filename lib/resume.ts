/**
 * Releasing parked deliveries (docs/contract.md §12 "Parking"): after `handoff endpoint enable`,
 * an endpoint's parked deliveries are sent again oldest admission first, at a bounded ramp, by the
 * same runs that recover stuck work (the scheduled function in AWS, the sandbox's timer). No
 * process is held for the hours a large backlog takes: each run releases a bounded window's worth
 * and the next run goes on from the registry.
 *
 * The state of a release is on the endpoint's registry item (lib/endpoints/registry-schema.ts):
 * `resumeSince` (when `enable` began it: the ramp counts from it), `resumeRate` (the most per second
 * it ramps up to) and `resumeUntil` (epoch ms up to which messages are already scheduled). A run:
 *
 * 1. takes the window from `resumeUntil` (or now) to now + its horizon with one conditional write
 *    on `resumeUntil`, so two runs at once never release the same stretch twice (the loser skips);
 * 2. lays the window's slots out at the ramp's rate: an eighth of `resumeRate` (at least 1 per
 *    second) at first, doubling every minute up to `resumeRate`;
 * 3. reads that many parked rows oldest first (the parked listing, this endpoint's entries only:
 *    never a scan), releases each (`unpark`: conditional, so a row two runs both read is released
 *    once) and puts a message for it on the queue, delayed until its slot;
 * 4. ends the release (removes the attributes) when none is left, once consumers have all seen the
 *    endpoint enabled: one with a stale copy of the registry may still park a delivery meanwhile.
 *    One that parks a delivery even later (a copy kept through a registry outage) is caught by a
 *    later run, which finds the enabled endpoint's parked row and begins a release for it (every
 *    run checks the endpoints enabled again within the last hour, and a bounded share of the
 *    others in turn, so a run's reads do not grow with the number of endpoints).
 *
 * A release interrupted anywhere leaves nothing behind: a released row is listed as pending from
 * its slot on, so if its message is never sent the stuck-work recovery sends one (lib/recovery.ts);
 * an unreleased row is still parked, for the next run. Slots are spread by delaying each message
 * (SQS's DelaySeconds, up to 15 minutes): a horizon is at most that long.
 */
import pLimit from 'p-limit';
import { ENDPOINTS_CACHE_MS } from './endpoints/registry';
import type { DeliveryRecord, Ledger } from './ledger/ledger';
import { errorFields, type Logger } from './observability';
import type { DeliveryQueue } from './queue/queue';
import { linkOf } from './tracing/carrier';

/** Per second at most, unless `endpoint enable --rate` says otherwise. */
export const DEFAULT_RESUME_RATE = 20;
/** The ramp starts at this share of the rate and doubles every RAMP_STEP_MS. */
const RAMP_START_SHARE = 1 / 8;
const RAMP_STEP_MS = 60_000;
/** SQS's longest message delay: no slot is scheduled further ahead. */
export const MAX_HORIZON_MS = 900_000;
/** How long after `enable` a consumer may still hold a copy of the registry with the endpoint disabled. */
const SETTLE_MS = 2 * ENDPOINTS_CACHE_MS;
/** Releases written at once. */
const CONCURRENCY = 10;
/** Rows read per listing page. */
const PAGE_SIZE = 100;
/**
 * An endpoint enabled again this recently is checked for parked deliveries at every run: a
 * consumer's copy is refreshed every ENDPOINTS_CACHE_MS, and a batch that read it parks within the
 * invocation's 15 minutes at most. (One created enabled, a bulk load's thousands, is not: no copy
 * showed it disabled.)
 */
export const STRAY_RECENT_MS = 60 * 60_000;
/** The other enabled endpoints checked per minute of runs, in turn (`StraySweep`): each costs one read of its parked listing. */
export const STRAY_SWEEP_PER_MINUTE = 100;

/** A sweep's share for runs `intervalMs` apart: STRAY_SWEEP_PER_MINUTE a minute (at least one a run). */
export function straySweepPerRun(intervalMs: number): number {
  return Math.max(1, Math.ceil((STRAY_SWEEP_PER_MINUTE * intervalMs) / 60_000));
}

/** A release in progress, as the registry holds it. */
export interface Resume {
  readonly since: number;
  readonly rate: number;
  readonly until?: number;
}

/** What a release needs of the registry: its three attributes, each write conditional on `since`. */
export interface ResumeStore {
  /** Moves `resumeUntil` from `from` (absent: unset) to `to`, if the release is still the one begun at `since`. False when refused. */
  takeWindow(endpoint: string, since: number, from: number | undefined, to: number): Promise<boolean>;
  /** Ends the release begun at `since` (a newer `enable` is left alone). False when refused. */
  finishResume(endpoint: string, since: number): Promise<boolean>;
  /** Begins a release at `since`, only while the endpoint is enabled with none in progress. False when refused. */
  beginResume(endpoint: string, since: number, rate: number): Promise<boolean>;
}

/** The ramp's rate (per second) at `nowMs`: an eighth of `rate` (at least 1), doubling every minute, up to `rate`. */
export function rampRate(resume: Pick<Resume, 'since' | 'rate'>, nowMs: number): number {
  const steps = Math.max(0, Math.floor((nowMs - resume.since) / RAMP_STEP_MS));
  const start = Math.max(1, resume.rate * RAMP_START_SHARE);
  return Math.min(resume.rate, start * 2 ** Math.min(steps, 30));
}

/**
 * The slots (epoch ms) in [fromMs, toMs), each 1/rampRate after the one before, and where the next
 * would be (`end`): the next window starts there, so windows of any length keep the spacing.
 */
export function slotsIn(resume: Pick<Resume, 'since' | 'rate'>, fromMs: number, toMs: number): { slots: number[]; end: number } {
  const slots: number[] = [];
  let t = fromMs;
  for (; t < toMs; t += 1000 / rampRate(resume, t)) slots.push(Math.floor(t));
  return { slots, end: Math.ceil(t) };
}

export interface ReleaseDeps {
  readonly ledger: Pick<Ledger, 'listByState' | 'unpark'>;
  readonly queue: Pick<DeliveryQueue, 'enqueue'>;
  readonly store: ResumeStore;
  readonly now: () => number;
  /** How far ahead this run schedules: until the next run, at most MAX_HORIZON_MS. */
  readonly horizonMs: number;
  readonly logger: Logger;
}

export interface ReleaseRun {
  readonly endpoint: string;
  /** Deliveries released (unparked, their messages sent). */
  readonly released: number;
  /** True when the release ended: nothing was left parked. */
  readonly finished: boolean;
  /** True when another run held the window: this one released nothing. */
  readonly skipped: boolean;
}

/**
 * One run of one endpoint's release. @throws what the ledger or the registry throws; a failed send
 * is logged and ends the run (the rows it released are pending and listed: recovery sends them).
 */
export async function releaseParked(endpoint: string, resume: Resume, deps: ReleaseDeps): Promise<ReleaseRun> {
  const { ledger, queue, store, logger } = deps;
  const nowMs = deps.now();
  const from = Math.max(nowMs, resume.until ?? 0);
  const to = nowMs + Math.min(deps.horizonMs, MAX_HORIZON_MS);
  const { slots, end } = from < to ? slotsIn(resume, from, to) : { slots: [], end: from };
  if (slots.length === 0) return { endpoint, released: 0, finished: false, skipped: false };
  if (!(await store.takeWindow(endpoint, resume.since, resume.until, end))) return { endpoint, released: 0, finished: false, skipped: true };

  let released = 0;
  let cursor: string | undefined;
  let exhausted = false;
  const limit = pLimit(CONCURRENCY);
  while (released < slots.length) {
    const page = await ledger.listByState('parked', { endpoint, limit: Math.min(PAGE_SIZE, slots.length - released), ...(cursor !== undefined ? { cursor } : {}) });
    // Each row is listed as pending from the slot it would take; the slots then go, in admission
    // order, to the rows this run released (a row another run released first gives its slot up).
    const first = released;
    const unparked = await Promise.all(
      page.records.map((record, i) => limit(() => ledger.unpark(record, deps.now(), slots[first + i]!))),
    );
    const rows = unparked.filter((row): row is DeliveryRecord & { body: string } => row?.body !== undefined);
    try {
      await Promise.all(
        rows.map((row, j) =>
          limit(() => queue.enqueue(row.body, { endpoint, delaySeconds: Math.max(0, Math.ceil((slots[first + j]! - deps.now()) / 1000)), ...linkOf(row) })),
        ),
      );
    } catch (error) {
      logger.error('release failed: the released rows are pending, recovery sends them', { endpoint, ...errorFields(error) });
      return { endpoint, released: released + rows.length, finished: false, skipped: false };
    }
    for (const row of rows) logger.info('released', { eventId: row.eventId, endpoint });
    released += rows.length;
    cursor = page.cursor;
    if (cursor === undefined) {
      exhausted = true;
      break;
    }
  }
  if (exhausted && nowMs >= resume.since + SETTLE_MS) {
    await store.finishResume(endpoint, resume.since);
    logger.info('release finished', { endpoint, released });
    return { endpoint, released, finished: true, skipped: false };
  }
  return { endpoint, released, finished: false, skipped: false };
}

/** What a run needs of the registry's entries (lib/recovery-endpoints.ts `registryEndpoints` reads them). */
export interface ResumeView {
  readonly state?: string;
  readonly resume?: Resume;
  /**
   * Epoch ms it was enabled again (its state change's `at`; none for an endpoint created enabled,
   * which no consumer's copy can have shown disabled).
   */
  readonly enabledAt?: number;
}

/**
 * Where the check of long-enabled endpoints for stray parked deliveries is up to, kept by the
 * process that makes the runs (the scheduled function's container, the sandbox's timer): each run
 * takes the next `perRun` names after the last one it took, in name order, wrapping around, so
 * every enabled endpoint is checked once per sweep (100,000 endpoints: about 17 hours at
 * STRAY_SWEEP_PER_MINUTE, whatever the runs' interval).
 */
export class StraySweep {
  #after = '';

  constructor(readonly perRun: number) {}

  /** The next names to check among `names` (any order), and the sweep moved past them. */
  take(names: readonly string[]): string[] {
    const sorted = [...names].sort();
    const start = sorted.findIndex((name) => name > this.#after);
    const from = start === -1 ? 0 : start;
    const taken = [...sorted.slice(from), ...sorted.slice(0, from)].slice(0, this.perRun);
    this.#after = taken.at(-1) ?? '';
    return taken;
  }
}

/**
 * One run of every release in progress: the enabled endpoints with a `resume`, one after another.
 * An enabled endpoint with none in progress may hold parked deliveries: a consumer whose copy of the
 * registry was older than the settle time may have parked one after its release ended. Those
 * enabled again within STRAY_RECENT_MS are checked at every run (one row of its parked listing), the
 * others a share at a time (`deps.sweep`; without one, none of them). One found parked begins a
 * release at the default rate. A failure of one endpoint's run is logged and the others go on.
 */
export async function releaseResuming(endpoints: ReadonlyMap<string, ResumeView>, deps: ReleaseDeps & { readonly sweep?: StraySweep }): Promise<ReleaseRun[]> {
  const runs: ReleaseRun[] = [];
  const nowMs = deps.now();
  const recent = (view: ResumeView) => view.enabledAt !== undefined && nowMs - view.enabledAt < STRAY_RECENT_MS;
  const quiet = [...endpoints].filter(([, view]) => view.state === 'enabled' && view.resume === undefined);
  const enabledLately = quiet.filter(([, view]) => recent(view)).map(([name]) => name);
  const inTurn = deps.sweep?.take(quiet.filter(([, view]) => !recent(view)).map(([name]) => name)) ?? [];
  const checked = new Set([...enabledLately, ...inTurn]);
  for (const [name, view] of endpoints) {
    if (view.state !== 'enabled') continue;
    if (view.resume === undefined && !checked.has(name)) continue;
    try {
      let resume = view.resume;
      if (resume === undefined) {
        const stray = await deps.ledger.listByState('parked', { endpoint: name, limit: 1 });
        if (stray.records.length === 0) continue;
        resume = { since: deps.now(), rate: DEFAULT_RESUME_RATE };
        if (!(await deps.store.beginResume(name, resume.since, resume.rate))) continue;
        deps.logger.warn('release begun: deliveries parked for an enabled endpoint', { endpoint: name });
      }
      runs.push(await releaseParked(name, resume, deps));
    } catch (error) {
      deps.logger.error('release failed', { endpoint: name, ...errorFields(error) });
    }
  }
  return runs;
}
