/**
 * Stuck-work recovery (lib/recovery.ts) against dynalite and fauxqs, with the real consumer handler
 * (functions/consumer.ts) making the rows and delivering what recovery sends:
 * - the redrive queue: a message SQS's redrive moved there (a retrying delivery's, or a first
 *   attempt's the consumer never decided) is sent back unchanged and delivered once; one redriven
 *   too often goes to the dead-letter queue; two runs at once send each message back once;
 * - the pending listing: a replayed row whose message never came (a failed enqueue) is enqueued
 *   again and delivered once; two runs at once enqueue it twice and the claim lets one send; a row
 *   leased is left alone.
 *
 * The listing's runs are told a clock ahead of the real one by more than the grace, so a row
 * replayed a moment ago is "quiet long enough" without the test sleeping; the consumer keeps the
 * real clock (its claims are due: the retry schedule's first wait is 0).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { parseEvent } from '../../lib/event';
import { RESOURCE_ENV } from '../../lib/config';
import { createLogger, SERVICE_NAME } from '../../lib/observability';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { SqsRedriveQueue } from '../../lib/queue/sqs-redrive-queue';
import { sealedAttributes } from '../../lib/queue/seal';
import { MAX_RECOVERIES, RECOVERY_ENV, recoverStuck, sendBackRedriven } from '../../lib/recovery';
import { registryEndpoints } from '../../lib/recovery-endpoints';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { CREDENTIALS, isolateEachTest, lambdaContext, REGION, useConsumerHarness, type ConsumerHarness, type Handler, type Queues } from '../helpers/consumer-harness';
import { TEST_SEAL } from '../helpers/sqs-records';
import { TEST_SECRET as SECRET } from '../helpers/secrets';

const QUEUE_VISIBILITY_SECONDS = 30;
const GRACE_MS = 2_000;
/** How far ahead of the real clock the recovery runs are told it is: past the grace. */
const AHEAD_MS = GRACE_MS + 1_000;

let harness: ConsumerHarness;
let sqs: SQSClient;

useConsumerHarness('recovery-test', (started) => {
  harness = started;
  ({ sqs } = started);
});

let stdout: string[] = [];
isolateEachTest((lines) => (stdout = lines));

function eventBody(id: string): string {
  return JSON.stringify({ id, shipmentId: 'shp_1001', status: 'delivered', occurredAt: '2026-12-02T10:15:00Z' });
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
function invoke(handler: Handler, queueUrl: string, messages: Message[]) {
  return harness.invoke(handler, queueUrl, messages, lambdaContext());
}

/**
 * A delivery stranded as a failed replay leaves one: its attempt was rejected (400, dead), an
 * operator replayed it (the row is pending and listed), and the enqueue that follows never happened.
 */
async function strand(handler: Handler, queues: Queues, eventId: string): Promise<void> {
  harness.receiver.respondTo(eventId, 400);
  await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: eventBody(eventId) }));
  await invoke(handler, queues.queueUrl, await harness.receive(queues.queueUrl, 1));
  expect(await harness.ledger.get({ eventId, endpoint: 'default' })).toMatchObject({ state: 'dead', attempts: 1 });
  harness.receiver.respondTo(eventId, 200);
  await harness.ledger.replay({ eventId, endpoint: 'default', operator: 'test', reason: 'receiver fixed', nowMs: Date.now() });
}

/** Waits until SQS's redrive has put `count` messages on the redrive queue (receives on the delivery queue drive it). */
async function untilRedriven(queues: Queues, count: number): Promise<void> {
  for (let round = 0; round < 20; round += 1) {
    // A receive finds the message past its receive count and moves it instead of returning it.
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, WaitTimeSeconds: 0, VisibilityTimeout: 0 }));
    expect(Messages).toEqual([]);
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queues.redriveQueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }));
    if (Number(Attributes?.ApproximateNumberOfMessages) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`fewer than ${count} messages reached the redrive queue`);
}

function redriveQueue(queues: Queues, options: { queueUrl?: string; visibilityTimeoutSeconds?: number } = {}) {
  return new SqsRedriveQueue({
    client: sqs,
    redriveQueueUrl: queues.redriveQueueUrl,
    queueUrl: options.queueUrl ?? queues.queueUrl,
    deadLetterQueueUrl: queues.deadLetterQueueUrl,
    seal: TEST_SEAL,
    ...(options.visibilityTimeoutSeconds !== undefined ? { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds } : {}),
  });
}

function sendBack(queues: Queues, lines: string[] = [], options?: Parameters<typeof redriveQueue>[1]) {
  return sendBackRedriven({ redrive: redriveQueue(queues, options), limit: 100, logger: createLogger({ service: SERVICE_NAME, write: (line) => lines.push(line) }) });
}

function recovery(queues: Queues, lines: string[] = [], now = () => Date.now() + AHEAD_MS) {
  return recoverStuck({
    ledger: harness.ledger,
    queue: new SqsDeliveryQueue({ client: sqs, queueUrl: queues.queueUrl, deadLetterQueueUrl: queues.deadLetterQueueUrl, seal: TEST_SEAL }),
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
    expect(harness.receiver.requestsFor('evt_stranded').map((r) => r.answer)).toEqual([400, 200]);
    expect(await harness.ledger.get({ eventId: 'evt_stranded', endpoint: 'default' })).toMatchObject({ state: 'delivered', attempts: 1, replays: 1 });
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

    // Assess: one 400 before the replay, then exactly one request from the recovered messages.
    // Neither run knows of the other: each enqueued it.
    expect(messages).toHaveLength(2);
    expect(harness.receiver.requestsFor('evt_twice').map((r) => r.answer)).toEqual([400, 200]);
    expect(await harness.ledger.get({ eventId: 'evt_twice', endpoint: 'default' })).toMatchObject({ state: 'delivered', attempts: 1 });
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

  it('leaves alone a row a claim holds', async () => {
    // Prepare: stranded, then claimed (a worker is on it).
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
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

    // Assess: not enqueued (other tests' rows may have been), and still listed.
    const recoveredIds = lines.map((line) => JSON.parse(line) as { message: string; eventId?: string }).filter((l) => l.message === 'recovered').map((l) => l.eventId);
    expect(recoveredIds).not.toContain('evt_leased');
    expect(harness.receiver.requestsFor('evt_leased')).toHaveLength(1);
    expect((await harness.ledger.listByState('pending')).records.map((r) => r.eventId)).toContain('evt_leased');
  });
});

describe('Function: sendBackRedriven, on the emulators with the real consumer', () => {
  it('sends a retrying delivery SQS redrove back to the delivery queue, attributes kept and counted, and the consumer delivers it once', async () => {
    // Prepare: a 503 (the consumer keeps the message for a retry), then SQS's redrive takes it.
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS, { maxReceiveCount: 1 });
    const handler = await coldStart(queues, 0);
    harness.receiver.respondTo('evt_redriven', 503);
    await new SqsDeliveryQueue({ client: sqs, ...queues, seal: TEST_SEAL }).enqueue(eventBody('evt_redriven'), { endpoint: 'default' });
    const first = await invoke(handler, queues.queueUrl, await harness.receive(queues.queueUrl, 1));
    expect(first.batchItemFailures).toHaveLength(1);
    await untilRedriven(queues, 1);
    harness.receiver.respondTo('evt_redriven', 200);

    // Act
    const lines: string[] = [];
    const run = await sendBack(queues, lines);
    const messages = await harness.receive(queues.queueUrl, 1);
    const response = await invoke(handler, queues.queueUrl, messages);

    // Assess
    expect(run).toEqual({ sentBack: 1, gaveUp: 0, queueFailed: false });
    expect(messages[0]!.Body).toBe(eventBody('evt_redriven'));
    expect(messages[0]!.MessageAttributes?.endpoint?.StringValue).toBe('default');
    expect(messages[0]!.MessageAttributes?.recoveries?.StringValue).toBe('1');
    expect(response.batchItemFailures).toEqual([]);
    expect(harness.receiver.requestsFor('evt_redriven').map((r) => r.answer)).toEqual([503, 200]);
    expect(await harness.ledger.get({ eventId: 'evt_redriven', endpoint: 'default' })).toMatchObject({ state: 'delivered', attempts: 2 });
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries).toContainEqual(expect.objectContaining({ message: 'sent back', eventId: 'evt_redriven', endpoint: 'default', recoveries: 1 }));
    expect(lines.join('\n')).not.toContain('shp_1001');
  });

  it("sends back a producer's message the consumer never decided (no row yet), and the claim admits it as new", async () => {
    // Prepare: received and never deleted nor decided (a consumer that kept crashing), then redriven.
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS, { maxReceiveCount: 1 });
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.queueUrl, MessageBody: eventBody('evt_never_decided') }));
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, WaitTimeSeconds: 1, VisibilityTimeout: 0 }));
    await untilRedriven(queues, 1);

    // Act
    const run = await sendBack(queues);
    const handler = await coldStart(queues, 0);
    const response = await invoke(handler, queues.queueUrl, await harness.receive(queues.queueUrl, 1));

    // Assess
    expect(run.sentBack).toBe(1);
    expect(response.batchItemFailures).toEqual([]);
    expect(harness.receiver.requestsFor('evt_never_decided').map((r) => r.answer)).toEqual([200]);
    expect(await harness.ledger.get({ eventId: 'evt_never_decided', endpoint: 'default' })).toMatchObject({ state: 'delivered', attempts: 1 });
  });

  it(`gives up on a message redriven ${MAX_RECOVERIES} times over: to the dead-letter queue without a reason, its attributes kept`, async () => {
    // Prepare: on the redrive queue after recovery had sent it back MAX_RECOVERIES times.
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queues.redriveQueueUrl,
        MessageBody: eventBody('evt_poison'),
        MessageAttributes: sealedAttributes(TEST_SEAL, eventBody('evt_poison'), { endpoint: 'default', recoveries: String(MAX_RECOVERIES) }),
      }),
    );

    // Act
    const lines: string[] = [];
    const run = await sendBack(queues, lines);

    // Assess
    expect(run).toEqual({ sentBack: 0, gaveUp: 1, queueFailed: false });
    const [dead] = await harness.receive(queues.deadLetterQueueUrl, 1);
    expect(dead!.Body).toBe(eventBody('evt_poison'));
    expect(dead!.MessageAttributes?.reason).toBeUndefined();
    expect(dead!.MessageAttributes?.endpoint?.StringValue).toBe('default');
    expect(dead!.MessageAttributes?.recoveries?.StringValue).toBe(String(MAX_RECOVERIES));
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queues.queueUrl, WaitTimeSeconds: 1 }));
    expect(Messages).toEqual([]);
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toContainEqual(
      expect.objectContaining({ message: 'redriven too often: dead-lettered', eventId: 'evt_poison', recoveries: MAX_RECOVERIES }),
    );
  });

  it('run twice at once, sends each redriven message back once, without the request slot its first receive had reserved', async () => {
    // Prepare: 15 messages on the redrive queue, each carrying a reserved slot (a rate-limited endpoint's put-back).
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    const ids = Array.from({ length: 15 }, (_, i) => `evt_redriven_${String(i).padStart(2, '0')}`);
    for (const id of ids) {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queues.redriveQueueUrl,
          MessageBody: eventBody(id),
          MessageAttributes: sealedAttributes(TEST_SEAL, eventBody(id), { endpoint: 'default', notBefore: '1800000000000', notBeforeRate: '5' }),
        }),
      );
    }

    // Act
    const runs = await Promise.all([sendBack(queues), sendBack(queues)]);

    // Assess: every message once on the delivery queue, none left behind.
    const messages = await harness.receive(queues.queueUrl, 15);
    expect(runs[0].sentBack + runs[1].sentBack).toBe(15);
    expect(messages.map((m) => (JSON.parse(m.Body!) as { id: string }).id).sort()).toEqual(ids);
    expect(messages.map((m) => Object.keys(m.MessageAttributes ?? {}).sort())).toEqual(ids.map(() => ['endpoint', 'recoveries', 'seal']));
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queues.redriveQueueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    expect(Attributes).toMatchObject({ ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0' });
  });

  it('leaves a message it could not send on the redrive queue, for the next run', async () => {
    // Prepare
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.redriveQueueUrl, MessageBody: eventBody('evt_send_fails') }));
    const lines: string[] = [];

    // Act: a delivery queue that does not exist, and a short visibility on the redrive queue.
    const failed = await sendBack(queues, lines, { queueUrl: `${queues.queueUrl}-missing`, visibilityTimeoutSeconds: 1 });
    const next = await sendBack(queues);

    // Assess
    expect(failed).toEqual({ sentBack: 0, gaveUp: 0, queueFailed: true });
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toContainEqual(expect.objectContaining({ message: 'redrive queue failed' }));
    // The next run may come before the message is visible again: then the one after finds it.
    const sent = next.sentBack === 1 ? next : await waitForSendBack(queues);
    expect(sent.sentBack).toBe(1);
    expect(ofEvent(await harness.receive(queues.queueUrl, 1), 'evt_send_fails')).toHaveLength(1);
  });
});

/** Runs until one message is sent back (bounded): a message hidden by a failed run returns after its visibility. */
async function waitForSendBack(queues: Queues) {
  for (let round = 0; round < 30; round += 1) {
    const run = await sendBack(queues);
    if (run.sentBack > 0) return run;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the message never came back to the redrive queue');
}

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
      attempt: { attempt: 1, at: nowMs, outcome: 'rejected', status: 400, durationMs: 1 },
      outcome: { kind: 'rejected', status: 400, responseStart: 'no' },
      next: { state: 'dead', reason: 'rejected', detail: 'rejected (400): no' },
    });
    // Replayed (listed as pending) when its endpoint still was, and its enqueue lost.
    await harness.ledger.replay({ eventId: 'evt_gone_endpoint', endpoint: 'removed', operator: 'test', reason: 'fixed', nowMs });
    const endpoints = registryEndpoints(documents, 'handoff-endpoints-recovery-test');

    // Act
    const read = await endpoints();
    const lines: string[] = [];
    const run = await recoverStuck({
      ledger: harness.ledger,
      queue: new SqsDeliveryQueue({ client: sqs, queueUrl: queues.queueUrl, deadLetterQueueUrl: queues.deadLetterQueueUrl, seal: TEST_SEAL }),
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
      [RESOURCE_ENV.deadLetterQueueUrl]: queues.deadLetterQueueUrl,
      [RESOURCE_ENV.redriveQueueUrl]: queues.redriveQueueUrl,
      ...env,
    };
    for (const [name, value] of Object.entries(variables)) vi.stubEnv(name, value);
    vi.resetModules();
    return ((await import('../../functions/recovery')) as { handler: () => Promise<unknown> }).handler;
  }

  it('sends back what SQS redrove and enqueues a stranded row, logs the run and writes its Recovered count as a metric document', async () => {
    // Prepare: a grace of 0, so a row replayed now is stranded now; and a message on the redrive queue.
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
    await strand(await coldStart(queues, 0), queues, 'evt_scheduled');
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.redriveQueueUrl, MessageBody: eventBody('evt_scheduled_redriven') }));
    const handler = await coldStartRecovery(queues, { [RECOVERY_ENV.graceMs]: '0' });

    // Act
    const result = (await handler()) as { recovered: number; sentBack: number; examined: number; complete: boolean };
    const received = await harness.receive(queues.queueUrl, result.recovered + result.sentBack);

    // Assess
    expect(ofEvent(received, 'evt_scheduled')).toHaveLength(1);
    expect(ofEvent(received, 'evt_scheduled_redriven')).toHaveLength(1);
    expect(result).toMatchObject({ queueFailed: false, complete: true, sentBack: 1, gaveUp: 0 });
    const lines = stdout.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ message: 'recovery run', recovered: result.recovered, sentBack: 1, function: 'recovery' }));
    expect(lines).toContainEqual(expect.objectContaining({ Service: 'handoff', Recovered: result.recovered + 1 }));
  });

  it('fails its cold start naming the redrive queue when it is missing', async () => {
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);

    await expect(coldStartRecovery(queues, { [RECOVERY_ENV.graceMs]: '0', [RESOURCE_ENV.redriveQueueUrl]: '' })).rejects.toThrow(
      /^HANDOFF_REDRIVE_QUEUE_URL must be set/,
    );
  });

  it('fails its cold start naming the grace when it is missing', async () => {
    const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);

    await expect(coldStartRecovery(queues, { [RECOVERY_ENV.graceMs]: '' })).rejects.toThrow(/^HANDOFF_RECOVERY_GRACE_MS must be set/);
  });
});
