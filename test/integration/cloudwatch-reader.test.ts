/**
 * The CloudWatch adapter through the real SDK client, against GetMetricData on loopback: what
 * goes over the wire and what comes back. AWS itself is exercised only in a deployed stack.
 */
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { afterEach, describe, expect, it } from 'vitest';
import { CloudWatchMetricsReader } from '../../lib/metrics/cloudwatch-reader';
import { MetricsUnavailableError } from '../../lib/metrics/metrics-reader';
import { startCloudWatchStub, type CloudWatchStub } from '../helpers/cloudwatch-stub';
import { deliveryMetrics } from '../helpers/delivery-metrics';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const END_MS = Date.UTC(2026, 11, 2, 12, 0, 0);
const DAY_MS = 86_400_000;

let stub: CloudWatchStub | undefined;
let client: CloudWatchClient | undefined;

afterEach(async () => {
  client?.destroy();
  await stub?.close();
});

function clientFor(url: string): CloudWatchClient {
  client = new CloudWatchClient({ endpoint: url, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, maxAttempts: 1 });
  return client;
}

describe('Class: CloudWatchMetricsReader (SDK on loopback)', () => {
  it('sends the window as one period of the Handoff metrics and reads the answer’s values', async () => {
    // Prepare
    stub = await startCloudWatchStub({
      'Delivered/Sum': [120],
      'Attempts/Sum': [150],
      'RetriedAttempts/Sum': [30],
      'DeadLetters/Sum': [2],
      'DeliveryLatency/SampleCount': [120],
      'DeliveryLatency/p50': [84],
      'DeliveryLatency/p99': [2_210],
      'PendingAge/Maximum': [95],
    });

    // Act
    const metrics = await new CloudWatchMetricsReader({ client: clientFor(stub.url) }).read({ startMs: END_MS - DAY_MS, endMs: END_MS });

    // Assess
    expect(metrics).toEqual(deliveryMetrics({ delivered: 120, attempts: 150, retriedAttempts: 30, deadLettered: 2, latency: [120, 84, 2_210], oldestPendingAgeMs: 95_000 }));
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect(request!.StartTime).toBe((END_MS - DAY_MS) / 1000);
    expect(request!.EndTime).toBe(END_MS / 1000);
    const dailyQuery = (Id: string, MetricName: string, Stat: string) => ({
      Id,
      MetricStat: { Metric: { Namespace: 'Handoff', MetricName, Dimensions: [{ Name: 'Service', Value: 'handoff' }] }, Period: 86_400, Stat },
      ReturnData: true,
    });
    expect(request!.MetricDataQueries[5]).toEqual(dailyQuery('latencyP50', 'DeliveryLatency', 'p50'));
    expect(request!.MetricDataQueries[7]).toEqual(dailyQuery('oldestPendingAge', 'PendingAge', 'Maximum'));
  });

  it("sends one endpoint's request with the Endpoint dimension beside Service, the largest PendingAge's too", async () => {
    stub = await startCloudWatchStub({ 'Delivered/Sum': [7], 'PendingAge/Maximum': [3] });

    const metrics = await new CloudWatchMetricsReader({ client: clientFor(stub.url) }).read({ startMs: END_MS - DAY_MS, endMs: END_MS }, { endpoint: 'billing' });

    expect(metrics.delivered).toBe(7);
    expect(metrics.oldestPendingAgeMs).toBe(3_000);
    for (const query of stub.requests[0]!.MetricDataQueries) {
      expect(query.MetricStat.Metric.Dimensions).toEqual([
        { Name: 'Service', Value: 'handoff' },
        { Name: 'Endpoint', Value: 'billing' },
      ]);
    }
  });

  it('asks for the minutes of the window in periods of 60 s, and puts each value in the minute of its timestamp', async () => {
    // Prepare: the stub answers each value at the request's StartTime, so all in the first minute.
    stub = await startCloudWatchStub({ 'Delivered/Sum': [5, 2], 'Attempts/Sum': [9] });
    const start = END_MS - 3 * 60_000;

    // Act
    const minutes = await new CloudWatchMetricsReader({ client: clientFor(stub.url) }).readMinutes({ startMs: start, endMs: END_MS }, { endpoint: 'billing' });

    // Assess
    expect(minutes).toEqual([
      { startMs: start, delivered: 7, attempts: 9 },
      { startMs: start + 60_000, delivered: 0, attempts: 0 },
      { startMs: start + 120_000, delivered: 0, attempts: 0 },
    ]);
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect([request!.StartTime, request!.EndTime, request!.ScanBy]).toEqual([start / 1000, END_MS / 1000, 'TimestampAscending']);
    const dimensions = [
      { Name: 'Service', Value: 'handoff' },
      { Name: 'Endpoint', Value: 'billing' },
    ];
    expect(request!.MetricDataQueries).toEqual([
      { Id: 'delivered', MetricStat: { Metric: { Namespace: 'Handoff', MetricName: 'Delivered', Dimensions: dimensions }, Period: 60, Stat: 'Sum' }, ReturnData: true },
      { Id: 'attempts', MetricStat: { Metric: { Namespace: 'Handoff', MetricName: 'Attempts', Dimensions: dimensions }, Period: 60, Stat: 'Sum' }, ReturnData: true },
    ]);
  });

  it('reports a refused call as MetricsUnavailableError naming AWS’s error', async () => {
    stub = await startCloudWatchStub({}, { status: 403, error: 'AccessDenied' });

    const reading = new CloudWatchMetricsReader({ client: clientFor(stub.url) }).read({ startMs: END_MS - DAY_MS, endMs: END_MS });

    await expect(reading).rejects.toBeInstanceOf(MetricsUnavailableError);
    await expect(reading).rejects.toThrow(/^CloudWatch GetMetricData failed \(AccessDenied\)/);
  });
});
