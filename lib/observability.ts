/**
 * Structured logs and CloudWatch metrics (Embedded Metric Format), one JSON object per line.
 *
 * Written by hand rather than with Powertools Logger + Metrics, for the consumer's bundle size
 * (docs/cost-and-benchmarks.md): this project uses only JSON lines and a few counters and timings
 * in one namespace with one dimension.
 *
 * Lines go straight to stdout, not through `console`: Lambda's console prefixes each line with
 * a timestamp and request ID, which would stop CloudWatch from reading EMF documents.
 *
 * Callers pass event IDs and codes, never a message body, a webhook payload or a secret.
 */
import { escapeUnsafeInJson } from './terminal';

export type Fields = Readonly<Record<string, unknown>>;
export type Write = (line: string) => void;

const toStdout: Write = (line) => {
  process.stdout.write(`${line}\n`);
};

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  info(message: string, fields?: Fields): void;
  warn(message: string, fields?: Fields): void;
  error(message: string, fields?: Fields): void;
  /** A logger that adds `fields` to every line (an invocation's request ID, say). */
  child(fields: Fields): Logger;
}

export function createLogger(options: { service: string; write?: Write; fields?: Fields }): Logger {
  return new JsonLogger(options.write ?? toStdout, { service: options.service, ...options.fields });
}

/** A class, not closures: a child is made per record, and then costs one object. */
class JsonLogger implements Logger {
  constructor(
    private readonly write: Write,
    private readonly base: Fields,
  ) {}

  info(message: string, fields?: Fields): void {
    this.line('info', message, fields);
  }

  warn(message: string, fields?: Fields): void {
    this.line('warn', message, fields);
  }

  error(message: string, fields?: Fields): void {
    this.line('error', message, fields);
  }

  child(fields: Fields): Logger {
    return new JsonLogger(this.write, { ...this.base, ...fields });
  }

  private line(level: LogLevel, message: string, fields: Fields | undefined): void {
    // The same JSON, with what a terminal would act on escaped: `aws logs tail` shows it inert.
    this.write(escapeUnsafeInJson(JSON.stringify({ level, message, timestamp: new Date().toISOString(), ...this.base, ...fields })));
  }
}

/**
 * An error as log fields: its type and stable code, and a bounded message. Error messages here
 * come from our own classes and the AWS SDK, which do not echo item contents.
 */
export function errorFields(error: unknown): Fields {
  if (!(error instanceof Error)) return { error: 'non-error thrown' };
  const code = (error as { code?: unknown }).code;
  const cause = error.cause instanceof Error ? error.cause.name : undefined;
  return {
    error: error.name,
    ...(typeof code === 'string' ? { errorCode: code } : {}),
    errorMessage: error.message.slice(0, 300),
    ...(cause ? { errorCause: cause } : {}),
  };
}

/**
 * The metrics handoff publishes, with their units: the one definition the recorder writes, the
 * stack's dashboard and alarms name, and `handoff stats` reads (lib/metrics/).
 */
export const METRICS = {
  /** Deliveries accepted by the receiver (2xx). */
  Delivered: 'Count',
  /** Failed attempts that will be tried again. */
  Retries: 'Count',
  /** Messages sent to the dead-letter queue. */
  DeadLetters: 'Count',
  /** Per accepted delivery: ms from its admission (or latest replay) to the 2xx. */
  DeliveryLatency: 'Milliseconds',
  /** Per received message: seconds it had waited on the queue. */
  PendingAge: 'Seconds',
  /** Attempts made: requests sent, whatever their outcome. */
  Attempts: 'Count',
  /** Attempts that were not their delivery's first (attempt number 2 or later). */
  RetriedAttempts: 'Count',
  /** Valid events that no endpoint subscribes to: acknowledged, not stored (and messages for a removed endpoint). */
  Unrouted: 'Count',
  /** Endpoint deliveries put on the queue as messages of their own by routing (an event to 2 or more endpoints). */
  FannedOut: 'Count',
  /** Deliveries that died at an endpoint whose recovery is `drop`: kept dead in the ledger, not dead-lettered. */
  Dropped: 'Count',
  /** Deliveries the stuck-work recovery enqueued again (lib/recovery.ts); published by the recovery function and the sandbox's timer. */
  Recovered: 'Count',
  /** Deliveries held back, with no attempt spent, because their endpoint was paused (a 429, or a 503 with Retry-After). */
  Paused: 'Count',
  /** Deliveries parked, with no attempt spent, because their endpoint was disabled (docs/contract.md §12). */
  Parked: 'Count',
  /** Parked deliveries released after their endpoint was enabled, each with a message of its own (lib/resume.ts). */
  Resumed: 'Count',
  /**
   * Deliveries the endpoint's rate limit (`rateLimitPerSecond`) kept from being sent when received, with
   * no attempt spent: put back for their reserved slot more than a second away, or held (slots beyond
   * the horizon, or the schedule unreachable). Waits of up to a second in the invocation are not counted.
   */
  RateLimited: 'Count',
  /**
   * Deliveries held on the queue, with no attempt spent and nothing written, because an endpoint they
   * would go to could not be resolved: its signing secret unreadable (Secrets Manager, KMS), its
   * registry item undecodable, or the registry unreadable (then counted for the service alone). Each
   * returns within seconds and is counted again: any sustained count needs an operator.
   */
  EndpointUnresolved: 'Count',
} as const;
export type MetricName = keyof typeof METRICS;

export const METRICS_NAMESPACE = 'Handoff';
/**
 * The `Service` dimension's value. Every metric is published under it; a delivery's metrics are
 * also published per endpoint, under `Service` and `Endpoint` (one EMF document per endpoint, with
 * both dimension sets, so the service's totals add up every endpoint's).
 */
export const SERVICE_NAME = 'handoff';
export const METRIC_DIMENSIONS = { Service: SERVICE_NAME } as const;
export const ENDPOINT_DIMENSION = 'Endpoint';
/** EMF allows at most 100 values per metric in one document. */
const MAX_VALUES_PER_DOCUMENT = 100;

/**
 * Collects one invocation's metrics and writes them as EMF documents on `flush`. Counts are
 * summed (and published even when zero, so an alarm sees 0 rather than missing data); timings
 * keep every value, so CloudWatch can compute percentiles.
 */
export class MetricsRecorder {
  readonly #service: string;
  readonly #write: Write;
  readonly #now: () => number;
  /** By endpoint ('' for metrics of no endpoint: unrouted or invalid messages). */
  #values = new Map<string, Map<MetricName, number[]>>();

  constructor(options: { service: string; write?: Write; now?: () => number }) {
    this.#service = options.service;
    this.#write = options.write ?? toStdout;
    this.#now = options.now ?? Date.now;
  }

  /** One attempt made: counts it, and as a retried attempt when it was not its delivery's first. */
  attempted(attemptNumber: number, endpoint?: string): void {
    this.add('Attempts', 1, endpoint);
    if (attemptNumber > 1) this.add('RetriedAttempts', 1, endpoint);
  }

  add(name: MetricName, value: number, endpoint = ''): void {
    if (!Number.isFinite(value)) return;
    let metrics = this.#values.get(endpoint);
    if (metrics === undefined) this.#values.set(endpoint, (metrics = new Map()));
    const values = metrics.get(name);
    if (values === undefined) metrics.set(name, [value]);
    else values.push(value);
  }

  /**
   * Writes the documents: first the service's own (metrics of no endpoint), always, with every count
   * even when zero, so an alarm on the service's counts sees 0 rather than missing data; then one per
   * endpoint seen since the last flush, with what it recorded.
   */
  flush(): void {
    const byEndpoint = this.#values;
    this.#values = new Map();
    this.#writeDocuments('', byEndpoint.get('') ?? new Map());
    for (const [endpoint, metrics] of byEndpoint) if (endpoint !== '') this.#writeDocuments(endpoint, metrics);
  }

  #writeDocuments(endpoint: string, metrics: Map<MetricName, number[]>): void {
    const pending = new Map<MetricName, number[]>();
    for (const name of Object.keys(METRICS) as MetricName[]) {
      const values = metrics.get(name);
      if (METRICS[name] === 'Count') {
        if (values !== undefined || endpoint === '') pending.set(name, [(values ?? []).reduce((sum, v) => sum + v, 0)]);
      } else if (values !== undefined) pending.set(name, [...values]);
    }
    const dimensions = endpoint === '' ? [['Service']] : [['Service'], ['Service', ENDPOINT_DIMENSION]];
    while (pending.size > 0) {
      const document: Record<string, unknown> = { Service: this.#service };
      if (endpoint !== '') document[ENDPOINT_DIMENSION] = endpoint;
      const definitions: { Name: string; Unit: string }[] = [];
      for (const [name, values] of pending) {
        const chunk = values.splice(0, MAX_VALUES_PER_DOCUMENT);
        document[name] = chunk.length === 1 ? chunk[0] : chunk;
        definitions.push({ Name: name, Unit: METRICS[name] });
        if (values.length === 0) pending.delete(name);
      }
      this.#write(
        JSON.stringify({
          _aws: {
            Timestamp: this.#now(),
            CloudWatchMetrics: [{ Namespace: METRICS_NAMESPACE, Dimensions: dimensions, Metrics: definitions }],
          },
          ...document,
        }),
      );
    }
  }
}

/** One EMF document's handoff metrics, as `MetricsRecorder.flush` wrote them. */
export interface MetricDocument {
  /** Epoch ms the document was written at. */
  readonly timestampMs: number;
  /** The endpoint the document's metrics are about; absent for the service's own (no endpoint). */
  readonly endpoint?: string;
  readonly values: Partial<Record<MetricName, readonly number[]>>;
}

/**
 * Reads back a line `MetricsRecorder.flush` wrote (the sandbox collects its workers' metrics this
 * way): undefined for any other line, including EMF documents of another namespace or service.
 */
export function readMetricDocument(line: string, service: string = SERVICE_NAME): MetricDocument | undefined {
  if (!line.startsWith('{"_aws"')) return undefined;
  let document: Record<string, unknown>;
  try {
    document = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const aws = document._aws as { Timestamp?: unknown; CloudWatchMetrics?: { Namespace?: unknown; Metrics?: { Name?: unknown }[] }[] };
  const directive = aws?.CloudWatchMetrics?.[0];
  if (typeof aws?.Timestamp !== 'number' || directive?.Namespace !== METRICS_NAMESPACE || document.Service !== service) {
    return undefined;
  }
  const values: Partial<Record<MetricName, readonly number[]>> = {};
  for (const { Name } of directive.Metrics ?? []) {
    if (typeof Name !== 'string' || !Object.hasOwn(METRICS, Name)) continue;
    const raw = document[Name];
    const list = (Array.isArray(raw) ? raw : [raw]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    values[Name as MetricName] = list;
  }
  const endpoint = document[ENDPOINT_DIMENSION];
  return { timestampMs: aws.Timestamp, ...(typeof endpoint === 'string' ? { endpoint } : {}), values };
}
