/**
 * The per-endpoint rate limit (docs/contract.md §11, `rateLimitPerSecond`): across every consumer,
 * at most that many requests per second reach the endpoint. This file is the port and its pure
 * arithmetic; `dynamodb-rate-limit.ts` keeps the schedule on the endpoint's registry item.
 *
 * **The schedule** (a GCRA "next free slot"): each endpoint has one number, the epoch ms of its next
 * free request slot (`next`). A consumer about to send k requests reserves k slots at once:
 * base = max(next, now); the slots are base, base + 1000/rate, …, base + (k − 1)·1000/rate; and
 * next becomes base + k·1000/rate. Every consumer advances the same number, so the slots handed out
 * never overlap and no second holds more than `rate` of them, however many consumers there are.
 * An idle endpoint's first slot is now: no burst beyond the rate is ever allowed.
 *
 * **The horizon.** Slots are reserved at most `RATE_HORIZON_MS` ahead. Those further out are not
 * reserved: the caller is told how long until the first of them would come within the horizon
 * (`Reservation.waitMs`) and holds those deliveries meanwhile. The horizon bounds how long a change
 * of the limit takes to apply (slots reserved at the old rate are used first) and how far a message
 * carrying a reservation is delayed (well within SQS's 900 s).
 *
 * A slot reserved and then not used (the delivery turned out to be done already, its consumer
 * died) is lost: the endpoint then gets fewer requests than the limit, never more.
 */

/** How far ahead slots are reserved. */
export const RATE_HORIZON_MS = 60_000;

/** What a reservation handed out. Times are epoch ms. */
export interface Reservation {
  /**
   * The slots, ascending, 1000/perSecond ms apart: `count` of them, or fewer (perhaps none) when the
   * rest lie beyond the horizon. A request may be sent at its slot or later, never earlier.
   */
  readonly slots: readonly number[];
  /**
   * Present when fewer than `count` were reserved: ms from `nowMs` until the first slot not
   * reserved would come within the horizon (each next one 1000/perSecond ms later). Reserving again
   * sooner finds nothing.
   */
  readonly waitMs?: number;
}

/** Reserves request slots on an endpoint's schedule. */
export interface RateLimiter {
  /**
   * Reserves up to `count` consecutive slots on `endpoint`'s schedule at `perSecond` (a whole number
   * from 1). @throws RateLimitError when the schedule cannot be reached or written
   */
  reserve(endpoint: string, count: number, perSecond: number, nowMs: number): Promise<Reservation>;
}

/**
 * Schedule values are whole microseconds (ms with three decimals), and the interval between slots is
 * rounded up to one: a 3-per-second limit's slots are 333.334 ms apart, so `rate` slots always span
 * at least a second and no rounding ever lets one more in.
 */
const PRECISION = 1000;
/** Guards floor() against a quotient like 2.9999999 when slots fit exactly. */
const EPSILON = 1e-6;

/** ms between two slots: 1000/perSecond, rounded up to the microsecond. @throws RangeError unless `perSecond` is a whole number from 1 */
export function slotIntervalMs(perSecond: number): number {
  if (!Number.isInteger(perSecond) || perSecond < 1) throw new RangeError(`perSecond must be a whole number from 1, got ${perSecond}`);
  return Math.ceil((1000 * PRECISION) / perSecond) / PRECISION;
}

/** `value` rounded to the microsecond, as the schedule stores it. */
export function toScheduleMs(value: number): number {
  return Math.round(value * PRECISION) / PRECISION;
}

/** ms that `count` slots take on the schedule (the amount `next` advances by). */
export function spanMs(count: number, perSecond: number): number {
  return toScheduleMs(count * slotIntervalMs(perSecond));
}

/** `count` slots from `base`, 1000/perSecond ms apart. */
export function slotsFrom(base: number, count: number, perSecond: number): number[] {
  const interval = slotIntervalMs(perSecond);
  return Array.from({ length: count }, (_, i) => toScheduleMs(base + i * interval));
}

/** How many of `count` slots starting at `base` lie within the horizon (at most `nowMs + horizonMs`). */
export function slotsWithin(base: number, count: number, perSecond: number, nowMs: number, horizonMs: number): number {
  const room = nowMs + horizonMs - base;
  if (room < 0) return 0;
  return Math.min(count, Math.floor(room / slotIntervalMs(perSecond) + EPSILON) + 1);
}

/** ms until a slot at `slotMs` comes within the horizon (0 when it is within it already). */
export function waitForHorizon(slotMs: number, nowMs: number, horizonMs: number): number {
  return Math.max(0, Math.ceil(slotMs - nowMs - horizonMs));
}

/**
 * One reservation on a schedule whose next free slot is `next` (undefined: never used): the slots,
 * and the schedule's value after it (unchanged when nothing was reserved). The rule every store applies.
 */
export function reserveOn(
  next: number | undefined,
  count: number,
  perSecond: number,
  nowMs: number,
  horizonMs: number = RATE_HORIZON_MS,
): { readonly reservation: Reservation; readonly next: number | undefined } {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be a whole number from 1, got ${count}`);
  const base = next === undefined || next <= nowMs ? nowMs : next;
  const reserved = slotsWithin(base, count, perSecond, nowMs, horizonMs);
  const after = reserved > 0 ? toScheduleMs(base + spanMs(reserved, perSecond)) : next;
  const slots = slotsFrom(base, reserved, perSecond);
  if (reserved === count) return { reservation: { slots }, next: after };
  return { reservation: { slots, waitMs: waitForHorizon(after ?? base, nowMs, horizonMs) }, next: after };
}

/**
 * The schedule in this process's memory: exact for one process (tests, a single consumer), and
 * the reference the DynamoDB adapter is checked against.
 */
export class MemoryRateLimiter implements RateLimiter {
  readonly #next = new Map<string, number>();
  readonly #horizonMs: number;

  constructor(options: { horizonMs?: number } = {}) {
    this.#horizonMs = options.horizonMs ?? RATE_HORIZON_MS;
  }

  async reserve(endpoint: string, count: number, perSecond: number, nowMs: number): Promise<Reservation> {
    const { reservation, next } = reserveOn(this.#next.get(endpoint), count, perSecond, nowMs, this.#horizonMs);
    if (next !== undefined) this.#next.set(endpoint, next);
    return reservation;
  }

  /** The endpoint's next free slot, if it was ever used. */
  nextFree(endpoint: string): number | undefined {
    return this.#next.get(endpoint);
  }
}
