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
import { pathToFileURL } from 'node:url';
import type { Context, SQSEvent } from 'aws-lambda';
import type { ToWorker, FromWorker } from './worker-protocol';

type Handler = (event: SQSEvent, context: Context) => Promise<unknown>;

const FUNCTION_NAME = 'handoff-consumer';

function send(message: FromWorker): void {
  process.send?.(message);
}

function contextFor(requestId: string, deadlineMs: number): Context {
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const fail = () => {
    throw new Error('callback-style completion is not supported: return a promise');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: FUNCTION_NAME,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${FUNCTION_NAME}`,
    memoryLimitInMB: '256',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${FUNCTION_NAME}`,
    logStreamName: `sandbox/${process.pid}`,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: fail,
    fail,
    succeed: fail,
  };
}

async function main(): Promise<void> {
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
    const requestId = randomUUID();
    Promise.resolve()
      .then(() => handler(message.event, contextFor(requestId, message.deadlineMs)))
      .then(
        // `undefined` does not survive IPC; Lambda reads it as an empty (successful) response.
        (response) => send({ type: 'returned', id: message.id, response: response ?? null }),
        (error: unknown) =>
          send({
            type: 'threw',
            id: message.id,
            error: error instanceof Error ? `${error.name}: ${error.message.slice(0, 300)}` : 'a non-error was thrown',
          }),
      );
  });
  // The parent is the only reason to exist: leave with it.
  process.on('disconnect', () => process.exit(0));
  // Ctrl-C reaches the whole process group. The sandbox decides when a worker ends: it lets
  // the batch in flight finish first, then kills it.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => {});
  process.on('SIGHUP', () => {});
  send({ type: 'ready' });
}

await main();
