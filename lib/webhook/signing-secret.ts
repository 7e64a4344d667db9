/**
 * The signing secret and the Standard Webhooks signature made with it. The secret is checked where
 * it is read (sandbox start, the handler's cold start or its first Secrets Manager read, stack
 * synth), never once per batch. Its prefix says the scheme (docs/contract.md §18):
 *
 * - `whsec_<base64>` (or the bare base64 key Secrets Manager generates): Standard Webhooks' `v1`,
 *   HMAC-SHA256 of `<id>.<timestamp in seconds>.<body>` under the decoded key, in base64, made with
 *   node:crypto (the receiver kit verifies with the `standardwebhooks` library, and the tests hold
 *   the two equal);
 * - `whsk_<base64>`: Standard Webhooks' `v1a`, the ed25519 signature of the same bytes, in base64.
 *   The key is a standard ed25519 key pair, as Svix serializes it: the 32-byte seed followed by the
 *   32-byte public key (a 32-byte seed alone is read too). Its public key, `whpk_<base64 of the 32
 *   bytes>`, is what a receiver verifies with; it holds nothing secret.
 *
 * A key is decoded once, into the signer (an ed25519 one into a KeyObject): signing a request costs
 * an HMAC or one ed25519 signature, nothing more.
 *
 * Messages name the problem, never the secret or any part of it.
 */
import { createHmac, createPrivateKey, createPublicKey, sign as signBytes, type KeyObject } from 'node:crypto';
import { SigningSecretError } from '../errors';

/** Standard Webhooks' shortest key; a shorter HMAC key is guessable. */
export const MIN_SIGNING_KEY_BYTES = 24;
export const SECRET_PREFIX = 'whsec_';
/** An ed25519 secret key's prefix (Standard Webhooks' asymmetric scheme). */
export const ED25519_SECRET_PREFIX = 'whsk_';
/** An ed25519 public key's prefix: what a receiver verifies `v1a` signatures with. */
export const PUBLIC_KEY_PREFIX = 'whpk_';

/** The signature schemes an endpoint signs with (its `signature` field), HMAC-SHA256 by default. */
export const SIGNATURE_SCHEMES = ['hmac-sha256', 'ed25519'] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** An ed25519 seed, and a public key, are 32 bytes. */
const ED25519_KEY_BYTES = 32;
/** The DER a raw seed is wrapped in to be a PKCS #8 private key (RFC 8410), and the SPKI prefix of a public key. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const SPKI_ED25519_PREFIX_BYTES = 12;

/**
 * Base64 as Standard Webhooks reads a key: its alphabet, at most two `=` at the end, at least four
 * characters. Unpadded is read as padded; a length no key encodes to (one character past a group
 * of four) is refused, since decoders differ on it.
 */
const BASE64_KEY = /^[A-Za-z0-9+/]+={0,2}$/;

export interface Signer {
  /** The signature of one request made at `at`: `v1,<base64>` (HMAC) or `v1a,<base64>` (ed25519). */
  sign(webhookId: string, at: Date, body: string): string;
}

/** Whether a value is a signing secret itself (`whsec_…` or `whsk_…`), not a reference to one or a ciphertext. */
export function isSecretValue(value: string): boolean {
  return value.startsWith(SECRET_PREFIX) || value.startsWith(ED25519_SECRET_PREFIX);
}

/** The scheme a secret value signs with: ed25519 for `whsk_…`, else HMAC-SHA256 (`whsec_…`, or a bare base64 key). */
export function schemeOfSecret(secret: string): SignatureScheme {
  return secret.startsWith(ED25519_SECRET_PREFIX) ? 'ed25519' : 'hmac-sha256';
}

/**
 * The signer for a secret: `whsec_<base64>` or the bare base64 key (what Secrets Manager can
 * generate) for HMAC-SHA256; `whsk_<base64>` for ed25519.
 * @throws SigningSecretError when the key is empty, not base64, under 24 bytes (HMAC), or not an
 * ed25519 key pair or seed
 */
export function createSigner(secret: string): Signer {
  if (secret.startsWith(ED25519_SECRET_PREFIX)) {
    const { privateKey } = ed25519KeyOf(secret);
    return {
      sign: (webhookId, at, body) =>
        `v1a,${signBytes(null, Buffer.from(`${webhookId}.${Math.floor(at.getTime() / 1000)}.${body}`, 'utf8'), privateKey).toString('base64')}`,
    };
  }
  const base64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = decodedKey(base64);
  if (key.length < MIN_SIGNING_KEY_BYTES) {
    throw new SigningSecretError('too-short', `decodes to a ${key.length}-byte key; at least ${MIN_SIGNING_KEY_BYTES} bytes are needed`);
  }
  return {
    sign: (webhookId, at, body) =>
      `v1,${createHmac('sha256', key).update(`${webhookId}.${Math.floor(at.getTime() / 1000)}.${body}`).digest('base64')}`,
  };
}

/**
 * The public key (`whpk_<base64>`) of an ed25519 secret key (`whsk_…`): what its receiver verifies
 * with. @throws SigningSecretError for a value that is not an ed25519 key
 */
export function publicKeyOf(secret: string): string {
  if (!secret.startsWith(ED25519_SECRET_PREFIX)) throw new SigningSecretError('wrong-length', `is not an ed25519 secret key (${ED25519_SECRET_PREFIX}…)`);
  return `${PUBLIC_KEY_PREFIX}${ed25519KeyOf(secret).publicKey.toString('base64')}`;
}

/**
 * An ed25519 key pair as `whsk_` and `whpk_` values, from its 32-byte seed and public key (what
 * node:crypto's generateKeyPairSync('ed25519') holds).
 */
export function ed25519Values(seed: Buffer, publicKey: Buffer): { readonly secret: string; readonly publicKey: string } {
  return {
    secret: `${ED25519_SECRET_PREFIX}${Buffer.concat([seed, publicKey]).toString('base64')}`,
    publicKey: `${PUBLIC_KEY_PREFIX}${publicKey.toString('base64')}`,
  };
}

/** The 32-byte seed and public key of an ed25519 KeyObject pair's private half. */
export function rawEd25519Key(privateKey: KeyObject): { readonly seed: Buffer; readonly publicKey: Buffer } {
  return {
    seed: privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_ED25519_PREFIX.length),
    publicKey: createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519_PREFIX_BYTES),
  };
}

/**
 * The private key of a `whsk_` value and its public key's 32 bytes. A 64-byte value is the seed and
 * the public key; its second half must be the seed's public key (a pair put together from two keys
 * would sign with one and tell receivers the other).
 */
function ed25519KeyOf(secret: string): { privateKey: KeyObject; publicKey: Buffer } {
  const raw = decodedKey(secret.slice(ED25519_SECRET_PREFIX.length));
  if (raw.length !== ED25519_KEY_BYTES && raw.length !== 2 * ED25519_KEY_BYTES) {
    throw new SigningSecretError(
      'wrong-length',
      `decodes to ${raw.length} bytes; an ed25519 secret key is ${2 * ED25519_KEY_BYTES} (its seed and its public key) or its ${ED25519_KEY_BYTES}-byte seed`,
    );
  }
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, raw.subarray(0, ED25519_KEY_BYTES)]), format: 'der', type: 'pkcs8' });
  const { publicKey } = rawEd25519Key(privateKey);
  if (raw.length === 2 * ED25519_KEY_BYTES && !publicKey.equals(raw.subarray(ED25519_KEY_BYTES))) {
    throw new SigningSecretError('key-mismatch', 'holds a public key that is not its seed’s: the two halves are of different key pairs');
  }
  return { privateKey, publicKey };
}

/** A key's bytes from base64 as Standard Webhooks reads it. @throws SigningSecretError when empty or not base64 */
function decodedKey(base64: string): Buffer {
  if (base64 === '') throw new SigningSecretError('empty', 'has no key');
  if (base64.length < 4 || !BASE64_KEY.test(base64) || base64.replace(/=+$/, '').length % 4 === 1) {
    throw new SigningSecretError('not-base64', 'is not base64 (A-Z a-z 0-9 + /, padded with = to a multiple of 4)');
  }
  return Buffer.from(base64, 'base64');
}

/** A rotation's old secret, still signing until `untilMs` (epoch ms, exclusive). */
export interface PreviousSecret {
  readonly secret: string;
  readonly untilMs: number;
}

/**
 * What a request's `webhook-signature` carries: the signature under the endpoint's secret and,
 * while a rotation's overlap lasts (the attempt's time before `previous.untilMs`), a second entry
 * under the previous secret: space-separated, the new first (docs/contract.md §12). Each entry is
 * a complete Standard Webhooks signature, `v1,` or `v1a,` by its own secret's scheme, so a receiver
 * holding either secret (or public key) verifies the request, across a change of scheme too (an
 * HMAC secret rotated to an ed25519 key: `v1a,… v1,…` during the overlap). The overlap's end is
 * decided per request, by the attempt's own time.
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
