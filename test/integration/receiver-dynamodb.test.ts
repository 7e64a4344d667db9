/**
 * The receiver kit on DynamoDB (dynalite on loopback): the contract every store keeps, and
 * concurrent copies of one request arriving over real HTTP at a Node server built with the kit.
 */
import { createServer } from 'node:http';
import { CreateTableCommand, GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../../lib/receiver/adapters';
import { DynamoDbIdempotencyStore, RECEIVER_TABLE, receiverTableDefinition } from '../../lib/receiver/dynamodb-store';
import { createReceiver, REPLAYED_HEADER } from '../../lib/receiver/receiver';
import { countCommands, emulatorDynamoDbClient, startDynalite, type Dynalite } from '../helpers/dynalite';
import { listenOnLoopback } from '../helpers/loopback';
import { CONTRACT_SECRET, CONTRACT_STORE_OPTIONS, receiverStoreContract, signedRequest } from '../helpers/receiver-store-contract';

const TABLE = 'receiver-idempotency';
let dynalite: Dynalite;
let client: DynamoDBClient;

beforeAll(async () => {
  dynalite = await startDynalite();
  client = emulatorDynamoDbClient(dynalite.endpoint);
  await client.send(new CreateTableCommand(receiverTableDefinition(TABLE)));
});

afterAll(async () => {
  client?.destroy();
  await dynalite?.close();
});

receiverStoreContract('DynamoDB (dynalite)', async () => ({
  store: new DynamoDbIdempotencyStore({ client, tableName: TABLE, ...CONTRACT_STORE_OPTIONS }),
  close: async () => {},
}));

describe('Class: DynamoDbIdempotencyStore', () => {
  it('runs the action once for 20 concurrent copies of one request sent over HTTP', async () => {
    // Prepare
    const eventId = `evt_http_${Date.now()}`;
    let runs = 0;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const receive = createReceiver({
      secrets: [CONTRACT_SECRET],
      store: new DynamoDbIdempotencyStore({ client, tableName: TABLE }),
      action: async () => {
        runs += 1;
        await finished;
        return { status: 200, body: { applied: eventId } };
      },
    });
    const server = await listenOnLoopback(createServer(toNodeListener(receive)));
    const request = signedRequest(eventId, Date.now());

    try {
      // Act
      const copies = Array.from({ length: 20 }, () =>
        fetch(server.url, { method: 'POST', headers: request.headers, body: request.body }).then(async (r) => ({ status: r.status, body: await r.text() })),
      );
      const early: unknown[] = [];
      copies.forEach((copy) => void copy.then((answer) => early.push(answer)));
      await expect.poll(() => early.length, { timeout: 20_000 }).toBe(19);
      finish();
      const answers = await Promise.all(copies);
      const repeat = await fetch(server.url, { method: 'POST', headers: request.headers, body: request.body });

      // Assess
      expect(runs).toBe(1);
      expect(answers.filter((a) => a.status === 425)).toHaveLength(19);
      expect(answers.filter((a) => a.status === 200).map((a) => a.body)).toEqual([`{"applied":"${eventId}"}`]);
      expect([repeat.status, repeat.headers.get(REPLAYED_HEADER), await repeat.text()]).toEqual([200, 'true', `{"applied":"${eventId}"}`]);
    } finally {
      await server.close();
    }
  });

  it('writes a first delivery in two requests (conditional put, then update) with its TTL at completion plus retention', async () => {
    const eventId = `evt_ttl_${Date.now()}`;
    const nowMs = Date.UTC(2026, 11, 2, 10, 15, 0);
    const counter = countCommands(client);
    const receive = createReceiver({
      secrets: [CONTRACT_SECRET],
      store: new DynamoDbIdempotencyStore({ client, tableName: TABLE, retentionSeconds: 86_400 }),
      clock: () => nowMs,
      action: () => undefined,
    });

    counter.reset();
    await receive(signedRequest(eventId, nowMs));
    const counts = counter.counts();
    const { Item } = await client.send(new GetItemCommand({ TableName: TABLE, Key: { [RECEIVER_TABLE.partitionKey]: { S: eventId } } }));

    expect(counts).toEqual({ PutItem: 1, UpdateItem: 1 });
    expect(Item?.[RECEIVER_TABLE.ttlAttribute]).toEqual({ N: String(nowMs / 1000 + 86_400) });
    expect(Item?.state).toEqual({ S: 'done' });
    expect(Item?.leaseExpiresAtMs).toBeUndefined();
  });
});
