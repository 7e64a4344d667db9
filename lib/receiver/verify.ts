/**
 * Verification of a webhook's Standard Webhooks headers: `webhook-id`, `webhook-timestamp`,
 * `webhook-signature` (space-separated `v1,<base64>` entries). The HMAC and the secret format
 * (`whsec_<base64>` or bare base64) are the `standardwebhooks` library's; this adds several
 * secrets at once (a rotation), a configurable tolerance and an injected clock.
 */
import { timingSafeEqual } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { ReceiverConfigError, WebhookVerificationError } from './errors';

/** Standard Webhooks' recommended tolerance: 5 minutes either way. */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

export interface VerifyOptions {
  /** Every secret currently valid, newest first during a rotation. At least one. */
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

/**
 * A verifier for a fixed set of secrets. Secrets are decoded once, here, so a malformed one
 * fails at start-up, not on the first request.
 * @throws ReceiverConfigError
 */
export function createVerifier(options: VerifyOptions): (header: HeaderLookup, body: string, nowMs: number) => VerifiedWebhook {
  if (options.secrets.length === 0) throw new ReceiverConfigError('secrets', 'must hold at least one secret');
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isInteger(toleranceSeconds) || toleranceSeconds < 1) {
    throw new ReceiverConfigError('toleranceSeconds', `must be a positive whole number, got ${toleranceSeconds}`);
  }
  const signers = options.secrets.map((secret, index) => {
    try {
      return new Webhook(secret);
    } catch (error) {
      throw new ReceiverConfigError(`secrets[${index}]`, `is not a Standard Webhooks secret (whsec_<base64>): ${(error as Error).message}`);
    }
  });

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
    const offered = signatures
      .split(' ')
      .filter((entry) => entry.startsWith('v1,'))
      .map((entry) => Buffer.from(entry.slice(3)));
    const at = new Date(timestampSeconds * 1000);
    for (const signer of signers) {
      const expected = Buffer.from(signer.sign(webhookId, at, body).slice(3));
      // Every offered signature is compared in constant time; only lengths short-circuit, and
      // the length of a base64 SHA-256 is no secret.
      if (offered.some((candidate) => candidate.length === expected.length && timingSafeEqual(candidate, expected))) {
        return { webhookId, timestampSeconds };
      }
    }
    throw new WebhookVerificationError('bad-signature', 'no v1 signature matches the configured secrets');
  };
}
