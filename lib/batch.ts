/**
 * The batch use case: route each record of an SQS batch, deliver it, and answer Lambda's partial
 * batch response (docs/contract.md §4: one bad message never fails or delays the others; §11:
 * routing).
 *
 * A record goes through four stages (lib/consumer/), each taking and returning typed values, so its
 * path reads top to bottom in `processRecord`:
 * - plan (plan.ts): parse and route it: a `Plan` (one delivery, an invalid message, a fan-out,
 *   unrouted, held as unresolved, or planning failed). The batch's fan-outs go in one send.
 * - pace (pace.ts): whether a delivery goes now: `Paced` (go, park, put back for its rate-limit
 *   slot, or hold for a pause or the rate limit). The batch's slots are reserved at once.
 * - deliver (deliver.ts): the ledger decides it (its shipment's turn taken first, then claim, send,
 *   record; or park): `Delivered` (decided, waiting for its turn, or failed).
 * - settle (settle.ts): health told of the attempt, the turn passed on (turns.ts), and the queue's
 *   action with the one log line: whether Lambda keeps the message.
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
import pLimit, { type LimitFunction } from 'p-limit';
import type { DeliverDeps, DeliveryResult, QueueMessage } from './deliver';
import type { HealthTracker } from './endpoints/health';
import type { RateLimiter } from './endpoints/rate-limit';
import { batchItemFailures, fromFifoQueue, inGroupOrder } from './fifo';
import type { ShipmentHeads } from './ledger/shipment-heads';
import { errorFields, type Logger, type MetricsRecorder } from './observability';
import type { DeliveryQueue } from './queue/queue';
import type { ControlValues, MessageSeal } from './queue/seal';
import type { Routes, Routing } from './routing';
import type { ActiveSpan, Tracing } from './tracing/tracing';
import { deliver } from './consumer/deliver';
import { pace, reserveSlots, type Paced, type Slot } from './consumer/pace';
import { controlOf, fanOut, planOf, registryUnavailable, scopeOf, type Deliver, type Invalid, type Unresolved, type Unrouted } from './consumer/plan';
import { fannedOut, settle, settlePaced, unplanned, unresolvable, unrouted } from './consumer/settle';
import { routed, startSpans, traceFields } from './consumer/trace';

export { beyondHorizonSeconds, IN_PROCESS_WAIT_MS, LATE_SLOT_MS, RATE_LIMIT_UNAVAILABLE_SECONDS } from './consumer/pace';
export { UNRESOLVED_FIRST_WAIT_SECONDS, UNRESOLVED_MAX_WAIT_SECONDS, unresolvedWaitSeconds } from './consumer/settle';

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
  readonly health?: Pick<HealthTracker, 'refresh' | 'pausedFor' | 'admit' | 'afterAttempt' | 'settled'>;
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
  /** Tracing (docs/contract.md §19, lib/consumer/trace.ts). Unset: off, nothing traced. */
  readonly tracing?: Tracing;
  /** The batch's spans, one per record, made here while tracing is on. */
  readonly spans?: ReadonlyMap<SQSRecord, ActiveSpan>;
}

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

async function processRecords(records: readonly SQSRecord[], batch: BatchDeps): Promise<SQSBatchResponse> {
  const limit = pLimit(Math.max(1, batch.concurrency));
  const controls = records.map((record) => controlOf(record, batch.seal));
  const deps = batch.tracing !== undefined ? { ...batch, spans: startSpans(batch.tracing, records, controls, batch.logger) } : batch;
  const reported = await routeAndDeliver(records, controls, limit, deps);
  // Each span ended before the answer: the handler flushes them (lib/consumer/consumer.ts).
  if (deps.spans !== undefined) {
    records.forEach((record, i) => {
      const span = deps.spans!.get(record);
      span?.set({ 'handoff.kept': reported[i] });
      span?.end();
    });
  }
  return failuresOf(records, reported);
}

async function routeAndDeliver(records: readonly SQSRecord[], controls: readonly ControlValues[], limit: LimitFunction, deps: BatchDeps): Promise<boolean[]> {
  let routes: Routes;
  try {
    [routes] = await Promise.all([deps.routing.routes(scopeOf(records, controls)), deps.health?.refresh()]);
  } catch (error) {
    // The registry could not be read and no copy of it is at hand: every message is held, none decided.
    deps.logger.error('routing failed', { action: 'error', ...errorFields(error) });
    return Promise.all(records.map((record, i) => limit(() => unresolvable(record, registryUnavailable(record, controls[i]!, deps), deps))));
  }
  const plans = await Promise.all(records.map((record, i) => limit(() => planOf(record, controls[i]!, routes, deps))));
  if (deps.spans !== undefined) plans.forEach((plan, i) => routed(deps.spans!.get(records[i]!), plan));
  const sent = fanOut(records, plans, deps);
  const slots = await reserveSlots(records, controls, plans, deps);
  const reported = await Promise.all(
    records.map((record, i) => {
      const plan = plans[i]!;
      switch (plan.kind) {
        case 'unplanned':
          return unplanned(record, plan.error, deps);
        case 'fan-out':
          return sent.then((ok) => fannedOut(record, plan, ok, deps));
        default:
          return limit(() => processRecord(record, plan, slots.get(i), deps));
      }
    }),
  );
  // Health's writes in flight (a flush, a pause) land before Lambda has the answer and may freeze the container.
  await deps.health?.settled();
  return reported;
}

/** One record's path through the stages. Returns true when Lambda must keep the message (a batch item failure). */
async function processRecord(record: SQSRecord, plan: Deliver | Invalid | Unrouted | Unresolved, slot: Slot | undefined, deps: BatchDeps): Promise<boolean> {
  const startedAt = deps.delivery.now();
  const endpoint = plan.kind === 'deliver' ? plan.endpoint.name : undefined;
  const span = deps.spans?.get(record);
  const logger = deps.logger.child({ messageId: record.messageId, ...(endpoint ? { endpoint } : {}), ...traceFields(span) });
  const sentAtMs = Number(record.attributes?.SentTimestamp);
  if (Number.isFinite(sentAtMs) && sentAtMs > 0) deps.metrics.add('PendingAge', Math.max(0, (startedAt - sentAtMs) / 1000), endpoint);
  switch (plan.kind) {
    case 'unrouted':
      return unrouted(plan, logger, deps);
    case 'unresolved':
      return unresolvable(record, plan, deps);
    case 'invalid':
      return settle(record, plan, await deliver(record, plan, false, deps, span), undefined, startedAt, logger, deps);
    case 'deliver': {
      const paced = await pace(plan, slot, logger, deps);
      if (span !== undefined) paceEvent(span, paced);
      if (paced.kind === 'put-back' || paced.kind === 'hold') return settlePaced(record, plan, paced, logger, deps);
      const delivered = await deliver(record, plan, paced.kind === 'park', deps, span);
      return settle(record, plan, delivered, paced.kind === 'go' ? paced.rateWaitMs : undefined, startedAt, logger, deps);
    }
  }
}

/** The pace stage's answer on a delivery's span: the wait it spent, or why it was not sent now. */
function paceEvent(span: ActiveSpan, paced: Paced): void {
  switch (paced.kind) {
    case 'go':
      if (paced.rateWaitMs) span.event('rate-wait', { 'handoff.wait_ms': paced.rateWaitMs });
      return;
    case 'hold':
      span.event('held', { 'handoff.why': paced.why, 'handoff.wait_s': paced.seconds });
      return;
    case 'put-back':
      span.event('put-back', { 'handoff.wait_s': paced.delaySeconds });
      return;
    case 'park':
      span.event('parked');
  }
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
