/**
 * The real consumer handler routing through the endpoint registry (docs/contract.md §11), against
 * fauxqs, dynalite and loopback receivers: a producer's message fans out to one message per
 * subscribed endpoint, each endpoint's delivery is signed with its own secret and dies on its own,
 * an event to one endpoint is delivered on its own message, an event to none is acknowledged, and a
 * registry change reaches the next batch.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { generateSecret } from '../../lib/endpoints/secret';
import type { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { coldStartOnRegistry, isolateEachTest, seededRegistry, useConsumerHarness, type ColdStarted, type ConsumerHarness, type Handler } from '../helpers/consumer-harness';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';

const QUEUE_VISIBILITY_SECONDS = 30;
const secrets = { acme: generateSecret(), notify: generateSecret(), strict: generateSecret() };

let harness: ConsumerHarness;
let sqs: SQSClient;
let ledger: DynamoDbLedger;
let registry: DynamoDbEndpointRegistry;
let dynamodb: DynamoDBClient;
let acme: TestReceiver;
let notify: TestReceiver;
let strict: TestReceiver;

useConsumerHarness('consumer-fan-out', async (started) => {
  harness = started;
  ({ sqs, ledger, dynamodb, receiver: acme } = harness);
  [notify, strict] = await Promise.all([startTestReceiver(), startTestReceiver()]);
});

afterAll(async () => {
  await Promise.all([notify?.close(), strict?.close()]);
});

/** The handler's logs and metric documents, kept out of the report. */
isolateEachTest(() => {});

function endpoints(): EndpointFields[] {
  return [
    { name: 'carrier-acme', url: acme.url, eventTypes: ['shipment.in_transit', 'shipment.delivered'], match: { 'data.carrier': ['acme'] }, secret: secrets.acme },
    { name: 'notifications', url: notify.url, eventTypes: ['shipment.delivered', 'shipment.exception'], secret: secrets.notify },
    { name: 'strict', url: strict.url, eventTypes: ['shipment.exception'], secret: secrets.strict },
  ];
}

/** Fresh queues, a fresh registry table seeded with `fields`, and a cold start reading it with no cache. */
async function start(fields: EndpointFields[] = endpoints()): Promise<ColdStarted> {
  const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
  const seeded = await seededRegistry(harness, 'fan-out', fields);
  registry = seeded.registry;
  const tableName = seeded.tableName;
  const handler = await coldStartOnRegistry(harness, queues, tableName);
  return { handler, ...queues };
}

function event(id: string, status: string, carrier: string): string {
  return JSON.stringify({ id, shipmentId: 'shp_1', status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier } });
}

async function send(queueUrl: string, ...bodies: string[]): Promise<void> {
  for (const body of bodies) await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
}

async function receiveNow(queueUrl: string): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: ['All'], MessageSystemAttributeNames: ['All'] }),
  );
  return Messages;
}

const invoke = (handler: Handler, queueUrl: string, messages: Message[]) => harness.invoke(handler, queueUrl, messages);

const endpointOf = (m: Message) => m.MessageAttributes?.endpoint?.StringValue;

describe('Handler: consumer with an endpoint registry', () => {
  it("fans an event out to each subscribed endpoint's own message, each delivered once and signed with its endpoint's secret", async () => {
    // Prepare
    const { handler, queueUrl } = await start();
    await send(queueUrl, event('evt_fan_1', 'delivered', 'acme'));

    // Act: the producer's message is routed, then each endpoint's message delivered.
    const routed = await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));
    const forEndpoints = await harness.receive(queueUrl, 2);
    const delivered = await invoke(handler, queueUrl, forEndpoints);

    // Assess
    expect(routed.batchItemFailures).toEqual([]);
    expect(forEndpoints.map(endpointOf).sort()).toEqual(['carrier-acme', 'notifications']);
    expect(delivered.batchItemFailures).toEqual([]);
    const [toAcme, toNotify] = [acme.requestsFor('evt_fan_1'), notify.requestsFor('evt_fan_1')];
    expect(toAcme).toHaveLength(1);
    expect(toNotify).toHaveLength(1);
    expect(strict.requestsFor('evt_fan_1')).toHaveLength(0);
    // Same event ID and body at both; each verifies with its own endpoint's secret only.
    expect(toAcme[0]!.headers['webhook-id']).toBe('evt_fan_1');
    expect(toNotify[0]!.body).toBe(toAcme[0]!.body);
    const headers = (r: (typeof toAcme)[number]) => r.headers as Record<string, string>;
    expect(() => new Webhook(secrets.acme).verify(toAcme[0]!.body, headers(toAcme[0]!))).not.toThrow();
    expect(() => new Webhook(secrets.notify).verify(toNotify[0]!.body, headers(toNotify[0]!))).not.toThrow();
    expect(() => new Webhook(secrets.notify).verify(toAcme[0]!.body, headers(toAcme[0]!))).toThrow();
    const rows = await ledger.deliveriesOf('evt_fan_1');
    expect(rows.map((r) => [r.endpoint, r.state])).toEqual([
      ['carrier-acme', 'delivered'],
      ['notifications', 'delivered'],
    ]);
    expect(await receiveNow(queueUrl)).toEqual([]);
  });

  it('delivers an event that one endpoint subscribes to on its own message, and acknowledges one that none subscribes to', async () => {
    const { handler, queueUrl } = await start();
    await send(queueUrl, event('evt_one_1', 'in_transit', 'acme'), event('evt_none_1', 'packed', 'acme'));

    const response = await invoke(handler, queueUrl, await harness.receive(queueUrl, 2));

    expect(response.batchItemFailures).toEqual([]);
    expect(acme.requestsFor('evt_one_1')).toHaveLength(1);
    expect((await ledger.deliveriesOf('evt_one_1')).map((r) => [r.endpoint, r.state])).toEqual([['carrier-acme', 'delivered']]);
    expect(await ledger.deliveriesOf('evt_none_1')).toEqual([]);
    expect(await receiveNow(queueUrl)).toEqual([]);
  });

  it("kills one endpoint's delivery with its endpoint on the dead-letter message while the others deliver", async () => {
    const { handler, queueUrl, deadLetterQueueUrl } = await start();
    strict.respondTo('evt_exc_1', { status: 400, body: 'unknown shipment' });
    await send(queueUrl, event('evt_exc_1', 'exception', 'zephyr'));

    await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));
    await invoke(handler, queueUrl, await harness.receive(queueUrl, 2));

    const [dead] = await harness.receive(deadLetterQueueUrl, 1);
    expect(dead!.MessageAttributes?.reason?.StringValue).toBe('rejected');
    expect(dead!.MessageAttributes?.eventId?.StringValue).toBe('evt_exc_1');
    expect(endpointOf(dead!)).toBe('strict');
    expect((await ledger.deliveriesOf('evt_exc_1')).map((r) => [r.endpoint, r.state])).toEqual([
      ['notifications', 'delivered'],
      ['strict', 'dead'],
    ]);
  });

  it('routes the next batch with a change made to the registry', async () => {
    const { handler, queueUrl } = await start();
    const current = (await registry.get('strict'))!;
    await registry.update({ ...current.fields, eventTypes: ['shipment.packed'] }, current.updatedAt, Date.now());
    await send(queueUrl, event('evt_change_1', 'packed', 'acme'));

    await invoke(handler, queueUrl, await harness.receive(queueUrl, 1));

    expect(strict.requestsFor('evt_change_1')).toHaveLength(1);
  });
});
