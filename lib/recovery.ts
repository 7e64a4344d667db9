/**
 * Stuck-work recovery (docs/contract.md §12 "Stuck work"): puts back on the queue the pending
 * deliveries no queue message will bring back. Run by a scheduled function in AWS
 * (functions/recovery.ts) and by a timer in the sandbox (sandbox/recovery-timer.ts), the same code.
 *
 * How a pending delivery loses its message, and where recovery finds it:
 * - SQS's own redrive: the consumer kept failing on the message (before it could decide)
 *   `maxReceiveCount` times, and SQS moved it to the redrive queue (`sendBackRedriven`). A delivery
 *   between attempts is in no listing: its message is the only thing that brings it back, so the
 *   redrive queue is where a lost one is, whether it was in its first attempt or its fifth;
 * - a message handoff sent itself that did not arrive: a replay whose enqueue failed
 *   (lib/replay.ts `ReplayEnqueueError`), a release from parking (lib/resume.ts) interrupted between
 *   its ledger write and its send. Such rows are in the `pending` listing (docs/contract.md §5),
 *   which `recoverStuck` reads, never the table.
 * Not found: a message deleted by hand (or a purged queue). Its row stays pending until it expires;
 * sending the event again puts it back (the ledger takes it as the same event).
 *
 * The redrive queue. Each message is sent back to the delivery queue as it was (body and
 * attributes, but for a reserved request slot, which was its first receive's), counting
 * `recoveries`: the claim decides what it finds (a settled row acknowledges it; a row never claimed
 * is claimed as new; a live lease or a wait holds it). A message redriven MAX_RECOVERIES times over
 * is not sent back again: it goes to the dead-letter queue without a `reason` (the consumer kept
 * failing on it), its `recoveries` attribute saying how often it came back. Two runs at once receive
 * different messages (SQS hides a received one), and a copy sent twice is one more message the
 * claim answers.
 *
 * The pending listing. Which rows it enqueues ("stranded"): pending, holding an event, no live
 * lease, and quiet for longer than the grace. A row's message, if it has one, is back on the queue by the latest of:
 * - its due time (`nextAttemptAt`: the consumer set the message's visibility to that wait);
 * - its last attempt's start plus the visibility timeout (the consumer's ChangeMessageVisibility
 *   failed, or the worker died: the message returns one visibility timeout after its receive, and
 *   the receive came before the attempt);
 * - its last claim's lease expiry plus the visibility timeout (a claim that never settled: the
 *   lease expiry is after the claim, which is after the receive);
 * - the time it entered the state (`stateSince`: a replay enqueues right after writing the row).
 * So with a grace of at least the queue's visibility timeout (`recoveryGraceMs` adds a margin for
 * the receive itself), a row quiet for longer has no message in flight that will return: none was
 * sent, or SQS moved it away. A row it enqueues is listed again from that moment (`relist`), so it
 * is not read again before another grace: behind a long backlog its message is at most doubled
 * once per grace, not at every run. A doubled message is harmless: the claim (docs/contract.md §5) lets one claim send at a time,
 * and the other copy is answered "leased" or "not due" and waits, then is acknowledged once the row
 * is final. For the same reason two runs at once are safe: each may enqueue the row; one claim sends.
 *
 * Bounded per run: it reads at most `limit` rows, oldest entry into the listing first, and returns
 * the cursor where it stopped; the caller passes it to the next run (the function keeps it for as
 * long as its container lives, the sandbox's timer for as long as the sandbox runs). A run without
 * a cursor starts at the oldest; a run that reaches the end returns none, so the next one starts
 * over. Rows that entered the listing less than `graceMs` ago cannot be stranded yet and are not
 * read (the listing's window, of the index's sort key). A stranded row is thus enqueued within its quiet time, plus the grace,
 * plus one interval per `limit` rows listed before it.
 *
 * The registry is read once per run that finds a stranded row (`endpoints`: names and pauses only):
 * - a row of an endpoint no longer in the registry is left alone: the consumer acknowledges a
 *   message for a removed endpoint without touching its row, so enqueuing it would repeat at every
 *   run until the row expires. Such rows are counted (`orphaned`) and logged;
 * - a row of a paused endpoint (docs/contract.md §12 back-pressure) is left alone until the pause
 *   ends plus the grace: the consumer holds its message until then without writing the row, so the
 *   row looks quiet although its message is merely held (`held`).
 *
 * A row whose budget is spent (its last claim's worker died) is enqueued like any other: the
 * consumer then marks it dead (`exhausted`) and dead-letters it with that reason.
 *
 * A parked row (docs/contract.md §12) is never read here: it is in its endpoint's parked listing,
 * not the pending one, until its release lists it as pending again (lib/resume.ts, run beside this).
 */
import type { ListOptions, DeliveryRecord, Ledger } from './ledger/ledger';
import { leaseIsLive } from './ledger/ledger';
import { METRICS_NAMESPACE, SERVICE_NAME, errorFields, type Logger } from './observability';
import type { DeliveryQueue, EndpointMessage, RedriveQueue, RedrivenMessage } from './queue/queue';
import type { Resume } from './resume';
import { linkOf } from './tracing/carrier';


/** The scheduled function's settings (functions/recovery.ts), set by the construct. */
export const RECOVERY_ENV = {
  /** Whole ms a pending row must be quiet before it is enqueued again (`recoveryGraceMs`). */
  graceMs: 'HANDOFF_RECOVERY_GRACE_MS',
  /** Rows read per run at most (default RECOVERY_LIMIT). */
  limit: 'HANDOFF_RECOVERY_LIMIT',
  /** Whole ms between two runs (the schedule's): how far ahead a run releases parked deliveries (lib/resume.ts). */
  intervalMs: 'HANDOFF_RECOVERY_INTERVAL_MS',
} as const;

/** Rows read per run by default: keeps one run's reads and time bounded. */
export const RECOVERY_LIMIT = 5000;

/**
 * The margin over the visibility timeout in AWS: a message that became visible is received and
 * claimed in seconds, unless the queue has a backlog; 5 minutes covers a moderate one (a longer one
 * costs a duplicate message, nothing more).
 */
export const RECOVERY_MARGIN_MS = 5 * 60_000;

/** Rows per listing page: a BatchGetItem takes 100 keys. */
const PAGE_SIZE = 100;

/** The grace: the queue's visibility timeout (the longest a message in flight stays away) plus a margin. */
export function recoveryGraceMs(visibilityTimeoutSeconds: number, marginMs: number = RECOVERY_MARGIN_MS): number {
  return visibilityTimeoutSeconds * 1000 + marginMs;
}

export interface RecoveryDeps {
  readonly ledger: Pick<Ledger, 'listByState' | 'relist'>;
  /** Sends one message per stranded delivery, with its endpoint attribute (SendMessageBatch, ten per request). */
  readonly queue: Pick<DeliveryQueue, 'fanOut'>;
  readonly now: () => number;
  /** At least the queue's visibility timeout (`recoveryGraceMs`). */
  readonly graceMs: number;
  /** Rows read in this run at most. */
  readonly limit: number;
  /** Where the previous run stopped; absent: from the oldest. */
  readonly cursor?: string;
  readonly logger: Logger;
  /**
   * The endpoints in the registry now, by name, with the end of a pause (epoch ms) where one was
   * written; read once per run when a stranded row is found. Absent: every endpoint counts as
   * present and unpaused (the single-URL consumer, with no registry).
   */
  readonly endpoints?: () => Promise<ReadonlyMap<string, EndpointView>>;
}

/** What recovery needs of a registry entry: its pause, and the release of its parked deliveries in progress. */
export interface EndpointView {
  readonly pausedUntil?: number;
  readonly state?: string;
  readonly resume?: Resume;
  /** Epoch ms it was enabled again, when its state changed to enabled (an endpoint created enabled has none). */
  readonly enabledAt?: number;
}

export interface RecoveryRun {
  /** Rows read. */
  readonly examined: number;
  /** Rows enqueued again. */
  readonly recovered: number;
  /** Stranded rows left alone because their endpoint is no longer in the registry. */
  readonly orphaned: number;
  /** Rows left alone because their endpoint is paused (their messages are held until then). */
  readonly held: number;
  /** Where the next run starts; absent when this one reached the end of the listing (or read nothing). */
  readonly cursor?: string;
  /** True when the queue refused a page's messages: the run stopped, and the cursor points before that page. */
  readonly queueFailed: boolean;
}

/**
 * Whether a row is stranded at `nowMs` (see the file's comment): pending, holding an event, no live
 * lease, and nothing on it for longer than `graceMs`.
 */
export function isStranded(record: DeliveryRecord, nowMs: number, graceMs: number): boolean {
  if (record.state !== 'pending' || record.body === undefined) return false;
  if (leaseIsLive(record, nowMs)) return false;
  return nowMs >= quietSince(record) + graceMs;
}

/** The latest time a message in flight for this row may still have been received (see above). */
export function quietSince(record: DeliveryRecord): number {
  return Math.max(record.stateSince, record.nextAttemptAt ?? 0, record.history.at(-1)?.at ?? 0, record.leaseExpiresAt ?? 0);
}

/** One run: pages the pending listing from `cursor`, enqueuing each stranded row. @throws what the ledger throws. */
export async function recoverStuck(deps: RecoveryDeps): Promise<RecoveryRun> {
  const { ledger, queue, graceMs, logger } = deps;
  if (!(Number.isSafeInteger(graceMs) && graceMs >= 0)) throw new RangeError(`graceMs must be whole ms, 0 or more, not ${graceMs}`);
  if (!(Number.isSafeInteger(deps.limit) && deps.limit >= 1)) throw new RangeError(`limit must be a whole number of rows, 1 or more, not ${deps.limit}`);
  const startMs = deps.now();
  // Rows listed after then are too recent to be stranded (a row enters the listing when it fails or
  // is replayed, no later than it falls quiet, give or take the attempt's own duration); the window
  // ends before `untilMs`, so the millisecond itself is in. A window before the epoch reads nothing.
  const untilMs = startMs - graceMs + 1;
  let cursor = deps.cursor;
  let examined = 0;
  let recovered = 0;
  let orphaned = 0;
  let held = 0;
  let registry: ReadonlyMap<string, EndpointView> | undefined;
  while (examined < deps.limit && untilMs > 0) {
    const options: ListOptions = { limit: Math.min(PAGE_SIZE, deps.limit - examined), untilMs, ...(cursor !== undefined ? { cursor } : {}) };
    const page = await ledger.listByState('pending', options);
    examined += page.records.length;
    const nowMs = deps.now();
    let stranded = page.records.filter((record) => isStranded(record, nowMs, graceMs));
    if (stranded.length > 0 && deps.endpoints !== undefined) {
      const endpoints = (registry ??= await deps.endpoints());
      stranded = stranded.filter((record) => {
        const endpoint = endpoints.get(record.endpoint);
        if (endpoint === undefined) {
          logger.warn('not recovered: endpoint removed', { eventId: record.eventId, endpoint: record.endpoint });
          orphaned += 1;
          return false;
        }
        if (endpoint.pausedUntil !== undefined && nowMs < endpoint.pausedUntil + graceMs) {
          held += 1;
          return false;
        }
        return true;
      });
    }
    if (stranded.length > 0) {
      // Linked to each delivery's original trace, where its row keeps one (docs/contract.md §19).
      const messages: EndpointMessage[] = stranded.map((record) => ({ body: record.body!, endpoint: record.endpoint, ...linkOf(record) }));
      try {
        await queue.fanOut(messages);
      } catch (error) {
        // Some may have been sent: harmless, the claim decides. The next run reads this page again.
        logger.error('recovery enqueue failed', { ...errorFields(error), deliveries: stranded.length });
        return { examined, recovered, orphaned, held, ...(cursor !== undefined ? { cursor } : {}), queueFailed: true };
      }
      recovered += stranded.length;
      // Each marked as sent now (listed from now), so no run reads it again before another grace has
      // passed, however long its message waits behind a backlog. A failed mark costs a duplicate at
      // the next run at most (the claim decides), so it is logged, not fatal.
      await Promise.all(
        stranded.map((record) =>
          ledger.relist(record, nowMs).catch((error: unknown) => logger.warn('recovery mark failed', { eventId: record.eventId, endpoint: record.endpoint, ...errorFields(error) })),
        ),
      );
      for (const record of stranded) {
        logger.info('recovered', {
          eventId: record.eventId,
          endpoint: record.endpoint,
          attempts: record.attempts,
          quietForMs: nowMs - quietSince(record),
        });
      }
    }
    cursor = page.cursor;
    if (cursor === undefined) break;
  }
  return { examined, recovered, orphaned, held, ...(cursor !== undefined ? { cursor } : {}), queueFailed: false };
}

/** Times a redriven message is sent back before recovery gives up on it (see the file's comment). */
export const MAX_RECOVERIES = 3;

export interface RedriveRun {
  /** Messages sent back to the delivery queue. */
  readonly sentBack: number;
  /** Messages sent to the dead-letter queue, redriven MAX_RECOVERIES times over. */
  readonly gaveUp: number;
  /** True when the queue failed a call: the run stopped; what it had not sent on stays on the redrive queue. */
  readonly queueFailed: boolean;
}

/**
 * One run over the redrive queue: up to `limit` messages, each sent back to the delivery queue, or
 * to the dead-letter queue once it has come back MAX_RECOVERIES times (see the file's comment).
 */
export async function sendBackRedriven<M extends RedrivenMessage>(deps: {
  readonly redrive: RedriveQueue<M>;
  readonly limit: number;
  readonly logger: Logger;
}): Promise<RedriveRun> {
  const { redrive, logger } = deps;
  let sentBack = 0;
  let gaveUp = 0;
  try {
    while (sentBack + gaveUp < deps.limit) {
      const messages = await redrive.receive(Math.min(10, deps.limit - sentBack - gaveUp));
      if (messages.length === 0) break;
      const spent = messages.filter((message) => message.recoveries >= MAX_RECOVERIES);
      const again = messages.filter((message) => message.recoveries < MAX_RECOVERIES);
      if (again.length > 0) {
        await redrive.sendBack(again);
        sentBack += again.length;
        for (const message of again) logger.info('sent back', { ...who(message), recoveries: message.recoveries + 1 });
      }
      if (spent.length > 0) {
        await redrive.giveUp(spent);
        gaveUp += spent.length;
        for (const message of spent) logger.warn('redriven too often: dead-lettered', { ...who(message), recoveries: message.recoveries });
      }
    }
  } catch (error) {
    // What was not sent on stays on the redrive queue and returns to the next run.
    logger.error('redrive queue failed', errorFields(error));
    return { sentBack, gaveUp, queueFailed: true };
  }
  return { sentBack, gaveUp, queueFailed: false };
}

/** A redriven message's event ID and endpoint, where known: what its log lines show (never its body). */
function who(message: RedrivenMessage): { eventId?: string; endpoint?: string } {
  return {
    ...(message.eventId !== undefined ? { eventId: message.eventId } : {}),
    ...(message.endpoint !== undefined ? { endpoint: message.endpoint } : {}),
  };
}

/**
 * The run's counts as one EMF document (namespace `Handoff`, dimension `Service`), the format
 * lib/observability.ts writes the consumer's metrics in, for CloudWatch and the sandbox's sink:
 * `Recovered` (deliveries enqueued again from the listing, and messages sent back from the redrive
 * queue), and `Resumed` (parked deliveries released, lib/resume.ts).
 */
export function recoveredMetricDocument(recovered: number, timestampMs: number, resumed = 0): string {
  return JSON.stringify({
    _aws: {
      Timestamp: timestampMs,
      CloudWatchMetrics: [
        {
          Namespace: METRICS_NAMESPACE,
          Dimensions: [['Service']],
          Metrics: [
            { Name: 'Recovered', Unit: 'Count' },
            { Name: 'Resumed', Unit: 'Count' },
          ],
        },
      ],
    },
    Service: SERVICE_NAME,
    Recovered: recovered,
    Resumed: resumed,
  });
}
