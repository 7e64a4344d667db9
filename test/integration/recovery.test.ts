/**
 * Stuck-work recovery (lib/recovery.ts) against dynalite and fauxqs, with the real consumer handler
 * (functions/consumer.ts) making the rows and delivering what recovery enqueues: a pending row whose
 * message is gone is enqueued again and delivered once; two runs at once enqueue it twice and the
 * claim lets one send; a row not yet due or leased is left alone.
 *
 * The recovery runs are told a clock ahead of the real one by more than the grace, so a row that
 * failed a moment ago is "quiet long enough" without the test sleeping; the consumer keeps the real
 * clock (its claims are due: the retry schedule's first wait is 0).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Context, SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseEvent } from '../../lib/event';
import { RESOURCE_ENV } from '../../lib/config';
import { createLogger, SERVICE_NAME } from '../../lib/observability';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { RECOVERY_ENV, recoverStuck, registryEndpoints } from '../../lib/recovery';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { captureStdout, CREDENTIALS, REGION, startConsumerHarness, type ConsumerHarness, type Handler, type Queues } from '../helpers/consumer-harness';
import { queueArnFromUrl, recordFromMessage, sqsEvent } from '../helpers/sqs-records';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const QUEUE_VISIBILITY_SECONDS = 30;
const GRACE_MS = 2_000;
/** How far ahead of the real clock the recovery runs are told it is: past the grace. */
const AHEAD_MS = GRACE_MS + 1_000;

let harness: ConsumerHarness;
let sqs: SQSClient;

beforeAll(async () => {
  harness = await startConsumerHarness('recovery-test');
  ({ sqs } = harness);
});

afterAll(async () => {
  await harness?.close();
});

let stdout: string[] = [];
beforeEach(() => {
  stdout = captureStdout();
});

afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

function eventBody(id: string): string {
  return JSON.stringify({ id, shipmentId: 'shp_1001', status: 'delivered', occurredAt: '2026-12-02T10:15:00Z' });
}

function context(): Context {
  return {
    awsRequestId: 'req-1',
    functionName: 'handoff-consumer',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:handoff-consumer',
    memoryLimitInMB: '256',
    logGroupName: '/aws/lambda/handoff-consumer',
    logStreamName: 'test',
    callbackWaitsForEmptyEventLoop: false,
    getRemainingTimeInMillis: () => 60_000,
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

/** The consumer, on `queues`, with the first retry wait given (seconds). */
function coldStart(queues: Queues, firstWaitSeconds: number): Promise<Handler> {
  return harness.coldStart({
    HANDOFF_WEBHOOK_SECRET: SECRET,
    HANDOFF_RETRY_SCHEDULE: `${firstWaitSeconds},30`,
    HANDOFF_ATTEMPT_TIMEOUT_MS: '3000',
    HANDOFF_QUEUE_URL: queues.queueUrl,
    HANDOFF_DEAD_LETTER_QUEUE_URL: queues.deadLetterQueueUrl,
  });
}

/** One invocation as the event source mapping makes it: the handler, then deletes what succeeded. */
async function invoke(handler: Handler, queueUrl: string, messages: Message[]) {
  const records: SQSRecord[] = messages.map((m) => recordFromMessage(m, queueArnFromUrl(queueUrl)));
  const response = await handler(sqsEvent(records), context());
  const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  for (const record of records.filter((r) => !failed.has(r.messageId))) {
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: record.receiptHandle }));
  }
  return response;
}

/**
 * A delivery stranded as SQS's redrive leaves one: its first attempt answered 503, the consumer
 * scheduled the retry on the message, and the message is then deleted (as a redrive removes it).
 */
async function strand(handler: Handler, queues: Queues, eventId: string, due: 'now' | 'later' = 'now'): Promise<void> {
  harness.receiver.respondTo(eventId, 503);
  await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: eventBody(eventId) }));
  const [message] = await harness.receive(queues.queueUrl, 1);
  const response = await invoke(handler, queues.queueUrl, [message!]);
  expect(response.batchItemFailures).toHaveLength(1);
  expect(await harness.ledger.get({ eventId, endpoint: 'default' })).toMatchObject({ state: 'pending', attempts: 1 });
  if (due === 'now') {
    // Visible again at once (a wait of 0): received, and deleted under its new receipt handle.
    await harness.receive(queues.queueUrl, 1, { delete: true });
  } else {
    // Invisible until due: deleted under the receipt handle it still holds.
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queues.queueUrl, ReceiptHandle: message!.ReceiptHandle }));
  }
}

function recovery(queues: Queues, lines: string[] = [], now = () => Date.now() + AHEAD_MS) {
  return recoverStuck({
    ledger: harness.ledger,
    queue: new SqsDeliveryQueue({ client: sqs, queueUrl: queues.queueUrl, deadLetterQueueUrl: queues.deadLetterQueueUrl }),
    now,
    graceMs: GRACE_MS,
    limit: 1000,
    logger: createLogger({ service: SERVICE_NAME, write: (line) => lines.push(line) }),
  });
}

/** Recovered rows of earlier tests share the ledger: each test counts only its own event's messages. */
function ofEvent(messages: readonly Message[], eventId: string): Message[] {
  return messages.filter((m) => (JSON.parse(m.Body!) as { id: string }).id === eventId);
}

describe('Function: recoverStuck, on the emulators with the real consumer', () => {
  it('enqueues a stranded pending row once, for its endpoint, and the consumer delivers it', async () => {
    // Prepare
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    const handler = await coldStart(queues, 0);
    await strand(handler, queues, 'evt_stranded');

    // Act
    const lines: string[] = [];
    const run = await recovery(queues, lines);
    const messages = ofEvent(await harness.receive(queues.queueUrl, run.recovered), 'evt_stranded');
    const response = await invoke(handler, queues.queueUrl, messages);

    // Assess
    expect(messages).toHaveLength(1);
    expect(messages[0]!.MessageAttributes?.endpoint?.StringValue).toBe('default');
    expect(response.batchItemFailures).toEqual([]);
    expect(harness.receiver.requestsFor('evt_stranded').map((r) => r.answer)).toEqual([503, 200]);
    expect(await harness.ledger.get({ eventId: 'evt_stranded', endpoint: 'default' })).toMatchObject({ state: 'delivered', attempts: 2 });
    expect(lines.map((line) => JSON.parse(line))).toContainEqual(expect.objectContaining({ message: 'recovered', eventId: 'evt_stranded' }));
  });

  it('run twice at once, enqueues the row at most twice, and the consumer sends it once', async () => {
    // Prepare
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    const handler = await coldStart(queues, 0);
    await strand(handler, queues, 'evt_twice');

    // Act: two runs at once, then both messages in one batch (claimed concurrently).
    const runs = await Promise.all([recovery(queues), recovery(queues)]);
    const received = await harness.receive(queues.queueUrl, runs[0].recovered + runs[1].recovered);
    const messages = ofEvent(received, 'evt_twice');
    await invoke(handler, queues.queueUrl, messages);

    // Assess: one 503 before, then exactly one request from the recovered messages.
    // Neither run knows of the other: each enqueued it.
    expect(messages).toHaveLength(2);
    expect(harness.receiver.requestsFor('evt_twice').map((r) => r.answer)).toEqual([503, 200]);
    expect(await harness.ledger.get({ eventId: 'evt_twice', endpoint: 'default' })).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it('does not send a row again while the message it sent may still wait behind a backlog: once per grace at most', async () => {
    // Prepare: stranded, and enqueued by one run; its message is not consumed (a backlog).
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    const handler = await coldStart(queues, 0);
    await strand(handler, queues, 'evt_backlog');
    const at = Date.now() + AHEAD_MS;
    await recovery(queues, [], () => at);

    // Act: the next runs, at the same moment (however slow the machine) and then one grace later.
    const soon = await recovery(queues, [], () => at);
    const later = await recovery(queues, [], () => at + GRACE_MS + 1_000);

    // Assess
    const messages = ofEvent(await harness.receive(queues.queueUrl, 2), 'evt_backlog');
    expect(soon.recovered).toBe(0);
    expect(later.recovered).toBe(1);
    expect(messages).toHaveLength(2);
  });

  it('leaves alone a row that is not yet due, and a row a claim holds', async () => {
    // Prepare: one row due in 300 s; another stranded, then claimed (a worker is on it).
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    await strand(await coldStart(queues, 300), queues, 'evt_later', 'later');
    await strand(await coldStart(queues, 0), queues, 'evt_leased');
    const parsed = parseEvent(eventBody('evt_leased'));
    if (!parsed.ok) throw parsed.error;
    await harness.ledger.claim({
      event: parsed.value,
      endpoint: 'default',
      owner: 'other-worker',
      nowMs: Date.now(),
      leaseMs: 10 * 60_000,
      policy: DEFAULT_RETRY_POLICY,
      retentionSeconds: 30 * 86_400,
    });

    // Act
    const lines: string[] = [];
    await recovery(queues, lines);

    // Assess: neither was enqueued (other tests' rows may have been).
    const recoveredIds = lines.map((line) => JSON.parse(line) as { message: string; eventId?: string }).filter((l) => l.message === 'recovered').map((l) => l.eventId);
    expect(recoveredIds).not.toContain('evt_later');
    expect(recoveredIds).not.toContain('evt_leased');
    expect(harness.receiver.requestsFor('evt_later')).toHaveLength(1);
    expect(harness.receiver.requestsFor('evt_leased')).toHaveLength(1);
  });
});

describe('Function: registryEndpoints', () => {
  it("reads the registry's endpoint names and pauses, and recovery leaves alone the stranded rows of any other endpoint", async () => {
    // Prepare: a registry holding `default` and a paused `slow`; stranded rows for `default` and for `removed`.
    const dynamodb = new DynamoDBClient({ region: REGION, endpoint: harness.emulators.dynamodbEndpoint, credentials: CREDENTIALS });
    const documents = DynamoDBDocumentClient.from(dynamodb);
    await createEndpointsTable(dynamodb, 'handoff-endpoints-recovery-test');
    await documents.send(new PutCommand({ TableName: 'handoff-endpoints-recovery-test', Item: { name: 'default', fields: { name: 'default', secret: 'whsec_x' } } }));
    await documents.send(new PutCommand({ TableName: 'handoff-endpoints-recovery-test', Item: { name: 'slow', fields: { name: 'slow' }, pausedUntil: 1_900_000_000_000 } }));
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    await strand(await coldStart(queues, 0), queues, 'evt_present');
    const parsed = parseEvent(eventBody('evt_gone_endpoint'));
    if (!parsed.ok) throw parsed.error;
    const { claimToken } = await harness.ledger.claim({
      event: parsed.value,
      endpoint: 'removed',
      owner: 'w',
      nowMs: Date.now(),
      leaseMs: 1000,
      policy: DEFAULT_RETRY_POLICY,
      retentionSeconds: 30 * 86_400,
    });
    const nowMs = Date.now();
    await harness.ledger.recordAttempt({
      eventId: 'evt_gone_endpoint',
      endpoint: 'removed',
      claimToken,
      body: parsed.value.body,
      nowMs,
      attempt: { attempt: 1, at: nowMs, outcome: 'temporary', status: 503, durationMs: 1 },
      outcome: { kind: 'temporary', status: 503 },
      next: { state: 'pending', nextAttemptAt: nowMs },
    });
    const endpoints = registryEndpoints(documents, 'handoff-endpoints-recovery-test');

    // Act
    const read = await endpoints();
    const lines: string[] = [];
    const run = await recoverStuck({
      ledger: harness.ledger,
      queue: new SqsDeliveryQueue({ client: sqs, queueUrl: queues.queueUrl, deadLetterQueueUrl: queues.deadLetterQueueUrl }),
      now: () => Date.now() + AHEAD_MS,
      graceMs: GRACE_MS,
      limit: 1000,
      logger: createLogger({ service: SERVICE_NAME, write: (line) => lines.push(line) }),
      endpoints,
    });
    dynamodb.destroy();

    // Assess
    // Names and pauses only: no field, so no secret, is read.
    expect(new Map(read)).toEqual(new Map([['default', {}], ['slow', { pausedUntil: 1_900_000_000_000 }]]));
    const entries = lines.map((line) => JSON.parse(line) as { message: string; eventId?: string; endpoint?: string });
    expect(entries).toContainEqual(expect.objectContaining({ message: 'recovered', eventId: 'evt_present', endpoint: 'default' }));
    expect(entries).toContainEqual(expect.objectContaining({ message: 'not recovered: endpoint removed', eventId: 'evt_gone_endpoint', endpoint: 'removed' }));
    expect(run.orphaned).toBe(1);
  });
});

describe('Handler: functions/recovery.ts (the scheduled function)', () => {
  /** A cold start of the function with the emulators, the harness's ledger table and `env` on top. */
  async function coldStartRecovery(queues: Queues, env: Record<string, string>): Promise<() => Promise<unknown>> {
    const variables: Record<string, string> = {
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_SQS: harness.emulators.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: harness.emulators.dynamodbEndpoint,
      [RESOURCE_ENV.ledgerTable]: 'handoff-ledger-recovery-test',
      [RESOURCE_ENV.queueUrl]: queues.queueUrl,
      ...env,
    };
    for (const [name, value] of Object.entries(variables)) vi.stubEnv(name, value);
    vi.resetModules();
    return ((await import('../../functions/recovery')) as { handler: () => Promise<unknown> }).handler;
  }

  it('enqueues a stranded row, logs the run and writes its Recovered count as a metric document', async () => {
    // Prepare: a grace of 0, so a row due now is stranded now.
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    await strand(await coldStart(queues, 0), queues, 'evt_scheduled');
    const handler = await coldStartRecovery(queues, { [RECOVERY_ENV.graceMs]: '0' });

    // Act
    const result = (await handler()) as { recovered: number; examined: number; complete: boolean };
    const messages = ofEvent(await harness.receive(queues.queueUrl, result.recovered), 'evt_scheduled');

    // Assess
    expect(messages).toHaveLength(1);
    expect(result).toMatchObject({ queueFailed: false, complete: true });
    const lines = stdout.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ message: 'recovery run', recovered: result.recovered, function: 'recovery' }));
    expect(lines).toContainEqual(expect.objectContaining({ Service: 'handoff', Recovered: result.recovered }));
  });

  it('fails its cold start naming the grace when it is missing', async () => {
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);

    await expect(coldStartRecovery(queues, { [RECOVERY_ENV.graceMs]: '' })).rejects.toThrow(/^HANDOFF_RECOVERY_GRACE_MS must be set/);
  });
});
