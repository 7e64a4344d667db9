/** The targets `npm run cost` checks, MET or MISSED; only the happy path's requests fail the run. */
import { writeUnits } from './billing';
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

export function assessTargets(scenarios: readonly ScenarioResult[], priced: readonly PricedWorkload[], mixes: readonly MixResult[]): Target[] {
  const scenario = (name: string) => {
    const found = scenarios.find((s) => s.scenario.name.startsWith(name));
    if (found === undefined) throw new Error(`no scenario "${name}"`);
    return found.dynamodb;
  };
  const workload = (consumer: ConsumerName, eventBytes: number) => {
    const found = priced.find((p) => p.consumer === consumer && p.eventBytes === eventBytes);
    if (found === undefined) throw new Error(`no workload for ${consumer} at ${eventBytes} bytes`);
    return found;
  };
  const targets: Target[] = [];

  const small = workload('handoff', 300);
  targets.push({
    name: 'Billed write units per delivered event, 300-byte event',
    goal: '≤ 2.00',
    measured: `${fixed(small.perEvent.writeUnits)} (table ${fixed(small.run.dynamodb.tableWriteUnits / small.run.delivered)} + index ${fixed(small.run.dynamodb.indexUnits / small.run.delivered)})`,
    met: small.perEvent.writeUnits <= 2,
  });

  const large = workload('handoff', 2048);
  const rowBytes = large.run.dynamodb.largestItemBytes;
  const largeIndex = large.run.dynamodb.indexUnits / large.run.delivered;
  targets.push({
    name: 'Billed write units per delivered event, 2-KB event',
    goal: `≤ 2 × ceil(row/1 KB) = ${2 * writeUnits(rowBytes)} (row ${rowBytes} B), no index units`,
    measured: `${fixed(large.perEvent.writeUnits)} (table ${fixed(large.run.dynamodb.tableWriteUnits / large.run.delivered)} + index ${fixed(largeIndex)})`,
    met: large.perEvent.writeUnits <= 2 * writeUnits(rowBytes) && largeIndex === 0,
  });

  const happy = scenario('delivered');
  const retried = scenario('retried');
  const perRetry = (retried.writeUnits - happy.writeUnits) / 2;
  targets.push({
    name: 'Each retry (503, 503, 200 against one attempt)',
    goal: '≤ 2 WU more per retry',
    measured: `${fixed(perRetry)} more (${retried.writeUnits} against ${happy.writeUnits})`,
    met: perRetry <= 2,
  });

  const dead = scenario('dead-lettered');
  const deadOps = Object.values(dead.indexWriteCounts).reduce(
    (sum, counts) => ({ put: sum.put + counts.put, other: sum.other + counts.delete + counts.update }),
    { put: 0, other: 0 },
  );
  targets.push({
    name: 'A dead-lettered delivery (400)',
    goal: '≤ 2 table WU + its dead-index entry (1 put)',
    measured: `${dead.tableWriteUnits} table WU + ${describeIndexWrites(dead)}`,
    met: dead.tableWriteUnits <= 2 && deadOps.put <= 1 && deadOps.other === 0,
  });

  for (const eventBytes of EVENT_SIZES) {
    const ours = workload('handoff', eventBytes).cost.total;
    const theirs = workload('powertools', eventBytes).cost.total;
    targets.push({
      name: `Cost per million delivered events, ${eventBytes === 2048 ? '2-KB' : `${eventBytes}-byte`} event, handoff / Powertools`,
      goal: '≤ 1.10x (full ledger kept)',
      measured: `${(ours / theirs).toFixed(2)}x (${dollars(ours)} / ${dollars(theirs)})`,
      met: ours / theirs <= 1.1,
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
    targets.push({
      name: `Billed write units per (event, endpoint) delivered, ${f.metered.run.endpoints} endpoint(s), 300-byte event`,
      goal: '≤ 2.00',
      measured: `${fixed(f.per.usage.writeUnits)} (table ${fixed(d.tableWriteUnits / f.metered.deliveries)} + index ${fixed(d.indexUnits / f.metered.deliveries)})`,
      met: f.per.usage.writeUnits <= 2,
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
  return [
    {
      name: 'Billed write units per delivered event, healthy endpoint (registry, endpoint health on)',
      goal: '≤ 2.00, nothing written on the registry',
      measured: `${fixed(healthy.ledger.writeUnits)} (table ${fixed(healthy.ledger.writeUnits - healthy.ledger.indexUnits)} + index ${fixed(healthy.ledger.indexUnits)}); registry ${fixed(healthy.registry.writeUnits)} WU`,
      met: healthy.ledger.writeUnits <= 2 && healthy.registry.writeUnits === 0,
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
