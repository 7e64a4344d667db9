/**
 * Worker processes that run the handler, one batch at a time each, as Lambda runs one
 * invocation per execution environment. An idle worker is reused (a warm start); a new one is
 * started when all are busy. A worker that times out is killed, as Lambda ends a timed-out
 * environment; a worker that dies is replaced on the next batch.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { SQSEvent } from 'aws-lambda';
import type { Invocation } from './poller';
import type { FromWorker, ToWorker } from './worker-protocol';

/** How long a worker may take to import the handler (Lambda's init phase allows 10 s). */
const START_TIMEOUT_MS = 30_000;
/**
 * An idle worker beyond the first is stopped after this long, as Lambda reclaims idle
 * environments: a burst should not leave `maxConcurrency` processes (~100 MB each) behind.
 */
const IDLE_TIMEOUT_MS = 60_000;

export interface WorkerPoolOptions {
  readonly workerPath: string;
  /** The module whose `handler` export runs; passed to the worker. */
  readonly handlerPath: string;
  readonly env: NodeJS.ProcessEnv;
  /** One invocation's limit (the function timeout). */
  readonly timeoutMs: number;
  /** A line the worker wrote on stdout or stderr. */
  readonly onOutput?: (line: string, pid: number) => void;
  readonly log?: (line: string) => void;
}

interface Worker {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  busy: boolean;
  exited: boolean;
  /** Being stopped by the pool (idle, timed out): never chosen again, its exit already logged. */
  retired?: boolean;
  idleTimer?: NodeJS.Timeout;
}

export class WorkerPool {
  readonly #options: WorkerPoolOptions;
  readonly #workers = new Set<Worker>();
  #nextId = 1;
  #closed = false;

  constructor(options: WorkerPoolOptions) {
    this.#options = options;
  }

  /** Process IDs of the live workers (tests kill one to simulate a crash). */
  get pids(): number[] {
    return [...this.#workers].filter((w) => !w.exited && !w.retired && w.child.pid !== undefined).map((w) => w.child.pid!);
  }

  async invoke(event: SQSEvent): Promise<Invocation> {
    if (this.#closed) return { kind: 'worker-died', detail: 'the pool is closed' };
    const worker = [...this.#workers].find((w) => !w.busy && !w.exited && !w.retired) ?? this.#start();
    worker.busy = true;
    clearTimeout(worker.idleTimer);
    try {
      await worker.ready;
      return await this.#run(worker, event);
    } catch (error) {
      return { kind: 'worker-died', detail: (error as Error).message };
    } finally {
      worker.busy = false;
      this.#reapWhenIdle(worker);
    }
  }

  #reapWhenIdle(worker: Worker): void {
    worker.idleTimer = setTimeout(() => {
      const others = [...this.#workers].filter((w) => w !== worker && !w.exited && !w.retired);
      if (worker.busy || worker.exited || others.length === 0) return;
      this.#retire(worker, 'idle');
    }, IDLE_TIMEOUT_MS);
    worker.idleTimer.unref();
  }

  /** Kills every worker. Invocations in flight end as `worker-died`. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(
      [...this.#workers].map(
        (worker) =>
          new Promise<void>((resolve) => {
            if (worker.exited) return resolve();
            worker.child.once('exit', () => resolve());
            worker.child.kill('SIGKILL');
          }),
      ),
    );
  }

  #retire(worker: Worker, why: string): void {
    worker.retired = true;
    this.#options.log?.(`worker ${worker.child.pid} exited (${why})`);
    worker.child.kill('SIGKILL');
  }

  #start(): Worker {
    const { workerPath, handlerPath, env } = this.#options;
    const child = fork(workerPath, [handlerPath], {
      execArgv: ['--import', 'tsx'],
      env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const pid = child.pid ?? 0;
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => this.#options.onOutput?.(line, pid));
    }
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`worker ${pid} did not start within ${START_TIMEOUT_MS} ms`));
      }, START_TIMEOUT_MS);
      child.on('message', (message: FromWorker) => {
        if (message.type === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (message.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(`worker ${pid} could not load the handler: ${message.error}`));
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`worker ${pid} exited while starting (${signal ?? `code ${code}`})`));
      });
    });
    ready.catch(() => {});
    const worker: Worker = { child, ready, busy: false, exited: false };
    this.#workers.add(worker);
    child.once('exit', (code, signal) => {
      worker.exited = true;
      clearTimeout(worker.idleTimer);
      this.#workers.delete(worker);
      if (!this.#closed && !worker.retired) this.#options.log?.(`worker ${pid} exited (${signal ?? `code ${code}`})`);
    });
    this.#options.log?.(`worker ${pid} started`);
    return worker;
  }

  #run(worker: Worker, event: SQSEvent): Promise<Invocation> {
    const { child } = worker;
    const id = this.#nextId++;
    const deadlineMs = Date.now() + this.#options.timeoutMs;
    return new Promise<Invocation>((resolve) => {
      const finish = (invocation: Invocation) => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(invocation);
      };
      const onMessage = (message: FromWorker) => {
        if (message.type === 'returned' && message.id === id) finish({ kind: 'returned', response: message.response });
        else if (message.type === 'threw' && message.id === id) finish({ kind: 'threw', error: message.error });
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
        finish({ kind: 'worker-died', detail: signal ? `killed by ${signal}` : `exited with code ${code}` });
      // As Lambda ends a timed-out environment: whatever the handler was doing stops here.
      const timer = setTimeout(() => {
        this.#retire(worker, 'timed out');
        finish({ kind: 'timed-out' });
      }, this.#options.timeoutMs);
      if (worker.exited) return onExit(child.exitCode, child.signalCode);
      child.on('message', onMessage);
      child.on('exit', onExit);
      const message: ToWorker = { type: 'invoke', id, event, deadlineMs };
      child.send(message, (error) => {
        if (error) finish({ kind: 'worker-died', detail: `could not reach the worker: ${error.message}` });
      });
    });
  }
}
