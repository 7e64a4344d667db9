/**
 * The soak's endpoint outage (docs/contract.md §12): one of the three endpoints goes down for a
 * stretch longer than its automatic-disabling threshold, the consumers disable it, its deliveries
 * park, and once it is back the soak enables it with `handoff endpoint enable`, as an operator
 * would, so that its parked deliveries are released. Kills go on throughout.
 *
 * The outage endpoint's settings are shortened so that this happens within a run: disabled after
 * `disableAfterSeconds` (60, the least lib/endpoints/endpoint.ts accepts) without an accepted
 * request and `disableAfterFailures` failed attempts. Its retry policy is longer than the soak's
 * (`retrySchedule`, `maxAttempts`): a delivery failing through the outage must not spend its whole
 * budget before the endpoint is disabled (it would die `exhausted`, not park).
 *
 * The outage begins with one 429 carrying `Retry-After: pauseSeconds` (the endpoint is paused: the
 * pause invariant is then checked over a stretch much longer than the registry's cache), then
 * answers 503 without `Retry-After` until it ends.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoDbEndpointRegistry } from '../../../lib/endpoints/dynamodb-registry';
import { noAcceptedSince } from '../../../lib/endpoints/health';
import type { SandboxClients } from '../sandbox-clients';
import type { SoakReceiver } from './receiver';

const ROOT = resolve(import.meta.dirname, '../../..');

export const OUTAGE = {
  /** The endpoint that goes down: every event of the carriers acme and zephyr. */
  endpoint: 'acme-ops',
  /** Its settings in the endpoints file. */
  settings: {
    autoDisable: true,
    /** The least lib/endpoints/endpoint.ts accepts. */
    disableAfterSeconds: 60,
    disableAfterFailures: 5,
    /** Waits long enough that a delivery spends at most about six attempts in 60 s of failures. */
    retrySchedule: [3, 10, 20],
    /** Room for the outage's failures, two planned faults and a few kills. */
    maxAttempts: 12,
  },
  /** The outage's first answer: a 429 with this Retry-After (s): longer than the registry grace, so the pause is checked. */
  pauseSeconds: 40,
  /** The outage begins once this share of the planned deliveries is final. */
  startAtFinalShare: 0.1,
  /** After the consumers disabled it, it stays down this long (ms), so deliveries park. */
  downAfterDisableMs: 20_000,
  /** Ends the outage anyway if the endpoint is not disabled within this (ms) of its start. */
  disableDeadlineMs: 240_000,
  /** How often the registry is read for the endpoint's state (ms). */
  pollMs: 500,
} as const;

/** One stretch during which the endpoint was disabled. Epoch ms. */
export interface DisabledInterval {
  /** stateChange.at of the disabling. */
  readonly at: number;
  readonly by: string;
  readonly reason: string;
  /** Since when it had accepted no request, as its health said when the disabling was seen. */
  readonly noAcceptedSince?: number;
  /** stateChange.at of the enabling that ended it (absent: still disabled at the end). */
  readonly until?: number;
}

/** What the outage did, as the soak saw it. Epoch ms. */
export interface OutageLog {
  readonly endpoint: string;
  /** The receiver went down. */
  startedAt?: number;
  /** The receiver came back. */
  endedAt?: number;
  readonly disabled: DisabledInterval[];
  /** Each `handoff endpoint enable` run: when, its exit status and the parked count it printed. */
  readonly enables: { at: number; code: number | null; parked: number | null }[];
  /** True once the outage is over and the endpoint is enabled. */
  settled: boolean;
}

export interface OutageControl {
  readonly log: OutageLog;
  /** Runs until `signal`: waits for `shouldStart`, takes the receiver down, enables after. */
  readonly done: Promise<void>;
}

/**
 * Drives the outage of `receiver` (the endpoint OUTAGE.endpoint): starts it when `shouldStart()`,
 * waits for the registry to show the endpoint disabled (by the consumers, never by the soak), keeps
 * it down OUTAGE.downAfterDisableMs more, brings it back and runs `handoff endpoint enable` against
 * the sandbox. Until `signal`, whenever the registry shows it disabled after that, enables it again
 * (and the log shows each disabling).
 */
export function driveOutage(options: {
  receiver: SoakReceiver;
  clients: SandboxClients;
  endpointsTable: string;
  stateFile: string;
  shouldStart: () => boolean;
  signal: AbortSignal;
  now?: () => number;
}): OutageControl {
  const { receiver, signal } = options;
  const now = options.now ?? Date.now;
  const name = OUTAGE.endpoint;
  const registry = new DynamoDbEndpointRegistry({ client: options.clients.dynamodb, tableName: options.endpointsTable });
  const log: OutageLog = { endpoint: name, disabled: [], enables: [], settled: false };
  const wait = async (ms: number) => {
    await sleep(ms, undefined, { signal }).catch(() => undefined);
    return !signal.aborted;
  };
  /** The endpoint's state now; a disabling not seen before is logged. */
  const observe = async (): Promise<'enabled' | 'disabled'> => {
    const record = await registry.get(name);
    if (record === undefined) throw new Error(`the soak's outage endpoint ${name} is not in the registry`);
    if (record.state === 'disabled') {
      const change = record.stateChange;
      const last = log.disabled.at(-1);
      if (change !== undefined && (last === undefined || last.until !== undefined) && change.at !== last?.at) {
        const since = record.health !== undefined ? noAcceptedSince(record.health) : undefined;
        log.disabled.push({ at: change.at, by: change.by, reason: change.reason, ...(since !== undefined ? { noAcceptedSince: since } : {}) });
      }
    }
    return record.state;
  };
  const enable = async () => {
    const result = await runHandoff(
      ['endpoint', 'enable', name, '--operator', 'soak', '--reason', 'the soak outage is over', '--json'],
      options.stateFile,
    );
    if (result.code !== 0) {
      log.enables.push({ at: now(), code: result.code, parked: null });
      throw new Error(`handoff endpoint enable ${name} failed (${result.code}): ${result.stderr.trim()}`);
    }
    const printed = JSON.parse(result.stdout) as { stateChange?: { at?: string | number }; parked?: number | null };
    log.enables.push({ at: now(), code: result.code, parked: typeof printed.parked === 'number' ? printed.parked : null });
    const at = printed.stateChange?.at;
    const enabledAt = typeof at === 'number' ? at : typeof at === 'string' ? Date.parse(at) : now();
    const open = log.disabled.at(-1);
    if (open !== undefined && open.until === undefined) log.disabled[log.disabled.length - 1] = { ...open, until: enabledAt };
  };

  const done = (async () => {
    while (!options.shouldStart()) if (!(await wait(OUTAGE.pollMs))) return;
    receiver.setOutage({ pauseSeconds: OUTAGE.pauseSeconds });
    log.startedAt = now();
    try {
      while ((await observe()) !== 'disabled' && now() - log.startedAt < OUTAGE.disableDeadlineMs) {
        if (!(await wait(OUTAGE.pollMs))) return;
      }
      if (log.disabled.length > 0 && !(await wait(OUTAGE.downAfterDisableMs))) return;
    } finally {
      receiver.setOutage(undefined);
      log.endedAt = now();
    }
    for (;;) {
      if ((await observe()) === 'disabled') await enable();
      log.settled = true;
      if (!(await wait(OUTAGE.pollMs * 2))) return;
    }
  })();
  return { log, done };
}

/**
 * Runs the `handoff` command (bin/handoff.js, the TypeScript sources through tsx) against the
 * sandbox whose state file is given, in an environment without HANDOFF_* or AWS_* settings.
 */
export function runHandoff(args: readonly string[], stateFile: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('HANDOFF_') && !key.startsWith('AWS_')));
  const child = spawn(process.execPath, [resolve(ROOT, 'bin/handoff.js'), ...args], {
    cwd: ROOT,
    env: { ...env, HANDOFF_SANDBOX_FILE: stateFile, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolvePromise, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
}
