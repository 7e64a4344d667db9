/**
 * The `handoff` operator command against a running sandbox, run as an operator runs it: a child
 * process (`node bin/handoff.js …`) that finds the sandbox through its state file. Each command,
 * and each refusal, with its output and exit status (SPEC §10).
 *
 * The sandbox delivers to a scripted test receiver, so the test decides which events die (400)
 * and which stay pending (503 with a long retry wait).
 *
 * The tests share one sandbox and run in order: later ones use rows made by earlier ones
 * (`status` reads evt_cli_one from `send`, `replay` refuses evt_cli_dead_1 seeded by `dead`,
 * `stats` counts them all). Run the file, not a single test.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DEFAULT_ENDPOINT, type DeliveryRecord, type DeliveryState } from '../../lib/ledger/ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually } from '../helpers/sandbox-clients';

// This test's own SDK clients: the Node 22 notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = resolve(import.meta.dirname, '../..');
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
/** Each CLI run starts Node and tsx: about a second on a quiet machine, much more on a busy one. */
const CLI_TEST_TIMEOUT_MS = 120_000;
/** How long the consumer may take to bring a row to a state; below the test's own timeout. */
const STATE_WAIT_MS = 60_000;

let receiver: TestReceiver;
let sandbox: SandboxProcess;
let ledger: DynamoDbLedger;
let sqs: SQSClient;
let dynamodb: DynamoDBClient;

interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `handoff` with a clean environment that names only this test's sandbox. */
function handoff(args: readonly string[], options: { stdin?: string; env?: Record<string, string> } = {}): Promise<CliRun> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_')),
  );
  const child = spawn(process.execPath, [join(ROOT, 'bin/handoff.js'), ...args], {
    cwd: ROOT,
    env: { ...inherited, HANDOFF_SANDBOX_FILE: sandbox.stateFile, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  child.stdin.end(options.stdin ?? '');
  return new Promise((resolvePromise) => child.once('close', (code) => resolvePromise({ code, stdout, stderr })));
}

function event(id: string, status = 'in_transit') {
  return { id, shipmentId: 'shp_cli', status, occurredAt: '2026-12-02T10:15:00Z' };
}

/** Waits until the ledger row reaches `state` (the consumer works asynchronously). */
function waitForState(eventId: string, state: DeliveryState, predicate: (r: DeliveryRecord) => boolean = () => true) {
  const row = () => ledger.get({ eventId, endpoint: DEFAULT_ENDPOINT });
  return eventually(
    `${eventId} to be ${state}`,
    async () => {
      const record = await row();
      return record?.state === state && predicate(record) ? record : undefined;
    },
    {
      timeoutMs: STATE_WAIT_MS,
      describe: async () => {
        const record = await row();
        return record ? `${record.state}, ${record.attempts} attempt(s), ${record.history.length} in history` : 'no row';
      },
    },
  );
}

async function visibleMessages(queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages);
}

beforeAll(async () => {
  receiver = await startTestReceiver();
  sandbox = await startSandboxProcess({
    env: {
      HANDOFF_WEBHOOK_URL: receiver.url,
      // A 503 waits ten minutes: long enough that a pending row stays pending for this test.
      HANDOFF_RETRY_SCHEDULE: '600',
      HANDOFF_MAX_ATTEMPTS: '3',
    },
  });
  dynamodb = new DynamoDBClient({ region: 'us-east-1', endpoint: sandbox.ready.dynamodbEndpoint, credentials });
  ledger = new DynamoDbLedger({
    client: DynamoDBDocumentClient.from(dynamodb, { marshallOptions: { removeUndefinedValues: true } }),
    tableName: sandbox.ready.ledgerTable,
  });
  sqs = new SQSClient({ region: 'us-east-1', endpoint: sandbox.ready.sqsEndpoint, credentials, useQueueUrlAsEndpoint: false });
}, 120_000);

afterAll(async () => {
  await sandbox?.stop('SIGTERM');
  await receiver?.close();
  sqs?.destroy();
  dynamodb?.destroy();
});

describe('handoff send', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('sends one valid event, which the sandbox then delivers, and prints its message ID', async () => {
    // Act
    const run = await handoff(['send', '-', '--json'], { stdin: JSON.stringify(event('evt_cli_one'), null, 2) });

    // Assess
    expect(run.code).toBe(0);
    const output = JSON.parse(run.stdout) as { sent: { eventId: string; messageId: string }[]; failed: unknown[] };
    expect(output.sent.map((s) => s.eventId)).toEqual(['evt_cli_one']);
    expect(output.sent[0]?.messageId).toMatch(/\S/);
    expect(output.failed).toEqual([]);
    const record = await waitForState('evt_cli_one', 'delivered');
    expect(record.attempts).toBe(1);
  });

  it('sends every event of an NDJSON file in input order', async () => {
    // Prepare
    const ids = ['evt_cli_nd_1', 'evt_cli_nd_2', 'evt_cli_nd_3', 'evt_cli_nd_4'];
    const directory = mkdtempSync(join(tmpdir(), 'handoff-cli-'));
    const file = join(directory, 'events.ndjson');
    writeFileSync(file, `${ids.map((id) => JSON.stringify(event(id))).join('\n')}\n\n`);

    // Act
    const run = await handoff(['send', file]);
    rmSync(directory, { recursive: true, force: true });

    // Assess
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe('sent 4 of 4 events to the delivery queue');
    expect(run.stdout.trimEnd().split('\n').slice(2).map((line) => line.split(/\s+/)[0])).toEqual(ids);
    for (const id of ids) await waitForState(id, 'delivered');
  });

  it('refuses an invalid event with one line naming the field, and sends nothing', async () => {
    // Prepare: a queue nobody consumes, named explicitly, so "nothing sent" can be counted.
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'cli-probe' }));
    const probe = QueueUrl!;
    const explicit = {
      AWS_REGION: 'us-east-1',
      AWS_ENDPOINT_URL_SQS: sandbox.ready.sqsEndpoint,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    };
    const ndjson = [event('evt_cli_ok_a'), { ...event('evt_cli_bad'), status: 'lost' }, event('evt_cli_ok_b')]
      .map((e) => JSON.stringify(e))
      .join('\n');

    // Act
    const refused = await handoff(['send', '--queue-url', probe], { stdin: ndjson, env: explicit });
    const accepted = await handoff(['send', '--queue-url', probe], { stdin: JSON.stringify(event('evt_cli_ok_a')), env: explicit });

    // Assess
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(
      'handoff: line 2, invalid event evt_cli_bad: status must be one of label_created, packed, in_transit, ' +
        'out_for_delivery, delivered, exception, returned; nothing sent\n',
    );
    expect(accepted.code).toBe(0);
    expect(await visibleMessages(probe)).toBe(1);
  });
});

describe('handoff status', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints the row as JSON with state, attempts, replays and the last outcome', async () => {
    // Prepare
    await waitForState('evt_cli_one', 'delivered');

    // Act
    const run = await handoff(['status', 'evt_cli_one', '--json']);

    // Assess
    expect(run.code).toBe(0);
    const status = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(status).toMatchObject({
      eventId: 'evt_cli_one',
      state: 'delivered',
      attempts: 1,
      replays: 0,
      lastOutcome: { kind: 'accepted', status: 200 },
      eventType: 'shipment.in_transit',
    });
    expect(status).not.toHaveProperty('body');
    expect(status.history).toHaveLength(1);
  });

  it('prints only the stored event with --body, ready to pipe into send', async () => {
    await waitForState('evt_cli_one', 'delivered');

    const run = await handoff(['status', 'evt_cli_one', '--body']);

    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      '{"id":"evt_cli_one","occurredAt":"2026-12-02T10:15:00Z","shipmentId":"shp_cli","status":"in_transit"}\n',
    );
  });

  it('shows a dead row with its reason and attempt history, as aligned text and as JSON', async () => {
    // Prepare
    receiver.respondTo('evt_cli_text_dead', { status: 422, body: 'unknown shipment' });
    await handoff(['send'], { stdin: JSON.stringify(event('evt_cli_text_dead')) });
    await waitForState('evt_cli_text_dead', 'dead');

    // Act
    const run = await handoff(['status', 'evt_cli_text_dead']);
    const json = await handoff(['status', 'evt_cli_text_dead', '--json']);

    // Assess
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      eventId: 'evt_cli_text_dead',
      state: 'dead',
      deadReason: 'rejected',
      attempts: 1,
      lastOutcome: { kind: 'rejected', status: 422 },
    });
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines).toContain('event         evt_cli_text_dead');
    expect(lines).toContain('state         dead (rejected)');
    expect(lines).toContain('attempts      1 of 3');
    expect(lines).toContain('last outcome  rejected (422)');
    expect(lines).toContain('history');
    expect(lines).toContainEqual(expect.stringMatching(/^# {2}at +outcome +status +cause +took$/));
    expect(lines.some((l) => /^1 {2}\d{4}-\d\d-\d\dT.* rejected {2}\s*422/.test(l))).toBe(true);
  });

  it('fails with exit 1 and one line for an unknown event ID', async () => {
    const run = await handoff(['status', 'evt_cli_never_sent']);

    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('handoff: no delivery record for event evt_cli_never_sent\n');
  });
});

describe('handoff dead', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('pages through every dead record with --limit and --cursor, each once', async () => {
    // Prepare: dead rows written the way the consumer writes those of invalid messages.
    const seeded = ['evt_cli_dead_1', 'evt_cli_dead_2', 'evt_cli_dead_3', 'evt_cli_dead_4', 'evt_cli_dead_5'];
    for (const [i, id] of seeded.entries()) {
      await ledger.admitInvalid({ eventId: id, endpoint: DEFAULT_ENDPOINT }, 'status is missing', DEFAULT_RETRY_POLICY, Date.now() + i, 86_400);
    }

    // Act
    const pages: { records: { eventId: string; state: string }[]; cursor: string | null }[] = [];
    let cursor: string | null = null;
    do {
      const run = await handoff(['dead', '--json', '--limit', '2', ...(cursor ? ['--cursor', cursor] : [])]);
      expect(run.code).toBe(0);
      const page = JSON.parse(run.stdout) as (typeof pages)[number];
      pages.push(page);
      cursor = page.cursor;
    } while (cursor !== null);

    // Assess
    const ids = pages.flatMap((p) => p.records.map((r) => r.eventId));
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(pages.every((p) => p.records.length <= 2)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(seeded));
    expect(pages.flatMap((p) => p.records).every((r) => r.state === 'dead')).toBe(true);
  });

  it('prints a table and the command for the next page', async () => {
    const run = await handoff(['dead', '--limit', '1']);

    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^event\s+reason\s+died\s+attempts\s+replays\s+why$/);
    expect(lines.at(-1)).toMatch(/^more: handoff dead --limit 1 --cursor \S+$/);
  });

  it('refuses a cursor it did not issue as a usage error', async () => {
    const run = await handoff(['dead', '--cursor', 'not-a-cursor']);

    expect(run.code).toBe(2);
    expect(run.stderr).toBe('handoff: --cursor: cursor is not one this ledger issued for dead rows; start again without --cursor\n');
  });
});

describe('handoff replay', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('returns a dead record to pending, enqueues it, and the sandbox delivers it again', async () => {
    // Prepare: the receiver refuses the first attempt, then accepts.
    receiver.respondTo('evt_cli_replay', 400);
    await handoff(['send'], { stdin: JSON.stringify(event('evt_cli_replay')) });
    await waitForState('evt_cli_replay', 'dead');

    // Act
    const run = await handoff(['replay', 'evt_cli_replay', '--operator', 'alice', '--reason', 'receiver fixed (INC-7)', '--json']);

    // Assess
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      eventId: 'evt_cli_replay',
      endpoint: 'default',
      state: 'pending',
      attempts: 0,
      replays: 1,
      operator: 'alice',
      reason: 'receiver fixed (INC-7)',
      enqueued: true,
    });
    const delivered = await waitForState('evt_cli_replay', 'delivered');
    expect(delivered.replays).toBe(1);
    expect(delivered.audit).toEqual([expect.objectContaining({ action: 'replay', operator: 'alice', reason: 'receiver fixed (INC-7)' })]);
    expect(receiver.requestsFor('evt_cli_replay').map((r) => r.eventId)).toEqual(['evt_cli_replay', 'evt_cli_replay']);
  });

  it('refuses a pending record with exit 1 and leaves it as it was', async () => {
    // Prepare: a 503 leaves the row pending for the ten-minute retry wait.
    receiver.respondTo('evt_cli_pending', 503);
    await handoff(['send'], { stdin: JSON.stringify(event('evt_cli_pending')) });
    await waitForState('evt_cli_pending', 'pending', (r) => r.attempts === 1 && r.history.length === 1);

    // Act
    const run = await handoff(['replay', 'evt_cli_pending', '--operator', 'alice', '--reason', 'try again']);

    // Assess
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('handoff: event evt_cli_pending is pending, not dead: only dead records can be replayed\n');
    const record = await ledger.get({ eventId: 'evt_cli_pending', endpoint: DEFAULT_ENDPOINT });
    expect(record).toMatchObject({ state: 'pending', replays: 0, audit: [] });
  });

  it('refuses a dead invalid message, which holds no event to replay', async () => {
    const run = await handoff(['replay', 'evt_cli_dead_1', '--operator', 'alice', '--reason', 'retry']);

    expect(run.code).toBe(1);
    expect(run.stderr).toBe('handoff: event evt_cli_dead_1 died as an invalid message: there is no valid event to replay\n');
  });

  it('is a usage error (exit 2) without a reason, and changes nothing', async () => {
    // Prepare
    await ledger.admitInvalid({ eventId: 'evt_cli_no_reason', endpoint: DEFAULT_ENDPOINT }, 'bad', DEFAULT_RETRY_POLICY, Date.now(), 86_400);

    // Act
    const missing = await handoff(['replay', 'evt_cli_no_reason', '--operator', 'alice']);
    const blank = await handoff(['replay', 'evt_cli_no_reason', '--operator', 'alice', '--reason', '  ']);

    // Assess
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe("error: required option '--reason <text>' not specified\n");
    expect(blank.code).toBe(2);
    expect(blank.stderr).toBe('handoff: replay needs a reason: --reason "why it is safe to deliver again"\n');
    expect(await ledger.get({ eventId: 'evt_cli_no_reason', endpoint: DEFAULT_ENDPOINT })).toMatchObject({ replays: 0, audit: [] });
  });

  it('is a usage error (exit 2) without an operator', async () => {
    const run = await handoff(['replay', 'evt_cli_no_reason', '--reason', 'fixed']);

    expect(run.code).toBe(2);
    expect(run.stderr).toBe("error: required option '--operator <name>' not specified\n");
  });

  it('explains itself with --help and exit 0', async () => {
    const run = await handoff(['replay', '--help']);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: handoff replay [options] <eventId>');
    expect(run.stdout).toContain('--reason <text>');
    expect(run.stdout).toContain('--operator <name>');
  });
});

describe('handoff stats', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints counts, oldest pending age, retry rate, latency percentiles and queue depths as JSON', async () => {
    // Prepare: rows from the tests above, the pending one included.
    await waitForState('evt_cli_pending', 'pending');

    // Act
    const run = await handoff(['stats', '--json']);

    // Assess
    expect(run.code).toBe(0);
    const stats = JSON.parse(run.stdout) as Record<string, any>;
    expect(stats.pendingCount).toBeGreaterThanOrEqual(1);
    expect(stats.oldestPendingAgeMs).toBeGreaterThanOrEqual(0);
    expect(stats.deadCount).toBeGreaterThanOrEqual(6);
    expect(stats.deliveredCount).toBeGreaterThanOrEqual(6);
    expect(stats.retryRate).toBeGreaterThanOrEqual(0);
    expect(stats.retryRate).toBeLessThan(1);
    expect(stats.latencyMs.p50).toBeGreaterThanOrEqual(0);
    expect(stats.latencyMs.p99).toBeGreaterThanOrEqual(stats.latencyMs.p50);
    expect(stats.capped).toEqual({ pending: false, dead: false, delivered: false });
    for (const queue of [stats.queue, stats.deadLetterQueue]) {
      expect(Object.keys(queue).sort()).toEqual(['delayed', 'inFlight', 'visible']);
      expect(Object.values(queue).every((n) => Number.isInteger(n) && (n as number) >= 0)).toBe(true);
    }
    // The pending row's message is held in flight for its retry wait.
    expect(stats.queue.inFlight).toBeGreaterThanOrEqual(1);
  });

  it('prints the same figures as aligned text', async () => {
    const run = await handoff(['stats']);

    expect(run.code).toBe(0);
    const labels = run.stdout.trimEnd().split('\n').map((line) => line.slice(0, 19).trimEnd());
    expect(labels).toEqual([
      'pending',
      'dead',
      'delivered',
      'retry rate',
      'latency p50',
      'latency p99',
      'queue',
      'dead-letter queue',
    ]);
  });
});

/**
 * CloudFormation's DescribeStacks on loopback, answering in its query protocol (XML): one stack
 * whose outputs name the sandbox's resources, and a ValidationError for any other name, as AWS
 * answers for a stack that does not exist.
 */
async function startStackDescriber(stackName: string, outputs: Record<string, string>): Promise<{ url: string; server: Server }> {
  const xmlns = 'http://cloudformation.amazonaws.com/doc/2010-05-15/';
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const server = createServer((request, response) => {
    let form = '';
    request.on('data', (chunk: Buffer) => (form += chunk.toString('utf8')));
    request.on('end', () => {
      const asked = new URLSearchParams(form).get('StackName');
      response.setHeader('content-type', 'text/xml');
      if (asked !== stackName) {
        response.statusCode = 400;
        response.end(
          `<ErrorResponse xmlns="${xmlns}"><Error><Type>Sender</Type><Code>ValidationError</Code>` +
            `<Message>Stack with id ${escape(asked ?? '')} does not exist</Message></Error><RequestId>r1</RequestId></ErrorResponse>`,
        );
        return;
      }
      const members = Object.entries(outputs)
        .map(([key, value]) => `<member><OutputKey>${key}</OutputKey><OutputValue>${escape(value)}</OutputValue></member>`)
        .join('');
      response.end(
        `<DescribeStacksResponse xmlns="${xmlns}"><DescribeStacksResult><Stacks><member>` +
          `<StackName>${stackName}</StackName><StackId>arn:aws:cloudformation:us-east-1:000000000000:stack/${stackName}/1</StackId>` +
          `<CreationTime>2026-12-02T10:00:00Z</CreationTime><StackStatus>CREATE_COMPLETE</StackStatus>` +
          `<Outputs>${members}</Outputs></member></Stacks></DescribeStacksResult>` +
          `<ResponseMetadata><RequestId>r2</RequestId></ResponseMetadata></DescribeStacksResponse>`,
      );
    });
  });
  await new Promise<void>((resolvePromise) => server.listen(0, '127.0.0.1', resolvePromise));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('finding a target', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('reads the queue, dead-letter queue and table names from a stack with --stack NAME', async () => {
    // Prepare: a "deployed" stack whose resources are the sandbox's, reached through the
    // standard AWS environment rather than the state file (which names no sandbox here).
    const cloudFormation = await startStackDescriber('handoff-e2e', {
      QueueUrl: sandbox.ready.queueUrl,
      DeadLetterQueueUrl: sandbox.ready.deadLetterQueueUrl,
      LedgerTableName: sandbox.ready.ledgerTable,
    });
    const env = {
      HANDOFF_SANDBOX_FILE: join(tmpdir(), 'handoff-no-such-sandbox.json'),
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_CLOUDFORMATION: cloudFormation.url,
      AWS_ENDPOINT_URL_SQS: sandbox.ready.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: sandbox.ready.dynamodbEndpoint,
    };

    try {
      // Act
      const found = await handoff(['stats', '--stack', 'handoff-e2e', '--json'], { env });
      const missing = await handoff(['stats', '--stack', 'handoff-nope'], { env });

      // Assess: stats reads the table and both queues, so each name must have been right.
      expect(found).toMatchObject({ code: 0, stderr: '' });
      const stats = JSON.parse(found.stdout) as { queue: object | null; deadLetterQueue: object | null; deadCount: number };
      expect(stats.queue).not.toBeNull();
      expect(stats.deadLetterQueue).not.toBeNull();
      expect(stats.deadCount).toBe((await ledger.listByState('dead', { limit: 1000 })).records.length);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toBe('handoff: stack handoff-nope: Stack with id handoff-nope does not exist\n');
    } finally {
      await new Promise((resolvePromise) => cloudFormation.server.close(resolvePromise));
    }
  });

  it('is a usage error (exit 2) naming the ways to give one when no sandbox runs', async () => {
    const run = await handoff(['dead'], { env: { HANDOFF_SANDBOX_FILE: join(tmpdir(), 'handoff-no-such-sandbox.json') } });

    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'handoff: no handoff to talk to: start the sandbox (npm start), or pass --stack NAME, ' +
        'or --queue-url/--dlq-url/--table with AWS_REGION and credentials set\n',
    );
  });

  it('is a usage error (exit 2) for an unknown command', async () => {
    const run = await handoff(['resend']);

    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe("error: unknown command 'resend'");
  });
});
