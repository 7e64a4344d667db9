/**
 * The retry policy as data and the pure functions over it (docs/contract.md §4): waits per attempt, what a
 * receiver's Retry-After may change, and the version that ledger rows record.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_POLICY,
  MAX_WAIT_SECONDS,
  hasAttemptsLeft,
  nextWaitSeconds,
  parseRetryAfter,
  retryPolicy,
} from '../../lib/policy';

const NOW_MS = Date.parse('2026-12-02T10:15:00Z');

describe('Constant: DEFAULT_RETRY_POLICY', () => {
  it('is 6 attempts with waits of 30 s, 2 min, 10 min, 30 min and 2 h', () => {
    expect(DEFAULT_RETRY_POLICY.maxAttempts).toBe(6);
    expect(DEFAULT_RETRY_POLICY.waitsSeconds).toEqual([30, 120, 600, 1800, 7200]);
  });

  it('keeps its version: ledger rows already store it', () => {
    expect(DEFAULT_RETRY_POLICY.version).toBe('p-564ad93a');
  });
});

describe('Function: retryPolicy', () => {
  it('gives equal schedules one version', () => {
    expect(retryPolicy(6, [30, 120, 600, 1800, 7200]).version).toBe(DEFAULT_RETRY_POLICY.version);
  });

  it('gives a different version when the waits or the attempt budget differ', () => {
    const versions = new Set([
      DEFAULT_RETRY_POLICY.version,
      retryPolicy(6, [30, 120, 600, 1800, 7201]).version,
      retryPolicy(7, [30, 120, 600, 1800, 7200]).version,
      retryPolicy(6, [30, 120, 600, 1800]).version,
    ]);
    expect(versions.size).toBe(4);
  });

  it('keeps its own copy of the waits', () => {
    const waits = [1, 2, 3];
    const policy = retryPolicy(4, waits);

    waits[0] = 999;

    expect(policy.waitsSeconds).toEqual([1, 2, 3]);
  });

  it('accepts waits from 0 to 12 h', () => {
    expect(retryPolicy(1, [0, MAX_WAIT_SECONDS]).waitsSeconds).toEqual([0, 43_200]);
  });

  it.each([0, -1, 1.5, Number.NaN])('throws when maxAttempts is %s', (maxAttempts) => {
    expect(() => retryPolicy(maxAttempts, [30])).toThrow(RangeError);
  });

  it.each([[[]], [[-1]], [[1.5]], [[MAX_WAIT_SECONDS + 1]], [[30, Number.NaN]]])(
    'throws when the waits are %j',
    (waits) => {
      expect(() => retryPolicy(6, waits)).toThrow(RangeError);
    },
  );
});

describe('Function: nextWaitSeconds', () => {
  it.each([
    [1, 30],
    [2, 120],
    [3, 600],
    [4, 1800],
    [5, 7200],
  ])('waits per the schedule after attempt %i: %i s', (attemptsMade, waitSeconds) => {
    expect(nextWaitSeconds(DEFAULT_RETRY_POLICY, attemptsMade)).toBe(waitSeconds);
  });

  it('repeats the last wait past the end of the schedule', () => {
    expect(nextWaitSeconds(DEFAULT_RETRY_POLICY, 6)).toBe(7200);
    expect(nextWaitSeconds(DEFAULT_RETRY_POLICY, 50)).toBe(7200);
  });

  it('treats attempt 0 like the first attempt', () => {
    expect(nextWaitSeconds(DEFAULT_RETRY_POLICY, 0)).toBe(30);
  });

  it('lets a longer Retry-After lengthen the wait', () => {
    expect(nextWaitSeconds(DEFAULT_RETRY_POLICY, 1, 90)).toBe(90);
  });

  it('never lets a Retry-After shorten the wait', () => {
    expect(nextWaitSeconds(DEFAULT_RETRY_POLICY, 2, 5)).toBe(120);
    expect(nextWaitSeconds(DEFAULT_RETRY_POLICY, 2, 0)).toBe(120);
  });

  it('caps the wait at the queue’s 12 h visibility limit', () => {
    expect(nextWaitSeconds(DEFAULT_RETRY_POLICY, 1, 86_400)).toBe(43_200);
  });
});

describe('Function: hasAttemptsLeft', () => {
  it('allows attempts up to the budget and none beyond', () => {
    expect(hasAttemptsLeft(DEFAULT_RETRY_POLICY, 0)).toBe(true);
    expect(hasAttemptsLeft(DEFAULT_RETRY_POLICY, 5)).toBe(true);
    expect(hasAttemptsLeft(DEFAULT_RETRY_POLICY, 6)).toBe(false);
  });
});

describe('Function: parseRetryAfter', () => {
  it('returns undefined without a header', () => {
    expect(parseRetryAfter(undefined, NOW_MS)).toBeUndefined();
  });

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('120', NOW_MS)).toBe(120);
    expect(parseRetryAfter(' 0 ', NOW_MS)).toBe(0);
  });

  it.each([
    ['caps delay-seconds at 12 h', '999999999', NOW_MS, 43_200],
    ['reads an HTTP-date as seconds from now', 'Wed, 02 Dec 2026 10:17:00 GMT', NOW_MS, 120],
    ['rounds a part second up, so the wait is never shorter than asked', 'Wed, 02 Dec 2026 10:17:00 GMT', NOW_MS + 400, 120],
    ['reads the obsolete HTTP-date forms', 'Wednesday, 02-Dec-26 10:17:00 GMT', NOW_MS, 120],
    ['reads a date in the past as no wait', 'Wed, 02 Dec 2026 10:00:00 GMT', NOW_MS, 0],
    ['caps a far-future date at 12 h', 'Fri, 01 Jan 2027 00:00:00 GMT', NOW_MS, 43_200],
    ['reads the asctime form', 'Wed Dec  2 10:17:00 2026', NOW_MS, 120],
  ])('%s', (_case, header, nowMs, seconds) => {
    expect(parseRetryAfter(header, nowMs)).toBe(seconds);
  });

  it.each(['', 'soon', 'in a minute', '12abc', '1e3', '0x10', '1.5', '-5', 'Friday 2030'])('ignores the unreadable value "%s"', (header) => {
    expect(parseRetryAfter(header, NOW_MS)).toBeUndefined();
  });
});
