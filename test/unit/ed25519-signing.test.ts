/**
 * Standard Webhooks' asymmetric scheme (docs/contract.md §18): a `whsk_` key signs `v1a,<base64>`,
 * the ed25519 signature of `<id>.<timestamp>.<body>`, which node:crypto's own `verify(null, …)`
 * accepts with the `whpk_` public key, and nothing else does. The key's serialization is Svix's (the
 * seed, then the public key); a key pair from Svix's own tests and RFC 8032's first test vector hold
 * it to that. A rotation signs under both keys, of either scheme.
 */
import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { SigningSecretError } from '../../lib/errors';
import { generateSecret } from '../../lib/endpoints/secret';
import { createSigner, ed25519Values, publicKeyOf, rawEd25519Key, RequestSigner, schemeOfSecret } from '../../lib/webhook/signing-secret';
import { thrownBy } from '../helpers/thrown';

/** A key pair from Svix's server tests (svix-webhooks, server/svix-server/src/core/types): its secret key, and the public key it states for it. */
const SVIX_SECRET_KEY = 'whsk_6Xb/dCcHpPea21PS1N9VY/NZW723CEc77N4rJCubMbfVKIDij2HKpMKkioLlX0dRqSKJp4AJ6p9lMicMFs6Kvg==';
const SVIX_PUBLIC_KEY = 'whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4=';
/** RFC 8032 §7.1, TEST 1: a secret key (the seed) and its public key. */
const RFC8032_SEED = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
const RFC8032_PUBLIC = Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex');
const HMAC_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** The public key of a `whpk_` value as node:crypto takes it: independent of the code under test. */
function nodePublicKey(whpk: string) {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(whpk.slice('whpk_'.length), 'base64').toString('base64url') }, format: 'jwk' });
}

/** Whether node:crypto verifies a `v1a,…` entry over what Standard Webhooks signs. */
function nodeVerifies(entry: string, whpk: string, id: string, seconds: number, body: string): boolean {
  if (!entry.startsWith('v1a,')) return false;
  return verify(null, Buffer.from(`${id}.${seconds}.${body}`, 'utf8'), nodePublicKey(whpk), Buffer.from(entry.slice(4), 'base64'));
}

const refusal = (secret: string) => thrownBy(() => createSigner(secret), SigningSecretError);

describe('the ed25519 key (whsk_, whpk_)', () => {
  it("reads Svix's key pair and gives the public key Svix states for it", () => {
    expect(publicKeyOf(SVIX_SECRET_KEY)).toBe(SVIX_PUBLIC_KEY);
    expect(schemeOfSecret(SVIX_SECRET_KEY)).toBe('ed25519');
  });

  it("derives RFC 8032's public key from its seed, given alone or with its public key", () => {
    const seedOnly = `whsk_${RFC8032_SEED.toString('base64')}`;
    const pair = ed25519Values(RFC8032_SEED, RFC8032_PUBLIC);

    expect(publicKeyOf(seedOnly)).toBe(`whpk_${RFC8032_PUBLIC.toString('base64')}`);
    expect(pair).toEqual({ secret: `whsk_${Buffer.concat([RFC8032_SEED, RFC8032_PUBLIC]).toString('base64')}`, publicKey: `whpk_${RFC8032_PUBLIC.toString('base64')}` });
    // Ed25519 is deterministic: the seed alone and the pair sign alike.
    const at = new Date(1_674_087_231_000);
    expect(createSigner(seedOnly).sign('msg_1', at, '{}')).toBe(createSigner(pair.secret).sign('msg_1', at, '{}'));
  });

  it('generates a key pair in that form: 64 bytes, the second half the seed’s public key', () => {
    const secret = generateSecret('ed25519');
    const raw = Buffer.from(secret.slice('whsk_'.length), 'base64');

    expect(secret).toMatch(/^whsk_[A-Za-z0-9+/]{86}==$/);
    expect(raw).toHaveLength(64);
    expect(publicKeyOf(secret)).toBe(`whpk_${raw.subarray(32).toString('base64')}`);
    expect(generateSecret('ed25519')).not.toBe(secret);
    expect(generateSecret()).toMatch(/^whsec_/);
  });

  it('takes node:crypto’s own key pair as it holds it', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const { seed, publicKey: raw } = rawEd25519Key(privateKey);
    const values = ed25519Values(seed, raw);

    expect(publicKeyOf(values.secret)).toBe(values.publicKey);
    expect(publicKey.export({ format: 'jwk' }).x).toBe(raw.toString('base64url'));
  });

  it.each([
    ['whsk_', 'empty'],
    ['whsk_!!!!', 'not-base64'],
    ['whsk_AAAA', 'wrong-length'],
    [`whsk_${Buffer.alloc(48).toString('base64')}`, 'wrong-length'],
    [`whsk_${Buffer.concat([RFC8032_SEED, Buffer.alloc(32, 7)]).toString('base64')}`, 'key-mismatch'],
  ])('refuses %j as %s, never quoting the key', (secret, code) => {
    const error = refusal(secret);

    expect(error.code).toBe(code);
    expect(error.message).not.toContain(secret.slice(5, 20) || 'never-empty');
  });
});

describe('the v1a signature', () => {
  it("is node:crypto's ed25519 signature of <id>.<timestamp>.<body>, which verify(null, …) accepts with the public key", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9_.:-]{1,40}$/),
        fc.integer({ min: 0, max: 4_102_444_800 }),
        fc.string({ unit: 'grapheme', maxLength: 200 }),
        (id, seconds, body) => {
          const entry = createSigner(SVIX_SECRET_KEY).sign(id, new Date(seconds * 1000 + 999), body);

          expect(entry).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
          expect(nodeVerifies(entry, SVIX_PUBLIC_KEY, id, seconds, body)).toBe(true);
          // Another body, time or ID does not verify, nor another key.
          expect(nodeVerifies(entry, SVIX_PUBLIC_KEY, id, seconds, `${body} `)).toBe(false);
          expect(nodeVerifies(entry, SVIX_PUBLIC_KEY, id, seconds + 1, body)).toBe(false);
          expect(nodeVerifies(entry, `whpk_${RFC8032_PUBLIC.toString('base64')}`, id, seconds, body)).toBe(false);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('equals what node:crypto signs with the same key (ed25519 is deterministic)', () => {
    const privateKey = generateKeyPairSync('ed25519').privateKey;
    const { seed, publicKey } = rawEd25519Key(privateKey);
    const body = '{"id":"evt_42","status":"delivered"}';

    const ours = createSigner(ed25519Values(seed, publicKey).secret).sign('evt_42', new Date(1_700_000_000_000), body);

    expect(ours).toBe(`v1a,${sign(null, Buffer.from(`evt_42.1700000000.${body}`), privateKey).toString('base64')}`);
  });

  it('is no v1 signature: the standardwebhooks library (v1 only) does not take it for one', () => {
    const now = new Date();
    const seconds = String(Math.floor(now.getTime() / 1000));
    const header = createSigner(SVIX_SECRET_KEY).sign('evt_1', now, '{}');
    const verifyWith = (signature: string) => () => new Webhook(HMAC_SECRET).verify('{}', { 'webhook-id': 'evt_1', 'webhook-timestamp': seconds, 'webhook-signature': signature });

    expect(verifyWith(header)).toThrow(/No matching signature/);
    expect(verifyWith(createSigner(HMAC_SECRET).sign('evt_1', now, '{}'))).not.toThrow();
  });
});

describe('a rotation signs with both keys, of either scheme', () => {
  const NEW_KEY = generateSecret('ed25519');
  const UNTIL = 2_000_000;

  it('from HMAC to ed25519: v1a under the new key, then v1 under the old secret, each verifying on its own', () => {
    const signer = new RequestSigner(NEW_KEY, { secret: HMAC_SECRET, untilMs: UNTIL });
    const header = signer.sign('evt_1', 1_000_000, '{"a":1}');
    const [v1a, v1] = header.split(' ');

    expect(header.split(' ')).toHaveLength(2);
    expect(nodeVerifies(v1a!, publicKeyOf(NEW_KEY), 'evt_1', 1000, '{"a":1}')).toBe(true);
    expect(v1).toBe(new Webhook(HMAC_SECRET).sign('evt_1', new Date(1_000_000), '{"a":1}'));
  });

  it('between two ed25519 keys: two v1a entries, the new first; after the overlap the new one alone', () => {
    const signer = new RequestSigner(NEW_KEY, { secret: SVIX_SECRET_KEY, untilMs: UNTIL });
    const during = signer.sign('evt_1', UNTIL - 1000, '{}').split(' ');
    const after = signer.sign('evt_1', UNTIL, '{}').split(' ');

    expect(nodeVerifies(during[0]!, publicKeyOf(NEW_KEY), 'evt_1', (UNTIL - 1000) / 1000, '{}')).toBe(true);
    expect(nodeVerifies(during[1]!, SVIX_PUBLIC_KEY, 'evt_1', (UNTIL - 1000) / 1000, '{}')).toBe(true);
    expect(after).toHaveLength(1);
    expect(nodeVerifies(after[0]!, publicKeyOf(NEW_KEY), 'evt_1', UNTIL / 1000, '{}')).toBe(true);
  });
});
