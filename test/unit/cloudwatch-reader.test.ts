/**
 * The CloudWatch adapter's request and response mapping, as pure functions: the request it
 * builds for a window, and what it makes of a GetMetricData answer shaped like AWS's. The call
 * itself is exercised only against AWS.
 */
import type { CloudWatchClient, GetMetricDataCommand, MetricDataResult } from '@aws-sdk/client-cloudwatch';
import { describe, expect, it } from 'vitest';
import { CloudWatchMetricsReader, metricDataRequest, parseMetricData } from '../../lib/metrics/cloudwatch-reader';
import { MetricsUnavailableError } from '../../lib/metrics/metrics-reader';
import { deliveryMetrics, NO_METRICS } from '../helpers/delivery-metrics';

const MINUTE_MS = 60_000;
const END_MS = Date.UTC(2026, 11, 2, 12, 0, 30);
const DAY_MS = 86_400_000;

function result(id: string, values: number[], statusCode: MetricDataResult['StatusCode'] = 'Complete'): MetricDataResult {
  return { Id: id, Label: id, Timestamps: values.map(() => new Date(END_MS - DAY_MS)), Values: values, StatusCode: statusCode };
}

describe('Function: metricDataRequest', () => {
  it('asks for the sums, the latency sample count and p50/p99, and the largest PendingAge of the consumer’s metrics in one period over the window', () => {
    const request = metricDataRequest({ startMs: END_MS - DAY_MS, endMs: END_MS });

    const startMs = END_MS - DAY_MS - 30_000;
    expect(request.StartTime).toEqual(new Date(startMs));
    expect(request.EndTime).toEqual(new Date(startMs + DAY_MS + MINUTE_MS));
    const dimensions = [{ Name: 'Service', Value: 'handoff' }];
    const query = (Id: string, MetricName: string, Stat: string) => ({
      Id,
      MetricStat: { Metric: { Namespace: 'Handoff', MetricName, Dimensions: dimensions }, Period: 86_460, Stat },
      ReturnData: true,
    });
    expect(request.MetricDataQueries).toEqual([
      query('delivered', 'Delivered', 'Sum'),
      query('attempts', 'Attempts', 'Sum'),
      query('retriedAttempts', 'RetriedAttempts', 'Sum'),
      query('deadLettered', 'DeadLetters', 'Sum'),
      query('latencySamples', 'DeliveryLatency', 'SampleCount'),
      query('latencyP50', 'DeliveryLatency', 'p50'),
      query('latencyP99', 'DeliveryLatency', 'p99'),
      query('oldestPendingAge', 'PendingAge', 'Maximum'),
    ]);
  });

  it("asks for one endpoint's figures under the Service and Endpoint dimensions, as each delivery's document publishes them", () => {
    const totals = metricDataRequest({ startMs: END_MS - DAY_MS, endMs: END_MS });
    const billing = metricDataRequest({ startMs: END_MS - DAY_MS, endMs: END_MS }, { endpoint: 'billing' });

    const dimensionsOf = (request: typeof totals) => (request.MetricDataQueries ?? []).map((q) => q.MetricStat?.Metric?.Dimensions);
    expect(new Set(dimensionsOf(billing).map((d) => JSON.stringify(d)))).toEqual(
      new Set([JSON.stringify([{ Name: 'Service', Value: 'handoff' }, { Name: 'Endpoint', Value: 'billing' }])]),
    );
    expect(billing.MetricDataQueries?.map((q) => [q.Id, q.MetricStat?.Metric?.MetricName, q.MetricStat?.Stat])).toEqual(
      totals.MetricDataQueries?.map((q) => [q.Id, q.MetricStat?.Metric?.MetricName, q.MetricStat?.Stat]),
    );
  });

  it('uses a whole number of minutes as the period, as CloudWatch requires', () => {
    const request = metricDataRequest({ startMs: END_MS - 90_000, endMs: END_MS });

    for (const query of request.MetricDataQueries ?? []) expect(query.MetricStat!.Period! % 60).toBe(0);
    expect(request.MetricDataQueries![0]!.MetricStat!.Period).toBe(120);
  });
});

describe('Function: parseMetricData', () => {
  it('reads the figures from an answer with one value per statistic', () => {
    const metrics = parseMetricData([
      result('delivered', [120]),
      result('attempts', [150]),
      result('retriedAttempts', [30]),
      result('deadLettered', [2]),
      result('latencySamples', [120]),
      result('latencyP50', [84.5]),
      result('latencyP99', [2_210]),
      result('oldestPendingAge', [183.5]),
    ]);

    expect(metrics).toEqual(deliveryMetrics({ delivered: 120, attempts: 150, retriedAttempts: 30, deadLettered: 2, latency: [120, 84.5, 2_210], oldestPendingAgeMs: 183_500 }));
  });

  it('reads a metric with no data points as 0, the percentiles as null when nothing was delivered, and the oldest message as null when none was received', () => {
    const ids = ['delivered', 'attempts', 'retriedAttempts', 'deadLettered', 'latencySamples', 'latencyP50', 'latencyP99', 'oldestPendingAge'];
    const metrics = parseMetricData(ids.map((id) => result(id, [])));

    expect(metrics).toEqual(NO_METRICS);
  });

  it('sums counts over pages and data points, and keeps the largest of split percentiles (an upper bound) and of split maxima', () => {
    const metrics = parseMetricData([
      result('delivered', [10, 5]),
      result('latencySamples', [15]),
      result('latencyP99', [900]),
      result('oldestPendingAge', [40, 7]),
      result('delivered', [1]),
      result('latencyP99', [1_200]),
      result('oldestPendingAge', [12]),
    ]);

    expect(metrics.delivered).toBe(16);
    expect(metrics.latency.p99Ms).toBe(1_200);
    expect(metrics.oldestPendingAgeMs).toBe(40_000);
  });

  it('throws MetricsUnavailableError naming the metric CloudWatch refused', () => {
    expect(() => parseMetricData([result('delivered', [], 'Forbidden')])).toThrow(
      new MetricsUnavailableError('CloudWatch answered Forbidden for Delivered (Sum)'),
    );
  });
});

describe('Class: CloudWatchMetricsReader', () => {
  it('follows NextToken and reads every page', async () => {
    // Prepare: a client that answers in two pages.
    const sent: GetMetricDataCommand[] = [];
    const pages = [
      { MetricDataResults: [result('delivered', [7]), result('attempts', [9])], NextToken: 'page-2' },
      { MetricDataResults: [result('retriedAttempts', [2]), result('latencySamples', [7]), result('latencyP50', [40]), result('latencyP99', [80])] },
    ];
    const client = { send: async (command: GetMetricDataCommand) => (sent.push(command), pages[sent.length - 1]) } as unknown as CloudWatchClient;

    // Act
    const metrics = await new CloudWatchMetricsReader({ client }).read({ startMs: END_MS - DAY_MS, endMs: END_MS });

    // Assess
    expect(sent.map((c) => c.input.NextToken)).toEqual([undefined, 'page-2']);
    expect(metrics).toEqual(deliveryMetrics({ delivered: 7, attempts: 9, retriedAttempts: 2, deadLettered: 0, latency: [7, 40, 80], oldestPendingAgeMs: null }));
  });

  it('turns a failed call into MetricsUnavailableError naming the error', async () => {
    const denied = Object.assign(new Error('User is not authorized to perform: cloudwatch:GetMetricData'), { name: 'AccessDenied' });
    const client = { send: async () => Promise.reject(denied) } as unknown as CloudWatchClient;

    const reading = new CloudWatchMetricsReader({ client }).read({ startMs: END_MS - DAY_MS, endMs: END_MS });

    await expect(reading).rejects.toThrow(
      new MetricsUnavailableError('CloudWatch GetMetricData failed (AccessDenied): User is not authorized to perform: cloudwatch:GetMetricData'),
    );
  });
});
