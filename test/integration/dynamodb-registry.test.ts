/**
 * DynamoDbEndpointRegistry with the real AWS SDK against dynalite on loopback: every change a
 * conditional write (a taken name, a stale update, a missing endpoint refused), items read back
 * as written, one request per change, store failures named, and the sandbox's table and seeding.
 * With a cipher (what `handoff endpoint` gives it), every plain secret it writes is stored encrypted
 * for its endpoint; an ARN and a ciphertext are stored as they are; a refused encryption writes nothing.
 */
import { DeleteTableCommand, DescribeTableCommand, PutItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbHealthStore } from '../../lib/endpoints/dynamodb-health-store';
import { RegistryTable } from '../../lib/endpoints/dynamodb-registry-table';
import { defaultEndpointFields, type EndpointFields } from '../../lib/endpoints/endpoint';
import { unreadableOf } from '../../lib/endpoints/registry';
import { EndpointConflictError, EndpointNotFoundError, EndpointRegistryError, SecretEncryptionError } from '../../lib/errors';
import { REGISTRY_SCHEMA, REGISTRY_TABLE_DEFINITION } from '../../lib/endpoints/registry-schema';
import { generateSecret } from '../../lib/endpoints/secret';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import {
  readsAndWrites,
  type CommandCounter,
} from '../helpers/dynalite';
import { useDynalite } from '../helpers/dynalite-fixture';
import { TEST_SECRET as SECRET } from '../helpers/secrets';

const T0 = Date.parse('2026-12-03T04:00:00Z');
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/acme-AbCdEf';

let client: DynamoDBClient;
let counter: CommandCounter;
let tableName: string;
let registry: DynamoDbEndpointRegistry;
let tables = 0;

const acme: EndpointFields = {
  name: 'acme',
  url: 'https://hooks.acme.example/handoff?token=t0k3n',
  eventTypes: ['shipment.delivered', 'shipment.exception'],
  match: { 'data.carrier': ['acme', 'zephyr'], 'data.express': [true], 'data.pieces': [1, 2] },
  secret: SECRET,
  retrySchedule: [10, 60],
  maxAttempts: 4,
  recovery: 'drop',
  autoDisable: false,
};
const zephyr: EndpointFields = { name: 'zephyr', url: 'https://zephyr.example/hook', eventTypes: ['*'], secret: SECRET_ARN };

useDynalite((started) => {
  ({ client, counter } = started);
});

beforeEach(async () => {
  tableName = `endpoints-${++tables}`;
  await createEndpointsTable(client, tableName);
  registry = new DynamoDbEndpointRegistry({ client, tableName });
  counter.reset();
});

describe('Class: DynamoDbEndpointRegistry', () => {
  it('adds an endpoint, enabled, and reads back its fields exactly as given, secret included', async () => {
    const added = await registry.add(acme, T0);

    const read = await registry.get('acme');

    expect(added).toEqual({ fields: acme, state: 'enabled', createdAt: T0, updatedAt: T0 });
    expect(read).toEqual(added);
    expect(await registry.get('nobody')).toBeUndefined();
  });

  it('lists every endpoint in name order, across scan pages', async () => {
    const names = Array.from({ length: 30 }, (_, i) => `ep-${String(29 - i).padStart(2, '0')}`);
    for (const name of names) await registry.add({ name, url: `https://${name}.example/hook`, eventTypes: ['*'] }, T0);
    await registry.add(zephyr, T0);
    const paged = new DynamoDbEndpointRegistry({ client, tableName, scanPageSize: 7 });
    counter.reset();

    const listed = await paged.list();

    expect(counter.counts().Scan).toBeGreaterThanOrEqual(5);
    expect(listed.map((r) => r.fields.name)).toEqual([...names].sort().concat('zephyr'));
    expect(await registry.list()).toEqual(listed);
    expect(listed.at(-1)?.fields.secret).toBe(SECRET_ARN);
  });

  it('lists nothing from an empty table', async () => {
    expect(await registry.list()).toEqual([]);
  });

  it('refuses a name that is taken, keeping the endpoint there', async () => {
    await registry.add(acme, T0);

    const second = registry.add({ ...zephyr, name: 'acme' }, T0 + 1);

    await expect(second).rejects.toBeInstanceOf(EndpointConflictError);
    await expect(second).rejects.toThrow('endpoint "acme" already exists');
    expect((await registry.get('acme'))?.fields).toEqual(acme);
  });

  it('lets one of two concurrent adds of a name win, the other refused', async () => {
    const results = await Promise.allSettled([registry.add(acme, T0), registry.add({ ...acme, url: 'https://other.example/x' }, T0)]);

    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(EndpointConflictError);
  });

  it('updates the fields it was given the version of, keeping state and creation time, in one write', async () => {
    const added = await registry.add(acme, T0);
    await registry.setState('acme', 'disabled', { by: 'alice', reason: 'maintenance', at: T0 + 5 });
    const read = (await registry.get('acme'))!;
    counter.reset();

    const { match: _match, ...withoutMatch } = acme;
    const updated = await registry.update({ ...withoutMatch, eventTypes: ['*'] }, read.updatedAt, T0 + 10);

    expect(readsAndWrites(counter.counts())).toEqual({ reads: 0, writes: 1 });
    expect(updated).toEqual({
      fields: { ...withoutMatch, eventTypes: ['*'] },
      state: 'disabled',
      stateChange: { by: 'alice', reason: 'maintenance', at: T0 + 5 },
      createdAt: added.createdAt,
      updatedAt: T0 + 10,
    });
    expect(await registry.get('acme')).toEqual(updated);
  });

  it('refuses an update made on a version that has changed since, keeping the newer fields', async () => {
    const read = await registry.add(acme, T0);
    await registry.update({ ...acme, maxAttempts: 5 }, read.updatedAt, T0 + 1);

    const stale = registry.update({ ...acme, maxAttempts: 9 }, read.updatedAt, T0 + 2);

    await expect(stale).rejects.toBeInstanceOf(EndpointConflictError);
    await expect(stale).rejects.toThrow(/endpoint "acme" changed since it was read \(updated at 2026-12-03T04:00:00.001Z\): read it again and retry/);
    expect((await registry.get('acme'))?.fields.maxAttempts).toBe(5);
  });

  it('lets only one of two updates on the same version win, even within one millisecond', async () => {
    const read = await registry.add(acme, T0);
    const first = await registry.update({ ...acme, maxAttempts: 5 }, read.updatedAt, T0);

    const second = registry.update({ ...acme, maxAttempts: 9 }, read.updatedAt, T0);

    expect(first.updatedAt).toBeGreaterThan(read.updatedAt);
    await expect(second).rejects.toBeInstanceOf(EndpointConflictError);
    expect((await registry.get('acme'))?.fields.maxAttempts).toBe(5);
  });

  it('refuses to update an endpoint that does not exist', async () => {
    const update = registry.update(acme, T0, T0 + 1);

    await expect(update).rejects.toBeInstanceOf(EndpointNotFoundError);
    await expect(update).rejects.toThrow('no endpoint named "acme"');
    expect(await registry.get('acme')).toBeUndefined();
  });

  it('disables and enables, recording who, why and when, in one write each', async () => {
    await registry.add(acme, T0);
    counter.reset();

    const disabled = await registry.setState('acme', 'disabled', { by: 'alice', reason: 'receiver down (INC-7)', at: T0 + 100 });
    const enabled = await registry.setState('acme', 'enabled', { by: 'bob', reason: 'fixed', at: T0 + 200 });

    expect(readsAndWrites(counter.counts())).toEqual({ reads: 0, writes: 2 });
    expect(disabled).toMatchObject({ state: 'disabled', stateChange: { by: 'alice', reason: 'receiver down (INC-7)', at: T0 + 100 }, fields: acme });
    expect(enabled).toMatchObject({ state: 'enabled', stateChange: { by: 'bob', reason: 'fixed', at: T0 + 200 }, updatedAt: T0 + 200 });
    expect(await registry.get('acme')).toEqual(enabled);
  });

  it('refuses to set the state of an endpoint that does not exist, creating nothing', async () => {
    await expect(registry.setState('ghost', 'disabled', { by: 'alice', reason: 'x', at: T0 })).rejects.toBeInstanceOf(EndpointNotFoundError);
    expect(await registry.list()).toEqual([]);
  });

  it('removes an endpoint, and refuses to remove one that does not exist', async () => {
    await registry.add(acme, T0);
    await registry.add(zephyr, T0);

    await registry.remove('acme');

    expect((await registry.list()).map((r) => r.fields.name)).toEqual(['zephyr']);
    await expect(registry.remove('acme')).rejects.toBeInstanceOf(EndpointNotFoundError);
  });

  it('refuses to store fields that do not pass their checks', async () => {
    const bad = { ...acme, secret: 'plain-text' } as EndpointFields;

    await expect(registry.add(bad, T0)).rejects.toThrow('endpoint "acme": secret must be a whsec_');
    expect(await registry.get('acme')).toBeUndefined();
  });

  /** An item written by hand, with an event type no version has: one the registry cannot use. */
  async function putHandmadeItem(secret: string): Promise<void> {
    await client.send(
      new PutItemCommand({
        TableName: tableName,
        Item: {
          [REGISTRY_SCHEMA.partitionKey]: { S: 'handmade' },
          fields: { M: { name: { S: 'handmade' }, url: { S: 'https://x.example' }, eventTypes: { L: [{ S: 'shipment.lost' }] }, secret: { S: secret } } },
          state: { S: 'enabled' },
          createdAt: { N: String(T0) },
          updatedAt: { N: String(T0) },
        },
      }),
    );
  }

  it('names an item it cannot use (written by hand), without showing its secret', async () => {
    const secret = generateSecret();
    await putHandmadeItem(secret);

    const error = await registry.list().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(EndpointRegistryError);
    expect((error as EndpointRegistryError).code).toBe('registry-item-invalid');
    expect((error as Error).message).toContain(`endpoint registry ${tableName}: the item of endpoint "handmade" cannot be used: fields: endpoint "handmade": eventTypes holds "shipment.lost"`);
    expect((error as Error).message).not.toContain(secret);
  });

  it('leaves out an item it cannot use when told whom to tell, and lists the others', async () => {
    await registry.add(acme, T0);
    await putHandmadeItem(generateSecret());
    const told: EndpointRegistryError[] = [];
    const tolerant = new DynamoDbEndpointRegistry({ client, tableName, onUnreadable: (error) => told.push(error) });

    const listed = await tolerant.list();
    const scanned = await registry.scan();

    expect(listed.map((r) => r.fields.name)).toEqual(['acme']);
    expect(told.map((e) => e.code)).toEqual(['registry-item-invalid']);
    expect(scanned.records).toEqual(listed);
    expect(scanned.unreadable.map((e) => e.message)).toEqual([told[0]?.message]);
    // The list carries it on, for routing to hold the deliveries that would go to it.
    expect(unreadableOf(listed)).toEqual(told);
  });

  it('says which endpoint an unusable item is and what it subscribes to, when its eventTypes and match can be read', async () => {
    const now = Date.now();
    const item = (name: string, fields: Record<string, unknown>) =>
      DynamoDBDocumentClient.from(client).send(new PutCommand({ TableName: tableName, Item: { name, fields: { name, url: 'https://crm.example/in', ...fields }, state: 'stuck', createdAt: now, updatedAt: now } }));
    await item('crm', { eventTypes: ['shipment.delivered'], match: { 'data.carrier': ['acme'] } });
    await item('odd', { eventTypes: 'all of them' });

    const { unreadable } = await registry.scan();

    expect(unreadable.map((e) => [e.endpoint, e.subscription]).sort()).toEqual([
      ['crm', { eventTypes: ['shipment.delivered'], match: { 'data.carrier': ['acme'] } }],
      ['odd', undefined],
    ]);
  });

  it('removes an item it cannot use', async () => {
    await putHandmadeItem(generateSecret());

    await registry.remove('handmade');

    expect(await registry.scan()).toEqual({ records: [], unreadable: [] });
  });

  it('reports a missing table as the registry being unavailable, naming the table and the operation', async () => {
    const missing = new DynamoDbEndpointRegistry({ client, tableName: 'no-such-table' });

    const error = await missing.get('acme').catch((e: unknown) => e);

    expect(error).toBeInstanceOf(EndpointRegistryError);
    expect((error as EndpointRegistryError).code).toBe('registry-unavailable');
    expect((error as Error).message).toBe('endpoint registry no-such-table failed to read endpoint "acme": ResourceNotFoundException');
  });
});

describe('Class: DynamoDbEndpointRegistry with a cipher', () => {
  const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());
  const withCipher = () => new DynamoDbEndpointRegistry({ client, tableName, cipher });
  /** The item's fields as stored, read past the adapter. */
  const storedFields = async (name: string) => (await registry.get(name))!.fields;

  it('stores a plain secret encrypted for its endpoint, in the one write, and returns the stored form', async () => {
    counter.reset();
    const added = await withCipher().add(acme, T0);
    const counts = readsAndWrites(counter.counts());

    const stored = await storedFields('acme');

    expect(counts).toEqual({ reads: 0, writes: 1 });
    expect(stored.secret).toMatch(/^encrypted:local:/);
    expect(added.fields).toEqual(stored);
    expect({ ...stored, secret: SECRET }).toEqual(acme);
    expect(await cipher.decrypt(stored.secret!, 'acme')).toBe(SECRET);
    expect(JSON.stringify(await registry.list())).not.toContain(SECRET.slice(6));
  });

  it('keeps a ciphertext and an ARN as they are, and encrypts a plain value from before when its endpoint is next written', async () => {
    await registry.add(acme, T0); // plain, as written before secrets were encrypted
    await registry.add(zephyr, T0);
    const encrypted = withCipher();
    const first = await encrypted.update({ ...acme, maxAttempts: 5 }, T0, T0 + 1);

    const second = await encrypted.update({ ...first.fields, maxAttempts: 6 }, first.updatedAt, T0 + 2);
    const arn = await encrypted.update({ ...zephyr, maxAttempts: 2 }, T0, T0 + 1);

    expect(first.fields.secret).toMatch(/^encrypted:local:/);
    expect(await cipher.decrypt(first.fields.secret!, 'acme')).toBe(SECRET);
    expect(second.fields.secret).toBe(first.fields.secret);
    expect(arn.fields.secret).toBe(SECRET_ARN);
  });

  it("encrypts a rotation's previous secret too, each for its endpoint", async () => {
    const rotated = { ...acme, secret: generateSecret(), previousSecret: SECRET, previousSecretUntil: T0 + 3_600_000 };

    const added = await withCipher().add(rotated, T0);

    expect(added.fields.previousSecret).toMatch(/^encrypted:local:/);
    expect(await cipher.decrypt(added.fields.previousSecret!, 'acme')).toBe(SECRET);
    expect(await cipher.decrypt(added.fields.secret!, 'acme')).toBe(rotated.secret);
  });

  it('writes nothing when the cipher refuses, passing its error on', async () => {
    const refusing = new DynamoDbEndpointRegistry({
      client,
      tableName,
      cipher: { encrypt: (_secret, endpoint) => Promise.reject(new SecretEncryptionError(`KMS could not encrypt the secret of endpoint ${endpoint}: AccessDeniedException`)) },
    });
    counter.reset();

    const error = await refusing.add(acme, T0).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(SecretEncryptionError);
    expect(String(error)).not.toContain(SECRET.slice(6));
    expect(readsAndWrites(counter.counts())).toEqual({ reads: 0, writes: 0 });
    expect(await registry.get('acme')).toBeUndefined();
  });

  it('asks no cipher for a write without a plain secret', async () => {
    const asked: string[] = [];
    const counting = new DynamoDbEndpointRegistry({ client, tableName, cipher: { encrypt: (_s, endpoint) => (asked.push(endpoint), cipher.encrypt(_s, endpoint)) } });

    await counting.add(zephyr, T0);
    await counting.add({ name: 'unsigned', url: 'https://u.example/hook', eventTypes: ['*'] }, T0);

    expect(asked).toEqual([]);
  });
});

describe('Class: DynamoDbHealthStore on the registry\'s items', () => {
  // The consumers' health writes, on the items the registry reads (the registry itself writes no health).
  let health: DynamoDbHealthStore;
  beforeEach(() => {
    health = new DynamoDbHealthStore(new RegistryTable(DynamoDBDocumentClient.from(client), tableName));
  });

  it('counts failures from the first one, in one write each, leaving fields and updatedAt as they were', async () => {
    const added = await registry.add(acme, T0);
    counter.reset();

    const first = await health.recordFailure('acme', T0 + 1_000);
    const second = await health.recordFailure('acme', T0 + 2_000);

    expect(first).toEqual({ failures: 1, failingSince: T0 + 1_000 });
    expect(second).toEqual({ failures: 2, failingSince: T0 + 1_000 });
    // One write each, and one more for the first: the run's beginning marked for the change index.
    expect(readsAndWrites(counter.counts())).toEqual({ reads: 0, writes: 3 });
    const read = await registry.get('acme');
    expect(read).toEqual({ ...added, health: { failures: 2, failingSince: T0 + 1_000 } });
    // An operator's update on the version read before the failures still goes through.
    await expect(registry.update({ ...acme, maxAttempts: 5 }, added.updatedAt, T0 + 3_000)).resolves.toMatchObject({ updatedAt: T0 + 3_000 });
    expect((await registry.get('acme'))?.health).toEqual({ failures: 2, failingSince: T0 + 1_000 });
  });

  it('records the recovery: failures cleared, failingSince removed, lastAcceptedAt set', async () => {
    await registry.add(acme, T0);
    await health.recordFailure('acme', T0 + 1_000);

    const recovered = await health.recordRecovery('acme', T0 + 5_000);

    expect(recovered).toEqual({ failures: 0, lastAcceptedAt: T0 + 5_000 });
    expect((await registry.list())[0]?.health).toEqual({ failures: 0, lastAcceptedAt: T0 + 5_000 });
  });

  it('pauses until the later of two pauses, whichever comes first, in one write', async () => {
    await registry.add(acme, T0);
    counter.reset();

    expect(await health.pause('acme', T0 + 60_000)).toBe(T0 + 60_000);
    expect(readsAndWrites(counter.counts())).toEqual({ reads: 0, writes: 1 });
    expect(await health.pause('acme', T0 + 3_000)).toBe(T0 + 60_000);
    expect(await health.pause('acme', T0 + 90_000)).toBe(T0 + 90_000);

    expect((await registry.get('acme'))?.health).toEqual({ failures: 0, pausedUntil: T0 + 90_000 });
  });

  it("gives the half-open probe to one consumer: refused while another's runs, while paused and once recovered, each refusal with the item's health", async () => {
    await registry.add(acme, T0);
    await health.recordFailure('acme', T0 + 1_000);
    await health.pause('acme', T0 + 6_000);

    // Paused: nobody probes yet.
    expect(await health.claimProbe('acme', T0 + 5_000, T0 + 8_000)).toEqual({
      claimed: false,
      health: { failures: 1, failingSince: T0 + 1_000, pausedUntil: T0 + 6_000 },
    });
    // The pause over: of two consumers asking together, one probes, the other is told until when.
    const [a, b] = await Promise.all([health.claimProbe('acme', T0 + 6_000, T0 + 9_000), health.claimProbe('acme', T0 + 6_000, T0 + 9_100)]);
    expect([a.claimed, b.claimed].sort()).toEqual([false, true]);
    const probeUntil = (a.claimed ? a : b).health.probeUntil;
    expect((a.claimed ? b : a).health.probeUntil).toBe(probeUntil);
    // The claim lapses: another consumer may take it.
    expect((await health.claimProbe('acme', probeUntil!, probeUntil! + 3_000)).claimed).toBe(true);
    // Recovered: no probe is needed, and the claim is cleared.
    await health.recordRecovery('acme', T0 + 20_000);
    expect(await health.claimProbe('acme', T0 + 21_000, T0 + 24_000)).toEqual({
      claimed: false,
      health: { failures: 0, pausedUntil: T0 + 6_000, lastAcceptedAt: T0 + 20_000 },
    });
    await expect(health.claimProbe('nobody', T0, T0 + 3_000)).rejects.toBeInstanceOf(EndpointNotFoundError);
  });

  it('disables an enabled endpoint once, with who, why and when: a second consumer is told it was not enabled', async () => {
    await registry.add(acme, T0);
    const change = { by: 'handoff', reason: 'HTTP 410 Gone from the endpoint', at: T0 + 7_000 };

    const results = await Promise.all([health.disableIfEnabled('acme', change), health.disableIfEnabled('acme', change)]);

    expect(results.sort()).toEqual([false, true]);
    expect(await registry.get('acme')).toMatchObject({ state: 'disabled', stateChange: change, updatedAt: T0 + 7_000 });
    expect(await health.disableIfEnabled('nobody', change)).toBe(false);
  });

  it("starts an enabled endpoint's health afresh: failures from before it was back count for nothing", async () => {
    await registry.add(acme, T0);
    for (let i = 1; i <= 3; i++) await health.recordFailure('acme', T0 + i * 1_000);
    await health.disableIfEnabled('acme', { by: 'handoff', reason: 'failing', at: T0 + 4_000 });

    await registry.setState('acme', 'enabled', { by: 'alice', reason: 'receiver back', at: T0 + 10_000 });
    const next = await health.recordFailure('acme', T0 + 11_000);

    expect(next).toEqual({ failures: 1, failingSince: T0 + 11_000 });
  });

  it('creates no item for an endpoint that does not exist', async () => {
    await expect(health.recordFailure('nobody', T0)).rejects.toBeInstanceOf(EndpointNotFoundError);
    await expect(health.recordRecovery('nobody', T0)).rejects.toBeInstanceOf(EndpointNotFoundError);
    await expect(health.pause('nobody', T0 + 1_000)).rejects.toBeInstanceOf(EndpointNotFoundError);

    expect(await registry.list()).toEqual([]);
  });

  it('reads health an item holds that it could not have written as none, keeping the endpoint usable', async () => {
    await registry.add(zephyr, T0);
    await client.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { name: { S: 'zephyr' } },
        UpdateExpression: 'SET failures = :f, pausedUntil = :p',
        ExpressionAttributeValues: { ':f': { S: 'many' }, ':p': { N: '-1' } },
      }),
    );

    expect((await registry.get('zephyr'))?.health).toEqual({ failures: 0 });
  });
});

describe('Function: createEndpointsTable', () => {
  it('creates the table keyed by name, with its change and owner indexes, and keeps an existing one with its items', async () => {
    await registry.add(acme, T0);

    await createEndpointsTable(client, tableName);

    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    expect(Table?.KeySchema).toEqual([{ AttributeName: 'name', KeyType: 'HASH' }]);
    expect(Table?.AttributeDefinitions).toEqual(REGISTRY_TABLE_DEFINITION.AttributeDefinitions);
    expect(Table?.GlobalSecondaryIndexes?.map((index) => [index.IndexName, index.Projection?.ProjectionType])).toEqual([
      ['changes', 'KEYS_ONLY'],
      ['owners', 'KEYS_ONLY'],
    ]);
    expect(await registry.get('acme')).toBeDefined();
    await client.send(new DeleteTableCommand({ TableName: tableName }));
  });
});

describe('Function: seedEndpoints', () => {
  it('puts each endpoint, enabled, and returns them as stored', async () => {
    const fallback = defaultEndpointFields('https://hooks.example.com/x', SECRET);

    const seeded = await seedEndpoints(registry, [fallback, zephyr], T0);

    expect(seeded.map((r) => [r.fields.name, r.state])).toEqual([
      ['default', 'enabled'],
      ['zephyr', 'enabled'],
    ]);
    expect(await registry.list()).toEqual([...seeded].sort((a, b) => a.fields.name.localeCompare(b.fields.name)));
  });

  it('gives an endpoint already there the fields given, keeping its state', async () => {
    await registry.add(acme, T0);
    await registry.setState('acme', 'disabled', { by: 'alice', reason: 'x', at: T0 + 1 });

    const [seeded] = await seedEndpoints(registry, [{ ...acme, maxAttempts: 6 }], T0 + 2);

    expect(seeded).toMatchObject({ state: 'disabled', fields: { maxAttempts: 6 } });
    expect(await registry.get('acme')).toEqual(seeded);
  });
});
