/**
 * The endpoint registry (docs/contract.md §11): where endpoints live, written by `handoff endpoint`
 * and read by the consumer. This file is the port; `dynamodb-registry.ts` implements it on a table
 * of the stack's (the sandbox runs the same adapter on its emulator), so the command works alike on
 * both. A secret given as a `whsec_…` value is stored encrypted with the registry's KMS key (the
 * sandbox: its own key) when the adapter is given a cipher, as `handoff endpoint` gives it
 * (lib/endpoints/secret-cipher.ts), and the table itself is encrypted at rest with that key; only the
 * consumer decrypts a secret (lib/routing.ts, when a message first goes to its endpoint), never a
 * listing the command prints (`EndpointRecord` as the command shows it drops `secret`). A consumer
 * keeps its copy current by change (`RegistryChanges`, registry-copy.ts).
 */
import type { Endpoint, EndpointFields, EndpointRecord, StateChange } from './endpoint';
import type { HealthRecord } from './health-rules';
import { quoted } from '../terminal';
import { EndpointRegistryError } from '../errors';

export interface EndpointRegistry {
  /** Every endpoint, secrets included, with its health (lib/endpoints/health-rules.ts), in one read of the whole table (the consumer reads by change instead: `RegistryChanges`). */
  list(): Promise<HealthRecord[]>;
  get(name: string): Promise<HealthRecord | undefined>;
  /** Adds an endpoint, enabled. @throws EndpointConflictError when the name is taken */
  add(fields: EndpointFields, nowMs: number): Promise<EndpointRecord>;
  /**
   * Replaces an endpoint's fields (its state is kept); the caller merges the changes into the
   * current fields and passes the `updatedAt` it read, so a concurrent change is refused, not lost.
   * @throws EndpointNotFoundError, EndpointConflictError
   */
  update(fields: EndpointFields, expectedUpdatedAt: number, nowMs: number): Promise<EndpointRecord>;
  /**
   * Enables or disables, recording who, why and when. Enabling begins the release of its parked
   * deliveries at up to `resumeRate` per second (lib/resume.ts); disabling ends one in progress.
   * @throws EndpointNotFoundError
   */
  setState(name: string, state: EndpointRecord['state'], change: StateChange, resumeRate?: number): Promise<EndpointRecord>;
  /** @throws EndpointNotFoundError */
  remove(name: string): Promise<void>;
}

/**
 * The registry as a consumer's copy reads it (registry-copy.ts): every item once, then what changed.
 * `changedAt` is the item's last change consumers must see (0: written before changes were marked).
 */
export interface RegistryChanges {
  /** Every endpoint, and every item that cannot be used. */
  readAll(): Promise<RegistryEntry[]>;
  /** The names changed after `sinceMs`, each with its change's time (eventually consistent: a change may show late). */
  changedSince(sinceMs: number): Promise<ChangeMark[]>;
  /** The named items as they stand (consistent): a removed or missing one comes back with neither `record` nor `unreadable`. */
  readNames(names: readonly string[]): Promise<RegistryEntry[]>;
}

export interface ChangeMark {
  readonly name: string;
  readonly changedAt: number;
}

/** One item as read: its record, why it cannot be used, or neither (removed). */
export interface RegistryEntry extends ChangeMark {
  readonly record?: HealthRecord;
  readonly unreadable?: EndpointRegistryError;
}

/** A page of the registry's endpoints (`endpoint list --limit`): `next` is an opaque cursor, absent on the last page. */
export interface RegistryPage {
  readonly items: EndpointRecord[];
  readonly next?: string;
}

export interface RegistryPageOptions {
  /** 1–100 (default 100). */
  readonly limit?: number;
  readonly cursor?: string;
  readonly owner?: string;
  readonly state?: EndpointRecord['state'];
}

/** What an endpoint subscribes to: all routing needs to know whether an event goes to it. */
export type Subscription = Pick<Endpoint, 'eventTypes' | 'match'>;

/**
 * Where a `list` whose unreadable items were left out (`onUnreadable`) keeps them: on the array it
 * returns, so they travel with that read through every cache that hands the same array on
 * (`cachedEndpoints`, the health tracker's listing) to routing, which holds their deliveries.
 */
const UNREADABLE = Symbol('handoff.unreadableItems');

/** Marks `records` as a read that left these items out. */
export function withUnreadable<R>(records: R[], unreadable: readonly EndpointRegistryError[]): R[] {
  if (unreadable.length > 0) Object.defineProperty(records, UNREADABLE, { value: unreadable, enumerable: false });
  return records;
}

/** The items a read of the registry left out because they could not be read (none for a read that did not say). */
export function unreadableOf(records: readonly unknown[]): readonly EndpointRegistryError[] {
  return (records as { [UNREADABLE]?: readonly EndpointRegistryError[] })[UNREADABLE] ?? [];
}

/** How long the consumer trusts its copy of the registry: changes reach new deliveries within this. */
export const ENDPOINTS_CACHE_MS = 15_000;

/**
 * The registry as the consumer reads it: one `list` per `ttlMs` (the consumer's: a refresh of its
 * copy, registry-copy.ts, one Query when nothing changed), shared by the concurrent callers of
 * a container. A failed first read fails its callers and is retried on the next call. While a copy
 * exists, a failed refresh keeps using it for another `ttlMs` before reading again: an outage of
 * the registry's table must not stop delivery to known endpoints, nor make every batch wait for
 * another failing read (the SDK's retries, a connection that hangs until its timeout).
 */
export function cachedEndpoints<R extends EndpointRecord = HealthRecord>(
  registry: { list(): Promise<R[]> },
  options: { ttlMs?: number; now?: () => number } = {},
): () => Promise<R[]> {
  const ttlMs = options.ttlMs ?? ENDPOINTS_CACHE_MS;
  const now = options.now ?? Date.now;
  let copy: { records: R[]; at: number } | undefined;
  let loading: Promise<R[]> | undefined;
  return () => {
    if (copy !== undefined && now() - copy.at < ttlMs) return Promise.resolve(copy.records);
    loading ??= registry
      .list()
      .then(
        (records) => {
          copy = { records, at: now() };
          return records;
        },
        (error: unknown) => {
          if (copy === undefined) throw error;
          copy = { records: copy.records, at: now() };
          return copy.records;
        },
      )
      .finally(() => {
        loading = undefined;
      });
    return loading;
  };
}
