/**
 * What a producer writes is input, never an instruction (lib/queue/seal.ts), in the sandbox with
 * the real consumer: anyone who may send to the delivery queue or the ordered intake sends the
 * control attributes handoff writes on its own messages (`endpoint`, `sequence`, `inTurn`,
 * `notBefore`, `notBeforeRate`, `recoveries`), unsealed, and a careless one reuses an event ID
 * across shipments. None of it changes routing, order, numbering or pacing:
 *
 * | endpoint   | subscribes to                           | receiver                                 |
 * |------------|-----------------------------------------|------------------------------------------|
 * | `ordered`  | lane `ordered`, per-shipment, continue  | 503 twice for `evt_seq_1`, else 200      |
 * | `filtered` | `shipment.returned` of carrier `acme`   | 200                                      |
 * | `paced`    | lane `paced`, at most 2 requests a second | 200                                    |
 *
 * Timings shortened: waits of 2 s, 5 s attempts.
 */
import { SendMessageCommand, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { startTestReceiver, type ReceivedRequest, type TestReceiver } from '../helpers/receiver';
import type { SandboxProcess } from '../helpers/sandbox';
import { useSandboxProcess } from '../helpers/sandbox-suite';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';

const SETTLE_MS = 60_000;
const TEST_TIMEOUT_MS = 90_000;

const receivers = {} as Record<'ordered' | 'filtered' | 'paced', TestReceiver>;
let sandbox: SandboxProcess;
let clients: SandboxClients;

useSandboxProcess(
  async () => {
    receivers.ordered = await startTestReceiver();
    receivers.filtered = await startTestReceiver();
    receivers.paced = await startTestReceiver();
    receivers.ordered.respondTo('evt_seq_1', 503, 503);
    const endpoints: EndpointFields[] = [
      { name: 'ordered', url: receivers.ordered.url, eventTypes: ['*'], match: { 'data.lane': ['ordered'] }, ordering: 'per-shipment', onDead: 'continue' },
      { name: 'filtered', url: receivers.filtered.url, eventTypes: ['shipment.returned'], match: { 'data.carrier': ['acme'] } },
      { name: 'paced', url: receivers.paced.url, eventTypes: ['*'], match: { 'data.lane': ['paced'] }, rateLimitPerSecond: 2 },
    ];
    return {
      endpoints,
      env: { HANDOFF_RETRY_SCHEDULE: '2,2,2,2', HANDOFF_MAX_ATTEMPTS: '6', HANDOFF_ATTEMPT_TIMEOUT_MS: '5000' },
    };
  },
  (started) => ({ sandbox, clients } = started),
  async () => {
    for (const receiver of Object.values(receivers)) await receiver.close();
  },
);

function event(id: string, shipmentId: string, status: string, data: Record<string, unknown>): string {
  return JSON.stringify({ id, shipmentId, status, occurredAt: '2026-12-04T10:00:00Z', data });
}

/** SQS attributes as a producer can send them: handoff's names, no seal. */
function forged(control: Record<string, string>): Record<string, MessageAttributeValue> {
  const numbers = new Set(['sequence', 'notBefore', 'notBeforeRate', 'recoveries']);
  return Object.fromEntries(
    Object.entries(control).map(([name, value]) => [name, { DataType: numbers.has(name) ? 'Number' : 'String', StringValue: value }]),
  );
}

async function sendForged(body: string, control: Record<string, string>, queue: 'delivery' | 'ordered' = 'delivery'): Promise<void> {
  const id = (JSON.parse(body) as { id: string; shipmentId: string }).id;
  const shipmentId = (JSON.parse(body) as { shipmentId: string }).shipmentId;
  await clients.sqs.send(
    new SendMessageCommand({
      QueueUrl: queue === 'delivery' ? sandbox.ready.queueUrl : sandbox.ready.orderedQueueUrl,
      MessageBody: body,
      MessageAttributes: forged(control),
      ...(queue === 'ordered' ? { MessageGroupId: shipmentId, MessageDeduplicationId: id } : {}),
    }),
  );
}

function delivered(eventId: string, endpoint: string): Promise<DeliveryRecord> {
  return eventually(
    `${eventId} → ${endpoint} to be delivered`,
    async () => {
      const row = await clients.ledger.get({ eventId, endpoint });
      return row?.state === 'delivered' ? row : undefined;
    },
    { timeoutMs: SETTLE_MS, describe: async () => JSON.stringify(await clients.ledger.get({ eventId, endpoint })) },
  );
}

/** The requests a receiver accepted (answered 200), in arrival order, with their sequence header. */
function accepted(receiver: TestReceiver, shipmentId: string): { eventId: string | undefined; sequence: string | undefined }[] {
  return receiver.requests
    .filter((request: ReceivedRequest) => request.answer === 200 && (JSON.parse(request.body) as { shipmentId: string }).shipmentId === shipmentId)
    .map((request) => ({ eventId: request.eventId, sequence: request.headers['webhook-sequence'] as string | undefined }));
}

describe('Forged control attributes', { timeout: TEST_TIMEOUT_MS }, () => {
  it.each(['delivery', 'ordered'] as const)('on the %s queue: an `endpoint` attribute skips no subscription filter', async (queue) => {
    // An in-transit event of carrier zephyr: `filtered` takes returned events of acme only.
    const id = `evt_filter_${queue}`;
    await sendForged(event(id, `shp_filter_${queue}`, 'in_transit', { carrier: 'zephyr' }), { endpoint: 'filtered' }, queue);

    await sandbox.waitForLog(new RegExp(`${id} unrouted`), SETTLE_MS);

    expect(receivers.filtered.requestsFor(id)).toEqual([]);
    expect(await clients.ledger.deliveriesOf(id)).toEqual([]);
  });

  it('`notBefore` and `notBeforeRate` lift no rate limit: 10 forged messages reach a 2-a-second endpoint over 4.5 s, not at once', async () => {
    const ids = Array.from({ length: 10 }, (_, i) => `evt_paced_${i}`);
    // One slot for all ten, soon enough that a consumer would still take it as reserved.
    const slot = String(Date.now() + 1500);
    const before = receivers.paced.requests.length;

    await Promise.all(ids.map((id) => sendForged(event(id, `shp_${id}`, 'in_transit', { lane: 'paced' }), { endpoint: 'paced', notBefore: slot, notBeforeRate: '2' })));
    await receivers.paced.waitForRequests(before + ids.length);

    // Two a second, a slot every 500 ms: the tenth is sent 4.5 s after the first at the soonest.
    const times = receivers.paced.requests.slice(before).map((request) => request.receivedAtMs);
    const arrivals = receivers.paced.requests.slice(before).map((request) => request.eventId).sort();
    expect(arrivals).toEqual([...ids].sort());
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(4000);
  });

  it('`sequence` and `inTurn` take no turn: a shipment keeps its order while its first event retries', async () => {
    // Prepare: e1 is retried (503 twice), e2 waits behind it.
    const shipmentId = 'shp_seq';
    const body = (n: number) => event(`evt_seq_${n}`, shipmentId, 'in_transit', { lane: 'ordered', n });
    await clients.send(body(1));
    await eventually('evt_seq_1 to be retried', async () => receivers.ordered.requestsFor('evt_seq_1').length >= 1, { timeoutMs: SETTLE_MS });
    await clients.send(body(2));
    await sandbox.waitForLog(/evt_seq_2 → ordered waiting/, SETTLE_MS);

    // Act: e3 claims e1's number with its turn come; e4 claims e2's place in the line.
    await sendForged(body(3), { endpoint: 'ordered', sequence: '1', inTurn: 'true' });
    // Admitted before e4 is sent: a standard queue keeps no order, and the numbers follow admission.
    await eventually('evt_seq_3 to be admitted', async () => (await clients.ledger.deliveriesOf('evt_seq_3')).length > 0, { timeoutMs: SETTLE_MS });
    await sendForged(body(4), { endpoint: 'ordered', sequence: '2' });

    // Assess: each delivered once, in admission order, numbered 1 to 4 by the shipment's head.
    for (const n of [1, 2, 3, 4]) await delivered(`evt_seq_${n}`, 'ordered');
    expect(accepted(receivers.ordered, shipmentId)).toEqual([1, 2, 3, 4].map((n) => ({ eventId: `evt_seq_${n}`, sequence: String(n) })));
  });
});

describe('An event ID reused across shipments', { timeout: TEST_TIMEOUT_MS }, () => {
  it("is an identity conflict that stops no shipment: the other shipment's events follow, in order", async () => {
    // Prepare: evt_reused delivered for shipment A.
    await clients.send(event('evt_reused', 'shp_reuse_a', 'in_transit', { lane: 'ordered' }));
    await delivered('evt_reused', 'ordered');

    // Act: the same ID for shipment B (other content), then B's next events.
    await clients.send(event('evt_reused', 'shp_reuse_b', 'in_transit', { lane: 'ordered', x: 1 }));
    await sandbox.waitForLog(/evt_reused → ordered dead-letter \(identity-conflict\)/, SETTLE_MS);
    // One after the other: a shipment's order is the order its events are admitted, and two
    // messages sent at once to a standard queue may be received either way round.
    await clients.send(event('evt_reuse_b2', 'shp_reuse_b', 'out_for_delivery', { lane: 'ordered' }));
    await delivered('evt_reuse_b2', 'ordered');
    await clients.send(event('evt_reuse_b3', 'shp_reuse_b', 'delivered', { lane: 'ordered' }));

    // Assess: B's events delivered in order after the number the conflict gave up; A's row untouched.
    await delivered('evt_reuse_b3', 'ordered');
    expect(accepted(receivers.ordered, 'shp_reuse_b')).toEqual([
      { eventId: 'evt_reuse_b2', sequence: '2' },
      { eventId: 'evt_reuse_b3', sequence: '3' },
    ]);
    expect(receivers.ordered.requestsFor('evt_reused').map((request) => (JSON.parse(request.body) as { shipmentId: string }).shipmentId)).toEqual([
      'shp_reuse_a',
    ]);
    expect(await clients.ledger.get({ eventId: 'evt_reused', endpoint: 'ordered' })).toMatchObject({ state: 'delivered', sequence: 1, shipmentId: 'shp_reuse_a' });
    const conflicts = (await clients.readDeadLetters()).filter((letter) => letter.eventId === 'evt_reused');
    expect(conflicts).toEqual([expect.objectContaining({ reason: 'identity-conflict', endpoint: 'ordered' })]);
  });
});
