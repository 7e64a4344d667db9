/**
 * The settle stage (lib/batch.ts): what becomes of a record's message once its path is decided, and
 * the one log line that says so. After an attempt, its endpoint's health is told the outcome and the
 * shipment's turn is passed on (lib/consumer/turns.ts); then the queue hears the decision:
 * - ack:         not reported, so Lambda deletes it;
 * - retry/hold:  its visibility set to the wait, then reported (`keep`);
 * - put-back:    near the queue's redrive, a fresh message instead, and this one acknowledged;
 * - dead-letter: the body sent to the dead-letter queue (not for `recovery: drop`), then deleted.
 * Returns whether Lambda must keep the message (a batch item failure).
 */
import type { SQSRecord } from 'aws-lambda';
import type { BatchDeps } from '../batch';
import { fromFifoQueue } from '../fifo';
import { errorFields, type Logger } from '../observability';
import { describeOutcome } from '../outcome';
import type { EnqueueOptions } from '../queue/queue';
import type { Delivered } from './deliver';
import type { Paced } from './pace';
import type { Deliver, FanOut, Invalid, Unresolved, Unrouted } from './plan';
import { carriedBy, traceFields } from './trace';
import { passTurn, type Passed } from './turns';

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

/** Receives a held message keeps in hand before its redrive: it is put back fresh at this many short of the limit. */
const RECEIVES_KEPT = 3;

/** A decided delivery (or an invalid message): its attempt's aftermath, then the queue's action. */
export async function settle(record: SQSRecord, plan: Deliver | Invalid, delivered: Delivered, rateWaitMs: number | undefined, startedAt: number, logger: Logger, deps: BatchDeps): Promise<boolean> {
  const { delivery, queue, metrics } = deps;
  if (delivered.kind === 'wait') {
    logger.info('delivery', { eventId: delivered.eventId, action: 'ack', why: 'waiting', sequence: delivered.sequence, waitingFor: delivered.waitingFor });
    return false;
  }
  if (delivered.kind === 'failed') {
    // The ledger could not be reached (or something unforeseen): leave the message untouched.
    logger.error('delivery failed', { action: 'error', durationMs: delivery.now() - startedAt, ...errorFields(delivered.error) });
    return true;
  }
  const { result } = delivered;
  const { decision, attempt } = result;
  const endpoint = plan.kind === 'deliver' ? plan.endpoint : undefined;
  const name = endpoint?.name;
  const fields = {
    eventId: decision.eventId,
    action: decision.action,
    ...(attempt ? { attempt: attempt.number, outcome: describeOutcome(attempt.outcome), attemptMs: attempt.durationMs } : {}),
    ...(rateWaitMs ? { rateWaitMs } : {}),
  };
  if (attempt !== undefined && endpoint !== undefined && deps.health !== undefined) {
    // Not waited for: what it holds back it holds at once, and its writes are the batch's to wait for
    // (`settled`), never this delivery's.
    void deps.health.afterAttempt(endpoint, attempt.outcome, logger);
  }
  if (attempt !== undefined) metrics.attempted(attempt.number, name);
  if (attempt?.outcome.kind === 'accepted') metrics.add('DeliveryLatency', attempt.sinceStartMs, name);
  const done = (report: boolean, extra: Record<string, unknown>) => {
    const line = { ...fields, ...extra, durationMs: delivery.now() - startedAt };
    if (report && extra.queueError) logger.warn('delivery', line);
    else logger.info('delivery', line);
    return report;
  };

  const passed: Passed = plan.kind === 'deliver' ? await passTurn(plan, delivered.turn, result, logger, deps) : { kind: 'passed' };
  if (passed.kind === 'failed') {
    // The message is kept: it passes the turn when it returns.
    logger.error('delivery failed', { eventId: decision.eventId, action: 'error', why: 'turn-not-passed', ...errorFields(passed.error) });
    return true;
  }
  const orderFields = { ...(passed.sequence !== undefined ? { sequence: passed.sequence } : {}), ...(passed.woke !== undefined ? { woke: passed.woke } : {}) };

  switch (decision.action) {
    case 'ack':
      if (decision.why === 'delivered') metrics.add('Delivered', 1, name);
      if (decision.why === 'parked') metrics.add('Parked', 1, name);
      return done(false, { why: decision.why, ...orderFields });
    case 'retry': {
      // Retries counts failed attempts that will be tried again, not re-receives of work that
      // is in flight elsewhere or not yet due.
      if (attempt) metrics.add('Retries', 1, name);
      const wait = { why: decision.why, afterSeconds: decision.afterSeconds };
      const putBack = endpoint !== undefined ? putBackNearRedrive(record, { endpoint: endpoint.name, delaySeconds: decision.afterSeconds }, deps) : undefined;
      if (putBack !== undefined) {
        const answer = await putBack;
        if (answer.sent) return done(false, { ...wait, requeued: true });
        logger.warn('requeue failed', { eventId: decision.eventId, ...errorFields(answer.error) });
      }
      try {
        await queue.retryAfter(record.receiptHandle, decision.afterSeconds);
        return done(true, wait);
      } catch (error) {
        return done(true, { ...wait, queueError: true, ...errorFields(error) });
      }
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
          ...(passed.shipment !== undefined ? { ordering: passed.shipment } : {}),
        });
        metrics.add('DeadLetters', 1, name);
        return done(false, { reason: decision.reason, ...orderFields });
      } catch (error) {
        return done(true, { reason: decision.reason, queueError: true, ...errorFields(error) });
      }
  }
}

/**
 * A delivery the pace stage kept from being sent in this invocation, with no attempt spent: put back
 * carrying its slot (acknowledged), or held (`keep`) until its endpoint's pause ends, its slot comes
 * near, or its schedule may be reached again. If its visibility cannot be set it returns sooner and
 * is paced again.
 */
export async function settlePaced(record: SQSRecord, plan: Deliver, paced: Extract<Paced, { kind: 'put-back' | 'hold' }>, logger: Logger, deps: BatchDeps): Promise<boolean> {
  const eventId = plan.parsed ? { eventId: plan.parsed.event.id } : {};
  if (paced.kind === 'put-back') {
    deps.metrics.add('RateLimited', 1, plan.endpoint.name);
    logger.info('delivery', { ...eventId, why: 'rate-limited', notBefore: Math.ceil(paced.slot), action: 'ack', afterSeconds: paced.delaySeconds, requeued: true });
    return false;
  }
  deps.metrics.add(paced.why === 'paused' ? 'Paused' : 'RateLimited', 1, plan.endpoint.name);
  const fields = { ...eventId, action: 'retry', why: paced.why, afterSeconds: paced.seconds };
  return keep(record, paced.seconds, fields, logger, deps, { endpoint: plan.endpoint.name, ...(plan.admission ? { admission: plan.admission } : {}) });
}

/**
 * A record held because an endpoint it would go to cannot be resolved (or the registry could not be
 * read): no claim, no request, no ledger write; reported with its visibility set to
 * `unresolvedWaitSeconds`, or put back fresh near the queue's redrive (`keep`). A record of the
 * ordered intake is reported alone: its receipt handle is not the delivery queue's, and its shipment
 * waits behind it. Logged with its event and endpoints; counted `EndpointUnresolved` per endpoint.
 */
export async function unresolvable(record: SQSRecord, plan: Unresolved, deps: BatchDeps): Promise<boolean> {
  const seconds = unresolvedWaitSeconds(record);
  if (plan.endpoints.length === 0) deps.metrics.add('EndpointUnresolved', 1);
  for (const name of plan.endpoints) deps.metrics.add('EndpointUnresolved', 1, name);
  const logger = deps.logger.child({ messageId: record.messageId, ...traceFields(deps.spans?.get(record)) });
  const fields = { ...(plan.eventId ? { eventId: plan.eventId } : {}), endpoints: plan.endpoints, action: 'retry', why: plan.why, afterSeconds: seconds };
  if (fromFifoQueue(record)) {
    const { afterSeconds: _queueDefault, ...held } = fields;
    logger.warn('delivery', held);
    return true;
  }
  const putBack: EnqueueOptions = plan.target !== undefined ? { endpoint: plan.target, ...(plan.admission ? { admission: plan.admission } : {}) } : {};
  return keep(record, seconds, fields, logger, deps, putBack, 'warn');
}

/** Nothing to deliver: acknowledged, counted `Unrouted`. */
export function unrouted(plan: Unrouted, logger: Logger, deps: BatchDeps): boolean {
  deps.metrics.add('Unrouted', 1);
  logger.info('delivery', {
    ...(plan.eventId ? { eventId: plan.eventId } : {}),
    ...(plan.endpoint ? { endpoint: plan.endpoint } : {}),
    action: 'ack',
    why: plan.why,
  });
  return false;
}

/** A fanned-out record: acknowledged once its endpoint messages are sent, else reported (it is routed again). */
export function fannedOut(record: SQSRecord, plan: FanOut, sent: boolean, deps: BatchDeps): boolean {
  const fields = {
    messageId: record.messageId,
    ...traceFields(deps.spans?.get(record)),
    eventId: plan.eventId,
    action: sent ? 'ack' : 'retry',
    why: sent ? 'fanned-out' : 'fan-out-failed',
    endpoints: plan.endpoints.map((endpoint) => endpoint.name),
  };
  if (sent) deps.logger.info('delivery', fields);
  else deps.logger.warn('delivery', fields);
  return !sent;
}

/** A record whose planning threw: reported alone. */
export function unplanned(record: SQSRecord, error: unknown, deps: BatchDeps): boolean {
  deps.logger.error('delivery failed', { messageId: record.messageId, action: 'error', ...errorFields(error) });
  return true;
}

/**
 * Keeps a record on the queue for `seconds` without deciding anything: its visibility set, then
 * reported (if the visibility cannot be set it returns sooner, and is kept again). Near the queue's
 * redrive it is put back fresh instead (`putBackNearRedrive`: for an endpoint, with its admission; or
 * a producer's message), delayed by `seconds`, and this one acknowledged.
 */
async function keep(
  record: SQSRecord,
  seconds: number,
  fields: Record<string, unknown> & { why: string },
  logger: Logger,
  deps: BatchDeps,
  options: EnqueueOptions,
  level: 'info' | 'warn' = 'info',
): Promise<boolean> {
  const putBack = putBackNearRedrive(record, { ...options, delaySeconds: seconds }, deps);
  if (putBack !== undefined) {
    const answer = await putBack;
    if (answer.sent) {
      logger[level]('delivery', { ...fields, action: 'ack', why: `${fields.why}-requeued` });
      return false;
    }
    logger.warn('delivery', { ...fields, queueError: true, ...errorFields(answer.error) });
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
 * Every hold, retry and re-receive is a receive, and SQS moves a message received `maxReceiveCount`
 * times to the dead-letter queue by itself, with no reason and perhaps no row yet. So a message
 * within RECEIVES_KEPT of that count is put back as a fresh message (delayed by its wait, up to SQS's
 * 15 min) and this one acknowledged: a delivery is never redriven. Undefined when it is not that near;
 * else whether it was sent (if not, the caller keeps it as usual).
 */
function putBackNearRedrive(record: SQSRecord, options: EnqueueOptions, deps: BatchDeps): Promise<{ sent: true } | { sent: false; error: unknown }> | undefined {
  const nearRedrive = deps.receiveLimit !== undefined && Number(record.attributes?.ApproximateReceiveCount) >= deps.receiveLimit - RECEIVES_KEPT;
  if (!nearRedrive) return undefined;
  return deps.queue.enqueue(record.body, { ...options, ...carriedBy(record, deps) }).then(
    () => ({ sent: true }),
    (error: unknown) => ({ sent: false, error }),
  );
}
