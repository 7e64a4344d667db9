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
 *
 * **Blocks** (`BlockRateLimiter`, docs/contract.md §20: no hot item). The schedule is one attribute
 * of one item, so a reservation per batch would write it as often as batches come: 100 times a
 * second at 1,000 deliveries a second. A consumer reserves instead a block: what the batch needs and
 * as many more as it was asked for in the last second (at most a second's slots at the limit), and
 * hands them out to its next batches, each the earliest not yet passed. A slot that passes unused is
 * lost, never handed out late or twice, so the schedule's rule above still bounds every second. At
 * a steady rate with the endpoint at its limit, a block's slots lie ahead and all are used: about
 * one write a second per consumer. Far below the limit a block's slots start now and pass in less
 * than a second; the slots lost then move the schedule ahead until its blocks are used (the cost: an
 * unused slot, where the endpoint had room).
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

/** How long a consumer's demand is measured for, to size its next block (a second's worth). */
export const BLOCK_DEMAND_MS = 1_000;

/** A consumer's slots of one endpoint, reserved and not yet handed out, and what it was asked for lately. */
interface Block {
  readonly perSecond: number;
  /** Whether a block was reserved at this rate before: the first is sized before any demand is learnt. */
  reservedBefore: boolean;
  /** Ascending; those passed are dropped at the next ask. */
  slots: number[];
  /** From the last reservation that fell short of the horizon: until the next slot would come within it. */
  waitMs: number | undefined;
  reservedAtMs: number;
  /** Slots asked for in the current and the previous demand window (BLOCK_DEMAND_MS each). */
  windowStartMs: number;
  asked: number;
  askedBefore: number;
}

/**
 * Reserves on `inner` (the shared schedule) in blocks, handing slots out here (see the module
 * header). One reservation at a time per endpoint: batches asking meanwhile take from the block it
 * makes. A block of another rate (the limit changed) is dropped: its slots were spaced for it.
 */
export class BlockRateLimiter implements RateLimiter {
  readonly #inner: RateLimiter;
  readonly #blocks = new Map<string, Block>();
  readonly #queue = new Map<string, Promise<unknown>>();

  constructor(inner: RateLimiter) {
    this.#inner = inner;
  }

  reserve(endpoint: string, count: number, perSecond: number, nowMs: number): Promise<Reservation> {
    const mine = (this.#queue.get(endpoint) ?? Promise.resolve()).then(() => this.#reserve(endpoint, count, perSecond, nowMs));
    this.#queue.set(
      endpoint,
      mine.catch(() => undefined),
    );
    return mine;
  }

  async #reserve(endpoint: string, count: number, perSecond: number, nowMs: number): Promise<Reservation> {
    if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be a whole number from 1, got ${count}`);
    const block = this.#current(endpoint, perSecond, nowMs);
    block.asked += count;
    const short = count - block.slots.length;
    if (short > 0) {
      // What this batch lacks, and up to a second's demand more (never less than it lacks): the last
      // second's, or this one's so far at its pace (counted over a tenth of a second at least).
      const pace = (block.asked * BLOCK_DEMAND_MS) / Math.max(nowMs - block.windowStartMs, BLOCK_DEMAND_MS / 10);
      // A first block, with no demand learnt yet, is at least half a second of the limit: consumers
      // starting at once on an endpoint at its limit then write its schedule about once each in their
      // first second, not once per tenth of a second (docs/contract.md §20).
      const learnt = Math.max(block.askedBefore, pace, block.reservedBefore ? 0 : perSecond / 2);
      const demand = Math.ceil(learnt);
      block.reservedBefore = true;
      const size = Math.max(short, Math.min(perSecond, demand) - block.slots.length);
      const reservation = await this.#inner.reserve(endpoint, size, perSecond, nowMs);
      block.slots.push(...reservation.slots);
      block.waitMs = reservation.waitMs;
      block.reservedAtMs = nowMs;
    }
    const slots = block.slots.splice(0, count);
    if (slots.length === count) return { slots };
    // The schedule is booked to its horizon: the rest wait as the reservation said, from when it was made.
    return { slots, waitMs: Math.max(0, (block.waitMs ?? 0) - (nowMs - block.reservedAtMs)) };
  }

  /** The endpoint's block as of `nowMs`: passed slots dropped, its demand window moved on. */
  #current(endpoint: string, perSecond: number, nowMs: number): Block {
    let block = this.#blocks.get(endpoint);
    if (block === undefined || block.perSecond !== perSecond) {
      block = { perSecond, reservedBefore: false, slots: [], waitMs: undefined, reservedAtMs: nowMs, windowStartMs: nowMs, asked: 0, askedBefore: 0 };
      this.#blocks.set(endpoint, block);
    }
    const passed = block.slots.findIndex((slot) => slot >= nowMs);
    block.slots.splice(0, passed === -1 ? block.slots.length : passed);
    if (nowMs - block.windowStartMs >= BLOCK_DEMAND_MS) {
      // The window just ended counts as the previous one only if it was the last second.
      block.askedBefore = nowMs - block.windowStartMs < 2 * BLOCK_DEMAND_MS ? block.asked : 0;
      block.asked = 0;
      block.windowStartMs = nowMs;
    }
    return block;
  }
}
