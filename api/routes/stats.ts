/**
 * Stats (docs/contract.md §16): how the pipeline is doing, as `handoff stats --json` says it
 * (cli/commands/stats.ts `statsCommand`, the same use case), each figure with its source. `since`
 * is the command's `--since`, the same text (`30m`, `24h`, `7d`). Metrics that cannot be read are
 * not a failure of the request: the other figures are answered, the metrics' are null, and
 * `metricsError` says why (where the command prints it all and exits 1).
 *
 * `GET /v1/stats/minutes`: the same metrics minute by minute (the console's chart of deliveries
 * and failures), read through the same reader (`readMinutes`), over at most a day.
 */
import { DEFAULT_STATS_MAX_ROWS, DEFAULT_STATS_SINCE_MS, parseSince, statsCommand } from '../../cli/commands/stats';
import { ENDPOINT_NAME } from '../../lib/endpoints/endpoint';
import { MetricsUnavailableError } from '../../lib/metrics/metrics-reader';
import { failedAttempts, lastMinutes, MINUTE_MS } from '../../lib/metrics/minute-series';
import type { QueryParameter, Route } from '../route';
import { STATS_MINUTES_SCHEMA, STATS_SCHEMA } from './delivery-schemas';
import { requireOwnEndpoint } from './portal-scope';
import { QueryReader } from './read-query';

const STATS_QUERY: readonly QueryParameter[] = [
  { name: 'endpoint', description: "This endpoint's figures (no pending count: the queues are shared)", schema: { type: 'string', pattern: ENDPOINT_NAME.source } },
  {
    name: 'since',
    description: 'The metrics window: the last 30m, 24h, 7d … (1m to 15d; default 24h)',
    schema: { type: 'string', pattern: '^\\s*\\d+\\s*[mhd]\\s*$', default: '24h' },
  },
];

const getStats: Route = {
  method: 'GET',
  path: '/v1/stats',
  operationId: 'getStats',
  summary: 'How the pipeline is doing: pending, dead, parked, delivered, retry rate, latency, queue depths',
  description:
    `As \`handoff stats --json\`. The dead count reads at most ${DEFAULT_STATS_MAX_ROWS} rows (\`capped.dead\` says when there were more). ` +
    "A portal link's holder may ask for one of its owner's endpoints only (`endpoint` required, else 403).",
  tag: 'stats',
  query: STATS_QUERY,
  // A portal link's holder: one of its owner's endpoints' figures, never the totals.
  portal: 'owner',
  problems: [403],
  responses: { 200: { description: 'The figures, each with its source', schema: STATS_SCHEMA } },
  handle: async (call) => {
    const { request, deps } = call;
    const query = new QueryReader(request.query, STATS_QUERY);
    const endpoint = query.text('endpoint', { pattern: ENDPOINT_NAME, message: 'must be an endpoint name: 1–64 of a-z 0-9 -' });
    const sinceMs = query.parsed('since', parseSince);
    query.done();
    await requireOwnEndpoint(call, endpoint);
    const result = await statsCommand(deps.context, {
      maxRowsPerState: DEFAULT_STATS_MAX_ROWS,
      sinceMs: sinceMs ?? DEFAULT_STATS_SINCE_MS,
      ...(endpoint === undefined ? {} : { endpoint }),
    });
    return { status: 200, body: result.json };
  },
};

/** The longest window of the per-minute series: a day, 1,440 points. */
export const MAX_MINUTES_SINCE_MS = 24 * 60 * 60 * 1000;
const DEFAULT_MINUTES_SINCE_MS = 60 * 60 * 1000;
const MINUTES_SINCE_PROBLEM = 'must be a duration like 30m, 1h or 24h, from 1m to 24h.';

const MINUTES_QUERY: readonly QueryParameter[] = [
  { name: 'endpoint', description: "This endpoint's figures (every endpoint's together when absent)", schema: { type: 'string', pattern: ENDPOINT_NAME.source } },
  {
    name: 'since',
    description: 'The window: the last 30m, 1h, 24h … as whole minutes, the last the current one (1m to 24h; default 1h)',
    schema: { type: 'string', pattern: '^\\s*\\d+\\s*[mhd]\\s*$', default: '1h' },
  },
];

/** `since` as ms, 1m to 24h. @throws RangeError saying the form wanted */
function parseMinutesSince(text: string): number {
  let ms: number;
  try {
    ms = parseSince(text);
  } catch {
    throw new RangeError(MINUTES_SINCE_PROBLEM);
  }
  if (ms > MAX_MINUTES_SINCE_MS) throw new RangeError(MINUTES_SINCE_PROBLEM);
  return ms;
}

const getStatsMinutes: Route = {
  method: 'GET',
  path: '/v1/stats/minutes',
  operationId: 'getStatsMinutes',
  summary: 'Deliveries and failed attempts minute by minute, over the last hour (at most a day)',
  description:
    'The metrics `handoff stats` reads, one point a minute: `delivered` is `Delivered`, `failed` is `Attempts` less `Delivered` in that minute. ' +
    'Metrics that cannot be read are answered with no points and `metricsError`, not as a failure. ' +
    "A portal link's holder may ask for one of its owner's endpoints only (`endpoint` required, else 403).",
  tag: 'stats',
  query: MINUTES_QUERY,
  portal: 'owner',
  problems: [403],
  responses: { 200: { description: 'The series, oldest minute first', schema: STATS_MINUTES_SCHEMA } },
  handle: async (call) => {
    const { request, deps } = call;
    const query = new QueryReader(request.query, MINUTES_QUERY);
    const endpoint = query.text('endpoint', { pattern: ENDPOINT_NAME, message: 'must be an endpoint name: 1–64 of a-z 0-9 -' });
    const sinceMs = query.parsed('since', parseMinutesSince) ?? DEFAULT_MINUTES_SINCE_MS;
    query.done();
    await requireOwnEndpoint(call, endpoint);
    const ctx = deps.context;
    const metrics = ctx.metrics();
    const window = lastMinutes(ctx.now(), sinceMs / MINUTE_MS);
    const answer = {
      endpoint: endpoint ?? null,
      periodSeconds: MINUTE_MS / 1000,
      source: endpoint === undefined ? metrics.source : `${metrics.source}, endpoint ${endpoint} only`,
    };
    try {
      const minutes = await metrics.readMinutes(window, endpoint === undefined ? {} : { endpoint });
      const points = minutes.map((m) => ({ at: new Date(m.startMs).toISOString(), delivered: m.delivered, failed: failedAttempts(m) }));
      return { status: 200, body: { ...answer, points } };
    } catch (error) {
      if (!(error instanceof MetricsUnavailableError)) throw error;
      return { status: 200, body: { ...answer, points: [], metricsError: error.message } };
    }
  },
};

export const STATS_ROUTES: readonly Route[] = [getStats, getStatsMinutes];
