import { describe, expect, it } from 'vitest';
import { MetricsRecorder, readMetricDocument } from '../../lib/observability';

const NOW_MS = 1_800_000_000_000;

function recorder() {
  const lines: string[] = [];
  const metrics = new MetricsRecorder({ service: 'handoff', write: (line) => void lines.push(line), now: () => NOW_MS });
  return { metrics, lines };
}

describe('Method: MetricsRecorder.attempted', () => {
  it('counts every attempt, and as a retried attempt each one after its delivery’s first', () => {
    const { metrics, lines } = recorder();

    for (const attemptNumber of [1, 2, 3, 1]) metrics.attempted(attemptNumber);
    metrics.flush();

    expect(JSON.parse(lines[0]!)).toMatchObject({ Attempts: 4, RetriedAttempts: 2 });
  });
});

describe('Function: readMetricDocument', () => {
  it('reads back the counts and every latency value a flush wrote, across documents', () => {
    // Prepare: 150 latencies are split over two documents.
    const { metrics, lines } = recorder();
    metrics.add('Delivered', 150);
    metrics.attempted(1);
    metrics.attempted(2);
    for (let i = 0; i < 150; i += 1) metrics.add('DeliveryLatency', i);

    // Act
    metrics.flush();
    const documents = lines.map((line) => readMetricDocument(line));

    // Assess
    expect(documents).toHaveLength(2);
    expect(documents[0]).toEqual({
      timestampMs: NOW_MS,
      values: {
        Delivered: [150],
        Retries: [0],
        DeadLetters: [0],
        DeliveryLatency: Array.from({ length: 100 }, (_, i) => i),
        Attempts: [2],
        RetriedAttempts: [1],
        Unrouted: [0],
        FannedOut: [0],
        Dropped: [0],
        Recovered: [0],
        Paused: [0],
        Parked: [0],
        Resumed: [0],
        RateLimited: [0],
        EndpointUnresolved: [0],
      },
    });
    expect(documents[1]).toEqual({ timestampMs: NOW_MS, values: { DeliveryLatency: Array.from({ length: 50 }, (_, i) => i + 100) } });
  });

  it("reads back each endpoint's document with its endpoint, the service's own without one", () => {
    // Prepare
    const { metrics, lines } = recorder();
    metrics.add('Unrouted', 1);
    metrics.attempted(1, 'billing');
    metrics.add('Delivered', 1, 'billing');
    metrics.add('DeliveryLatency', 40, 'crm');

    // Act
    metrics.flush();
    const documents = lines.map((line) => readMetricDocument(line));

    // Assess
    expect(documents.map((d) => [d?.endpoint, d?.values.Delivered, d?.values.Unrouted, d?.values.DeliveryLatency])).toEqual([
      // The service's own document has every count, zero or not; an endpoint's, what it recorded.
      [undefined, [0], [1], undefined],
      ['billing', [1], undefined, undefined],
      ['crm', undefined, undefined, [40]],
    ]);
    expect(lines.map((line) => (JSON.parse(line) as { _aws: { CloudWatchMetrics: { Dimensions: string[][] }[] } })._aws.CloudWatchMetrics[0]?.Dimensions)).toEqual([
      [['Service']],
      [['Service'], ['Service', 'Endpoint']],
      [['Service'], ['Service', 'Endpoint']],
    ]);
  });

  it('ignores log lines, other services’ and other namespaces’ documents, and lines that are not JSON', () => {
    const { metrics, lines } = recorder();
    metrics.flush();
    const other = lines[0]!.replace('"Namespace":"Handoff"', '"Namespace":"Other"');
    const otherService = new MetricsRecorder({ service: 'billing', write: (line) => void lines.push(line) });
    otherService.flush();

    expect(readMetricDocument(lines[0]!)).toBeDefined();
    expect(readMetricDocument(other)).toBeUndefined();
    expect(readMetricDocument(lines[1]!)).toBeUndefined();
    expect(readMetricDocument('{"level":"info","message":"delivery","eventId":"evt_1"}')).toBeUndefined();
    expect(readMetricDocument('{"_aws": not json')).toBeUndefined();
  });
});
