/**
 * DynamoDbHealthStore (lib/endpoints/dynamodb-health-store.ts) on dynalite: which health writes mark
 * the endpoint's item changed for the registry's change index (docs/contract.md §20): a run of
 * failures beginning, a pause, a recovery and disabling do, once each; a flush of counted failures
 * and a probe claim do not. A flush adds its whole count in one write; a removed endpoint's
 * tombstone is never written.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbHealthStore } from '../../lib/endpoints/dynamodb-health-store';
import { RegistryTable } from '../../lib/endpoints/dynamodb-registry-table';
import { CHANGE_FEED, REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';
import { EndpointNotFoundError } from '../../lib/errors';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { readsAndWrites, type CommandCounter } from '../helpers/dynalite';
import { useDynalite } from '../helpers/dynalite-fixture';

const T0 = Date.parse('2026-12-04T21:00:00Z');
const A = REGISTRY_SCHEMA.attributes;

let client: DynamoDBClient;
let counter: CommandCounter;
let tableName: string;
let store: DynamoDbHealthStore;
let tables = 0;

useDynalite((started) => {
  ({ client, counter } = started);
});

beforeEach(async () => {
  tableName = `endpoints-health-${++tables}`;
  await createEndpointsTable(client, tableName);
  await new DynamoDbEndpointRegistry({ client, tableName }).add({ name: 'acme', url: 'https://acme.example/hook', eventTypes: ['*'] }, T0);
  store = new DynamoDbHealthStore(new RegistryTable(DynamoDBDocumentClient.from(client), tableName));
  counter.reset();
});

/**
 * The change index's keys on the item: when it last changed, in whole ms (a stamp's fraction of a
 * millisecond is random: changeStamp), and its feed.
 */
async function mark(): Promise<{ changedAt: number | undefined; feed: string | undefined }> {
  const { Item } = await client.send(new GetItemCommand({ TableName: tableName, Key: { name: { S: 'acme' } }, ConsistentRead: true }));
  const changedAt = Item?.[A.changedAt]?.N;
  return { changedAt: changedAt === undefined ? undefined : Math.trunc(Number(changedAt)), feed: Item?.[A.feed]?.S };
}

describe('Class: DynamoDbHealthStore', () => {
  it('adds a flush of counted failures in one write, and marks the change only for the flush that begins the run', async () => {
    const first = await store.recordFailure('acme', T0 + 1_000, 5);
    const writesForFirst = readsAndWrites(counter.counts()).writes;
    const atFirst = await mark();
    counter.reset();
    const second = await store.recordFailure('acme', T0 + 2_000, 7);

    expect(first).toEqual({ failures: 5, failingSince: T0 + 1_000 });
    expect(second).toEqual({ failures: 12, failingSince: T0 + 1_000 });
    // The first: its addition and the mark; the next: its addition only.
    expect(writesForFirst).toBe(2);
    expect(readsAndWrites(counter.counts())).toEqual({ reads: 0, writes: 1 });
    expect(atFirst).toEqual({ changedAt: T0 + 1_000, feed: CHANGE_FEED });
    expect(await mark()).toEqual(atFirst);
  });

  it('leaves the mark alone on a probe claim, and moves it on a pause, a recovery, a new run and disabling', async () => {
    await store.recordFailure('acme', T0 + 1_000);
    const marks: (number | undefined)[] = [];
    const step = async (write: () => Promise<unknown>) => {
      await write();
      marks.push((await mark()).changedAt);
    };

    await step(() => store.claimProbe('acme', T0 + 2_000, T0 + 5_000));
    await step(() => store.pause('acme', T0 + 60_000, T0 + 3_000));
    await step(() => store.pause('acme', T0 + 30_000, T0 + 3_500));
    await step(() => store.recordRecovery('acme', T0 + 4_000));
    await step(() => store.recordFailure('acme', T0 + 5_000, 3));
    await step(() => store.disableIfEnabled('acme', { by: 'handoff', reason: 'failing', at: T0 + 6_000 }));

    // The shorter pause was refused: no change. Every mark keeps the one feed.
    expect(marks).toEqual([T0 + 1_000, T0 + 3_000, T0 + 3_000, T0 + 4_000, T0 + 5_000, T0 + 6_000]);
    expect((await mark()).feed).toBe(CHANGE_FEED);
  });

  it("never writes a removed endpoint's tombstone", async () => {
    await client.send(
      new PutItemCommand({ TableName: tableName, Item: { name: { S: 'gone' }, [A.removedAt]: { N: String(T0) }, [A.changedAt]: { N: String(T0) }, [A.feed]: { S: CHANGE_FEED } } }),
    );

    await expect(store.recordFailure('gone', T0 + 1_000, 2)).rejects.toBeInstanceOf(EndpointNotFoundError);
    await expect(store.pause('gone', T0 + 60_000, T0 + 1_000)).rejects.toBeInstanceOf(EndpointNotFoundError);

    const { Item } = await client.send(new GetItemCommand({ TableName: tableName, Key: { name: { S: 'gone' } }, ConsistentRead: true }));
    expect(Item?.[A.failures]).toBeUndefined();
    expect(Item?.[A.pausedUntil]).toBeUndefined();
  });
});
