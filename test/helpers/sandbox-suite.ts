/**
 * One sandbox process for all the tests of an end-to-end file, with its clients: the prelude those
 * files share.
 */
import { afterAll, beforeAll } from 'vitest';
import { startSandboxProcess, type SandboxProcess, type StartOptions } from './sandbox';
import { SandboxClients } from './sandbox-clients';

/** Start-up: the receivers, the sandbox's two emulators and a tsx compile, on a busy machine. */
const START_TIMEOUT_MS = 90_000;

export interface StartedSandbox {
  readonly sandbox: SandboxProcess;
  readonly clients: SandboxClients;
}

/**
 * In `beforeAll`: `setUp` (which starts what the sandbox delivers to and answers its options), then
 * the sandbox and its clients, handed to `onStart`. In `afterAll`: the clients closed, the sandbox
 * killed (SIGKILL), then `tearDown` (which closes what `setUp` started).
 */
export function useSandboxProcess(
  setUp: () => Promise<StartOptions>,
  onStart: (started: StartedSandbox) => void,
  tearDown: () => Promise<void>,
): void {
  let sandbox: SandboxProcess | undefined;
  let clients: SandboxClients | undefined;
  beforeAll(async () => {
    sandbox = await startSandboxProcess(await setUp());
    clients = new SandboxClients(sandbox.ready);
    onStart({ sandbox, clients });
  }, START_TIMEOUT_MS);
  afterAll(async () => {
    clients?.close();
    await sandbox?.stop('SIGKILL');
    await tearDown();
  });
}
