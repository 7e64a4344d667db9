/**
 * The `handoff` operator command against a running sandbox, run as an operator runs it: a child
 * process (`node bin/handoff.js …`) that finds the sandbox through its state file. Each command,
 * and each refusal, with its output and exit status (docs/contract.md §10).
 *
 * The sandbox delivers to a scripted test receiver, so the test decides which events die (400)
 * and which stay pending (503 with a long retry wait).
 *
 * The tests share one sandbox and run in order: later ones use rows made by earlier ones
 * (`status` reads evt_cli_one from `send`, the audit view reads the replay of evt_cli_replay).
 * Run the file, not a single test. The figures `stats` prints are tested in stats.test.ts; here
 * it runs only where hostile content must not reach the terminal.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
  type SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendCommand } from '../../cli/commands/send';
import { HELD_BACK, payloadLimitFor } from '../../cli/commands/send-events';
import { CommandContext } from '../../cli/context';
import { describeFailure } from '../../cli/errors';
import { sandboxTarget, type Target } from '../../cli/target';
import { parseEvent } from '../../lib/event';
import { messageGroupIdFor } from '../../lib/fifo';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DEFAULT_ENDPOINT, type DeliveryRecord, type DeliveryState } from '../../lib/ledger/ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { OPERATOR_MAX_CHARS } from '../../lib/replay';
import { MessageSeal } from '../../lib/queue/seal';
import { ORDERED_QUEUE_ATTRIBUTES } from '../../sandbox/sandbox';
import { writeSandboxState } from '../../sandbox/state-file';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually } from '../helpers/sandbox-clients';
import { startCallerIdentity } from '../helpers/sts-stub';

// This test's own SDK clients: the Node 22 notice is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = resolve(import.meta.dirname, '../..');
const credentials = { accessKeyId: 'test', secretAccessKey: 'test' };
/** Each CLI run starts Node and tsx: about a second on a quiet machine, much more on a busy one. */
const CLI_TEST_TIMEOUT_MS = 120_000;
/** The sandbox's payload limit: above every event these tests send but the oversized one. */
const SANDBOX_PAYLOAD_LIMIT_BYTES = 1024;
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

/** A dead row written as the consumer writes a rejected attempt: listed by `dead`, replayable. */
async function seedRejected(eventId: string, detail: string, responseStart: string = detail): Promise<void> {
  const parsed = parseEvent(JSON.stringify(event(eventId)));
  if (!parsed.ok) throw parsed.error;
  const nowMs = Date.now();
  const { claimToken } = await ledger.claim({
    event: parsed.value,
    endpoint: DEFAULT_ENDPOINT,
    owner: 'cli-test',
    nowMs,
    leaseMs: 30_000,
    policy: DEFAULT_RETRY_POLICY,
    retentionSeconds: 86_400,
  });
  await ledger.recordAttempt({
    eventId,
    endpoint: DEFAULT_ENDPOINT,
    claimToken,
    body: parsed.value.body,
    nowMs: nowMs + 1,
    attempt: { attempt: 1, at: nowMs, outcome: 'rejected', status: 400, durationMs: 1 },
    outcome: { kind: 'rejected', status: 400, responseStart },
    next: { state: 'dead', reason: 'rejected', detail },
  });
}

/**
 * One delivery of an event to an endpoint, written as the consumer writes it: refused (dead,
 * rejected), its last attempt failed (dead, exhausted) or accepted (delivered). The sandbox's
 * consumer does not fan out to these endpoints; the rows stand for an event routed to several.
 */
async function seedDelivery(eventId: string, endpoint: string, outcome: 'rejected' | 'exhausted' | 'delivered'): Promise<void> {
  const parsed = parseEvent(JSON.stringify(event(eventId)));
  if (!parsed.ok) throw parsed.error;
  const nowMs = Date.now();
  const { claimToken } = await ledger.claim({
    event: parsed.value,
    endpoint,
    owner: 'cli-test',
    nowMs,
    leaseMs: 30_000,
    policy: outcome === 'exhausted' ? { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 } : DEFAULT_RETRY_POLICY,
    retentionSeconds: 86_400,
  });
  const attempt = { attempt: 1, at: nowMs, durationMs: 1 };
  await ledger.recordAttempt({
    eventId,
    endpoint,
    claimToken,
    body: parsed.value.body,
    nowMs: nowMs + 1,
    ...(outcome === 'delivered'
      ? { attempt: { ...attempt, outcome: 'accepted', status: 200 }, outcome: { kind: 'accepted', status: 200 }, next: { state: 'delivered' } }
      : outcome === 'rejected'
        ? {
            attempt: { ...attempt, outcome: 'rejected', status: 400 },
            outcome: { kind: 'rejected', status: 400, responseStart: 'no such shipment' },
            next: { state: 'dead', reason: 'rejected', detail: 'HTTP 400: no such shipment' },
          }
        : {
            attempt: { ...attempt, outcome: 'temporary', status: 503 },
            outcome: { kind: 'temporary', status: 503 },
            next: { state: 'dead', reason: 'exhausted', detail: 'attempts spent; last: HTTP 503' },
          }),
  });
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
      // Small, so `send` can be shown checking against the sandbox's limit, not the operator's.
      HANDOFF_PAYLOAD_LIMIT_BYTES: String(SANDBOX_PAYLOAD_LIMIT_BYTES),
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
      // Names given on the command line carry no payload limit: the command says which it used.
      'handoff: note: no payload limit from the names given; checking events against 65536 bytes (the default)\n' +
        'handoff: line 2, invalid event evt_cli_bad: status must be one of label_created, packed, in_transit, ' +
        'out_for_delivery, delivered, exception, returned; nothing sent\n',
    );
    expect(accepted.code).toBe(0);
    expect(await visibleMessages(probe)).toBe(1);
  });
});

describe("handoff send and the target's payload limit", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("refuses an event over the sandbox's limit, naming that limit, whatever the operator's own setting", async () => {
    // Prepare: larger than the sandbox's limit, well under the operator's (and the default).
    const big = JSON.stringify({ ...event('evt_cli_big'), data: { note: 'x'.repeat(SANDBOX_PAYLOAD_LIMIT_BYTES) } });
    const size = Buffer.byteLength(big);

    // Act
    const run = await handoff(['send'], { stdin: big, env: { HANDOFF_PAYLOAD_LIMIT_BYTES: '65536' } });

    // Assess
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `handoff: invalid event evt_cli_big: message is ${size} bytes, over the ${SANDBOX_PAYLOAD_LIMIT_BYTES}-byte payload limit of the sandbox; nothing sent\n`,
    );
    expect(await ledger.get({ eventId: 'evt_cli_big', endpoint: DEFAULT_ENDPOINT })).toBeUndefined();
  });
});

/**
 * `handoff send --ordered` (docs/contract.md §13), run in this process through the command itself
 * (`sendCommand` with `ordered`, against the running sandbox and its emulator): the flag is
 * registered in cli/main.ts, which this file's child-process runs exercise elsewhere.
 */
describe('handoff send --ordered', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  const silent = () => new PassThrough() as unknown as NodeJS.WriteStream;
  /** Runs the send command against `target`, as `handoff send --ordered` does. */
  async function sendOrdered(target: Target, text: string, ctx = new CommandContext(target, { stdout: silent(), stderr: silent() })) {
    try {
      return await sendCommand(ctx, text, { payloadLimit: payloadLimitFor(target, {}), ordered: true });
    } finally {
      ctx.close();
    }
  }
  const shipmentEvent = (id: string, shipmentId: string) => ({ ...event(id), shipmentId });
  const ndjson = (events: readonly object[]) => events.map((e) => JSON.stringify(e)).join('\n');

  /** Receives everything on a queue nobody else consumes, deleting as it goes, until `count` came. */
  async function drain(queueUrl: string, count: number) {
    const received: { body: string; group?: string; deduplicationId?: string }[] = [];
    await eventually(`${count} messages on ${queueUrl}`, async () => {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageSystemAttributeNames: ['All'] }),
      );
      for (const message of Messages) {
        received.push({
          body: message.Body!,
          ...(message.Attributes?.MessageGroupId ? { group: message.Attributes.MessageGroupId } : {}),
          ...(message.Attributes?.MessageDeduplicationId ? { deduplicationId: message.Attributes.MessageDeduplicationId } : {}),
        });
        await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.ReceiptHandle }));
      }
      return received.length >= count ? received : undefined;
    }, { timeoutMs: STATE_WAIT_MS, describe: () => `${received.length} received` });
    return received;
  }

  it('sends each event with its shipment as MessageGroupId and its ID as MessageDeduplicationId, in input order per shipment, once', async () => {
    // Prepare: an ordered intake nobody consumes, in the sandbox's emulator, so what arrives can be read.
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: 'cli-ordered-probe.fifo', Attributes: { ...ORDERED_QUEUE_ATTRIBUTES } }),
    );
    const probe = QueueUrl!;
    const target: Target = { ...sandboxTarget(sandbox.stateFile)!, orderedQueueUrl: probe };
    // Two shipments, interleaved; the second's ID has a space, which SQS refuses as a group ID.
    const events = [
      shipmentEvent('evt_ord_a1', 'shp_ord_a'),
      shipmentEvent('evt_ord_b1', 'shp ord b'),
      shipmentEvent('evt_ord_a2', 'shp_ord_a'),
      shipmentEvent('evt_ord_a3', 'shp_ord_a'),
      shipmentEvent('evt_ord_b2', 'shp ord b'),
    ];

    // Act
    const first = await sendOrdered(target, ndjson(events));
    const received = await drain(probe, events.length);
    const again = await sendOrdered(target, ndjson(events));

    // Assess
    expect(first.failure).toBeUndefined();
    expect(first.human.split('\n')[0]).toBe('sent 5 of 5 events to the ordered intake (in order per shipment)');
    expect((first.json as { sent: { eventId: string }[] }).sent.map((s) => s.eventId)).toEqual(events.map((e) => e.id));
    const idsIn = (group: string) => received.filter((m) => m.group === group).map((m) => (JSON.parse(m.body) as { id: string }).id);
    expect(idsIn('shp_ord_a')).toEqual(['evt_ord_a1', 'evt_ord_a2', 'evt_ord_a3']);
    expect(idsIn(messageGroupIdFor('shp ord b'))).toEqual(['evt_ord_b1', 'evt_ord_b2']);
    expect(messageGroupIdFor('shp ord b')).toMatch(/^sha256:[0-9a-f]{64}$/);
    for (const message of received) expect(message.deduplicationId).toBe((JSON.parse(message.body) as { id: string }).id);
    // The same events again, within SQS's deduplication window: acknowledged, and nothing new queued.
    expect(again.failure).toBeUndefined();
    expect(await visibleMessages(probe)).toBe(0);
  });

  it("reaches the sandbox's ordered intake, whose events the sandbox delivers", async () => {
    // Prepare
    const target = sandboxTarget(sandbox.stateFile)!;
    const ids = ['evt_cli_ord_1', 'evt_cli_ord_2', 'evt_cli_ord_3'];

    // Act
    const result = await sendOrdered(target, ndjson(ids.map((id) => shipmentEvent(id, 'shp_cli_ord'))));

    // Assess
    expect(target.orderedQueueUrl).toBe(sandbox.ready.orderedQueueUrl);
    expect(sandbox.ready.orderedQueueUrl).toMatch(/\.fifo$/);
    expect(result.failure).toBeUndefined();
    for (const id of ids) expect((await waitForState(id, 'delivered')).attempts).toBe(1);
  });

  it("holds back a shipment's later events once one of them is not sent, sending one batch at a time, and the other shipments' all", async () => {
    // Prepare: a queue that refuses evt_hb_a2 and accepts the rest, and counts calls in flight.
    const calls: string[][] = [];
    let inFlight = 0;
    let mostInFlight = 0;
    const fakeSqs = {
      async send(command: SendMessageBatchCommand) {
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        await new Promise((resolvePromise) => setTimeout(resolvePromise, 10));
        inFlight -= 1;
        const entries = command.input.Entries ?? [];
        calls.push(entries.map((e) => e.MessageDeduplicationId!));
        return {
          Successful: entries.filter((e) => e.MessageDeduplicationId !== 'evt_hb_a2').map((e) => ({ Id: e.Id, MessageId: `m-${e.MessageDeduplicationId}` })),
          Failed: entries
            .filter((e) => e.MessageDeduplicationId === 'evt_hb_a2')
            .map((e) => ({ Id: e.Id, Code: 'InternalError', Message: 'try again', SenderFault: false })),
        };
      },
      destroy() {},
    };
    const target: Target = { ...sandboxTarget(sandbox.stateFile)!, orderedQueueUrl: 'http://sqs.us-east-1.localhost:1/000000000000/x.fifo' };
    const ctx = new (class extends CommandContext {
      override sqs() {
        return fakeSqs as unknown as SQSClient;
      }
    })(target, { stdout: silent(), stderr: silent() });
    const events = ['a1', 'b1', 'a2', 'b2', 'a3', 'b3', 'a4'].map((n) => shipmentEvent(`evt_hb_${n}`, `shp_hb_${n[0]}`));

    // Act
    const result = await sendOrdered(target, ndjson(events), ctx);

    // Assess: never two events of a shipment in one call, one call at a time, a3 and a4 never sent.
    expect(calls).toEqual([
      ['evt_hb_a1', 'evt_hb_b1'],
      ['evt_hb_a2', 'evt_hb_b2'],
      ['evt_hb_b3'],
    ]);
    expect(mostInFlight).toBe(1);
    const json = result.json as { sent: { eventId: string }[]; failed: { eventId: string; code: string; message: string }[] };
    expect(json.sent.map((s) => s.eventId)).toEqual(['evt_hb_a1', 'evt_hb_b1', 'evt_hb_b2', 'evt_hb_b3']);
    expect(json.failed).toEqual([
      { eventId: 'evt_hb_a2', code: 'InternalError', message: 'try again' },
      { eventId: 'evt_hb_a3', code: HELD_BACK, message: 'not sent: an earlier event of its shipment (evt_hb_a2) was not sent' },
      { eventId: 'evt_hb_a4', code: HELD_BACK, message: 'not sent: an earlier event of its shipment (evt_hb_a2) was not sent' },
    ]);
    expect(result.failure).toBe('3 of 7 events not sent; first: evt_hb_a2: InternalError try again');
  });

  it('refuses with one line (exit 1), sending nothing, when the sandbox names no ordered intake', async () => {
    // Prepare: the state file of a sandbox started before the ordered intake.
    const directory = mkdtempSync(join(tmpdir(), 'handoff-cli-unordered-'));
    const path = join(directory, 'sandbox.json');
    const { orderedQueueUrl: _ordered, ...older } = sandbox.ready;
    writeSandboxState(path, older);

    try {
      // Act
      const refusal = await sendOrdered(sandboxTarget(path)!, JSON.stringify(shipmentEvent('evt_cli_ord_none', 'shp_none'))).then(
        () => undefined,
        (error: unknown) => describeFailure(error),
      );

      // Assess
      expect(refusal).toEqual({
        exitCode: 1,
        code: 'no-ordered-queue',
        message: `the sandbox has no ordered intake (its state file ${path} names no orderedQueueUrl: it was started before the ordered intake): restart it (npm start)`,
      });
      expect(await ledger.get({ eventId: 'evt_cli_ord_none', endpoint: DEFAULT_ENDPOINT })).toBeUndefined();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('handoff send --ordered, as an operator runs it', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("sends to the sandbox's ordered intake, which the sandbox delivers; --ordered-queue-url names another", async () => {
    // Prepare
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: 'cli-ordered-flag.fifo', Attributes: { ...ORDERED_QUEUE_ATTRIBUTES } }),
    );
    const ids = ['evt_cli_oflag_1', 'evt_cli_oflag_2'];
    const ndjson = ids.map((id) => JSON.stringify({ ...event(id), shipmentId: 'shp_cli_oflag' })).join('\n');

    // Act
    const run = await handoff(['send', '--ordered'], { stdin: ndjson });
    const named = await handoff(['send', '--ordered', '--ordered-queue-url', QueueUrl!], {
      stdin: JSON.stringify({ ...event('evt_cli_oflag_named'), shipmentId: 'shp_cli_oflag' }),
      env: { HANDOFF_SANDBOX_FILE: join(tmpdir(), 'handoff-no-such-sandbox.json'), AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL_SQS: sandbox.ready.sqsEndpoint, AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' },
    });

    // Assess
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout.split('\n')[0]).toBe('sent 2 of 2 events to the ordered intake (in order per shipment)');
    for (const id of ids) await waitForState(id, 'delivered');
    expect(named.code).toBe(0);
    expect(await visibleMessages(QueueUrl!)).toBe(1);
  });
});

describe('handoff status', { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it('prints the row as JSON with state, attempts, replays and the last outcome', async () => {
    // Prepare
    await waitForState('evt_cli_one', 'delivered');

    // Act
    const run = await handoff(['status', 'evt_cli_one', '--json']);
    const one = await handoff(['status', 'evt_cli_one', '--endpoint', 'default', '--json']);

    // Assess: the event's deliveries (one, to the endpoint default), and that delivery's object alone.
    expect(run.code).toBe(0);
    const output = JSON.parse(run.stdout) as { eventId: string; deliveries: Record<string, unknown>[] };
    expect(output.eventId).toBe('evt_cli_one');
    expect(output.deliveries).toHaveLength(1);
    const status = output.deliveries[0]!;
    expect(JSON.parse(one.stdout)).toStrictEqual(status);
    expect(status).toMatchObject({
      endpoint: 'default',
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

  it('says with --body, exit 1 and one line, that an event accepted keeps no body', async () => {
    await waitForState('evt_cli_one', 'delivered');

    const run = await handoff(['status', 'evt_cli_one', '--body']);

    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'handoff: event evt_cli_one keeps no body: no delivery of it is parked, waiting or dead (a delivery accepted or being retried leaves the body on its message)\n',
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
    expect((JSON.parse(json.stdout) as { deliveries: unknown[] }).deliveries[0]).toMatchObject({
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
    // Prepare: dead rows written the way the consumer writes a rejected attempt.
    const seeded = ['evt_cli_dead_1', 'evt_cli_dead_2', 'evt_cli_dead_3', 'evt_cli_dead_4', 'evt_cli_dead_5'];
    for (const id of seeded) await seedRejected(id, 'HTTP 400: no such shipment');

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
    expect(lines[0]).toMatch(/^event\s+endpoint\s+reason\s+died\s+attempts\s+replays\s+why$/);
    expect(lines.at(-1)).toMatch(/^more: handoff dead --limit 1 --cursor \S+$/);
  });

  it('refuses a cursor it did not issue as a usage error', async () => {
    const run = await handoff(['dead', '--cursor', 'not-a-cursor']);

    expect(run.code).toBe(2);
    expect(run.stderr).toBe('handoff: --cursor: cursor is not one this ledger issued for dead rows in this order; start again without --cursor\n');
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
      operator: 'alice',
      // The sandbox has no caller identity to record: said, not invented.
      caller: null,
      reason: 'receiver fixed (INC-7)',
      deliveries: [{ endpoint: 'default', state: 'pending', attempts: 0, replays: 1, enqueued: true }],
    });
    const delivered = await waitForState('evt_cli_replay', 'delivered');
    expect(delivered.replays).toBe(1);
    expect(delivered.audit).toEqual([expect.objectContaining({ action: 'replay', operator: 'alice', reason: 'receiver fixed (INC-7)' })]);
    expect(receiver.requestsFor('evt_cli_replay').map((r) => r.eventId)).toEqual(['evt_cli_replay', 'evt_cli_replay']);
    expect(delivered.audit[0]).not.toHaveProperty('caller');
  });

  it('shows the audit entry in status: time, action, operator, caller (none in the sandbox) and reason', async () => {
    await waitForState('evt_cli_replay', 'delivered');

    const run = await handoff(['status', 'evt_cli_replay']);

    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    const audit = lines.slice(lines.indexOf('audit') + 1);
    expect(audit[0]).toMatch(/^at +action +operator +caller +reason$/);
    expect(audit[1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(.* ago\) +replay +alice +\(none\) +receiver fixed \(INC-7\)$/);
  });

  it('refuses an operator name over the cap with exit 2, before touching the record', async () => {
    // Prepare
    const key = { eventId: 'evt_cli_long_name', endpoint: DEFAULT_ENDPOINT };
    await seedRejected(key.eventId, 'HTTP 400: no such shipment');
    const before = await ledger.get(key);

    // Act
    const run = await handoff(['replay', key.eventId, '--operator', 'o'.repeat(OPERATOR_MAX_CHARS + 1), '--reason', 'fixed']);

    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`handoff: --operator is ${OPERATOR_MAX_CHARS + 1} characters, over the ${OPERATOR_MAX_CHARS}-character limit\n`);
    expect(await ledger.get(key)).toEqual(before);
    expect(before).toMatchObject({ state: 'dead', replays: 0 });
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
    await ledger.admitInvalid({ eventId: 'evt_cli_invalid', endpoint: DEFAULT_ENDPOINT }, 'status is missing', DEFAULT_RETRY_POLICY, Date.now(), 86_400);

    const run = await handoff(['replay', 'evt_cli_invalid', '--operator', 'alice', '--reason', 'retry']);

    expect(run.code).toBe(1);
    expect(run.stderr).toBe('handoff: event evt_cli_invalid died as an invalid message: there is no valid event to replay\n');
  });

  it('is a usage error (exit 2) without a reason, and changes nothing', async () => {
    // Prepare
    const key = { eventId: 'evt_cli_no_reason', endpoint: DEFAULT_ENDPOINT };
    await seedRejected(key.eventId, 'HTTP 400: no such shipment');
    const before = await ledger.get(key);

    // Act
    const missing = await handoff(['replay', 'evt_cli_no_reason', '--operator', 'alice']);
    const blank = await handoff(['replay', 'evt_cli_no_reason', '--operator', 'alice', '--reason', '  ']);

    // Assess
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe("error: required option '--reason <text>' not specified\n");
    expect(blank.code).toBe(2);
    expect(blank.stderr).toBe('handoff: replay needs a reason: --reason "why it is safe to deliver again"\n');
    expect(await ledger.get(key)).toEqual(before);
    expect(before).toMatchObject({ state: 'dead', replays: 0 });
  });

  it('is a usage error (exit 2) without an operator', async () => {
    const run = await handoff(['replay', 'evt_cli_no_reason', '--reason', 'fixed']);

    expect(run.code).toBe(2);
    expect(run.stderr).toBe("error: required option '--operator <name>' not specified\n");
  });

  it('explains itself with --help and exit 0', async () => {
    const run = await handoff(['replay', '--help']);

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Usage: handoff replay [options] [eventId]');
    expect(run.stdout).toContain('--reason <text>');
    expect(run.stdout).toContain('--operator <name>');
    expect(run.stdout).toContain('--dead-since <time>');
    expect(run.stdout).toMatch(/--dead-reason <reason> +bulk: only the deliveries that died for this reason/);
  });
});

describe('per delivery: an event routed to several endpoints', { timeout: 4 * CLI_TEST_TIMEOUT_MS }, () => {
  const CALLER = 'arn:aws:iam::000000000000:user/alice';
  let probe: string;
  let sts: { url: string; server: Server };
  /** The sandbox's table and a queue nobody consumes, named explicitly, so every enqueued message can be read back. */
  let explicit: Record<string, string>;

  beforeAll(async () => {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'cli-replay-probe' }));
    probe = QueueUrl!;
    sts = await startCallerIdentity(CALLER, '000000000000');
    explicit = {
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_SQS: sandbox.ready.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: sandbox.ready.dynamodbEndpoint,
      AWS_ENDPOINT_URL_STS: sts.url,
      // Names given, not the sandbox's state file: the seal key comes from the environment.
      HANDOFF_SEAL_KEY: sandbox.ready.sealKey,
    };
  });

  afterAll(async () => {
    await new Promise((resolvePromise) => sts?.server.close(resolvePromise));
  });

  const onProbe = () => ['--queue-url', probe, '--table', sandbox.ready.ledgerTable];

  /** Every message on the probe queue now: its event ID and its `endpoint` attribute, where sealed with the sandbox's key. */
  async function drainProbe(): Promise<{ id: string; endpoint: string | undefined }[]> {
    const messages: { id: string; endpoint: string | undefined }[] = [];
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: probe, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], VisibilityTimeout: 600 }),
      );
      if (Messages.length === 0) return messages.sort((a, b) => (`${a.id} ${a.endpoint}` < `${b.id} ${b.endpoint}` ? -1 : 1));
      const seal = new MessageSeal(sandbox.ready.sealKey);
      for (const m of Messages) {
        const control = seal.controlOf(m.Body ?? '', (name) => m.MessageAttributes?.[name]?.StringValue);
        messages.push({ id: (JSON.parse(m.Body ?? '{}') as { id: string }).id, endpoint: control.endpoint });
      }
    }
  }

  it('status lists every delivery of the event, one object per endpoint; --endpoint shows one; --body the event', async () => {
    // Prepare
    await seedDelivery('evt_cli_fan', 'billing', 'rejected');
    await seedDelivery('evt_cli_fan', 'crm', 'exhausted');
    await seedDelivery('evt_cli_fan', 'warehouse', 'delivered');

    // Act
    const json = await handoff(['status', 'evt_cli_fan', '--json']);
    const text = await handoff(['status', 'evt_cli_fan']);
    const one = await handoff(['status', 'evt_cli_fan', '--endpoint', 'crm', '--json']);
    const missing = await handoff(['status', 'evt_cli_fan', '--endpoint', 'nowhere']);
    const badName = await handoff(['status', 'evt_cli_fan', '--endpoint', 'Not A Name']);
    const body = await handoff(['status', 'evt_cli_fan', '--body']);

    // Assess
    expect(json.code).toBe(0);
    const output = JSON.parse(json.stdout) as { eventId: string; deliveries: Record<string, unknown>[] };
    expect(output.eventId).toBe('evt_cli_fan');
    expect(output.deliveries.map((d) => [d.endpoint, d.state, d.deadReason ?? null, d.attempts, d.replays])).toEqual([
      ['billing', 'dead', 'rejected', 1, 0],
      ['crm', 'dead', 'exhausted', 1, 0],
      ['warehouse', 'delivered', null, 1, 0],
    ]);
    expect(output.deliveries[0]).toMatchObject({ lastOutcome: { kind: 'rejected', status: 400 }, deadDetail: 'HTTP 400: no such shipment' });
    expect(text.code).toBe(0);
    const lines = text.stdout.split('\n');
    expect(lines[0]).toBe('event evt_cli_fan: 3 deliveries');
    expect(lines).toContainEqual(expect.stringMatching(/^crm +dead \(exhausted\) +1 of 1 +0 +temporary \(503\)$/));
    expect(JSON.parse(one.stdout)).toEqual(output.deliveries[1]);
    expect(missing).toMatchObject({ code: 1, stdout: '', stderr: 'handoff: event evt_cli_fan has no delivery to endpoint nowhere (its deliveries: billing, crm, warehouse)\n' });
    expect(badName.code).toBe(2);
    expect(badName.stderr).toBe("error: option '--endpoint <name>' argument 'Not A Name' is invalid. must be an endpoint name: 1–64 of a-z 0-9 -.\n");
    expect(body.stdout).toBe('{"id":"evt_cli_fan","occurredAt":"2026-12-02T10:15:00Z","shipmentId":"shp_cli","status":"in_transit"}\n');
  });

  it("dead shows each delivery's endpoint and, with --endpoint, lists that endpoint's only", async () => {
    const all = await handoff(['dead', '--limit', '100']);
    const billing = await handoff(['dead', '--endpoint', 'billing', '--limit', '100', '--json']);

    expect(all.code).toBe(0);
    expect(all.stdout.split('\n')).toContainEqual(expect.stringMatching(/^evt_cli_fan +crm +exhausted /));
    const records = (JSON.parse(billing.stdout) as { records: { eventId: string; endpoint: string }[] }).records;
    expect(records.map((r) => `${r.eventId}@${r.endpoint}`)).toEqual(['evt_cli_fan@billing']);
  });

  it('replay <eventId> replays every dead delivery, each with its own audit entry and its own per-endpoint message', async () => {
    // Act
    const run = await handoff(['replay', 'evt_cli_fan', '--operator', 'alice', '--reason', 'both receivers fixed', '--json', ...onProbe()], { env: explicit });

    // Assess
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({
      eventId: 'evt_cli_fan',
      operator: 'alice',
      caller: CALLER,
      reason: 'both receivers fixed',
      deliveries: [
        { endpoint: 'billing', state: 'pending', attempts: 0, replays: 1, enqueued: true },
        { endpoint: 'crm', state: 'pending', attempts: 0, replays: 1, enqueued: true },
      ],
    });
    expect(await drainProbe()).toEqual([
      { id: 'evt_cli_fan', endpoint: 'billing' },
      { id: 'evt_cli_fan', endpoint: 'crm' },
    ]);
    const rows = await ledger.deliveriesOf('evt_cli_fan');
    expect(rows.map((r) => [r.endpoint, r.state, r.audit.map((a) => [a.operator, a.caller, a.reason])])).toEqual([
      ['billing', 'pending', [['alice', CALLER, 'both receivers fixed']]],
      ['crm', 'pending', [['alice', CALLER, 'both receivers fixed']]],
      ['warehouse', 'delivered', []],
    ]);
  });

  it('replay <eventId> is refused with one line when none of its deliveries is dead', async () => {
    const run = await handoff(['replay', 'evt_cli_fan', '--operator', 'alice', '--reason', 'again', ...onProbe()], { env: explicit });

    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'handoff: event evt_cli_fan has no dead delivery with an event to replay (billing: pending, crm: pending, warehouse: delivered)\n',
    );
    expect(await drainProbe()).toEqual([]);
  });

  it("bulk replay counts with --dry-run, replays an endpoint's deaths in the window once each, and replays nothing twice when run again", async () => {
    // Prepare: three deaths at one endpoint (one of them exhausted), one at another.
    const since = new Date(Date.now() - 1_000).toISOString();
    await seedDelivery('evt_cli_bulk_1', 'bulk-ep', 'rejected');
    await seedDelivery('evt_cli_bulk_2', 'bulk-ep', 'exhausted');
    await seedDelivery('evt_cli_bulk_3', 'bulk-ep', 'rejected');
    await seedDelivery('evt_cli_bulk_1', 'other-ep', 'rejected');
    const bulk = ['replay', '--endpoint', 'bulk-ep', '--dead-since', since, '--operator', 'alice', '--reason', 'bulk-ep is back', '--json', ...onProbe()];

    // Act
    const dryRun = await handoff([...bulk, '--dry-run'], { env: explicit });
    const exhausted = await handoff([...bulk, '--dead-reason', 'exhausted', '--dry-run'], { env: explicit });
    const run = await handoff([...bulk, '--rate', '20'], { env: explicit });
    const again = await handoff([...bulk, '--rate', '20'], { env: explicit });

    // Assess
    expect(JSON.parse(dryRun.stdout)).toMatchObject({ endpoint: 'bulk-ep', deadSince: since, dryRun: true, matched: 3, replayed: 0 });
    expect(JSON.parse(exhausted.stdout)).toMatchObject({ deadReason: 'exhausted', matched: 1 });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toMatchObject({ matched: 3, replayed: 3, noLongerDead: 0, enqueueFailed: [], caller: CALLER, ratePerSecond: 20 });
    expect(JSON.parse(again.stdout)).toMatchObject({ matched: 0, replayed: 0 });
    expect(await drainProbe()).toEqual([
      { id: 'evt_cli_bulk_1', endpoint: 'bulk-ep' },
      { id: 'evt_cli_bulk_2', endpoint: 'bulk-ep' },
      { id: 'evt_cli_bulk_3', endpoint: 'bulk-ep' },
    ]);
    expect((await ledger.get({ eventId: 'evt_cli_bulk_1', endpoint: 'other-ep' }))?.state).toBe('dead');
    for (const id of ['evt_cli_bulk_1', 'evt_cli_bulk_2', 'evt_cli_bulk_3']) {
      expect(await ledger.get({ eventId: id, endpoint: 'bulk-ep' })).toMatchObject({ state: 'pending', replays: 1 });
    }
  });

  it('bulk replay refuses a time without its zone, and an event ID beside --dead-since, as usage errors', async () => {
    const local = await handoff(['replay', '--endpoint', 'bulk-ep', '--dead-since', '2026-12-01T10:00:00', '--operator', 'a', '--reason', 'r']);
    const mixed = await handoff(['replay', 'evt_cli_fan', '--dead-since', '2026-12-01', '--operator', 'a', '--reason', 'r']);

    expect(local.code).toBe(2);
    expect(local.stderr).toBe(
      "error: option '--dead-since <time>' argument '2026-12-01T10:00:00' is invalid. must be an ISO 8601 time with its zone, like 2026-12-01T10:00:00Z, or a date like 2026-12-01 (UTC).\n",
    );
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toBe('handoff: --dead-since is for a bulk replay, which takes no event ID: handoff replay --endpoint NAME --dead-since TIME …\n');
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
  it('reads the queue and table names and the payload limit from a stack with --stack NAME', async () => {
    // Prepare: a "deployed" stack whose resources are the sandbox's, reached through the
    // standard AWS environment rather than the state file (which names no sandbox here).
    const stackLimitBytes = 300;
    const cloudFormation = await startStackDescriber('handoff-e2e', {
      QueueUrl: sandbox.ready.queueUrl,
      DeadLetterQueueUrl: sandbox.ready.deadLetterQueueUrl,
      LedgerTableName: sandbox.ready.ledgerTable,
      PayloadLimitBytes: String(stackLimitBytes),
    });
    const over = JSON.stringify({ ...event('evt_cli_stack_big'), data: { note: 'x'.repeat(stackLimitBytes) } });
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
      const dead = await handoff(['dead', '--stack', 'handoff-e2e', '--json', '--limit', '100'], { env });
      const sent = await handoff(['send', '--stack', 'handoff-e2e', '--json'], { env, stdin: JSON.stringify(event('evt_cli_stack')) });
      const refused = await handoff(['send', '--stack', 'handoff-e2e'], { env, stdin: over });
      const missing = await handoff(['dead', '--stack', 'handoff-nope'], { env });

      // Assess: the table's rows, the queue's delivery, the stack's limit.
      expect(dead).toMatchObject({ code: 0, stderr: '' });
      const listed = (JSON.parse(dead.stdout) as { records: { eventId: string }[] }).records.map((r) => r.eventId);
      expect(listed).toEqual((await ledger.listByState('dead', { limit: 100 })).records.map((r) => r.eventId));
      expect(sent).toMatchObject({ code: 0, stderr: '' });
      await waitForState('evt_cli_stack', 'delivered');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toBe(
        `handoff: invalid event evt_cli_stack_big: message is ${Buffer.byteLength(over)} bytes, ` +
          `over the ${stackLimitBytes}-byte payload limit of stack handoff-e2e; nothing sent\n`,
      );
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
        'or --queue-url/--dlq-url/--table/--endpoints-table with AWS_REGION and credentials set\n',
    );
  });

  it("finds the sandbox through the user's own state directory when no file is named", async () => {
    // Prepare: the sandbox's state where the default path looks, under XDG_RUNTIME_DIR.
    const runtime = mkdtempSync(join(tmpdir(), 'handoff-cli-runtime-'));
    writeSandboxState(join(runtime, 'handoff', 'sandbox.json'), sandbox.ready);

    try {
      // Act
      const run = await handoff(['dead', '--json', '--limit', '1'], { env: { HANDOFF_SANDBOX_FILE: '', XDG_RUNTIME_DIR: runtime } });

      // Assess
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(statSync(join(runtime, 'handoff')).mode & 0o777).toBe(0o700);
      expect(statSync(join(runtime, 'handoff', 'sandbox.json')).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(runtime, { recursive: true, force: true });
    }
  });

  it('refuses a state file others could have written, or one naming an endpoint off loopback, with exit 1 and one line', async () => {
    // Prepare
    const directory = mkdtempSync(join(tmpdir(), 'handoff-cli-state-'));
    const shared = join(directory, 'shared', 'sandbox.json');
    writeSandboxState(shared, sandbox.ready);
    chmodSync(join(directory, 'shared'), 0o777);
    const remote = join(directory, 'remote', 'sandbox.json');
    writeSandboxState(remote, { ...sandbox.ready, dynamodbEndpoint: 'http://198.51.100.7:8000' });

    try {
      // Act
      const sharedRun = await handoff(['dead'], { env: { HANDOFF_SANDBOX_FILE: shared } });
      const remoteRun = await handoff(['replay', 'evt_cli_dead_2', '--operator', 'alice', '--reason', 'x'], {
        env: { HANDOFF_SANDBOX_FILE: remote },
      });

      // Assess
      expect(sharedRun.code).toBe(1);
      expect(sharedRun.stderr).toBe(
        `handoff: the sandbox state file ${shared} is refused: its directory is writable by group and others (mode 777; want 700): ` +
          'remove it and start your own sandbox (npm start)\n',
      );
      expect(remoteRun.code).toBe(1);
      expect(remoteRun.stderr).toBe(
        `handoff: the sandbox state file ${remote} is refused: its dynamodbEndpoint is not on loopback (127.0.0.0/8, ::1, localhost), ` +
          'where the sandbox listens: remove it and start your own sandbox (npm start)\n',
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('is a usage error (exit 2) for an unknown command', async () => {
    const run = await handoff(['resend']);

    expect(run.code).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe("error: unknown command 'resend'");
  });
});

/** Any character a terminal may act on, except the newline that separates output lines. */
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\p{Cf}\p{Cs}\u2028\u2029]/u;
/** An OSC window-title sequence, a screen clear, a C1 CSI, a bidi override, a zero-width space, a C1 next-line. */
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202elive\u200b\u0085';

describe('hostile content on its way to the terminal', { timeout: 4 * CLI_TEST_TIMEOUT_MS }, () => {
  it("reaches no command's output raw: send errors, status and dead (text and JSON), replay, stats", async () => {
    // Prepare: a receiver answering with hostile bytes, and a dead row whose detail holds them.
    receiver.respondTo('evt_cli_hostile', { status: 400, body: `rejected ${HOSTILE}` });
    await handoff(['send'], { stdin: JSON.stringify(event('evt_cli_hostile')) });
    await waitForState('evt_cli_hostile', 'dead');
    const detailKey = { eventId: 'evt_cli_hostile_detail', endpoint: DEFAULT_ENDPOINT };
    await seedRejected(detailKey.eventId, `status ${HOSTILE}`, HOSTILE);
    expect((await ledger.get(detailKey))?.deadDetail).toBe(`status ${HOSTILE}`);
    const hostileKey = JSON.stringify({ ...event('evt_cli_hostile_send'), [HOSTILE]: 1 });

    // Act
    const runs: Record<string, CliRun> = {};
    runs.send = await handoff(['send'], { stdin: hostileKey });
    runs.sendJson = await handoff(['send', '--json'], { stdin: hostileKey });
    runs.status = await handoff(['status', 'evt_cli_hostile']);
    runs.statusJson = await handoff(['status', 'evt_cli_hostile', '--json']);
    runs.statusDetail = await handoff(['status', 'evt_cli_hostile_detail']);
    runs.statusDetailJson = await handoff(['status', 'evt_cli_hostile_detail', '--json']);
    runs.dead = await handoff(['dead', '--limit', '100']);
    runs.deadJson = await handoff(['dead', '--limit', '100', '--json']);
    runs.replayRefused = await handoff(['replay', 'evt_cli_hostile', '--operator', `mallory${HOSTILE}`, '--reason', 'x']);
    runs.replay = await handoff(['replay', 'evt_cli_hostile', '--operator', 'alice', '--reason', 'receiver fixed']);
    runs.stats = await handoff(['stats']);
    runs.statsJson = await handoff(['stats', '--json']);

    // Assess: nothing raw anywhere, and what was refused or shown is still said.
    for (const [name, run] of Object.entries(runs)) {
      expect({ name, stdout: RAW_UNSAFE.test(run.stdout), stderr: RAW_UNSAFE.test(run.stderr) }).toEqual({ name, stdout: false, stderr: false });
    }
    expect(runs.send).toMatchObject({ code: 1, stdout: '' });
    expect(runs.send.stderr).toBe('handoff: invalid event evt_cli_hostile_send: ?]0;pwned??[2J?31m?live?? is not a known field; nothing sent\n');
    expect(runs.replayRefused).toMatchObject({ code: 2, stderr: 'handoff: --operator contains a control or invisible formatting character\n' });
    expect(runs.replay.code).toBe(0);
    expect(runs.statusDetail.stdout.split('\n')).toContainEqual(expect.stringMatching(/^why +status \?\]0;pwned\?\?\[2J\?31m\?live\?\?$/));
    // JSON escapes rather than replaces: a machine reads back exactly what the row holds.
    expect(JSON.parse(runs.statusDetailJson.stdout).deliveries[0]).toMatchObject({ deadDetail: `status ${HOSTILE}` });
    expect(JSON.parse(runs.deadJson.stdout).records).toContainEqual(
      expect.objectContaining({ eventId: 'evt_cli_hostile_detail', deadDetail: `status ${HOSTILE}` }),
    );
    expect(JSON.parse(runs.statusDetailJson.stdout).deliveries[0]).toMatchObject({ lastOutcome: { responseStart: HOSTILE } });
    for (const name of ['status', 'statusJson', 'statusDetail', 'dead', 'stats', 'statsJson']) expect(runs[name]?.code).toBe(0);
  });
});
