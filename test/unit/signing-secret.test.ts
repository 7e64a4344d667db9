/**
 * A signing secret is accepted only when it is base64 as Standard Webhooks reads it and its key is
 * long enough; refusals never show the secret. The signature equals the standardwebhooks library's.
 */
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { createSigner, MIN_SIGNING_KEY_BYTES } from '../../lib/webhook/signing-secret';
import { SigningSecretError } from '../../lib/errors';
import { thrownBy } from '../helpers/thrown';

/** 24 bytes of key, base64. */
const KEY_24 = 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** The SigningSecretError `createSigner` refuses `secret` with. */
const refusal = (secret: string) => thrownBy(() => createSigner(secret), SigningSecretError);

describe('Function: createSigner', () => {
  it('signs with a whsec_ secret of 24 bytes', () => {
    const signature = createSigner(`whsec_${KEY_24}`).sign('evt_1', new Date(0), '{}');

    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  });

  it('accepts the bare base64 key (what Secrets Manager generates) and signs the same as whsec_', () => {
    const at = new Date(1_000);

    expect(createSigner(KEY_24).sign('evt_1', at, '{}')).toBe(createSigner(`whsec_${KEY_24}`).sign('evt_1', at, '{}'));
  });

  it.each([
    ['whsec_abc', 'not-base64'],
    ['whsec_!!!!', 'not-base64'],
    ['whsec_', 'empty'],
    ['', 'empty'],
    ['whsec_AAAA', 'too-short'],
    ['AAAA', 'too-short'],
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS=', 'too-short'],
  ])('refuses %j as %s', (secret, code) => {
    expect(refusal(secret).code).toBe(code);
  });

  it('says how long the key was and how long it must be, without the key', () => {
    const error = refusal('whsec_AAAA');

    expect(error.message).toBe(`decodes to a 3-byte key; at least ${MIN_SIGNING_KEY_BYTES} bytes are needed`);
    expect(error.message).not.toContain('AAAA');
  });
});

describe('the signature is Standard Webhooks’ own', () => {
  it('equals what the standardwebhooks library signs, and verifies with it, for any key, ID, time and body', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: MIN_SIGNING_KEY_BYTES, maxLength: 64 }),
        fc.boolean(),
        fc.boolean(),
        fc.stringMatching(/^[A-Za-z0-9_.-]{1,40}$/),
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        fc.string({ unit: 'grapheme', maxLength: 200 }),
        (key, prefixed, unpadded, webhookId, atMs, text) => {
          // A body as handoff sends one: JSON (the library's verify parses it).
          const body = JSON.stringify({ text });
          const base64 = Buffer.from(key).toString('base64');
          const secret = `${prefixed ? 'whsec_' : ''}${unpadded ? base64.replace(/=+$/, '') : base64}`;
          const at = new Date(atMs);
          const signature = createSigner(secret).sign(webhookId, at, body);

          expect(signature).toBe(new Webhook(secret).sign(webhookId, at, body));
          // The library verifies only a recent timestamp: a signature made now.
          const now = new Date();
          const headers = { 'webhook-id': webhookId, 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': createSigner(secret).sign(webhookId, now, body) };
          expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
        },
      ),
    );
  });

  it('refuses a length no key encodes to (one character past a group of four), which decoders read differently', () => {
    expect(refusal(`whsec_${KEY_24}A`).code).toBe('not-base64');
  });
});
