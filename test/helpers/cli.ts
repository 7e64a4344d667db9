/**
 * `handoff <args>` as an operator runs it against a sandbox: the installed command (bin/handoff.js)
 * in a process of its own, finding the sandbox by its state file, with none of the test process's
 * HANDOFF_ or AWS_ variables.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runHandoff(args: readonly string[], stateFile: string): Promise<CliRun> {
  return runHandoffWith(args, { HANDOFF_SANDBOX_FILE: stateFile });
}

/** `handoff <args>` with only `env` of the HANDOFF_ and AWS_ variables (a sandbox's state file, or a target on AWS). */
export function runHandoffWith(args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_')),
  );
  const child = spawn(process.execPath, [join(ROOT, 'bin/handoff.js'), ...args], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((done) => child.once('close', (code) => done({ code, stdout, stderr })));
}
