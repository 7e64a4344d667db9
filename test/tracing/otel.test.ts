/**
 * The OpenTelemetry side (lib/tracing/otel.ts): with the construct's `xray` mode a new trace's ID is
 * one X-Ray takes (its first 8 hex digits the epoch second, as the collector's X-Ray exporter checks),
 * while a producer's trace keeps its own; a span's context is what the receiver's request carries.
 */
import { describe, expect, it } from 'vitest';
import { parseTraceparent } from '../../lib/tracing/carrier';
import { otelTracing } from '../../lib/tracing/otel';

const PRODUCER = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', ids: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true } };

describe('Tracing: span IDs', () => {
  it("starts X-Ray-compatible traces in xray mode, and keeps a producer's trace ID", async () => {
    const tracing = otelTracing({ service: 'test', xrayIds: true });
    const before = Math.floor(Date.now() / 1000);
    const root = tracing.start('handoff.deliver', {}, {});
    const seconds = parseInt(root.traceId.slice(0, 8), 16);
    expect(seconds).toBeGreaterThanOrEqual(before);
    expect(seconds).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
    const child = tracing.start('handoff.deliver', { parent: PRODUCER }, {});
    expect(child.traceId).toBe(PRODUCER.ids.traceId);
    expect(parseTraceparent(child.carrier().traceparent)).toEqual({ traceId: PRODUCER.ids.traceId, spanId: child.spanId, sampled: true });
    // Re-sends carry the producer's context; a new root's re-sends carry its own.
    expect(child.carried).toEqual({ traceparent: PRODUCER.traceparent });
    expect(root.carried).toEqual(root.carrier());
    root.end();
    child.end();
  });

  it('draws random trace IDs otherwise', () => {
    const tracing = otelTracing({ service: 'test' });
    const ids = Array.from({ length: 20 }, () => tracing.start('handoff.deliver', {}, {}).traceId.slice(0, 8));
    expect(new Set(ids).size).toBeGreaterThan(1);
  });
});
