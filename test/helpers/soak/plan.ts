/**
 * The soak's plan, fixed by a seed before anything runs: which events exist, which endpoints each
 * is routed to, how each endpoint's receiver answers it, which are sent twice, and so which
 * deliveries must end dead and why. Pure: the same seed gives the same plan, so the expected
 * deliveries and dead set are known in advance.
 *
 * One endpoint (`default`, every event: the single-URL settings) or three with overlapping event
 * types and a `data.carrier` match (./endpoints.ts), so an event goes to 0, 1, 2 or 3 of them and
 * each of its deliveries has its own fate.
 *
 * Producers that get things wrong, on request (the ordered soak): some messages carry handoff's
 * control attributes unsealed (`forgedShare`: they must steer nothing, lib/queue/seal.ts), and some
 * shipments get a message reusing an earlier shipment's event ID with other content (`reusedIdShare`:
 * an identity conflict, dead-lettered, that must stop neither shipment). Both are drawn from a
 * generator of their own, so the rest of a seed's plan is the same with them or without.
 */
// handoff's own names for what it steers by (lib/queue/seal.ts CONTROL_ATTRIBUTES).
import * as control from '../../../lib/queue/queue';
import { mulberry32 } from '../prng';
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

/**
 * What an unsealed control attribute tries (lib/queue/seal.ts CONTROL_ATTRIBUTES), were it obeyed:
 * - `filter-bypass`: `endpoint` naming one the event is not routed to (or no endpoint at all);
 * - `turn-theft`: `endpoint` the ordered one, `sequence=1`, `inTurn=true`: sent now, as its shipment's first;
 * - `slot-overwrite`: `endpoint` the ordered one, `sequence=<n>`: waiting at another event's number;
 * - `pacing-bypass`: `notBefore` (a slot in 2100) and `notBeforeRate`, sometimes with an `endpoint` it
 *   is routed to: a reserved request slot, which would hold the delivery until then;
 * - `recoveries`: `recoveries=99`, recovery's count of sends back from the redrive queue.
 */
export const FORGERY_KINDS = ['filter-bypass', 'turn-theft', 'slot-overwrite', 'pacing-bypass', 'recoveries'] as const;
export type ForgeryKind = (typeof FORGERY_KINDS)[number];

/** The forged request slot: 2100-01-01, epoch ms. Obeyed, it would hold its delivery past any soak. */
export const FORGED_SLOT_MS = Date.UTC(2100, 0, 1);
/** Attributes SQS is sent as Numbers (as handoff sends them); the rest as Strings. */
export const NUMBER_ATTRIBUTES: ReadonlySet<string> = new Set([control.SEQUENCE_ATTRIBUTE, control.RESERVED_SLOT_ATTRIBUTE, control.RESERVED_RATE_ATTRIBUTE, control.RECOVERIES_ATTRIBUTE]);
/** An endpoint name no registry of the soak has. */
export const UNKNOWN_ENDPOINT = 'billing';

/** A producer's message carrying control attributes without a seal. */
export interface ForgedMessage {
  /** Its position in `sendOrder`. */
  readonly index: number;
  readonly eventId: string;
  readonly kind: ForgeryKind;
  /** Attribute name → value, unsealed. */
  readonly attributes: Readonly<Record<string, string>>;
  readonly intake: Intake;
}

/**
 * A message reusing an event's ID (of shipment `originalShipmentId`, sent earlier) with other content:
 * shipment `shipmentId`'s, sent before some of that shipment's own events. Routed to the same endpoints
 * as the original (same status and carrier), it meets the original's row at each: an identity conflict.
 */
export interface PlannedConflict {
  /** Its position in `sendOrder`. */
  readonly index: number;
  readonly eventId: string;
  readonly originalShipmentId: string;
  readonly shipmentId: string;
  readonly body: string;
  /** Its shipment's intake (on the ordered one, with a deduplication ID of its own: SQS would drop a repeat of the original's). */
  readonly intake: Intake;
  /** The original's endpoints: where it must be dead-lettered (`identity-conflict`). */
  readonly endpoints: readonly string[];
}

export interface SoakPlan {
  readonly seed: number;
  readonly events: readonly PlannedEvent[];
  /**
   * Every message body in send order: each event once, 10% of them a second time, later, and each
   * planned conflict's body (`conflicts`).
   */
  readonly sendOrder: readonly string[];
  readonly duplicates: number;
  /** The endpoints (absent: `default` alone, subscribed to every event). */
  readonly endpoints?: readonly SoakEndpoint[];
  /** Every (event, endpoint) delivery (absent: one per event to `default`, from the event's answers). */
  readonly deliveries?: readonly PlannedDelivery[];
  /** Messages sent with unsealed control attributes (absent: none), in send order. */
  readonly forged?: readonly ForgedMessage[];
  /** Messages reusing an event ID for another shipment (absent: none), in send order. */
  readonly conflicts?: readonly PlannedConflict[];
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
  /** Share of sent messages (event or duplicate) carrying unsealed control attributes (default 0); needs endpoints. */
  readonly forgedShare?: number;
  /**
   * Share of shipments (default 0; rounded, at least one) sent, before one of their own events, a
   * message reusing the ID of an earlier shipment's event: drawn among the shipments that qualify
   * (every event routed to the ordered endpoint, an earlier such shipment of the same carrier).
   * Needs shipments and an ordered endpoint.
   */
  readonly reusedIdShare?: number;
}

/** The ordered soak's shares: 1 message in 10 forged, 1 shipment in 50 given a reused ID. */
export const FORGED_SHARE = 0.1;
export const REUSED_ID_SHARE = 0.02;

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

/** mulberry32 (a small, fast, seedable PRNG): plenty for choosing faults. */
export const random = mulberry32;

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

  // Producers' mistakes, from a generator of their own: the plan above is the same without them.
  const wrong = random(options.seed ^ 0x5eed_f0e1);
  const reused = (options.reusedIdShare ?? 0) > 0 ? planReusedIds(events, deliveries, endpoints, slots, options.reusedIdShare!, wrong) : [];
  const sendOrder = slots.flat();
  const conflicts = reused.map((conflict) => ({ ...conflict, index: sendOrder.indexOf(conflict.body) }));
  const forged = (options.forgedShare ?? 0) > 0 ? planForgeries(sendOrder, events, endpoints, perShipment, new Set(conflicts.map((c) => c.index)), options.forgedShare!, wrong) : [];
  return {
    seed: options.seed,
    events,
    sendOrder,
    duplicates,
    ...(single ? {} : { endpoints, deliveries }),
    ...(forged.length > 0 ? { forged } : {}),
    ...(conflicts.length > 0 ? { conflicts } : {}),
  };
}

/**
 * Reused IDs: for shipments B (`share` of all, at least one) among those that qualify (every event
 * routed to the ordered endpoint), a message with the ID of an event E of an earlier qualifying
 * shipment A of the same carrier (one of the ten before B), E's status, and B's shipment ID and time:
 * other content, the same endpoints. It goes into `slots` before one of B's events (so B has events
 * of its own after it). Returns them without their send index (set once flattened).
 */
function planReusedIds(
  events: readonly PlannedEvent[],
  deliveries: readonly PlannedDelivery[],
  endpoints: readonly SoakEndpoint[],
  slots: string[][],
  share: number,
  next: () => number,
): Omit<PlannedConflict, 'index'>[] {
  const ordered = endpoints.find((endpoint) => endpoint.ordered === true);
  if (ordered === undefined) throw new RangeError('reused IDs need an endpoint ordered per shipment');
  const routes = new Map<string, string[]>();
  for (const d of deliveries) routes.set(d.eventId, [...(routes.get(d.eventId) ?? []), d.endpoint]);
  const shipments = new Map<string, { indexes: number[]; carrier: string }>();
  events.forEach((event, index) => {
    if (event.shipmentId === undefined) throw new RangeError('reused IDs need shipments (eventsPerShipment over 1)');
    const { data } = JSON.parse(event.body) as { data: { carrier: string } };
    const shipment = shipments.get(event.shipmentId) ?? { indexes: [], carrier: data.carrier };
    shipment.indexes.push(index);
    shipments.set(event.shipmentId, shipment);
  });
  const qualifying = [...shipments].filter(([, s]) => s.indexes.every((i) => routes.get(events[i]!.id)?.includes(ordered.name) === true));
  const candidates = qualifying.map((entry, position) => ({ entry, earlier: qualifying.slice(Math.max(0, position - 10), position).filter(([, s]) => s.carrier === entry[1].carrier) }));
  // `share` of all shipments (at least one), drawn among those that qualify, in send order.
  const eligible = candidates.filter((c) => c.earlier.length > 0);
  const wanted = Math.min(eligible.length, Math.max(1, Math.round(share * shipments.size)));
  const picked = new Set<number>();
  while (picked.size < wanted) picked.add(Math.floor(next() * eligible.length));
  const chosen = [...picked].sort((a, b) => a - b).map((i) => eligible[i]!);
  return chosen.map(({ entry: [shipmentId, shipment], earlier }) => {
    const [originalShipmentId, original] = earlier[Math.floor(next() * earlier.length)]!;
    const reusedIndex = original.indexes[Math.floor(next() * original.indexes.length)]!;
    const reusedEvent = events[reusedIndex]!;
    const before = shipment.indexes[Math.floor(next() * shipment.indexes.length)]!;
    const own = JSON.parse(events[before]!.body) as { occurredAt: string };
    const { id, status, data } = JSON.parse(reusedEvent.body) as { id: string; status: string; data: Record<string, unknown> };
    const body = JSON.stringify({ id, shipmentId, status, occurredAt: new Date(Date.parse(own.occurredAt) - 500).toISOString(), data: { ...data, carrier: shipment.carrier } });
    slots[before]!.unshift(body);
    return { eventId: id, originalShipmentId, shipmentId, body, intake: events[before]!.intake ?? 'standard', endpoints: routes.get(id) ?? [] };
  });
}

/**
 * Forgeries: `share` of the sent messages (skipping the reused IDs) carry control attributes without a
 * seal, of a kind drawn uniformly (FORGERY_KINDS), aimed at the ordered endpoint where one is.
 */
function planForgeries(
  sendOrder: readonly string[],
  events: readonly PlannedEvent[],
  endpoints: readonly SoakEndpoint[],
  perShipment: number,
  skip: ReadonlySet<number>,
  share: number,
  next: () => number,
): ForgedMessage[] {
  const byBody = new Map(events.map((event) => [event.body, event]));
  const target = (endpoints.find((endpoint) => endpoint.ordered === true) ?? endpoints[0]!).name;
  const forged: ForgedMessage[] = [];
  sendOrder.forEach((body, index) => {
    const event = byBody.get(body);
    if (event === undefined || skip.has(index) || next() >= share) return;
    const kind = FORGERY_KINDS[Math.floor(next() * FORGERY_KINDS.length)]!;
    const { status, data } = JSON.parse(body) as { status: string; data: { carrier: string } };
    const routed = routeOf(endpoints, { status, carrier: data.carrier }).map((endpoint) => endpoint.name);
    const elsewhere = endpoints.map((endpoint) => endpoint.name).filter((name) => !routed.includes(name));
    const pick = (names: readonly string[]) => names[Math.floor(next() * names.length)]!;
    let attributes: Record<string, string>;
    switch (kind) {
      case 'filter-bypass':
        attributes = { [control.ENDPOINT_ATTRIBUTE]: elsewhere.length > 0 ? pick(elsewhere) : UNKNOWN_ENDPOINT };
        break;
      case 'turn-theft':
        attributes = { [control.ENDPOINT_ATTRIBUTE]: target, [control.SEQUENCE_ATTRIBUTE]: '1', [control.IN_TURN_ATTRIBUTE]: 'true' };
        break;
      case 'slot-overwrite':
        attributes = { [control.ENDPOINT_ATTRIBUTE]: target, [control.SEQUENCE_ATTRIBUTE]: String(1 + Math.floor(next() * perShipment)) };
        break;
      case 'pacing-bypass':
        attributes = {
          ...(routed.length > 0 && next() < 0.5 ? { [control.ENDPOINT_ATTRIBUTE]: pick(routed) } : {}),
          [control.RESERVED_SLOT_ATTRIBUTE]: String(FORGED_SLOT_MS),
          [control.RESERVED_RATE_ATTRIBUTE]: '1000',
        };
        break;
      case 'recoveries':
        attributes = { [control.RECOVERIES_ATTRIBUTE]: '99' };
        break;
    }
    forged.push({ index, eventId: event.id, kind, attributes, intake: event.intake ?? 'standard' });
  });
  return forged;
}

/** One message to send: its body, the event it carries, its intake and what it carries besides. */
export interface PlannedMessage {
  readonly body: string;
  readonly eventId: string;
  readonly intake: Intake;
  /** On the ordered intake: its group (the shipment in its body) and deduplication ID. */
  readonly groupId?: string;
  readonly deduplicationId?: string;
  /** Unsealed control attributes (a forgery). */
  readonly attributes?: Readonly<Record<string, string>>;
  /** A reused ID: sent only once the original's rows exist (else the original would be the conflict). */
  readonly conflict?: PlannedConflict;
}

/** Every message of the plan in send order, with where and how it is sent. */
export function messagesOf(plan: SoakPlan): PlannedMessage[] {
  const byBody = new Map(plan.events.map((event) => [event.body, event]));
  const forged = new Map((plan.forged ?? []).map((f) => [f.index, f]));
  const conflicts = new Map((plan.conflicts ?? []).map((c) => [c.index, c]));
  return plan.sendOrder.map((body, index) => {
    const conflict = conflicts.get(index);
    const event = byBody.get(body);
    const eventId = conflict?.eventId ?? event?.id ?? '';
    const intake = conflict?.intake ?? event?.intake ?? 'standard';
    const groupId = conflict?.shipmentId ?? event?.shipmentId;
    const attributes = forged.get(index)?.attributes;
    return {
      body,
      eventId,
      intake,
      ...(intake === 'ordered' ? { groupId: groupId!, deduplicationId: conflict !== undefined ? `${eventId}.reused-by.${conflict.shipmentId}` : eventId } : {}),
      ...(attributes !== undefined ? { attributes } : {}),
      ...(conflict !== undefined ? { conflict } : {}),
    };
  });
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
  const forged = plan.forged ?? [];
  const conflicts = plan.conflicts ?? [];
  return {
    events: plan.events.length,
    shipments: shipments.size,
    orderedIntake: plan.events.filter((event) => event.intake === 'ordered').length,
    messages: plan.sendOrder.length,
    duplicates: plan.duplicates,
    /** Messages with unsealed control attributes: in all, by kind, and to the ordered intake. */
    forged: forged.length,
    forgedByKind: Object.fromEntries(FORGERY_KINDS.map((kind) => [kind, forged.filter((f) => f.kind === kind).length])) as Record<ForgeryKind, number>,
    forgedToOrderedIntake: forged.filter((f) => f.intake === 'ordered').length,
    /** Messages reusing an event ID for another shipment, and the identity-conflict dead letters they must end as. */
    conflicts: conflicts.length,
    conflictLetters: conflicts.reduce((n, c) => n + c.endpoints.length, 0),
    ...count(deliveries),
    /** Events by the number of endpoints they are routed to (index 0: to none). */
    fanOut,
    endpoints: endpointsOf(plan).map((endpoint) => ({
      name: endpoint.name,
      ...count(deliveries.filter((d) => d.endpoint === endpoint.name)),
    })),
  };
}
