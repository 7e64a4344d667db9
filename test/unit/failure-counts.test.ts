/**
 * FailureCounts (lib/endpoints/failure-counts.ts): a consumer's failed attempts per endpoint before
 * they are written. What waits, what a flush in flight adds, when the next flush is due, and counts a
 * write did not take coming back; no write made here.
 */
import { describe, expect, it } from 'vitest';
import { FailureCounts } from '../../lib/endpoints/failure-counts';
import { FLUSH_INTERVAL_MS } from '../../lib/endpoints/health-rules';
import { createLogger } from '../../lib/observability';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { singleEndpoint } from '../../lib/routing';

const T0 = Date.parse('2026-12-04T22:00:00Z');
const acme = singleEndpoint({ name: 'acme', url: 'https://acme.example/hook', policy: DEFAULT_RETRY_POLICY, attemptTimeoutMs: 1_000 });
const logger = createLogger({ service: 'handoff', write: () => {} });

describe('Class: FailureCounts', () => {
  it('adds what waits and what a flush in flight is writing over the known health, the run begun at the first', async () => {
    const counts = new FailureCounts();
    counts.add(acme, T0, logger);
    counts.add(acme, T0 + 10, logger);
    let finish!: () => void;
    const written = counts.flush('acme', T0 + 20, () => new Promise((resolve) => (finish = () => resolve(undefined))));
    counts.add(acme, T0 + 30, logger);

    expect(counts.over('acme', { failures: 5 })).toEqual({ failures: 8, failingSince: T0 });
    expect(counts.inFlight('acme')).toBe(written);
    finish();
    counts.flushed('acme');
    expect(counts.over('acme', { failures: 7, failingSince: T0 - 1_000 })).toEqual({ failures: 8, failingSince: T0 - 1_000 });
  });

  it('makes a flush due a second after the last began, never while one is in flight', () => {
    const counts = new FailureCounts();
    counts.add(acme, T0, logger);
    expect(counts.due('acme', T0)).toBe(true);

    void counts.flush('acme', T0, () => Promise.resolve(undefined));
    counts.add(acme, T0 + 1, logger);
    expect(counts.due('acme', T0 + FLUSH_INTERVAL_MS)).toBe(false);
    counts.flushed('acme');

    expect(counts.dueNow(T0 + FLUSH_INTERVAL_MS - 1)).toEqual([]);
    expect(counts.dueNow(T0 + FLUSH_INTERVAL_MS).map((c) => [c.endpoint.name, c.count])).toEqual([['acme', 1]]);
  });

  it('takes what waits for another write only when no flush is in flight, and takes back what a write did not take', () => {
    const counts = new FailureCounts();
    counts.add(acme, T0, logger);
    counts.add(acme, T0 + 5, logger);
    const taken = counts.take('acme')!;
    counts.add(acme, T0 + 9, logger);

    counts.putBack(taken);

    expect(taken.count).toBe(2);
    expect(counts.over('acme', { failures: 0 })).toEqual({ failures: 3, failingSince: T0 });
    void counts.flush('acme', T0 + 10, () => Promise.resolve(undefined));
    counts.add(acme, T0 + 11, logger);
    expect(counts.take('acme')).toBeUndefined();
    counts.drop('acme');
    expect(counts.over('acme', { failures: 0 })).toEqual({ failures: 3, failingSince: T0 });
  });
});
