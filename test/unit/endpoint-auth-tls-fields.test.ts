/**
 * An endpoint's `auth` (OAuth2 client credentials) and `tls` (a client certificate) as every way in
 * checks them (docs/contract.md §18): their shapes, a secret value never plain text, the PEM and the
 * key against the certificate (crypto's own parsers, on the throwaway PEMs of
 * test/fixtures/tls/), the token URL through the endpoint guard; each refusal naming the
 * path, never quoting a secret. Then their JSON Schema, how they are shown (a secret never), where
 * a secret value may come from (the command, the sandbox's endpoints file), what an update sent back
 * as shown keeps, and how a ciphertext is bound to its path.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { headerSourceProblems } from '../../cli/commands/endpoint-common';
import { authText, endpointJson, showFields } from '../../cli/commands/endpoint-view';
import type { Target } from '../../cli/target';
import { checkEndpointFields, endpointProblems, parseEndpointFields, type EndpointRecord } from '../../lib/endpoints/endpoint';
import { endpointJsonSchema, type JsonSchema } from '../../lib/endpoints/json-schema';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { cipherPlace, secretValuePlaces } from '../../lib/endpoints/secret-values';
import { ConfigError } from '../../lib/errors';
import { parseEndpointsFile } from '../../sandbox/endpoints-file';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { thrownBy } from '../helpers/thrown';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url), 'utf8');
const CERT = fixture('client.pem');
const KEY = fixture('client.key.pem');
const OTHER_KEY = fixture('other-client.key.pem');
const CA = fixture('ca.pem');
/** A line of the key's base64, which no message or view may hold. */
const KEY_MATERIAL = KEY.split('\n')[1]!;
const OTHER_MATERIAL = OTHER_KEY.split('\n')[1]!;
const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:erp-client-AbCdEf';
const minimal = { name: 'erp', url: 'https://erp.example/in', eventTypes: ['*'] };
const AUTH = { type: 'oauth2-client-credentials', tokenUrl: 'https://idp.example/oauth2/token', clientId: 'handoff-erp', clientSecret: { secretArn: ARN } };

function problems(fields: Record<string, unknown>): [string, string][] {
  return checkEndpointFields({ ...minimal, ...fields }).problems.map((p) => [p.field, p.problem]);
}

describe('Field: auth', () => {
  it('takes a grant with the client secret by ARN or by value, scope and audience optional', () => {
    const byValue = { ...AUTH, clientSecret: { secret: 's3cret-value' }, scope: 'shipments:write events', audience: 'https://erp.example/' };

    expect(parseEndpointFields({ ...minimal, auth: AUTH }).auth).toEqual(AUTH);
    expect(parseEndpointFields({ ...minimal, auth: byValue }).auth).toEqual(byValue);
  });

  it('refuses a client secret given as plain text, naming auth.clientSecret and saying what to give, never the value', () => {
    const [[field, problem]] = problems({ auth: { ...AUTH, clientSecret: 's3cret-value' } }) as [[string, string]];

    expect(field).toBe('auth.clientSecret');
    expect(problem).toBe('must be {"secretArn": "<Secrets Manager secret ARN>"} (AWS) or {"secret": "<value>"} (the sandbox), never the value as plain text (the value is not shown)');
    expect(problem).not.toContain('s3cret-value');
  });

  it.each([
    ['another grant type', { type: 'password' }, 'auth.type', 'must be one of oauth2-client-credentials'],
    ['no client ID', { clientId: '' }, 'auth.clientId', 'must be a client ID: 1–256 visible ASCII characters, spaces within'],
    ['a scope with a line break', { scope: 'a\nb' }, 'auth.scope', 'must be a space-separated list of scopes: 1–1024 visible ASCII characters, spaces within'],
    ['a key of its own', { grant: 'x' }, 'auth.grant', expect.stringMatching(/^must be \{"type": "oauth2-client-credentials", "tokenUrl"/)],
  ])('refuses %s, naming the key', (_what, change, field, problem) => {
    expect(problems({ auth: { ...AUTH, ...change } })).toEqual([[field, problem]]);
  });

  it('checks the token URL as url is: the endpoint guard and no credentials, naming auth.tokenUrl (the URL not shown)', () => {
    const http = endpointProblems({ ...minimal, auth: { ...AUTH, tokenUrl: 'http://idp.example/token' } }, DEFAULT_DEPLOYMENT).problems;
    const loopback = endpointProblems({ ...minimal, auth: { ...AUTH, tokenUrl: 'https://127.0.0.1/token' } }, DEFAULT_DEPLOYMENT).problems;
    const userinfo = endpointProblems({ ...minimal, auth: { ...AUTH, tokenUrl: 'https://client:pw@idp.example/token' } }, DEFAULT_DEPLOYMENT).problems;

    expect(http.map((p) => p.field)).toEqual(['auth.tokenUrl']);
    expect(http[0]!.problem).toMatch(/^is refused: /);
    expect(loopback.map((p) => p.field)).toEqual(['auth.tokenUrl']);
    expect(userinfo).toEqual([{ field: 'auth.tokenUrl', problem: expect.stringMatching(/^must not carry credentials/) }]);
    expect(JSON.stringify(userinfo)).not.toContain(':pw@');
    expect(endpointProblems({ ...minimal, auth: { ...AUTH, tokenUrl: 'http://127.0.0.1/token' } }, { ...DEFAULT_DEPLOYMENT, allowHttp: true, allowPrivateCidrs: ['127.0.0.0/8'] }).problems).toEqual([]);
  });
});

describe('Field: tls', () => {
  it('takes a certificate and its key (by value or by ARN), and a CA', () => {
    const tls = { clientCertificate: CERT, privateKey: { secret: KEY }, ca: CA };

    expect(parseEndpointFields({ ...minimal, tls }).tls).toEqual(tls);
    expect(parseEndpointFields({ ...minimal, tls: { clientCertificate: { secretArn: ARN }, privateKey: { secretArn: ARN } } }).tls).toBeDefined();
  });

  it("refuses a key that is not the certificate's, naming tls.privateKey, never the key", () => {
    const found = problems({ tls: { clientCertificate: CERT, privateKey: { secret: OTHER_KEY } } });

    expect(found).toEqual([['tls.privateKey', "is not the key of tls.clientCertificate (the first certificate's public key is another's; the value is not shown)"]]);
    expect(JSON.stringify(found)).not.toContain(OTHER_MATERIAL);
  });

  it.each([
    ['a certificate that is no PEM', { clientCertificate: 'not a certificate' }, 'tls.clientCertificate', /^must be PEM: one or more -----BEGIN CERTIFICATE----- blocks/],
    ['a key given in a certificate block', { clientCertificate: KEY }, 'tls.clientCertificate', /^must be PEM/],
    [
      'a certificate block that does not parse',
      { clientCertificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' },
      'tls.clientCertificate',
      /^holds a CERTIFICATE block that is no X\.509 certificate/,
    ],
    ['a chain over 32 KiB', { clientCertificate: CERT.repeat(64) }, 'tls.clientCertificate', /^must be at most 32 KiB of PEM/],
    ['a key as plain text', { privateKey: KEY }, 'tls.privateKey', /never the value as plain text/],
    ['a key that is no PEM', { privateKey: { secret: 'not a key' } }, 'tls.privateKey', /^must be PEM: one -----BEGIN PRIVATE KEY----- block/],
    ['a key with a passphrase', { privateKey: { secret: KEY.replaceAll('PRIVATE KEY', 'ENCRYPTED PRIVATE KEY') } }, 'tls.privateKey', /^must not be encrypted with a passphrase/],
    ['a key that does not parse', { privateKey: { secret: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----' } }, 'tls.privateKey', /^is no private key Node can read/],
    ['a CA that is no PEM', { ca: 'nope' }, 'tls.ca', /^must be PEM/],
    ['a certificate given as a secret value', { clientCertificate: { secret: CERT } }, 'tls.clientCertificate', /^must be PEM text \(-----BEGIN CERTIFICATE-----…\) or \{"secretArn"/],
  ])('refuses %s, naming the key and never quoting it', (_what, change, field, problem) => {
    const found = problems({ tls: { clientCertificate: CERT, privateKey: { secret: KEY }, ...change } });

    expect(found).toEqual([[field, expect.stringMatching(problem)]]);
    expect(JSON.stringify(found)).not.toContain(KEY_MATERIAL);
  });

  it('needs an https url, where the deployment allows http too: refused beside an http one, naming tls (a shape refused is named alone)', () => {
    const allowHttp = { ...DEFAULT_DEPLOYMENT, allowHttp: true };
    const tls = { clientCertificate: CERT, privateKey: { secret: KEY } };

    expect(endpointProblems({ ...minimal, url: 'http://erp.example/in', tls }, allowHttp).problems).toEqual([
      { field: 'tls', problem: 'needs an https url: a client certificate is presented in a TLS handshake, which an http URL never makes' },
    ]);
    expect(endpointProblems({ ...minimal, url: 'http://erp.example/in', tls: { ...tls, privateKey: { secret: OTHER_KEY } } }, allowHttp).problems.map((p) => p.field)).toEqual(['tls.privateKey']);
    expect(endpointProblems({ ...minimal, tls }, allowHttp).problems).toEqual([]);
    expect(endpointProblems({ ...minimal, url: 'http://erp.example/in' }, allowHttp).problems).toEqual([]);
  });
});

describe('Their JSON Schema', () => {
  const properties = endpointJsonSchema().properties as Record<string, JsonSchema>;

  it('describes both as objects of their keys, the optional ones not required, no other key', () => {
    expect(properties.auth).toMatchObject({ type: 'object', required: ['type', 'tokenUrl', 'clientId', 'clientSecret'], additionalProperties: false });
    expect(Object.keys(properties.auth!.properties as object)).toEqual(['type', 'tokenUrl', 'clientId', 'clientSecret', 'scope', 'audience']);
    expect(properties.tls).toMatchObject({ type: 'object', required: ['clientCertificate', 'privateKey'], additionalProperties: false });
    expect(String(properties.tls!.description)).toContain('--from-file');
  });
});

describe('How they are shown', () => {
  const record: EndpointRecord = {
    fields: parseEndpointFields({
      ...minimal,
      auth: { ...AUTH, tokenUrl: 'https://idp.example/token?tenant=acme', clientSecret: { secret: 's3cret-value' }, scope: 'shipments' },
      tls: { clientCertificate: CERT, privateKey: { secret: KEY }, ca: CA },
    }),
    state: 'enabled',
    createdAt: 1,
    updatedAt: 1,
  };

  it('in JSON: the grant with its token URL redacted, the certificate as given, each secret value as {"secret": true}', () => {
    const view = endpointJson(record, 2);

    expect(view.auth).toEqual({ ...AUTH, tokenUrl: 'https://idp.example/token?tenant=***', clientSecret: { secret: true }, scope: 'shipments' });
    expect(view.tls).toEqual({ clientCertificate: CERT, privateKey: { secret: true }, ca: CA });
    expect(JSON.stringify(view)).not.toContain('s3cret-value');
    expect(JSON.stringify(view)).not.toContain(KEY_MATERIAL);
    expect(endpointJson({ ...record, fields: { ...record.fields, auth: AUTH as never } }).auth!.clientSecret).toEqual({ secretArn: ARN });
    expect(endpointJson({ ...record, fields: minimal as never }).auth).toBeNull();
  });

  it("in text: a row each, the certificate's subject and expiry, a secret only as set", () => {
    const text = showFields(record, Date.parse('2026-12-05T00:00:00Z'));

    expect(text).toMatch(/^auth\s+oauth2-client-credentials at https:\/\/idp\.example\/token\?tenant=\*\*\*; client handoff-erp; scope shipments; client secret set$/m);
    expect(text).toMatch(/^tls\s+certificate CN=handoff-test-client, O=handoff tests, expires .*2126.*; key set; CA CN=handoff test CA, expires .*2126/m);
    expect(text).not.toContain('s3cret-value');
    expect(text).not.toContain(KEY_MATERIAL);
    expect(authText(AUTH as never)).toContain(`client secret in Secrets Manager (${ARN})`);
  });
});

describe('Where a secret value comes from', () => {
  const sandbox = { connection: { kind: 'sandbox' } } as unknown as Target;
  const aws = { connection: { kind: 'aws' } } as unknown as Target;

  it('takes an ARN in AWS and a value in the sandbox, refusing each where it does not belong, naming the path', () => {
    const byArn = parseEndpointFields({ ...minimal, auth: AUTH, tls: { clientCertificate: { secretArn: ARN }, privateKey: { secretArn: ARN } } });
    const byValue = parseEndpointFields({ ...minimal, auth: { ...AUTH, clientSecret: { secret: 'v' } }, tls: { clientCertificate: CERT, privateKey: { secret: KEY } } });

    expect(headerSourceProblems(byArn, aws)).toEqual([]);
    expect(headerSourceProblems(byValue, sandbox)).toEqual([]);
    expect(headerSourceProblems(byArn, sandbox).map((p) => [p.field, p.problem])).toEqual([
      ['auth.clientSecret', 'names a Secrets Manager secret, which the sandbox has none of: give the value itself, {"secret": "…"} (stored encrypted)'],
      ['tls.clientCertificate', 'names a Secrets Manager secret, which the sandbox has none of: give the PEM itself'],
      ['tls.privateKey', 'names a Secrets Manager secret, which the sandbox has none of: give the value itself, {"secret": "…"} (stored encrypted)'],
    ]);
    expect(headerSourceProblems(byValue, aws).map((p) => p.field)).toEqual(['auth.clientSecret', 'tls.privateKey']);
  });

  it("refuses an ARN in the sandbox's endpoints file, naming the path", () => {
    const file = JSON.stringify({ endpoints: [{ ...minimal, tls: { clientCertificate: CERT, privateKey: { secretArn: ARN } } }] });

    const refused = thrownBy(() => parseEndpointsFile('endpoints.json', file, DEFAULT_DEPLOYMENT), ConfigError);

    expect(refused.message).toBe(
      'HANDOFF_ENDPOINTS_FILE endpoints.json endpoints[0]: endpoint "erp": tls.privateKey names a Secrets Manager secret, which the sandbox has none of: give the value itself, {"secret": "…"}',
    );
  });

  it('finds every secret value by its path, text headers and an inline certificate not among them', () => {
    const fields = parseEndpointFields({ ...minimal, headers: { 'X-Tenant': 'acme', 'X-Key': { secret: 'k' } }, auth: AUTH, tls: { clientCertificate: CERT, privateKey: { secret: KEY }, ca: { secretArn: ARN } } });

    expect(secretValuePlaces(fields).map((p) => p.path)).toEqual(['headers.X-Key', 'auth.clientSecret', 'tls.privateKey', 'tls.ca']);
  });
});

describe("A secret value's ciphertext is bound to its endpoint and path", () => {
  const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());

  it('decrypts at its own path only: not at another, nor as a header of the same name, nor as the signing secret', async () => {
    const stored = await cipher.encrypt('s3cret-value', 'erp', cipherPlace('auth.clientSecret'));

    await expect(cipher.decrypt(stored, 'erp', cipherPlace('auth.clientSecret'))).resolves.toBe('s3cret-value');
    await expect(cipher.decrypt(stored, 'erp', cipherPlace('tls.privateKey'))).rejects.toThrow('the secret of endpoint erp does not decrypt with this key');
    // A header may be named auth.clientSecret: its context is a header's, not this one.
    await expect(cipher.decrypt(stored, 'erp', cipherPlace('headers.auth.clientSecret'))).rejects.toThrow();
    await expect(cipher.decrypt(stored, 'crm', cipherPlace('auth.clientSecret'))).rejects.toThrow();
    await expect(cipher.decrypt(stored, 'erp')).rejects.toThrow();
  });
});
