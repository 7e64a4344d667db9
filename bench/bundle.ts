/**
 * Bundle size and module init, as the stack deploys the consumer (infra/webhook-delivery.ts):
 * esbuild, ESM, minified, the AWS SDK left external (the Node.js 22+ runtimes ship it), the
 * same `require` banner. Each bundle is imported by a fresh `node` process that times the
 * dynamic import; the processes for all bundles take turns, so machine noise falls on each alike.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
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

/** Run in each fresh process: time the import, print ms. */
const TIMER = `
const { performance } = await import('node:perf_hooks');
const startedAt = performance.now();
await import(process.argv[1]);
process.stdout.write(String(performance.now() - startedAt));
`;

/** Writes the bundle; its size and its six largest inputs (bytes in the output). */
async function bundle(name: BundleName) {
  const result = await build({
    entryPoints: [HANDLER_PATHS[name]],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    external: ['@aws-sdk/*'],
    mainFields: ['module', 'main'],
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const output = result.outputFiles[0];
  if (!output) throw new Error(`esbuild wrote nothing for ${name}`);
  const path = join(OUT_DIR, `${name}.mjs`);
  writeFileSync(path, output.contents);
  const inputs = Object.entries(Object.values(result.metafile.outputs)[0]?.inputs ?? {});
  const largestInputs = inputs.map(([input, { bytesInOutput }]) => ({ path: input, bytes: bytesInOutput })).sort((a, b) => b.bytes - a.bytes);
  return { path, bytes: output.contents.byteLength, largestInputs: largestInputs.slice(0, 6) };
}

export async function measureBundles(names: readonly BundleName[], runs: number, progress: (line: string) => void) {
  mkdirSync(OUT_DIR, { recursive: true });
  const bundles = [];
  for (const name of names) bundles.push({ name, ...(await bundle(name)), initMs: [] as number[] });
  for (let run = 0; run < runs; run += 1) {
    for (const b of bundles) {
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', TIMER, pathToFileURL(b.path).href], {
        env: { PATH: process.env.PATH ?? '', ...INIT_ENV },
        encoding: 'utf8',
      });
      const ms = Number(child.stdout);
      if (child.status !== 0 || !Number.isFinite(ms)) throw new Error(`init of the ${b.name} bundle failed: ${child.stderr.split('\n').slice(0, 3).join(' ')}`);
      b.initMs.push(ms);
    }
    progress(`[bundle] module init: ${run + 1}/${runs} rounds`);
  }
  return bundles.map(({ name, bytes, largestInputs, initMs }) => ({ name, bytes, largestInputs, initMs, initMedianMs: median(initMs) }));
}
