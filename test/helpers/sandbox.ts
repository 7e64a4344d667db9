/**
 * Runs the sandbox (`npm start`'s entry) as a child process for end-to-end tests: waits for its
 * `READY <json>` line, tracks its worker processes from its log, and stops it with a signal.
 * Each run gets a private temp directory for its state file (and its endpoints file, when the test
 * gives endpoints), removed once the sandbox has exited.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import type { SandboxReady } from '../../sandbox/sandbox';

const ROOT = resolve(import.meta.dirname, '../..');
/** Start-up includes two emulators and a tsx compile on a busy machine. */
const READY_TIMEOUT_MS = 60_000;

export interface SandboxProcess {
  readonly ready: SandboxReady;
  /** The state file this sandbox was told to write (a fresh temp path). */
  readonly stateFile: string;
  readonly child: ChildProcess;
  /** Worker processes alive now, as the sandbox logged them. */
  livePids(): number[];
  /** Every stderr line so far. */
  stderr(): readonly string[];
  /**
   * Resolves on the first stderr line matching `pattern` (already seen ones count); rejects after
   * `timeoutMs`, quoting the last lines, rather than leaving the test to time out blind.
   */
  waitForLog(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** Sends `signal` (SIGKILL: to the whole process group) and resolves with how it ended. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Whether its state file was still there when it exited (undefined while it runs). */
  stateFileAtExit(): boolean | undefined;
}

export interface StartOptions {
  /** Variables on top of a clean environment (no inherited HANDOFF_* or AWS_*). */
  readonly env?: Record<string, string>;
  /**
   * The endpoints (sandbox/endpoints-file.ts): written, 0600, to `endpoints.json` beside the state
   * file, and named by `HANDOFF_ENDPOINTS_FILE`. A string is written as it is (a file to refuse).
   */
  readonly endpoints?: readonly EndpointFields[] | string;
  /**
   * How long its workers keep their copy of the registry (`HANDOFF_ENDPOINTS_CACHE_MS` for the
   * sandbox; default 1000). 0: each batch reads it, so what one worker writes (a pause) holds the
   * others' next batch.
   */
  readonly endpointsCacheMs?: number;
}

/** The environment a sandbox test starts from: any free ports, a private state file. */
function baseEnvironment(stateFile: string): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_')),
  );
  return {
    ...inherited,
    HANDOFF_SQS_PORT: '0',
    HANDOFF_DYNAMODB_PORT: '0',
    HANDOFF_SANDBOX_FILE: stateFile,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

/** A fresh temp directory for one sandbox's state file. */
function stateDirectory(): string {
  return mkdtempSync(join(tmpdir(), 'handoff-sandbox-'));
}

/** Writes the test's endpoints file into the sandbox's private directory; its variable, or none. */
function endpointsFileEnvironment(options: StartOptions, directory: string): Record<string, string> {
  if (options.endpoints === undefined) return {};
  const path = join(directory, 'endpoints.json');
  const text = typeof options.endpoints === 'string' ? options.endpoints : JSON.stringify({ endpoints: options.endpoints }, null, 2);
  writeFileSync(path, text, { mode: 0o600 });
  return { HANDOFF_ENDPOINTS_FILE: path };
}

/** Spawns the sandbox; nothing is awaited. For start-up failures, see `runSandboxToExit`. */
function spawnSandbox(options: StartOptions, stateFile: string, directory: string): ChildProcess {
  const env = {
    ...baseEnvironment(stateFile),
    ...endpointsFileEnvironment(options, directory),
    ...(options.endpointsCacheMs !== undefined ? { HANDOFF_ENDPOINTS_CACHE_MS: String(options.endpointsCacheMs) } : {}),
    ...options.env,
  };
  // Its own process group, so a forced stop can take the whole tree (sandbox, workers). The command
  // is the `npm start` script's (an `exec`, so the child is the sandbox itself), without npm's start-up.
  const spawnOptions: SpawnOptions = { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true };
  return spawn(process.execPath, ['--import', 'tsx', 'sandbox/main.ts'], spawnOptions);
}

export async function startSandboxProcess(options: StartOptions = {}): Promise<SandboxProcess> {
  const directory = stateDirectory();
  const stateFile = join(directory, 'sandbox.json');
  const child = spawnSandbox(options, stateFile, directory);
  const stderrLines: string[] = [];
  const live = new Set<number>();
  const watchers: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  let stateFileAtExit: boolean | undefined;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      // A sandbox stopped cleanly has removed its state file; a killed one has not. Seen, then the directory goes.
      stateFileAtExit = existsSync(stateFile);
      rmSync(directory, { recursive: true, force: true });
      resolve({ code, signal });
    }),
  );

  createInterface({ input: child.stderr! }).on('line', (line) => {
    stderrLines.push(line);
    const started = /^worker (\d+) started$/.exec(line);
    if (started) live.add(Number(started[1]));
    const ended = /^worker (\d+) exited/.exec(line);
    if (ended) live.delete(Number(ended[1]));
    for (const watcher of watchers.filter((w) => w.pattern.test(line))) {
      watchers.splice(watchers.indexOf(watcher), 1);
      watcher.resolve(line);
    }
  });

  const ready = await new Promise<SandboxReady>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no READY line within ${READY_TIMEOUT_MS} ms; stderr:\n${stderrLines.join('\n')}`));
    }, READY_TIMEOUT_MS);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('READY ')) return;
      clearTimeout(timer);
      resolve(JSON.parse(line.slice('READY '.length)) as SandboxReady);
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the sandbox exited before READY (${signal ?? `code ${code}`}); stderr:\n${stderrLines.join('\n')}`));
    });
  });

  return {
    ready,
    stateFile,
    child,
    livePids: () => [...live],
    stderr: () => stderrLines,
    waitForLog: (pattern, timeoutMs) => {
      const seen = stderrLines.find((line) => pattern.test(line));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const watcher = { pattern, resolve };
        watchers.push(watcher);
        setTimeout(() => {
          if (!watchers.includes(watcher)) return;
          watchers.splice(watchers.indexOf(watcher), 1);
          reject(new Error(`no stderr line matched ${pattern} within ${timeoutMs} ms; the last lines:\n${stderrLines.slice(-30).join('\n')}`));
        }, timeoutMs).unref();
      });
    },
    stateFileAtExit: () => stateFileAtExit,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        if (signal === 'SIGKILL') process.kill(-child.pid!, 'SIGKILL');
        else child.kill(signal);
      }
      return exited;
    },
  };
}

/** Runs the sandbox until it exits by itself (a start-up failure); returns its status and output. */
export async function runSandboxToExit(options: StartOptions = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const directory = stateDirectory();
  const child = spawnSandbox(options, join(directory, 'sandbox.json'), directory);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  rmSync(directory, { recursive: true, force: true });
  return { code, stdout, stderr };
}
