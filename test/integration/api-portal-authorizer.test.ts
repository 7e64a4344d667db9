/**
 * The portal API's Lambda authorizer (functions/api-portal-authorizer.ts) as AWS runs it: wired from
 * the environment the construct gives it (infra/delivery/functions.ts createPortalAuthorizer, the
 * seal key by its ARN), the real SDK client reading that secret from a loopback Secrets Manager
 * (`AWS_ENDPOINT_URL_SECRETS_MANAGER`), each request API Gateway's REQUEST authorizer event
 * (payload format 2.0) for a route of the portal API.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { PortalAuthorizerEvent, PortalAuthorizerResult } from '../../api/portal-authorizer';
import { mintPortalToken, portalKeyFrom } from '../../api/portal-link';
import { RESOURCE_ENV } from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import { startSecretsManagerStub, type SecretsManagerStub } from '../helpers/secrets-manager';
import { TEST_SEAL_KEY } from '../helpers/sqs-records';

const REGION = 'eu-west-1';
const SEAL_KEY_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff-seal-AbCdEf';
const KEY = portalKeyFrom(TEST_SEAL_KEY);
const OTHER_KEY = portalKeyFrom(Buffer.alloc(32, 9).toString('base64'));

/** API Gateway's REQUEST authorizer event for `GET /v1/endpoints` on the portal API. */
function authorizerEvent(authorization: string | undefined): PortalAuthorizerEvent & Record<string, unknown> {
  const headers: Record<string, string> = { host: 'p0rt4l.execute-api.eu-west-1.amazonaws.com', 'user-agent': 'Mozilla/5.0' };
  if (authorization !== undefined) headers.authorization = authorization;
  return {
    version: '2.0',
    type: 'REQUEST',
    routeArn: 'arn:aws:execute-api:eu-west-1:123456789012:p0rt4l/$default/GET/v1/endpoints',
    identitySource: authorization !== undefined ? [authorization] : [],
    routeKey: 'GET /v1/endpoints',
    rawPath: '/v1/endpoints',
    rawQueryString: '',
    headers,
    requestContext: {
      accountId: '123456789012',
      apiId: 'p0rt4l',
      domainName: 'p0rt4l.execute-api.eu-west-1.amazonaws.com',
      domainPrefix: 'p0rt4l',
      http: { method: 'GET', path: '/v1/endpoints', protocol: 'HTTP/1.1', sourceIp: '198.51.100.7', userAgent: 'Mozilla/5.0' },
      requestId: 'authz-req-1',
      routeKey: 'GET /v1/endpoints',
      stage: '$default',
      time: '05/Dec/2026:03:00:00 +0000',
      timeEpoch: Date.now(),
    } as PortalAuthorizerEvent['requestContext'],
  };
}

describe('functions/api-portal-authorizer.ts: the portal authorizer wired from its environment', () => {
  let secrets: SecretsManagerStub;
  let handler: (event: PortalAuthorizerEvent) => Promise<PortalAuthorizerResult>;
  const saved = { ...process.env };
  const written: string[] = [];

  beforeAll(async () => {
    secrets = await startSecretsManagerStub();
    secrets.answer(SEAL_KEY_ARN, { value: TEST_SEAL_KEY });
    Object.assign(process.env, {
      [RESOURCE_ENV.sealKeyArn]: SEAL_KEY_ARN,
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.url,
    });
    vi.spyOn(process.stdout, 'write').mockImplementation((line: string | Uint8Array) => (written.push(String(line)), true));
    ({ handler } = await import('../../functions/api-portal-authorizer'));
  });

  afterAll(async () => {
    vi.restoreAllMocks();
    process.env = saved;
    await secrets?.close();
  });

  it('answers a valid portal token with isAuthorized and the caller portal:<owner>, reading the seal key once for every request', async () => {
    const acme = mintPortalToken('acme', KEY, Date.now(), 600).token;
    const globex = mintPortalToken('globex.eu', KEY, Date.now(), 24 * 60 * 60).token;

    expect(await handler(authorizerEvent(`Bearer ${acme}`))).toEqual({ isAuthorized: true, context: { principal: 'portal:acme' } });
    expect(await handler(authorizerEvent(`Bearer ${globex}`))).toEqual({ isAuthorized: true, context: { principal: 'portal:globex.eu' } });
    expect(await handler(authorizerEvent(`Bearer ${acme}`))).toEqual({ isAuthorized: true, context: { principal: 'portal:acme' } });
    expect(secrets.calls).toEqual([`${SEAL_KEY_ARN} AWSCURRENT`]);
  });

  it('answers isAuthorized false, without an error, to an expired token, another key’s, none, and another scheme; the log names why and holds no token', async () => {
    const expired = mintPortalToken('acme', KEY, Date.now() - 2 * 3600_000, 3600).token;
    const forged = mintPortalToken('acme', OTHER_KEY, Date.now(), 3600).token;
    written.length = 0;

    expect(await handler(authorizerEvent(`Bearer ${expired}`))).toEqual({ isAuthorized: false });
    expect(await handler(authorizerEvent(`Bearer ${forged}`))).toEqual({ isAuthorized: false });
    expect(await handler(authorizerEvent(undefined))).toEqual({ isAuthorized: false });
    expect(await handler(authorizerEvent('Basic YWNtZTpzZWNyZXQ='))).toEqual({ isAuthorized: false });

    const lines = written.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.reason)).toEqual(['expired', 'bad-signature', 'no-credential', 'not-bearer']);
    for (const line of lines) expect(line).toMatchObject({ level: 'warn', message: 'portal request refused', function: 'portal-authorizer', requestId: 'authz-req-1' });
    for (const secret of [expired, forged, 'YWNtZTpzZWNyZXQ=']) expect(written.join('')).not.toContain(secret);
  });

  it('fails its cold start naming HANDOFF_SEAL_KEY_ARN when the construct did not set it', async () => {
    vi.resetModules();
    delete process.env[RESOURCE_ENV.sealKeyArn];
    try {
      const failure = await import('../../functions/api-portal-authorizer').then(
        () => undefined,
        (error: unknown) => error,
      );
      // A module loaded anew: its ConfigError is another class object, so matched by its fields.
      expect(failure).toMatchObject({ name: ConfigError.name, code: 'invalid-setting', variable: RESOURCE_ENV.sealKeyArn, message: `${RESOURCE_ENV.sealKeyArn} must be set` });
    } finally {
      process.env[RESOURCE_ENV.sealKeyArn] = SEAL_KEY_ARN;
    }
  });
});
