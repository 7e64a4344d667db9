/**
 * The construct's `tracing` (docs/contract.md §19, infra/delivery/tracing.ts) as synthesized: by
 * default the consumer has Lambda's active tracing, the ADOT collector layer for its region and
 * ARM, and the OTLP endpoint the layer listens on; `'otlp'` only the endpoint given; `'off'` none
 * of it. Bad values fail the synth naming the prop. Only the consumer is traced.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp, type HandoffStack } from '../../infra/app';
import { TRACING_SERVICE_NAME } from '../../infra/delivery/tracing';
import { buildDelivery, testApp, WARM_UP_MS, WEBHOOK_URL, type Built } from './cdk-context';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Resource = { Properties: Record<string, any> };

function consumerOf(built: Built): Resource {
  const id = built.stack.getLogicalId(built.delivery.consumer.node.defaultChild as never);
  return built.template.toJSON().Resources[id] as Resource;
}

function recoveryOf(built: Built): Resource {
  const id = built.stack.getLogicalId(built.delivery.recovery.node.defaultChild as never);
  return built.template.toJSON().Resources[id] as Resource;
}

/** Every action the consumer's role policies allow. */
function consumerActions(built: Built): string[] {
  const roleId = built.stack.getLogicalId(built.delivery.consumer.role!.node.defaultChild as never);
  const policies = Object.values(built.template.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, any> }>).filter(
    (resource) => resource.Type === 'AWS::IAM::Policy' && JSON.stringify(resource.Properties.Roles).includes(roleId),
  );
  return policies.flatMap((policy) => (policy.Properties.PolicyDocument.Statement as { Action: string | string[] }[]).flatMap((s) => [s.Action].flat()));
}

let byDefault: Built;
beforeAll(() => {
  byDefault = buildDelivery();
}, WARM_UP_MS);

describe('Construct: tracing', () => {
  it("defaults to 'xray': active tracing, the ADOT collector layer for the region and ARM, spans to it on OpenTelemetry's default endpoint", () => {
    const consumer = consumerOf(byDefault).Properties;
    expect(consumer.TracingConfig).toEqual({ Mode: 'Active' });
    expect(JSON.stringify(consumer.Layers)).toMatch(/aws-otel-collector-arm64-ver-/);
    expect(consumer.Environment.Variables).toMatchObject({ HANDOFF_TRACING: 'xray', OTEL_SERVICE_NAME: TRACING_SERVICE_NAME });
    // localhost:4318, the collector's and the exporter's default: no URL in the environment.
    expect(consumer.Environment.Variables).not.toHaveProperty('OTEL_EXPORTER_OTLP_ENDPOINT');
    // No sampler: the SDK's parentbased_always_on; a user sets OTEL_TRACES_SAMPLER on the consumer (docs/tracing.md).
    expect(Object.keys(consumer.Environment.Variables as object).filter((name) => name.startsWith('OTEL_TRACES_SAMPLER'))).toEqual([]);
    // No exec wrapper: the layer's auto-instrumentation would patch the handler; the consumer makes its own spans.
    expect(consumer.Environment.Variables).not.toHaveProperty('AWS_LAMBDA_EXEC_WRAPPER');
    expect(consumerActions(byDefault)).toEqual(expect.arrayContaining(['xray:PutTraceSegments', 'xray:PutTelemetryRecords']));
    // Only the consumer is traced.
    expect(recoveryOf(byDefault).Properties.TracingConfig).toBeUndefined();
    expect(recoveryOf(byDefault).Properties.Layers).toBeUndefined();
  });

  it("with 'off' has none of it: no active tracing, no layer, no OTEL_ variable, no X-Ray grant", () => {
    const built = buildDelivery({ tracing: 'off' });
    const consumer = consumerOf(built).Properties;
    expect(consumer.TracingConfig).toBeUndefined();
    expect(consumer.Layers).toBeUndefined();
    expect(Object.keys(consumer.Environment.Variables as object).filter((name) => name.startsWith('OTEL_') || name === 'HANDOFF_TRACING')).toEqual([]);
    expect(consumerActions(built).filter((action) => action.startsWith('xray:'))).toEqual([]);
  });

  it("with 'otlp' sends to the endpoint given, with no layer and no active tracing", () => {
    const built = buildDelivery({ tracing: 'otlp', tracingOtlpEndpoint: 'https://collector.example.com:4318' });
    const consumer = consumerOf(built).Properties;
    expect(consumer.TracingConfig).toBeUndefined();
    expect(consumer.Layers).toBeUndefined();
    expect(consumer.Environment.Variables).toMatchObject({ HANDOFF_TRACING: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example.com:4318', OTEL_SERVICE_NAME: TRACING_SERVICE_NAME });
  });

  it('refuses a bad setting at synth, naming the prop', () => {
    expect(() => buildDelivery({ tracing: 'otlp' })).toThrow(/^tracingOtlpEndpoint is required with tracing: 'otlp'$/);
    expect(() => buildDelivery({ tracing: 'otlp', tracingOtlpEndpoint: 'http://collector.example.com:4318' })).toThrow(/^tracingOtlpEndpoint must be https/);
    expect(() => buildDelivery({ tracing: 'otlp', tracingOtlpEndpoint: 'https://user:key@collector.example.com' })).toThrow(/^tracingOtlpEndpoint must not carry credentials/);
    expect(() => buildDelivery({ tracing: 'xray', tracingOtlpEndpoint: 'https://collector.example.com' })).toThrow(/^tracingOtlpEndpoint is for tracing: 'otlp' only/);
    expect(() => buildDelivery({ tracing: 'on' as never })).toThrow(/^tracing must be 'xray', 'otlp' or 'off', got "on"$/);
  });

  it("is the app's context too: tracing=off leaves the consumer untraced, a bad value fails naming the key", () => {
    const app = buildApp(testApp({ webhookUrl: WEBHOOK_URL, tracing: 'off' }));
    const functions = Template.fromStack(app.node.findChild('Handoff') as HandoffStack).findResources('AWS::Lambda::Function');

    expect(Object.values(functions).filter((f) => (f as Resource).Properties.TracingConfig !== undefined)).toEqual([]);
    expect(() => buildApp(testApp({ webhookUrl: WEBHOOK_URL, tracing: 'on' }))).toThrow(/^tracing must be 'xray', 'otlp' or 'off', got "on"$/);
  });
});
