/**
 * A producer's trace context is input (docs/contract.md §19): `traceparent` parsed strictly,
 * `tracestate` kept only within its bounds, an AWSTraceHeader read strictly and the parent only when
 * it says Sampled=1 (never on handoff's own messages), a link obeyed only under handoff's seal,
 * tracing on only when the environment says so, and a message's attributes within SQS's ten.
 */
import { describe, expect, it } from 'vitest';
import { controlOfMessage } from '../../lib/queue/queue';
import { MessageSeal, sealedAttributes } from '../../lib/queue/seal';
import { carrierOf, checkTracestate, linkOf, parseAwsTraceHeader, parseTraceparent, TRACELINK_ATTRIBUTE } from '../../lib/tracing/carrier';
import { messageContextOf, tracingEnabled, tracingFromEnvironment } from '../../lib/tracing/tracing';
import { sqsRecord, TEST_SEAL } from '../helpers/sqs-records';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const VALID = `00-${TRACE}-${SPAN}-01`;
const AWS_TRACE = '5759e988bd862e3fe1be46a994272793';
const AWS_PARENT = '53995c3f42cd8ad8';
const AWS_SAMPLED = `Root=1-5759e988-bd862e3fe1be46a994272793;Parent=${AWS_PARENT};Sampled=1`;
const AWS_UNSAMPLED = `Root=1-5759e988-bd862e3fe1be46a994272793;Parent=${AWS_PARENT};Sampled=0`;

describe('Trace context: parsing', () => {
  it('reads a W3C traceparent, sampled or not', () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: false });
    // A later version may add fields after the flags; version 00 may not.
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-future`)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true });
  });

  it.each([
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['an all-zero trace ID', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span ID', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version 00 with more after its flags', `${VALID}-x`],
    ['a short trace ID', `00-${TRACE.slice(2)}-${SPAN}-01`],
    ['surrounding space', ` ${VALID}`],
    ['over 256 characters', `01-${TRACE}-${SPAN}-01-${'a'.repeat(300)}`],
    ['no value', ''],
  ])('refuses %s', (_, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });

  it('keeps a tracestate within the W3C grammar and bounds, and drops one that is not', () => {
    expect(checkTracestate('vendor=abc, tenant@sys=x-1')).toBe('vendor=abc,tenant@sys=x-1');
    expect(checkTracestate(Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(','))).toBeDefined();
    expect(checkTracestate(Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','))).toBeUndefined();
    expect(checkTracestate(`k=${'v'.repeat(510)}`)).toBeUndefined();
    expect(checkTracestate('Upper=1')).toBeUndefined();
    expect(checkTracestate('k=1,k=2')).toBeUndefined();
    expect(checkTracestate('k=a=b')).toBeUndefined();
    expect(checkTracestate('')).toBeUndefined();
  });

  it("reads a message's context: traceparent first, tracestate dropped alone when bad, a sampled AWSTraceHeader only without a traceparent", () => {
    const attributes = (values: Record<string, string>) => (name: string) => values[name];
    expect(carrierOf(attributes({ traceparent: VALID, tracestate: 'a=1' }))).toEqual({ carrier: { traceparent: VALID, tracestate: 'a=1' } });
    expect(carrierOf(attributes({ traceparent: VALID, tracestate: 'A=1' }))).toEqual({ carrier: { traceparent: VALID } });
    expect(carrierOf(attributes({ traceparent: 'nonsense' }))).toEqual({ invalid: true });
    expect(carrierOf(attributes({}))).toEqual({});
    const record = (messageAttributes: Record<string, string>, awsTraceHeader = AWS_SAMPLED) =>
      sqsRecord('{}', {
        attributes: { ...sqsRecord('{}').attributes, AWSTraceHeader: awsTraceHeader },
        messageAttributes: Object.fromEntries(Object.entries(messageAttributes).map(([k, v]) => [k, { stringValue: v, dataType: 'String' }])),
      });
    expect(messageContextOf(record({}))).toEqual({ parent: { traceparent: `00-${AWS_TRACE}-${AWS_PARENT}-01`, ids: { traceId: AWS_TRACE, spanId: AWS_PARENT, sampled: true } } });
    expect(messageContextOf(record({ traceparent: VALID }))).toEqual({ parent: { traceparent: VALID, ids: { traceId: TRACE, spanId: SPAN, sampled: true } } });
    // A link is read from the sealed control values only, and only when well-formed.
    expect(messageContextOf(record({ traceparent: VALID }), { [TRACELINK_ATTRIBUTE]: VALID }).link).toEqual({ ids: { traceId: TRACE, spanId: SPAN, sampled: true }, kind: 'original' });
    expect(messageContextOf(record({ traceparent: VALID }), { [TRACELINK_ATTRIBUTE]: 'nonsense' }).link).toBeUndefined();
  });

  it("takes an AWSTraceHeader as the parent only when it says Sampled=1, links to it otherwise, and never on handoff's own sealed messages", () => {
    const record = (awsTraceHeader: string) => sqsRecord('{}', { attributes: { ...sqsRecord('{}').attributes, AWSTraceHeader: awsTraceHeader } });
    const ids = { traceId: AWS_TRACE, spanId: AWS_PARENT };
    // A Lambda function without active tracing sends Sampled=0: a trace of handoff's own, linked to it.
    for (const header of [AWS_UNSAMPLED, AWS_SAMPLED.replace('Sampled=1', 'Sampled=?'), AWS_SAMPLED.replace(';Sampled=1', '')]) {
      expect(messageContextOf(record(header))).toEqual({ link: { ids: { ...ids, sampled: false }, kind: 'aws-trace-header' } });
    }
    // Handoff's own (sealed): a replay's link alone, or nothing; the sending function's header is not the delivery's trace.
    expect(messageContextOf(record(AWS_SAMPLED), { [TRACELINK_ATTRIBUTE]: VALID })).toEqual({ link: { ids: { traceId: TRACE, spanId: SPAN, sampled: true }, kind: 'original' } });
    expect(messageContextOf(record(AWS_UNSAMPLED), { endpoint: 'acme' })).toEqual({});
    expect(messageContextOf(record('Root=1-nonsense;Parent=53995c3f42cd8ad8;Sampled=1'))).toEqual({});
  });

  it('reads an AWSTraceHeader strictly: Root and Parent well-formed, its keys once, Sampled=1 alone sampled', () => {
    const ids = { traceId: AWS_TRACE, spanId: AWS_PARENT };
    expect(parseAwsTraceHeader(AWS_SAMPLED)).toEqual({ ...ids, sampled: true });
    expect(parseAwsTraceHeader(AWS_UNSAMPLED)).toEqual({ ...ids, sampled: false });
    // Any order, spaces around parts, other keys (Lineage) passed over, upper-case hex read as lower.
    expect(parseAwsTraceHeader(` Sampled=1; Parent=${AWS_PARENT.toUpperCase()};Lineage=a87bd80c:1|68fd508a:5;Root=1-5759e988-bd862e3fe1be46a994272793 `)).toEqual({ ...ids, sampled: true });
    for (const bad of [
      'Parent=53995c3f42cd8ad8;Sampled=1',
      'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1',
      'Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
      'Root=1-5759e988-bd862e3fe1be46a99427279;Parent=53995c3f42cd8ad8;Sampled=1',
      `Root=1-00000000-${'0'.repeat(24)};Parent=53995c3f42cd8ad8;Sampled=1`,
      'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=0000000000000000;Sampled=1',
      `${AWS_SAMPLED};Sampled=0`,
      `${AWS_SAMPLED};junk`,
      `${AWS_SAMPLED};Lineage=${'a'.repeat(300)}`,
      '',
    ]) {
      expect(parseAwsTraceHeader(bad)).toBeUndefined();
    }
  });

  it("links a row's re-send to the trace it keeps, and to nothing when it keeps none or a bad one", () => {
    expect(linkOf({ eventId: 'evt_1', traceparent: VALID })).toEqual({ link: VALID });
    expect(linkOf({ eventId: 'evt_1' })).toEqual({});
    expect(linkOf({ eventId: 'evt_1', traceparent: 'x' })).toEqual({});
  });
});

describe('Trace context: the seal', () => {
  it('covers a link only when present: what was sealed without one verifies as before, and a link added afterwards voids the seal', () => {
    const body = '{"id":"evt_1"}';
    const control = controlOfMessage({ endpoint: 'acme' });
    const withLink = controlOfMessage({ endpoint: 'acme', link: VALID });
    expect(withLink[TRACELINK_ATTRIBUTE]).toBe(VALID);
    const sealed = sealedAttributes(TEST_SEAL, body, control);
    const read = (attributes: Record<string, { StringValue?: string }>) => (name: string) => attributes[name]?.StringValue;
    expect(TEST_SEAL.controlOf(body, read(sealed))).toEqual({ endpoint: 'acme' });
    expect(TEST_SEAL.controlOf(body, read({ ...sealed, [TRACELINK_ATTRIBUTE]: { StringValue: VALID } }))).toEqual({});
    const linked = sealedAttributes(TEST_SEAL, body, withLink);
    expect(TEST_SEAL.controlOf(body, read(linked))).toEqual({ endpoint: 'acme', [TRACELINK_ATTRIBUTE]: VALID });
    expect(new MessageSeal(MessageSeal.generateKey()).controlOf(body, read(linked))).toEqual({});
  });

  it("keeps a message's attributes within SQS's ten with every control value, the seal, a link and a trace context", () => {
    const control = controlOfMessage({ endpoint: 'acme', notBefore: 1, reservedRate: 2, admission: { sequence: 3, inTurn: true }, link: VALID });
    const attributes = { ...sealedAttributes(TEST_SEAL, '{}', { ...control, recoveries: '1' }), traceparent: {}, tracestate: {} };
    expect(Object.keys(attributes).length).toBeLessThanOrEqual(10);
  });
});

describe('Tracing: on and off', () => {
  it('is on with an OTLP endpoint or HANDOFF_TRACING xray/otlp, off otherwise, and off whatever else says when disabled', () => {
    expect(tracingEnabled({})).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true);
    expect(tracingEnabled({ HANDOFF_TRACING: 'xray' })).toBe(true);
    expect(tracingEnabled({ HANDOFF_TRACING: 'otlp' })).toBe(true);
    expect(tracingEnabled({ HANDOFF_TRACING: 'off', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(false);
    expect(tracingEnabled({ HANDOFF_TRACING: 'xray', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(() => tracingEnabled({ HANDOFF_TRACING: 'yes' })).toThrow(/^HANDOFF_TRACING must be xray, otlp or off, got "yes"$/);
  });

  it('gives no loader while off, so nothing of OpenTelemetry is imported', () => {
    expect(tracingFromEnvironment({}, 'handoff')).toBeUndefined();
    expect(typeof tracingFromEnvironment({ HANDOFF_TRACING: 'xray' }, 'handoff')).toBe('function');
  });
});
