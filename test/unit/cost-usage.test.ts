/**
 * How `npm run cost` adds up what it meters (scripts/cost/meter.ts, runs.ts): units per
 * table and index, the capacity cross-check with dynalite, write units per partition key value and
 * the busiest value's share, and the events it sends.
 */
import { describe, expect, it } from 'vitest';
import { parseEvent } from '../../lib/event';
import { DynamoDbUsage, type MeteredWrite } from '../../scripts/cost/meter';
import { eventOfSize, mixOutcome, partitionShares } from '../../scripts/cost/runs';

const claim: MeteredWrite = {
  operation: 'UpdateItem',
  table: 'ledger',
  refused: false,
  tableUnits: 1,
  partitionKeyValue: 'evt_1',
  indexWrites: [{ index: 'byState', kind: 'put', bytes: 900, units: 1, partitionKeyValue: 'pending' }],
  afterBytes: 900,
  reportedUnits: 1,
};
const record: MeteredWrite = {
  ...claim,
  tableUnits: 2,
  indexWrites: [
    { index: 'byState', kind: 'delete', bytes: 900, units: 1, partitionKeyValue: 'pending' },
    { index: 'byState', kind: 'put', bytes: 1100, units: 2, partitionKeyValue: 'delivered' },
  ],
  afterBytes: 1100,
  reportedUnits: 1,
};

describe('Class: DynamoDbUsage', () => {
  it('adds table and index units, counts index operations and keeps the largest item', () => {
    const usage = new DynamoDbUsage();
    usage.addWrite(claim);
    usage.addWrite(record);
    usage.addWrite({ ...claim, refused: true, indexWrites: [], afterBytes: undefined, reportedUnits: undefined });
    expect(usage.writeRequests).toBe(3);
    expect(usage.refusedWrites).toBe(1);
    expect(usage.tableWriteUnits).toBe(4);
    expect(usage.indexWriteUnits).toEqual({ byState: 4 });
    expect(usage.indexWriteCounts).toEqual({ byState: { put: 2, delete: 1, update: 0 } });
    expect(usage.writeUnits).toBe(8);
    expect(usage.largestItemBytes).toBe(1100);
  });

  it("compares its table units with dynalite's and keeps the first difference", () => {
    const usage = new DynamoDbUsage();
    usage.addWrite(claim);
    usage.addWrite(record);
    expect([usage.capacityAgrees, usage.capacityDiffers]).toEqual([1, 1]);
    expect(usage.firstCapacityDifference).toBe('UpdateItem on ledger: model 2, dynalite 1');
  });

  it('counts write units per partition key value only when asked', () => {
    const counted = new DynamoDbUsage({ partitions: true });
    counted.addWrite(claim);
    counted.addWrite(record);
    expect(counted.partitions).toEqual(
      new Map([
        ['ledger', new Map([['evt_1', 3]])],
        ['ledger/byState', new Map([['pending', 2], ['delivered', 2]])],
      ]),
    );
    expect(new DynamoDbUsage().partitions).toBeUndefined();
  });
});

describe('Function: partitionShares', () => {
  it('gives each table and index its busiest value, against all the writes of the run', () => {
    const usage = new DynamoDbUsage({ partitions: true });
    usage.addWrite(claim);
    usage.addWrite({ ...claim, partitionKeyValue: 'evt_2', indexWrites: [] });
    usage.addWrite(record);
    // Table: evt_1 1 + 2, evt_2 1. Index: pending 1 + 1, delivered 2.
    expect(partitionShares(usage)).toEqual({
      total: 8,
      scopes: [
        { scope: 'ledger', units: 4, values: 2, largestValue: 'evt_1', largestUnits: 3 },
        { scope: 'ledger/byState', units: 4, values: 2, largestValue: 'pending', largestUnits: 2 },
      ],
    });
  });
});

describe('Function: eventOfSize', () => {
  it('makes a valid event whose message body has exactly the size asked', () => {
    for (const bytes of [300, 2048]) {
      const body = eventOfSize('evt_size_1', bytes);
      expect(Buffer.byteLength(body)).toBe(bytes);
      expect(parseEvent(body, 64 * 1024).ok).toBe(true);
    }
  });

  it('pads with letters and digits that vary, not one repeated character', () => {
    const note = (JSON.parse(eventOfSize('evt_size_3', 2048)) as { data: { note: string } }).data.note;
    expect(note).toMatch(/^[a-z0-9]+$/);
    expect(new Set(note).size).toBeGreaterThan(30);
    expect(eventOfSize('evt_size_3', 2048)).toBe(eventOfSize('evt_size_3', 2048));
  });

  it('refuses a size too small for the event', () => {
    expect(() => eventOfSize('evt_size_2', 50)).toThrow('an event with ID evt_size_2 takes more than 50 bytes');
  });
});

describe('Function: mixOutcome', () => {
  it('makes 3 of every 100 events dead, 7 retried once and 90 delivered', () => {
    const outcomes = Array.from({ length: 1000 }, (_, i) => mixOutcome(i));
    expect(outcomes.filter((o) => o === 'dead')).toHaveLength(30);
    expect(outcomes.filter((o) => o === 'retried')).toHaveLength(70);
    expect(outcomes.filter((o) => o === 'delivered')).toHaveLength(900);
  });
});
