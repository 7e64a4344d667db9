/**
 * Per-shipment ordering for `npm run cost` (docs/contract.md §13): what a delivery to an endpoint
 * with `ordering: per-shipment` costs beside one to an unordered endpoint, measured as endpoint
 * health is (scripts/cost/endpoint-health.ts): the real batch use case with its DynamoDB ledger, the
 * shipment heads in the same table, a registry with one endpoint, through the metering proxy and
 * the SQS meter, one batch of messages per step, each event of a shipment of its own.
 *
 * Steps, each checked by the decisions it must lead to:
 * - unordered: delivered (the baseline, same ledger, same run);
 * - ordered, in its turn: its number taken (a head write), claim, attempt, record, the turn passed
 *   (a head write);
 * - ordered, in its turn after a failed attempt, nothing waiting: the same on a second receive (its
 *   number read from its claimed row, found by the routing query a re-received message makes
 *   anyway: no head write), the baseline the wake-up is measured against;
 * - ordered, arriving before its turn (the shipment's first event is retrying): its number, its row
 *   written without a claim, recorded as waiting on the head, acknowledged;
 * - ordered, in its turn after a failed attempt, passing the turn and waking the waiting event: the
 *   waiting row read for its body and a SendMessage;
 * - ordered, woken: delivered (its number and turn on its wake-up message, claim of the admitted row,
 *   record, turn passed).
 * And two sums per delivery: the wake-up alone (the waking step less its no-waiter baseline) and a
 * waiting event in all (wait + wake-up + woken delivery).
 *
 * The standard intake: a producer message routed to one endpoint is delivered straight away, its
 * number taken at its first receive. On the ordered (FIFO) intake the number is taken at routing,
 * before fan-out, and travels on the endpoint message: the same head writes per delivery (the
 * fan-out's SendMessageBatch is counted with fan-out).
 */
import type { SQSRecord } from 'aws-lambda';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { sqsRecord } from '../../test/helpers/sqs-records';
import { countingConsumer, HEALTH_BATCH, HEALTH_ENDPOINT, HEALTH_EVENT_BYTES, type HealthFigures, type HealthMeasure, type HealthRunOptions } from './endpoint-health';
import { recordOfSent } from './fan-out';
import type { TableUsage } from './metering-proxy';
import { eventOfSize, invokeBatch } from './runs';

/** Past any first retry's backoff (the policy's delays are seconds to minutes). */
const RETRY_DUE_MS = 60 * 60 * 1000;

/** The measured steps (in the order above); the sums are made from their figures (`orderingSums`). */
export async function runOrderingScenarios(options: HealthRunOptions): Promise<HealthMeasure[]> {
  const { meters, proxy, direct } = options;
  const ledgerTable = `${options.prefix}-ledger`;
  await createLedgerTable(direct, ledgerTable);
  let worlds = 0;
  let shipments = 0;
  // Moved on past a failed attempt's backoff before its message returns, as SQS's visibility would.
  const clock = { offsetMs: 0 };

  const consumerFor = async (ordering: 'none' | 'per-shipment') => {
    worlds += 1;
    const registryTable = `${options.prefix}-endpoints-${worlds}`;
    await createEndpointsTable(direct, registryTable);
    const admin = new DynamoDbEndpointRegistry({ client: direct, tableName: registryTable });
    await seedEndpoints(admin, [{ name: HEALTH_ENDPOINT, url: meters.receiver.url, eventTypes: ['*'], ordering }], Date.now());
    return { ...(await countingConsumer(options, ledgerTable, registryTable, () => Date.now() + clock.offsetMs)), registryTable };
  };
  type Consumer = Awaited<ReturnType<typeof consumerFor>>;

  /** `count` new shipments, each with events `<shipment>_e1`, `_e2`. */
  const newShipments = (count: number) => Array.from({ length: count }, () => `shp_o${(shipments += 1)}`);
  const idOf = (shipment: string, n: number) => `evt_ord_${options.prefix}_${shipment}_e${n}`;
  const recordOf = (shipment: string, n: number, receiveCount = 1): SQSRecord =>
    sqsRecord(eventOfSize(idOf(shipment, n), HEALTH_EVENT_BYTES, 'in_transit', shipment), {
      attributes: { ...sqsRecord('').attributes, ApproximateReceiveCount: String(receiveCount) },
    });

  const run = async (c: Consumer, records: readonly SQSRecord[]) => {
    c.decisions.clear();
    await invokeBatch(c.invoke, records, meters);
    return Object.fromEntries(c.decisions);
  };
  const step = async (name: string, c: Consumer, records: readonly SQSRecord[], expected: Readonly<Record<string, number>>): Promise<HealthMeasure> => {
    meters.sqs.takeSent();
    const dynamodb = proxy.start();
    const sqs = meters.sqs.start();
    const decisions = await run(c, records);
    expectDecisions(name, decisions, expected);
    return { name, deliveries: records.length, decisions, dynamodb, sqs, ledgerTable, registryTable: c.registryTable };
  };
  /** Unmetered: each shipment's first event attempted once and failed (503): it retries, holding its turn. */
  const firstAttemptFails = async (c: Consumer, ids: readonly string[]) => {
    for (const shipment of ids) meters.receiver.respondTo(idOf(shipment, 1), 503);
    // A meter counts until the next start: this keeps the setup out of the step before.
    proxy.start();
    meters.sqs.start();
    expectDecisions('setup: first attempts', await run(c, ids.map((s) => recordOf(s, 1))), { 'retry:temporary': ids.length });
    clock.offsetMs += RETRY_DUE_MS;
  };

  const measures: HealthMeasure[] = [];
  const unordered = await consumerFor('none');
  measures.push(await step('unordered: delivered', unordered, newShipments(HEALTH_BATCH).map((s) => recordOf(s, 1)), { 'ack:delivered': HEALTH_BATCH }));

  const ordered = await consumerFor('per-shipment');
  measures.push(
    await step('ordered: in its turn, delivered', ordered, newShipments(HEALTH_BATCH).map((s) => recordOf(s, 1)), { 'ack:delivered': HEALTH_BATCH }),
  );

  const alone = newShipments(HEALTH_BATCH);
  await firstAttemptFails(ordered, alone);
  measures.push(
    await step('ordered: in its turn on a 2nd receive, nothing waiting', ordered, alone.map((s) => recordOf(s, 1, 2)), { 'ack:delivered': HEALTH_BATCH }),
  );

  const waiting = newShipments(HEALTH_BATCH);
  await firstAttemptFails(ordered, waiting);
  measures.push(await step('ordered: before its turn, waits (ack)', ordered, waiting.map((s) => recordOf(s, 2)), { 'ack:waiting': HEALTH_BATCH }));
  measures.push(
    await step('ordered: in its turn on a 2nd receive, wakes the next', ordered, waiting.map((s) => recordOf(s, 1, 2)), { 'ack:delivered': HEALTH_BATCH }),
  );
  const wakeUps = meters.sqs.takeSent();
  if (wakeUps.length !== HEALTH_BATCH) throw new Error(`${wakeUps.length} wake-up messages for ${HEALTH_BATCH} waiting events`);
  measures.push(await step('ordered: woken, delivered', ordered, wakeUps.map(recordOfSent), { 'ack:delivered': HEALTH_BATCH }));
  return measures;
}

/**
 * The sums printed under the steps: the wake-up alone (waking step less its no-waiter twin) and a
 * waiting event in all (waits + wake-up + woken delivery). Pure.
 */
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

/** Σ coefficient × figures, per delivery (every figure is per delivery, so they add). Pure. */
export function linearFigures(name: string, terms: readonly (readonly [HealthFigures, number])[]): HealthFigures {
  const first = terms[0];
  if (first === undefined) throw new RangeError(`${name}: no terms`);
  const table = (pick: (f: HealthFigures) => TableUsage): TableUsage => {
    const sum = { writeRequests: 0, readRequests: 0, writeUnits: 0, indexUnits: 0, readUnits: 0 };
    for (const [f, k] of terms) for (const key of Object.keys(sum) as (keyof TableUsage)[]) sum[key] += k * pick(f)[key];
    return sum;
  };
  const add = (pick: (f: HealthFigures) => number) => terms.reduce((sum, [f, k]) => sum + k * pick(f), 0);
  const sqsByOperation: Record<string, number> = {};
  for (const [f, k] of terms) for (const [op, n] of Object.entries(f.sqsByOperation)) sqsByOperation[op] = (sqsByOperation[op] ?? 0) + k * n;
  for (const [op, n] of Object.entries(sqsByOperation)) if (Math.abs(n) < 1e-9) delete sqsByOperation[op];
  return {
    name,
    deliveries: first[0].deliveries,
    decisions: '-',
    ledger: table((f) => f.ledger),
    registry: table((f) => f.registry),
    indexOps: { put: add((f) => f.indexOps.put), delete: add((f) => f.indexOps.delete), update: add((f) => f.indexOps.update) },
    refusedWrites: add((f) => f.refusedWrites),
    sqsRequests: add((f) => f.sqsRequests),
    sqsByOperation,
    cost: { dynamodb: add((f) => f.cost.dynamodb), sqs: add((f) => f.cost.sqs), lambda: add((f) => f.cost.lambda), total: add((f) => f.cost.total) },
  };
}

function expectDecisions(name: string, actual: Readonly<Record<string, number>>, expected: Readonly<Record<string, number>>): void {
  const text = (d: Readonly<Record<string, number>>) =>
    Object.entries(d)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k} x${v}`)
      .join(', ');
  if (text(actual) !== text(expected)) throw new Error(`${name}: expected ${text(expected)}, got ${text(actual) || 'no decision'}`);
}
