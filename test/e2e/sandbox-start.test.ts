/**
 * `npm start` as a newcomer runs it: no endpoint configured, so the demo's two receivers take the
 * events, each the ones it subscribes to (one event fans out to both); READY on stdout, a clean
 * stop on SIGTERM. And the start-up refusals: an invalid setting or endpoints file exits 2.
 * Whatever a file or a setting holds reaches standard error inert, one line per line written.
 */
import { readFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { runSandboxToExit, startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually } from '../helpers/sandbox-clients';

const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
/**
 * What a terminal would act on: an OSC window title, a C1 CSI, bidi controls (override, isolate,
 * marks), a line separator, and a newline that would forge a line of the sandbox's own.
 */
const HOSTILE = '\u001b]0;pwned\u0007\u009b2J\u202e\u2066\u200f\u061c\u2028\nhandoff sandbox: forged';
/** HOSTILE as the sanitiser shows it (lib/terminal.ts `safe`). */
const HOSTILE_SHOWN = '?]0;pwned??2J????? handoff sandbox: forged';
/** HOSTILE as `quoted` shows it. */
const HOSTILE_QUOTED = '"\\u001b]0;pwned\\u0007\\u009b2J\\u202e\\u2066\\u200f\\u061c\\u2028\\nhandoff sandbox: forged"';
/** Any of them raw: C0 but the newline, DEL, C1, bidi controls and marks, the separators. */
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;
let sandbox: SandboxProcess;

beforeAll(async () => {
  sandbox = await startSandboxProcess();
}, 90_000);

afterAll(async () => {
  await sandbox?.stop('SIGKILL');
});

describe('npm start (node --import tsx sandbox/main.ts)', () => {
  it('prints READY with every endpoint and writes the same object to the state file', () => {
    expect(Object.keys(sandbox.ready).sort()).toEqual([
      'apiToken',
      'apiUrl',
      'consoleUrl',
      'deadLetterQueueUrl',
      'deployment',
      'dynamodbEndpoint',
      'endpointsTable',
      'ledgerTable',
      'orderedQueueUrl',
      'payloadLimitBytes',
      'queueUrl',
      'receiverUrl',
      'receivers',
      'redriveQueueUrl',
      'sealKey',
      'secretsKey',
      'sqsEndpoint',
    ]);
    expect(sandbox.ready.sqsEndpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sandbox.ready.endpointsTable).toBe('handoff-endpoints');
    // The management API on loopback, and its bearer token: 32 bytes drawn at this start.
    expect(sandbox.ready.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Buffer.from(sandbox.ready.apiToken, 'base64url')).toHaveLength(32);
    // The console beside it, the token in the URL's fragment (never sent to a server), printed for whoever started it.
    expect(sandbox.ready.consoleUrl).toBe(`${sandbox.ready.apiUrl}/console/#token=${sandbox.ready.apiToken}`);
    expect(sandbox.stderr()).toContain(`console: ${sandbox.ready.consoleUrl}`);
    // A key of 32 bytes drawn at this start: it seals the sandbox's own messages (lib/queue/seal.ts).
    expect(Buffer.from(sandbox.ready.sealKey, 'base64')).toHaveLength(32);
    // Another, for the endpoint secrets `handoff endpoint` writes to its registry (encrypted:local:…).
    expect(Buffer.from(sandbox.ready.secretsKey, 'base64')).toHaveLength(32);
    expect(sandbox.ready.secretsKey).not.toBe(sandbox.ready.sealKey);
    expect(sandbox.ready.deployment).toMatchObject({ allowHttp: true, maxAttempts: 6, allowPrivateCidrs: expect.arrayContaining(['127.0.0.0/8']) });
    // The demo: two receivers of its own on loopback; receiverUrl is the first one's.
    expect(Object.keys(sandbox.ready.receivers)).toEqual(['carrier-acme', 'notifications']);
    for (const url of Object.values(sandbox.ready.receivers)) expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhook$/);
    expect(sandbox.ready.receiverUrl).toBe(sandbox.ready.receivers['carrier-acme']);
    expect(JSON.parse(readFileSync(sandbox.stateFile, 'utf8'))).toEqual(sandbox.ready);
  });

  it('shows each demo endpoint and what it subscribes to', () => {
    expect(sandbox.stderr()).toEqual(
      expect.arrayContaining([
        `endpoint carrier-acme: ${sandbox.ready.receivers['carrier-acme']} (shipment.in_transit, shipment.out_for_delivery, shipment.delivered; data.carrier acme)`,
        `endpoint notifications: ${sandbox.ready.receivers.notifications} (shipment.delivered, shipment.exception)`,
      ]),
    );
  });

  it('fans a delivered event of carrier acme out to both demo receivers, and an in-transit one to the carrier only, each logged by ID', async () => {
    // Prepare
    const sqs = new SQSClient({ region: 'us-east-1', endpoint: sandbox.ready.sqsEndpoint, credentials });
    const dynamodb = new DynamoDBClient({ region: 'us-east-1', endpoint: sandbox.ready.dynamodbEndpoint, credentials });
    const ledger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(dynamodb), tableName: sandbox.ready.ledgerTable });
    const event = (id: string, status: string) => ({ id, shipmentId: 'shp_1', status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier: 'acme' } });
    const deliveredTo = (eventId: string, endpoint: string) =>
      eventually(
        `${eventId} to be delivered to ${endpoint}`,
        async () => ((await ledger.get({ eventId, endpoint }))?.state === 'delivered' ? 'delivered' : undefined),
        { timeoutMs: 30_000, describe: async () => String((await ledger.get({ eventId, endpoint }))?.state ?? 'no row') },
      );

    // Act
    for (const body of [event('evt_demo_1', 'delivered'), event('evt_demo_2', 'in_transit')]) {
      await sqs.send(new SendMessageCommand({ QueueUrl: sandbox.ready.queueUrl, MessageBody: JSON.stringify(body) }));
    }
    const states = [
      await deliveredTo('evt_demo_1', 'carrier-acme'),
      await deliveredTo('evt_demo_1', 'notifications'),
      await deliveredTo('evt_demo_2', 'carrier-acme'),
    ];
    await sandbox.waitForLog(/^receiver carrier-acme: received evt_demo_2 \(first time\)$/, 30_000);

    // Assess
    expect(states).toEqual(['delivered', 'delivered', 'delivered']);
    const log = sandbox.stderr();
    for (const line of [
      'receiver carrier-acme: received evt_demo_1 (first time)',
      'receiver notifications: received evt_demo_1 (first time)',
      'receiver carrier-acme: received evt_demo_2 (first time)',
    ]) {
      expect(log).toContain(line);
    }
    expect(log.some((line) => /^worker \d+: evt_demo_1 → notifications delivered$/.test(line))).toBe(true);
    expect(log.filter((line) => line.startsWith('receiver notifications: ') && line.includes('evt_demo_2'))).toEqual([]);
    expect(await ledger.get({ eventId: 'evt_demo_2', endpoint: 'notifications' })).toBeUndefined();
    expect(log.join('\n')).not.toContain('shp_1');
    sqs.destroy();
    dynamodb.destroy();
  }, 60_000);

  it('stops on SIGTERM with status 0 and removes its state file', async () => {
    const ended = await sandbox.stop('SIGTERM');

    expect(ended).toEqual({ code: 0, signal: null });
    expect(sandbox.stateFileAtExit()).toBe(false);
  });
});

describe('npm start with an endpoints file that cannot be used', () => {
  const endpoint = { name: 'billing', url: 'http://127.0.0.1:9/webhook', eventTypes: ['*'], secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' };

  it('exits 2 when HANDOFF_WEBHOOK_URL is set too, naming both variables', async () => {
    const { code, stdout, stderr } = await runSandboxToExit({ endpoints: [endpoint], env: { HANDOFF_WEBHOOK_URL: 'http://127.0.0.1:9/hook' } });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^handoff sandbox: HANDOFF_ENDPOINTS_FILE replaces HANDOFF_WEBHOOK_URL: /);
  });

  it.each([
    { problem: 'a field', endpoints: [endpoint, { ...endpoint, name: 'ops', eventTypes: ['shipment.lost'] }], expected: 'endpoints[1]: endpoint "ops": eventTypes holds "shipment.lost"' },
    { problem: 'a name twice', endpoints: [endpoint, endpoint], expected: 'endpoints[1]: endpoint "billing": name is already used by endpoints[0]' },
    { problem: 'an address the guard refuses', endpoints: [{ ...endpoint, url: 'http://10.1.2.3/hook' }], expected: 'endpoints[0]: endpoint "billing": url is refused' },
  ])('exits 2 on $problem, naming the file, the endpoint and the field, without showing a secret', async ({ endpoints, expected }) => {
    const { code, stdout, stderr } = await runSandboxToExit({ endpoints });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^handoff sandbox: HANDOFF_ENDPOINTS_FILE \/\S+\/endpoints\.json /);
    expect(stderr).toContain(expected);
    expect(stderr).not.toContain('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
  });

  it.each([
    {
      problem: 'a match key',
      file: JSON.stringify({ endpoints: [{ ...endpoint, match: { [HOSTILE]: ['acme'] } }] }),
      shown: `endpoints[0]: endpoint "billing": match.${HOSTILE_SHOWN} is not a field to match: use shipmentId, status or data.<field>[.<field>…]`,
    },
    {
      problem: 'an event type',
      file: JSON.stringify({ endpoints: [{ ...endpoint, eventTypes: [HOSTILE] }] }),
      shown: `endpoints[0]: endpoint "billing": eventTypes holds ${HOSTILE_QUOTED}: each must be one of `,
    },
    {
      problem: 'a field name',
      file: JSON.stringify({ endpoints: [{ ...endpoint, [HOSTILE]: 1 }] }),
      shown: `endpoints[0]: endpoint "billing": ${HOSTILE_SHOWN} is not an endpoint field (fields: `,
    },
    {
      problem: 'a name',
      file: JSON.stringify({ endpoints: [{ ...endpoint, name: HOSTILE }] }),
      shown: `endpoints[0]: endpoint ${HOSTILE_QUOTED}: name must be 1–64 characters of a-z 0-9 -`,
    },
    {
      problem: 'a key beside "endpoints"',
      file: JSON.stringify({ endpoints: [endpoint], [HOSTILE]: true }),
      shown: `has ${HOSTILE_QUOTED} beside "endpoints", which is all it may hold`,
    },
  ])('exits 2 on $problem holding terminal controls, writing one line with none of them raw', async ({ file, shown }) => {
    const { code, stdout, stderr } = await runSandboxToExit({ endpoints: file });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^handoff sandbox: HANDOFF_ENDPOINTS_FILE \/\S+\/endpoints\.json [^\n]+\n$/);
    expect(stderr).toContain(shown);
    expect(stderr).not.toMatch(RAW_UNSAFE);
    expect(stderr).not.toContain('\nhandoff sandbox: forged');
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
    // The management API's port (sandbox/api-server.ts).
    { variable: 'HANDOFF_API_PORT', value: '70000' },
  ])('exits 2 with one line naming $variable for $value, printing no READY', async ({ variable, value }) => {
    const { code, stdout, stderr } = await runSandboxToExit({ env: { [variable]: value } });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toHaveLength(1);
    expect(stderr).toContain(variable);
  });

  it.each([
    // Checked by the sandbox (sandbox/main.ts), quoted.
    { variable: 'HANDOFF_SQS_PORT', shown: `HANDOFF_SQS_PORT must be a whole number from 0 to 65535, got ${HOSTILE_QUOTED}` },
    // Checked by the settings (lib/config.ts), made inert where the sandbox writes it.
    { variable: 'HANDOFF_MAX_ATTEMPTS', shown: `HANDOFF_MAX_ATTEMPTS must be a whole number from 1 to 100, got "${HOSTILE_SHOWN}"` },
  ])('exits 2 on $variable holding terminal controls, writing one line with none of them raw', async ({ variable, shown }) => {
    const { code, stdout, stderr } = await runSandboxToExit({ env: { [variable]: HOSTILE } });

    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^handoff sandbox: [^\n]+\n$/);
    expect(stderr).toContain(shown);
    expect(stderr).not.toMatch(RAW_UNSAFE);
    expect(stderr).not.toContain('\nhandoff sandbox: forged');
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

describe('npm start with an endpoints file whose match values hold terminal controls', () => {
  let filed: SandboxProcess;

  beforeAll(async () => {
    filed = await startSandboxProcess({
      endpoints: [{ name: 'billing', url: 'http://127.0.0.1:9/webhook', eventTypes: ['*'], match: { 'data.carrier': ['acme', HOSTILE] } }],
    });
  }, 90_000);

  afterAll(async () => {
    await filed?.stop('SIGKILL');
  });

  it('shows the endpoint on one line with the values inert, and no line of its stderr raw', async () => {
    const line = await filed.waitForLog(/^endpoint billing: /, 10_000);

    expect(line).toBe(`endpoint billing: http://127.0.0.1:9/webhook (*; data.carrier acme | ${HOSTILE_SHOWN})`);
    expect(filed.stderr().filter((l) => RAW_UNSAFE.test(l))).toEqual([]);
    expect(filed.stderr().filter((l) => l.startsWith('handoff sandbox: forged'))).toEqual([]);
  });
});
