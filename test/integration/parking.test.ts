/**
 * Parking with the real consumer handler (functions/consumer.ts) against fauxqs, dynalite and
 * loopback receivers (docs/contract.md §12 "Parking"): a delivery to a disabled endpoint is
 * acknowledged as parked (no attempt, no request, the row pending with its parked marker, its
 * message gone) while another endpoint's delivery of the same event goes ahead; after `enable`,
 * the release run (lib/resume.ts, as the recovery runs make it) sends each parked delivery again
 * and the receiver gets each exactly once.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { generateSecret } from '../../lib/endpoints/secret';
import type { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { createLogger, SERVICE_NAME } from '../../lib/observability';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { registryEndpoints } from '../../lib/recovery-endpoints';
import { releaseResuming } from '../../lib/resume';
import { coldStartOnRegistry, isolateEachTest, seededRegistry, useConsumerHarness, type ColdStarted, type ConsumerHarness, type Handler } from '../helpers/consumer-harness';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { TEST_SEAL } from '../helpers/sqs-records';

const QUEUE_VISIBILITY_SECONDS = 30;

let harness: ConsumerHarness;
let sqs: SQSClient;
let ledger: DynamoDbLedger;
let dynamodb: DynamoDBClient;
let acme: TestReceiver;
let notify: TestReceiver;
let stdout: string[] = [];

useConsumerHarness('parking-test', async (started) => {
  harness = started;
  ({ sqs, ledger, dynamodb, receiver: acme } = harness);
  notify = await startTestReceiver();
  return () => notify.close();
});

isolateEachTest((lines) => (stdout = lines));

interface Started extends ColdStarted {
  readonly registry: DynamoDbEndpointRegistry;
  readonly tableName: string;
}

/** Fresh queues, a fresh registry with `fields` and `disabled` among them disabled, and a cold start reading it with no cache. */
async function start(fields: EndpointFields[], disabled: readonly string[]): Promise<Started> {
  const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
  const { registry, tableName } = await seededRegistry(harness, 'parking', fields);
  for (const name of disabled) await registry.setState(name, 'disabled', { by: 'test', reason: 'receiver down', at: Date.now() });
  const handler = await coldStartOnRegistry(harness, queues, tableName);
  return { handler, ...queues, registry, tableName };
}

function event(id: string, status = 'delivered'): string {
  return JSON.stringify({ id, shipmentId: `shp_${id}`, status, occurredAt: '2026-12-03T06:15:00Z', data: { carrier: 'acme' } });
}

async function send(queueUrl: string, ...bodies: string[]): Promise<void> {
  for (const body of bodies) await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
}

async function receiveNow(queueUrl: string): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
  return Messages;
}

/** One invocation as the event source mapping makes it: the handler, then deletes what succeeded. */
function invoke(handler: Handler, queueUrl: string, messages: Message[]) {
  return harness.invoke(handler, queueUrl, messages);
}

/** One release run of every endpoint being released, as the recovery function makes it. */
async function releaseRun(started: Started, horizonMs: number) {
  const endpoints = await registryEndpoints(DynamoDBDocumentClient.from(dynamodb), started.tableName)();
  return releaseResuming(endpoints, {
    ledger,
    queue: new SqsDeliveryQueue({ client: sqs, queueUrl: started.queueUrl, deadLetterQueueUrl: started.deadLetterQueueUrl, seal: TEST_SEAL }),
    store: started.registry,
    now: Date.now,
    horizonMs,
    logger: createLogger({ service: SERVICE_NAME, write: () => {} }),
  });
}

/** The `Parked` count of the metric documents the handler wrote. */
function parkedMetric(lines: readonly string[]): number {
  return lines
    .filter((line) => line.includes('"_aws"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .reduce((sum, doc) => sum + (typeof doc.Parked === 'number' ? doc.Parked : 0), 0);
}

describe('Handler: consumer, a disabled endpoint', () => {
  it('acknowledges its deliveries as parked, and after enable and a release run the receiver gets each exactly once', async () => {
    // Prepare
    const started = await start([{ name: 'acme', url: acme.url, eventTypes: ['*'] }], ['acme']);
    const ids = ['evt_parkc_1', 'evt_parkc_2', 'evt_parkc_3'];
    await send(started.queueUrl, ...ids.map((id) => event(id)));

    // Act
    const response = await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 3));

    // Assess: acknowledged, nothing sent, nothing attempted, each row parked; no message left.
    expect(response.batchItemFailures).toEqual([]);
    for (const id of ids) {
      expect(acme.requestsFor(id)).toHaveLength(0);
      const row = await ledger.get({ eventId: id, endpoint: 'acme' });
      expect(row).toMatchObject({ state: 'pending', attempts: 0, history: [] });
      expect(row?.parkedAt).toEqual(expect.any(Number));
      expect(row).not.toHaveProperty('leaseOwner');
    }
    expect(await ledger.countByState('parked', { endpoint: 'acme' })).toBe(3);
    expect(await receiveNow(started.queueUrl)).toEqual([]);
    expect(await receiveNow(started.deadLetterQueueUrl)).toEqual([]);
    expect(parkedMetric(stdout)).toBe(3);

    // Act: enabled (the ramp: 1 per second at first), one release run scheduling 4 s, then the consumer.
    await started.registry.setState('acme', 'enabled', { by: 'test', reason: 'receiver back', at: Date.now() }, 8);
    const runs = await releaseRun(started, 4_000);
    const released = await harness.receive(started.queueUrl, 3);
    const delivered = await invoke(started.handler, started.queueUrl, released);

    // Assess: each once, delivered, no longer parked; nothing left on either queue.
    expect(runs).toEqual([{ endpoint: 'acme', released: 3, finished: false, skipped: false }]);
    expect(released.map((m) => m.MessageAttributes?.endpoint?.StringValue)).toEqual(['acme', 'acme', 'acme']);
    expect(delivered.batchItemFailures).toEqual([]);
    for (const id of ids) {
      expect(acme.requestsFor(id)).toHaveLength(1);
      const row = await ledger.get({ eventId: id, endpoint: 'acme' });
      expect(row).toMatchObject({ state: 'delivered', attempts: 1 });
      expect(row).not.toHaveProperty('parkedAt');
    }
    expect(await ledger.countByState('parked', { endpoint: 'acme' })).toBe(0);
    expect(await receiveNow(started.queueUrl)).toEqual([]);
    expect(await receiveNow(started.deadLetterQueueUrl)).toEqual([]);
  });

  it("parks one endpoint's delivery of an event while another endpoint's is delivered at once", async () => {
    // Prepare
    const started = await start(
      [
        { name: 'acme', url: acme.url, eventTypes: ['*'], secret: generateSecret() },
        { name: 'notifications', url: notify.url, eventTypes: ['*'], secret: generateSecret() },
      ],
      ['acme'],
    );
    await send(started.queueUrl, event('evt_parkf_1'));

    // Act: the producer's message fans out to both endpoints' messages, then those are handled.
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));
    const forEndpoints = await harness.receive(started.queueUrl, 2);
    const response = await invoke(started.handler, started.queueUrl, forEndpoints);

    // Assess
    expect(forEndpoints.map((m) => m.MessageAttributes?.endpoint?.StringValue).sort()).toEqual(['acme', 'notifications']);
    expect(response.batchItemFailures).toEqual([]);
    expect(notify.requestsFor('evt_parkf_1')).toHaveLength(1);
    expect(acme.requestsFor('evt_parkf_1')).toHaveLength(0);
    const rows = await ledger.deliveriesOf('evt_parkf_1');
    expect(rows.map((r) => [r.endpoint, r.state, r.attempts, r.parkedAt !== undefined])).toEqual([
      ['acme', 'pending', 0, true],
      ['notifications', 'delivered', 1, false],
    ]);
    expect(await receiveNow(started.queueUrl)).toEqual([]);
  });
});
