/**
 * What one consumer container's reads of the endpoint registry cost (issue 21, docs/contract.md §20):
 * N endpoints seeded into a registry table on dynalite through the real adapter, then one container's
 * reader (CONTAINER_READERS: the copy kept by change, as the consumer reads, and the whole-table Scan
 * it read with before) run for a simulated
 * minute on an injected clock: its cold start, then a refresh every ENDPOINTS_CACHE_MS. Every request goes through the meter
 * (meter.ts), which bills each read from the items it returns (a Query of an index on the index's
 * entries, eventually consistent at half; a Scan page or a BatchGetItem item by item).
 *
 * Nothing changes during the minute. Two histories before it, for a reader that reads by change:
 * `quiet`, the endpoints added two hours before and the registry's last change (one endpoint's) an hour
 * before; `bulk`, all N added at once two hours before and nothing since. A reader that reads every item
 * costs the same after either.
 */
import { UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { cachedEndpoints, ENDPOINTS_CACHE_MS } from '../../lib/endpoints/registry';
import { RegistryCopy } from '../../lib/endpoints/registry-copy';
import { CHANGE_FEED, REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import type { DynamoDbUsage, Meter } from './meter';

/** The sizes measured; the 100,000 is derived from the two largest (`deriveRegistryFigures`). */
export const MEASURED_REGISTRY_SIZES = [10, 1_000, 10_000] as const;
export const DERIVED_REGISTRY_SIZE = 100_000;
/** A refresh at most one per this, as the consumer reads; a container-minute holds 60 s / this of them. */
export const REFRESH_MS = ENDPOINTS_CACHE_MS;
/** The target (issue 21): a refresh with nothing changed reads at most this, whatever the number of endpoints. */
export const REFRESH_TARGET_READ_UNITS = 1;

const HOUR_MS = 3_600_000;
const SEED_CONCURRENCY = 16;

/** A container's read of the registry: what the consumer calls before routing a batch. */
export type RegistryRead = () => Promise<readonly unknown[]>;

export interface ContainerReader {
  /** Its name in the report's rows. */
  readonly name: string;
  /** What the reader does, for the report. */
  readonly label: string;
  /** Whether its reads follow changes (a history before the minute can matter) or read every item. */
  readonly byChange: boolean;
  make(registry: DynamoDbEndpointRegistry, now: () => number): RegistryRead;
}

/** How the consumer read the registry before it read by change: every item, once per cache period. */
export const SCAN_READER: ContainerReader = {
  name: 'Scan',
  label: `the consumer's reader before it read by change: cachedEndpoints over list(), a consistent Scan of every item, at most once per ${ENDPOINTS_CACHE_MS / 1000} s`,
  byChange: false,
  make: (registry, now) => cachedEndpoints(registry, { ttlMs: ENDPOINTS_CACHE_MS, now }),
};

/**
 * How the consumer reads the registry (lib/consumer/consumer.ts `registryConsumer`): the copy kept by
 * change (lib/endpoints/registry-copy.ts), refreshed at most once per cache period.
 */
export const COPY_READER: ContainerReader = {
  name: 'RegistryCopy',
  label: `the consumer's: RegistryCopy (lib/endpoints/registry-copy.ts) under cachedEndpoints, every item at its cold start, then the change index's Query and the changed items, at most once per ${ENDPOINTS_CACHE_MS / 1000} s`,
  byChange: true,
  make: (registry, now) => cachedEndpoints(new RegistryCopy(registry, { now }), { ttlMs: ENDPOINTS_CACHE_MS, now }),
};

export const CONTAINER_READERS: readonly ContainerReader[] = [SCAN_READER, COPY_READER];

export type RegistryHistory = 'quiet' | 'bulk';

export interface RegistryReadFigures {
  readonly reader: string;
  readonly endpoints: number;
  readonly history: RegistryHistory;
  /** The mean size of an endpoint's item, bytes, as DynamoDB bills it. */
  readonly itemBytes: number;
  readonly coldStart: { readonly readUnits: number; readonly requests: number };
  readonly refreshes: number;
  /** The mean of the minute's refreshes. */
  readonly perRefresh: { readonly readUnits: number; readonly requests: number };
  readonly perMinuteReadUnits: number;
  /** Set when the row is not measured: how it was derived. */
  readonly derivedFrom?: string;
}

/** An endpoint as a platform has them: a merchant's URL, four event types, its secret by ARN. */
export function endpointFields(i: number): EndpointFields {
  const name = `merchant-${String(i).padStart(6, '0')}`;
  return {
    name,
    url: `https://hooks.${name}.example.com/handoff/webhooks`,
    eventTypes: ['shipment.in_transit', 'shipment.out_for_delivery', 'shipment.delivered', 'shipment.exception'],
    secret: `arn:aws:secretsmanager:us-east-1:111122223333:secret:handoff/${name}-AbCdEf`,
  };
}

/** Creates the table and adds `endpoints` endpoints through the adapter (straight to dynalite: not metered). */
export async function seedRegistry(direct: DynamoDBClient, tableName: string, endpoints: number, addedAtMs: number): Promise<void> {
  await createEndpointsTable(direct, tableName);
  const registry = new DynamoDbEndpointRegistry({ client: direct, tableName });
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < endpoints; i = next++) await registry.add(endpointFields(i), addedAtMs);
  };
  await Promise.all(Array.from({ length: Math.min(SEED_CONCURRENCY, endpoints) }, worker));
}

/**
 * Marks one endpoint as the registry's last change, at `changedAtMs` (straight to dynalite): the
 * history `quiet`. A reader by change then finds only it in any window that starts after the bulk.
 */
export async function markLastChange(direct: DynamoDBClient, tableName: string, changedAtMs: number): Promise<void> {
  const a = REGISTRY_SCHEMA.attributes;
  await direct.send(
    new UpdateItemCommand({
      TableName: tableName,
      Key: { [REGISTRY_SCHEMA.partitionKey]: { S: endpointFields(0).name } },
      UpdateExpression: 'SET #changedAt = :at, #feed = :feed',
      ExpressionAttributeNames: { '#changedAt': a.changedAt, '#feed': a.feed },
      ExpressionAttributeValues: { ':at': { N: String(changedAtMs) }, ':feed': { S: CHANGE_FEED } },
    }),
  );
}

/**
 * One container's minute on a seeded registry: the cold start at `startMs`, then a read every
 * REFRESH_MS until a minute has passed, each metered apart. `reading` is a client pointed at the meter.
 */
export async function measureContainerMinute(options: {
  readonly meter: Meter;
  readonly reading: DynamoDBClient;
  readonly tableName: string;
  readonly endpoints: number;
  readonly history: RegistryHistory;
  readonly startMs: number;
  readonly reader: ContainerReader;
}): Promise<RegistryReadFigures> {
  const { meter, startMs } = options;
  let clock = startMs;
  const registry = new DynamoDbEndpointRegistry({ client: options.reading, tableName: options.tableName });
  const read = options.reader.make(registry, () => clock);

  const cold = meter.dynamodb.start();
  const endpoints = await read();
  if (endpoints.length !== options.endpoints) throw new Error(`the container read ${endpoints.length} endpoints of ${options.endpoints}`);
  // Every reader's cold start reads every item: their mean size, as billed.
  const itemBytes = cold.itemsRead === 0 ? 0 : cold.itemBytesRead / cold.itemsRead;
  const refreshes: DynamoDbUsage[] = [];
  for (clock = startMs + REFRESH_MS; clock <= startMs + 60_000; clock += REFRESH_MS) {
    refreshes.push(meter.dynamodb.start());
    await read();
  }
  const sum = (pick: (u: DynamoDbUsage) => number) => refreshes.reduce((total, u) => total + pick(u), 0);
  return {
    reader: options.reader.name,
    endpoints: options.endpoints,
    history: options.history,
    itemBytes,
    coldStart: { readUnits: cold.readUnits, requests: cold.readRequests },
    refreshes: refreshes.length,
    perRefresh: { readUnits: sum((u) => u.readUnits) / refreshes.length, requests: sum((u) => u.readRequests) / refreshes.length },
    perMinuteReadUnits: sum((u) => u.readUnits),
  };
}

/**
 * Seeds a registry of `endpoints` with the history given, then measures a container's minute on it
 * with each reader, one after the other (a reader only reads).
 */
export async function measureRegistry(options: {
  readonly meter: Meter;
  readonly direct: DynamoDBClient;
  readonly reading: DynamoDBClient;
  readonly tableName: string;
  readonly endpoints: number;
  readonly history: RegistryHistory;
  readonly readers: readonly ContainerReader[];
}): Promise<RegistryReadFigures[]> {
  const addedAtMs = Date.now();
  await seedRegistry(options.direct, options.tableName, options.endpoints, addedAtMs);
  if (options.history === 'quiet') await markLastChange(options.direct, options.tableName, addedAtMs + HOUR_MS);
  const figures: RegistryReadFigures[] = [];
  for (const reader of options.readers) figures.push(await measureContainerMinute({ ...options, reader, startMs: addedAtMs + 2 * HOUR_MS }));
  return figures;
}

/**
 * The row for a size not measured, from the two largest measured of one history: linear in the
 * number of endpoints through them (a reader whose cost does not grow stays where it is).
 */
export function deriveRegistryFigures(measured: readonly RegistryReadFigures[], endpoints = DERIVED_REGISTRY_SIZE): RegistryReadFigures {
  const [below, last] = [...measured].sort((a, b) => a.endpoints - b.endpoints).slice(-2);
  if (below === undefined || last === undefined || below.endpoints === last.endpoints) throw new Error('two measured sizes are needed to derive another');
  const at = (pick: (f: RegistryReadFigures) => number) =>
    Math.max(0, pick(last) + ((pick(last) - pick(below)) * (endpoints - last.endpoints)) / (last.endpoints - below.endpoints));
  return {
    reader: last.reader,
    endpoints,
    history: last.history,
    itemBytes: last.itemBytes,
    coldStart: { readUnits: at((f) => f.coldStart.readUnits), requests: at((f) => f.coldStart.requests) },
    refreshes: last.refreshes,
    perRefresh: { readUnits: at((f) => f.perRefresh.readUnits), requests: at((f) => f.perRefresh.requests) },
    perMinuteReadUnits: at((f) => f.perMinuteReadUnits),
    derivedFrom: `linear through ${below.endpoints.toLocaleString('en-US')} and ${last.endpoints.toLocaleString('en-US')}`,
  };
}

/**
 * Every size of each history a reader needs (a reader by change both, one that reads every item
 * `quiet` alone), one table per size and history, and the derived 100,000 of each reader and history.
 */
export async function measureRegistries(options: {
  readonly meter: Meter;
  readonly direct: DynamoDBClient;
  readonly reading: DynamoDBClient;
  readonly sizes: readonly number[];
  readonly prefix: string;
  readonly readers?: readonly ContainerReader[];
}): Promise<RegistryReadFigures[]> {
  const all = options.readers ?? CONTAINER_READERS;
  const figures: RegistryReadFigures[] = [];
  for (const history of ['quiet', 'bulk'] as const) {
    const readers = all.filter((reader) => reader.byChange || history === 'quiet');
    if (readers.length === 0) continue;
    const measured: RegistryReadFigures[] = [];
    for (const endpoints of options.sizes) {
      const tableName = `${options.prefix}-${endpoints}-${history}`;
      measured.push(...(await measureRegistry({ ...options, readers, tableName, endpoints, history })));
    }
    for (const reader of readers) figures.push(...measured.filter((f) => f.reader === reader.name), deriveRegistryFigures(measured.filter((f) => f.reader === reader.name)));
  }
  return figures;
}
