/**
 * `npm run bench`: one workload, three consumers, one process run on the sandbox's emulators
 * (issue 4). handoff, a naive consumer that POSTs with no ledger, and Powertools'
 * BatchProcessor + makeIdempotent on DynamoDB; then a batch of 10 against a slow receiver, and
 * bundle size and module init beside an empty handler's. Not a test: it asserts nothing, it
 * reports the figures, the ratios and which targets were met.
 *
 *   npm run bench                  3 rounds of 1000 events per consumer, taking turns; medians;
 *                                  writes bench/results/latest.{json,md}
 *   npm run bench -- --events 5000 --rounds 5
 *   npm run bench -- --quick       1 round of 200 events, fewer init rounds; writes to the temp directory
 *   npm run bench -- --ordering    only ordering's throughput (bench/ordering.ts): 1,000 shipments × 5
 *                                  events with a receiver fault mix to an unordered endpoint, then to
 *                                  one ordered per shipment; writes ordering.{json,md} to --out
 *   npm run bench -- --slow-neighbour [--seconds N] [--timeout-ms N]
 *                                  only the slow neighbour (bench/slow-neighbour.ts): a healthy
 *                                  endpoint's rate beside a neighbour that answers, then one that times
 *                                  out on every request; writes slow-neighbour.{json,md} to --out.
 *                                  The full run includes it too (in latest.{json,md}).
 *
 * Progress goes to stderr, the table to stdout.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runBatchConcurrency, type BatchConcurrencyResult } from '../bench/batch-concurrency';
import { measureBundles } from '../bench/bundle';
import { measureCliStartup } from '../bench/cli-startup';
import { FAULT_MIX, ORDERING_DEFAULTS, orderingMarkdown, runOrdering, type OrderingRun } from '../bench/ordering';
import { runSlowNeighbour, SLOW_NEIGHBOUR_DEFAULTS, slowNeighbourMarkdown, type SlowNeighbourOptions, type SlowNeighbourResult } from '../bench/slow-neighbour';
import { startCountingEmulators } from '../bench/counting';
import { startBenchReceiver } from '../bench/receiver';
import { combine, figures, markdown, ratios, targets, type BenchResult, type ConsumerFigures } from '../bench/report';
import { BATCH_SIZE, MAX_CONCURRENCY, runConsumer, type Bench, type ConsumerName } from '../bench/workload';
import { safe } from '../lib/terminal';
import { Display } from '../sandbox/counters';

const USAGE =
  'usage: npm run bench -- [--events N] [--rounds N] [--quick] [--ordering [--shipments N]] [--slow-neighbour] [--seconds N] [--timeout-ms N] [--out DIR]';

function options() {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        events: { type: 'string' },
        rounds: { type: 'string' },
        quick: { type: 'boolean', default: false },
        ordering: { type: 'boolean', default: false },
        shipments: { type: 'string' },
        'slow-neighbour': { type: 'boolean', default: false },
        seconds: { type: 'string' },
        'timeout-ms': { type: 'string' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }).values;
  } catch (error) {
    console.error(`${safe((error as Error).message)}\n${USAGE}`);
    process.exit(2);
  }
  if (parsed.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const quick = parsed.quick === true;
  const events = parsed.events === undefined ? (quick ? 200 : 1000) : Number(parsed.events);
  if (!Number.isInteger(events) || events < 50) {
    console.error(`--events must be a whole number of at least 50\n${USAGE}`);
    process.exit(2);
  }
  const rounds = parsed.rounds === undefined ? (quick ? 1 : 3) : Number(parsed.rounds);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20) {
    console.error(`--rounds must be a whole number from 1 to 20\n${USAGE}`);
    process.exit(2);
  }
  const shipments = parsed.shipments === undefined ? ORDERING_DEFAULTS.shipments : Number(parsed.shipments);
  if (!Number.isInteger(shipments) || shipments < 10) {
    console.error(`--shipments must be a whole number of at least 10\n${USAGE}`);
    process.exit(2);
  }
  const seconds = parsed.seconds === undefined ? (quick ? 15 : SLOW_NEIGHBOUR_DEFAULTS.seconds) : Number(parsed.seconds);
  if (!Number.isInteger(seconds) || seconds < 5 || seconds > 3600) {
    console.error(`--seconds must be a whole number from 5 to 3600\n${USAGE}`);
    process.exit(2);
  }
  const timeoutMs = parsed['timeout-ms'] === undefined ? SLOW_NEIGHBOUR_DEFAULTS.attemptTimeoutMs : Number(parsed['timeout-ms']);
  // At most the deployment's attempt timeout, which the bench's consumer keeps at its default.
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 10_000) {
    console.error(`--timeout-ms must be a whole number from 100 to 10000\n${USAGE}`);
    process.exit(2);
  }
  const slowNeighbour: SlowNeighbourOptions = { ...SLOW_NEIGHBOUR_DEFAULTS, seconds, attemptTimeoutMs: timeoutMs };
  return {
    events,
    rounds,
    unloadedEvents: quick ? 20 : 50,
    initRounds: quick ? 5 : 15,
    batchRepeats: quick ? 3 : 5,
    // Two rounds of full batches for every concurrent invocation: the poller never waits.
    window: 2 * BATCH_SIZE * MAX_CONCURRENCY,
    out: parsed.out ?? (quick ? join(tmpdir(), 'handoff-bench') : fileURLToPath(new URL('../bench/results/', import.meta.url))),
    quick,
    ordering: parsed.ordering === true,
    shipments,
    slowNeighbourOnly: parsed['slow-neighbour'] === true,
    slowNeighbour,
  };
}

/**
 * A scenario run alone on fresh emulators (`--ordering`, `--slow-neighbour`): what it returns and the
 * machine it ran on. The bench receiver is only for the single-URL setting provision() fills in: these
 * scenarios' endpoints are in a registry, on receivers of their own.
 */
async function alone<T>(run: (bench: Bench) => Promise<T>) {
  const loadAverage = loadavg();
  const display = new Display();
  const emulators = await startCountingEmulators();
  const receiver = await startBenchReceiver();
  const bench: Bench = { emulators, receiver, progress: (line) => display.status(line), log: (line) => display.log(line) };
  let result: T;
  try {
    result = await run(bench);
  } finally {
    await receiver.close();
    await emulators.close();
  }
  display.close();
  const machine = { date: new Date().toISOString(), loadAverage, loadAverageAtEnd: loadavg(), cores: cpus().length, node: process.versions.node };
  return { result, machine };
}

/** Writes a scenario's `<name>.json` and `<name>.md` to `out`. */
function writeScenario(out: string, name: string, json: unknown, table: string): void {
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, `${name}.json`), `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(join(out, `${name}.md`), table);
}

/** `--slow-neighbour`: the healthy endpoint beside an answering neighbour, then a timing-out one; the table. */
async function slowNeighbourOnly(out: string, options: SlowNeighbourOptions): Promise<void> {
  const { result, machine } = await alone((bench) => runSlowNeighbour(bench, options));
  const table = slowNeighbourMarkdown(result);
  writeScenario(out, 'slow-neighbour', { machine, ...result }, table);
  process.stdout.write(
    `\n${table}\n${machine.date}, ${machine.cores} cores, load average ${machine.loadAverage.map((n) => n.toFixed(2)).join(' ')} at start, ` +
      `${machine.loadAverageAtEnd.map((n) => n.toFixed(2)).join(' ')} at end. Written to ${join(out, 'slow-neighbour.json')} and slow-neighbour.md.\n`,
  );
}

/** `--ordering`: the unordered endpoint, then the ordered one, on the same emulators; the table. */
async function orderingOnly(out: string, shipments: number): Promise<void> {
  const { result: runs, machine } = await alone(async (bench) => {
    const runs: OrderingRun[] = [];
    for (const mode of ['none', 'per-shipment'] as const) {
      const run = await runOrdering(mode, bench, { ...ORDERING_DEFAULTS, shipments });
      runs.push(run);
      bench.log(`ordering ${mode}: ${run.delivered}/${run.events} delivered in ${run.wallSeconds.toFixed(1)} s, ${run.deliveriesPerSecond.toFixed(0)}/s`);
    }
    return runs;
  });
  const table = orderingMarkdown(runs, machine);
  writeScenario(out, 'ordering', { machine, options: { ...ORDERING_DEFAULTS, shipments }, faultMix: FAULT_MIX, runs }, table);
  process.stdout.write(`\n${table}\nLoad average at end ${machine.loadAverageAtEnd.map((n) => n.toFixed(2)).join(' ')}. Written to ${join(out, 'ordering.json')} and ordering.md.\n`);
}

async function main(): Promise<void> {
  const opts = options();
  // The SDK's Node 20 notice, once per worker, says nothing about the figures.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  if (opts.ordering) return orderingOnly(opts.out, opts.shipments);
  if (opts.slowNeighbourOnly) return slowNeighbourOnly(opts.out, opts.slowNeighbour);
  const startedAt = performance.now();
  const loadAverageAtStart = loadavg();
  const display = new Display();
  const emulators = await startCountingEmulators();
  const receiver = await startBenchReceiver();
  const bench: Bench = { emulators, receiver, progress: (line) => display.status(line), log: (line) => display.log(line) };

  // The baseline first, the product last: if anything, handoff runs on the emulators' fullest state.
  const order: ConsumerName[] = ['naive', 'powertools', 'handoff'];
  // Rounds take turns, so a burst of load from elsewhere on the machine falls on each consumer alike.
  const rounds: Record<ConsumerName, ConsumerFigures[]> = { naive: [], powertools: [], handoff: [] };
  const batches = {} as Record<ConsumerName, BatchConcurrencyResult>;
  let slowNeighbour: SlowNeighbourResult;
  try {
    for (let round = 1; round <= opts.rounds; round += 1) {
      for (const name of order) {
        const f = figures(await runConsumer(name, bench, opts));
        rounds[name].push(f);
        display.log(
          `round ${round}/${opts.rounds} ${name}: ${f.delivered} delivered, ${f.eventsPerSecond.toFixed(0)} events/s, ` +
            `${f.handlerCpuMsPerEvent.toFixed(2)} ms CPU/event, ${f.dynamodbWritesPerEvent.toFixed(2)} writes/event`,
        );
      }
    }
    // The same batch for every consumer: on these emulators, what a batch costs beyond its
    // slowest single delivery is partly the emulator's, and the others show how much.
    for (const name of order) {
      const result = await runBatchConcurrency(name, bench, {
        receiverDelayMs: 200,
        batchSize: BATCH_SIZE,
        singles: 10,
        batches: opts.batchRepeats,
      });
      batches[name] = result;
      display.log(
        `batch of ${result.batchSize} at 200 ms, ${name}: ${result.batchMs.toFixed(0)} ms, slowest single ${result.slowestSingleMs.toFixed(0)} ms`,
      );
    }
    // handoff alone: one slow endpoint beside a healthy one (issue 26).
    slowNeighbour = await runSlowNeighbour(bench, opts.slowNeighbour);
  } finally {
    await receiver.close();
    await emulators.close();
  }
  const bundles = await measureBundles(['handoff', 'empty', 'sdk-clients', 'naive', 'powertools'], opts.initRounds, (line) =>
    display.status(line),
  );
  display.status('handoff --help start-up, 15 runs of each command');
  const cliStartup = await measureCliStartup(15);
  display.close();

  const consumers = { handoff: combine(rounds.handoff), naive: combine(rounds.naive), powertools: combine(rounds.powertools) };
  const cpu = cpus();
  const result: BenchResult = {
    machine: {
      node: process.versions.node,
      cpu: cpu[0]?.model.trim() ?? 'unknown',
      cores: cpu.length,
      platform: `${platform()} ${process.arch}`,
      loadAverageAtStart,
      loadAverageAtEnd: loadavg(),
      date: new Date().toISOString(),
    },
    workload: {
      events: opts.events,
      rounds: opts.rounds,
      unloadedEvents: opts.unloadedEvents,
      window: opts.window,
      batchSize: BATCH_SIZE,
      maxConcurrency: MAX_CONCURRENCY,
      order,
    },
    consumers,
    rounds,
    ratios: {
      handoffOverNaive: ratios(consumers.handoff, consumers.naive),
      handoffOverPowertools: ratios(consumers.handoff, consumers.powertools),
    },
    batches,
    slowNeighbour,
    bundles,
    cliStartup,
    targets: targets(consumers, batches.handoff, bundles, cliStartup),
    durationSeconds: Math.round((performance.now() - startedAt) / 1000),
  };

  const table = `${markdown(result)}\n${slowNeighbourMarkdown(slowNeighbour)}`;
  mkdirSync(opts.out, { recursive: true });
  writeFileSync(join(opts.out, 'latest.json'), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(join(opts.out, 'latest.md'), table);
  process.stdout.write(`\n${table}\nWritten to ${join(opts.out, 'latest.json')} and latest.md (${result.durationSeconds} s).\n`);
}

main().catch((error: unknown) => {
  console.error(`bench failed: ${safe(error instanceof Error ? (error.stack ?? error.message) : String(error), { keepNewlines: true })}`);
  process.exit(1);
});
