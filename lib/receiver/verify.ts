/**
 * Verification of a webhook's Standard Webhooks headers: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature` (space-separated entries, `v1,<base64>` and `v1a,<base64>`). Each key given
 * verifies the entries of its own scheme:
 *
 * - a secret (`whsec_<base64>` or bare base64): `v1`, HMAC-SHA256, the `standardwebhooks` library's
 *   HMAC and secret format, compared in constant time;
 * - an ed25519 public key (`whpk_<base64>` of its 32 bytes): `v1a`, the ed25519 signature of the same
 *   `<id>.<timestamp>.<body>`, checked with node:crypto. A public key holds nothing secret: a
 *   receiver that cannot keep a shared secret safe verifies with one (docs/contract.md §18).
 *
 * This adds several keys at once (a rotation, of either scheme or from one to the other: the request
 * carries a signature under each), a configurable tolerance and an injected clock.
 */
import { createPublicKey, timingSafeEqual, verify as verifySignature, type KeyObject } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { ReceiverConfigError, WebhookVerificationError } from './errors';

/** Standard Webhooks' recommended tolerance: 5 minutes either way. */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;
/** An ed25519 public key's prefix, as Standard Webhooks serializes one. */
export const PUBLIC_KEY_PREFIX = 'whpk_';

const ED25519_PUBLIC_KEY_BYTES = 32;
const ED25519_SIGNATURE_BYTES = 64;
/** At most this many entries of a `webhook-signature` are tried: a rotation sends two. */
const MAX_SIGNATURES = 10;

export interface VerifyOptions {
  /**
   * Every key currently valid, newest first during a rotation, at least one: Standard Webhooks
   * secrets (`whsec_…`), which verify `v1` signatures, and ed25519 public keys (`whpk_…`), which
   * verify `v1a` ones.
   */
  readonly secrets: readonly string[];
  /** How far the timestamp may be from now, either way. Default 300. */
  readonly toleranceSeconds?: number;
}

export interface VerifiedWebhook {
  readonly webhookId: string;
  /** Unix seconds of this attempt, as signed. */
  readonly timestampSeconds: number;
}

/** Header lookup by lower-case name; the adapters normalise to this. */
export type HeaderLookup = (name: string) => string | undefined;

/** One key, checking the entries of its scheme against what was signed. */
type Check = (webhookId: string, at: Date, body: string, offered: Offered) => boolean;

/** The signatures a request offers, decoded, by scheme. */
interface Offered {
  readonly v1: readonly Buffer[];
  readonly v1a: readonly Buffer[];
}

/**
 * A verifier for a fixed set of keys. Keys are decoded once, here, so a malformed one fails at
 * start-up, not on the first request.
 * @throws ReceiverConfigError
 */
export function createVerifier(options: VerifyOptions): (header: HeaderLookup, body: string, nowMs: number) => VerifiedWebhook {
  if (options.secrets.length === 0) throw new ReceiverConfigError('secrets', 'must hold at least one secret');
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isInteger(toleranceSeconds) || toleranceSeconds < 1) {
    throw new ReceiverConfigError('toleranceSeconds', `must be a positive whole number, got ${toleranceSeconds}`);
  }
  const checks = options.secrets.map((secret, index) => (secret.startsWith(PUBLIC_KEY_PREFIX) ? publicKeyCheck(secret, index) : secretCheck(secret, index)));

  return (header, body, nowMs) => {
    const webhookId = header('webhook-id');
    const timestampText = header('webhook-timestamp');
    const signatures = header('webhook-signature');
    if (!webhookId || !timestampText || !signatures) {
      throw new WebhookVerificationError('missing-header', 'webhook-id, webhook-timestamp and webhook-signature are required');
    }
    if (!/^\d{1,12}$/.test(timestampText)) {
      throw new WebhookVerificationError('bad-timestamp', 'webhook-timestamp must be Unix seconds');
    }
    const timestampSeconds = Number(timestampText);
    const skewSeconds = Math.abs(Math.floor(nowMs / 1000) - timestampSeconds);
    // Checked before the signature: a captured request replayed later fails here whatever it carries.
    if (skewSeconds > toleranceSeconds) {
      throw new WebhookVerificationError('stale-timestamp', `webhook-timestamp is ${skewSeconds} s from now, over the ${toleranceSeconds} s tolerance`);
    }
    const offered = offeredSignatures(signatures);
    const at = new Date(timestampSeconds * 1000);
    if (checks.some((check) => check(webhookId, at, body, offered))) return { webhookId, timestampSeconds };
    throw new WebhookVerificationError('bad-signature', 'no v1 or v1a signature matches the configured secrets and public keys');
  };
}

/** The entries of a `webhook-signature`, by scheme; entries of other versions are passed over. */
function offeredSignatures(header: string): Offered {
  const entries = header.split(' ').slice(0, MAX_SIGNATURES);
  return {
    v1: entries.filter((entry) => entry.startsWith('v1,')).map((entry) => Buffer.from(entry.slice(3))),
    v1a: entries.filter((entry) => entry.startsWith('v1a,')).map((entry) => Buffer.from(entry.slice(4), 'base64')),
  };
}

/** A `whsec_` secret: `v1`, compared in constant time (only lengths short-circuit, and a base64 SHA-256's is no secret). */
function secretCheck(secret: string, index: number): Check {
  let signer: Webhook;
  try {
    signer = new Webhook(secret);
  } catch (error) {
    throw new ReceiverConfigError(`secrets[${index}]`, `is not a Standard Webhooks secret (whsec_<base64>) nor public key (whpk_<base64>): ${(error as Error).message}`);
  }
  return (webhookId, at, body, offered) => {
    if (offered.v1.length === 0) return false;
    const expected = Buffer.from(signer.sign(webhookId, at, body).slice(3));
    return offered.v1.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected));
  };
}

/** A `whpk_` public key: `v1a`, an ed25519 signature over `<id>.<timestamp>.<body>`. */
function publicKeyCheck(value: string, index: number): Check {
  const base64 = value.slice(PUBLIC_KEY_PREFIX.length);
  const raw = Buffer.from(base64, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || raw.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new ReceiverConfigError(`secrets[${index}]`, `is not an ed25519 public key: ${PUBLIC_KEY_PREFIX} and the base64 of ${ED25519_PUBLIC_KEY_BYTES} bytes`);
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  } catch (error) {
    throw new ReceiverConfigError(`secrets[${index}]`, `is not an ed25519 public key: ${(error as Error).message}`);
  }
  return (webhookId, at, body, offered) => {
    if (offered.v1a.length === 0) return false;
    const signed = Buffer.from(`${webhookId}.${Math.floor(at.getTime() / 1000)}.${body}`, 'utf8');
    return offered.v1a.some((signature) => signature.length === ED25519_SIGNATURE_BYTES && verifySignature(null, signed, key, signature));
  };
}
