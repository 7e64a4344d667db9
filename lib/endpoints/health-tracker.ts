/**
 * The consumer's endpoint health (docs/contract.md §12): it reads health with the registry's cached
 * list, applies the rules of health-rules.ts after each attempt and makes their writes. What it
 * writes it notes in its own copy at once, so the pause it wrote holds its next deliveries without
 * waiting for the next read.
 *
 * Coalesced (docs/contract.md §20): failed attempts are counted here per endpoint and written as one
 * addition (a flush) at most once per FLUSH_INTERVAL_MS, the run's first at once; a flush in flight
 * is shared, and counts made meanwhile wait for the next, due a second after it began (made by the
 * next failure then, or by `settled` at the batch's end). Its answer, the item as it is now, is what
 * the automatic rule is checked on. A pause is written only when it extends the pause this consumer
 * knows of by PAUSE_EXTENSION_MS; a recovery once per run (a batch's accepted attempts share it). A
 * consumer that stops loses the counts not yet flushed: at most its last second's.
 *
 * No write holds up a delivery: the batch tells the tracker of each attempt without waiting, and
 * waits for the writes still in flight only before it answers Lambda (`settled`), so the container
 * is not frozen with a write half made.
 */
import { errorFields, type Logger } from '../observability';
import { unreachable, type AttemptOutcome } from '../outcome';
import type { DisabledNotice } from './disabled-notifier';
import type { Endpoint } from './endpoint';
import { FailureCounts, withCounted, type Counted } from './failure-counts';
import {
  autoDisableReason,
  breakerStep,
  endsFailures,
  extendRun,
  GONE_REASON,
  HANDOFF_ACTOR,
  HEALTHY,
  noAcceptedSince,
  otherServers,
  pauseAfter,
  pauseSecondsLeft,
  PAUSE_EXTENSION_MS,
  PROBE_MARGIN_MS,
  tripped,
  type EndpointHealth,
  type HealthRecord,
  type HealthStore,
  type ProbeClaim,
  type UnreachableRun,
} from './health-rules';

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
  /** Failed attempts counted here and not yet written, per endpoint (failure-counts.ts). */
  readonly #counts = new FailureCounts();
  /** Every write (and attempt's aftermath) in flight, for `settled`. */
  readonly #inFlight = new Set<Promise<unknown>>();

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

  /** The endpoint's health as this consumer knows it now, its failures not yet written included. */
  current(name: string): EndpointHealth {
    const base = this.#counts.over(name, this.#stored(name));
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
   * Flushes the counts that are due and waits for every write in flight: the batch's last step, so
   * Lambda never freezes the container with a health write half made.
   */
  async settled(): Promise<void> {
    const nowMs = this.#now();
    for (const counted of this.#counts.dueNow(nowMs)) void this.#flush(counted.endpoint.name, counted.logger);
    while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
  }

  /**
   * Records what an attempt to `endpoint` says of its health: an accepted one ends a run of failures
   * (one write, only then); a failed one is counted (written with the next flush) and may pause it
   * (a 429, a 503 with `Retry-After`: a write when it extends the pause known here) or disable it (a
   * 410, or the automatic rule); an unreachable one counts towards the breaker (`#unreachable`).
   * What it holds back it holds at once, before any write. Resolves when the writes it began are
   * made; never throws: a write that fails is logged, and the delivery's own outcome stands.
   */
  afterAttempt(endpoint: Endpoint, outcome: AttemptOutcome, logger: Logger): Promise<void> {
    return this.#track(this.#afterAttempt(endpoint, outcome, logger));
  }

  async #afterAttempt(endpoint: Endpoint, outcome: AttemptOutcome, logger: Logger): Promise<void> {
    const name = endpoint.name;
    const nowMs = this.#now();
    try {
      if (unreachable(outcome)) {
        await this.#unreachable(endpoint, outcome, nowMs, logger);
        return;
      }
      // The receiver's HTTP answer ends a run of unreachable attempts (a token endpoint's or the proxy's does not).
      if (this.#runs.size > 0 && (outcome.kind !== 'temporary' || (outcome.status !== undefined && !otherServers(outcome)))) this.#runs.delete(name);
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
        // Held at once by this consumer; the others see it on their next read of the registry. Written
        // only when it extends what this consumer knows (a batch's 429s together: one write).
        const known = Math.max(this.#pauses.get(name) ?? 0, this.current(name).pausedUntil ?? 0);
        if ((this.#pauses.get(name) ?? 0) < pausedUntil) this.#pauses.set(name, pausedUntil);
        if (pausedUntil >= known + PAUSE_EXTENSION_MS) {
          logger.warn('endpoint paused', { endpoint: name, pausedUntil: new Date(pausedUntil).toISOString(), status: 'status' in outcome ? outcome.status : undefined });
          pausing = this.#store.pause(name, pausedUntil, nowMs).catch((error: unknown) => {
            logger.warn('endpoint health write failed', { endpoint: name, write: 'pause', ...errorFields(error) });
          });
        }
      }
      await Promise.all([pausing, this.#count(endpoint, nowMs, logger)]);
    } catch (error) {
      logger.warn('endpoint health write failed', { endpoint: name, ...errorFields(error) });
    }
  }

  /**
   * The breaker (health-rules.ts): an unreachable attempt is counted in this consumer's run; the run's
   * first is counted as a failure too (carried by the opening pause's write, or by the batch's end);
   * the BREAKER_FAILURES-th opens the breaker, and any after a pause during the run re-opens it (a
   * failed probe). Opening: the endpoint is held here at once, then one pause write, unless the item
   * shows a pause in force already (another consumer opened it first).
   */
  async #unreachable(endpoint: Endpoint, outcome: AttemptOutcome, nowMs: number, logger: Logger): Promise<void> {
    const name = endpoint.name;
    const run = extendRun(this.#runs.get(name), nowMs);
    this.#runs.set(name, run);
    const step = breakerStep(run, this.current(name), nowMs, endpoint.attemptTimeoutMs);
    if (step.kind === 'held') return;
    if (step.kind === 'count') {
      // Counted, not written at once: a batch's unreachable attempts end together, and the pause that
      // opens the breaker then carries the count in its own write; else the batch's end writes it.
      if (step.record) this.#counts.add(endpoint, nowMs, logger);
      return;
    }
    this.#pauses.set(name, step.untilMs);
    let inForce = step.untilMs;
    try {
      // A failed probe is counted (so a long outage still reaches automatic disabling), and its
      // write returns the item: another consumer's re-open is adopted rather than written again.
      // (No pause was in force as this consumer knew it, or the step would be `held`.)
      const theirs = step.kind === 'reopen' ? (await this.#count(endpoint, nowMs, logger, 'now'))?.pausedUntil : undefined;
      inForce = theirs !== undefined && theirs > this.#now() ? theirs : await this.#pauseCarrying(name, step.untilMs, nowMs);
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
    // The failures counted here and not written came before it: the recovery clears them anyway.
    this.#counts.drop(name);
    const health = await this.#store.recordRecovery(name, nowMs);
    this.#note(name, health);
    if (tripped(before)) logger.info('endpoint recovered', { endpoint: name, failures: before.failures, since: iso(noAcceptedSince(before)) });
  }

  /**
   * One failed attempt counted here, then flushed if due: at once when it begins a run as this
   * consumer knows it, or `now` (a failed probe, whose write must answer with the item), else when a
   * second has passed since the last flush began. The item's health the flush it began or joined
   * left (undefined when none, or when it failed).
   */
  async #count(endpoint: Endpoint, nowMs: number, logger: Logger, when: 'due' | 'now' = 'due'): Promise<EndpointHealth | undefined> {
    const name = endpoint.name;
    const begins = !endsFailures(this.current(name));
    this.#counts.add(endpoint, nowMs, logger);
    if (!begins && when === 'due' && !this.#counts.due(name, nowMs)) return undefined;
    return this.#flush(name, logger);
  }

  /**
   * The breaker's pause, carrying the counts not yet written (none while a flush is in flight: they
   * wait for the next). Written, the item holds them and the pause; refused (a later pause was set),
   * they go with the next flush. The pause in force, noted as the item's.
   */
  async #pauseCarrying(name: string, untilMs: number, nowMs: number): Promise<number> {
    const counted = this.#counts.take(name);
    let inForce: number;
    try {
      inForce = await this.#store.pause(name, untilMs, nowMs, counted?.count ?? 0);
    } catch (error) {
      if (counted !== undefined) this.#counts.putBack(counted);
      throw error;
    }
    const carried = counted !== undefined && inForce === untilMs;
    if (counted !== undefined && !carried) this.#counts.putBack(counted);
    // Known as the item's from now on, so the endpoint stays tripped here once the pause is over.
    const base = this.#stored(name);
    const failing = carried ? withCounted(base, counted) : base;
    if ((failing.pausedUntil ?? 0) < inForce || carried) this.#note(name, { ...failing, pausedUntil: Math.max(failing.pausedUntil ?? 0, inForce) });
    return inForce;
  }

  /** Writes the endpoint's counts in one addition (a flush in flight is shared); then the automatic rule on the item's answer. */
  #flush(name: string, logger: Logger): Promise<EndpointHealth | undefined> {
    const running = this.#counts.inFlight(name);
    if (running !== undefined) return running;
    const nowMs = this.#now();
    const written = this.#counts.flush(name, nowMs, (counted) => this.#writeFailures(counted, nowMs, logger));
    return written === undefined ? Promise.resolve(undefined) : this.#track(written);
  }

  async #writeFailures(counted: Counted, nowMs: number, logger: Logger): Promise<EndpointHealth | undefined> {
    const { endpoint, count } = counted;
    const name = endpoint.name;
    let health: EndpointHealth;
    try {
      health = await this.#store.recordFailure(name, nowMs, count);
    } catch (error) {
      this.#counts.flushed(name);
      // Counted again, with the next flush: a write that fails loses no count.
      this.#counts.putBack(counted);
      logger.warn('endpoint health write failed', { endpoint: name, write: 'failures', failures: count, ...errorFields(error) });
      return undefined;
    }
    this.#counts.flushed(name);
    this.#note(name, health);
    const reason = autoDisableReason(endpoint, health, this.#now());
    try {
      if (reason !== undefined) await this.#disable(endpoint, reason, health, logger);
    } catch (error) {
      logger.warn('endpoint health write failed', { endpoint: name, write: 'disable', ...errorFields(error) });
    }
    return health;
  }

  /** Keeps `promise` among the writes in flight until it settles. */
  #track<T>(promise: Promise<T>): Promise<T> {
    this.#inFlight.add(promise);
    const done = () => void this.#inFlight.delete(promise);
    promise.then(done, done);
    return promise;
  }

  /** The health the item holds as this consumer knows it: its own last write, else the registry's copy. */
  #stored(name: string): EndpointHealth {
    return this.#written.get(name)?.health ?? this.#copy?.byName.get(name) ?? HEALTHY;
  }

  #note(name: string, health: EndpointHealth): void {
    this.#written.set(name, { health, at: this.#now() });
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

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}
