/**
 * `MetricsReader` over CloudWatch: one `GetMetricData` call (paged) for the window, reading the
 * consumer's EMF metrics by the names, namespace and dimensions lib/observability.ts writes them
 * with: `Service` for the totals, `Service` and `Endpoint` for one endpoint's figures (each
 * delivery's document carries both dimension sets). The window is one period, so each statistic is
 * one value over the whole window: the percentiles are CloudWatch's own over every latency value
 * published in it, and the oldest message received is `PendingAge`'s `Maximum` (published in seconds).
 * Minute by minute (`readMinutes`), the same call asks for `Delivered` and `Attempts` (`Sum`) with
 * a period of 60 s: one value a minute that had data points, the others none (zeros in the series).
 */
import {
  GetMetricDataCommand,
  type CloudWatchClient,
  type GetMetricDataCommandInput,
  type MetricDataQuery,
  type MetricDataResult,
} from '@aws-sdk/client-cloudwatch';
import { ENDPOINT_DIMENSION, METRIC_DIMENSIONS, METRICS_NAMESPACE, type MetricName } from '../observability';
import {
  MetricsUnavailableError,
  PENDING_AGE_UNIT_MS,
  type MetricsReader,
  type MetricsReadOptions,
  type MetricsWindow,
  type DeliveryMetrics,
  type MinuteMetrics,
} from './metrics-reader';
import { MINUTE_MS, minuteOf, minuteSeries } from './minute-series';

/** Each query's ID (what GetMetricData answers by), the metric and the statistic it asks for. */
const QUERIES = {
  delivered: { metric: 'Delivered', stat: 'Sum' },
  attempts: { metric: 'Attempts', stat: 'Sum' },
  retriedAttempts: { metric: 'RetriedAttempts', stat: 'Sum' },
  deadLettered: { metric: 'DeadLetters', stat: 'Sum' },
  latencySamples: { metric: 'DeliveryLatency', stat: 'SampleCount' },
  latencyP50: { metric: 'DeliveryLatency', stat: 'p50' },
  latencyP99: { metric: 'DeliveryLatency', stat: 'p99' },
  oldestPendingAge: { metric: 'PendingAge', stat: 'Maximum' },
} as const satisfies Record<string, { metric: MetricName; stat: string }>;
type QueryId = keyof typeof QUERIES;

/**
 * The request for a window: its start rounded down to the minute (CloudWatch rounds it so
 * anyway) and one period covering the whole window, a whole number of minutes as CloudWatch
 * requires, so every statistic comes back as one value.
 */
export function metricDataRequest(window: MetricsWindow, options: MetricsReadOptions = {}): GetMetricDataCommandInput {
  const startMs = minuteOf(window.startMs);
  const periodSeconds = Math.max(1, Math.ceil((window.endMs - startMs) / MINUTE_MS)) * 60;
  const dimensions = dimensionsOf(options);
  const queries: MetricDataQuery[] = (Object.keys(QUERIES) as QueryId[]).map((id) => ({
    Id: id,
    MetricStat: {
      Metric: { Namespace: METRICS_NAMESPACE, MetricName: QUERIES[id].metric, Dimensions: dimensions },
      Period: periodSeconds,
      Stat: QUERIES[id].stat,
    },
    ReturnData: true,
  }));
  return {
    MetricDataQueries: queries,
    StartTime: new Date(startMs),
    EndTime: new Date(startMs + periodSeconds * 1000),
    ScanBy: 'TimestampDescending',
  };
}

/** `Service` (the totals), and `Endpoint` beside it for one endpoint's figures. */
function dimensionsOf(options: MetricsReadOptions): { Name: string; Value: string }[] {
  const dimensions: { Name: string; Value: string }[] = Object.entries(METRIC_DIMENSIONS).map(([Name, Value]) => ({ Name, Value }));
  if (options.endpoint !== undefined) dimensions.push({ Name: ENDPOINT_DIMENSION, Value: options.endpoint });
  return dimensions;
}

/** The per-minute queries' IDs, and the metric each sums. */
const MINUTE_QUERIES = {
  delivered: 'Delivered',
  attempts: 'Attempts',
} as const satisfies Record<string, MetricName>;
type MinuteQueryId = keyof typeof MINUTE_QUERIES;

/**
 * The request for a window minute by minute: `Delivered` and `Attempts` summed over periods of
 * 60 s, from the start of the minute the window starts in to the end of the minute it ends in
 * (CloudWatch's one-minute data, kept 15 days), oldest first.
 */
export function minuteDataRequest(window: MetricsWindow, options: MetricsReadOptions = {}): GetMetricDataCommandInput {
  const dimensions = dimensionsOf(options);
  const queries: MetricDataQuery[] = (Object.keys(MINUTE_QUERIES) as MinuteQueryId[]).map((id) => ({
    Id: id,
    MetricStat: {
      Metric: { Namespace: METRICS_NAMESPACE, MetricName: MINUTE_QUERIES[id], Dimensions: dimensions },
      Period: 60,
      Stat: 'Sum',
    },
    ReturnData: true,
  }));
  return {
    MetricDataQueries: queries,
    StartTime: new Date(minuteOf(window.startMs)),
    EndTime: new Date(minuteOf(window.endMs - 1) + MINUTE_MS),
    ScanBy: 'TimestampAscending',
  };
}

/**
 * Every minute of the window from GetMetricData's results (every page's, concatenated): each
 * value in the minute of its timestamp (the period's start), the minutes with none as zeros.
 */
export function parseMinuteData(window: MetricsWindow, results: readonly MetricDataResult[]): MinuteMetrics[] {
  const counts: MinuteMetrics[] = [];
  for (const result of results) {
    const id = result.Id as MinuteQueryId;
    if (!(id in MINUTE_QUERIES)) continue;
    if (result.StatusCode === 'Forbidden' || result.StatusCode === 'InternalError') {
      throw new MetricsUnavailableError(`CloudWatch answered ${result.StatusCode} for ${MINUTE_QUERIES[id]} (Sum)`);
    }
    const timestamps = result.Timestamps ?? [];
    const values = result.Values ?? [];
    if (timestamps.length !== values.length) {
      throw new MetricsUnavailableError(`CloudWatch answered ${values.length} values for ${MINUTE_QUERIES[id]} with ${timestamps.length} timestamps`);
    }
    values.forEach((value, i) => {
      const startMs = new Date(timestamps[i]!).getTime();
      counts.push({ startMs, delivered: id === 'delivered' ? value : 0, attempts: id === 'attempts' ? value : 0 });
    });
  }
  return minuteSeries(window, counts);
}

/**
 * The figures from GetMetricData's results (every page's, concatenated). Counts are summed over
 * whatever values came back (none: nothing was published, so 0). A percentile is one value for
 * the one period; should CloudWatch split the window after all, the largest is kept: an upper
 * bound, never an average of percentiles. The oldest message received is the largest `Maximum`
 * (null when none came back: nothing was received in the window), in ms.
 */
export function parseMetricData(results: readonly MetricDataResult[]): DeliveryMetrics {
  const values = new Map<QueryId, number[]>();
  for (const result of results) {
    const id = result.Id as QueryId;
    if (!(id in QUERIES)) continue;
    if (result.StatusCode === 'Forbidden' || result.StatusCode === 'InternalError') {
      throw new MetricsUnavailableError(`CloudWatch answered ${result.StatusCode} for ${QUERIES[id].metric} (${QUERIES[id].stat})`);
    }
    values.set(id, [...(values.get(id) ?? []), ...(result.Values ?? [])]);
  }
  const sum = (id: QueryId) => (values.get(id) ?? []).reduce((total, v) => total + v, 0);
  const largest = (id: QueryId) => {
    const found = values.get(id) ?? [];
    return found.length === 0 ? null : Math.max(...found);
  };
  const samples = sum('latencySamples');
  const oldestPendingAge = largest('oldestPendingAge');
  return {
    delivered: sum('delivered'),
    attempts: sum('attempts'),
    retriedAttempts: sum('retriedAttempts'),
    deadLettered: sum('deadLettered'),
    latency: {
      samples,
      p50Ms: samples === 0 ? null : largest('latencyP50'),
      p99Ms: samples === 0 ? null : largest('latencyP99'),
    },
    oldestPendingAgeMs: oldestPendingAge === null ? null : oldestPendingAge * PENDING_AGE_UNIT_MS,
  };
}

export class CloudWatchMetricsReader implements MetricsReader {
  readonly source = `CloudWatch (namespace ${METRICS_NAMESPACE}, ${Object.entries(METRIC_DIMENSIONS)
    .map(([name, value]) => `${name}=${value}`)
    .join(', ')})`;
  readonly percentileMethod = "CloudWatch's percentile statistics over every value published in the window";
  /** CloudWatch keeps one-minute data 15 days; past that it holds coarser periods only. */
  readonly maxWindowMs = 15 * 24 * 60 * 60 * 1000;
  readonly #client: CloudWatchClient;

  constructor(options: { client: CloudWatchClient }) {
    this.#client = options.client;
  }

  async read(window: MetricsWindow, options: MetricsReadOptions = {}): Promise<DeliveryMetrics> {
    return parseMetricData(await this.#results(metricDataRequest(window, options)));
  }

  async readMinutes(window: MetricsWindow, options: MetricsReadOptions = {}): Promise<MinuteMetrics[]> {
    return parseMinuteData(window, await this.#results(minuteDataRequest(window, options)));
  }

  /** Every page's results. @throws MetricsUnavailableError naming AWS's error */
  async #results(request: GetMetricDataCommandInput): Promise<MetricDataResult[]> {
    const results: MetricDataResult[] = [];
    let nextToken: string | undefined;
    try {
      do {
        const page = await this.#client.send(new GetMetricDataCommand({ ...request, ...(nextToken ? { NextToken: nextToken } : {}) }));
        results.push(...(page.MetricDataResults ?? []));
        nextToken = page.NextToken;
      } while (nextToken);
    } catch (error) {
      const name = error instanceof Error ? error.name : 'error';
      throw new MetricsUnavailableError(`CloudWatch GetMetricData failed (${name}): ${(error as Error).message ?? ''}`.trim(), {
        cause: error,
      });
    }
    return results;
  }
}
