/**
 * Events (docs/contract.md §16): put events on the delivery queue (or the ordered intake) as
 * `handoff send` does, and read an event's deliveries as `handoff status EVENT --json` does; the
 * same use cases (cli/commands/send.ts `sendEvents`, cli/commands/status.ts `statusCommand`), so
 * the command and the API check, send and answer alike.
 *
 * `POST /v1/events` takes one event, or `{events: [...]}` (1–500). A single event that is invalid
 * is a 400 naming its bad field: nothing was sent, and there is nothing else to accept. In a batch,
 * each event is checked on its own and a bad one is refused (`refused: [{index, error}]`, the error
 * naming the field) without refusing the others, which are sent. What SQS does not take is refused the same way, with its
 * code (on the ordered intake, a shipment's later events are then held back, `held-back`, so its
 * order holds). So 202 says what was done event by event, whatever it was.
 */
import { isEventId, type ParsedEvent, parseEvent } from '../../lib/event';
import { HELD_BACK, payloadLimitFor, sendEvents } from '../../cli/commands/send-events';
import { statusCommand } from '../../cli/commands/status';
import { CommandFailedError } from '../../cli/errors';
import { safe } from '../../lib/terminal';
import { invalid, type FieldProblem } from '../problem';
import type { QueryParameter, Route } from '../route';
import {
  EVENT_DELIVERIES_SCHEMA,
  MAX_EVENTS_PER_POST,
  POST_EVENTS_ANSWER_SCHEMA,
  POST_EVENTS_BODY_SCHEMA,
} from './delivery-schemas';
import { eventTexts } from './event-input';
import { inPortalScope } from './portal-scope';
import { QueryReader } from './read-query';

interface Accepted {
  readonly eventId: string;
  readonly messageId: string;
}

interface Refused {
  /** Its position in `events` (0: the single event). */
  readonly index: number;
  /** Why, in one line: the parser's (naming the field) or the queue's (its code first). */
  readonly error: string;
}

const ORDERED_PARAMETER: QueryParameter = {
  name: 'ordered',
  description: "true: to the ordered intake (docs/contract.md §13), each shipment's events in input order",
  schema: { type: 'boolean', default: false },
};

const postEvents: Route = {
  method: 'POST',
  path: '/v1/events',
  operationId: 'postEvents',
  summary: 'Put one event or a batch on the delivery queue (or, ordered=true, the ordered intake)',
  description:
    'Each event is checked as `handoff send` checks it (docs/contract.md §2, the deployment\'s payload limit) and sent with the same SQS calls. ' +
    'A single invalid event is a 400 naming its field; in a batch a bad event is refused on its own and the others are sent.',
  tag: 'events',
  query: [ORDERED_PARAMETER],
  body: { schema: POST_EVENTS_BODY_SCHEMA, required: true, description: `One event, or {events: [...]} with 1–${MAX_EVENTS_PER_POST}` },
  responses: { 202: { description: 'What became of each event: put on the queue, or refused and why', schema: POST_EVENTS_ANSWER_SCHEMA } },
  problems: [409, 415],
  handle: async ({ request, body, deps }) => {
    const query = new QueryReader(request.query, [ORDERED_PARAMETER]);
    const ordered = query.choice('ordered', ['true', 'false'] as const) === 'true';
    query.done();
    const ctx = deps.context;
    const limit = payloadLimitFor(ctx.target, process.env);
    const { texts, batch } = eventsOf(body, request.body ?? '');

    const valid: { index: number; event: ParsedEvent }[] = [];
    const refused: Refused[] = [];
    texts.forEach((text, index) => {
      const result = parseEvent(text, limit.bytes);
      if (result.ok) {
        valid.push({ index, event: result.value });
        return;
      }
      const { field, message } = result.error;
      if (!batch) throw invalid([{ path: field ?? 'body', message }]);
      // The parser's message begins with the field it names (`status must be one of …`).
      refused.push({ index, error: message });
    });

    const outcome = valid.length === 0 ? { sent: [], unsent: [] } : await sendEvents(ctx, valid.map((v) => v.event), { ordered });
    const accepted: Accepted[] = outcome.sent.map((s) => ({ eventId: s.eventId, messageId: s.messageId }));
    for (const u of outcome.unsent) {
      // `held-back`'s message says why itself; SQS's is its code and message.
      refused.push({ index: valid[u.position]!.index, error: u.code === HELD_BACK ? u.message : sqsReason(u.code, u.message) });
    }
    refused.sort((a, b) => a.index - b.index);
    return { status: 202, body: { accepted, refused } };
  },
};

/** The event texts of the body, and whether it was a batch. @throws ApiProblem 400 for a body of another shape */
function eventsOf(body: unknown, text: string): { texts: string[]; batch: boolean } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid([{ path: 'body', message: 'must be an event (a JSON object), or {events: [...]}' }]);
  }
  if (!Object.hasOwn(body, 'events')) return { texts: [text.trim()], batch: false };
  const problems: FieldProblem[] = Object.keys(body)
    .filter((key) => key !== 'events')
    .map((key) => ({ path: key, message: 'is not a field of a batch (it takes events only)' }));
  const events = (body as { events: unknown }).events;
  if (!Array.isArray(events)) problems.push({ path: 'events', message: 'must be an array of events' });
  else if (events.length === 0 || events.length > MAX_EVENTS_PER_POST) {
    problems.push({ path: 'events', message: `must hold 1–${MAX_EVENTS_PER_POST} events, not ${events.length}` });
  }
  if (problems.length > 0) throw invalid(problems);
  const texts = eventTexts(text);
  // The scan reads the same JSON that was parsed: one text per element, always.
  if (texts === undefined || texts.length !== (events as unknown[]).length) throw new Error('the events of the body could not be read as sent');
  return { texts, batch: true };
}

const getEvent: Route = {
  method: 'GET',
  path: '/v1/events/{eventId}',
  operationId: 'getEvent',
  summary: "An event's deliveries, each with its attempt history",
  description:
    'As `handoff status EVENT --json`: one delivery per endpoint the event was routed to, with its state, its latest attempts (`history`; `attempts` counts all) and its audit trail. Never the event itself. ' +
    "A portal link's holder gets its owner's endpoints' deliveries only; an event with none of them is a 404, as an unknown event is.",
  tag: 'events',
  portal: 'owner',
  responses: { 200: { description: "The event's deliveries", schema: EVENT_DELIVERIES_SCHEMA } },
  problems: [404],
  handle: async (call) => {
    const { request, params, deps } = call;
    const query = new QueryReader(request.query, []);
    const eventId = params.eventId!;
    if (!isEventId(eventId)) query.pathProblem('eventId', 'must be 1–128 characters of A-Z a-z 0-9 _ - . :');
    query.done();
    // `status`'s own refusal (`not-found`) is the 404.
    const result = await statusCommand(deps.context, eventId, {});
    if (call.portalOwner === undefined) return { status: 200, body: result.json };
    const { deliveries } = result.json as { eventId: string; deliveries: { endpoint: string }[] };
    const own = await inPortalScope(call, deliveries);
    // The same refusal as for an event no one has: a link learns nothing of other owners' deliveries.
    if (own.length === 0) throw new CommandFailedError(`no delivery record for event ${eventId}`, 'not-found');
    return { status: 200, body: { eventId, deliveries: own } };
  },
};

export const EVENT_ROUTES: readonly Route[] = [postEvents, getEvent];

/**
 * What SQS said of an entry it did not take, for the caller: its code and its reason (a message too
 * large, say), made inert, with any ARN in it (a role's, a queue's: an AccessDenied names them) left out.
 */
export function sqsReason(code: string, message: string): string {
  const reason = safe(message.replace(/arn:[\w-]+:[^\s,;)"']+/g, '(an ARN)')).slice(0, 300);
  return reason === '' ? code : `${code}: ${reason}`;
}
