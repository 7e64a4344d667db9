/**
 * `handoff stats`: how the pipeline is doing, from three sources, each named in the output:
 * - the ledger's listing of its pending and dead rows (pending count, oldest pending age, dead
 *   count): those rows only, as they are now, at most `maxRowsPerState` per state;
 * - the consumer's metrics over the window (delivered count, retry rate, latency percentiles):
 *   CloudWatch for a deployed stack, the sandbox's metric sink locally. A delivered row is in no
 *   index, so the ledger is never asked to list or count them;
 * - the two queues' approximate depths, now;
 * - the parked deliveries of each endpoint in the registry (docs/contract.md §12): the ledger's
 *   parked listing of that endpoint, counted from its index entries (never the rows), now. Parked
 *   rows are pending but not in the pending listing, so `pending` does not include them.
 * When the metrics cannot be read, the other figures are still printed and the command fails.
 *
 * `--endpoint NAME`: that endpoint's figures: its rows of the listing (the ledger picks them from
 * the index entries) and its metrics (CloudWatch's `Service, Endpoint` dimensions; the sandbox's
 * sink keeps each endpoint's too). The queues are shared by every endpoint: their depths are the
 * whole queue's, and the output says so. Without it, the totals, and the backlog split by endpoint
 * from the rows read anyway, with each endpoint's parked count.
 */
import { GetQueueAttributesCommand, type QueueAttributeName } from '@aws-sdk/client-sqs';
import { InvalidArgumentError } from 'commander';
import pLimit from 'p-limit';
import type { DeliveryRecord, DeliveryState, Ledger } from '../../lib/ledger/ledger';
import { MetricsUnavailableError, type MetricsWindow } from '../../lib/metrics/metrics-reader';
import { backlogByEndpoint, backlogStats, deliveryStats, type DeliveryStats, type EndpointBacklog } from '../../lib/stats';
import type { CommandContext } from '../context';
import { formatDuration, formatPercent, keyValues } from '../format';
import { PARKED_COUNT_CONCURRENCY } from './endpoint';
import type { CommandResult } from './result';

const PAGE_SIZE = 100;
/** The metrics window when none is given: the last day. */
export const DEFAULT_STATS_SINCE_MS = 24 * 60 * 60 * 1000;
/** The longest `--since`: CloudWatch's one-minute data (the sandbox keeps less, and says so). */
const MAX_SINCE_MS = 15 * 24 * 60 * 60 * 1000;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export interface StatsOptions {
  readonly maxRowsPerState: number;
  /** The metrics window: the last this many ms. */
  readonly sinceMs?: number;
  /** One endpoint's figures rather than the totals. */
  readonly endpoint?: string;
}

export interface QueueDepth {
  /** Messages waiting to be received. */
  readonly visible: number;
  /** Received and not yet deleted: being worked on, or held back for a retry. */
  readonly inFlight: number;
  readonly delayed: number;
}

interface StateRows {
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

/** `parseSince` as commander's option parser: its refusal names the option and the value. */
export function sinceOption(raw: string): number {
  try {
    return parseSince(raw);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** `24 h`, `90 min`, `7 d`: a window in its largest whole unit (hours up to a day), for the output. */
export function describeSince(ms: number): string {
  if (ms % UNIT_MS.d === 0 && ms > UNIT_MS.d) return `${ms / UNIT_MS.d} d`;
  if (ms % UNIT_MS.h === 0) return `${ms / UNIT_MS.h} h`;
  return `${ms / UNIT_MS.m} min`;
}

export async function statsCommand(ctx: CommandContext, options: StatsOptions): Promise<CommandResult> {
  const nowMs = ctx.now();
  const ledger = ctx.ledger();
  const metrics = ctx.metrics();
  const askedMs = options.sinceMs ?? DEFAULT_STATS_SINCE_MS;
  // A window longer than the source keeps would claim figures it does not hold: shorten it, say so.
  const sinceMs = Math.min(askedMs, metrics.maxWindowMs);
  const window: MetricsWindow = { startMs: nowMs - sinceMs, endMs: nowMs };
  const { endpoint } = options;
  const [pending, dead, delivery, queue, deadLetterQueue, parked] = await Promise.all([
    readState(ledger, 'pending', options.maxRowsPerState, endpoint),
    readState(ledger, 'dead', options.maxRowsPerState, endpoint),
    metrics.read(window, endpoint === undefined ? {} : { endpoint }).then(
      (read): DeliveryStats | MetricsUnavailableError => deliveryStats(read),
      (error: unknown) => {
        if (error instanceof MetricsUnavailableError) return error;
        throw error;
      },
    ),
    queueDepth(ctx, ctx.target.queueUrl),
    queueDepth(ctx, ctx.target.deadLetterQueueUrl),
    parkedCounts(ctx, ledger, endpoint),
  ]);
  const backlog = backlogStats({ nowMs, pending: pending.records, dead: dead.records });
  const capped = { pending: pending.capped, dead: dead.capped };
  const delivered = delivery instanceof MetricsUnavailableError ? undefined : delivery;
  const since = describeSince(sinceMs);

  const count = (n: number, isCapped: boolean) => (isCapped ? `at least ${n}` : String(n));
  const ms = (value: number | null | undefined) => (value === null || value === undefined ? 'n/a' : formatDuration(value));
  const depth = (d: QueueDepth | null) =>
    d === null ? 'n/a (no queue URL)' : `${d.visible} waiting, ${d.inFlight} in flight, ${d.delayed} delayed`;
  const retryRate = (d: DeliveryStats | undefined) => {
    if (d === undefined) return 'n/a';
    if (d.retryRate === null) return 'n/a (no attempts)';
    return `${formatPercent(d.retryRate)} (${d.retriedAttempts} of ${d.attempts} attempts were retries)`;
  };
  const byEndpoint = endpoint === undefined ? withParked(backlogByEndpoint({ pending: pending.records, dead: dead.records }), parked) : undefined;
  const parkedTotal = parked === null ? null : Object.values(parked).reduce((sum, n) => sum + n, 0);
  const lines: [string, string][] = [];
  if (endpoint !== undefined) lines.push(['endpoint', endpoint]);
  lines.push(
    [
      'pending',
      `${count(backlog.pendingCount, capped.pending)}` +
        (backlog.oldestPendingAgeMs === null ? '' : ` (oldest waiting ${formatDuration(backlog.oldestPendingAgeMs)})`),
    ],
    ['dead', count(backlog.deadCount, capped.dead)],
    ['parked', parkedTotal === null ? 'n/a (no endpoint registry in the target)' : String(parkedTotal)],
  );
  // Several endpoints in the backlog, or any parked: each one's share (pending and dead from the rows already read).
  if (byEndpoint !== undefined && (Object.keys(byEndpoint).length > 1 || (parkedTotal ?? 0) > 0)) {
    for (const [name, b] of Object.entries(byEndpoint)) {
      lines.push([`  ${name}`, `${b.pendingCount} pending, ${b.deadCount} dead${b.parkedCount === undefined ? '' : `, ${b.parkedCount} parked`}`]);
    }
  }
  lines.push(
    ['delivered', delivered === undefined ? 'n/a' : String(delivered.deliveredCount)],
    ['retry rate', retryRate(delivered)],
    ['latency p50', ms(delivered?.latencyMs.p50)],
    ['latency p99', ms(delivered?.latencyMs.p99)],
    ['queue', depth(queue)],
    ['dead-letter queue', depth(deadLetterQueue)],
  );
  const metricsSource = endpoint === undefined ? metrics.source : `${metrics.source}, endpoint ${endpoint} only`;
  const backlogSource = endpoint === undefined ? "the ledger's pending and dead rows" : `the ledger's pending and dead rows of endpoint ${endpoint}`;
  const queuesSource = endpoint === undefined ? "SQS's approximate counts" : "SQS's approximate counts of the whole queues, which every endpoint shares";
  const parkedSource =
    endpoint === undefined ? "the ledger's parked listing of each endpoint in the registry" : `the ledger's parked listing of endpoint ${endpoint}`;
  const sources = [
    `pending, dead: ${backlogSource}, now`,
    `parked: ${parkedSource}, now`,
    `delivered, retry rate, latency: ${metricsSource}, the last ${since}` +
      (delivered === undefined ? '' : `; percentiles over ${delivered.latencySamples} deliveries, ${metrics.percentileMethod}`),
    `queues: ${queuesSource}, now`,
  ];
  const notes: string[] = [];
  if (sinceMs < askedMs) {
    notes.push(`the metrics cover the last ${since}, not ${describeSince(askedMs)}: ${metrics.source} keeps no more`);
  }
  if (capped.pending || capped.dead) {
    notes.push(`read at most ${options.maxRowsPerState} rows per state; raise --max-rows for exact figures`);
  }

  return {
    json: {
      endpoint: endpoint ?? null,
      ...backlog,
      parkedCount: parkedTotal,
      ...(byEndpoint === undefined ? {} : { byEndpoint }),
      capped,
      maxRowsPerState: options.maxRowsPerState,
      deliveredCount: delivered?.deliveredCount ?? null,
      attempts: delivered?.attempts ?? null,
      retriedAttempts: delivered?.retriedAttempts ?? null,
      retryRate: delivered?.retryRate ?? null,
      deadLettered: delivered?.deadLettered ?? null,
      latencyMs: delivered?.latencyMs ?? { p50: null, p99: null },
      latencySamples: delivered?.latencySamples ?? null,
      queue,
      deadLetterQueue,
      sources: {
        backlog: backlogSource,
        parked: parkedSource,
        metrics: metricsSource,
        percentiles: metrics.percentileMethod,
        queues: queuesSource,
      },
      window: { since: since.replace(' ', ''), startMs: window.startMs, endMs: window.endMs },
      ...(delivery instanceof MetricsUnavailableError ? { metricsError: delivery.message } : {}),
    },
    human: [keyValues(lines), '', ...sources, ...notes.map((n) => `note: ${n}`)].join('\n'),
    ...(delivery instanceof MetricsUnavailableError ? { failure: `metrics unavailable: ${delivery.message}` } : {}),
  };
}

async function readState(ledger: Ledger, state: 'pending' | 'dead', maxRows: number, endpoint: string | undefined): Promise<StateRows> {
  const records: DeliveryRecord[] = [];
  let cursor: string | undefined;
  do {
    const limit = Math.min(PAGE_SIZE, maxRows - records.length);
    const page = await ledger.listByState(state satisfies DeliveryState, { limit, cursor, ...(endpoint === undefined ? {} : { endpoint }) });
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

/** The backlog by endpoint with each endpoint's parked count; an endpoint with parked rows only is added. */
function withParked(
  byEndpoint: Record<string, EndpointBacklog>,
  parked: Record<string, number> | null,
): Record<string, EndpointBacklog & { parkedCount?: number }> {
  if (parked === null) return byEndpoint;
  const merged: Record<string, EndpointBacklog & { parkedCount?: number }> = {};
  const names = [...new Set([...Object.keys(byEndpoint), ...Object.keys(parked).filter((name) => parked[name]! > 0)])].sort();
  for (const name of names) merged[name] = { ...(byEndpoint[name] ?? { pendingCount: 0, deadCount: 0 }), parkedCount: parked[name] ?? 0 };
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
