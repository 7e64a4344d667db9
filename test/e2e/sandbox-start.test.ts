/**
 * `npm start` as a newcomer runs it: no endpoint configured, so the demo receiver takes the
 * events; READY on stdout, a clean stop on SIGTERM.
 */
import { existsSync, readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSandboxToExit, startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';

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
      ['deadLetterQueueUrl', 'dynamodbEndpoint', 'ledgerTable', 'queueUrl', 'receiverUrl', 'sqsEndpoint'],
    );
    expect(sandbox.ready.sqsEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sandbox.ready.receiverUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(JSON.parse(readFileSync(sandbox.stateFile, 'utf8'))).toEqual(sandbox.ready);
  });

  it('delivers an event to the demo receiver, which logs it by ID', async () => {
    // Prepare
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: sandbox.ready.sqsEndpoint, credentials });
    const ledger = DynamoDBDocumentClient.from(
      new DynamoDBClient({ region: 'us-east-1', endpoint: sandbox.ready.dynamodbEndpoint, credentials }),
    );
    const event = { id: 'evt_demo_1', shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' };

    // Act
    await sqs.send(new SendMessageCommand({ QueueUrl: sandbox.ready.queueUrl, MessageBody: JSON.stringify(event) }));
    await sandbox.waitForLog(/^receiver: received evt_demo_1 \(first time\)$/);
    let state: unknown;
    do {
      const { Item } = await ledger.send(
        new GetCommand({ TableName: sandbox.ready.ledgerTable, Key: { eventId: 'evt_demo_1', endpoint: 'default' } }),
      );
      state = Item?.state;
      if (state !== 'delivered') await new Promise((resolve) => setTimeout(resolve, 200));
    } while (state !== 'delivered');

    // Assess
    expect(state).toBe('delivered');
    expect(sandbox.stderr().join('\n')).not.toContain('shp_1');
    sqs.destroy();
    ledger.destroy();
  });

  it('stops on SIGTERM with status 0 and removes its state file', async () => {
    const ended = await sandbox.stop('SIGTERM');

    expect(ended).toEqual({ code: 0, signal: null });
    expect(existsSync(sandbox.stateFile)).toBe(false);
  });
});

describe('npm start with an invalid setting', () => {
  it('exits 2 with one line naming the variable', async () => {
    const { code, stdout, stderr } = await runSandboxToExit({ env: { HANDOFF_MAX_ATTEMPTS: '0' } });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain('HANDOFF_MAX_ATTEMPTS');
  });
});
