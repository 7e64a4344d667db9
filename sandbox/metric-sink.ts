/**
 * The sandbox's own metric sink, its stand-in for CloudWatch: the consumer writes its metrics as
 * EMF documents on stdout (lib/observability.ts) in the sandbox's workers as in Lambda; the
 * sandbox hands each worker line to `MetricSink.accept`, which adds the documents to time
 * buckets (lib/metrics/metric-buckets.ts) and keeps them in a file next to the state file for
 * `handoff stats` (`SandboxMetricsReader`): the totals of every document, and each endpoint's own
 * from the documents that carry its `Endpoint` (a delivery's metrics), as CloudWatch keeps the
 * `Service` and `Service, Endpoint` dimension sets. Beside each bucket's counts, the largest
 * `PendingAge` (seconds a received message had been on the queue) in the same minute or hour, as
 * CloudWatch's `Maximum` statistic: the oldest message received. Bounded at any traffic: a bucket
 * per minute for the last hour, per hour before, 24 hours kept, for the totals and for each
 * endpoint seen then. The file is rewritten whole (written, then renamed: a reader never sees half
 * a file), at most twice a second, mode 0600, and removed when the sandbox stops, as the state
 * file is.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { readMetricDocument } from '../lib/observability';
import {
  MetricsUnavailableError,
  type MetricsReader,
  type MetricsReadOptions,
  type MetricsWindow,
  type WindowMetrics,
} from '../lib/metrics/metrics-reader';
import { HOUR_MS, MetricBuckets, MINUTE_MS, parseBucket, summarizeBuckets, type MetricBucket } from '../lib/metrics/metric-buckets';

/** How long the sink keeps a minute's figures: `handoff stats --since` reaches this far back at most. */
export const SANDBOX_METRICS_RETENTION_MS = 24 * 60 * 60 * 1000;
/** A burst of documents is written once, this long after the first of them. */
const WRITE_DELAY_MS = 500;
/**
 * 2: with `endpoints`. A version 1 file (totals only) is still read. `pendingAge` was added to
 * version 2 later (a reader that does not know it ignores it); a file without it has none to give.
 */
const FILE_VERSION = 2;
/** `PendingAge` is published in seconds (lib/observability.ts). */
const PENDING_AGE_UNIT_MS = 1000;

/** The metrics file of the sandbox whose state file is `stateFile`: beside it, named after it. */
export function metricsFileFor(stateFile: string): string {
  return join(dirname(stateFile), `${basename(stateFile).replace(/\.json$/, '')}.metrics.json`);
}

interface MetricsFile {
  readonly version: number;
  readonly retentionMs: number;
  /** Every document's figures: the totals. */
  readonly buckets: readonly MetricBucket[];
  /** Each endpoint's figures, from the documents carrying its name. */
  readonly endpoints: Readonly<Record<string, readonly MetricBucket[]>>;
  /** The largest `PendingAge` per bucket: the totals' and each endpoint's. */
  readonly pendingAge?: { readonly buckets: readonly MaximumBucket[]; readonly endpoints: Readonly<Record<string, readonly MaximumBucket[]>> };
}

/** The largest value of one metric in a minute (the last hour) or an hour (before), as MetricBuckets keeps its counts. */
export interface MaximumBucket {
  /** Epoch ms of the bucket's start: a whole minute, or a whole hour for an hour's bucket. */
  readonly startMs: number;
  /** `MINUTE_MS` or `HOUR_MS`. */
  readonly spanMs: number;
  readonly max: number;
}

/**
 * One metric's maxima in time buckets, in bounded memory: the same buckets as `MetricBuckets` (a
 * minute's for the last hour, then an hour's, each a single number), kept for `retentionMs`.
 */
export class MaximumBuckets {
  readonly #retentionMs: number;
  readonly #buckets = new Map<number, MaximumBucket>();

  constructor(retentionMs: number) {
    this.#retentionMs = retentionMs;
  }

  /** Keeps the largest of `values` in the bucket of the minute `timestampMs` is in (nothing for no values). */
  add(timestampMs: number, values: readonly number[]): void {
    if (values.length === 0) return;
    this.#merge(Math.floor(timestampMs / MINUTE_MS) * MINUTE_MS, MINUTE_MS, Math.max(...values));
  }

  /** As `MetricBuckets.roll`: minutes older than an hour fold into their hour; buckets past the retention go. */
  roll(nowMs: number): void {
    for (const bucket of [...this.#buckets.values()]) {
      if (bucket.spanMs === MINUTE_MS && bucket.startMs + MINUTE_MS <= nowMs - HOUR_MS) {
        this.#buckets.delete(bucket.startMs);
        this.#merge(Math.floor(bucket.startMs / HOUR_MS) * HOUR_MS, HOUR_MS, bucket.max);
      }
    }
    for (const bucket of [...this.#buckets.values()]) {
      if (bucket.startMs + bucket.spanMs <= nowMs - this.#retentionMs) this.#buckets.delete(bucket.startMs);
    }
  }

  /** Oldest first. */
  list(): MaximumBucket[] {
    return [...this.#buckets.values()].sort((a, b) => a.startMs - b.startMs);
  }

  /** A minute's value at the start of an hour already folded (a late document) goes into that hour's bucket. */
  #merge(startMs: number, spanMs: number, max: number): void {
    const existing = this.#buckets.get(startMs);
    this.#buckets.set(startMs, existing === undefined ? { startMs, spanMs, max } : { ...existing, max: Math.max(existing.max, max) });
  }
}

/** The largest value of the buckets that overlap the window (widened to their edges, as `summarizeBuckets`); null when none does. */
export function maximumOver(buckets: readonly MaximumBucket[], window: MetricsWindow): number | null {
  const inWindow = buckets.filter((b) => b.startMs + b.spanMs > window.startMs && b.startMs < window.endMs);
  return inWindow.length === 0 ? null : Math.max(...inWindow.map((b) => b.max));
}

/** A maximum's bucket read back from JSON, or a TypeError naming what is wrong with it. */
export function parseMaximumBucket(value: unknown): MaximumBucket {
  const b = value as { startMs?: unknown; spanMs?: unknown; max?: unknown } | null;
  if (typeof b !== 'object' || b === null || typeof b.startMs !== 'number' || typeof b.max !== 'number' || !Number.isFinite(b.max) || b.max < 0) {
    throw new TypeError('a maximum bucket needs startMs and a max of 0 or more');
  }
  if (b.spanMs !== MINUTE_MS && b.spanMs !== HOUR_MS) throw new TypeError(`maximum bucket ${b.startMs}: spanMs must be a minute or an hour`);
  return { startMs: b.startMs, spanMs: b.spanMs, max: b.max };
}

/** Counts since the sandbox started (not bounded by the retention): the live counters' figures. */
export interface SinkTotals {
  readonly delivered: number;
}

export class MetricSink {
  readonly path: string;
  readonly #buckets = new MetricBuckets(SANDBOX_METRICS_RETENTION_MS);
  readonly #byEndpoint = new Map<string, MetricBuckets>();
  readonly #pendingAge = new MaximumBuckets(SANDBOX_METRICS_RETENTION_MS);
  readonly #pendingAgeByEndpoint = new Map<string, MaximumBuckets>();
  readonly #now: () => number;
  #delivered = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * Starts an empty file at `path`, replacing one a killed sandbox may have left, and creates its
   * directory 0700 when missing (the state file's directory, which is the user's own).
   */
  constructor(options: { path: string; now?: () => number }) {
    this.path = options.path;
    this.#now = options.now ?? Date.now;
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 });
    this.#write();
  }

  /** Takes a worker's output line; returns whether it was a handoff metric document. */
  accept(line: string): boolean {
    const document = readMetricDocument(line);
    if (document === undefined || this.#closed) return document !== undefined;
    const pendingAge = document.values.PendingAge ?? [];
    this.#buckets.add(document);
    this.#pendingAge.add(document.timestampMs, pendingAge);
    if (document.endpoint !== undefined) {
      let buckets = this.#byEndpoint.get(document.endpoint);
      if (buckets === undefined) this.#byEndpoint.set(document.endpoint, (buckets = new MetricBuckets(SANDBOX_METRICS_RETENTION_MS)));
      buckets.add(document);
      if (pendingAge.length > 0) {
        let maxima = this.#pendingAgeByEndpoint.get(document.endpoint);
        if (maxima === undefined) this.#pendingAgeByEndpoint.set(document.endpoint, (maxima = new MaximumBuckets(SANDBOX_METRICS_RETENTION_MS)));
        maxima.add(document.timestampMs, pendingAge);
      }
    }
    for (const value of document.values.Delivered ?? []) this.#delivered += value;
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#write();
    }, WRITE_DELAY_MS).unref();
    return true;
  }

  totals(): SinkTotals {
    return { delivered: this.#delivered };
  }

  /** Writes what is pending now (a test or a reader in this process wants it at once). */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#closed) this.#write();
  }

  /** Stops writing and removes the file. */
  close(): void {
    clearTimeout(this.#timer);
    this.#closed = true;
    rmSync(this.path, { force: true });
  }

  #write(): void {
    const nowMs = this.#now();
    this.#buckets.roll(nowMs);
    const endpoints: Record<string, MetricBucket[]> = {};
    for (const [endpoint, buckets] of this.#byEndpoint) {
      buckets.roll(nowMs);
      const list = buckets.list();
      // An endpoint with nothing in the last 24 h (removed, say) is forgotten.
      if (list.length === 0) this.#byEndpoint.delete(endpoint);
      else endpoints[endpoint] = list;
    }
    this.#pendingAge.roll(nowMs);
    const pendingAgeEndpoints: Record<string, MaximumBucket[]> = {};
    for (const [endpoint, maxima] of this.#pendingAgeByEndpoint) {
      maxima.roll(nowMs);
      const list = maxima.list();
      if (list.length === 0) this.#pendingAgeByEndpoint.delete(endpoint);
      else pendingAgeEndpoints[endpoint] = list;
    }
    const file: MetricsFile = {
      version: FILE_VERSION,
      retentionMs: SANDBOX_METRICS_RETENTION_MS,
      buckets: this.#buckets.list(),
      endpoints,
      pendingAge: { buckets: this.#pendingAge.list(), endpoints: pendingAgeEndpoints },
    };
    const temporary = join(dirname(this.path), `.${basename(this.path)}.${process.pid}.tmp`);
    writeFileSync(temporary, JSON.stringify(file), { mode: 0o600 });
    renameSync(temporary, this.path);
  }
}

/** `MetricsReader` over a running sandbox's metrics file. */
export class SandboxMetricsReader implements MetricsReader {
  readonly source: string;
  readonly percentileMethod = 'nearest rank over 2%-wide histogram bins (at most 2% above the exact value)';
  readonly maxWindowMs = SANDBOX_METRICS_RETENTION_MS;
  readonly #path: string;

  constructor(options: { path: string }) {
    this.#path = options.path;
    this.source = `the sandbox's metric sink (${options.path}, keeps ${SANDBOX_METRICS_RETENTION_MS / 3_600_000} h)`;
  }

  /**
   * The totals over the window, or one endpoint's (zero for an endpoint with no figures in it); the
   * oldest message received is null when none was, or when the file keeps no `pendingAge`.
   */
  async read(window: MetricsWindow, options: MetricsReadOptions = {}): Promise<WindowMetrics> {
    let text: string;
    try {
      text = readFileSync(this.#path, 'utf8');
    } catch (error) {
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      throw new MetricsUnavailableError(
        missing
          ? `no sandbox metrics file ${this.#path}: the sandbox writes it while it runs`
          : `cannot read the sandbox metrics file ${this.#path}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    let buckets: MetricBucket[];
    let maxima: MaximumBucket[];
    try {
      const file = JSON.parse(text) as Partial<MetricsFile>;
      if ((file.version !== 1 && file.version !== FILE_VERSION) || !Array.isArray(file.buckets)) {
        throw new TypeError(`expected version ${FILE_VERSION} with buckets`);
      }
      if (options.endpoint === undefined) {
        buckets = file.buckets.map(parseBucket);
      } else {
        if (file.version === 1) throw new TypeError('version 1 keeps no figures per endpoint: restart the sandbox');
        const endpoints = file.endpoints;
        if (typeof endpoints !== 'object' || endpoints === null) throw new TypeError('expected endpoints');
        const list: unknown = Object.hasOwn(endpoints, options.endpoint) ? endpoints[options.endpoint] : [];
        if (!Array.isArray(list)) throw new TypeError(`endpoint ${options.endpoint}: expected a list of buckets`);
        buckets = list.map(parseBucket);
      }
      maxima = pendingAgeBuckets(file.pendingAge, options.endpoint);
    } catch (error) {
      throw new MetricsUnavailableError(`the sandbox metrics file ${this.#path} is malformed (${(error as Error).message})`, { cause: error });
    }
    const oldest = maximumOver(maxima, window);
    return { ...summarizeBuckets(buckets, window), oldestPendingAgeMs: oldest === null ? null : oldest * PENDING_AGE_UNIT_MS };
  }
}

/** The file's `PendingAge` maxima: the totals', or one endpoint's; none from a file without them. */
function pendingAgeBuckets(pendingAge: unknown, endpoint: string | undefined): MaximumBucket[] {
  if (pendingAge === undefined) return [];
  const p = pendingAge as { buckets?: unknown; endpoints?: unknown } | null;
  if (typeof p !== 'object' || p === null || !Array.isArray(p.buckets) || typeof p.endpoints !== 'object' || p.endpoints === null) {
    throw new TypeError('pendingAge needs buckets and endpoints');
  }
  if (endpoint === undefined) return p.buckets.map(parseMaximumBucket);
  const endpoints = p.endpoints as Record<string, unknown>;
  const list: unknown = Object.hasOwn(endpoints, endpoint) ? endpoints[endpoint] : [];
  if (!Array.isArray(list)) throw new TypeError(`pendingAge of endpoint ${endpoint}: expected a list of buckets`);
  return list.map(parseMaximumBucket);
}
