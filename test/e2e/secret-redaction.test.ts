/**
 * A webhook URL's secrets (a query token, user:password@) never leave the process that sends:
 * the sandbox runs with a tokened URL, the operator sends events and reads their status and the
 * dead list through the `handoff` command, and nothing any of them wrote (READY, standard error
 * with the consumer's own log lines, the state file and whatever sits beside it, every CLI
 * output) holds the token. The receiver still gets it: the sender uses the exact URL.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DEFAULT_ENDPOINT, type DeliveryState } from '../../lib/ledger/ledger';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { runSandboxToExit, startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually } from '../helpers/sandbox-clients';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = resolve(import.meta.dirname, '../..');
const TOKEN = 's3cr3t-7c1d9e40';
const PASSWORD = 'pa55-e2f81b';
const TEST_TIMEOUT_MS = 180_000;

let receiver: TestReceiver;
let sandbox: SandboxProcess;
let dynamodb: DynamoDBClient;
let ledger: DynamoDbLedger;
/** Everything the sandbox and the CLI wrote, to search for the token at the end. */
const outputs: { source: string; text: string }[] = [];

function handoff(args: readonly string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_')),
  );
  const child = spawn(process.execPath, [join(ROOT, 'bin/handoff.js'), ...args], {
    cwd: ROOT,
    env: { ...inherited, HANDOFF_SANDBOX_FILE: sandbox.stateFile },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.end(stdin);
  return new Promise((done) =>
    child.once('close', (code) => {
      outputs.push({ source: `handoff ${args.join(' ')} (stdout)`, text: stdout }, { source: `handoff ${args.join(' ')} (stderr)`, text: stderr });
      done({ code, stdout, stderr });
    }),
  );
}

function waitForState(eventId: string, state: DeliveryState) {
  return eventually(
    `${eventId} to be ${state}`,
    async () => ((await ledger.get({ eventId, endpoint: DEFAULT_ENDPOINT }))?.state === state ? state : undefined),
    { timeoutMs: 60_000, describe: async () => String((await ledger.get({ eventId, endpoint: DEFAULT_ENDPOINT }))?.state ?? 'no row') },
  );
}

const event = (id: string) => JSON.stringify({ id, shipmentId: 'shp_redact', status: 'in_transit', occurredAt: '2026-12-02T10:15:00Z' });

beforeAll(async () => {
  receiver = await startTestReceiver();
  sandbox = await startSandboxProcess({
    env: {
      HANDOFF_WEBHOOK_URL: `${receiver.url}?token=${TOKEN}&tenant=acme`,
      // The consumer's own log lines too, not only its decisions.
      HANDOFF_SANDBOX_VERBOSE: '1',
      HANDOFF_RETRY_SCHEDULE: '600',
      HANDOFF_MAX_ATTEMPTS: '3',
    },
  });
  sandbox.child.stdout!.on('data', (chunk: Buffer) => outputs.push({ source: 'sandbox stdout after READY', text: chunk.toString('utf8') }));
  dynamodb = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: sandbox.ready.dynamodbEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  ledger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(dynamodb), tableName: sandbox.ready.ledgerTable });
}, 120_000);

afterAll(async () => {
  await sandbox?.stop('SIGKILL');
  await receiver?.close();
  dynamodb?.destroy();
});

describe('A webhook URL with a token in its query', { timeout: TEST_TIMEOUT_MS }, () => {
  it('is shown redacted in READY and the state file', () => {
    expect(sandbox.ready.receiverUrl).toBe(`${receiver.url}?token=***&tenant=***`);
    expect((JSON.parse(readFileSync(sandbox.stateFile, 'utf8')) as { receiverUrl: string }).receiverUrl).toBe(sandbox.ready.receiverUrl);
  });

  it('reaches the receiver exactly, and appears in no output of the sandbox or the handoff command', async () => {
    // Prepare: one event is accepted, the other refused for good
    receiver.respondTo('evt_redact_dead', { status: 400, body: 'unknown shipment' });

    // Act: send, status, dead, as an operator does
    const sent = await handoff(['send', '-'], `${event('evt_redact_ok')}\n${event('evt_redact_dead')}\n`);
    await waitForState('evt_redact_ok', 'delivered');
    await waitForState('evt_redact_dead', 'dead');
    const status = await handoff(['status', 'evt_redact_dead']);
    const statusJson = await handoff(['status', 'evt_redact_ok', '--json']);
    const dead = await handoff(['dead']);
    const stateDirectory = dirname(sandbox.stateFile);
    for (const file of readdirSync(stateDirectory)) {
      outputs.push({ source: `state directory: ${file}`, text: readFileSync(join(stateDirectory, file), 'utf8') });
    }
    await sandbox.stop('SIGTERM');
    outputs.push({ source: 'sandbox READY', text: JSON.stringify(sandbox.ready) }, { source: 'sandbox stderr', text: sandbox.stderr().join('\n') });

    // Assess: the commands worked, and saw what they should
    expect([sent.code, status.code, statusJson.code, dead.code]).toEqual([0, 0, 0, 0]);
    expect(dead.stdout).toContain('evt_redact_dead');
    expect(receiver.requestsFor('evt_redact_ok').map((r) => r.path)).toEqual([`/webhook?token=${TOKEN}&tenant=acme`]);
    // … the sandbox's log did carry the consumer's lines, so there was something to leak
    expect(sandbox.stderr().some((line) => line.includes('evt_redact_dead'))).toBe(true);
    // … and no output holds the token
    const leaks = outputs.filter(({ text }) => text.includes(TOKEN)).map(({ source }) => source);
    expect(leaks).toEqual([]);
    expect(outputs.length).toBeGreaterThanOrEqual(10);
  });
});

describe('A webhook URL with credentials or a refused address', { timeout: TEST_TIMEOUT_MS }, () => {
  it.each([
    [`http://operator:${PASSWORD}@127.0.0.1:9/hook?token=${TOKEN}`, 'must not carry credentials'],
    [`http://10.1.2.3/hook?token=${TOKEN}`, 'is refused'],
    [`not a url ${TOKEN}`, 'must be an absolute http(s) URL'],
  ])('stops start-up naming the variable, without showing its secrets (%#)', async (url, problem) => {
    const { code, stdout, stderr } = await runSandboxToExit({ env: { HANDOFF_WEBHOOK_URL: url } });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(`HANDOFF_WEBHOOK_URL ${problem}`);
    expect(stderr).not.toContain(TOKEN);
    expect(stderr).not.toContain(PASSWORD);
  });
});
