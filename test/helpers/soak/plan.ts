/**
 * The soak's plan, fixed by a seed before anything runs: which events exist, which endpoints each
 * is routed to, how each endpoint's receiver answers it, which are sent twice, and so which
 * deliveries must end dead and why. Pure: the same seed gives the same plan, so the expected
 * deliveries and dead set are known in advance.
 *
 * One endpoint (`default`, every event: the single-URL settings) or three with overlapping event
 * types and a `data.carrier` match (./endpoints.ts), so an event goes to 0, 1, 2 or 3 of them and
 * each of its deliveries has its own fate.
 */
import { DEFAULT_SOAK_ENDPOINT, routeOf, type SoakEndpoint } from './endpoints';

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
  /**
   * A 4xx that is not retryable: not applied, rejected. Never 410, which also disables the whole
   * endpoint (docs/contract.md §12): a soak's planned deliveries would stop being routed.
   */
  | { readonly kind: 'reject'; readonly status: 400 | 403 | 422 };

export type AnswerKind = Answer['kind'];

/**
 * What must become of an event:
 * - `deliver`: `faults` first (one per request), then `final` for every later request.
 * - `reject`: a non-retryable 4xx on every request: dead, `rejected`.
 * - `exhaust`: a 503 on every request: dead, `exhausted` once the budget is spent.
 */
export type Fate = 'deliver' | 'reject' | 'exhaust';

/** How one endpoint's receiver answers one event. */
export interface AnswerPlan {
  readonly fate: Fate;
  /** Answers for the first requests, in order. */
  readonly faults: readonly Answer[];
  /** The answer to every request after `faults`. */
  readonly final: Answer;
}

/**
 * An event. A one-endpoint plan carries its answers here (its delivery to `default`); a plan with
 * `deliveries` keeps them there, one per routed endpoint.
 */
export interface PlannedEvent extends Partial<AnswerPlan> {
  readonly id: string;
  /** The message body, as the producer sends it. */
  readonly body: string;
  /** Its shipment, in a plan with shipments of several events (absent: a shipment of its own). */
  readonly shipmentId?: string;
  /**
   * The intake it is sent to, in a plan with shipments: `ordered` is the FIFO queue (group: its
   * shipment, deduplication ID: its event ID), whose send order is its shipment's admission order.
   * Absent: the standard intake.
   */
  readonly intake?: Intake;
}

export type Intake = 'standard' | 'ordered';

/** One delivery: an event to one endpoint, with its own answers and fate. */
export interface PlannedDelivery extends AnswerPlan {
  readonly eventId: string;
  readonly endpoint: string;
  readonly body: string;
}

export interface SoakPlan {
  readonly seed: number;
  readonly events: readonly PlannedEvent[];
  /** Every message body in send order: each event once, and 10% of them a second time, later. */
  readonly sendOrder: readonly string[];
  readonly duplicates: number;
  /** The endpoints (absent: `default` alone, subscribed to every event). */
  readonly endpoints?: readonly SoakEndpoint[];
  /** Every (event, endpoint) delivery (absent: one per event to `default`, from the event's answers). */
  readonly deliveries?: readonly PlannedDelivery[];
}

export interface PlanOptions {
  readonly events: number;
  readonly seed: number;
  /** Share of events sent twice (default 0.1). */
  readonly duplicateShare?: number;
  /** The endpoints events are routed to (default: `default` alone, every event). */
  readonly endpoints?: readonly SoakEndpoint[];
  /**
   * Events per shipment (default 1: each event a shipment of its own, as before issue 12). Over 1:
   * consecutive events share a shipment and its carrier (the first event's), and every other
   * shipment (the even ones) is sent to the ordered intake, the rest to the standard one. A plan
   * without shipments is the same as before them.
   */
  readonly eventsPerShipment?: number;
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

/** The shipment statuses and carriers events are drawn from (in this order: the seed's plans depend on it). */
export const STATUSES = ['label_created', 'packed', 'in_transit', 'out_for_delivery', 'delivered'] as const;
export const CARRIERS = ['acme', 'globex', 'initech'] as const;

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
  const statuses = STATUSES;

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

  /** One delivery's fate and answers; with one endpoint, the same draws as every earlier version of the soak. */
  const answers = (): AnswerPlan => {
    const roll = next();
    if (roll < MIX.reject) {
      return { fate: 'reject', faults: [], final: { kind: 'reject', status: pick([400, 403, 422] as const) } };
    }
    if (roll < MIX.reject + MIX.exhaust) {
      return { fate: 'exhaust', faults: [], final: { kind: 'server-error', status: 503 } };
    }
    const faultCount = roll < MIX.reject + MIX.exhaust + MIX.faulty ? (next() < MIX.twoFaults ? 2 : 1) : 0;
    const faults = Array.from({ length: faultCount }, () => transient(pick(TRANSIENT_FAULTS)));
    const final: Answer = next() < MIX.slowSuccess ? { kind: 'slow', delayMs: 100 + Math.floor(next() * 300) } : { kind: 'ok' };
    return { fate: 'deliver', faults, final };
  };

  const endpoints = options.endpoints ?? [DEFAULT_SOAK_ENDPOINT];
  const single = options.endpoints === undefined;
  const events: PlannedEvent[] = [];
  const deliveries: PlannedDelivery[] = [];
  const perShipment = options.eventsPerShipment ?? 1;
  if (!Number.isInteger(perShipment) || perShipment < 1) throw new RangeError(`eventsPerShipment must be a whole number of at least 1, not ${perShipment}`);
  const shipments = perShipment > 1;
  let shipmentCarrier: string = CARRIERS[0];
  for (let i = 0; i < options.events; i += 1) {
    const id = `evt_soak_${options.seed}_${String(i).padStart(width, '0')}`;
    const status = pick(statuses);
    const drawn = pick(CARRIERS);
    const shipment = Math.floor(i / perShipment);
    // A shipment has one carrier: its first event's.
    if (i % perShipment === 0) shipmentCarrier = drawn;
    const carrier = shipments ? shipmentCarrier : drawn;
    const shipmentId = `shp_${String(shipments ? shipment : i).padStart(width, '0')}`;
    const body = JSON.stringify({
      id,
      shipmentId,
      status,
      occurredAt: new Date(Date.UTC(2026, 11, 2, 10, 0, 0) + i * 1000).toISOString(),
      data: { carrier, sequence: i },
    });
    const routed = routeOf(endpoints, { status, carrier });
    const planned = routed.map((endpoint) => ({ eventId: id, endpoint: endpoint.name, body, ...answers() }));
    deliveries.push(...planned);
    const placed = shipments ? { shipmentId, intake: shipment % 2 === 0 ? ('ordered' as const) : ('standard' as const) } : {};
    events.push(single ? { id, body, ...placed, fate: planned[0]!.fate, faults: planned[0]!.faults, final: planned[0]!.final } : { id, body, ...placed });
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
  return {
    seed: options.seed,
    events,
    sendOrder: slots.flat(),
    duplicates,
    ...(single ? {} : { endpoints, deliveries }),
  };
}

/** The plan's endpoints: `default` alone unless it names others. */
export function endpointsOf(plan: SoakPlan): readonly SoakEndpoint[] {
  return plan.endpoints ?? [DEFAULT_SOAK_ENDPOINT];
}

/** Every (event, endpoint) delivery of the plan. @throws when a one-endpoint plan's event has no answers */
export function deliveriesOf(plan: SoakPlan): readonly PlannedDelivery[] {
  if (plan.deliveries !== undefined) return plan.deliveries;
  return plan.events.map((event) => {
    if (event.fate === undefined || event.faults === undefined || event.final === undefined) {
      throw new Error(`planned event ${event.id} has neither answers nor deliveries`);
    }
    return { eventId: event.id, endpoint: DEFAULT_SOAK_ENDPOINT.name, body: event.body, fate: event.fate, faults: event.faults, final: event.final };
  });
}

/** The key of one delivery in maps and messages: `<eventId> → <endpoint>`. */
export function deliveryKey(eventId: string, endpoint: string): string {
  return `${eventId} → ${endpoint}`;
}

/** The answer to the `n`th request (0-based) for an event at one endpoint. */
export function answerFor(delivery: Pick<AnswerPlan, 'faults' | 'final'>, n: number): Answer {
  return delivery.faults[n] ?? delivery.final;
}

/** The plan in numbers, for the report: in all, and per endpoint; events by how many endpoints they go to. */
export function summarize(plan: SoakPlan) {
  const deliveries = deliveriesOf(plan);
  const count = (list: readonly PlannedDelivery[]) => ({
    deliveries: list.length,
    deliver: list.filter((d) => d.fate === 'deliver').length,
    withFaults: list.filter((d) => d.faults.length > 0).length,
    reject: list.filter((d) => d.fate === 'reject').length,
    exhaust: list.filter((d) => d.fate === 'exhaust').length,
  });
  const routes = new Map<string, number>();
  for (const d of deliveries) routes.set(d.eventId, (routes.get(d.eventId) ?? 0) + 1);
  const fanOut: number[] = Array<number>(endpointsOf(plan).length + 1).fill(0);
  for (const event of plan.events) fanOut[routes.get(event.id) ?? 0]! += 1;
  const shipments = new Set(plan.events.map((event) => event.shipmentId ?? event.id));
  return {
    events: plan.events.length,
    shipments: shipments.size,
    orderedIntake: plan.events.filter((event) => event.intake === 'ordered').length,
    messages: plan.sendOrder.length,
    duplicates: plan.duplicates,
    ...count(deliveries),
    /** Events by the number of endpoints they are routed to (index 0: to none). */
    fanOut,
    endpoints: endpointsOf(plan).map((endpoint) => ({
      name: endpoint.name,
      ...count(deliveries.filter((d) => d.endpoint === endpoint.name)),
    })),
  };
}
