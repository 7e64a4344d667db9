/**
 * Tracing's cost (docs/contract.md §19): handoff's consumer through the throughput workload
 * (bench/throughput.ts) with tracing off and on, rounds taking turns, its handler CPU per event side
 * by side; the target is on ≤ 1.10x off. On: the OTLP/HTTP exporter to a sink on loopback (a node
 * http server that reads each export and answers 200, as a collector beside the function would);
 * every span is exported before its invocation returns (the consumer's flush). The producer's
 * messages carry no context: each delivery's span starts its trace (parsing one costs about nothing
 * beside the span).
 *
 * `npx tsx bench/tracing.ts [--events N] [--rounds N]` runs it alone on fresh emulators and prints
 * its table; `runTracingOverhead` is what a full bench run calls.
 */
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { listenOnLoopback } from '../test/helpers/loopback';
import { startCountingEmulators, startReceiver, type Bench } from './harness';
import { fixed, table, target, times } from './report';
import { combine, runConsumer, type ConsumerFigures } from './throughput';

/** A loopback OTLP/HTTP sink: reads every export, counts its bytes, answers 200. */
async function startSpanSink() {
  let exports = 0;
  let bytes = 0;
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => {
      exports += 1;
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const listening = await listenOnLoopback(server);
  return { url: new URL(listening.url).origin, counts: () => ({ exports, bytes }), close: () => listening.close() };
}

export type TracingOverhead = Awaited<ReturnType<typeof runTracingOverhead>>;

export async function runTracingOverhead(bench: Bench, options: { readonly events: number; readonly unloadedEvents: number; readonly window: number; readonly rounds: number }) {
  const sink = await startSpanSink();
  const rounds: { off: ConsumerFigures[]; on: ConsumerFigures[] } = { off: [], on: [] };
  try {
    for (let round = 1; round <= options.rounds; round += 1) {
      // Off first, on last within a round: if anything, on runs on the emulators' fuller state.
      const off = await runConsumer('handoff', bench, { ...options, label: '[tracing off]' });
      const on = await runConsumer('handoff', bench, { ...options, label: '[tracing on]', env: { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_SERVICE_NAME: 'handoff-bench' } });
      rounds.off.push(off);
      rounds.on.push(on);
      bench.log(`tracing round ${round}/${options.rounds}: handler CPU ${off.handlerCpuMsPerEvent.toFixed(2)} ms/event off, ${on.handlerCpuMsPerEvent.toFixed(2)} on`);
    }
  } finally {
    await sink.close();
  }
  const off = combine(rounds.off);
  const on = combine(rounds.on);
  const { exports, bytes } = sink.counts();
  return { off, on, rounds, cpuRatio: on.handlerCpuMsPerEvent / off.handlerCpuMsPerEvent, exports, exportBytesPerEvent: bytes / Math.max(1, on.delivered) };
}

export function tracingMarkdown(result: TracingOverhead): string {
  const [f0, f2] = [fixed(0), fixed(2)];
  const row = (label: string, c: ConsumerFigures) => [label, f2(c.handlerCpuMsPerEvent), f0(c.eventsPerSecond), f0(c.p50Ms), f0(c.p99Ms), f2(c.dynamodbWritesPerEvent)];
  const goal = target('Handler CPU per event, tracing on / off', result.cpuRatio, '≤', 1.1, times);
  return [
    `Tracing off and on (handoff's consumer, ${result.rounds.off.length} round(s) taking turns, medians; on: OTLP/HTTP to a loopback sink, ${result.exports} exports, ${f0(result.exportBytesPerEvent)} bytes per event).`,
    '',
    ...table(['tracing', 'handler CPU ms/event', 'events/s', 'p50 ms', 'p99 ms', 'DDB writes/event'], [row('off', result.off), row('on', result.on)]),
    '',
    `handler CPU ms/event by round: off ${result.rounds.off.map((f) => f2(f.handlerCpuMsPerEvent)).join(' / ')}; on ${result.rounds.on.map((f) => f2(f.handlerCpuMsPerEvent)).join(' / ')}.`,
    '',
    ...table(['target', 'goal', 'measured', 'result'], [[goal.name, goal.target, goal.measured, goal.verdict]], 'llrl'),
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name: string, fallback: number) => {
    const at = process.argv.indexOf(name);
    return at === -1 ? fallback : Number(process.argv[at + 1]);
  };
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const emulators = await startCountingEmulators();
  const receiver = await startReceiver();
  try {
    const result = await runTracingOverhead(
      { emulators, receiver, progress: () => {}, log: (line) => process.stderr.write(`${line}\n`) },
      { events: arg('--events', 1000), unloadedEvents: 20, window: 100, rounds: arg('--rounds', 3) },
    );
    process.stdout.write(`${tracingMarkdown(result)}\n${cpus().length} cores, load average ${loadavg().map((n) => n.toFixed(2)).join(' ')} at end.\n`);
  } finally {
    await receiver.close();
    await emulators.close();
  }
}
