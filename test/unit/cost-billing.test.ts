/**
 * The billing rules `npm run cost` applies (scripts/cost/billing.ts): DynamoDB table write units,
 * the writes each global secondary index takes, read units; SQS's 64 KB chunks and message sizes;
 * Lambda's GB-seconds; dollars per million at the published prices. Sizes worked out by hand:
 * `{ eventId: 'e1', endpoint: 'default' }` is 7 + 2 + 8 + 7 = 24 bytes; `state: 'pending'` 12;
 * `state: 'dead'` 9; `stateSince: 1000` 10 + 2 = 12; `attempts: 1` 8 + 2 = 10; a 2,000-character
 * `body` 4 + 2,000 = 2,004.
 */
import type { TableDescription } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  batchGetReadUnits,
  indexWrites,
  readUnits,
  tableShape,
  tableWriteUnits,
  writeUnits,
  costPerMillionEvents,
  lambdaGbSeconds,
  PRICES,
  sqsBilledRequests,
  sqsMessageBytes,
  type IndexShape,
  type Item,
  type TableShape,
} from '../../scripts/cost/billing';

const KEY: Item = { eventId: { S: 'e1' }, endpoint: { S: 'default' } };
const BODY: Item = { body: { S: 'x'.repeat(2000) } };
const pending: Item = { ...KEY, state: { S: 'pending' }, stateSince: { N: '1000' }, attempts: { N: '1' }, ...BODY };
const delivered: Item = { ...pending, state: { S: 'delivered' }, stateSince: { N: '2000' } };

function table(...indexes: IndexShape[]): TableShape {
  return { name: 'ledger', partitionKey: 'eventId', sortKey: 'endpoint', indexes };
}
const byState = (projects: IndexShape['projects']): IndexShape => ({
  name: 'byState',
  partitionKey: 'state',
  sortKey: 'stateSince',
  projects,
});

describe('Function: writeUnits', () => {
  it('is one unit per started KB, and at least one', () => {
    expect([writeUnits(0), writeUnits(1), writeUnits(1024), writeUnits(1025), writeUnits(3000)]).toEqual([1, 1, 1, 2, 3]);
  });
});

describe('Function: readUnits', () => {
  it('is one unit per started 4 KB when consistent, half that when not, and at least the smallest read', () => {
    expect([readUnits(0, true), readUnits(4096, true), readUnits(4097, true)]).toEqual([1, 1, 2]);
    expect([readUnits(0, false), readUnits(5000, false)]).toEqual([0.5, 1]);
  });
});

describe('Function: batchGetReadUnits', () => {
  it('bills each item found as its own read, rounded up to 4 KB, halved when eventually consistent', () => {
    expect(batchGetReadUnits([100, 4096, 4097], 3, true)).toBe(1 + 1 + 2);
    expect(batchGetReadUnits([100, 4096, 4097], 3, false)).toBe(0.5 + 0.5 + 1);
  });

  it('bills a key that finds nothing as the smallest read, and nothing for keys not read', () => {
    expect(batchGetReadUnits([100], 3, false)).toBe(0.5 + 2 * 0.5);
    expect(batchGetReadUnits([], 0, true)).toBe(0);
  });

  it('refuses more items than keys read', () => {
    expect(() => batchGetReadUnits([1, 2], 1, true)).toThrow(RangeError);
  });
});

describe('Function: tableWriteUnits', () => {
  it('bills a new item on its size', () => {
    expect(tableWriteUnits(undefined, pending, false)).toBe(3); // 2,062 bytes
  });

  it('bills an update on the larger of the item before and after', () => {
    const small: Item = { ...KEY, state: { S: 'dead' } }; // 33 bytes
    expect(tableWriteUnits(pending, small, false)).toBe(3);
    expect(tableWriteUnits(small, pending, false)).toBe(3);
  });

  it('bills a refused conditional write on the item that is there, and 1 unit when there is none', () => {
    expect(tableWriteUnits(pending, pending, true)).toBe(3);
    expect(tableWriteUnits(undefined, undefined, true)).toBe(1);
  });

  it('bills a delete on the item deleted', () => {
    expect(tableWriteUnits(pending, undefined, false)).toBe(3);
  });
});

describe('Function: indexWrites', () => {
  it('puts a new item that has the index key, the whole item under ALL, under the key value', () => {
    expect(indexWrites(table(byState('all')), undefined, pending)).toEqual([
      { index: 'byState', kind: 'put', bytes: 2062, units: 3, partitionKeyValue: 'pending' },
    ]);
  });

  it('deletes and puts when the index key changes', () => {
    expect(indexWrites(table(byState('all')), pending, delivered)).toEqual([
      { index: 'byState', kind: 'delete', bytes: 2062, units: 3, partitionKeyValue: 'pending' },
      { index: 'byState', kind: 'put', bytes: 2064, units: 3, partitionKeyValue: 'delivered' },
    ]);
  });

  it('writes nothing for an item without the index key (a sparse index), and deletes when the key goes', () => {
    const unindexed: Item = { ...KEY, attempts: { N: '1' } };
    expect(indexWrites(table(byState('all')), undefined, unindexed)).toEqual([]);
    // The sort key alone missing is enough to leave the index.
    const { stateSince: _dropped, ...withoutSortKey } = pending;
    expect(indexWrites(table(byState('all')), pending, withoutSortKey)).toEqual([
      { index: 'byState', kind: 'delete', bytes: 2062, units: 3, partitionKeyValue: 'pending' },
    ]);
  });

  it('deletes the entry of a deleted item', () => {
    expect(indexWrites(table(byState('all')), pending, undefined).map((w) => w.kind)).toEqual(['delete']);
  });

  it('updates the entry when a projected attribute changes under the same key, on the larger projection', () => {
    const retried: Item = { ...pending, attempts: { N: '2' } };
    const shorter: Item = { ...pending, body: { S: 'x' } };
    expect(indexWrites(table(byState('all')), pending, retried)).toEqual([
      { index: 'byState', kind: 'update', bytes: 2062, units: 3, partitionKeyValue: 'pending' },
    ]);
    expect(indexWrites(table(byState('all')), pending, shorter)[0]?.bytes).toBe(2062);
  });

  it('projects only the table and index keys under KEYS_ONLY, and writes nothing when only other attributes change', () => {
    const index = byState([]);
    // 24 + 12 + 12: the 2 KB body and the attempts are not in the entry.
    expect(indexWrites(table(index), undefined, pending)).toEqual([
      { index: 'byState', kind: 'put', bytes: 48, units: 1, partitionKeyValue: 'pending' },
    ]);
    expect(indexWrites(table(index), pending, { ...pending, attempts: { N: '2' } })).toEqual([]);
  });

  it('projects the named attributes too under INCLUDE, and updates when one of them changes', () => {
    const index = byState(['attempts']);
    expect(indexWrites(table(index), undefined, pending)[0]?.bytes).toBe(58);
    expect(indexWrites(table(index), pending, { ...pending, attempts: { N: '2' } })).toEqual([
      { index: 'byState', kind: 'update', bytes: 58, units: 1, partitionKeyValue: 'pending' },
    ]);
    expect(indexWrites(table(index), pending, { ...pending, body: { S: 'y' } })).toEqual([]);
  });

  it('treats each index apart, and a map equal up to member order as unchanged', () => {
    const byEndpoint: IndexShape = { name: 'byEndpoint', partitionKey: 'endpoint', projects: [] };
    const withMap: Item = { ...pending, policy: { M: { a: { N: '1' }, b: { N: '2' } } } };
    const reordered: Item = { ...pending, policy: { M: { b: { N: '2' }, a: { N: '1' } } } };
    expect(indexWrites(table(byState('all'), byEndpoint), withMap, reordered)).toEqual([]);
    expect(indexWrites(table(byState('all'), byEndpoint), undefined, pending).map((w) => `${w.index}:${w.kind}`)).toEqual([
      'byState:put',
      'byEndpoint:put',
    ]);
  });
});

describe('Function: tableShape', () => {
  it('reads the key and each index with its projection from DescribeTable', () => {
    const description: TableDescription = {
      TableName: 'ledger',
      KeySchema: [
        { AttributeName: 'endpoint', KeyType: 'RANGE' },
        { AttributeName: 'eventId', KeyType: 'HASH' },
      ],
      GlobalSecondaryIndexes: [
        {
          IndexName: 'byState',
          KeySchema: [
            { AttributeName: 'state', KeyType: 'HASH' },
            { AttributeName: 'stateSince', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
        { IndexName: 'dead', KeySchema: [{ AttributeName: 'deadShard', KeyType: 'HASH' }], Projection: { ProjectionType: 'KEYS_ONLY' } },
        {
          IndexName: 'due',
          KeySchema: [{ AttributeName: 'dueShard', KeyType: 'HASH' }],
          Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['attempts'] },
        },
      ],
    };
    expect(tableShape(description)).toEqual({
      name: 'ledger',
      partitionKey: 'eventId',
      sortKey: 'endpoint',
      indexes: [
        { name: 'byState', partitionKey: 'state', sortKey: 'stateSince', projects: 'all' },
        { name: 'dead', partitionKey: 'deadShard', projects: [] },
        { name: 'due', partitionKey: 'dueShard', projects: ['attempts'] },
      ],
    });
  });

  it('refuses a table with local secondary indexes, which the model does not price', () => {
    const description: TableDescription = {
      TableName: 'ledger',
      KeySchema: [{ AttributeName: 'eventId', KeyType: 'HASH' }],
      LocalSecondaryIndexes: [{ IndexName: 'local' }],
    };
    expect(() => tableShape(description)).toThrow('table ledger: local secondary indexes are not modelled');
  });
});

describe('Function: sqsBilledRequests', () => {
  it('bills each started 64 KB of payload as one request, and at least one', () => {
    expect([sqsBilledRequests(0), sqsBilledRequests(65_536), sqsBilledRequests(65_537), sqsBilledRequests(200_000)]).toEqual([
      1, 1, 2, 4,
    ]);
  });
});

describe('Function: sqsMessageBytes', () => {
  it('counts the body and each attribute name, type and value in UTF-8 bytes, binary values raw', () => {
    // 'é' is 2 bytes; 'reason' 6 + 'String' 6 + 'invalid' 7; 'sig' 3 + 'Binary' 6 + 4 raw bytes.
    expect(sqsMessageBytes('hé', { reason: { type: 'String', value: 'invalid' }, sig: { type: 'Binary', value: new Uint8Array(4) } })).toBe(3 + 19 + 13);
  });
});

describe('Function: lambdaGbSeconds', () => {
  it('rounds each invocation up to the millisecond and scales by memory', () => {
    // (11 + 20) ms at 256 MB = 0.031 s × 0.25 GB.
    expect(lambdaGbSeconds([10.2, 20], 256)).toBeCloseTo(0.00775, 12);
  });
});

describe('Function: costPerMillionEvents', () => {
  it('prices each service at the published rates', () => {
    const cost = costPerMillionEvents({
      writeUnits: 2,
      readUnits: 4,
      sqsRequests: 0.2,
      lambdaGbSeconds: 0.00075,
      lambdaInvocations: 0.1,
    });
    // DynamoDB: 2 × 0.625 + 4 × 0.125 = 1.75. SQS: 0.2 × 0.40 = 0.08.
    // Lambda: 750 GB-s per million × 0.0000133334 = 0.01000005, plus 100,000 invocations × 0.20 / 1e6 = 0.02.
    expect(cost.dynamodb).toBeCloseTo(1.75, 10);
    expect(cost.sqs).toBeCloseTo(0.08, 10);
    expect(cost.lambda).toBeCloseTo(0.03000005, 10);
    expect(cost.total).toBeCloseTo(1.86000005, 10);
  });

  it('names the region and the date of its prices', () => {
    expect(PRICES.region).toBe('us-east-1');
    expect(PRICES.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });
});
