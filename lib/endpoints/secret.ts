/**
 * An endpoint's signing secret as `handoff endpoint add` and `rotate-secret` make one when none is
 * given: `whsec_` and the base64 of 32 random bytes, the Standard Webhooks form, longer than the
 * 24-byte minimum the signer enforces (lib/webhook/signing-secret.ts).
 */
import { randomBytes } from 'node:crypto';
import { SECRET_PREFIX } from '../webhook/signing-secret';

export const GENERATED_SECRET_BYTES = 32;

export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(GENERATED_SECRET_BYTES).toString('base64')}`;
}
