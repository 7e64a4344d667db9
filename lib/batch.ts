/**
 * The batch use case: route each record of an SQS batch, deliver it, and answer Lambda's partial
 * batch response (docs/contract.md §4: one bad message never fails or delays the others; §11:
 * routing).
 *
 * Routing, per record:
 * - a message for one endpoint (its `endpoint` attribute names it) is that endpoint's delivery;
 * - a producer's message is routed to the endpoints that subscribe to its event. None:
 *   acknowledged, counted `Unrouted`. One: delivered on this very message, as a deployment with one
 *   receiver always did. Two or more: one message per endpoint is put on the queue (batched across
 *   the batch), then this one is acknowledged; each endpoint's delivery then retries and dies on its
 *   own message. A crash in between returns this message, which is routed again: the second copy of
 *   an endpoint's message is harmless, since the ledger's claim decides.
 * - a producer's message received before (a retry of its one delivery, or after a crash) is routed
 *   to its current endpoints and to those it already has ledger rows for, so a registry change never
 *   strands a delivery in progress.
 * - an endpoint the registry holds but routing cannot resolve now (its secret unreadable, its item
 *   undecodable: routing's `unresolved`) holds every record that would go to it: its own messages,
 *   and a producer's message as a whole when it subscribes to it (or has a row at it), never fanned
 *   out without it. Held: nothing claimed or written, reported with a short visibility
 *   (`unresolvedWaitSeconds`), logged why `endpoint-unresolved`, counted `EndpointUnresolved`. Only
 *   a message for an endpoint the registry no longer holds is acknowledged (`endpoint-removed`). A
 *   registry that cannot be read at all (no copy at hand) holds the whole batch the same way
 *   (`registry-unavailable`).
 *
 * What reaches Lambda, per record:
 * - ack:          not reported, so Lambda deletes it. The ledger already holds the outcome.
 * - retry:        its visibility is set to the wait, then it is reported as a failure so it
 *                 stays on the queue. If setting the visibility fails it is still reported and
 *                 returns after the queue's default visibility: later, never lost.
 * - dead-letter:  the original body goes to the dead-letter queue, then it is not reported
 *                 (deleted). If that send fails it is reported: the ledger says dead, so the
 *                 next receive dead-letters it again. An endpoint whose recovery is `drop` keeps
 *                 the dead row and gets no dead-letter message.
 * - a throw:      reported alone. The batch itself never throws, since a thrown error would
 *                 return every message of the batch.
 *
 * A delivery to a disabled endpoint is parked (docs/contract.md §12, `park` in lib/deliver.ts): the
 * ledger keeps it pending with a parked marker, no attempt is spent, and its message is acknowledged;
 * `endpoint enable` releases it (lib/resume.ts). Counted `Parked`.
 *
 * Endpoint health (docs/contract.md §12, lib/endpoints/health.ts), when `health` is given:
 * - a delivery to a paused endpoint (its own message or a producer's delivered inline) is held
 *   without a claim, a request or any DynamoDB call: reported as a failure with its visibility set
 *   to what is left of the pause; logged why `paused`, counted `Paused`. Its copy of the registry
 *   decides.
 * - after an attempt, its outcome is recorded against the endpoint: a failure counted (a 429, or a
 *   503 with Retry-After, also pauses it; enough failures over long enough disable it), a 410
 *   disables it, the first success after failures clears them. A healthy endpoint's successes write
 *   nothing.
 *
 * The rate limit (docs/contract.md §11 `rateLimitPerSecond`, lib/endpoints/rate-limit.ts), when
 * `rateLimiter` is given: per endpoint with a limit, ONE reservation per batch for its deliveries
 * that will be attempted (not parked, not held by a pause, not carrying a reservation already), then
 * per delivery, before any claim, request or ledger write:
 * - its slot is at most IN_PROCESS_WAIT_MS away: it waits here, then is delivered;
 * - further (within the horizon): it is put back as a fresh message for its endpoint, delayed to
 *   just before its slot and carrying it (RESERVED_SLOT_ATTRIBUTE), all of the batch's in one send;
 *   then this one is acknowledged. That message, on its first receive, waits for its slot here and is
 *   delivered without reserving again (received more than LATE_SLOT_MS after its slot, or the limit
 *   lowered since, it reserves anew: late ones sent together, or slots spaced for the old limit,
 *   would exceed it);
 * - beyond the horizon (no slot reserved): held, as a pause holds, until its turn would come within
 *   it, spread by up to a horizon (more for a message held before: `beyondHorizonSeconds`);
 * - the schedule cannot be reached: held for RATE_LIMIT_UNAVAILABLE_SECONDS (fails closed: a
 *   request without a slot could exceed the limit).
 * None of these spends an attempt. Put back or held: logged why `rate-limited` (or
 * `rate-limit-unavailable`) and counted `RateLimited`.
 */
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import pLimit from 'p-limit';
import {
  deadLetterInvalid,
  deliver as deliverOne,
  park,
  type DeadLetterReason,
  type DeliverDeps,
  type DeliveryResult,
  type QueueMessage,
} from './deliver';
import { route, subscribes, type Endpoint } from './endpoints/endpoint';
import type { HealthTracker } from './endpoints/health';
import { RATE_HORIZON_MS, slotIntervalMs, type RateLimiter } from './endpoints/rate-limit';
import { parseEvent, type ParsedEvent } from './event';
import { batchItemFailures, fromFifoQueue, inGroupOrder } from './fifo';
import { SequenceLimitError, type ShipmentHeads } from './ledger/shipment-heads';
import { admissionFrom, admissionOfRow, admitOrdered, giveUpNumber, holdsNumber, passTurn, takeTurn, type OrderingDeps } from './ordering';
import { errorFields, type Logger, type MetricsRecorder } from './observability';
import { describeOutcome } from './outcome';
import { admissionOf, ENDPOINT_ATTRIBUTE, reservedSlotOf, type Admission, type DeliveryQueue, type EndpointMessage, type EnqueueOptions } from './queue/queue';
import type { ControlValues, MessageSeal } from './queue/seal';
import type { Routes, Routing, UnresolvedEndpoint } from './routing';

/** What every delivery shares; the endpoint's name, policy and sender are added per delivery. */
export type DeliveryBase = Omit<DeliverDeps, 'sender' | 'endpoint' | 'policy'> & Pick<DeliverDeps, 'policy'>;

export interface BatchDeps {
  /** Its `policy` is the one an invalid message's row records; each delivery follows its endpoint's. */
  readonly delivery: DeliveryBase;
  readonly routing: Routing;
  readonly queue: DeliveryQueue;
  /** Tells handoff's own messages from producers': only a sealed message's control attributes steer (lib/queue/seal.ts). */
  readonly seal: MessageSeal;
  readonly logger: Logger;
  readonly metrics: MetricsRecorder;
  /** Records delivered at once. At least the batch size, so a batch takes one attempt's time. */
  readonly concurrency: number;
  /** Endpoint health (lib/endpoints/health.ts). Unset: no pauses, nothing recorded (single-URL mode). */
  readonly health?: Pick<HealthTracker, 'refresh' | 'pausedFor' | 'admit' | 'afterAttempt'>;
  /** The delivery queue's `maxReceiveCount` (its redrive): a held message near it is put back fresh. */
  readonly receiveLimit?: number;
  /** The use case; replaceable so tests can script decisions. */
  readonly deliver?: (message: QueueMessage, deps: DeliverDeps) => Promise<DeliveryResult>;
  /** The per-endpoint rate limit's schedule (lib/endpoints/rate-limit.ts). Unset: no limit is applied. */
  readonly rateLimiter?: RateLimiter;
  /** Waits for a request slot; replaceable so tests need not wait. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Shipment heads (lib/ledger/shipment-heads.ts), for endpoints ordered per shipment. Unset: no endpoint is ordered. */
  readonly heads?: ShipmentHeads;
}

/** A request slot at most this far away is waited for in the invocation; a later one's delivery is put back. */
export const IN_PROCESS_WAIT_MS = 1000;
/** A reserved slot this far in the past is not used any more: the delivery reserves again. */
export const LATE_SLOT_MS = 1000;
/** How long deliveries are held when their endpoint's schedule cannot be reached. */
export const RATE_LIMIT_UNAVAILABLE_SECONDS = 5;

/**
 * How long a delivery whose endpoint cannot be resolved waits on the queue: 5 s at its first
 * receive, doubling with each receive, at most 30 s. A throttle or a cold container's first failed
 * read of a secret is over within seconds, and a failed read is tried again 5 s after it
 * (lib/endpoints/secret.ts), so the first return finds it read; a longer outage (a key's grant
 * revoked, a secret deleted, an item to fix) is not polled faster than every 30 s per message. Near
 * the queue's redrive the message is put back fresh, so an outage of hours costs one send per
 * dozen receives, not the message.
 */
export const UNRESOLVED_FIRST_WAIT_SECONDS = 5;
export const UNRESOLVED_MAX_WAIT_SECONDS = 30;

export function unresolvedWaitSeconds(record: Pick<SQSRecord, 'attributes'>): number {
  const receives = Math.max(1, Number(record.attributes?.ApproximateReceiveCount) || 1);
  return Math.min(UNRESOLVED_MAX_WAIT_SECONDS, UNRESOLVED_FIRST_WAIT_SECONDS * 2 ** Math.min(receives - 1, 8));
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Receives a held message keeps in hand before its redrive: it is put back fresh at this many short of the limit. */
const RECEIVES_KEPT = 3;

/** Whether a message has so few receives left before SQS's own redrive that it must be put back fresh. */
function nearRedrive(record: SQSRecord, deps: BatchDeps): boolean {
  return deps.receiveLimit !== undefined && Number(record.attributes?.ApproximateReceiveCount) >= deps.receiveLimit - RECEIVES_KEPT;
}

/** What routing made of a record. */
type Plan =
  | { readonly kind: 'deliver'; readonly endpoint: Endpoint; readonly parsed?: ParsedEvent; readonly admission?: Admission }
  | { readonly kind: 'invalid'; readonly parsed: Extract<ReturnType<typeof parseEvent>, { ok: false }> }
  | { readonly kind: 'fan-out'; readonly eventId: string; readonly endpoints: readonly Endpoint[]; readonly admissions: ReadonlyMap<string, Admission> }
  | { readonly kind: 'unrouted'; readonly eventId?: string; readonly endpoint?: string; readonly why: 'unrouted' | 'endpoint-removed' }
  | Unresolved;

/**
 * A record held because endpoints it would go to cannot be resolved now (routing's `unresolved`), or
 * because the registry could not be read at all (`registry-unavailable`: `endpoints` names only an
 * endpoint message's own). `target`: the endpoint a sealed endpoint message is for; unset for a
 * producer's message, held as a whole.
 */
type Unresolved = {
  readonly kind: 'unresolved';
  readonly eventId?: string;
  readonly endpoints: readonly string[];
  readonly target?: string;
  readonly admission?: Admission;
  readonly why: 'endpoint-unresolved' | 'registry-unavailable';
};

/** What the rate limit made of a delivery (docs above). Times are epoch ms. */
type Pace =
  | { readonly kind: 'at'; readonly slot: number }
  | { readonly kind: 'put-back'; readonly slot: number; readonly delaySeconds: number; readonly sent: boolean }
  | { readonly kind: 'beyond-horizon'; readonly seconds: number }
  | { readonly kind: 'unavailable' };

export async function processBatch(records: readonly SQSRecord[], deps: BatchDeps): Promise<SQSBatchResponse> {
  if (!records.some(fromFifoQueue)) return processRecords(records, deps);
  // The ordered intake (docs/contract.md §13, lib/fifo.ts): a shipment's records one at a time, in
  // order, each routed (and fanned out) before the next; after a failure its later ones come back too.
  const reported = await inGroupOrder(records, async (record) => (await processRecords([record], deps)).batchItemFailures.length > 0);
  if (records.some((record, i) => reported[i] && !record.messageId)) {
    throw new Error('a record to report as failed has no messageId: returning the whole batch');
  }
  return { batchItemFailures: batchItemFailures(records, reported) };
}

async function processRecords(records: readonly SQSRecord[], deps: BatchDeps): Promise<SQSBatchResponse> {
  const limit = pLimit(Math.max(1, deps.concurrency));
  const controls = records.map((record) => controlOf(record, deps.seal));
  let routes: Routes;
  try {
    [routes] = await Promise.all([deps.routing.routes(), deps.health?.refresh()]);
  } catch (error) {
    // The registry could not be read and no copy of it is at hand: every message is held, none decided.
    deps.logger.error('routing failed', { action: 'error', ...errorFields(error) });
    const reported = await Promise.all(records.map((record, i) => limit(() => unresolvable(record, registryUnavailable(record, controls[i]!, deps), deps))));
    return failuresOf(records, reported);
  }
  const plans = await Promise.all(records.map((record, i) => limit(() => planOf(record, controls[i]!, routes, deps).catch((error: unknown) => error))));
  const fannedOut = fanOut(records, plans, deps);
  const paces = await pace(records, controls, plans, deps);
  const reported = await Promise.all(
    records.map((record, i) => {
      const plan = plans[i]!;
      if (plan instanceof Error || !('kind' in (plan as object))) return failed(record, plan, deps);
      if ((plan as Plan).kind === 'fan-out') return fannedOut.then((sent) => afterFanOut(record, plan as Plan & { kind: 'fan-out' }, sent, deps));
      return limit(() => processRecord(record, plan as Plan, deps, paces.get(i)));
    }),
  );
  return failuresOf(records, reported);
}

/** The partial batch response: the records reported. */
function failuresOf(records: readonly SQSRecord[], reported: readonly boolean[]): SQSBatchResponse {
  const failedRecords = records.filter((_, i) => reported[i]);
  // An empty item identifier fails the whole batch in Lambda anyway; say so plainly instead.
  // Lambda always sets one, so this guards against a broken event, not a normal path.
  if (failedRecords.some((record) => !record.messageId)) {
    throw new Error('a record to report as failed has no messageId: returning the whole batch');
  }
  return { batchItemFailures: failedRecords.map((record) => ({ itemIdentifier: record.messageId })) };
}

/**
 * What steers a record: its control attributes if handoff sealed it, none if a producer sent it,
 * whatever attributes it carries (lib/queue/seal.ts).
 */
function controlOf(record: SQSRecord, seal: MessageSeal): ControlValues {
  return seal.controlOf(record.body, (name) => record.messageAttributes?.[name]?.stringValue);
}

function receiveCountOf(record: SQSRecord): number {
  return Number(record.attributes?.ApproximateReceiveCount ?? '1');
}

/** Where a record goes. Reads the ledger only for a producer's message received before. */
async function planOf(record: SQSRecord, control: ControlValues, routes: Routes, deps: BatchDeps): Promise<Plan> {
  const { endpoints, unresolved } = routes;
  const target = control[ENDPOINT_ATTRIBUTE];
  if (target !== undefined) {
    const endpoint = endpoints.get(target);
    const parsed = parseEvent(record.body, deps.delivery.payloadLimitBytes);
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
  if (!parsed.ok) return { kind: 'invalid', parsed };
  const event = parsed.value.event;
  // An endpoint it would go to that cannot be resolved now holds the whole message: acknowledged
  // after a fan-out without that endpoint, its delivery there would be lost. (What it subscribes to
  // is its item's: routing needs no secret. An item whose subscription cannot be read either holds
  // every event.) Its copies to the other endpoints, once sent, are answered by their claims.
  const waitingFor = unresolved.size === 0 ? undefined : unresolvedFor(event, [...unresolved.values()]);
  if (waitingFor !== undefined && waitingFor.length > 0) return { kind: 'unresolved', why: 'endpoint-unresolved', eventId: event.id, endpoints: waitingFor };
  // Disabled endpoints are routed to as well: their deliveries are parked, not dropped.
  const routed = route([...endpoints.values()], event);
  // A message held by its one endpoint's pause comes back when the pause ends: looking up its rows
  // now would cost a query on every return while paused, for a route that is only held, not lost.
  // A FIFO (ordered intake) message is never held or retried itself: that would hold its whole
  // shipment, and its receipt handle is not the delivery queue's. It is always fanned out, even to one endpoint.
  const ordered = fromFifoQueue(record);
  if (!ordered && routed.length === 1 && (deps.health?.pausedFor(routed[0]!.name) ?? 0) > 0) {
    return { kind: 'deliver', endpoint: routed[0]!, parsed: parsed.value };
  }
  // Received before: its rows name the endpoints it was routed to then, and an ordered row that was
  // claimed says its number and that its turn came (the head need not be asked again).
  const admissions = new Map<string, Admission>();
  if (Number(record.attributes?.ApproximateReceiveCount) > 1) {
    const rows = await deps.delivery.ledger.deliveriesOf(event.id);
    // Routed before to an endpoint that cannot be resolved now: held as above.
    const held = unresolved.size === 0 ? [] : rows.filter((row) => unresolved.has(row.endpoint)).map((row) => row.endpoint);
    if (held.length > 0) return { kind: 'unresolved', why: 'endpoint-unresolved', eventId: event.id, endpoints: held };
    for (const row of rows) {
      const endpoint = endpoints.get(row.endpoint);
      if (endpoint !== undefined && !routed.includes(endpoint)) routed.push(endpoint);
      const admission = admissionOfRow(row);
      if (admission !== undefined) admissions.set(row.endpoint, admission);
    }
  }
  if (routed.length === 0) return { kind: 'unrouted', eventId: event.id, why: 'unrouted' };
  if (routed.length === 1 && !ordered) {
    const admission = admissions.get(routed[0]!.name);
    return { kind: 'deliver', endpoint: routed[0]!, parsed: parsed.value, ...(admission ? { admission } : {}) };
  }
  // Admission at the endpoints ordered per shipment: each takes its number now, as its producer's
  // message is handled, so the order is the intake's, whatever order the endpoint messages come in.
  const heads = deps.heads;
  if (heads !== undefined) {
    const unnumbered = routed.filter((endpoint) => isOrdered(endpoint) && !admissions.has(endpoint.name));
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
  return { kind: 'fan-out', eventId: event.id, endpoints: routed, admissions };
}

/** The endpoints among `unresolved` an event would go to: those it subscribes to, and those whose subscription is unknown. */
function unresolvedFor(event: ParsedEvent['event'], unresolved: readonly UnresolvedEndpoint[]): string[] {
  return unresolved.filter(({ subscription }) => subscription === undefined || subscribes(subscription, event)).map(({ name }) => name);
}

/** A record of a batch whose routing could not be read: held, for its endpoint if it is an endpoint message. */
function registryUnavailable(record: SQSRecord, control: ControlValues, deps: BatchDeps): Unresolved {
  const target = control[ENDPOINT_ATTRIBUTE];
  const parsed = parseEvent(record.body, deps.delivery.payloadLimitBytes);
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

/**
 * A record held because an endpoint it would go to cannot be resolved (or the registry could not be
 * read): no claim, no request, no ledger write; reported with its visibility set to
 * `unresolvedWaitSeconds`, or put back fresh near the queue's redrive (`keep`). A record of the
 * ordered intake is reported alone: its receipt handle is not the delivery queue's, and its shipment
 * waits behind it. Logged with its event and endpoints; counted `EndpointUnresolved` per endpoint.
 */
async function unresolvable(record: SQSRecord, plan: Unresolved, deps: BatchDeps): Promise<boolean> {
  const seconds = unresolvedWaitSeconds(record);
  if (plan.endpoints.length === 0) deps.metrics.add('EndpointUnresolved', 1);
  for (const name of plan.endpoints) deps.metrics.add('EndpointUnresolved', 1, name);
  const logger = deps.logger.child({ messageId: record.messageId });
  const fields = { ...(plan.eventId ? { eventId: plan.eventId } : {}), endpoints: plan.endpoints, action: 'retry', why: plan.why, afterSeconds: seconds };
  if (fromFifoQueue(record)) {
    const { afterSeconds: _queueDefault, ...held } = fields;
    logger.warn('delivery', held);
    return true;
  }
  const putBack: EnqueueOptions = plan.target !== undefined ? { endpoint: plan.target, ...(plan.admission ? { admission: plan.admission } : {}) } : {};
  return keep(record, seconds, fields, logger, deps, putBack, 'warn');
}

/** Sends every endpoint message of the batch's fanned-out records at once. Resolves to whether all were sent. */
async function fanOut(records: readonly SQSRecord[], plans: readonly (Plan | unknown)[], deps: BatchDeps): Promise<boolean> {
  const messages: EndpointMessage[] = [];
  plans.forEach((plan, i) => {
    if ((plan as Plan).kind !== 'fan-out') return;
    const { endpoints, admissions } = plan as Plan & { kind: 'fan-out' };
    for (const endpoint of endpoints) {
      const admission = isOrdered(endpoint) ? admissions.get(endpoint.name) : undefined;
      messages.push({ body: records[i]!.body, endpoint: endpoint.name, ...(admission ? { admission } : {}) });
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

/**
 * The rate limit's decision for each delivery to an endpoint with a limit, by record index: one
 * reservation per endpoint for those to attempt now (in batch order), then every put-back in one
 * send. Deliveries carrying a reservation are paced by it. Never throws.
 */
async function pace(
  records: readonly SQSRecord[],
  controls: readonly ControlValues[],
  plans: readonly (Plan | unknown)[],
  deps: BatchDeps,
): Promise<Map<number, Pace>> {
  const paces = new Map<number, Pace>();
  const limiter = deps.rateLimiter;
  if (limiter === undefined) return paces;
  const now = deps.delivery.now;
  const wanting = new Map<string, { endpoint: Endpoint; indexes: number[] }>();
  const putBacks: { index: number; message: EndpointMessage; slot: number }[] = [];
  const putBack = (index: number, endpoint: Endpoint, slot: number, perSecond: number | undefined) => {
    const delaySeconds = Math.max(0, Math.floor((slot - now()) / 1000));
    const { admission } = plans[index] as Plan & { kind: 'deliver' };
    const message = {
      body: records[index]!.body,
      endpoint: endpoint.name,
      delaySeconds,
      notBefore: slot,
      ...(perSecond !== undefined ? { reservedRate: perSecond } : {}),
      ...(admission ? { admission } : {}),
    };
    putBacks.push({ index, slot, message });
  };
  plans.forEach((plan, i) => {
    if ((plan as Plan | undefined)?.kind !== 'deliver') return;
    const { endpoint } = plan as Plan & { kind: 'deliver' };
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
      if (carried.slot - now() <= IN_PROCESS_WAIT_MS) paces.set(i, { kind: 'at', slot: carried.slot });
      else putBack(i, endpoint, carried.slot, carried.perSecond);
      return;
    }
    if (endpoint.rateLimitPerSecond === undefined) return;
    const wanted = wanting.get(endpoint.name);
    if (wanted === undefined) wanting.set(endpoint.name, { endpoint, indexes: [i] });
    else wanted.indexes.push(i);
  });
  await Promise.all(
    [...wanting.values()].map(async ({ endpoint, indexes }) => {
      const perSecond = endpoint.rateLimitPerSecond!;
      let reservation;
      try {
        reservation = await limiter.reserve(endpoint.name, indexes.length, perSecond, now());
      } catch (error) {
        deps.logger.warn('rate limit unavailable', { endpoint: endpoint.name, deliveries: indexes.length, ...errorFields(error) });
        for (const i of indexes) paces.set(i, { kind: 'unavailable' });
        return;
      }
      const { slots, waitMs = 0 } = reservation;
      const at = now();
      indexes.forEach((i, j) => {
        const slot = slots[j];
        if (slot === undefined) {
          const untilMs = waitMs + (j - slots.length) * slotIntervalMs(perSecond);
          paces.set(i, { kind: 'beyond-horizon', seconds: beyondHorizonSeconds(untilMs, records[i]!) });
        } else if (slot - at <= IN_PROCESS_WAIT_MS) paces.set(i, { kind: 'at', slot });
        else putBack(i, endpoint, slot, perSecond);
      });
    }),
  );
  if (putBacks.length === 0) return paces;
  let sent = true;
  try {
    await deps.queue.fanOut(putBacks.map(({ message }) => message));
  } catch (error) {
    sent = false;
    deps.logger.warn('rate limit put-back failed', { action: 'error', messages: putBacks.length, ...errorFields(error) });
  }
  for (const { index, slot, message } of putBacks) paces.set(index, { kind: 'put-back', slot, delaySeconds: message.delaySeconds ?? 0, sent });
  return paces;
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

function afterFanOut(record: SQSRecord, plan: Plan & { kind: 'fan-out' }, sent: boolean, deps: BatchDeps): boolean {
  const fields = {
    messageId: record.messageId,
    eventId: plan.eventId,
    action: sent ? 'ack' : 'retry',
    why: sent ? 'fanned-out' : 'fan-out-failed',
    endpoints: plan.endpoints.map((endpoint) => endpoint.name),
  };
  if (sent) deps.logger.info('delivery', fields);
  else deps.logger.warn('delivery', fields);
  return !sent;
}

function failed(record: SQSRecord, error: unknown, deps: BatchDeps): boolean {
  deps.logger.error('delivery failed', { messageId: record.messageId, action: 'error', ...errorFields(error) });
  return true;
}

/** Handles one record. Returns true when Lambda must keep the message (a batch item failure). */
async function processRecord(record: SQSRecord, plan: Plan, deps: BatchDeps, paced?: Pace): Promise<boolean> {
  const { delivery, queue, metrics } = deps;
  const startedAt = delivery.now();
  const endpoint = plan.kind === 'deliver' ? plan.endpoint : undefined;
  const logger = deps.logger.child({ messageId: record.messageId, ...(endpoint ? { endpoint: endpoint.name } : {}) });
  const sentAtMs = Number(record.attributes?.SentTimestamp);
  if (Number.isFinite(sentAtMs) && sentAtMs > 0) metrics.add('PendingAge', Math.max(0, (startedAt - sentAtMs) / 1000), endpoint?.name);
  if (plan.kind === 'unrouted') {
    metrics.add('Unrouted', 1);
    logger.info('delivery', {
      ...(plan.eventId ? { eventId: plan.eventId } : {}),
      ...(plan.endpoint ? { endpoint: plan.endpoint } : {}),
      action: 'ack',
      why: plan.why,
    });
    return false;
  }
  if (plan.kind === 'unresolved') return unresolvable(record, plan, deps);
  if (plan.kind === 'fan-out') throw new Error('unreachable: fan-out is answered by afterFanOut');
  const parking = plan.kind === 'deliver' && plan.endpoint.state === 'disabled';
  let rateWaitMs: number | undefined;
  if (plan.kind === 'deliver' && paced !== undefined) {
    if (paced.kind !== 'at') return rateLimited(record, plan, paced, logger, deps);
    rateWaitMs = Math.max(0, Math.ceil(paced.slot - delivery.now()));
    if (rateWaitMs > 0) await (deps.sleep ?? sleepFor)(rateWaitMs);
  }
  if (plan.kind === 'deliver' && !parking && deps.health !== undefined) {
    const heldFor = await deps.health.admit(plan.endpoint, logger);
    if (heldFor > 0) return hold(record, plan, heldFor, logger, deps);
  }
  const ordering = plan.kind === 'deliver' ? orderingOf(plan, deps) : undefined;

  let result: DeliveryResult;
  let sequence: number | undefined;
  try {
    if (plan.kind === 'invalid') {
      result = { decision: await deadLetterInvalid(plan.parsed.error, delivery) };
    } else {
      const message: QueueMessage = plan.parsed ? { body: record.body, parsed: plan.parsed } : { body: record.body };
      // At an endpoint ordered per shipment: its number, and (unless parked) whether its turn has come.
      if (ordering !== undefined) {
        const turn = parking ? undefined : await takeTurn(ordering.event, plan.endpoint, ordering.deps, plan.admission);
        if (turn?.kind === 'wait') {
          logger.info('delivery', { eventId: ordering.event.event.id, action: 'ack', why: 'waiting', sequence: turn.sequence, waitingFor: turn.waitingFor });
          return false;
        }
        sequence = turn?.sequence ?? plan.admission?.sequence ?? (await admitOrdered(ordering.event, plan.endpoint.name, ordering.deps)).sequence;
      }
      const endpointDeps = {
        ...delivery,
        endpoint: plan.endpoint.name,
        policy: plan.endpoint.policy,
        ...(sequence !== undefined ? { sequence, onDead: plan.endpoint.onDead } : {}),
      };
      result = parking
        ? await park(message, endpointDeps)
        : await (deps.deliver ?? deliverOne)(message, { ...endpointDeps, sender: await deps.routing.sender(plan.endpoint) });
    }
  } catch (error) {
    // The ledger could not be reached (or something unforeseen): leave the message untouched.
    logger.error('delivery failed', { action: 'error', durationMs: delivery.now() - startedAt, ...errorFields(error) });
    return true;
  }

  const { decision, attempt } = result;
  const fields = {
    eventId: decision.eventId,
    action: decision.action,
    ...(attempt ? { attempt: attempt.number, outcome: describeOutcome(attempt.outcome), attemptMs: attempt.durationMs } : {}),
    ...(rateWaitMs ? { rateWaitMs } : {}),
  };
  const name = endpoint?.name;
  if (attempt !== undefined && endpoint !== undefined && deps.health !== undefined) {
    await deps.health.afterAttempt(endpoint, attempt.outcome, logger);
  }
  if (attempt !== undefined) metrics.attempted(attempt.number, name);
  if (attempt?.outcome.kind === 'accepted') metrics.add('DeliveryLatency', attempt.sinceStartMs, name);
  const done = (report: boolean, extra: Record<string, unknown>) => {
    const line = { ...fields, ...extra, durationMs: delivery.now() - startedAt };
    if (report && extra.queueError) logger.warn('delivery', line);
    else logger.info('delivery', line);
    return report;
  };

  // The turn passes on once the event is settled: delivered (or a duplicate of a delivered one), or
  // dead at an endpoint whose onDead is `continue`. Repeated on every return of a settled event's
  // message (idempotent), so a crash between recording and passing loses no turn. If it fails, the
  // message is kept and returns.
  //
  // A row numbered while its endpoint was ordered passes its turn on as well after ordering was
  // turned off (as with `continue`): the events waiting behind it are woken and then sent, unordered,
  // never stranded. Rows numbered none (events since) touch no head.
  sequence ??= result.sequence;
  const settling = ordering ?? (sequence !== undefined && plan.kind === 'deliver' ? orderingOf(plan, deps, { numbered: true }) : undefined);
  const passes =
    settling !== undefined &&
    sequence !== undefined &&
    ((decision.action === 'ack' && decision.why !== 'parked') ||
      (decision.action === 'dead-letter' && settlesTurn(decision.reason) && settling.onDead === 'continue'));
  // An identity conflict took a number of its shipment's head that no row will ever settle (another
  // shipment's event holds its ID, or one admitted unnumbered): given up, so that shipment goes on.
  const givesUp =
    ordering !== undefined &&
    sequence !== undefined &&
    decision.action === 'dead-letter' &&
    decision.reason === 'identity-conflict' &&
    !holdsNumber(result, ordering.event.event.shipmentId, sequence);
  let woken: string | undefined;
  if (passes || givesUp) {
    const shipmentId = settling!.event.event.shipmentId;
    const own = { sequence: sequence!, eventId: settling!.event.event.id };
    try {
      woken = passes
        ? await passTurn(shipmentId, settling!.endpoint, own, settling!.deps, logger)
        : await giveUpNumber(shipmentId, settling!.endpoint, own, settling!.deps, logger);
    } catch (error) {
      logger.error('delivery failed', { eventId: decision.eventId, action: 'error', why: 'turn-not-passed', ...errorFields(error) });
      return true;
    }
  }
  const orderFields = { ...(sequence !== undefined ? { sequence } : {}), ...(woken !== undefined ? { woke: woken } : {}) };

  switch (decision.action) {
    case 'ack':
      if (decision.why === 'delivered') metrics.add('Delivered', 1, name);
      if (decision.why === 'parked') metrics.add('Parked', 1, name);
      return done(false, { why: decision.why, ...orderFields });
    case 'retry':
      // Retries counts failed attempts that will be tried again, not re-receives of work that
      // is in flight elsewhere or not yet due.
      if (attempt) metrics.add('Retries', 1, name);
      // Near the queue's redrive (kills, re-receives and pauses all spend receives), put it back fresh instead.
      if (endpoint !== undefined && nearRedrive(record, deps)) {
        try {
          await queue.enqueue(record.body, { endpoint: endpoint.name, delaySeconds: decision.afterSeconds });
          return done(false, { why: decision.why, afterSeconds: decision.afterSeconds, requeued: true });
        } catch (error) {
          logger.warn('requeue failed', { eventId: decision.eventId, ...errorFields(error) });
        }
      }
      try {
        await queue.retryAfter(record.receiptHandle, decision.afterSeconds);
        return done(true, { why: decision.why, afterSeconds: decision.afterSeconds });
      } catch (error) {
        return done(true, { why: decision.why, afterSeconds: decision.afterSeconds, queueError: true, ...errorFields(error) });
      }
    case 'dead-letter':
      // The detail is not logged: a validation message or a receiver's response can echo
      // payload contents. It is on the ledger row for operators.
      if (endpoint?.recovery === 'drop' && decision.reason !== 'invalid') {
        metrics.add('Dropped', 1, name);
        return done(false, { reason: decision.reason, why: 'dropped' });
      }
      try {
        await queue.deadLetter(record.body, {
          reason: decision.reason,
          ...(decision.eventId !== undefined ? { eventId: decision.eventId } : {}),
          ...(endpoint ? { endpoint: endpoint.name } : {}),
          // Only the event's own death says what became of its shipment: an identity conflict (another
          // content under its ID) leaves the event's row, and the turn, to the event's own delivery.
          ...(settling !== undefined && sequence !== undefined && settlesTurn(decision.reason) ? { ordering: passes ? 'continued' : 'held' } : {}),
        });
        metrics.add('DeadLetters', 1, name);
        return done(false, { reason: decision.reason, ...orderFields });
      } catch (error) {
        return done(true, { reason: decision.reason, queueError: true, ...errorFields(error) });
      }
  }
}

/** Whether a dead-letter reason is the delivery's own death (its row dead), which settles its turn. */
function settlesTurn(reason: DeadLetterReason): boolean {
  return reason === 'rejected' || reason === 'exhausted';
}

function isOrdered(endpoint: Endpoint): boolean {
  return endpoint.ordering === 'per-shipment';
}

/**
 * What ordering needs for a delivery to an endpoint ordered per shipment; undefined for any other,
 * unless `numbered`: its row has a number from when its endpoint was ordered (its turn is passed on
 * as under `continue`).
 */
function orderingOf(plan: Plan & { kind: 'deliver' }, deps: BatchDeps, options: { readonly numbered?: boolean } = {}) {
  const { heads } = deps;
  if (heads === undefined || (!isOrdered(plan.endpoint) && options.numbered !== true) || plan.parsed === undefined) return undefined;
  const orderingDeps: OrderingDeps = {
    heads,
    ledger: deps.delivery.ledger,
    queue: deps.queue,
    now: deps.delivery.now,
    retentionSeconds: deps.delivery.retentionSeconds,
  };
  const onDead = isOrdered(plan.endpoint) ? plan.endpoint.onDead : 'continue';
  return { event: plan.parsed, endpoint: plan.endpoint.name, onDead, deps: orderingDeps };
}

/**
 * A delivery to a paused endpoint: back on the queue when the pause ends, with no claim and no
 * attempt spent. If its visibility cannot be set it returns sooner and is held again.
 *
 * Every hold, retry and re-receive is a receive, and SQS moves a message received `maxReceiveCount`
 * times to the dead-letter queue by itself, with no reason and perhaps no row yet. So a message near
 * that count (`nearRedrive`), held here or retried, is put back as a fresh message for its endpoint
 * (delayed by the wait, up to SQS's 15 min) and this one acknowledged: a delivery is never redriven.
 */
async function hold(
  record: SQSRecord,
  plan: Plan & { kind: 'deliver' },
  seconds: number,
  logger: Logger,
  deps: BatchDeps,
  why: 'paused' | 'rate-limited' | 'rate-limit-unavailable' = 'paused',
): Promise<boolean> {
  deps.metrics.add(why === 'paused' ? 'Paused' : 'RateLimited', 1, plan.endpoint.name);
  const fields = { ...(plan.parsed ? { eventId: plan.parsed.event.id } : {}), action: 'retry', why, afterSeconds: seconds };
  return keep(record, seconds, fields, logger, deps, { endpoint: plan.endpoint.name, ...(plan.admission ? { admission: plan.admission } : {}) });
}

/**
 * Keeps a record on the queue for `seconds` without deciding anything: its visibility set, then
 * reported (if the visibility cannot be set it returns sooner, and is kept again). Near the queue's
 * redrive (`nearRedrive`) it is put back fresh instead, as `putBack` says (for an endpoint, with its
 * admission; or a producer's message), delayed by `seconds`, and this one acknowledged.
 * Returns whether the record is reported.
 */
async function keep(
  record: SQSRecord,
  seconds: number,
  fields: Record<string, unknown> & { why: string },
  logger: Logger,
  deps: BatchDeps,
  putBack: EnqueueOptions,
  level: 'info' | 'warn' = 'info',
): Promise<boolean> {
  if (nearRedrive(record, deps)) {
    try {
      await deps.queue.enqueue(record.body, { ...putBack, delaySeconds: seconds });
      logger[level]('delivery', { ...fields, action: 'ack', why: `${fields.why}-requeued` });
      return false;
    } catch (error) {
      logger.warn('delivery', { ...fields, queueError: true, ...errorFields(error) });
    }
  }
  try {
    await deps.queue.retryAfter(record.receiptHandle, seconds);
    logger[level]('delivery', fields);
  } catch (error) {
    logger.warn('delivery', { ...fields, queueError: true, ...errorFields(error) });
  }
  return true;
}

/**
 * A delivery the rate limit keeps from being sent in this invocation, with no attempt spent: put
 * back carrying its slot (acknowledged), or held (beyond the horizon, or the schedule unreachable).
 */
async function rateLimited(record: SQSRecord, plan: Plan & { kind: 'deliver' }, paced: Exclude<Pace, { kind: 'at' }>, logger: Logger, deps: BatchDeps): Promise<boolean> {
  switch (paced.kind) {
    case 'beyond-horizon':
      return hold(record, plan, paced.seconds, logger, deps, 'rate-limited');
    case 'unavailable':
      return hold(record, plan, RATE_LIMIT_UNAVAILABLE_SECONDS, logger, deps, 'rate-limit-unavailable');
    case 'put-back':
      break;
  }
  const fields = { ...(plan.parsed ? { eventId: plan.parsed.event.id } : {}), why: 'rate-limited', notBefore: Math.ceil(paced.slot) };
  if (paced.sent) {
    deps.metrics.add('RateLimited', 1, plan.endpoint.name);
    logger.info('delivery', { ...fields, action: 'ack', afterSeconds: paced.delaySeconds, requeued: true });
    return false;
  }
  // Not put back: its slot is lost; held until then, it reserves again when it returns.
  return hold(record, plan, Math.max(1, Math.ceil((paced.slot - deps.delivery.now()) / 1000)), logger, deps, 'rate-limited');
}
