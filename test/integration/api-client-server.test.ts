/**
 * The API client against the real API: the sandbox's server (sandbox/api-server.ts) running the one
 * handler over every route, on real emulators (fauxqs, dynalite) with rows the real ledger wrote.
 * What the client encodes is what the router decodes (a `:` in an event ID, the query of a filter),
 * its credentials are the server's bearer token, a refusal comes back as a HandoffApiError naming
 * each bad field, lists are followed to the end, a POST repeated with its Idempotency-Key is
 * answered the first answer with nothing done twice, and what an operator does is recorded as the
 * sandbox's authenticated caller.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HandoffClient } from '../../api/client/client';
import { HandoffApiError } from '../../api/client/errors';
import type { ShipmentEvent } from '../../api/client/types';
import { MemoryIdempotencyStore } from '../../api/idempotency';
import { CommandContext } from '../../cli/context';
import type { Target } from '../../cli/target';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { createLogger } from '../../lib/observability';
import { SANDBOX_API_PRINCIPAL, startApiServer, type ApiServer } from '../../sandbox/api-server';
import { parsed, settledDelivery, shipmentEvent, startTestbed, type Testbed } from '../helpers/api-testbed';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { TEST_SEAL_KEY } from '../helpers/sqs-records';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const SECOND = 1000;

let bed: Testbed;
let server: ApiServer | undefined;
let context: CommandContext | undefined;
let client: HandoffClient;

beforeAll(async () => {
  bed = await startTestbed('api-client');
});

afterAll(async () => {
  await server?.close();
  context?.close();
  await bed?.close();
});

beforeEach(async () => {
  await server?.close();
  context?.close();
  await bed.reset();
  const silent = () => new PassThrough() as unknown as NodeJS.WriteStream;
  // The sandbox's own: a seal key for handoff's messages to one endpoint, a key for the secrets it stores.
  const target: Target = { ...bed.target, deployment: DEFAULT_DEPLOYMENT, sealKey: { key: TEST_SEAL_KEY }, endpointSecretsKey: { key: LocalSecretCipher.generateKey() } };
  context = new CommandContext(target, { stdout: silent(), stderr: silent() });
  server = await startApiServer({
    port: 0,
    context,
    idempotency: new MemoryIdempotencyStore(),
    logger: createLogger({ service: 'handoff-api-client-test', write: () => {} }),
  });
  client = new HandoffClient({ url: server.url, credentials: { token: server.token } });
});

const event = (id: string, shipmentId = `shp_${id}`): ShipmentEvent => ({ id, shipmentId, status: 'in_transit', occurredAt: '2026-12-01T10:00:00Z' });

describe('HandoffClient against the sandbox API', () => {
  it('is refused 401 with a token other than the server’s', async () => {
    // Prepare
    const stranger = new HandoffClient({ url: server!.url, credentials: { token: 'not-the-token' } });

    // Act
    const error = await stranger.openApiDocument().then(
      () => undefined,
      (caught: unknown) => caught,
    );

    // Assess
    expect(error).toBeInstanceOf(HandoffApiError);
    expect([(error as HandoffApiError).status, (error as HandoffApiError).code]).toEqual([401, 'unauthenticated']);
  });

  it('reads the OpenAPI document', async () => {
    const document = await client.openApiDocument();
    expect(document.openapi).toBe('3.1.0');
    expect(Object.keys(document.paths as object)).toContain('/v1/events/{eventId}');
  });

  it("reads an event's deliveries by an ID with a colon, encoded in the path and decoded by the router", async () => {
    // Prepare
    const row = await settledDelivery(bed.ledger, parsed(shipmentEvent('evt:colon', 'shp_c')), 'billing', T0, 'rejected');

    // Act
    const answer = await client.getEvent('evt:colon');

    // Assess
    expect(answer.eventId).toBe('evt:colon');
    expect(answer.deliveries.map((d) => [d.endpoint, d.state, d.deadReason, d.history.length])).toEqual([['billing', 'dead', 'rejected', 1]]);
    expect(answer.deliveries[0]!.createdAt).toBe(row.createdAt);
  });

  it('throws a 404 for an event with no deliveries, and a 400 naming each bad query parameter', async () => {
    // Act
    const missing = await client.getEvent('evt_none').then(
      () => undefined,
      (caught: unknown) => caught as HandoffApiError,
    );
    const bad = await client.listDead({ limit: 0, since: 'yesterday' }).then(
      () => undefined,
      (caught: unknown) => caught as HandoffApiError,
    );

    // Assess
    expect([missing?.status, missing?.code]).toEqual([404, 'not-found']);
    expect(bad).toBeInstanceOf(HandoffApiError);
    expect(bad!.status).toBe(400);
    expect(bad!.code).toBe('invalid-request');
    expect(bad!.errors.map((e) => e.path).sort()).toEqual(['query.limit', 'query.since']);
  });

  it('follows the dead listing to its end, every dead delivery once, oldest death first', async () => {
    // Prepare: seven deaths a second apart at two endpoints, and one delivery that is not dead.
    const dead: string[] = [];
    for (let i = 0; i < 7; i++) {
      const row = await settledDelivery(bed.ledger, parsed(shipmentEvent(`evt_d${i}`)), i % 2 === 0 ? 'billing' : 'crm', T0 + i * SECOND, 'exhausted');
      dead.push(`${row.eventId}@${row.endpoint}`);
    }
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_fine')), 'billing', T0, 'delivered');

    // Act
    const listed: string[] = [];
    for await (const d of client.paginate.dead({ limit: 3 })) listed.push(`${d.eventId}@${d.endpoint}`);
    const billing: string[] = [];
    for await (const d of client.paginate.dead({ endpoint: 'billing', since: new Date(T0 + 2 * SECOND), limit: 1 })) billing.push(d.eventId);

    // Assess
    expect(listed).toEqual(dead);
    expect(billing).toEqual(['evt_d2', 'evt_d4', 'evt_d6']);
  });

  it('posts a batch, one bad event refused by its index and the others put on the queue', async () => {
    // Prepare
    const bad = { ...event('evt_b1'), status: 'teleported' } as unknown as ShipmentEvent;

    // Act
    const answer = await client.postEvents([event('evt_b0'), bad, event('evt_b2')]);

    // Assess
    expect(answer.accepted.map((a) => a.eventId)).toEqual(['evt_b0', 'evt_b2']);
    expect(answer.refused).toHaveLength(1);
    expect(answer.refused[0]!.index).toBe(1);
    expect(answer.refused[0]!.error).toBe('status must be one of label_created, packed, in_transit, out_for_delivery, delivered, exception, returned');
    const messages = await bed.receive(bed.target.queueUrl!, 2);
    expect(messages.map((m) => (JSON.parse(m.Body!) as { id: string }).id).sort()).toEqual(['evt_b0', 'evt_b2']);
  });

  it('answers a POST repeated with its Idempotency-Key with the first answer, sending the event once', async () => {
    // Act
    const first = await client.postEvents(event('evt_once'), { idempotencyKey: 'post-evt-once' });
    const again = await client.postEvents(event('evt_once'), { idempotencyKey: 'post-evt-once' });
    const reused = await client.postEvents(event('evt_other'), { idempotencyKey: 'post-evt-once' }).then(
      () => undefined,
      (caught: unknown) => caught as HandoffApiError,
    );

    // Assess
    expect(again).toEqual(first);
    expect(first.accepted.map((a) => a.eventId)).toEqual(['evt_once']);
    expect([reused?.status, reused?.code]).toEqual([409, 'idempotency-key-reused']);
    await bed.receive(bed.target.queueUrl!, 1);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it('is refused a create naming both bad fields, then creates with the secret shown in that answer only', async () => {
    // Act
    const refused = await client.createEndpoint({ name: 'orders', url: 'ftp://hooks.example.com/in', eventTypes: ['*'], attemptTimeoutMs: 5 }).then(
      () => undefined,
      (caught: unknown) => caught as HandoffApiError,
    );
    const created = await client.createEndpoint({ name: 'orders', url: 'https://hooks.example.com/in', eventTypes: ['*'], owner: 'acme' });
    const read = await client.getEndpoint('orders');
    const listed = await client.listEndpoints({ owner: 'acme' });

    // Assess
    expect(refused).toBeInstanceOf(HandoffApiError);
    expect([refused!.status, refused!.code]).toEqual([400, 'invalid-request']);
    expect(refused!.errors.map((e) => e.path).sort()).toEqual(['attemptTimeoutMs', 'url']);
    expect(created.secret).toMatch(/^whsec_/);
    expect([read.secret, listed.items.map((e) => [e.name, e.secret])]).toEqual(['set', [['orders', 'set']]]);
    expect(JSON.stringify([read, listed])).not.toContain(created.secret!);
  });

  it("records the server's authenticated caller as who disabled an endpoint and who replayed its delivery", async () => {
    // Prepare
    await client.createEndpoint({ name: 'billing', url: 'https://hooks.example.com/billing', eventTypes: ['*'] });
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_r1')), 'billing', T0, 'exhausted');
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_r2')), 'billing', T0 + SECOND, 'exhausted');

    // Act
    const disabled = await client.disableEndpoint('billing', { reason: 'receiver down' });
    const counted = await client.replay({ endpoint: 'billing', deadSince: new Date(T0 - SECOND), until: new Date(T0 + 10 * SECOND), dryRun: true, reason: 'receiver fixed' });
    const replayed = await client.replay({ eventId: 'evt_r1', endpoint: 'billing', reason: 'receiver fixed' });
    const after = await client.getEvent('evt_r1');

    // Assess
    expect([disabled.state, disabled.stateChange?.by, disabled.stateChange?.reason]).toEqual(['disabled', SANDBOX_API_PRINCIPAL, 'receiver down']);
    expect([counted.dryRun, counted.matched, counted.replayed, counted.next]).toEqual([true, 2, 0, null]);
    expect([replayed.state, replayed.operator, replayed.caller, replayed.enqueued]).toEqual(['pending', SANDBOX_API_PRINCIPAL, SANDBOX_API_PRINCIPAL, true]);
    expect(after.deliveries[0]!.audit.map((a) => [a.action, a.operator, a.reason])).toEqual([['replay', SANDBOX_API_PRINCIPAL, 'receiver fixed']]);
  });
});
