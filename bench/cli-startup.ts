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

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** An installed layout (bin/, dist/, package.json, no sources) under node_modules, so dependencies resolve. */
const INSTALLED = join(ROOT, 'node_modules/.cache/handoff-bench/installed');

export const CLI_STARTUP_GOAL_MS = 300;

export interface CliStartupResult {
  readonly runs: number;
  readonly medianMs: { readonly compiled: number; readonly sources: number; readonly node: number };
}

/** The middle run: the lower middle of an even count (runs are whole processes, not samples to average). */
function middle(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? Number.NaN;
}

export async function measureCliStartup(runs: number): Promise<CliStartupResult> {
  await buildPackage();
  rmSync(INSTALLED, { recursive: true, force: true });
  mkdirSync(join(INSTALLED, 'bin'), { recursive: true });
  mkdirSync(join(INSTALLED, 'dist'), { recursive: true });
  copyFileSync(join(ROOT, 'bin/handoff.js'), join(INSTALLED, 'bin/handoff.js'));
  copyFileSync(join(ROOT, 'dist/cli.js'), join(INSTALLED, 'dist/cli.js'));
  copyFileSync(join(ROOT, 'package.json'), join(INSTALLED, 'package.json'));

  const commands = {
    compiled: [join(INSTALLED, 'bin/handoff.js'), '--help'],
    sources: [join(ROOT, 'bin/handoff.js'), '--help'],
    node: ['-e', '0'],
  } as const;
  const times = { compiled: [] as number[], sources: [] as number[], node: [] as number[] };
  for (let run = 0; run < runs; run++) {
    for (const [name, args] of Object.entries(commands) as [keyof typeof commands, readonly string[]][]) {
      const startedAt = performance.now();
      const child = spawnSync(process.execPath, args, { encoding: 'utf8' });
      const ms = performance.now() - startedAt;
      if (child.status !== 0) throw new Error(`${name} failed: ${child.stderr.split('\n').slice(0, 3).join(' ')}`);
      times[name].push(ms);
    }
  }
  return {
    runs,
    medianMs: { compiled: middle(times.compiled), sources: middle(times.sources), node: middle(times.node) },
  };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
  const result = await measureCliStartup(Number(values.runs));
  const { compiled, sources, node } = result.medianMs;
  process.stdout.write(
    [
      `| handoff --help (medians of ${result.runs} runs) | ms |`,
      '| --- | --: |',
      `| installed package (dist/cli.js) | ${compiled.toFixed(0)} |`,
      `| clone (TypeScript through tsx) | ${sources.toFixed(0)} |`,
      `| node -e 0 (Node's own start) | ${node.toFixed(0)} |`,
      '',
      `goal: installed under ${CLI_STARTUP_GOAL_MS} ms: ${compiled < CLI_STARTUP_GOAL_MS ? 'met' : 'missed'}`,
      '',
    ].join('\n'),
  );
}
