/**
 * `npm run bench` (issue 4): handoff beside a naive consumer (POST, no ledger) and Powertools'
 * BatchProcessor + makeIdempotent, one workload on the sandbox's emulators, rounds taking turns; a
 * batch of 10 against a slow receiver; the slow neighbour; bundle size and module init beside an
 * empty handler's; the command's start-up. It prints each figure beside its baselines, the ratios
 * and the targets met, and asserts nothing (test/bench/ does). Progress on stderr, tables on stdout.
 *
 *   npm run bench                      3 rounds × 1000 events; writes bench/results/latest.{json,md}
 *   npm run bench -- --events 5000 --rounds 5
 *   npm run bench -- --quick           1 round × 200 events, fewer init rounds; to the temp directory
 *   npm run bench -- --ordering        only ordering (bench/ordering.ts): ordering.{json,md} to --out
 *   npm run bench -- --slow-neighbour [--seconds N] [--timeout-ms N]
 *                                      only the slow neighbour (bench/slow-neighbour.ts): slow-neighbour.{json,md} to --out
 *   npm run bench -- --sandbox-scale [--endpoints N] [--seconds N]
 *                                      only the sandbox with 10 and N (10,000) endpoints (bench/sandbox-scale.ts),
 *                                      idle for --seconds (60): sandbox-scale.{json,md} to --out
 *   npm run bench -- --api [--calls N]  only the management API's overhead (bench/api.ts): each operation's use case, its
 *                                      handler and the sandbox's HTTP API side by side: api.{json,md} to --out
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { API_BENCH_DEFAULTS, apiBenchMarkdown, runApiBench } from '../bench/api';
import { measureBundles } from '../bench/bundle';
import { measureCliStartup } from '../bench/cli-startup';
import { startCountingEmulators, startReceiver, type Bench } from '../bench/harness';
import { BATCH_SIZE, MAX_CONCURRENCY, type ConsumerName } from '../bench/pipeline';
import { FAULT_MIX, ORDERING_DEFAULTS, orderingMarkdown, runOrdering, type OrderingRun } from '../bench/ordering';
import { markdown, targets, type BenchResult } from '../bench/report';
import { runSandboxScale, SANDBOX_SCALE_DEFAULTS, sandboxScaleMarkdown } from '../bench/sandbox-scale';
import { runSlowNeighbour, SLOW_NEIGHBOUR_DEFAULTS, slowNeighbourMarkdown } from '../bench/slow-neighbour';
import { runTracingOverhead, tracingMarkdown } from '../bench/tracing';
import { combine, ratios, runBatchConcurrency, runConsumer, type BatchConcurrencyResult, type ConsumerFigures } from '../bench/throughput';
import { safe } from '../lib/terminal';
import { Display } from '../sandbox/counters';

const USAGE =
  'usage: npm run bench -- [--events N] [--rounds N] [--quick] [--ordering [--shipments N]] [--slow-neighbour] [--sandbox-scale [--endpoints N]] [--api [--calls N]] [--seconds N] [--timeout-ms N] [--out DIR]';

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

function options() {
  let parsed;
  try {
    const [number, flag] = [{ type: 'string' }, { type: 'boolean', default: false }] as const;
    parsed = parseArgs({
      options: {
        ...{ events: number, rounds: number, shipments: number, seconds: number, 'timeout-ms': number, endpoints: number, calls: number, out: number },
        ...{ quick: flag, ordering: flag, 'slow-neighbour': flag, 'sandbox-scale': flag, api: flag, help: { ...flag, short: 'h' } },
      },
    }).values;
  } catch (error) {
    fail(safe((error as Error).message));
  }
  if (parsed.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const { quick } = parsed;
  /** A whole number from `min` to `max`, or the default. */
  const whole = (name: keyof typeof parsed, fallback: number, min: number, max = Infinity) => {
    const n = parsed[name] === undefined ? fallback : Number(parsed[name]);
    if (Number.isInteger(n) && n >= min && n <= max) return n;
    return fail(`--${name} must be a whole number ${max === Infinity ? `of at least ${min}` : `from ${min} to ${max}`}`);
  };
  return {
    events: whole('events', quick ? 200 : 1000, 50),
    rounds: whole('rounds', quick ? 1 : 3, 1, 20),
    unloadedEvents: quick ? 20 : 50,
    initRounds: quick ? 5 : 15,
    batchRepeats: quick ? 3 : 5,
    // Two rounds of full batches for every concurrent invocation: the poller never waits.
    window: 2 * BATCH_SIZE * MAX_CONCURRENCY,
    out: parsed.out ?? (quick ? join(tmpdir(), 'handoff-bench') : fileURLToPath(new URL('../bench/results/', import.meta.url))),
    ordering: parsed.ordering,
    shipments: whole('shipments', ORDERING_DEFAULTS.shipments, 10),
    slowNeighbourOnly: parsed['slow-neighbour'],
    slowNeighbour: {
      ...SLOW_NEIGHBOUR_DEFAULTS,
      seconds: whole('seconds', quick ? 15 : SLOW_NEIGHBOUR_DEFAULTS.seconds, 5, 3600),
      // At most the deployment's attempt timeout, which the bench's consumer keeps at its default.
      attemptTimeoutMs: whole('timeout-ms', SLOW_NEIGHBOUR_DEFAULTS.attemptTimeoutMs, 100, 10_000),
    },
    apiOnly: parsed.api,
    api: { ...API_BENCH_DEFAULTS, calls: whole('calls', quick ? 50 : API_BENCH_DEFAULTS.calls, 10, 10_000) },
    sandboxScaleOnly: parsed['sandbox-scale'],
    sandboxScale: {
      ...SANDBOX_SCALE_DEFAULTS,
      sizes: [SANDBOX_SCALE_DEFAULTS.sizes[0]!, whole('endpoints', SANDBOX_SCALE_DEFAULTS.sizes.at(-1)!, 11, 100_000)],
      idleSeconds: whole('seconds', SANDBOX_SCALE_DEFAULTS.idleSeconds, 5, 3600),
    },
  };
}

/** Runs `scenario` on fresh emulators and the bench receiver; the machine it ran on, loads at start and end. */
async function onEmulators<T>(scenario: (bench: Bench) => Promise<T>) {
  const loadAverage = loadavg();
  const display = new Display();
  const emulators = await startCountingEmulators();
  const receiver = await startReceiver();
  let result: T;
  try {
    result = await scenario({ emulators, receiver, progress: (line) => display.status(line), log: (line) => display.log(line) });
  } finally {
    await receiver.close();
    await emulators.close();
  }
  display.close();
  const machine = { date: new Date().toISOString(), loadAverage, loadAverageAtEnd: loadavg(), cores: cpus().length, node: process.versions.node };
  return { result, machine };
}

/** Writes `<name>.json` and `<name>.md` to `out`; says where. */
function write(out: string, name: string, json: unknown, table: string): string {
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, `${name}.json`), `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(join(out, `${name}.md`), table);
  return `Written to ${join(out, `${name}.json`)} and ${name}.md`;
}

const loads = (values: readonly number[]) => values.map((n) => n.toFixed(2)).join(' ');
const about = (machine: { date: string; cores: number; loadAverage: number[]; loadAverageAtEnd: number[] }) =>
  `${machine.date}, ${machine.cores} cores, load average ${loads(machine.loadAverage)} at start, ${loads(machine.loadAverageAtEnd)} at end.`;

async function main(): Promise<void> {
  const opts = options();
  // The SDK's Node 20 notice, once per worker, says nothing about the figures.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  if (opts.ordering) {
    // The unordered endpoint, then the ordered one, on the same emulators.
    const { result: runs, machine } = await onEmulators(async (bench) => {
      const runs: OrderingRun[] = [];
      for (const mode of ['none', 'per-shipment'] as const) {
        const run = await runOrdering(mode, bench, { ...ORDERING_DEFAULTS, shipments: opts.shipments });
        runs.push(run);
        bench.log(`ordering ${mode}: ${run.delivered}/${run.events} delivered in ${run.wallSeconds.toFixed(1)} s, ${run.deliveriesPerSecond.toFixed(0)}/s`);
      }
      return runs;
    });
    const json = { machine, options: { ...ORDERING_DEFAULTS, shipments: opts.shipments }, faultMix: FAULT_MIX, runs };
    const table = orderingMarkdown(runs, machine);
    const written = write(opts.out, 'ordering', json, table);
    return void process.stdout.write(`\n${table}\nLoad average at end ${loads(machine.loadAverageAtEnd)}. ${written}.\n`);
  }
  if (opts.apiOnly) {
    // The sandbox of its own (npm start), the machine otherwise as it is.
    const display = new Display();
    const loadAverage = loadavg();
    const result = await runApiBench(opts.api, (line) => display.log(line));
    display.close();
    const machine = { date: new Date().toISOString(), loadAverage, loadAverageAtEnd: loadavg(), cores: cpus().length, node: process.versions.node };
    const table = apiBenchMarkdown(result, machine);
    const written = write(opts.out, 'api', { machine, options: opts.api, ...result }, table);
    return void process.stdout.write(`\n${table}\n${about(machine)} ${written}.\n`);
  }
  if (opts.sandboxScaleOnly) {
    // Sandboxes of their own: no shared emulators, the machine otherwise as it is.
    const display = new Display();
    const loadAverage = loadavg();
    const runs = await runSandboxScale(opts.sandboxScale, (line) => display.log(line));
    display.close();
    const machine = { date: new Date().toISOString(), loadAverage, loadAverageAtEnd: loadavg(), cores: cpus().length, node: process.versions.node };
    const table = sandboxScaleMarkdown(runs);
    const written = write(opts.out, 'sandbox-scale', { machine, options: opts.sandboxScale, runs }, table);
    return void process.stdout.write(`\n${table}\n${about(machine)} ${written}.\n`);
  }
  if (opts.slowNeighbourOnly) {
    const { result, machine } = await onEmulators((bench) => runSlowNeighbour(bench, opts.slowNeighbour));
    const table = slowNeighbourMarkdown(result);
    const written = write(opts.out, 'slow-neighbour', { machine, ...result }, table);
    return void process.stdout.write(`\n${table}\n${about(machine)} ${written}.\n`);
  }

  const startedAt = performance.now();
  // The baseline first, the product last: if anything, handoff runs on the emulators' fullest state.
  const order: ConsumerName[] = ['naive', 'powertools', 'handoff'];
  const { result: measured, machine } = await onEmulators(async (bench) => {
    // Rounds take turns, so a burst of load from elsewhere on the machine falls on each consumer alike.
    const rounds: Record<ConsumerName, ConsumerFigures[]> = { naive: [], powertools: [], handoff: [] };
    for (let round = 1; round <= opts.rounds; round += 1) {
      for (const name of order) {
        const f = await runConsumer(name, bench, opts);
        rounds[name].push(f);
        bench.log(
          `round ${round}/${opts.rounds} ${name}: ${f.delivered} delivered, ${f.eventsPerSecond.toFixed(0)} events/s, ` +
            `${f.handlerCpuMsPerEvent.toFixed(2)} ms CPU/event, ${f.dynamodbWritesPerEvent.toFixed(2)} writes/event`,
        );
      }
    }
    // The same batch for every consumer: on these emulators, what a batch costs beyond its
    // slowest single delivery is partly the emulator's, and the others show how much.
    const batches = {} as Record<ConsumerName, BatchConcurrencyResult>;
    for (const name of order) {
      const b = await runBatchConcurrency(name, bench, { receiverDelayMs: 200, batchSize: BATCH_SIZE, singles: 10, batches: opts.batchRepeats });
      batches[name] = b;
      bench.log(`batch of ${b.batchSize} at 200 ms, ${name}: ${b.batchMs.toFixed(0)} ms, slowest single ${b.slowestSingleMs.toFixed(0)} ms`);
    }
    // handoff alone: one slow endpoint beside a healthy one; then its handler with tracing off and on (docs/contract.md §19).
    const slowNeighbour = await runSlowNeighbour(bench, opts.slowNeighbour);
    const tracing = await runTracingOverhead(bench, { events: opts.events, unloadedEvents: opts.unloadedEvents, window: opts.window, rounds: opts.rounds });
    return { rounds, batches, slowNeighbour, tracing };
  });
  // With the emulators stopped: fresh processes, nothing else running.
  const display = new Display();
  const bundles = await measureBundles(['handoff', 'empty', 'sdk-clients', 'naive', 'powertools'], opts.initRounds, (line) => display.status(line));
  display.status('handoff --help start-up, 15 runs of each command');
  const cliStartup = await measureCliStartup(15);
  display.close();

  const { rounds, batches, slowNeighbour, tracing } = measured;
  const consumers = { handoff: combine(rounds.handoff), naive: combine(rounds.naive), powertools: combine(rounds.powertools) };
  const result: BenchResult = {
    machine: {
      node: machine.node,
      cpu: cpus()[0]?.model.trim() ?? 'unknown',
      cores: machine.cores,
      platform: `${platform()} ${process.arch}`,
      loadAverageAtStart: machine.loadAverage,
      loadAverageAtEnd: loadavg(),
      date: new Date().toISOString(),
    },
    workload: { events: opts.events, rounds: opts.rounds, unloadedEvents: opts.unloadedEvents, window: opts.window, batchSize: BATCH_SIZE, maxConcurrency: MAX_CONCURRENCY, order },
    consumers,
    rounds,
    ratios: { handoffOverNaive: ratios(consumers.handoff, consumers.naive), handoffOverPowertools: ratios(consumers.handoff, consumers.powertools) },
    batches,
    bundles,
    cliStartup,
  };
  const full = { ...result, slowNeighbour, tracing, targets: targets(result), durationSeconds: Math.round((performance.now() - startedAt) / 1000) };
  const table = `${markdown(full)}\n${slowNeighbourMarkdown(slowNeighbour)}\n${tracingMarkdown(tracing)}`;
  process.stdout.write(`\n${table}\n${write(opts.out, 'latest', full, table)} (${full.durationSeconds} s).\n`);
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${safe(error instanceof Error ? (error.stack ?? error.message) : String(error), { keepNewlines: true })}`);
  process.exit(1);
});
