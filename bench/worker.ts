/**
 * A consumer execution environment for the bench: the sandbox's worker runtime (one batch at a
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
import { runWorker } from '../sandbox/worker-runtime';
import { MEASUREMENT_PREFIX, type Measurement } from './measurement';

await runWorker({
  functionName: 'bench-consumer',
  onInvoked(invocation) {
    const measurement: Measurement = { ...invocation, pid: process.pid };
    process.stderr.write(`${MEASUREMENT_PREFIX}${JSON.stringify(measurement)}\n`);
  },
});
