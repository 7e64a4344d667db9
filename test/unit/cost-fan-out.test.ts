/**
 * How `npm run cost` measures fan-out (scripts/cost/fan-out.ts, sqs-meter.ts): what the SQS meter
 * bills and keeps of a SendMessageBatch, the per-endpoint messages handed back as Lambda records, a
 * round's checks, and the figures per (event, endpoint) delivered.
 */
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_ATTRIBUTE } from '../../lib/queue/queue';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { QUEUE_URLS } from '../../scripts/cost/consumers';
import { median, perDelivery, recordOfSent, runRound, type FanOutMetered, type FanOutRun, type RoundResult } from '../../scripts/cost/fan-out';
import { DynamoDbUsage } from '../../scripts/cost/metering-proxy';
import { startSqsMeter, SqsUsage } from '../../scripts/cost/sqs-meter';
import { TEST_SEAL } from '../helpers/sqs-records';

const OPTIONS = { rounds: 1, batchSize: 10, eventBytes: 300 };

/**
 * A consumer stand-in that routes as lib/batch.ts does, through the real queue adapter on the
 * meter's client: a producer's record to `fanOutTo` endpoints (one message each, batched), a
 * per-endpoint record (or a producer's, with one endpoint) delivered to that endpoint's receiver.
 */
function fakeConsumer(meter: ReturnType<typeof startSqsMeter>, fanOutTo: number, sendPerRecord = fanOutTo) {
  const queue = new SqsDeliveryQueue({ client: meter.client, queueUrl: QUEUE_URLS.queue, deadLetterQueueUrl: QUEUE_URLS.deadLetterQueue, seal: TEST_SEAL });
  const receivers = Array.from({ length: fanOutTo }, () => ({ requests: [] as unknown[] }));
  const invoke = async (records: readonly SQSRecord[]): Promise<SQSBatchResponse> => {
    const producers = records.filter((r) => r.messageAttributes[ENDPOINT_ATTRIBUTE] === undefined);
    if (fanOutTo >= 2 && producers.length > 0) {
      await queue.fanOut(producers.flatMap((r) => Array.from({ length: sendPerRecord }, (_, i) => ({ body: r.body, endpoint: `endpoint-${i + 1}` }))));
    }
    for (const record of records) {
      const target = record.messageAttributes[ENDPOINT_ATTRIBUTE]?.stringValue;
      if (target !== undefined) receivers[Number(target.split('-')[1]) - 1]!.requests.push(record.body);
      else if (fanOutTo === 1) receivers[0]!.requests.push(record.body);
    }
    return { batchItemFailures: [] };
  };
  const run: FanOutRun = { label: `${fanOutTo} endpoints`, endpoints: fanOutTo, registry: true, invoke, prefix: 'evt_t', receivers };
  return run;
}

describe('Function: startSqsMeter', () => {
  it("bills a SendMessageBatch by its entries' bodies and attributes together, and keeps each message", async () => {
    const meter = startSqsMeter();
    const usage = meter.start();
    const body = 'x'.repeat(7 * 1024);

    await meter.client.send(
      new SendMessageBatchCommand({
        QueueUrl: QUEUE_URLS.queue,
        Entries: Array.from({ length: 10 }, (_, i) => ({
          Id: String(i),
          MessageBody: body,
          MessageAttributes: { endpoint: { DataType: 'String', StringValue: `e${i}` } },
        })),
      }),
    );
    await meter.client.send(new SendMessageCommand({ QueueUrl: QUEUE_URLS.deadLetterQueue, MessageBody: 'dead' }));

    expect(usage.requests).toEqual({ SendMessageBatch: 1, SendMessage: 1 });
    // 70 KB and a little in one request: two 64 KB chunks; the dead letter one.
    expect(usage.billedRequests).toBe(3);
    const sent = meter.takeSent();
    expect(sent.map((m) => [m.queueUrl, m.attributes.endpoint?.StringValue])).toEqual([
      ...Array.from({ length: 10 }, (_, i) => [QUEUE_URLS.queue, `e${i}`]),
      [QUEUE_URLS.deadLetterQueue, undefined],
    ]);
    expect(meter.takeSent()).toEqual([]);
  });
});

describe('Function: recordOfSent', () => {
  it('hands a per-endpoint message to the consumer as Lambda would: the body unchanged, its endpoint attribute', () => {
    const record = recordOfSent({
      queueUrl: QUEUE_URLS.queue,
      body: '{"id":"evt_1"}',
      attributes: { [ENDPOINT_ATTRIBUTE]: { DataType: 'String', StringValue: 'warehouse' } },
    });

    expect(record.body).toBe('{"id":"evt_1"}');
    expect(record.messageAttributes[ENDPOINT_ATTRIBUTE]).toMatchObject({ dataType: 'String', stringValue: 'warehouse' });
  });
});

describe('Function: runRound', () => {
  it('routes a batch to three endpoints: 3 SendMessageBatch, then three batches of endpoint messages, 30 deliveries', async () => {
    const meter = startSqsMeter();
    const usage = meter.start();
    const run = fakeConsumer(meter, 3);

    const result = await runRound(run, OPTIONS, 't', 0, { sqs: meter });

    expect(result.deliveries).toBe(30);
    expect(result.endpointMs).toHaveLength(3);
    expect(run.receivers.map((r) => r.requests.length)).toEqual([10, 10, 10]);
    expect(usage.requests).toEqual({ SendMessageBatch: 3, 'ReceiveMessage (event source)': 4, 'DeleteMessageBatch (event source)': 4 });
  });

  it('delivers with one endpoint on the producer batch itself: no send, one receive and one delete', async () => {
    const meter = startSqsMeter();
    const usage = meter.start();
    const run = fakeConsumer(meter, 1);

    const result = await runRound(run, OPTIONS, 't', 0, { sqs: meter });

    expect([result.deliveries, result.endpointMs.length]).toEqual([10, 0]);
    expect(usage.requests).toEqual({ 'ReceiveMessage (event source)': 1, 'DeleteMessageBatch (event source)': 1 });
  });

  it('refuses a round whose fan-out is not one message per (event, endpoint)', async () => {
    const meter = startSqsMeter();
    meter.start();

    await expect(runRound(fakeConsumer(meter, 3, 2), OPTIONS, 't', 0, { sqs: meter })).rejects.toThrow(
      '3 endpoints: 20 per-endpoint messages sent, expected 30',
    );
  });
});

describe('Function: perDelivery', () => {
  it('divides by deliveries and bills producer and per-endpoint invocations each at their own median', () => {
    const dynamodb = new DynamoDbUsage();
    dynamodb.tableWriteUnits = 600;
    const sqs = new SqsUsage();
    for (let i = 0; i < 10; i++) sqs.add('SendMessageBatch', 3000);
    for (let i = 0; i < 40; i++) sqs.add('ReceiveMessage (event source)', 3000);
    for (let i = 0; i < 40; i++) sqs.add('DeleteMessageBatch (event source)', 0);
    const metered: FanOutMetered = {
      run: { label: '3 endpoints', endpoints: 3, registry: true, invoke: async () => ({ batchItemFailures: [] }), prefix: 'p', receivers: [] },
      events: 100,
      deliveries: 300,
      producerInvocations: 10,
      endpointInvocations: 30,
      dynamodb,
      sqs,
    };
    const timed: RoundResult[] = [
      { deliveries: 30, producerMs: 2, endpointMs: [50, 60, 1000] },
      { deliveries: 30, producerMs: 4, endpointMs: [55, 45, 58] },
      { deliveries: 30, producerMs: 3, endpointMs: [52, 51, 57] },
    ];

    const per = perDelivery(metered, timed, 1024);

    expect(per.producerMedianMs).toBe(3);
    expect(per.endpointMedianMs).toBe(55);
    expect(per.usage.writeUnits).toBe(2);
    expect(per.usage.sqsRequests).toBeCloseTo(90 / 300);
    expect(per.sqsByOperation).toEqual({ SendMessageBatch: 10 / 300, 'ReceiveMessage*': 40 / 300, 'DeleteMessageBatch*': 40 / 300 });
    // 10 × 3 ms + 30 × 55 ms at 1 GB, over 300 deliveries.
    expect(per.usage.lambdaGbSeconds).toBeCloseTo((10 * 3 + 30 * 55) / 1000 / 300);
    expect(per.usage.lambdaInvocations).toBeCloseTo(40 / 300);
  });

  it('takes the middle value as the median, 0 for none', () => {
    expect([median([5, 1, 3]), median([4, 1, 3, 2]), median([])]).toEqual([3, 3, 0]);
  });
});
