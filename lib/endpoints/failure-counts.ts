/**
 * A consumer's failed attempts per endpoint, counted and not yet on the registry item
 * (docs/contract.md §20; health-tracker.ts writes them): those waiting for the next flush, those a
 * flush in flight is adding, and when the next flush is due (FLUSH_INTERVAL_MS after the last
 * began). Bookkeeping only: no write is made here.
 */
import type { Logger } from '../observability';
import type { Endpoint } from './endpoint';
import { FLUSH_INTERVAL_MS, type EndpointHealth } from './health-rules';

/** Failed attempts counted and not yet written: how many, since when (epoch ms), for which endpoint, and who logs their write. */
export interface Counted {
  readonly count: number;
  readonly sinceMs: number;
  readonly endpoint: Endpoint;
  readonly logger: Logger;
}

export class FailureCounts {
  readonly #waiting = new Map<string, Counted>();
  readonly #flushing = new Map<string, { readonly counted: Counted; readonly written: Promise<EndpointHealth | undefined> }>();
  readonly #flushedAt = new Map<string, number>();

  /** One failed attempt, for the next flush. */
  add(endpoint: Endpoint, nowMs: number, logger: Logger): void {
    const waiting = this.#waiting.get(endpoint.name);
    this.#waiting.set(endpoint.name, { count: (waiting?.count ?? 0) + 1, sinceMs: waiting?.sinceMs ?? nowMs, endpoint, logger });
  }

  /** Counts a write did not take, back with those waiting: a write that fails loses no count. */
  putBack(counted: Counted): void {
    const name = counted.endpoint.name;
    const later = this.#waiting.get(name);
    this.#waiting.set(name, { ...(later ?? counted), count: counted.count + (later?.count ?? 0), sinceMs: Math.min(counted.sinceMs, later?.sinceMs ?? Infinity) });
  }

  /** Drops what waits (a recovery clears the item's count anyway). */
  drop(name: string): void {
    this.#waiting.delete(name);
  }

  /** `health` with the counts being written and those waiting added: the run begun at the first of them if none is known. */
  over(name: string, health: EndpointHealth): EndpointHealth {
    return withCounted(withCounted(health, this.#flushing.get(name)?.counted), this.#waiting.get(name));
  }

  /** Whether a flush may begin: none in flight, and the last began FLUSH_INTERVAL_MS ago. */
  due(name: string, nowMs: number): boolean {
    return !this.#flushing.has(name) && nowMs - (this.#flushedAt.get(name) ?? -Infinity) >= FLUSH_INTERVAL_MS;
  }

  /** Those waiting whose flush is due. */
  dueNow(nowMs: number): Counted[] {
    return [...this.#waiting.values()].filter((counted) => this.due(counted.endpoint.name, nowMs));
  }

  /** The flush in flight, to share. */
  inFlight(name: string): Promise<EndpointHealth | undefined> | undefined {
    return this.#flushing.get(name)?.written;
  }

  /** Begins a flush at `nowMs` of what waits, made by `write`; undefined when nothing waits. */
  flush(name: string, nowMs: number, write: (counted: Counted) => Promise<EndpointHealth | undefined>): Promise<EndpointHealth | undefined> | undefined {
    const counted = this.#waiting.get(name);
    if (counted === undefined) return undefined;
    this.#waiting.delete(name);
    this.#flushedAt.set(name, nowMs);
    const written = write(counted);
    this.#flushing.set(name, { counted, written });
    return written;
  }

  /** The flush in flight was answered (or failed): its counts are the item's now (or waiting again). */
  flushed(name: string): void {
    this.#flushing.delete(name);
  }

  /** What waits, taken to be carried by another write (none while a flush is in flight: it waits for the next). */
  take(name: string): Counted | undefined {
    if (this.#flushing.has(name)) return undefined;
    const counted = this.#waiting.get(name);
    this.#waiting.delete(name);
    return counted;
  }
}

/** `health` with failures counted here added: the run begun at the first of them if none is known. */
export function withCounted(health: EndpointHealth, counted: Pick<Counted, 'count' | 'sinceMs'> | undefined): EndpointHealth {
  if (counted === undefined) return health;
  return { ...health, failures: health.failures + counted.count, failingSince: health.failingSince ?? counted.sinceMs };
}
