/**
 * The runs `npm run cost` measures lead to the decisions they are named for, and count what they
 * must: the real consumer (made from its environment), dynalite behind the meter, a loopback
 * receiver. Small runs: the script prints the full ones.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { handoffConsumer, pointAwsAt, QUEUE_URLS, SETTINGS } from '../../scripts/cost/consumers';
import { HEALTH_BATCH, runHealthScenarios, runOrderingScenarios } from '../../scripts/cost/health';
import { startMeter, type Meter } from '../../scripts/cost/meter';
import { EVENTS_PER_SHIPMENT, invokeBatch, meterWorkload, recordOf, runRound, runScenarios, SCENARIOS, shipmentOf, type FanOutRun } from '../../scripts/cost/runs';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import { emulatorDynamoDbClient, startDynalite } from '../helpers/dynalite';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';

const SHIPMENT_INDEX = LEDGER_SCHEMA.shipmentIndex.name;

let dynalite: Awaited<ReturnType<typeof startDynalite>>;
let direct: DynamoDBClient;
let meter: Meter;
let receiver: TestReceiver;
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  dynalite = await startDynalite();
  direct = emulatorDynamoDbClient(dynalite.endpoint);
  meter = await startMeter(dynalite.endpoint, direct);
  pointAwsAt(meter.endpoint);
  receiver = await startTestReceiver();
});

afterAll(async () => {
  for (const r of [receiver, ...receivers]) await r?.close();
  await meter?.close();
  direct?.destroy();
  await dynalite?.close();
});

describe('handoff scenarios', () => {
  it('lead to their decisions, the happy path in 2 writes and no read, each batch a receive and a delete', async () => {
    await createLedgerTable(direct, 'cost-test-scenarios');
    const results = await runScenarios('cost-test-scenarios', { meter, receiver }, 'evt_cost_test');

    for (const result of results) expect(result.decisions, result.scenario.name).toEqual(result.scenario.expected);
    const delivered = results.find((r) => r.scenario === SCENARIOS[0])!;
    // 2 on the table, 1 on the shipment index (on by default): its entry, put once at admission.
    expect([delivered.dynamodb.writeRequests, delivered.dynamodb.readRequests, delivered.dynamodb.tableWriteUnits]).toEqual([2, 0, 2]);
    expect(delivered.dynamodb.indexWriteUnits).toEqual({ [SHIPMENT_INDEX]: 1 });
    expect(delivered.dynamodb.indexWriteCounts).toEqual({ [SHIPMENT_INDEX]: { put: 1, delete: 0, update: 0 } });
    expect(delivered.sqs.requests).toEqual({ 'ReceiveMessage (event source)': 1, 'DeleteMessageBatch (event source)': 1 });
    // A refusal is answered with the row (ALL_OLD), as AWS does: no read follows.
    const duplicate = results.find((r) => r.scenario.name.startsWith('duplicate'))!;
    expect([duplicate.dynamodb.refusedWrites, duplicate.dynamodb.readRequests]).toEqual([1, 0]);
  });
});

describe('the shipment index off', () => {
  it('bills a delivered event 2 write units on the table and none on any index, in the same requests', async () => {
    await createLedgerTable(direct, 'cost-test-unindexed', { shipmentIndex: false });
    const [delivered] = await runScenarios('cost-test-unindexed', { meter, receiver }, 'evt_cost_test_off', { scenarios: [SCENARIOS[0]!], shipmentIndex: false });

    expect(delivered!.decisions).toEqual(['ack:delivered']);
    expect([delivered!.dynamodb.writeRequests, delivered!.dynamodb.readRequests, delivered!.dynamodb.tableWriteUnits, delivered!.dynamodb.indexUnits]).toEqual([2, 0, 2, 0]);
  });
});

describe('a workload', () => {
  it('delivers every event of its batches', async () => {
    await createLedgerTable(direct, 'cost-test-workload');
    const consumer = handoffConsumer({ ledgerTable: 'cost-test-workload', webhookUrl: receiver.url });
    const run = await meterWorkload(consumer.invoke, { prefix: 'evt_cost_wl', eventBytes: 2048, batches: 2, batchSize: SETTINGS.batchSize }, meter);

    expect(run.failed).toBe(0);
    expect(consumer.decisions.filter((d) => d === 'ack:delivered')).toHaveLength(3 * SETTINGS.batchSize);
    expect(run.dynamodb.writeRequests).toBe(2 * run.delivered);
    expect(run.dynamodb.indexWriteUnits).toEqual({ [SHIPMENT_INDEX]: run.delivered });
  });

  it('gives a shipment 4 consecutive events, so no shipment key takes more than 4 entries', async () => {
    const consumer = handoffConsumer({ ledgerTable: 'cost-test-workload', webhookUrl: receiver.url });
    const usage = meter.dynamodb.start({ partitions: true });
    const batch = Array.from({ length: SETTINGS.batchSize }, (_, i) => recordOf(`evt_cost_shp_m0_${i}`, 300));
    expect((await invokeBatch(consumer.invoke, batch, meter)).response.batchItemFailures).toEqual([]);
    const byShipment = [...(usage.partitions?.get(`cost-test-workload/${SHIPMENT_INDEX}`) ?? new Map<string, number>()).values()];

    expect(shipmentOf('evt_x_m3_7')).toBe(shipmentOf('evt_x_m3_4'));
    expect(shipmentOf('evt_x_m3_8')).not.toBe(shipmentOf('evt_x_m3_7'));
    // A batch of 10: shipments of 4, 4 and 2 events, one index entry each.
    expect([Math.max(...byShipment), byShipment.reduce((a, b) => a + b, 0), byShipment.length]).toEqual([EVENTS_PER_SHIPMENT, SETTINGS.batchSize, 3]);
  });
});

describe('a fan-out round', () => {
  it('routes a batch to 3 endpoints: one message per (event, endpoint), each delivered once', async () => {
    await createLedgerTable(direct, 'cost-test-fan-out');
    await createEndpointsTable(direct, 'cost-test-endpoints');
    for (let i = 0; i < 3; i++) receivers.push(await startTestReceiver());
    const fields = receivers.map((r, i) => ({ name: `endpoint-${i + 1}`, url: r.url, eventTypes: ['*'] }));
    await seedEndpoints(new DynamoDbEndpointRegistry({ client: direct, tableName: 'cost-test-endpoints' }), fields, Date.now());
    const consumer = handoffConsumer({ ledgerTable: 'cost-test-fan-out', registryTable: 'cost-test-endpoints' });
    const run: FanOutRun = { label: '3 endpoints', endpoints: 3, registry: true, consumer, prefix: 'evt_cost_fan', receivers };
    meter.sqs.start();
    const round = await runRound(run, { rounds: 1, batchSize: SETTINGS.batchSize }, 'm', 0, meter);

    expect(round.failed).toBe(0);
    expect(round.sent.map((m) => m.queueUrl)).toEqual(Array(3 * SETTINGS.batchSize).fill(QUEUE_URLS.queue));
    expect(round.received).toBe(round.deliveries);
    expect(round.endpointMs).toHaveLength(3);
  });
});

describe('endpoint health and ordering', () => {
  it('lead to their decisions, a held delivery with no DynamoDB request', async () => {
    const measures = await runHealthScenarios({ meter, receiver, direct, prefix: 'cost-test-health' });

    for (const m of measures.filter((m) => m.expected !== undefined)) expect(m.decisions, m.name).toEqual(m.expected);
    const batch = measures.find((m) => m.name.endsWith('the batch'))!;
    // At 5/s about the first six slots are waited for, the rest put back carrying their slot.
    const [waited = 0, putBack = 0] = [batch.decisions['ack:delivered'], batch.decisions['ack:rate-limited']];
    expect([waited + putBack, Object.keys(batch.decisions).length, putBack > 0]).toEqual([HEALTH_BATCH, 2, true]);
    expect(measures.find((m) => m.name.startsWith('rate-limited') && m.name.includes('put back'))!.deliveries).toBe(putBack);
    const held = measures.find((m) => m.name.startsWith('paused'))!;
    expect(Object.values(held.dynamodb.byTable).reduce((sum, t) => sum + t.writeRequests + t.readRequests, 0)).toBe(0);
  }, 30_000);

  it('orders per shipment: waits, wakes the next, delivers the woken', async () => {
    const measures = await runOrderingScenarios({ meter, receiver, direct, prefix: 'cost-test-ordering' });

    expect(measures).toHaveLength(6);
    for (const m of measures) expect(m.decisions, m.name).toEqual(m.expected);
  }, 30_000);
});
