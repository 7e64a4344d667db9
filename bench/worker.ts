/**
 * A consumer's execution environment for the bench: the sandbox's worker runtime (one batch at a
 * time over IPC, from sandbox/worker-pool.ts) that also writes, per invocation, a `@@bench {json}`
 * line on stderr with the handler's CPU and wall time (bench/harness.ts reads it). The process runs
 * nothing but the handler, so the CPU around an invocation is that invocation's; in the bench's own
 * process concurrent batches and the emulators would share one counter.
 *
 * argv[2]: the handler module; it must export `handler`.
 */
import { runWorker } from '../sandbox/worker-runtime';

await runWorker({
  functionName: 'bench-consumer',
  onInvoked: (invocation) => process.stderr.write(`@@bench ${JSON.stringify({ ...invocation, pid: process.pid })}\n`),
});
