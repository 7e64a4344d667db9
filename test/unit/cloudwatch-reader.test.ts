/**
 * The CloudWatch adapter's request and response mapping, as pure functions: the request it
 * builds for a window, and what it makes of a GetMetricData answer shaped like AWS's. The call
 * itself is exercised only against AWS.
 */
import type { CloudWatchClient, GetMetricDataCommand, MetricDataResult } from '@aws-sdk/client-cloudwatch';
import { describe, expect, it } from 'vitest';
import { CloudWatchMetricsReader, metricDataRequest, minuteDataRequest, parseMetricData, parseMinuteData } from '../../lib/metrics/cloudwatch-reader';
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

describe('Function: minuteDataRequest', () => {
  it('asks for Delivered and Attempts summed over periods of 60 s, from the minute the window starts in to the end of the minute it ends in', () => {
    const start = Date.UTC(2026, 11, 2, 11, 0, 0);
    const request = minuteDataRequest({ startMs: start, endMs: start + 60 * MINUTE_MS });

    expect(request.StartTime).toEqual(new Date(start));
    expect(request.EndTime).toEqual(new Date(start + 60 * MINUTE_MS));
    expect(request.ScanBy).toBe('TimestampAscending');
    const dimensions = [{ Name: 'Service', Value: 'handoff' }];
    expect(request.MetricDataQueries).toEqual([
      { Id: 'delivered', MetricStat: { Metric: { Namespace: 'Handoff', MetricName: 'Delivered', Dimensions: dimensions }, Period: 60, Stat: 'Sum' }, ReturnData: true },
      { Id: 'attempts', MetricStat: { Metric: { Namespace: 'Handoff', MetricName: 'Attempts', Dimensions: dimensions }, Period: 60, Stat: 'Sum' }, ReturnData: true },
    ]);
  });

  it("asks for one endpoint's minutes under the Service and Endpoint dimensions, as `read` does", () => {
    const request = minuteDataRequest({ startMs: END_MS - 90_000, endMs: END_MS }, { endpoint: 'billing' });

    // From 11:59:00 to 12:00:30: the minutes 11:59 and 12:00, the last to its end.
    expect(request.StartTime).toEqual(new Date(END_MS - 30_000 - MINUTE_MS));
    expect(request.EndTime).toEqual(new Date(END_MS - 30_000 + MINUTE_MS));
    for (const query of request.MetricDataQueries ?? []) {
      expect(query.MetricStat?.Metric?.Dimensions).toEqual([
        { Name: 'Service', Value: 'handoff' },
        { Name: 'Endpoint', Value: 'billing' },
      ]);
    }
  });
});

describe('Function: parseMinuteData', () => {
  const start = Date.UTC(2026, 11, 2, 11, 0, 0);
  const window = { startMs: start, endMs: start + 3 * MINUTE_MS };
  const minute = (i: number) => new Date(start + i * MINUTE_MS);

  it("puts each value in its timestamp's minute, zeros in the minutes CloudWatch had no data points for", () => {
    const series = parseMinuteData(window, [
      { Id: 'delivered', Timestamps: [minute(0), minute(2)], Values: [4, 9], StatusCode: 'Complete' },
      { Id: 'attempts', Timestamps: [minute(0), minute(2)], Values: [6, 9], StatusCode: 'Complete' },
    ]);

    expect(series).toEqual([
      { startMs: start, delivered: 4, attempts: 6 },
      { startMs: start + MINUTE_MS, delivered: 0, attempts: 0 },
      { startMs: start + 2 * MINUTE_MS, delivered: 9, attempts: 9 },
    ]);
  });

  it("adds a minute's values from several pages", () => {
    const series = parseMinuteData(window, [
      { Id: 'attempts', Timestamps: [minute(1)], Values: [2], StatusCode: 'PartialData' },
      { Id: 'attempts', Timestamps: [minute(1)], Values: [3], StatusCode: 'Complete' },
    ]);

    expect(series[1]).toEqual({ startMs: start + MINUTE_MS, delivered: 0, attempts: 5 });
  });

  it('throws MetricsUnavailableError naming the metric CloudWatch refused, and an answer whose values and timestamps disagree', () => {
    expect(() => parseMinuteData(window, [{ Id: 'attempts', StatusCode: 'Forbidden' }])).toThrow(new MetricsUnavailableError('CloudWatch answered Forbidden for Attempts (Sum)'));
    expect(() => parseMinuteData(window, [{ Id: 'delivered', Timestamps: [minute(0)], Values: [1, 2], StatusCode: 'Complete' }])).toThrow(
      new MetricsUnavailableError('CloudWatch answered 2 values for Delivered with 1 timestamps'),
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

  it('reads the minutes over every page', async () => {
    // Prepare
    const start = Date.UTC(2026, 11, 2, 11, 0, 0);
    const sent: GetMetricDataCommand[] = [];
    const pages = [
      { MetricDataResults: [{ Id: 'delivered', Timestamps: [new Date(start)], Values: [3], StatusCode: 'PartialData' }], NextToken: 'page-2' },
      { MetricDataResults: [{ Id: 'attempts', Timestamps: [new Date(start + MINUTE_MS)], Values: [1], StatusCode: 'Complete' }] },
    ];
    const client = { send: async (command: GetMetricDataCommand) => (sent.push(command), pages[sent.length - 1]) } as unknown as CloudWatchClient;

    // Act
    const minutes = await new CloudWatchMetricsReader({ client }).readMinutes({ startMs: start, endMs: start + 2 * MINUTE_MS }, { endpoint: 'billing' });

    // Assess
    expect(sent.map((c) => [c.input.NextToken, c.input.MetricDataQueries?.[0]?.MetricStat?.Period])).toEqual([
      [undefined, 60],
      ['page-2', 60],
    ]);
    expect(minutes).toEqual([
      { startMs: start, delivered: 3, attempts: 0 },
      { startMs: start + MINUTE_MS, delivered: 0, attempts: 1 },
    ]);
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
