/**
 * From raw runs to the bench's result: per-event figures, the ratios, the targets of issue 4,
 * and the Markdown table docs/cost-and-benchmarks.md shows. Pure functions over the measurements.
 */
import type { BatchConcurrencyResult } from './batch-concurrency';
import { median, type BundleResult } from './bundle';
import { CLI_STARTUP_GOAL_MS, type CliStartupResult } from './cli-startup';
import { summarize } from './counting';
import type { SlowNeighbourResult } from './slow-neighbour';
import type { ConsumerName, ConsumerRun } from './workload';

export interface ConsumerFigures {
  readonly delivered: number;
  readonly complete: boolean;
  readonly dynamodbWritesPerEvent: number;
  readonly dynamodbReadsPerEvent: number;
  /** DynamoDB request and response bodies, bytes: what the handler serializes and parses. */
  readonly dynamodbBytesPerEvent: number;
  readonly dynamodbBytesSentPerEvent: number;
  readonly dynamodbBytesReceivedPerEvent: number;
  /** The handler's own SQS calls (visibility changes, dead letters): billed to the consumer. */
  readonly handlerSqsPerEvent: number;
  /** Receives and deletes: what Lambda's event source does for the function. */
  readonly pollerSqsPerEvent: number;
  readonly handlerCpuMsPerEvent: number;
  /** The bench process's CPU (emulators, poller, producer, receiver): see ConsumerRun. */
  readonly sandboxCpuMsPerEvent: number;
  readonly eventsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly unloadedP50Ms: number;
  readonly unloadedP99Ms: number;
  readonly invocations: number;
  readonly repeats: number;
  readonly failedBatches: number;
  readonly handlerRequests: Record<string, number>;
  readonly pollerRequests: Record<string, number>;
}

export interface Target {
  readonly name: string;
  readonly target: string;
  readonly measured: string;
  readonly met: boolean;
  /** "met", or "missed by N%". */
  readonly verdict: string;
}

export interface BenchResult {
  readonly machine: {
    readonly node: string;
    readonly cpu: string;
    readonly cores: number;
    readonly platform: string;
    readonly loadAverageAtStart: readonly number[];
    readonly loadAverageAtEnd: readonly number[];
    readonly date: string;
  };
  readonly workload: {
    /** Per consumer and round. */
    readonly events: number;
    readonly rounds: number;
    readonly unloadedEvents: number;
    readonly window: number;
    readonly batchSize: number;
    readonly maxConcurrency: number;
    readonly order: readonly ConsumerName[];
  };
  /** Medians over the rounds (`delivered`, `repeats`, `failedBatches`: totals). */
  readonly consumers: Record<ConsumerName, ConsumerFigures>;
  readonly rounds: Record<ConsumerName, readonly ConsumerFigures[]>;
  readonly ratios: {
    readonly handoffOverNaive: Ratios;
    readonly handoffOverPowertools: Ratios;
  };
  /** The batch of 10 at 200 ms, per consumer; the target is handoff's. */
  readonly batches: Record<ConsumerName, BatchConcurrencyResult>;
  /** handoff alone: a healthy endpoint's rate beside an answering neighbour, then a timing-out one (issue 26). */
  readonly slowNeighbour: SlowNeighbourResult;
  readonly bundles: readonly BundleResult[];
  /** `handoff --help` as installed (compiled), from the sources through tsx, and `node -e 0`. */
  readonly cliStartup: CliStartupResult;
  readonly targets: readonly Target[];
  readonly durationSeconds: number;
}

export interface Ratios {
  readonly handlerCpuPerEvent: number;
  readonly eventsPerSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly unloadedP50: number;
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank: the smallest value with at least p% of values at or below it.
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

export function figures(run: ConsumerRun): ConsumerFigures {
  const delivered = run.loaded.delivered;
  const per = (n: number) => (delivered > 0 ? n / delivered : Number.NaN);
  const handler = summarize(run.requests.handler);
  const poller = summarize(run.requests.poller);
  return {
    delivered,
    complete: run.loaded.complete && run.unloaded.complete,
    dynamodbWritesPerEvent: per(handler.dynamodbWrites),
    dynamodbReadsPerEvent: per(handler.dynamodbReads),
    dynamodbBytesPerEvent: per(handler.dynamodbBytesSent + handler.dynamodbBytesReceived),
    dynamodbBytesSentPerEvent: per(handler.dynamodbBytesSent),
    dynamodbBytesReceivedPerEvent: per(handler.dynamodbBytesReceived),
    handlerSqsPerEvent: per(handler.sqs),
    pollerSqsPerEvent: per(poller.sqs),
    handlerCpuMsPerEvent: per(run.handlerCpuMicros / 1000),
    sandboxCpuMsPerEvent: per(run.sandboxCpuMicros / 1000),
    eventsPerSecond: run.loaded.wallSeconds > 0 ? delivered / run.loaded.wallSeconds : Number.NaN,
    p50Ms: percentile(run.loaded.latenciesMs, 50),
    p99Ms: percentile(run.loaded.latenciesMs, 99),
    unloadedP50Ms: percentile(run.unloaded.latenciesMs, 50),
    unloadedP99Ms: percentile(run.unloaded.latenciesMs, 99),
    invocations: run.invocations,
    repeats: run.repeats,
    failedBatches: run.failedBatches,
    handlerRequests: run.requests.handler,
    pollerRequests: run.requests.poller,
  };
}

/**
 * One figure set from several rounds of the same consumer: the median of each number (so one
 * round disturbed by the shared machine does not decide), counts by operation from the first.
 */
export function combine(rounds: readonly ConsumerFigures[]): ConsumerFigures {
  const first = rounds[0];
  if (!first) throw new Error('no rounds to combine');
  const out: Record<string, unknown> = { ...first };
  for (const [key, value] of Object.entries(first)) {
    if (typeof value === 'number') out[key] = median(rounds.map((round) => round[key as keyof ConsumerFigures] as number));
  }
  out.complete = rounds.every((round) => round.complete);
  out.delivered = rounds.reduce((sum, round) => sum + round.delivered, 0);
  out.repeats = rounds.reduce((sum, round) => sum + round.repeats, 0);
  out.failedBatches = rounds.reduce((sum, round) => sum + round.failedBatches, 0);
  return out as unknown as ConsumerFigures;
}

export function ratios(a: ConsumerFigures, b: ConsumerFigures): Ratios {
  return {
    handlerCpuPerEvent: a.handlerCpuMsPerEvent / b.handlerCpuMsPerEvent,
    eventsPerSecond: a.eventsPerSecond / b.eventsPerSecond,
    p50: a.p50Ms / b.p50Ms,
    p99: a.p99Ms / b.p99Ms,
    unloadedP50: a.unloadedP50Ms / b.unloadedP50Ms,
  };
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** A target of the form measured <= limit. */
function atMost(name: string, measured: number, limit: number, show: (x: number) => string): Target {
  const met = measured <= limit;
  return { name, target: `≤ ${show(limit)}`, measured: show(measured), met, verdict: met ? 'met' : `missed by ${pct(measured / limit - 1)}` };
}

/** A target of the form measured >= limit. */
function atLeast(name: string, measured: number, limit: number, show: (x: number) => string): Target {
  const met = measured >= limit;
  return { name, target: `≥ ${show(limit)}`, measured: show(measured), met, verdict: met ? 'met' : `missed by ${pct(1 - measured / limit)}` };
}

/** A target of the form measured < limit. */
function below(name: string, measured: number, limit: number, show: (x: number) => string): Target {
  const met = measured < limit;
  return { name, target: `< ${show(limit)}`, measured: show(measured), met, verdict: met ? 'met' : `missed by ${pct(measured / limit - 1)}` };
}

const fixed = (digits: number) => (x: number) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const times = (x: number) => `${fixed(2)(x)}x`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const ms = (x: number) => `${fixed(1)(x)} ms`;

export function targets(
  consumers: Record<ConsumerName, ConsumerFigures>,
  batch: BatchConcurrencyResult,
  bundles: readonly BundleResult[],
  cliStartup: CliStartupResult,
): Target[] {
  const { handoff, powertools } = consumers;
  const bundle = (name: BundleResult['name']) => bundles.find((b) => b.name === name);
  const out: Target[] = [
    atMost('DynamoDB writes per delivered event', handoff.dynamodbWritesPerEvent, 2, fixed(2)),
    atMost('DynamoDB reads per delivered event', handoff.dynamodbReadsPerEvent, 0, fixed(2)),
    atLeast('Throughput, handoff / Powertools', handoff.eventsPerSecond / powertools.eventsPerSecond, 1.2, times),
    below('Handler CPU per event, handoff / Powertools', handoff.handlerCpuMsPerEvent / powertools.handlerCpuMsPerEvent, 1, times),
    atMost(
      `Batch of ${batch.batchSize} at ${batch.receiverDelayMs} ms / slowest single delivery`,
      batch.ratio,
      1.2,
      times,
    ),
  ];
  const consumer = bundle('handoff');
  const empty = bundle('empty');
  if (consumer) out.push(atMost('Consumer bundle (SDK external)', consumer.bytes, 60 * 1024, kb));
  if (consumer && empty) {
    out.push(atMost('Module init, consumer / empty handler', consumer.initMedianMs / empty.initMedianMs, 1.5, times));
  }
  const withClients = bundle('sdk-clients');
  if (consumer && withClients) {
    out.push(
      atMost('(context) Module init, consumer / empty handler + SDK clients', consumer.initMedianMs / withClients.initMedianMs, 1.5, times),
    );
  }
  out.push(atMost('handoff --help start-up, installed command', cliStartup.medianMs.compiled, CLI_STARTUP_GOAL_MS, ms));
  return out;
}

function row(cells: readonly string[]): string {
  return `| ${cells.join(' | ')} |`;
}

const NAMES: Record<ConsumerName, string> = {
  handoff: 'handoff',
  naive: 'naive (POST, no ledger)',
  powertools: 'Powertools BatchProcessor + makeIdempotent',
};

export function markdown(result: BenchResult): string {
  const { machine, workload, consumers, batches, bundles } = result;
  const batch = batches.handoff;
  const f2 = fixed(2);
  const f1 = fixed(1);
  const f0 = fixed(0);
  const lines: string[] = [];
  lines.push(
    `${workload.events} events per consumer and round, ${workload.rounds} round(s) taking turns, medians shown ` +
      `(window ${workload.window}, batches of ${workload.batchSize}, ${workload.maxConcurrency} at once), Node ${machine.node}, ${machine.cpu} × ${machine.cores}, ` +
      `load average ${machine.loadAverageAtStart.map(f1).join('/')} at start, ${machine.date.slice(0, 10)}.`,
    '',
    row([
      'consumer',
      'DDB writes/event',
      'DDB reads/event',
      'handler SQS req/event',
      'poller SQS req/event',
      'handler CPU ms/event',
      'events/s',
      'p50 ms',
      'p99 ms',
      'idle p50 ms',
      'idle p99 ms',
      'DDB KB/event',
      'emulator CPU ms/event',
    ]),
    row(['---', ...Array<string>(12).fill('--:')]),
  );
  for (const name of ['handoff', 'naive', 'powertools'] as const) {
    const c = consumers[name];
    lines.push(
      row([
        NAMES[name] + (c.complete ? '' : ' (incomplete)'),
        f2(c.dynamodbWritesPerEvent),
        f2(c.dynamodbReadsPerEvent),
        f2(c.handlerSqsPerEvent),
        f2(c.pollerSqsPerEvent),
        f2(c.handlerCpuMsPerEvent),
        f0(c.eventsPerSecond),
        f0(c.p50Ms),
        f0(c.p99Ms),
        f1(c.unloadedP50Ms),
        f1(c.unloadedP99Ms),
        f1(c.dynamodbBytesPerEvent / 1024),
        f2(c.sandboxCpuMsPerEvent),
      ]),
    );
  }
  if (workload.rounds > 1) {
    lines.push(
      '',
      `events/s by round: ${(['handoff', 'naive', 'powertools'] as const)
        .map((name) => `${name} ${result.rounds[name].map((round) => f0(round.eventsPerSecond)).join(' / ')}`)
        .join('; ')}. ` +
        `handler CPU ms/event by round: ${(['handoff', 'powertools'] as const)
          .map((name) => `${name} ${result.rounds[name].map((round) => f2(round.handlerCpuMsPerEvent)).join(' / ')}`)
          .join('; ')}.`,
    );
  }
  const r = result.ratios;
  lines.push(
    '',
    row(['ratio', 'handler CPU/event', 'events/s', 'p50', 'p99', 'idle p50']),
    row(['---', '--:', '--:', '--:', '--:', '--:']),
    row(['handoff / naive', ...[r.handoffOverNaive.handlerCpuPerEvent, r.handoffOverNaive.eventsPerSecond, r.handoffOverNaive.p50, r.handoffOverNaive.p99, r.handoffOverNaive.unloadedP50].map(times)]),
    row(['handoff / Powertools', ...[r.handoffOverPowertools.handlerCpuPerEvent, r.handoffOverPowertools.eventsPerSecond, r.handoffOverPowertools.p50, r.handoffOverPowertools.p99, r.handoffOverPowertools.unloadedP50].map(times)]),
    '',
    `A batch of ${batch.batchSize} against a receiver answering in ${batch.receiverDelayMs} ms, invoked directly: the ` +
      `median of ${batch.batchesMs.length} batches over the slowest of ${batch.singlesMs.length} single deliveries. ` +
      `"Spread": ms between the first and the last of a batch's requests reaching the receiver (one after another ` +
      `would take ${(batch.batchSize - 1) * batch.receiverDelayMs} ms or more). "Before send": ms from invoking to the ` +
      `first request, median.`,
    '',
    row(['consumer', 'slowest single ms', 'batch ms', 'batch / single', 'spread ms', 'before send, single ms', 'before send, batch ms']),
    row(['---', '--:', '--:', '--:', '--:', '--:', '--:']),
    ...(['handoff', 'naive', 'powertools'] as const).map((name) => {
      const b = batches[name];
      return row([
        NAMES[name],
        f0(b.slowestSingleMs),
        f0(b.batchMs),
        times(b.ratio),
        f0(median(b.arrivalSpreadsMs)),
        f0(median(b.singlesBeforeSendMs)),
        f0(median(b.batchesBeforeSendMs)),
      ]);
    }),
    '',
    row(['handler', 'bundle (SDK external)', `module init, median of ${bundles[0]?.initMs.length ?? 0}`]),
    row(['---', '--:', '--:']),
  );
  const bundleNames: Record<BundleResult['name'], string> = {
    handoff: 'handoff consumer',
    empty: 'empty handler',
    'sdk-clients': 'empty handler + SDK clients',
    naive: 'naive',
    powertools: 'Powertools',
  };
  for (const b of bundles) lines.push(row([bundleNames[b.name], kb(b.bytes), ms(b.initMedianMs)]));
  const startup = result.cliStartup;
  lines.push(
    '',
    row(['`handoff --help`', `start-up, median of ${startup.runs}`]),
    row(['---', '--:']),
    row(['installed (dist/cli.js)', ms(startup.medianMs.compiled)]),
    row(['from the sources (tsx)', ms(startup.medianMs.sources)]),
    row(['`node -e 0`', ms(startup.medianMs.node)]),
  );
  lines.push('', row(['target', 'goal', 'measured', 'result']), row(['---', '---', '--:', '---']));
  for (const t of result.targets) lines.push(row([t.name, t.target, t.measured, t.verdict]));
  return `${lines.join('\n')}\n`;
}
