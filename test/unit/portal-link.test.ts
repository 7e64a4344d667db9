/**
 * Portal tokens (api/portal-link.ts): minted for one owner with a key derived from the seal key,
 * verified only under that key and before they expire; anything altered is refused by type.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  mintPortalToken,
  PORTAL_LINK_MAX_TTL_SECONDS,
  PortalTokenError,
  portalCallerOf,
  portalKeyFrom,
  portalKeySource,
  portalOwnerOf,
  portalUrl,
  requireOwner,
  verifyPortalToken,
} from '../../api/portal-link';
import { ApiProblem } from '../../api/problem';
import { SealKeyError } from '../../lib/errors';
import { thrownBy } from '../helpers/thrown';

const SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
const OTHER_SEAL_KEY = Buffer.alloc(32, 8).toString('base64');
const T0 = Date.parse('2026-12-04T21:00:00Z');
const KEY = portalKeyFrom(SEAL_KEY);

function problemOf(run: () => unknown): PortalTokenError['problem'] {
  return thrownBy(run, PortalTokenError).problem;
}

describe('portal link keys', () => {
  it('derives a 32-byte key of its own from the seal key, never the seal key itself', () => {
    expect(KEY).toHaveLength(32);
    expect(KEY.equals(Buffer.from(SEAL_KEY, 'base64'))).toBe(false);
    expect(portalKeyFrom(SEAL_KEY).equals(KEY)).toBe(true);
    expect(portalKeyFrom(OTHER_SEAL_KEY).equals(KEY)).toBe(false);
  });

  it('refuses a seal key shorter than 32 bytes', () => {
    thrownBy(() => portalKeyFrom(Buffer.alloc(16).toString('base64')), SealKeyError);
  });

  it('reads a seal key kept in a secret once, and again after a failed read', async () => {
    const reads: string[] = [];
    let fail = true;
    const source = portalKeySource({ secretArn: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:seal' }, async ({ SecretId }) => {
      reads.push(SecretId);
      if (fail) throw new Error('throttled');
      return { SecretString: SEAL_KEY };
    });

    await expect(source()).rejects.toThrow('throttled');
    fail = false;
    const first = await source();
    const second = await source();

    expect(first.equals(KEY)).toBe(true);
    expect(second).toBe(first);
    expect(reads).toHaveLength(2);
  });
});

describe('portal tokens', () => {
  it('verifies a token it minted: the owner, and the expiry ttlSeconds from now', () => {
    const { token, expiresAtMs } = mintPortalToken('merchant-42', KEY, T0, 3600);

    const verified = verifyPortalToken(token, KEY, T0 + 1000);

    expect(verified).toEqual({ owner: 'merchant-42', expiresAtMs: T0 + 3600_000 });
    expect(expiresAtMs).toBe(T0 + 3600_000);
    expect(token).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  });

  it('refuses a token once it has expired, to the second', () => {
    const { token } = mintPortalToken('merchant-42', KEY, T0, 60);

    expect(verifyPortalToken(token, KEY, T0 + 59_999).owner).toBe('merchant-42');
    expect(problemOf(() => verifyPortalToken(token, KEY, T0 + 60_000))).toBe('expired');
  });

  it('refuses a token signed with another deployment\'s key', () => {
    const { token } = mintPortalToken('merchant-42', portalKeyFrom(OTHER_SEAL_KEY), T0, 60);

    expect(problemOf(() => verifyPortalToken(token, KEY, T0))).toBe('bad-signature');
  });

  it('refuses a token whose owner was changed, though the rest is as signed', () => {
    const { token } = mintPortalToken('merchant-42', KEY, T0, 60);
    const [version, , mac] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ v: 1, owner: 'merchant-43', exp: Math.floor(T0 / 1000) + 60 })).toString('base64url');

    expect(problemOf(() => verifyPortalToken(`${version}.${forged}.${mac}`, KEY, T0))).toBe('bad-signature');
  });

  it('refuses a token signed with the seal key itself rather than the derived key', () => {
    const payload = Buffer.from(JSON.stringify({ v: 1, owner: 'merchant-42', exp: Math.floor(T0 / 1000) + 60 })).toString('base64url');
    const mac = createHmac('sha256', Buffer.from(SEAL_KEY, 'base64')).update(`v1.${payload}`).digest('base64url');

    expect(problemOf(() => verifyPortalToken(`v1.${payload}.${mac}`, KEY, T0))).toBe('bad-signature');
  });

  it('refuses a signed token whose expiry is further off than a link may be valid', () => {
    const payload = Buffer.from(JSON.stringify({ v: 1, owner: 'merchant-42', exp: Math.floor(T0 / 1000) + PORTAL_LINK_MAX_TTL_SECONDS + 60 })).toString('base64url');
    const mac = createHmac('sha256', KEY).update(`v1.${payload}`).digest('base64url');

    expect(problemOf(() => verifyPortalToken(`v1.${payload}.${mac}`, KEY, T0))).toBe('expired');
  });

  it('refuses what is not a token at all as malformed', () => {
    expect(problemOf(() => verifyPortalToken('', KEY, T0))).toBe('malformed');
    expect(problemOf(() => verifyPortalToken('v2.abc.def', KEY, T0))).toBe('malformed');
    expect(problemOf(() => verifyPortalToken('v1.abc', KEY, T0))).toBe('malformed');
    expect(problemOf(() => verifyPortalToken('v1.a/b.c', KEY, T0))).toBe('malformed');
  });

  it('mints for a valid owner and a TTL of at most 24 hours only', () => {
    thrownBy(() => mintPortalToken('has space', KEY, T0, 60), RangeError);
    thrownBy(() => mintPortalToken('merchant-42', KEY, T0, PORTAL_LINK_MAX_TTL_SECONDS + 1), RangeError);
    thrownBy(() => mintPortalToken('merchant-42', KEY, T0, 0), RangeError);
  });
});

describe('portal callers', () => {
  it('names the owner of a portal caller, and none of any other caller', () => {
    expect(portalOwnerOf(portalCallerOf('merchant-42'))).toBe('merchant-42');
    expect(portalOwnerOf('arn:aws:iam::123456789012:user/alice')).toBeUndefined();
    expect(portalOwnerOf('jwt:abc')).toBeUndefined();
    expect(portalOwnerOf('sandbox')).toBeUndefined();
  });

  it('lets a portal caller at its own owner only, and every other caller at any', () => {
    const problem = thrownBy(() => requireOwner({ portalOwner: 'merchant-42' }, 'merchant-43'), ApiProblem);

    expect(() => requireOwner({ portalOwner: 'merchant-42' }, 'merchant-42')).not.toThrow();
    expect(() => requireOwner({}, 'merchant-43')).not.toThrow();
    expect(problem).toMatchObject({ status: 403, code: 'out-of-scope' });
    expect(thrownBy(() => requireOwner({ portalOwner: 'merchant-42' }, undefined), ApiProblem).status).toBe(403);
  });

  it('puts the token in the link\'s fragment, which no server is sent', () => {
    expect(portalUrl('https://api.example/console/', 'v1.a.b')).toBe('https://api.example/console/#portal=v1.a.b');
    expect(portalUrl('https://api.example/console/#old', 'v1.a.b')).toBe('https://api.example/console/#portal=v1.a.b');
  });
});
