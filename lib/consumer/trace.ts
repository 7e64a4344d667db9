/**
 * The consumer's spans (docs/contract.md §19), while tracing is on (`BatchDeps.tracing`): one per
 * record handled, `handoff.deliver` (renamed `handoff.route` for a producer's message fanned out),
 * a child of its message's context, with routing, claim, send and record as its events. What the
 * record's re-sends carry (fan-out, put-back, requeue) is its message's context, so each endpoint's
 * delivery stays in the producer's trace; with none, this span's own, so they share one.
 * With tracing off each of these is one branch.
 */
import type { SQSRecord } from 'aws-lambda';
import type { BatchDeps } from '../batch';
import type { Logger } from '../observability';
import type { ControlValues } from '../queue/seal';
import type { TraceCarrier } from '../tracing/carrier';
import { messageContextOf, type ActiveSpan, type Tracing } from '../tracing/tracing';
import type { Plan } from './plan';

/** The span name of a delivery's handling: one per attempt (and per hold or wait that spends none). */
export const DELIVER_SPAN = 'handoff.deliver';
/** A producer's message fanned out to its endpoints: their deliveries are its siblings in the producer's trace. */
export const ROUTE_SPAN = 'handoff.route';

/** A span per record, each a child of its message's context; an invalid `traceparent` is logged and ignored. */
export function startSpans(tracing: Tracing, records: readonly SQSRecord[], controls: readonly ControlValues[], logger: Logger): Map<SQSRecord, ActiveSpan> {
  const spans = new Map<SQSRecord, ActiveSpan>();
  records.forEach((record, i) => {
    const from = messageContextOf(record, controls[i]);
    // Input, never an instruction: a malformed context starts a trace of its own, and says so.
    if (from.invalid) logger.info('trace context ignored', { messageId: record.messageId, why: 'invalid-traceparent' });
    spans.set(record, tracing.start(DELIVER_SPAN, from, { 'messaging.system': 'aws_sqs', 'messaging.message.id': record.messageId }));
  });
  return spans;
}

/** Routing's answer on the span: its plan, and for a fan-out its name and endpoints. */
export function routed(span: ActiveSpan | undefined, plan: Plan): void {
  if (span === undefined) return;
  switch (plan.kind) {
    case 'deliver':
      span.set({ 'handoff.event_id': plan.parsed?.event.id, 'handoff.endpoint': plan.endpoint.name });
      span.event('routed', { 'handoff.endpoint': plan.endpoint.name });
      return;
    case 'fan-out':
      span.rename(ROUTE_SPAN);
      span.set({ 'handoff.event_id': plan.eventId, 'handoff.endpoints': plan.endpoints.map((endpoint) => endpoint.name).join(',') });
      span.event('routed', { 'handoff.endpoints': plan.endpoints.length });
      return;
    case 'unplanned':
      span.event('routed', { 'handoff.plan': plan.kind });
      return;
    default:
      span.set({ 'handoff.event_id': 'eventId' in plan ? plan.eventId : undefined });
      span.event('routed', { 'handoff.plan': plan.kind });
  }
}

/** What a record's re-sends carry (`trace` of EnqueueOptions and EndpointMessage): empty with tracing off. */
export function carriedBy(record: SQSRecord, deps: Pick<BatchDeps, 'spans'>): { trace?: TraceCarrier } {
  const span = deps.spans?.get(record);
  return span !== undefined ? { trace: span.carried } : {};
}

/** The span's IDs as log fields (`traceId`, `spanId`), so a log line finds its trace. */
export function traceFields(span: ActiveSpan | undefined): { traceId?: string; spanId?: string } {
  return span !== undefined ? { traceId: span.traceId, spanId: span.spanId } : {};
}
