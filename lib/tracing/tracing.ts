/**
 * Tracing as the consumer sees it (docs/contract.md §19): a span per record handled, its events,
 * and the context its re-sends and its receiver's request carry. This module loads no OpenTelemetry
 * code: `tracingFromEnvironment` says whether tracing is on, and only then imports lib/tracing/otel.ts
 * (a chunk of its own in the built function: scripts/build.ts), so with tracing off the consumer
 * loads nothing of it and spends a branch per record.
 *
 * On when an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the sandbox's way), or when `HANDOFF_TRACING` is `xray` or
 * `otlp` (the construct's: with `xray` the ADOT collector listens beside the function on
 * OpenTelemetry's default endpoint, localhost:4318, so no URL is in the environment); off when
 * `HANDOFF_TRACING=off`, `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`. Everything else
 * (service name, sampler, headers, timeout) is OpenTelemetry's own variables, read by its SDK.
 */
import type { SQSRecord } from 'aws-lambda';
import { ConfigError } from '../errors';
import { TRACING_ENV, TRACING_MODES } from './mode';
import { AWS_TRACE_HEADER_ATTRIBUTE, carrierOf, parseTraceparent, TRACELINK_ATTRIBUTE, type ParsedTraceparent, type TraceCarrier } from './carrier';

export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** Where a record's span comes from: the message's context, as read (never trusted beyond the parent link). */
export interface MessageContext {
  /** The producer's (or handoff's re-send's) `traceparent`/`tracestate`, well-formed, and its parts. */
  readonly parent?: TraceCarrier & { readonly ids: ParsedTraceparent };
  /** SQS's AWSTraceHeader, read when there is no `traceparent`. */
  readonly awsTraceHeader?: string;
  /** What a sealed re-send says it comes from (a replay's original, say): linked, not a parent. */
  readonly link?: ParsedTraceparent;
}

/** One span, started; ended once. */
export interface ActiveSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** This span's context, as the receiver's request carries it (`traceparent`, `tracestate`). */
  carrier(): TraceCarrier;
  /** The context this span's messages sent on carry: its message's parent, or its own when it had none. */
  readonly carried: TraceCarrier;
  rename(name: string): void;
  set(attributes: SpanAttributes): void;
  event(name: string, attributes?: SpanAttributes): void;
  /** Marks its status an error (the ledger could not be reached, say). */
  fail(): void;
  /** Ends it: once, when its record is answered. */
  end(): void;
}

export interface Tracing {
  /** A span of a record's handling (`handoff.deliver`, `handoff.route`), a child of its message's context. */
  start(name: string, from: MessageContext, attributes: SpanAttributes): ActiveSpan;
  /** Exports every ended span, waiting at most `timeoutMs`; never throws. */
  flush(timeoutMs: number): Promise<void>;
}

/** Spans are flushed before the handler returns, at most this long: a slow collector delays a batch by no more. */
export const FLUSH_TIMEOUT_MS = 2_000;


/** Whether the environment turns tracing on (this module's doc). @throws ConfigError naming HANDOFF_TRACING */
export function tracingEnabled(env: NodeJS.ProcessEnv): boolean {
  const mode = env[TRACING_ENV] || undefined;
  if (mode !== undefined && !(TRACING_MODES as readonly string[]).includes(mode)) throw new ConfigError(TRACING_ENV, `must be xray, otlp or off, got "${mode.slice(0, 40)}"`);
  if (mode === 'off') return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return false;
  return mode !== undefined || Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Tracing made from the environment, loaded on first call (the OpenTelemetry chunk imported then);
 * undefined when it is off, with nothing loaded. A failed load is thrown to the caller and tried
 * again by the next.
 */
export function tracingFromEnvironment(env: NodeJS.ProcessEnv, service: string): (() => Promise<Tracing>) | undefined {
  if (!tracingEnabled(env)) return undefined;
  const xrayIds = env[TRACING_ENV] === 'xray';
  let loading: Promise<Tracing> | undefined;
  return () => {
    loading ??= import('./otel').then(
      ({ otelTracing }) => otelTracing({ service, xrayIds }),
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    );
    return loading;
  };
}

/**
 * What a record's span comes from: its `traceparent` (and `tracestate`) when well-formed, else its
 * AWSTraceHeader; and, from its sealed control values only, the trace it links to. `invalid`: it
 * carried a `traceparent` that is not one (ignored: the span starts a trace of its own).
 */
export function messageContextOf(record: Pick<SQSRecord, 'messageAttributes' | 'attributes'>, sealedLink: string | undefined): MessageContext & { readonly invalid?: true } {
  const { carrier, invalid } = carrierOf((name) => record.messageAttributes?.[name]?.stringValue);
  const awsTraceHeader = carrier === undefined ? record.attributes?.[AWS_TRACE_HEADER_ATTRIBUTE] : undefined;
  const link = sealedLink !== undefined ? parseTraceparent(sealedLink) : undefined;
  const ids = carrier !== undefined ? parseTraceparent(carrier.traceparent) : undefined;
  return {
    ...(carrier !== undefined && ids !== undefined ? { parent: { ...carrier, ids } } : {}),
    ...(awsTraceHeader ? { awsTraceHeader: awsTraceHeader.slice(0, 256) } : {}),
    ...(link !== undefined ? { link } : {}),
    ...(invalid ? { invalid } : {}),
  };
}

export { TRACELINK_ATTRIBUTE };
