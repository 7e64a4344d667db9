/**
 * The cost at platform scale (issue 21) `npm run cost` prints: a container's registry reads, measured
 * through the real adapter and the meter at small sizes, and the pricing at a steady load. Invariants,
 * not timings: the script prints the full sizes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTBRIDGE_PRICES, PRICES, PROVISIONED_PRICES, readUnits, type UsagePerEvent } from '../../scripts/cost/billing';
import { COPY_READER, deriveRegistryFigures, measureRegistry, REFRESH_MS, SCAN_READER, type RegistryReadFigures } from '../../scripts/cost/registry';
import { eventBridgePerMillion, provisionedScopes, steadyRows } from '../../scripts/cost/steady';
import { startMeteredDynalite, type MeteredDynalite } from '../helpers/metered-dynalite';

let emulator: MeteredDynalite;

beforeAll(async () => {
  emulator = await startMeteredDynalite();
});

afterAll(() => emulator?.close());

/** The figures of each reader, in the order asked. */
function pair(figures: RegistryReadFigures[]): [RegistryReadFigures, RegistryReadFigures] {
  const [first, second = first] = figures;
  if (first === undefined || second === undefined) throw new Error('no figures measured');
  return [first, second];
}

describe("a container's registry reads", () => {
  let small: RegistryReadFigures;
  let larger: RegistryReadFigures;
  let copySmall: RegistryReadFigures;
  let copyLarger: RegistryReadFigures;
  let copyAfterBulk: RegistryReadFigures;

  beforeAll(async () => {
    const { meter, direct, metered: reading } = emulator;
    const common = { meter, direct, reading, readers: [SCAN_READER, COPY_READER] };
    [small, copySmall] = pair(await measureRegistry({ ...common, history: 'quiet', tableName: 'cost-test-registry-10', endpoints: 10 }));
    [larger, copyLarger] = pair(await measureRegistry({ ...common, history: 'quiet', tableName: 'cost-test-registry-200', endpoints: 200 }));
    [copyAfterBulk] = pair(await measureRegistry({ ...common, readers: [COPY_READER], history: 'bulk', tableName: 'cost-test-registry-200-bulk', endpoints: 200 }));
  }, 120_000);

  it('refreshes once per cache period in a minute, after a cold start that reads every endpoint', () => {
    expect(small.refreshes).toBe(60_000 / REFRESH_MS);
    expect(larger.refreshes).toBe(60_000 / REFRESH_MS);
    expect(larger.coldStart.readUnits).toBeGreaterThanOrEqual(readUnits(200 * larger.itemBytes, true) - 1e-9);
    expect(larger.itemBytes).toBeGreaterThan(200);
  });

  it('bills a container-minute as the sum of its refreshes', () => {
    for (const f of [small, larger, copySmall, copyLarger, copyAfterBulk]) expect(f.perMinuteReadUnits).toBeCloseTo(f.perRefresh.readUnits * f.refreshes, 9);
  });

  it('bills every refresh of a whole-table read on the bytes of every item', () => {
    // Today's reader scans every item, consistently: each request ceil(its bytes / 4 KB) units.
    const whole = readUnits(Math.round(200 * larger.itemBytes), true);
    expect(larger.perRefresh.readUnits).toBeGreaterThanOrEqual(whole);
    expect(larger.perRefresh.readUnits).toBeLessThanOrEqual(whole + larger.perRefresh.requests);
    expect(larger.perRefresh.readUnits).toBeGreaterThan(small.perRefresh.readUnits);
  });

  it('reads by change, with nothing changed since an hour, one eventually consistent Query a refresh whatever the size', () => {
    expect([copySmall.perRefresh, copyLarger.perRefresh]).toEqual([
      { readUnits: 0.5, requests: 1 },
      { readUnits: 0.5, requests: 1 },
    ]);
    // Its cold start reads every item, as the Scan does.
    expect(copyLarger.coldStart.readUnits).toBeGreaterThanOrEqual(readUnits(Math.round(200 * copyLarger.itemBytes), true));
  });

  it('reads no endpoint again after a bulk add it already holds, whatever the index returns', () => {
    expect(copyAfterBulk.perRefresh.requests).toBe(1);
  });

  it('derives a size not measured linearly through the two largest, and keeps a flat cost flat', () => {
    const at = (endpoints: number, units: number): RegistryReadFigures => ({
      reader: 'Scan',
      endpoints,
      history: 'quiet',
      itemBytes: 300,
      coldStart: { readUnits: units, requests: 1 },
      refreshes: 4,
      perRefresh: { readUnits: units, requests: 1 },
      perMinuteReadUnits: 4 * units,
    });

    expect(deriveRegistryFigures([at(10, 1), at(1_000, 74), at(10_000, 733)]).perRefresh.readUnits).toBeCloseTo(733 + 659 * 10, 9);
    expect(deriveRegistryFigures([at(1_000, 0.5), at(10_000, 0.5)]).perRefresh.readUnits).toBe(0.5);
    expect(deriveRegistryFigures([at(1_000, 0.5), at(10_000, 0.5)]).derivedFrom).toBe('linear through 1,000 and 10,000');
  });
});

describe('cost at a steady load', () => {
  const usage: UsagePerEvent = { writeUnits: 3, readUnits: 0, sqsRequests: 0.2, lambdaGbSeconds: 0.00001, lambdaInvocations: 0.1 };
  const measured = { usage, tableWriteUnits: 2, indexWriteUnits: { listing: 0, shipment: 1 } };

  it('prices on demand the same at any rate, the producer one SendMessage an event', () => {
    const rows = steadyRows(measured, [100, 1_000]).filter((r) => r.mode === 'on-demand');

    expect(rows.map((r) => r.total)).toEqual([rows[0]!.total, rows[0]!.total]);
    expect(rows[0]!.cost.dynamodb).toBeCloseTo(3 * PRICES.dynamodbPerMillionWriteUnits, 9);
    expect(rows[0]!.producer).toBe(PRICES.sqsPerMillionRequests);
  });

  it('holds each scope its units per second over the target utilization, at least 1 of each', () => {
    expect(provisionedScopes(measured, 100, 0.7)).toEqual([
      { scope: 'table', writeUnits: 286, readUnits: 1 },
      { scope: 'index listing', writeUnits: 1, readUnits: 1 },
      { scope: 'index shipment', writeUnits: 143, readUnits: 1 },
    ]);
  });

  it('prices provisioned writes by the unit-hour: below on demand at a steady load, SQS and Lambda unchanged', () => {
    const [onDemand, provisioned] = steadyRows(measured, [1_000]);
    const perHour = (2858 + 1 + 1429) * PROVISIONED_PRICES.dynamodbPerWriteUnitHour + 3 * PROVISIONED_PRICES.dynamodbPerReadUnitHour;

    expect(provisioned!.cost.dynamodb).toBeCloseTo((perHour / (1_000 * 3600)) * 1e6, 9);
    expect(provisioned!.cost.dynamodb).toBeLessThan(onDemand!.cost.dynamodb / 2);
    expect([provisioned!.cost.sqs, provisioned!.cost.lambda]).toEqual([onDemand!.cost.sqs, onDemand!.cost.lambda]);
  });

  it("prices EventBridge as the event's ingestion and one API destination invocation", () => {
    expect(eventBridgePerMillion()).toBe(EVENTBRIDGE_PRICES.customEventsPerMillion + EVENTBRIDGE_PRICES.apiDestinationInvocationsPerMillion);
    expect(eventBridgePerMillion()).toBeCloseTo(1.2, 9);
  });
});
