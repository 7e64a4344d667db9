/** The targets `npm run cost` checks, MET or MISSED; only the happy path's requests fail the run. */
import { SETTING_VARIABLES } from '../../lib/config';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import { writeUnits } from './billing';
import type { DynamoDbUsage } from './meter';
import { describeIndexWrites, dollars, fixed, percent, truncate, type PricedFanOut, type PricedWorkload, type Target } from './report';
import type { HealthFigures, HealthMeasure } from './health';
import { HOT_ITEM_TARGET, type HotItemResult } from './hot-item';
import type { ConsumerName } from './consumers';
import { partitionShares, type MixResult, type ScenarioResult } from './runs';

export const HAPPY_PATH_MAX_WRITES = 2;
export const HAPPY_PATH_MAX_READS = 0;
export const EVENT_SIZES = [300, 2048] as const;
/** Routing may add at most this many SQS requests per delivery to the single-URL consumer's. */
const ROUTING_MAX_ADDED_SQS = 0.3;
/** Lambda's figure is wall time on a shared machine: a few percent apart between runs of the same code. */
const LAMBDA_NOISE = 1.1;
const SHIPMENT_INDEX = LEDGER_SCHEMA.shipmentIndex.name;
const LISTING_INDEX = LEDGER_SCHEMA.listingIndex.name;

/** Index units per delivery, by index: the shipment index and every other (the listing) apart. */
function indexUnitsPer(usage: Pick<DynamoDbUsage, 'indexWriteUnits'>, n: number) {
  const shipment = (usage.indexWriteUnits[SHIPMENT_INDEX] ?? 0) / n;
  const others = Object.entries(usage.indexWriteUnits).reduce((sum, [index, units]) => (index === SHIPMENT_INDEX ? sum : sum + units), 0) / n;
  return { shipment, others };
}

const sizeName = (eventBytes: number) => (eventBytes === 2048 ? '2-KB' : `${eventBytes}-byte`);

/**
 * `scenarios` on a ledger with the shipment index (the default), `unindexed` the delivered scenario
 * on one without it and the consumer's setting off; `priced` has handoff both ways, Powertools and
 * the naive consumer at each size.
 */
export function assessTargets(
  scenarios: readonly ScenarioResult[],
  priced: readonly PricedWorkload[],
  mixes: readonly MixResult[],
  unindexed: readonly ScenarioResult[],
): Target[] {
  const scenario = (name: string, from = scenarios) => {
    const found = from.find((s) => s.scenario.name.startsWith(name));
    if (found === undefined) throw new Error(`no scenario "${name}"`);
    return found.dynamodb;
  };
  const workload = (consumer: ConsumerName, eventBytes: number) => {
    const found = priced.find((p) => p.consumer === consumer && p.eventBytes === eventBytes);
    if (found === undefined) throw new Error(`no workload for ${consumer} at ${eventBytes} bytes`);
    return found;
  };
  const targets: Target[] = [];

  // The table's units, as Powertools' (which has no shipment index) are counted.
  for (const eventBytes of EVENT_SIZES) {
    const on = workload('handoff', eventBytes);
    const off = workload('handoff-unindexed', eventBytes);
    const rowBytes = Math.max(on.run.dynamodb.largestItemBytes, off.run.dynamodb.largestItemBytes);
    const most = 2 * writeUnits(rowBytes);
    const table = (p: PricedWorkload) => p.run.dynamodb.tableWriteUnits / p.run.delivered;
    targets.push({
      name: `Ledger table write units per delivered event, ${sizeName(eventBytes)} event`,
      goal: `≤ 2 × ceil(row/1 KB) = ${most} (row ${rowBytes} B), index on or off`,
      measured: `${fixed(table(on))} index on; ${fixed(table(off))} index off`,
      met: table(on) <= most && table(off) <= most,
    });
  }

  const happy = scenario('delivered');
  const happyOff = scenario('delivered', unindexed);
  const perSize = (consumer: ConsumerName) =>
    EVENT_SIZES.map((eventBytes) => {
      const p = workload(consumer, eventBytes);
      return { eventBytes, ...indexUnitsPer(p.run.dynamodb, p.run.delivered) };
    });
  const onIndex = [...perSize('handoff'), { eventBytes: 0, ...indexUnitsPer(happy, 1) }];
  const offIndex = [...perSize('handoff-unindexed'), { eventBytes: 0, ...indexUnitsPer(happyOff, 1) }];
  const where = (e: { eventBytes: number }) => (e.eventBytes === 0 ? 'scenario' : sizeName(e.eventBytes));
  targets.push({
    name: 'Shipment index write units per delivered event, index on (the default)',
    goal: 'exactly 1.00 (its entry, put once at admission); other indexes 0',
    measured: onIndex.map((e) => `${fixed(e.shipment)} (${where(e)})`).join(', ') + `; other indexes ${fixed(Math.max(...onIndex.map((e) => e.others)))}`,
    met: onIndex.every((e) => e.shipment === 1 && e.others === 0),
  });
  targets.push({
    name: `Shipment index write units per delivered event, index off (${SETTING_VARIABLES.shipmentIndex}=false, table without it)`,
    goal: 'exactly 0, any index; table units as with it on',
    measured:
      offIndex.map((e) => `${fixed(e.shipment + e.others)} (${where(e)})`).join(', ') +
      `; scenario table WU ${happyOff.tableWriteUnits} off, ${happy.tableWriteUnits} on`,
    met: offIndex.every((e) => e.shipment === 0 && e.others === 0) && happyOff.tableWriteUnits === happy.tableWriteUnits && happyOff.writeRequests === happy.writeRequests,
  });

  const retried = scenario('retried');
  const perRetry = (retried.tableWriteUnits - happy.tableWriteUnits) / 2;
  targets.push({
    name: 'Each retry (503, 503, 200 against one attempt), table units',
    goal: '≤ 2 WU more per retry, no more index units',
    measured: `${fixed(perRetry)} more (${retried.tableWriteUnits} against ${happy.tableWriteUnits}); index ${fixed(retried.indexUnits)} against ${fixed(happy.indexUnits)}`,
    met: perRetry <= 2 && retried.indexUnits === happy.indexUnits,
  });

  const dead = scenario('dead-lettered');
  const deadOps = (index: string) => dead.indexWriteCounts[index] ?? { put: 0, delete: 0, update: 0 };
  const onePut = (index: string) => deadOps(index).put === 1 && deadOps(index).delete === 0 && deadOps(index).update === 0;
  const otherIndexes = Object.keys(dead.indexWriteCounts).filter((index) => index !== SHIPMENT_INDEX && index !== LISTING_INDEX);
  targets.push({
    name: 'A dead-lettered delivery (400)',
    goal: `≤ 2 table WU + its ${LISTING_INDEX} entry (1 put) + its ${SHIPMENT_INDEX} entry (1 put)`,
    measured: `${dead.tableWriteUnits} table WU + ${describeIndexWrites(dead)}`,
    met: dead.tableWriteUnits <= 2 && onePut(LISTING_INDEX) && onePut(SHIPMENT_INDEX) && otherIndexes.length === 0,
  });

  // Powertools has no shipment index: the goal is on handoff without it; with it, the price of the index, printed.
  for (const eventBytes of EVENT_SIZES) {
    const off = workload('handoff-unindexed', eventBytes).cost.total;
    const on = workload('handoff', eventBytes).cost.total;
    const theirs = workload('powertools', eventBytes).cost.total;
    targets.push({
      name: `Cost per million delivered events, ${sizeName(eventBytes)} event, handoff without the shipment index / Powertools`,
      goal: '≤ 1.10x (full ledger kept; Powertools has no shipment index)',
      measured: `${(off / theirs).toFixed(2)}x (${dollars(off)} / ${dollars(theirs)})`,
      met: off / theirs <= 1.1,
    });
    targets.push({
      name: `(context) ${sizeName(eventBytes)} event, handoff with the shipment index on (the default) / Powertools`,
      goal: 'no goal: the index is a feature Powertools lacks',
      measured: `${(on / theirs).toFixed(2)}x (${dollars(on)} / ${dollars(theirs)}; the index ${dollars(on - off)})`,
      met: true,
      context: true,
    });
  }

  const shares = mixes.map((mix) => {
    const { total, scopes } = partitionShares(mix.dynamodb);
    const busiest = scopes.reduce((top, s) => (s.largestUnits > top.largestUnits ? s : top));
    return { deliveries: mix.deliveries, share: busiest.largestUnits / total, where: `${busiest.scope} "${truncate(busiest.largestValue)}"` };
  });
  const [first, last] = [shares[0], shares[shares.length - 1]];
  if (first !== undefined && last !== undefined) {
    targets.push({
      name: `Largest share of writes on one partition key value, ${last.deliveries.toLocaleString('en-US')} deliveries`,
      goal: `< 1.00% and below the ${first.deliveries.toLocaleString('en-US')}-delivery run's`,
      measured: `${percent(last.share)} (${last.where}); ${percent(first.share)} at ${first.deliveries.toLocaleString('en-US')}`,
      met: last.share < 0.01 && last.share < first.share,
    });
  }

  const small = workload('handoff', 300);
  const happyRequests = `${happy.writeRequests} writes, ${happy.readRequests} reads`;
  const smallRequests = `${fixed(small.run.dynamodb.writeRequests / small.run.delivered)} writes, ${fixed(small.run.dynamodb.readRequests / small.run.delivered)} reads`;
  targets.push({
    name: 'No regression: requests per delivered event on AWS',
    goal: `≤ ${HAPPY_PATH_MAX_WRITES} writes, ${HAPPY_PATH_MAX_READS} reads`,
    measured: `${happyRequests} (scenario); ${smallRequests} (batches)`,
    met:
      happy.writeRequests <= HAPPY_PATH_MAX_WRITES &&
      happy.readRequests <= HAPPY_PATH_MAX_READS &&
      small.run.dynamodb.writeRequests <= HAPPY_PATH_MAX_WRITES * small.run.delivered &&
      small.run.dynamodb.readRequests <= HAPPY_PATH_MAX_READS,
    failsRun: true,
  });
  return targets;
}

export function assessFanOutTargets(fanOuts: readonly PricedFanOut[]): Target[] {
  const base = fanOuts.find((f) => !f.metered.run.registry);
  if (base === undefined) throw new Error('no single-URL fan-out run');
  const targets: Target[] = [];
  const routed = fanOuts.filter((f) => f.metered.run.registry);
  for (const f of routed) {
    const d = f.metered.dynamodb;
    const table = d.tableWriteUnits / f.metered.deliveries;
    const index = indexUnitsPer(d, f.metered.deliveries);
    targets.push({
      name: `Write units per (event, endpoint) delivered, ${f.metered.run.endpoints} endpoint(s), 300-byte event`,
      goal: `table ≤ 2.00; ${SHIPMENT_INDEX} index 1 (a row's entry); other indexes 0`,
      measured: `${fixed(f.per.usage.writeUnits)} (table ${fixed(table)} + ${SHIPMENT_INDEX} ${fixed(index.shipment)} + other ${fixed(index.others)})`,
      met: table <= 2 && index.shipment === 1 && index.others === 0,
    });
  }
  for (const f of routed) {
    const added = f.per.usage.sqsRequests - base.per.usage.sqsRequests;
    targets.push({
      name: `SQS requests routing adds per delivery, ${f.metered.run.endpoints} endpoint(s)`,
      goal: `≤ ${ROUTING_MAX_ADDED_SQS} (batched sends)`,
      measured: `${fixed(added, 3)} (${fixed(f.per.usage.sqsRequests, 3)} against ${fixed(base.per.usage.sqsRequests, 3)} single-URL)`,
      met: added <= ROUTING_MAX_ADDED_SQS,
    });
  }
  const one = routed.find((f) => f.metered.run.endpoints === 1);
  if (one !== undefined) {
    // Billed units are exact; Lambda is wall time on a shared machine, within a few percent run to run.
    // The registry's read is per container and time, not per delivery (printed with the table).
    const units = (f: PricedFanOut) => {
      const u = f.per.usage;
      return [u.writeUnits, u.sqsRequests, u.lambdaInvocations];
    };
    const fewerUnits = units(one).every((value, i) => value <= units(base)[i]! + 1e-9);
    const lambdaRatio = one.cost.lambda / base.cost.lambda;
    const parts = (f: PricedFanOut) => `${dollars(f.cost.total)} (DynamoDB ${dollars(f.cost.dynamodb)}, SQS ${dollars(f.cost.sqs)}, Lambda ${dollars(f.cost.lambda)})`;
    targets.push({
      name: 'One endpoint through the registry against the single-URL consumer, per delivery',
      goal: `no more WU, SQS requests, invocations; Lambda ≤ ${LAMBDA_NOISE}x (timing noise); registry read apart`,
      measured: `${parts(one)} against ${parts(base)}; units ${fewerUnits ? 'the same or fewer' : 'MORE'}, Lambda ${lambdaRatio.toFixed(2)}x`,
      met: fewerUnits && lambdaRatio <= LAMBDA_NOISE,
    });
  }
  return targets;
}

export function assessHealthTargets(health: readonly HealthFigures[], measures: readonly HealthMeasure[]): Target[] {
  const find = (prefix: string) => {
    const found = health.find((f) => f.name.startsWith(prefix));
    if (found === undefined) throw new Error(`no endpoint health scenario "${prefix}"`);
    return found;
  };
  const healthy = find('healthy endpoint');
  const held = find('paused: held');
  const heldRequests = measures.find((m) => m.name === held.name);
  const heldDynamoDb = heldRequests === undefined ? NaN : Object.values(heldRequests.dynamodb.byTable).reduce((sum, t) => sum + t.writeRequests + t.readRequests, 0);
  const healthyRequests = measures.find((m) => m.name === healthy.name);
  // A health step keeps index operations by index, and the ledger's index units in all.
  const ops = healthyRequests?.dynamodb.indexWriteCounts ?? {};
  const shipmentPuts = (ops[SHIPMENT_INDEX]?.put ?? NaN) / healthy.deliveries;
  const otherOps = Object.entries(ops).reduce((sum, [index, c]) => sum + (index === SHIPMENT_INDEX ? c.delete + c.update : c.put + c.delete + c.update), 0);
  const healthyIndex = healthy.ledger.indexUnits;
  const healthyTable = healthy.ledger.writeUnits - healthy.ledger.indexUnits;
  return [
    {
      name: 'Write units per delivered event, healthy endpoint (registry, endpoint health on)',
      goal: `ledger table ≤ 2.00 + ${SHIPMENT_INDEX} index 1, nothing written on the registry`,
      measured: `${fixed(healthy.ledger.writeUnits)} (table ${fixed(healthyTable)} + ${SHIPMENT_INDEX} ${fixed(healthyIndex)}, ${fixed(shipmentPuts)} put; other index operations ${otherOps}); registry ${fixed(healthy.registry.writeUnits)} WU`,
      met: healthyTable <= 2 && healthyIndex === 1 && shipmentPuts === 1 && otherOps === 0 && healthy.registry.writeUnits === 0,
    },
    {
      name: 'A delivery held by a pause',
      goal: 'no DynamoDB request',
      measured: `${heldDynamoDb} requests for ${held.deliveries} holds`,
      met: heldDynamoDb === 0,
    },
  ];
}

/** The hot item (scripts/cost/hot-item.ts): the most writes a second on one item in each simulated outage. */
export function assessHotItemTarget(results: readonly HotItemResult[]): Target {
  const most = Math.max(...results.map((r) => r.any.writes));
  return {
    name: 'Most writes/s on one item, 1,000/s outage',
    goal: `≤ ${HOT_ITEM_TARGET}`,
    measured: results.map((r) => `${r.any.writes}, ${r.afterFirstSecond.writes} after the first second (${r.name})`).join('; '),
    met: most <= HOT_ITEM_TARGET,
  };
}
