/**
 * The endpoint health rows of `npm run cost` (scripts/cost/endpoint-health.ts): a metered step's
 * usage turned into figures per delivery, the ledger's and the registry's apart, and steps of the
 * same deliveries added up. Pure: usage written by hand.
 */
import { describe, expect, it } from 'vitest';
import { combineMeasures, healthFigures, type HealthMeasure } from '../../scripts/cost/endpoint-health';
import type { TableUsage } from '../../scripts/cost/metering-proxy';
import { PRICES } from '../../scripts/cost/prices';

const LEDGER = 'ledger';
const REGISTRY = 'registry';

function usage(fields: Partial<TableUsage>): TableUsage {
  return { writeRequests: 0, readRequests: 0, writeUnits: 0, indexUnits: 0, readUnits: 0, ...fields };
}

function measure(fields: Partial<HealthMeasure> & Pick<HealthMeasure, 'deliveries'>): HealthMeasure {
  return {
    name: 'step',
    decisions: {},
    dynamodb: { byTable: {}, indexWriteCounts: {}, refusedWrites: 0, unmetered: {} },
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
          unmetered: {},
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
    expect(figures.decisions).toBe('ack:parked');
  });

  it('prices DynamoDB and SQS per million deliveries at the given prices, Lambda left out', () => {
    const figures = healthFigures(
      measure({
        deliveries: 2,
        dynamodb: { byTable: { [LEDGER]: usage({ writeUnits: 4, readUnits: 2 }), [REGISTRY]: usage({ writeUnits: 2 }) }, indexWriteCounts: {}, refusedWrites: 0, unmetered: {} },
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

  it('names a decision made for only some of the deliveries with its count', () => {
    expect(healthFigures(measure({ deliveries: 10, decisions: { 'ack:delivered': 6, 'ack:rate-limited': 4 } })).decisions).toBe(
      'ack:delivered x6, ack:rate-limited x4',
    );
  });

  it('refuses a step without deliveries, and requests to a table outside the scenario', () => {
    expect(() => healthFigures(measure({ deliveries: 0 }))).toThrow(RangeError);
    expect(() =>
      healthFigures(measure({ deliveries: 1, dynamodb: { byTable: { other: usage({ readUnits: 1 }) }, indexWriteCounts: {}, refusedWrites: 0, unmetered: {} } })),
    ).toThrow(/other/);
  });
});

describe('Function: combineMeasures', () => {
  const release = measure({
    deliveries: 10,
    decisions: { released: 10 },
    dynamodb: {
      byTable: { [LEDGER]: usage({ writeRequests: 10, writeUnits: 30, indexUnits: 20, readUnits: 21 }), [REGISTRY]: usage({ writeUnits: 2 }) },
      indexWriteCounts: { listing: { put: 10, delete: 10, update: 0 } },
      refusedWrites: 0,
      unmetered: {},
    },
    sqs: { billedRequests: 10, requests: { SendMessage: 10 } },
  });
  const delivery = measure({
    deliveries: 10,
    decisions: { 'ack:delivered': 10 },
    dynamodb: {
      byTable: { [LEDGER]: usage({ writeRequests: 20, writeUnits: 30, indexUnits: 10 }) },
      indexWriteCounts: { listing: { put: 0, delete: 10, update: 0 } },
      refusedWrites: 1,
      unmetered: {},
    },
    sqs: { billedRequests: 2, requests: { 'ReceiveMessage (event source)': 1, 'DeleteMessageBatch (event source)': 1 } },
  });

  it('adds the steps up, table by table, and keeps their deliveries', () => {
    const both = combineMeasures('in all', [release, delivery]);

    expect(both.deliveries).toBe(10);
    expect(both.dynamodb.byTable[LEDGER]).toEqual(usage({ writeRequests: 30, writeUnits: 60, indexUnits: 30, readUnits: 21 }));
    expect(both.dynamodb.byTable[REGISTRY]).toEqual(usage({ writeUnits: 2 }));
    expect(both.dynamodb.indexWriteCounts).toEqual({ listing: { put: 10, delete: 20, update: 0 } });
    expect(both.dynamodb.refusedWrites).toBe(1);
    expect(both.sqs).toEqual({ billedRequests: 12, requests: { SendMessage: 10, 'ReceiveMessage (event source)': 1, 'DeleteMessageBatch (event source)': 1 } });
    expect(both.decisions).toEqual({ released: 10, 'ack:delivered': 10 });
    expect(healthFigures(both).ledger.writeUnits).toBe(6);
  });

  it('spreads the sum over the deliveries given (a batch and the part of it put back)', () => {
    const putBack = { ...delivery, deliveries: 4 };

    expect(healthFigures(combineMeasures('per delivery', [delivery, putBack], 10)).ledger.writeUnits).toBe(6);
  });

  it('refuses steps on other tables, and nothing to combine', () => {
    expect(() => combineMeasures('x', [release, { ...delivery, ledgerTable: 'another' }])).toThrow(RangeError);
    expect(() => combineMeasures('x', [])).toThrow(RangeError);
  });
});
