/**
 * Traces from the producer to the receiver (docs/contract.md §19), with the real consumer handler
 * against fauxqs, dynalite, loopback receivers and a loopback OTLP/HTTP receiver standing for the
 * collector: each attempt is a `handoff.deliver` span in the producer's trace, the receiver's
 * request carries that span's context, a fan-out keeps both deliveries in the one trace, a re-send
 * that names its original (a replay's) links to it, a dead delivery's replay links to the trace its
 * row kept of its first attempt, a producer's malformed context starts a trace of its own, SQS's
 * AWSTraceHeader is the parent only when it says Sampled=1 (and never of handoff's own re-send), and
 * with tracing off nothing is traced or sent.
 */
import { SendMessageCommand, type Message, type MessageAttributeValue, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCE_ENV } from '../../lib/config';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { replayDelivery } from '../../lib/replay';
import { parseTraceparent } from '../../lib/tracing/carrier';
import { coldStartOnRegistry, isolateEachTest, lambdaContext, seededRegistry, useConsumerHarness, type ConsumerHarness, type Handler } from '../helpers/consumer-harness';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { queueArnFromUrl, recordFromMessage, sqsEvent, TEST_SEAL } from '../helpers/sqs-records';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver';

const VISIBILITY_SECONDS = 30;
const PRODUCER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PRODUCER_SPAN = '00f067aa0ba902b7';
const PRODUCER_TRACEPARENT = `00-${PRODUCER_TRACE}-${PRODUCER_SPAN}-01`;
// What SQS keeps as AWSTraceHeader from a Lambda producer's SendMessage (its _X_AMZN_TRACE_ID).
const AWS_TRACE = '6931bd3e2c5b6f0a1d9e8f7a3b4c5d6e';
const AWS_PARENT = '7c1e2f3a4b5d6e70';
const awsTraceHeader = (sampled: 0 | 1) => `Root=1-${AWS_TRACE.slice(0, 8)}-${AWS_TRACE.slice(8)};Parent=${AWS_PARENT};Sampled=${sampled}`;

let harness: ConsumerHarness;
let sqs: SQSClient;
let receiver: TestReceiver;
let other: TestReceiver;
let otlp: OtlpReceiver;

useConsumerHarness('tracing', async (started) => {
  harness = started;
  ({ sqs, receiver } = harness);
});

beforeAll(async () => {
  [other, otlp] = await Promise.all([startTestReceiver(), startOtlpReceiver()]);
});

afterAll(async () => {
  await Promise.all([other?.close(), otlp?.close()]);
});

let logs: string[] = [];
isolateEachTest((lines) => {
  logs = lines;
});

const tracingOn = () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'handoff-test', OTEL_TRACES_SAMPLER: 'parentbased_always_on' });

function event(id: string, status = 'delivered'): string {
  return JSON.stringify({ id, shipmentId: 'shp_1', status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier: 'acme' } });
}

async function send(queueUrl: string, body: string, attributes: Record<string, string> = {}): Promise<void> {
  const MessageAttributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(attributes)) MessageAttributes[name] = { DataType: 'String', StringValue: value };
  await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, ...(Object.keys(attributes).length > 0 ? { MessageAttributes } : {}) }));
}

/**
 * The consumer handed `messages` as Lambda hands them over, each with the AWSTraceHeader SQS keeps of
 * its sender's X-Amzn-Trace-Id: fauxqs keeps no system attribute a sender sets, so it is put on the
 * record here, where SQS would have. The messages stay on the queue (each test has its own).
 */
function invokeWithAwsTraceHeader(handler: Handler, queueUrl: string, messages: readonly Message[], header: string): Promise<SQSBatchResponse> {
  const records = messages.map((message) => {
    const record = recordFromMessage(message, queueArnFromUrl(queueUrl));
    return { ...record, attributes: { ...record.attributes, AWSTraceHeader: header } };
  });
  return handler(sqsEvent(records), lambdaContext());
}

const spansOf = (eventId: string, name = 'handoff.deliver'): ReceivedSpan[] => otlp.spans.filter((span) => span.name === name && span.attributes['handoff.event_id'] === eventId);
const header = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** A single-endpoint consumer on fresh queues (the harness's receiver is `default`), `env` on top. */
async function singleEndpoint(env: Record<string, string>) {
  const queues = await harness.createQueues(VISIBILITY_SECONDS);
  const handler = await harness.coldStart({
    [RESOURCE_ENV.queueUrl]: queues.queueUrl,
    [RESOURCE_ENV.deadLetterQueueUrl]: queues.deadLetterQueueUrl,
    HANDOFF_RETRY_SCHEDULE: '0,30',
    HANDOFF_ATTEMPT_TIMEOUT_MS: '3000',
    ...env,
  });
  return { handler, ...queues };
}

describe('Tracing: consumer spans in the producer\'s trace', () => {
  it("makes each attempt a handoff.deliver span under the producer's span, and the receiver's request carries that span's context", async () => {
    // Prepare: the receiver fails the first attempt.
    const { handler, queueUrl } = await singleEndpoint(tracingOn());
    receiver.respondTo('evt_trace_1', 503, 200);
    await send(queueUrl, event('evt_trace_1'), { traceparent: PRODUCER_TRACEPARENT, tracestate: 'vendor=abc' });

    // Act: the first attempt (503), then the retry (its wait is 0 s).
    const first = await harness.invoke(handler, queueUrl, await harness.receive(queueUrl, 1));
    const second = await harness.invoke(handler, queueUrl, await harness.receive(queueUrl, 1));

    // Assess: two attempt spans, both children of the producer's span, exported before the handler returned.
    expect(first.batchItemFailures).toHaveLength(1);
    expect(second.batchItemFailures).toEqual([]);
    const spans = spansOf('evt_trace_1');
    expect(spans.map((span) => [span.attributes['handoff.attempt'], span.attributes['handoff.outcome'], span.attributes['http.response.status_code']])).toEqual([
      [1, 'temporary', 503],
      [2, 'accepted', 200],
    ]);
    for (const span of spans) {
      expect(span.traceId).toBe(PRODUCER_TRACE);
      expect(span.parentSpanId).toBe(PRODUCER_SPAN);
      expect(span.service).toBe('handoff-test');
      expect(span.attributes['handoff.endpoint']).toBe('default');
      expect(span.events.map((e) => e.name)).toEqual(['routed', 'claimed', 'sent', 'recorded']);
    }
    expect(spans.map((span) => span.attributes['handoff.action'])).toEqual(['retry', 'ack']);
    // Each request carries its own attempt's span, in the producer's trace, with the producer's tracestate.
    const requests = receiver.requestsFor('evt_trace_1');
    expect(requests).toHaveLength(2);
    requests.forEach((request, i) => {
      expect(parseTraceparent(header(request.headers.traceparent))).toEqual({ traceId: PRODUCER_TRACE, spanId: spans[i]!.spanId, sampled: true });
      expect(header(request.headers.tracestate)).toBe('vendor=abc');
    });
    // The delivery's log line names its trace and span.
    const line = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.message === 'delivery' && l.eventId === 'evt_trace_1' && l.action === 'ack');
    expect(line).toMatchObject({ traceId: PRODUCER_TRACE, spanId: spans[1]!.spanId });
  });

  it("keeps both deliveries of a fan-out in the producer's trace, each endpoint's message carrying the producer's context", async () => {
    // Prepare: two endpoints subscribed to the event.
    const queues = await harness.createQueues(VISIBILITY_SECONDS);
    const { tableName } = await seededRegistry(harness, 'tracing', [
      { name: 'acme', url: receiver.url, eventTypes: ['shipment.delivered'] },
      { name: 'notify', url: other.url, eventTypes: ['shipment.delivered'] },
    ]);
    const handler = await coldStartOnRegistry(harness, queues, tableName, tracingOn());
    await send(queues.queueUrl, event('evt_trace_fan'), { traceparent: PRODUCER_TRACEPARENT });

    // Act: routed, then each endpoint's message delivered.
    await harness.invoke(handler, queues.queueUrl, await harness.receive(queues.queueUrl, 1));
    const forEndpoints = await harness.receive(queues.queueUrl, 2);
    await harness.invoke(handler, queues.queueUrl, forEndpoints);

    // Assess
    expect(forEndpoints.map((m) => m.MessageAttributes?.traceparent?.StringValue)).toEqual([PRODUCER_TRACEPARENT, PRODUCER_TRACEPARENT]);
    const [route] = spansOf('evt_trace_fan', 'handoff.route');
    expect(route).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: PRODUCER_SPAN });
    const deliveries = spansOf('evt_trace_fan');
    expect(deliveries.map((span) => span.attributes['handoff.endpoint']).sort()).toEqual(['acme', 'notify']);
    for (const span of deliveries) expect(span).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: PRODUCER_SPAN });
    const sent = [...receiver.requestsFor('evt_trace_fan'), ...other.requestsFor('evt_trace_fan')].map((r) => parseTraceparent(header(r.headers.traceparent)));
    expect(sent.map((p) => p?.traceId)).toEqual([PRODUCER_TRACE, PRODUCER_TRACE]);
    expect(sent.map((p) => p?.spanId).sort()).toEqual(deliveries.map((span) => span.spanId).sort());
  });

  it("links a replay's delivery to its original trace, and only a sealed link counts", async () => {
    // Prepare: the original delivery, traced.
    const { handler, queueUrl, deadLetterQueueUrl } = await singleEndpoint(tracingOn());
    await send(queueUrl, event('evt_trace_replay'), { traceparent: PRODUCER_TRACEPARENT });
    await harness.invoke(handler, queueUrl, await harness.receive(queueUrl, 1));
    const [original] = spansOf('evt_trace_replay');
    const originalTraceparent = `00-${original!.traceId}-${original!.spanId}-01`;

    // Act: handoff's own re-send naming the original (as a replay's enqueue does), and a producer's
    // message claiming a link without a seal.
    const queue = new SqsDeliveryQueue({ client: sqs, queueUrl, deadLetterQueueUrl, seal: TEST_SEAL });
    await queue.enqueue(event('evt_trace_replay'), { endpoint: 'default', link: originalTraceparent });
    await send(queueUrl, event('evt_trace_forged'), { tracelink: originalTraceparent });
    await harness.invoke(handler, queueUrl, await harness.receive(queueUrl, 2));

    // Assess: the replay's span is a new trace linked to the original; the producer's claim is ignored.
    const replayed = spansOf('evt_trace_replay')[1]!;
    expect(replayed.links).toEqual([{ traceId: original!.traceId, spanId: original!.spanId }]);
    expect(replayed.traceId).not.toBe(original!.traceId);
    expect(replayed.attributes['handoff.why']).toBe('duplicate');
    expect(spansOf('evt_trace_forged')[0]!.links).toEqual([]);
  });

  it("links a dead delivery's replay to the trace of its first attempt, kept on its row: the replay's span is a trace of its own", async () => {
    // Prepare: the first attempt is rejected (400), in the producer's trace; the receiver accepts the replay.
    const { handler, queueUrl, deadLetterQueueUrl } = await singleEndpoint(tracingOn());
    receiver.respondTo('evt_trace_dies', 400, 200);
    await send(queueUrl, event('evt_trace_dies'), { traceparent: PRODUCER_TRACEPARENT });
    const died = await harness.invoke(handler, queueUrl, await harness.receive(queueUrl, 1));
    const [original] = spansOf('evt_trace_dies');
    const key = { eventId: 'evt_trace_dies', endpoint: 'default' };
    const dead = await harness.ledger.get(key);

    // Act: the operator's replay (the use case `handoff replay` runs), then the consumer takes its message.
    const queue = new SqsDeliveryQueue({ client: sqs, queueUrl, deadLetterQueueUrl, seal: TEST_SEAL });
    await replayDelivery({ ...key, operator: 'ops', reason: 'receiver fixed', nowMs: Date.now() }, { ledger: harness.ledger, queue });
    const [message] = await harness.receive(queueUrl, 1);
    const replayed = await harness.invoke(handler, queueUrl, [message!]);

    // Assess: the row kept the first attempt's span, and the replay's message carries no parent.
    expect(died.batchItemFailures).toEqual([]);
    expect(original).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: PRODUCER_SPAN });
    expect(original!.attributes).toMatchObject({ 'handoff.outcome': 'rejected', 'handoff.action': 'dead-letter' });
    expect(dead).toMatchObject({ state: 'dead', traceparent: `00-${PRODUCER_TRACE}-${original!.spanId}-01` });
    expect(message!.MessageAttributes?.traceparent).toBeUndefined();
    // The replay's attempt: a new trace, no parent, linked to the original attempt's span.
    expect(replayed.batchItemFailures).toEqual([]);
    const span = spansOf('evt_trace_dies')[1]!;
    expect(span.attributes).toMatchObject({ 'handoff.attempt': 1, 'handoff.outcome': 'accepted', 'handoff.action': 'ack' });
    expect(span.links).toEqual([{ traceId: PRODUCER_TRACE, spanId: original!.spanId }]);
    expect(span.traceId).not.toBe(PRODUCER_TRACE);
    expect(span.parentSpanId).toBeUndefined();
    // The receiver's request names the replay's span; the row still names the first attempt's.
    const requests = receiver.requestsFor('evt_trace_dies');
    expect(requests.map((request) => parseTraceparent(header(request.headers.traceparent))?.traceId)).toEqual([PRODUCER_TRACE, span.traceId]);
    expect(await harness.ledger.get(key)).toMatchObject({ state: 'delivered', traceparent: dead!.traceparent });
  });

  it("ignores a producer's malformed trace context: the delivery starts a trace of its own, says so, and is delivered", async () => {
    const { handler, queueUrl } = await singleEndpoint(tracingOn());
    await send(queueUrl, event('evt_trace_bad'), { traceparent: `00-${PRODUCER_TRACE.toUpperCase()}-${PRODUCER_SPAN}-01`, tracestate: 'x'.repeat(600) });

    const response = await harness.invoke(handler, queueUrl, await harness.receive(queueUrl, 1));

    expect(response.batchItemFailures).toEqual([]);
    const [span] = spansOf('evt_trace_bad');
    expect(span!.traceId).not.toBe(PRODUCER_TRACE);
    expect(span!.parentSpanId).toBeUndefined();
    const [request] = receiver.requestsFor('evt_trace_bad');
    expect(parseTraceparent(header(request!.headers.traceparent))).toMatchObject({ traceId: span!.traceId, spanId: span!.spanId });
    expect(request!.headers.tracestate).toBeUndefined();
    expect(logs.some((l) => l.includes('"trace context ignored"') && l.includes('invalid-traceparent'))).toBe(true);
  });

  it('with tracing off sends no span and no trace headers, whatever the producer set', async () => {
    const { handler, queueUrl } = await singleEndpoint({});
    const before = otlp.spans.length;
    await send(queueUrl, event('evt_trace_off'), { traceparent: PRODUCER_TRACEPARENT });

    const response = await harness.invoke(handler, queueUrl, await harness.receive(queueUrl, 1));

    expect(response.batchItemFailures).toEqual([]);
    const [request] = receiver.requestsFor('evt_trace_off');
    expect(request!.headers.traceparent).toBeUndefined();
    expect(request!.headers.tracestate).toBeUndefined();
    expect(otlp.spans.length).toBe(before);
    expect(logs.some((l) => l.includes('"traceId"'))).toBe(false);
  });
});

describe("Tracing: SQS's AWSTraceHeader", () => {
  it('starts a trace of its own, exported and sampled, linked to an AWSTraceHeader that says Sampled=0 (a Lambda producer without active tracing)', async () => {
    const { handler, queueUrl } = await singleEndpoint(tracingOn());
    await send(queueUrl, event('evt_trace_aws_0'));

    const response = await invokeWithAwsTraceHeader(handler, queueUrl, await harness.receive(queueUrl, 1), awsTraceHeader(0));

    // Exported under parentbased_always_on: the header chose no parent, so the sampler's root decision holds.
    expect(response.batchItemFailures).toEqual([]);
    const [span] = spansOf('evt_trace_aws_0');
    expect(span!.traceId).not.toBe(AWS_TRACE);
    expect(span!.parentSpanId).toBeUndefined();
    expect(span!.links).toEqual([{ traceId: AWS_TRACE, spanId: AWS_PARENT }]);
    // The receiver is told a sampled context naming that span, and the row keeps it.
    const [request] = receiver.requestsFor('evt_trace_aws_0');
    expect(parseTraceparent(header(request!.headers.traceparent))).toEqual({ traceId: span!.traceId, spanId: span!.spanId, sampled: true });
    expect(await harness.ledger.get({ eventId: 'evt_trace_aws_0', endpoint: 'default' })).toMatchObject({ traceparent: `00-${span!.traceId}-${span!.spanId}-01` });
  });

  it('makes an AWSTraceHeader that says Sampled=1 the parent (an X-Ray-traced producer)', async () => {
    const { handler, queueUrl } = await singleEndpoint(tracingOn());
    await send(queueUrl, event('evt_trace_aws_1'));

    await invokeWithAwsTraceHeader(handler, queueUrl, await harness.receive(queueUrl, 1), awsTraceHeader(1));

    const [span] = spansOf('evt_trace_aws_1');
    expect(span).toMatchObject({ traceId: AWS_TRACE, parentSpanId: AWS_PARENT, links: [] });
    const [request] = receiver.requestsFor('evt_trace_aws_1');
    expect(parseTraceparent(header(request!.headers.traceparent))).toEqual({ traceId: AWS_TRACE, spanId: span!.spanId, sampled: true });
  });

  it("never takes it on handoff's own sealed re-send: a replay sent from a function without active tracing still links to its original", async () => {
    // Prepare: the original delivery, traced; then its replay, sealed with its link, as the API function sends it.
    const { handler, queueUrl, deadLetterQueueUrl } = await singleEndpoint(tracingOn());
    await send(queueUrl, event('evt_trace_aws_replay'), { traceparent: PRODUCER_TRACEPARENT });
    await harness.invoke(handler, queueUrl, await harness.receive(queueUrl, 1));
    const [original] = spansOf('evt_trace_aws_replay');
    const queue = new SqsDeliveryQueue({ client: sqs, queueUrl, deadLetterQueueUrl, seal: TEST_SEAL });
    await queue.enqueue(event('evt_trace_aws_replay'), { endpoint: 'default', link: `00-${original!.traceId}-${original!.spanId}-01` });

    // Act: it arrives with the sending function's Sampled=0 header.
    await invokeWithAwsTraceHeader(handler, queueUrl, await harness.receive(queueUrl, 1), awsTraceHeader(0));

    // Assess: exported, a trace of its own, linked to the original alone.
    const replayed = spansOf('evt_trace_aws_replay')[1]!;
    expect(replayed.traceId).not.toBe(AWS_TRACE);
    expect(replayed.parentSpanId).toBeUndefined();
    expect(replayed.links).toEqual([{ traceId: PRODUCER_TRACE, spanId: original!.spanId }]);
  });
});
