/**
 * Traces end to end in the sandbox (docs/contract.md §19, docs/tracing.md "Locally"): `npm start`
 * with OTEL_EXPORTER_OTLP_ENDPOINT set, a loopback OTLP/HTTP receiver as the collector, two
 * endpoints on loopback receivers. A producer's message with a `traceparent` fans out to both; the
 * one that fails once (503, then 200) shows two attempt spans, the other one: all in the producer's
 * trace, each request carrying its attempt's span.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { parseTraceparent } from '../../lib/tracing/carrier';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { useSandboxProcess } from '../helpers/sandbox-suite';
import { eventually, type SandboxClients } from '../helpers/sandbox-clients';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver';

const TRACE = 'a3ce929d0e0e47364bf92f3577b34da6';
const PRODUCER_SPAN = 'b7ad6b7169203331';
const SETTLE_MS = 60_000;

let acme: TestReceiver;
let notify: TestReceiver;
let otlp: OtlpReceiver;
let clients: SandboxClients;

useSandboxProcess(
  async () => {
    [acme, notify, otlp] = await Promise.all([startTestReceiver(), startTestReceiver(), startOtlpReceiver()]);
    notify.respondTo('evt_sandbox_trace', 503, 200);
    return {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, HANDOFF_RETRY_SCHEDULE: '1,1', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000' },
      endpoints: [
        { name: 'acme', url: acme.url, eventTypes: ['shipment.delivered'], secret: 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=' },
        { name: 'notify', url: notify.url, eventTypes: ['shipment.delivered'], secret: 'whsec_/uCW0n0KPpd7EnSxkS82xgxojTF+Q5yIYx5I0pyVR/s=' },
      ],
    };
  },
  (started) => ({ clients } = started),
  async () => {
    await Promise.all([acme?.close(), notify?.close(), otlp?.close()]);
  },
);

describe('Sandbox: traces over OTLP/HTTP', () => {
  it("puts every attempt of a fanned-out event in the producer's trace, and each request carries its attempt's span", async () => {
    // Act
    await clients.sqs.send(
      new SendMessageCommand({
        QueueUrl: clients.ready.queueUrl,
        MessageBody: JSON.stringify({ id: 'evt_sandbox_trace', shipmentId: 'shp_1', status: 'delivered', occurredAt: '2026-12-02T10:15:00Z', data: {} }),
        MessageAttributes: { traceparent: { DataType: 'String', StringValue: `00-${TRACE}-${PRODUCER_SPAN}-01` } },
      }),
    );

    // Assess: three attempt spans (acme's one, notify's two), exported by the workers.
    const attempts = await eventually(
      'three attempt spans',
      async () => {
        const spans = otlp.spans.filter((span) => span.name === 'handoff.deliver' && span.attributes['handoff.event_id'] === 'evt_sandbox_trace' && span.attributes['handoff.attempt'] !== undefined);
        return spans.length >= 3 ? spans : undefined;
      },
      { timeoutMs: SETTLE_MS, describe: () => `${otlp.spans.length} spans so far` },
    );
    expect(attempts).toHaveLength(3);
    for (const span of attempts) expect(span).toMatchObject({ traceId: TRACE, parentSpanId: PRODUCER_SPAN, service: 'handoff' });
    const at = (endpoint: string) => attempts.filter((span) => span.attributes['handoff.endpoint'] === endpoint).map((span) => [span.attributes['handoff.attempt'], span.attributes['http.response.status_code']]);
    expect(at('acme')).toEqual([[1, 200]]);
    expect(at('notify').sort()).toEqual([
      [1, 503],
      [2, 200],
    ]);
    expect(otlp.spans.filter((span) => span.name === 'handoff.route' && span.traceId === TRACE)).toHaveLength(1);
    const sent = [...acme.requestsFor('evt_sandbox_trace'), ...notify.requestsFor('evt_sandbox_trace')].map((request) => parseTraceparent(String(request.headers.traceparent)));
    expect(sent.map((parsed) => parsed?.traceId)).toEqual([TRACE, TRACE, TRACE]);
    expect(sent.map((parsed) => parsed?.spanId).sort()).toEqual(attempts.map((span) => span.spanId).sort());
  });
});
