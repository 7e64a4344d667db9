/**
 * Where a running sandbox says how to reach it. `npm start` writes its READY object here and
 * removes the file on shutdown; the operator CLI reads it to find the sandbox's endpoints.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The region and credentials of every client aimed at the sandbox (its own, the consumer's, the
 * CLI's): the emulators accept any credentials, but the SDK still wants some.
 */
export const SANDBOX_REGION = 'us-east-1';
export const SANDBOX_CREDENTIALS = { accessKeyId: 'sandbox', secretAccessKey: 'sandbox' } as const;

/** The READY object: printed as `READY <json>` on stdout and written to the state file. */
export interface SandboxState {
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  readonly ledgerTable: string;
  /** The demo receiver's URL, or the configured `HANDOFF_WEBHOOK_URL`. */
  readonly receiverUrl: string;
}

/** `HANDOFF_SANDBOX_FILE`, else `handoff-sandbox.json` in the OS temp directory. */
export function sandboxStateFile(env: Readonly<Record<string, string | undefined>> = process.env): string {
  return env.HANDOFF_SANDBOX_FILE || join(tmpdir(), 'handoff-sandbox.json');
}

/** The running sandbox's state, or undefined when no sandbox has written one. */
export function readSandboxState(path: string = sandboxStateFile()): SandboxState | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return JSON.parse(text) as SandboxState;
}
