/**
 * How the `handoff` command fails (docs/contract.md §10): exit 2 for a usage error, exit 1 for a refusal or
 * a failure, always with one line a person can act on and never a stack trace.
 */
import { InvalidEventError, QueueUnavailableError, ReplayEnqueueError, ReplayInputError } from '../lib/errors';
import { LedgerError, ReplayRefusedError } from '../lib/ledger/errors';
import { auditTextProblem } from '../lib/replay';
import { safe } from '../lib/terminal';

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The command was called wrongly: a missing argument, a bad value, no target to talk to. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code = 'usage';
}

/** An audit entry's operator and reason as the ledger takes them (lib/replay.ts), or a usage error naming the flag. */
export function checkAuditText(operator: string, reason: string): void {
  for (const [flag, field, value] of [
    ['--operator', 'operator', operator],
    ['--reason', 'reason', reason],
  ] as const) {
    const problem = auditTextProblem(field, value);
    if (problem) throw new UsageError(`${flag} ${problem}`);
  }
}

/**
 * A page read with `--cursor`: a cursor the ledger did not issue for this listing (its RangeError)
 * is a usage error, naming the flag.
 */
export async function readPage<T>(cursor: string | undefined, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof RangeError && cursor !== undefined) throw new UsageError(`--cursor: ${error.message}; start again without --cursor`);
    throw error;
  }
}

/** The command ran and was refused or failed, for a reason already phrased for the operator. */
export class CommandFailedError extends Error {
  override readonly name = 'CommandFailedError';
  constructor(
    message: string,
    readonly code: string = 'failed',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export interface Failure {
  readonly exitCode: ExitCode;
  readonly code: string;
  /** One line: no newlines, no stack, nothing a terminal would act on (lib/terminal.ts `safe`). */
  readonly message: string;
}

/** Turns anything thrown into the one line and exit code the operator sees. */
export function describeFailure(error: unknown, hint?: (error: unknown) => string | undefined): Failure {
  if (error instanceof UsageError) return failure(EXIT.usage, error.code, error.message);
  if (error instanceof CommandFailedError) return failure(EXIT.failed, error.code, error.message);
  if (error instanceof ReplayRefusedError) return failure(EXIT.failed, error.refusal, error.message);
  if (error instanceof ReplayInputError) return failure(EXIT.usage, error.code, error.message);
  if (error instanceof ReplayEnqueueError) {
    const retry = `put it on the queue with: handoff status ${error.record.eventId} --body | handoff send`;
    return failure(EXIT.failed, error.code, `${withCause(error)}; ${retry}`);
  }
  if (error instanceof InvalidEventError) return failure(EXIT.failed, error.code, error.message);
  // A store or queue that cannot be reached at all says so plainly, whichever adapter noticed.
  const hinted = hint?.(error);
  if (hinted) return failure(EXIT.failed, 'unreachable', hinted);
  if (error instanceof QueueUnavailableError) return failure(EXIT.failed, error.code, withCause(error));
  if (error instanceof LedgerError) return failure(EXIT.failed, error.code, withCause(error));
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return failure(EXIT.failed, typeof code === 'string' ? code : error.name, `${error.name}: ${error.message}`);
  }
  return failure(EXIT.failed, 'failed', String(error));
}

/** The network error code (ECONNREFUSED, ENOTFOUND, …) anywhere in an error's cause chain. */
export function networkErrorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors)) {
      const inner = errors.map(networkErrorCode).find(Boolean);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** The innermost error of a cause chain: the one that says what actually went wrong. */
export function rootCause(error: Error): Error {
  let current = error;
  for (let depth = 0; current.cause instanceof Error && depth < 10; depth++) current = current.cause;
  return current;
}

function withCause(error: Error): string {
  const root = rootCause(error);
  return root === error ? error.message : `${error.message}: ${root.message}`;
}

function failure(exitCode: ExitCode, code: string, message: string): Failure {
  return { exitCode, code, message: oneLine(message) };
}

/** Messages quote what came from outside (an event's keys, a store's error text): made inert here. */
function oneLine(text: string): string {
  return safe(text.replace(/\s*\n\s*/g, ' ').trim());
}
