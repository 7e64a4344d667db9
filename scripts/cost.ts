/**
 * `npm run cost`: what a delivered event costs on AWS, in billed units and in dollars.
 *
 * Runs the real consumers (handoff's batch use case with its DynamoDB ledger; Powertools'
 * `BatchProcessor` + `makeIdempotent`; a naive POST) against dynalite and a loopback receiver.
 * Every DynamoDB request passes a metering proxy that prices it by DynamoDB's rules from the item
 * before and after it and the table's key and indexes as DescribeTable reports them
 * (scripts/cost/billing.ts), so it prices whatever schema the tables have. SQS requests are
 * counted at the queue adapter and for Lambda's event source; Lambda time is each invocation's
 * wall time here, at the stack's memory size.
 *
 * Prints: the schema priced; billed units per handoff scenario; per consumer and event size, units
 * per delivered event and dollars per million at the published prices; the busiest partition key
 * value over runs of 1,000 and 10,000 deliveries; fan-out through the endpoint registry to 1, 3 and
 * 10 endpoints beside the single-URL consumer, per (event, endpoint) delivered (scripts/cost/fan-out.ts);
 * endpoint health, per delivery: healthy, a pausing 429, held by a pause, parked, released after
 * `enable` and delivered (scripts/cost/endpoint-health.ts); per-shipment ordering beside an unordered
 * delivery: in its turn, waiting then woken (scripts/cost/ordering.ts, `-- --ordering` alone); and the
 * targets, MET or MISSED.
 *
 * Exits 1 when the happy path takes more than 2 write requests or any read on AWS (a regression).
 * Missed billed-unit targets are printed, not failed.
 */
import { performance } from 'node:perf_hooks';
import type { DeliveryResult } from '../lib/deliver';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { ENDPOINTS_CACHE_MS } from '../lib/endpoints/registry';
import { createEndpointsTable, seedEndpoints } from '../sandbox/endpoints-table';
import { createLedgerTable } from '../sandbox/ledger-table';
import { emulatorDynamoDbClient, startDynalite } from '../test/helpers/dynalite';
import { startTestReceiver, type TestReceiver } from '../test/helpers/receiver';
import { writeUnits } from './cost/billing';
import {
  benchConsumer,
  CONSUMER_LABELS,
  createPowertoolsTable,
  handoffConsumer,
  SETTINGS,
  type ConsumerName,
  type Invoke,
} from './cost/consumers';
import {
  FAN_OUT_ENDPOINTS,
  FAN_OUT_EVENT_BYTES,
  meterFanOut,
  perDelivery,
  timeFanOuts,
  type FanOutMetered,
  type FanOutPerDelivery,
  type FanOutRun,
} from './cost/fan-out';
import { HEALTH_BATCH, HEALTH_EVENT_BYTES, healthFigures, runHealthScenarios, type HealthFigures, type HealthMeasure } from './cost/endpoint-health';
import { consumerMemorySize } from './cost/lambda-memory';
import { orderingSums, runOrderingScenarios } from './cost/ordering';
import { DynamoDbUsage, startMeteringProxy } from './cost/metering-proxy';
import { costPerMillionEvents, lambdaGbSeconds, PRICES, type CostPerMillion, type UsagePerEvent } from './cost/prices';
import { describeIndexWrites, describeShape, dollars, fixed, formatTable, formatTargets, percent, type Target } from './cost/report';
import {
  partitionShares,
  runMix,
  runScenario,
  meterWorkload,
  timeWorkloads,
  SCENARIO_EVENT_BYTES,
  SCENARIOS,
  type Meters,
  type MixResult,
  type ScenarioClock,
  type ScenarioResult,
  type WorkloadResult,
} from './cost/runs';
import { startSqsMeter } from './cost/sqs-meter';

const HAPPY_PATH_MAX_WRITES = 2;
const HAPPY_PATH_MAX_READS = 0;
const EVENT_SIZES = [300, 2048] as const;
const WORKLOAD_BATCHES = 20;
/** `-- --quick`: a smoke run, with smaller hot-partition runs (its share target does not apply). */
const QUICK = process.argv.includes('--quick');
const MIX_SIZES = QUICK ? [200, 1_000] : [1_000, 10_000];
/** `-- --health`: the endpoint health scenarios alone, and their targets. */
const HEALTH_ONLY = process.argv.includes('--health');
/** `-- --ordering`: the per-shipment ordering scenarios alone (docs/contract.md §13). */
const ORDERING_ONLY = process.argv.includes('--ordering');
const CONSUMERS: readonly ConsumerName[] = ['handoff', 'powertools', 'naive'];
/** Producer batches per fan-out run (10 endpoints: ten times the deliveries). */
const FAN_OUT_ROUNDS = QUICK ? 10 : 20;
/** Routing may add at most this many SQS requests per delivery to the single-URL consumer's. */
const ROUTING_MAX_ADDED_SQS = 0.3;
/** Lambda's figure is wall time on a shared machine: a few percent apart between runs of the same code. */
const LAMBDA_NOISE = 1.1;

const TABLES = {
  scenarios: 'handoff-ledger-cost-scenarios',
  workload: 'handoff-ledger-cost-workload',
  mix: (deliveries: number) => `handoff-ledger-cost-mix-${deliveries}`,
  powertools: 'powertools-idempotency-cost',
  fanOut: 'handoff-ledger-cost-fan-out',
  registry: (endpoints: number) => `handoff-endpoints-cost-${endpoints}`,
};

interface PricedFanOut {
  readonly metered: FanOutMetered;
  readonly per: FanOutPerDelivery;
  readonly cost: CostPerMillion;
  /** One read of its registry (a consistent Scan of its endpoints), when it has one. */
  readonly registryReadUnits: number | undefined;
}

interface PricedWorkload {
  readonly consumer: ConsumerName;
  readonly eventBytes: number;
  readonly run: WorkloadResult;
  /** Each timed invocation's wall time, ms. */
  readonly durationsMs: readonly number[];
  readonly perEvent: UsagePerEvent;
  readonly cost: CostPerMillion;
}

async function main(): Promise<number> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const startedAt = performance.now();
  const dynalite = await startDynalite();
  const direct = emulatorDynamoDbClient(dynalite.endpoint);
  const proxy = await startMeteringProxy(dynalite.endpoint, direct);
  const receiver = await startTestReceiver();
  const sqs = startSqsMeter();
  const meters: Meters = { dynamodb: proxy, sqs, receiver };
  const memory = consumerMemorySize();
  const closers: (() => void)[] = [];
  const receivers: TestReceiver[] = [];

  try {
    for (const table of [TABLES.scenarios, TABLES.workload, ...MIX_SIZES.map(TABLES.mix)]) await createLedgerTable(direct, table);
    await createPowertoolsTable(direct, TABLES.powertools);
    const ledgerShape = await proxy.shapeOf(TABLES.scenarios);

    console.log(`Billed cost of delivery on AWS, at on-demand prices for ${PRICES.region} as of ${PRICES.asOf}:`);
    console.log(
      `DynamoDB $${PRICES.dynamodbPerMillionWriteUnits}/M write units, $${PRICES.dynamodbPerMillionReadUnits}/M read units; ` +
        `SQS $${PRICES.sqsPerMillionRequests}/M requests (64 KB chunks); Lambda arm64 $${PRICES.lambdaPerGbSecond}/GB-s, ` +
        `$${PRICES.lambdaPerMillionInvocations}/M invocations.`,
    );
    console.log(`Consumer memory: ${memory.memoryMb} MB (${memory.source}). Batches of ${SETTINGS.batchSize} records.`);
    console.log(`Schema priced (read with DescribeTable): ${describeShape(ledgerShape)}`);
    console.log(`Powertools: ${describeShape(await proxy.shapeOf(TABLES.powertools))}\n`);

    if (ORDERING_ONLY) {
      const orderingMeasures = await runOrderingScenarios({ meters, proxy, direct, prefix: 'handoff-cost-ordering', closers });
      printOrdering(orderingMeasures.map((m) => healthFigures(m)));
      return finish([], healthUsages(orderingMeasures), startedAt);
    }
    if (HEALTH_ONLY) {
      const healthMeasures = await runHealthScenarios({ meters, proxy, direct, prefix: 'handoff-cost-health', closers });
      const health = healthMeasures.map((m) => healthFigures(m));
      printHealth(health, memory.memoryMb);
      return finish(assessHealthTargets(health, healthMeasures), healthUsages(healthMeasures), startedAt);
    }

    // --- handoff's scenarios ---------------------------------------------------------------------
    const scenarioClock: ScenarioClock = { ms: Date.now() };
    const results: DeliveryResult[] = [];
    const scenarioHandoff = handoffConsumer({
      dynamodbEndpoint: proxy.endpoint,
      direct,
      tableName: TABLES.scenarios,
      sqs: sqs.client,
      webhookUrl: receiver.url,
      clock: { nowMs: () => scenarioClock.ms },
      onResult: (result) => results.push(result),
    });
    closers.push(() => scenarioHandoff.close());
    const scenarios: ScenarioResult[] = [];
    for (const [index, scenario] of SCENARIOS.entries()) {
      scenarios.push(
        await runScenario(scenario, `evt_cost_${index}`, { invoke: scenarioHandoff.invoke, clock: scenarioClock, results }, meters),
      );
    }
    printScenarios(scenarios);

    // --- per delivered event, three consumers, two sizes ------------------------------------------
    const handoff = handoffConsumer({
      dynamodbEndpoint: proxy.endpoint,
      direct,
      tableName: TABLES.workload,
      sqs: sqs.client,
      webhookUrl: receiver.url,
      clock: { nowMs: Date.now },
    });
    closers.push(() => handoff.close());
    const environment = { dynamodbEndpoint: proxy.endpoint, webhookUrl: receiver.url, idempotencyTable: TABLES.powertools };
    const invokers: Record<ConsumerName, Invoke> = {
      handoff: handoff.invoke,
      powertools: await benchConsumer('powertools', environment),
      naive: await benchConsumer('naive', environment),
    };
    const priced: PricedWorkload[] = [];
    for (const eventBytes of EVENT_SIZES) {
      const workloads = CONSUMERS.map((consumer) => ({
        name: consumer,
        invoke: invokers[consumer],
        options: { prefix: `evt_${consumer}_${eventBytes}`, eventBytes, batches: WORKLOAD_BATCHES, batchSize: SETTINGS.batchSize },
      }));
      const runs = [];
      for (const workload of workloads) runs.push(await meterWorkload(workload.invoke, workload.options, meters));
      const durations = await timeWorkloads(workloads, meters);
      for (const [i, consumer] of CONSUMERS.entries()) {
        const run = runs[i];
        if (run === undefined) throw new Error(`no run for ${consumer}`);
        const durationsMs = durations[consumer];
        const perEvent = usagePerEvent(run, durationsMs, memory.memoryMb);
        priced.push({ consumer, eventBytes, run, durationsMs, perEvent, cost: costPerMillionEvents(perEvent) });
      }
    }
    printWorkloads(priced, memory.memoryMb);

    // --- hot partitions ---------------------------------------------------------------------------
    const mixes: MixResult[] = [];
    for (const deliveries of MIX_SIZES) {
      const mixClock = { offsetMs: 0 };
      const consumer = handoffConsumer({
        dynamodbEndpoint: proxy.endpoint,
        direct,
        tableName: TABLES.mix(deliveries),
        sqs: sqs.client,
        webhookUrl: receiver.url,
        clock: { nowMs: () => Date.now() + mixClock.offsetMs },
      });
      closers.push(() => consumer.close());
      // Created empty above and written only from here, through the meter.
      proxy.seesEveryWrite(TABLES.mix(deliveries));
      mixes.push(
        await runMix(
          consumer.invoke,
          mixClock,
          { prefix: `evt_mix${deliveries}`, deliveries, batchSize: SETTINGS.batchSize, concurrency: SETTINGS.maxConcurrency },
          meters,
        ),
      );
    }
    printMixes(mixes);

    // --- fan-out through the registry -------------------------------------------------------------
    await createLedgerTable(direct, TABLES.fanOut);
    const fanOutOptions = { rounds: FAN_OUT_ROUNDS, batchSize: SETTINGS.batchSize, eventBytes: FAN_OUT_EVENT_BYTES };
    const newReceiver = async () => {
      const started = await startTestReceiver();
      receivers.push(started);
      return started;
    };
    const singleReceiver = await newReceiver();
    const single = handoffConsumer({
      dynamodbEndpoint: proxy.endpoint,
      direct,
      tableName: TABLES.fanOut,
      sqs: sqs.client,
      webhookUrl: singleReceiver.url,
      clock: { nowMs: Date.now },
    });
    closers.push(() => single.close());
    const runs: FanOutRun[] = [
      { label: 'single-URL (no registry)', endpoints: 1, registry: false, invoke: single.invoke, prefix: 'evt_fan_single', receivers: [singleReceiver] },
    ];
    const registryReads = new Map<FanOutRun, number>();
    const registryReader = emulatorDynamoDbClient(proxy.endpoint);
    closers.push(() => registryReader.destroy());
    for (const endpoints of FAN_OUT_ENDPOINTS) {
      const table = TABLES.registry(endpoints);
      await createEndpointsTable(direct, table);
      const endpointReceivers: TestReceiver[] = [];
      for (let i = 0; i < endpoints; i++) endpointReceivers.push(await newReceiver());
      await seedEndpoints(
        new DynamoDbEndpointRegistry({ client: direct, tableName: table }),
        endpointReceivers.map((r, i) => ({ name: `endpoint-${i + 1}`, url: r.url, eventTypes: ['*'] })),
        Date.now(),
      );
      const consumer = handoffConsumer({
        dynamodbEndpoint: proxy.endpoint,
        direct,
        tableName: TABLES.fanOut,
        registryTable: table,
        sqs: sqs.client,
        webhookUrl: singleReceiver.url,
        clock: { nowMs: Date.now },
      });
      closers.push(() => consumer.close());
      const run: FanOutRun = {
        label: `${endpoints} endpoint${endpoints === 1 ? '' : 's'} (registry)`,
        endpoints,
        registry: true,
        invoke: consumer.invoke,
        prefix: `evt_fan_${endpoints}`,
        receivers: endpointReceivers,
      };
      runs.push(run);
      // What one read of the registry costs (the consumer's, every ENDPOINTS_CACHE_MS per container).
      const read = proxy.start();
      await new DynamoDbEndpointRegistry({ client: registryReader, tableName: table }).list();
      registryReads.set(run, read.readUnits);
    }
    const fanOutMetered: FanOutMetered[] = [];
    for (const run of runs) fanOutMetered.push(await meterFanOut(run, fanOutOptions, meters));
    const fanOutTimes = await timeFanOuts(runs, fanOutOptions, meters);
    const fanOuts: PricedFanOut[] = fanOutMetered.map((metered) => {
      const per = perDelivery(metered, fanOutTimes.get(metered.run) ?? [], memory.memoryMb);
      return { metered, per, cost: costPerMillionEvents(per.usage), registryReadUnits: registryReads.get(metered.run) };
    });
    printFanOuts(fanOuts, memory.memoryMb);

    // --- endpoint health ----------------------------------------------------------------------------
    const healthMeasures = await runHealthScenarios({ meters, proxy, direct, prefix: 'handoff-cost-health', closers });
    const health = healthMeasures.map((m) => healthFigures(m));
    printHealth(health, memory.memoryMb);

    // --- per-shipment ordering ----------------------------------------------------------------------
    const orderingMeasures = await runOrderingScenarios({ meters, proxy, direct, prefix: 'handoff-cost-ordering', closers });
    printOrdering(orderingMeasures.map((m) => healthFigures(m)));

    const usages = [
      ...scenarios.map((s) => s.dynamodb),
      ...priced.map((p) => p.run.dynamodb),
      ...mixes.map((m) => m.dynamodb),
      ...fanOutMetered.map((f) => f.dynamodb),
      ...healthUsages(healthMeasures),
      ...healthUsages(orderingMeasures),
    ];
    const targets = [...assessTargets(scenarios, priced, mixes), ...assessFanOutTargets(fanOuts), ...assessHealthTargets(health, healthMeasures)];
    return finish(targets, usages, startedAt);
  } finally {
    for (const close of closers) close();
    direct.destroy();
    sqs.client.destroy();
    await receiver.close();
    for (const started of receivers) await started.close();
    await proxy.close();
    await dynalite.close();
  }
}

/** Refuses unpriced requests, prints the capacity check and the targets; the exit status. */
function finish(targets: readonly Target[], usages: readonly DynamoDbUsage[], startedAt: number): number {
  const unmetered = usages.flatMap((usage) => Object.keys(usage.unmetered));
  if (unmetered.length > 0) throw new Error(`requests the cost model does not price were made: ${[...new Set(unmetered)].join(', ')}`);
  printCapacityCheck(usages);
  console.log(`\nTargets (one run, ${((performance.now() - startedAt) / 1000).toFixed(0)} s in all)\n`);
  console.log(formatTargets(targets));
  if (targets.some((t) => !t.met && t.failsRun)) {
    console.error(
      `\nFAIL: the happy path must take at most ${HAPPY_PATH_MAX_WRITES} write requests and ${HAPPY_PATH_MAX_READS} reads on AWS`,
    );
    return 1;
  }
  return 0;
}

/** The metered usages of the health steps (a combined row repeats its steps' and is left out). */
function healthUsages(measures: readonly HealthMeasure[]): DynamoDbUsage[] {
  return measures.flatMap((m) => (m.dynamodb instanceof DynamoDbUsage ? [m.dynamodb] : []));
}

/**
 * Per delivered event. Lambda is billed as if every invocation took the median batch time: on a
 * shared machine a few stalled batches would otherwise decide the figure.
 */
function usagePerEvent(run: WorkloadResult, durationsMs: readonly number[], memoryMb: number): UsagePerEvent {
  const n = run.delivered;
  const typicalMs = medianOf(durationsMs);
  return {
    writeUnits: run.dynamodb.writeUnits / n,
    readUnits: run.dynamodb.readUnits / n,
    sqsRequests: run.sqs.billedRequests / n,
    lambdaGbSeconds: lambdaGbSeconds(Array<number>(run.invocations).fill(typicalMs), memoryMb) / n,
    lambdaInvocations: run.invocations / n,
  };
}

function printScenarios(results: readonly ScenarioResult[]): void {
  console.log(`handoff, one ${SCENARIO_EVENT_BYTES}-byte event per scenario: requests and billed units on AWS\n`);
  const rows = results.map(({ scenario, dynamodb, sqs }) => [
    scenario.name,
    String(scenario.expected.length),
    `${dynamodb.writeRequests}${dynamodb.refusedWrites > 0 ? ` (${dynamodb.refusedWrites} refused)` : ''}`,
    String(dynamodb.readRequests),
    String(dynamodb.tableWriteUnits),
    describeIndexWrites(dynamodb),
    String(dynamodb.writeUnits),
    fixed(dynamodb.readUnits),
    `${sqs.billedRequests} (${Object.entries(sqs.requests)
      .map(([operation, n]) => `${operation.replace(' (event source)', '*')} ${n}`)
      .join(', ')})`,
  ]);
  console.log(
    formatTable(
      ['scenario', 'messages', 'DDB writes', 'DDB reads', 'table WU', 'index WU (ops)', 'total WU', 'RU', 'SQS requests'],
      rows,
    ),
  );
  console.log(
    '\nRefused conditional writes are billed on the item that is there (at least 1 unit) and change no index. AWS returns\n' +
      'the row with a refusal (ALL_OLD) at no read cost, so no GetItem follows (dynalite would need one). * Lambda\'s event\n' +
      'source: a receive per batch and a delete for the records it removes, billed to the same account.\n',
  );
}

function printWorkloads(priced: readonly PricedWorkload[], memoryMb: number): void {
  console.log(`Per delivered event: ${WORKLOAD_BATCHES} batches of ${SETTINGS.batchSize} new events per consumer and size, all accepted\n`);
  const powertools = (eventBytes: number) => priced.find((p) => p.consumer === 'powertools' && p.eventBytes === eventBytes);
  const rows = priced.map((p) => {
    const median = medianOf(p.durationsMs);
    const base = powertools(p.eventBytes);
    return [
      CONSUMER_LABELS[p.consumer],
      p.eventBytes === 2048 ? '2 KB' : `${p.eventBytes} B`,
      fixed(p.run.dynamodb.writeRequests / p.run.delivered),
      `${fixed(p.perEvent.writeUnits)} (${fixed(p.run.dynamodb.tableWriteUnits / p.run.delivered)} + ${fixed(p.run.dynamodb.indexUnits / p.run.delivered)})`,
      fixed(p.perEvent.readUnits),
      p.run.dynamodb.largestItemBytes === 0 ? '-' : String(p.run.dynamodb.largestItemBytes),
      fixed(p.perEvent.sqsRequests),
      median.toFixed(1),
      (p.perEvent.lambdaGbSeconds * 1e6).toFixed(0),
      dollars(p.cost.dynamodb),
      dollars(p.cost.sqs),
      dollars(p.cost.lambda),
      dollars(p.cost.total),
      base === undefined ? '-' : `${(p.cost.total / base.cost.total).toFixed(2)}x`,
    ];
  });
  console.log(
    formatTable(
      [
        'consumer',
        'event',
        'DDB writes',
        'WU (table + index)',
        'RU',
        'row bytes',
        'SQS req',
        'batch ms (median)',
        `µGB-s @${memoryMb} MB`,
        'DynamoDB $/M',
        'SQS $/M',
        'Lambda $/M',
        'total $/M',
        'vs Powertools',
      ],
      rows,
    ),
  );
  const per100Ms = costPerMillionEvents({
    writeUnits: 0,
    readUnits: 0,
    sqsRequests: 0,
    lambdaGbSeconds: lambdaGbSeconds([100], memoryMb) / SETTINGS.batchSize,
    lambdaInvocations: 0,
  }).lambda;
  console.log(
    [
      '',
      `$/M: dollars per million delivered events (${PRICES.region}, prices as of ${PRICES.asOf}). WU: table + index write units.`,
      'Lambda: every invocation billed at the median batch wall time of a second, unmetered pass (the consumers taking',
      "turns batch by batch), against dynalite in this process (its CPU stands in for DynamoDB's latency) and a receiver",
      `that answers at once; on AWS the receiver's response time adds to each consumer alike (${dollars(per100Ms)}/M per 100 ms`,
      `per batch of ${SETTINGS.batchSize}). Left out, the same for all three: the producer's SendMessage, the event source's idle polls.`,
      '',
    ].join('\n'),
  );
}

function printMixes(mixes: readonly MixResult[]): void {
  console.log('Hot partitions: write units per partition key value, for the table and each index (docs/contract.md §5)\n');
  for (const mix of mixes) {
    const { total, scopes } = partitionShares(mix.dynamodb);
    console.log(
      `${mix.deliveries.toLocaleString('en-US')} deliveries (${mix.delivered - mix.retried} delivered, ${mix.retried} after a 503, ` +
        `${mix.dead} dead), ${SETTINGS.maxConcurrency} batches at once: ${mix.seconds.toFixed(1)} s; ${total} write units, ` +
        `${fixed(mix.dynamodb.writeUnits / mix.deliveries)} per delivery`,
    );
    console.log(
      formatTable(
        ['table / index', 'write units', 'key values', 'busiest value', 'its units', 'share of all writes'],
        scopes.map((s) => [s.scope, String(s.units), String(s.values), truncate(s.largestValue), String(s.largestUnits), percent(s.largestUnits / total)]),
      ),
    );
    console.log('');
  }
}

function printCapacityCheck(usages: readonly DynamoDbUsage[]): void {
  const agrees = usages.reduce((sum, u) => sum + u.capacityAgrees, 0);
  const differs = usages.reduce((sum, u) => sum + u.capacityDiffers, 0);
  const first = usages.find((u) => u.firstCapacityDifference !== undefined)?.firstCapacityDifference;
  console.log(
    `Table write units checked against dynalite's ConsumedCapacity (TOTAL): ${agrees} writes agree, ${differs} differ` +
      `${first === undefined ? '' : ` (first: ${first})`}. dynalite reports the table only: index units are the model's alone.`,
  );
}

function assessTargets(scenarios: readonly ScenarioResult[], priced: readonly PricedWorkload[], mixes: readonly MixResult[]): Target[] {
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

function printFanOuts(fanOuts: readonly PricedFanOut[], memoryMb: number): void {
  const base = fanOuts.find((f) => !f.metered.run.registry);
  const first = fanOuts[0];
  console.log(
    `Fan-out: per (event, endpoint) delivered, ${FAN_OUT_EVENT_BYTES}-byte events, ${first?.metered.events ?? 0} events per run ` +
      `(${FAN_OUT_ROUNDS} batches of ${SETTINGS.batchSize}), every endpoint subscribed to every event, all accepted\n`,
  );
  const operations = ['SendMessageBatch', 'ReceiveMessage*', 'DeleteMessageBatch*', 'ChangeMessageVisibility'];
  const rows = fanOuts.map((f) => {
    const { metered, per, cost } = f;
    const d = metered.dynamodb;
    return [
      metered.run.label,
      String(metered.deliveries),
      `${fixed(per.usage.writeUnits)} (${fixed(d.tableWriteUnits / metered.deliveries)} + ${fixed(d.indexUnits / metered.deliveries)})`,
      fixed(per.usage.readUnits, 3),
      `${fixed(per.usage.sqsRequests, 3)} (${operations.map((op) => fixed(per.sqsByOperation[op] ?? 0, 3)).join(' / ')})`,
      fixed(per.usage.lambdaInvocations, 3),
      `${per.producerMedianMs.toFixed(1)}${metered.endpointInvocations > 0 ? ` / ${per.endpointMedianMs.toFixed(1)}` : ''}`,
      (per.usage.lambdaGbSeconds * 1e6).toFixed(0),
      dollars(cost.dynamodb),
      dollars(cost.sqs),
      dollars(cost.lambda),
      dollars(cost.total),
      base === undefined ? '-' : `${(cost.total / base.cost.total).toFixed(2)}x`,
    ];
  });
  console.log(
    formatTable(
      [
        'run',
        'deliveries',
        'WU (table + index)',
        'RU',
        'SQS req (send batch / receive* / delete* / visibility)',
        'invocations',
        'batch ms (producer / per-endpoint)',
        `µGB-s @${memoryMb} MB`,
        'DynamoDB $/M',
        'SQS $/M',
        'Lambda $/M',
        'total $/M',
        'vs single-URL',
      ],
      rows,
    ),
  );
  const reads = fanOuts
    .filter((f) => f.registryReadUnits !== undefined)
    .map((f) => `${f.metered.run.endpoints}: ${fixed(f.registryReadUnits!, 2)} RU`)
    .join(', ');
  console.log(
    [
      '',
      `Every figure per (event, endpoint) delivered; $/M: dollars per million deliveries. * Lambda's event source. With 2 or more`,
      "endpoints a producer's batch is routed (one SendMessageBatch per 10 endpoint messages), then each endpoint message is",
      'received, delivered and deleted on its own; with 1 the message is delivered as it is. Lambda: each invocation billed at',
      'its kind\'s median batch time (producer batches and per-endpoint batches), from a pass with the runs taking turns.',
      `The registry is read once per container per ${ENDPOINTS_CACHE_MS / 1000} s (a consistent Scan; by endpoints: ${reads}), not per`,
      "delivery: any read inside the metered rounds is in RU. The meter answers SQS at once: on AWS a routing invocation also",
      `waits for its SendMessageBatch calls (sent at once), ${dollars(perTenMsOfRouting(3, memoryMb))}/M deliveries per 10 ms they add to a batch routed to 3`,
      "endpoints. Left out, as above: the producer's SendMessage, the event source's idle polls.",
      '',
    ].join('\n'),
  );
}

/** Lambda dollars per million deliveries for each 10 ms a producer batch routed to `endpoints` takes. */
function perTenMsOfRouting(endpoints: number, memoryMb: number): number {
  return costPerMillionEvents({
    writeUnits: 0,
    readUnits: 0,
    sqsRequests: 0,
    lambdaGbSeconds: lambdaGbSeconds([10], memoryMb) / (SETTINGS.batchSize * endpoints),
    lambdaInvocations: 0,
  }).lambda;
}

function assessFanOutTargets(fanOuts: readonly PricedFanOut[]): Target[] {
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

function printHealth(rows: readonly HealthFigures[], memoryMb: number): void {
  console.log(
    `Endpoint health: per delivery, ${HEALTH_EVENT_BYTES}-byte events, batches of ${HEALTH_BATCH} (one for the 429), one endpoint ` +
      'in a registry (docs/contract.md §12)\n',
  );
  console.log(healthTable(rows));
  const waitCost = costPerMillionEvents({
    writeUnits: 0,
    readUnits: 0,
    sqsRequests: 0,
    lambdaGbSeconds: lambdaGbSeconds([1000], memoryMb) / HEALTH_BATCH,
    lambdaInvocations: 0,
  }).lambda;
  console.log(
    [
      '',
      `Every figure per delivery; $/M: dollars per million deliveries (${PRICES.region}, prices as of ${PRICES.asOf}),`,
      "DynamoDB and SQS only: Lambda's time is in the tables above (a held or parked delivery sends no request, so its",
      `invocation is shorter; a rate-limited batch waits in the invocation for slots up to a second away: ${dollars(waitCost)}/M`,
      `deliveries per second waited, at ${memoryMb} MB and ${HEALTH_BATCH} per batch). * Lambda's event source.`,
      `Each consumer reads the registry once per container per ${ENDPOINTS_CACHE_MS / 1000} s, before metering here. A held`,
      "delivery costs the 'paused' row's requests at every receive until the pause ends (its visibility is set to what is left). The",
      "release is two runs of the scheduled recovery: each scans the registry's resume attributes and queries the endpoint's",
      `16 parked shards (a cost per run, not per delivery: spread over ${HEALTH_BATCH} here); the first takes its window (one`,
      'registry write), unparks each row (listed pending until delivered) and sends its message; the second ends the release',
      "(one registry write). Rate-limited: one reservation (a registry write) per batch and endpoint; a delivery put back",
      "carries its slot and is not reserved again. A parked delivery received again (ApproximateReceiveCount > 1) is a",
      "producer's message: routing reads its rows first (one Query); its first park write is refused, being for a new row.",
      '',
    ].join('\n'),
  );
}

function printOrdering(steps: readonly HealthFigures[]): void {
  console.log(
    `Per-shipment ordering: per delivery, ${HEALTH_EVENT_BYTES}-byte events on the standard intake, batches of ${HEALTH_BATCH}, ` +
      'each event of a shipment of its own, one endpoint in a registry (docs/contract.md §13)\n',
  );
  const rows = [...steps, ...orderingSums(steps)];
  console.log(healthTable(rows));
  const find = (prefix: string) => rows.find((f) => f.name.startsWith(prefix));
  const base = find('unordered: delivered');
  const inTurn = find('ordered: in its turn, delivered');
  const waited = find('= a waiting event in all');
  const over = (f: HealthFigures | undefined) =>
    base === undefined || f === undefined
      ? '-'
      : `+${fixed(f.ledger.writeUnits - base.ledger.writeUnits)} WU, +${fixed(f.ledger.readUnits - base.ledger.readUnits, 3)} RU, ` +
        `+${fixed(f.sqsRequests - base.sqsRequests, 3)} SQS requests, +${dollars(f.cost.total - base.cost.total)}/M ` +
        `(${dollars(f.cost.total)}/M, ${(f.cost.total / base.cost.total).toFixed(2)}x)`;
  console.log(
    [
      '',
      `Overhead over the unordered delivery (${base === undefined ? '-' : dollars(base.cost.total)}/M): in its turn ${over(inTurn)};`,
      `an event that waited and was woken, in all ${over(waited)}.`,
      "The shipment head is an item of the ledger's table (no index entry): taking a number and passing the turn are a write",
      'each; the number is not asked for again (a second receive reads it from its claimed row, a woken or fanned-out',
      'delivery carries it on its message). The wake-up row is the waking step less its twin with nothing waiting. On the',
      'ordered (FIFO) intake the number is taken at routing and travels on the endpoint message: the same head writes.',
      "$/M: DynamoDB and SQS per million deliveries; Lambda apart. * Lambda's event source.",
      '',
    ].join('\n'),
  );
}

/** The per-delivery table of endpoint health and ordering steps. */
function healthTable(rows: readonly HealthFigures[]): string {
  const sqsText = (f: HealthFigures) =>
    `${fixed(f.sqsRequests, 3)} (${Object.entries(f.sqsByOperation)
      .map(([operation, n]) => `${operation} ${fixed(n, 3)}`)
      .join(', ')})`;
  const ops = (f: HealthFigures) =>
    (['put', 'delete', 'update'] as const)
      .filter((kind) => f.indexOps[kind] > 0)
      .map((kind) => `${fixed(f.indexOps[kind])} ${kind}`)
      .join(', ') || '-';
  return formatTable(
      ['scenario', 'decisions', 'ledger writes / reads', 'ledger WU (table + index)', 'index entries', 'ledger RU', 'registry WU', 'registry RU', 'SQS requests', 'DynamoDB $/M', 'SQS $/M', 'total $/M'],
      rows.map((f) => [
        f.name,
        f.decisions,
        `${fixed(f.ledger.writeRequests)} / ${fixed(f.ledger.readRequests)}`,
        `${fixed(f.ledger.writeUnits)} (${fixed(f.ledger.writeUnits - f.ledger.indexUnits)} + ${fixed(f.ledger.indexUnits)})${f.refusedWrites > 0 ? `, ${fixed(f.refusedWrites)} refused` : ''}`,
        ops(f),
        fixed(f.ledger.readUnits, 3),
        fixed(f.registry.writeUnits, 3),
        fixed(f.registry.readUnits, 3),
        sqsText(f),
        dollars(f.cost.dynamodb),
        dollars(f.cost.sqs),
        dollars(f.cost.total),
      ]),
    );
}

function assessHealthTargets(health: readonly HealthFigures[], measures: readonly HealthMeasure[]): Target[] {
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

function medianOf(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
}

function truncate(text: string, length = 32): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}

process.exitCode = await main().catch((error: unknown) => {
  console.error(error instanceof Error ? `cost: ${error.message}` : error);
  return 1;
});
