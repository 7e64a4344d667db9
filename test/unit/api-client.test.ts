/**
 * The API client's pure parts: the URL of a call (path segments and query encoded as SigV4 signs
 * them), the region of an API URL, the error an answer stands for, the options a client refuses,
 * and SigV4 signing, checked against AWS's published test vector and against a signature computed
 * here from the specification with node:crypto (so the check is not the signer checking itself).
 */
import { describe, expect, it } from 'vitest';
import { HandoffClient } from '../../api/client/client';
import { HandoffApiError, HandoffClientConfigError } from '../../api/client/errors';
import {
  baseUrlOf,
  errorOfAnswer,
  pathOf,
  queryParameters,
  queryString,
  regionOfUrl,
  signedHeaders,
  signingRegion,
  urlOf,
} from '../../api/client/request';
import { specificationSignature } from '../helpers/sigv4-spec';
import { thrownBy } from '../helpers/thrown';

/** An answer's headers, as fetch's Headers reads them. */
function headersOf(values: Record<string, string> = {}) {
  return new Headers(values);
}

describe('Function: pathOf', () => {
  it('encodes each value as one path segment', () => {
    expect(pathOf('/v1/endpoints/{name}/disable', { name: 'a/b c' })).toBe('/v1/endpoints/a%2Fb%20c/disable');
  });

  it('encodes the characters encodeURIComponent leaves (! \' ( ) *) as SigV4 does', () => {
    expect(pathOf('/v1/events/{eventId}', { eventId: "evt:1!'()*" })).toBe('/v1/events/evt%3A1%21%27%28%29%2A');
  });

  it('refuses an empty value, which would name another resource', () => {
    expect(() => pathOf('/v1/endpoints/{name}', { name: '' })).toThrow('the path parameter name is empty');
  });
});

describe('Function: queryParameters and queryString', () => {
  it('leaves out undefined values and writes numbers, booleans and dates as text', () => {
    // Prepare
    const query = { owner: 'acme', state: undefined, limit: 50, ordered: true, since: new Date('2026-12-01T10:00:00.000Z') };

    // Act
    const parameters = queryParameters(query);

    // Assess
    expect(parameters).toEqual({ owner: 'acme', limit: '50', ordered: 'true', since: '2026-12-01T10:00:00.000Z' });
  });

  it('sorts the parameters by name and encodes a space as %20, never +', () => {
    expect(queryString({ z: 'a b', a: 'x+y', m: 'é' })).toBe('a=x%2By&m=%C3%A9&z=a%20b');
  });

  it('is empty when no parameter is left', () => {
    expect(queryString(queryParameters({ cursor: undefined }))).toBe('');
  });
});

describe('Function: urlOf', () => {
  it("keeps the base URL's path (a stage or a custom domain's mapping) before the API path", () => {
    const base = baseUrlOf('https://api.example.com/handoff/');
    expect(urlOf(base, '/v1/endpoints', { limit: '10' }).href).toBe('https://api.example.com/handoff/v1/endpoints?limit=10');
  });

  it('has no query mark without parameters', () => {
    expect(urlOf(baseUrlOf('http://127.0.0.1:4001'), '/v1/dead').href).toBe('http://127.0.0.1:4001/v1/dead');
  });
});

describe('Function: baseUrlOf', () => {
  it.each([
    ['not a URL', 'abc', 'the API URL is not a URL'],
    ['a scheme other than http(s)', 'ftp://example.com', 'the API URL must be http or https, not ftp:'],
    ['a user name and password', 'https://me:pw@example.com', 'the API URL must not carry a user name or password'],
    ['a query', 'https://example.com/?token=x', 'the API URL must not carry a query or a fragment'],
  ])('refuses %s', (_case, url, message) => {
    const error = thrownBy(() => baseUrlOf(url), HandoffClientConfigError);
    expect(error.code).toBe('invalid-url');
    expect(error.message).toContain(message);
    // What was refused is not echoed: it may hold a password or a token.
    expect(error.message).not.toContain('pw');
  });
});

describe('Function: regionOfUrl and signingRegion', () => {
  it.each([
    ['https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com', 'eu-west-1'],
    ['https://a1b2c3d4e5.execute-api.us-gov-west-1.amazonaws.com/prod', 'us-gov-west-1'],
    ['https://a1b2c3d4e5.execute-api.cn-north-1.amazonaws.com.cn', 'cn-north-1'],
    ['https://api.example.com', undefined],
    ['https://execute-api.eu-west-1.amazonaws.com.example.com', undefined],
  ])('reads the region of %s as %s', (url, region) => {
    expect(regionOfUrl(new URL(url))).toBe(region);
  });

  it("prefers the option to the URL's region, and the URL's to AWS_REGION", () => {
    const url = new URL('https://abc.execute-api.eu-west-1.amazonaws.com');
    expect(signingRegion('us-east-2', url, { AWS_REGION: 'ap-south-1' })).toBe('us-east-2');
    expect(signingRegion(undefined, url, { AWS_REGION: 'ap-south-1' })).toBe('eu-west-1');
    expect(signingRegion(undefined, new URL('https://api.example.com'), { AWS_REGION: 'ap-south-1' })).toBe('ap-south-1');
  });

  it('refuses to guess a region nothing names', () => {
    const error = thrownBy(() => signingRegion(undefined, new URL('https://api.example.com'), {}), HandoffClientConfigError);
    expect(error.code).toBe('no-region');
    expect(error.message).toBe('cannot tell the AWS region of api.example.com: give the client a region, or set AWS_REGION');
  });
});

describe('Function: errorOfAnswer', () => {
  it("reads a problem document: the code from its type's last segment, each bad field, the request ID", () => {
    // Prepare
    const problem = {
      type: 'https://handoff.dev/problems/invalid-request',
      title: 'Invalid request',
      status: 400,
      detail: '2 fields are invalid: url, timeoutMs',
      instance: 'req-123',
      errors: [
        { path: 'url', message: 'must be https' },
        { path: 'timeoutMs', message: 'is not a field' },
      ],
    };

    // Act
    const error = errorOfAnswer({ status: 400, headers: headersOf({ 'content-type': 'application/problem+json' }), text: JSON.stringify(problem) });

    // Assess
    expect(error).toBeInstanceOf(HandoffApiError);
    expect({ status: error.status, code: error.code, title: error.title, detail: error.detail, errors: error.errors, requestId: error.requestId }).toEqual({
      status: 400,
      code: 'invalid-request',
      title: 'Invalid request',
      detail: '2 fields are invalid: url, timeoutMs',
      errors: problem.errors,
      requestId: 'req-123',
    });
    expect(error.message).toBe('400 invalid-request: 2 fields are invalid: url, timeoutMs (url: must be https; timeoutMs: is not a field)');
  });

  it("reads API Gateway's own answer ({message}) by its status, with the request ID from its header", () => {
    const error = errorOfAnswer({ status: 403, headers: headersOf({ 'apigw-requestid': 'gw-9' }), text: '{"message":"Forbidden"}' });
    expect([error.code, error.title, error.detail, error.requestId, error.errors]).toEqual(['forbidden', 'Forbidden', 'Forbidden', 'gw-9', []]);
  });

  it('reads a throttle with the wait Retry-After asks for', () => {
    const error = errorOfAnswer({ status: 429, headers: headersOf({ 'retry-after': '7' }), text: '{"message":"Too Many Requests"}' });
    expect([error.code, error.retryAfterSeconds]).toEqual(['throttled', 7]);
  });

  it("names an answer that is neither by its status, and quotes none of its body", () => {
    const error = errorOfAnswer({ status: 502, headers: headersOf(), text: '<html>upstream secret-ish page</html>' });
    expect(error.code).toBe('bad-gateway');
    expect(error.detail).toBe('the API answered 502 without a problem document');
    expect(error.message).not.toContain('secret-ish');
  });

  it('names a status it has no word for by its number', () => {
    expect(errorOfAnswer({ status: 418, headers: headersOf(), text: '' }).code).toBe('http-418');
  });

  it('leaves out malformed field errors and keeps the well-formed ones', () => {
    const text = JSON.stringify({ type: 'https://handoff.dev/problems/invalid-request', title: 'Invalid request', status: 400, detail: 'd', errors: [{ path: 'a', message: 'm' }, { path: 1 }, 'x'] });
    expect(errorOfAnswer({ status: 400, headers: headersOf(), text }).errors).toEqual([{ path: 'a', message: 'm' }]);
  });

  it("escapes control characters in the message, so the server's text cannot steer a terminal", () => {
    const text = JSON.stringify({ type: 'https://handoff.dev/problems/endpoint-not-found', title: 'Not found', status: 404, detail: 'no endpoint \u001b[31mx\u202e' });
    const error = errorOfAnswer({ status: 404, headers: headersOf(), text });
    expect(error.message).toBe('404 endpoint-not-found: no endpoint \\u001b[31mx\\u202e');
  });
});

describe('Class: HandoffClient (options)', () => {
  it('refuses plain http to a host other than loopback: the credentials would travel unencrypted', () => {
    const error = thrownBy(() => new HandoffClient({ url: 'http://api.example.com', credentials: { token: 't' } }), HandoffClientConfigError);
    expect(error.code).toBe('invalid-url');
  });

  it("takes plain http to the sandbox's loopback address, and to any host when told to", () => {
    expect(new HandoffClient({ url: 'http://127.0.0.1:4001', credentials: { token: 't' } }).url.href).toBe('http://127.0.0.1:4001/');
    expect(new HandoffClient({ url: 'http://api.internal', credentials: { token: 't' }, allowInsecureHttp: true }).url.host).toBe('api.internal');
  });

  it('refuses an empty bearer token', () => {
    expect(thrownBy(() => new HandoffClient({ url: 'http://127.0.0.1:1', credentials: { token: '' } }), HandoffClientConfigError).code).toBe('invalid-credentials');
  });

  it('refuses credentials that are neither a token nor AWS credentials', () => {
    const credentials = { accessKeyId: 'AKID' } as unknown as { token: string };
    expect(thrownBy(() => new HandoffClient({ url: 'https://api.example.com', credentials, region: 'eu-west-1' }), HandoffClientConfigError).code).toBe(
      'invalid-credentials',
    );
  });

  it('needs a region to sign for only when it signs', () => {
    const previous = { region: process.env.AWS_REGION, fallback: process.env.AWS_DEFAULT_REGION };
    delete process.env.AWS_REGION;
    delete process.env.AWS_DEFAULT_REGION;
    try {
      const aws = { accessKeyId: 'AKID', secretAccessKey: 'secret' };
      expect(thrownBy(() => new HandoffClient({ url: 'https://api.example.com', credentials: aws }), HandoffClientConfigError).code).toBe('no-region');
      expect(new HandoffClient({ url: 'https://api.example.com', credentials: { token: 'jwt' } }).url.host).toBe('api.example.com');
    } finally {
      if (previous.region !== undefined) process.env.AWS_REGION = previous.region;
      if (previous.fallback !== undefined) process.env.AWS_DEFAULT_REGION = previous.fallback;
    }
  });
});

/** AWS's SigV4 test suite credentials (docs.aws.amazon.com, "Signature Version 4 test suite"). */
const SUITE = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const SUITE_DATE = new Date('2015-08-30T12:36:00Z');

describe('Function: signedHeaders (SigV4)', () => {
  it("signs AWS's get-vanilla test request to its published signature", async () => {
    // Act
    const headers = await signedHeaders(
      { method: 'GET', url: new URL('https://example.amazonaws.com/'), headers: {}, body: undefined },
      { credentials: SUITE, region: 'us-east-1', service: 'service', signingDate: SUITE_DATE },
    );

    // Assess
    expect(headers).toEqual({
      'x-amz-date': '20150830T123600Z',
      authorization:
        'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, ' +
        'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    });
  });

  it('signs a POST to execute-api (encoded path, query, body, session token) as the specification computes it', async () => {
    // Prepare
    const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'test/secret+key', sessionToken: 'session-token-1' };
    const url = urlOf(baseUrlOf('https://abc123.execute-api.eu-west-1.amazonaws.com'), pathOf('/v1/endpoints/{name}/disable', { name: 'evt:1 x' }), {
      ordered: 'true',
      note: 'a b+c',
    });
    const body = JSON.stringify({ reason: 'maintenance window' });
    const given = { accept: 'application/json', 'content-type': 'application/json', 'idempotency-key': 'key-1' };
    const signingDate = new Date('2026-12-04T23:59:58Z');

    // Act
    const headers = await signedHeaders({ method: 'POST', url, headers: given, body }, { credentials, region: 'eu-west-1', service: 'execute-api', signingDate });

    // Assess
    const expected = specificationSignature({
      method: 'POST',
      url,
      headers: { ...given, host: url.host, 'x-amz-date': '20261204T235958Z', 'x-amz-security-token': 'session-token-1' },
      body,
      ...credentials,
      region: 'eu-west-1',
      service: 'execute-api',
      amzDate: '20261204T235958Z',
    });
    expect(headers).toEqual({ ...given, 'x-amz-date': '20261204T235958Z', 'x-amz-security-token': 'session-token-1', authorization: expected });
    expect(expected).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/20261204\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=accept;content-type;host;idempotency-key;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    );
  });
});
