/**
 * The whole system through the sandbox: real consumer handler in worker processes, the poller
 * keeping Lambda's SQS contract, fauxqs and dynalite, and a scripted receiver in this process.
 *
 * The tests share one sandbox and run in order: later ones use rows and dead letters made by
 * earlier ones (the malformed-message test reuses evt_503's row; the dead-letter read and the
 * receiver checks count everything sent before). Run the file, not a single test.
 *
 * Settings are shortened for a test run: waits of 1 s, 5 s attempts, a 10 s visibility timeout
 * (the sandbox-only override) so that a batch lost with a killed worker comes back soon.
 */
import {
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { recordDetails } from '../../cli/commands/record-view';
import type { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DEFAULT_ENDPOINT, type DeliveryRecord } from '../../lib/ledger/ledger';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import type { SandboxProcess } from '../helpers/sandbox';
import { useSandboxProcess } from '../helpers/sandbox-suite';
import { eventually } from '../helpers/sandbox-clients';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
/** A crash leaves a claim whose lease (function timeout: 5 s attempt + 20 s) must lapse first. */
const CRASH_TEST_TIMEOUT_MS = 90_000;
/** How long a wait may take before it fails with what it saw; below the test's own timeout. */
const SETTLE_MS = 45_000;
const CRASH_SETTLE_MS = 80_000;
const TEST_TIMEOUT_MS = 60_000;

let receiver: TestReceiver;
let sandbox: SandboxProcess;
let sqs: SQSClient;
let ledger: DynamoDbLedger;

useSandboxProcess(
  async () => {
    receiver = await startTestReceiver();
    return {
      env: {
        HANDOFF_WEBHOOK_URL: receiver.url,
        HANDOFF_WEBHOOK_SECRET: SECRET,
        HANDOFF_RETRY_SCHEDULE: '1,1,1',
        HANDOFF_MAX_ATTEMPTS: '4',
        // Not shorter: a receiver starved of CPU for a second must not turn an attempt into a timeout
        // (an extra request), nor a worker's cold start hand a copy of its message to another.
        HANDOFF_ATTEMPT_TIMEOUT_MS: '5000',
        HANDOFF_VISIBILITY_TIMEOUT_SECONDS: '10',
        HANDOFF_MAX_CONCURRENCY: '2',
      },
    };
  },
  (started) => {
    sandbox = started.sandbox;
    ({ sqs, ledger } = started.clients);
  },
  async () => {
    await receiver?.close();
  },
);

function shipment(id: string, status = 'in_transit') {
  return { id, shipmentId: `shp_${id}`, status, occurredAt: '2026-12-02T10:15:00Z' };
}

async function send(body: string | object): Promise<void> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  await sqs.send(new SendMessageCommand({ QueueUrl: sandbox.ready.queueUrl, MessageBody: text }));
}

/** The row once it is delivered or dead; fails with the row as last seen (no payload). */
function settled(eventId: string, timeoutMs = SETTLE_MS): Promise<DeliveryRecord> {
  const row = () => ledger.get({ eventId, endpoint: DEFAULT_ENDPOINT });
  return eventually(
    `${eventId} to be delivered or dead`,
    async () => {
      const record = await row();
      return record !== undefined && record.state !== 'pending' ? record : undefined;
    },
    { timeoutMs, describe: async () => describeRow(await row()) },
  );
}

function describeRow(record: DeliveryRecord | undefined): string {
  if (record === undefined) return 'no row';
  const outcomes = record.history.map((h) => h.outcome).join(', ');
  return `${record.state}, ${record.attempts} attempt(s) [${outcomes}]${record.deadReason ? `, ${record.deadReason}` : ''}`;
}

/** The messages on a queue, visible or in flight. */
async function depthOf(queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages) + Number(Attributes?.ApproximateNumberOfMessagesNotVisible);
}

/** Waits until the delivery queue holds no message, visible or in flight. */
async function queueDrains(): Promise<void> {
  const depth = () => depthOf(sandbox.ready.queueUrl);
  await eventually('the delivery queue to drain', async () => (await depth()) === 0, {
    timeoutMs: SETTLE_MS,
    describe: async () => `${await depth()} message(s)`,
  });
}

/** Waits until the dead-letter queue holds `count` messages. */
async function deadLettersReach(count: number): Promise<void> {
  const depth = () => depthOf(sandbox.ready.deadLetterQueueUrl);
  await eventually(`${count} dead letters`, async () => (await depth()) >= count, {
    timeoutMs: SETTLE_MS,
    describe: async () => `${await depth()} dead letter(s)`,
  });
}

const delivered: string[] = [];
const deadLettered: { body: string; reason: string; eventId: string | undefined }[] = [];

describe('Sandbox: outcomes end to end', { timeout: TEST_TIMEOUT_MS }, () => {
  it('ends a timeout after the receiver committed as delivered, applied once', async () => {
    // Prepare
    receiver.respondTo('evt_commit', 'commit-then-hang');

    // Act
    await send(shipment('evt_commit'));
    const record = await settled('evt_commit');
    delivered.push('evt_commit');

    // Assess
    expect(record.state).toBe('delivered');
    expect(record.history.map((h) => h.outcome)).toEqual(['unknown', 'accepted']);
    expect(receiver.requestsFor('evt_commit')).toHaveLength(2);
    expect(receiver.applied.filter((id) => id === 'evt_commit')).toEqual(['evt_commit']);
  });

  it('retries a 503 and delivers on the 200 that follows, signed on every attempt', async () => {
    receiver.respondTo('evt_503', 503);

    await send(shipment('evt_503'));
    const record = await settled('evt_503');
    delivered.push('evt_503');

    expect(record.state).toBe('delivered');
    expect(record.history.map((h) => [h.outcome, h.status])).toEqual([
      ['temporary', 503],
      ['accepted', 200],
    ]);
    const requests = receiver.requestsFor('evt_503');
    expect(requests.map((r) => r.body)).toEqual([requests[0]!.body, requests[0]!.body]);
    expect(requests.every((r) => receiver.verify(r, SECRET))).toBe(true);
  });

  it('waits at least as long as a 429 Retry-After asks before delivering', async () => {
    receiver.respondTo('evt_429', { status: 429, retryAfter: '3' });

    await send(shipment('evt_429'));
    const record = await settled('evt_429');
    delivered.push('evt_429');

    expect(record.state).toBe('delivered');
    const [first, second] = record.history;
    expect([first?.outcome, second?.outcome]).toEqual(['temporary', 'accepted']);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(3000);
  });

  it('marks a 400 dead with the status and the start of the response, and dead-letters it', async () => {
    receiver.respondTo('evt_400', { status: 400, body: 'unknown shipment' });
    const body = JSON.stringify(shipment('evt_400'));

    await send(body);
    const record = await settled('evt_400');
    deadLettered.push({ body, reason: 'rejected', eventId: 'evt_400' });

    expect(record).toMatchObject({ state: 'dead', deadReason: 'rejected', attempts: 1 });
    expect(record.deadDetail).toContain('400');
    expect(record.deadDetail).toContain('unknown shipment');
  });
});

describe('Sandbox: copies and look-alikes of one event', { timeout: TEST_TIMEOUT_MS }, () => {
  it('sends one request for ten copies of one event sent in one SendMessageBatch', async () => {
    // Act
    const body = JSON.stringify(shipment('evt_ten_copies'));
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: sandbox.ready.queueUrl,
        Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `copy${i}`, MessageBody: body })),
      }),
    );
    const record = await settled('evt_ten_copies');
    delivered.push('evt_ten_copies');
    // Every copy answered (the nine refused ones come back once the first's lease has lapsed).
    await queueDrains();

    // Assess
    expect(record).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(receiver.requestsFor('evt_ten_copies')).toHaveLength(1);
  });

  it('delivers the valid event once after an invalid message with its ID, and status shows the invalid note', async () => {
    // Prepare: an invalid message with a readable ID, settled as dead.
    const invalid = JSON.stringify(shipment('evt_after_invalid', 'teleported'));
    await send(invalid);
    await settled('evt_after_invalid');
    deadLettered.push({ body: invalid, reason: 'invalid', eventId: 'evt_after_invalid' });

    // Act
    await send(shipment('evt_after_invalid'));
    const record = await eventually(
      'evt_after_invalid to be delivered',
      async () => {
        const row = await ledger.get({ eventId: 'evt_after_invalid', endpoint: DEFAULT_ENDPOINT });
        return row?.state === 'delivered' ? row : undefined;
      },
      { timeoutMs: SETTLE_MS },
    );
    delivered.push('evt_after_invalid');

    // Assess
    expect(record).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(receiver.requestsFor('evt_after_invalid')).toHaveLength(1);
    expect(record.audit).toEqual([
      { at: expect.any(Number), action: 'invalid-message', operator: 'consumer', reason: expect.stringMatching(/^status /) },
    ]);
    expect(recordDetails(record, Date.now())).toMatch(/\naudit\n.*\n.* invalid-message +consumer .*status must be one of/);
  });
});

describe('Sandbox: malformed messages', { timeout: TEST_TIMEOUT_MS }, () => {
  it('dead-letters each malformed message, writing a dead row only where an ID could be read', async () => {
    // Prepare
    const notJson = 'this is not JSON';
    const missingId = JSON.stringify({ shipmentId: 'shp_x', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' });
    const unknownStatus = JSON.stringify(shipment('evt_badstatus', 'teleported'));
    const tooLarge = JSON.stringify({ ...shipment('evt_big'), data: { blob: 'x'.repeat(70 * 1024) } });
    const deliveredBefore = await settled('evt_503');
    const conflict = JSON.stringify(shipment('evt_503', 'returned'));

    // Act
    for (const body of [notJson, missingId, unknownStatus, tooLarge, conflict]) await send(body);
    const [badStatusRow, bigRow] = await Promise.all([settled('evt_badstatus'), settled('evt_big')]);
    deadLettered.push(
      { body: notJson, reason: 'invalid', eventId: undefined },
      { body: missingId, reason: 'invalid', eventId: undefined },
      { body: unknownStatus, reason: 'invalid', eventId: 'evt_badstatus' },
      { body: tooLarge, reason: 'invalid', eventId: 'evt_big' },
      { body: conflict, reason: 'identity-conflict', eventId: 'evt_503' },
    );
    await deadLettersReach(deadLettered.length);

    // Assess
    expect(badStatusRow).toMatchObject({ state: 'dead', deadReason: 'invalid', attempts: 0 });
    expect(bigRow).toMatchObject({ state: 'dead', deadReason: 'invalid', attempts: 0 });
    expect(await ledger.get({ eventId: 'evt_503', endpoint: DEFAULT_ENDPOINT })).toEqual(deliveredBefore);
    expect(receiver.requestsFor('evt_badstatus')).toEqual([]);
    expect(receiver.requestsFor('evt_big')).toEqual([]);
  });

  it('leaves on the dead-letter queue exactly the dead messages, unchanged, with their reasons', async () => {
    // Act: read everything, keeping it hidden while reading so nothing is counted twice.
    const found: typeof deadLettered = [];
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: sandbox.ready.deadLetterQueueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 300,
          MessageAttributeNames: ['All'],
        }),
      );
      if (Messages.length === 0) break;
      for (const m of Messages) {
        found.push({
          body: m.Body!,
          reason: m.MessageAttributes?.reason?.StringValue ?? '(none)',
          eventId: m.MessageAttributes?.eventId?.StringValue,
        });
      }
    }

    // Assess
    const order = (list: typeof deadLettered) => [...list].sort((a, b) => a.body.localeCompare(b.body));
    expect(order(found)).toEqual(order(deadLettered));
  });
});

describe('Sandbox: a worker killed mid-batch', () => {
  it(
    'returns the batch to the queue, starts a fresh worker and still delivers the event once',
    async () => {
      // Prepare: the receiver holds the request open, so the worker is mid-attempt when killed.
      receiver.respondTo('evt_crash', 'hang');
      const requestsBefore = receiver.requests.length;

      // Act
      await send(shipment('evt_crash'));
      await receiver.waitForRequests(requestsBefore + 1);
      const killed = sandbox.livePids();
      for (const pid of killed) process.kill(pid, 'SIGKILL');
      const record = await settled('evt_crash', CRASH_SETTLE_MS);
      delivered.push('evt_crash');

      // Assess
      expect(killed.length).toBeGreaterThan(0);
      for (const pid of killed) await sandbox.waitForLog(new RegExp(`^worker ${pid} exited \\(SIGKILL\\)$`), SETTLE_MS);
      expect(sandbox.stderr().some((line) => /batch of \d+ failed as a whole \(the worker died/.test(line))).toBe(true);
      expect(sandbox.livePids().some((pid) => !killed.includes(pid))).toBe(true);
      expect(record.state).toBe('delivered');
      expect(record.attempts).toBe(2);
      expect(receiver.requestsFor('evt_crash')).toHaveLength(2);
    },
    CRASH_TEST_TIMEOUT_MS,
  );
});

describe('Sandbox: what the receiver saw', () => {
  it('applied each accepted event exactly once', () => {
    expect([...receiver.applied].sort()).toEqual([...delivered].sort());
  });

  it('showed each decision by event ID and its endpoint, the single-URL settings\' default', () => {
    const log = sandbox.stderr();
    expect(log.some((line) => /^worker \d+: evt_503 → default retry in \d+ s \(temporary, after temporary \(503\)\)$/.test(line))).toBe(true);
    expect(log.some((line) => /^worker \d+: evt_503 → default delivered$/.test(line))).toBe(true);
    expect(log.some((line) => /^worker \d+: evt_400 → default dead-letter \(rejected, after rejected \(400\)\)$/.test(line))).toBe(true);
  });

  it('never logged a payload', () => {
    const log = sandbox.stderr().join('\n');
    expect(log).not.toContain('shp_evt_');
    expect(log).not.toContain('unknown shipment');
  });
});
