/**
 * The real consumer handler when an endpoint cannot be resolved (docs/contract.md §11): a signing
 * secret Secrets Manager will not give (a 500, a throttle, a KMS key the consumer may not use or
 * cannot decrypt with, a deleted secret), a registry item that cannot be decoded, a registry that
 * cannot be read at all. Each leaves its messages on the queue (batch item failures, back within
 * seconds), writes nothing to the ledger and dead-letters nothing; once the dependency is back, the
 * events are delivered. A message fanned out to several endpoints is held as a whole while one of
 * them cannot be resolved. A secret rotated in Secrets Manager signs with both versions.
 *
 * Secrets the registry holds encrypted (what `handoff endpoint` writes, lib/endpoints/secret-cipher.ts):
 * `encrypted:kms:…` is decrypted by KMS with the endpoint's context, once per container, and signs
 * with the plaintext; while KMS refuses, its endpoint is held the same way. `encrypted:local:…` is
 * decrypted with the sandbox's key from the environment; without it, its endpoint is held.
 *
 * Against fauxqs, dynalite, loopback receivers, a loopback Secrets Manager (test/helpers/secrets-manager.ts)
 * and a loopback KMS (test/helpers/kms.ts).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { RESOURCE_ENV } from '../../lib/config';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { generateSecret, SECRET_READ_TIMEOUT_MS } from '../../lib/endpoints/secret';
import { LocalSecretCipher, secretContext } from '../../lib/endpoints/secret-cipher';
import { CHANGE_FEED, REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';
import type { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { coldStartOnRegistry, isolateEachTest, useConsumerHarness, type ConsumerHarness, type Handler } from '../helpers/consumer-harness';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { startKmsStub, type KmsStub } from '../helpers/kms';
import { SECRETS_MANAGER_FAILURES, startSecretsManagerStub, type SecretsManagerFailure, type SecretsManagerStub } from '../helpers/secrets-manager';

const QUEUE_VISIBILITY_SECONDS = 30;
const arnOf = (name: string) => `arn:aws:secretsmanager:us-east-1:000000000000:secret:handoff/${name}-AbCdEf`;

let harness: ConsumerHarness;
let sqs: SQSClient;
let ledger: DynamoDbLedger;
let dynamodb: DynamoDBClient;
let documents: DynamoDBDocumentClient;
let billing: TestReceiver;
let crm: TestReceiver;
let secretsManager: SecretsManagerStub;
let kms: KmsStub;
/** The registry's key, as the stack's ARN names it. */
const KEY_ARN = 'arn:aws:kms:us-east-1:000000000000:key/1234abcd-12ab-34cd-56ef-1234567890ab';
let lines: string[];
let tableCount = 0;

useConsumerHarness('consumer-unresolved', async (started) => {
  harness = started;
  ({ sqs, ledger, dynamodb, receiver: billing } = harness);
  crm = await startTestReceiver();
  secretsManager = await startSecretsManagerStub();
  kms = await startKmsStub();
  documents = DynamoDBDocumentClient.from(dynamodb);
});

afterAll(async () => {
  await Promise.all([crm?.close(), secretsManager?.close(), kms?.close()]);
});

isolateEachTest((captured) => (lines = captured));

/** Fresh queues and a fresh registry table (seeded with `fields`, unless `seed` is false), and a cold start reading it with no cache. */
async function start(fields: EndpointFields[], options: { seed?: boolean; env?: Record<string, string> } = {}) {
  const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
  tableCount += 1;
  const tableName = `handoff-endpoints-unresolved-${tableCount}`;
  const registry = new DynamoDbEndpointRegistry({ client: dynamodb, tableName });
  const seed = async () => {
    await createEndpointsTable(dynamodb, tableName);
    await seedEndpoints(registry, fields, Date.now());
  };
  if (options.seed !== false) await seed();
  const handler = await coldStartOnRegistry(harness, queues, tableName, {
    AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager.url,
    AWS_ENDPOINT_URL_KMS: kms.url,
    // One request per call: each answer of the stand-in is what the consumer sees.
    AWS_MAX_ATTEMPTS: '1',
    ...options.env,
  });
  return { handler, tableName, registry, seed, ...queues };
}

function event(id: string, status: string, carrier: string): string {
  return JSON.stringify({ id, shipmentId: 'shp_1', status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier } });
}

async function send(queueUrl: string, ...bodies: string[]): Promise<void> {
  for (const body of bodies) await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
}

async function receiveNow(queueUrl: string): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: ['All'] }));
  return Messages;
}

const invoke = (handler: Handler, queueUrl: string, messages: Message[]) => harness.invoke(handler, queueUrl, messages);

const idOf = (m: Message) => (JSON.parse(m.Body!) as { id: string }).id;
const logLines = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
/** The service's EndpointUnresolved, summed over the invocations' metric documents. */
const unresolvedCount = () => logLines().filter((l) => '_aws' in l && l.Endpoint !== undefined).reduce((sum, l) => sum + Number(l.EndpointUnresolved ?? 0), 0);


/** The first request `receiver` got for `eventId` carries one signature per secret, each verifying on its own. */
function expectSignedByEach(receiver: TestReceiver, eventId: string, secrets: readonly string[]): void {
  const [request] = receiver.requestsFor(eventId);
  expect(String(request!.headers['webhook-signature']).split(' ')).toHaveLength(secrets.length);
  for (const secret of secrets) expect(receiver.verify(request!, secret)).toBe(true);
}
describe('Handler: consumer, an endpoint whose signing secret cannot be read', () => {
  const failures = Object.keys(SECRETS_MANAGER_FAILURES) as SecretsManagerFailure[];

  it(`holds its deliveries on the queue (${failures.join(', ')}), writing nothing, and delivers them once the secret can be read`, async () => {
    // Prepare: one endpoint per failure, each subscribed to the events of its own carrier; billing's secret is in the registry.
    const secrets = Object.fromEntries(failures.map((failure) => [failure, generateSecret()]));
    const billingSecret = generateSecret();
    const { handler, queueUrl, deadLetterQueueUrl } = await start([
      { name: 'billing', url: billing.url, eventTypes: ['*'], match: { 'data.carrier': ['billing'] }, secret: billingSecret },
      ...failures.map((failure) => ({ name: `crm-${failure}`, url: crm.url, eventTypes: ['*'], match: { 'data.carrier': [failure] }, secret: arnOf(failure) })),
    ]);
    for (const failure of failures) secretsManager.answer(arnOf(failure), { failure });
    await send(queueUrl, ...failures.map((failure) => event(`evt_held_${failure}`, 'delivered', failure)), event('evt_held_billing', 'delivered', 'billing'));

    // Act: the first invocation, while Secrets Manager fails
    const held = await invoke(handler, queueUrl, await harness.receive(queueUrl, failures.length + 1));

    // Assess: each message of an unreadable secret stays, the others are delivered; nothing written for the held ones
    expect(held.batchItemFailures).toHaveLength(failures.length);
    expect(billing.requestsFor('evt_held_billing')).toHaveLength(1);
    expect(crm.requests.filter((r) => r.eventId?.startsWith('evt_held_'))).toEqual([]);
    for (const failure of failures) expect(await ledger.deliveriesOf(`evt_held_${failure}`)).toEqual([]);
    expect(await receiveNow(deadLetterQueueUrl)).toEqual([]);
    const heldLines = logLines().filter((l) => l.message === 'delivery' && l.why === 'endpoint-unresolved');
    expect(heldLines.map((l) => [l.eventId, l.endpoints, l.afterSeconds]).sort()).toEqual(
      failures.map((failure) => [`evt_held_${failure}`, [`crm-${failure}`], 5]).sort(),
    );
    const unresolved = logLines().filter((l) => l.message === 'endpoint unresolved');
    expect(unresolved.map((l) => [l.endpoint, String(l.errorMessage).split(': ').at(-1)]).sort()).toEqual(
      failures.map((failure) => [`crm-${failure}`, SECRETS_MANAGER_FAILURES[failure].type]).sort(),
    );
    expect(unresolvedCount()).toBe(failures.length);
    expect(lines.join('\n')).not.toContain(billingSecret.slice(6));

    // Act: Secrets Manager is back; the held messages return within seconds. (One back before its
    // failed read may be retried, 5 s after that read, is held once more: a busy machine's timing.)
    for (const failure of failures) secretsManager.answer(arnOf(failure), { value: secrets[failure]! });
    const returned: string[] = [];
    let stillHeld = failures.length;
    for (let round = 0; stillHeld > 0 && round < 3; round++) {
      const back = await harness.receive(queueUrl, stillHeld);
      returned.push(...back.map(idOf));
      stillHeld = (await invoke(handler, queueUrl, back)).batchItemFailures.length;
    }

    // Assess: each delivered once, signed with its secret
    expect(stillHeld).toBe(0);
    expect(new Set(returned)).toEqual(new Set(failures.map((failure) => `evt_held_${failure}`)));
    for (const failure of failures) {
      const requests = crm.requestsFor(`evt_held_${failure}`);
      expect(requests).toHaveLength(1);
      expect(crm.verify(requests[0]!, secrets[failure]!)).toBe(true);
      expect((await ledger.deliveriesOf(`evt_held_${failure}`)).map((r) => [r.endpoint, r.state])).toEqual([[`crm-${failure}`, 'delivered']]);
    }
    expect(await receiveNow(queueUrl)).toEqual([]);
  });

  it('holds its deliveries, not the batch, when Secrets Manager does not answer: the read gives up after its timeout', async () => {
    // Prepare
    const crmSecret = generateSecret();
    const { handler, queueUrl } = await start([
      { name: 'billing', url: billing.url, eventTypes: ['shipment.in_transit'] },
      { name: 'crm', url: crm.url, eventTypes: ['shipment.delivered'], secret: arnOf('crm-hang') },
    ]);
    secretsManager.answer(arnOf('crm-hang'), { hang: true });
    await send(queueUrl, event('evt_hang_held', 'delivered', 'acme'), event('evt_hang_other', 'in_transit', 'acme'));
    const messages = await harness.receive(queueUrl, 2);

    // Act
    const startedAt = Date.now();
    const held = await invoke(handler, queueUrl, messages);
    const tookMs = Date.now() - startedAt;

    // Assess
    expect(held.batchItemFailures).toHaveLength(1);
    expect(tookMs).toBeGreaterThanOrEqual(SECRET_READ_TIMEOUT_MS - 100);
    expect(tookMs).toBeLessThan(SECRET_READ_TIMEOUT_MS + 2_000);
    expect(billing.requestsFor('evt_hang_other')).toHaveLength(1);
    expect(logLines().find((l) => l.message === 'endpoint unresolved')).toMatchObject({ endpoint: 'crm' });

    // Act: it answers again
    secretsManager.answer(arnOf('crm-hang'), { value: crmSecret });
    const delivered = await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));

    // Assess
    expect(delivered.batchItemFailures).toEqual([]);
    expect(crm.requestsFor('evt_hang_held')).toHaveLength(1);
  });

  it('holds an event for several endpoints as a whole while one of them cannot be resolved: no fan-out without it', async () => {
    // Prepare
    const crmSecret = generateSecret();
    const { handler, queueUrl } = await start([
      { name: 'billing', url: billing.url, eventTypes: ['shipment.delivered'], secret: generateSecret() },
      { name: 'crm', url: crm.url, eventTypes: ['shipment.delivered'], secret: arnOf('crm-fan') },
    ]);
    secretsManager.answer(arnOf('crm-fan'), { failure: 'throttled' });
    await send(queueUrl, event('evt_fan_held', 'delivered', 'acme'));

    // Act
    const held = await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));

    // Assess: the producer's message stays; no endpoint message was sent, no row written
    expect(held.batchItemFailures).toHaveLength(1);
    expect(await receiveNow(queueUrl)).toEqual([]);
    expect(await ledger.deliveriesOf('evt_fan_held')).toEqual([]);

    // Act: the secret can be read again: routed to both, each endpoint's message delivered
    secretsManager.answer(arnOf('crm-fan'), { value: crmSecret });
    const routed = await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));
    const forEndpoints = await harness.receive(queueUrl, 2);
    const delivered = await invoke(handler, queueUrl, forEndpoints);

    // Assess
    expect([routed.batchItemFailures, delivered.batchItemFailures]).toEqual([[], []]);
    expect(billing.requestsFor('evt_fan_held')).toHaveLength(1);
    expect(crm.requestsFor('evt_fan_held')).toHaveLength(1);
    expect(crm.verify(crm.requestsFor('evt_fan_held')[0]!, crmSecret)).toBe(true);
    expect((await ledger.deliveriesOf('evt_fan_held')).map((r) => [r.endpoint, r.state])).toEqual([
      ['billing', 'delivered'],
      ['crm', 'delivered'],
    ]);
  });

  it('signs with both versions of a secret rotated in Secrets Manager (AWSCURRENT put a minute ago, AWSPREVIOUS)', async () => {
    // Prepare
    const [oldSecret, newSecret] = [generateSecret(), generateSecret()];
    const { handler, queueUrl } = await start([{ name: 'crm', url: crm.url, eventTypes: ['*'], secret: arnOf('crm-rotated') }]);
    secretsManager.answer(arnOf('crm-rotated'), { value: newSecret, createdAt: new Date(Date.now() - 60_000), previous: oldSecret });
    await send(queueUrl, event('evt_rotated', 'delivered', 'acme'));

    // Act
    const response = await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));

    // Assess: two signatures, new first; each secret alone verifies the request
    expect(response.batchItemFailures).toEqual([]);
    expectSignedByEach(crm, 'evt_rotated', [newSecret, oldSecret]);
    expect(secretsManager.calls.filter((call) => call.startsWith(arnOf('crm-rotated')))).toEqual([
      `${arnOf('crm-rotated')} AWSCURRENT`,
      `${arnOf('crm-rotated')} AWSPREVIOUS`,
    ]);
  });
});

describe('Handler: consumer, an endpoint whose signing secret the registry holds encrypted', () => {
  /** The stored form of `secret` for `endpoint`, as `handoff endpoint` writes it in AWS. */
  const kmsStored = (secret: string, endpoint: string) => `encrypted:kms:${kms.encrypt(secret, KEY_ARN, secretContext(endpoint)).toString('base64')}`;

  afterEach(() => {
    kms.deny = false;
  });

  it('signs with the secret KMS decrypts, asking once per container; a plain secret beside it signs as before', async () => {
    // Prepare
    const [crmSecret, billingSecret] = [generateSecret(), generateSecret()];
    const { handler, queueUrl } = await start([
      { name: 'crm', url: crm.url, eventTypes: ['shipment.delivered'], secret: kmsStored(crmSecret, 'crm') },
      { name: 'billing', url: billing.url, eventTypes: ['shipment.in_transit'], secret: billingSecret },
    ]);
    kms.calls.length = 0;

    // Act: two invocations of one container
    await send(queueUrl, event('evt_kms_1', 'delivered', 'acme'), event('evt_plain_1', 'in_transit', 'acme'));
    const first = await invoke(handler, queueUrl, await harness.receive(queueUrl, 2));
    await send(queueUrl, event('evt_kms_2', 'delivered', 'acme'), event('evt_plain_2', 'in_transit', 'acme'));
    const second = await invoke(handler, queueUrl, await harness.receive(queueUrl, 2));

    // Assess: each request signed with the plaintext; KMS asked once, with crm's context and no key
    expect([first.batchItemFailures, second.batchItemFailures]).toEqual([[], []]);
    for (const n of [1, 2]) {
      expectSignedByEach(crm, `evt_kms_${n}`, [crmSecret]);
      expect(billing.verify(billing.requestsFor(`evt_plain_${n}`)[0]!, billingSecret)).toBe(true);
    }
    expect(kms.calls).toEqual([`Decrypt ${JSON.stringify(secretContext('crm'))}`]);
    expect(lines.join('\n')).not.toContain(crmSecret.slice(6));
  });

  it("signs with both during a rotation's overlap: the new secret and the old, each stored encrypted", async () => {
    // Prepare
    const [newSecret, oldSecret] = [generateSecret(), generateSecret()];
    const { handler, queueUrl } = await start([
      {
        name: 'crm',
        url: crm.url,
        eventTypes: ['*'],
        secret: kmsStored(newSecret, 'crm'),
        previousSecret: kmsStored(oldSecret, 'crm'),
        previousSecretUntil: Date.now() + 3_600_000,
      },
    ]);
    await send(queueUrl, event('evt_kms_rotated', 'delivered', 'acme'));

    // Act
    const response = await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expectSignedByEach(crm, 'evt_kms_rotated', [newSecret, oldSecret]);
  });

  it('holds its deliveries while KMS refuses (a revoked grant) or the ciphertext is another endpoint\'s, and delivers once it decrypts', async () => {
    // Prepare: crm's secret refused by KMS; zephyr's a ciphertext made for crm, copied to it
    const crmSecret = generateSecret();
    const { handler, queueUrl, deadLetterQueueUrl } = await start([
      { name: 'crm', url: crm.url, eventTypes: ['*'], match: { 'data.carrier': ['acme'] }, secret: kmsStored(crmSecret, 'crm') },
      { name: 'zephyr', url: crm.url, eventTypes: ['*'], match: { 'data.carrier': ['zephyr'] }, secret: kmsStored(crmSecret, 'crm') },
      { name: 'billing', url: billing.url, eventTypes: ['*'], match: { 'data.carrier': ['billing'] } },
    ]);
    kms.deny = true;
    await send(queueUrl, event('evt_kms_held', 'delivered', 'acme'), event('evt_kms_copied', 'delivered', 'zephyr'), event('evt_kms_other', 'delivered', 'billing'));

    // Act
    const held = await invoke(handler, queueUrl, await harness.receive(queueUrl, 3));

    // Assess: both held, nothing written or dead-lettered; the other endpoint delivered
    expect(held.batchItemFailures).toHaveLength(2);
    expect([...crm.requestsFor('evt_kms_held'), ...crm.requestsFor('evt_kms_copied')]).toEqual([]);
    expect(billing.requestsFor('evt_kms_other')).toHaveLength(1);
    expect(await ledger.deliveriesOf('evt_kms_held')).toEqual([]);
    expect(await receiveNow(deadLetterQueueUrl)).toEqual([]);
    const unresolved = logLines().filter((l) => l.message === 'endpoint unresolved');
    expect(unresolved.map((l) => [l.endpoint, l.errorMessage]).sort()).toEqual([
      ['crm', 'KMS could not decrypt the secret of endpoint crm: AccessDeniedException'],
      ['zephyr', 'KMS could not decrypt the secret of endpoint zephyr: AccessDeniedException'],
    ]);
    expect(unresolvedCount()).toBe(2);

    // Act: KMS decrypts again; the held messages return within seconds
    kms.deny = false;
    const back = await harness.receive(queueUrl, 2);
    const retried = await invoke(handler, queueUrl, back);

    // Assess: crm's delivered, signed with its secret; zephyr's still held (the ciphertext is not its own)
    expect(retried.batchItemFailures).toHaveLength(1);
    const [request] = crm.requestsFor('evt_kms_held');
    expect(crm.verify(request!, crmSecret)).toBe(true);
    expect(crm.requestsFor('evt_kms_copied')).toEqual([]);
    expect(logLines().filter((l) => l.message === 'endpoint unresolved').at(-1)).toMatchObject({
      endpoint: 'zephyr',
      errorMessage: 'KMS could not decrypt the secret of endpoint zephyr: InvalidCiphertextException',
    });
  });

  it("decrypts encrypted:local with the sandbox's key from the environment, and holds the endpoint without it", async () => {
    // Prepare
    const key = LocalSecretCipher.generateKey();
    const crmSecret = generateSecret();
    const stored = await new LocalSecretCipher(key).encrypt(crmSecret, 'crm');
    const fields: EndpointFields[] = [{ name: 'crm', url: crm.url, eventTypes: ['*'], secret: stored }];
    const withKey = await start(fields, { env: { [RESOURCE_ENV.endpointSecretsKey]: key } });
    await send(withKey.queueUrl, event('evt_local', 'delivered', 'acme'));

    // Act
    const delivered = await invoke(withKey.handler, withKey.queueUrl, await harness.receive(withKey.queueUrl, 1));

    // Assess
    expect(delivered.batchItemFailures).toEqual([]);
    expect(crm.verify(crm.requestsFor('evt_local')[0]!, crmSecret)).toBe(true);

    // Act: a container without the key
    vi.unstubAllEnvs();
    const without = await start(fields);
    await send(without.queueUrl, event('evt_local_held', 'delivered', 'acme'));
    const held = await invoke(without.handler, without.queueUrl, await harness.receive(without.queueUrl, 1));

    // Assess
    expect(held.batchItemFailures).toHaveLength(1);
    expect(crm.requestsFor('evt_local_held')).toEqual([]);
    expect(logLines().find((l) => l.message === 'endpoint unresolved')).toMatchObject({
      endpoint: 'crm',
      errorMessage: 'the secret of endpoint crm is encrypted with local, which this consumer has no key for',
    });
  });

  it('fails the cold start, naming the variable, for a local key that is not 32 bytes', async () => {
    await expect(start([], { env: { [RESOURCE_ENV.endpointSecretsKey]: Buffer.alloc(16).toString('base64') } })).rejects.toThrow(
      `${RESOURCE_ENV.endpointSecretsKey} cannot decrypt: the local secret key must be 32 bytes, got 16`,
    );
  });
});

describe('Handler: consumer, a registry that cannot be read', () => {
  it('holds every message while the registry cannot be read at all, and delivers them once it can', async () => {
    // Prepare: the registry's table does not exist yet
    const { handler, queueUrl, deadLetterQueueUrl, seed } = await start([{ name: 'billing', url: billing.url, eventTypes: ['*'] }], { seed: false });
    await send(queueUrl, event('evt_no_registry_1', 'delivered', 'acme'), event('evt_no_registry_2', 'in_transit', 'acme'));

    // Act
    const held = await invoke(handler, queueUrl, await harness.receive(queueUrl, 2));

    // Assess: the whole batch stays, nothing written
    expect(held.batchItemFailures).toHaveLength(2);
    expect(await ledger.deliveriesOf('evt_no_registry_1')).toEqual([]);
    expect(await receiveNow(deadLetterQueueUrl)).toEqual([]);
    expect(logLines().find((l) => l.message === 'routing failed')).toMatchObject({ error: 'EndpointRegistryError', errorCode: 'registry-unavailable' });
    expect(logLines().filter((l) => l.why === 'registry-unavailable').map((l) => l.afterSeconds)).toEqual([5, 5]);

    // Act: the table is there
    await seed();
    const delivered = await invoke(handler, queueUrl, await harness.receive(queueUrl, 2));

    // Assess
    expect(delivered.batchItemFailures).toEqual([]);
    expect(billing.requestsFor('evt_no_registry_1')).toHaveLength(1);
    expect(billing.requestsFor('evt_no_registry_2')).toHaveLength(1);
  });

  it('holds the events an item that cannot be decoded subscribes to, delivers the others, and the held ones once it is fixed', async () => {
    // Prepare: crm's item has a state no version writes
    const { handler, queueUrl, tableName } = await start([{ name: 'billing', url: billing.url, eventTypes: ['*'] }]);
    const now = Date.now();
    await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: { name: 'crm', fields: { name: 'crm', url: crm.url, eventTypes: ['shipment.delivered'] }, state: 'paused-by-hand', createdAt: now, updatedAt: now },
      }),
    );
    await send(queueUrl, event('evt_item_held', 'delivered', 'acme'), event('evt_item_other', 'in_transit', 'acme'));

    // Act
    const first = await invoke(handler, queueUrl, await harness.receive(queueUrl, 2));

    // Assess
    expect(first.batchItemFailures).toHaveLength(1);
    expect(billing.requestsFor('evt_item_other')).toHaveLength(1);
    expect(billing.requestsFor('evt_item_held')).toEqual([]);
    expect(await ledger.deliveriesOf('evt_item_held')).toEqual([]);
    expect(logLines().find((l) => l.message === 'endpoint unresolved')).toMatchObject({ endpoint: 'crm', errorCode: 'registry-item-invalid' });

    // Act: an operator fixes the item, marking the change as every write consumers must see does
    await documents.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { name: 'crm' },
        UpdateExpression: 'SET #s = :s, #c = :c, #f = :f',
        ExpressionAttributeNames: { '#s': 'state', '#c': REGISTRY_SCHEMA.attributes.changedAt, '#f': REGISTRY_SCHEMA.attributes.feed },
        ExpressionAttributeValues: { ':s': 'enabled', ':c': Date.now(), ':f': CHANGE_FEED },
      }),
    );
    const routed = await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));
    const delivered = await invoke(handler, queueUrl, await harness.receive(queueUrl, 2));

    // Assess
    expect([routed.batchItemFailures, delivered.batchItemFailures]).toEqual([[], []]);
    expect(billing.requestsFor('evt_item_held')).toHaveLength(1);
    expect(crm.requestsFor('evt_item_held')).toHaveLength(1);
  });
});
