/**
 * The construct's two keys in Secrets Manager: the Standard Webhooks signing secret (the endpoint
 * `default`'s), and the seal key (lib/queue/seal.ts) that marks handoff's own queue messages.
 */
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import type { WebhookDeliveryProps } from '../webhook-delivery';

/** The signing secret chosen by the `signingSecret` prop: the one given, one generated here, or none. */
export function createSigningSecret(
  scope: Construct,
  choice: NonNullable<WebhookDeliveryProps['signingSecret']>,
): secretsmanager.ISecret | undefined {
  if (choice === 'none') return undefined;
  if (choice !== 'generate') return choice;
  // Secrets Manager cannot generate `whsec_<base64>` directly (its generator draws from a
  // character set and adds no prefix). 64 letters and digits are valid base64 (length a multiple
  // of 4, no padding) and decode to a 48-byte key, within Standard Webhooks' 24–64 bytes. The
  // consumer treats a value without the `whsec_` prefix as that base64 key; the receiver
  // configures `whsec_` + the same value.
  // Retained: the registry (retained) names it as `default`'s secret, and the receiver holds it.
  return generatedKey(
    scope,
    'SigningSecret',
    'handoff: Standard Webhooks signing key (base64; the receiver uses whsec_ + this value)',
    'Rotated by the documented procedure (put-secret-value; consumers re-read the secret within 5 minutes and sign with both versions during the 24-hour overlap); no rotation Lambda, since the receiver must switch keys in step.',
  );
}

/**
 * 64 letters and digits: valid base64 of a 48-byte key (lib/queue/seal.ts wants 32 at least).
 * Never shared outside handoff's functions and operators, so nobody else has to switch with it.
 */
export function createSealKey(scope: Construct): secretsmanager.Secret {
  // Retained: the retained dead-letter and redrive queues hold messages sealed with it.
  return generatedKey(
    scope,
    'SealKey',
    "handoff: the key that seals handoff's own queue messages (only sealed control attributes steer the consumer)",
    'Rotated by the documented procedure (put-secret-value): the functions read it again within 5 minutes and still accept what the previous version sealed; no rotation Lambda, since a second rotation while messages sealed two versions ago are queued (up to 14 days) would unseal them, and the key never leaves handoff\'s roles.',
  );
}

/**
 * A secret of 64 generated letters and digits, retained with the stack. It is rotated by hand, so
 * cdk-nag's rotation finding (AwsSolutions-SMG4) is acknowledged on it with `rotation` as the reason.
 */
function generatedKey(scope: Construct, id: string, description: string, rotation: string): secretsmanager.Secret {
  const secret = new secretsmanager.Secret(scope, id, {
    description,
    generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
    removalPolicy: RemovalPolicy.RETAIN,
  });
  Validations.of(secret).acknowledge({ id: 'AwsSolutions-SMG4', reason: rotation });
  return secret;
}
