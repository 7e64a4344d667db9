/**
 * Endpoint health's rules (docs/contract.md §12): back-pressure, the circuit breaker for an endpoint
 * that cannot be reached, a 410's disabling and automatic disabling. Pure functions, applied for the
 * consumer by `HealthTracker` (health-tracker.ts).
 *
 * An endpoint's health lives on its registry item beside its fields (`EndpointHealth`), written by
 * consumers only on a failed attempt, on a pause and on the first accepted attempt after failures:
 * a healthy endpoint's deliveries write nothing.
 *
 * The circuit breaker. A batch lasts as long as its slowest record, so a receiver that never
 * answers holds every batch it is in for a whole attempt timeout, and with it every other
 * endpoint's deliveries in those batches. An endpoint whose attempts keep finding it unreachable
 * (lib/outcome.ts `unreachable`: timeouts, resets, refused connections, DNS) is paused as a 429
 * pauses it, the same `pausedUntil` on its registry item, so every consumer holds its deliveries
 * with no request and no attempt spent:
 * - open: after BREAKER_FAILURES such attempts in a row in one consumer (no HTTP answer between,
 *   none more than BREAKER_WINDOW_MS after the one before);
 * - for as long as the endpoint has gone without an accepted request (`openSeconds`), at least
 *   BREAKER_MIN_OPEN_SECONDS and the attempt timeout, at most BREAKER_MAX_OPEN_SECONDS: each
 *   re-open about doubles it;
 * - half-open once the pause ends (it was paused during its current run of failures: `tripped`):
 *   one consumer probes (`HealthTracker.admit`: it claims the probe on the item for an attempt timeout and
 *   PROBE_MARGIN_MS; the others hold the endpoint until then and ask the item again); the first
 *   attempt that finds it unreachable again re-opens it at once, an accepted one closes it (the
 *   recovery write every first success after failures makes);
 * - writes: one pause write to open it, carrying the run's first failure (when the breaker does not
 *   open in that batch, the batch's end writes the failure: its answer shows a pause in force, which
 *   the consumer then takes instead of writing its own), per half-open
 *   spell one probe claim per consumer that has the endpoint's deliveries, a failure and a pause
 *   write per failed probe, the recovery: never one per failed attempt of an outage. The rest
 *   of a run is counted in the consumer's memory only, so `failures` on the item counts these.
 *
 * No hot item in an outage (docs/contract.md §20). A consumer counts failed attempts in memory and
 * writes them as one addition (`HealthStore.recordFailure` with a count) at most once per
 * FLUSH_INTERVAL_MS per endpoint, the first of a run at once; a pause is written only when it ends
 * PAUSE_EXTENSION_MS or more after the pause the consumer knows of; a recovery once per run. So
 * one consumer writes an endpoint's item about once a second whatever its failure rate, and the
 * automatic rule, checked on each write's answer, disables within about a second of its period.
 */
import type { AttemptOutcome } from '../outcome';
import { MAX_WAIT_SECONDS } from '../policy';
import type { Endpoint, EndpointRecord, StateChange } from './endpoint';

/** An endpoint's health as its registry item holds it. Times are epoch ms. */
export interface EndpointHealth {
  /** No delivery to it starts before this (a 429, or a 503 with `Retry-After`). */
  readonly pausedUntil?: number;
  /** Failed attempts since the last accepted one. */
  readonly failures: number;
  /** When the first of those failures was recorded. */
  readonly failingSince?: number;
  /** The accepted attempt that ended the last run of failures (successes after it write nothing). */
  readonly lastAcceptedAt?: number;
  /** Until when one consumer holds the half-open breaker's probe (`HealthStore.claimProbe`). */
  readonly probeUntil?: number;
}

/** Whether a consumer holds the probe now, and the endpoint's health as the claim left or found it. */
export interface ProbeClaim {
  readonly claimed: boolean;
  readonly health: EndpointHealth;
}

export const HEALTHY: EndpointHealth = { failures: 0 };

/** A registry item as the consumer reads it: the endpoint and its health. */
export type HealthRecord = EndpointRecord & { readonly health?: EndpointHealth };

/** A pause lasts at most as long as a wait may (SQS's visibility limit). */
export const MAX_PAUSE_SECONDS = MAX_WAIT_SECONDS;
/** Who disables an endpoint when the consumer does (a 410, or §12's automatic disabling). */
export const HANDOFF_ACTOR = 'handoff';
export const GONE_REASON = 'HTTP 410 Gone from the endpoint';

/**
 * The registry's health writes (DynamoDbHealthStore): each one conditional write on an existing
 * item. Those other consumers must see (a run's beginning, a pause, a recovery, disabling) also
 * mark the item changed for the registry's change index; counting and probe claims never do.
 */
export interface HealthStore {
  /** failures + `count` (1 if not given); failingSince = nowMs if unset. Resolves to the health after the write. */
  recordFailure(name: string, nowMs: number, count?: number): Promise<EndpointHealth>;
  /** failures 0, failingSince removed, lastAcceptedAt = nowMs. */
  recordRecovery(name: string, nowMs: number): Promise<EndpointHealth>;
  /**
   * Pauses until `untilMs` unless a later pause is set, at `nowMs` (the clock's now if not given),
   * adding `count` failed attempts as `recordFailure` does (the breaker's opening carries its run's
   * counts). Resolves to the pause in force: `untilMs` when written (an equal pause is written again).
   */
  pause(name: string, untilMs: number, nowMs?: number, count?: number): Promise<number>;
  /** Takes the probe until `untilMs` while the endpoint is failing, not paused and not probed by another consumer. */
  claimProbe(name: string, nowMs: number, untilMs: number): Promise<ProbeClaim>;
  /** Disables an enabled endpoint with who, why and when; false when it was not enabled (or is gone). */
  disableIfEnabled(name: string, change: StateChange): Promise<boolean>;
}

/**
 * Whether the outcome is another server's, not the receiver's (docs/contract.md §18): no token from
 * the token endpoint (`auth`) or the proxy's refusal (`proxy`), with that server's status when it
 * answered. A failed attempt like any other, but it says nothing of the receiver: it neither pauses
 * the endpoint (a token endpoint's 429 is not the receiver asking for less) nor ends a run of
 * unreachable attempts.
 */
export function otherServers(outcome: AttemptOutcome): boolean {
  return outcome.kind === 'temporary' && (outcome.cause === 'auth' || outcome.cause === 'proxy');
}

/**
 * When the endpoint is to be paused until, after this outcome: the receiver's 429 (for its
 * `Retry-After`, or the endpoint's first retry wait when it gives none) or 503 carrying
 * `Retry-After`; at most 12 h. Undefined: no pause (`otherServers`' outcomes never pause).
 */
export function pauseAfter(outcome: AttemptOutcome, nowMs: number, firstWaitSeconds: number): number | undefined {
  if (outcome.kind !== 'temporary' || otherServers(outcome)) return undefined;
  let seconds: number | undefined;
  if (outcome.status === 429) seconds = outcome.retryAfterSeconds ?? firstWaitSeconds;
  else if (outcome.status === 503) seconds = outcome.retryAfterSeconds;
  if (seconds === undefined || !(seconds > 0)) return undefined;
  return nowMs + Math.min(seconds, MAX_PAUSE_SECONDS) * 1000;
}

/** One consumer writes an endpoint's counted failures at most once per this long (a run's first at once). */
export const FLUSH_INTERVAL_MS = 1_000;
/** A pause is written only when it ends at least this long after the pause the consumer knows of. */
export const PAUSE_EXTENSION_MS = 1_000;

/** Unreachable attempts in a row, in one consumer, that open the breaker. */
export const BREAKER_FAILURES = 3;
/** An unreachable attempt more than this after the previous one starts a new run. */
export const BREAKER_WINDOW_MS = 60_000;
/** The shortest the breaker opens for (and never shorter than the endpoint's attempt timeout). */
export const BREAKER_MIN_OPEN_SECONDS = 5;
/** The longest the breaker opens for: a receiver back up waits at most this long for its deliveries. */
export const BREAKER_MAX_OPEN_SECONDS = 300;
/** A probe is held for its attempt timeout and this much more (the probe's claim, its ledger writes, the outcome's write). */
export const PROBE_MARGIN_MS = 2_000;

/** A consumer's unbroken run of unreachable attempts at one endpoint. Times are epoch ms. */
export interface UnreachableRun {
  readonly count: number;
  readonly startedAt: number;
  readonly lastAt: number;
}

/** The run after one more unreachable attempt at `nowMs`: a new one when the last was longer than the window ago. Pure. */
export function extendRun(run: UnreachableRun | undefined, nowMs: number): UnreachableRun {
  if (run === undefined || nowMs - run.lastAt > BREAKER_WINDOW_MS) return { count: 1, startedAt: nowMs, lastAt: nowMs };
  return { count: run.count + 1, startedAt: run.startedAt, lastAt: nowMs };
}

/**
 * Whether the endpoint was paused during its current run of failures (since its last accepted
 * request): its breaker is open, or half-open once the pause has ended. A 429's pause counts too.
 */
export function tripped(health: EndpointHealth): boolean {
  const since = noAcceptedSince(health);
  return since !== undefined && health.pausedUntil !== undefined && health.pausedUntil > since;
}

/**
 * How long the breaker opens for: as long as the endpoint has gone without an accepted request
 * (its health's run of failures, else this consumer's run), at least BREAKER_MIN_OPEN_SECONDS and
 * the attempt timeout (a probe costs a batch that long), at most BREAKER_MAX_OPEN_SECONDS. Each
 * re-open comes after the last pause and a probe, so it about doubles. Whole seconds. Pure.
 */
export function openSeconds(health: EndpointHealth, run: UnreachableRun, nowMs: number, attemptTimeoutMs: number): number {
  const since = noAcceptedSince(health) ?? run.startedAt;
  const least = Math.max(BREAKER_MIN_OPEN_SECONDS, Math.ceil(attemptTimeoutMs / 1000));
  return Math.min(BREAKER_MAX_OPEN_SECONDS, Math.max(least, Math.ceil((nowMs - since) / 1000)));
}

/** What an unreachable attempt does to the breaker (`breakerStep`). */
export type BreakerStep =
  /** A pause is in force: the attempt began before it was known. Nothing more to do or write. */
  | { readonly kind: 'held' }
  /** Counted in the run; `record`: the run's first, written as any failure is. */
  | { readonly kind: 'count'; readonly record: boolean }
  /** The run reached BREAKER_FAILURES (`open`), or the probe after a pause failed (`reopen`): paused until then. */
  | { readonly kind: 'open' | 'reopen'; readonly untilMs: number };

/**
 * The breaker's decision after an unreachable attempt, given the consumer's run with that attempt
 * counted (`extendRun`) and the endpoint's health as the consumer knows it. Pure.
 */
export function breakerStep(run: UnreachableRun, health: EndpointHealth, nowMs: number, attemptTimeoutMs: number): BreakerStep {
  if (pauseSecondsLeft(health, nowMs) > 0) return { kind: 'held' };
  const untilMs = () => nowMs + openSeconds(health, run, nowMs, attemptTimeoutMs) * 1000;
  if (tripped(health)) return { kind: 'reopen', untilMs: untilMs() };
  if (run.count >= BREAKER_FAILURES) return { kind: 'open', untilMs: untilMs() };
  return { kind: 'count', record: run.count === 1 };
}

/** Whole seconds left of the pause (at least 1 while it lasts); 0 when not paused. */
export function pauseSecondsLeft(health: Pick<EndpointHealth, 'pausedUntil'>, nowMs: number): number {
  const until = health.pausedUntil;
  if (until === undefined || until <= nowMs) return 0;
  return Math.max(1, Math.ceil((until - nowMs) / 1000));
}

/** Whether an accepted attempt must write the recovery (it ends a run of failures). */
export function endsFailures(health: EndpointHealth): boolean {
  return health.failures > 0 || health.failingSince !== undefined;
}

/**
 * Since when the endpoint has accepted no request, as far as its health tells: the start of its
 * current run of failures (every accepted attempt before it was recorded or was followed by
 * nothing but successes). `lastAcceptedAt` counts when later (a recovery recorded while a failure
 * of the run was still being written).
 */
export function noAcceptedSince(health: EndpointHealth): number | undefined {
  if (health.failingSince === undefined) return undefined;
  return Math.max(health.failingSince, health.lastAcceptedAt ?? 0);
}

/**
 * Why the endpoint is to be disabled automatically after a failed attempt (docs/contract.md §12),
 * or undefined: only when `autoDisable` is on, it is enabled, it has at least
 * `disableAfterFailures` failed attempts and has accepted no request for `disableAfterSeconds`.
 */
export function autoDisableReason(
  endpoint: Pick<Endpoint, 'autoDisable' | 'state' | 'disableAfterSeconds' | 'disableAfterFailures'>,
  health: EndpointHealth,
  nowMs: number,
): string | undefined {
  if (!endpoint.autoDisable || endpoint.state !== 'enabled') return undefined;
  if (health.failures < endpoint.disableAfterFailures) return undefined;
  const since = noAcceptedSince(health);
  if (since === undefined || nowMs - since < endpoint.disableAfterSeconds * 1000) return undefined;
  return (
    `no accepted request for ${describeDuration(nowMs - since)} and ${health.failures} failed attempts ` +
    `(autoDisable: ${endpoint.disableAfterSeconds} s and ${endpoint.disableAfterFailures} attempts)`
  );
}

/** One line for operators (`endpoint show`): the pause, the failures, the last recovery. */
export function describeHealth(health: EndpointHealth | undefined, nowMs: number): string {
  const h = health ?? HEALTHY;
  const parts: string[] = [];
  const left = pauseSecondsLeft(h, nowMs);
  if (left > 0) parts.push(`paused until ${new Date(h.pausedUntil!).toISOString()} (${describeDuration(left * 1000)} left)`);
  if (h.failures > 0) {
    parts.push(`${h.failures} failed attempt${h.failures === 1 ? '' : 's'}${h.failingSince !== undefined ? ` since ${new Date(h.failingSince).toISOString()}` : ''}`);
  }
  if (parts.length === 0) parts.push('healthy');
  if (h.lastAcceptedAt !== undefined) parts.push(`last recovered ${new Date(h.lastAcceptedAt).toISOString()}`);
  return parts.join('; ');
}

/** Health as `--json` prints it: ISO times, null where unset. */
export function healthJson(health: EndpointHealth | undefined, nowMs: number) {
  const h = health ?? HEALTHY;
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return {
    paused: pauseSecondsLeft(h, nowMs) > 0,
    pausedUntil: iso(h.pausedUntil),
    failures: h.failures,
    failingSince: iso(h.failingSince),
    lastAcceptedAt: iso(h.lastAcceptedAt),
  };
}

export function describeDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}
