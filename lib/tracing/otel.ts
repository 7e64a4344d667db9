/**
 * Tracing on OpenTelemetry's JS SDK (lib/tracing/tracing.ts loads this only while tracing is on):
 * a tracer provider of our own, never registered globally (no context manager, no patched modules:
 * every span names its parent itself), spans batched and exported over OTLP/HTTP by
 * OpenTelemetry's exporter, as its variables say (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, `OTEL_SERVICE_NAME`, `OTEL_BSP_*`, …).
 * `flush` is called before each batch's answer, so nothing waits in the buffer when Lambda freezes
 * the environment.
 */
import {
  createTraceState,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator, type IdGenerator } from '@opentelemetry/sdk-trace-base';
// Types only from carrier.ts: a value import would put it in a chunk of its own, one more file at every cold start.
import type { ParsedTraceparent, TraceCarrier } from './carrier';
import type { ActiveSpan, MessageContext, SpanAttributes, Tracing } from './tracing';

/** The tracer's instrumentation scope name. */
export const TRACER_NAME = 'handoff';

/**
 * `xrayIds`: new traces get IDs X-Ray takes (the first 8 hex digits the epoch second), as its
 * collector's exporter checks them; a producer's trace keeps its own ID.
 */
export function otelTracing(options: { readonly service: string; readonly xrayIds?: boolean }): Tracing {
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector's) over handoff's own name.
  const resource = defaultResource().merge(resourceFromAttributes({ 'service.name': options.service })).merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
    ...(options.xrayIds ? { idGenerator: new XRayIdGenerator() } : {}),
  });
  const tracer = provider.getTracer(TRACER_NAME);

  return {
    start(name, from, attributes) {
      // The parent is named here, never taken from a context manager (none is registered).
      const parent = from.parent !== undefined ? trace.setSpanContext(ROOT_CONTEXT, spanContextOf(from.parent.ids, from.parent.tracestate)) : ROOT_CONTEXT;
      const links: Link[] = from.link !== undefined ? [{ context: spanContextOf(from.link.ids), attributes: { 'handoff.link': from.link.kind } }] : [];
      const span = tracer.startSpan(name, { kind: SpanKind.CONSUMER, attributes: defined(attributes), links }, parent);
      const own = carrierOfSpan(span.spanContext());
      return new OtelSpan(span, own, from.parent !== undefined ? carrierOnly(from.parent) : own);
    },
    async flush(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
        timer.unref();
      });
      // A collector that cannot be reached loses these spans, never the batch's answer.
      await Promise.race([provider.forceFlush().catch(() => {}), timeout]);
      clearTimeout(timer);
    },
  };
}

class OtelSpan implements ActiveSpan {
  readonly traceId: string;
  readonly spanId: string;

  constructor(
    private readonly span: Span,
    private readonly own: TraceCarrier,
    readonly carried: TraceCarrier,
  ) {
    const { traceId, spanId } = span.spanContext();
    this.traceId = traceId;
    this.spanId = spanId;
  }

  carrier(): TraceCarrier {
    return this.own;
  }

  rename(name: string): void {
    this.span.updateName(name);
  }

  set(attributes: SpanAttributes): void {
    this.span.setAttributes(defined(attributes));
  }

  event(name: string, attributes?: SpanAttributes): void {
    this.span.addEvent(name, attributes !== undefined ? defined(attributes) : undefined);
  }

  fail(): void {
    this.span.setStatus({ code: SpanStatusCode.ERROR });
  }

  end(): void {
    this.span.end();
  }
}

/** A parsed traceparent (carrier.ts checked it) as a remote span context. */
function spanContextOf(ids: ParsedTraceparent, tracestate?: string): SpanContext {
  return {
    traceId: ids.traceId,
    spanId: ids.spanId,
    traceFlags: ids.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
    ...(tracestate !== undefined ? { traceState: createTraceState(tracestate) } : {}),
  };
}

function carrierOnly({ traceparent, tracestate }: TraceCarrier): TraceCarrier {
  return tracestate !== undefined ? { traceparent, tracestate } : { traceparent };
}

function carrierOfSpan(context: SpanContext): TraceCarrier {
  const sampled = (context.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
  const traceparent = `00-${context.traceId}-${context.spanId}-${sampled ? '01' : '00'}`;
  const tracestate = context.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

function defined(attributes: SpanAttributes): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) out[name] = value;
  return out;
}

/** Trace IDs X-Ray takes: the epoch second in the first 8 hex digits, then 24 random ones. */
class XRayIdGenerator implements IdGenerator {
  readonly #random = new RandomIdGenerator();

  generateTraceId(): string {
    const seconds = Math.floor(Date.now() / 1000).toString(16).padStart(8, '0');
    return `${seconds}${this.#random.generateTraceId().slice(8)}`;
  }

  generateSpanId(): string {
    return this.#random.generateSpanId();
  }
}
