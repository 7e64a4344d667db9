/**
 * The `webhook-signature` a request carries (docs/contract.md §3, §12): one `v1,` entry under the
 * endpoint's secret, and during a rotation's overlap a second under the previous secret, new first,
 * space-separated. Each is checked with the reference library, `standardwebhooks`' `Webhook.verify`,
 * holding one secret at a time, as a receiver does before and after it switches.
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../../lib/webhook/endpoint-guard';
import { HttpWebhookSender } from '../../lib/webhook/http-sender';
import { RequestSigner } from '../../lib/webhook/signing-secret';
import { SigningSecretError } from '../../lib/errors';

const NEW_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
/** Close to the real clock: `Webhook.verify` refuses timestamps over 5 minutes away. */
const ATTEMPT_MS = Math.floor(Date.now() / 1000) * 1000 + 250;
const BODY = '{"id":"evt_42","shipmentId":"shp_1","status":"delivered","occurredAt":"2026-12-02T10:15:00Z"}';

function headers(signature: string, atMs = ATTEMPT_MS) {
  return { 'webhook-id': 'evt_42', 'webhook-timestamp': String(Math.floor(atMs / 1000)), 'webhook-signature': signature };
}

/** Whether the reference library, holding only `secret`, accepts the request. */
function verifiesWith(secret: string, signature: string, atMs = ATTEMPT_MS): boolean {
  try {
    new Webhook(secret).verify(BODY, headers(signature, atMs));
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
}

describe('Class: RequestSigner', () => {
  it('signs with the one secret: one v1 entry, verified with it and not with another', () => {
    const signature = new RequestSigner(NEW_SECRET).sign('evt_42', ATTEMPT_MS, BODY);

    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
    expect(verifiesWith(NEW_SECRET, signature)).toBe(true);
    expect(verifiesWith(OLD_SECRET, signature)).toBe(false);
  });

  it("during the overlap carries both signatures, the new secret's first, each verified with its own secret", () => {
    const signer = new RequestSigner(NEW_SECRET, { secret: OLD_SECRET, untilMs: ATTEMPT_MS + 1 });

    const signature = signer.sign('evt_42', ATTEMPT_MS, BODY);

    const entries = signature.split(' ');
    expect(entries).toHaveLength(2);
    expect(entries[0]).toBe(new Webhook(NEW_SECRET).sign('evt_42', new Date(ATTEMPT_MS), BODY));
    expect(entries[1]).toBe(new Webhook(OLD_SECRET).sign('evt_42', new Date(ATTEMPT_MS), BODY));
    expect(verifiesWith(NEW_SECRET, signature)).toBe(true);
    expect(verifiesWith(OLD_SECRET, signature)).toBe(true);
    expect(() => new Webhook(NEW_SECRET).verify(`${BODY} `, headers(signature))).toThrow(WebhookVerificationError);
  });

  it('from the end of the overlap signs with the new secret only', () => {
    const signer = new RequestSigner(NEW_SECRET, { secret: OLD_SECRET, untilMs: ATTEMPT_MS });

    const signature = signer.sign('evt_42', ATTEMPT_MS, BODY);

    expect(signature.split(' ')).toHaveLength(1);
    expect(signer.secretsAt(ATTEMPT_MS - 1)).toBe(2);
    expect(signer.secretsAt(ATTEMPT_MS)).toBe(1);
    expect(verifiesWith(NEW_SECRET, signature)).toBe(true);
    expect(verifiesWith(OLD_SECRET, signature)).toBe(false);
  });

  it('decides by each attempt\'s own time, so one signer serves across the end', () => {
    const signer = new RequestSigner(NEW_SECRET, { secret: OLD_SECRET, untilMs: ATTEMPT_MS });

    expect(verifiesWith(OLD_SECRET, signer.sign('evt_42', ATTEMPT_MS - 1000, BODY), ATTEMPT_MS - 1000)).toBe(true);
    expect(verifiesWith(OLD_SECRET, signer.sign('evt_42', ATTEMPT_MS + 1000, BODY), ATTEMPT_MS + 1000)).toBe(false);
  });

  it('refuses a previous secret that cannot sign, and an end that is no time', () => {
    const short = () => new RequestSigner(NEW_SECRET, { secret: 'whsec_c2hvcnQ=', untilMs: ATTEMPT_MS });
    const noTime = () => new RequestSigner(NEW_SECRET, { secret: OLD_SECRET, untilMs: Number.NaN });

    expect(short).toThrow(SigningSecretError);
    expect(short).toThrow(expect.objectContaining({ code: 'too-short' }));
    expect(noTime).toThrow(new RangeError("the previous secret's end must be epoch milliseconds, got NaN"));
  });
});

describe('Class: HttpWebhookSender (its signing options)', () => {
  const guard = new EndpointGuard(SANDBOX_GUARD_OPTIONS);
  const base = { url: 'http://127.0.0.1:9/hook', timeoutMs: 1000, guard };

  it('refuses a previous secret without a secret or without its end, naming what is missing', () => {
    expect(() => new HttpWebhookSender({ ...base, previousSecret: OLD_SECRET, previousSecretUntil: ATTEMPT_MS })).toThrow(
      new RangeError('previousSecret needs secret: a rotation signs with the new secret first'),
    );
    expect(() => new HttpWebhookSender({ ...base, secret: NEW_SECRET, previousSecret: OLD_SECRET })).toThrow(
      new RangeError('previousSecret needs previousSecretUntil: when the old secret stops signing'),
    );
  });
});
