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
      },
    });
    expect(documents[1]).toEqual({ timestampMs: NOW_MS, values: { DeliveryLatency: Array.from({ length: 50 }, (_, i) => i + 100) } });
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
