/**
 * The sandbox's stuck-work recovery (docs/contract.md §12 "Stuck work", "Parking"): the code the
 * scheduled function runs in AWS (lib/recovery.ts, lib/resume.ts), on a timer in the sandbox's own
 * process, against its emulators. Every `HANDOFF_RECOVERY_INTERVAL_MS` (default 5 s) it sends back
 * to the delivery queue what SQS's redrive moved to the redrive queue, enqueues again the pending
 * deliveries that have had no message for longer than the grace, and releases the
 * parked deliveries of endpoints enabled again, each run scheduling up to the next. The grace is the
 * queue's visibility timeout (the sandbox's, `HANDOFF_VISIBILITY_TIMEOUT_SECONDS` when set) plus a
 * second, since the sandbox's poller receives a visible message at once. The cursor where a run
 * stopped is kept for the next.
 *
 * Runs never overlap (the next is timed from the end of the last); `stop` waits for the one in
 * progress. What it enqueued or released is shown as a line per delivery; its `Recovered` and
 * `Resumed` counts go to the metric sink like the workers' metrics.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConfigError } from '../lib/errors';
import { DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import type { Fields, Logger } from '../lib/observability';
import type { MessageSeal } from '../lib/queue/seal';
import { SqsDeliveryQueue } from '../lib/queue/sqs-queue';
import { SqsRedriveQueue } from '../lib/queue/sqs-redrive-queue';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { RECOVERY_LIMIT, recoverStuck, recoveredMetricDocument, recoveryGraceMs, sendBackRedriven } from '../lib/recovery';
import { ONE_CLOCK_CHANGE_WINDOW } from '../lib/endpoints/registry-copy';
import { registryEndpoints } from '../lib/recovery-endpoints';
import { releaseResuming, StraySweep, straySweepPerRun } from '../lib/resume';

/** The sandbox's setting: ms between two runs of the recovery timer. */
export const RECOVERY_INTERVAL_ENV = 'HANDOFF_RECOVERY_INTERVAL_MS';
export const SANDBOX_RECOVERY_INTERVAL_MS = 5000;
/** Over the visibility timeout: the sandbox's poller receives a message as soon as it is visible. */
export const SANDBOX_RECOVERY_MARGIN_MS = 1000;

export interface RecoveryTimerOptions {
  /** The emulators' clients (the sandbox's own). */
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly ledgerTable: string;
  /** The endpoint registry: rows of endpoints no longer in it, or paused, are left alone. */
  readonly endpointsTable?: string;
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  /** Where the delivery queue's redrive policy moves a message. */
  readonly redriveQueueUrl: string;
  /** Seals what recovery sends (lib/queue/seal.ts). */
  readonly seal: MessageSeal;
  /** The delivery queue's visibility timeout: the grace is this plus SANDBOX_RECOVERY_MARGIN_MS. */
  readonly visibilityTimeoutSeconds: number;
  /** Default: `HANDOFF_RECOVERY_INTERVAL_MS` from `env`, else 5000. */
  readonly intervalMs?: number;
  readonly env?: NodeJS.ProcessEnv;
  /** A line for the sandbox's display (one per delivery enqueued again, and failures). */
  readonly log: (line: string) => void;
  /** The run's EMF document (`Recovered`), for the metric sink. */
  readonly metrics?: (line: string) => void;
  readonly now?: () => number;
}

export interface RecoveryTimer {
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

/** @throws ConfigError naming HANDOFF_RECOVERY_INTERVAL_MS when it is not whole ms from 100 to 3600000. */
export function recoveryIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[RECOVERY_INTERVAL_ENV];
  if (raw === undefined || raw === '') return SANDBOX_RECOVERY_INTERVAL_MS;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 100 || Number(raw) > 3_600_000) {
    throw new ConfigError(RECOVERY_INTERVAL_ENV, `must be whole milliseconds from 100 to 3600000, got "${raw}"`);
  }
  return Number(raw);
}

export function startRecoveryTimer(options: RecoveryTimerOptions): RecoveryTimer {
  const intervalMs = options.intervalMs ?? recoveryIntervalMs(options.env);
  const graceMs = recoveryGraceMs(options.visibilityTimeoutSeconds, SANDBOX_RECOVERY_MARGIN_MS);
  const now = options.now ?? Date.now;
  const documents = DynamoDBDocumentClient.from(options.dynamodb, { marshallOptions: { removeUndefinedValues: true } });
  const ledger = new DynamoDbLedger({ client: documents, tableName: options.ledgerTable });
  // Its registry's writers all read this machine's clock: a short look-back (lib/endpoints/registry-copy.ts).
  const endpoints = options.endpointsTable !== undefined ? registryEndpoints(documents, options.endpointsTable, { window: ONE_CLOCK_CHANGE_WINDOW }) : undefined;
  const { queueUrl, deadLetterQueueUrl, redriveQueueUrl } = options;
  const { seal } = options;
  const queue = new SqsDeliveryQueue({ client: options.sqs, queueUrl, deadLetterQueueUrl, seal });
  const redrive = new SqsRedriveQueue({ client: options.sqs, redriveQueueUrl, queueUrl, deadLetterQueueUrl, seal });
  // Releases of parked deliveries after `endpoint enable` (lib/resume.ts), each run scheduling up to the next.
  const release =
    endpoints !== undefined && options.endpointsTable !== undefined
      ? { endpoints, deps: { ledger, queue, store: new DynamoDbEndpointRegistry({ client: documents, tableName: options.endpointsTable }), sweep: new StraySweep(straySweepPerRun(intervalMs)) } }
      : undefined;
  const logger = displayLogger(options.log);
  let cursor: string | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  const run = async () => {
    try {
      const redriven = await sendBackRedriven({ redrive, limit: RECOVERY_LIMIT, logger });
      const result = await recoverStuck({
        ledger,
        queue,
        now,
        graceMs,
        limit: RECOVERY_LIMIT,
        logger,
        ...(cursor !== undefined ? { cursor } : {}),
        ...(endpoints !== undefined ? { endpoints } : {}),
      });
      cursor = result.cursor;
      const releases = release === undefined ? [] : await releaseResuming(await release.endpoints(), { ...release.deps, now, horizonMs: intervalMs, logger });
      options.metrics?.(recoveredMetricDocument(result.recovered + redriven.sentBack, now(), releases.reduce((sum, run) => sum + run.released, 0)));
    } catch (error) {
      // The emulators stopping under a run, or a cursor gone stale: start over next time.
      cursor = undefined;
      if (!stopped) options.log(`recovery run failed: ${(error as Error).message}`);
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = run().finally(() => {
        running = undefined;
        schedule();
      });
    }, intervalMs);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}

/** lib/recovery.ts's log lines as the sandbox shows them: by event ID and endpoint, never a body. */
function displayLogger(log: (line: string) => void): Logger {
  const logger: Logger = {
    info(message: string, fields?: Fields) {
      if (message === 'released' && fields !== undefined) log(`${String(fields.eventId)} → ${String(fields.endpoint)} released (was parked)`);
      if (message === 'release finished' && fields !== undefined) log(`${String(fields.endpoint)}: no parked deliveries left`);
      if (message === 'sent back' && fields !== undefined) {
        log(`${String(fields.eventId ?? 'a message')} → ${String(fields.endpoint ?? 'routing')} sent back to the queue (redriven by SQS; recovery ${String(fields.recoveries)})`);
      }
      if (message === 'recovered' && fields !== undefined) {
        const quiet = typeof fields.quietForMs === 'number' ? `, no message for ${Math.round(fields.quietForMs / 1000)} s` : '';
        log(`${String(fields.eventId)} → ${String(fields.endpoint)} enqueued again (pending${quiet})`);
      }
    },
    warn(message: string, fields?: Fields) {
      const subject = fields?.eventId !== undefined ? `${String(fields.eventId)} → ${String(fields.endpoint)} ` : '';
      log(`${subject}${message}${fields?.errorMessage ? `: ${String(fields.errorMessage)}` : ''}`);
    },
    error(message: string, fields?: Fields) {
      log(`${message}${fields?.errorMessage ? `: ${String(fields.errorMessage)}` : ''}`);
    },
    child: () => logger,
  };
  return logger;
}
