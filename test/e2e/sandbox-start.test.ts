/**
 * `npm start` as a newcomer runs it: no endpoint configured, so the demo receiver takes the
 * events; READY on stdout, a clean stop on SIGTERM.
 */
import { existsSync, readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DEFAULT_ENDPOINT } from '../../lib/ledger/ledger';
import { runSandboxToExit, startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually } from '../helpers/sandbox-clients';

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
let sandbox: SandboxProcess;

beforeAll(async () => {
  sandbox = await startSandboxProcess({ via: 'tsx' });
}, 90_000);

afterAll(async () => {
  await sandbox?.stop('SIGKILL');
});

describe('npm start (tsx sandbox/main.ts)', () => {
  it('prints READY with every endpoint and writes the same object to the state file', () => {
    expect(Object.keys(sandbox.ready).sort()).toEqual(
      ['deadLetterQueueUrl', 'dynamodbEndpoint', 'ledgerTable', 'payloadLimitBytes', 'queueUrl', 'receiverUrl', 'sqsEndpoint'],
    );
    expect(sandbox.ready.sqsEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sandbox.ready.receiverUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(JSON.parse(readFileSync(sandbox.stateFile, 'utf8'))).toEqual(sandbox.ready);
  });

  it('delivers an event to the demo receiver, which logs it by ID', async () => {
    // Prepare
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: sandbox.ready.sqsEndpoint, credentials });
    const dynamodb = new DynamoDBClient({ region: 'us-east-1', endpoint: sandbox.ready.dynamodbEndpoint, credentials });
    const ledger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(dynamodb), tableName: sandbox.ready.ledgerTable });
    const event = { id: 'evt_demo_1', shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' };

    // Act
    await sqs.send(new SendMessageCommand({ QueueUrl: sandbox.ready.queueUrl, MessageBody: JSON.stringify(event) }));
    await sandbox.waitForLog(/^receiver: received evt_demo_1 \(first time\)$/);
    const rowState = async () => (await ledger.get({ eventId: 'evt_demo_1', endpoint: DEFAULT_ENDPOINT }))?.state;
    const state = await eventually(
      'evt_demo_1 to be delivered',
      async () => ((await rowState()) === 'delivered' ? 'delivered' : undefined),
      { timeoutMs: 20_000, describe: async () => String((await rowState()) ?? 'no row') },
    );

    // Assess
    expect(state).toBe('delivered');
    expect(sandbox.stderr().join('\n')).not.toContain('shp_1');
    sqs.destroy();
    dynamodb.destroy();
  });

  it('stops on SIGTERM with status 0 and removes its state file', async () => {
    const ended = await sandbox.stop('SIGTERM');

    expect(ended).toEqual({ code: 0, signal: null });
    expect(existsSync(sandbox.stateFile)).toBe(false);
  });
});

describe('npm start with an invalid setting', () => {
  it.each([
    { variable: 'HANDOFF_MAX_ATTEMPTS', value: '0' },
    // A private literal address the consumer's endpoint guard would refuse on every attempt.
    { variable: 'HANDOFF_WEBHOOK_URL', value: 'http://10.1.2.3/hook' },
    { variable: 'HANDOFF_ALLOW_PRIVATE_CIDRS', value: 'foo' },
    { variable: 'HANDOFF_CRASH_AT', value: 'mid-send' },
    { variable: 'HANDOFF_CRASH_AT', value: 'before-send@' },
    // More than a ledger row can hold beside the rest of the row.
    { variable: 'HANDOFF_PAYLOAD_LIMIT_BYTES', value: '450000' },
  ])('exits 2 with one line naming $variable for $value, printing no READY', async ({ variable, value }) => {
    const { code, stdout, stderr } = await runSandboxToExit({ env: { [variable]: value } });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(variable);
  });

  it('exits 2 on a ledger retention shorter than a delivery can live, naming it and the retry settings', async () => {
    const { code, stdout, stderr } = await runSandboxToExit({ env: { HANDOFF_RETENTION_DAYS: '1' } });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim()).toMatch(
      /^handoff sandbox: HANDOFF_RETENTION_DAYS must be at least 18 days with HANDOFF_RETRY_SCHEDULE\/HANDOFF_MAX_ATTEMPTS allowing 6 attempts, got 1: /,
    );
  });

  it.each([
    { secret: 'whsec_abc', problem: 'is not base64' },
    { secret: 'whsec_AAAA', problem: 'decodes to a 3-byte key' },
  ])('exits 2 on a signing secret that cannot sign ($secret), without showing it', async ({ secret, problem }) => {
    const { code, stdout, stderr } = await runSandboxToExit({ env: { HANDOFF_WEBHOOK_SECRET: secret } });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^handoff sandbox: HANDOFF_WEBHOOK_SECRET must be a Standard Webhooks secret/);
    expect(stderr).toContain(problem);
    expect(stderr).not.toContain(secret.slice('whsec_'.length));
  });
});
