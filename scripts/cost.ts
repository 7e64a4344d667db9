/**
 * `npm run cost`: what a delivered event costs on AWS, in billed units and in dollars.
 *
 * Runs the real consumers (handoff's, made from its environment as functions/consumer.ts makes it;
 * Powertools' `BatchProcessor` + `makeIdempotent`; a naive POST) against dynalite and loopback
 * receivers, every SDK client pointed at a meter (scripts/cost/meter.ts) that prices each DynamoDB
 * request by DynamoDB's rules and the tables' shapes as DescribeTable reports them, and counts SQS
 * requests as billed (scripts/cost/billing.ts). Lambda time is each invocation's wall time here, at
 * the stack's memory size.
 *
 * Prints: the schema priced; billed units per handoff scenario; per consumer and event size, units
 * and dollars per million delivered events; the busiest partition key value over runs of 1,000 and
 * 10,000 deliveries; the cost per million at a steady 100 and 1,000 deliveries a second with the
 * ledger on demand and provisioned, beside EventBridge API destinations (scripts/cost/steady.ts);
 * fan-out through the registry to 1, 3 and 10 endpoints beside the single-URL consumer; a consumer
 * container's registry reads at 10 to 100,000 endpoints (scripts/cost/registry.ts; `-- --registry`
 * alone); endpoint health and per-shipment ordering per delivery (scripts/cost/health.ts;
 * `-- --health`, `-- --ordering` alone; `-- --quick` a smoke run); and the targets, MET or MISSED.
 * The decisions each run must lead to are asserted by test/cost/*.test.ts.
 *
 * Exits 1 when the happy path takes more than 2 write requests or any read on AWS (a regression).
 */
import { performance } from 'node:perf_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { createEndpointsTable, seedEndpoints } from '../sandbox/endpoints-table';
import { createLedgerTable } from '../sandbox/ledger-table';
import { emulatorDynamoDbClient, startDynalite } from '../test/helpers/dynalite';
import { startTestReceiver, type TestReceiver } from '../test/helpers/receiver';
import { costPerMillionEvents, MEMORY, PRICES } from './cost/billing';
import { benchConsumer, createPowertoolsTable, handoffConsumer, pointAwsAt, SETTINGS, type ConsumerName, type Invoke } from './cost/consumers';
import { healthFigures, healthRows, runHealthScenarios, runOrderingScenarios, type HealthMeasure } from './cost/health';
import { DynamoDbUsage, startMeter, type Meter } from './cost/meter';
import * as report from './cost/report';
import { printRegistry, printSteady, registryTargets } from './cost/report-scale';
import { CONTAINER_READERS, MEASURED_REGISTRY_SIZES, measureRegistries, type RegistryReadFigures } from './cost/registry';
import * as runs from './cost/runs';
import { measuredDelivery, shipmentIndexOf, steadyRows } from './cost/steady';
import { assessFanOutTargets, assessHealthTargets, assessHotItemTarget, assessTargets, EVENT_SIZES, HAPPY_PATH_MAX_READS, HAPPY_PATH_MAX_WRITES } from './cost/targets';
import { describeHotItems, runHotItems } from './cost/hot-item';

const WORKLOAD_BATCHES = 20;
const QUICK = process.argv.includes('--quick');
const MIX_SIZES = QUICK ? [200, 1_000] : [1_000, 10_000];
const FAN_OUT_ROUNDS = QUICK ? 10 : 20;
const REGISTRY_SIZES = QUICK ? MEASURED_REGISTRY_SIZES.slice(0, 2) : MEASURED_REGISTRY_SIZES;
const CONSUMERS: readonly ConsumerName[] = ['handoff', 'handoff-unindexed', 'powertools', 'naive'];
const TABLES = {
  scenarios: 'handoff-ledger-cost-scenarios',
  workload: 'handoff-ledger-cost-workload',
  /** Made without the shipment index, for a consumer with HANDOFF_SHIPMENT_INDEX=false. */
  unindexedScenarios: 'handoff-ledger-cost-scenarios-unindexed',
  unindexedWorkload: 'handoff-ledger-cost-workload-unindexed',
  mix: (deliveries: number) => `handoff-ledger-cost-mix-${deliveries}`,
  powertools: 'powertools-idempotency-cost',
  fanOut: 'handoff-ledger-cost-fan-out',
  registry: (endpoints: number) => `handoff-endpoints-cost-${endpoints}`,
  scale: 'handoff-endpoints-cost-scale',
};

async function main(): Promise<number> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const startedAt = performance.now();
  const dynalite = await startDynalite();
  const direct = emulatorDynamoDbClient(dynalite.endpoint);
  const meter = await startMeter(dynalite.endpoint, direct);
  pointAwsAt(meter.endpoint);
  const receiver = await startTestReceiver();
  const meters: runs.Meters = { meter, receiver };
  const receivers: TestReceiver[] = [receiver];
  const newReceiver = async () => receivers[receivers.push(await startTestReceiver()) - 1]!;
  const { memoryMb } = MEMORY;
  const health = { ...meters, direct, prefix: 'handoff-cost-health' };
  const ordering = { ...meters, direct, prefix: 'handoff-cost-ordering' };

  try {
    for (const table of [TABLES.scenarios, TABLES.workload, TABLES.fanOut, ...MIX_SIZES.map(TABLES.mix)]) await createLedgerTable(direct, table);
    for (const table of [TABLES.unindexedScenarios, TABLES.unindexedWorkload]) await createLedgerTable(direct, table, { shipmentIndex: false });
    await createPowertoolsTable(direct, TABLES.powertools);
    console.log(`Billed cost of delivery on AWS, at on-demand prices for ${PRICES.region} as of ${PRICES.asOf}:`);
    console.log(
      `DynamoDB $${PRICES.dynamodbPerMillionWriteUnits}/M write units, $${PRICES.dynamodbPerMillionReadUnits}/M read units; ` +
        `SQS $${PRICES.sqsPerMillionRequests}/M requests (64 KB chunks); Lambda arm64 $${PRICES.lambdaPerGbSecond}/GB-s, ` +
        `$${PRICES.lambdaPerMillionInvocations}/M invocations.`,
    );
    console.log(`Consumer memory: ${memoryMb} MB (${MEMORY.source}). Batches of ${SETTINGS.batchSize} records.`);
    console.log(`Schema priced (read with DescribeTable): ${report.describeShape(await meter.dynamodb.shapeOf(TABLES.scenarios))}`);
    console.log(`Powertools: ${report.describeShape(await meter.dynamodb.shapeOf(TABLES.powertools))}\n`);

    if (process.argv.includes('--ordering')) {
      const measures = await runOrderingScenarios(ordering);
      report.printOrdering(measures.map((m) => healthFigures(m)));
      return finish([], usages(measures), startedAt);
    }
    if (process.argv.includes('--registry')) {
      const figures = await containerRegistryReads(meter, direct);
      return finish(registryTargets(figures, CONTAINER_READERS), [], startedAt);
    }
    if (process.argv.includes('--hot-item')) {
      const hotItems = await runHotItems({ meter, direct, prefix: 'handoff-cost-hot', quick: QUICK });
      console.log(`Hot item, simulated outages (scripts/cost/hot-item.ts):\n${describeHotItems(hotItems).join('\n')}`);
      return finish([assessHotItemTarget(hotItems)], [], startedAt);
    }
    if (process.argv.includes('--health')) {
      const measures = await runHealthScenarios(health);
      report.printHealth(healthRows(measures), memoryMb);
      return finish(assessHealthTargets(healthRows(measures), measures), usages(measures), startedAt);
    }

    const scenarios = await runs.runScenarios(TABLES.scenarios, meters);
    report.printScenarios(scenarios);
    // The delivered event again, the shipment index off: a table made without it, the consumer's setting off.
    const unindexed = await runs.runScenarios(TABLES.unindexedScenarios, meters, 'evt_cost_unindexed', { scenarios: [runs.SCENARIOS[0]!], shipmentIndex: false });
    report.printScenarios(unindexed, `the shipment index off (${report.describeShape(await meter.dynamodb.shapeOf(TABLES.unindexedScenarios))})`);

    // --- per delivered event, three consumers, two sizes ---
    const invokers: Record<ConsumerName, Invoke> = {
      handoff: handoffConsumer({ ledgerTable: TABLES.workload, webhookUrl: receiver.url }).invoke,
      'handoff-unindexed': handoffConsumer({ ledgerTable: TABLES.unindexedWorkload, webhookUrl: receiver.url, shipmentIndex: false }).invoke,
      powertools: await benchConsumer('powertools', { webhookUrl: receiver.url, idempotencyTable: TABLES.powertools }),
      naive: await benchConsumer('naive', { webhookUrl: receiver.url, idempotencyTable: TABLES.powertools }),
    };
    const priced: report.PricedWorkload[] = [];
    for (const eventBytes of EVENT_SIZES) {
      const workloads = CONSUMERS.map((name) => ({
        name,
        invoke: invokers[name],
        options: { prefix: `evt_${name}_${eventBytes}`, eventBytes, batches: WORKLOAD_BATCHES, batchSize: SETTINGS.batchSize },
      }));
      const metered = [];
      for (const w of workloads) metered.push(await runs.meterWorkload(w.invoke, w.options, meter));
      const durations = await runs.timeWorkloads(workloads, meter);
      for (const [i, consumer] of CONSUMERS.entries()) {
        const run = metered[i]!;
        // Every invocation billed at the median batch time: a few stalled batches would otherwise decide it.
        const perEvent = runs.usagePer(run.delivered, run, Array<number>(run.invocations).fill(runs.median(durations[consumer])), memoryMb);
        priced.push({ consumer, eventBytes, run, durationsMs: durations[consumer], perEvent, cost: costPerMillionEvents(perEvent) });
      }
    }
    report.printWorkloads(priced, memoryMb);

    // --- at a steady load: the 300-byte handoff workload's units, on demand and provisioned ---
    const steady = priced.find((p) => p.consumer === 'handoff' && p.eventBytes === EVENT_SIZES[0]);
    if (steady === undefined) throw new Error('no handoff workload to price at a steady load');
    const ledgerShape = await meter.dynamodb.shapeOf(TABLES.workload);
    const measured = measuredDelivery(steady.run, steady.perEvent, ledgerShape);
    printSteady(steadyRows(measured), measured, ledgerShape, shipmentIndexOf(ledgerShape));

    const mixes: runs.MixResult[] = [];
    for (const deliveries of MIX_SIZES) {
      const options = { prefix: `evt_mix${deliveries}`, deliveries, batchSize: SETTINGS.batchSize, concurrency: SETTINGS.maxConcurrency };
      mixes.push(await runs.runMix(TABLES.mix(deliveries), options, meters));
    }
    report.printMixes(mixes);

    // --- fan-out through the registry ---
    const fanOutOptions = { rounds: FAN_OUT_ROUNDS, batchSize: SETTINGS.batchSize };
    const fanOutRuns: runs.FanOutRun[] = [];
    const registryReads = new Map<runs.FanOutRun, number>();
    const registryReader = emulatorDynamoDbClient(meter.endpoint);
    // The single-URL consumer (no registry), then the registry routing to 1, 3 and 10 endpoints.
    for (const endpoints of [0, ...runs.FAN_OUT_ENDPOINTS]) {
      const endpointReceivers: TestReceiver[] = [];
      for (let i = 0; i < Math.max(1, endpoints); i++) endpointReceivers.push(await newReceiver());
      const common = { registry: endpoints > 0, endpoints: Math.max(1, endpoints), receivers: endpointReceivers };
      if (endpoints === 0) {
        const consumer = handoffConsumer({ ledgerTable: TABLES.fanOut, webhookUrl: endpointReceivers[0]!.url });
        fanOutRuns.push({ ...common, label: 'single-URL (no registry)', consumer, prefix: 'evt_fan_single' });
        continue;
      }
      const table = TABLES.registry(endpoints);
      await createEndpointsTable(direct, table);
      const fields = endpointReceivers.map((r, i) => ({ name: `endpoint-${i + 1}`, url: r.url, eventTypes: ['*'] }));
      await seedEndpoints(new DynamoDbEndpointRegistry({ client: direct, tableName: table }), fields, Date.now());
      const consumer = handoffConsumer({ ledgerTable: TABLES.fanOut, registryTable: table });
      const run: runs.FanOutRun = { ...common, label: `${endpoints} endpoint${endpoints === 1 ? '' : 's'} (registry)`, consumer, prefix: `evt_fan_${endpoints}` };
      fanOutRuns.push(run);
      // What one read of the registry costs (the consumer's, every ENDPOINTS_CACHE_MS per container).
      const read = meter.dynamodb.start();
      await new DynamoDbEndpointRegistry({ client: registryReader, tableName: table }).list();
      registryReads.set(run, read.readUnits);
    }
    const fanOutMetered: runs.FanOutMetered[] = [];
    for (const run of fanOutRuns) fanOutMetered.push(await runs.meterFanOut(run, fanOutOptions, meter));
    const fanOutTimes = await runs.timeFanOuts(fanOutRuns, fanOutOptions, meter);
    const fanOuts: report.PricedFanOut[] = fanOutMetered.map((metered) => {
      const per = runs.perDelivery(metered, fanOutTimes.get(metered.run) ?? [], memoryMb);
      return { metered, per, cost: costPerMillionEvents(per.usage), registryReadUnits: registryReads.get(metered.run) };
    });
    report.printFanOuts(fanOuts, memoryMb);
    registryReader.destroy();
    const registryFigures = await containerRegistryReads(meter, direct);

    const healthMeasures = await runHealthScenarios(health);
    const healthTable = healthRows(healthMeasures);
    report.printHealth(healthTable, memoryMb);
    const orderingMeasures = await runOrderingScenarios(ordering);
    report.printOrdering(orderingMeasures.map((m) => healthFigures(m)));
    const hotItems = await runHotItems({ meter, direct, prefix: 'handoff-cost-hot', quick: QUICK });
    console.log(`\nHot item, simulated outages (scripts/cost/hot-item.ts):\n${describeHotItems(hotItems).join('\n')}`);

    const all = [
      ...scenarios.map((s) => s.dynamodb),
      ...unindexed.map((s) => s.dynamodb),
      ...priced.map((p) => p.run.dynamodb),
      ...mixes.map((m) => m.dynamodb),
      ...fanOutMetered.map((f) => f.dynamodb),
      ...usages(healthMeasures),
      ...usages(orderingMeasures),
    ];
    const targets = [
      ...assessTargets(scenarios, priced, mixes, unindexed),
      ...assessFanOutTargets(fanOuts),
      ...registryTargets(registryFigures, CONTAINER_READERS),
      ...assessHealthTargets(healthTable, healthMeasures),
      assessHotItemTarget(hotItems),
    ];
    return finish(targets, all, startedAt);
  } finally {
    direct.destroy();
    for (const started of receivers) await started.close();
    await meter.close();
    await dynalite.close();
  }
}

/** Refuses unpriced requests, prints the capacity check and the targets; the exit status. */
function finish(targets: readonly report.Target[], usages: readonly DynamoDbUsage[], startedAt: number): number {
  const unmetered = usages.flatMap((usage) => Object.keys(usage.unmetered));
  if (unmetered.length > 0) throw new Error(`requests the cost model does not price were made: ${[...new Set(unmetered)].join(', ')}`);
  report.printCapacityCheck(usages);
  console.log(`\nTargets (one run, ${((performance.now() - startedAt) / 1000).toFixed(0)} s in all)\n`);
  console.log(report.formatTargets(targets));
  if (!targets.some((t) => !t.met && t.failsRun)) return 0;
  console.error(`\nFAIL: the happy path must take at most ${HAPPY_PATH_MAX_WRITES} write requests and ${HAPPY_PATH_MAX_READS} reads on AWS`);
  return 1;
}

/** A container's registry reads at each size (scripts/cost/registry.ts), printed. */
async function containerRegistryReads(meter: Meter, direct: DynamoDBClient): Promise<RegistryReadFigures[]> {
  const reading = emulatorDynamoDbClient(meter.endpoint);
  try {
    const figures = await measureRegistries({ meter, direct, reading, sizes: REGISTRY_SIZES, prefix: TABLES.scale });
    printRegistry(figures, CONTAINER_READERS);
    return figures;
  } finally {
    reading.destroy();
  }
}

function usages(measures: readonly HealthMeasure[]): DynamoDbUsage[] {
  return measures.flatMap((m) => (m.dynamodb instanceof DynamoDbUsage ? [m.dynamodb] : []));
}

process.exitCode = await main().catch((error: unknown) => {
  console.error(error instanceof Error ? `cost: ${error.message}` : error);
  return 1;
});
