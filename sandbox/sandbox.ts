/**
 * The whole system on one machine (docs/contract.md §8): SQS and DynamoDB emulators on 127.0.0.1, the
 * delivery queue, dead-letter queue and ledger created with the stack's settings, the real
 * consumer handler in worker processes driven by a poller that keeps Lambda's SQS contract,
 * and a demo receiver when no endpoint is configured.
 *
 * The emulators live in this process, so their state survives a worker that crashes.
 */
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { checkEndpoint, derivedTimings, QUEUE_RETENTION_SECONDS, RESOURCE_ENV, settingsToEnvironment, type Settings } from '../lib/config';
import { createLedgerTable } from './ledger-table';
import { SANDBOX_GUARD_OPTIONS } from '../lib/webhook/endpoint-guard';
import { redactUrl } from '../lib/webhook/redact-url';
import { Display, watchCounts } from './counters';
import { startDemoReceiver, type DemoReceiver } from './demo-receiver';
import { startEmulators, type Emulators } from './emulators';
import { startPoller, type Poller } from './poller';
import { metricsFileFor, MetricSink } from './metric-sink';
import { SANDBOX_CREDENTIALS, SANDBOX_REGION, sandboxStateFile, type SandboxState } from './state-file';
import { WorkerPool } from './worker-pool';

export const SANDBOX_NAMES = {
  queue: 'handoff-deliveries',
  deadLetterQueue: 'handoff-dead-letters',
  ledgerTable: 'handoff-ledger',
} as const;

/**
 * The consumer's fault-injection variable (functions/consumer.ts CRASH_AT_ENV), spelled out here
 * because importing that module runs its cold start, which needs a consumer's environment.
 */
export const CRASH_AT_ENV = 'HANDOFF_CRASH_AT';

export interface SandboxOptions {
  readonly settings: Settings;
  /** 0 = any free port. */
  readonly sqsPort: number;
  readonly dynamodbPort: number;
  /**
   * Sandbox only: the queue's visibility timeout, in place of the stack's 6x function timeout,
   * so a message held by a killed worker returns quickly. A live claim still guards it.
   */
  readonly visibilityTimeoutSeconds?: number;
  /** Passed through to the consumer (fault injection). */
  readonly crashAt?: string;
  /** The handler module; defaults to functions/consumer.ts. */
  readonly handlerPath?: string;
  readonly display: Display;
  /** Show the consumer's own log lines. Default: only its delivery decisions and warnings. */
  readonly verbose?: boolean;
}

export interface Sandbox {
  readonly state: SandboxState;
  /** Stops polling, lets batches in flight finish (bounded), then closes everything. */
  stop(): Promise<void>;
}

export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const { settings, display } = options;
  const timings = derivedTimings(settings);
  // The sandbox's receivers are local: the consumer may reach loopback over plain http.
  const allowPrivateCidrs = [...new Set([...settings.allowPrivateCidrs, ...(SANDBOX_GUARD_OPTIONS.allowPrivateCidrs ?? [])])];
  // Refused now rather than reporting READY while every worker fails its cold start.
  if (settings.webhookUrl !== undefined) checkEndpoint(settings.webhookUrl, { allowPrivateCidrs, allowHttp: true }, 'HANDOFF_WEBHOOK_URL');
  const closers: (() => Promise<unknown>)[] = [];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
  };

  try {
    const emulators: Emulators = await startEmulators({ sqs: options.sqsPort, dynamodb: options.dynamodbPort });
    closers.push(() => emulators.close());
    const sqs = new SQSClient({ region: SANDBOX_REGION, endpoint: emulators.sqsEndpoint, credentials: SANDBOX_CREDENTIALS, useQueueUrlAsEndpoint: false });
    const dynamodb = new DynamoDBClient({ region: SANDBOX_REGION, endpoint: emulators.dynamodbEndpoint, credentials: SANDBOX_CREDENTIALS });
    closers.push(async () => {
      sqs.destroy();
      dynamodb.destroy();
    });

    // Both queues keep messages as long as the stack's do: the ledger's retention is checked against it.
    const deadLetterQueueUrl = await createQueue(sqs, SANDBOX_NAMES.deadLetterQueue, {
      MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS),
    });
    const deadLetterQueueArn = await queueArn(sqs, deadLetterQueueUrl);
    const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? timings.visibilityTimeoutSeconds;
    const queueUrl = await createQueue(sqs, SANDBOX_NAMES.queue, {
      VisibilityTimeout: String(visibilityTimeoutSeconds),
      MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS),
      // A backstop for a consumer that keeps failing; the ledger dead-letters with a reason first.
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: deadLetterQueueArn, maxReceiveCount: timings.maxReceiveCount }),
    });
    const deliveryQueueArn = await queueArn(sqs, queueUrl);
    await createLedgerTable(dynamodb, SANDBOX_NAMES.ledgerTable);

    let receiver: DemoReceiver | undefined;
    if (settings.webhookUrl === undefined) {
      receiver = await startDemoReceiver({
        ...(settings.webhookSecret !== undefined ? { secret: settings.webhookSecret } : {}),
        log: (line) => display.log(`receiver: ${line}`),
      });
      closers.push(() => receiver!.close());
    }
    const receiverUrl = settings.webhookUrl ?? receiver!.url;

    const consumerSettings: Settings = {
      ...settings,
      webhookUrl: receiverUrl,
      allowPrivateCidrs,
      allowHttp: true,
    };
    // The workers' EMF documents, kept for `handoff stats` and the counters (CloudWatch's part).
    // Closed after the pool (closers run in reverse), so the last workers' documents count.
    const metricSink = new MetricSink({ path: metricsFileFor(sandboxStateFile()) });
    closers.push(async () => metricSink.close());
    const pool = new WorkerPool({
      workerPath: fileURLToPath(new URL('./worker.ts', import.meta.url)),
      handlerPath: options.handlerPath ?? fileURLToPath(new URL('../functions/consumer.ts', import.meta.url)),
      env: {
        ...inheritedEnvironment(),
        AWS_REGION: SANDBOX_REGION,
        AWS_ACCESS_KEY_ID: SANDBOX_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: SANDBOX_CREDENTIALS.secretAccessKey,
        AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint,
        AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbEndpoint,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...settingsToEnvironment(consumerSettings),
        ...(settings.webhookSecret !== undefined ? { HANDOFF_WEBHOOK_SECRET: settings.webhookSecret } : {}),
        [RESOURCE_ENV.ledgerTable]: SANDBOX_NAMES.ledgerTable,
        [RESOURCE_ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
        [RESOURCE_ENV.queueUrl]: queueUrl,
        ...(options.crashAt ? { [CRASH_AT_ENV]: options.crashAt } : {}),
      },
      timeoutMs: timings.functionTimeoutSeconds * 1000,
      onOutput: (line, pid) => {
        if (metricSink.accept(line)) return;
        const shown = describeWorkerLine(line, options.verbose === true);
        if (shown !== undefined) display.log(`worker ${pid}: ${shown}`);
      },
      log: (line) => display.log(line),
    });
    closers.push(() => pool.close());

    const poller: Poller = startPoller({
      sqs,
      queueUrl,
      source: { queueArn: deliveryQueueArn, region: SANDBOX_REGION },
      batchSize: settings.batchSize,
      maxConcurrency: settings.maxConcurrency,
      invoke: (event) => pool.invoke(event),
      log: (line) => display.log(`poller: ${line}`),
    });
    // Shutdown waits at most one function timeout for batches in flight, then kills the workers:
    // whatever they held returns to the queue, which is what a crash would do anyway.
    closers.push(() => poller.stop(timings.functionTimeoutSeconds * 1000));

    const stopCounts = watchCounts(
      { dynamodb, ledgerTable: SANDBOX_NAMES.ledgerTable, sqs, deadLetterQueueUrl, delivered: () => metricSink.totals().delivered },
      display,
    );
    closers.push(async () => {
      await stopCounts();
      display.close();
    });

    return {
      state: {
        sqsEndpoint: emulators.sqsEndpoint,
        dynamodbEndpoint: emulators.dynamodbEndpoint,
        queueUrl,
        deadLetterQueueUrl,
        ledgerTable: SANDBOX_NAMES.ledgerTable,
        // The demo receiver's URL is the sandbox's own and holds no secret: exact, to reach it.
        // A configured URL may carry a token or credentials: shown redacted, here and so in
        // READY, the state file and the log line; only the workers' environment has it exact.
        receiverUrl: receiver !== undefined ? receiverUrl : redactUrl(receiverUrl),
        payloadLimitBytes: settings.payloadLimitBytes,
      },
      stop: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function createQueue(sqs: SQSClient, name: string, attributes: Record<string, string>): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!QueueUrl) throw new Error(`CreateQueue ${name} returned no URL`);
  return QueueUrl;
}

async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  const arn = Attributes?.QueueArn;
  if (!arn) throw new Error(`no ARN for ${queueUrl}`);
  return arn;
}

/**
 * The parent's environment without its handoff and AWS settings: the consumer gets exactly the
 * sandbox's, never a profile or endpoint that points somewhere real.
 */
function inheritedEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_')),
  );
}

/**
 * One consumer output line as the sandbox shows it: delivery decisions compactly, warnings and
 * errors always, metric documents never. Consumer lines carry event IDs and codes, no payloads.
 */
export function describeWorkerLine(line: string, verbose: boolean): string | undefined {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (typeof entry !== 'object' || entry === null) return line;
  if ('_aws' in entry) return undefined;
  if (entry.message === 'delivery') {
    const detail = [entry.why ?? entry.reason, entry.outcome ? `after ${String(entry.outcome)}` : undefined]
      .filter(Boolean)
      .join(', ');
    return `${String(entry.eventId ?? '(no id)')} ${String(entry.action)} (${detail})`;
  }
  if (verbose || entry.level === 'warn' || entry.level === 'error') return line;
  return undefined;
}
