/**
 * One soak run: a sandbox (the real consumer in worker processes), the planned receivers (one for
 * the single-URL settings, or three endpoints from an endpoints file, each with its own URL and
 * signing secret), the planned messages sent with plain SQS calls, and random SIGKILLs of worker
 * processes while it runs. It waits until every planned delivery's row is final and the queue is
 * empty (or the time is up), then judges the end state (./invariants.ts). Shared by `npm run soak`
 * and the short soak test.
 *
 * With `outage` (three endpoints only), one endpoint goes down long enough to be disabled, its
 * deliveries park, and it is enabled again once back (./outage.ts); the ledger is watched for
 * parked rows throughout.
 */
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { DeliveryRecord } from '../../../lib/ledger/ledger';
import { ownerPid, SandboxClients, type DeadLetter } from '../sandbox-clients';
import { startSandboxProcess, type SandboxProcess } from '../sandbox';
import { endpointFields, soakSecret, THREE_ENDPOINTS, THREE_ENDPOINTS_ONE_ORDERED, writeEndpointsFile } from './endpoints';
import { checkInvariants, type Invariant, type ParkedSighting } from './invariants';
import { driveOutage, OUTAGE, type OutageControl } from './outage';
import {
  deliveriesOf,
  deliveryKey,
  FORGED_SHARE,
  messagesOf,
  NUMBER_ATTRIBUTES,
  planSoak,
  random,
  REUSED_ID_SHARE,
  summarize,
  type AnswerKind,
  type PlannedConflict,
  type PlannedMessage,
} from './plan';
import { startSoakReceiver, type ReceiverCounts, type SoakReceiver } from './receiver';
import { lockFields, startTokenServer, tlsFixtures, TOKEN_REFRESH_MS, type TokenServer } from './locks';

/** `1`: the single-URL settings (`default`, every event). `3`: three endpoints (./endpoints.ts). */
export type EndpointMode = 1 | 3;
export const ENDPOINT_MODES: readonly EndpointMode[] = [1, 3];

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

/** How long the workers keep their copy of the endpoint registry (the sandbox's default, given explicitly). */
export const SOAK_ENDPOINTS_CACHE_MS = 1000;
/**
 * How long after a pause or a disabling an attempt may still start: a worker's copy of the registry
 * is at most SOAK_ENDPOINTS_CACHE_MS old, and a batch routed with it claims and sends within its
 * function timeout (the attempt timeout + 20 s, docs/contract.md §7), however slow the ledger is on
 * a busy machine. The invariants' details give the latest attempt seen after each.
 */
export const REGISTRY_GRACE_MS = SOAK_ENDPOINTS_CACHE_MS + Number(SOAK_SETTINGS.HANDOFF_ATTEMPT_TIMEOUT_MS) + 20_000;

export interface SoakOptions {
  readonly events: number;
  readonly seed: number;
  /** Default 1. */
  readonly endpoints?: EndpointMode;
  /** An endpoint outage (./outage.ts); needs three endpoints. */
  readonly outage?: boolean;
  /**
   * Ordering per shipment (docs/contract.md §13); needs three endpoints, not with an outage:
   * `acme-ops` is ordered per shipment (onDead continue), events come in shipments of
   * EVENTS_PER_SHIPMENT with one carrier each, every other shipment sent to the ordered (FIFO)
   * intake, and the ordering invariants are checked (./invariants.ts); with forged control attributes
   * and reused IDs among the producers' messages (FORGED_SHARE, REUSED_ID_SHARE), and their checks.
   */
  readonly ordered?: boolean;
  /**
   * Workers to kill, at random moments. Default: one per 100 events, at least 3; with an outage,
   * kills go on until the run ends (OUTAGE_KILL_INTERVAL_MS apart), through the outage and the release.
   */
  readonly kills?: number;
  /** Pause before each kill, drawn uniformly from this range (ms). */
  readonly killIntervalMs?: readonly [number, number];
  /** Overall bound; past it the run stops and reports what was still not final. */
  readonly timeoutMs?: number;
  readonly onProgress?: (progress: SoakProgress) => void;
  /** Writes the sandbox's every stderr line (the consumers' decisions, warnings, worker exits) to this file at the end. */
  readonly sandboxLogFile?: string;
}

export interface SoakProgress {
  readonly events: number;
  /** Planned (event, endpoint) deliveries. */
  readonly deliveries: number;
  readonly messages: number;
  readonly sent: number;
  /** Planned deliveries whose row is delivered or dead. */
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
  /** Deliveries the sandbox's recovery timer enqueued again or sent back from the redrive queue (stuck work, docs/contract.md §12). */
  readonly recoveredByTimer: number;
  readonly attempts: { readonly total: number; readonly max: number; readonly withoutOutcome: number };
  readonly outcomes: Readonly<Record<string, number>>;
  readonly receiver: { readonly requests: number; readonly absorbed: number; readonly answers: Readonly<Record<AnswerKind, number>> };
  /** Per endpoint: rows delivered and dead, requests and effects at its receiver. */
  readonly endpoints: readonly EndpointFigures[];
  readonly deadLetters: number;
  /** Of them, identity conflicts (`reason=identity-conflict`): with `ordered`, the reused IDs'. */
  readonly identityConflictLetters: number;
  readonly timedOut: boolean;
  /** The outage, when there was one. */
  readonly outage?: OutageFigures;
  /** The ordered endpoint, with `ordered`. */
  readonly ordering?: OrderingFigures;
}

export interface OrderingFigures {
  readonly endpoint: string;
  readonly rows: number;
  readonly delivered: number;
  readonly dead: number;
  /** Dead rows that passed their shipment's turn on (onDead continue: `releasedAt`). */
  readonly passedOn: number;
  readonly requests: number;
  /** Times a delivery arrived before its turn and was acknowledged waiting (the consumers' log). */
  readonly waited: number;
  /** Its pending deliveries the recovery timer enqueued again (of `recoveredByTimer`). */
  readonly recovered: number;
  /** Numbers given up by an identity conflict that a settling event then passed over (the consumers' warnings). */
  readonly passedOver: number;
}

/** The outage as it went. Times are ms from the run's start. */
export interface OutageFigures {
  readonly endpoint: string;
  readonly downAtMs?: number;
  readonly upAtMs?: number;
  /** Each disabling: when, by whom, why, and when the enable ended it. */
  readonly disabled: readonly { atMs: number; by: string; reason: string; untilMs?: number }[];
  /** `handoff endpoint enable` runs and the parked count each printed. */
  readonly enables: readonly { atMs: number; parked: number | null }[];
  /** The receiver's outage answers: the pausing 429 and the 503s. */
  readonly answers: { readonly pause: number; readonly unavailable: number };
  /** Deliveries seen parked in the ledger, and how many the consumers' log shows parked (distinct). */
  readonly parkedSeen: number;
  readonly parkedLogged: number;
  /** Releases the recovery timer logged. */
  readonly released: number;
  /** Holds of a paused endpoint's deliveries the consumers logged. */
  readonly heldByPause: number;
  /** Its deliveries: delivered and dead at the end. */
  readonly delivered: number;
  readonly dead: number;
}

export interface EndpointFigures {
  readonly name: string;
  readonly delivered: number;
  readonly dead: number;
  readonly requests: number;
  readonly effects: number;
  readonly absorbed: number;
}

export interface SoakReport {
  readonly seed: number;
  readonly endpointMode: EndpointMode;
  readonly outage: boolean;
  readonly ordered: boolean;
  readonly plan: ReturnType<typeof summarize>;
  readonly maxAttempts: number;
  readonly figures: SoakFigures;
  readonly invariants: readonly Invariant[];
  readonly ok: boolean;
}

/** With an outage, the pause before each kill (ms): kills go on throughout a run of several minutes. */
export const OUTAGE_KILL_INTERVAL_MS: readonly [number, number] = [8_000, 20_000];

/** Events per shipment with `ordered`. */
export const EVENTS_PER_SHIPMENT = 5;

export function defaultKills(events: number): number {
  return Math.max(3, Math.round(events / 100));
}

/**
 * Generous: the planned faults, 21 s leases after kills, and a machine shared with others; with an
 * outage, also the outage itself (up to its disable deadline and the stretch after), the release's
 * ramp and the outage endpoint's longer retry policy (its exhausting deliveries take 12 attempts).
 */
export function defaultTimeoutMs(events: number, outage = false): number {
  return 180_000 + events * 150 + (outage ? OUTAGE.disableDeadlineMs + OUTAGE.downAfterDisableMs + 300_000 : 0);
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const endpointMode = options.endpoints ?? 1;
  if (options.outage === true && endpointMode !== 3) throw new RangeError('an endpoint outage needs three endpoints (endpoints: 3)');
  const ordered = options.ordered === true;
  if (ordered && endpointMode !== 3) throw new RangeError('ordering per shipment needs three endpoints (endpoints: 3)');
  if (ordered && options.outage === true) throw new RangeError('ordering per shipment and an endpoint outage are separate runs');
  const plan = planSoak({
    events: options.events,
    seed: options.seed,
    ...(endpointMode === 3 ? { endpoints: ordered ? THREE_ENDPOINTS_ONE_ORDERED : THREE_ENDPOINTS } : {}),
    ...(ordered ? { eventsPerShipment: EVENTS_PER_SHIPMENT, forgedShare: FORGED_SHARE, reusedIdShare: REUSED_ID_SHARE } : {}),
  });
  const planned = deliveriesOf(plan);
  const plannedKeys = new Set(planned.map((d) => deliveryKey(d.eventId, d.endpoint)));
  const maxAttempts = Number(SOAK_SETTINGS.HANDOFF_MAX_ATTEMPTS);
  const receivers: SoakReceiver[] = [];
  let endpointsFile: { path: string; remove(): void } | undefined;
  let tokens: TokenServer | undefined;
  let sandbox: SandboxProcess | undefined;
  let clients: SandboxClients | undefined;
  const stopKilling = new AbortController();
  const stopOutage = new AbortController();
  try {
    let endpointEnv: Record<string, string>;
    if (plan.endpoints === undefined) {
      receivers.push(await startSoakReceiver(plan));
      endpointEnv = { HANDOFF_WEBHOOK_URL: receivers[0]!.url };
    } else {
      const fields = [];
      // Receivers behind locks (docs/contract.md §18): one takes only the token server's tokens, one only the test CA's client certificate.
      tokens = await startTokenServer();
      const locks = { tokens, tls: tlsFixtures() };
      for (const endpoint of plan.endpoints) {
        const secret = soakSecret();
        const { lock } = endpoint;
        const receiver = await startSoakReceiver(plan, {
          endpoint: endpoint.name,
          secret,
          ordered: endpoint.ordered === true,
          ...(lock === 'oauth2' ? { authorize: tokens.accepts } : {}),
          ...(lock === 'mtls' ? { tls: { certificate: locks.tls.serverCertificate, key: locks.tls.serverKey, ca: locks.tls.ca } } : {}),
        });
        receivers.push(receiver);
        const down = options.outage === true && endpoint.name === OUTAGE.endpoint;
        fields.push(endpointFields(endpoint, receiver.url, secret, { ...(down ? OUTAGE.settings : {}), ...(lock !== undefined ? lockFields(lock, locks) : {}) }));
      }
      endpointsFile = writeEndpointsFile(fields);
      endpointEnv = { HANDOFF_ENDPOINTS_FILE: endpointsFile.path };
    }
    const sandboxStartedAt = Date.now();
    sandbox = await startSandboxProcess({ env: { ...SOAK_SETTINGS, ...endpointEnv }, endpointsCacheMs: SOAK_ENDPOINTS_CACHE_MS });
    clients = new SandboxClients(sandbox.ready);
    const startedAt = Date.now();
    const deadline = startedAt + (options.timeoutMs ?? defaultTimeoutMs(options.events, options.outage === true));
    const progress = {
      events: plan.events.length,
      deliveries: planned.length,
      messages: plan.sendOrder.length,
      sent: 0,
      final: 0,
      kills: 0,
    };
    const report = () => options.onProgress?.({ ...progress });

    // A failed send ends the run (below), not the process: the sandbox is stopped on the way out.
    let sendError: unknown;
    const messages = messagesOf(plan);
    const orderedQueueUrl = sandbox.ready.orderedQueueUrl;
    const sending = (async () => {
      for (let start = 0; start < messages.length; start += 10) {
        const chunk = messages.slice(start, start + 10);
        // A reused ID goes only once its original holds a row at each endpoint: sent sooner (SQS
        // does not keep the standard queue's order), it could be admitted first and the original
        // become the conflict.
        for (const { conflict } of chunk) if (conflict !== undefined) await untilAdmitted(clients!, conflict, deadline);
        // The ordered intake's in the order planned, one batch (a group's order within it is kept).
        const fifo = chunk.filter((message) => message.intake === 'ordered');
        const standard = chunk.filter((message) => message.intake !== 'ordered');
        if (standard.length > 0) await sendBatch(clients!, clients!.ready.queueUrl, standard);
        if (fifo.length > 0) await sendBatch(clients!, orderedQueueUrl, fifo);
        progress.sent += chunk.length;
      }
    })().catch((error: unknown) => {
      sendError = error;
    });
    const killing = killWorkers(sandbox, clients, {
      kills: options.kills ?? (options.outage === true ? Number.POSITIVE_INFINITY : defaultKills(options.events)),
      intervalMs: options.killIntervalMs ?? (options.outage === true ? OUTAGE_KILL_INTERVAL_MS : [1_000, 4_000]),
      next: random(options.seed + 1),
      signal: stopKilling.signal,
      onKill: () => {
        progress.kills += 1;
        report();
      },
    });

    let outage: OutageControl | undefined;
    let outageError: unknown;
    if (options.outage === true) {
      const down = receivers[plan.endpoints!.findIndex((e) => e.name === OUTAGE.endpoint)]!;
      outage = driveOutage({
        receiver: down,
        clients,
        endpointsTable: sandbox.ready.endpointsTable,
        stateFile: sandbox.stateFile,
        shouldStart: () => progress.final >= OUTAGE.startAtFinalShare * planned.length,
        signal: stopOutage.signal,
      });
      outage.done.catch((error: unknown) => {
        outageError = error;
      });
    }
    /** Rows seen parked, with their marker and the last scan that still showed it. */
    const parked = new Map<string, ParkedSighting>();

    let timedOut = false;
    const minPollMs = options.events > 5_000 ? 3_000 : 1_000;
    for (;;) {
      // Settled planned deliveries, counted from a scan: the metric sink's total can miss a killed
      // worker's flush. A scan of a large ledger takes the emulator a while: poll no more than a
      // third of the time.
      const scanStartedAt = Date.now();
      const rows = await clients.scanLedger();
      const scanMs = Date.now() - scanStartedAt;
      for (const row of rows) {
        if (row.parkedAt === undefined) continue;
        const key = deliveryKey(row.eventId, row.endpoint);
        const seen = parked.get(key);
        // Seen parked by a scan that began at scanStartedAt: it was parked then or later.
        if (seen === undefined || seen.parkedAt !== row.parkedAt) parked.set(key, { parkedAt: row.parkedAt, lastSeenAt: Math.max(row.parkedAt, scanStartedAt) });
        else parked.set(key, { parkedAt: seen.parkedAt, lastSeenAt: Math.max(seen.lastSeenAt, scanStartedAt) });
      }
      progress.final = rows.filter((row) => row.state !== 'pending' && plannedKeys.has(deliveryKey(row.eventId, row.endpoint))).length;
      report();
      if (sendError !== undefined) {
        throw new Error(`sending the planned messages failed after ${progress.sent} of ${plan.sendOrder.length}`, { cause: sendError });
      }
      if (outageError !== undefined) throw new Error('the endpoint outage failed', { cause: outageError });
      if (progress.sent === plan.sendOrder.length && progress.final >= planned.length && (outage === undefined || outage.log.settled)) {
        if ((await clients.queueDepth()) + (ordered ? await clients.queueDepth(orderedQueueUrl) : 0) === 0) break;
      }
      if (Date.now() > deadline) {
        timedOut = true;
        break;
      }
      await sleep(Math.max(minPollMs, 2 * scanMs));
    }
    stopKilling.abort();
    stopOutage.abort();
    await Promise.all([sending, killing, outage?.done.catch(() => undefined)]);
    const durationMs = Date.now() - startedAt;

    const [rows, deadLetters, queueDepth, orderedDepth] = await Promise.all([
      clients.scanLedger(),
      clients.readDeadLetters(),
      clients.queueDepth(),
      ordered ? clients.queueDepth(orderedQueueUrl) : Promise.resolve(0),
    ]);
    const counts = receivers.map((receiver) => receiver.counts());
    const endAt = Date.now();
    // Each worker process keeps its own token (one sender per endpoint per container), fetched again every TOKEN_REFRESH_MS.
    const workersStarted = sandbox.stderr().filter((line) => /^worker \d+ started$/.test(line)).length;
    const tokenBound = workersStarted * (Math.floor((endAt - sandboxStartedAt) / TOKEN_REFRESH_MS) + 1);
    const invariants = checkInvariants(plan, {
      rows,
      deadLetters,
      receivers: counts,
      queueDepth: queueDepth + orderedDepth,
      maxAttempts,
      registryGraceMs: REGISTRY_GRACE_MS,
      ...(tokens !== undefined ? { tokens: { fetches: tokens.fetches(), refusals: tokens.refusals(), bound: tokenBound } } : {}),
      ...(outage !== undefined
        ? {
            outage: {
              endpoint: outage.log.endpoint,
              ...(outage.log.startedAt !== undefined ? { startedAt: outage.log.startedAt } : {}),
              ...(outage.log.endedAt !== undefined ? { endedAt: outage.log.endedAt } : {}),
              disabled: outage.log.disabled,
              endAt,
              parked,
            },
          }
        : {}),
    });
    const base = figures({ rows, counts, sandbox, durationMs, progress, deadLetters, timedOut });
    const withOrdering = ordered ? { ...base, ordering: orderingFigures(rows, counts, sandbox, plan.endpoints ?? []) } : base;
    return {
      seed: options.seed,
      endpointMode,
      outage: outage !== undefined,
      ordered,
      plan: summarize(plan),
      maxAttempts,
      figures: outage === undefined ? withOrdering : { ...base, outage: outageFigures(outage, { rows, counts, sandbox, startedAt, parked }) },
      invariants,
      ok: invariants.every((invariant) => invariant.violations === 0),
    };
  } finally {
    stopKilling.abort();
    stopOutage.abort();
    clients?.close();
    if (sandbox !== undefined && options.sandboxLogFile !== undefined) writeFileSync(options.sandboxLogFile, `${sandbox.stderr().join('\n')}\n`);
    await sandbox?.stop('SIGKILL');
    for (const receiver of receivers) await receiver.close();
    await tokens?.close();
    endpointsFile?.remove();
  }
}

/**
 * Sends up to ten planned messages in one `SendMessageBatch`, with any unsealed control attributes
 * they carry; to the ordered intake (FIFO) with their group and deduplication ID, in this order.
 */
async function sendBatch(clients: SandboxClients, queueUrl: string, messages: readonly PlannedMessage[]): Promise<void> {
  const { Failed = [] } = await clients.sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((message, i) => ({
        Id: String(i),
        MessageBody: message.body,
        ...(message.groupId !== undefined ? { MessageGroupId: message.groupId, MessageDeduplicationId: message.deduplicationId } : {}),
        ...(message.attributes !== undefined
          ? {
              MessageAttributes: Object.fromEntries(
                Object.entries(message.attributes).map(([name, value]) => [name, { DataType: NUMBER_ATTRIBUTES.has(name) ? 'Number' : 'String', StringValue: value }]),
              ),
            }
          : {}),
      })),
    }),
  );
  if (Failed.length > 0) throw new Error(`SendMessageBatch to ${queueUrl} refused ${Failed.length} message(s): ${Failed[0]?.Code} ${Failed[0]?.Message ?? ''}`);
}

/** Waits until the reused ID's original has a row at each of its endpoints. @throws past the run's deadline */
async function untilAdmitted(clients: SandboxClients, conflict: PlannedConflict, deadline: number): Promise<void> {
  for (;;) {
    const rows = await Promise.all(conflict.endpoints.map((endpoint) => clients.row(conflict.eventId, endpoint)));
    if (rows.every((row) => row !== undefined)) return;
    if (Date.now() > deadline) {
      throw new Error(`${conflict.eventId} (shipment ${conflict.originalShipmentId}) has no row at ${conflict.endpoints.filter((_, i) => rows[i] === undefined).join(', ')}: its ID's reuse was not sent`);
    }
    await sleep(250);
  }
}

/** The ordered endpoint's run in numbers: requests seen, events that waited for their turn (the consumers' log). */
function orderingFigures(
  rows: readonly DeliveryRecord[],
  counts: readonly ReceiverCounts[],
  sandbox: SandboxProcess,
  endpoints: readonly { name: string; ordered?: boolean }[],
): OrderingFigures {
  const endpoint = endpoints.find((e) => e.ordered === true)?.name ?? '?';
  const mine = rows.filter((row) => row.endpoint === endpoint);
  const log = counts.find((c) => c.endpoint === endpoint)?.log ?? [];
  const lines = sandbox.stderr();
  return {
    endpoint,
    rows: mine.length,
    delivered: mine.filter((row) => row.state === 'delivered').length,
    dead: mine.filter((row) => row.state === 'dead').length,
    passedOn: mine.filter((row) => row.state === 'dead' && row.releasedAt !== undefined).length,
    requests: log.length,
    waited: lines.filter((line) => line.endsWith(`→ ${endpoint} ack (waiting)`) || line.includes(`→ ${endpoint} waiting (sequence `)).length,
    recovered: lines.filter((line) => line.includes(`→ ${endpoint} enqueued again (pending`) || line.includes(`→ ${endpoint} sent back to the queue`)).length,
    passedOver: lines.filter((line) => line.includes('number given up: its turn is passed on') && line.includes(`"endpoint":"${endpoint}"`)).length,
  };
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
  counts: readonly ReceiverCounts[];
  sandbox: SandboxProcess;
  durationMs: number;
  progress: { sent: number; kills: number };
  deadLetters: readonly DeadLetter[];
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
    recoveredByTimer: log.filter((line) => / enqueued again \(pending| sent back to the queue \(redriven/.test(line)).length,
    attempts: {
      total: rows.reduce((sum, row) => sum + row.attempts, 0),
      max: Math.max(0, ...rows.map((row) => row.attempts)),
      withoutOutcome: rows.reduce((sum, row) => sum + Math.max(0, row.attempts - row.history.length), 0),
    },
    outcomes,
    receiver: {
      requests: counts.reduce((sum, c) => sum + c.requests, 0),
      absorbed: counts.reduce((sum, c) => sum + c.absorbed, 0),
      answers: sumAnswers(counts),
    },
    endpoints: counts.map((c) => ({
      name: c.endpoint,
      delivered: rows.filter((row) => row.endpoint === c.endpoint && row.state === 'delivered').length,
      dead: rows.filter((row) => row.endpoint === c.endpoint && row.state === 'dead').length,
      requests: c.requests,
      effects: c.effects.size,
      absorbed: c.absorbed,
    })),
    deadLetters: input.deadLetters.length,
    identityConflictLetters: input.deadLetters.filter((letter) => letter.reason === 'identity-conflict').length,
    timedOut: input.timedOut,
  };
}

function outageFigures(
  outage: OutageControl,
  input: {
    rows: readonly DeliveryRecord[];
    counts: readonly ReceiverCounts[];
    sandbox: SandboxProcess;
    startedAt: number;
    parked: ReadonlyMap<string, ParkedSighting>;
  },
): OutageFigures {
  const { log } = outage;
  const since = (ms: number) => ms - input.startedAt;
  const lines = input.sandbox.stderr();
  const endpoint = log.endpoint;
  const parkedLogged = new Set<string>();
  let released = 0;
  let heldByPause = 0;
  for (const line of lines) {
    const parkedLine = / → (\S+) ack \(parked\)$/.exec(line);
    if (parkedLine?.[1] === endpoint) parkedLogged.add(line.slice(0, line.indexOf(' → ')));
    if (line.endsWith(`→ ${endpoint} released (was parked)`)) released += 1;
    if (line.includes(`→ ${endpoint} retry in`) && line.endsWith('(paused)')) heldByPause += 1;
  }
  const mine = input.rows.filter((row) => row.endpoint === endpoint);
  return {
    endpoint,
    ...(log.startedAt !== undefined ? { downAtMs: since(log.startedAt) } : {}),
    ...(log.endedAt !== undefined ? { upAtMs: since(log.endedAt) } : {}),
    disabled: log.disabled.map((d) => ({ atMs: since(d.at), by: d.by, reason: d.reason, ...(d.until !== undefined ? { untilMs: since(d.until) } : {}) })),
    enables: log.enables.map((e) => ({ atMs: since(e.at), parked: e.parked })),
    answers: input.counts.find((c) => c.endpoint === endpoint)?.outageAnswers ?? { pause: 0, unavailable: 0 },
    parkedSeen: input.parked.size,
    parkedLogged: parkedLogged.size,
    released,
    heldByPause,
    delivered: mine.filter((row) => row.state === 'delivered').length,
    dead: mine.filter((row) => row.state === 'dead').length,
  };
}

function sumAnswers(counts: readonly ReceiverCounts[]): Record<AnswerKind, number> {
  const total = {} as Record<AnswerKind, number>;
  for (const c of counts) {
    for (const [kind, n] of Object.entries(c.answers) as [AnswerKind, number][]) total[kind] = (total[kind] ?? 0) + n;
  }
  return total;
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
  const three = report.endpointMode === 3;
  const lines = [
    `handoff soak: ${plan.events} events, ${three ? `${plan.endpoints.length} endpoints` : 'one endpoint (default)'}${report.outage ? `, an outage of ${f.outage?.endpoint ?? '?'}` : ''}${report.ordered ? `, ${f.ordering?.endpoint ?? '?'} ordered per shipment` : ''}, seed ${report.seed}`,
    '',
    ...(three
      ? [
          `  routing      ${plan.deliveries} deliveries; events to 0/1/2/3 endpoints: ${plan.fanOut.join(' / ')}`,
        ]
      : []),
    `  plan         ${plan.deliver} to deliver (${plan.withFaults} after faults), ${plan.reject} to reject, ${plan.exhaust} to exhaust`,
    `  sent         ${f.messagesSent} messages (${plan.duplicates} duplicate SendMessage${plan.forged + plan.conflicts > 0 ? `, ${plan.forged} forged, ${plan.conflicts} reusing an ID` : ''})`,
    `  duration     ${seconds.toFixed(1)} s (${(plan.events / seconds).toFixed(1)} events/s, ${(plan.deliveries / seconds).toFixed(1)} deliveries/s)${f.timedOut ? '  TIMED OUT' : ''}`,
    `  kills        ${f.killsIssued} SIGKILLs; ${f.workersKilled} workers died by SIGKILL; ${f.messagesReturnedByKills} messages came back with their batch`,
    `  recovery     ${f.recoveredByTimer} deliveries enqueued again or sent back from the redrive queue by the recovery timer`,
    `  attempts     ${f.attempts.total} in all (budget ${report.maxAttempts} per delivery, max used ${f.attempts.max}); ${f.attempts.withoutOutcome} ended by a crash`,
    `  outcomes     ${outcomes}`,
    `  receiver     ${f.receiver.requests} requests; ${f.receiver.absorbed} repeat commits absorbed by the idempotency key`,
    `  answers      ${answers}`,
    `  dead letters ${f.deadLetters}`,
  ];
  if (three) {
    lines.push('', '  endpoint     planned (deliver/reject/exhaust)   delivered   dead   requests   applied   absorbed');
    for (const e of f.endpoints) {
      const p = plan.endpoints.find((pe) => pe.name === e.name);
      const planned = p ? `${p.deliveries} (${p.deliver}/${p.reject}/${p.exhaust})` : '-';
      lines.push(
        `  ${e.name.padEnd(12)} ${planned.padEnd(34)} ${String(e.delivered).padStart(9)} ${String(e.dead).padStart(6)} ` +
          `${String(e.requests).padStart(10)} ${String(e.effects).padStart(9)} ${String(e.absorbed).padStart(10)}`,
      );
    }
  }
  if (f.ordering !== undefined) {
    const o = f.ordering;
    lines.push(
      '',
      `  shipments    ${plan.shipments} of up to ${EVENTS_PER_SHIPMENT} events; ${plan.orderedIntake} events sent to the ordered (FIFO) intake, the rest to the standard one`,
      `  ordered      ${o.endpoint}: ${o.rows} rows, ${o.delivered} delivered, ${o.dead} dead (${o.passedOn} passed their turn on); ${o.requests} requests; ${o.waited} acknowledged waiting for their turn, ${o.recovered} enqueued again by the recovery timer (log)`,
    );
  }
  if (plan.forged + plan.conflicts > 0) {
    const kinds = Object.entries(plan.forgedByKind)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ');
    lines.push(
      `  forged       ${plan.forged} producer messages with unsealed control attributes (${kinds}); ${plan.forgedToOrderedIntake} of them to the ordered intake`,
      `  reused IDs   ${plan.conflicts} messages reusing an earlier shipment's event ID for another shipment; ${plan.conflictLetters} identity-conflict dead letters expected, ${f.identityConflictLetters} found; ` +
        `${f.ordering?.passedOver ?? 0} given-up numbers passed over (log)`,
    );
  }
  if (f.outage !== undefined) {
    const o = f.outage;
    const s = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);
    lines.push(
      '',
      `  outage       ${o.endpoint} down at ${s(o.downAtMs)}, back at ${s(o.upAtMs)}; answered 429 x ${o.answers.pause}, 503 x ${o.answers.unavailable}`,
      ...o.disabled.map((d, i) => `  disabled #${i + 1}  at ${s(d.atMs)} by ${d.by} (${d.reason}); enabled at ${s(d.untilMs)}`),
      `  enable       ${o.enables.map((e) => `at ${s(e.atMs)} (parked ${e.parked ?? '?'})`).join(', ') || 'never run'}`,
      `  parked       ${o.parkedSeen} deliveries seen parked in the ledger; ${o.parkedLogged} parked by the consumers (log); ${o.released} released by the recovery timer`,
      `  paused       ${o.heldByPause} deliveries held by a pause (log)`,
      `  ${o.endpoint.padEnd(12)} ${o.delivered} delivered, ${o.dead} dead`,
    );
  }
  const width = Math.max(...report.invariants.map((invariant) => invariant.name.length));
  lines.push('', `       ${'invariant'.padEnd(width)} found`);
  for (const invariant of report.invariants) {
    const mark = invariant.violations === 0 ? 'ok  ' : 'FAIL';
    lines.push(`  ${mark} ${invariant.name.padEnd(width)} ${String(invariant.violations).padStart(5)}   ${invariant.detail}`);
    for (const example of invariant.examples) lines.push(`         ${example}`);
  }
  lines.push('', report.ok ? 'all invariants hold' : 'INVARIANTS BROKEN');
  return lines.join('\n');
}
