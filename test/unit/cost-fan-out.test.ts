/**
 * The fan-out figures of `npm run cost` (scripts/cost/runs.ts): per (event, endpoint) delivered,
 * producer and per-endpoint invocations each billed at their own median. Pure: usage by hand; the
 * rounds themselves run in test/cost/runs.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { DynamoDbUsage, SqsUsage } from '../../scripts/cost/meter';
import { median, perDelivery, type FanOutMetered, type RoundResult } from '../../scripts/cost/runs';

describe('Function: perDelivery', () => {
  it('divides by deliveries and bills producer and per-endpoint invocations each at their own median', () => {
    const dynamodb = new DynamoDbUsage();
    dynamodb.tableWriteUnits = 600;
    const sqs = new SqsUsage();
    for (let i = 0; i < 10; i++) sqs.add('SendMessageBatch', 3000);
    for (let i = 0; i < 40; i++) sqs.add('ReceiveMessage (event source)', 3000);
    for (let i = 0; i < 40; i++) sqs.add('DeleteMessageBatch (event source)', 0);
    const metered: FanOutMetered = {
      run: { label: '3 endpoints', endpoints: 3, registry: true, consumer: { invoke: async () => ({ batchItemFailures: [] }), decisions: [] }, prefix: 'p', receivers: [] },
      events: 100,
      deliveries: 300,
      producerInvocations: 10,
      endpointInvocations: 30,
      dynamodb,
      sqs,
    };
    const timed: RoundResult[] = [
      { deliveries: 30, sent: [], received: 30, failed: 0, producerMs: 2, endpointMs: [50, 60, 1000] },
      { deliveries: 30, sent: [], received: 30, failed: 0, producerMs: 4, endpointMs: [55, 45, 58] },
      { deliveries: 30, sent: [], received: 30, failed: 0, producerMs: 3, endpointMs: [52, 51, 57] },
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
