/** The sandbox's consumer process (see worker-runtime.ts), forked by worker-pool.ts. */
import { runWorker } from './worker-runtime';

await runWorker({ functionName: 'handoff-consumer', ignoreInterrupts: true });
