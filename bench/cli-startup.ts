/**
 * `handoff --help` start-up time, as a user who installed the package runs it: the compiled
 * command (bin/handoff.js -> dist/cli.js, made by `npm run build`) beside the command run from the
 * TypeScript sources through tsx (what a clone runs), and `node -e 0` for the floor Node itself
 * costs on this machine. Each is a fresh process, wall clock, the three taking turns so machine
 * noise falls on each alike. Not a test: it asserts nothing.
 *
 *   npx tsx bench/cli-startup.ts [--runs 15]
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildPackage } from '../scripts/build';
import { CLI_STARTUP_GOAL_MS, fixed, table } from './report';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** An installed layout (bin/, dist/, package.json, no sources) under node_modules, so dependencies resolve. */
const INSTALLED = join(ROOT, 'node_modules/.cache/handoff-bench/installed');

export type CliStartupResult = Awaited<ReturnType<typeof measureCliStartup>>;

export async function measureCliStartup(runs: number) {
  await buildPackage();
  rmSync(INSTALLED, { recursive: true, force: true });
  for (const dir of ['bin', 'dist']) mkdirSync(join(INSTALLED, dir), { recursive: true });
  for (const file of ['bin/handoff.js', 'dist/cli.js', 'package.json']) copyFileSync(join(ROOT, file), join(INSTALLED, file));
  const commands = { compiled: [join(INSTALLED, 'bin/handoff.js'), '--help'], sources: [join(ROOT, 'bin/handoff.js'), '--help'], node: ['-e', '0'] };
  const times = { compiled: [] as number[], sources: [] as number[], node: [] as number[] };
  for (let run = 0; run < runs; run++) {
    for (const [name, args] of Object.entries(commands) as [keyof typeof commands, string[]][]) {
      const startedAt = performance.now();
      const child = spawnSync(process.execPath, args, { encoding: 'utf8' });
      times[name].push(performance.now() - startedAt);
      if (child.status !== 0) throw new Error(`${name} failed: ${child.stderr.split('\n').slice(0, 3).join(' ')}`);
    }
  }
  // The middle run, the lower one of an even count: runs are whole processes, not samples to average.
  const middle = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? Number.NaN;
  return { runs, medianMs: { compiled: middle(times.compiled), sources: middle(times.sources), node: middle(times.node) } };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
  const { runs, medianMs } = await measureCliStartup(Number(values.runs));
  const f0 = fixed(0);
  const rows = [
    ['installed package (dist/cli.js)', f0(medianMs.compiled)],
    ['clone (TypeScript through tsx)', f0(medianMs.sources)],
    ["node -e 0 (Node's own start)", f0(medianMs.node)],
  ];
  const met = medianMs.compiled < CLI_STARTUP_GOAL_MS ? 'met' : 'missed';
  process.stdout.write([...table([`handoff --help (medians of ${runs} runs)`, 'ms'], rows), '', `goal: installed under ${CLI_STARTUP_GOAL_MS} ms: ${met}`, ''].join('\n'));
}
