import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { startDemoReceiver, type DemoReceiver } from '../../sandbox/demo-receiver';
import { TEST_SECRET as SECRET } from '../helpers/secrets';

let receiver: DemoReceiver | undefined;

afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

function post(url: string, eventId: string, body: string, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': eventId, 'idempotency-key': eventId, ...headers },
    body,
  });
}

function signed(eventId: string, body: string, secret = SECRET): Record<string, string> {
  const timestamp = new Date();
  return {
    'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(eventId, timestamp, body),
  };
}

describe('Demo receiver', () => {
  it('applies an event once and answers 200 to its duplicate', async () => {
    // Prepare
    const lines: string[] = [];
    receiver = await startDemoReceiver({ log: (line) => lines.push(line) });
    const body = JSON.stringify({ id: 'evt_1', status: 'packed' });

    // Act
    const first = await post(receiver.url, 'evt_1', body);
    const again = await post(receiver.url, 'evt_1', body);

    // Assess
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(receiver.applied).toEqual(['evt_1']);
    expect(lines).toEqual(['received evt_1 (first time)', 'received evt_1 (duplicate)']);
  });

  it('accepts a correctly signed request when a secret is set', async () => {
    receiver = await startDemoReceiver({ secret: SECRET });
    const body = JSON.stringify({ id: 'evt_2' });

    const response = await post(receiver.url, 'evt_2', body, signed('evt_2', body));

    expect(response.status).toBe(200);
    expect(receiver.applied).toEqual(['evt_2']);
  });

  it.each([
    ['no signature', () => ({})],
    ['a signature made with another secret', (body: string) => signed('evt_3', body, 'whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldA==')],
  ])('refuses with 401 a request with %s when a secret is set', async (_, headers) => {
    receiver = await startDemoReceiver({ secret: SECRET });
    const body = JSON.stringify({ id: 'evt_3' });

    const response = await post(receiver.url, 'evt_3', body, headers(body));

    expect(response.status).toBe(401);
    expect(receiver.applied).toEqual([]);
  });

  it('refuses with 400 a body whose id is not the webhook-id', async () => {
    receiver = await startDemoReceiver();

    const response = await post(receiver.url, 'evt_4', JSON.stringify({ id: 'evt_other' }));

    expect(response.status).toBe(400);
    expect(receiver.applied).toEqual([]);
  });
});

describe('Demo receiver on the receiver kit', () => {
  it('answers a duplicate with the first answer, byte for byte, marked as replayed', async () => {
    receiver = await startDemoReceiver({ secret: SECRET });
    const body = JSON.stringify({ id: 'evt_5' });

    const first = await post(receiver.url, 'evt_5', body, signed('evt_5', body));
    const again = await post(receiver.url, 'evt_5', body, signed('evt_5', body));

    expect(await first.text()).toBe('{"received":"evt_5"}');
    expect([again.status, again.headers.get('idempotent-replayed'), await again.text()]).toEqual([200, 'true', '{"received":"evt_5"}']);
    expect(receiver.applied).toEqual(['evt_5']);
  });

  it('refuses with 401 a correctly signed request whose timestamp is over 5 minutes old', async () => {
    receiver = await startDemoReceiver({ secret: SECRET });
    const body = JSON.stringify({ id: 'evt_6' });
    const sixMinutesAgo = new Date(Date.now() - 6 * 60_000);
    const stale = {
      'webhook-timestamp': String(Math.floor(sixMinutesAgo.getTime() / 1000)),
      'webhook-signature': new Webhook(SECRET).sign('evt_6', sixMinutesAgo, body),
    };

    const response = await post(receiver.url, 'evt_6', body, stale);

    expect(response.status).toBe(401);
    expect(receiver.applied).toEqual([]);
  });
});
