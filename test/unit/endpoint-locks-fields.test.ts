/**
 * The fields of receivers behind locks (docs/contract.md §18) as every way in checks them
 * (`parseEndpointFields`: the registry, the endpoints file, the construct, the command, the API):
 * `headers`, each refusal naming the header's path (`headers.Webhook-Id`); `signature`, which must be
 * the secret's scheme; `publicKey`, set from an ed25519 secret. Then how they are shown (a secret
 * header never), read from the command line, where a secret header may come from, and how a secret
 * header's ciphertext is bound to its header.
 */
import { describe, expect, it } from 'vitest';
import { checkFields, EndpointFieldsUsageError, headerSourceProblems } from '../../cli/commands/endpoint-common';
import { headersFromOptions } from '../../cli/commands/endpoint-options';
import { endpointJson, headersText, showFields } from '../../cli/commands/endpoint-view';
import type { Target } from '../../cli/target';
import { DEFAULT_SETTINGS } from '../../lib/config';
import { checkEndpointFields, parseEndpointFields, resolveEndpoint, type EndpointFields, type EndpointRecord } from '../../lib/endpoints/endpoint';
import { endpointJsonSchema, type JsonSchema } from '../../lib/endpoints/json-schema';
import { generateSecret } from '../../lib/endpoints/secret';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { ConfigError, EndpointError } from '../../lib/errors';
import { parseEndpointsFile } from '../../sandbox/endpoints-file';
import { publicKeyOf } from '../../lib/webhook/signing-secret';
import { thrownBy } from '../helpers/thrown';

const minimal: EndpointFields = { name: 'erp', url: 'https://erp.example/in', eventTypes: ['*'] };
const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:erp-token-AbCdEf';
const HMAC_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const KEY = generateSecret('ed25519');
const OTHER_KEY = generateSecret('ed25519');
const ENCRYPTED = 'encrypted:local:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const deployment = { ...DEFAULT_SETTINGS, allowPrivateCidrs: [], allowHttp: false };

/** Every problem of the fields as given: [field, problem] pairs. */
function problems(fields: Record<string, unknown>): [string, string][] {
  return checkEndpointFields({ ...minimal, ...fields }).problems.map((p) => [p.field, p.problem]);
}

describe('Field: headers', () => {
  it('takes text values, and secret ones by ARN or by value; authorization among them', () => {
    const headers = { 'X-Tenant': 'acme-eu', Authorization: { secretArn: ARN }, 'X-Api-Key': { secret: 'k3y with spaces' }, 'X-Stored': { secret: ENCRYPTED } };

    expect(parseEndpointFields({ ...minimal, headers }).headers).toEqual(headers);
  });

  it.each([
    ['Webhook-Id', 'is refused: every webhook-… header is the request\'s own (docs/contract.md §3)'],
    ['webhook-signature', 'is refused: every webhook-… header is the request\'s own (docs/contract.md §3)'],
    ['Host', 'is refused: the request sets host itself'],
    ['Content-Length', 'is refused: the request sets content-length itself'],
    ['content-type', 'is refused: the request sets content-type itself'],
    ['Idempotency-Key', 'is refused: the request sets idempotency-key itself'],
    ['traceparent', 'is refused: the request sets traceparent itself'],
    ['TraceState', 'is refused: the request sets tracestate itself'],
    ['User-Agent', 'is refused: the request sets user-agent itself'],
    ['Transfer-Encoding', 'is refused: the request sets transfer-encoding itself'],
    ['Connection', 'is refused: the request sets connection itself'],
  ])('refuses the name %s, naming the header', (name, problem) => {
    const [only, ...rest] = problems({ headers: { 'X-Tenant': 'acme', [name]: 'x' } });

    expect(rest).toEqual([]);
    expect(only![0]).toBe(`headers.${name}`);
    expect(only![1]).toContain(problem);
  });

  it.each([
    ['X Tenant', 'a space'],
    ['X-Tenant:', 'a colon'],
    ['', 'nothing'],
    ['X-\u00e9', 'a letter past ASCII'],
    ['x'.repeat(129), 'too long'],
  ])('refuses %j (%s) as no header name, naming it', (name) => {
    const [only] = problems({ headers: { [name]: 'x' } });

    expect(only).toEqual([`headers.${name.slice(0, 80)}`, expect.stringMatching(/^is not a header name: 1–128 of A-Z a-z 0-9/)]);
  });

  it('refuses one name twice in another case, naming the second', () => {
    expect(problems({ headers: { 'X-Tenant': 'a', 'x-tenant': 'b' } })).toEqual([['headers.x-tenant', 'is the header "X-Tenant" again: names are case-insensitive']]);
  });

  it.each(['__proto__', 'constructor', 'prototype'])('refuses a header named %s, which would otherwise be dropped without a word', (name) => {
    const input = JSON.parse(`{"X-Tenant": "acme", "${name}": "x"}`) as Record<string, unknown>;

    expect(problems({ headers: input })).toEqual([[`headers.${name}`, 'is refused: a forbidden key (lib/event.ts), which no header needs']]);
  });

  it.each([
    ['a control character', 'Bearer a\nb'],
    ['a tab', 'a\tb'],
    ['a character past ASCII', 'caf\u00e9'],
    ['a leading space', ' token'],
    ['nothing', ''],
    ['4,097 characters', 'x'.repeat(4097)],
    ['a number', 42],
    ['an unknown object', { value: 'x' }],
    ['an ARN that is not one', { secretArn: 'arn:aws:s3:::bucket' }],
    ['a secret and an ARN at once', { secret: 'x', secretArn: ARN }],
    ['a secret value with a newline', { secret: 'a\nb' }],
  ])('refuses a value with %s, naming the header, never the value', (_what, value) => {
    const found = problems({ headers: { 'X-Api-Key': value } });

    expect(found).toEqual([['headers.X-Api-Key', expect.stringMatching(/^must be a header value: 1–4096 visible ASCII characters/)]]);
    expect(JSON.stringify(found)).not.toContain('Bearer');
  });

  it('takes 20 headers, refuses 21', () => {
    const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v']));

    expect(problems({ headers: many(20) })).toEqual([]);
    expect(problems({ headers: many(21) })).toEqual([['headers', 'may have at most 20 headers']]);
    expect(problems({ headers: ['X-Tenant: a'] })).toEqual([['headers', 'must be an object of header name → value, e.g. {"X-Tenant": "acme"}']]);
  });

  it('says as much in JSON Schema: its names, values and count', () => {
    const schema = (endpointJsonSchema().properties as Record<string, JsonSchema>).headers!;

    expect(schema).toMatchObject({ type: 'object', maxProperties: 20, propertyNames: { maxLength: 128, pattern: expect.any(String) } });
    const values = (schema.additionalProperties as { anyOf: JsonSchema[] }).anyOf;
    expect(values).toEqual([
      expect.objectContaining({ type: 'string', maxLength: 4096 }),
      expect.objectContaining({ type: 'object', required: ['secretArn'], additionalProperties: false }),
      expect.objectContaining({ type: 'object', required: ['secret'], additionalProperties: false }),
    ]);
  });
});

describe('Fields: signature and publicKey', () => {
  it('sets the public key from an ed25519 secret, which then signs v1a', () => {
    const fields = parseEndpointFields({ ...minimal, signature: 'ed25519', secret: KEY });

    expect(fields.publicKey).toBe(publicKeyOf(KEY));
    const endpoint = resolveEndpoint({ fields, state: 'enabled', createdAt: 1, updatedAt: 1 }, deployment);
    expect(endpoint).toMatchObject({ secret: KEY, signature: 'ed25519' });
  });

  it('refuses a signature that is not the secret’s scheme, naming signature', () => {
    expect(problems({ signature: 'ed25519', secret: HMAC_SECRET })).toEqual([
      ['signature', expect.stringMatching(/^is ed25519, but the secret is an HMAC-SHA256 one \(whsec_…\): rotate-secret --signature ed25519/)],
    ]);
    expect(problems({ secret: KEY })).toEqual([['signature', 'is hmac-sha256 (the default), but the secret is an ed25519 key (whsk_…): set signature to ed25519']]);
    expect(problems({ signature: 'hmac-sha256', secret: KEY })).toEqual([['signature', 'is hmac-sha256, but the secret is an ed25519 key (whsk_…): set signature to ed25519']]);
    expect(problems({ signature: 'rsa', secret: KEY })).toEqual([['signature', 'must be one of hmac-sha256, ed25519, got "rsa"']]);
  });

  it('tells an encrypted secret’s scheme by its public key, and leaves one in Secrets Manager to the consumer', () => {
    expect(problems({ signature: 'ed25519', secret: ENCRYPTED, publicKey: publicKeyOf(KEY) })).toEqual([]);
    expect(problems({ signature: 'ed25519', secret: ENCRYPTED })).toEqual([['signature', expect.stringMatching(/^is ed25519, but the secret is an HMAC-SHA256 one/)]]);
    expect(problems({ secret: ENCRYPTED, publicKey: publicKeyOf(KEY) })).toEqual([['signature', expect.stringMatching(/^is hmac-sha256 \(the default\)/)]]);
    expect(problems({ signature: 'ed25519', secret: ARN })).toEqual([]);
    expect(problems({ signature: 'ed25519', secret: ARN, publicKey: publicKeyOf(KEY) })).toEqual([]);
  });

  it('refuses a public key that is not the secret’s, one beside an HMAC secret, and one without a secret', () => {
    expect(problems({ signature: 'ed25519', secret: KEY, publicKey: publicKeyOf(OTHER_KEY) })).toEqual([
      ['publicKey', "is not the secret's public key: leave it out, it is set from the secret"],
    ]);
    expect(problems({ secret: HMAC_SECRET, publicKey: publicKeyOf(KEY) })).toEqual([
      ['publicKey', 'is for an ed25519 secret (whsk_…), and the secret is an HMAC-SHA256 one (whsec_…)'],
    ]);
    expect(problems({ publicKey: publicKeyOf(KEY) })).toEqual([['publicKey', 'needs the ed25519 secret it is the public key of']]);
    expect(problems({ signature: 'ed25519', secret: ARN, publicKey: 'whpk_short=' })).toEqual([['publicKey', 'must be an ed25519 public key: whpk_ and the base64 of its 32 bytes']]);
  });

  it('refuses, when the consumer resolves it, a secret read from Secrets Manager of another scheme', () => {
    const fields = parseEndpointFields({ ...minimal, signature: 'ed25519', secret: ARN });
    const record: EndpointRecord = { fields, state: 'enabled', createdAt: 1, updatedAt: 1 };

    expect(resolveEndpoint(record, deployment, KEY).secret).toBe(KEY);
    const error = thrownBy(() => resolveEndpoint(record, deployment, HMAC_SECRET), EndpointError);
    expect(error.field).toBe('signature');
    expect(error.message).not.toContain(HMAC_SECRET.slice(6));
  });
});

describe('How they are shown', () => {
  const record: EndpointRecord = {
    fields: parseEndpointFields({
      ...minimal,
      signature: 'ed25519',
      secret: KEY,
      headers: { 'X-Tenant': 'acme-eu', Authorization: { secretArn: ARN }, 'X-Api-Key': { secret: 'k3y-value' } },
    }),
    state: 'enabled',
    createdAt: 1,
    updatedAt: 1,
  };

  it('in JSON: the public key as it is, text headers as they are, a secret one as {"secret": true}', () => {
    const view = endpointJson(record, 2);

    expect(view).toMatchObject({
      secret: 'set',
      publicKey: publicKeyOf(KEY),
      headers: { 'X-Tenant': 'acme-eu', Authorization: { secret: true }, 'X-Api-Key': { secret: true } },
      settings: { signature: 'ed25519' },
    });
    expect(JSON.stringify(view)).not.toContain('k3y-value');
    expect(JSON.stringify(view)).not.toContain(ARN);
    expect(JSON.stringify(view)).not.toContain(KEY.slice(5));
  });

  it('in text: a row each, a secret value never', () => {
    const text = showFields(record, 2);

    expect(text).toMatch(/^secret\s+set \(ed25519 key pair\)$/m);
    expect(text).toContain(`public key   ${publicKeyOf(KEY)}`);
    expect(text).toMatch(/^headers\s+X-Tenant: acme-eu; Authorization: \(secret, in Secrets Manager\); X-Api-Key: \(secret\)$/m);
    expect(text).toMatch(/^signature\s+ed25519$/m);
    expect(text).not.toContain('k3y-value');
    expect(headersText({ A: 'b' })).toBe('A: b');
  });
});

describe('From the command line, and where a secret header comes from', () => {
  it("reads --headers 'NAME: VALUE', split at the first colon", () => {
    expect(headersFromOptions(['X-Tenant: acme', 'X-Url:https://a.example:8443/x'])).toEqual({ 'X-Tenant': 'acme', 'X-Url': 'https://a.example:8443/x' });
    expect(() => headersFromOptions(['token-without-name'])).toThrow(/--headers takes 'NAME: VALUE'/);
    expect(() => headersFromOptions(['token-without-name'])).not.toThrow(/token-without-name/);
    expect(() => headersFromOptions(['A: 1', 'A: 2'])).toThrow('--headers names "A" twice: give it once');
  });

  const sandbox = { connection: { kind: 'sandbox', stateFile: '/tmp/s.json', sqsEndpoint: 'http://127.0.0.1:1', dynamodbEndpoint: 'http://127.0.0.1:2' } } as unknown as Target;
  const aws = { connection: { kind: 'aws' } } as unknown as Target;

  it('takes an ARN in AWS and a value in the sandbox, and refuses each where it does not belong, naming the header', () => {
    const byArn = { headers: { Authorization: { secretArn: ARN } } } as const;
    const byValue = { headers: { Authorization: { secret: 'Bearer t0k3n' } } } as const;

    expect(headerSourceProblems(byArn, aws)).toEqual([]);
    expect(headerSourceProblems(byValue, sandbox)).toEqual([]);
    expect(headerSourceProblems(byArn, sandbox)).toEqual([{ field: 'headers.Authorization', problem: expect.stringMatching(/^names a Secrets Manager secret, which the sandbox has none of/) }]);
    expect(headerSourceProblems(byValue, aws)).toEqual([{ field: 'headers.Authorization', problem: expect.stringMatching(/^holds a secret value: in AWS a secret header is kept in Secrets Manager/) }]);
    // The endpoint's own, encrypted already, kept by an update: neither's to refuse.
    expect(headerSourceProblems({ headers: { Authorization: { secret: 'encrypted:kms:AAAA' } } }, aws)).toEqual([]);
  });

  it("takes the sandbox's endpoints file with an ed25519 key and a secret header value, and refuses an ARN there, naming the header", () => {
    const file = (headers: unknown) => JSON.stringify({ endpoints: [{ ...minimal, signature: 'ed25519', secret: KEY, headers }] });

    const [read] = parseEndpointsFile('endpoints.json', file({ Authorization: { secret: 'Bearer t0k3n' } }), deployment);
    const refused = thrownBy(() => parseEndpointsFile('endpoints.json', file({ Authorization: { secretArn: ARN } }), deployment), ConfigError);

    expect(read!.fields).toMatchObject({ publicKey: publicKeyOf(KEY), headers: { Authorization: { secret: 'Bearer t0k3n' } } });
    expect(refused.message).toBe(
      'HANDOFF_ENDPOINTS_FILE endpoints.json endpoints[0]: endpoint "erp": headers.Authorization names a Secrets Manager secret, which the sandbox has none of: give the value itself, {"secret": "…"}',
    );
  });

  it('refuses at the command, the header named in the message and in the problems the API names', () => {
    const aws = { connection: { kind: 'aws' }, description: 'the names given', deployment: deployment } as unknown as Target;
    const error = thrownBy(() => checkFields({ ...minimal, headers: { 'Webhook-Id': 'x', 'X-Key': { secret: 'v' } } }, aws, 1), EndpointFieldsUsageError);

    expect(error.message).toMatch(/^endpoint "erp": headers\.Webhook-Id is refused: every webhook-… header is the request's own/);
    expect(error.problems.map((p) => p.field)).toEqual(['headers.Webhook-Id']);
    const second = thrownBy(() => checkFields({ ...minimal, headers: { 'X-Key': { secret: 'v' } } }, aws, 1), EndpointFieldsUsageError);
    expect(second.problems.map((p) => p.field)).toEqual(['headers.X-Key']);
  });
});

describe('A secret header’s ciphertext is bound to its endpoint and header', () => {
  const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());

  it('decrypts under its own header (in any case) only: not as another header, another endpoint’s, nor the signing secret', async () => {
    const stored = await cipher.encrypt('Bearer t0k3n', 'erp', 'Authorization');

    await expect(cipher.decrypt(stored, 'erp', 'authorization')).resolves.toBe('Bearer t0k3n');
    await expect(cipher.decrypt(stored, 'erp', 'X-Api-Key')).rejects.toThrow('the secret of endpoint erp does not decrypt with this key');
    await expect(cipher.decrypt(stored, 'crm', 'Authorization')).rejects.toThrow();
    await expect(cipher.decrypt(stored, 'erp')).rejects.toThrow();
    // Nor the signing secret's as a header (whose value the consumer would send to the URL).
    await expect(cipher.decrypt(await cipher.encrypt(HMAC_SECRET, 'erp'), 'erp', 'Authorization')).rejects.toThrow();
  });
});
