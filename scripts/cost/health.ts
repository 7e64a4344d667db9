/**
 * Endpoint health (docs/contract.md §12) and per-shipment ordering (§13) for `npm run cost`: what a
 * delivery costs in each step, one batch of messages per step, through the real consumer with an
 * endpoint registry of one endpoint (every event type), each step's DynamoDB and SQS metered.
 *
 * Each world has a registry table of its own and a consumer made after the endpoint's state is set,
 * as a container would be; its first read of the registry (once per container every
 * ENDPOINTS_CACHE_MS, not per delivery) is made before the meter starts. Registry units are counted
 * apart from the ledger's. Every step keeps the decisions it must lead to (`expected`), for
 * test/cost/health.test.ts to assert.
 *
 * Ordering steps: unordered (the baseline); ordered in its turn; in its turn on a 2nd receive with
 * nothing waiting (its number read from its claimed row: no head write); before its turn (waits);
 * in its turn on a 2nd receive waking the next (the waiting row read, a SendMessage); woken and
 * delivered. On the ordered (FIFO) intake the number is taken at routing and travels on the
 * endpoint message: the same head writes per delivery.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbHealthStore } from '../../lib/endpoints/dynamodb-health-store';
import { RegistryTable } from '../../lib/endpoints/dynamodb-registry-table';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { createLogger } from '../../lib/observability';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { registryEndpoints } from '../../lib/recovery-endpoints';
import { releaseResuming } from '../../lib/resume';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { emulatorDynamoDbClient } from '../../test/helpers/dynalite';
import { TEST_SEAL } from '../../test/helpers/sqs-records';
import { costPerMillionEvents, PRICES, type CostPerMillion, type Prices } from './billing';
import { handoffConsumer, QUEUE_URLS, SETTINGS, type HandoffConsumer } from './consumers';
import type { DynamoDbUsage, SqsUsage, TableUsage } from './meter';
import { invokeBatch, perOperation, recordOf, recordOfSent, RETRY_DUE_MS, type Meters } from './runs';

export const HEALTH_EVENT_BYTES = 300;
export const HEALTH_ENDPOINT = 'acme';
/** Deliveries per step: one batch of the stack's size. */
export const HEALTH_BATCH = SETTINGS.batchSize;
/** A held delivery's pause: it outlasts the run. */
const PAUSE_MS = 10 * 60 * 1000;
/** How far the release looks ahead: the scheduled recovery's interval in AWS. */
const RELEASE_HORIZON_MS = 60_000;
const RATE_LIMIT = 5;
/** Past this after `enable`, a release with nothing left ends (lib/resume.ts SETTLE_MS: twice the registry's cache). */
const RELEASE_SETTLED_MS = 31_000;

type Decisions = Readonly<Record<string, number>>;

/** What one metered step used, for `deliveries` deliveries. */
export interface HealthMeasure {
  readonly name: string;
  readonly deliveries: number;
  /** The decisions the consumer logged (`action:why`), counted; a release's `released` too. */
  readonly decisions: Decisions;
  /** What they must be (none: the test checks the step by its own rule). */
  readonly expected?: Decisions;
  readonly dynamodb: Pick<DynamoDbUsage, 'byTable' | 'indexWriteCounts' | 'refusedWrites'>;
  readonly sqs: Pick<SqsUsage, 'billedRequests' | 'requests'>;
  readonly ledgerTable: string;
  readonly registryTable: string;
}

/** One printed row: every figure per delivery. */
export interface HealthFigures {
  readonly name: string;
  readonly deliveries: number;
  /** Decisions counted; undefined for a row made of others' differences. */
  readonly decisions: Decisions | undefined;
  readonly ledger: TableUsage;
  readonly registry: TableUsage;
  readonly indexOps: { readonly put: number; readonly delete: number; readonly update: number };
  readonly refusedWrites: number;
  readonly sqsRequests: number;
  readonly sqsByOperation: Readonly<Record<string, number>>;
  /** DynamoDB and SQS per million deliveries (Lambda apart). */
  readonly cost: CostPerMillion;
}

const zero = (): TableUsage => ({ writeRequests: 0, readRequests: 0, writeUnits: 0, indexUnits: 0, readUnits: 0 });
const perDelivery = (u: TableUsage | undefined, n: number): TableUsage => {
  const out = zero();
  for (const key of Object.keys(out) as (keyof TableUsage)[]) out[key] = (u?.[key] ?? 0) / n;
  return out;
};
const unitsOf = (ledger: TableUsage, registry: TableUsage, sqsRequests: number) => ({
  writeUnits: ledger.writeUnits + registry.writeUnits,
  readUnits: ledger.readUnits + registry.readUnits,
  sqsRequests,
});

/** A measure's figures per delivery. Pure. */
export function healthFigures(measure: HealthMeasure, prices: Prices = PRICES): HealthFigures {
  const n = measure.deliveries;
  if (!(n > 0)) throw new RangeError(`${measure.name}: deliveries must be over 0, got ${n}`);
  const others = Object.keys(measure.dynamodb.byTable).filter((t) => t !== measure.ledgerTable && t !== measure.registryTable);
  if (others.length > 0) throw new Error(`${measure.name}: requests to tables outside the scenario (${others.join(', ')})`);
  const ledger = perDelivery(measure.dynamodb.byTable[measure.ledgerTable], n);
  const registry = perDelivery(measure.dynamodb.byTable[measure.registryTable], n);
  const indexOps = { put: 0, delete: 0, update: 0 };
  for (const counts of Object.values(measure.dynamodb.indexWriteCounts)) for (const kind of ['put', 'delete', 'update'] as const) indexOps[kind] += counts[kind] / n;
  const sqsRequests = measure.sqs.billedRequests / n;
  return {
    name: measure.name,
    deliveries: n,
    decisions: measure.decisions,
    ledger,
    registry,
    indexOps,
    refusedWrites: measure.dynamodb.refusedWrites / n,
    sqsRequests,
    sqsByOperation: perOperation(measure.sqs, n),
    cost: costPerMillionEvents(unitsOf(ledger, registry, sqsRequests), prices),
  };
}

/**
 * Σ coefficient × figures (all per delivery, so they add). Pure. `parts`: the terms are steps of the
 * same deliveries (a release and its delivery, a batch and its put-backs): their decisions add up
 * and the row is priced on its units; otherwise it has no decisions and its dollars are the sum.
 */
export function linearFigures(name: string, terms: readonly (readonly [HealthFigures, number])[], options: { parts?: boolean } = {}): HealthFigures {
  const first = terms[0];
  if (first === undefined) throw new RangeError(`${name}: no terms`);
  const add = (pick: (f: HealthFigures) => number) => terms.reduce((sum, [f, k]) => sum + k * pick(f), 0);
  const table = (pick: (f: HealthFigures) => TableUsage) => {
    const sum = zero();
    for (const key of Object.keys(sum) as (keyof TableUsage)[]) sum[key] = add((f) => pick(f)[key]);
    return sum;
  };
  const sums = (pick: (f: HealthFigures) => Readonly<Record<string, number>>, k: (c: number) => number) => {
    const out: Record<string, number> = {};
    for (const [f, c] of terms) for (const [key, n] of Object.entries(pick(f))) out[key] = (out[key] ?? 0) + k(c) * n;
    for (const [key, n] of Object.entries(out)) if (Math.abs(n) < 1e-9) delete out[key];
    return out;
  };
  const [ledger, registry, sqsRequests] = [table((f) => f.ledger), table((f) => f.registry), add((f) => f.sqsRequests)];
  const summed = { dynamodb: add((f) => f.cost.dynamodb), sqs: add((f) => f.cost.sqs), lambda: add((f) => f.cost.lambda), total: add((f) => f.cost.total) };
  return {
    name,
    deliveries: first[0].deliveries,
    // Counts, not per delivery: each term's decisions were made once.
    decisions: options.parts ? sums((f) => f.decisions ?? {}, () => 1) : undefined,
    ledger,
    registry,
    indexOps: { put: add((f) => f.indexOps.put), delete: add((f) => f.indexOps.delete), update: add((f) => f.indexOps.update) },
    refusedWrites: add((f) => f.refusedWrites),
    sqsRequests,
    sqsByOperation: sums((f) => f.sqsByOperation, (c) => c),
    cost: options.parts ? costPerMillionEvents(unitsOf(ledger, registry, sqsRequests)) : summed,
  };
}

/** The ordering sums: the wake-up alone (waking step less its no-waiter twin) and a waiting event in all. Pure. */
export function orderingSums(figures: readonly HealthFigures[]): HealthFigures[] {
  const find = (prefix: string) => {
    const found = figures.find((f) => f.name.startsWith(prefix));
    if (found === undefined) throw new Error(`no ordering step "${prefix}"`);
    return found;
  };
  const wake = linearFigures('= the wake-up alone (read + SendMessage)', [
    [find('ordered: in its turn on a 2nd receive, wakes'), 1],
    [find('ordered: in its turn on a 2nd receive, nothing'), -1],
  ]);
  const inAll = linearFigures('= a waiting event in all (wait + wake-up + delivery)', [
    [find('ordered: before its turn'), 1],
    [wake, 1],
    [find('ordered: woken'), 1],
  ]);
  return [wake, inAll];
}

// --- the runs -------------------------------------------------------------------------------------

export interface HealthRunOptions extends Meters {
  readonly direct: DynamoDBClient;
  /** Table names are made from this (one ledger, a registry per world). */
  readonly prefix: string;
}

/** The worlds, events and metered steps both runs share. */
function stepper(options: HealthRunOptions) {
  const { meter, receiver, direct, prefix } = options;
  const ledgerTable = `${prefix}-ledger`;
  const clock = { offsetMs: 0 };
  const nowMs = () => Date.now() + clock.offsetMs;
  let worlds = 0;
  let events = 0;
  return {
    ledgerTable,
    clock,
    nowMs,
    ready: () => createLedgerTable(direct, ledgerTable),
    /** A registry of one endpoint, and a way to make a consumer on it (its first read unmetered). */
    async world(fields: Partial<EndpointFields> = {}) {
      const registryTable = `${prefix}-endpoints-${(worlds += 1)}`;
      await createEndpointsTable(direct, registryTable);
      const admin = new DynamoDbEndpointRegistry({ client: direct, tableName: registryTable });
      await seedEndpoints(admin, [{ name: HEALTH_ENDPOINT, url: receiver.url, eventTypes: ['*'], ...fields }], nowMs());
      const consumer = async () => {
        const made = handoffConsumer({ ledgerTable, registryTable, nowMs });
        meter.dynamodb.start();
        await made.invoke([]);
        return made;
      };
      // Health's writes as a consumer makes them, on the same table.
      const health = new DynamoDbHealthStore(new RegistryTable(DynamoDBDocumentClient.from(direct), registryTable));
      return { registryTable, admin, health, consumer };
    },
    newEvents: (count: number) => Array.from({ length: count }, () => `evt_health_${prefix}_${(events += 1)}`),
    records: (ids: readonly string[], receiveCount = 1) => ids.map((id) => recordOf(id, HEALTH_EVENT_BYTES, { receiveCount })),
    /** One metered invocation with `records`. */
    async step(name: string, registryTable: string, consumer: HandoffConsumer, records: readonly SQSRecord[], expected?: Decisions): Promise<HealthMeasure> {
      meter.sqs.takeSent();
      const dynamodb = meter.dynamodb.start();
      const sqs = meter.sqs.start();
      consumer.decisions.length = 0;
      await invokeBatch(consumer.invoke, records, meter);
      const decisions = count(consumer.decisions);
      return { name, deliveries: records.length, decisions, ...(expected ? { expected } : {}), dynamodb, sqs, ledgerTable, registryTable };
    },
    /** Unmetered: a batch the consumer fails once (503), so its messages come back. */
    async failOnce(consumer: HandoffConsumer, records: readonly SQSRecord[], ids: readonly string[]) {
      for (const id of ids) receiver.respondTo(id, 503);
      meter.dynamodb.start();
      meter.sqs.start();
      await invokeBatch(consumer.invoke, records, meter);
      clock.offsetMs += RETRY_DUE_MS;
    },
  };
}

function count(decisions: readonly string[]): Record<string, number> {
  const counted: Record<string, number> = {};
  for (const d of decisions) counted[d] = (counted[d] ?? 0) + 1;
  return counted;
}

/** Healthy, a pausing 429, held by a pause, parked, released after `enable` and delivered, rate-limited, parked after a failed attempt. */
export async function runHealthScenarios(options: HealthRunOptions): Promise<HealthMeasure[]> {
  const { meter, receiver } = options;
  const s = stepper(options);
  await s.ready();
  const batch = (n = HEALTH_BATCH) => s.records(s.newEvents(n));
  const all = (decision: string, n = HEALTH_BATCH) => ({ [decision]: n });
  const measures: HealthMeasure[] = [];
  const disable = (admin: DynamoDbEndpointRegistry, state: 'disabled' | 'enabled') => admin.setState(HEALTH_ENDPOINT, state, { by: 'cost', reason: 'npm run cost', at: s.nowMs() });

  let w = await s.world();
  measures.push(await s.step('healthy endpoint: delivered', w.registryTable, await w.consumer(), batch(), all('ack:delivered')));

  w = await s.world();
  const [id] = s.newEvents(1);
  receiver.respondTo(id!, { status: 429, retryAfter: '120' });
  measures.push(await s.step('429 Retry-After: attempt, endpoint paused', w.registryTable, await w.consumer(), s.records([id!]), all('retry:temporary', 1)));

  w = await s.world();
  await w.health.pause(HEALTH_ENDPOINT, Date.now() + PAUSE_MS);
  measures.push(await s.step('paused: held (per receive)', w.registryTable, await w.consumer(), batch(), all('retry:paused')));

  // Disabled: a new delivery parks; then enabled, released by two recovery runs (one releases, the
  // next, once every consumer has seen the endpoint enabled, finds none left and ends the release).
  w = await s.world();
  await disable(w.admin, 'disabled');
  measures.push(await s.step('parked: new delivery (disabled endpoint)', w.registryTable, await w.consumer(), batch(), all('ack:parked')));
  await disable(w.admin, 'enabled');
  const release = releaseDeps(options, s.ledgerTable, w.registryTable, s.nowMs);
  meter.sqs.takeSent();
  const releaseUsage = meter.dynamodb.start();
  const releaseSqs = meter.sqs.start();
  const runRelease = async () => (await releaseResuming(await release.endpoints(), release)).find((r) => r.endpoint === HEALTH_ENDPOINT);
  const first = await runRelease();
  const sent = meter.sqs.takeSent();
  s.clock.offsetMs += RELEASE_SETTLED_MS;
  const last = await runRelease();
  const settled = last !== undefined && last.released === 0 && last.finished;
  measures.push({
    name: 'resumed: released (2 recovery runs)',
    deliveries: HEALTH_BATCH,
    decisions: { released: first?.released ?? 0, ...(settled ? {} : { 'release-unsettled': 1 }) },
    expected: all('released'),
    dynamodb: releaseUsage,
    sqs: releaseSqs,
    ledgerTable: s.ledgerTable,
    registryTable: w.registryTable,
  });
  measures.push(await s.step('resumed: then delivered', w.registryTable, await w.consumer(), sent.map(recordOfSent), all('ack:delivered')));

  // Rate-limited: one reservation for the batch; slots within a second are waited for, later ones
  // put back carrying their slot and delivered when it comes (how many: the test's rule).
  w = await s.world({ rateLimitPerSecond: RATE_LIMIT });
  const limited = await w.consumer();
  measures.push(await s.step(`rate-limited (${RATE_LIMIT}/s): the batch`, w.registryTable, limited, batch()));
  const carried = meter.sqs.takeSent();
  // SQS hands them over once their delay is over.
  await sleep(Math.max(0, ...carried.map((m) => m.delaySeconds ?? 0)) * 1000);
  measures.push(await s.step(`rate-limited (${RATE_LIMIT}/s): put back, then delivered at its slot`, w.registryTable, limited, carried.map(recordOfSent), all('ack:delivered', carried.length)));

  // In retry when its endpoint is disabled: its message comes back and parks the row.
  w = await s.world();
  const ids = s.newEvents(HEALTH_BATCH);
  await s.failOnce(await w.consumer(), s.records(ids), ids);
  await disable(w.admin, 'disabled');
  measures.push(await s.step('parked: after a failed attempt (message received again)', w.registryTable, await w.consumer(), s.records(ids, 2), all('ack:parked')));
  return measures;
}

/** The steps of health's table, with the two rows that add steps of the same deliveries. */
export function healthRows(measures: readonly HealthMeasure[]): HealthFigures[] {
  const figures = measures.map((m) => healthFigures(m));
  const byName = (prefix: string) => figures.find((f) => f.name.startsWith(prefix))!;
  const rows = [...figures];
  const resumed = linearFigures('resumed: release and delivery, in all', [[byName('resumed: released'), 1], [byName('resumed: then'), 1]], { parts: true });
  rows.splice(rows.indexOf(byName('resumed: then')) + 1, 0, resumed);
  const [batch, later] = [byName(`rate-limited (${RATE_LIMIT}/s): the batch`), byName(`rate-limited (${RATE_LIMIT}/s): put back`)];
  const limited = linearFigures(`rate-limited (${RATE_LIMIT}/s): the batch and its put-backs, per delivery`, [[batch, 1], [later, later.deliveries / batch.deliveries]], { parts: true });
  rows.splice(rows.indexOf(later) + 1, 0, limited);
  return rows;
}

function releaseDeps(options: HealthRunOptions, ledgerTable: string, registryTable: string, now: () => number) {
  const documents = DynamoDBDocumentClient.from(emulatorDynamoDbClient(options.meter.endpoint), { marshallOptions: { removeUndefinedValues: true } });
  const sqs = new SQSClient({ region: 'us-east-1', endpoint: options.meter.endpoint, credentials: { accessKeyId: 'cost', secretAccessKey: 'cost' }, useQueueUrlAsEndpoint: false });
  return {
    endpoints: registryEndpoints(documents, registryTable),
    ledger: new DynamoDbLedger({ client: documents, tableName: ledgerTable, now }),
    queue: new SqsDeliveryQueue({ client: sqs, queueUrl: QUEUE_URLS.queue, deadLetterQueueUrl: QUEUE_URLS.deadLetterQueue, seal: TEST_SEAL }),
    store: new DynamoDbEndpointRegistry({ client: documents, tableName: registryTable }),
    now,
    horizonMs: RELEASE_HORIZON_MS,
    logger: createLogger({ service: 'handoff', write: () => {} }),
  };
}

/** The ordering steps (see the header); each event of a shipment of its own. */
export async function runOrderingScenarios(options: HealthRunOptions): Promise<HealthMeasure[]> {
  const s = stepper(options);
  await s.ready();
  let shipments = 0;
  const newShipments = () => Array.from({ length: HEALTH_BATCH }, () => `shp_o${(shipments += 1)}`);
  const idOf = (shipment: string, n: number) => `evt_ord_${options.prefix}_${shipment}_e${n}`;
  const records = (ids: readonly string[], n: number, receiveCount = 1) =>
    ids.map((shipment) => recordOf(idOf(shipment, n), HEALTH_EVENT_BYTES, { receiveCount, shipmentId: shipment }));
  const delivered = { 'ack:delivered': HEALTH_BATCH };

  const measures: HealthMeasure[] = [];
  const unordered = await s.world({ ordering: 'none' });
  measures.push(await s.step('unordered: delivered', unordered.registryTable, await unordered.consumer(), records(newShipments(), 1), delivered));
  const w = await s.world({ ordering: 'per-shipment' });
  const ordered = await w.consumer();
  measures.push(await s.step('ordered: in its turn, delivered', w.registryTable, ordered, records(newShipments(), 1), delivered));

  // Each shipment's first event attempted once and failed (503): it retries, holding its turn.
  const alone = newShipments();
  await s.failOnce(ordered, records(alone, 1), alone.map((sh) => idOf(sh, 1)));
  measures.push(await s.step('ordered: in its turn on a 2nd receive, nothing waiting', w.registryTable, ordered, records(alone, 1, 2), delivered));

  const waiting = newShipments();
  await s.failOnce(ordered, records(waiting, 1), waiting.map((sh) => idOf(sh, 1)));
  measures.push(await s.step('ordered: before its turn, waits (ack)', w.registryTable, ordered, records(waiting, 2), { 'ack:waiting': HEALTH_BATCH }));
  measures.push(await s.step('ordered: in its turn on a 2nd receive, wakes the next', w.registryTable, ordered, records(waiting, 1, 2), delivered));
  const wakeUps = options.meter.sqs.takeSent();
  measures.push(await s.step('ordered: woken, delivered', w.registryTable, ordered, wakeUps.map(recordOfSent), delivered));
  return measures;
}
