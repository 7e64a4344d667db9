/**
 * A consumer execution environment for the bench: sandbox/worker.ts's protocol (one batch at a
 * time, over IPC, driven by sandbox/worker-pool.ts), plus one measurement line per invocation
 * on stderr: the handler's CPU time and wall time.
 *
 * The process does nothing but run the handler, one invocation at a time, so the delta of
 * `process.cpuUsage()` around an invocation is that invocation's CPU (the emulators, receiver,
 * producer and poller all live in the parent). That is why handlers run here and not in the
 * bench's own process, where concurrent batches and the emulators would share one counter.
 *
 * argv[2]: the handler module; it must export `handler`.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Context, SQSEvent } from 'aws-lambda';
import type { FromWorker, ToWorker } from '../sandbox/worker-protocol';
import { MEASUREMENT_PREFIX, type Measurement } from './measurement';

type Handler = (event: SQSEvent, context: Context) => Promise<unknown>;

const FUNCTION_NAME = 'bench-consumer';

function contextFor(requestId: string, deadlineMs: number): Context {
  const fail = () => {
    throw new Error('callback-style completion is not supported: return a promise');
  };
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: FUNCTION_NAME,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${FUNCTION_NAME}`,
    memoryLimitInMB: '256',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${FUNCTION_NAME}`,
    logStreamName: `bench/${process.pid}`,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: fail,
    fail,
    succeed: fail,
  };
}

function send(message: FromWorker): void {
  process.send?.(message);
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
    const cpuBefore = process.cpuUsage();
    const startedAt = performance.now();
    const measure = () => {
      const cpu = process.cpuUsage(cpuBefore);
      const measurement: Measurement = {
        records: message.event.Records.length,
        cpuMicros: cpu.user + cpu.system,
        wallMs: performance.now() - startedAt,
        pid: process.pid,
      };
      process.stderr.write(`${MEASUREMENT_PREFIX}${JSON.stringify(measurement)}\n`);
    };
    Promise.resolve()
      .then(() => handler(message.event, contextFor(randomUUID(), message.deadlineMs)))
      .then(
        (response) => {
          measure();
          send({ type: 'returned', id: message.id, response: response ?? null });
        },
        (error: unknown) => {
          measure();
          send({ type: 'threw', id: message.id, error: error instanceof Error ? `${error.name}: ${error.message.slice(0, 300)}` : 'a non-error was thrown' });
        },
      );
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready' });
}

void main();
