/**
 * Per-shipment ordering with the real consumer handler (functions/consumer.ts) against fauxqs,
 * dynalite and a loopback receiver (docs/contract.md §13): an endpoint with `ordering:
 * per-shipment` gets a shipment's events in admission order, each with `webhook-sequence`.
 *
 * - An event that arrives before its turn is acknowledged without a request: its row is written
 *   pending with no attempt and it waits on the shipment's head; the event before it, once
 *   delivered, wakes it with a message of its own. Handling the same message twice is harmless.
 * - A dead event with `onDead: continue` passes the turn (its dead letter says `ordering=continued`);
 *   with `hold` the shipment waits (`ordering=held`) until a replay of it is delivered.
 *
 * What a waiting event costs is counted on the wire: every DynamoDB and SQS request the handler
 * makes goes through a counting proxy in front of the emulators.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import type { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DynamoDbShipmentHeads } from '../../lib/ledger/dynamodb-shipment-heads';
import { itemSizeBytes } from '../../lib/ledger/item-size';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { replayEvent } from '../../lib/replay';
import { ORDERED_QUEUE_ATTRIBUTES } from '../../sandbox/sandbox';
import { coldStartOnRegistry, isolateEachTest, seededRegistry, useConsumerHarness, type ColdStarted, type ConsumerHarness, type Handler } from '../helpers/consumer-harness';
import type { TestReceiver } from '../helpers/receiver';
import { TEST_SEAL } from '../helpers/sqs-records';

const QUEUE_VISIBILITY_SECONDS = 30;
const ENDPOINT = 'carrier-acme';

let harness: ConsumerHarness;
let sqs: SQSClient;
let ledger: DynamoDbLedger;
let heads: DynamoDbShipmentHeads;
let dynamodb: DynamoDBClient;
let acme: TestReceiver;
let proxy: CountingProxy;
let tableCount = 0;
let stdout: string[] = [];

/** One request the handler made to DynamoDB or SQS. */
interface WireCall {
  readonly service: 'dynamodb' | 'sqs';
  /** The operation (`UpdateItem`, `SendMessage`, …). */
  readonly operation: string;
  readonly table?: string;
  /** The item's partition (`eventId`), for item operations. */
  readonly partition?: string;
}

interface CountingProxy {
  readonly dynamodbUrl: string;
  readonly sqsUrl: string;
  readonly calls: WireCall[];
  close(): Promise<void>;
}

/** A pass-through HTTP proxy per service that notes each request's operation, table and key. */
async function startCountingProxy(targets: { dynamodb: string; sqs: string }): Promise<CountingProxy> {
  const calls: WireCall[] = [];
  const servers: Server[] = [];
  const listen = async (service: WireCall['service'], target: string): Promise<string> => {
    const upstream = new URL(target);
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const operation = String(req.headers['x-amz-target'] ?? '').split('.').at(-1) ?? '';
        let parsed: { TableName?: string; Key?: { eventId?: { S?: string } } } = {};
        try {
          parsed = JSON.parse(body.toString('utf8')) as typeof parsed;
        } catch {
          // Not JSON: counted by its operation alone.
        }
        calls.push({
          service,
          operation,
          ...(parsed.TableName ? { table: parsed.TableName } : {}),
          ...(parsed.Key?.eventId?.S ? { partition: parsed.Key.eventId.S } : {}),
        });
        const forward = httpRequest(
          { hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } },
          (answer) => {
            res.writeHead(answer.statusCode ?? 500, answer.headers);
            answer.pipe(res);
          },
        );
        forward.on('error', () => res.destroy());
        forward.end(body);
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const dynamodbUrl = await listen('dynamodb', targets.dynamodb);
  const sqsUrl = await listen('sqs', targets.sqs);
  return {
    dynamodbUrl,
    sqsUrl,
    calls,
    async close() {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

useConsumerHarness('ordering-test', async (started) => {
  harness = started;
  ({ sqs, ledger, dynamodb, receiver: acme } = harness);
  heads = new DynamoDbShipmentHeads({ client: DynamoDBDocumentClient.from(dynamodb), tableName: 'handoff-ledger-ordering-test' });
  proxy = await startCountingProxy({ dynamodb: harness.emulators.dynamodbEndpoint, sqs: harness.emulators.sqsEndpoint });
  return () => proxy.close();
});

isolateEachTest((lines) => (stdout = lines));

interface Started extends ColdStarted {
  /** The ordered intake: a FIFO queue of its own (its records' ARN ends in `.fifo`). */
  readonly orderedQueueUrl: string;
  /** The registry the handler reads (no cache): a change is seen by the next invocation. */
  readonly registry: DynamoDbEndpointRegistry;
}

/** Fresh queues, a registry holding the one ordered endpoint, and a cold start reading it with no cache. */
async function start(onDead: 'continue' | 'hold'): Promise<Started> {
  const queues = await harness.createQueues(QUEUE_VISIBILITY_SECONDS);
  tableCount += 1;
  const { QueueUrl: orderedQueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: `ordering-test-intake-${tableCount}.fifo`, Attributes: { ...ORDERED_QUEUE_ATTRIBUTES, VisibilityTimeout: '30' } }),
  );
  const fields: EndpointFields[] = [{ name: ENDPOINT, url: acme.url, eventTypes: ['*'], ordering: 'per-shipment', onDead }];
  const { registry, tableName } = await seededRegistry(harness, 'ordering', fields);
  const handler = await coldStartOnRegistry(harness, queues, tableName, {
    HANDOFF_RETRY_SCHEDULE: '1,1,1',
    HANDOFF_MAX_ATTEMPTS: '4',
    // Every request the handler makes goes through the counting proxy.
    AWS_ENDPOINT_URL_DYNAMODB: proxy.dynamodbUrl,
    AWS_ENDPOINT_URL_SQS: proxy.sqsUrl,
  });
  return { handler, ...queues, orderedQueueUrl: orderedQueueUrl!, registry };
}

function event(id: string, shipmentId: string, status = 'in_transit'): string {
  return JSON.stringify({ id, shipmentId, status, occurredAt: '2026-12-03T08:15:00Z', data: { carrier: 'acme' } });
}

async function send(queueUrl: string, body: string): Promise<void> {
  await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
}

/** A producer's message on the ordered intake: grouped by shipment, deduplicated by event ID. */
async function sendOrdered(queueUrl: string, id: string, shipmentId: string): Promise<void> {
  await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: event(id, shipmentId), MessageGroupId: shipmentId, MessageDeduplicationId: id }));
}

async function receiveNow(queueUrl: string): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: ['All'], MessageSystemAttributeNames: ['All'] }),
  );
  return Messages;
}

/** One invocation as the event source mapping makes it: the handler, then deletes what succeeded. */
function invoke(handler: Handler, queueUrl: string, messages: Message[]) {
  return harness.invoke(handler, queueUrl, messages);
}

/**
 * Routes what the ordered intake holds, as Lambda's FIFO event source hands it over: a group's next
 * message only once the one before it is done. Answers with the event IDs routed, in order.
 */
async function routeOrdered(started: Started): Promise<string[]> {
  const routed: string[] = [];
  for (;;) {
    const messages = await receiveNow(started.orderedQueueUrl);
    if (messages.length === 0) return routed;
    const response = await invoke(started.handler, started.orderedQueueUrl, messages);
    expect(response.batchItemFailures).toEqual([]);
    routed.push(...idsOf(messages));
  }
}

/** The event IDs of the messages, by their body. */
function idsOf(messages: readonly Message[]): string[] {
  return messages.map((m) => (JSON.parse(m.Body ?? '{}') as { id: string }).id);
}

/** The receiver's requests for these events, in arrival order, as `eventId:webhook-sequence`. */
function requestsOf(ids: readonly string[]): string[] {
  return acme.requests.filter((r) => ids.includes(String(r.eventId))).map((r) => `${r.eventId}:${String(r.headers['webhook-sequence'])}`);
}

/** The handler's delivery log lines for one event. */
function logsFor(eventId: string): Record<string, unknown>[] {
  return stdout
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.eventId === eventId && line.message === 'delivery');
}

/** The calls made since `from`, to the ledger table or a queue, as `service operation [head|row]`. */
function callsSince(from: number, ledgerTable = 'handoff-ledger-ordering-test'): string[] {
  return proxy.calls
    .slice(from)
    .filter((call) => call.service === 'sqs' || call.table === ledgerTable)
    .map((call) =>
      call.service === 'sqs' ? `sqs ${call.operation}` : `dynamodb ${call.operation} ${call.partition?.startsWith('#') ? 'head' : call.partition ? 'row' : ''}`.trim(),
    );
}

/**
 * The first event of a shipment sent in its turn and answered 503 (back on the queue for its
 * retry), then the second, which waits behind it: one invocation each. What waiting took of the
 * handler's own requests is `waitCalls`.
 */
async function firstRetriesSecondWaits(started: Started, shipment: string, e1: string, e2: string) {
  acme.respondTo(e1, 503);
  await send(started.queueUrl, event(e1, shipment));
  const first = await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));
  const beforeWait = proxy.calls.length;
  await send(started.queueUrl, event(e2, shipment));
  const waited = await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));
  return { first, waited, waitCalls: callsSince(beforeWait) };
}

describe('Handler: consumer, an endpoint ordered per shipment', () => {
  it('holds back the later events while the first retries, then sends each in turn with webhook-sequence 1, 2, 3; a repeat is harmless', async () => {
    // Prepare
    const started = await start('continue');
    const shipment = 'shp_ordi_1';
    const [e1, e2, e3] = ['evt_ordi_1', 'evt_ordi_2', 'evt_ordi_3'];

    // Act: e1 first (its turn: sent, 503, back on the queue), then e2 and e3, one invocation each.
    const { first, waited, waitCalls } = await firstRetriesSecondWaits(started, shipment, e1, e2);
    await send(started.queueUrl, event(e3, shipment, 'out_for_delivery'));
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));

    // Assess: e1 returns for its retry; e2 and e3 acknowledged with no request, rows pending with no
    // attempt, waiting on the head.
    expect(first.batchItemFailures).toHaveLength(1);
    expect(waited.batchItemFailures).toEqual([]);
    expect(requestsOf([e1, e2, e3])).toEqual([`${e1}:1`]);
    for (const [id, sequence] of [[e2, 2], [e3, 3]] as const) {
      const row = await ledger.get({ eventId: id, endpoint: ENDPOINT });
      expect(row).toMatchObject({ state: 'pending', attempts: 0, history: [], sequence });
      expect(row).not.toHaveProperty('leaseOwner');
      expect(logsFor(id)).toEqual([expect.objectContaining({ action: 'ack', why: 'waiting', sequence, waitingFor: sequence - 1 })]);
    }
    expect(await heads.get(shipment, ENDPOINT)).toMatchObject({ assigned: 3, next: 1, waiting: { 2: e2, 3: e3 } });
    // What waiting took (the handler's own requests; the event source's receive and delete aside):
    // its number (a head write), its row (one write), the wait (a head write). Nothing while it waits.
    expect(waitCalls).toEqual(['dynamodb UpdateItem head', 'dynamodb UpdateItem row', 'dynamodb UpdateItem head']);
    // Each of those writes is 1 WU: the row and the head each under 1 KB (a write is billed by the larger item).
    const sizeOf = async (partition: string) => {
      const { Item } = await dynamodb.send(
        new GetItemCommand({ TableName: 'handoff-ledger-ordering-test', Key: { eventId: { S: partition }, endpoint: { S: ENDPOINT } }, ConsistentRead: true }),
      );
      return itemSizeBytes(Item!);
    };
    const sizes = { row: await sizeOf(e3), head: await sizeOf(`#${shipment}`) };
    expect(sizes.row).toBeLessThan(1024);
    expect(sizes.head).toBeLessThan(1024);

    // Act: e1's retry is delivered; it passes the turn and wakes e2 with a message of its own.
    const beforeWake = proxy.calls.length;
    const retried = await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));
    const wakeCalls = callsSince(beforeWake);
    const [wakeE2] = await harness.receive(started.queueUrl, 1);

    // Assess
    expect(retried.batchItemFailures).toEqual([]);
    expect(idsOf([wakeE2!])).toEqual([e2]);
    expect(wakeE2!.MessageAttributes?.endpoint?.StringValue).toBe(ENDPOINT);
    // The wake-up says e2's number and that its turn has come: its handling asks the head nothing.
    expect(wakeE2!.MessageAttributes?.sequence?.StringValue).toBe('2');
    expect(wakeE2!.MessageAttributes?.inTurn?.StringValue).toBe('true');
    expect(logsFor(e1).at(-1)).toMatchObject({ action: 'ack', why: 'delivered', sequence: 1, woke: e2 });
    expect(requestsOf([e1, e2, e3])).toEqual([`${e1}:1`, `${e1}:1`]);
    // The turn passed: e1's number read from its claimed row (the routing query of a message received
    // before: no head write), its claim and record, the head's advance, the woken row's read (its
    // body) and its message. The advance is tried first as the one that settles the head, refused
    // since later numbers are assigned (dynalite returns no head with the refusal: read; AWS does),
    // then made as the plain one.
    expect(wakeCalls.filter((call) => call.endsWith('head') || call === 'dynamodb GetItem row' || call === 'sqs SendMessage')).toEqual([
      'dynamodb UpdateItem head',
      'dynamodb GetItem head',
      'dynamodb UpdateItem head',
      'dynamodb GetItem row',
      'sqs SendMessage',
    ]);

    // Act: e2's wake-up handled twice (as after a crash before its deletion): delivered once; the
    // repeat wakes e3 again, a second copy that the ledger answers as a duplicate.
    const beforeWoken = proxy.calls.length;
    await invoke(started.handler, started.queueUrl, [wakeE2!]);
    // Its number came with it: the head's writes are its advance's (none to take a number), as above:
    // e3 is assigned, so the settling advance is refused and the plain one made.
    expect(callsSince(beforeWoken).filter((call) => call.endsWith('head'))).toEqual(['dynamodb UpdateItem head', 'dynamodb GetItem head', 'dynamodb UpdateItem head']);
    await invoke(started.handler, started.queueUrl, [wakeE2!]);
    const wakeE3 = await harness.receive(started.queueUrl, 2);
    for (const copy of wakeE3) await invoke(started.handler, started.queueUrl, [copy]);
    // A late copy of e1's producer message: the same number, a duplicate, no turn passed again.
    await send(started.queueUrl, event(e1, shipment));
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));

    // Assess: each sent once more after its turn came, in order, with its number; each applied once.
    expect(idsOf(wakeE3)).toEqual([e3, e3]);
    expect(requestsOf([e1, e2, e3])).toEqual([`${e1}:1`, `${e1}:1`, `${e2}:2`, `${e3}:3`]);
    expect(acme.applied.filter((id) => [e1, e2, e3].includes(id))).toEqual([e1, e2, e3]);
    expect(await ledger.get({ eventId: e1, endpoint: ENDPOINT })).toMatchObject({ state: 'delivered', attempts: 2, sequence: 1 });
    expect(await ledger.get({ eventId: e2, endpoint: ENDPOINT })).toMatchObject({ state: 'delivered', attempts: 1, sequence: 2 });
    expect(await ledger.get({ eventId: e3, endpoint: ENDPOINT })).toMatchObject({ state: 'delivered', attempts: 1, sequence: 3 });
    expect(await heads.get(shipment, ENDPOINT)).toMatchObject({ assigned: 3, next: 4, waiting: {} });
    expect(logsFor(e1).at(-1)).toMatchObject({ why: 'duplicate', sequence: 1 });
    expect(logsFor(e1).at(-1)).not.toHaveProperty('woke');
    expect(await receiveNow(started.queueUrl)).toEqual([]);
    expect(await receiveNow(started.deadLetterQueueUrl)).toEqual([]);

    // Act: other content under e2's ID (a producer's bug): an identity conflict, not e2's death.
    await send(started.queueUrl, event(e2, shipment, 'exception'));
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));

    // Assess: dead-lettered without a word on the shipment, which it neither continued nor held.
    const [conflict] = await harness.receive(started.deadLetterQueueUrl, 1);
    expect(conflict!.MessageAttributes).toMatchObject({ reason: { StringValue: 'identity-conflict' }, eventId: { StringValue: e2 } });
    expect(conflict!.MessageAttributes).not.toHaveProperty('ordering');
    expect(await heads.get(shipment, ENDPOINT)).toMatchObject({ assigned: 3, next: 4 });
  });

  it('after ordering is turned off, an event numbered while ordered still passes its turn: the one waiting behind it is sent, not stranded', async () => {
    // Prepare: e1 retrying (503), e2 waiting behind it; then the endpoint's ordering turned off.
    const started = await start('continue');
    const shipment = 'shp_ordi_off';
    const [e1, e2, e3] = ['evt_ordo_1', 'evt_ordo_2', 'evt_ordo_3'];
    await firstRetriesSecondWaits(started, shipment, e1, e2);
    expect(await heads.get(shipment, ENDPOINT)).toMatchObject({ next: 1, waiting: { 2: e2 } });
    const current = (await started.registry.get(ENDPOINT))!;
    await started.registry.update({ ...current.fields, ordering: 'none' }, current.updatedAt, Date.now());

    // Act: e1's retry is delivered; the wake-up it sends is handled; a new event of the shipment comes.
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));
    const [wakeUp] = await harness.receive(started.queueUrl, 1);
    await invoke(started.handler, started.queueUrl, [wakeUp!]);
    const beforeNew = proxy.calls.length;
    await send(started.queueUrl, event(e3, shipment));
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));

    // Assess: e2 woken and delivered with its number; e3, admitted unordered, has none and touched no head.
    expect(idsOf([wakeUp!])).toEqual([e2]);
    expect(requestsOf([e1, e2])).toEqual([`${e1}:1`, `${e1}:1`, `${e2}:2`]);
    expect(await ledger.get({ eventId: e2, endpoint: ENDPOINT })).toMatchObject({ state: 'delivered', sequence: 2 });
    expect(await heads.get(shipment, ENDPOINT)).toMatchObject({ assigned: 2, next: 3, waiting: {} });
    expect(await ledger.get({ eventId: e3, endpoint: ENDPOINT })).toMatchObject({ state: 'delivered' });
    expect(await ledger.get({ eventId: e3, endpoint: ENDPOINT })).not.toHaveProperty('sequence');
    expect(callsSince(beforeNew).filter((call) => call.endsWith('head'))).toEqual([]);
    expect(await receiveNow(started.queueUrl)).toEqual([]);
  });

  it('with onDead continue, a rejected event is dead-lettered as continued and the next goes', async () => {
    // Prepare: two events of one shipment on the ordered intake, in that order.
    const started = await start('continue');
    const shipment = 'shp_ordi_2';
    const [e1, e2] = ['evt_ordc_1', 'evt_ordc_2'];
    acme.respondTo(e1, { status: 422, body: 'unknown shipment' });
    await sendOrdered(started.orderedQueueUrl, e1, shipment);
    await sendOrdered(started.orderedQueueUrl, e2, shipment);

    // Act: the intake's records routed (each given its number, fanned out), then the endpoint's messages.
    const routed = await routeOrdered(started);
    const forEndpoint = await harness.receive(started.queueUrl, 2);
    await invoke(started.handler, started.queueUrl, forEndpoint);
    // e2 either went at once (e1 had passed the turn) or waited and was woken: handle what is left.
    for (const woken of await receiveNow(started.queueUrl)) await invoke(started.handler, started.queueUrl, [woken]);

    // Assess
    expect(routed).toEqual([e1, e2]);
    expect(forEndpoint.every((m) => m.MessageAttributes?.endpoint?.StringValue === ENDPOINT)).toBe(true);
    expect(requestsOf([e1, e2])).toEqual([`${e1}:1`, `${e2}:2`]);
    // The row says its shipment went on without it, as its dead letter does.
    const deadRow = await ledger.get({ eventId: e1, endpoint: ENDPOINT });
    expect(deadRow).toMatchObject({ state: 'dead', deadReason: 'rejected', sequence: 1 });
    expect(deadRow?.releasedAt).toEqual(expect.any(Number));
    expect(await ledger.get({ eventId: e2, endpoint: ENDPOINT })).toMatchObject({ state: 'delivered', attempts: 1, sequence: 2 });
    const dead = await harness.receive(started.deadLetterQueueUrl, 1);
    expect(dead[0]!.MessageAttributes).toMatchObject({
      reason: { StringValue: 'rejected' },
      eventId: { StringValue: e1 },
      endpoint: { StringValue: ENDPOINT },
      ordering: { StringValue: 'continued' },
    });
    expect(await heads.get(shipment, ENDPOINT)).toMatchObject({ next: 3, waiting: {} });
    expect(await receiveNow(started.queueUrl)).toEqual([]);
  });

  it('with onDead hold, a rejected event holds its shipment (held) until its replay is delivered', async () => {
    // Prepare
    const started = await start('hold');
    const shipment = 'shp_ordi_3';
    const [e1, e2] = ['evt_ordh_1', 'evt_ordh_2'];
    acme.respondTo(e1, 400);
    await sendOrdered(started.orderedQueueUrl, e1, shipment);
    await sendOrdered(started.orderedQueueUrl, e2, shipment);

    // Act
    expect(await routeOrdered(started)).toEqual([e1, e2]);
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 2));

    // Assess: e1 dead and dead-lettered as held; e2 acknowledged, unsent, waiting; nothing on the queue.
    expect(requestsOf([e1, e2])).toEqual([`${e1}:1`]);
    const held = await ledger.get({ eventId: e1, endpoint: ENDPOINT });
    expect(held).toMatchObject({ state: 'dead', deadReason: 'rejected', sequence: 1 });
    expect(held?.releasedAt).toBeUndefined();
    expect(await ledger.get({ eventId: e2, endpoint: ENDPOINT })).toMatchObject({ state: 'pending', attempts: 0, sequence: 2 });
    const dead = await harness.receive(started.deadLetterQueueUrl, 1);
    expect(dead[0]!.MessageAttributes).toMatchObject({ eventId: { StringValue: e1 }, ordering: { StringValue: 'held' } });
    expect(await heads.get(shipment, ENDPOINT)).toMatchObject({ next: 1, waiting: { 2: e2 } });
    expect(await receiveNow(started.queueUrl)).toEqual([]);

    // Act: an operator replays e1 (lib/replay.ts, as `handoff replay` does); delivered, it passes the turn.
    const queue = new SqsDeliveryQueue({ client: sqs, queueUrl: started.queueUrl, deadLetterQueueUrl: started.deadLetterQueueUrl, seal: TEST_SEAL });
    await replayEvent(e1, { operator: 'ops@example.com', reason: 'receiver fixed' }, Date.now(), { ledger, queue });
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));
    await invoke(started.handler, started.queueUrl, await harness.receive(started.queueUrl, 1));

    // Assess: e1 (same number) then e2, each applied once; the shipment goes on.
    expect(requestsOf([e1, e2])).toEqual([`${e1}:1`, `${e1}:1`, `${e2}:2`]);
    expect(acme.applied.filter((id) => [e1, e2].includes(id))).toEqual([e1, e2]);
    expect(await ledger.get({ eventId: e1, endpoint: ENDPOINT })).toMatchObject({ state: 'delivered', sequence: 1, replays: 1 });
    expect(await ledger.get({ eventId: e2, endpoint: ENDPOINT })).toMatchObject({ state: 'delivered', attempts: 1, sequence: 2 });
    expect(await heads.get(shipment, ENDPOINT)).toMatchObject({ next: 3, waiting: {} });
    expect(await receiveNow(started.queueUrl)).toEqual([]);
  });
});
