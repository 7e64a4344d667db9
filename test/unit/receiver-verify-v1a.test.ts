/**
 * The receiver kit verifies `v1a` (docs/contract.md §14, §18): a `whpk_` public key accepts the
 * ed25519 signature of `<webhook-id>.<webhook-timestamp>.<body>`, beside `whsec_` secrets for `v1`,
 * each key only the entries of its own scheme; across a rotation, either key. The signatures here
 * are made with node:crypto directly, not with handoff's signer, so the kit is checked against the
 * scheme, not against itself; one test then holds handoff's signer to the kit.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { ReceiverConfigError, WebhookVerificationError } from '../../lib/receiver/errors';
import { createReceiver } from '../../lib/receiver/receiver';
import { MemoryIdempotencyStore } from '../../lib/receiver/memory-store';
import { createVerifier } from '../../lib/receiver/verify';
import { ed25519Values, rawEd25519Key, RequestSigner } from '../../lib/webhook/signing-secret';

const NOW_MS = Date.UTC(2026, 11, 2, 10, 15, 0);
const SECONDS = NOW_MS / 1000;
const BODY = '{"id":"evt_42","status":"delivered"}';
const HMAC_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

interface Pair {
  readonly privateKey: KeyObject;
  /** `whpk_…` */
  readonly publicKey: string;
  /** `whsk_…` */
  readonly secret: string;
}

function keyPair(): Pair {
  const { privateKey } = generateKeyPairSync('ed25519');
  const { seed, publicKey } = rawEd25519Key(privateKey);
  return { privateKey, ...ed25519Values(seed, publicKey) };
}

/** A `v1a,` entry made with node:crypto alone. */
function v1a(pair: Pair, id = 'evt_42', seconds = SECONDS, body = BODY): string {
  return `v1a,${sign(null, Buffer.from(`${id}.${seconds}.${body}`), pair.privateKey).toString('base64')}`;
}

function lookup(signature: string, id = 'evt_42', seconds = SECONDS) {
  const values: Record<string, string> = { 'webhook-id': id, 'webhook-timestamp': String(seconds), 'webhook-signature': signature };
  return (name: string) => values[name];
}

function problemOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.problem;
    throw error;
  }
}

describe('Function: createVerifier, with an ed25519 public key', () => {
  const key = keyPair();
  const other = keyPair();

  it('accepts a v1a signature the public key verifies', () => {
    const verify = createVerifier({ secrets: [key.publicKey] });

    expect(verify(lookup(v1a(key)), BODY, NOW_MS)).toEqual({ webhookId: 'evt_42', timestampSeconds: SECONDS });
  });

  it('refuses one made with another key, over another body, ID or time', () => {
    const verify = createVerifier({ secrets: [key.publicKey] });

    expect(problemOf(() => verify(lookup(v1a(other)), BODY, NOW_MS))).toBe('bad-signature');
    expect(problemOf(() => verify(lookup(v1a(key)), `${BODY} `, NOW_MS))).toBe('bad-signature');
    expect(problemOf(() => verify(lookup(v1a(key), 'evt_43'), BODY, NOW_MS))).toBe('bad-signature');
    expect(problemOf(() => verify(lookup(v1a(key, 'evt_42', SECONDS + 1)), BODY, NOW_MS))).toBe('bad-signature');
  });

  it('takes each key for its own scheme: a public key no v1 entry, a secret no v1a entry', () => {
    const hmac = new Webhook(HMAC_SECRET).sign('evt_42', new Date(NOW_MS), BODY);

    expect(problemOf(() => createVerifier({ secrets: [key.publicKey] })(lookup(hmac), BODY, NOW_MS))).toBe('bad-signature');
    expect(problemOf(() => createVerifier({ secrets: [HMAC_SECRET] })(lookup(v1a(key)), BODY, NOW_MS))).toBe('bad-signature');
    // A v1a entry with the v1 tag is no v1 signature either.
    expect(problemOf(() => createVerifier({ secrets: [key.publicKey] })(lookup(v1a(key).replace('v1a,', 'v1,')), BODY, NOW_MS))).toBe('bad-signature');
  });

  it('across a rotation, from HMAC to ed25519: either key verifies the request carrying both', () => {
    const header = `${v1a(key)} ${new Webhook(HMAC_SECRET).sign('evt_42', new Date(NOW_MS), BODY)}`;

    for (const secrets of [[key.publicKey], [HMAC_SECRET], [key.publicKey, HMAC_SECRET]]) {
      expect(createVerifier({ secrets })(lookup(header), BODY, NOW_MS).webhookId).toBe('evt_42');
    }
  });

  it('across a rotation between two ed25519 keys: either public key', () => {
    const header = `${v1a(other)} ${v1a(key)}`;

    expect(createVerifier({ secrets: [key.publicKey] })(lookup(header), BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(createVerifier({ secrets: [other.publicKey] })(lookup(header), BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(problemOf(() => createVerifier({ secrets: [keyPair().publicKey] })(lookup(header), BODY, NOW_MS))).toBe('bad-signature');
  });

  it("verifies what handoff's signer sends, across a rotation of either kind", () => {
    const fromHmac = new RequestSigner(key.secret, { secret: HMAC_SECRET, untilMs: NOW_MS + 1 }).sign('evt_42', NOW_MS, BODY);
    const fromKey = new RequestSigner(key.secret, { secret: other.secret, untilMs: NOW_MS + 1 }).sign('evt_42', NOW_MS, BODY);

    expect(createVerifier({ secrets: [key.publicKey] })(lookup(fromHmac), BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(createVerifier({ secrets: [HMAC_SECRET] })(lookup(fromHmac), BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(createVerifier({ secrets: [other.publicKey] })(lookup(fromKey), BODY, NOW_MS).webhookId).toBe('evt_42');
  });

  it('checks the timestamp first, as for v1', () => {
    const stale = SECONDS - 301;

    expect(problemOf(() => createVerifier({ secrets: [key.publicKey] })(lookup(v1a(key, 'evt_42', stale), 'evt_42', stale), BODY, NOW_MS))).toBe('stale-timestamp');
  });

  it.each([
    ['whpk_', 'no key'],
    ['whpk_AAAA', 'three bytes'],
    [`whpk_${Buffer.alloc(33).toString('base64')}`, '33 bytes'],
    ['whpk_!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!=', 'not base64'],
  ])('refuses a public key %j (%s) when made, naming its place', (value) => {
    expect(() => createVerifier({ secrets: [HMAC_SECRET, value] })).toThrow(ReceiverConfigError);
    expect(() => createVerifier({ secrets: [HMAC_SECRET, value] })).toThrow(/secrets\[1\] is not an ed25519 public key/);
  });

  it('answers through the receiver: 200 for a request its public key verifies, 401 for one it does not', async () => {
    const receive = createReceiver({ secrets: [key.publicKey], store: new MemoryIdempotencyStore(), action: () => ({ status: 200, body: 'ok' }), clock: () => NOW_MS });
    const request = (signature: string) => ({
      method: 'POST',
      headers: { 'webhook-id': 'evt_42', 'webhook-timestamp': String(SECONDS), 'webhook-signature': signature, 'content-type': 'application/json' },
      body: BODY,
    });

    expect((await receive(request(v1a(key)))).status).toBe(200);
    expect((await receive(request(v1a(other)))).status).toBe(401);
  });
});
