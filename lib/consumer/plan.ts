/**
 * The plan stage (lib/batch.ts): what a record is and where it goes, from its body, its sealed
 * control attributes and the batch's routes; and the batch's fan-out, every endpoint message of its
 * fanned-out records in one send. Routing's rules are lib/batch.ts's module doc.
 */
import type { SQSRecord } from 'aws-lambda';
import type { BatchDeps } from '../batch';
import { route, subscribes, type Endpoint } from '../endpoints/endpoint';
import { parseEvent, type ParsedEvent, type ShipmentEvent } from '../event';
import { type InvalidEventError } from '../errors';
import { fromFifoQueue } from '../fifo';
import { SequenceLimitError } from '../ledger/errors';
import { errorFields } from '../observability';
import { admissionFrom, admissionOfRow, admitOrdered } from '../ordering';
import { admissionOf, ENDPOINT_ATTRIBUTE, type Admission, type EndpointMessage } from '../queue/queue';
import type { ControlValues, MessageSeal } from '../queue/seal';
import type { RouteScope, Routes, UnresolvedEndpoint } from '../routing';
import { carriedBy } from './trace';

/** What routing made of a record. */
export type Plan = Deliver | Invalid | FanOut | Unrouted | Unresolved | Unplanned;

/** One delivery, on this very message: an endpoint message, or a producer's message routed to one endpoint. */
export interface Deliver {
  readonly kind: 'deliver';
  readonly endpoint: Endpoint;
  /** Unset for an endpoint message whose body is not a valid event: the delivery dead-letters it. */
  readonly parsed?: ParsedEvent;
  /** Its number at an endpoint ordered per shipment, when its message or its row says it. */
  readonly admission?: Admission;
}

/** A producer's message that is not a valid event: dead-lettered with its reason. */
export interface Invalid {
  readonly kind: 'invalid';
  readonly error: InvalidEventError;
}

/** A producer's message for two or more endpoints (or any from the ordered intake): one message each. */
export interface FanOut {
  readonly kind: 'fan-out';
  readonly eventId: string;
  readonly endpoints: readonly Endpoint[];
  readonly admissions: ReadonlyMap<string, Admission>;
}

/** Nothing to deliver: no endpoint subscribes to the event, or its endpoint was removed. */
export interface Unrouted {
  readonly kind: 'unrouted';
  readonly eventId?: string;
  readonly endpoint?: string;
  readonly why: 'unrouted' | 'endpoint-removed';
}

/**
 * A record held because endpoints it would go to cannot be resolved now (routing's `unresolved`), or
 * because the registry could not be read at all (`registry-unavailable`: `endpoints` names only an
 * endpoint message's own). `target`: the endpoint a sealed endpoint message is for; unset for a
 * producer's message, held as a whole.
 */
export interface Unresolved {
  readonly kind: 'unresolved';
  readonly eventId?: string;
  readonly endpoints: readonly string[];
  readonly target?: string;
  readonly admission?: Admission;
  readonly why: 'endpoint-unresolved' | 'registry-unavailable';
}

/** Planning threw (the ledger or a shipment head could not be reached): the record is reported alone. */
export interface Unplanned {
  readonly kind: 'unplanned';
  readonly error: unknown;
}

/**
 * What steers a record: its control attributes if handoff sealed it, none if a producer sent it,
 * whatever attributes it carries (lib/queue/seal.ts).
 */
export function controlOf(record: SQSRecord, seal: MessageSeal): ControlValues {
  return seal.controlOf(record.body, (name) => record.messageAttributes?.[name]?.stringValue);
}

export function receiveCountOf(record: SQSRecord): number {
  return Number(record.attributes?.ApproximateReceiveCount ?? '1');
}

/** Where a record goes. Reads the ledger only for a producer's message received before. Never throws. */
export function planOf(record: SQSRecord, control: ControlValues, routes: Routes, deps: BatchDeps): Promise<Plan> {
  return routed(record, control, routes, deps).catch((error: unknown): Plan => ({ kind: 'unplanned', error }));
}

async function routed(record: SQSRecord, control: ControlValues, routes: Routes, deps: BatchDeps): Promise<Plan> {
  const { endpoints, unresolved } = routes;
  const target = control[ENDPOINT_ATTRIBUTE];
  if (target !== undefined) {
    const endpoint = endpoints.get(target);
    // Sealed: handoff's own message, which may be a test event for this endpoint alone.
    const parsed = parseEvent(record.body, deps.delivery.payloadLimitBytes, { sealed: true });
    // Parsed here once (deliver takes it): a held delivery's log line names its event.
    // A number whose turn had not come says only that on its first receive: received again, it was
    // sent meanwhile (its wait refused) or held, and asking the head costs less than waiting anew.
    const found = admissionOf(control);
    const admission = found?.inTurn || receiveCountOf(record) <= 1 ? found : undefined;
    if (endpoint !== undefined) return { kind: 'deliver', endpoint, ...(parsed.ok ? { parsed: parsed.value } : {}), ...(admission ? { admission } : {}) };
    // Held by the registry but not resolvable now (a secret that cannot be read, say): it waits.
    if (unresolved.has(target)) {
      return {
        kind: 'unresolved',
        why: 'endpoint-unresolved',
        endpoints: [target],
        target,
        ...(parsed.ok ? { eventId: parsed.value.event.id } : {}),
        ...(admission ? { admission } : {}),
      };
    }
    // Its endpoint was removed after routing: nothing can be delivered, and nothing waits for it.
    return { kind: 'unrouted', endpoint: target, why: 'endpoint-removed', ...(parsed.ok ? { eventId: parsed.value.event.id } : {}) };
  }
  const parsed = parseEvent(record.body, deps.delivery.payloadLimitBytes);
  if (!parsed.ok) return { kind: 'invalid', error: parsed.error };
  const event = parsed.value.event;
  // An endpoint it would go to that cannot be resolved now holds the whole message: acknowledged
  // after a fan-out without that endpoint, its delivery there would be lost. (What it subscribes to
  // is its item's: routing needs no secret. An item whose subscription cannot be read either holds
  // every event.) Its copies to the other endpoints, once sent, are answered by their claims.
  const waitingFor = unresolved.size === 0 ? undefined : unresolvedFor(event, [...unresolved.values()]);
  if (waitingFor !== undefined && waitingFor.length > 0) return { kind: 'unresolved', why: 'endpoint-unresolved', eventId: event.id, endpoints: waitingFor };
  // Disabled endpoints are routed to as well: their deliveries are parked, not dropped.
  const routedTo = route([...endpoints.values()], event);
  // A message held by its one endpoint's pause comes back when the pause ends: looking up its rows
  // now would cost a query on every return while paused, for a route that is only held, not lost.
  // A FIFO (ordered intake) message is never held or retried itself: that would hold its whole
  // shipment, and its receipt handle is not the delivery queue's. It is always fanned out, even to one endpoint.
  const ordered = fromFifoQueue(record);
  if (!ordered && routedTo.length === 1 && (deps.health?.pausedFor(routedTo[0]!.name) ?? 0) > 0) {
    return { kind: 'deliver', endpoint: routedTo[0]!, parsed: parsed.value };
  }
  // Received before: its rows name the endpoints it was routed to then, and an ordered row that was
  // claimed says its number and that its turn came (the head need not be asked again).
  const admissions = new Map<string, Admission>();
  if (Number(record.attributes?.ApproximateReceiveCount) > 1) {
    const rows = await deps.delivery.ledger.deliveriesOf(event.id);
    // The batch's routes hold its event types' subscribers: the rows' endpoints are resolved too.
    const known = (await routes.including?.(rows.map((row) => row.endpoint))) ?? routes;
    // Routed before to an endpoint that cannot be resolved now: held as above.
    const held = known.unresolved.size === 0 ? [] : rows.filter((row) => known.unresolved.has(row.endpoint)).map((row) => row.endpoint);
    if (held.length > 0) return { kind: 'unresolved', why: 'endpoint-unresolved', eventId: event.id, endpoints: held };
    for (const row of rows) {
      const endpoint = known.endpoints.get(row.endpoint);
      if (endpoint !== undefined && !routedTo.includes(endpoint)) routedTo.push(endpoint);
      const admission = admissionOfRow(row);
      if (admission !== undefined) admissions.set(row.endpoint, admission);
    }
  }
  if (routedTo.length === 0) return { kind: 'unrouted', eventId: event.id, why: 'unrouted' };
  if (routedTo.length === 1 && !ordered) {
    const admission = admissions.get(routedTo[0]!.name);
    return { kind: 'deliver', endpoint: routedTo[0]!, parsed: parsed.value, ...(admission ? { admission } : {}) };
  }
  // Admission at the endpoints ordered per shipment: each takes its number now, as its producer's
  // message is handled, so the order is the intake's, whatever order the endpoint messages come in.
  const heads = deps.heads;
  if (heads !== undefined) {
    const unnumbered = routedTo.filter((endpoint) => isOrdered(endpoint) && !admissions.has(endpoint.name));
    await Promise.all(
      unnumbered.map(async (endpoint) => {
        try {
          admissions.set(endpoint.name, admissionFrom(await admitOrdered(parsed.value, endpoint.name, { heads })));
        } catch (error) {
          // A shipment out of numbers at one endpoint holds up that endpoint's delivery alone (it
          // fails there, and its message returns); the other endpoints' are fanned out all the same.
          if (!(error instanceof SequenceLimitError)) throw error;
          deps.logger.warn('sequence limit', { eventId: event.id, endpoint: endpoint.name, max: error.max });
        }
      }),
    );
  }
  return { kind: 'fan-out', eventId: event.id, endpoints: routedTo, admissions };
}

export function isOrdered(endpoint: Endpoint): boolean {
  return endpoint.ordering === 'per-shipment';
}

/** The endpoints among `unresolved` an event would go to: those it subscribes to, and those whose subscription is unknown. */
function unresolvedFor(event: ParsedEvent['event'], unresolved: readonly UnresolvedEndpoint[]): string[] {
  return unresolved.filter(({ subscription }) => subscription === undefined || subscribes(subscription, event)).map(({ name }) => name);
}

/**
 * What a batch may route to (routing's scope): the endpoints its sealed messages name, and its
 * producers' events, peeked from their bodies. A body that is a valid event reads the same here as
 * parsed (the schema keeps every field as it is); one that is not is invalid and routed nowhere.
 */
export function scopeOf(records: readonly SQSRecord[], controls: readonly ControlValues[]): RouteScope {
  const endpoints = new Set<string>();
  const events: ShipmentEvent[] = [];
  records.forEach((record, i) => {
    const target = controls[i]?.[ENDPOINT_ATTRIBUTE];
    if (target !== undefined) {
      endpoints.add(target);
      return;
    }
    const event = peekEvent(record.body);
    if (event !== undefined) events.push(event);
  });
  return { endpoints: [...endpoints], events };
}

function peekEvent(body: string): ShipmentEvent | undefined {
  try {
    const json = JSON.parse(body) as unknown;
    const status = typeof json === 'object' && json !== null ? (json as { status?: unknown }).status : undefined;
    return typeof status === 'string' ? (json as ShipmentEvent) : undefined;
  } catch {
    return undefined;
  }
}

/** A record of a batch whose routing could not be read: held, for its endpoint if it is an endpoint message. */
export function registryUnavailable(record: SQSRecord, control: ControlValues, deps: BatchDeps): Unresolved {
  const target = control[ENDPOINT_ATTRIBUTE];
  const parsed = parseEvent(record.body, deps.delivery.payloadLimitBytes, { sealed: target !== undefined });
  const admission = target !== undefined ? admissionOf(control) : undefined;
  return {
    kind: 'unresolved',
    why: 'registry-unavailable',
    endpoints: target !== undefined ? [target] : [],
    ...(target !== undefined ? { target } : {}),
    ...(parsed.ok ? { eventId: parsed.value.event.id } : {}),
    ...(admission ? { admission } : {}),
  };
}

/** Sends every endpoint message of the batch's fanned-out records at once. Resolves to whether all were sent. */
export async function fanOut(records: readonly SQSRecord[], plans: readonly Plan[], deps: BatchDeps): Promise<boolean> {
  const messages: EndpointMessage[] = [];
  plans.forEach((plan, i) => {
    if (plan.kind !== 'fan-out') return;
    for (const endpoint of plan.endpoints) {
      const admission = isOrdered(endpoint) ? plan.admissions.get(endpoint.name) : undefined;
      messages.push({ body: records[i]!.body, endpoint: endpoint.name, ...(admission ? { admission } : {}), ...carriedBy(records[i]!, deps) });
    }
  });
  if (messages.length === 0) return true;
  try {
    await deps.queue.fanOut(messages);
  } catch (error) {
    deps.logger.warn('fan-out failed', { action: 'error', messages: messages.length, ...errorFields(error) });
    return false;
  }
  deps.metrics.add('FannedOut', messages.length);
  deps.delivery.checkpoint?.('after-fan-out');
  return true;
}
