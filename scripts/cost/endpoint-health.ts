/**
 * Endpoint health for `npm run cost` (docs/contract.md §12): what a delivery costs when its endpoint
 * is healthy, paused, disabled (parked) and enabled again (released, then delivered), measured as
 * the other scenarios are: the real batch use case with its DynamoDB ledger and an endpoint
 * registry, through the metering proxy (each write priced by DynamoDB's size rules, index entries
 * included; reads by the items they return) and the SQS meter (the adapter's requests and Lambda's
 * event source), at one batch of messages per step.
 *
 * Each scenario has a registry table of its own with one endpoint (every event type) and a consumer
 * built after the endpoint's state is set, as a container would be; that consumer's first read of
 * the registry (once per container every ENDPOINTS_CACHE_MS, not per delivery) is made before the
 * meter starts. Registry writes a delivery causes (health, a release's window) are counted apart
 * from the ledger's.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SQSRecord } from 'aws-lambda';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { createLogger } from '../../lib/observability';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { registryEndpoints } from '../../lib/recovery';
import { releaseResuming, type ReleaseRun } from '../../lib/resume';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { emulatorDynamoDbClient, returnOldItemOnConditionFailure } from '../../test/helpers/dynalite';
import { sqsRecord, TEST_SEAL } from '../../test/helpers/sqs-records';
import { handoffConsumer, QUEUE_URLS, SETTINGS, type Invoke } from './consumers';
import { recordOfSent } from './fan-out';
import type { DynamoDbUsage, MeteringProxy, TableUsage } from './metering-proxy';
import { costPerMillionEvents, PRICES, type CostPerMillion, type Prices } from './prices';
import { eventOfSize, invokeBatch, type Meters } from './runs';
import type { SqsUsage } from './sqs-meter';

export const HEALTH_EVENT_BYTES = 300;
/** The endpoint every scenario delivers to. */
export const HEALTH_ENDPOINT = 'acme';
/** Deliveries per step: one batch of the stack's size. */
export const HEALTH_BATCH = SETTINGS.batchSize;
/** A held delivery's pause: long enough that it outlasts the run. */
const PAUSE_MS = 10 * 60 * 1000;
/** How far the release looks ahead: the scheduled recovery's interval in AWS is a minute. */
const RELEASE_HORIZON_MS = 60_000;
/** The rate-limited scenario's limit, per second. */
const RATE_LIMIT = 5;
/** Past this after `enable`, a release with nothing left ends (lib/resume.ts SETTLE_MS: twice the registry's cache). */
const RELEASE_SETTLED_MS = 31_000;

/** What one metered step used, for `deliveries` deliveries. */
export interface HealthMeasure {
  readonly name: string;
  readonly deliveries: number;
  /** The decisions the consumer logged (`action:why`), counted; a release's `released` too. */
  readonly decisions: Readonly<Record<string, number>>;
  readonly dynamodb: Pick<DynamoDbUsage, 'byTable' | 'indexWriteCounts' | 'refusedWrites' | 'unmetered'>;
  readonly sqs: Pick<SqsUsage, 'billedRequests' | 'requests'>;
  readonly ledgerTable: string;
  readonly registryTable: string;
}

/** One row of the printed table: every figure per delivery. */
export interface HealthFigures {
  readonly name: string;
  readonly deliveries: number;
  readonly decisions: string;
  readonly ledger: TableUsage;
  readonly registry: TableUsage;
  /** Index entries written per delivery, by kind. */
  readonly indexOps: { readonly put: number; readonly delete: number; readonly update: number };
  readonly refusedWrites: number;
  readonly sqsRequests: number;
  readonly sqsByOperation: Readonly<Record<string, number>>;
  /** Dollars per million deliveries: DynamoDB and SQS (Lambda apart, see the note printed). */
  readonly cost: CostPerMillion;
}

const ZERO: TableUsage = { writeRequests: 0, readRequests: 0, writeUnits: 0, indexUnits: 0, readUnits: 0 };

function perUnit(usage: TableUsage | undefined, n: number): TableUsage {
  const u = usage ?? ZERO;
  return { writeRequests: u.writeRequests / n, readRequests: u.readRequests / n, writeUnits: u.writeUnits / n, indexUnits: u.indexUnits / n, readUnits: u.readUnits / n };
}

/**
 * A measure's figures per delivery. Pure. Registry reads and writes are the delivery's own (the
 * cached list's read is made before metering). Lambda is left out of the dollars.
 */
export function healthFigures(measure: HealthMeasure, prices: Prices = PRICES): HealthFigures {
  const n = measure.deliveries;
  if (!(n > 0)) throw new RangeError(`${measure.name}: deliveries must be over 0, got ${n}`);
  const ledger = perUnit(measure.dynamodb.byTable[measure.ledgerTable], n);
  const registry = perUnit(measure.dynamodb.byTable[measure.registryTable], n);
  const others = Object.keys(measure.dynamodb.byTable).filter((t) => t !== measure.ledgerTable && t !== measure.registryTable);
  if (others.length > 0) throw new Error(`${measure.name}: requests to tables outside the scenario (${others.join(', ')})`);
  const ops = { put: 0, delete: 0, update: 0 };
  for (const counts of Object.values(measure.dynamodb.indexWriteCounts)) {
    ops.put += counts.put / n;
    ops.delete += counts.delete / n;
    ops.update += counts.update / n;
  }
  const sqsByOperation = Object.fromEntries(
    Object.entries(measure.sqs.requests).map(([operation, count]) => [operation.replace(' (event source)', '*'), count / n]),
  );
  const sqsRequests = measure.sqs.billedRequests / n;
  const cost = costPerMillionEvents(
    {
      writeUnits: ledger.writeUnits + registry.writeUnits,
      readUnits: ledger.readUnits + registry.readUnits,
      sqsRequests,
      lambdaGbSeconds: 0,
      lambdaInvocations: 0,
    },
    prices,
  );
  return {
    name: measure.name,
    deliveries: n,
    decisions: Object.entries(measure.decisions)
      .map(([decision, count]) => `${decision}${count === n ? '' : ` x${count}`}`)
      .join(', '),
    ledger,
    registry,
    indexOps: ops,
    refusedWrites: measure.dynamodb.refusedWrites / n,
    sqsRequests,
    sqsByOperation,
    cost,
  };
}

/**
 * Several steps of the same deliveries as one (a release, then its delivery): usage added, per
 * `deliveries` (default: the first step's). Pure.
 */
export function combineMeasures(name: string, measures: readonly HealthMeasure[], deliveries?: number): HealthMeasure {
  const first = measures[0];
  if (first === undefined) throw new RangeError('nothing to combine');
  if (measures.some((m) => m.ledgerTable !== first.ledgerTable || m.registryTable !== first.registryTable)) {
    throw new RangeError(`${name}: only steps on the same tables combine`);
  }
  const byTable: Record<string, TableUsage> = {};
  const indexWriteCounts: Record<string, { put: number; delete: number; update: number }> = {};
  const decisions: Record<string, number> = {};
  const requests: Record<string, number> = {};
  const unmetered: Record<string, number> = {};
  let refusedWrites = 0;
  let billedRequests = 0;
  for (const m of measures) {
    for (const [table, u] of Object.entries(m.dynamodb.byTable)) {
      const t = (byTable[table] ??= { ...ZERO });
      t.writeRequests += u.writeRequests;
      t.readRequests += u.readRequests;
      t.writeUnits += u.writeUnits;
      t.indexUnits += u.indexUnits;
      t.readUnits += u.readUnits;
    }
    for (const [index, c] of Object.entries(m.dynamodb.indexWriteCounts)) {
      const t = (indexWriteCounts[index] ??= { put: 0, delete: 0, update: 0 });
      t.put += c.put;
      t.delete += c.delete;
      t.update += c.update;
    }
    for (const [d, c] of Object.entries(m.decisions)) decisions[d] = (decisions[d] ?? 0) + c;
    for (const [op, c] of Object.entries(m.sqs.requests)) requests[op] = (requests[op] ?? 0) + c;
    for (const [op, c] of Object.entries(m.dynamodb.unmetered)) unmetered[op] = (unmetered[op] ?? 0) + c;
    refusedWrites += m.dynamodb.refusedWrites;
    billedRequests += m.sqs.billedRequests;
  }
  return {
    name,
    deliveries: deliveries ?? first.deliveries,
    decisions,
    dynamodb: { byTable, indexWriteCounts, refusedWrites, unmetered },
    sqs: { billedRequests, requests },
    ledgerTable: first.ledgerTable,
    registryTable: first.registryTable,
  };
}

// --- the runs ----------------------------------------------------------------------------------

interface World {
  readonly ledgerTable: string;
  readonly registryTable: string;
  /** The registry straight to dynalite: the operator's changes, unmetered. */
  readonly admin: DynamoDbEndpointRegistry;
  /** A consumer (a fresh container) built now, its registry copy read before metering. */
  consumer(): Promise<{ invoke: Invoke; decisions: Map<string, number> }>;
}

/**
 * handoff's consumer on the metered ledger and `registryTable`, counting its decisions by
 * `action:why` (cleared by the caller per step); its first read of the registry (once per container
 * and cache age) made unmetered.
 */
export async function countingConsumer(options: HealthRunOptions, ledgerTable: string, registryTable: string, nowMs: () => number) {
  const { meters, proxy, direct } = options;
  const decisions = new Map<string, number>();
  const consumer = handoffConsumer({
    dynamodbEndpoint: proxy.endpoint,
    direct,
    tableName: ledgerTable,
    registryTable,
    sqs: meters.sqs.client,
    webhookUrl: meters.receiver.url,
    clock: { nowMs },
    onDecision: (d) => {
      const key = `${d.action}:${d.why ?? ''}`;
      decisions.set(key, (decisions.get(key) ?? 0) + 1);
    },
  });
  options.closers.push(() => consumer.close());
  proxy.start();
  await consumer.invoke([]);
  return { invoke: consumer.invoke, decisions };
}

export interface HealthRunOptions {
  readonly meters: Meters;
  readonly proxy: MeteringProxy;
  readonly direct: DynamoDBClient;
  /** Table names are made from this (one ledger, a registry per scenario). */
  readonly prefix: string;
  /** Closed by the caller when done. */
  readonly closers: (() => void)[];
}

/**
 * Runs the scenarios: healthy (delivered), a 429 that pauses the endpoint, held by a pause, parked
 * (new, and after a failed attempt), released after `enable` and then delivered. Every step checks
 * the decisions it must lead to; a count means nothing otherwise.
 */
export async function runHealthScenarios(options: HealthRunOptions): Promise<HealthMeasure[]> {
  const { meters, proxy, direct } = options;
  const ledgerTable = `${options.prefix}-ledger`;
  await createLedgerTable(direct, ledgerTable);
  let worlds = 0;
  let events = 0;
  const clock = { offsetMs: 0 };
  const nowMs = () => Date.now() + clock.offsetMs;
  const logger = createLogger({ service: 'handoff', write: () => {} });

  const world = async (fields: { rateLimitPerSecond?: number } = {}): Promise<World> => {
    worlds += 1;
    const registryTable = `${options.prefix}-endpoints-${worlds}`;
    await createEndpointsTable(direct, registryTable);
    const admin = new DynamoDbEndpointRegistry({ client: direct, tableName: registryTable });
    await seedEndpoints(admin, [{ name: HEALTH_ENDPOINT, url: meters.receiver.url, eventTypes: ['*'], ...fields }], nowMs());
    return {
      ledgerTable,
      registryTable,
      admin,
      consumer: () => countingConsumer(options, ledgerTable, registryTable, nowMs),
    };
  };
  const newEvents = (count: number) => Array.from({ length: count }, () => `evt_health_${options.prefix}_${(events += 1)}`);
  const bodyOf = (id: string) => eventOfSize(id, HEALTH_EVENT_BYTES);
  const recordsOf = (ids: readonly string[], receiveCount = 1) =>
    ids.map((id) => sqsRecord(bodyOf(id), { attributes: { ...sqsRecord('').attributes, ApproximateReceiveCount: String(receiveCount) } }));

  /** One metered invocation with `records`; checks the decisions. */
  const step = async (
    name: string,
    w: World,
    consumer: { invoke: Invoke; decisions: Map<string, number> },
    records: readonly SQSRecord[],
    expected: Readonly<Record<string, number>> | ((decisions: Readonly<Record<string, number>>) => boolean),
  ): Promise<HealthMeasure> => {
    consumer.decisions.clear();
    meters.sqs.takeSent();
    const dynamodb = proxy.start();
    const sqs = meters.sqs.start();
    await invokeBatch(consumer.invoke, records, meters);
    const decisions = Object.fromEntries(consumer.decisions);
    if (typeof expected === 'function') {
      if (!expected(decisions)) throw new Error(`${name}: unexpected decisions ${JSON.stringify(decisions)}`);
    } else expectDecisions(name, decisions, expected);
    return { name, deliveries: records.length, decisions, dynamodb, sqs, ledgerTable: w.ledgerTable, registryTable: w.registryTable };
  };
  const measures: HealthMeasure[] = [];

  // Healthy: delivered, nothing written on the registry.
  {
    const w = await world();
    const consumer = await w.consumer();
    measures.push(await step('healthy endpoint: delivered', w, consumer, recordsOf(newEvents(HEALTH_BATCH)), { 'ack:delivered': HEALTH_BATCH }));
  }

  // A 429 with Retry-After: the attempt, its failure, and the pause on the registry item.
  {
    const w = await world();
    const consumer = await w.consumer();
    const [id] = newEvents(1);
    meters.receiver.respondTo(id!, { status: 429, retryAfter: '120' });
    measures.push(await step('429 Retry-After: attempt, endpoint paused', w, consumer, recordsOf([id!]), { 'retry:temporary': 1 }));
  }

  // Paused: held without a claim or any DynamoDB request.
  {
    const w = await world();
    await w.admin.pause(HEALTH_ENDPOINT, Date.now() + PAUSE_MS);
    const consumer = await w.consumer();
    measures.push(await step('paused: held (per receive)', w, consumer, recordsOf(newEvents(HEALTH_BATCH)), { 'retry:paused': HEALTH_BATCH }));
  }

  // Disabled: a new delivery parks; then enabled, released and delivered.
  {
    const w = await world();
    await w.admin.setState(HEALTH_ENDPOINT, 'disabled', { by: 'cost', reason: 'npm run cost', at: nowMs() });
    const disabled = await w.consumer();
    const ids = newEvents(HEALTH_BATCH);
    measures.push(await step('parked: new delivery (disabled endpoint)', w, disabled, recordsOf(ids), { 'ack:parked': HEALTH_BATCH }));

    await w.admin.setState(HEALTH_ENDPOINT, 'enabled', { by: 'cost', reason: 'npm run cost', at: nowMs() });
    // Two recovery runs as the scheduled function makes them (its registry read included): one
    // releases the parked deliveries; the next, once every consumer has seen the endpoint enabled,
    // finds none left and ends the release.
    const release = releaseDeps(options, w, nowMs, logger);
    meters.sqs.takeSent();
    const releaseUsage = proxy.start();
    const releaseSqs = meters.sqs.start();
    const run = async () => {
      const runs = await releaseResuming(await release.endpoints(), release);
      const mine = runs.find((r) => r.endpoint === HEALTH_ENDPOINT);
      if (mine === undefined) throw new Error(`the recovery run released nothing of ${HEALTH_ENDPOINT}: is a release in progress?`);
      return mine;
    };
    const first = await run();
    const sent = meters.sqs.takeSent();
    clock.offsetMs += RELEASE_SETTLED_MS;
    const last = await run();
    checkRelease(first, last, HEALTH_BATCH);
    const released: HealthMeasure = {
      name: 'resumed: released (2 recovery runs)',
      deliveries: HEALTH_BATCH,
      decisions: { released: first.released },
      dynamodb: releaseUsage,
      sqs: releaseSqs,
      ledgerTable: w.ledgerTable,
      registryTable: w.registryTable,
    };
    measures.push(released);
    // The released messages as the event source hands them over, once their slots have come.
    const afterRelease = await w.consumer();
    if (sent.length !== HEALTH_BATCH) throw new Error(`the release sent ${sent.length} messages for ${HEALTH_BATCH} released deliveries`);
    const delivered = await step('resumed: then delivered', w, afterRelease, sent.map(recordOfSent), { 'ack:delivered': HEALTH_BATCH });
    measures.push(delivered);
    measures.push(combineMeasures('resumed: release and delivery, in all', [released, delivered]));
  }

  // Rate-limited: one reservation for the batch; the slots within a second are waited for, the
  // later ones' deliveries put back carrying their slot and delivered when it comes.
  {
    const w = await world({ rateLimitPerSecond: RATE_LIMIT });
    const consumer = await w.consumer();
    // At 5/s, slots 200 ms apart: about the first six are within IN_PROCESS_WAIT_MS (how many exactly
    // depends on how long the reservation took), the rest are put back.
    const first = await step(`rate-limited (${RATE_LIMIT}/s): the batch`, w, consumer, recordsOf(newEvents(HEALTH_BATCH)), (d) => {
      const waited = d['ack:delivered'] ?? 0;
      const putBack = d['ack:rate-limited'] ?? 0;
      return waited + putBack === HEALTH_BATCH && putBack > 0 && Object.keys(d).length === 2;
    });
    measures.push(first);
    const carried = meters.sqs.takeSent();
    if (carried.length !== (first.decisions['ack:rate-limited'] ?? 0)) throw new Error(`${carried.length} messages put back for ${first.decisions['ack:rate-limited']} rate-limited deliveries`);
    // SQS hands them over once their delay is over.
    await sleep(Math.max(...carried.map((m) => m.delaySeconds ?? 0)) * 1000);
    const later = await step(`rate-limited (${RATE_LIMIT}/s): put back, then delivered at its slot`, w, consumer, carried.map(recordOfSent), {
      'ack:delivered': carried.length,
    });
    measures.push(later);
    measures.push(combineMeasures(`rate-limited (${RATE_LIMIT}/s): the batch and its put-backs, per delivery`, [first, later], HEALTH_BATCH));
  }

  // A delivery in retry when its endpoint is disabled: its message comes back and parks the row.
  {
    const w = await world();
    const enabled = await w.consumer();
    const ids = newEvents(HEALTH_BATCH);
    for (const id of ids) meters.receiver.respondTo(id, 503);
    proxy.start();
    meters.sqs.start();
    await invokeBatch(enabled.invoke, recordsOf(ids), meters);
    expectDecisions('parked after a failed attempt (its first attempt)', Object.fromEntries(enabled.decisions), { 'retry:temporary': HEALTH_BATCH });
    await w.admin.setState(HEALTH_ENDPOINT, 'disabled', { by: 'cost', reason: 'npm run cost', at: nowMs() });
    const disabled = await w.consumer();
    measures.push(
      await step('parked: after a failed attempt (message received again)', w, disabled, recordsOf(ids, 2), { 'ack:parked': HEALTH_BATCH }),
    );
  }
  return measures;
}

function releaseDeps(options: HealthRunOptions, w: World, nowMs: () => number, logger: ReturnType<typeof createLogger>) {
  const client = emulatorDynamoDbClient(options.proxy.endpoint);
  returnOldItemOnConditionFailure(client, options.direct);
  options.closers.push(() => client.destroy());
  const documents = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return {
    endpoints: registryEndpoints(documents, w.registryTable),
    ledger: new DynamoDbLedger({ client: documents, tableName: w.ledgerTable, now: nowMs }),
    queue: new SqsDeliveryQueue({ client: options.meters.sqs.client, queueUrl: QUEUE_URLS.queue, deadLetterQueueUrl: QUEUE_URLS.deadLetterQueue, seal: TEST_SEAL }),
    store: new DynamoDbEndpointRegistry({ client: documents, tableName: w.registryTable }),
    now: nowMs,
    horizonMs: RELEASE_HORIZON_MS,
    logger,
  };
}

function checkRelease(first: ReleaseRun, last: ReleaseRun, expected: number): void {
  if (first.released !== expected || first.skipped) throw new Error(`the release run released ${first.released} of ${expected} parked deliveries`);
  if (last.released !== 0 || !last.finished) throw new Error(`the settling release run released ${last.released} and finished ${String(last.finished)}`);
}

function expectDecisions(name: string, actual: Readonly<Record<string, number>>, expected: Readonly<Record<string, number>>): void {
  const text = (d: Readonly<Record<string, number>>) =>
    Object.entries(d)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k} x${v}`)
      .join(', ');
  if (text(actual) !== text(expected)) throw new Error(`${name}: expected ${text(expected)}, got ${text(actual) || 'no decision'}`);
}
