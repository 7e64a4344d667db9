/**
 * Trace context as it travels on SQS messages and HTTP requests (docs/contract.md §19), read and
 * written without any OpenTelemetry module: the consumer looks at these only while tracing is on
 * (lib/tracing/tracing.ts), and a producer's values are input, never instructions.
 *
 * A producer may set `traceparent` (and `tracestate`) as String message attributes. They are parsed
 * strictly here: a value that is not a well-formed W3C trace context is ignored (the delivery starts
 * a trace of its own), never a failed message; a `tracestate` over its bounds is dropped and the
 * `traceparent` kept. What they can do is name the parent of handoff's spans, nothing else.
 */

/** The message attributes (and request headers) that carry a trace context. */
export const TRACEPARENT_ATTRIBUTE = 'traceparent';
export const TRACESTATE_ATTRIBUTE = 'tracestate';
/**
 * On handoff's own messages only (sealed: lib/queue/seal.ts): the `traceparent` of the trace a
 * replay, a release or a put-back comes from, which its delivery's span links to.
 */
export const TRACELINK_ATTRIBUTE = 'tracelink';
/**
 * SQS's system attribute: the sender's `X-Amzn-Trace-Id`. Not only an X-Ray-traced producer's: the
 * AWS SDK in any Lambda function copies the invocation's `_X_AMZN_TRACE_ID` onto its SendMessage,
 * with `Sampled=0` when the function has no active tracing.
 */
export const AWS_TRACE_HEADER_ATTRIBUTE = 'AWSTraceHeader';

/** A W3C trace context: `traceparent`, and `tracestate` when there is one. */
export interface TraceCarrier {
  readonly traceparent: string;
  readonly tracestate?: string;
}

/** A traceparent's parts, lower-case hex. */
export interface ParsedTraceparent {
  readonly traceId: string;
  readonly spanId: string;
  readonly sampled: boolean;
}

/** The W3C bounds on `tracestate`: at most 32 members, 512 characters. */
export const TRACESTATE_MAX_MEMBERS = 32;
export const TRACESTATE_MAX_CHARS = 512;

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[\x21-\x7e]*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** A tracestate member: `key=value`, the key simple or `tenant@system`, the value printable ASCII without `,` or `=`. */
const TRACESTATE_MEMBER =
  /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * A traceparent's parts, or undefined when it is not one: version `ff`, an all-zero ID, upper-case
 * hex, a version-00 value with anything after its flags, or over 256 characters.
 */
export function parseTraceparent(value: string | undefined): ParsedTraceparent | undefined {
  if (value === undefined || value.length > 256) return undefined;
  const match = TRACEPARENT.exec(value);
  if (match === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId: traceId!, spanId: spanId!, sampled: (parseInt(flags!, 16) & 1) === 1 };
}

/** A tracestate kept as given when within the W3C grammar and bounds; undefined (dropped) otherwise. */
export function checkTracestate(value: string | undefined): string | undefined {
  if (value === undefined || value.length === 0 || value.length > TRACESTATE_MAX_CHARS) return undefined;
  const members = value
    .split(',')
    .map((member) => member.trim())
    .filter((member) => member !== '');
  if (members.length === 0 || members.length > TRACESTATE_MAX_MEMBERS) return undefined;
  const keys = new Set<string>();
  for (const member of members) {
    if (!TRACESTATE_MEMBER.test(member)) return undefined;
    const key = member.slice(0, member.indexOf('='));
    if (keys.has(key)) return undefined;
    keys.add(key);
  }
  return members.join(',');
}

/**
 * The trace context a message carries (its `traceparent` and `tracestate` attributes), or undefined
 * when it carries none or one that is not well-formed (`invalid` then says so, for a log line).
 */
export function carrierOf(attribute: (name: string) => string | undefined): { readonly carrier?: TraceCarrier; readonly invalid?: true } {
  const traceparent = attribute(TRACEPARENT_ATTRIBUTE);
  if (traceparent === undefined) return {};
  if (parseTraceparent(traceparent) === undefined) return { invalid: true };
  const tracestate = checkTracestate(attribute(TRACESTATE_ATTRIBUTE));
  return { carrier: tracestate !== undefined ? { traceparent, tracestate } : { traceparent } };
}

const XRAY_ROOT = /^1-([0-9a-f]{8})-([0-9a-f]{24})$/i;
const XRAY_PARENT = /^[0-9a-f]{16}$/i;

/**
 * An AWSTraceHeader's trace and parent span (`Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=1`,
 * its parts in any order, other keys such as `Lineage` passed over), or undefined when it is not
 * one: no Root or no Parent, either malformed or all zeros, a key twice, over 256 characters.
 * `sampled` only for `Sampled=1`: `0`, `?` (the decision left to the receiver) and none are not.
 */
export function parseAwsTraceHeader(value: string | undefined): ParsedTraceparent | undefined {
  if (value === undefined || value.length > 256) return undefined;
  const parts = new Map<string, string>();
  for (const part of value.split(';')) {
    if (part.trim() === '') continue;
    const equals = part.indexOf('=');
    if (equals < 0) return undefined;
    const key = part.slice(0, equals).trim();
    if (parts.has(key)) return undefined;
    parts.set(key, part.slice(equals + 1).trim());
  }
  const root = XRAY_ROOT.exec(parts.get('Root') ?? '');
  const parent = parts.get('Parent') ?? '';
  if (root === null || !XRAY_PARENT.test(parent)) return undefined;
  const traceId = `${root[1]}${root[2]}`.toLowerCase();
  const spanId = parent.toLowerCase();
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, sampled: parts.get('Sampled') === '1' };
}

/** `00-<trace>-<span>-<flags>`. */
export function formatTraceparent(traceId: string, spanId: string, sampled: boolean): string {
  return `00-${traceId}-${spanId}-${sampled ? '01' : '00'}`;
}

/**
 * What handoff's own re-send of a ledger row links to (`link` of EnqueueOptions and EndpointMessage,
 * sealed as TRACELINK_ATTRIBUTE): the `traceparent` the row keeps of its delivery's trace
 * (`DeliveryRecord.traceparent`: its first traced attempt's span, written by that attempt's claim
 * while tracing is on); nothing for a row without one. A replay, a release and a recovery send are
 * then linked to the original trace, not children of it. Read back strictly, as any stored text.
 */
export function linkOf(row: { readonly eventId: string; readonly traceparent?: string }): { link?: string } {
  return row.traceparent !== undefined && parseTraceparent(row.traceparent) !== undefined ? { link: row.traceparent } : {};
}
