/**
 * The JSON Schemas of what the event and read routes take and answer (events.ts, deliveries.ts,
 * stats.ts), one definition each: a delivery is the same object wherever it is listed (an event's,
 * a shipment's, the dead), as `status --json` prints it (cli/commands/record-view.ts `recordJson`).
 * The OpenAPI document is generated from these, and the tests check every answer against it, so a
 * schema that says other than the JSON fails there.
 */
import { DELIVERY_STATES } from '../../lib/ledger/delivery-record';
import { OUTCOME_KINDS } from '../../lib/outcome';
import { SHIPMENT_STATUSES } from '../../lib/event';
import type { JsonSchema } from '../../lib/endpoints/json-schema';

export const DEAD_REASONS = ['rejected', 'exhausted', 'invalid'] as const;

const epochMs = (description: string): JsonSchema => ({ type: 'integer', minimum: 0, description });
const count = (description: string): JsonSchema => ({ type: 'integer', minimum: 0, description });

/** An attempt's outcome as the row keeps it (lib/outcome.ts `AttemptOutcome`). */
const OUTCOME_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['kind'],
  properties: {
    kind: { enum: [...OUTCOME_KINDS] },
    status: { type: 'integer', description: "The HTTP status the receiver answered; beside cause auth or proxy, the token endpoint's or the proxy's" },
    responseStart: { type: 'string', description: "The start of a rejecting receiver's response" },
    cause: { type: 'string', description: 'Why no answer came, or why nothing was sent (timeout, connection-refused, dns, tls, auth: no token from the token endpoint, proxy: the proxy refused the tunnel, …)' },
    retryAfterSeconds: { type: 'number', minimum: 0 },
  },
  additionalProperties: false,
};

/** One delivery (a ledger row, docs/contract.md §10) without its event: what happened, never what was sent. */
export const DELIVERY_SCHEMA: JsonSchema = {
  type: 'object',
  description:
    'One delivery of an event to one endpoint, as `handoff status --json` prints it: its state, attempt history (the latest 20 attempts; `attempts` counts them all) and audit trail. Never the event itself.',
  required: ['eventId', 'endpoint', 'state', 'attempts', 'maxAttempts', 'replays', 'policy', 'history', 'audit', 'createdAt', 'stateSince'],
  properties: {
    eventId: { type: 'string' },
    endpoint: { type: 'string' },
    state: { enum: [...DELIVERY_STATES] },
    attempts: count('Attempts claimed so far, reset by a replay'),
    maxAttempts: { type: 'integer', minimum: 1 },
    replays: count('Replays by operators'),
    lastOutcome: OUTCOME_SCHEMA,
    deadReason: { enum: [...DEAD_REASONS] },
    deadDetail: { type: 'string', description: 'One line on why it died' },
    contentHash: { type: 'string', pattern: '^[0-9a-f]{64}$', description: "SHA-256 of the event's canonical JSON: identifies the content without showing it" },
    eventType: { type: 'string' },
    policy: {
      type: 'object',
      required: ['version', 'maxAttempts', 'waitsSeconds'],
      properties: {
        version: { type: 'string' },
        maxAttempts: { type: 'integer', minimum: 1 },
        waitsSeconds: { type: 'array', items: { type: 'integer', minimum: 0 } },
      },
      additionalProperties: false,
    },
    history: {
      type: 'array',
      description: 'The latest attempts, oldest first',
      items: {
        type: 'object',
        required: ['attempt', 'at', 'outcome', 'durationMs'],
        properties: {
          attempt: { type: 'integer', minimum: 1 },
          at: epochMs('When the attempt started (epoch ms)'),
          outcome: { enum: [...OUTCOME_KINDS] },
          status: { type: 'integer' },
          cause: { type: 'string' },
          durationMs: { type: 'integer', minimum: 0 },
        },
        additionalProperties: false,
      },
    },
    nextAttemptAt: epochMs('No attempt before this (epoch ms)'),
    leaseOwner: { type: 'string', description: 'The worker sending it now' },
    leaseExpiresAt: epochMs("Until when the worker's claim holds (epoch ms)"),
    claimToken: { type: 'string', description: "The current claim's identity (not a credential: nothing outside the ledger takes it)" },
    audit: {
      type: 'array',
      description: "Operators' replays and releases, and an invalid message that came first",
      items: {
        type: 'object',
        required: ['at', 'action', 'operator', 'reason'],
        properties: {
          at: epochMs('When (epoch ms)'),
          action: { enum: ['replay', 'invalid-message', 'release'] },
          operator: { type: 'string' },
          reason: { type: 'string' },
          caller: { type: 'string', description: 'The authenticated caller' },
          id: { type: 'string' },
        },
        additionalProperties: false,
      },
    },
    createdAt: epochMs('Admitted (epoch ms)'),
    deliveredAt: epochMs('Delivered (epoch ms)'),
    deadAt: epochMs('Died (epoch ms)'),
    stateSince: epochMs('The last state change (epoch ms)'),
    expiresAt: { type: 'integer', minimum: 0, description: 'When the row may be deleted (epoch seconds)' },
    parkedAt: epochMs('Parked while its endpoint is disabled, since (epoch ms)'),
    sequence: { type: 'integer', minimum: 1, description: "Its place among its shipment's events at an endpoint ordered per shipment" },
    shipmentId: { type: 'string' },
    traceparent: {
      type: 'string',
      pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$',
      description: 'The W3C traceparent of its first traced attempt (§19): the trace to look for, which a replay, a release or a recovery send links to',
    },
    releasedAt: epochMs('Its shipment went on without it (epoch ms)'),
  },
  additionalProperties: false,
};

/** `{items, next}`: a page of a listing; `next` is null on the last page. */
export function pageSchema(items: JsonSchema, description: string): JsonSchema {
  return {
    type: 'object',
    description,
    required: ['items', 'next'],
    properties: {
      items: { type: 'array', items },
      next: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page. A page may hold fewer than `limit` and still have one.' },
    },
    additionalProperties: false,
  };
}

/** An event's deliveries, as `handoff status EVENT --json`. */
export const EVENT_DELIVERIES_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['eventId', 'deliveries'],
  properties: { eventId: { type: 'string' }, deliveries: { type: 'array', minItems: 1, items: DELIVERY_SCHEMA } },
  additionalProperties: false,
};

/** A shipment event (docs/contract.md §2), as a producer sends it. What JSON Schema cannot say (exact numbers, nesting depth, the payload limit) the parser checks. */
export const EVENT_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'A shipment event (docs/contract.md §2), checked as `handoff send` checks it.',
  required: ['id', 'shipmentId', 'status', 'occurredAt'],
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9_\\-.:]{1,128}$', description: 'The event ID: the idempotency key' },
    shipmentId: { type: 'string', minLength: 1, description: '1–128 printable characters' },
    status: { enum: [...SHIPMENT_STATUSES] },
    occurredAt: { type: 'string', description: 'ISO 8601 date-time with its zone' },
    data: { type: 'object' },
  },
  additionalProperties: false,
};

/** The largest batch `POST /v1/events` takes. */
export const MAX_EVENTS_PER_POST = 500;

export const POST_EVENTS_BODY_SCHEMA: JsonSchema = {
  oneOf: [
    EVENT_SCHEMA,
    {
      type: 'object',
      description: 'A batch: each event is checked on its own, and a bad one is refused (in `refused`) without refusing the others.',
      required: ['events'],
      properties: { events: { type: 'array', minItems: 1, maxItems: MAX_EVENTS_PER_POST, items: { type: 'object' } } },
      additionalProperties: false,
    },
  ],
};

export const POST_EVENTS_ANSWER_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['accepted', 'refused'],
  properties: {
    accepted: {
      type: 'array',
      description: 'The events put on the queue, in input order',
      items: {
        type: 'object',
        required: ['eventId', 'messageId'],
        properties: { eventId: { type: 'string' }, messageId: { type: 'string', description: "SQS's message ID" } },
        additionalProperties: false,
      },
    },
    refused: {
      type: 'array',
      description: 'The events not put on the queue, in input order, each with why',
      items: {
        type: 'object',
        required: ['index', 'error'],
        properties: {
          index: { type: 'integer', minimum: 0, description: 'Its position in `events` (0 for a single event)' },
          error: {
            type: 'string',
            description:
              "Why: the check it failed, naming the field (`status must be one of …`); the queue's code and message; or, on the ordered intake, that an earlier event of its shipment was not sent (held back, so its order holds)",
          },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
};

const QUEUE_DEPTH_SCHEMA: JsonSchema = {
  type: ['object', 'null'],
  required: ['visible', 'inFlight', 'delayed'],
  properties: { visible: count('Waiting'), inFlight: count('Received, not yet deleted'), delayed: count('Delayed') },
  additionalProperties: false,
};

const nullableCount = (description: string): JsonSchema => ({ type: ['integer', 'null'], minimum: 0, description });
const nullableMs = (description: string): JsonSchema => ({ type: ['number', 'null'], minimum: 0, description });

/** `handoff stats --json` (cli/commands/stats.ts). */
export const STATS_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'As `handoff stats --json`: each figure with its source; null where the source has none.',
  required: [
    'endpoint',
    'pendingCount',
    'oldestPendingAgeMs',
    'deadCount',
    'parkedCount',
    'capped',
    'maxRowsPerState',
    'deliveredCount',
    'attempts',
    'retriedAttempts',
    'retryRate',
    'deadLettered',
    'latencyMs',
    'latencySamples',
    'queue',
    'redriveQueue',
    'deadLetterQueue',
    'sources',
    'window',
  ],
  properties: {
    endpoint: { type: ['string', 'null'] },
    pendingCount: nullableCount('Messages on the delivery and redrive queues (null with an endpoint)'),
    oldestPendingAgeMs: nullableMs('The oldest message the consumer received in the window had waited this long'),
    deadCount: count('Dead deliveries'),
    parkedCount: nullableCount('Parked deliveries'),
    byEndpoint: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['deadCount'],
        properties: { deadCount: count('Dead'), parkedCount: count('Parked') },
        additionalProperties: false,
      },
    },
    capped: { type: 'object', required: ['dead'], properties: { dead: { type: 'boolean' } }, additionalProperties: false },
    maxRowsPerState: { type: 'integer', minimum: 1 },
    deliveredCount: nullableCount('Delivered in the window'),
    attempts: nullableCount('Attempts in the window'),
    retriedAttempts: nullableCount('Attempts that were not their first'),
    retryRate: { type: ['number', 'null'], minimum: 0, maximum: 1 },
    deadLettered: nullableCount('Sent to the dead-letter queue in the window'),
    latencyMs: {
      type: 'object',
      required: ['p50', 'p99'],
      properties: { p50: nullableMs('Median'), p99: nullableMs('99th percentile') },
      additionalProperties: false,
    },
    latencySamples: nullableCount('Deliveries the percentiles are over'),
    queue: QUEUE_DEPTH_SCHEMA,
    redriveQueue: QUEUE_DEPTH_SCHEMA,
    deadLetterQueue: QUEUE_DEPTH_SCHEMA,
    sources: {
      type: 'object',
      required: ['pending', 'dead', 'parked', 'metrics', 'percentiles', 'oldestPendingAge', 'queues'],
      properties: Object.fromEntries(['pending', 'dead', 'parked', 'metrics', 'percentiles', 'oldestPendingAge', 'queues'].map((name) => [name, { type: 'string' }])),
      additionalProperties: false,
    },
    window: {
      type: 'object',
      required: ['since', 'startMs', 'endMs'],
      properties: { since: { type: 'string', description: '`24h`, `90min`, `7d`' }, startMs: epochMs('From'), endMs: epochMs('To') },
      additionalProperties: false,
    },
    metricsError: { type: 'string', description: 'Why the metrics could not be read (their figures are then null)' },
  },
  additionalProperties: false,
};

/** `GET /v1/stats/minutes`: the consumer's counts minute by minute, for the console's chart. */
export const STATS_MINUTES_SCHEMA: JsonSchema = {
  type: 'object',
  description:
    'Deliveries and failed attempts minute by minute, from the same metrics as `handoff stats` (CloudWatch, or the sandbox\'s metric sink). ' +
    'One point for every minute of the window, oldest first, the last the current minute (still filling); a minute with nothing published is zeros.',
  required: ['endpoint', 'periodSeconds', 'source', 'points'],
  properties: {
    endpoint: { type: ['string', 'null'], description: "The endpoint whose figures these are; null: every endpoint's together" },
    periodSeconds: { const: 60, description: 'Each point covers this many seconds' },
    source: { type: 'string', description: 'Where the figures come from' },
    points: {
      type: 'array',
      description: 'Every minute of the window, oldest first; empty when the metrics could not be read (`metricsError` says why)',
      items: {
        type: 'object',
        required: ['at', 'delivered', 'failed'],
        properties: {
          at: { type: 'string', format: 'date-time', description: "The minute's start (ISO 8601, UTC)" },
          delivered: count('`Delivered`: deliveries the receiver accepted in the minute'),
          failed: count(
            '`Attempts` less `Delivered` in the minute (never below 0): attempts that did not deliver, whether retried later or dead (a refusal, a timeout, an error). Attempts, not deliveries: a delivery that failed three times before it was accepted counts three here.',
          ),
        },
        additionalProperties: false,
      },
    },
    metricsError: { type: 'string', description: 'Why the metrics could not be read (`points` is then empty)' },
  },
  additionalProperties: false,
};
