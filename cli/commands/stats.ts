/**
 * `handoff stats`: how the pipeline is doing, from four sources, each named in the output:
 * - SQS's approximate counts, now: each queue's depth, and `pending`, the messages on the delivery
 *   queue (waiting, in flight, delayed) and on the redrive queue. A delivery being retried is its
 *   message, in flight between attempts, and in no listing (a failed attempt does not list its
 *   row), so the queues are where pending deliveries are counted. Approximate, as SQS's counts are;
 *   a producer's message not yet routed counts once whatever its endpoints; parked deliveries are
 *   on no queue (their own line);
 * - the ledger's listing of its dead rows (dead count): those rows only, as they are now, at most
 *   `maxRowsPerState`;
 * - the consumer's metrics over the window (delivered count, retry rate, latency percentiles, and
 *   the oldest message received: `PendingAge`'s maximum): CloudWatch for a deployed stack, the
 *   sandbox's metric sink locally. A delivered row is in no index, so the ledger is never asked to
 *   list or count them;
 * - the parked deliveries of each endpoint in the registry (docs/contract.md §12): the ledger's
 *   parked listing of that endpoint, counted from its index entries (never the rows), now.
 * When the metrics cannot be read, the other figures are still printed and the command fails.
 *
 * `--endpoint NAME`: that endpoint's figures: its dead rows (the ledger picks them from the index
 * entries), its parked count and its metrics (CloudWatch's `Service, Endpoint` dimensions; the
 * sandbox's sink keeps each endpoint's too). The queues are shared by every endpoint: their depths
 * are the whole queues', and `pending` is not given (null), and the output says so. Without it,
 * the totals, and each endpoint's dead and parked counts.
 */
import { GetQueueAttributesCommand, type QueueAttributeName } from '@aws-sdk/client-sqs';
import pLimit from 'p-limit';
import type { DeliveryRecord, Ledger } from '../../lib/ledger/ledger';
import { MetricsUnavailableError, type MetricsWindow } from '../../lib/metrics/metrics-reader';
import { deadByEndpoint, deliveryStats, pendingCount, type DeliveryStats, type EndpointBacklog, type QueueDepth } from '../../lib/stats';
import type { CommandContext } from '../context';
import { formatDuration, formatPercent, keyValues } from '../format';
import { PARKED_COUNT_CONCURRENCY } from './endpoint-read';
import type { CommandResult } from './result';

const PAGE_SIZE = 100;
/** The metrics window when none is given: the last day. */
export const DEFAULT_STATS_SINCE_MS = 24 * 60 * 60 * 1000;
/** The most dead rows read when not told (`--max-rows`'s default; the management API's `GET /v1/stats`). */
export const DEFAULT_STATS_MAX_ROWS = 5000;
/** The longest `--since`: CloudWatch's one-minute data (the sandbox keeps less, and says so). */
const MAX_SINCE_MS = 15 * 24 * 60 * 60 * 1000;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export interface StatsOptions {
  /** The most dead rows read from the ledger. */
  readonly maxRowsPerState: number;
  /** The metrics window: the last this many ms. */
  readonly sinceMs?: number;
  /** One endpoint's figures rather than the totals. */
  readonly endpoint?: string;
}

interface DeadRows {
  readonly records: DeliveryRecord[];
  /** True when more rows were left unread. */
  readonly capped: boolean;
}

/** `30m`, `24h`, `7d` as ms; a RangeError saying the form wanted otherwise. */
export function parseSince(text: string): number {
  const match = /^(\d+)\s*([mhd])$/.exec(text.trim());
  const ms = match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : NaN;
  if (!(ms >= UNIT_MS.m && ms <= MAX_SINCE_MS)) throw new RangeError('must be a duration like 30m, 24h or 7d, from 1m to 15d.');
  return ms;
}

/** `24 h`, `90 min`, `7 d`: a window in its largest whole unit (hours up to a day), for the output. */
export function describeSince(ms: number): string {
  if (ms % UNIT_MS.d === 0 && ms > UNIT_MS.d) return `${ms / UNIT_MS.d} d`;
  if (ms % UNIT_MS.h === 0) return `${ms / UNIT_MS.h} h`;
  return `${ms / UNIT_MS.m} min`;
}

/** What `pending` counts, for the sources line and `sources.pending`. */
const PENDING_CAVEATS =
  "a producer's message not yet routed counts once whatever its endpoints; parked deliveries are on no queue (parked, on its own line)";

export async function statsCommand(ctx: CommandContext, options: StatsOptions): Promise<CommandResult> {
  const nowMs = ctx.now();
  const ledger = ctx.ledger();
  const metrics = ctx.metrics();
  const askedMs = options.sinceMs ?? DEFAULT_STATS_SINCE_MS;
  // A window longer than the source keeps would claim figures it does not hold: shorten it, say so.
  const sinceMs = Math.min(askedMs, metrics.maxWindowMs);
  const window: MetricsWindow = { startMs: nowMs - sinceMs, endMs: nowMs };
  const { endpoint } = options;
  const [dead, delivery, queue, redriveQueue, deadLetterQueue, parked] = await Promise.all([
    readDead(ledger, options.maxRowsPerState, endpoint),
    metrics.read(window, endpoint === undefined ? {} : { endpoint }).then(
      (read): DeliveryStats | MetricsUnavailableError => deliveryStats(read),
      (error: unknown) => {
        if (error instanceof MetricsUnavailableError) return error;
        throw error;
      },
    ),
    queueDepth(ctx, ctx.target.queueUrl),
    queueDepth(ctx, ctx.target.redriveQueueUrl),
    queueDepth(ctx, ctx.target.deadLetterQueueUrl),
    parkedCounts(ctx, ledger, endpoint),
  ]);
  // The queues hold every endpoint's messages: no count of one endpoint's comes from them.
  const pending = endpoint === undefined ? pendingCount(queue, redriveQueue) : null;
  const deadCount = dead.records.length;
  const delivered = delivery instanceof MetricsUnavailableError ? undefined : delivery;
  const since = describeSince(sinceMs);

  const ms = (value: number | null | undefined) => (value === null || value === undefined ? 'n/a' : formatDuration(value));
  const depth = (d: QueueDepth | null, what: string) =>
    d === null ? `n/a (the target names no ${what})` : `${d.visible} waiting, ${d.inFlight} in flight, ${d.delayed} delayed`;
  const retryRate = (d: DeliveryStats | undefined) => {
    if (d === undefined) return 'n/a';
    if (d.retryRate === null) return 'n/a (no attempts)';
    return `${formatPercent(d.retryRate)} (${d.retriedAttempts} of ${d.attempts} attempts were retries)`;
  };
  const oldestReceived = (d: DeliveryStats | undefined) => {
    if (d === undefined) return 'n/a';
    if (d.oldestPendingAgeMs === null) return `n/a (no message received in the last ${since})`;
    return `${formatDuration(d.oldestPendingAgeMs)} old (the oldest message the consumer received in the last ${since})`;
  };
  let pendingText: string;
  if (endpoint !== undefined) pendingText = 'n/a (the queues are shared by every endpoint)';
  else if (pending === null) pendingText = 'n/a (the target names no delivery queue)';
  else pendingText = String(pending);
  const byEndpoint = endpoint === undefined ? withParked(deadByEndpoint(dead.records), parked) : undefined;
  const parkedTotal = parked === null ? null : Object.values(parked).reduce((sum, n) => sum + n, 0);
  const lines: [string, string][] = [];
  if (endpoint !== undefined) lines.push(['endpoint', endpoint]);
  lines.push(
    ['pending', pendingText],
    ['oldest received', oldestReceived(delivered)],
    ['dead', dead.capped ? `at least ${deadCount}` : String(deadCount)],
    ['parked', parkedTotal === null ? 'n/a (no endpoint registry in the target)' : String(parkedTotal)],
  );
  // Several endpoints with dead rows, or any parked: each one's share (dead from the rows already read).
  if (byEndpoint !== undefined && (Object.keys(byEndpoint).length > 1 || (parkedTotal ?? 0) > 0)) {
    for (const [name, b] of Object.entries(byEndpoint)) {
      lines.push([`  ${name}`, `${b.deadCount} dead${b.parkedCount === undefined ? '' : `, ${b.parkedCount} parked`}`]);
    }
  }
  lines.push(
    ['delivered', delivered === undefined ? 'n/a' : String(delivered.deliveredCount)],
    ['retry rate', retryRate(delivered)],
    ['latency p50', ms(delivered?.latencyMs.p50)],
    ['latency p99', ms(delivered?.latencyMs.p99)],
    ['queue', depth(queue, 'delivery queue')],
    ['redrive queue', depth(redriveQueue, 'redrive queue')],
    ['dead-letter queue', depth(deadLetterQueue, 'dead-letter queue')],
  );
  const metricsSource = endpoint === undefined ? metrics.source : `${metrics.source}, endpoint ${endpoint} only`;
  let pendingSource: string;
  if (endpoint !== undefined) pendingSource = 'n/a with an endpoint: the queues are shared by every endpoint';
  else if (queue === null) pendingSource = 'n/a: the target names no delivery queue';
  else {
    pendingSource =
      (redriveQueue === null
        ? "the messages on the delivery queue (waiting, in flight, delayed; the target names no redrive queue): SQS's approximate counts, now"
        : "the messages on the delivery queue and the redrive queue (waiting, in flight, delayed): SQS's approximate counts, now") +
      `; ${PENDING_CAVEATS}`;
  }
  const deadSource = endpoint === undefined ? "the ledger's dead rows" : `the ledger's dead rows of endpoint ${endpoint}`;
  const queuesSource = endpoint === undefined ? "SQS's approximate counts" : "SQS's approximate counts of the whole queues, which every endpoint shares";
  const parkedSource =
    endpoint === undefined ? "the ledger's parked listing of each endpoint in the registry" : `the ledger's parked listing of endpoint ${endpoint}`;
  const oldestSource = 'the largest PendingAge (how long a message had been on the queue when the consumer received it)';
  const sources = [
    `pending: ${pendingSource}`,
    `dead: ${deadSource}, now`,
    `parked: ${parkedSource}, now`,
    `delivered, retry rate, latency, oldest received: ${metricsSource}, the last ${since}` +
      (delivered === undefined ? '' : `; percentiles over ${delivered.latencySamples} deliveries, ${metrics.percentileMethod}`),
    `oldest received: ${oldestSource}; a message not yet received is not in it`,
    `queues: ${queuesSource}, now`,
  ];
  const notes: string[] = [];
  if (sinceMs < askedMs) {
    notes.push(`the metrics cover the last ${since}, not ${describeSince(askedMs)}: ${metrics.source} keeps no more`);
  }
  if (dead.capped) {
    notes.push(`read at most ${options.maxRowsPerState} dead rows; raise --max-rows for an exact figure`);
  }

  return {
    json: {
      endpoint: endpoint ?? null,
      pendingCount: pending,
      oldestPendingAgeMs: delivered?.oldestPendingAgeMs ?? null,
      deadCount,
      parkedCount: parkedTotal,
      ...(byEndpoint === undefined ? {} : { byEndpoint }),
      capped: { dead: dead.capped },
      maxRowsPerState: options.maxRowsPerState,
      deliveredCount: delivered?.deliveredCount ?? null,
      attempts: delivered?.attempts ?? null,
      retriedAttempts: delivered?.retriedAttempts ?? null,
      retryRate: delivered?.retryRate ?? null,
      deadLettered: delivered?.deadLettered ?? null,
      latencyMs: delivered?.latencyMs ?? { p50: null, p99: null },
      latencySamples: delivered?.latencySamples ?? null,
      queue,
      redriveQueue,
      deadLetterQueue,
      sources: {
        pending: pendingSource,
        dead: deadSource,
        parked: parkedSource,
        metrics: metricsSource,
        percentiles: metrics.percentileMethod,
        oldestPendingAge: oldestSource,
        queues: queuesSource,
      },
      window: { since: since.replace(' ', ''), startMs: window.startMs, endMs: window.endMs },
      ...(delivery instanceof MetricsUnavailableError ? { metricsError: delivery.message } : {}),
    },
    human: [keyValues(lines), '', ...sources, ...notes.map((n) => `note: ${n}`)].join('\n'),
    ...(delivery instanceof MetricsUnavailableError ? { failure: `metrics unavailable: ${delivery.message}` } : {}),
  };
}

async function readDead(ledger: Ledger, maxRows: number, endpoint: string | undefined): Promise<DeadRows> {
  const records: DeliveryRecord[] = [];
  let cursor: string | undefined;
  do {
    const limit = Math.min(PAGE_SIZE, maxRows - records.length);
    const page = await ledger.listByState('dead', { limit, cursor, ...(endpoint === undefined ? {} : { endpoint }) });
    records.push(...page.records);
    cursor = page.cursor;
  } while (cursor !== undefined && records.length < maxRows);
  return { records, capped: cursor !== undefined };
}

/**
 * Parked deliveries by endpoint (docs/contract.md §12): `endpoint`'s alone when given, else every
 * endpoint the registry holds (the parked listing is per endpoint). Null when the target names no
 * registry and no endpoint was given.
 */
async function parkedCounts(ctx: CommandContext, ledger: Ledger, endpoint: string | undefined): Promise<Record<string, number> | null> {
  let names: string[];
  if (endpoint !== undefined) names = [endpoint];
  else if (ctx.target.endpointsTable === undefined) return null;
  else {
    names = (await ctx.registry().scan()).records.map((r) => r.fields.name);
  }
  const limit = pLimit(PARKED_COUNT_CONCURRENCY);
  const counts = await Promise.all(names.map((name) => limit(() => ledger.countByState('parked', { endpoint: name }))));
  return Object.fromEntries(names.map((name, i) => [name, counts[i]!] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The dead counts by endpoint with each endpoint's parked count; an endpoint with parked rows only is added. */
function withParked(
  byEndpoint: Record<string, EndpointBacklog>,
  parked: Record<string, number> | null,
): Record<string, EndpointBacklog & { parkedCount?: number }> {
  if (parked === null) return byEndpoint;
  const merged: Record<string, EndpointBacklog & { parkedCount?: number }> = {};
  const names = [...new Set([...Object.keys(byEndpoint), ...Object.keys(parked).filter((name) => parked[name]! > 0)])].sort();
  for (const name of names) merged[name] = { ...(byEndpoint[name] ?? { deadCount: 0 }), parkedCount: parked[name] ?? 0 };
  return merged;
}

const DEPTH_ATTRIBUTES: QueueAttributeName[] = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
];

async function queueDepth(ctx: CommandContext, queueUrl: string | undefined): Promise<QueueDepth | null> {
  if (!queueUrl) return null;
  const { Attributes = {} } = await ctx
    .sqs()
    .send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: DEPTH_ATTRIBUTES }));
  const read = (name: QueueAttributeName) => Number(Attributes[name] ?? 0);
  return {
    visible: read('ApproximateNumberOfMessages'),
    inFlight: read('ApproximateNumberOfMessagesNotVisible'),
    delayed: read('ApproximateNumberOfMessagesDelayed'),
  };
}
