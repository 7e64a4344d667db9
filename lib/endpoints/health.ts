/**
 * Endpoint health (docs/contract.md §12): back-pressure, the circuit breaker for an endpoint that
 * cannot be reached, a 410's disabling and automatic disabling.
 *
 * An endpoint's health lives on its registry item beside its fields (`EndpointHealth`), written by
 * consumers only on a failed attempt, on a pause and on the first accepted attempt after failures:
 * a healthy endpoint's deliveries write nothing. Consumers read it with the registry's cached list;
 * a consumer notes what it writes in its own copy at once (`HealthTracker`), so the pause it wrote
 * holds its next deliveries without waiting for the next read.
 *
 * The circuit breaker (issue 26). A batch lasts as long as its slowest record, so a receiver that
 * never answers holds every batch it is in for a whole attempt timeout, and with it every other
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
 *   one consumer probes (`admit`: it claims the probe on the item for an attempt timeout and
 *   PROBE_MARGIN_MS; the others hold the endpoint until then and ask the item again); the first
 *   attempt that finds it unreachable again re-opens it at once, an accepted one closes it (the
 *   recovery write every first success after failures makes);
 * - writes: the run's first failure (as any failure is written), one pause write to open it (none
 *   when the consumer finds a pause in force: its failure write returns the item), per half-open
 *   spell one probe claim per consumer that has the endpoint's deliveries, a failure and a pause
 *   write per failed probe, the recovery: never one per failed attempt of an outage. The rest
 *   of a run is counted in the consumer's memory only, so `failures` on the item counts these.
 *
 * The rules are pure functions; `HealthTracker` applies them for the consumer (lib/batch.ts).
 */
import { errorFields, type Logger } from '../observability';
import { unreachable, type AttemptOutcome } from '../outcome';
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

/** The registry's health writes (DynamoDbEndpointRegistry): each one conditional write on an existing item. */
export interface HealthStore {
  /** failures + 1; failingSince set if unset. Resolves to the health after the write. */
  recordFailure(name: string, nowMs: number): Promise<EndpointHealth>;
  /** failures 0, failingSince removed, lastAcceptedAt = nowMs. */
  recordRecovery(name: string, nowMs: number): Promise<EndpointHealth>;
  /** Pauses until `untilMs` unless a later pause is set; resolves to the pause in force. */
  pause(name: string, untilMs: number): Promise<number>;
  /** Takes the probe until `untilMs` while the endpoint is failing, not paused and not probed by another consumer. */
  claimProbe(name: string, nowMs: number, untilMs: number): Promise<ProbeClaim>;
  /** Disables an enabled endpoint with who, why and when; false when it was not enabled (or is gone). */
  disableIfEnabled(name: string, change: StateChange): Promise<boolean>;
}

/**
 * When the endpoint is to be paused until, after this outcome: a 429 (for its `Retry-After`, or the
 * endpoint's first retry wait when it gives none) or a 503 carrying `Retry-After`; at most 12 h.
 * Undefined: no pause.
 */
export function pauseAfter(outcome: AttemptOutcome, nowMs: number, firstWaitSeconds: number): number | undefined {
  if (outcome.kind !== 'temporary') return undefined;
  let seconds: number | undefined;
  if (outcome.status === 429) seconds = outcome.retryAfterSeconds ?? firstWaitSeconds;
  else if (outcome.status === 503) seconds = outcome.retryAfterSeconds;
  if (seconds === undefined || !(seconds > 0)) return undefined;
  return nowMs + Math.min(seconds, MAX_PAUSE_SECONDS) * 1000;
}

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

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

export function describeDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** What operators are told when the consumer disables an endpoint. */
export interface DisabledNotice {
  readonly endpoint: string;
  readonly reason: string;
  /** Failed attempts recorded (for a 410: those before it). */
  readonly failures: number;
  /** ISO time since which it accepted no request, when known. */
  readonly since: string | null;
  /** ISO time of the disabling. */
  readonly at: string;
}

/** The event an endpoint's disabling is published as on EventBridge. */
export const DISABLED_EVENT = { source: 'handoff', detailType: 'handoff.endpoint.disabled' } as const;

export interface NoticeTargets {
  /** The EventBridge bus (the construct: `default`). */
  readonly eventBus?: string | undefined;
  /** The operators' SNS alarm topic. */
  readonly alarmTopicArn?: string | undefined;
  /** The clients' settings (tests: a stub's endpoint); Lambda's own by default. */
  readonly clientConfig?: { readonly region?: string; readonly endpoint?: string; readonly credentials?: { accessKeyId: string; secretAccessKey: string } };
}

/**
 * Tells operators of an endpoint the consumer disabled, beyond the log line: an event on the bus
 * (source `handoff`, detail-type `handoff.endpoint.disabled`, detail {endpoint, reason, failures,
 * since, at}) and a message to the alarm topic, each where set; undefined when neither is. The SDK
 * clients are loaded only when a notice is sent. Rejects when either send fails (after trying both).
 */
export function disabledNotifier(targets: NoticeTargets): ((notice: DisabledNotice) => Promise<void>) | undefined {
  const { eventBus, alarmTopicArn } = targets;
  if (eventBus === undefined && alarmTopicArn === undefined) return undefined;
  const config = { ...targets.clientConfig };
  return async (notice) => {
    const sends: Promise<unknown>[] = [];
    if (eventBus !== undefined) {
      sends.push(
        import('@aws-sdk/client-eventbridge').then(async ({ EventBridgeClient, PutEventsCommand }) => {
          const client = new EventBridgeClient(config);
          try {
            const { FailedEntryCount, Entries } = await client.send(
              new PutEventsCommand({
                Entries: [{ EventBusName: eventBus, Source: DISABLED_EVENT.source, DetailType: DISABLED_EVENT.detailType, Detail: JSON.stringify(notice) }],
              }),
            );
            if (FailedEntryCount) throw new Error(`EventBridge refused the event: ${Entries?.[0]?.ErrorCode ?? 'unknown error'}`);
          } finally {
            client.destroy();
          }
        }),
      );
    }
    if (alarmTopicArn !== undefined) {
      sends.push(
        import('@aws-sdk/client-sns').then(async ({ SNSClient, PublishCommand }) => {
          const client = new SNSClient(config);
          try {
            await client.send(
              new PublishCommand({
                TopicArn: alarmTopicArn,
                Subject: `handoff: endpoint ${notice.endpoint} disabled`.slice(0, 100),
                Message: JSON.stringify({ event: DISABLED_EVENT.detailType, ...notice }),
              }),
            );
          } finally {
            client.destroy();
          }
        }),
      );
    }
    const failure = (await Promise.allSettled(sends)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
  };
}

export interface HealthTrackerOptions {
  readonly store: HealthStore;
  /** The registry's list as the consumer caches it (`cachedEndpoints`), read by `refresh`. */
  readonly records?: () => Promise<readonly HealthRecord[]>;
  /** Tells operators beyond the log line (AWS: EventBridge and the alarm topic). Failures are logged, not thrown. */
  readonly notify?: ((notice: DisabledNotice) => Promise<void>) | undefined;
  readonly now?: () => number;
}

/**
 * The consumer's view of its endpoints' health: the registry's cached copy (`observe`), with what
 * this consumer wrote since laid over it, and the writes that follow an attempt (`afterAttempt`).
 */
export class HealthTracker {
  readonly #store: HealthStore;
  readonly #records: (() => Promise<readonly HealthRecord[]>) | undefined;
  readonly #notify: ((notice: DisabledNotice) => Promise<void>) | undefined;
  readonly #now: () => number;
  /** The registry's copy as last observed, and when the read that made it started. */
  #copy: { records: readonly HealthRecord[]; byName: Map<string, EndpointHealth>; readAt: number } | undefined;
  /** When each list the registry returned was asked for (lists made through `listing`). */
  readonly #readAt = new WeakMap<object, number>();
  /** This consumer's own writes, kept until a read started after them. */
  readonly #written = new Map<string, { health: EndpointHealth; at: number }>();
  /** Pauses this consumer knows of (noted before their write lands), until they end. */
  readonly #pauses = new Map<string, number>();
  /** Endpoints this consumer disabled, so it neither writes nor tells it twice before the next read. */
  readonly #disabled = new Set<string>();
  /** This consumer's current runs of unreachable attempts, per endpoint (the breaker's count). */
  readonly #runs = new Map<string, UnreachableRun>();
  /** Recovery writes in flight, per endpoint: the accepted attempts that end together share one. */
  readonly #recovering = new Map<string, Promise<void>>();
  /** Probes this consumer holds (until when), and its claims in flight, shared by a batch's deliveries. */
  readonly #probes = new Map<string, number>();
  readonly #claiming = new Map<string, Promise<number>>();

  constructor(options: HealthTrackerOptions) {
    this.#store = options.store;
    this.#records = options.records;
    this.#notify = options.notify;
    this.#now = options.now ?? Date.now;
  }

  /** The registry as the cache should read it: each read's start is noted, to know which of this consumer's writes it holds. */
  listing<R extends HealthRecord>(registry: { list(): Promise<R[]> }): { list(): Promise<R[]> } {
    return {
      list: async () => {
        const at = this.#now();
        const records = await registry.list();
        this.#readAt.set(records, at);
        return records;
      },
    };
  }

  /** Takes the cached list again (a request only when the cache reads the registry). A failed read keeps the copy held. */
  async refresh(): Promise<void> {
    if (this.#records === undefined) return;
    try {
      this.observe(await this.#records());
    } catch {
      // Routing reads the same cache and answers for the batch; health keeps what it has.
    }
  }

  /** Takes the registry's (cached) list: called with every batch; costs nothing when it is the copy already held. */
  observe(records: readonly HealthRecord[]): void {
    if (this.#copy?.records === records) return;
    const readAt = this.#readAt.get(records) ?? this.#now();
    const byName = new Map<string, EndpointHealth>();
    for (const record of records) if (record.health !== undefined) byName.set(record.fields.name, record.health);
    this.#copy = { records, byName, readAt };
    for (const [name, note] of this.#written) if (note.at < readAt) this.#written.delete(name);
    for (const record of records) if (record.state === 'enabled') this.#disabled.delete(record.fields.name);
  }

  /** The endpoint's health as this consumer knows it now. */
  current(name: string): EndpointHealth {
    const base = this.#written.get(name)?.health ?? this.#copy?.byName.get(name) ?? HEALTHY;
    const local = this.#pauses.get(name);
    if (local === undefined || (base.pausedUntil !== undefined && base.pausedUntil >= local)) return base;
    return { ...base, pausedUntil: local };
  }

  /** Seconds its deliveries are held back for (0: not paused). No request: this consumer's copy decides. */
  pausedFor(name: string): number {
    const nowMs = this.#now();
    const local = this.#pauses.get(name);
    if (local !== undefined && local <= nowMs) this.#pauses.delete(name);
    return pauseSecondsLeft(this.current(name), nowMs);
  }

  /**
   * Seconds the endpoint's deliveries are held back for, as `pausedFor`, and when its breaker is
   * half-open, whether this consumer is the one that probes: it claims the probe on the item (one
   * claim shared by the deliveries that ask together); a consumer refused holds the endpoint until
   * the other's probe is over, or takes the pause or recovery the item shows. A claim that cannot
   * be written lets the delivery go: it probes as every consumer would without the claim.
   */
  async admit(endpoint: Endpoint, logger: Logger): Promise<number> {
    const name = endpoint.name;
    const held = this.pausedFor(name);
    if (held > 0 || !tripped(this.current(name))) return held;
    if ((this.#probes.get(name) ?? 0) > this.#now()) return 0;
    let claiming = this.#claiming.get(name);
    if (claiming === undefined) {
      claiming = this.#claimProbe(endpoint, logger).finally(() => this.#claiming.delete(name));
      this.#claiming.set(name, claiming);
    }
    return claiming;
  }

  async #claimProbe(endpoint: Endpoint, logger: Logger): Promise<number> {
    const name = endpoint.name;
    const nowMs = this.#now();
    const untilMs = nowMs + endpoint.attemptTimeoutMs + PROBE_MARGIN_MS;
    let claim: ProbeClaim;
    try {
      claim = await this.#store.claimProbe(name, nowMs, untilMs);
    } catch (error) {
      logger.warn('endpoint health write failed', { endpoint: name, write: 'probe', ...errorFields(error) });
      return 0;
    }
    this.#note(name, claim.health);
    if (claim.claimed) {
      this.#probes.set(name, untilMs);
      logger.info('endpoint probing', { endpoint: name, probeUntil: new Date(untilMs).toISOString() });
      return 0;
    }
    // Another consumer's probe: held here until it is over, then the item is asked again.
    const theirs = claim.health.probeUntil;
    if (theirs !== undefined && theirs > nowMs && tripped(claim.health)) this.#pauses.set(name, Math.max(this.#pauses.get(name) ?? 0, theirs));
    return this.pausedFor(name);
  }

  /**
   * Records what an attempt to `endpoint` says of its health: an accepted one ends a run of failures
   * (one write, only then); a failed one is counted (one write) and may pause it (a 429, a 503 with
   * `Retry-After`: one more) or disable it (a 410, or the automatic rule); an unreachable one counts
   * towards the breaker (`#unreachable`). Never throws: a write that fails is logged, and the
   * delivery's own outcome stands.
   */
  async afterAttempt(endpoint: Endpoint, outcome: AttemptOutcome, logger: Logger): Promise<void> {
    const name = endpoint.name;
    const nowMs = this.#now();
    try {
      if (unreachable(outcome)) {
        await this.#unreachable(endpoint, outcome, nowMs, logger);
        return;
      }
      // An HTTP answer ends a run of unreachable attempts.
      if (this.#runs.size > 0 && (outcome.kind !== 'temporary' || outcome.status !== undefined)) this.#runs.delete(name);
      if (outcome.kind === 'accepted') {
        const before = this.current(name);
        if (!endsFailures(before)) return;
        // Accepted attempts of one batch end together (a half-open probe's, say): one recovery write.
        let recovering = this.#recovering.get(name);
        if (recovering === undefined) {
          recovering = this.#recover(name, before, nowMs, logger).finally(() => this.#recovering.delete(name));
          this.#recovering.set(name, recovering);
        }
        await recovering;
        return;
      }
      if (outcome.kind === 'rejected' && outcome.status === 410) {
        await this.#disable(endpoint, GONE_REASON, this.current(name), logger);
        return;
      }
      const pausedUntil = pauseAfter(outcome, nowMs, endpoint.policy.waitsSeconds[0] ?? 0);
      let pausing: Promise<unknown> | undefined;
      if (pausedUntil !== undefined) {
        // Held at once by this consumer; the others see it on their next read of the registry.
        if ((this.#pauses.get(name) ?? 0) < pausedUntil) this.#pauses.set(name, pausedUntil);
        logger.warn('endpoint paused', { endpoint: name, pausedUntil: new Date(pausedUntil).toISOString(), status: 'status' in outcome ? outcome.status : undefined });
        pausing = this.#store.pause(name, pausedUntil).catch((error: unknown) => {
          logger.warn('endpoint health write failed', { endpoint: name, write: 'pause', ...errorFields(error) });
        });
      }
      await this.#recordFailure(endpoint, nowMs, logger, pausing);
    } catch (error) {
      logger.warn('endpoint health write failed', { endpoint: name, ...errorFields(error) });
    }
  }

  /**
   * The breaker (module doc): an unreachable attempt is counted in this consumer's run; the run's
   * first is written as any failure; the BREAKER_FAILURES-th opens the breaker, and any after a pause
   * during the run re-opens it (a failed probe). Opening: the endpoint is held here at once, then one
   * pause write, unless the item shows a pause in force already (another consumer opened it first).
   */
  async #unreachable(endpoint: Endpoint, outcome: AttemptOutcome, nowMs: number, logger: Logger): Promise<void> {
    const name = endpoint.name;
    const run = extendRun(this.#runs.get(name), nowMs);
    this.#runs.set(name, run);
    const step = breakerStep(run, this.current(name), nowMs, endpoint.attemptTimeoutMs);
    if (step.kind === 'held') return;
    if (step.kind === 'count') {
      if (step.record) await this.#recordFailure(endpoint, nowMs, logger);
      return;
    }
    this.#pauses.set(name, step.untilMs);
    let inForce = step.untilMs;
    try {
      // A failed probe is counted (so a long outage still reaches automatic disabling), and its
      // write returns the item: another consumer's re-open is adopted rather than written again.
      // (No pause was in force as this consumer knew it, or the step would be `held`.)
      const theirs = step.kind === 'reopen' ? (await this.#recordFailure(endpoint, nowMs, logger)).pausedUntil : undefined;
      inForce = theirs !== undefined && theirs > this.#now() ? theirs : await this.#store.pause(name, step.untilMs);
      // Known as the item's from now on, so the endpoint stays tripped here once the pause is over.
      this.#notePause(name, inForce);
    } catch (error) {
      logger.warn('endpoint health write failed', { endpoint: name, write: 'pause', ...errorFields(error) });
    }
    this.#pauses.set(name, inForce);
    logger.warn('endpoint paused', {
      endpoint: name,
      pausedUntil: new Date(inForce).toISOString(),
      why: 'unreachable',
      breaker: step.kind,
      cause: 'cause' in outcome ? outcome.cause : undefined,
      unreachableInRow: run.count,
      pauseSeconds: Math.round((inForce - nowMs) / 1000),
    });
  }

  /** The first accepted attempt after failures: the recovery written (closing the breaker, if it was open). */
  async #recover(name: string, before: EndpointHealth, nowMs: number, logger: Logger): Promise<void> {
    const health = await this.#store.recordRecovery(name, nowMs);
    this.#note(name, health);
    if (tripped(before)) logger.info('endpoint recovered', { endpoint: name, failures: before.failures, since: iso(noAcceptedSince(before)) });
  }

  /** One failed attempt written (after `pausing`, a pause write in flight), then the automatic rule. The health after it. */
  async #recordFailure(endpoint: Endpoint, nowMs: number, logger: Logger, pausing?: Promise<unknown>): Promise<EndpointHealth> {
    const name = endpoint.name;
    const health = await this.#store.recordFailure(name, nowMs);
    this.#note(name, health);
    await pausing;
    const reason = autoDisableReason(endpoint, health, this.#now());
    if (reason !== undefined) await this.#disable(endpoint, reason, health, logger);
    return health;
  }

  #note(name: string, health: EndpointHealth): void {
    this.#written.set(name, { health, at: this.#now() });
  }

  /** A pause the item holds (written, or found there), noted over what this consumer knew. */
  #notePause(name: string, untilMs: number): void {
    const base = this.#written.get(name)?.health ?? this.#copy?.byName.get(name) ?? HEALTHY;
    if ((base.pausedUntil ?? 0) < untilMs) this.#note(name, { ...base, pausedUntil: untilMs });
  }

  async #disable(endpoint: Endpoint, reason: string, health: EndpointHealth, logger: Logger): Promise<void> {
    const name = endpoint.name;
    if (endpoint.state !== 'enabled' || this.#disabled.has(name)) return;
    const at = this.#now();
    // Only the consumer whose write disabled it tells operators: the write is conditioned on `enabled`.
    if (!(await this.#store.disableIfEnabled(name, { by: HANDOFF_ACTOR, reason, at }))) return;
    this.#disabled.add(name);
    const since = noAcceptedSince(health);
    const notice: DisabledNotice = {
      endpoint: name,
      reason,
      failures: health.failures,
      since: since === undefined ? null : new Date(since).toISOString(),
      at: new Date(at).toISOString(),
    };
    logger.error('endpoint disabled', { ...notice });
    if (this.#notify !== undefined) {
      await this.#notify(notice).catch((error: unknown) => logger.error('endpoint disabled: notification failed', { endpoint: name, ...errorFields(error) }));
    }
  }
}
