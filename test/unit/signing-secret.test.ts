/**
 * A signing secret is accepted only when `standardwebhooks` can sign with it and its key is long
 * enough; refusals never show the secret.
 */
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
