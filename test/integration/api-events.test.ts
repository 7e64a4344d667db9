/**
 * The management API's events (docs/contract.md §16) through its one handler, against real
 * emulators: `POST /v1/events` checks each event as `handoff send` does and puts it on the delivery
 * queue (or the ordered intake) with the same SQS calls; `GET /v1/events/{eventId}` answers what
 * `handoff status EVENT --json` prints, to a portal link's holder its owner's deliveries only.
 * Every answer is checked against the API's OpenAPI document.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { statusCommand } from '../../cli/commands/status';
import { CommandContext } from '../../cli/context';
import { messageGroupIdFor } from '../../lib/fifo';
import { ownedEndpoint, parsed, settledDelivery, shipmentEvent, startTestbed, TESTBED_PAYLOAD_LIMIT_BYTES, type Testbed } from '../helpers/api-testbed';

const T0 = Date.parse('2026-12-01T10:00:00Z');

let bed: Testbed;

beforeAll(async () => {
  bed = await startTestbed('api-events');
});

afterAll(async () => {
  await bed?.close();
});

beforeEach(async () => {
  await bed.reset();
});

const bodiesOf = (messages: readonly { Body?: string }[]) => messages.map((m) => JSON.parse(m.Body!) as { id: string });

describe('POST /v1/events', () => {
  it('puts one event on the delivery queue as its canonical JSON and answers 202 with its message ID', async () => {
    // Prepare
    const event = shipmentEvent('evt_api_one', 'shp_1', { data: { carrier: 'acme' } });

    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/events', body: event });

    // Assess
    expect(answer.status).toBe(202);
    const [message] = await bed.receive(bed.target.queueUrl!, 1);
    expect(answer.body).toEqual({ accepted: [{ eventId: 'evt_api_one', messageId: message!.MessageId }], refused: [] });
    expect(message!.Body).toBe(parsed(event).body);
  });

  it('sends the good events of a batch and refuses each bad one by its index and field, sending nothing of it', async () => {
    // Prepare: a bad status at 1; at 3 a number JSON.parse would round (0.1 once parsed), which the parser reads in the text sent.
    const good = [shipmentEvent('evt_batch_0'), shipmentEvent('evt_batch_2')];
    const text = `{"events": [
      ${JSON.stringify(good[0])},
      ${JSON.stringify(shipmentEvent('evt_batch_1', 'shp_b', { status: 'lost' }))},
      ${JSON.stringify(good[1])},
      {"id": "evt_batch_3", "shipmentId": "shp_c", "status": "packed", "occurredAt": "2026-12-01T10:00:00Z", "data": {"weight": 0.1000000000000000055511151231257827}}
    ]}`;

    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/events', body: text });

    // Assess
    expect(answer.status).toBe(202);
    const messages = await bed.receive(bed.target.queueUrl!, 2);
    expect(answer.body.accepted.map((a: { eventId: string }) => a.eventId)).toEqual(['evt_batch_0', 'evt_batch_2']);
    expect(answer.body.refused).toEqual([
      { index: 1, error: 'status must be one of label_created, packed, in_transit, out_for_delivery, delivered, exception, returned' },
      { index: 3, error: 'data.weight is a number that cannot be carried exactly (send it as a string)' },
    ]);
    expect(bodiesOf(messages).map((b) => b.id).sort()).toEqual(['evt_batch_0', 'evt_batch_2']);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it("refuses an event over the target's payload limit, naming the limit, and sends the rest", async () => {
    // Prepare
    const big = shipmentEvent('evt_big', 'shp_big', { data: { note: 'x'.repeat(TESTBED_PAYLOAD_LIMIT_BYTES) } });

    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/events', body: { events: [big, shipmentEvent('evt_small')] } });

    // Assess
    expect(answer.status).toBe(202);
    expect(answer.body.refused).toEqual([
      { index: 0, error: `message is ${JSON.stringify(big).length} bytes, over the ${TESTBED_PAYLOAD_LIMIT_BYTES}-byte limit` },
    ]);
    expect(answer.body.accepted.map((a: { eventId: string }) => a.eventId)).toEqual(['evt_small']);
    expect(bodiesOf(await bed.receive(bed.target.queueUrl!, 1)).map((b) => b.id)).toEqual(['evt_small']);
  });

  it('puts events on the ordered intake with ordered=true, each grouped by its shipment and deduplicated by its ID, in input order', async () => {
    // Prepare
    const events = [shipmentEvent('evt_o_a1', 'shp_a'), shipmentEvent('evt_o_b1', 'shp b'), shipmentEvent('evt_o_a2', 'shp_a')];

    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/events', query: { ordered: 'true' }, body: { events } });

    // Assess
    expect(answer.status).toBe(202);
    expect(answer.body.refused).toEqual([]);
    expect(answer.body.accepted.map((a: { eventId: string }) => a.eventId)).toEqual(['evt_o_a1', 'evt_o_b1', 'evt_o_a2']);
    const messages = await bed.receive(bed.target.orderedQueueUrl!, 3);
    const inGroup = (group: string) => messages.filter((m) => m.Attributes?.MessageGroupId === group).map((m) => (JSON.parse(m.Body!) as { id: string }).id);
    expect(inGroup('shp_a')).toEqual(['evt_o_a1', 'evt_o_a2']);
    expect(inGroup(messageGroupIdFor('shp b'))).toEqual(['evt_o_b1']);
    for (const m of messages) expect(m.Attributes?.MessageDeduplicationId).toBe((JSON.parse(m.Body!) as { id: string }).id);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it("refuses what the ordered intake does not take with the queue's reason, and holds back its shipment's later events", async () => {
    // Prepare: queues that take at most 1,024 bytes a message, under the payload limit the target states.
    await bed.reset({ maxMessageBytes: 1024 });
    const big = shipmentEvent('evt_h_a1', 'shp_a', { data: { note: 'x'.repeat(1200) } });
    const events = [big, shipmentEvent('evt_h_b1', 'shp_b'), shipmentEvent('evt_h_a2', 'shp_a'), shipmentEvent('evt_h_b2', 'shp_b')];

    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/events', query: { ordered: 'true' }, body: { events } });

    // Assess
    expect(answer.status).toBe(202);
    const messages = await bed.receive(bed.target.orderedQueueUrl!, 2);
    const idOf = new Map(messages.map((m) => [(JSON.parse(m.Body!) as { id: string }).id, m.MessageId]));
    expect(answer.body).toEqual({
      accepted: [
        { eventId: 'evt_h_b1', messageId: idOf.get('evt_h_b1') },
        { eventId: 'evt_h_b2', messageId: idOf.get('evt_h_b2') },
      ],
      refused: [
        { index: 0, error: 'InvalidParameterValue: One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.' },
        { index: 2, error: 'not sent: an earlier event of its shipment (evt_h_a1) was not sent' },
      ],
    });
  });

  it('refuses a single invalid event with a 400 naming its field, and sends nothing', async () => {
    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/events', body: shipmentEvent('evt_bad', 'shp_1', { occurredAt: 'yesterday' }) });

    // Assess
    expect(answer.status).toBe(400);
    expect(answer.contentType).toBe('application/problem+json');
    expect(answer.body.errors).toEqual([{ path: 'occurredAt', message: 'occurredAt must be an ISO-8601 date-time with a zone (Z or ±hh:mm, at most ±23:59)' }]);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it('refuses a bad ordered flag, a batch of more than 500 and a body that is no object, naming what is wrong', async () => {
    // Act
    const empty = await bed.call({ method: 'POST', path: '/v1/events', query: { ordered: 'yes' }, body: shipmentEvent('evt_flag') });
    const tooMany = await bed.call({ method: 'POST', path: '/v1/events', body: { events: Array.from({ length: 501 }, (_, i) => shipmentEvent(`evt_${i}`)) } });
    const notList = await bed.call({ method: 'POST', path: '/v1/events', body: [shipmentEvent('evt_in_array')] });

    // Assess
    expect(empty.status).toBe(400);
    expect(empty.body.errors).toEqual([{ path: 'query.ordered', message: 'must be one of true, false' }]);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errors).toEqual([{ path: 'events', message: 'must hold 1–500 events, not 501' }]);
    expect(notList.status).toBe(400);
    expect(notList.body.errors).toEqual([{ path: 'body', message: 'must be an event (a JSON object), or {events: [...]}' }]);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it('names both the extra field and the empty list of a batch in one 400', async () => {
    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/events', body: { events: [], priority: 'high' } });

    // Assess
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([
      { path: 'priority', message: 'is not a field of a batch (it takes events only)' },
      { path: 'events', message: 'must hold 1–500 events, not 0' },
    ]);
  });

  it('answers a repeat with the same Idempotency-Key with the first answer, and sends the event once', async () => {
    // Prepare
    const request = { method: 'POST', path: '/v1/events', body: shipmentEvent('evt_once'), headers: { 'idempotency-key': 'send-evt-once-1' } };

    // Act
    const first = await bed.call(request);
    const again = await bed.call(request);

    // Assess
    expect(first.status).toBe(202);
    expect(again).toEqual(first);
    expect(bodiesOf(await bed.receive(bed.target.queueUrl!, 1)).map((b) => b.id)).toEqual(['evt_once']);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it('answers 401 to a request no authorizer vouched for, sending nothing', async () => {
    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/events', body: shipmentEvent('evt_anon'), caller: null });

    // Assess
    expect(answer.status).toBe(401);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });
});

describe('GET /v1/events/{eventId}', () => {
  it("answers the event's deliveries exactly as `handoff status EVENT --json`, each with its attempt history", async () => {
    // Prepare: delivered to billing, dead (rejected) at crm.
    const event = parsed(shipmentEvent('evt_read'));
    await settledDelivery(bed.ledger, event, 'billing', T0, 'delivered');
    await settledDelivery(bed.ledger, event, 'crm', T0, 'rejected');
    const silent = () => new PassThrough() as unknown as NodeJS.WriteStream;
    const ctx = new CommandContext(bed.target, { stdout: silent(), stderr: silent() });
    const command = await statusCommand(ctx, 'evt_read', {}).finally(() => ctx.close());

    // Act
    const answer = await bed.call({ method: 'GET', path: '/v1/events/evt_read' });

    // Assess
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual(JSON.parse(JSON.stringify(command.json)));
    expect(answer.body.deliveries.map((d: { endpoint: string; state: string }) => [d.endpoint, d.state])).toEqual([
      ['billing', 'delivered'],
      ['crm', 'dead'],
    ]);
    expect(answer.body.deliveries[1].history).toEqual([{ attempt: 1, at: T0, outcome: 'rejected', status: 422, durationMs: 140 }]);
    expect(answer.body.deliveries[1].deadReason).toBe('rejected');
    // What happened, never what was sent.
    expect(JSON.stringify(answer.body)).not.toContain('"body"');
  });

  it("answers a portal link's holder its owner's deliveries only, and 404 as for an unknown event when it has none", async () => {
    // Prepare: evt_mixed went to o1's billing and o2's crm; evt_theirs to crm alone; old-billing's owner was o1 but it is gone from the registry.
    await bed.registry.add(ownedEndpoint('billing', 'o1'), T0);
    await bed.registry.add(ownedEndpoint('crm', 'o2'), T0);
    const mixed = parsed(shipmentEvent('evt_mixed'));
    await settledDelivery(bed.ledger, mixed, 'billing', T0, 'delivered');
    await settledDelivery(bed.ledger, mixed, 'crm', T0, 'rejected');
    await settledDelivery(bed.ledger, mixed, 'old-billing', T0, 'rejected');
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_theirs')), 'crm', T0, 'delivered');

    // Act
    const operator = await bed.call({ method: 'GET', path: '/v1/events/evt_mixed' });
    const own = await bed.call({ method: 'GET', path: '/v1/events/evt_mixed', caller: 'portal:o1' });
    const theirs = await bed.call({ method: 'GET', path: '/v1/events/evt_theirs', caller: 'portal:o1' });
    const unknown = await bed.call({ method: 'GET', path: '/v1/events/evt_never', caller: 'portal:o1' });

    // Assess
    expect(operator.body.deliveries.map((d: { endpoint: string }) => d.endpoint)).toEqual(['billing', 'crm', 'old-billing']);
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ eventId: 'evt_mixed', deliveries: [operator.body.deliveries[0]] });
    // Nothing tells an event with no delivery of the owner's from an event no one has.
    expect(theirs.status).toBe(404);
    expect(unknown.status).toBe(404);
    const { instance: _theirs, ...theirsProblem } = theirs.body;
    const { instance: _unknown, ...unknownProblem } = unknown.body;
    expect(theirsProblem).toEqual({ ...unknownProblem, detail: unknownProblem.detail.replace('evt_never', 'evt_theirs') });
  });

  it('answers 404 for an event without deliveries, and 400 naming the path for what is no event ID', async () => {
    // Act
    const unknown = await bed.call({ method: 'GET', path: '/v1/events/evt_never' });
    const bad = await bed.call({ method: 'GET', path: '/v1/events/evt*bad' });

    // Assess
    expect(unknown.status).toBe(404);
    expect(unknown.body.type).toBe('https://handoff.dev/problems/not-found');
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ path: 'path.eventId', message: 'must be 1–128 characters of A-Z a-z 0-9 _ - . :' }]);
  });
});
