/**
 * Stats (docs/contract.md §16): how the pipeline is doing, as `handoff stats --json` says it
 * (cli/commands/stats.ts `statsCommand`, the same use case), each figure with its source. `since`
 * is the command's `--since`, the same text (`30m`, `24h`, `7d`). Metrics that cannot be read are
 * not a failure of the request: the other figures are answered, the metrics' are null, and
 * `metricsError` says why (where the command prints it all and exits 1).
 */
import { DEFAULT_STATS_MAX_ROWS, DEFAULT_STATS_SINCE_MS, parseSince, statsCommand } from '../../cli/commands/stats';
import { ENDPOINT_NAME } from '../../lib/endpoints/endpoint';
import { outOfScope, requireOwner } from '../portal-link';
import type { QueryParameter, Route } from '../route';
import { STATS_SCHEMA } from './delivery-schemas';
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
    if (call.portalOwner !== undefined) {
      if (endpoint === undefined) throw outOfScope();
      // An endpoint that is not there is no one's: out of scope too, so a link learns nothing of other owners' names.
      requireOwner(call, (await deps.context.registry().get(endpoint))?.fields.owner);
    }
    const result = await statsCommand(deps.context, {
      maxRowsPerState: DEFAULT_STATS_MAX_ROWS,
      sinceMs: sinceMs ?? DEFAULT_STATS_SINCE_MS,
      ...(endpoint === undefined ? {} : { endpoint }),
    });
    return { status: 200, body: result.json };
  },
};

export const STATS_ROUTES: readonly Route[] = [getStats];
