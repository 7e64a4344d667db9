/**
 * POST /v1/replays and POST /v1/portal-links through the API's one handler, against real emulators
 * (test/helpers/api-testbed.ts: fauxqs and dynalite, the command's own CommandContext): a replay is
 * `handoff replay`'s use case, audited with the authenticated caller as operator, its event back on
 * the delivery queue for that endpoint alone; a bulk replay is counted by a dry run and done in
 * bounded parts continued by `next`; bad input is a 400 naming each field; a portal link's holder
 * replays its owner's endpoints' deliveries only. Every answer is checked against the API's OpenAPI
 * document.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { portalKeyFrom, verifyPortalToken } from '../../api/portal-link';
import { ENDPOINT_ATTRIBUTE } from '../../lib/queue/queue';
import { OPERATOR_SHOWN_TO_PORTAL } from '../../api/portal-link';
import { ownedEndpoint, parsed, settledDelivery, shipmentEvent, startTestbed, TEST_CALLER, type Testbed } from '../helpers/api-testbed';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const MINUTE = 60_000;

let bed: Testbed;

beforeAll(async () => {
  bed = await startTestbed('api-replays');
});

afterAll(async () => {
  await bed?.close();
});

beforeEach(async () => {
  await bed.reset();
});

/** A delivery to `endpoint` of a new event, dead (for `reason`) at `atMs + 1000`. */
async function deadDelivery(id: string, endpoint: string, atMs: number, reason: 'rejected' | 'exhausted' = 'rejected') {
  return settledDelivery(bed.ledger, parsed(shipmentEvent(id)), endpoint, atMs, reason);
}

function endpointOf(message: { MessageAttributes?: Record<string, { StringValue?: string }> }): string | undefined {
  return message.MessageAttributes?.[ENDPOINT_ATTRIBUTE]?.StringValue;
}

describe('POST /v1/replays: one delivery', () => {
  it("replays a dead delivery with the caller as operator, and puts its event on the queue for that endpoint alone", async () => {
    // Prepare
    await deadDelivery('evt_r1', 'acme', T0);

    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_r1', endpoint: 'acme', reason: 'acme fixed their 422' } });

    // Assess
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({
      eventId: 'evt_r1',
      endpoint: 'acme',
      state: 'pending',
      // A replay gives the delivery its attempts afresh.
      attempts: 0,
      replays: 1,
      operator: TEST_CALLER,
      caller: TEST_CALLER,
      reason: 'acme fixed their 422',
      enqueued: true,
    });
    const row = await bed.ledger.get({ eventId: 'evt_r1', endpoint: 'acme' });
    expect(row?.state).toBe('pending');
    expect(row?.audit).toEqual([expect.objectContaining({ action: 'replay', operator: TEST_CALLER, caller: TEST_CALLER, reason: 'acme fixed their 422' })]);
    const [message] = await bed.receive(bed.target.queueUrl!, 1);
    expect(message!.Body).toBe(parsed(shipmentEvent('evt_r1')).body);
    expect(endpointOf(message!)).toBe('acme');
  });

  it('takes no operator from the body: naming one is a 400, and nothing is replayed', async () => {
    await deadDelivery('evt_r2', 'acme', T0);

    const answer = await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_r2', endpoint: 'acme', reason: 'r', operator: 'mallory' } });

    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([{ path: 'operator', message: 'is not a field of a replay request' }]);
    expect((await bed.ledger.get({ eventId: 'evt_r2', endpoint: 'acme' }))?.state).toBe('dead');
  });

  it('answers 409 for a delivery that is not dead, and 404 for an event with no delivery', async () => {
    await settledDelivery(bed.ledger, parsed(shipmentEvent('evt_ok')), 'acme', T0, 'delivered');

    const delivered = await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_ok', endpoint: 'acme', reason: 'r' } });
    const unknown = await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_nothing', endpoint: 'acme', reason: 'r' } });

    expect(delivered).toMatchObject({ status: 409, contentType: 'application/problem+json', body: { type: 'https://handoff.dev/problems/not-dead' } });
    expect(unknown).toMatchObject({ status: 404, contentType: 'application/problem+json', body: { type: 'https://handoff.dev/problems/not-found' } });
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it('replays every dead delivery of an event when no endpoint is named, leaving the delivered one', async () => {
    const event = parsed(shipmentEvent('evt_fan'));
    await settledDelivery(bed.ledger, event, 'acme', T0, 'rejected');
    await settledDelivery(bed.ledger, event, 'beta', T0, 'exhausted');
    await settledDelivery(bed.ledger, event, 'gamma', T0, 'delivered');

    const answer = await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_fan', reason: 'both fixed' } });

    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({
      eventId: 'evt_fan',
      operator: TEST_CALLER,
      caller: TEST_CALLER,
      reason: 'both fixed',
      deliveries: [
        { endpoint: 'acme', state: 'pending', attempts: 0, replays: 1, enqueued: true },
        { endpoint: 'beta', state: 'pending', attempts: 0, replays: 1, enqueued: true },
      ],
    });
    const messages = await bed.receive(bed.target.queueUrl!, 2);
    expect(messages.map(endpointOf).sort()).toEqual(['acme', 'beta']);
  });

  it('runs once for a repeated Idempotency-Key and answers the repeat with the first answer', async () => {
    await deadDelivery('evt_idem', 'acme', T0);
    const send = () =>
      bed.call({ method: 'POST', path: '/v1/replays', headers: { 'idempotency-key': 'replay-evt-idem' }, body: { eventId: 'evt_idem', endpoint: 'acme', reason: 'fixed' } });

    const first = await send();
    const repeat = await send();

    expect(first.status).toBe(202);
    expect(repeat).toEqual(first);
    expect((await bed.ledger.get({ eventId: 'evt_idem', endpoint: 'acme' }))?.replays).toBe(1);
    await bed.receive(bed.target.queueUrl!, 1);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });
});

describe('POST /v1/replays: bad input', () => {
  it('names each bad field at once', async () => {
    const answer = await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'not an id!', deadSince: 'yesterday', dryRun: 'yes' } });

    expect(answer.status).toBe(400);
    expect(answer.body.errors.map((e: { path: string }) => e.path)).toEqual(['eventId', 'deadSince', 'dryRun', 'reason', 'deadSince', 'dryRun']);
  });

  it('asks a bulk replay for its endpoint and earliest death, and for an until after it', async () => {
    const missing = await bed.call({ method: 'POST', path: '/v1/replays', body: { reason: 'r' } });
    const backwards = await bed.call({ method: 'POST', path: '/v1/replays', body: { endpoint: 'acme', deadSince: '2026-12-02', until: '2026-12-01', reason: 'r' } });
    const future = await bed.call({ method: 'POST', path: '/v1/replays', body: { endpoint: 'acme', deadSince: '2999-01-01', reason: 'r' } });

    expect(missing.body.errors.map((e: { path: string }) => e.path)).toEqual(['endpoint', 'deadSince']);
    expect(backwards.body.errors).toEqual([{ path: 'until', message: 'must come after deadSince' }]);
    expect(future.body.errors).toEqual([{ path: 'deadSince', message: 'must be in the past' }]);
  });

  it('refuses a cursor answered for another selection', async () => {
    for (let i = 0; i < 3; i += 1) await deadDelivery(`evt_c${i}`, 'acme', T0 + i * MINUTE);
    const body = { endpoint: 'acme', deadSince: '2026-12-01', until: '2026-12-02', dryRun: true, limit: 1, reason: 'count' };
    const first = await bed.call({ method: 'POST', path: '/v1/replays', body });

    const other = await bed.call({ method: 'POST', path: '/v1/replays', body: { ...body, endpoint: 'beta', cursor: first.body.next } });
    const forged = await bed.call({ method: 'POST', path: '/v1/replays', body: { ...body, cursor: 'not-a-cursor' } });

    expect(other.body.errors).toEqual([{ path: 'cursor', message: expect.stringContaining('another selection') }]);
    expect(forged.body.errors).toEqual([{ path: 'cursor', message: 'is not a `next` this API answered' }]);
  });
});

describe('POST /v1/replays: in bulk', () => {
  async function prepareWindow() {
    // In the window: three rejected and one exhausted; outside it: one, and another endpoint's.
    await deadDelivery('evt_b0', 'acme', T0);
    await deadDelivery('evt_b1', 'acme', T0 + MINUTE);
    await deadDelivery('evt_b2', 'acme', T0 + 2 * MINUTE, 'exhausted');
    await deadDelivery('evt_b3', 'acme', T0 + 3 * MINUTE);
    await deadDelivery('evt_b4', 'acme', T0 + 4 * MINUTE);
    await deadDelivery('evt_late', 'acme', T0 + 60 * MINUTE);
    await deadDelivery('evt_beta', 'beta', T0 + MINUTE);
  }
  const WINDOW = { endpoint: 'acme', deadSince: '2026-12-01T10:00:00Z', until: '2026-12-01T10:30:00Z' };

  it('counts the dead deliveries of the window by a dry run, writing and sending nothing', async () => {
    await prepareWindow();

    const all = await bed.call({ method: 'POST', path: '/v1/replays', body: { ...WINDOW, dryRun: true, reason: 'how many' } });
    const rejected = await bed.call({ method: 'POST', path: '/v1/replays', body: { ...WINDOW, deadReason: 'rejected', dryRun: true, reason: 'how many' } });

    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      endpoint: 'acme',
      deadSince: '2026-12-01T10:00:00.000Z',
      until: '2026-12-01T10:30:00.000Z',
      deadReason: null,
      dryRun: true,
      matched: 5,
      replayed: 0,
      noLongerDead: 0,
      withoutEvent: 0,
      enqueueFailed: [],
      ratePerSecond: 10,
      next: null,
    });
    expect(rejected.body).toMatchObject({ deadReason: 'rejected', matched: 4, next: null });
    expect((await bed.ledger.get({ eventId: 'evt_b0', endpoint: 'acme' }))?.state).toBe('dead');
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it('replays the window in parts, each continued by next, without repeats or gaps', async () => {
    await prepareWindow();
    const body = { ...WINDOW, limit: 2, reason: 'acme is back' };

    const parts = [await bed.call({ method: 'POST', path: '/v1/replays', body })];
    while (parts.at(-1)!.body.next !== null && parts.length < 10) {
      parts.push(await bed.call({ method: 'POST', path: '/v1/replays', body: { ...body, cursor: parts.at(-1)!.body.next } }));
    }

    expect(parts.map((p) => [p.status, p.body.replayed])).toEqual([
      [202, 2],
      [202, 2],
      [202, 1],
    ]);
    expect(parts[0]!.body).toMatchObject({ operator: TEST_CALLER, caller: TEST_CALLER, reason: 'acme is back', dryRun: false });
    const messages = await bed.receive(bed.target.queueUrl!, 5);
    expect(messages.map((m) => (JSON.parse(m.Body!) as { id: string }).id).sort()).toEqual(['evt_b0', 'evt_b1', 'evt_b2', 'evt_b3', 'evt_b4']);
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
    expect((await bed.ledger.get({ eventId: 'evt_late', endpoint: 'acme' }))?.state).toBe('dead');
    expect((await bed.ledger.get({ eventId: 'evt_beta', endpoint: 'beta' }))?.state).toBe('dead');
  });

  it('finds nothing more to replay once the window is replayed', async () => {
    await prepareWindow();
    await bed.call({ method: 'POST', path: '/v1/replays', body: { ...WINDOW, reason: 'all of it' } });

    const again = await bed.call({ method: 'POST', path: '/v1/replays', body: { ...WINDOW, dryRun: true, reason: 'anything left?' } });

    expect(again.body).toMatchObject({ matched: 0, next: null });
  });
});

describe("POST /v1/replays: a portal link's holder", () => {
  /** evt_both died at o1's acme and o2's beta; evt_gone at gone (in no registry). */
  async function prepareOwners() {
    await bed.registry.add(ownedEndpoint('acme', 'o1'), T0);
    await bed.registry.add(ownedEndpoint('beta', 'o2'), T0);
    const both = parsed(shipmentEvent('evt_both'));
    await settledDelivery(bed.ledger, both, 'acme', T0, 'rejected');
    await settledDelivery(bed.ledger, both, 'beta', T0, 'rejected');
    await deadDelivery('evt_gone', 'gone', T0);
  }
  const portal = 'portal:o1';

  it("replays one delivery to its owner's endpoint, leaving the event's delivery to another owner's dead", async () => {
    // Prepare
    await prepareOwners();

    // Act
    const answer = await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_both', endpoint: 'acme', reason: 'fixed our receiver' }, caller: portal });

    // Assess: the audit keeps the caller; the holder reads who operated as an operator.
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ eventId: 'evt_both', endpoint: 'acme', state: 'pending', operator: OPERATOR_SHOWN_TO_PORTAL, caller: OPERATOR_SHOWN_TO_PORTAL });
    expect((await bed.ledger.get({ eventId: 'evt_both', endpoint: 'acme' }))?.audit).toEqual([expect.objectContaining({ action: 'replay', operator: portal, caller: portal })]);
    expect((await bed.ledger.get({ eventId: 'evt_both', endpoint: 'beta' }))?.state).toBe('dead');
    const [message] = await bed.receive(bed.target.queueUrl!, 1);
    expect(endpointOf(message!)).toBe('acme');
  });

  it("counts and replays its owner's endpoint in bulk, dry runs too", async () => {
    // Prepare
    await prepareOwners();
    const window = { endpoint: 'acme', deadSince: '2026-12-01T09:00:00Z', until: '2026-12-01T11:00:00Z' };

    // Act
    const dryRun = await bed.call({ method: 'POST', path: '/v1/replays', body: { ...window, dryRun: true, reason: 'how many' }, caller: portal });
    const bulk = await bed.call({ method: 'POST', path: '/v1/replays', body: { ...window, reason: 'all of ours' }, caller: portal });

    // Assess
    expect(dryRun.status).toBe(200);
    expect(dryRun.body).toMatchObject({ endpoint: 'acme', dryRun: true, matched: 1, replayed: 0 });
    expect(bulk.status).toBe(202);
    expect(bulk.body).toMatchObject({ endpoint: 'acme', matched: 1, replayed: 1, operator: OPERATOR_SHOWN_TO_PORTAL });
    expect((await bed.ledger.get({ eventId: 'evt_both', endpoint: 'beta' }))?.state).toBe('dead');
  });

  it("refuses, with 403 and nothing replayed, an event without its endpoint, another owner's endpoint, and one no registry holds", async () => {
    // Prepare
    await prepareOwners();

    // Act
    const refused = [
      await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_both', reason: 'all of it' }, caller: portal }),
      await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_both', endpoint: 'beta', reason: 'theirs' }, caller: portal }),
      await bed.call({ method: 'POST', path: '/v1/replays', body: { endpoint: 'beta', deadSince: '2026-12-01', dryRun: true, reason: 'count theirs' }, caller: portal }),
      await bed.call({ method: 'POST', path: '/v1/replays', body: { eventId: 'evt_gone', endpoint: 'gone', reason: 'no one' }, caller: portal }),
    ];

    // Assess
    for (const answer of refused) {
      expect(answer.status).toBe(403);
      expect(answer.body.type).toBe('https://handoff.dev/problems/out-of-scope');
    }
    for (const [eventId, endpoint] of [['evt_both', 'acme'], ['evt_both', 'beta'], ['evt_gone', 'gone']] as const) {
      expect((await bed.ledger.get({ eventId, endpoint }))?.state).toBe('dead');
    }
    expect(await bed.isEmpty(bed.target.queueUrl!)).toBe(true);
  });

  it('still names bad input in a 400 before anything else', async () => {
    const answer = await bed.call({ method: 'POST', path: '/v1/replays', body: { endpoint: 'acme', reason: '' }, caller: portal });

    expect(answer.status).toBe(400);
    expect(answer.body.errors.map((e: { path: string }) => e.path)).toEqual(['reason', 'deadSince']);
  });
});

describe('POST /v1/portal-links', () => {
  it("answers a link to the console for one owner, whose token this deployment's key verifies", async () => {
    const answer = await bed.call({ method: 'POST', path: '/v1/portal-links', headers: { host: 'api.example' }, body: { owner: 'merchant-42', ttlSeconds: 600 } });

    expect(answer.status).toBe(201);
    expect(answer.body.owner).toBe('merchant-42');
    expect(answer.body.url).toBe(`https://api.example/console/#portal=${answer.body.token}`);
    const key = portalKeyFrom((bed.target.sealKey as { key: string }).key);
    const verified = verifyPortalToken(answer.body.token, key, Date.now());
    expect(verified.owner).toBe('merchant-42');
    expect(answer.body.expiresAt).toBe(new Date(verified.expiresAtMs).toISOString());
  });

  it('shows the link once: a repeat with the same Idempotency-Key says it was shown', async () => {
    const send = () => bed.call({ method: 'POST', path: '/v1/portal-links', headers: { 'idempotency-key': 'link-42' }, body: { owner: 'merchant-42' } });

    const first = await send();
    const repeat = await send();

    expect(first.body.token).toEqual(expect.any(String));
    expect(repeat).toMatchObject({ status: 201, body: { owner: 'merchant-42', expiresAt: first.body.expiresAt, urlShown: true, tokenShown: true } });
    expect(repeat.body.token).toBeUndefined();
    expect(repeat.body.url).toBeUndefined();
  });

  it('names a bad owner and a TTL over 24 hours', async () => {
    const answer = await bed.call({ method: 'POST', path: '/v1/portal-links', body: { owner: 'has space', ttlSeconds: 86_401 } });

    expect(answer.status).toBe(400);
    expect(answer.body.errors.map((e: { path: string }) => e.path)).toEqual(['owner', 'ttlSeconds']);
  });
});
