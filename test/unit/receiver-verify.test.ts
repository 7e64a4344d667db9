import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { ReceiverConfigError, WebhookVerificationError } from '../../lib/receiver/errors';
import { createVerifier } from '../../lib/receiver/verify';
import { RequestSigner } from '../../lib/webhook/signing-secret';

const OLD_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const NEW_SECRET = 'whsec_dGhpcyBpcyB0aGUgbmV3IHNlY3JldCBrZXkh';
const NOW_MS = Date.UTC(2026, 11, 2, 10, 15, 0);
const BODY = '{"id":"evt_42","status":"delivered"}';

function headersFor(secret: string, timestampMs = NOW_MS, id = 'evt_42', body = BODY) {
  const at = new Date(timestampMs);
  const values: Record<string, string> = {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(timestampMs / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
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

describe('Function: createVerifier', () => {
  it('returns the webhook ID and timestamp of a correctly signed request', () => {
    const verify = createVerifier({ secrets: [OLD_SECRET] });

    expect(verify(headersFor(OLD_SECRET), BODY, NOW_MS)).toEqual({ webhookId: 'evt_42', timestampSeconds: NOW_MS / 1000 });
  });

  it('accepts a request signed with either secret during a rotation', () => {
    const verify = createVerifier({ secrets: [NEW_SECRET, OLD_SECRET] });

    expect(verify(headersFor(OLD_SECRET), BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(verify(headersFor(NEW_SECRET), BODY, NOW_MS).webhookId).toBe('evt_42');
  });

  it('refuses a request signed with a secret dropped after the rotation', () => {
    const verify = createVerifier({ secrets: [NEW_SECRET] });

    expect(problemOf(() => verify(headersFor(OLD_SECRET), BODY, NOW_MS))).toBe('bad-signature');
  });

  it('accepts a header carrying several signatures when one of them matches', () => {
    const verify = createVerifier({ secrets: [NEW_SECRET] });
    const both = `${headersFor(OLD_SECRET)('webhook-signature')} ${headersFor(NEW_SECRET)('webhook-signature')}`;
    const headers = (name: string) => (name === 'webhook-signature' ? both : headersFor(NEW_SECRET)(name));

    expect(verify(headers, BODY, NOW_MS).webhookId).toBe('evt_42');
  });

  it("verifies the sender's header during a rotation's overlap with either secret alone, and after it with the new one only", () => {
    const signer = new RequestSigner(NEW_SECRET, { secret: OLD_SECRET, untilMs: NOW_MS + 1 });
    const headers = (signature: string) => (name: string) => (name === 'webhook-signature' ? signature : headersFor(NEW_SECRET)(name));
    const during = headers(signer.sign('evt_42', NOW_MS, BODY));
    const after = headers(new RequestSigner(NEW_SECRET, { secret: OLD_SECRET, untilMs: NOW_MS }).sign('evt_42', NOW_MS, BODY));

    expect(during('webhook-signature')?.split(' ')).toHaveLength(2);
    expect(createVerifier({ secrets: [OLD_SECRET] })(during, BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(createVerifier({ secrets: [NEW_SECRET] })(during, BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(createVerifier({ secrets: [NEW_SECRET, OLD_SECRET] })(during, BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(problemOf(() => createVerifier({ secrets: [OLD_SECRET] })(during, `${BODY} `, NOW_MS))).toBe('bad-signature');
    expect(createVerifier({ secrets: [NEW_SECRET] })(after, BODY, NOW_MS).webhookId).toBe('evt_42');
    expect(problemOf(() => createVerifier({ secrets: [OLD_SECRET] })(after, BODY, NOW_MS))).toBe('bad-signature');
  });

  it('refuses a body changed after signing', () => {
    const verify = createVerifier({ secrets: [OLD_SECRET] });

    expect(problemOf(() => verify(headersFor(OLD_SECRET), BODY.replace('delivered', 'returned'), NOW_MS))).toBe('bad-signature');
  });

  it('refuses a signature made for another webhook ID', () => {
    const verify = createVerifier({ secrets: [OLD_SECRET] });
    const forOther = headersFor(OLD_SECRET, NOW_MS, 'evt_other');
    const headers = (name: string) => (name === 'webhook-id' ? 'evt_42' : forOther(name));

    expect(problemOf(() => verify(headers, BODY, NOW_MS))).toBe('bad-signature');
  });

  it.each([
    ['older', -301_000],
    ['newer', 301_000],
  ])('refuses a timestamp %s than the default 5 minutes, even correctly signed', (_, offsetMs) => {
    const verify = createVerifier({ secrets: [OLD_SECRET] });

    expect(problemOf(() => verify(headersFor(OLD_SECRET, NOW_MS + offsetMs), BODY, NOW_MS))).toBe('stale-timestamp');
  });

  it('accepts a timestamp exactly at the tolerance', () => {
    const verify = createVerifier({ secrets: [OLD_SECRET] });

    expect(verify(headersFor(OLD_SECRET, NOW_MS - 300_000), BODY, NOW_MS).webhookId).toBe('evt_42');
  });

  it('applies a configured tolerance', () => {
    const verify = createVerifier({ secrets: [OLD_SECRET], toleranceSeconds: 30 });

    expect(problemOf(() => verify(headersFor(OLD_SECRET, NOW_MS - 31_000), BODY, NOW_MS))).toBe('stale-timestamp');
  });

  it.each(['webhook-id', 'webhook-timestamp', 'webhook-signature'])('refuses a request without %s as a missing header (401)', (missing) => {
    const verify = createVerifier({ secrets: [OLD_SECRET] });
    const signed = headersFor(OLD_SECRET);
    let error: unknown;

    try {
      verify((name) => (name === missing ? undefined : signed(name)), BODY, NOW_MS);
    } catch (caught) {
      error = caught;
    }

    expect(error).toBeInstanceOf(WebhookVerificationError);
    expect((error as WebhookVerificationError).problem).toBe('missing-header');
    expect((error as WebhookVerificationError).status).toBe(401);
  });

  it('refuses a timestamp that is not Unix seconds', () => {
    const verify = createVerifier({ secrets: [OLD_SECRET] });
    const signed = headersFor(OLD_SECRET);

    expect(problemOf(() => verify((name) => (name === 'webhook-timestamp' ? '2026-12-02T10:15:00Z' : signed(name)), BODY, NOW_MS))).toBe('bad-timestamp');
  });

  it('refuses to start without a secret, or with one that is not base64', () => {
    expect(() => createVerifier({ secrets: [] })).toThrow(ReceiverConfigError);
    expect(() => createVerifier({ secrets: ['whsec_not base64!'] })).toThrow(/secrets\[0\] is not a Standard Webhooks secret/);
  });
});
