/**
 * The event: the SQS message body a producer sends (docs/contract.md §2), its validation, and its identity.
 *
 * The event ID is the idempotency key. Two messages with one ID are the same business event
 * only when their canonical content is equal; the content hash decides that, so whitespace or
 * key order in a producer's JSON never turns a duplicate into a conflict.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { InvalidEventError } from './errors';

export const SHIPMENT_STATUSES = [
  'label_created',
  'packed',
  'in_transit',
  'out_for_delivery',
  'delivered',
  'exception',
  'returned',
] as const;
export type ShipmentStatus = (typeof SHIPMENT_STATUSES)[number];

/**
 * handoff's own test event (`POST /v1/endpoints/{name}/test`), of type `handoff.test`: status `test`,
 * sent sealed (lib/queue/seal.ts) to one endpoint alone through the normal pipeline. Accepted only
 * in a sealed message (`parseEvent`'s `sealed`): a producer's message with this status is invalid,
 * as any unknown status is, so no producer sends one and fan-out never routes one.
 */
export const TEST_STATUS = 'test';
export const TEST_EVENT_TYPE = 'handoff.test';
const STATUS_PROBLEM = `must be one of ${SHIPMENT_STATUSES.join(', ')}`;

export const DEFAULT_PAYLOAD_LIMIT_BYTES = 64 * 1024;
/** Nesting deeper than this inside `data` is refused: nobody's carrier details need more. */
export const MAX_DATA_DEPTH = 16;

const EVENT_ID = /^[A-Za-z0-9_\-.:]{1,128}$/;
/** Printable: no control, format (zero-width, bidi), private-use or unassigned characters, no line separators. */
const PRINTABLE = /^[^\p{C}\p{Zl}\p{Zp}]+$/u;
/**
 * ISO-8601 date-time with a zone (`Z` or `±hh:mm`, hours 00–23 and minutes 00–59), seconds and
 * fractions optional.
 */
const DATE_TIME_WITH_ZONE =
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;
/** Keys that would reach an object's prototype if anyone ever assigned them naively. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

const ShipmentIdSchema = v.pipe(
  v.string(),
  v.check((s) => s.trim().length > 0, 'must not be empty'),
  v.check((s) => [...s].length <= 128, 'must be at most 128 characters'),
  v.check((s) => s.isWellFormed() && PRINTABLE.test(s), 'must be printable characters'),
);

const EventSchema = v.strictObject(
  {
    id: v.pipe(v.string(), v.regex(EVENT_ID, 'must be 1–128 characters of A-Z a-z 0-9 _ - . :')),
    shipmentId: ShipmentIdSchema,
    status: v.picklist([...SHIPMENT_STATUSES, TEST_STATUS], STATUS_PROBLEM),
    occurredAt: v.pipe(
      v.string(),
      v.regex(DATE_TIME_WITH_ZONE, 'must be an ISO-8601 date-time with a zone (Z or ±hh:mm, at most ±23:59)'),
      v.check(isRealDateTime, 'must be a real date-time'),
    ),
    data: v.optional(
      v.custom<Record<string, unknown>>(
        (d) => typeof d === 'object' && d !== null && !Array.isArray(d),
        'must be a JSON object',
      ),
    ),
  },
  // valibot reports a missing key and an unknown key through the same message.
  (issue) => (issue.expected === 'never' ? 'is not a known field' : 'is required'),
);

export type ShipmentEvent = v.InferOutput<typeof EventSchema>;

/** An admitted event: the parsed value, the exact bytes every attempt sends, and their hash. */
export interface ParsedEvent {
  readonly event: ShipmentEvent;
  /** Canonical JSON of the event: the webhook body, byte-identical on every attempt. */
  readonly body: string;
  readonly contentHash: string;
  readonly type: `shipment.${ShipmentStatus}` | typeof TEST_EVENT_TYPE;
}

export type ParseResult =
  | { readonly ok: true; readonly value: ParsedEvent }
  | { readonly ok: false; readonly error: InvalidEventError };

/**
 * Parses and validates one message body. Never throws: bad input is a value, not an exception.
 * `sealed`: the body is handoff's own message to one endpoint, which may be a test event (TEST_STATUS).
 */
export function parseEvent(
  body: string,
  payloadLimitBytes: number = DEFAULT_PAYLOAD_LIMIT_BYTES,
  options: { readonly sealed?: boolean } = {},
): ParseResult {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  const isObject = typeof json === 'object' && json !== null && !Array.isArray(json);
  const size = Buffer.byteLength(body, 'utf8');
  if (size > payloadLimitBytes) {
    const message = `message is ${size} bytes, over the ${payloadLimitBytes}-byte limit`;
    return invalid(message, undefined, isObject ? readableId(json as object) : undefined);
  }
  if (json === undefined) return invalid('message body is not JSON', undefined, undefined);
  if (!isObject) return invalid('message body must be a JSON object', undefined, undefined);
  // Checked before the schema, which would silently drop a `__proto__` key rather than refuse it.
  const unsafe = findUnsafe(json, [], 0);
  if (unsafe) return invalid(`${unsafe.path || 'message'} ${unsafe.problem}`, unsafe.path || undefined, readableId(json as object));
  const result = v.safeParse(EventSchema, json, { abortPipeEarly: true });
  if (!result.success) {
    const issue = result.issues[0];
    const field = issue.path?.map((p) => String(p.key)).join('.') || undefined;
    const what = field ?? 'message';
    return invalid(`${what} ${issue.message}`, field, readableId(json as object));
  }
  const inexact = findInexactNumber(body);
  if (inexact) {
    return invalid(`${inexact.path} ${INEXACT_NUMBER}`, inexact.path, readableId(json as object));
  }
  const event = result.output;
  if (event.status === TEST_STATUS && options.sealed !== true) return invalid(`status ${STATUS_PROBLEM}`, 'status', event.id);
  const canonical = canonicalJson(event);
  // The limit bounds what is stored and sent, not only what arrived: numbers written out in full
  // (`1e15` is sixteen digits) can make the canonical body the longer one.
  const canonicalSize = Buffer.byteLength(canonical, 'utf8');
  if (canonicalSize > payloadLimitBytes) {
    const message = `message is ${canonicalSize} bytes as sent (numbers written out in full), over the ${payloadLimitBytes}-byte limit`;
    return invalid(message, undefined, event.id);
  }
  return {
    ok: true,
    value: {
      event,
      body: canonical,
      contentHash: sha256(canonical),
      type: event.status === TEST_STATUS ? TEST_EVENT_TYPE : `shipment.${event.status}`,
    },
  };
}

/**
 * JSON with object keys sorted at every level, built as a string so no key (not even
 * `__proto__`) is ever assigned onto an object.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  const members = keys
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${members.join(',')}}`;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function invalid(message: string, field: string | undefined, eventId: string | undefined): ParseResult {
  return { ok: false, error: new InvalidEventError(message, field, eventId) };
}

/**
 * A test event's body for `endpoint` (canonical, as sent): its shipment its own (`handoff.test:<id>`),
 * so it never waits on, nor holds, another event at an endpoint ordered per shipment.
 */
export function testEventBody(eventId: string, endpoint: string, nowMs: number): string {
  return canonicalJson({
    id: eventId,
    shipmentId: `${TEST_EVENT_TYPE}:${eventId}`,
    status: TEST_STATUS,
    occurredAt: new Date(nowMs).toISOString(),
    data: { type: TEST_EVENT_TYPE, endpoint },
  });
}

/** Whether a text is a valid event ID (docs/contract.md §2). */
export function isEventId(text: unknown): text is string {
  return typeof text === 'string' && EVENT_ID.test(text);
}

/** Whether a text is a valid shipment ID (docs/contract.md §2): 1–128 printable characters, not only spaces. */
export function isShipmentId(text: unknown): text is string {
  return v.is(ShipmentIdSchema, text);
}

/** The `id` of an invalid message, when it is itself a valid ID: enough to find or mark its row. */
function readableId(json: object): string | undefined {
  const id = (json as { id?: unknown }).id;
  return isEventId(id) ? id : undefined;
}

/** Whether a date-time that matched the pattern names a real instant (no 30 February, no hour 24). */
function isRealDateTime(text: string): boolean {
  const [, year, month, day, hour, minute, second] = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?/.exec(text) ?? [];
  const [y, mo, d, h, mi, se] = [year, month, day, hour, minute, second ?? '0'].map(Number) as number[];
  const date = new Date(Date.UTC(y!, mo! - 1, d!));
  return date.getUTCMonth() === mo! - 1 && date.getUTCDate() === d && h! <= 23 && mi! <= 59 && se! <= 59;
}

/**
 * Finds what no event may contain anywhere: keys that could reach a prototype, strings that are
 * not well-formed Unicode (lone surrogates), and nesting deeper than `MAX_DATA_DEPTH`.
 */
function findUnsafe(value: unknown, path: string[], depth: number): { path: string; problem: string } | undefined {
  // `path` is the walk's own stack (pushed and popped), joined only when a problem is found.
  if (depth > MAX_DATA_DEPTH + 1) return problemAt(path, `is nested deeper than ${MAX_DATA_DEPTH} levels`);
  if (typeof value === 'string') return value.isWellFormed() ? undefined : problemAt(path, 'contains a lone surrogate');
  if (typeof value === 'number' && !Number.isSafeInteger(value) && (Number.isInteger(value) || !Number.isFinite(value))) {
    // JSON.parse turns 1e400 into Infinity (sent on as null) and rounds integers past 2^53:
    // either way the receiver would get another value than the producer sent.
    return problemAt(path, INEXACT_NUMBER);
  }
  if (value === null || typeof value !== 'object') return undefined;
  const keys = Array.isArray(value) ? Array.from(value, (_, i) => String(i)) : Object.keys(value);
  for (const key of keys) {
    if (FORBIDDEN_KEYS.has(key)) return problemAt([...path, key], 'is a forbidden key');
    if (!key.isWellFormed()) return problemAt(path, 'has a key with a lone surrogate');
    path.push(key);
    const problem = findUnsafe((value as Record<string, unknown>)[key], path, depth + 1);
    path.pop();
    if (problem) return problem;
  }
  return undefined;
}

function problemAt(path: readonly string[], problem: string): { path: string; problem: string } {
  return { path: path.join('.'), problem };
}

const INEXACT_NUMBER = 'is a number that cannot be carried exactly (send it as a string)';

/** A number literal or a whole string (so that digits inside a string are never taken for a number). */
const NUMBER_OR_STRING = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
/** A double holds every integer of up to 15 digits exactly and prints it the same. */
const EXACT_INTEGER_DIGITS = 15;

/**
 * Finds the first number whose canonical form (the shortest JavaScript spelling of the double it
 * parses to) has another decimal value than its source: `1e-400` (becomes 0),
 * `0.1000000000000000055511151231257827` (becomes 0.1). Forms that keep the exact value are only
 * respelled: `1.0` and `1e0` are sent as `1`, `1E2` as `100`, `2.50` as `2.5`, and `-0` as `0`
 * (zero has no sign in decimal). The content hash covers the canonical form, which is what the
 * receiver gets.
 *
 * Runs on text JSON.parse has accepted, on every message: a scan by character code that skips
 * strings whole and looks closer only at numbers with a fraction, an exponent or 16+ digits.
 */
function findInexactNumber(body: string): { path: string } | undefined {
  const end = body.length;
  let i = 0;
  while (i < end) {
    const c = body.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = afterString(body, i);
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39) /* 0-9 */) {
      const start = i;
      let plain = true;
      for (i += 1; i < end; i++) {
        const d = body.charCodeAt(i);
        if (d >= 0x30 && d <= 0x39) continue;
        // . e E + - : only inside a number here, since strings are skipped whole
        if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) plain = false;
        else break;
      }
      if (plain && i - start - (c === 0x2d ? 1 : 0) <= EXACT_INTEGER_DIGITS) continue;
      const token = body.slice(start, i);
      // Most numbers are already in their canonical spelling; only a respelled one needs comparing.
      const canonical = JSON.stringify(Number(token));
      if (canonical !== token && decimalValue(token) !== decimalValue(canonical)) return { path: pathOfNumber(body, token) };
    } else {
      i += 1;
    }
  }
  return undefined;
}

/** The index just past the string that opens at `open` (a `"` not escaped by an odd run of backslashes closes it). */
function afterString(body: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const close = body.indexOf('"', from);
    let backslashes = 0;
    while (body.charCodeAt(close - 1 - backslashes) === 0x5c /* backslash */) backslashes += 1;
    if (backslashes % 2 === 0) return close + 1;
    from = close + 1;
  }
}

/** A decimal literal's exact value as `<sign><digits>e<exponent>` with no leading or trailing zeros: equal values, equal keys. */
function decimalValue(literal: string): string {
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal) ?? [];
  const digits = `${whole}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  const significant = digits.replace(/0+$/, '');
  const scale = BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significant.length);
  return `${sign}${significant}e${scale}`;
}

/**
 * The field path (`data.readings.3`) of the first occurrence of number `literal` in a body,
 * following the body's own structure. Only reached for a refused number, so speed does not matter.
 */
function pathOfNumber(body: string, literal: string): string {
  const path: (string | number)[] = [];
  /** Per open container: is the next string an object key? */
  const expectingKey: boolean[] = [];
  const token = new RegExp(NUMBER_OR_STRING.source, 'y');
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === '{' || c === '[') {
      path.push(c === '[' ? 0 : '');
      expectingKey.push(c === '{');
    } else if (c === '}' || c === ']') {
      path.pop();
      expectingKey.pop();
    } else if (c === ',') {
      const top = path.length - 1;
      if (typeof path[top] === 'number') path[top] = (path[top] as number) + 1;
      else expectingKey[top] = true;
    } else if (c === '"' || c === '-' || (c !== undefined && c >= '0' && c <= '9')) {
      token.lastIndex = i;
      const [text = ''] = token.exec(body) ?? [];
      const top = path.length - 1;
      if (c === '"' && expectingKey[top]) {
        path[top] = JSON.parse(text) as string;
        expectingKey[top] = false;
      } else if (c !== '"' && text === literal) {
        return path.join('.');
      }
      i += text.length - 1;
    }
  }
  return '';
}
