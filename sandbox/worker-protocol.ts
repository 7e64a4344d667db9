/** Messages between the sandbox and a worker process (IPC, structured-clone-safe JSON). */
import type { SQSEvent } from 'aws-lambda';

export type ToWorker = { readonly type: 'invoke'; readonly id: number; readonly event: SQSEvent; readonly deadlineMs: number };

export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'failed'; readonly error: string }
  | { readonly type: 'returned'; readonly id: number; readonly response: unknown }
  | { readonly type: 'threw'; readonly id: number; readonly error: string };
