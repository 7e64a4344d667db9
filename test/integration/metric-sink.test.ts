/**
 * The sandbox's metric sink and its reader on a real file: what the workers' EMF lines become,
 * what `handoff stats` reads back, and how the file is kept (0600, bounded, removed on close).
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MetricsUnavailableError } from '../../lib/metrics/metrics-reader';
import { MetricsRecorder } from '../../lib/observability';
import { metricsFileFor, MetricSink, SandboxMetricsReader } from '../../sandbox/metric-sink';
import { deliveryMetrics } from '../helpers/delivery-metrics';

const NOW_MS = Date.UTC(2026, 11, 2, 12, 0, 0);
const DAY_MS = 86_400_000;
const LAST_DAY = { startMs: NOW_MS - DAY_MS, endMs: NOW_MS + 1 };

let directory: string;

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'handoff-metric-sink-'));
});

afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

/**
 * The lines a consumer invocation writes for these deliveries (attempt number, latency when
 * accepted, and how long its message had been on the queue when received, in seconds, when given).
 */
function invocationLines(
  attempts: readonly { number: number; latencyMs?: number; endpoint?: string; pendingAgeSeconds?: number }[],
  nowMs = NOW_MS,
): string[] {
  const lines: string[] = [];
  const metrics = new MetricsRecorder({ service: 'handoff', write: (line) => void lines.push(line), now: () => nowMs });
  for (const attempt of attempts) {
    if (attempt.pendingAgeSeconds !== undefined) metrics.add('PendingAge', attempt.pendingAgeSeconds, attempt.endpoint);
    metrics.attempted(attempt.number, attempt.endpoint);
    if (attempt.latencyMs !== undefined) {
      metrics.add('Delivered', 1, attempt.endpoint);
      metrics.add('DeliveryLatency', attempt.latencyMs, attempt.endpoint);
    } else metrics.add('Retries', 1, attempt.endpoint);
  }
  metrics.flush();
  return lines;
}

/** Feeds the lines to the sink and flushes it, then reads the last day back from `path`: the totals, billing's, crm's and an unknown endpoint's. */
async function throughTheSink(sink: MetricSink, path: string, lines: readonly string[]) {
  for (const line of lines) sink.accept(line);
  sink.flush();
  const reader = new SandboxMetricsReader({ path });
  return Promise.all([
    reader.read(LAST_DAY),
    reader.read(LAST_DAY, { endpoint: 'billing' }),
    reader.read(LAST_DAY, { endpoint: 'crm' }),
    reader.read(LAST_DAY, { endpoint: 'nobody' }),
  ]);
}

describe('Function: metricsFileFor', () => {
  it('names the metrics file after the state file, beside it', () => {
    expect(metricsFileFor('/run/user/1000/handoff/sandbox.json')).toBe('/run/user/1000/handoff/sandbox.metrics.json');
    expect(metricsFileFor('/tmp/x/state')).toBe('/tmp/x/state.metrics.json');
  });
});

describe('Class: MetricSink', () => {
  it('keeps the workers’ metric documents for the reader: counts, retried attempts and latency percentiles', async () => {
    // Prepare: two invocations; 3 delivered (one on a second attempt), one attempt to retry.
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => NOW_MS });
    const lines = [
      ...invocationLines([{ number: 1, latencyMs: 40 }, { number: 1 }]),
      '{"level":"info","message":"delivery","eventId":"evt_1"}',
      ...invocationLines([{ number: 2, latencyMs: 2_000 }, { number: 1, latencyMs: 40 }]),
    ];

    // Act
    const accepted = lines.map((line) => sink.accept(line));
    sink.flush();
    const metrics = await new SandboxMetricsReader({ path }).read(LAST_DAY);

    // Assess
    expect(accepted).toEqual([true, false, true]);
    expect(metrics).toEqual(deliveryMetrics({ delivered: 3, attempts: 4, retriedAttempts: 1, deadLettered: 0, latency: [3, 40, 2_000], oldestPendingAgeMs: null }));
    expect(sink.totals()).toEqual({ delivered: 3 });
  });

  it("keeps each endpoint's figures beside the totals, as CloudWatch keeps the Service and Service, Endpoint dimensions", async () => {
    // Prepare: one invocation delivering to two endpoints, and the service's own unrouted count.
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => NOW_MS });
    const lines = invocationLines([
      { number: 1, latencyMs: 40, endpoint: 'billing' },
      { number: 2, latencyMs: 900, endpoint: 'billing' },
      { number: 1, endpoint: 'crm' },
      { number: 1, latencyMs: 70, endpoint: 'crm' },
    ]);

    // Act
    const [totals, billing, crm, nobody] = await throughTheSink(sink, path, lines);

    // Assess
    const none = { oldestPendingAgeMs: null };
    expect(totals).toEqual({ delivered: 3, attempts: 4, retriedAttempts: 1, deadLettered: 0, latency: { samples: 3, p50Ms: 70, p99Ms: 900 }, ...none });
    expect(billing).toEqual({ delivered: 2, attempts: 2, retriedAttempts: 1, deadLettered: 0, latency: { samples: 2, p50Ms: 40, p99Ms: 900 }, ...none });
    expect(crm).toEqual({ delivered: 1, attempts: 2, retriedAttempts: 0, deadLettered: 0, latency: { samples: 1, p50Ms: 70, p99Ms: 70 }, ...none });
    expect(nobody).toEqual({ delivered: 0, attempts: 0, retriedAttempts: 0, deadLettered: 0, latency: { samples: 0, p50Ms: null, p99Ms: null }, ...none });
  });

  it('keeps the largest PendingAge as the oldest message received, in ms: the totals with every message, each endpoint with its own', async () => {
    // Prepare: a producer's message (no endpoint) received after 95 s; billing's after 3 s and 40 s; crm's after 12 s.
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => NOW_MS });
    const lines = [
      ...invocationLines([{ number: 1, pendingAgeSeconds: 95 }]),
      ...invocationLines([
        { number: 1, latencyMs: 40, endpoint: 'billing', pendingAgeSeconds: 3 },
        { number: 2, latencyMs: 40, endpoint: 'billing', pendingAgeSeconds: 40 },
        { number: 1, latencyMs: 40, endpoint: 'crm', pendingAgeSeconds: 12.5 },
      ]),
    ];

    // Act
    const [totals, billing, crm, nobody] = await throughTheSink(sink, path, lines);

    // Assess
    expect(totals.oldestPendingAgeMs).toBe(95_000);
    expect(billing.oldestPendingAgeMs).toBe(40_000);
    expect(crm.oldestPendingAgeMs).toBe(12_500);
    expect(nobody.oldestPendingAgeMs).toBeNull();
  });

  it('reads the oldest message received over the window only, an hour folded into its hour keeping its largest', async () => {
    // Prepare: a message received after 600 s three hours ago, one after 20 s and one after 5 s in the last minutes.
    let nowMs = NOW_MS - 3 * 3_600_000;
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => nowMs });
    for (const line of invocationLines([{ number: 1, pendingAgeSeconds: 600 }], nowMs)) sink.accept(line);
    nowMs = NOW_MS - 120_000;
    for (const line of invocationLines([{ number: 1, pendingAgeSeconds: 20 }], nowMs)) sink.accept(line);
    nowMs = NOW_MS;
    for (const line of invocationLines([{ number: 1, pendingAgeSeconds: 5 }], nowMs)) sink.accept(line);

    // Act: the write folds the three-hour-old minute into its hour.
    sink.flush();
    const reader = new SandboxMetricsReader({ path });
    const lastHour = await reader.read({ startMs: NOW_MS - 3_600_000, endMs: NOW_MS + 1 });
    const lastMinute = await reader.read({ startMs: NOW_MS, endMs: NOW_MS + 1 });
    const lastDay = await reader.read(LAST_DAY);

    // Assess
    expect(lastHour.oldestPendingAgeMs).toBe(20_000);
    expect(lastMinute.oldestPendingAgeMs).toBe(5_000);
    expect(lastDay.oldestPendingAgeMs).toBe(600_000);
    const file = JSON.parse(readFileSync(path, 'utf8')) as { buckets: { spanMs: number; pendingAgeMax: number }[] };
    expect(file.buckets.map((b) => [b.spanMs, b.pendingAgeMax])).toEqual([
      [3_600_000, 600],
      [60_000, 20],
      [60_000, 5],
    ]);
  });

  it('forgets an endpoint with nothing in the last 24 h', async () => {
    let nowMs = NOW_MS;
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => nowMs });
    for (const line of invocationLines([{ number: 1, latencyMs: 40, endpoint: 'gone', pendingAgeSeconds: 2 }])) sink.accept(line);
    sink.flush();

    nowMs += DAY_MS + 2 * 3_600_000;
    sink.flush();

    const file = JSON.parse(readFileSync(path, 'utf8')) as { buckets: unknown[]; endpoints: Record<string, unknown> };
    expect(file.endpoints).toEqual({});
    expect(file.buckets).toEqual([]);
  });

  it('writes the file 0600 in a 0700 directory it creates', () => {
    const path = join(directory, 'private', 'sandbox.metrics.json');

    new MetricSink({ path, now: () => NOW_MS });

    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(directory, 'private')).mode & 0o777).toBe(0o700);
  });

  it('keeps the file the same size however many documents one minute brings', async () => {
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => NOW_MS });
    const line = invocationLines([{ number: 1, latencyMs: 123 }])[0]!;
    for (let i = 0; i < 100; i += 1) sink.accept(line);
    sink.flush();
    const after100 = statSync(path).size;

    for (let i = 0; i < 10_000; i += 1) sink.accept(line);
    for (let i = 0; i < 1_000; i += 1) sink.accept(invocationLines([{ number: 1, endpoint: 'billing', pendingAgeSeconds: i }])[1]!);
    sink.flush();

    // The endpoint's buckets and its one maximum: a fixed addition, whatever the count.
    expect(statSync(path).size).toBeLessThanOrEqual(after100 + 600);
    expect((await new SandboxMetricsReader({ path }).read(LAST_DAY)).delivered).toBe(10_100);
  });

  it('removes its file on close, as the sandbox removes its state file', () => {
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => NOW_MS });

    sink.close();

    expect(() => statSync(path)).toThrow(/ENOENT/);
  });
});

describe('Class: MetricSink, minute by minute', () => {
  it("reads every minute of the window back, the totals' and each endpoint's, minutes folded into an hour's bucket still one by one", async () => {
    // Prepare: billing delivers once (and fails once) three hours ago; crm fails twice, then delivers, in the current minute.
    let nowMs = NOW_MS - 3 * 3_600_000;
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => nowMs });
    for (const line of invocationLines([{ number: 1 }, { number: 2, latencyMs: 40 }].map((a) => ({ ...a, endpoint: 'billing' })), nowMs)) sink.accept(line);
    nowMs = NOW_MS;
    for (const line of invocationLines([{ number: 1 }, { number: 2 }, { number: 3, latencyMs: 80 }].map((a) => ({ ...a, endpoint: 'crm' })), nowMs)) sink.accept(line);

    // Act: the write folds the three-hour-old minute into its hour's bucket.
    sink.flush();
    const reader = new SandboxMetricsReader({ path });
    const lastFourHours = { startMs: NOW_MS - 4 * 3_600_000, endMs: NOW_MS + 60_000 };
    const [totals, billing, crm, nobody] = await Promise.all([
      reader.readMinutes(lastFourHours),
      reader.readMinutes(lastFourHours, { endpoint: 'billing' }),
      reader.readMinutes(lastFourHours, { endpoint: 'crm' }),
      reader.readMinutes(lastFourHours, { endpoint: 'nobody' }),
    ]);

    // Assess
    const file = JSON.parse(readFileSync(path, 'utf8')) as { buckets: { spanMs: number }[] };
    expect(file.buckets.map((b) => b.spanMs)).toEqual([3_600_000, 60_000]);
    const busy = (series: { delivered: number; attempts: number; startMs: number }[]) => series.filter((m) => m.delivered > 0 || m.attempts > 0);
    for (const series of [totals, billing, crm, nobody]) {
      expect(series).toHaveLength(4 * 60 + 1);
      expect(series[0]!.startMs).toBe(NOW_MS - 4 * 3_600_000);
      expect(series.at(-1)!.startMs).toBe(NOW_MS);
    }
    expect(busy(totals)).toEqual([
      { startMs: NOW_MS - 3 * 3_600_000, delivered: 1, attempts: 2 },
      { startMs: NOW_MS, delivered: 1, attempts: 3 },
    ]);
    expect(busy(billing)).toEqual([{ startMs: NOW_MS - 3 * 3_600_000, delivered: 1, attempts: 2 }]);
    expect(busy(crm)).toEqual([{ startMs: NOW_MS, delivered: 1, attempts: 3 }]);
    expect(busy(nobody)).toEqual([]);
  });

  it('keeps the file small however many documents a minute brings: two numbers a minute', async () => {
    const path = join(directory, 'sandbox.metrics.json');
    const sink = new MetricSink({ path, now: () => NOW_MS });
    const lines = invocationLines([{ number: 1, latencyMs: 123, endpoint: 'billing' }]);

    for (let i = 0; i < 5_000; i += 1) for (const line of lines) sink.accept(line);
    sink.flush();

    const file = JSON.parse(readFileSync(path, 'utf8')) as { minutes: unknown; endpointMinutes: unknown };
    expect(file.minutes).toEqual([[NOW_MS, 5_000, 5_000]]);
    expect(file.endpointMinutes).toEqual({ billing: [[NOW_MS, 5_000, 5_000]] });
  });
});

describe('Class: SandboxMetricsReader', () => {
  it('throws MetricsUnavailableError naming the file when there is none', async () => {
    const path = join(directory, 'sandbox.metrics.json');

    await expect(new SandboxMetricsReader({ path }).read(LAST_DAY)).rejects.toThrow(
      new MetricsUnavailableError(`no sandbox metrics file ${path}: the sandbox writes it while it runs`),
    );
  });

  it("reads a version 1 file's totals, and says it keeps no figures per endpoint", async () => {
    const path = join(directory, 'sandbox.metrics.json');
    writeFileSync(path, '{"version":1,"retentionMs":86400000,"buckets":[]}');
    const reader = new SandboxMetricsReader({ path });

    expect((await reader.read(LAST_DAY)).delivered).toBe(0);
    await expect(reader.read(LAST_DAY, { endpoint: 'billing' })).rejects.toThrow(
      new MetricsUnavailableError(`the sandbox metrics file ${path} is malformed (version 1 keeps no figures per endpoint: restart the sandbox)`),
    );
  });

  it('reads no oldest message (null) from a file written before the sink kept PendingAge', async () => {
    const path = join(directory, 'sandbox.metrics.json');
    writeFileSync(path, '{"version":2,"retentionMs":86400000,"buckets":[],"endpoints":{}}');

    expect((await new SandboxMetricsReader({ path }).read(LAST_DAY)).oldestPendingAgeMs).toBeNull();
  });

  it('throws MetricsUnavailableError naming the problem when its PendingAge maxima are malformed', async () => {
    const path = join(directory, 'sandbox.metrics.json');
    writeFileSync(
      path,
      '{"version":2,"retentionMs":86400000,"buckets":[{"startMs":0,"spanMs":60000,"counts":{"Delivered":0,"Attempts":0,"RetriedAttempts":0,"DeadLetters":0},"latency":{"count":0,"bins":{}},"pendingAgeMax":-1}],"endpoints":{}}',
    );

    await expect(new SandboxMetricsReader({ path }).read(LAST_DAY)).rejects.toThrow(
      new MetricsUnavailableError(`the sandbox metrics file ${path} is malformed (metric bucket 0: bad pendingAgeMax)`),
    );
  });

  it('says a file written before the sink kept minutes holds no series, and reads one malformed minute as a malformed file', async () => {
    const path = join(directory, 'sandbox.metrics.json');
    const reader = new SandboxMetricsReader({ path });
    writeFileSync(path, '{"version":2,"retentionMs":86400000,"buckets":[],"endpoints":{}}');

    await expect(reader.readMinutes(LAST_DAY)).rejects.toThrow(
      new MetricsUnavailableError(`the sandbox metrics file ${path} is malformed (it keeps no figures minute by minute: restart the sandbox)`),
    );
    writeFileSync(path, '{"version":2,"retentionMs":86400000,"buckets":[],"endpoints":{},"minutes":[],"endpointMinutes":{"billing":[[1,2,3]]}}');
    expect(await reader.readMinutes({ startMs: NOW_MS, endMs: NOW_MS + 60_000 })).toEqual([{ startMs: NOW_MS, delivered: 0, attempts: 0 }]);
    await expect(reader.readMinutes(LAST_DAY, { endpoint: 'billing' })).rejects.toThrow(
      new MetricsUnavailableError(`the sandbox metrics file ${path} is malformed (a metric minute must start at a whole minute)`),
    );
  });

  it('throws MetricsUnavailableError naming the file when there is none, minute by minute too', async () => {
    const path = join(directory, 'sandbox.metrics.json');

    await expect(new SandboxMetricsReader({ path }).readMinutes(LAST_DAY)).rejects.toThrow(
      new MetricsUnavailableError(`no sandbox metrics file ${path}: the sandbox writes it while it runs`),
    );
  });

  it('throws MetricsUnavailableError naming the problem when the file is malformed', async () => {
    const path = join(directory, 'sandbox.metrics.json');
    writeFileSync(path, '{"version":1,"buckets":[{"startMs":0}]}');

    await expect(new SandboxMetricsReader({ path }).read(LAST_DAY)).rejects.toThrow(
      new MetricsUnavailableError(`the sandbox metrics file ${path} is malformed (a metric bucket needs startMs and counts)`),
    );
  });
});
