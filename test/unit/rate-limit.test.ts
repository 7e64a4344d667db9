import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BlockRateLimiter,
  MemoryRateLimiter,
  RATE_HORIZON_MS,
  reserveOn,
  slotIntervalMs,
  slotsFrom,
  slotsWithin,
  spanMs,
  waitForHorizon,
} from '../../lib/endpoints/rate-limit';

const NOW = Date.parse('2026-12-03T08:00:00Z');

/** Microseconds between two schedule values (ms to three decimals), exact. */
const microsBetween = (from: number, to: number) => Math.round((to - from) * 1000);

/** The most slots in any window of `windowMs` (half-open), over ascending slots. */
function mostInWindow(slots: readonly number[], windowMs: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < slots.length; end++) {
    while (microsBetween(slots[start]!, slots[end]!) >= windowMs * 1000) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

describe('Function: reserveOn', () => {
  it("starts an idle endpoint's slots now, 1000/rate ms apart, and moves its next free slot past them", () => {
    const { reservation, next } = reserveOn(undefined, 3, 5, NOW);

    expect(reservation).toEqual({ slots: [NOW, NOW + 200, NOW + 400] });
    expect(next).toBe(NOW + 600);
  });

  it('starts after the last reservation while the schedule is booked, and at now once it is free again', () => {
    const first = reserveOn(undefined, 10, 50, NOW);
    const booked = reserveOn(first.next, 2, 50, NOW + 50);
    const free = reserveOn(booked.next, 1, 50, NOW + 5_000);

    expect(booked.reservation.slots).toEqual([NOW + 200, NOW + 220]);
    expect(booked.next).toBe(NOW + 240);
    // No credit for the idle time: a free schedule's first slot is now, never earlier.
    expect(free.reservation.slots).toEqual([NOW + 5_000]);
  });

  it('rounds a fractional interval up to the microsecond, so a limit of 3 never gets a 4th slot within a second', () => {
    const { reservation, next } = reserveOn(undefined, 4, 3, NOW);

    expect(reservation.slots).toEqual([NOW, NOW + 333.334, NOW + 666.668, NOW + 1000.002]);
    expect(next).toBe(NOW + 1333.336);
  });

  it('reserves only the slots within the horizon and says how long until the next would come within it', () => {
    // 1 per second, 2.5 s horizon: slots at +0, +1 s, +2 s fit; the 4th (+3 s) is 0.5 s beyond.
    const { reservation, next } = reserveOn(undefined, 5, 1, NOW, 2_500);

    expect(reservation).toEqual({ slots: [NOW, NOW + 1_000, NOW + 2_000], waitMs: 500 });
    expect(next).toBe(NOW + 3_000);
  });

  it('reserves nothing and leaves the schedule as it is when its next free slot is beyond the horizon', () => {
    const { reservation, next } = reserveOn(NOW + 70_000, 10, 5, NOW);

    expect(reservation).toEqual({ slots: [], waitMs: 70_000 - RATE_HORIZON_MS });
    expect(next).toBe(NOW + 70_000);
  });

  it('refuses a count or a rate that is not a whole number from 1', () => {
    expect(() => reserveOn(undefined, 0, 5, NOW)).toThrow(/count must be a whole number from 1, got 0/);
    expect(() => reserveOn(undefined, 1, 0.5, NOW)).toThrow(/perSecond must be a whole number from 1, got 0.5/);
  });

  it('never hands out overlapping slots, nor more than the rate in any second, nor a slot before its request or beyond the horizon', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.array(fc.record({ count: fc.integer({ min: 1, max: 25 }), advanceMs: fc.integer({ min: 0, max: 3_000 }) }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1_000, max: 20_000 }),
        (perSecond, requests, horizonMs) => {
          let next: number | undefined;
          let now = NOW;
          const all: number[] = [];
          for (const { count, advanceMs } of requests) {
            now += advanceMs;
            const result = reserveOn(next, count, perSecond, now, horizonMs);
            const { slots, waitMs } = result.reservation;
            expect(slots.length).toBeLessThanOrEqual(count);
            expect(waitMs === undefined).toBe(slots.length === count);
            for (const slot of slots) {
              expect(slot).toBeGreaterThanOrEqual(now);
              expect(slot).toBeLessThanOrEqual(now + horizonMs);
            }
            next = result.next;
            all.push(...slots);
          }
          for (let i = 1; i < all.length; i++) expect(microsBetween(all[i - 1]!, all[i]!)).toBeGreaterThanOrEqual(microsBetween(0, slotIntervalMs(perSecond)));
          expect(mostInWindow(all, 1000)).toBeLessThanOrEqual(perSecond);
        },
      ),
    );
  });
});

describe('Slot arithmetic', () => {
  it('spaces slots 1000/rate ms apart and counts those within the horizon', () => {
    expect(slotsFrom(NOW, 3, 4)).toEqual([NOW, NOW + 250, NOW + 500]);
    expect(spanMs(3, 4)).toBe(750);
    expect(slotsWithin(NOW, 10, 4, NOW, 1_000)).toBe(5);
    expect(slotsWithin(NOW + 1_001, 10, 4, NOW, 1_000)).toBe(0);
    expect(waitForHorizon(NOW + 1_500, NOW, 1_000)).toBe(500);
    expect(waitForHorizon(NOW + 500, NOW, 1_000)).toBe(0);
  });
});

describe('Class: MemoryRateLimiter', () => {
  it('keeps one schedule per endpoint', async () => {
    const limiter = new MemoryRateLimiter();

    const a = await limiter.reserve('acme', 2, 10, NOW);
    const b = await limiter.reserve('zephyr', 1, 10, NOW);
    const c = await limiter.reserve('acme', 1, 10, NOW);

    expect(a.slots).toEqual([NOW, NOW + 100]);
    expect(b.slots).toEqual([NOW]);
    expect(c.slots).toEqual([NOW + 200]);
    expect(limiter.nextFree('acme')).toBe(NOW + 300);
  });
});

describe('Class: BlockRateLimiter', () => {
  /** The shared schedule, counting each consumer's reservations on it per second. */
  function sharedSchedule() {
    const schedule = new MemoryRateLimiter();
    const writes: string[] = [];
    const consumer = (id: string) =>
      new BlockRateLimiter({
        reserve: (endpoint, count, perSecond, nowMs) => {
          writes.push(`${id} ${Math.floor((nowMs - NOW) / 1000)}`);
          return schedule.reserve(endpoint, count, perSecond, nowMs);
        },
      });
    /** The most writes one consumer made in one second, from second `from` on. */
    const mostPerSecond = (from = 0) => {
      const counted = writes.filter((w) => Number(w.split(' ')[1]) >= from);
      return Math.max(...[...new Set(counted)].map((w) => counted.filter((x) => x === w).length));
    };
    return { consumer, writes, mostPerSecond };
  }

  it("reserves a first batch's slots and half a second of the limit more at once, handing them out to the next batches", async () => {
    const { consumer, writes } = sharedSchedule();
    const limiter = consumer('a');

    const first = await limiter.reserve('acme', 3, 100, NOW);
    const second = await limiter.reserve('acme', 3, 100, NOW + 5);
    const third = await limiter.reserve('acme', 3, 100, NOW + 10);

    // 3 asked at once, no demand learnt yet: half a second of the limit, 50 reserved, 47 kept.
    expect(first.slots).toEqual([NOW, NOW + 10, NOW + 20]);
    expect(second.slots).toEqual([NOW + 30, NOW + 40, NOW + 50]);
    expect(third.slots).toEqual([NOW + 60, NOW + 70, NOW + 80]);
    expect(writes).toHaveLength(1);
  });

  it('drops slots that passed unused, never handing one out late', async () => {
    const { consumer } = sharedSchedule();
    const limiter = consumer('a');
    await limiter.reserve('acme', 5, 10, NOW);
    await limiter.reserve('acme', 5, 10, NOW + 1);

    const later = await limiter.reserve('acme', 2, 10, NOW + 1_150);

    expect(later.slots.every((slot) => slot >= NOW + 1_150)).toBe(true);
  });

  it('writes the schedule about once a second per consumer at the limit, and hands out no slot twice, early, nor more than the rate in any second', async () => {
    // Four consumers, each a batch of 10 every 40 ms (1,000 a second in all) for 10 s, at a limit of 1,000.
    const { consumer, writes, mostPerSecond } = sharedSchedule();
    const consumers = ['a', 'b', 'c', 'd'].map(consumer);
    const handed: number[] = [];
    for (let tick = 0; tick < 250; tick++) {
      const now = NOW + tick * 40;
      for (const limiter of consumers) {
        const { slots } = await limiter.reserve('acme', 10, 1_000, now);
        for (const slot of slots) expect(slot).toBeGreaterThanOrEqual(now);
        handed.push(...slots);
      }
    }

    const sorted = [...handed].sort((x, y) => x - y);
    expect(new Set(sorted).size).toBe(sorted.length);
    expect(mostInWindow(sorted, 1000)).toBeLessThanOrEqual(1_000);
    // Per batch it would be 25 a second per consumer: here a few while the first second's demand is
    // learnt, then about one a second (a block of 250 slots, all used as the schedule is booked ahead).
    expect(handed).toHaveLength(10_000);
    expect(mostPerSecond()).toBeLessThanOrEqual(4);
    expect(mostPerSecond(1)).toBeLessThanOrEqual(2);
    // All four together in the first second: one first block each, half a second of the limit, and one more.
    expect(writes.filter((w) => w.endsWith(' 0')).length).toBeLessThanOrEqual(5);
    expect(writes.filter((w) => !w.endsWith(' 0')).length).toBeLessThanOrEqual(4 * 9);
  });
});
