/**
 * Portal links (docs/contract.md §16): a link to the console that lets whoever holds it see and
 * manage one owner's endpoints, for at most 24 h. The link carries a compact signed token,
 * `v1.<payload>.<mac>`: the payload is base64url JSON `{v, owner, exp}` (exp in epoch seconds) and
 * the MAC an HMAC-SHA256 over the version and the payload, with a key only the deployment holds.
 *
 * That key is derived from the deployment's seal key (lib/queue/seal.ts: a Secrets Manager secret
 * in AWS, a key drawn at start in the sandbox) with HKDF and a purpose of its own, so the seal key
 * itself never signs anything but messages, and a token can never pass for a seal or the reverse.
 * Rotating the seal key ends every link minted before (at most 24 h of them): the console asks for
 * a new one.
 *
 * A caller proved by a portal token is `portal:<owner>` (the authorizer in front says so, never the
 * request): the router lets it call only routes marked `portal: 'owner'`, and those answer only for
 * that owner's endpoints (`requireOwner`); anything else is 403 `out-of-scope`.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { OWNER } from '../lib/endpoints/field-schemas';
import { secretsManagerClient, type GetSecretValue } from '../lib/endpoints/secret';
import { SealKeyError } from '../lib/errors';
import { SEAL_KEY_BYTES } from '../lib/queue/seal';
import { ApiProblem } from './problem';

export const PORTAL_LINK_DEFAULT_TTL_SECONDS = 3600;
/** A link is valid at most a day (§16). */
export const PORTAL_LINK_MAX_TTL_SECONDS = 24 * 60 * 60;
export const PORTAL_CALLER_PREFIX = 'portal:';
/** The fragment the console reads its token from: a fragment is never sent to a server, so never in its logs. */
export const PORTAL_FRAGMENT = 'portal';

const TOKEN_VERSION = 'v1';
/** HKDF's info: what the derived key is for. Another purpose derives another key. */
const PORTAL_KEY_INFO = 'handoff portal-link token v1';
const PORTAL_KEY_SALT = 'handoff';

export type PortalTokenProblem = 'malformed' | 'bad-signature' | 'expired';

export class PortalTokenError extends Error {
  override readonly name = 'PortalTokenError';
  readonly code = 'portal-token';
  constructor(readonly problem: PortalTokenProblem) {
    super(`the portal token is ${problem === 'bad-signature' ? 'not signed by this deployment' : problem}`);
  }
}

/** The key portal tokens are signed with, derived from the seal key (base64 of at least 32 bytes). @throws SealKeyError */
export function portalKeyFrom(sealKey: string): Buffer {
  const bytes = Buffer.from(sealKey.trim(), 'base64');
  if (bytes.length < SEAL_KEY_BYTES) throw new SealKeyError(`a seal key must be base64 of at least ${SEAL_KEY_BYTES} bytes, got ${bytes.length}`);
  return Buffer.from(hkdfSync('sha256', bytes, PORTAL_KEY_SALT, PORTAL_KEY_INFO, 32));
}

/**
 * Where the key comes from: the target's seal key as the command finds it (cli/target.ts `sealKey`),
 * read once (a secret's value on first use). A failed read is not kept.
 */
export function portalKeySource(
  sealKey: { readonly key: string } | { readonly secretArn: string },
  get: GetSecretValue = secretsManagerClient(),
): () => Promise<Buffer> {
  if ('key' in sealKey) {
    const key = portalKeyFrom(sealKey.key);
    return async () => key;
  }
  let loading: Promise<Buffer> | undefined;
  return () => {
    loading ??= get({ SecretId: sealKey.secretArn }).then((secret) => portalKeyFrom(secret.SecretString ?? ''));
    loading.catch(() => (loading = undefined));
    return loading;
  };
}

/** A token for `owner` that expires `ttlSeconds` from now. @throws RangeError for an owner or TTL out of bounds */
export function mintPortalToken(owner: string, key: Buffer, nowMs: number, ttlSeconds: number): { token: string; expiresAtMs: number } {
  if (!OWNER.test(owner)) throw new RangeError('owner must be 1–128 characters of A-Z a-z 0-9 . _ : @ + = -');
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > PORTAL_LINK_MAX_TTL_SECONDS) {
    throw new RangeError(`ttlSeconds must be a whole number from 1 to ${PORTAL_LINK_MAX_TTL_SECONDS}`);
  }
  const exp = Math.floor(nowMs / 1000) + ttlSeconds;
  const payload = Buffer.from(JSON.stringify({ v: 1, owner, exp }), 'utf8').toString('base64url');
  return { token: `${TOKEN_VERSION}.${payload}.${macOf(key, payload)}`, expiresAtMs: exp * 1000 };
}

/**
 * The owner a token is for, if this deployment signed it and it has not expired.
 * @throws PortalTokenError: malformed, bad-signature (the MAC is checked before the payload is read), expired
 */
export function verifyPortalToken(token: string, key: Buffer, nowMs: number): { owner: string; expiresAtMs: number } {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== TOKEN_VERSION || !/^[A-Za-z0-9_-]{1,1024}$/.test(parts[1]!)) throw new PortalTokenError('malformed');
  const [, payload, mac] = parts as [string, string, string];
  const expected = Buffer.from(macOf(key, payload));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new PortalTokenError('bad-signature');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new PortalTokenError('malformed');
  }
  const { v, owner, exp } = (claims ?? {}) as { v?: unknown; owner?: unknown; exp?: unknown };
  if (v !== 1 || typeof owner !== 'string' || !OWNER.test(owner) || typeof exp !== 'number' || !Number.isInteger(exp)) throw new PortalTokenError('malformed');
  // Signed by this key, so within the limit when minted; the limit is checked again all the same.
  if (exp * 1000 <= nowMs || exp * 1000 - nowMs > PORTAL_LINK_MAX_TTL_SECONDS * 1000) throw new PortalTokenError('expired');
  return { owner, expiresAtMs: exp * 1000 };
}

function macOf(key: Buffer, payload: string): string {
  return createHmac('sha256', key).update(`${TOKEN_VERSION}.${payload}`).digest('base64url');
}

/** The caller a verified token makes: what an authorizer hands the router. */
export function portalCallerOf(owner: string): string {
  return `${PORTAL_CALLER_PREFIX}${owner}`;
}

/** The owner a portal caller is scoped to; undefined for any other caller (an IAM ARN, `jwt:…`, the sandbox's token). */
export function portalOwnerOf(caller: string): string | undefined {
  return caller.startsWith(PORTAL_CALLER_PREFIX) ? caller.slice(PORTAL_CALLER_PREFIX.length) : undefined;
}

/** @throws ApiProblem 403 when the call is a portal caller's and `owner` is not its owner */
export function requireOwner(call: { readonly portalOwner?: string }, owner: string | undefined): void {
  if (call.portalOwner !== undefined && owner !== call.portalOwner) throw outOfScope();
}

export function outOfScope(): ApiProblem {
  return new ApiProblem(403, 'out-of-scope', "a portal link reaches only its owner's endpoints");
}

/** The console link for a token: `<consoleBase>#portal=<token>`. */
export function portalUrl(consoleBase: string, token: string): string {
  return `${consoleBase.replace(/#.*$/, '')}#${PORTAL_FRAGMENT}=${token}`;
}

/** The fields that name who operated a deployment: a state change's `by`, an audit entry's `operator` and `caller`. */
const OPERATOR_FIELDS: ReadonlySet<string> = new Set(['by', 'operator', 'caller']);
/** What a portal link's holder reads in their place. */
export const OPERATOR_SHOWN_TO_PORTAL = 'an operator';

/**
 * An answer as a portal link's holder gets it: every string naming an operator (an IAM principal's
 * ARN holds the account, the role and the session) replaced by OPERATOR_SHOWN_TO_PORTAL.
 */
export function withoutOperators(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(withoutOperators);
  if (typeof body !== 'object' || body === null) return body;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) out[k] = OPERATOR_FIELDS.has(k) && typeof v === 'string' ? OPERATOR_SHOWN_TO_PORTAL : withoutOperators(v);
  return out;
}
