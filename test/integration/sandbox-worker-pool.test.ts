/** The sandbox's worker processes: a real child process per environment, over IPC. */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerPool } from '../../sandbox/worker-pool';
import { sqsRecord } from '../helpers/sqs-records';

const workerPath = fileURLToPath(new URL('../../sandbox/worker.ts', import.meta.url));
const handlerPath = fileURLToPath(new URL('./fixtures/scripted-handler.ts', import.meta.url));
let pool: WorkerPool | undefined;

function startPool(timeoutMs = 20_000): WorkerPool {
  pool = new WorkerPool({ workerPath, handlerPath, env: process.env, timeoutMs });
  return pool;
}

const eventOf = (...bodies: string[]) => ({ Records: bodies.map((body) => sqsRecord(body)) });

afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('WorkerPool: invoke', () => {
  it('returns the handler response and reuses the idle worker for the next batch', async () => {
    // Prepare
    const workers = startPool();
    const event = eventOf('ok', 'fail');

    // Act
    const first = await workers.invoke(event);
    const pidsAfterFirst = workers.pids;
    const second = await workers.invoke(eventOf('ok'));

    // Assess
    expect(first).toEqual({ kind: 'returned', response: { batchItemFailures: [{ itemIdentifier: event.Records[1]!.messageId }] } });
    expect(second).toEqual({ kind: 'returned', response: { batchItemFailures: [] } });
    expect(workers.pids).toEqual(pidsAfterFirst);
    expect(pidsAfterFirst).toHaveLength(1);
  });

  it('gives the handler a Lambda context with the time it has left', async () => {
    const result = await startPool().invoke(eventOf('remaining'));

    expect(result).toEqual({ kind: 'returned', response: { batchItemFailures: [{ itemIdentifier: 'true' }] } });
  });

  it('reports a thrown error by its type and message', async () => {
    const result = await startPool().invoke(eventOf('throw'));

    expect(result).toEqual({ kind: 'threw', error: 'TypeError: scripted failure' });
  });

  it('reports a worker that exits mid-batch and starts a fresh one for the next', async () => {
    // Prepare
    const workers = startPool();
    await workers.invoke(eventOf('ok'));
    const [firstPid] = workers.pids;

    // Act
    const died = await workers.invoke(eventOf('exit'));
    const next = await workers.invoke(eventOf('ok'));

    // Assess
    expect(died).toEqual({ kind: 'worker-died', detail: 'exited with code 3' });
    expect(next.kind).toBe('returned');
    expect(workers.pids).toHaveLength(1);
    expect(workers.pids).not.toContain(firstPid);
  });

  it('kills a worker whose invocation outlives the timeout, as Lambda ends the environment', async () => {
    // Prepare: warm the worker first so the timeout covers the invocation alone.
    const workers = startPool(1000);
    await workers.invoke(eventOf('ok'));
    const [pid] = workers.pids;

    // Act
    const result = await workers.invoke(eventOf('hang'));

    // Assess
    expect(result).toEqual({ kind: 'timed-out' });
    expect(workers.pids).not.toContain(pid);
  });
});
