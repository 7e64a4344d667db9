/**
 * The per-shipment ordering rows of `npm run cost` (scripts/cost/ordering.ts): figures per delivery
 * added and taken away (the wake-up alone; a waiting event in all). Pure: usage written by hand.
 */
import { describe, expect, it } from 'vitest';
import { healthFigures, type HealthMeasure } from '../../scripts/cost/endpoint-health';
import type { TableUsage } from '../../scripts/cost/metering-proxy';
import { linearFigures, orderingSums } from '../../scripts/cost/ordering';

function usage(fields: Partial<TableUsage>): TableUsage {
  return { writeRequests: 0, readRequests: 0, writeUnits: 0, indexUnits: 0, readUnits: 0, ...fields };
}

function figures(name: string, ledger: Partial<TableUsage>, requests: Record<string, number>, refusedWrites = 0) {
  const measure: HealthMeasure = {
    name,
    deliveries: 10,
    decisions: { 'ack:delivered': 10 },
    dynamodb: { byTable: { ledger: usage(ledger) }, indexWriteCounts: {}, refusedWrites, unmetered: {} },
    sqs: { billedRequests: Object.values(requests).reduce((a, b) => a + b, 0), requests },
    ledgerTable: 'ledger',
    registryTable: 'registry',
  };
  return healthFigures(measure);
}

describe('Function: linearFigures', () => {
  it('adds figures with their coefficients, dollars included, and drops operations that cancel out', () => {
    const a = figures('a', { writeRequests: 50, writeUnits: 50, readRequests: 20, readUnits: 10 }, { SendMessage: 10, 'ReceiveMessage (event source)': 1 });
    const b = figures('b', { writeRequests: 40, writeUnits: 40, readRequests: 10, readUnits: 5 }, { 'ReceiveMessage (event source)': 1 });
    const d = linearFigures('a - b', [
      [a, 1],
      [b, -1],
    ]);
    expect(d.ledger).toEqual({ writeRequests: 1, writeUnits: 1, readRequests: 1, readUnits: 0.5, indexUnits: 0 });
    expect(d.sqsByOperation).toEqual({ SendMessage: 1 });
    expect(d.sqsRequests).toBeCloseTo(1);
    expect(d.cost.total).toBeCloseTo(a.cost.total - b.cost.total);
    expect(d.deliveries).toBe(10);
  });

  it('refuses no terms, naming the row', () => {
    expect(() => linearFigures('empty row', [])).toThrow(/empty row/);
  });
});

describe('Function: orderingSums', () => {
  it('is the waking step less its twin, and the wait, the wake-up and the woken delivery in all', () => {
    const steps = [
      figures('ordered: in its turn on a 2nd receive, nothing waiting', { writeRequests: 40, writeUnits: 50, readRequests: 10, readUnits: 10 }, { x: 2 }, 10),
      figures('ordered: before its turn, waits (ack)', { writeRequests: 30, writeUnits: 30 }, { x: 2 }),
      figures('ordered: in its turn on a 2nd receive, wakes the next', { writeRequests: 40, writeUnits: 50, readRequests: 20, readUnits: 20 }, { x: 2, SendMessage: 10 }, 10),
      figures('ordered: woken, delivered', { writeRequests: 40, writeUnits: 40 }, { x: 2 }, 10),
    ];
    const [wake, inAll] = orderingSums(steps);
    expect(wake!.ledger.writeUnits).toBe(0);
    expect(wake!.ledger.readRequests).toBe(1);
    expect(wake!.sqsByOperation).toEqual({ SendMessage: 1 });
    expect(inAll!.ledger.writeRequests).toBe(7);
    expect(inAll!.ledger.readRequests).toBe(1);
    expect(inAll!.refusedWrites).toBe(1);
    expect(inAll!.sqsRequests).toBeCloseTo(1 + 0.2 + 0.2);
  });

  it('names a missing step', () => {
    expect(() => orderingSums([])).toThrow(/ordered: in its turn on a 2nd receive, wakes/);
  });
});
