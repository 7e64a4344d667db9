/**
 * What an endpoint subscribes to (docs/contract.md §11): `subscribes` and `route`, and the registry's
 * endpoints by what they subscribe to, so routing an event
 * looks at the endpoints that may want it, never every endpoint: by event type (and the `*`
 * subscribers), and for an endpoint with a `match`, by one of its filters too (the first key in
 * order, under each of its values), since a platform's endpoints mostly share a few types and differ
 * by filter (`data.carrier`, a merchant's field). An event then finds its type's endpoints without a
 * filter, and those whose indexed filter holds its own value at that key.
 *
 * Kept from the copy of the registry (registry-copy.ts): a copy made from the one before says what
 * changed (`changesOf`), and only those endpoints are indexed again; any other new copy is indexed
 * whole. `match` is checked on the candidates by routing, as ever.
 */
import { TEST_STATUS, type ShipmentEvent } from '../event';
import type { Endpoint, EndpointRecord } from './endpoint';
import { ALL_EVENT_TYPES } from './field-schemas';
import { changesOf } from './registry-copy';

export class SubscriptionIndex<R extends EndpointRecord = EndpointRecord> {
  #records: readonly R[] | undefined;
  readonly #byName = new Map<string, R>();
  /** Index key (`type`, or `type` NUL `key` NUL JSON value) to names. */
  readonly #byKey = new Map<string, Set<string>>();
  /** The filter keys indexed, with how many endpoints each: those an event's values are looked up at. */
  readonly #filterKeys = new Map<string, number>();

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
    this.#byKey.clear();
    this.#filterKeys.clear();
    for (const record of records) this.#set(record.fields.name, record);
    return undefined;
  }

  get(name: string): R | undefined {
    return this.#byName.get(name);
  }

  names(): IterableIterator<string> {
    return this.#byName.keys();
  }

  /** The endpoints that may take one of these events: a superset of those whose subscription it passes (`match` not checked). */
  candidates(events: Iterable<ShipmentEvent>): Set<string> {
    const names = new Set<string>();
    const add = (key: string) => {
      for (const name of this.#byKey.get(key) ?? []) names.add(name);
    };
    for (const event of events) {
      for (const type of [`shipment.${event.status}`, ALL_EVENT_TYPES]) {
        add(type);
        for (const filter of this.#filterKeys.keys()) add(filterKey(type, filter, fieldAt(event, filter)));
      }
    }
    return names;
  }

  #set(name: string, record: R | undefined): void {
    const before = this.#byName.get(name);
    if (before !== undefined) {
      for (const key of keysOf(before)) this.#byKey.get(key)?.delete(name);
      const filter = indexedFilter(before);
      if (filter !== undefined) this.#count(filter, -1);
    }
    if (record === undefined) {
      this.#byName.delete(name);
      return;
    }
    this.#byName.set(name, record);
    for (const key of keysOf(record)) {
      let names = this.#byKey.get(key);
      if (names === undefined) this.#byKey.set(key, (names = new Set()));
      names.add(name);
    }
    const filter = indexedFilter(record);
    if (filter !== undefined) this.#count(filter, 1);
  }

  #count(filter: string, by: number): void {
    const count = (this.#filterKeys.get(filter) ?? 0) + by;
    if (count > 0) this.#filterKeys.set(filter, count);
    else this.#filterKeys.delete(filter);
  }
}

/** The filter an endpoint is indexed by: the first key of its `match`, in order (none: by type alone). */
function indexedFilter(record: EndpointRecord): string | undefined {
  const keys = Object.keys(record.fields.match ?? {});
  return keys.length === 0 ? undefined : keys.sort()[0];
}

/** Where an endpoint is indexed: under each of its types, or under each type and value of its indexed filter. */
function keysOf(record: EndpointRecord): string[] {
  const filter = indexedFilter(record);
  if (filter === undefined) return [...record.fields.eventTypes];
  const values = record.fields.match![filter]!;
  return record.fields.eventTypes.flatMap((type) => values.map((value) => filterKey(type, filter, value)));
}

function filterKey(type: string, filter: string, value: unknown): string {
  return `${type}\u0000${filter}\u0000${JSON.stringify(value ?? null)}`;
}

/** Whether `endpoint` subscribes to `event`: its type is among `eventTypes`, and every `match` key holds one of its values. */
export function subscribes(endpoint: Pick<Endpoint, 'eventTypes' | 'match'>, event: ShipmentEvent): boolean {
  // A test event is addressed to one endpoint (sealed), never routed to subscribers, even of '*'.
  if (event.status === TEST_STATUS) return false;
  const type = `shipment.${event.status}`;
  if (!endpoint.eventTypes.includes(ALL_EVENT_TYPES) && !endpoint.eventTypes.includes(type)) return false;
  for (const [path, values] of Object.entries(endpoint.match)) {
    const value = fieldAt(event, path);
    if (!values.some((wanted) => wanted === value)) return false;
  }
  return true;
}

/**
 * The endpoints an event is delivered to: every one, enabled or disabled, that subscribes to it
 * (a disabled one parks its delivery), in name order so every consumer routes alike.
 */
export function route<E extends Pick<Endpoint, 'name' | 'eventTypes' | 'match'>>(endpoints: readonly E[], event: ShipmentEvent): E[] {
  return endpoints.filter((endpoint) => subscribes(endpoint, event)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The value at a dotted path of the event (`data.carrier`), own properties only; undefined where there is none. */
export function fieldAt(event: ShipmentEvent, path: string): unknown {
  let value: unknown = event;
  for (const part of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}
