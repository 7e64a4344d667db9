/**
 * The soak's plan, fixed by a seed before anything runs: which events exist, how the receiver
 * answers each of them, which are sent twice, and so which must end dead and why. Pure: the
 * same seed gives the same plan, so the expected dead set is known in advance.
 */

/** How the receiver answers one request. */
export type Answer =
  /** 200 at once: the event is applied. */
  | { readonly kind: 'ok' }
  /** 200 after a delay well inside the attempt timeout: applied. */
  | { readonly kind: 'slow'; readonly delayMs: number }
  /** Applied, then the 200 comes after the sender gave up: an unknown outcome, already committed. */
  | { readonly kind: 'late-commit'; readonly delayMs: number }
  /** Applied, then no answer at all: the timeout after commit that idempotency exists for. */
  | { readonly kind: 'commit-then-hang' }
  /** 5xx: not applied, temporary. */
  | { readonly kind: 'server-error'; readonly status: 500 | 502 | 503 }
  /** 429 with a Retry-After: not applied, temporary. */
  | { readonly kind: 'throttle'; readonly retryAfterSeconds: number }
  /** The request is read, then the connection is reset: not applied, unknown. */
  | { readonly kind: 'reset' }
  /** A 4xx that is not retryable: not applied, rejected. */
  | { readonly kind: 'reject'; readonly status: 400 | 410 | 422 };

export type AnswerKind = Answer['kind'];

/**
 * What must become of an event:
 * - `deliver`: `faults` first (one per request), then `final` for every later request.
 * - `reject`: a non-retryable 4xx on every request: dead, `rejected`.
 * - `exhaust`: a 503 on every request: dead, `exhausted` once the budget is spent.
 */
export type Fate = 'deliver' | 'reject' | 'exhaust';

export interface PlannedEvent {
  readonly id: string;
  /** The message body, as the producer sends it. */
  readonly body: string;
  readonly fate: Fate;
  /** Answers for the first requests, in order. */
  readonly faults: readonly Answer[];
  /** The answer to every request after `faults`. */
  readonly final: Answer;
}

export interface SoakPlan {
  readonly seed: number;
  readonly events: readonly PlannedEvent[];
  /** Every message body in send order: each event once, and 10% of them a second time, later. */
  readonly sendOrder: readonly string[];
  readonly duplicates: number;
}

export interface PlanOptions {
  readonly events: number;
  readonly seed: number;
  /** Share of events sent twice (default 0.1). */
  readonly duplicateShare?: number;
}

/** Shares of the fates and faults; what is left of 1 is delivered on the first request. */
export const MIX = {
  reject: 0.03,
  exhaust: 0.02,
  /** Delivered after one or two transient faults. */
  faulty: 0.35,
  /** Share of the faulty that get two faults rather than one. */
  twoFaults: 0.3,
  /** Share of delivered events whose success is a slow answer. */
  slowSuccess: 0.1,
} as const;

const TRANSIENT_FAULTS = ['commit-then-hang', 'late-commit', 'server-error', 'throttle', 'reset'] as const;

/** mulberry32: a small, fast, seedable PRNG; plenty for choosing faults. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function planSoak(options: PlanOptions): SoakPlan {
  const next = random(options.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const width = String(options.events - 1).length;
  const statuses = ['label_created', 'packed', 'in_transit', 'out_for_delivery', 'delivered'] as const;

  const transient = (kind: (typeof TRANSIENT_FAULTS)[number]): Answer => {
    switch (kind) {
      case 'commit-then-hang':
        return { kind };
      case 'late-commit':
        return { kind, delayMs: 1_500 };
      case 'server-error':
        return { kind, status: pick([500, 502, 503] as const) };
      case 'throttle':
        return { kind, retryAfterSeconds: pick([1, 2]) };
      case 'reset':
        return { kind };
    }
  };

  const events: PlannedEvent[] = [];
  for (let i = 0; i < options.events; i += 1) {
    const id = `evt_soak_${options.seed}_${String(i).padStart(width, '0')}`;
    const body = JSON.stringify({
      id,
      shipmentId: `shp_${String(i).padStart(width, '0')}`,
      status: pick(statuses),
      occurredAt: new Date(Date.UTC(2026, 11, 2, 10, 0, 0) + i * 1000).toISOString(),
      data: { carrier: pick(['acme', 'globex', 'initech']), sequence: i },
    });
    const roll = next();
    if (roll < MIX.reject) {
      const answer: Answer = { kind: 'reject', status: pick([400, 410, 422] as const) };
      events.push({ id, body, fate: 'reject', faults: [], final: answer });
    } else if (roll < MIX.reject + MIX.exhaust) {
      events.push({ id, body, fate: 'exhaust', faults: [], final: { kind: 'server-error', status: 503 } });
    } else {
      const faultCount = roll < MIX.reject + MIX.exhaust + MIX.faulty ? (next() < MIX.twoFaults ? 2 : 1) : 0;
      const faults = Array.from({ length: faultCount }, () => transient(pick(TRANSIENT_FAULTS)));
      const final: Answer = next() < MIX.slowSuccess ? { kind: 'slow', delayMs: 100 + Math.floor(next() * 300) } : { kind: 'ok' };
      events.push({ id, body, fate: 'deliver', faults, final });
    }
  }

  // Duplicates go a little later in the stream, as a producer's retry would.
  const slots: string[][] = events.map((event) => [event.body]);
  let duplicates = 0;
  events.forEach((event, index) => {
    if (next() >= (options.duplicateShare ?? 0.1)) return;
    const later = Math.min(events.length - 1, index + 1 + Math.floor(next() * 50));
    slots[later]!.push(event.body);
    duplicates += 1;
  });
  return { seed: options.seed, events, sendOrder: slots.flat(), duplicates };
}

/** The answer to the `n`th request (0-based) for an event. */
export function answerFor(event: PlannedEvent, n: number): Answer {
  return event.faults[n] ?? event.final;
}

/** The plan in numbers, for the report. */
export function summarize(plan: SoakPlan) {
  const count = (fate: Fate) => plan.events.filter((event) => event.fate === fate).length;
  return {
    events: plan.events.length,
    messages: plan.sendOrder.length,
    duplicates: plan.duplicates,
    deliver: count('deliver'),
    withFaults: plan.events.filter((event) => event.faults.length > 0).length,
    reject: count('reject'),
    exhaust: count('exhaust'),
  };
}
