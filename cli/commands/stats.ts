/**
 * `handoff stats`: how the pipeline is doing, from the ledger's by-state index (queries, never a
 * scan) and the two queues' approximate depths. Work is bounded: at most `maxRowsPerState` rows
 * are read per state, and the output says when a figure stopped at that bound.
 */
import { GetQueueAttributesCommand, type QueueAttributeName } from '@aws-sdk/client-sqs';
import type { DeliveryRecord, DeliveryState, Ledger } from '../../lib/ledger/ledger';
import { ledgerStats } from '../../lib/stats';
import type { CommandContext } from '../context';
import { formatDuration, formatPercent, keyValues } from '../format';
import type { CommandResult } from './result';

const PAGE_SIZE = 100;

export interface StatsOptions {
  readonly maxRowsPerState: number;
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

export async function statsCommand(ctx: CommandContext, options: StatsOptions): Promise<CommandResult> {
  const ledger = ctx.ledger();
  const [pending, dead, delivered, queue, deadLetterQueue] = await Promise.all([
    readState(ledger, 'pending', options.maxRowsPerState),
    readState(ledger, 'dead', options.maxRowsPerState),
    readState(ledger, 'delivered', options.maxRowsPerState),
    queueDepth(ctx, ctx.target.queueUrl),
    queueDepth(ctx, ctx.target.deadLetterQueueUrl),
  ]);
  const stats = ledgerStats({
    nowMs: ctx.now(),
    pending: pending.records,
    dead: dead.records,
    delivered: delivered.records,
  });
  const capped = { pending: pending.capped, dead: dead.capped, delivered: delivered.capped };

  const count = (n: number, isCapped: boolean) => (isCapped ? `at least ${n}` : String(n));
  const ms = (value: number | null) => (value === null ? 'n/a' : formatDuration(value));
  const depth = (d: QueueDepth | null) =>
    d === null ? 'n/a (no queue URL)' : `${d.visible} waiting, ${d.inFlight} in flight, ${d.delayed} delayed`;
  const lines: [string, string][] = [
    [
      'pending',
      `${count(stats.pendingCount, capped.pending)}` +
        (stats.oldestPendingAgeMs === null ? '' : ` (oldest waiting ${formatDuration(stats.oldestPendingAgeMs)})`),
    ],
    ['dead', count(stats.deadCount, capped.dead)],
    ['delivered', count(stats.deliveredCount, capped.delivered)],
    [
      'retry rate',
      stats.retryRate === null
        ? 'n/a (no attempts)'
        : `${formatPercent(stats.retryRate)} (${stats.retriedAttempts} of ${stats.attempts} attempts were retries)`,
    ],
    ['latency p50', ms(stats.latencyMs.p50)],
    ['latency p99', ms(stats.latencyMs.p99)],
    ['queue', depth(queue)],
    ['dead-letter queue', depth(deadLetterQueue)],
  ];
  const notes: string[] = [];
  if (capped.pending || capped.dead || capped.delivered) {
    // A capped sample holds the oldest pending rows and the newest delivered and dead ones.
    notes.push(
      `read at most ${options.maxRowsPerState} rows per state (oldest pending, newest delivered and dead); raise --max-rows for exact figures`,
    );
  }

  return {
    json: { ...stats, capped, maxRowsPerState: options.maxRowsPerState, queue, deadLetterQueue },
    human: [keyValues(lines), ...notes.map((n) => `\nnote: ${n}`)].join('\n'),
  };
}

async function readState(ledger: Ledger, state: DeliveryState, maxRows: number): Promise<StateRows> {
  const records: DeliveryRecord[] = [];
  let cursor: string | undefined;
  do {
    // When the cap cuts a listing short, keep what matters: the oldest pending rows (their age is
    // the signal) and the newest settled ones (recent latency, not last month's).
    const limit = Math.min(PAGE_SIZE, maxRows - records.length);
    const page = await ledger.listByState(state, { limit, cursor, newestFirst: state !== 'pending' });
    records.push(...page.records);
    cursor = page.cursor;
  } while (cursor !== undefined && records.length < maxRows);
  return { records, capped: cursor !== undefined };
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
