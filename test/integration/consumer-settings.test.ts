/**
 * Settings the consumer cannot work with stop its cold start, not every batch: a ledger retention
 * shorter than a delivery can live, a payload limit no ledger row can hold, a signing secret that
 * cannot sign. A Secrets Manager value is checked at each read: one that cannot sign holds the
 * deliveries on the queue, logged with the secret's ARN, never its value. Runs the real handler module against fauxqs and dynalite, with a loopback
 * stand-in for Secrets Manager reached by the real SDK client.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { captureStdout, startConsumerHarness, type ConsumerHarness } from '../helpers/consumer-harness';
import { queueArnFromUrl, recordFromMessage, sqsEvent } from '../helpers/sqs-records';

const SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:handoff-signing-AbCdEf';
/** A 3-byte key: base64 that `standardwebhooks` accepts, far too short to sign with. */
const SHORT_SECRET = 'whsec_AAAA';

let harness: ConsumerHarness;
let secrets: Server | undefined;

beforeAll(async () => {
  harness = await startConsumerHarness('signing-secret');
});

afterAll(async () => {
  await harness.close();
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
  secrets?.closeAllConnections();
  secrets?.close();
  secrets = undefined;
});

/** Answers every GetSecretValue with `value`. */
async function secretsManagerHolding(value: string): Promise<string> {
  secrets = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(JSON.stringify({ ARN: SECRET_ARN, Name: 'handoff-signing', SecretString: value }));
    });
  });
  await new Promise<void>((resolve) => secrets!.listen(0, '127.0.0.1', () => resolve()));
  return `http://127.0.0.1:${(secrets.address() as AddressInfo).port}`;
}

const context = { awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;

describe('Handler: consumer, cold start', () => {
  it.each([
    ['HANDOFF_RETENTION_DAYS', '1', /^HANDOFF_RETENTION_DAYS must be at least 18 days with HANDOFF_RETRY_SCHEDULE\/HANDOFF_MAX_ATTEMPTS allowing 6 attempts, got 1: /],
    ['HANDOFF_PAYLOAD_LIMIT_BYTES', '450000', /^HANDOFF_PAYLOAD_LIMIT_BYTES must be a whole number from 256 to 262144/],
  ])('fails on %s=%s, naming it', async (variable, value, message) => {
    const { queueUrl, deadLetterQueueUrl } = await harness.createQueues(30);

    const start = harness.coldStart({ HANDOFF_QUEUE_URL: queueUrl, HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl, [variable]: value });

    await expect(start).rejects.toMatchObject({ name: 'ConfigError', variable });
    await expect(start).rejects.toThrow(message);
  });
});

describe('Handler: consumer, the registry copy\'s look-back', () => {
  it.each([['500'], ['900001'], ['15m']])('fails its cold start on HANDOFF_ENDPOINTS_LOOKBACK_MS=%s, naming it', async (value) => {
    const { queueUrl, deadLetterQueueUrl } = await harness.createQueues(30);

    const start = harness.coldStart({
      HANDOFF_QUEUE_URL: queueUrl,
      HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl,
      HANDOFF_ENDPOINTS_TABLE: 'handoff-endpoints-lookback-test',
      HANDOFF_ENDPOINTS_LOOKBACK_MS: value,
    });

    await expect(start).rejects.toMatchObject({ name: 'ConfigError', variable: 'HANDOFF_ENDPOINTS_LOOKBACK_MS' });
    await expect(start).rejects.toThrow(/^HANDOFF_ENDPOINTS_LOOKBACK_MS must be whole milliseconds from 1000 to 900000/);
  });
});

describe('Handler: consumer, signing secret', () => {
  it.each([['whsec_abc'], [SHORT_SECRET]])('fails its cold start on HANDOFF_WEBHOOK_SECRET=%s, without showing it', async (secret) => {
    const { queueUrl, deadLetterQueueUrl } = await harness.createQueues(30);

    const start = harness.coldStart({
      HANDOFF_QUEUE_URL: queueUrl,
      HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl,
      HANDOFF_WEBHOOK_SECRET: secret,
    });

    await expect(start).rejects.toMatchObject({ name: 'ConfigError', code: 'invalid-setting', variable: 'HANDOFF_WEBHOOK_SECRET' });
    await expect(start).rejects.toThrow(/^HANDOFF_WEBHOOK_SECRET must be a Standard Webhooks secret/);
    await expect(start).rejects.not.toThrow(secret.slice('whsec_'.length));
  });

  it('holds its messages on the queue while the Secrets Manager value cannot sign, naming the ARN and not the value', async () => {
    // Prepare
    const endpoint = await secretsManagerHolding(SHORT_SECRET);
    const { queueUrl, deadLetterQueueUrl } = await harness.createQueues(30);
    const handler = await harness.coldStart({
      HANDOFF_QUEUE_URL: queueUrl,
      HANDOFF_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl,
      HANDOFF_WEBHOOK_SECRET_ARN: SECRET_ARN,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: endpoint,
    });
    const body = JSON.stringify({ id: 'evt_unsignable', shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' });
    await harness.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
    const [message] = await harness.receive(queueUrl, 1);
    const lines = captureStdout();

    // Act
    const response = await handler(sqsEvent([recordFromMessage(message!, queueArnFromUrl(queueUrl))]), context);

    // Assess: the message stays on the queue (a batch item failure, back in seconds), nothing was sent or admitted
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: message!.MessageId }] });
    const unresolved = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((l) => l.message === 'endpoint unresolved');
    expect(unresolved).toMatchObject({
      endpoint: 'default',
      errorMessage: `the secret ${SECRET_ARN} cannot sign: its key decodes to a 3-byte key; at least 24 bytes are needed (the value must be whsec_<base64> or bare base64)`,
    });
    expect(lines.join('\n')).not.toContain('AAAA');
    expect(harness.receiver.requestsFor('evt_unsignable')).toEqual([]);
    expect(await harness.ledger.get({ eventId: 'evt_unsignable', endpoint: 'default' })).toBeUndefined();
    const { Messages = [] } = await harness.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: deadLetterQueueUrl, WaitTimeSeconds: 0 }),
    );
    expect(Messages).toEqual([]);
  });
});
