/**
 * POST /v1/replays (docs/contract.md §16): the `handoff replay` use case (cli/commands/replay.ts)
 * over HTTP. One delivery (`eventId` and `endpoint`), every dead delivery of one event (`eventId`),
 * or, in bulk, one endpoint's deliveries that died in a window (`endpoint`, `deadSince`, `until`,
 * `deadReason`), counted only with `dryRun`. Each replay is audited with the authenticated caller as
 * both operator and caller: nothing in the body names who is acting. The body's `reason` is the
 * audit's reason.
 *
 * A bulk replay is paced as the command paces it (DEFAULT_REPLAY_RATE a second: the caller cannot
 * change it) and must answer within one request, so each request does one bounded part: at most
 * BULK_REPLAYS_PER_REQUEST replays (a dry run counts at most DRY_RUN_COUNT_PER_REQUEST), reading at
 * most ROWS_READ_PER_REQUEST dead rows, and answers `next` when more follow; the same body with
 * `cursor: next` continues where it stopped. The window's end is fixed by the first part (`until`,
 * now when not given) and carried by the cursor, so the parts together are one replay of one window.
 *
 * A portal link's holder replays its owner's deliveries only: it must name `endpoint`, one of its
 * owner's endpoints (403 otherwise), so with `eventId` it replays that one delivery, never an
 * event's deliveries to other owners' endpoints.
 */
import { isEventId } from '../../lib/event';
import { ENDPOINT_NAME } from '../../lib/endpoints/field-schemas';
import type { JsonSchema } from '../../lib/endpoints/json-schema';
import { auditTextProblem, CALLER_MAX_CHARS, OPERATOR_MAX_CHARS, REASON_MAX_CHARS } from '../../lib/replay';
import { DEFAULT_REPLAY_RATE, isoTime, replayCommand, type ReplayOptions } from '../../cli/commands/replay';
import { invalid, type FieldProblem } from '../problem';
import type { Route, RouteCall } from '../route';
import { requireOwnEndpoint } from './portal-scope';

/** Replays one request makes at most: at DEFAULT_REPLAY_RATE a second, about 10 s, inside the function's 28 s. */
export const BULK_REPLAYS_PER_REQUEST = 100;
/** Deliveries a dry run counts in one request at most (reads only: no pacing). */
export const DRY_RUN_COUNT_PER_REQUEST = 2000;
/** Dead rows one request reads at most, matching or not (another reason, an invalid message's row). */
export const ROWS_READ_PER_REQUEST = 2000;

const BODY_FIELDS = ['eventId', 'endpoint', 'deadSince', 'until', 'deadReason', 'dryRun', 'reason', 'cursor', 'limit'] as const;
const BULK_ONLY = ['deadSince', 'until', 'deadReason', 'dryRun', 'cursor', 'limit'] as const;
const DEAD_REASONS = ['exhausted', 'rejected'] as const;
const TIME_PROBLEM = 'must be an ISO 8601 time with its zone, like 2026-12-01T10:00:00Z, or a date like 2026-12-01 (UTC)';

const REQUEST_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['reason'],
  properties: {
    eventId: { type: 'string', pattern: '^[A-Za-z0-9_\\-.:]{1,128}$', description: 'Replay this event: its delivery to `endpoint`, or every dead delivery it has.' },
    endpoint: { type: 'string', pattern: ENDPOINT_NAME.source, description: "With `eventId`: that delivery only. Without: the endpoint whose dead deliveries to replay (bulk)." },
    deadSince: { type: 'string', description: 'Bulk: the earliest death to replay (ISO 8601 with its zone, or a UTC date).' },
    until: { type: 'string', description: 'Bulk: deaths before this time only (default: the time of the first request).' },
    deadReason: { enum: [...DEAD_REASONS], description: 'Bulk: only deliveries that died for this reason.' },
    dryRun: { type: 'boolean', description: 'Bulk: count what would be replayed; nothing is written.' },
    reason: { type: 'string', minLength: 1, maxLength: REASON_MAX_CHARS, description: 'Why it is safe to deliver again: kept in each delivery\'s audit.' },
    cursor: { type: 'string', minLength: 1, maxLength: 4096, description: 'Bulk: `next` from the answer before, with the same selection, to continue.' },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: DRY_RUN_COUNT_PER_REQUEST,
      description: `Bulk: at most this many deliveries in this part: replayed (at most ${BULK_REPLAYS_PER_REQUEST}, the default), or counted by a dry run (at most ${DRY_RUN_COUNT_PER_REQUEST}, the default).`,
    },
  },
  additionalProperties: false,
};

const AUDIT_PROPERTIES = {
  operator: { type: 'string', description: 'The authenticated caller (shortened to its last characters when longer than an operator name may be).' },
  caller: { type: ['string', 'null'], description: 'The authenticated caller, whole.' },
  reason: { type: 'string' },
} as const;

const DELIVERY_REPLAY_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['eventId', 'endpoint', 'state', 'attempts', 'replays', 'operator', 'caller', 'reason', 'enqueued'],
  properties: {
    eventId: { type: 'string' },
    endpoint: { type: 'string' },
    state: { const: 'pending' },
    attempts: { type: 'integer', minimum: 0 },
    replays: { type: 'integer', minimum: 1 },
    ...AUDIT_PROPERTIES,
    enqueued: { const: true },
  },
  additionalProperties: false,
};

const EVENT_REPLAY_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['eventId', 'operator', 'caller', 'reason', 'deliveries'],
  properties: {
    eventId: { type: 'string' },
    ...AUDIT_PROPERTIES,
    deliveries: {
      type: 'array',
      items: {
        type: 'object',
        required: ['endpoint', 'state', 'attempts', 'replays', 'enqueued'],
        properties: {
          endpoint: { type: 'string' },
          state: { const: 'pending' },
          attempts: { type: 'integer', minimum: 0 },
          replays: { type: 'integer', minimum: 1 },
          enqueued: { type: 'boolean', description: 'False: pending again, but its message could not be sent (send the event again).' },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};

const BULK_REPLAY_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['endpoint', 'deadSince', 'until', 'deadReason', 'dryRun', 'matched', 'replayed', 'noLongerDead', 'withoutEvent', 'enqueueFailed', 'ratePerSecond', 'next'],
  properties: {
    endpoint: { type: 'string' },
    deadSince: { type: 'string', format: 'date-time' },
    until: { type: 'string', format: 'date-time' },
    deadReason: { enum: [...DEAD_REASONS, null] },
    dryRun: { type: 'boolean' },
    matched: { type: 'integer', minimum: 0, description: 'Dead deliveries this part found in the selection (a dry run: what it would replay).' },
    replayed: { type: 'integer', minimum: 0 },
    noLongerDead: { type: 'integer', minimum: 0, description: 'Replayed or delivered by something else before their turn: left as they were.' },
    withoutEvent: { type: 'integer', minimum: 0, description: "Invalid messages' rows: dead, with no event to send." },
    enqueueFailed: { type: 'array', items: { type: 'string' }, description: 'Event IDs pending again whose message could not be sent.' },
    ratePerSecond: { type: 'number' },
    ...AUDIT_PROPERTIES,
    next: { type: ['string', 'null'], description: 'More may follow: send the same body with `cursor` set to this. Null: the selection is done.' },
  },
  additionalProperties: false,
};

export const REPLAY_ROUTES: readonly Route[] = [
  {
    method: 'POST',
    path: '/v1/replays',
    operationId: 'replay',
    summary: 'Replay dead deliveries: one, one event\'s, or one endpoint\'s in a window',
    description:
      'With `eventId` (and `endpoint`): that delivery, or every dead delivery of the event. Without: every delivery of `endpoint` that died from `deadSince` to `until` ' +
      `(and for \`deadReason\`), paced at ${DEFAULT_REPLAY_RATE} a second, at most ${BULK_REPLAYS_PER_REQUEST} a request (a dry run counts at most ${DRY_RUN_COUNT_PER_REQUEST}); ` +
      'the answer\'s `next` continues it. Each replay is audited with the authenticated caller as its operator. 409: the delivery is not dead; 404: no such event or delivery. ' +
      "A portal link's holder must name `endpoint`, one of its owner's (403 otherwise): with `eventId`, that one delivery.",
    tag: 'replays',
    portal: 'owner',
    body: { schema: REQUEST_SCHEMA, required: true },
    responses: {
      200: { description: 'A dry run: what would be replayed', schema: BULK_REPLAY_SCHEMA },
      202: { description: 'Replayed: pending again, and its event on the queue', schema: { oneOf: [DELIVERY_REPLAY_SCHEMA, EVENT_REPLAY_SCHEMA, BULK_REPLAY_SCHEMA] } },
    },
    problems: [403, 404, 409],
    handle: replay,
  },
];

interface ReplayRequest {
  readonly eventId?: string;
  readonly endpoint?: string;
  readonly deadSince?: number;
  readonly until?: number;
  readonly deadReason?: (typeof DEAD_REASONS)[number];
  readonly dryRun: boolean;
  readonly reason: string;
  readonly cursor?: string;
  readonly limit?: number;
}

/** The continuation a bulk part answers as `next`: the selection it belongs to and the listing's cursor. */
interface BulkCursor {
  readonly v: 1;
  readonly e: string;
  readonly s: number;
  readonly u: number;
  readonly r: string | null;
  readonly c: string;
}

async function replay(call: RouteCall) {
  const input = parseReplayRequest(call.body);
  // An event's deliveries may go to other owners' endpoints: a portal link's holder names its own.
  await requireOwnEndpoint(call, input.endpoint);
  const caller = call.caller.slice(0, CALLER_MAX_CHARS);
  const common: Pick<ReplayOptions, 'reason' | 'operator' | 'caller'> = { reason: input.reason, operator: operatorOf(caller), caller };
  const context = call.deps.context;
  if (input.eventId !== undefined) {
    const result = await replayCommand(context, input.eventId, { ...common, ...(input.endpoint === undefined ? {} : { endpoint: input.endpoint }) });
    return { status: 202, body: result.json };
  }
  // parseReplayRequest requires both for a bulk replay.
  const endpoint = input.endpoint!;
  const deadSince = input.deadSince!;
  const continued = input.cursor === undefined ? undefined : continuation(input.cursor, { endpoint, deadSince, until: input.until, deadReason: input.deadReason });
  const until = continued?.u ?? input.until ?? call.deps.now();
  if (until <= deadSince) throw invalid([{ path: input.until === undefined ? 'deadSince' : 'until', message: input.until === undefined ? 'must be in the past' : 'must come after deadSince' }]);
  let result;
  try {
    result = await replayCommand(context, undefined, {
      ...common,
      endpoint,
      deadSince,
      until,
      ...(input.deadReason === undefined ? {} : { deadReason: input.deadReason }),
      dryRun: input.dryRun,
      maxReplays: input.limit ?? (input.dryRun ? DRY_RUN_COUNT_PER_REQUEST : BULK_REPLAYS_PER_REQUEST),
      maxRead: ROWS_READ_PER_REQUEST,
      ...(continued === undefined ? {} : { cursor: continued.c }),
    });
  } catch (error) {
    // The listing refuses a cursor it did not issue: one forged or mangled on its way back.
    if (continued !== undefined && error instanceof RangeError) throw invalid([{ path: 'cursor', message: 'is not a `next` this API answered' }]);
    throw error;
  }
  const json = result.json as Record<string, unknown> & { next: string | null };
  const next: BulkCursor | undefined =
    json.next === null ? undefined : { v: 1, e: endpoint, s: deadSince, u: until, r: input.deadReason ?? null, c: json.next };
  return { status: input.dryRun ? 200 : 202, body: { ...json, next: next === undefined ? null : Buffer.from(JSON.stringify(next)).toString('base64url') } };
}

/**
 * The audit's operator name: the caller, or its last characters when it is longer than an operator
 * name may be (an assumed role's ARN can be); the audit's `caller` keeps it whole.
 */
export function operatorOf(caller: string): string {
  const chars = [...caller];
  return chars.length <= OPERATOR_MAX_CHARS ? caller : `…${chars.slice(-(OPERATOR_MAX_CHARS - 1)).join('')}`;
}

/** @throws ApiProblem 400 naming each bad field */
function parseReplayRequest(body: unknown): ReplayRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid([{ path: 'body', message: 'must be a JSON object' }]);
  const fields = body as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  const bad = (path: string, message: string) => void problems.push({ path, message });
  for (const key of Object.keys(fields)) if (!(BODY_FIELDS as readonly string[]).includes(key)) bad(key, 'is not a field of a replay request');

  const { eventId, endpoint, deadReason, dryRun = false, reason, cursor, limit } = fields;
  if (eventId !== undefined && !isEventId(eventId)) bad('eventId', 'must be 1–128 characters of A-Z a-z 0-9 _ - . :');
  if (endpoint !== undefined && (typeof endpoint !== 'string' || !ENDPOINT_NAME.test(endpoint))) bad('endpoint', 'must be 1–64 characters of a-z 0-9 -');
  const time = (name: 'deadSince' | 'until'): number | undefined => {
    const raw = fields[name];
    if (raw === undefined) return undefined;
    try {
      if (typeof raw !== 'string') throw new RangeError(TIME_PROBLEM);
      return isoTime(raw);
    } catch {
      bad(name, TIME_PROBLEM);
      return undefined;
    }
  };
  const deadSince = time('deadSince');
  const until = time('until');
  if (deadReason !== undefined && !(DEAD_REASONS as readonly unknown[]).includes(deadReason)) bad('deadReason', `must be one of ${DEAD_REASONS.join(', ')}`);
  if (typeof dryRun !== 'boolean') bad('dryRun', 'must be true or false');
  if (typeof reason !== 'string') bad('reason', 'is required: why it is safe to deliver again');
  else {
    const problem = auditTextProblem('reason', reason.trim() === '' ? '' : reason);
    if (problem !== undefined) bad('reason', problem);
  }
  const maxLimit = dryRun === true ? DRY_RUN_COUNT_PER_REQUEST : BULK_REPLAYS_PER_REQUEST;
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > maxLimit)) {
    bad('limit', `must be a whole number from 1 to ${maxLimit}${dryRun === true ? ' for a dry run' : ` (a dry run counts up to ${DRY_RUN_COUNT_PER_REQUEST})`}`);
  }
  if (cursor !== undefined && (typeof cursor !== 'string' || cursor === '' || cursor.length > 4096)) bad('cursor', 'must be a `next` this API answered');

  if (eventId !== undefined) {
    for (const name of BULK_ONLY) if (fields[name] !== undefined) bad(name, 'is for a bulk replay, which takes no eventId');
  } else {
    if (endpoint === undefined) bad('endpoint', 'is required: an eventId, or the endpoint whose dead deliveries to replay');
    if (fields.deadSince === undefined) bad('deadSince', 'is required for a bulk replay: the earliest death to replay');
    if (deadSince !== undefined && until !== undefined && until <= deadSince) bad('until', 'must come after deadSince');
  }
  if (problems.length > 0) throw invalid(problems);
  return {
    ...(eventId === undefined ? {} : { eventId: eventId as string }),
    ...(endpoint === undefined ? {} : { endpoint: endpoint as string }),
    ...(deadSince === undefined ? {} : { deadSince }),
    ...(until === undefined ? {} : { until }),
    ...(deadReason === undefined ? {} : { deadReason: deadReason as ReplayRequest['deadReason'] & string }),
    dryRun: dryRun as boolean,
    reason: (reason as string).trim(),
    ...(cursor === undefined ? {} : { cursor: cursor as string }),
    ...(limit === undefined ? {} : { limit: limit as number }),
  };
}

/** The cursor's continuation, if it was answered for this same selection. @throws ApiProblem 400 naming `cursor` */
function continuation(raw: string, selection: { endpoint: string; deadSince: number; until: number | undefined; deadReason: string | undefined }): BulkCursor {
  const refused = (message: string) => invalid([{ path: 'cursor', message }]);
  let parsed: Partial<BulkCursor>;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<BulkCursor>;
  } catch {
    throw refused('is not a `next` this API answered');
  }
  if (parsed?.v !== 1 || typeof parsed.e !== 'string' || typeof parsed.s !== 'number' || typeof parsed.u !== 'number' || typeof parsed.c !== 'string') {
    throw refused('is not a `next` this API answered');
  }
  const same =
    parsed.e === selection.endpoint &&
    parsed.s === selection.deadSince &&
    (parsed.r ?? null) === (selection.deadReason ?? null) &&
    (selection.until === undefined || parsed.u === selection.until);
  if (!same) throw refused('was answered for another selection: send the same endpoint, deadSince, until and deadReason');
  return parsed as BulkCursor;
}
