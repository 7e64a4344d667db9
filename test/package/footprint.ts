/**
 * What installing the package adds to a user's app: the packages its own dependencies bring,
 * beyond the peers (`aws-cdk-lib`, `constructs`) the app has anyway, read from npm's record of
 * the installed tree (`node_modules/.package-lock.json`), with their size on disk.
 */
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Development and sandbox tools that must never reach a user's app. */
export const DEVELOPMENT_ONLY = ['dynalite', 'fauxqs', 'tsx', 'esbuild'] as const;

interface LockedPackage {
  readonly dependencies?: Record<string, string>;
  readonly optionalDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
}

export interface InstalledPackage {
  /** Its path in the app, `node_modules/…`. */
  readonly path: string;
  readonly name: string;
  /** Its own files, not the packages nested in its node_modules. */
  readonly bytes: number;
}

export interface Footprint {
  readonly packages: readonly InstalledPackage[];
  readonly bytes: number;
}

/** The package name a lockfile path ends with: `node_modules/a/node_modules/@s/b` -> `@s/b`. */
export function packageName(path: string): string {
  return path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
}

/** Every installed package's path in the app, from npm's hidden lockfile. */
function lockedPackages(app: string): Record<string, LockedPackage> {
  const lock = JSON.parse(readFileSync(join(app, 'node_modules/.package-lock.json'), 'utf8')) as { packages: Record<string, LockedPackage> };
  return lock.packages;
}

/** Where Node finds `name` from the package at `from` (`''` for the app): its node_modules, then its parents'. */
function resolveFrom(packages: Record<string, LockedPackage>, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (base === '') return undefined;
    const parent = base.lastIndexOf('/node_modules/');
    base = parent < 0 ? '' : base.slice(0, parent);
  }
}

/** The installed packages `roots` need, themselves included. */
function closure(packages: Record<string, LockedPackage>, roots: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const pending = roots.map((name) => resolveFrom(packages, '', name)).filter((path): path is string => path !== undefined);
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    if (seen.has(path)) continue;
    seen.add(path);
    const locked = packages[path]!;
    const names = Object.keys({ ...locked.dependencies, ...locked.optionalDependencies, ...locked.peerDependencies });
    for (const name of names) {
      const found = resolveFrom(packages, path, name);
      if (found !== undefined && !seen.has(found)) pending.push(found);
    }
  }
  return seen;
}

/** Bytes of a directory's files, not following links, leaving out its own node_modules. */
function ownBytes(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) bytes += ownBytes(path);
    else if (entry.isFile()) bytes += lstatSync(path).size;
  }
  return bytes;
}

/** The packages `pkg` brings into `app` that its `peers` do not, `pkg` itself included. */
export function footprintBeyond(app: string, pkg: string, peers: readonly string[]): Footprint {
  const packages = lockedPackages(app);
  const ofPeers = closure(packages, peers);
  const installed = [...closure(packages, [pkg])]
    .filter((path) => !ofPeers.has(path))
    .map((path) => ({ path, name: packageName(path), bytes: existsSync(join(app, path)) ? ownBytes(join(app, path)) : 0 }))
    .sort((a, b) => b.bytes - a.bytes);
  return { packages: installed, bytes: installed.reduce((sum, { bytes }) => sum + bytes, 0) };
}

/**
 * Every package directory under the app's node_modules (nested ones too), by walking the disk
 * rather than trusting the lockfile: `node_modules/…` paths.
 */
export function installedPackageDirs(app: string): string[] {
  const found: string[] = [];
  const walk = (modules: string) => {
    if (!existsSync(join(app, modules))) return;
    for (const entry of readdirSync(join(app, modules), { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const scoped = entry.name.startsWith('@') && entry.isDirectory() ? readdirSync(join(app, modules, entry.name)).map((name) => `${entry.name}/${name}`) : [entry.name];
      for (const name of scoped) {
        const path = `${modules}/${name}`;
        found.push(path);
        walk(`${path}/node_modules`);
      }
    }
  };
  walk('node_modules');
  return found;
}

/** `12.3 MB` (10^6 bytes, as npm and du -m --si count). */
export function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** One line for the test's output: the total and the largest packages. */
export function describeFootprint({ packages, bytes }: Footprint, largest = 8): string {
  const top = packages.slice(0, largest).map(({ name, bytes: own }) => `${name} ${megabytes(own)}`);
  return `${megabytes(bytes)} in ${packages.length} packages (the package itself included); largest: ${top.join(', ')}`;
}
