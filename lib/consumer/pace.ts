/**
 * The pace stage (lib/batch.ts): whether a delivery goes now. First, for the batch, the rate limit's
 * slots (`reserveSlots`: one reservation per endpoint, every put-back in one send); then, per
 * delivery (`pace`), its slot (waited for here, or its message put back or held), and its
 * endpoint's admission by the health tracker (a pause, or a half-open breaker another consumer
 * probes). A delivery to a disabled endpoint is neither: it is parked. The rules are lib/batch.ts's
 * module doc.
 */
import type { SQSRecord } from 'aws-lambda';
import type { BatchDeps } from '../batch';
import { carriedBy } from './trace';
import type { Endpoint } from '../endpoints/endpoint';
import { RATE_HORIZON_MS, slotIntervalMs, type Reservation } from '../endpoints/rate-limit';
import { errorFields, type Logger } from '../observability';
import { reservedSlotOf, type EndpointMessage } from '../queue/queue';
import type { ControlValues } from '../queue/seal';
import { receiveCountOf, type Deliver, type Plan } from './plan';

/** A request slot at most this far away is waited for in the invocation; a later one's delivery is put back. */
export const IN_PROCESS_WAIT_MS = 1000;
/** A reserved slot this far in the past is not used any more: the delivery reserves again. */
export const LATE_SLOT_MS = 1000;
/** How long deliveries are held when their endpoint's schedule cannot be reached. */
export const RATE_LIMIT_UNAVAILABLE_SECONDS = 5;

/** What the rate limit made of a delivery, before it is paced. Times are epoch ms. */
export type Slot =
  | { readonly kind: 'at'; readonly slot: number }
  | { readonly kind: 'put-back'; readonly slot: number; readonly delaySeconds: number; readonly sent: boolean }
  | { readonly kind: 'beyond-horizon'; readonly seconds: number }
  | { readonly kind: 'unavailable' };

/** Whether a delivery goes now. */
export type Paced =
  /** Deliver it: its slot come (after `rateWaitMs` waited here, when it had one), its endpoint admitted. */
  | { readonly kind: 'go'; readonly rateWaitMs?: number }
  /** Its endpoint is disabled: park it, spending nothing. */
  | { readonly kind: 'park' }
  /** Put back as a fresh message for its reserved slot (sent): this one is acknowledged. */
  | { readonly kind: 'put-back'; readonly slot: number; readonly delaySeconds: number }
  /** Kept on the queue for `seconds`, no attempt spent. */
  | { readonly kind: 'hold'; readonly why: 'paused' | 'rate-limited' | 'rate-limit-unavailable'; readonly seconds: number };

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Paces one delivery, given its slot from `reserveSlots` (none: its endpoint has no limit, or it is parked or paused). */
export async function pace(plan: Deliver, slot: Slot | undefined, logger: Logger, deps: BatchDeps): Promise<Paced> {
  if (plan.endpoint.state === 'disabled') return { kind: 'park' };
  let rateWaitMs: number | undefined;
  switch (slot?.kind) {
    case undefined:
      break;
    case 'beyond-horizon':
      return { kind: 'hold', why: 'rate-limited', seconds: slot.seconds };
    case 'unavailable':
      return { kind: 'hold', why: 'rate-limit-unavailable', seconds: RATE_LIMIT_UNAVAILABLE_SECONDS };
    case 'put-back':
      if (slot.sent) return { kind: 'put-back', slot: slot.slot, delaySeconds: slot.delaySeconds };
      // Not put back: its slot is lost; held until then, it reserves again when it returns.
      return { kind: 'hold', why: 'rate-limited', seconds: Math.max(1, Math.ceil((slot.slot - deps.delivery.now()) / 1000)) };
    case 'at':
      rateWaitMs = Math.max(0, Math.ceil(slot.slot - deps.delivery.now()));
      if (rateWaitMs > 0) await (deps.sleep ?? sleepFor)(rateWaitMs);
  }
  // Asked after the wait for its slot: a pause another delivery of the batch met meanwhile holds this one.
  if (deps.health !== undefined) {
    const heldFor = await deps.health.admit(plan.endpoint, logger);
    if (heldFor > 0) return { kind: 'hold', why: 'paused', seconds: heldFor };
  }
  return rateWaitMs !== undefined ? { kind: 'go', rateWaitMs } : { kind: 'go' };
}

/**
 * The rate limit's slot for each delivery to an endpoint with a limit, by record index: one
 * reservation per endpoint for those to attempt now (in batch order), then every put-back in one
 * send. Deliveries carrying a reservation are paced by it. Never throws.
 */
export async function reserveSlots(
  records: readonly SQSRecord[],
  controls: readonly ControlValues[],
  plans: readonly Plan[],
  deps: BatchDeps,
): Promise<Map<number, Slot>> {
  const slots = new Map<number, Slot>();
  const limiter = deps.rateLimiter;
  if (limiter === undefined) return slots;
  const now = deps.delivery.now;
  const wanting = new Map<string, { endpoint: Endpoint; deliveries: [number, Deliver][] }>();
  const putBacks: { index: number; message: EndpointMessage; slot: number }[] = [];
  const putBack = (index: number, { endpoint, admission }: Deliver, slot: number, perSecond: number | undefined) => {
    const delaySeconds = Math.max(0, Math.floor((slot - now()) / 1000));
    const message = {
      body: records[index]!.body,
      endpoint: endpoint.name,
      delaySeconds,
      notBefore: slot,
      ...(perSecond !== undefined ? { reservedRate: perSecond } : {}),
      ...(admission ? { admission } : {}),
      ...carriedBy(records[index]!, deps),
    };
    putBacks.push({ index, slot, message });
  };
  plans.forEach((plan, i) => {
    if (plan.kind !== 'deliver') return;
    const { endpoint } = plan;
    // Parked, or held by a pause (a slot it carries is lost: it reserves again after the pause).
    if (endpoint.state === 'disabled' || (deps.health?.pausedFor(endpoint.name) ?? 0) > 0) return;
    const carried = reservedSlotOf(controls[i]!, receiveCountOf(records[i]!));
    // Its slot was reserved when it was put back: not reserved again, unless it passed more than a
    // second ago (sent together, late ones would exceed the limit in the second they land in: a
    // consumer that stalled, a backlog of them) or the limit was lowered since (its slots were spaced
    // for the old one). Those reserve anew.
    const current = endpoint.rateLimitPerSecond;
    const usable =
      carried !== undefined &&
      carried.slot >= now() - LATE_SLOT_MS &&
      (current === undefined || (carried.perSecond !== undefined && carried.perSecond <= current));
    if (usable) {
      // Early by more than the wait allowed here (clocks apart, say): put back again, still carrying it.
      if (carried.slot - now() <= IN_PROCESS_WAIT_MS) slots.set(i, { kind: 'at', slot: carried.slot });
      else putBack(i, plan, carried.slot, carried.perSecond);
      return;
    }
    if (endpoint.rateLimitPerSecond === undefined) return;
    const wanted = wanting.get(endpoint.name);
    if (wanted === undefined) wanting.set(endpoint.name, { endpoint, deliveries: [[i, plan]] });
    else wanted.deliveries.push([i, plan]);
  });
  await Promise.all(
    [...wanting.values()].map(async ({ endpoint, deliveries }) => {
      const perSecond = endpoint.rateLimitPerSecond!;
      let reservation: Reservation;
      try {
        reservation = await limiter.reserve(endpoint.name, deliveries.length, perSecond, now());
      } catch (error) {
        deps.logger.warn('rate limit unavailable', { endpoint: endpoint.name, deliveries: deliveries.length, ...errorFields(error) });
        for (const [i] of deliveries) slots.set(i, { kind: 'unavailable' });
        return;
      }
      const { slots: reserved, waitMs = 0 } = reservation;
      const at = now();
      deliveries.forEach(([i, plan], j) => {
        const slot = reserved[j];
        if (slot === undefined) {
          const untilMs = waitMs + (j - reserved.length) * slotIntervalMs(perSecond);
          slots.set(i, { kind: 'beyond-horizon', seconds: beyondHorizonSeconds(untilMs, records[i]!) });
        } else if (slot - at <= IN_PROCESS_WAIT_MS) slots.set(i, { kind: 'at', slot });
        else putBack(i, plan, slot, perSecond);
      });
    }),
  );
  if (putBacks.length === 0) return slots;
  let sent = true;
  try {
    await deps.queue.fanOut(putBacks.map(({ message }) => message));
  } catch (error) {
    sent = false;
    deps.logger.warn('rate limit put-back failed', { action: 'error', messages: putBacks.length, ...errorFields(error) });
  }
  for (const { index, slot, message } of putBacks) slots.set(index, { kind: 'put-back', slot, delaySeconds: message.delaySeconds ?? 0, sent });
  return slots;
}

/**
 * How long a delivery with no slot (beyond the horizon) is held: until its turn would come within the
 * horizon (`untilMs`, one slot after another for a batch's), plus a spread over up to a horizon,
 * doubling with each receive (at most 16 horizons). Every consumer sees the same schedule, so without
 * the spread every held delivery would come back at the same moment, one batch's worth would get
 * slots and the rest be held again: a receive and a visibility change each, over and over. Spread,
 * they come back about as fast as the horizon moves. The spread is drawn from the message ID, so a
 * message's hold is the same whoever computes it.
 */
export function beyondHorizonSeconds(untilMs: number, record: Pick<SQSRecord, 'messageId' | 'attributes'>, horizonMs = RATE_HORIZON_MS): number {
  const receives = Math.max(1, Number(record.attributes?.ApproximateReceiveCount) || 1);
  const spreadMs = horizonMs * Math.min(2 ** (receives - 1), 16) * unitFraction(record.messageId);
  return Math.max(1, Math.ceil((untilMs + spreadMs) / 1000));
}

/** A fraction in [0, 1) from a string (FNV-1a, then murmur3's finalizer): the same for the same string, spread evenly over IDs. */
function unitFraction(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return ((hash ^ (hash >>> 16)) >>> 0) / 2 ** 32;
}
