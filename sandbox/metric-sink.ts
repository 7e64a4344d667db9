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
 * endpoint seen then; and, for the console's per-minute chart (`readMinutes`), each minute's
 * `Delivered` and `Attempts` for the whole 24 hours, as CloudWatch keeps one-minute data. The
 * file is rewritten whole (written, then renamed: a reader never sees half a file), at most twice
 * a second, mode 0600, and removed when the sandbox stops, as the state file is.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { readMetricDocument } from '../lib/observability';
import {
  MetricsUnavailableError,
  type MetricsReader,
  type MetricsReadOptions,
  type MetricsWindow,
  type DeliveryMetrics,
  type MinuteMetrics,
} from '../lib/metrics/metrics-reader';
import {
  MetricBuckets,
  parseBucket,
  parseMinute,
  storedMinute,
  summarizeBuckets,
  type MetricBucket,
  type StoredMinute,
} from '../lib/metrics/metric-buckets';
import { minuteSeries } from '../lib/metrics/minute-series';

/** How long the sink keeps a minute's figures: `handoff stats --since` reaches this far back at most. */
export const SANDBOX_METRICS_RETENTION_MS = 24 * 60 * 60 * 1000;
/** A burst of documents is written once, this long after the first of them. */
const WRITE_DELAY_MS = 500;
/**
 * 2: with `endpoints`. A version 1 file (totals only) is still read. A bucket's `pendingAgeMax`
 * was added to version 2 later (a reader that does not know it ignores it); a bucket without it has
 * none to give. So were `minutes` and `endpointMinutes`: a file without them keeps no series.
 */
const FILE_VERSION = 2;

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
  /** Every document's `Delivered` and `Attempts`, minute by minute, the minutes that had any. */
  readonly minutes?: readonly StoredMinute[];
  /** Each endpoint's, the same way. */
  readonly endpointMinutes?: Readonly<Record<string, readonly StoredMinute[]>>;
}

/** Counts since the sandbox started (not bounded by the retention): the live counters' figures. */
export interface SinkTotals {
  readonly delivered: number;
}

export class MetricSink {
  readonly path: string;
  readonly #buckets = new MetricBuckets(SANDBOX_METRICS_RETENTION_MS);
  readonly #byEndpoint = new Map<string, MetricBuckets>();
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
    this.#buckets.add(document);
    if (document.endpoint !== undefined) {
      let buckets = this.#byEndpoint.get(document.endpoint);
      if (buckets === undefined) this.#byEndpoint.set(document.endpoint, (buckets = new MetricBuckets(SANDBOX_METRICS_RETENTION_MS)));
      buckets.add(document);
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
    const endpointMinutes: Record<string, StoredMinute[]> = {};
    for (const [endpoint, buckets] of this.#byEndpoint) {
      buckets.roll(nowMs);
      const list = buckets.list();
      const minutes = buckets.minutes();
      // An endpoint with nothing in the last 24 h (removed, say) is forgotten.
      if (list.length === 0 && minutes.length === 0) {
        this.#byEndpoint.delete(endpoint);
        continue;
      }
      endpoints[endpoint] = list;
      endpointMinutes[endpoint] = minutes.map(storedMinute);
    }
    const file: MetricsFile = {
      version: FILE_VERSION,
      retentionMs: SANDBOX_METRICS_RETENTION_MS,
      buckets: this.#buckets.list(),
      endpoints,
      minutes: this.#buckets.minutes().map(storedMinute),
      endpointMinutes,
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
   * oldest message received is null when none was, or when the file's buckets keep no `pendingAgeMax`.
   */
  async read(window: MetricsWindow, options: MetricsReadOptions = {}): Promise<DeliveryMetrics> {
    const file = this.#file();
    let buckets: MetricBucket[];
    try {
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
    } catch (error) {
      throw this.#malformed(error);
    }
    return summarizeBuckets(buckets, window);
  }

  /**
   * Every minute of the window, the totals' or one endpoint's (zeros for an endpoint with no
   * figures in it), from the minutes the sink keeps; a minute older than it keeps is zeros too.
   */
  async readMinutes(window: MetricsWindow, options: MetricsReadOptions = {}): Promise<MinuteMetrics[]> {
    const file = this.#file();
    let minutes: MinuteMetrics[];
    try {
      // Written before the sink kept minutes (or version 1): its hours hold no minute's figures.
      if (file.minutes === undefined) throw new TypeError('it keeps no figures minute by minute: restart the sandbox');
      let list: unknown = file.minutes;
      if (options.endpoint !== undefined) {
        const endpoints = file.endpointMinutes;
        if (typeof endpoints !== 'object' || endpoints === null) throw new TypeError('expected endpointMinutes');
        list = Object.hasOwn(endpoints, options.endpoint) ? endpoints[options.endpoint] : [];
      }
      if (!Array.isArray(list)) throw new TypeError(`expected a list of minutes${options.endpoint === undefined ? '' : ` for endpoint ${options.endpoint}`}`);
      minutes = list.map(parseMinute);
    } catch (error) {
      throw this.#malformed(error);
    }
    return minuteSeries(window, minutes);
  }

  /** The file, its version and its totals' buckets checked. @throws MetricsUnavailableError */
  #file(): Partial<MetricsFile> & Pick<MetricsFile, 'version' | 'buckets'> {
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
    try {
      const file = JSON.parse(text) as Partial<MetricsFile>;
      if ((file.version !== 1 && file.version !== FILE_VERSION) || !Array.isArray(file.buckets)) {
        throw new TypeError(`expected version ${FILE_VERSION} with buckets`);
      }
      return file as Partial<MetricsFile> & Pick<MetricsFile, 'version' | 'buckets'>;
    } catch (error) {
      throw this.#malformed(error);
    }
  }

  #malformed(error: unknown): MetricsUnavailableError {
    return new MetricsUnavailableError(`the sandbox metrics file ${this.#path} is malformed (${(error as Error).message})`, { cause: error });
  }
}
