/**
 * The pure parts of releasing parked deliveries (lib/resume.ts, docs/contract.md §12 "Parking"):
 * the ramp's rate (an eighth of the release's rate at first, at least 1 per second, doubling every
 * minute, capped at the rate), the slots a window holds at that ramp, and the sweep that shares
 * the check for stray parked deliveries out over the runs.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RESUME_RATE, MAX_HORIZON_MS, rampRate, slotsIn, StraySweep, straySweepPerRun } from '../../lib/resume';

const SINCE = Date.parse('2026-12-03T06:00:00Z');
const MINUTE_MS = 60_000;

describe('Function: rampRate', () => {
  it('starts at an eighth of the rate and doubles every minute, up to the rate', () => {
    const resume = { since: SINCE, rate: 80 };

    expect([0, 1, 2, 3, 4, 10].map((m) => rampRate(resume, SINCE + m * MINUTE_MS))).toEqual([10, 20, 40, 80, 80, 80]);
  });

  it('keeps the rate of a step for the whole minute', () => {
    const resume = { since: SINCE, rate: 80 };

    expect(rampRate(resume, SINCE + MINUTE_MS - 1)).toBe(10);
    expect(rampRate(resume, SINCE + 2 * MINUTE_MS - 1)).toBe(20);
  });

  it('starts at 1 per second when an eighth of the rate is less', () => {
    expect(rampRate({ since: SINCE, rate: 4 }, SINCE)).toBe(1);
    expect(rampRate({ since: SINCE, rate: 4 }, SINCE + MINUTE_MS)).toBe(2);
    expect(rampRate({ since: SINCE, rate: 4 }, SINCE + 2 * MINUTE_MS)).toBe(4);
    expect(rampRate({ since: SINCE, rate: 1 }, SINCE)).toBe(1);
  });

  it('with the default rate: 2.5, 5, 10, then 20 per second', () => {
    const resume = { since: SINCE, rate: DEFAULT_RESUME_RATE };

    expect([0, 1, 2, 3].map((m) => rampRate(resume, SINCE + m * MINUTE_MS))).toEqual([2.5, 5, 10, 20]);
  });

  it('is the starting rate before the release began (a clock behind the one that wrote since)', () => {
    expect(rampRate({ since: SINCE, rate: 80 }, SINCE - 5 * MINUTE_MS)).toBe(10);
  });

  it('stays at the rate days later (the doubling is capped, never overflowing)', () => {
    expect(rampRate({ since: SINCE, rate: 1000 }, SINCE + 30 * 24 * 60 * MINUTE_MS)).toBe(1000);
  });
});

describe('Function: slotsIn', () => {
  it('lays slots 1/rate apart from the window start, the start included, the end excluded', () => {
    const resume = { since: SINCE, rate: 16 }; // 2 per second in the first minute

    expect(slotsIn(resume, SINCE, SINCE + 3000).slots).toEqual([SINCE, SINCE + 500, SINCE + 1000, SINCE + 1500, SINCE + 2000, SINCE + 2500]);
  });

  it('holds rampRate × seconds slots in a window within one step', () => {
    const resume = { since: SINCE, rate: 80 }; // 10/s, 20/s, 40/s, 80/s

    expect(slotsIn(resume, SINCE, SINCE + 10_000).slots).toHaveLength(100);
    expect(slotsIn(resume, SINCE + MINUTE_MS, SINCE + MINUTE_MS + 10_000).slots).toHaveLength(200);
    expect(slotsIn(resume, SINCE + 5 * MINUTE_MS, SINCE + 5 * MINUTE_MS + 10_000).slots).toHaveLength(800);
  });

  it('follows the ramp across a step: a minute at each rate, then the rate', () => {
    const resume = { since: SINCE, rate: 80 };

    const { slots } = slotsIn(resume, SINCE, SINCE + 5 * MINUTE_MS);

    // 60 s at 10/s, 20/s, 40/s, then 2 minutes at 80/s.
    expect(slots).toHaveLength(600 + 1200 + 2400 + 2 * 4800);
    const inMinute = (m: number) => slots.filter((t) => t >= SINCE + m * MINUTE_MS && t < SINCE + (m + 1) * MINUTE_MS).length;
    expect([0, 1, 2, 3, 4].map(inMinute)).toEqual([600, 1200, 2400, 4800, 4800]);
  });

  it('gives increasing whole-ms slots inside the window', () => {
    const resume = { since: SINCE, rate: 30 }; // 3.75/s: gaps of 266.67 ms, floored
    const from = SINCE + 7_777;
    const to = from + 20_000;

    const { slots } = slotsIn(resume, from, to);

    expect(slots[0]).toBe(from);
    expect(slots.every((t) => Number.isInteger(t) && t >= from && t < to)).toBe(true);
    expect(slots.every((t, i) => i === 0 || t > slots[i - 1]!)).toBe(true);
    expect(slots).toHaveLength(75); // 20 s × 3.75
  });

  it('ends where the next slot would be, so back-to-back short windows keep the spacing', () => {
    const resume = { since: SINCE, rate: 8 }; // 1/s in the first minute

    // Twenty windows of 500 ms, each starting where the last ended or now, whichever is later.
    const taken: number[] = [];
    let until = SINCE;
    for (let now = SINCE; now < SINCE + 10_000; now += 500) {
      const window = slotsIn(resume, Math.max(now, until), now + 500);
      taken.push(...window.slots);
      if (window.slots.length > 0) until = window.end;
    }

    expect(taken).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((s) => SINCE + s * 1000));
  });

  it('is empty for an empty window', () => {
    expect(slotsIn({ since: SINCE, rate: 20 }, SINCE + 1000, SINCE + 1000).slots).toEqual([]);
    expect(slotsIn({ since: SINCE, rate: 20 }, SINCE + 2000, SINCE + 1000).slots).toEqual([]);
  });

  it("holds at most rate × SQS's longest delay in the longest horizon", () => {
    const resume = { since: SINCE, rate: 20 };
    const from = SINCE + 10 * MINUTE_MS; // past the ramp

    expect(slotsIn(resume, from, from + MAX_HORIZON_MS).slots).toHaveLength(20 * (MAX_HORIZON_MS / 1000));
  });
});

describe('Class: StraySweep', () => {
  it('takes the next names in name order each run, wrapping around, each once a sweep', () => {
    const sweep = new StraySweep(2);
    const names = ['d', 'b', 'a', 'c', 'e'];

    expect([sweep.take(names), sweep.take(names), sweep.take(names), sweep.take(names)]).toEqual([['a', 'b'], ['c', 'd'], ['e', 'a'], ['b', 'c']]);
  });

  it('shares 100 endpoints a minute out over the runs: the recovery function\'s every 5 minutes, the sandbox\'s every 5 s', () => {
    expect(straySweepPerRun(5 * MINUTE_MS)).toBe(500);
    expect(straySweepPerRun(5_000)).toBe(9);
    expect(straySweepPerRun(100)).toBe(1);
  });

  it('goes on after the last name it took when names come and go', () => {
    const sweep = new StraySweep(2);

    expect(sweep.take(['a', 'b', 'c'])).toEqual(['a', 'b']);
    expect(sweep.take(['a', 'c', 'd'])).toEqual(['c', 'd']);
    expect(sweep.take([])).toEqual([]);
    expect(sweep.take(['a'])).toEqual(['a']);
  });
});
