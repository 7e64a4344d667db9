/**
 * The circuit breaker of endpoint health (lib/endpoints/health.ts, issue 26): an endpoint whose
 * attempts keep finding it unreachable is paused as a 429 pauses it. Its pure decisions (open after
 * BREAKER_FAILURES in a row, for as long as the endpoint has been failing, growing to the cap; the
 * half-open probe re-opening or closing), then the consumer's tracker on an in-memory registry with
 * an injected clock: what is held, and what is written (never once per failed attempt).
 */
import { describe, expect, it } from 'vitest';
import {
  BREAKER_FAILURES,
  BREAKER_MAX_OPEN_SECONDS,
  BREAKER_MIN_OPEN_SECONDS,
  BREAKER_WINDOW_MS,
  PROBE_MARGIN_MS,
  breakerStep,
  extendRun,
  openSeconds,
  tripped,
  type EndpointHealth,
  type UnreachableRun,
} from '../../lib/endpoints/health';
import type { AttemptOutcome } from '../../lib/outcome';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { singleEndpoint } from '../../lib/routing';
import { MemoryHealthStore, tracker } from '../helpers/health';

const T0 = Date.parse('2026-12-04T10:00:00Z');
const TIMEOUT: AttemptOutcome = { kind: 'unknown', cause: 'timeout' };
const REFUSED: AttemptOutcome = { kind: 'temporary', cause: 'connection-refused' };
const OK: AttemptOutcome = { kind: 'accepted', status: 200 };
const acme = singleEndpoint({ name: 'acme', url: 'https://acme.example/hook', policy: DEFAULT_RETRY_POLICY, attemptTimeoutMs: 1_000 });

/** A run of `count` unreachable attempts, the last at `lastAt`. */
const run = (count: number, startedAt = T0, lastAt = T0): UnreachableRun => ({ count, startedAt, lastAt });

describe('Function: extendRun', () => {
  it('starts a run, counts the next one within the window, and starts afresh after a longer gap', () => {
    const first = extendRun(undefined, T0);
    const second = extendRun(first, T0 + BREAKER_WINDOW_MS);
    const late = extendRun(second, T0 + 2 * BREAKER_WINDOW_MS + 1);

    expect([first, second, late]).toEqual([run(1), run(2, T0, T0 + BREAKER_WINDOW_MS), run(1, T0 + 2 * BREAKER_WINDOW_MS + 1, T0 + 2 * BREAKER_WINDOW_MS + 1)]);
  });
});

describe('Function: openSeconds', () => {
  it('opens for as long as the endpoint has gone without an accepted request, at least 5 s and the attempt timeout, at most 5 min', () => {
    const failing = (ago: number): EndpointHealth => ({ failures: 1, failingSince: T0 - ago });

    expect(openSeconds(failing(0), run(3), T0, 1_000)).toBe(BREAKER_MIN_OPEN_SECONDS);
    expect(openSeconds(failing(0), run(3), T0, 10_000)).toBe(10);
    expect(openSeconds(failing(7_200), run(3), T0, 1_000)).toBe(8);
    expect(openSeconds(failing(3_600_000), run(3), T0, 1_000)).toBe(BREAKER_MAX_OPEN_SECONDS);
    // A recovery after the failures began: counted from it.
    expect(openSeconds({ failures: 3, failingSince: T0 - 60_000, lastAcceptedAt: T0 - 20_000 }, run(3), T0, 1_000)).toBe(20);
    // No failure known on the registry yet: this consumer's run.
    expect(openSeconds({ failures: 0 }, run(3, T0 - 30_000), T0, 1_000)).toBe(30);
  });
});

describe('Function: tripped', () => {
  it('is an endpoint paused during its current run of failures, its pause over or not; not one paused before it last recovered', () => {
    expect(tripped({ failures: 2, failingSince: T0, pausedUntil: T0 + 5_000 })).toBe(true);
    expect(tripped({ failures: 2, failingSince: T0 - 60_000, pausedUntil: T0 - 50_000 })).toBe(true);
    expect(tripped({ failures: 0, lastAcceptedAt: T0, pausedUntil: T0 - 1 })).toBe(false);
    expect(tripped({ failures: 1, failingSince: T0, pausedUntil: T0 - 1 })).toBe(false);
    expect(tripped({ failures: 1, failingSince: T0 })).toBe(false);
  });
});

describe('Function: breakerStep', () => {
  const failing: EndpointHealth = { failures: 1, failingSince: T0 };

  it(`records the run's first, counts the next, and opens at the ${BREAKER_FAILURES}rd for the least time`, () => {
    expect(breakerStep(run(1), { failures: 0 }, T0, 1_000)).toEqual({ kind: 'count', record: true });
    expect(breakerStep(run(2), failing, T0, 1_000)).toEqual({ kind: 'count', record: false });
    expect(breakerStep(run(BREAKER_FAILURES), failing, T0, 1_000)).toEqual({ kind: 'open', untilMs: T0 + BREAKER_MIN_OPEN_SECONDS * 1000 });
  });

  it('does nothing more while a pause is in force: the attempt began before it', () => {
    expect(breakerStep(run(7), { ...failing, pausedUntil: T0 + 1 }, T0, 1_000)).toEqual({ kind: 'held' });
  });

  it('re-opens at the first unreachable attempt once the pause has ended (the half-open probe failed), longer', () => {
    const health: EndpointHealth = { failures: 1, failingSince: T0, pausedUntil: T0 + 5_000 };
    const probe = T0 + 6_000;

    expect(breakerStep(run(1, probe, probe), health, probe, 1_000)).toEqual({ kind: 'reopen', untilMs: probe + 6_000 });
  });

  it('grows about twofold per failed probe up to the cap', () => {
    // Every attempt times out after 10 s; each pause's end sends a probe that fails 10 s later.
    const timeoutMs = 10_000;
    let now = T0;
    let health: EndpointHealth = { failures: 1, failingSince: T0 };
    let current = run(BREAKER_FAILURES);
    const pauses: number[] = [];
    for (let i = 0; i < 7; i += 1) {
      const step = breakerStep(current, health, now, timeoutMs);
      if (step.kind !== 'open' && step.kind !== 'reopen') throw new Error(`step ${i}: ${step.kind}`);
      pauses.push((step.untilMs - now) / 1000);
      health = { ...health, pausedUntil: step.untilMs };
      now = step.untilMs + timeoutMs;
      current = extendRun(undefined, now);
    }

    // 10 s (the attempt timeout), then as long as it has been failing: 10 + 10 s of probe, 20 + 20 + 10 s, …
    expect(pauses).toEqual([10, 20, 50, 110, 230, BREAKER_MAX_OPEN_SECONDS, BREAKER_MAX_OPEN_SECONDS]);
  });
});

describe('Class: HealthTracker, the breaker', () => {
  const outage = async (t: ReturnType<typeof tracker>, attempts: number, outcome: AttemptOutcome = TIMEOUT) => {
    await Promise.all(Array.from({ length: attempts }, () => t.health.afterAttempt(acme, outcome, t.logger)));
  };

  it("opens after three unreachable attempts in a row, holds the endpoint at once, and writes one pause carrying the run's first failure", async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const one = tracker(store, clock);

    // A batch of ten deliveries to it, every one timing out together.
    await outage(one, 10);

    expect(one.health.pausedFor('acme')).toBe(BREAKER_MIN_OPEN_SECONDS);
    expect(store.writes).toEqual(['pause acme']);
    expect(store.health.get('acme')).toEqual({ failures: 1, failingSince: T0, pausedUntil: T0 + 5_000 });
    expect(one.lines.filter((l) => l.message === 'endpoint paused')).toEqual([
      expect.objectContaining({ level: 'warn', endpoint: 'acme', why: 'unreachable', breaker: 'open', cause: 'timeout', unreachableInRow: 3, pauseSeconds: 5 }),
    ]);
    // Attempts that began before the pause and end during it write nothing more.
    clock.now = T0 + 1_000;
    await outage(one, 5);
    await one.health.settled();
    expect(store.writes).toHaveLength(1);
  });

  it('counts a refused connection as a timeout is counted, and never an HTTP answer', async () => {
    const store = new MemoryHealthStore();
    const t = tracker(store, { now: T0 });

    await outage(t, 2, REFUSED);
    await t.health.afterAttempt(acme, { kind: 'temporary', status: 503 }, t.logger);
    await outage(t, 2, REFUSED);

    // 503 broke the run: four refused connections, never three in a row. The first run's first is
    // counted, and written with the 503 (a run's first HTTP failure, at once); the second run's first
    // is counted for the next write, which the pause that opens the breaker makes.
    expect(t.health.pausedFor('acme')).toBe(0);
    expect(store.writes).toEqual(['failure ×2 acme']);
    expect(t.health.current('acme').failures).toBe(3);
    await outage(t, 1, REFUSED);
    expect(t.health.pausedFor('acme')).toBe(BREAKER_MIN_OPEN_SECONDS);
    expect(store.writes).toEqual(['failure ×2 acme', 'pause acme']);
    expect(store.health.get('acme')?.failures).toBe(3);
  });

  /** Two consumers: the first opens the breaker with a batch's three timeouts, then the second sees its first (a batch of one). */
  const twoConsumers = async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const one = tracker(store, clock);
    const two = tracker(store, clock);
    await outage(one, 3);
    await outage(two, 1);
    await two.health.settled();
    return { store, clock, one, two };
  };

  it("another consumer adopts the pause from the item its first failure's write returns (at its batch's end), and writes no pause of its own", async () => {
    const { store, two } = await twoConsumers();

    expect(two.health.pausedFor('acme')).toBe(BREAKER_MIN_OPEN_SECONDS);
    expect(store.writes).toEqual(['pause acme', 'failure acme']);
  });

  it('re-opens for longer when the probe after the pause fails, and one consumer writes the re-open', async () => {
    const { store, clock, one, two } = await twoConsumers();
    store.writes.length = 0;

    // The pause ends: the next attempts are the probe; each consumer's fails after its 1-s timeout.
    clock.now = T0 + 5_000;
    expect([one.health.pausedFor('acme'), two.health.pausedFor('acme')]).toEqual([0, 0]);
    clock.now = T0 + 6_000;
    await outage(one, 1);
    clock.now = T0 + 6_100;
    await outage(two, 1);

    // Failing since T0, 6 s ago: paused 6 s more, written once.
    expect(store.health.get('acme')?.pausedUntil).toBe(T0 + 12_000);
    expect(store.writes).toEqual(['failure acme', 'pause acme', 'failure acme']);
    expect(two.health.pausedFor('acme')).toBe(6);
    expect(one.lines.filter((l) => l.message === 'endpoint paused').map((l) => [l.breaker, l.pauseSeconds])).toEqual([
      ['open', 5],
      ['reopen', 6],
    ]);
  });

  it('lets one consumer probe once the pause ends: its deliveries share one claim, the others hold until the probe is over, then take the re-open from the item', async () => {
    const { store, clock, one, two } = await twoConsumers();
    store.writes.length = 0;

    // The pause ends; a batch of three deliveries to it in one, one in two.
    clock.now = T0 + 5_000;
    expect(await Promise.all([1, 2, 3].map(() => one.health.admit(acme, one.logger)))).toEqual([0, 0, 0]);
    // Held for the probe's attempt timeout (1 s) and PROBE_MARGIN_MS.
    expect(await two.health.admit(acme, two.logger)).toBe(1 + PROBE_MARGIN_MS / 1000);
    expect(store.writes).toEqual(['probe acme', 'probe acme']);
    expect(store.health.get('acme')?.probeUntil).toBe(T0 + 5_000 + 1_000 + PROBE_MARGIN_MS);

    // The probe times out: re-opened (failing since T0, 6 s), written by the prober alone.
    clock.now = T0 + 6_000;
    await outage(one, 3);
    expect(store.health.get('acme')?.pausedUntil).toBe(T0 + 12_000);

    // two's hold is over: the item it asks shows the re-open, held until then.
    clock.now = T0 + 8_000;
    expect(await two.health.admit(acme, two.logger)).toBe(4);
    expect(two.health.pausedFor('acme')).toBe(4);
    expect(store.writes).toEqual(['probe acme', 'probe acme', 'failure acme', 'pause acme', 'probe acme']);
    expect(one.lines.filter((l) => l.message === 'endpoint probing')).toEqual([expect.objectContaining({ endpoint: 'acme' })]);
    expect(two.lines.filter((l) => l.message === 'endpoint probing')).toEqual([]);
  });

  it('lets a held consumer take the recovery from the item once the probe is accepted, and deliver', async () => {
    const { store, clock, one, two } = await twoConsumers();
    clock.now = T0 + 5_000;
    expect(await one.health.admit(acme, one.logger)).toBe(0);
    expect(await two.health.admit(acme, two.logger)).toBeGreaterThan(0);

    clock.now = T0 + 5_500;
    await one.health.afterAttempt(acme, OK, one.logger);

    clock.now = T0 + 8_000;
    expect(await two.health.admit(acme, two.logger)).toBe(0);
    expect(tripped(two.health.current('acme'))).toBe(false);
    expect(store.health.get('acme')).toEqual({ failures: 0, pausedUntil: T0 + 5_000, lastAcceptedAt: T0 + 5_500 });
  });

  it('gives the probe to another consumer when the prober never reports (its claim lapses)', async () => {
    const { clock, one, two } = await twoConsumers();
    clock.now = T0 + 5_000;
    expect(await one.health.admit(acme, one.logger)).toBe(0);

    clock.now = T0 + 5_000 + 1_000 + PROBE_MARGIN_MS;
    expect(await two.health.admit(acme, two.logger)).toBe(0);
    expect(two.lines.filter((l) => l.message === 'endpoint probing')).toHaveLength(1);
  });

  it('lets the delivery go when the claim cannot be written, and logs the write', async () => {
    const { store, clock, one } = await twoConsumers();
    clock.now = T0 + 5_000;
    store.fail = true;

    expect(await one.health.admit(acme, one.logger)).toBe(0);
    expect(one.lines.filter((l) => l.message === 'endpoint health write failed')).toEqual([
      expect.objectContaining({ level: 'warn', endpoint: 'acme', write: 'probe' }),
    ]);
  });

  it('closes when the probe is accepted: the recovery written once, and the next timeouts start a new run of three', async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const t = tracker(store, clock);
    await outage(t, 3);

    // A probe batch of three, all accepted at once; then one more.
    clock.now = T0 + 5_200;
    await outage(t, 3, OK);
    await t.health.afterAttempt(acme, OK, t.logger);
    clock.now = T0 + 6_000;
    await outage(t, 2);
    await t.health.settled();

    expect(store.writes).toEqual(['pause acme', 'recovery acme', 'failure acme']);
    expect(t.health.pausedFor('acme')).toBe(0);
    expect(t.lines.filter((l) => l.message === 'endpoint recovered')).toEqual([
      expect.objectContaining({ level: 'info', endpoint: 'acme', failures: 1, since: '2026-12-04T10:00:00.000Z' }),
    ]);
    await outage(t, 1);
    expect(t.health.pausedFor('acme')).toBe(BREAKER_MIN_OPEN_SECONDS);
  });

  it('starts a new run when unreachable attempts are further apart than the window: each is written, none opens', async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const t = tracker(store, clock);

    for (let i = 0; i < 4; i += 1) {
      clock.now = T0 + i * (BREAKER_WINDOW_MS + 1);
      await outage(t, 1);
      await t.health.settled();
    }

    expect(t.health.pausedFor('acme')).toBe(0);
    expect(store.writes).toEqual(['failure acme', 'failure acme', 'failure acme', 'failure acme']);
  });

  it('still disables automatically in a long outage: each failed probe is counted', async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const t = tracker(store, clock);
    const strict = { ...acme, disableAfterFailures: 4, disableAfterSeconds: 60 };

    await Promise.all(Array.from({ length: 3 }, () => t.health.afterAttempt(strict, TIMEOUT, t.logger)));
    while (store.state.get('acme') === undefined && clock.now < T0 + 600_000) {
      clock.now = store.health.get('acme')!.pausedUntil! + 1_000;
      await t.health.afterAttempt(strict, TIMEOUT, t.logger);
    }

    expect(store.state.get('acme')?.change).toEqual({
      by: 'handoff',
      // The failures are the run's first and one per failed probe: 6 by the time it had failed for 60 s.
      reason: 'no accepted request for 111 s and 6 failed attempts (autoDisable: 60 s and 4 attempts)',
      at: clock.now,
    });
  });

  it('keeps the counts a flush in flight does not carry when the breaker opens meanwhile, for the next flush', async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const t = tracker(store, clock);
    let release!: () => void;
    const slowFlush = new Promise<void>((resolve) => (release = resolve));
    const recordFailure = store.recordFailure.bind(store);
    store.recordFailure = async (name, nowMs, count) => {
      await slowFlush;
      return recordFailure(name, nowMs, count);
    };

    // A 503 begins the run (its flush held in flight); then three timeouts open the breaker.
    const flushing = t.health.afterAttempt(acme, { kind: 'temporary', status: 503 }, t.logger);
    await outage(t, 3);
    release();
    await flushing;
    clock.now = T0 + 1_000;
    await t.health.settled();

    // In the order they landed: the pause (carrying nothing: a flush was in flight), the 503's flush,
    // then a second on the timeouts' run's first, kept for it.
    expect(store.writes).toEqual(['pause acme', 'failure acme', 'failure acme']);
    expect(store.health.get('acme')?.failures).toBe(2);
  });

  it('holds the endpoint here when the pause cannot be written, and logs the write', async () => {
    const store = new MemoryHealthStore();
    const t = tracker(store, { now: T0 });
    store.fail = true;

    await outage(t, 3);

    expect(t.health.pausedFor('acme')).toBe(BREAKER_MIN_OPEN_SECONDS);
    // The pause, which carried the run's first failure: counted still, for the next write.
    expect(t.lines.filter((l) => l.message === 'endpoint health write failed').map((l) => String(l.write))).toEqual(['pause']);
    expect(t.health.current('acme').failures).toBe(1);
  });
});
