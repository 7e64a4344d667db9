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
import type { ControlValues } from '../queue/seal';
import {
  AWS_TRACE_HEADER_ATTRIBUTE,
  carrierOf,
  formatTraceparent,
  parseAwsTraceHeader,
  parseTraceparent,
  TRACELINK_ATTRIBUTE,
  type ParsedTraceparent,
  type TraceCarrier,
} from './carrier';

export type SpanAttributes = Readonly<Record<string, string | number | boolean | undefined>>;

/** Where a record's span comes from: the message's context, as read (never trusted beyond its parent and link). */
export interface MessageContext {
  /**
   * The span's parent: the producer's (or handoff's re-send's) `traceparent`/`tracestate`,
   * well-formed, and its parts; or, without them, an AWSTraceHeader that says `Sampled=1`, as a
   * `traceparent`.
   */
  readonly parent?: TraceCarrier & { readonly ids: ParsedTraceparent };
  /** A trace the span links to, not its parent (`handoff.link` on the link says which). */
  readonly link?: { readonly ids: ParsedTraceparent; readonly kind: LinkKind };
}

/**
 * `original`: what a sealed re-send comes from (a replay's original delivery, say).
 * `aws-trace-header`: an AWSTraceHeader that is not sampled (messageContextOf).
 */
export type LinkKind = 'original' | 'aws-trace-header';

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
 * What a record's span comes from: its `traceparent` (and `tracestate`) when well-formed; else its
 * AWSTraceHeader, as the parent only when it says `Sampled=1`. `invalid`: it carried a
 * `traceparent` that is not one (ignored: the span starts a trace of its own).
 *
 * An AWSTraceHeader is not only an X-Ray-traced producer's: the AWS SDK in any Lambda function puts
 * the invocation's trace header on what it sends, `Sampled=0` when the function has no active
 * tracing. As a parent that would unsample handoff's span under `parentbased_always_on`: nothing
 * exported, the receiver told `-00`, the row's `traceparent` naming a span that never was. So an
 * unsampled one starts a trace of its own, linked to the header's. And handoff's own messages
 * (sealed `control`: replays and releases from the API function, recovery's sends) never take it:
 * it names the invocation that sent them, not their delivery's trace (their sealed link names that,
 * where the row keeps one).
 */
export function messageContextOf(record: Pick<SQSRecord, 'messageAttributes' | 'attributes'>, control: ControlValues = {}): MessageContext & { readonly invalid?: true } {
  const { carrier, invalid } = carrierOf((name) => record.messageAttributes?.[name]?.stringValue);
  const sealedLink = control[TRACELINK_ATTRIBUTE];
  const original = sealedLink !== undefined ? parseTraceparent(sealedLink) : undefined;
  const handoffsOwn = Object.keys(control).length > 0;
  const aws = carrier === undefined && !handoffsOwn ? parseAwsTraceHeader(record.attributes?.[AWS_TRACE_HEADER_ATTRIBUTE]) : undefined;
  const ids = carrier !== undefined ? parseTraceparent(carrier.traceparent) : undefined;
  const parent =
    carrier !== undefined && ids !== undefined
      ? { ...carrier, ids }
      : aws?.sampled
        ? { traceparent: formatTraceparent(aws.traceId, aws.spanId, true), ids: aws }
        : undefined;
  const link = original !== undefined ? { ids: original, kind: 'original' as const } : aws !== undefined && !aws.sampled ? { ids: aws, kind: 'aws-trace-header' as const } : undefined;
  return {
    ...(parent !== undefined ? { parent } : {}),
    ...(link !== undefined ? { link } : {}),
    ...(invalid ? { invalid } : {}),
  };
}

export { TRACELINK_ATTRIBUTE };
