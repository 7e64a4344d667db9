/**
 * The sandbox poller against a real SQS emulator (fauxqs): Lambda's event shape, partial batch
 * responses, whole-batch failures and redrive by receive count; and a FIFO queue (the ordered
 * intake) polled as Lambda polls one, its handler keeping a group's order as the consumer does.
 */
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { batchItemFailures, inGroupOrder } from '../../lib/fifo';
import { eventually } from '../helpers/sandbox-clients';
import { startEmulators, type Emulators } from '../../sandbox/emulators';
import { startPoller, type BatchReport, type Invocation, type Poller } from '../../sandbox/poller';
import { ORDERED_QUEUE_ATTRIBUTES } from '../../sandbox/sandbox';

let emulators: Emulators;
let sqs: SQSClient;
let poller: Poller | undefined;
let queueCount = 0;

beforeAll(async () => {
  emulators = await startEmulators();
  sqs = new SQSClient({
    region: 'us-east-1',
    endpoint: emulators.sqsEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    useQueueUrlAsEndpoint: false,
  });
});

afterEach(async () => {
  await poller?.stop(5000);
  poller = undefined;
});

afterAll(async () => {
  sqs.destroy();
  await emulators.close();
});

interface Queues {
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deadLetterQueueUrl: string;
}

/** A fresh queue (1 s visibility) with its own dead-letter queue, so tests never share messages. */
async function createQueues(maxReceiveCount: number): Promise<Queues> {
  queueCount += 1;
  const name = `poller-${queueCount}`;
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq` }));
  const dlqArn = await arnOf(dlq.QueueUrl!);
  const queue = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: '1',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount }),
      },
    }),
  );
  return { queueUrl: queue.QueueUrl!, queueArn: await arnOf(queue.QueueUrl!), deadLetterQueueUrl: dlq.QueueUrl! };
}

async function arnOf(queueUrl: string): Promise<string> {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  return Attributes!.QueueArn!;
}

async function messagesOn(queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return Number(Attributes!.ApproximateNumberOfMessages) + Number(Attributes!.ApproximateNumberOfMessagesNotVisible);
}

/** Whether the queue empties (every batch's deletes done) within a few seconds. */
function drained(queueUrl: string): Promise<boolean> {
  return eventually('the queue to drain', async () => (await messagesOn(queueUrl)) === 0, { timeoutMs: 5_000, intervalMs: 100 });
}

/** A promise and the function that settles it. */
function signal(): { settled: Promise<void>; done: () => void } {
  let done!: () => void;
  const settled = new Promise<void>((resolve) => {
    done = resolve;
  });
  return { settled, done };
}

/** The poller options every test's poller has: this file's SQS client on `queues`, 1 s long polls. */
function on(queues: Queues) {
  return { sqs, queueUrl: queues.queueUrl, source: { queueArn: queues.queueArn, region: 'us-east-1' }, waitTimeSeconds: 1 };
}

/** Starts a poller whose handler is `respond`; resolves `settled` once `until` holds after a batch. */
function poll(queues: Queues, respond: (event: SQSEvent) => Invocation, until: (seen: SQSRecord[]) => boolean) {
  const seen: SQSRecord[] = [];
  const reports: BatchReport[] = [];
  const { settled, done } = signal();
  poller = startPoller({
    ...on(queues),
    batchSize: 10,
    maxConcurrency: 2,
    invoke: async (event) => {
      seen.push(...event.Records);
      return respond(event);
    },
    onBatch: (report) => {
      reports.push(report);
      if (until(seen)) done();
    },
  });
  return { seen, reports, settled };
}

const send = (queueUrl: string, body: string) => sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));

describe('Poller: the event it hands the handler', () => {
  it('builds records the way Lambda does, with system and message attributes', async () => {
    // Prepare
    const queues = await createQueues(5);
    const sent = await sqs.send(
      new SendMessageCommand({
        QueueUrl: queues.queueUrl,
        MessageBody: '{"id":"evt_1"}',
        MessageAttributes: { origin: { DataType: 'String', StringValue: 'test' } },
      }),
    );

    // Act
    const { seen, reports, settled } = poll(queues, () => ({ kind: 'returned', response: { batchItemFailures: [] } }), (s) => s.length >= 1);
    await settled;

    // Assess
    expect(seen).toHaveLength(1);
    const record = seen[0]!;
    expect(record).toMatchObject({
      messageId: sent.MessageId,
      body: '{"id":"evt_1"}',
      md5OfBody: sent.MD5OfMessageBody,
      eventSource: 'aws:sqs',
      eventSourceARN: queues.queueArn,
      awsRegion: 'us-east-1',
      messageAttributes: { origin: { stringValue: 'test', stringListValues: [], binaryListValues: [], dataType: 'String' } },
    });
    expect(record.attributes.ApproximateReceiveCount).toBe('1');
    expect(Number(record.attributes.SentTimestamp)).toBeGreaterThan(0);
    expect(record.receiptHandle).not.toBe('');
    expect(reports[0]).toMatchObject({ size: 1, invocation: 'returned', deleteFailures: 0 });
    expect(await messagesOn(queues.queueUrl)).toBe(0);
  });
});

describe('Poller: applying the response', () => {
  it('deletes the records not listed and leaves a listed one to come back', async () => {
    // Prepare
    const queues = await createQueues(5);
    await send(queues.queueUrl, 'ack-me');
    await send(queues.queueUrl, 'keep-me');

    // Act: report "keep-me" as failed on its first receive only.
    const { seen, settled } = poll(
      queues,
      (event) => ({
        kind: 'returned',
        response: {
          batchItemFailures: event.Records.filter((r) => r.body === 'keep-me' && r.attributes.ApproximateReceiveCount === '1').map(
            (r) => ({ itemIdentifier: r.messageId }),
          ),
        },
      }),
      (s) => s.filter((r) => r.body === 'keep-me').length === 2,
    );
    await settled;

    // Assess
    expect(seen.filter((r) => r.body === 'ack-me').map((r) => r.attributes.ApproximateReceiveCount)).toEqual(['1']);
    expect(seen.filter((r) => r.body === 'keep-me').map((r) => r.attributes.ApproximateReceiveCount)).toEqual(['1', '2']);
    expect(await messagesOn(queues.queueUrl)).toBe(0);
  });

  it.each([
    ['a thrown error', { kind: 'threw', error: 'Error: boom' }],
    ['a dead worker', { kind: 'worker-died', detail: 'killed by SIGKILL' }],
    ['an unknown itemIdentifier', { kind: 'returned', response: { batchItemFailures: [{ itemIdentifier: 'nope' }] } }],
  ] as const)('returns the whole batch after %s', async (_, failure) => {
    // Prepare
    const queues = await createQueues(5);
    await send(queues.queueUrl, 'one');
    await send(queues.queueUrl, 'two');
    let calls = 0;

    // Act: the first invocation fails, later ones succeed.
    const { seen, reports, settled } = poll(
      queues,
      () => (++calls === 1 ? failure : { kind: 'returned', response: null }),
      (s) => s.filter((r) => r.attributes.ApproximateReceiveCount === '1').length === 2 && s.some((r) => r.attributes.ApproximateReceiveCount === '2'),
    );
    await settled;
    await poller!.stop(5000);

    // Assess: whatever the first batch held came back once more, and nothing is left.
    const first = reports[0]!;
    expect(first.settlement.kind).toBe('batch-failed');
    const firstBatchBodies = seen.slice(0, first.size).map((r) => r.body).sort();
    const receivedTwice = seen.filter((r) => r.attributes.ApproximateReceiveCount === '2').map((r) => r.body).sort();
    expect(receivedTwice).toEqual(firstBatchBodies);
    expect(await messagesOn(queues.queueUrl)).toBe(0);
  });
});

describe('Poller: redrive', () => {
  it('lets the queue move a message to the dead-letter queue after maxReceiveCount failed receives', async () => {
    // Prepare
    const queues = await createQueues(2);
    await send(queues.queueUrl, 'always-fails');

    // Act
    const { seen, settled } = poll(queues, () => ({ kind: 'threw', error: 'Error: boom' }), (s) => s.length === 2);
    await settled;
    const moved = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queues.deadLetterQueueUrl, WaitTimeSeconds: 5, MaxNumberOfMessages: 10 }),
    );

    // Assess
    expect(seen.map((r) => r.attributes.ApproximateReceiveCount)).toEqual(['1', '2']);
    expect(moved.Messages?.map((m) => m.Body)).toEqual(['always-fails']);
    expect(await messagesOn(queues.queueUrl)).toBe(0);
  });
});

describe('Poller: a FIFO queue, as Lambda polls the ordered intake', () => {
  /** A fresh FIFO queue (1 s visibility), deduplicated by ID, with its own FIFO dead-letter queue. */
  async function createFifoQueues(maxReceiveCount: number): Promise<Queues> {
    queueCount += 1;
    const name = `poller-${queueCount}`;
    const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-dlq.fifo`, Attributes: { FifoQueue: 'true' } }));
    const queue = await sqs.send(
      new CreateQueueCommand({
        QueueName: `${name}.fifo`,
        Attributes: {
          ...ORDERED_QUEUE_ATTRIBUTES,
          VisibilityTimeout: '1',
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await arnOf(dlq.QueueUrl!), maxReceiveCount }),
        },
      }),
    );
    return { queueUrl: queue.QueueUrl!, queueArn: await arnOf(queue.QueueUrl!), deadLetterQueueUrl: dlq.QueueUrl! };
  }

  const sendInGroup = (queueUrl: string, group: string, id: string) =>
    sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: id, MessageGroupId: group, MessageDeduplicationId: id }));

  /**
   * Polls with a handler that handles records as the consumer will (lib/fifo.ts) and answers
   * `fails(record)` for each record it handles; records every handled record, every batch's groups,
   * and any group found in two batches in flight at once.
   */
  function pollFifo(queues: Queues, fails: (record: SQSRecord) => boolean, until: (handled: SQSRecord[]) => boolean, batchSize = 10) {
    const handled: SQSRecord[] = [];
    const batches: SQSRecord[][] = [];
    const busy = new Set<string>();
    const overlaps: string[] = [];
    const { settled, done } = signal();
    poller = startPoller({
      ...on(queues),
      batchSize,
      maxConcurrency: 4,
      invoke: async (event) => {
        batches.push(event.Records);
        const groups = [...new Set(event.Records.map((r) => r.attributes.MessageGroupId!))];
        for (const group of groups) (busy.has(group) ? overlaps : []).push(group);
        groups.forEach((group) => busy.add(group));
        // Let other batches start meanwhile, if the poller would hand any over.
        await new Promise((resolve) => setTimeout(resolve, 50));
        const reported = await inGroupOrder(event.Records, async (record) => {
          handled.push(record);
          return fails(record);
        });
        groups.forEach((group) => busy.delete(group));
        return { kind: 'returned', response: { batchItemFailures: batchItemFailures(event.Records, reported) } };
      },
      onBatch: () => {
        if (until(handled)) done();
      },
    });
    return { handled, batches, overlaps, settled };
  }

  const orderOf = (records: readonly SQSRecord[], group: string) =>
    records.filter((r) => r.attributes.MessageGroupId === group).map((r) => `${r.body}#${r.attributes.ApproximateReceiveCount}`);

  it("hands over records with the FIFO queue's ARN and their MessageGroupId, at most 10 a batch", async () => {
    // Prepare: 12 groups, more than a FIFO batch holds.
    const queues = await createFifoQueues(5);
    const groups = Array.from({ length: 12 }, (_, i) => `shp_${i}`);
    for (const group of groups) await sendInGroup(queues.queueUrl, group, `${group}_evt_1`);

    // Act
    const { handled, batches, settled } = pollFifo(queues, () => false, (h) => h.length >= 12, 25);
    await settled;

    // Assess
    expect(handled.map((r) => r.attributes.MessageGroupId).sort()).toEqual([...groups].sort());
    expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(10);
    for (const record of handled) {
      expect(record.eventSourceARN).toBe(queues.queueArn);
      expect(record.eventSourceARN.endsWith('.fifo')).toBe(true);
      expect(record.attributes).toMatchObject({ MessageDeduplicationId: record.body, ApproximateReceiveCount: '1' });
      expect(record.attributes.SequenceNumber).toMatch(/^\d+$/);
    }
    // A batch that settled the last records may finish its deletes after the other's report.
    expect(await drained(queues.queueUrl)).toBe(true);
  });

  it("keeps each group's order across a failure: the failed record comes back before the group's next, never two batches of a group at once", async () => {
    // Prepare: two shipments, interleaved; shp_a's second event fails on its first receive.
    const queues = await createFifoQueues(5);
    for (const [group, id] of [['shp_a', 'a1'], ['shp_b', 'b1'], ['shp_a', 'a2'], ['shp_a', 'a3'], ['shp_b', 'b2'], ['shp_a', 'a4'], ['shp_b', 'b3']]) {
      await sendInGroup(queues.queueUrl, group!, id!);
    }

    // Act
    const { handled, overlaps, settled } = pollFifo(
      queues,
      (record) => record.body === 'a2' && record.attributes.ApproximateReceiveCount === '1',
      (h) => ['a4', 'b3'].every((id) => h.some((r) => r.body === id)),
    );
    await settled;

    // Assess: a2 handled twice, and a3 only after its second, successful, handling.
    expect(orderOf(handled, 'shp_a')).toEqual(['a1#1', 'a2#1', 'a2#2', 'a3#1', 'a4#1']);
    expect(orderOf(handled, 'shp_b')).toEqual(['b1#1', 'b2#1', 'b3#1']);
    expect(overlaps).toEqual([]);
    // A batch that settled the last records may finish its deletes after the other's report.
    expect(await drained(queues.queueUrl)).toBe(true);
  });

  it('lets the queue move a message its handler keeps failing to the FIFO dead-letter queue, then hands over its group’s next', async () => {
    // Prepare
    const queues = await createFifoQueues(2);
    await sendInGroup(queues.queueUrl, 'shp_dead', 'd1');
    await sendInGroup(queues.queueUrl, 'shp_dead', 'd2');

    // Act
    const { handled, settled } = pollFifo(queues, (record) => record.body === 'd1', (h) => h.some((r) => r.body === 'd2'));
    await settled;
    const moved = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queues.deadLetterQueueUrl,
        WaitTimeSeconds: 5,
        MaxNumberOfMessages: 10,
        MessageSystemAttributeNames: ['All'],
      }),
    );

    // Assess
    expect(orderOf(handled, 'shp_dead')).toEqual(['d1#1', 'd1#2', 'd2#1']);
    expect(moved.Messages?.map((m) => [m.Body, m.Attributes?.MessageGroupId])).toEqual([['d1', 'shp_dead']]);
    // A batch that settled the last records may finish its deletes after the other's report.
    expect(await drained(queues.queueUrl)).toBe(true);
  });
});
