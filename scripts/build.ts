/**
 * The package build (`npm run build`, run by `prepack`): JavaScript and type declarations in
 * dist/, what `npm pack` ships.
 *
 * esbuild, not tsc, writes the JavaScript. The sources import each other without extensions
 * (moduleResolution "bundler"), which Node's ESM loader cannot resolve, so tsc's output would
 * need every import rewritten; a bundle per entry has no relative imports left at all, loads as
 * one file and keeps npm dependencies as plain imports. tsc writes
 * only the declarations, and their extensionless relative imports get a `.js` here.
 *
 * dist/
 *   cdk.js          handoff/cdk: the WebhookDelivery construct (aws-cdk-lib, constructs: peers)
 *   receiver.js     handoff/receiver: the receiver kit
 *   client.js       handoff/client: the management API's typed client
 *   cli.js          the handoff command's program with its dependencies, run by bin/handoff.js
 *                   with plain node
 *   consumer/       the Lambda functions, bundled as the construct bundles them at synth, so an
 *                   installed construct deploys them with Code.fromAsset (no esbuild in the user's
 *                   app): index.mjs the consumer (and chunks/, what it imports only while tracing
 *                   is on: OpenTelemetry, docs/tracing.md), recovery.mjs the stuck-work recovery, api.mjs the
 *                   management API (docs/contract.md §16), portal-authorizer.mjs the portal API's
 *                   authorizer, and console/ the console's files (docs/contract.md §17,
 *                   console/build.ts) that api.mjs serves; one asset
 *   types/          declarations
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { buildConsole, describeSizes, writeConsoleFiles } from '../console/build';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
/** The consumer's lazily imported chunks (tracing's), beside its index.mjs. */
export const CONSUMER_CHUNKS = 'chunks';
/** The console's files in dist/, beside the API's function that serves them. */
export const CONSOLE_DIR = 'consumer/console';

/**
 * What each public entry point (a subpath of the package.json `exports` map) exports: source
 * module -> names, `*` for all of them. The JavaScript entry and its declarations are both
 * generated from this, so they cannot disagree.
 */
export const LIBRARY_ENTRIES: Readonly<Record<string, Readonly<Record<string, readonly string[]>>>> = {
  cdk: {
    'infra/webhook-delivery': ['*'],
    // What a user needs to write the construct's `settings`.
    'lib/config': ['ConfigError', 'DEFAULT_SETTINGS', 'type Settings'],
    'lib/policy': ['DEFAULT_RETRY_POLICY', 'retryPolicy', 'type RetryPolicy'],
  },
  receiver: { 'lib/receiver/index': ['*'] },
  client: { 'api/client/index': ['*'] },
};

/** `export … from '<prefix><module><suffix>'` lines for one entry point. */
function entryModule(exports: Readonly<Record<string, readonly string[]>>, prefix: string, suffix: string): string {
  return Object.entries(exports)
    .map(([module, names]) => {
      const from = `'${prefix}${module}${suffix}'`;
      return names.includes('*') ? `export * from ${from};` : `export { ${names.join(', ')} } from ${from};`;
    })
    .join('\n');
}

const LIBRARY: BuildOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Dependencies and peers stay imports, resolved from the user's node_modules.
  packages: 'external',
  sourcemap: true,
  logLevel: 'warning',
};

/**
 * The command is one file with its dependencies inside: Node reads and compiles one minified
 * module instead of resolving and loading some hundreds (the AWS SDK's), which is most of its
 * start-up. It runs in its own process, so its copies share no state with the library entries.
 */
const COMMAND: BuildOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  minify: true,
  mainFields: ['module', 'main'],
  // Bundled CommonJS dependencies call `require`; the name must not clash with the sources' own.
  banner: { js: "import { createRequire as __handoffRequire } from 'node:module'; const require = __handoffRequire(import.meta.url);" },
  logLevel: 'warning',
};

/**
 * The construct's synth-time bundling (infra/webhook-delivery.ts, NodejsFunction) in esbuild's
 * terms: ESM for Node.js 24, minified, source maps, the AWS SDK left to the runtime.
 */
const CONSUMER: BuildOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  minify: true,
  sourcemap: true,
  external: ['@aws-sdk/*'],
  mainFields: ['module', 'main'],
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  logLevel: 'warning',
};

/**
 * What a user's app has for the built files to import besides Node's own modules: the package's
 * `dependencies` and `peerDependencies`. The rest of package.json's packages (the AWS SDK clients,
 * the command's libraries, the emulators, tsx, esbuild) are devDependencies: bundled into the
 * command and the functions, or used only in a clone, so installing the package does not install
 * them.
 */
function installedWithThePackage(): Set<string> {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
  return new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
}

/** `@scope/name/sub/path` -> `@scope/name`, `name/sub` -> `name`. */
function packageOf(specifier: string): string {
  return specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
}

/**
 * Fails the build when a built file imports a package that will not be there when it runs: the
 * library entries resolve theirs from the user's node_modules (dependencies and peers), the command
 * must carry all of its own, and the functions may leave out only the AWS SDK, which the Lambda
 * runtime provides. esbuild does not list the optional modules the SDK tries inside a `try`.
 */
function checkImports(metafile: Metafile, available: (name: string) => boolean, where: string): void {
  const missing = Object.entries(metafile.outputs).flatMap(([output, { imports }]) =>
    imports
      .filter(({ external, path }) => external && !isBuiltin(path) && !available(packageOf(path)))
      .map(({ path }) => `${relative(ROOT, output)} imports ${path}`),
  );
  if (missing.length > 0) throw new Error(`${[...new Set(missing)].join('; ')}: not ${where}`);
}

export async function buildPackage(): Promise<void> {
  rmSync(DIST, { recursive: true, force: true });
  const installed = installedWithThePackage();
  const inUsersApp = (name: string) => installed.has(name);
  const inLambdaRuntime = (name: string) => name.startsWith('@aws-sdk/');
  const built = async (options: BuildOptions, available: (name: string) => boolean, where: string) => {
    const { metafile } = await build({ ...options, metafile: true });
    checkImports(metafile, available, where);
  };
  await Promise.all([
    ...Object.entries(LIBRARY_ENTRIES).map(([name, exports]) =>
      built(
        {
          ...LIBRARY,
          stdin: { contents: entryModule(exports, './', ''), resolveDir: ROOT, loader: 'ts', sourcefile: `${name}.ts` },
          outfile: join(DIST, `${name}.js`),
        },
        inUsersApp,
        'in dependencies or peerDependencies, so not installed with the package',
      ),
    ),
    built({ ...COMMAND, entryPoints: [join(ROOT, 'cli/main.ts')], outfile: join(DIST, 'cli.js') }, () => false, 'bundled into the command'),
    // The consumer split: what it imports only while tracing is on (lib/tracing/otel.ts, OpenTelemetry)
    // is a chunk of its own, never read at a cold start with tracing off.
    built(
      {
        ...CONSUMER,
        entryPoints: { index: join(ROOT, 'functions/consumer.ts') },
        outdir: join(DIST, 'consumer'),
        splitting: true,
        chunkNames: `${CONSUMER_CHUNKS}/[name]-[hash]`,
        outExtension: { '.js': '.mjs' },
      },
      inLambdaRuntime,
      'bundled, and not the AWS SDK the Lambda runtime provides',
    ),
    ...[
      ['functions/recovery.ts', 'consumer/recovery.mjs'],
      ['functions/api.ts', 'consumer/api.mjs'],
      ['functions/api-portal-authorizer.ts', 'consumer/portal-authorizer.mjs'],
    ].map(([entry, outfile]) =>
      built({ ...CONSUMER, entryPoints: [join(ROOT, entry!)], outfile: join(DIST, outfile!) }, inLambdaRuntime, 'bundled, and not the AWS SDK the Lambda runtime provides'),
    ),
    // The console beside api.mjs, which reads it at cold start (functions/api.ts): users run no build.
    // Its sizes on stderr: `npm pack --json` (prepack runs this) keeps stdout for its JSON.
    buildConsole().then((files) => {
      writeConsoleFiles(files, join(DIST, CONSOLE_DIR));
      process.stderr.write(`${CONSOLE_DIR}/\n${describeSizes(files).map((line) => `  ${line}`).join('\n')}\n`);
    }),
  ]);
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
  addDeclarationExtensions(join(DIST, 'types'));
  for (const [name, exports] of Object.entries(LIBRARY_ENTRIES)) {
    writeFileSync(join(DIST, `${name}.d.ts`), `${entryModule(exports, './types/', '.js')}\n`);
  }
}

/**
 * Gives each relative import in the declarations the `.js` Node's ESM resolution (and so
 * TypeScript's node16/nodenext) requires: `./x` -> `./x.js`, or `./x/index.js` for a folder.
 */
function addDeclarationExtensions(dir: string) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) {
      addDeclarationExtensions(path);
      continue;
    }
    if (!path.endsWith('.d.ts')) continue;
    const text = readFileSync(path, 'utf8').replace(
      /(from\s+|import\()(['"])(\.{1,2}\/[^'"]*)\2/g,
      (whole, lead: string, quote: string, specifier: string) => {
        const base = resolve(dirname(path), specifier);
        if (existsSync(`${base}.d.ts`)) return `${lead}${quote}${specifier}.js${quote}`;
        if (existsSync(join(base, 'index.d.ts'))) return `${lead}${quote}${specifier}/index.js${quote}`;
        if (specifier.endsWith('.json')) return whole;
        throw new Error(`${relative(ROOT, path)}: cannot resolve ${specifier}`);
      },
    );
    writeFileSync(path, text);
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildPackage();
}
