/**
 * The registry's endpoints by what they subscribe to (docs/contract.md §11): event type to names,
 * and the `*` subscribers, so routing an event looks at its type's subscribers alone, never every
 * endpoint. Kept from the copy of the registry (registry-copy.ts): a copy made from the one before
 * says what changed (`changesOf`), and only those endpoints are indexed again; any other new copy is
 * indexed whole. `match` is checked on the candidates by routing, as ever.
 */
import { ALL_EVENT_TYPES, type EndpointRecord } from './endpoint';
import { changesOf } from './registry-copy';

export class SubscriptionIndex<R extends EndpointRecord = EndpointRecord> {
  #records: readonly R[] | undefined;
  readonly #byName = new Map<string, R>();
  readonly #byType = new Map<string, Set<string>>();

  /** Takes the registry's copy: nothing to do for the copy already held. Returns the names whose record changed (all: undefined). */
  sync(records: readonly R[]): ReadonlySet<string> | undefined {
    if (records === this.#records) return new Set();
    const delta = changesOf(records);
    const incremental = delta !== undefined && this.#records !== undefined && delta.from === this.#records;
    this.#records = records;
    if (incremental) {
      for (const [name, record] of delta.changed) this.#set(name, record);
      return new Set(delta.changed.keys());
    }
    this.#byName.clear();
    this.#byType.clear();
    for (const record of records) this.#set(record.fields.name, record);
    return undefined;
  }

  get(name: string): R | undefined {
    return this.#byName.get(name);
  }

  names(): IterableIterator<string> {
    return this.#byName.keys();
  }

  /** The endpoints that may take an event of one of these types: their subscribers and the `*` ones (`match` not checked). */
  candidates(eventTypes: Iterable<string>): Set<string> {
    const names = new Set<string>(this.#byType.get(ALL_EVENT_TYPES));
    for (const type of eventTypes) for (const name of this.#byType.get(type) ?? []) names.add(name);
    return names;
  }

  #set(name: string, record: R | undefined): void {
    const before = this.#byName.get(name);
    for (const type of before?.fields.eventTypes ?? []) this.#byType.get(type)?.delete(name);
    if (record === undefined) {
      this.#byName.delete(name);
      return;
    }
    this.#byName.set(name, record);
    for (const type of record.fields.eventTypes) {
      let names = this.#byType.get(type);
      if (names === undefined) this.#byType.set(type, (names = new Set()));
      names.add(name);
    }
  }
}
