/**
 * The bench's pure plumbing: requests per delivered event from the emulators' counts
 * (bench/harness.ts), rounds combined into one figure set (bench/throughput.ts), and targets and
 * tables as printed (bench/report.ts); the sandbox-scale run's endpoints, events and ratio (bench/sandbox-scale.ts).
 */
import { describe, expect, it } from 'vitest';
import { countsBetween, median, percentile, perDelivery, type RequestCounts } from '../../bench/harness';
import { table, target } from '../../bench/report';
import { eventFor, idleCpuRatio, sandboxScaleMarkdown, scaleEndpoints, type SandboxScaleRun } from '../../bench/sandbox-scale';
import { combine, type ConsumerFigures } from '../../bench/throughput';

const counts = (handler: Record<string, number>, poller: Record<string, number> = {}): RequestCounts => ({ handler, poller, producer: {}, setup: {} });

describe('Function: countsBetween and perDelivery', () => {
  it('counts what the handler and the poller asked between two snapshots, per delivered event', () => {
    const before = counts({ 'DynamoDB.PutItem': 5 }, { 'SQS.ReceiveMessage': 1 });
    const after = counts(
      { 'DynamoDB.PutItem': 15, 'DynamoDB.UpdateItem': 10, 'DynamoDB.BatchWriteItem': 1, 'DynamoDB.GetItem': 2, 'SQS.ChangeMessageVisibility': 1, 'DynamoDB bytes sent': 4000 },
      { 'SQS.ReceiveMessage': 3, 'SQS.DeleteMessageBatch': 2 },
    );
    const between = countsBetween(before, after);

    expect(between.handler['DynamoDB.PutItem']).toBe(10);
    expect(perDelivery(between, 10)).toEqual({
      dynamodbWrites: 2.1,
      dynamodbReads: 0.2,
      dynamodbBytesSent: 400,
      dynamodbBytesReceived: 0,
      handlerSqs: 0.1,
      pollerSqs: 0.4,
    });
    expect(perDelivery(between, 0).dynamodbWrites).toBeNaN();
  });
});

describe('Function: median and percentile', () => {
  it('takes the middle (the mean of the two middle ones) and the nearest rank', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(median([])).toBeNaN();
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 99)).toBe(99);
  });
});

describe('Function: combine', () => {
  it('takes each figure\'s median over the rounds and sums what was delivered, repeated and failed', () => {
    const round = (eventsPerSecond: number, repeats: number, complete = true) =>
      ({ delivered: 100, complete, eventsPerSecond, handlerCpuMsPerEvent: eventsPerSecond / 100, repeats, failedBatches: 0, handlerRequests: { 'DynamoDB.PutItem': eventsPerSecond } }) as unknown as ConsumerFigures;
    const combined = combine([round(300, 0), round(100, 1), round(200, 0, false)]);

    expect(combined).toMatchObject({ eventsPerSecond: 200, handlerCpuMsPerEvent: 2, delivered: 300, repeats: 1, failedBatches: 0, complete: false });
    expect(combined.handlerRequests).toEqual({ 'DynamoDB.PutItem': 300 });
    expect(() => combine([])).toThrow('no rounds');
  });
});

describe('Function: target and table', () => {
  it('says met, or by how much a target was missed, each way round', () => {
    const show = (x: number) => x.toFixed(2);
    expect(target('writes', 2, '≤', 2, show)).toEqual({ name: 'writes', target: '≤ 2.00', measured: '2.00', met: true, verdict: 'met' });
    expect(target('throughput', 0.96, '≥', 1.2, show).verdict).toBe('missed by 20%');
    expect(target('cpu', 1, '<', 1, show).verdict).toBe('missed by 0%');
    expect(target('cpu', 1.26, '<', 1, show)).toMatchObject({ met: false, verdict: 'missed by 26%' });
  });

  it('aligns the first column left and the others right unless told', () => {
    expect(table(['a', 'b'], [['x', '1']])).toEqual(['| a | b |', '| --- | --: |', '| x | 1 |']);
    expect(table(['a', 'b', 'c'], [], 'llr')[1]).toBe('| --- | --- | --: |');
  });
});

describe('Function: scaleEndpoints, eventFor, idleCpuRatio', () => {
  it('gives endpoint i a type and a merchant of its own, which only its event matches', () => {
    const endpoints = scaleEndpoints(3, 'http://127.0.0.1:9/webhook');
    const event = JSON.parse(eventFor(1, 'e-1')) as { status: string; data: { merchant: string } };

    expect(endpoints[1]).toEqual({
      name: 'merchant-1',
      url: 'http://127.0.0.1:9/webhook/merchant-1',
      eventTypes: [`shipment.${event.status}`],
      match: { 'data.merchant': ['m-1'] },
    });
    expect(endpoints.filter((e) => e.match?.['data.merchant']?.includes(event.data.merchant))).toHaveLength(1);
  });

  it("divides the largest run's idle CPU by the smallest's, and says which targets are met", () => {
    const run = (endpoints: number, idleCpuSeconds: number, readySeconds: number): SandboxScaleRun => ({
      endpoints,
      readySeconds,
      idleCpuSeconds,
      idleSeconds: 60,
      events: 20,
      right: 20,
      wrong: 0,
      deliveredSeconds: 2,
    });
    const runs = [run(10, 4, 2), run(10_000, 5, 30)];

    expect(idleCpuRatio(runs)).toBe(1.25);
    expect(idleCpuRatio([run(10, 0, 2), run(10_000, 5, 30)])).toBeNaN();
    expect(sandboxScaleMarkdown(runs)).toContain('1.25x (target ≤ 1.5x: met); READY at 10,000: 30.0 s (target < 60 s: met)');
    expect(sandboxScaleMarkdown([run(10, 4, 2), run(10_000, 8, 70)])).toContain('2.00x (target ≤ 1.5x: NOT met); READY at 10,000: 70.0 s (target < 60 s: NOT met)');
  });
});
