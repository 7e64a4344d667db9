/**
 * A consumer container's copy of the registry, kept current by change (docs/contract.md §11, §20):
 * its cold start reads every item once; each refresh after that asks the change index for the names
 * changed since a little before the newest change the copy holds, and reads only those whose change
 * differs from the copy's. With nothing changed a refresh is one empty Query of a keys-only index:
 * 0.5 read units whatever the number of endpoints.
 *
 * Why it misses nothing: a change's time (`changedAt`) is its writer's clock, which SigV4 keeps
 * within 5 minutes of AWS's, and the index shows it a moment late. A change the last successful
 * refresh did not see was written after that refresh began (less the index's lag), so it is stamped
 * at most 5 minutes before then. Each refresh asks from CHANGE_LOOKBACK_MS (15 minutes) before the
 * last successful refresh began: the window slides with the refreshes, not with the newest change,
 * so a quiet registry answers an empty Query even after a bulk load (in the 15 minutes after one,
 * the load's keys come back with each answer, and are read from the table no more). A copy that went
 * longer than FULL_READ_AFTER_MS without a successful refresh reads everything again instead.
 *
 * A change is known by its stamp differing from the copy's, so stamps carry a random thousandth of a
 * millisecond (dynamodb-registry-table.ts `changeStamp`): two changes of one item in one millisecond
 * share a stamp once in a thousand, not always.
 *
 * It hands out a new array only when something changed, holding the same record objects for the
 * endpoints that did not: routing and the health tracker compare identity to know there is nothing
 * to do, and routing applies the changed names alone (`changesOf`).
 */
import type { EndpointRegistryError } from '../errors';
import type { HealthRecord } from './health-rules';
import { withUnreadable, type ChangeMark, type RegistryChanges, type RegistryEntry } from './registry';

/** How far before the newest change a refresh asks from: the writers' clock skew (at most 5 min) and the index's lag, with room. */
export const CHANGE_LOOKBACK_MS = 15 * 60_000;
/** The most a writer's clock may be behind AWS's and still sign a request (SigV4). */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;
/** Without a successful refresh for this long, the next reads every item again: a change may have left the window. */
export const FULL_READ_AFTER_MS = CHANGE_LOOKBACK_MS - MAX_CLOCK_SKEW_MS - 60_000;

/** How far back before its last successful refresh a copy asks the change index, and after how long without one it reads everything. */
export interface ChangeWindow {
  readonly lookbackMs: number;
  readonly fullReadAfterMs: number;
}

/** In AWS: writers' clocks may be minutes off (SigV4 refuses beyond 5), and the index shows a change a moment late. */
export const CHANGE_WINDOW: ChangeWindow = { lookbackMs: CHANGE_LOOKBACK_MS, fullReadAfterMs: FULL_READ_AFTER_MS };

/**
 * On one machine (the sandbox: its consumers, its recovery timer and the command read one clock, and
 * the emulator's indexes have no lag): back far enough for a write stamped just before a refresh
 * began and landing after it, so a bulk load's keys stop coming back within seconds, not 15 minutes.
 */
export const ONE_CLOCK_CHANGE_WINDOW: ChangeWindow = { lookbackMs: 30_000, fullReadAfterMs: FULL_READ_AFTER_MS };

/** Where a refresh asks the change index from: the lookback before the last successful refresh began. */
export function changesSince(lastRefreshStartedAt: number, window: ChangeWindow = CHANGE_WINDOW): number {
  return lastRefreshStartedAt - window.lookbackMs;
}

/** What changed between an array the copy handed out and the one before it. */
export interface CopyChanges<R> {
  readonly from: readonly R[];
  /** The endpoints added, changed or removed, by name: each one's record now (none: removed, or it cannot be used). */
  readonly changed: ReadonlyMap<string, R | undefined>;
}

const CHANGES = new WeakMap<object, CopyChanges<unknown>>();

/** What changed since the array before `records`, when the copy made it from that one. */
export function changesOf<R>(records: readonly R[]): CopyChanges<R> | undefined {
  return CHANGES.get(records) as CopyChanges<R> | undefined;
}

export class RegistryCopy {
  readonly #source: RegistryChanges;
  readonly #now: () => number;
  readonly #window: ChangeWindow;
  /** Every item the copy holds (readable or not), by name. */
  #entries = new Map<string, RegistryEntry>();
  /** Endpoints removed, with their tombstone's change, while it can still show in the window. */
  readonly #gone = new Map<string, number>();
  #records: HealthRecord[] | undefined;
  /** When the last successful refresh began. */
  #refreshedAt = 0;

  constructor(source: RegistryChanges, options: { readonly now?: () => number; readonly window?: ChangeWindow } = {}) {
    this.#source = source;
    this.#now = options.now ?? Date.now;
    this.#window = options.window ?? CHANGE_WINDOW;
  }

  /**
   * The registry's endpoints as of this refresh (the items that cannot be used travel with the array:
   * `unreadableOf`). The same array as the last call's when nothing changed.
   * @throws EndpointRegistryError when the registry cannot be read (the copy is kept as it was)
   */
  async list(): Promise<HealthRecord[]> {
    const startedAt = this.#now();
    if (this.#records === undefined || startedAt - this.#refreshedAt > this.#window.fullReadAfterMs) {
      this.#apply(await this.#source.readAll(), true);
    } else {
      const since = changesSince(this.#refreshedAt, this.#window);
      const stale = (await this.#source.changedSince(since)).filter((mark) => this.#known(mark) !== mark.changedAt);
      if (stale.length > 0) this.#apply(await this.#source.readNames(stale.map((mark) => mark.name)), false);
      for (const [name, changedAt] of this.#gone) if (changedAt <= since) this.#gone.delete(name);
    }
    this.#refreshedAt = startedAt;
    return this.#records!;
  }

  /** The change the copy holds for an endpoint: its item's, its tombstone's, or none. */
  #known(mark: ChangeMark): number | undefined {
    return this.#entries.get(mark.name)?.changedAt ?? this.#gone.get(mark.name);
  }

  /** Takes what was read; `complete`: every item, so a name not among them is gone. */
  #apply(read: readonly RegistryEntry[], complete: boolean): void {
    const names = new Map<string, HealthRecord | undefined>();
    const entries = complete ? new Map<string, RegistryEntry>() : this.#entries;
    for (const entry of read) {
      const before = this.#entries.get(entry.name);
      if (entry.record === undefined && entry.unreadable === undefined) {
        if (entries.delete(entry.name) || before !== undefined) names.set(entry.name, undefined);
        if (entry.changedAt > 0) this.#gone.set(entry.name, entry.changedAt);
        continue;
      }
      this.#gone.delete(entry.name);
      // The same change read again (a stale index entry, a full read) keeps the record the copy holds.
      const same = before !== undefined && before.changedAt === entry.changedAt && entry.changedAt > 0 && (before.record === undefined) === (entry.record === undefined);
      entries.set(entry.name, same ? before : entry);
      if (!same) names.set(entry.name, entry.record);
    }
    if (complete) {
      for (const name of this.#entries.keys()) if (!entries.has(name)) names.set(name, undefined);
      this.#entries = entries;
    }
    if (this.#records !== undefined && names.size === 0) return;
    const records: HealthRecord[] = [];
    const unreadable: EndpointRegistryError[] = [];
    for (const entry of this.#entries.values()) {
      if (entry.record !== undefined) records.push(entry.record);
      else if (entry.unreadable !== undefined) unreadable.push(entry.unreadable);
    }
    if (this.#records !== undefined) CHANGES.set(records, { from: this.#records, changed: names });
    this.#records = withUnreadable(records, unreadable);
  }
}
