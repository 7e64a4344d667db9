/**
 * One consumer "execution environment": a child process that imports the handler once and runs
 * one batch at a time, as a Lambda environment does. The parent (worker-pool.ts) sends batches
 * over IPC and reads the responses. Killing this process loses only its invocation: the queue
 * still holds the messages, which return after their visibility timeout.
 *
 * argv[2]: the handler module (default functions/consumer.ts); it must export `handler`.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Context, SQSEvent } from 'aws-lambda';
import type { FromWorker, ToWorker } from './worker-protocol';

type Handler = (event: SQSEvent, context: Context) => Promise<unknown>;

/** What one invocation cost: this process runs nothing else meanwhile, so its CPU is the handler's. */
export interface Invocation {
  readonly records: number;
  readonly cpuMicros: number;
  readonly wallMs: number;
}

export interface WorkerOptions {
  readonly functionName: string;
  /** Ctrl-C reaches the whole process group; the sandbox lets a batch finish, then kills us. */
  readonly ignoreInterrupts?: boolean;
  readonly onInvoked?: (invocation: Invocation) => void;
}

export async function runWorker(options: WorkerOptions): Promise<void> {
  const modulePath = resolve(process.argv[2] ?? 'functions/consumer.ts');
  let handler: Handler;
  try {
    const module = (await import(pathToFileURL(modulePath).href)) as { handler?: unknown };
    if (typeof module.handler !== 'function') throw new Error(`${modulePath} exports no handler function`);
    handler = module.handler as Handler;
  } catch (error) {
    send({ type: 'failed', error: (error as Error).message });
    process.exit(1);
  }

  process.on('message', (message: ToWorker) => {
    if (message.type !== 'invoke') return;
    const cpuBefore = process.cpuUsage();
    const startedAt = performance.now();
    const invoked = () => {
      const cpu = process.cpuUsage(cpuBefore);
      options.onInvoked?.({
        records: message.event.Records.length,
        cpuMicros: cpu.user + cpu.system,
        wallMs: performance.now() - startedAt,
      });
    };
    Promise.resolve()
      .then(() => handler(message.event, contextFor(options.functionName, randomUUID(), message.deadlineMs)))
      .then(
        (response) => {
          invoked();
          // `undefined` does not survive IPC; Lambda reads it as an empty (successful) response.
          send({ type: 'returned', id: message.id, response: response ?? null });
        },
        (error: unknown) => {
          invoked();
          const text = error instanceof Error ? `${error.name}: ${error.message.slice(0, 300)}` : 'a non-error was thrown';
          send({ type: 'threw', id: message.id, error: text });
        },
      );
  });
  // The parent is the only reason to exist: leave with it.
  process.on('disconnect', () => process.exit(0));
  if (options.ignoreInterrupts) {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => {});
  }
  send({ type: 'ready' });
}

function send(message: FromWorker): void {
  process.send?.(message);
}

function contextFor(functionName: string, requestId: string, deadlineMs: number): Context {
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const fail = () => {
    throw new Error('callback-style completion is not supported: return a promise');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${process.pid}`,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: fail,
    fail,
    succeed: fail,
  };
}
