/**
 * The portal API's authorizer (api/portal-authorizer.ts): a portal token as the bearer proves
 * `portal:<owner>`; anything else is refused without an error, and logged with its reason, never
 * the token.
 */
import { describe, expect, it } from 'vitest';
import { bearerOf, createPortalAuthorizer, type PortalAuthorizerEvent } from '../../api/portal-authorizer';
import { mintPortalToken, portalKeyFrom } from '../../api/portal-link';
import { createLogger } from '../../lib/observability';

const KEY = portalKeyFrom(Buffer.alloc(32, 7).toString('base64'));
const OTHER_KEY = portalKeyFrom(Buffer.alloc(32, 8).toString('base64'));
const T0 = Date.parse('2026-12-05T03:00:00Z');

function authorizer(options: { key?: () => Promise<Buffer>; now?: number } = {}) {
  const lines: Record<string, unknown>[] = [];
  const handler = createPortalAuthorizer({
    key: options.key ?? (async () => KEY),
    now: () => options.now ?? T0,
    logger: createLogger({ service: 'test', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }),
  });
  return { handler, lines };
}

/** API Gateway's REQUEST authorizer event (payload 2.0) as far as the authorizer reads it. */
function event(authorization: string | undefined): PortalAuthorizerEvent {
  return {
    headers: { host: 'abc123.execute-api.eu-west-1.amazonaws.com', ...(authorization !== undefined ? { authorization } : {}) },
    identitySource: authorization !== undefined ? [authorization] : [],
    requestContext: { requestId: 'req-1', routeKey: 'GET /v1/endpoints' },
  };
}

describe('the portal authorizer', () => {
  it('lets a token this deployment signed in, as portal:<owner>, until it expires', async () => {
    const { token } = mintPortalToken('acme', KEY, T0, 3600);
    const { handler, lines } = authorizer();

    await expect(handler(event(`Bearer ${token}`))).resolves.toEqual({ isAuthorized: true, context: { principal: 'portal:acme' } });
    await expect(handler(event(`bearer ${token}`))).resolves.toEqual({ isAuthorized: true, context: { principal: 'portal:acme' } });
    expect(lines).toEqual([]);
  });

  it.each([
    ['an expired token', () => `Bearer ${mintPortalToken('acme', KEY, T0 - 7200_000, 3600).token}`, 'expired'],
    ['a token expiring this second', () => `Bearer ${mintPortalToken('acme', KEY, T0 - 60_000, 60).token}`, 'expired'],
    ['a token signed with another key', () => `Bearer ${mintPortalToken('acme', OTHER_KEY, T0, 3600).token}`, 'bad-signature'],
    ['a token with its owner changed', () => `Bearer ${retarget(mintPortalToken('acme', KEY, T0, 3600).token, 'globex')}`, 'bad-signature'],
    ['something that is no token', () => 'Bearer not-a-token', 'malformed'],
    ['no Authorization header', () => undefined, 'no-credential'],
    ['an empty Authorization header', () => '', 'no-credential'],
    ['another scheme', () => `Basic ${Buffer.from('acme:secret').toString('base64')}`, 'not-bearer'],
    ['a bare token without a scheme', () => mintPortalToken('acme', KEY, T0, 3600).token, 'not-bearer'],
    ['Bearer with no token', () => 'Bearer ', 'not-bearer'],
  ])('refuses %s without throwing, logging why and never the credential', async (_, authorization, reason) => {
    const header = authorization();
    const { handler, lines } = authorizer();

    await expect(handler(event(header))).resolves.toEqual({ isAuthorized: false });
    expect(lines).toEqual([expect.objectContaining({ level: 'warn', message: 'portal request refused', reason, requestId: 'req-1', route: 'GET /v1/endpoints' })]);
    const credential = header?.replace(/^\S+ /, '').trim();
    if (credential) expect(JSON.stringify(lines)).not.toContain(credential);
  });

  it('fails, logging it, when the key cannot be read: a deployment fault is a 500, not a link that ended', async () => {
    const { token } = mintPortalToken('acme', KEY, T0, 3600);
    const { handler, lines } = authorizer({ key: async () => Promise.reject(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' })) });

    await expect(handler(event(`Bearer ${token}`))).rejects.toThrow('Rate exceeded');
    expect(lines).toEqual([expect.objectContaining({ level: 'error', message: 'portal key unreadable', requestId: 'req-1' })]);
    expect(JSON.stringify(lines)).not.toContain(token);
  });

  it('reads no key for a request it refuses on its header alone', async () => {
    let reads = 0;
    const { handler } = authorizer({ key: async () => ((reads += 1), KEY) });

    await handler(event(undefined));
    await handler(event('Basic abc'));

    expect(reads).toBe(0);
  });
});

describe('bearerOf', () => {
  it('reads the Authorization header whatever its case, or the identity source when headers are absent', () => {
    expect(bearerOf({ headers: { Authorization: 'Bearer v1.a.b' } })).toBe('v1.a.b');
    expect(bearerOf({ headers: { authorization: '  BEARER   v1.a.b  ' } })).toBe('v1.a.b');
    expect(bearerOf({ identitySource: ['Bearer v1.a.b'] })).toBe('v1.a.b');
    expect(bearerOf({})).toBeUndefined();
    expect(bearerOf({ headers: { authorization: 'Bearer a b' } })).toBeNull();
    expect(bearerOf({ headers: { authorization: 'Token v1.a.b' } })).toBeNull();
  });
});

/** The same MAC over a payload naming another owner: what a holder who edits the link sends. */
function retarget(token: string, owner: string): string {
  const [version, payload, mac] = token.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  return [version, Buffer.from(JSON.stringify({ ...claims, owner }), 'utf8').toString('base64url'), mac].join('.');
}
