/**
 * The consumer's tracing in AWS (docs/contract.md §19, docs/tracing.md), `tracing` of the construct:
 *
 * - `'xray'` (the default): Lambda's active tracing, and the ADOT collector as a Lambda extension
 *   (the AWS-published collector layer, `AdotLambdaLayerGenericVersion`, its ARN for the stack's
 *   region and ARM). The consumer's OpenTelemetry SDK exports its spans over OTLP/HTTP to the
 *   collector on localhost:4318, whose default configuration sends them to X-Ray with the function's
 *   role; active tracing gives that role the X-Ray writes and traces the invocation itself. No exec
 *   wrapper: the layer's auto-instrumentation is not used, the consumer makes its own spans
 *   (lib/consumer/trace.ts).
 * - `'otlp'`: no active tracing, no layer; spans go over OTLP/HTTP to `tracingOtlpEndpoint` (a
 *   collector of the user's: in a layer of their own on localhost, or reachable over https).
 *   Credentials never go in the environment: a backend that needs them is reached through a
 *   collector that holds them.
 * - `'off'`: none of it; the consumer loads no OpenTelemetry module.
 *
 * No sampler is set: the SDK's default, `parentbased_always_on`, records every trace the consumer
 * starts. A user who wants fewer sets OpenTelemetry's own variables on the construct's `consumer`
 * (`addEnvironment('OTEL_TRACES_SAMPLER', 'parentbased_traceidratio')` and
 * `OTEL_TRACES_SAMPLER_ARG`: docs/tracing.md, sampling); a prop would only rename them.
 *
 * Why the collector layer rather than X-Ray's own OTLP endpoint (xray.<region>.amazonaws.com/v1/traces):
 * that endpoint takes SigV4-signed requests only (and Transaction Search enabled on the account),
 * which OpenTelemetry's JS exporter does not sign; a signer of our own would be a hand-written
 * exporter. The collector signs, batches and retries outside the handler.
 */
import { Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { ConfigError } from '../../lib/errors';
import { TRACING_ENV, TRACING_MODES, type TracingMode } from '../../lib/tracing/mode';

export type { TracingMode };

/**
 * Where the collector extension listens for OTLP/HTTP (the ADOT layer's default configuration):
 * OpenTelemetry's default endpoint too, so `xray` puts no URL in the environment.
 */
export const COLLECTOR_OTLP_ENDPOINT = 'http://localhost:4318';
/** The service name spans carry unless the user's OTEL_SERVICE_NAME says otherwise. */
export const TRACING_SERVICE_NAME = 'handoff-consumer';

export interface TracingProps {
  /** Default `'xray'`. */
  readonly tracing?: TracingMode;
  /** With `tracing: 'otlp'`, required: the collector's base URL (OTEL_EXPORTER_OTLP_ENDPOINT), https or http://localhost. */
  readonly tracingOtlpEndpoint?: string;
}

/** What `tracing` adds to the consumer: its environment, its active tracing, its layers. */
export interface TracingSetup {
  readonly environment: Readonly<Record<string, string>>;
  readonly tracing?: lambda.Tracing;
  readonly layerArn?: (scope: lambda.Function) => string;
}

/** @throws ConfigError naming the prop */
export function tracingSetup(props: TracingProps): TracingSetup {
  const mode = props.tracing ?? 'xray';
  if (!(TRACING_MODES as readonly string[]).includes(mode)) throw new ConfigError('tracing', `must be 'xray', 'otlp' or 'off', got ${JSON.stringify(mode)}`);
  if (mode !== 'otlp' && props.tracingOtlpEndpoint !== undefined) throw new ConfigError('tracingOtlpEndpoint', `is for tracing: 'otlp' only (tracing is '${mode}')`);
  const service = { OTEL_SERVICE_NAME: TRACING_SERVICE_NAME };
  switch (mode) {
    case 'off':
      return { environment: {} };
    case 'otlp':
      return { environment: { [TRACING_ENV]: mode, ...service, OTEL_EXPORTER_OTLP_ENDPOINT: checkEndpoint(props.tracingOtlpEndpoint) } };
    case 'xray':
      return {
        environment: { [TRACING_ENV]: mode, ...service },
        tracing: lambda.Tracing.ACTIVE,
        layerArn: (fn) => lambda.AdotLambdaLayerGenericVersion.LATEST.layerArn(fn, lambda.Architecture.ARM_64),
      };
  }
}

/**
 * Adds `setup`'s layer to the function (its environment and active tracing are set where it is
 * made), and with active tracing acknowledges cdk-nag's wildcard finding on its role: the X-Ray
 * writes Lambda grants take no resource.
 */
export function addTracingLayer(fn: lambda.Function, setup: TracingSetup): void {
  if (setup.layerArn !== undefined) fn.addLayers(lambda.LayerVersion.fromLayerVersionArn(fn, 'TracingCollectorLayer', setup.layerArn(fn)));
  if (setup.tracing === lambda.Tracing.ACTIVE && fn.role !== undefined) {
    Validations.of(fn.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        "Lambda's active tracing (the construct's tracing: 'xray', docs/tracing.md): xray:PutTraceSegments and xray:PutTelemetryRecords, which take no resource, as Lambda grants them for it; the ADOT collector layer sends the consumer's spans with them.",
    });
  }
}

function checkEndpoint(raw: string | undefined): string {
  if (raw === undefined || raw === '') throw new ConfigError('tracingOtlpEndpoint', "is required with tracing: 'otlp'");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('tracingOtlpEndpoint', `must be a URL, got "${raw.slice(0, 80)}"`);
  }
  const local = url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1');
  if (url.protocol !== 'https:' && !local) throw new ConfigError('tracingOtlpEndpoint', `must be https (or http://localhost for a collector beside the function), got ${url.protocol}`);
  if (url.username || url.password) throw new ConfigError('tracingOtlpEndpoint', 'must not carry credentials: reach a backend that needs them through a collector that holds them');
  return raw;
}
