/**
 * The circuit breaker with the real consumer handler (functions/consumer.ts) against fauxqs,
 * dynalite and loopback receivers (issue 26; lib/endpoints/health.ts): two endpoints in a registry,
 * `fast` on a receiver that answers 200 and `slow` on one that reads every request and never answers,
 * each subscribed to one event type, an attempt timeout of 1 s, the registry read on every batch.
 *
 * - a batch with three deliveries to `slow` and three to `fast`: the three time out together, which
 *   opens the breaker: `slow` paused on its registry item (`endpoint paused`, why `unreachable`),
 *   `fast`'s deliveries delivered;
 * - the next batch while paused: `slow`'s deliveries (three new, three retried) held on the queue
 *   with no attempt and no request, `fast`'s delivered;
 * - the receiver recovers; once the pause ends the first batch with `slow`'s deliveries is the probe,
 *   accepted: the breaker closes (`endpoint recovered`, failures 0 on the item) and every held
 *   delivery is delivered once.
 *
 * The pause's length is the time the endpoint has gone without an accepted request: the test
 * records one failure 10 s in the past through the registry's own health write, so the pause (about
 * 11 s) outlasts the second batch on a slow machine. Assertions are on outcomes, never on speed.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ReceiveMessageCommand, SendMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { RESOURCE_ENV } from '../../lib/config';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { DynamoDbHealthStore } from '../../lib/endpoints/dynamodb-health-store';
import { RegistryTable } from '../../lib/endpoints/dynamodb-registry-table';
import { BREAKER_FAILURES } from '../../lib/endpoints/health';
import { createEndpointsTable, seedEndpoints } from '../../sandbox/endpoints-table';
import { captureStdout, isolateEachTest, useConsumerHarness, type ConsumerHarness, type Handler } from '../helpers/consumer-harness';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { queueArnFromUrl, recordFromMessage } from '../helpers/sqs-records';

const ENDPOINTS_TABLE = 'handoff-endpoints-breaker';
/** Every wait after a failed attempt: 1 s, so a timed-out delivery is back while the pause lasts. */
const RETRY_SCHEDULE = [1, 1, 1, 1, 1, 1, 1, 1, 1];

let harness: ConsumerHarness;
let dynamodb: DynamoDBClient;
let silent: TestReceiver;

useConsumerHarness('breaker', async (started) => {
  harness = started;
  silent = await startTestReceiver();
  silent.answerByDefault('hang');
  ({ dynamodb } = harness);
});

afterAll(async () => {
  await silent?.close();
});

isolateEachTest();

const event = (id: string, status: 'in_transit' | 'delivered') => JSON.stringify({ id, shipmentId: `shp_${id}`, status, occurredAt: '2026-12-04T10:00:00Z' });

describe('Function: handler (functions/consumer.ts) with an endpoint that never answers', () => {
  it('pauses it after three timeouts, holds its deliveries without attempts while the others are delivered, and delivers each once after a probe closes the breaker', async () => {
    // Prepare
    const { queueUrl, deadLetterQueueUrl } = await harness.createQueues(30);
    await createEndpointsTable(dynamodb, ENDPOINTS_TABLE);
    const registry = new DynamoDbEndpointRegistry({ client: dynamodb, tableName: ENDPOINTS_TABLE });
    const common = { retrySchedule: RETRY_SCHEDULE, maxAttempts: 10 };
    await seedEndpoints(
      registry,
      [
        { name: 'fast', url: harness.receiver.url, eventTypes: ['shipment.delivered'], ...common },
        { name: 'slow', url: silent.url, eventTypes: ['shipment.in_transit'], ...common },
      ],
      Date.now(),
    );
    // A failure 10 s ago, written as a consumer writes health.
    await new DynamoDbHealthStore(new RegistryTable(DynamoDBDocumentClient.from(dynamodb), ENDPOINTS_TABLE)).recordFailure('slow', Date.now() - 10_000);
    const handler = await harness.coldStart({
      [RESOURCE_ENV.queueUrl]: queueUrl,
      [RESOURCE_ENV.deadLetterQueueUrl]: deadLetterQueueUrl,
      [RESOURCE_ENV.endpointsTable]: ENDPOINTS_TABLE,
      [RESOURCE_ENV.endpointsCacheMs]: '0',
      HANDOFF_ATTEMPT_TIMEOUT_MS: '1000',
    });
    const lines = captureStdout();
    const json = () => lines.filter((l) => l.startsWith('{"level"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    const send = async (ids: readonly string[], status: 'in_transit' | 'delivered') => {
      for (const id of ids) await harness.sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: event(id, status) }));
    };
    const slowIds = ['evt_slow_1', 'evt_slow_2', 'evt_slow_3', 'evt_slow_4', 'evt_slow_5', 'evt_slow_6'];
    const fastIds = ['evt_fast_1', 'evt_fast_2', 'evt_fast_3', 'evt_fast_4', 'evt_fast_5', 'evt_fast_6'];

    // Act 1: one batch, three deliveries to each endpoint; `slow`'s three time out together.
    await send(slowIds.slice(0, 3), 'in_transit');
    await send(fastIds.slice(0, 3), 'delivered');
    const first = await invoke(handler, queueUrl, await harness.receive(queueUrl, 6));
    const opened = (await registry.get('slow'))!.health!;

    // Assess 1: `slow` paused on its item after BREAKER_FAILURES timeouts; `fast` delivered.
    expect(first.failed.map(eventIdOf).sort()).toEqual(slowIds.slice(0, 3));
    expect(silent.requests.map((r) => r.eventId).sort()).toEqual(slowIds.slice(0, 3));
    expect([...harness.receiver.applied].sort()).toEqual(fastIds.slice(0, 3));
    expect(opened.pausedUntil).toBeGreaterThan(Date.now());
    expect(json().filter((l) => l.message === 'endpoint paused')).toEqual([
      expect.objectContaining({ level: 'warn', endpoint: 'slow', why: 'unreachable', breaker: 'open', cause: 'timeout', unreachableInRow: BREAKER_FAILURES }),
    ]);

    // Act 2: while it is paused, three more for each, and `slow`'s three retries once back.
    await send(slowIds.slice(3), 'in_transit');
    await send(fastIds.slice(3), 'delivered');
    const second = await invoke(handler, queueUrl, await harness.receive(queueUrl, 9));
    const heldAt = Date.now();

    // Assess 2: every delivery to `slow` held with no attempt (no request, no new row), `fast`'s delivered.
    expect(heldAt).toBeLessThan(opened.pausedUntil!);
    expect(second.failed.map(eventIdOf).sort()).toEqual(slowIds);
    expect(silent.requests).toHaveLength(3);
    expect([...harness.receiver.applied].sort()).toEqual(fastIds);
    expect(json().filter((l) => l.why === 'paused').map((l) => [l.eventId, l.endpoint]).sort()).toEqual(slowIds.map((id) => [id, 'slow']));
    const whilePaused = await Promise.all(slowIds.map((id) => harness.ledger.get({ eventId: id, endpoint: 'slow' })));
    expect(whilePaused.map((row) => row && [row.state, row.attempts])).toEqual([...Array(3).fill(['pending', 1]), undefined, undefined, undefined]);

    // Act 3: the receiver is back; batches as they come until every held delivery is in.
    silent.answerByDefault(200);
    for (const deadline = Date.now() + 60_000; silent.applied.length < slowIds.length && Date.now() < deadline; ) {
      const messages = await receiveSome(queueUrl);
      if (messages.length > 0) await invoke(handler, queueUrl, messages);
    }

    // Assess 3: nothing reached `slow` while it was paused; the probe closed the breaker; each delivered once.
    expect(silent.requests.filter((r) => r.receivedAtMs >= heldAt && r.receivedAtMs < opened.pausedUntil!)).toEqual([]);
    expect([...silent.applied].sort()).toEqual(slowIds);
    expect(silent.requests.filter((r) => r.answer === 200).map((r) => r.eventId).sort()).toEqual(slowIds);
    expect(silent.requests).toHaveLength(3 + slowIds.length);
    const rows = await Promise.all([...slowIds, ...fastIds].map((id) => harness.ledger.get({ eventId: id, endpoint: id.includes('slow') ? 'slow' : 'fast' })));
    expect(rows.map((row) => [row?.eventId, row?.state, row?.attempts])).toEqual([
      ...slowIds.map((id, i) => [id, 'delivered', i < 3 ? 2 : 1]),
      ...fastIds.map((id) => [id, 'delivered', 1]),
    ]);
    const closed = (await registry.get('slow'))!.health!;
    expect(closed).toMatchObject({ failures: 0, pausedUntil: opened.pausedUntil });
    expect(closed.failingSince).toBeUndefined();
    expect(closed.lastAcceptedAt).toBeGreaterThanOrEqual(opened.pausedUntil!);
    expect(json().filter((l) => l.message === 'endpoint recovered')).toEqual([expect.objectContaining({ level: 'info', endpoint: 'slow' })]);
    expect(json().filter((l) => l.message === 'endpoint paused')).toHaveLength(1);
    expect(harness.receiver.requests).toHaveLength(fastIds.length);
  }, 120_000);
});

const eventIdOf = (record: { body: string }) => (JSON.parse(record.body) as { id: string }).id;

/** One invocation as the event source mapping makes it: the handler, then deletes what succeeded. The records it reported. */
async function invoke(handler: Handler, queueUrl: string, messages: Message[]) {
  const response = await harness.invoke(handler, queueUrl, messages, 'req-breaker');
  const reported = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
  return { failed: messages.map((m) => recordFromMessage(m, queueArnFromUrl(queueUrl))).filter((r) => reported.has(r.messageId)) };
}

/** What the queue has visible now, up to a batch (a 1-s long poll). */
async function receiveSome(queueUrl: string): Promise<Message[]> {
  const { Messages = [] } = await harness.sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'] }),
  );
  return Messages;
}
