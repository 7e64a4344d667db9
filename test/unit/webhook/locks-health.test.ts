/**
 * What the sender's outcomes for receivers behind locks (docs/contract.md §18) do to endpoint health
 * (§12): no token (`auth`) and the proxy's refusal (`proxy`), with or without the other server's
 * status, are failed attempts, counted toward automatic disabling, but not the receiver's silence, so
 * however many in a row they never open the circuit breaker; nor the receiver's answer: a 429 of
 * theirs never pauses the endpoint, and one between the receiver's timeouts does not end their run.
 */
import { describe, expect, it } from 'vitest';
import type { AttemptOutcome } from '../../../lib/outcome';
import { DEFAULT_RETRY_POLICY } from '../../../lib/policy';
import { singleEndpoint } from '../../../lib/routing';
import { MemoryHealthStore, tracker } from '../../helpers/health';

const T0 = Date.parse('2026-12-05T08:00:00Z');
const acme = singleEndpoint({ name: 'acme', url: 'https://acme.example/hook', policy: DEFAULT_RETRY_POLICY, attemptTimeoutMs: 1_000 });

describe.each<[string, AttemptOutcome]>([
  ['no token, the token endpoint answering 500', { kind: 'temporary', cause: 'auth', status: 500 }],
  ['no token, the token endpoint unreachable', { kind: 'temporary', cause: 'auth' }],
  ['the proxy refusing the tunnel (407)', { kind: 'temporary', cause: 'proxy', status: 407 }],
  ['the proxy unreachable', { kind: 'temporary', cause: 'proxy' }],
  // Another server's 429 (or 503 with Retry-After) is not the receiver asking for less: no pause.
  ['no token, the token endpoint answering 429', { kind: 'temporary', cause: 'auth', status: 429 }],
  ['no token, the token endpoint answering 503 with Retry-After', { kind: 'temporary', cause: 'auth', status: 503, retryAfterSeconds: 60 }],
  ['the proxy answering 429', { kind: 'temporary', cause: 'proxy', status: 429 }],
])('endpoint health after %s', (_, outcome) => {
  it('counts each attempt as failed and never opens the breaker', async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const t = tracker(store, clock);

    for (let i = 0; i < 6; i++) {
      await t.health.afterAttempt(acme, outcome, t.logger);
      clock.now += 2_000; // past the flush interval: each addition written
    }
    await t.health.settled();

    expect(t.health.pausedFor('acme')).toBe(0);
    expect(store.writes.every((write) => write.startsWith('failure'))).toBe(true);
    expect(store.health.get('acme')).toMatchObject({ failures: 6, failingSince: T0 });
    expect(store.health.get('acme')?.pausedUntil).toBeUndefined();
  });

  it('neither ends nor extends a run of unreachable attempts: the receiver’s third timeout around it opens the breaker', async () => {
    const store = new MemoryHealthStore();
    const t = tracker(store, { now: T0 });
    const timeout: AttemptOutcome = { kind: 'unknown', cause: 'timeout' };

    await t.health.afterAttempt(acme, timeout, t.logger);
    await t.health.afterAttempt(acme, timeout, t.logger);
    await t.health.afterAttempt(acme, outcome, t.logger);
    expect(t.health.pausedFor('acme')).toBe(0);
    await t.health.afterAttempt(acme, timeout, t.logger);

    expect(t.health.pausedFor('acme')).toBeGreaterThan(0);
    expect(t.lines.filter((l) => l.message === 'endpoint paused')).toEqual([expect.objectContaining({ breaker: 'open', unreachableInRow: 3 })]);
  });
});
