/**
 * The signing secret and the Standard Webhooks signature made with it. The secret is checked where
 * it is read (sandbox start, the handler's cold start or its first Secrets Manager read, stack
 * synth), never once per batch. The signature is Standard Webhooks' `v1`: HMAC-SHA256 of
 * `<id>.<timestamp in seconds>.<body>` under the decoded key, in base64, made with node:crypto (the
 * receiver kit verifies with the `standardwebhooks` library, and the tests hold the two equal).
 *
 * Messages name the problem, never the secret or any part of it.
 */
import { createHmac } from 'node:crypto';
import { SigningSecretError } from '../errors';

/** Standard Webhooks' shortest key; a shorter HMAC key is guessable. */
export const MIN_SIGNING_KEY_BYTES = 24;
export const SECRET_PREFIX = 'whsec_';

/**
 * Base64 as Standard Webhooks reads a key: its alphabet, at most two `=` at the end, at least four
 * characters. Unpadded is read as padded; a length no key encodes to (one character past a group
 * of four) is refused, since decoders differ on it.
 */
const BASE64_KEY = /^[A-Za-z0-9+/]+={0,2}$/;

export interface Signer {
  /** The `v1,<base64>` signature of one request made at `at`. */
  sign(webhookId: string, at: Date, body: string): string;
}

/**
 * The signer for a secret: `whsec_<base64>` or the bare base64 key (what Secrets Manager can
 * generate). @throws SigningSecretError when the key is empty, not base64, or under 24 bytes.
 */
export function createSigner(secret: string): Signer {
  const base64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (base64 === '') throw new SigningSecretError('empty', 'has no key');
  if (base64.length < 4 || !BASE64_KEY.test(base64) || base64.replace(/=+$/, '').length % 4 === 1) {
    throw new SigningSecretError('not-base64', 'is not base64 (A-Z a-z 0-9 + /, padded with = to a multiple of 4)');
  }
  const key = Buffer.from(base64, 'base64');
  if (key.length < MIN_SIGNING_KEY_BYTES) {
    throw new SigningSecretError('too-short', `decodes to a ${key.length}-byte key; at least ${MIN_SIGNING_KEY_BYTES} bytes are needed`);
  }
  return {
    sign: (webhookId, at, body) =>
      `v1,${createHmac('sha256', key).update(`${webhookId}.${Math.floor(at.getTime() / 1000)}.${body}`).digest('base64')}`,
  };
}

/** A rotation's old secret, still signing until `untilMs` (epoch ms, exclusive). */
export interface PreviousSecret {
  readonly secret: string;
  readonly untilMs: number;
}

/**
 * What a request's `webhook-signature` carries: `v1,<base64>` under the endpoint's secret and,
 * while a rotation's overlap lasts (the attempt's time before `previous.untilMs`), a second entry
 * under the previous secret: space-separated, the new first (docs/contract.md §12). Each entry is
 * a complete Standard Webhooks signature, so a receiver holding either secret verifies the request.
 * The overlap's end is decided per request, by the attempt's own time.
 */
export class RequestSigner {
  readonly #current: Signer;
  readonly #previous: { readonly signer: Signer; readonly untilMs: number } | undefined;

  /** @throws SigningSecretError for a secret that cannot sign; RangeError for an overlap end that is not a time */
  constructor(secret: string, previous?: PreviousSecret) {
    this.#current = createSigner(secret);
    if (previous !== undefined) {
      if (!Number.isSafeInteger(previous.untilMs)) throw new RangeError(`the previous secret's end must be epoch milliseconds, got ${previous.untilMs}`);
      this.#previous = { signer: createSigner(previous.secret), untilMs: previous.untilMs };
    }
  }

  /** The secrets in use at `atMs`: 2 during the overlap, else 1. */
  secretsAt(atMs: number): 1 | 2 {
    return this.#previous !== undefined && atMs < this.#previous.untilMs ? 2 : 1;
  }

  /** The `webhook-signature` header for one attempt made at `atMs` (its `webhook-timestamp`, in ms). */
  sign(webhookId: string, atMs: number, body: string): string {
    const at = new Date(atMs);
    const current = this.#current.sign(webhookId, at, body);
    return this.secretsAt(atMs) === 2 ? `${current} ${this.#previous!.signer.sign(webhookId, at, body)}` : current;
  }
}
