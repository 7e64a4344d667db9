/**
 * An OTLP/HTTP trace receiver for tests, on 127.0.0.1: what a collector is to the consumer. It reads
 * the JSON the exporter posts to /v1/traces (OTEL_EXPORTER_OTLP_PROTOCOL http/json, the HTTP
 * exporter's own) and keeps every span, flattened, with its resource's service name.
 */
import { createServer, type Server } from 'node:http';
import { listenOnLoopback } from '../helpers/loopback';

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

export interface ReceivedSpan {
  readonly service: string | undefined;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly attributes: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly events: readonly { readonly name: string; readonly attributes: Readonly<Record<string, string | number | boolean | undefined>> }[];
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
}

export interface OtlpReceiver {
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces). */
  readonly url: string;
  readonly spans: readonly ReceivedSpan[];
  /** Paths posted to, in order. */
  readonly paths: readonly string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const paths: string[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      paths.push(request.url ?? '');
      const json = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: RawSpan[] }[] }[];
      };
      for (const resourceSpans of json.resourceSpans ?? []) {
        const service = attributesOf(resourceSpans.resource?.attributes)['service.name'];
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              service: typeof service === 'string' ? service : undefined,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              attributes: attributesOf(span.attributes),
              events: (span.events ?? []).map((event) => ({ name: event.name, attributes: attributesOf(event.attributes) })),
              links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const listening = await listenOnLoopback(server);
  return { url: new URL(listening.url).origin, spans, paths, close: () => listening.close() };
}

interface RawSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: KeyValue[];
  events?: { name: string; attributes?: KeyValue[] }[];
  links?: { traceId: string; spanId: string }[];
}

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean | undefined> {
  const out: Record<string, string | number | boolean | undefined> = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.boolValue ?? value.doubleValue;
  }
  return out;
}
