/**
 * The signing secret, checked by building the signer itself: whatever `standardwebhooks` would
 * refuse on the first request is refused where the secret is read (sandbox start, the handler's
 * cold start or its first Secrets Manager read, stack synth), never once per batch.
 *
 * Messages name the problem, never the secret or any part of it.
 */
import { Webhook } from 'standardwebhooks';

/** Standard Webhooks' shortest key; a shorter HMAC key is guessable. */
export const MIN_SIGNING_KEY_BYTES = 24;
export const SECRET_PREFIX = 'whsec_';

export type SigningSecretProblem = 'empty' | 'not-base64' | 'too-short';

/** A secret that cannot sign. Decide on `code`; the message never contains the secret. */
export class SigningSecretError extends Error {
  override readonly name = 'SigningSecretError';
  constructor(
    readonly code: SigningSecretProblem,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The signer for a secret: `whsec_<base64>` or the bare base64 key (what Secrets Manager can
 * generate). @throws SigningSecretError when the key is empty, not base64, or under 24 bytes.
 */
export function createSigner(secret: string): Webhook {
  const base64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (base64 === '') throw new SigningSecretError('empty', 'has no key');
  let signer: Webhook;
  try {
    signer = new Webhook(secret);
  } catch {
    // The library's own messages are safe, but ours say what to fix.
    throw new SigningSecretError('not-base64', 'is not base64 (A-Z a-z 0-9 + /, padded with = to a multiple of 4)');
  }
  const bytes = Buffer.from(base64, 'base64').length;
  if (bytes < MIN_SIGNING_KEY_BYTES) {
    throw new SigningSecretError('too-short', `decodes to a ${bytes}-byte key; at least ${MIN_SIGNING_KEY_BYTES} bytes are needed`);
  }
  return signer;
}
