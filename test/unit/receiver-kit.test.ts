import { describe, expect, it } from 'vitest';
import { ReceiverConfigError } from '../../lib/receiver/errors';
import { MemoryIdempotencyStore } from '../../lib/receiver/memory-store';
import { createReceiver } from '../../lib/receiver/receiver';
import { signedRequest } from '../helpers/receiver-store-contract';

const NOW_MS = Date.UTC(2026, 11, 2, 10, 15, 0);

function receiverWith(options: { unsigned?: boolean } = {}) {
  const runs: unknown[] = [];
  const receive = createReceiver({
    ...(options.unsigned ? { unsigned: true } : { secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] }),
    store: new MemoryIdempotencyStore(),
    clock: () => NOW_MS,
    action: (webhook) => {
      runs.push(webhook.payload);
      return { body: { received: webhook.webhookId } };
    },
  });
  return { receive, runs };
}

describe('Function: createReceiver', () => {
  it('gives the action the parsed payload and answers with its JSON body', async () => {
    const { receive, runs } = receiverWith();

    const response = await receive(signedRequest('evt_1', NOW_MS));

    expect(runs).toEqual([{ id: 'evt_1', status: 'delivered' }]);
    expect(response).toEqual({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"received":"evt_1"}' });
  });

  it('reads headers in any case and from a fetch Headers object', async () => {
    const { receive } = receiverWith();
    const request = signedRequest('evt_2', NOW_MS);
    const upper = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toUpperCase(), v]));

    expect((await receive({ ...request, headers: upper })).status).toBe(200);
    expect((await receive({ ...request, headers: new Headers(request.headers) })).status).toBe(200);
  });

  it('answers 405 to anything but POST', async () => {
    const { receive, runs } = receiverWith();

    const response = await receive({ ...signedRequest('evt_3', NOW_MS), method: 'GET' });

    expect(response.status).toBe(405);
    expect(runs).toEqual([]);
  });

  it('answers 400 to a signed body that is not JSON', async () => {
    const { receive, runs } = receiverWith();

    const response = await receive(signedRequest('evt_4', NOW_MS, 'not json'));

    expect([response.status, JSON.parse(response.body).error.code]).toEqual([400, 'invalid-json']);
    expect(runs).toEqual([]);
  });

  it('refuses to start without secrets unless told the receiver is unsigned', () => {
    expect(() =>
      createReceiver({ store: new MemoryIdempotencyStore(), action: () => undefined }),
    ).toThrow(new ReceiverConfigError('secrets', 'are required (or set unsigned: true, for local use only)'));
  });

  it('accepts an unsigned request when unsigned, still keyed by webhook-id', async () => {
    const { receive, runs } = receiverWith({ unsigned: true });
    const body = '{"id":"evt_5"}';

    const first = await receive({ headers: { 'webhook-id': 'evt_5' }, body });
    const repeat = await receive({ headers: { 'webhook-id': 'evt_5' }, body });
    const noId = await receive({ headers: {}, body });

    expect([first.status, repeat.status, noId.status]).toEqual([200, 200, 400]);
    expect(runs).toHaveLength(1);
  });

  it('exposes the store retention, for the retention rule', () => {
    const receive = createReceiver({ unsigned: true, store: new MemoryIdempotencyStore({ retentionSeconds: 86_400 }), action: () => undefined });

    expect(receive.retentionSeconds).toBe(86_400);
  });
});
