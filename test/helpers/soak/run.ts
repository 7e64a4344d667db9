/**
 * One soak run: a sandbox (the real consumer in worker processes), the planned receiver, the
 * planned messages sent with plain SQS calls, and random SIGKILLs of worker processes while it
 * runs. It waits until every event's row is final and the queue is empty (or the time is up),
 * then judges the end state (./invariants.ts). Shared by `npm run soak` and the short soak test.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DeliveryRecord } from '../../../lib/ledger/ledger';
import { ownerPid, SandboxClients } from '../sandbox-clients';
import { startSandboxProcess, type SandboxProcess } from '../sandbox';
import { checkInvariants, type Invariant } from './invariants';
import { planSoak, random, summarize, type AnswerKind } from './plan';
import { startSoakReceiver, type ReceiverCounts } from './receiver';

/**
 * Shortened for a run that ends: waits of 1, 1, 2 s, six attempts (room for two planned faults
 * and several crashes), 1 s attempts (so a 21 s lease), and a 10 s visibility timeout: a
 * message that a killed worker held comes back, meets the live lease and waits for it to lapse.
 */
export const SOAK_SETTINGS = {
  HANDOFF_RETRY_SCHEDULE: '1,1,2',
  HANDOFF_MAX_ATTEMPTS: '6',
  HANDOFF_ATTEMPT_TIMEOUT_MS: '1000',
  HANDOFF_VISIBILITY_TIMEOUT_SECONDS: '10',
  HANDOFF_BATCH_SIZE: '10',
  HANDOFF_MAX_CONCURRENCY: '5',
} as const;

export interface SoakOptions {
  readonly events: number;
  readonly seed: number;
  /** Workers to kill, at random moments. Default: one per 100 events, at least 3. */
  readonly kills?: number;
  /** Pause before each kill, drawn uniformly from this range (ms). */
  readonly killIntervalMs?: readonly [number, number];
  /** Overall bound; past it the run stops and reports what was still not final. */
  readonly timeoutMs?: number;
  readonly onProgress?: (progress: SoakProgress) => void;
}

export interface SoakProgress {
  readonly events: number;
  readonly messages: number;
  readonly sent: number;
  /** Events whose row is delivered or dead. */
  readonly final: number;
  readonly kills: number;
}

export interface SoakFigures {
  readonly durationMs: number;
  readonly messagesSent: number;
  readonly killsIssued: number;
  /** Workers that exited by SIGKILL (the kills, including those that found a worker idle). */
  readonly workersKilled: number;
  /** Messages whose batch died with its worker and came back through the queue. */
  readonly messagesReturnedByKills: number;
  readonly attempts: { readonly total: number; readonly max: number; readonly withoutOutcome: number };
  readonly outcomes: Readonly<Record<string, number>>;
  readonly receiver: { readonly requests: number; readonly absorbed: number; readonly answers: Readonly<Record<AnswerKind, number>> };
  readonly deadLetters: number;
  readonly timedOut: boolean;
}

export interface SoakReport {
  readonly seed: number;
  readonly plan: ReturnType<typeof summarize>;
  readonly maxAttempts: number;
  readonly figures: SoakFigures;
  readonly invariants: readonly Invariant[];
  readonly ok: boolean;
}

export function defaultKills(events: number): number {
  return Math.max(3, Math.round(events / 100));
}

/** Generous: the planned faults, 21 s leases after kills, and a machine shared with others. */
export function defaultTimeoutMs(events: number): number {
  return 180_000 + events * 150;
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const plan = planSoak({ events: options.events, seed: options.seed });
  const maxAttempts = Number(SOAK_SETTINGS.HANDOFF_MAX_ATTEMPTS);
  const receiver = await startSoakReceiver(plan);
  let sandbox: SandboxProcess | undefined;
  let clients: SandboxClients | undefined;
  const stopKilling = new AbortController();
  try {
    sandbox = await startSandboxProcess({ env: { ...SOAK_SETTINGS, HANDOFF_WEBHOOK_URL: receiver.url } });
    clients = new SandboxClients(sandbox.ready);
    const startedAt = Date.now();
    const deadline = startedAt + (options.timeoutMs ?? defaultTimeoutMs(options.events));
    const progress = { events: plan.events.length, messages: plan.sendOrder.length, sent: 0, final: 0, kills: 0 };
    const report = () => options.onProgress?.({ ...progress });

    const sending = (async () => {
      for (let start = 0; start < plan.sendOrder.length; start += 10) {
        const chunk = plan.sendOrder.slice(start, start + 10);
        await clients!.sendAll(chunk);
        progress.sent += chunk.length;
      }
    })();
    const killing = killWorkers(sandbox, clients, {
      kills: options.kills ?? defaultKills(options.events),
      intervalMs: options.killIntervalMs ?? [1_000, 4_000],
      next: random(options.seed + 1),
      signal: stopKilling.signal,
      onKill: () => {
        progress.kills += 1;
        report();
      },
    });

    let timedOut = false;
    const pollMs = options.events > 5_000 ? 3_000 : 1_000;
    for (;;) {
      // Settled rows, counted from a scan: the metric sink's total can miss a killed worker's flush.
      progress.final = (await clients.scanLedger()).filter((row) => row.state !== 'pending').length;
      report();
      if (progress.sent === plan.sendOrder.length && progress.final >= plan.events.length) {
        if ((await clients.queueDepth()) === 0) break;
      }
      if (Date.now() > deadline) {
        timedOut = true;
        break;
      }
      await sleep(pollMs);
    }
    stopKilling.abort();
    await Promise.all([sending, killing]);
    const durationMs = Date.now() - startedAt;

    const [rows, deadLetters, queueDepth] = await Promise.all([
      clients.scanLedger(),
      clients.readDeadLetters(),
      clients.queueDepth(),
    ]);
    const counts = receiver.counts();
    const invariants = checkInvariants(plan, { rows, deadLetters, receiver: counts, queueDepth, maxAttempts });
    return {
      seed: options.seed,
      plan: summarize(plan),
      maxAttempts,
      figures: figures({ rows, counts, sandbox, durationMs, progress, deadLetters: deadLetters.length, timedOut }),
      invariants,
      ok: invariants.every((invariant) => invariant.violations === 0),
    };
  } finally {
    stopKilling.abort();
    clients?.close();
    await sandbox?.stop('SIGKILL');
    await receiver.close();
  }
}

/**
 * After each random pause, SIGKILLs a random worker among those holding a lease (mid-attempt,
 * as the ledger shows), or any live worker when none does; until `kills` or the signal.
 */
async function killWorkers(
  sandbox: SandboxProcess,
  clients: SandboxClients,
  options: {
    kills: number;
    intervalMs: readonly [number, number];
    next: () => number;
    signal: AbortSignal;
    onKill: () => void;
  },
): Promise<void> {
  const [min, max] = options.intervalMs;
  let kills = 0;
  while (kills < options.kills) {
    try {
      await sleep(min + options.next() * (max - min), undefined, { signal: options.signal });
    } catch {
      return; // the run is over
    }
    const live = sandbox.livePids();
    const holding = new Set((await clients.leaseOwners(Date.now()).catch(() => [])).map(ownerPid));
    const busy = live.filter((pid) => holding.has(pid));
    const pids = busy.length > 0 ? busy : live;
    if (pids.length === 0) continue;
    const pid = pids[Math.floor(options.next() * pids.length)]!;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      continue; // it exited between the listing and the kill
    }
    kills += 1;
    options.onKill();
  }
}

function figures(input: {
  rows: readonly DeliveryRecord[];
  counts: ReceiverCounts;
  sandbox: SandboxProcess;
  durationMs: number;
  progress: { sent: number; kills: number };
  deadLetters: number;
  timedOut: boolean;
}): SoakFigures {
  const { rows, counts, sandbox } = input;
  const log = sandbox.stderr();
  const outcomes: Record<string, number> = {};
  for (const entry of rows.flatMap((row) => row.history)) outcomes[entry.outcome] = (outcomes[entry.outcome] ?? 0) + 1;
  let returned = 0;
  for (const line of log) {
    const match = /^poller: batch of (\d+) failed as a whole \(the worker died/.exec(line);
    if (match) returned += Number(match[1]);
  }
  return {
    durationMs: input.durationMs,
    messagesSent: input.progress.sent,
    killsIssued: input.progress.kills,
    workersKilled: log.filter((line) => /^worker \d+ exited \(SIGKILL\)$/.test(line)).length,
    messagesReturnedByKills: returned,
    attempts: {
      total: rows.reduce((sum, row) => sum + row.attempts, 0),
      max: Math.max(0, ...rows.map((row) => row.attempts)),
      withoutOutcome: rows.reduce((sum, row) => sum + Math.max(0, row.attempts - row.history.length), 0),
    },
    outcomes,
    receiver: { requests: counts.requests, absorbed: counts.absorbed, answers: counts.answers },
    deadLetters: input.deadLetters,
    timedOut: input.timedOut,
  };
}

/** The report as a terminal table: the figures, then one line per invariant. */
export function formatReport(report: SoakReport): string {
  const { plan, figures: f } = report;
  const seconds = f.durationMs / 1000;
  const answers = Object.entries(f.receiver.answers)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  const outcomes = Object.entries(f.outcomes)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  const lines = [
    `handoff soak: ${plan.events} events, seed ${report.seed}`,
    '',
    `  plan         ${plan.deliver} to deliver (${plan.withFaults} after faults), ${plan.reject} to reject, ${plan.exhaust} to exhaust`,
    `  sent         ${f.messagesSent} messages (${plan.duplicates} duplicate SendMessage)`,
    `  duration     ${seconds.toFixed(1)} s (${(plan.events / seconds).toFixed(1)} events/s)${f.timedOut ? '  TIMED OUT' : ''}`,
    `  kills        ${f.killsIssued} SIGKILLs; ${f.workersKilled} workers died by SIGKILL; ${f.messagesReturnedByKills} messages came back with their batch`,
    `  attempts     ${f.attempts.total} in all (budget ${report.maxAttempts} per event, max used ${f.attempts.max}); ${f.attempts.withoutOutcome} ended by a crash`,
    `  outcomes     ${outcomes}`,
    `  receiver     ${f.receiver.requests} requests; ${f.receiver.absorbed} repeat commits absorbed by the idempotency key`,
    `  answers      ${answers}`,
    `  dead letters ${f.deadLetters}`,
    '',
    '  invariant                                                  found  ',
  ];
  for (const invariant of report.invariants) {
    const mark = invariant.violations === 0 ? 'ok  ' : 'FAIL';
    lines.push(`  ${mark} ${invariant.name.padEnd(55)} ${String(invariant.violations).padStart(5)}   ${invariant.detail}`);
    for (const example of invariant.examples) lines.push(`         ${example}`);
  }
  lines.push('', report.ok ? 'all invariants hold' : 'INVARIANTS BROKEN');
  return lines.join('\n');
}
