/**
 * The HTTP sender against a real server on loopback, for receivers behind locks (docs/contract.md
 * §18): an endpoint's headers arrive as given, after the request's own (§3), which none of them can
 * replace, however they are spelled; an ed25519 key signs `v1a`, which node:crypto and the receiver
 * kit verify with the public key, and a rotation from HMAC sends `v1a` and `v1` together.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPublicKey, verify } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import pkg from '../../package.json' with { type: 'json' };
import { generateSecret } from '../../lib/endpoints/secret';
import { createVerifier } from '../../lib/receiver/verify';
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../../lib/webhook/endpoint-guard';
import { HttpWebhookSender, type HttpWebhookSenderOptions } from '../../lib/webhook/http-sender';
import { publicKeyOf } from '../../lib/webhook/signing-secret';

const ATTEMPT_MS = Math.floor(Date.now() / 1000) * 1000 + 250;
const SECONDS = Math.floor(ATTEMPT_MS / 1000);
const BODY = '{"data":{"carrier":"acme"},"id":"evt_42","occurredAt":"2026-12-02T10:15:00Z","shipmentId":"shp_1001","status":"delivered"}';
const HMAC_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

interface Received {
  readonly headers: http.IncomingHttpHeaders;
  /** Header names and values as sent, in order (repeats kept). */
  readonly raw: readonly string[];
  readonly body: string;
}

const servers: http.Server[] = [];
const senders: HttpWebhookSender[] = [];

afterEach(async () => {
  for (const sender of senders.splice(0)) sender.close();
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())))));
});

async function startServer(): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, raw: req.rawHeaders, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/in`, received };
}

function sender(options: Partial<HttpWebhookSenderOptions> & { url: string }): HttpWebhookSender {
  const created = new HttpWebhookSender({ timeoutMs: 5_000, now: () => ATTEMPT_MS, guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS), ...options });
  senders.push(created);
  return created;
}

/** How many times a request carries header `name` (any case). */
function count(received: Received, name: string): number {
  return received.raw.filter((value, i) => i % 2 === 0 && value.toLowerCase() === name).length;
}

describe('HttpWebhookSender: an endpoint’s headers', () => {
  it('sends each as given, on every attempt', async () => {
    const server = await startServer();
    const client = sender({ url: server.url, headers: { 'X-Tenant': 'acme-eu', Authorization: 'Bearer t0k3n with spaces' } });

    await client.send({ eventId: 'evt_42', body: BODY });
    await client.send({ eventId: 'evt_42', body: BODY });

    for (const received of server.received) {
      expect(received.headers['x-tenant']).toBe('acme-eu');
      expect(received.headers.authorization).toBe('Bearer t0k3n with spaces');
    }
  });

  it('never replaces or doubles the request’s own headers, whatever an item holds', async () => {
    const server = await startServer();
    const client = sender({
      url: server.url,
      secret: HMAC_SECRET,
      headers: {
        'Content-Type': 'text/plain',
        'WEBHOOK-ID': 'forged',
        'webhook-signature': 'v1,forged',
        'Idempotency-Key': 'forged',
        'User-Agent': 'forged',
        Host: 'elsewhere.example',
        'Transfer-Encoding': 'chunked',
        'X-Kept': 'yes',
      },
    });

    const { outcome } = await client.send({ eventId: 'evt_42', body: BODY });

    expect(outcome).toMatchObject({ kind: 'accepted' });
    const [received] = server.received;
    expect(received!.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': 'evt_42',
      'idempotency-key': 'evt_42',
      'user-agent': `handoff/${pkg.version}`,
      host: new URL(server.url).host,
      'content-length': String(Buffer.byteLength(BODY)),
      'x-kept': 'yes',
    });
    expect(received!.headers['transfer-encoding']).toBeUndefined();
    for (const name of ['content-type', 'webhook-id', 'webhook-signature', 'idempotency-key', 'user-agent', 'host']) expect(count(received!, name), name).toBe(1);
    expect(new Webhook(HMAC_SECRET).verify(received!.body, received!.headers as Record<string, string>)).toEqual(JSON.parse(BODY));
  });
});

describe('HttpWebhookSender: an ed25519 key', () => {
  const KEY = generateSecret('ed25519');

  it('signs v1a, which node:crypto verifies with the public key, and so does the receiver kit', async () => {
    const server = await startServer();

    await sender({ url: server.url, secret: KEY }).send({ eventId: 'evt_42', body: BODY });

    const [received] = server.received;
    const signature = String(received!.headers['webhook-signature']);
    expect(signature).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(publicKeyOf(KEY).slice(5), 'base64').toString('base64url') }, format: 'jwk' });
    expect(verify(null, Buffer.from(`evt_42.${SECONDS}.${received!.body}`), publicKey, Buffer.from(signature.slice(4), 'base64'))).toBe(true);
    const kit = createVerifier({ secrets: [publicKeyOf(KEY)] });
    expect(kit((name) => received!.headers[name] as string | undefined, received!.body, ATTEMPT_MS)).toEqual({ webhookId: 'evt_42', timestampSeconds: SECONDS });
  });

  it('during a rotation from HMAC sends v1a and v1, each verified with its own key; afterwards v1a alone', async () => {
    const server = await startServer();
    const client = sender({ url: server.url, secret: KEY, previousSecret: HMAC_SECRET, previousSecretUntil: ATTEMPT_MS + 1 });
    const after = sender({ url: server.url, secret: KEY, previousSecret: HMAC_SECRET, previousSecretUntil: ATTEMPT_MS });

    await client.send({ eventId: 'evt_42', body: BODY });
    await after.send({ eventId: 'evt_42', body: BODY });

    const [during, later] = server.received;
    const lookup = (received: Received) => (name: string) => received.headers[name] as string | undefined;
    expect(String(during!.headers['webhook-signature']).split(' ').map((entry) => entry.split(',')[0])).toEqual(['v1a', 'v1']);
    expect(createVerifier({ secrets: [publicKeyOf(KEY)] })(lookup(during!), during!.body, ATTEMPT_MS).webhookId).toBe('evt_42');
    expect(createVerifier({ secrets: [HMAC_SECRET] })(lookup(during!), during!.body, ATTEMPT_MS).webhookId).toBe('evt_42');
    expect(String(later!.headers['webhook-signature'])).toMatch(/^v1a,[^ ]+$/);
    expect(() => createVerifier({ secrets: [HMAC_SECRET] })(lookup(later!), later!.body, ATTEMPT_MS)).toThrow(/no v1 or v1a signature matches/);
  });
});
