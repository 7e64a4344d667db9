/**
 * The full run's figures as a report: issue 4's targets, each beside its measurement, and the
 * Markdown tables docs/cost-and-benchmarks.md shows; and the table and number formats every
 * scenario prints with. Pure functions over the measurements.
 */
import type { BundleResult } from './bundle';
import type { CliStartupResult } from './cli-startup';
import { median } from './harness';
import type { ConsumerName } from './pipeline';
import type { BatchConcurrencyResult, ConsumerFigures, ratios } from './throughput';

/** The installed command's `--help` start-up goal. */
export const CLI_STARTUP_GOAL_MS = 300;

export const fixed = (digits: number) => (x: number) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const [f0, f1, f2] = [fixed(0), fixed(1), fixed(2)];
export const times = (x: number) => `${f2(x)}x`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const ms = (x: number) => `${f1(x)} ms`;
const pct = (x: number) => `${Math.round(x * 100)}%`;

/** A Markdown table; `align` a letter per column, l or r; by default the first column left, the others (numbers) right. */
export function table(header: readonly string[], rows: readonly (readonly string[])[], align = `l${'r'.repeat(header.length - 1)}`): string[] {
  const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [row(header), row([...align].map((a) => (a === 'r' ? '--:' : '---'))), ...rows.map(row)];
}

export type Target = ReturnType<typeof target>;

/** A target: `measured` against `limit` by `op`; a miss says by how much. */
export function target(name: string, measured: number, op: '≤' | '≥' | '<', limit: number, show: (x: number) => string) {
  const met = op === '≤' ? measured <= limit : op === '<' ? measured < limit : measured >= limit;
  const missedBy = op === '≥' ? 1 - measured / limit : measured / limit - 1;
  // The verdict: "met", or "missed by N%".
  return { name, target: `${op} ${show(limit)}`, measured: show(measured), met, verdict: met ? 'met' : `missed by ${pct(missedBy)}` };
}

export interface BenchResult {
  readonly machine: { readonly node: string; readonly cpu: string; readonly cores: number; readonly platform: string; readonly loadAverageAtStart: readonly number[]; readonly loadAverageAtEnd: readonly number[]; readonly date: string };
  /** `events` per consumer and round. */
  readonly workload: { readonly events: number; readonly rounds: number; readonly unloadedEvents: number; readonly window: number; readonly batchSize: number; readonly maxConcurrency: number; readonly order: readonly ConsumerName[] };
  /** Medians over the rounds (`delivered`, `repeats`, `failedBatches`: totals). */
  readonly consumers: Record<ConsumerName, ConsumerFigures>;
  readonly rounds: Record<ConsumerName, readonly ConsumerFigures[]>;
  readonly ratios: { readonly handoffOverNaive: ReturnType<typeof ratios>; readonly handoffOverPowertools: ReturnType<typeof ratios> };
  /** The batch at 200 ms, per consumer; the target is handoff's. */
  readonly batches: Record<ConsumerName, BatchConcurrencyResult>;
  readonly bundles: readonly BundleResult[];
  /** `handoff --help` as installed (compiled), from the sources through tsx, and `node -e 0`. */
  readonly cliStartup: CliStartupResult;
}

export function targets(result: Pick<BenchResult, 'consumers' | 'batches' | 'bundles' | 'cliStartup'>): Target[] {
  const { handoff, powertools } = result.consumers;
  const batch = result.batches.handoff;
  const bundle = (name: BundleResult['name']) => result.bundles.find((b) => b.name === name);
  const [consumer, empty, withClients] = [bundle('handoff'), bundle('empty'), bundle('sdk-clients')];
  return [
    target('DynamoDB writes per delivered event', handoff.dynamodbWritesPerEvent, '≤', 2, f2),
    target('DynamoDB reads per delivered event', handoff.dynamodbReadsPerEvent, '≤', 0, f2),
    target('Throughput, handoff / Powertools', handoff.eventsPerSecond / powertools.eventsPerSecond, '≥', 1.2, times),
    target('Handler CPU per event, handoff / Powertools', handoff.handlerCpuMsPerEvent / powertools.handlerCpuMsPerEvent, '<', 1, times),
    target(`Batch of ${batch.batchSize} at ${batch.receiverDelayMs} ms / slowest single delivery`, batch.ratio, '≤', 1.2, times),
    ...(consumer ? [target('Consumer bundle (SDK external)', consumer.bytes, '≤', 60 * 1024, kb)] : []),
    ...(consumer && empty ? [target('Module init, consumer / empty handler', consumer.initMedianMs / empty.initMedianMs, '≤', 1.5, times)] : []),
    ...(consumer && withClients
      ? [target('(context) Module init, consumer / empty handler + SDK clients', consumer.initMedianMs / withClients.initMedianMs, '≤', 1.5, times)]
      : []),
    target('handoff --help start-up, installed command', result.cliStartup.medianMs.compiled, '≤', CLI_STARTUP_GOAL_MS, ms),
  ];
}

const NAMES: Record<ConsumerName, string> = { handoff: 'handoff', naive: 'naive (POST, no ledger)', powertools: 'Powertools BatchProcessor + makeIdempotent' };
const BUNDLE_NAMES: Record<BundleResult['name'], string> = {
  handoff: 'handoff consumer',
  empty: 'empty handler',
  'sdk-clients': 'empty handler + SDK clients',
  naive: 'naive',
  powertools: 'Powertools',
};
const CONSUMERS = ['handoff', 'naive', 'powertools'] as const;

export function markdown(result: BenchResult & { readonly targets: readonly Target[] }): string {
  const { machine, workload, consumers, batches, bundles, cliStartup: startup } = result;
  const batch = batches.handoff;
  const byRound = (names: readonly ConsumerName[], pick: (f: ConsumerFigures) => string) =>
    names.map((name) => `${name} ${result.rounds[name].map(pick).join(' / ')}`).join('; ');
  const ratioRow = (label: string, r: ReturnType<typeof ratios>) => [label, ...[r.handlerCpuPerEvent, r.eventsPerSecond, r.p50, r.p99, r.unloadedP50].map(times)];
  return [
    `${workload.events} events per consumer and round, ${workload.rounds} round(s) taking turns, medians shown ` +
      `(window ${workload.window}, batches of ${workload.batchSize}, ${workload.maxConcurrency} at once), Node ${machine.node}, ${machine.cpu} × ${machine.cores}, ` +
      `load average ${machine.loadAverageAtStart.map(f1).join('/')} at start, ${machine.date.slice(0, 10)}.`,
    '',
    ...table(
      ['consumer', 'DDB writes/event', 'DDB reads/event', 'handler SQS req/event', 'poller SQS req/event', 'handler CPU ms/event', 'events/s', 'p50 ms', 'p99 ms', 'idle p50 ms', 'idle p99 ms', 'DDB KB/event', 'emulator CPU ms/event'],
      CONSUMERS.map((name) => {
        const c = consumers[name];
        return [
          NAMES[name] + (c.complete ? '' : ' (incomplete)'),
          ...[c.dynamodbWritesPerEvent, c.dynamodbReadsPerEvent, c.handlerSqsPerEvent, c.pollerSqsPerEvent, c.handlerCpuMsPerEvent].map(f2),
          ...[c.eventsPerSecond, c.p50Ms, c.p99Ms].map(f0),
          ...[c.unloadedP50Ms, c.unloadedP99Ms, c.dynamodbBytesPerEvent / 1024].map(f1),
          f2(c.sandboxCpuMsPerEvent),
        ];
      }),
    ),
    ...(workload.rounds > 1
      ? ['', `events/s by round: ${byRound(CONSUMERS, (f) => f0(f.eventsPerSecond))}. handler CPU ms/event by round: ${byRound(['handoff', 'powertools'], (f) => f2(f.handlerCpuMsPerEvent))}.`]
      : []),
    '',
    ...table(['ratio', 'handler CPU/event', 'events/s', 'p50', 'p99', 'idle p50'], [
      ratioRow('handoff / naive', result.ratios.handoffOverNaive),
      ratioRow('handoff / Powertools', result.ratios.handoffOverPowertools),
    ]),
    '',
    `A batch of ${batch.batchSize} against a receiver answering in ${batch.receiverDelayMs} ms, invoked directly: the ` +
      `median of ${batch.batchesMs.length} batches over the slowest of ${batch.singlesMs.length} single deliveries. ` +
      `"Spread": ms between the first and the last of a batch's requests reaching the receiver (one after another ` +
      `would take ${(batch.batchSize - 1) * batch.receiverDelayMs} ms or more). "Before send": ms from invoking to the ` +
      `first request, median.`,
    '',
    ...table(
      ['consumer', 'slowest single ms', 'batch ms', 'batch / single', 'spread ms', 'before send, single ms', 'before send, batch ms'],
      CONSUMERS.map((name) => {
        const b = batches[name];
        return [NAMES[name], f0(b.slowestSingleMs), f0(b.batchMs), times(b.ratio), ...[b.arrivalSpreadsMs, b.singlesBeforeSendMs, b.batchesBeforeSendMs].map((x) => f0(median(x)))];
      }),
    ),
    '',
    ...table(
      ['handler', 'bundle (SDK external)', 'loaded later (tracing)', `module init, median of ${bundles[0]?.initMs.length ?? 0}`, 'init, tracing on'],
      bundles.map((b) => [BUNDLE_NAMES[b.name], kb(b.bytes), b.lazyBytes > 0 ? kb(b.lazyBytes) : '–', ms(b.initMedianMs), b.tracedInitMedianMs !== undefined ? ms(b.tracedInitMedianMs) : '–']),
    ),
    '',
    ...table(['`handoff --help`', `start-up, median of ${startup.runs}`], [
      ['installed (dist/cli.js)', ms(startup.medianMs.compiled)],
      ['from the sources (tsx)', ms(startup.medianMs.sources)],
      ['`node -e 0`', ms(startup.medianMs.node)],
    ]),
    '',
    ...table(['target', 'goal', 'measured', 'result'], result.targets.map((t) => [t.name, t.target, t.measured, t.verdict]), 'llrl'),
    '',
  ].join('\n');
}
