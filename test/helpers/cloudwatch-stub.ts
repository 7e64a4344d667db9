/**
 * CloudWatch's `GetMetricData` on loopback, answering in the protocol the SDK speaks to it
 * (AWS JSON 1.0): each query gets the values the test set for its metric and statistic, so the
 * CLI and the CloudWatch adapter run their real SDK calls against a "deployed" stack. Records
 * every request body. Any other operation is refused as AWS refuses an unknown one.
 */
import { createServer } from 'node:http';
import { listenOnLoopback } from './loopback';

/** `"Delivered/Sum"` → the values (one per period) to answer with. */
export type StubValues = Readonly<Record<string, readonly number[]>>;

export interface CloudWatchStub {
  /** The endpoint, for `AWS_ENDPOINT_URL_CLOUDWATCH`. */
  readonly url: string;
  /** Parsed request bodies, in arrival order. */
  readonly requests: readonly Record<string, any>[];
  close(): Promise<void>;
}

interface Query {
  readonly Id: string;
  readonly MetricStat: { readonly Metric: { readonly MetricName: string }; readonly Stat: string };
}

export async function startCloudWatchStub(values: StubValues, options: { status?: number; error?: string } = {}): Promise<CloudWatchStub> {
  const requests: Record<string, any>[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      response.setHeader('content-type', 'application/x-amz-json-1.0');
      const target = String(request.headers['x-amz-target'] ?? '');
      if (options.status !== undefined || !target.endsWith('.GetMetricData')) {
        response.statusCode = options.status ?? 400;
        response.end(JSON.stringify({ __type: options.error ?? 'InvalidAction', message: `refused ${target}` }));
        return;
      }
      const input = JSON.parse(body) as { MetricDataQueries: Query[]; StartTime: number };
      requests.push(input);
      const results = input.MetricDataQueries.map((query) => {
        const found = values[`${query.MetricStat.Metric.MetricName}/${query.MetricStat.Stat}`] ?? [];
        return { Id: query.Id, Label: query.Id, Timestamps: found.map(() => input.StartTime), Values: found, StatusCode: 'Complete' };
      });
      response.end(JSON.stringify({ MetricDataResults: results, Messages: [] }));
    });
  });
  const listening = await listenOnLoopback(server);
  return { url: new URL(listening.url).origin, requests, close: () => listening.close() };
}
