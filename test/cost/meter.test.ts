/**
 * The meter bills a read as DynamoDB does: on what it read, not on what it returned. A projection on
 * the table still reads whole items; a filter still reads every item it evaluates.
 */
import { BatchGetItemCommand, GetItemCommand, PutItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTable } from '../../sandbox/create-table';
import { readUnits } from '../../scripts/cost/billing';
import { wholeRead } from '../../scripts/cost/meter';
import { startMeteredDynalite, type MeteredDynalite } from '../helpers/metered-dynalite';

const TABLE = 'cost-test-meter-reads';
/** Three items of about 10 KB: 3 read units each, consistently. */
const BIG = 'x'.repeat(10_000);

let emulator: MeteredDynalite;

beforeAll(async () => {
  emulator = await startMeteredDynalite();
  const { direct } = emulator;
  await createTable(direct, TABLE, { AttributeDefinitions: [{ AttributeName: 'k', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'k', KeyType: 'HASH' }] });
  for (const k of ['a', 'b', 'c']) await direct.send(new PutItemCommand({ TableName: TABLE, Item: { k: { S: k }, big: { S: BIG } } }));
});

afterAll(() => emulator?.close());

const itemUnits = readUnits(1 + 1 + 3 + BIG.length, true);

describe('Meter: reads', () => {
  it('bills a GetItem with a projection on the whole item', async () => {
    const { meter, metered } = emulator;
    const usage = meter.dynamodb.start();
    const { Item } = await metered.send(new GetItemCommand({ TableName: TABLE, Key: { k: { S: 'a' } }, ConsistentRead: true, ProjectionExpression: 'k' }));

    expect(Item).toEqual({ k: { S: 'a' } });
    expect([usage.readRequests, usage.readUnits]).toEqual([1, itemUnits]);
  });

  it('bills a Scan on every item it evaluates, whatever its filter returns', async () => {
    const { meter, metered } = emulator;
    const usage = meter.dynamodb.start();
    const { Items } = await metered.send(
      new ScanCommand({ TableName: TABLE, ConsistentRead: true, FilterExpression: '#k = :none', ExpressionAttributeNames: { '#k': 'k' }, ExpressionAttributeValues: { ':none': { S: 'z' } } }),
    );

    expect(Items).toEqual([]);
    expect(usage.readUnits).toBe(readUnits(3 * (1 + 1 + 3 + BIG.length), true));
  });

  it('bills a BatchGetItem with a projection item by item, on the whole items', async () => {
    const { meter, metered } = emulator;
    const usage = meter.dynamodb.start();
    await metered.send(
      new BatchGetItemCommand({ RequestItems: { [TABLE]: { Keys: [{ k: { S: 'a' } }, { k: { S: 'b' } }], ConsistentRead: true, ProjectionExpression: 'k' } } }),
    );

    expect(usage.readUnits).toBe(2 * itemUnits);
  });

  it('prices the read without its narrowing, keeping only the placeholders the key condition uses', () => {
    const query = {
      TableName: TABLE,
      KeyConditionExpression: '#k = :k',
      FilterExpression: '#kind = :kind',
      ProjectionExpression: '#k',
      Select: 'SPECIFIC_ATTRIBUTES',
      ExpressionAttributeNames: { '#k': 'k', '#kind': 'kind' },
      ExpressionAttributeValues: { ':k': { S: 'a' }, ':kind': { S: 'b' } },
      Limit: 10,
    };

    expect(wholeRead('Query', query)).toEqual({
      TableName: TABLE,
      KeyConditionExpression: '#k = :k',
      ExpressionAttributeNames: { '#k': 'k' },
      ExpressionAttributeValues: { ':k': { S: 'a' } },
      Limit: 10,
    });
    expect(wholeRead('GetItem', { TableName: TABLE, Key: {} })).toBeUndefined();
  });
});
