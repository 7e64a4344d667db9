/**
 * The endpoint health and ordering rows of `npm run cost` (scripts/cost/health.ts): a metered step's
 * usage turned into figures per delivery, the ledger's and the registry's apart, and rows added and
 * taken away (a release and its delivery; the wake-up alone). Pure: usage written by hand.
 */
import { describe, expect, it } from 'vitest';
import { PRICES } from '../../scripts/cost/billing';
import { healthFigures, linearFigures, orderingSums, type HealthMeasure } from '../../scripts/cost/health';
import type { TableUsage } from '../../scripts/cost/meter';

const LEDGER = 'ledger';
const REGISTRY = 'registry';

function usage(fields: Partial<TableUsage>): TableUsage {
  return { writeRequests: 0, readRequests: 0, writeUnits: 0, indexUnits: 0, readUnits: 0, ...fields };
}

function measure(fields: Partial<HealthMeasure> & Pick<HealthMeasure, 'deliveries'>): HealthMeasure {
  return {
    name: 'step',
    decisions: {},
    dynamodb: { byTable: {}, indexWriteCounts: {}, refusedWrites: 0 },
    sqs: { billedRequests: 0, requests: {} },
    ledgerTable: LEDGER,
    registryTable: REGISTRY,
    ...fields,
  };
}

describe('Function: healthFigures', () => {
  it('divides every figure by the deliveries, the ledger and the registry apart', () => {
    const figures = healthFigures(
      measure({
        deliveries: 10,
        decisions: { 'ack:parked': 10 },
        dynamodb: {
          byTable: {
            [LEDGER]: usage({ writeRequests: 10, writeUnits: 20, indexUnits: 10, readRequests: 2, readUnits: 1 }),
            [REGISTRY]: usage({ writeRequests: 1, writeUnits: 1 }),
          },
          indexWriteCounts: { listing: { put: 10, delete: 5, update: 0 } },
          refusedWrites: 5,
        },
        sqs: { billedRequests: 2, requests: { 'ReceiveMessage (event source)': 1, 'DeleteMessageBatch (event source)': 1 } },
      }),
    );

    expect(figures.ledger).toEqual(usage({ writeRequests: 1, writeUnits: 2, indexUnits: 1, readRequests: 0.2, readUnits: 0.1 }));
    expect(figures.registry).toEqual(usage({ writeRequests: 0.1, writeUnits: 0.1 }));
    expect(figures.indexOps).toEqual({ put: 1, delete: 0.5, update: 0 });
    expect(figures.refusedWrites).toBe(0.5);
    expect(figures.sqsRequests).toBe(0.2);
    expect(figures.sqsByOperation).toEqual({ 'ReceiveMessage*': 0.1, 'DeleteMessageBatch*': 0.1 });
    expect(figures.decisions).toEqual({ 'ack:parked': 10 });
  });

  it('prices DynamoDB and SQS per million deliveries at the given prices, Lambda left out', () => {
    const figures = healthFigures(
      measure({
        deliveries: 2,
        dynamodb: { byTable: { [LEDGER]: usage({ writeUnits: 4, readUnits: 2 }), [REGISTRY]: usage({ writeUnits: 2 }) }, indexWriteCounts: {}, refusedWrites: 0 },
        sqs: { billedRequests: 4, requests: {} },
      }),
    );

    expect(figures.cost.dynamodb).toBeCloseTo(3 * PRICES.dynamodbPerMillionWriteUnits + 1 * PRICES.dynamodbPerMillionReadUnits, 10);
    expect(figures.cost.sqs).toBeCloseTo(2 * PRICES.sqsPerMillionRequests, 10);
    expect(figures.cost.lambda).toBe(0);
    expect(figures.cost.total).toBeCloseTo(figures.cost.dynamodb + figures.cost.sqs, 10);
  });

  it('counts a table the scenario has not touched as zero', () => {
    expect(healthFigures(measure({ deliveries: 1 })).registry).toEqual(usage({}));
  });

  it('refuses a step without deliveries, and requests to a table outside the scenario', () => {
    expect(() => healthFigures(measure({ deliveries: 0 }))).toThrow(RangeError);
    expect(() =>
      healthFigures(measure({ deliveries: 1, dynamodb: { byTable: { other: usage({ readUnits: 1 }) }, indexWriteCounts: {}, refusedWrites: 0 } })),
    ).toThrow(/other/);
  });
});

function figures(name: string, ledger: Partial<TableUsage>, requests: Record<string, number>, refusedWrites = 0) {
  const measure: HealthMeasure = {
    name,
    deliveries: 10,
    decisions: { 'ack:delivered': 10 },
    dynamodb: { byTable: { ledger: usage(ledger) }, indexWriteCounts: {}, refusedWrites },
    sqs: { billedRequests: Object.values(requests).reduce((a, b) => a + b, 0), requests },
    ledgerTable: 'ledger',
    registryTable: 'registry',
  };
  return healthFigures(measure);
}

describe('Function: linearFigures', () => {
  const release = healthFigures(
    measure({
      deliveries: 10,
      decisions: { released: 10 },
      dynamodb: {
        byTable: { [LEDGER]: usage({ writeRequests: 10, writeUnits: 30, indexUnits: 20, readUnits: 21 }), [REGISTRY]: usage({ writeUnits: 2 }) },
        indexWriteCounts: { listing: { put: 10, delete: 10, update: 0 } },
        refusedWrites: 0,
      },
      sqs: { billedRequests: 10, requests: { SendMessage: 10 } },
    }),
  );
  const delivery = (deliveries: number) =>
    healthFigures(
      measure({
        deliveries,
        decisions: { 'ack:delivered': deliveries },
        dynamodb: { byTable: { [LEDGER]: usage({ writeRequests: 2 * deliveries, writeUnits: 3 * deliveries }) }, indexWriteCounts: {}, refusedWrites: 0 },
        sqs: { billedRequests: 2, requests: { 'ReceiveMessage (event source)': 1, 'DeleteMessageBatch (event source)': 1 } },
      }),
    );

  it('adds steps of the same deliveries, their decisions counted together when asked', () => {
    const both = linearFigures('in all', [[release, 1], [delivery(10), 1]], { parts: true });
    expect(both.ledger).toEqual(usage({ writeRequests: 3, writeUnits: 6, indexUnits: 2, readUnits: 2.1 }));
    expect(both.registry.writeUnits).toBeCloseTo(0.2);
    expect(both.sqsByOperation).toEqual({ SendMessage: 1, 'ReceiveMessage*': 0.1, 'DeleteMessageBatch*': 0.1 });
    expect(both.decisions).toEqual({ released: 10, 'ack:delivered': 10 });
    expect(linearFigures('no decisions', [[release, 1]]).decisions).toBeUndefined();
  });

  it('spreads a part of the batch over the batch (its put-backs: 4 of 10)', () => {
    expect(linearFigures('per delivery', [[delivery(10), 1], [delivery(4), 0.4]]).ledger.writeUnits).toBeCloseTo(4.2);
  });

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
