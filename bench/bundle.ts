/**
 * Bundle size and module init, as the package ships the consumer (scripts/build.ts):
 * esbuild, ESM, minified, the AWS SDK left external (the Node.js 22+ runtimes ship it), the
 * same `require` banner, split: what a handler imports only later (the consumer's tracing, its
 * OpenTelemetry chunk) is a file of its own, not part of `bytes`. Each bundle is imported by a fresh
 * `node` process that times the dynamic import; the processes for all bundles take turns, so machine
 * noise falls on each alike. The consumer is timed twice: as is (tracing off), and with its tracing
 * chunks imported too (what a cold start with tracing on loads by the end of its first batch).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { MessageSeal } from '../lib/queue/seal';
import { median } from './harness';
import { HANDLER_PATHS } from './pipeline';

export type BundleName = keyof typeof HANDLER_PATHS;
export type BundleResult = Awaited<ReturnType<typeof measureBundles>>[number];

/** Where bundles are written: under node_modules, so the external SDK resolves from them. */
const OUT_DIR = fileURLToPath(new URL('../node_modules/.cache/handoff-bench/', import.meta.url));

/** Enough for each handler's init to succeed; nothing is contacted at init. */
const INIT_ENV: Record<string, string> = {
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'bench',
  AWS_SECRET_ACCESS_KEY: 'bench',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  AWS_LAMBDA_FUNCTION_NAME: 'bench-init',
  HANDOFF_WEBHOOK_URL: 'http://127.0.0.1:9/webhook',
  HANDOFF_ALLOW_HTTP: 'true',
  HANDOFF_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8',
  HANDOFF_LEDGER_TABLE: 'bench-ledger',
  HANDOFF_QUEUE_URL: 'http://127.0.0.1:9/000000000000/bench',
  HANDOFF_DEAD_LETTER_QUEUE_URL: 'http://127.0.0.1:9/000000000000/bench-dlq',
  HANDOFF_SEAL_KEY: MessageSeal.generateKey(),
  IDEMPOTENCY_TABLE: 'bench-idempotency',
};

/** Run in each fresh process: time the import of every module given, in order, print ms. */
const TIMER = `
const { performance } = await import('node:perf_hooks');
const startedAt = performance.now();
for (const module of process.argv.slice(1)) await import(module);
process.stdout.write(String(performance.now() - startedAt));
`;

/** Writes the bundle; its size and its six largest inputs (bytes in the output). */
async function bundle(name: BundleName) {
  const outdir = join(OUT_DIR, name);
  rmSync(outdir, { recursive: true, force: true });
  const result = await build({
    entryPoints: { index: HANDLER_PATHS[name] },
    outdir,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    external: ['@aws-sdk/*'],
    mainFields: ['module', 'main'],
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    metafile: true,
    logLevel: 'silent',
  });
  const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.mjs'));
  const entry = outputs.find(([, output]) => output.entryPoint !== undefined);
  if (!entry) throw new Error(`esbuild wrote nothing for ${name}`);
  const path = join(outdir, 'index.mjs');
  const inputs = Object.entries(entry[1].inputs);
  const largestInputs = inputs.map(([input, { bytesInOutput }]) => ({ path: input, bytes: bytesInOutput })).sort((a, b) => b.bytes - a.bytes);
  // The chunks imported later (dynamic imports), with what they import: the consumer's tracing.
  const lazy = outputs.filter(([file]) => file.includes('/chunks/') && /\/chunks\/otel-/.test(file));
  const lazyChunks = lazy.map(([file]) => join(outdir, 'chunks', file.split('/chunks/')[1]!));
  const lazyBytes = outputs.filter(([file]) => file.includes('/chunks/')).reduce((sum, [, output]) => sum + output.bytes, 0);
  return { path, bytes: entry[1].bytes, lazyBytes, lazyChunks, largestInputs: largestInputs.slice(0, 6) };
}

export async function measureBundles(names: readonly BundleName[], runs: number, progress: (line: string) => void) {
  mkdirSync(OUT_DIR, { recursive: true });
  const bundles: (Awaited<ReturnType<typeof bundle>> & { name: BundleName; initMs: number[]; tracedInitMs: number[] })[] = [];
  for (const name of names) bundles.push({ name, ...(await bundle(name)), initMs: [] as number[], tracedInitMs: [] as number[] });
  const timed = (b: (typeof bundles)[number], modules: readonly string[]) => {
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', TIMER, ...modules.map((m) => pathToFileURL(m).href)], {
      env: { PATH: process.env.PATH ?? '', ...INIT_ENV },
      encoding: 'utf8',
    });
    const ms = Number(child.stdout);
    if (child.status !== 0 || !Number.isFinite(ms)) throw new Error(`init of the ${b.name} bundle failed: ${child.stderr.split('\n').slice(0, 3).join(' ')}`);
    return ms;
  };
  for (let run = 0; run < runs; run += 1) {
    for (const b of bundles) {
      b.initMs.push(timed(b, [b.path]));
      if (b.lazyChunks.length > 0) b.tracedInitMs.push(timed(b, [b.path, ...b.lazyChunks]));
    }
    progress(`[bundle] module init: ${run + 1}/${runs} rounds`);
  }
  return bundles.map(({ name, bytes, lazyBytes, largestInputs, initMs, tracedInitMs }) => ({
    name,
    bytes,
    /** Chunks imported later: the consumer's tracing (OpenTelemetry), loaded only while tracing is on. */
    lazyBytes,
    largestInputs,
    initMs,
    initMedianMs: median(initMs),
    /** With its tracing chunks imported too (the consumer only): a cold start with tracing on. */
    ...(tracedInitMs.length > 0 ? { tracedInitMedianMs: median(tracedInitMs) } : {}),
  }));
}
