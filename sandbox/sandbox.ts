/**
 * The whole system on one machine (docs/contract.md §8): SQS and DynamoDB emulators on 127.0.0.1, the
 * delivery queue, dead-letter queue, ledger and endpoint registry created with the stack's settings,
 * the real consumer handler in worker processes driven by a poller that keeps Lambda's SQS contract.
 * The ordered intake (docs/contract.md §13) as the stack has it: a FIFO queue with a FIFO dead-letter
 * queue, polled as Lambda polls a FIFO queue, into the same workers.
 *
 * The endpoints (docs/contract.md §11), seeded into the registry at start (sandbox/sandbox-endpoints.ts),
 * come from one of:
 * - the endpoints file `HANDOFF_ENDPOINTS_FILE` (sandbox/endpoints-file.ts);
 * - the single-URL settings `HANDOFF_WEBHOOK_URL` (+ `HANDOFF_WEBHOOK_SECRET`): the endpoint `default`, type `*`;
 * - neither: the demo, two demo receivers on loopback with overlapping subscriptions
 *   (DEMO_ENDPOINTS), so a newcomer sees one event fan out with no setup.
 *
 * The emulators live in this process, so their state survives a worker that crashes.
 */
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { checkEndpoint, derivedTimings, VARIABLE_NAMES, type Settings } from '../lib/config';
import { LocalSecretCipher } from '../lib/endpoints/secret-cipher';
import { MessageSeal } from '../lib/queue/seal';
import { deploymentToJson, type DeploymentSettingsJson } from '../lib/endpoints/endpoint';
import { readEndpointsFile, refuseSingleUrlSettings } from './endpoints-file';
import { createEndpointsTable } from './endpoints-table';
import { createLedgerTable } from './ledger-table';
import { Display, watchCounts } from './counters';
import { startEmulators, type Emulators } from './emulators';
import { startPoller, type Poller } from './poller';
import { metricsFileFor, MetricSink } from './metric-sink';
import { startRecoveryTimer } from './recovery-timer';
import { seedSandboxEndpoints } from './sandbox-endpoints';
import { SANDBOX_NAMES, sandboxDeployment, sandboxEndpointsCacheMs } from './settings';
import { SANDBOX_CREDENTIALS, SANDBOX_REGION, sandboxStateFile, type SandboxState } from './state-file';
import { WorkerPool } from './worker-pool';
import { workerEnvironment } from './worker-environment';
import { describeWorkerLine } from './worker-lines';
import { createSandboxQueues } from './queues';
import { startApiServer } from './api-server';
import { CommandContext, DISCARDED_OUTPUT } from '../cli/context';
import { targetOfSandboxState } from '../cli/target';
import { DynamoDbIdempotencyStore } from '../api/dynamodb-idempotency';
import { portalKeySource } from '../api/portal-link';
import { createLogger } from '../lib/observability';
import { buildConsole } from '../console/build';
import { consoleSite } from '../console/site';

// The tests read the ordered intake's attributes here.
export { ORDERED_QUEUE_ATTRIBUTES } from './queues';

export interface SandboxOptions {
  readonly settings: Settings;
  /** `HANDOFF_ENDPOINTS_FILE`: the endpoints, in place of the single-URL settings (sandbox/endpoints-file.ts). */
  readonly endpointsFile?: string;
  /** 0 = any free port. */
  readonly sqsPort: number;
  /** The management API's port on 127.0.0.1 (`HANDOFF_API_PORT`); 0 or absent: any free port. */
  readonly apiPort?: number;
  readonly dynamodbPort: number;
  /**
   * Sandbox only: the queue's visibility timeout, in place of the stack's 6x function timeout,
   * so a message held by a killed worker returns quickly. A live claim still guards it.
   */
  readonly visibilityTimeoutSeconds?: number;
  /** Passed through to the consumer (fault injection). */
  readonly crashAt?: string;
  /** How long the workers keep their copy of the registry (sandboxEndpointsCacheMs). */
  readonly endpointsCacheMs?: number;
  /** The handler module; defaults to functions/consumer.ts. */
  readonly handlerPath?: string;
  readonly display: Display;
  /** Show the consumer's own log lines. Default: only its delivery decisions and warnings. */
  readonly verbose?: boolean;
}

/** The READY object: the state file's fields, and what the sandbox's endpoints are. */
export interface SandboxReady extends SandboxState {
  /** The ordered intake's FIFO queue (docs/contract.md §13): always there in a running sandbox. */
  readonly orderedQueueUrl: string;
  /** The endpoint registry's table (`handoff endpoint` reads and writes it). */
  readonly endpointsTable: string;
  /** The settings an endpoint's defaults and limits come from, for `handoff endpoint add`. */
  readonly deployment: DeploymentSettingsJson;
  /** Each endpoint's URL by name: a demo receiver's exactly, a configured one redacted. */
  readonly receivers: Readonly<Record<string, string>>;
  /** The key that seals the sandbox's own messages (lib/queue/seal.ts), drawn at this start. */
  readonly sealKey: string;
  /** The key of the endpoint secrets `handoff endpoint` writes to its registry (`encrypted:local:…`), drawn at this start. */
  readonly secretsKey: string;
  /** The management API (docs/contract.md §16), on loopback: sandbox/api-server.ts. */
  readonly apiUrl: string;
  /**
   * Its bearer token, drawn at this start: in READY, the state file and the console's URL only
   * (which the sandbox prints for the person who started it), never in a log line.
   */
  readonly apiToken: string;
  /** The console (docs/contract.md §17): `<apiUrl>/console/#token=<apiToken>`, the token in its fragment. */
  readonly consoleUrl: string;
}

export interface Sandbox {
  readonly state: SandboxReady;
  /** Stops polling, lets batches in flight finish (bounded), then closes everything. */
  stop(): Promise<void>;
}

/** The console's URL with the API's token in its fragment: the page takes it from there, and no server ever sees it in a URL. */
export function sandboxConsoleUrl(apiUrl: string, apiToken: string): string {
  return `${apiUrl}/console/#token=${apiToken}`;
}

export async function startSandbox(options: SandboxOptions): Promise<Sandbox> {
  const { settings, display } = options;
  const timings = derivedTimings(settings);
  const deployment = sandboxDeployment(settings);
  const { allowPrivateCidrs } = deployment;
  const endpointsCacheMs = sandboxEndpointsCacheMs(options);
  // Refused now rather than reporting READY while every worker fails its cold start.
  if (options.endpointsFile !== undefined) refuseSingleUrlSettings(settings);
  const fileEndpoints = options.endpointsFile !== undefined ? readEndpointsFile(options.endpointsFile, deployment) : undefined;
  if (settings.webhookUrl !== undefined) checkEndpoint(settings.webhookUrl, deployment, VARIABLE_NAMES.webhookUrl);
  // Built before anything starts: a console that does not build stops the start (ConsoleBuildError,
  // one line), as a bad setting does. The sandbox runs from a clone, where esbuild is.
  const site = consoleSite(await buildConsole(), {});
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


    const visibilityTimeoutSeconds = options.visibilityTimeoutSeconds ?? timings.visibilityTimeoutSeconds;
    const queues = await createSandboxQueues(sqs, { visibilityTimeoutSeconds, maxReceiveCount: timings.maxReceiveCount });
    const { queueUrl, deadLetterQueueUrl, redriveQueueUrl, orderedQueueUrl } = queues;
    await createLedgerTable(dynamodb, SANDBOX_NAMES.ledgerTable, { shipmentIndex: settings.shipmentIndex });
    await createEndpointsTable(dynamodb, SANDBOX_NAMES.endpointsTable);
    const { endpoints, receivers } = await seedSandboxEndpoints({
      settings,
      deployment,
      file: fileEndpoints !== undefined ? { path: options.endpointsFile!, endpoints: fileEndpoints } : undefined,
      dynamodb,
      tableName: SANDBOX_NAMES.endpointsTable,
      display,
      closers,
    });

    // The single-URL settings stay in the workers' environment where they were given (the consumer
    // reads its endpoints from the registry; `default` is seeded there from them).
    const consumerSettings: Settings = {
      ...settings,
      webhookUrl: fileEndpoints === undefined ? settings.webhookUrl : undefined,
      allowPrivateCidrs,
      allowHttp: true,
    };
    // The key that seals the sandbox's own messages (lib/queue/seal.ts), new at every start.
    const sealKey = MessageSeal.generateKey();
    // The key of the endpoint secrets `handoff endpoint` writes (`encrypted:local:…`, where AWS has
    // the registry's KMS key), new at every start as the registry is. The endpoints seeded above keep
    // their secrets as given: the file's are in the user's own file anyway, the demo's are the sandbox's.
    const secretsKey = LocalSecretCipher.generateKey();
    // The workers' EMF documents, kept for `handoff stats` and the counters (CloudWatch's part).
    // Closed after the pool (closers run in reverse), so the last workers' documents count.
    const metricSink = new MetricSink({ path: metricsFileFor(sandboxStateFile()) });
    closers.push(async () => metricSink.close());
    const pool = new WorkerPool({
      workerPath: fileURLToPath(new URL('./worker.ts', import.meta.url)),
      handlerPath: options.handlerPath ?? fileURLToPath(new URL('../functions/consumer.ts', import.meta.url)),
      env: workerEnvironment({ emulators, settings, consumerSettings, queues, endpointsCacheMs, sealKey, secretsKey, crashAt: options.crashAt }),
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
      source: { queueArn: queues.queueArn, region: SANDBOX_REGION },
      batchSize: settings.batchSize,
      maxConcurrency: settings.maxConcurrency,
      invoke: (event) => pool.invoke(event),
      log: (line) => display.log(`poller: ${line}`),
    });
    // Shutdown waits at most one function timeout for batches in flight, then kills the workers:
    // whatever they held returns to the queue, which is what a crash would do anyway.
    closers.push(() => poller.stop(timings.functionTimeoutSeconds * 1000));
    // The ordered intake's event source, on the same workers: as Lambda polls a FIFO queue (10 a
    // batch at most, one batch per message group in flight, sandbox/poller.ts).
    const orderedPoller: Poller = startPoller({
      sqs,
      queueUrl: orderedQueueUrl,
      source: { queueArn: queues.orderedQueueArn, region: SANDBOX_REGION },
      batchSize: settings.batchSize,
      maxConcurrency: settings.maxConcurrency,
      invoke: (event) => pool.invoke(event),
      log: (line) => display.log(`ordered poller: ${line}`),
    });
    closers.push(() => orderedPoller.stop(timings.functionTimeoutSeconds * 1000));
    // Stuck-work recovery (docs/contract.md §12): the scheduled function's code, on a timer here (HANDOFF_RECOVERY_INTERVAL_MS).
    const recovery = startRecoveryTimer({
      dynamodb,
      sqs,
      ledgerTable: SANDBOX_NAMES.ledgerTable,
      endpointsTable: SANDBOX_NAMES.endpointsTable,
      queueUrl,
      deadLetterQueueUrl,
      redriveQueueUrl,
      seal: new MessageSeal(sealKey),
      visibilityTimeoutSeconds,
      log: (line) => display.log(`recovery: ${line}`),
      metrics: (line) => metricSink.accept(line),
    });
    closers.push(() => recovery.stop());

    const stopCounts = watchCounts(
      { dynamodb, ledgerTable: SANDBOX_NAMES.ledgerTable, sqs, queueUrl, redriveQueueUrl, deadLetterQueueUrl, delivered: () => metricSink.totals().delivered },
      display,
    );
    closers.push(async () => {
      await stopCounts();
      display.close();
    });

    const state: Omit<SandboxReady, 'apiUrl' | 'apiToken' | 'consoleUrl'> = {
      sqsEndpoint: emulators.sqsEndpoint,
      dynamodbEndpoint: emulators.dynamodbEndpoint,
      queueUrl,
      deadLetterQueueUrl,
      redriveQueueUrl,
      orderedQueueUrl,
      ledgerTable: SANDBOX_NAMES.ledgerTable,
      // The first demo receiver's, `default`'s, or the file's first endpoint's (as `receivers` shows it).
      receiverUrl: receivers[endpoints[0]!.name]!,
      payloadLimitBytes: settings.payloadLimitBytes,
      endpointsTable: SANDBOX_NAMES.endpointsTable,
      deployment: deploymentToJson(deployment),
      receivers,
      sealKey,
      secretsKey,
    };
    // The management API runs the command's use cases against this sandbox, as `handoff` does
    // through the state file: the same target, built from the same state.
    const context = new CommandContext(targetOfSandboxState(state, sandboxStateFile()), DISCARDED_OUTPUT);
    closers.push(async () => context.close());
    const api = await startApiServer({
      port: options.apiPort ?? 0,
      context,
      // Kept in the ledger table, as the deployment keeps them.
      idempotency: new DynamoDbIdempotencyStore({ client: dynamodb, tableName: SANDBOX_NAMES.ledgerTable }),
      // Portal links signed with a key derived from this start's seal key: they end with the sandbox.
      portal: { key: portalKeySource({ key: sealKey }) },
      logger: createLogger({ service: 'handoff-api', write: (line) => display.log(`api: ${line}`) }),
      console: site,
    });
    closers.push(() => api.close());

    const consoleUrl = sandboxConsoleUrl(api.url, api.token);
    return { state: { ...state, apiUrl: api.url, apiToken: api.token, consoleUrl }, stop: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}
