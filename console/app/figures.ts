/**
 * The figures the Overview and an endpoint's page read: `GET /v1/stats` (as `handoff stats --json`)
 * and the per-minute series `GET /v1/stats/minutes`, and a bounded fan-out for the per-endpoint calls
 * (a page of 100 endpoints must not open 200 requests at once).
 */
import type { Stats, StatsMinutes } from '../../api/client/types';
import { api } from './api';
import type { ChartPoint } from './components/chart';
import { toError } from './errors';

export type { Stats };

/** A series as the chart draws it, with where it came from and why it is missing when it is. */
export interface Series {
  readonly points: readonly ChartPoint[];
  readonly source: string;
  readonly metricsError?: string;
}

function pointsOf(answer: StatsMinutes): ChartPoint[] {
  return answer.points.map((p) => ({ at: new Date(p.at).getTime(), delivered: p.delivered, failed: p.failed }));
}

/** One endpoint's last `since` minute by minute, or every endpoint's together (no endpoint). */
export async function minuteSeries(since: string, endpoint?: string): Promise<Series> {
  const answer = await api.get<StatsMinutes>('/v1/stats/minutes', { since, endpoint });
  return { points: pointsOf(answer), source: answer.source, ...(answer.metricsError === undefined ? {} : { metricsError: answer.metricsError }) };
}

/**
 * Several endpoints' series added minute by minute: a portal link's holder may ask for its own
 * endpoints one at a time only, so the owner's chart is the sum of theirs.
 */
export async function summedSeries(since: string, endpoints: readonly string[]): Promise<Series> {
  const each = await mapLimit(endpoints, 4, (name) => minuteSeries(since, name));
  const byMinute = new Map<number, { delivered: number; failed: number }>();
  for (const series of each) {
    for (const p of series.points) {
      const sum = byMinute.get(p.at) ?? { delivered: 0, failed: 0 };
      sum.delivered += p.delivered;
      sum.failed += p.failed;
      byMinute.set(p.at, sum);
    }
  }
  const points = [...byMinute].sort(([a], [b]) => a - b).map(([at, sum]) => ({ at, ...sum }));
  const failed = each.find((series) => series.metricsError !== undefined);
  return {
    points,
    source: each[0]?.source ?? '',
    ...(failed?.metricsError === undefined ? {} : { metricsError: failed.metricsError }),
  };
}

/** `GET /v1/stats?endpoint&since`. */
export function endpointStats(endpoint: string, since: string): Promise<Stats> {
  return api.get<Stats>('/v1/stats', { endpoint, since });
}

/** `work` over `items`, at most `limit` at a time, answers in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Each item's answer or its failure, so one endpoint's refused call does not blank the others. */
export function settled<R>(promise: Promise<R>): Promise<R | Error> {
  return promise.catch(toError);
}
