/**
 * The real consumer handler module against fauxqs, dynalite and a loopback receiver: the
 * partial batch response, the visibility it sets, the dead-letter queue it fills, and its logs.
 * The test plays the event source mapping: it receives real messages (real receipt handles),
 * invokes the handler, then deletes what the response does not report.
 */
import {
  ChangeMessageVisibilityCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SQSBatchResponse } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import type { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { isolateEachTest, lambdaContext, useConsumerHarness, type ConsumerHarness, type Handler } from '../helpers/consumer-harness';
import type { TestReceiver } from '../helpers/receiver';
import { TEST_SECRET as SECRET } from '../helpers/secrets';

/** Appears only inside event payloads and a receiver's response: it must never reach a log. */
const PAYLOAD_MARKER = 'front-desk-7f3a9c';
const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:handoff-signing-AbCdEf';
/** The queue's own visibility: long, so only the handler's ChangeMessageVisibility shortens it. */
const QUEUE_VISIBILITY_SECONDS = 30;

let harness: ConsumerHarness;
let receiver: TestReceiver;
let ledger: DynamoDbLedger;
let sqs: SQSClient;

useConsumerHarness('consumer-test', (started) => {
  harness = started;
  ({ receiver, ledger, sqs } = started);
});

/** What the handler writes to stdout (its logs and metric documents), kept out of the report. */
let logs: string[] = [];
isolateEachTest((lines) => (logs = lines));

const createQueues = () => harness.createQueues(QUEUE_VISIBILITY_SECONDS);
const receive = (queueUrl: string, count: number) => harness.receive(queueUrl, count);

/** A cold start of the handler, signed, with this environment on top. */
function coldStart(env: Record<string, string>): Promise<Handler> {
  return harness.coldStart({
    HANDOFF_WEBHOOK_SECRET: SECRET,
    // No wait after the first failure, 30 s after the second: the first retry is receivable at
    // once although the queue's own visibility is 30 s, which shows the handler set it.
    HANDOFF_RETRY_SCHEDULE: '0,30',
    HANDOFF_ATTEMPT_TIMEOUT_MS: '3000',
    ...env,
  });
}

function event(id: string, overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    id,
    shipmentId: 'shp_1001',
    status: 'delivered',
    occurredAt: '2026-12-02T10:15:00Z',
    data: { carrier: 'acme', signedBy: PAYLOAD_MARKER },
    ...overrides,
  });
}

async function send(queueUrl: string, ...bodies: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const body of bodies) {
    const { MessageId } = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    ids.push(MessageId!);
  }
  return ids;
}

/** What can be received right now, without waiting. */
async function receiveNow(queueUrl: string): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
  );
  return Messages;
}

/** One invocation as the event source mapping makes it: the handler, then deletes what succeeded. */
function invoke(handler: Handler, queueUrl: string, messages: Message[], requestId = 'req-1'): Promise<SQSBatchResponse> {
  return harness.invoke(handler, queueUrl, messages, lambdaContext(requestId));
}

async function deadLetters(deadLetterQueueUrl: string, count: number) {
  const messages = await receive(deadLetterQueueUrl, count);
  return messages
    .map((m) => ({
      body: m.Body,
      reason: m.MessageAttributes?.reason?.StringValue,
      eventId: m.MessageAttributes?.eventId?.StringValue,
    }))
    .sort((a, b) => String(a.reason).localeCompare(String(b.reason)));
}

describe('Handler: consumer', () => {
  it('reports only the retryable record of a mixed batch and dead-letters the rest with reasons', async () => {
    // Prepare: an event already delivered, so the same ID with other content is a conflict.
    const { queueUrl, deadLetterQueueUrl } = await createQueues();
    const handler = await coldStart({ HANDOFF_QUEUE_URL: queueUrl, HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl });
    await send(queueUrl, event('evt_conflict'));
    expect(await invoke(handler, queueUrl, await receive(queueUrl, 1), 'req-0')).toEqual({ batchItemFailures: [] });
    const admitted = await ledger.get({ eventId: 'evt_conflict', endpoint: 'default' });

    const bodies = {
      ok: event('evt_ok'),
      flaky: event('evt_flaky'),
      refused: event('evt_refused'),
      notJson: '{"id":"evt_broken", not json',
      conflict: event('evt_conflict', { shipmentId: 'shp_other' }),
    };
    receiver.respondTo('evt_flaky', 503, 503);
    receiver.respondTo('evt_refused', { status: 400, body: `cannot take signedBy=${PAYLOAD_MARKER}` });
    const [, flakyId] = await send(queueUrl, ...Object.values(bodies));
    logs.length = 0;

    // Act
    const response = await invoke(handler, queueUrl, await receive(queueUrl, 5));

    // Assess: the queue
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: flakyId }] });
    expect(await deadLetters(deadLetterQueueUrl, 3)).toEqual([
      { body: bodies.conflict, reason: 'identity-conflict', eventId: 'evt_conflict' },
      { body: bodies.notJson, reason: 'invalid', eventId: undefined },
      { body: bodies.refused, reason: 'rejected', eventId: 'evt_refused' },
    ]);
    // The wait after the first failure is 0 s: receivable now, though the queue would hide it 30 s.
    const [retried] = await receive(queueUrl, 1);
    expect(retried!.MessageId).toBe(flakyId);

    // Assess: the receiver and the ledger
    expect([...receiver.applied].sort()).toEqual(['evt_conflict', 'evt_ok']);
    expect(receiver.requestsFor('evt_flaky')).toHaveLength(1);
    expect(receiver.requests.every((r) => receiver.verify(r, SECRET))).toBe(true);
    expect(await ledger.get({ eventId: 'evt_conflict', endpoint: 'default' })).toEqual(admitted);
    expect(await ledger.get({ eventId: 'evt_refused', endpoint: 'default' })).toMatchObject({
      state: 'dead',
      deadReason: 'rejected',
    });

    // Assess: logs name events, never payloads, receivers' echoes of them, or the secret
    const deliveries = logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.message === 'delivery');
    expect(deliveries.map((l) => [l.eventId ?? '(no id)', l.action]).sort()).toEqual([
      ['(no id)', 'dead-letter'],
      ['evt_conflict', 'dead-letter'],
      ['evt_flaky', 'retry'],
      ['evt_ok', 'ack'],
      ['evt_refused', 'dead-letter'],
    ]);
    const output = logs.join('\n');
    expect(output).not.toContain(PAYLOAD_MARKER);
    expect(output).not.toContain('shp_');
    expect(output).not.toContain(SECRET.slice('whsec_'.length));
  });

  it('keeps a retried record out of sight for the scheduled wait', async () => {
    // Prepare
    const { queueUrl, deadLetterQueueUrl } = await createQueues();
    const handler = await coldStart({ HANDOFF_QUEUE_URL: queueUrl, HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl });
    receiver.respondTo('evt_later', 503, { status: 429, retryAfter: '5' });
    const [messageId] = await send(queueUrl, event('evt_later'));
    expect(await invoke(handler, queueUrl, await receive(queueUrl, 1))).toEqual({
      batchItemFailures: [{ itemIdentifier: messageId }],
    });

    // Act: the second failure waits 30 s (the schedule; the receiver's 5 s cannot shorten it)
    const response = await invoke(handler, queueUrl, await receive(queueUrl, 1));

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: messageId }] });
    expect(await receiveNow(queueUrl)).toEqual([]);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessagesNotVisible'] }),
    );
    expect(Attributes?.ApproximateNumberOfMessagesNotVisible).toBe('1');
    expect(await ledger.get({ eventId: 'evt_later', endpoint: 'default' })).toMatchObject({ state: 'pending', attempts: 2 });
  });

  it('reports only the record whose dead-letter send failed, and dead-letters it on the next receive', async () => {
    // Prepare: a dead-letter queue URL that does not exist
    const { queueUrl, deadLetterQueueUrl } = await createQueues();
    const broken = await coldStart({
      HANDOFF_QUEUE_URL: queueUrl,
      HANDOFF_DEAD_LETTER_QUEUE_URL: `${deadLetterQueueUrl}-missing`,
    });
    receiver.respondTo('evt_gone', 410);
    const [, goneId] = await send(queueUrl, event('evt_fine'), event('evt_gone'));

    // Act
    const received = await receive(queueUrl, 2);
    const response = await invoke(broken, queueUrl, received);

    // Assess: the batch did not fail; the event is dead in the ledger all the same
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: goneId }] });
    expect(receiver.applied).toContain('evt_fine');
    expect(await ledger.get({ eventId: 'evt_gone', endpoint: 'default' })).toMatchObject({ state: 'dead' });

    // Act: the message is in flight until its visibility ends (ended early here); then a
    // healthy consumer receives it again
    expect(await receiveNow(queueUrl)).toEqual([]);
    const gone = received.find((m) => m.MessageId === goneId)!;
    await sqs.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: queueUrl, ReceiptHandle: gone.ReceiptHandle, VisibilityTimeout: 0 }),
    );
    const healthy = await coldStart({ HANDOFF_QUEUE_URL: queueUrl, HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl });
    const second = await invoke(healthy, queueUrl, await receive(queueUrl, 1));

    // Assess: dead-lettered from the ledger's decision, without another request
    expect(second).toEqual({ batchItemFailures: [] });
    expect(await deadLetters(deadLetterQueueUrl, 1)).toEqual([
      { body: event('evt_gone'), reason: 'rejected', eventId: 'evt_gone' },
    ]);
    expect(receiver.requestsFor('evt_gone')).toHaveLength(1);
  });

  it('reads the signing secret from Secrets Manager once, at its first invocation', async () => {
    // Prepare: a loopback stand-in for Secrets Manager, reached by the real SDK client
    const calls: string[] = [];
    const secrets = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        calls.push(`${String(req.headers['x-amz-target'])} ${(JSON.parse(body) as { SecretId: string }).SecretId}`);
        res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify({ ARN: SECRET_ARN, Name: 'handoff-signing', SecretString: SECRET }));
      });
    });
    await new Promise<void>((resolve) => secrets.listen(0, '127.0.0.1', () => resolve()));
    const { port } = secrets.address() as AddressInfo;
    const { queueUrl, deadLetterQueueUrl } = await createQueues();
    const handler = await coldStart({
      HANDOFF_QUEUE_URL: queueUrl,
      HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl,
      HANDOFF_WEBHOOK_SECRET: '',
      HANDOFF_WEBHOOK_SECRET_ARN: SECRET_ARN,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: `http://127.0.0.1:${port}`,
    });
    const callsAtColdStart = calls.length;
    await send(queueUrl, event('evt_signed_1'), event('evt_signed_2'));

    // Act: two invocations
    const first = await invoke(handler, queueUrl, await receive(queueUrl, 1), 'req-1');
    const second = await invoke(handler, queueUrl, await receive(queueUrl, 1), 'req-2');
    secrets.closeAllConnections();
    secrets.close();

    // Assess
    expect([first, second]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(callsAtColdStart).toBe(0);
    expect(calls).toEqual([`secretsmanager.GetSecretValue ${SECRET_ARN}`]);
    const signed = [...receiver.requestsFor('evt_signed_1'), ...receiver.requestsFor('evt_signed_2')];
    expect(signed).toHaveLength(2);
    expect(signed.every((r) => receiver.verify(r, SECRET))).toBe(true);
  });

  it('fails its cold start on an invalid setting, naming the variable', async () => {
    const { queueUrl, deadLetterQueueUrl } = await createQueues();

    await expect(
      coldStart({ HANDOFF_QUEUE_URL: queueUrl, HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl, HANDOFF_MAX_ATTEMPTS: 'many' }),
    ).rejects.toThrow(/^HANDOFF_MAX_ATTEMPTS must be a whole number/);
  });

  it('fails its cold start when a resource is not named', async () => {
    const { deadLetterQueueUrl } = await createQueues();

    await expect(coldStart({ HANDOFF_QUEUE_URL: '', HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl })).rejects.toThrow(
      'HANDOFF_QUEUE_URL must be set',
    );
  });

  it('fails its cold start on an unknown crash point', async () => {
    const { queueUrl, deadLetterQueueUrl } = await createQueues();

    await expect(
      coldStart({ HANDOFF_QUEUE_URL: queueUrl, HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl, HANDOFF_CRASH_AT: 'somewhere' }),
    ).rejects.toThrow(/^HANDOFF_CRASH_AT must be one of before-send, after-send, after-record/);
  });
});
