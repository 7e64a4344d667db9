/**
 * The console's build (docs/contract.md §17): esbuild bundles the page (console/app/main.tsx,
 * Preact with its JSX) into one minified `app.js`, its stylesheet into `app.css`, and index.html is
 * copied as it is. In memory (`buildConsole`): the sandbox builds it at each start, a clone has
 * esbuild. Written to a directory (`node --import tsx console/build.ts <dir>`, or `writeConsoleFiles`):
 * the package's dist/consumer/console/ and a clone's function bundle, which the Lambda reads at cold
 * start (console/site.ts `readConsoleFiles`).
 *
 * The page makes no request but to its own origin: the build fails when the bundle would import
 * anything from elsewhere (a URL left external, a `url(https://…)` in the stylesheet), or when
 * index.html names a script, stylesheet or image by an absolute URL.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type BuildFailure, type BuildOptions, type Metafile, type OutputFile } from 'esbuild';
import { consoleFile, type ConsoleFile } from './site';

const APP = fileURLToPath(new URL('./app/', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The browsers of the last two years, in esbuild's terms: what the bundle's syntax is lowered to.
 * ES2022 is the floor; Chrome 131, Firefox 133 and Safari 18.2 are those of December 2024.
 */
export const CONSOLE_TARGET = ['es2022', 'chrome131', 'firefox133', 'safari18.2'];

/** The console's build failed: one line saying why (esbuild's first error, or the rule broken). */
export class ConsoleBuildError extends Error {
  override readonly name = 'ConsoleBuildError';
  readonly code = 'console-build';
  constructor(problem: string, options?: ErrorOptions) {
    super(`the console did not build: ${problem}`, options);
  }
}

const OPTIONS: BuildOptions = {
  bundle: true,
  minify: true,
  write: false,
  format: 'esm',
  platform: 'browser',
  target: CONSOLE_TARGET,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  // An image or icon the page imports goes inside the bundle (the CSP allows data: images), never a request.
  loader: { '.svg': 'dataurl', '.png': 'dataurl' },
  define: { 'process.env.NODE_ENV': '"production"' },
  metafile: true,
  logLevel: 'silent',
  absWorkingDir: ROOT,
};

/** The console's files, built in memory: index.html, app.js, app.css. @throws ConsoleBuildError */
export async function buildConsole(appDir: string = APP): Promise<ConsoleFile[]> {
  const outdir = join(appDir, '.out');
  const script = await bundle({ ...OPTIONS, entryPoints: { app: join(appDir, 'main.tsx') }, outdir });
  let styles = script.filter(({ path }) => path.endsWith('.css'));
  // A stylesheet index.html links rather than the script importing it: bundled on its own.
  if (styles.length === 0) styles = await bundle({ ...OPTIONS, entryPoints: { app: join(appDir, 'styles.css') }, outdir });
  const html = readIndex(appDir);
  return [
    consoleFile('index.html', html),
    ...[...script.filter(({ path }) => path.endsWith('.js')), ...styles].map((output) => consoleFile(basename(output.path), Buffer.from(output.contents))),
  ];
}

/** One esbuild run, its outputs checked to import nothing from outside the bundle. @throws ConsoleBuildError */
async function bundle(options: BuildOptions): Promise<OutputFile[]> {
  let result;
  try {
    result = await build(options);
  } catch (error) {
    const first = (error as Partial<BuildFailure>).errors?.[0];
    if (first === undefined) throw new ConsoleBuildError((error as Error).message.split('\n')[0]!, { cause: error });
    const where = first.location === null ? '' : `${first.location.file}:${first.location.line}:${first.location.column}: `;
    throw new ConsoleBuildError(`${where}${first.text}`, { cause: error });
  }
  checkSelfContained(result.metafile!);
  return result.outputFiles!;
}

/** @throws ConsoleBuildError naming each import left outside the bundle */
function checkSelfContained(metafile: Metafile): void {
  const external = Object.entries(metafile.outputs).flatMap(([output, { imports }]) =>
    imports.filter((entry) => entry.external).map(({ path }) => `${basename(output)} imports ${path}`),
  );
  if (external.length > 0) throw new ConsoleBuildError(`${[...new Set(external)].join('; ')}: the console requests nothing from another origin`);
}

/** index.html, refused when it loads anything by an absolute URL (`src`/`href` with a scheme or `//`, data: aside). */
function readIndex(appDir: string): Buffer {
  const path = join(appDir, 'index.html');
  let html: string;
  try {
    html = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConsoleBuildError(`${relative(ROOT, path)} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, { cause: error });
  }
  const absolute = [...html.matchAll(/\b(?:src|href)\s*=\s*["']?\s*([^"'\s>]+)/gi)]
    .map((match) => match[1]!)
    .filter((url) => /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i.test(url) && !/^data:/i.test(url));
  if (absolute.length > 0) throw new ConsoleBuildError(`${relative(ROOT, path)} loads ${absolute.join(', ')}: the console requests nothing from another origin`);
  return Buffer.from(html, 'utf8');
}

/**
 * Writes the files to `dir`, made when it is not there: each replaces a file of its name, and
 * nothing else in `dir` is touched. The directory is the caller's (a command-line argument may name
 * one that holds anything): a build never removes what it did not write.
 */
export function writeConsoleFiles(files: readonly ConsoleFile[], dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (const file of files) writeFileSync(join(dir, file.path), file.body);
}

/** `app.js  12.3 KB (4.5 KB gzipped)` per file, and the total: what a browser transfers, gzipped. */
export function describeSizes(files: readonly ConsoleFile[]): string[] {
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
  const gzipped = (file: ConsoleFile) => (file.gzip ?? gzipSync(file.body, { level: 9 })).byteLength;
  const width = Math.max(...files.map(({ path }) => path.length));
  const lines = files.map((file) => `${file.path.padEnd(width)}  ${kb(file.body.byteLength).padStart(8)}  (${kb(gzipped(file))} gzipped)`);
  const raw = files.reduce((sum, file) => sum + file.body.byteLength, 0);
  const sent = files.reduce((sum, file) => sum + gzipped(file), 0);
  return [...lines, `${'total'.padEnd(width)}  ${kb(raw).padStart(8)}  (${kb(sent)} gzipped)`];
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (dir === undefined) {
    process.stderr.write('usage: node --import tsx console/build.ts <outDir>\n');
    process.exit(2);
  }
  try {
    const files = await buildConsole();
    writeConsoleFiles(files, resolve(dir));
    process.stdout.write(`${describeSizes(files).join('\n')}\n`);
  } catch (error) {
    if (!(error instanceof ConsoleBuildError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
