/**
 * `MetricsReader` over CloudWatch: one `GetMetricData` call (paged) for the window, reading the
 * consumer's EMF metrics by the names, namespace and dimensions lib/observability.ts writes them
 * with: `Service` for the totals, `Service` and `Endpoint` for one endpoint's figures (each
 * delivery's document carries both dimension sets). The window is one period, so each statistic is
 * one value over the whole window: the percentiles are CloudWatch's own over every latency value
 * published in it, and the oldest message received is `PendingAge`'s `Maximum` (published in seconds).
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
} from './metrics-reader';

const MINUTE_MS = 60_000;

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
  const startMs = Math.floor(window.startMs / MINUTE_MS) * MINUTE_MS;
  const periodSeconds = Math.max(1, Math.ceil((window.endMs - startMs) / MINUTE_MS)) * 60;
  const dimensions: { Name: string; Value: string }[] = Object.entries(METRIC_DIMENSIONS).map(([Name, Value]) => ({ Name, Value }));
  if (options.endpoint !== undefined) dimensions.push({ Name: ENDPOINT_DIMENSION, Value: options.endpoint });
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
    const request = metricDataRequest(window, options);
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
    return parseMetricData(results);
  }
}
