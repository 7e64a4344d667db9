/**
 * An endpoint's fields (docs/contract.md §11): each field's shape checked and named when refused;
 * the deployment's defaults and the rules between settings; which events an endpoint subscribes to
 * and how an event is routed; the deployment's settings as the state file and the stack carry them;
 * generated secrets.
 */
import { describe, expect, it } from 'vitest';
import { minimumRetentionDays } from '../../lib/config';
import {
  defaultEndpointFields,
  deploymentFromJson,
  deploymentToJson,
  parseEndpointFields,
  resolveEndpoint,
  route,
  subscribes,
  type DeploymentSettings,
  type Endpoint,
  type EndpointFields,
  type EndpointRecord,
} from '../../lib/endpoints/endpoint';
import { EndpointError } from '../../lib/errors';
import { generateSecret } from '../../lib/endpoints/secret';
import type { ShipmentEvent } from '../../lib/event';
import { retryPolicy } from '../../lib/policy';
import { createSigner } from '../../lib/webhook/signing-secret';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { thrownBy } from '../helpers/thrown';
import { TEST_SECRET as SECRET } from '../helpers/secrets';

const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/acme-AbCdEf';
/** A rotation's old secret, and the end of its overlap. */
const OLD_SECRET = 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=';
const OLD_SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/acme-old-GhIjKl';
const OVERLAP_END = Date.parse('2026-12-04T04:30:00Z');
/** Secrets as the registry stores what `handoff endpoint` writes (lib/endpoints/secret-cipher.ts): encrypted. */
const ENCRYPTED_KMS = `encrypted:kms:${Buffer.alloc(184, 7).toString('base64')}`;
const ENCRYPTED_LOCAL = `encrypted:local:${Buffer.alloc(79, 9).toString('base64')}`;

const deployment: DeploymentSettings = DEFAULT_DEPLOYMENT;

const minimal = { name: 'acme', url: 'https://hooks.acme.example/handoff', eventTypes: ['shipment.delivered'] };

function record(fields: Partial<EndpointFields>, state: EndpointRecord['state'] = 'enabled'): EndpointRecord {
  return { fields: { ...minimal, ...fields }, state, createdAt: 1, updatedAt: 1 };
}

/** The EndpointError `act` throws (fails the test when it throws nothing or something else). */
const refusal = (act: () => unknown) => thrownBy(act, EndpointError);

function event(status: ShipmentEvent['status'], data?: Record<string, unknown>, shipmentId = 'shp_1'): ShipmentEvent {
  return { id: `evt_${status}`, shipmentId, status, occurredAt: '2026-12-02T10:15:00Z', ...(data !== undefined ? { data } : {}) };
}

describe('Function: parseEndpointFields', () => {
  it('keeps every field as given, event types once each', () => {
    const input = {
      ...minimal,
      eventTypes: ['shipment.delivered', 'shipment.exception', 'shipment.delivered'],
      match: { 'data.carrier': ['acme', 'zephyr'], 'data.express': [true] },
      secret: SECRET,
      retrySchedule: [10, 60],
      maxAttempts: 4,
      attemptTimeoutMs: 5000,
      recovery: 'drop',
      ordering: 'per-shipment',
      onDead: 'hold',
      autoDisable: false,
      disableAfterSeconds: 3600,
      disableAfterFailures: 5,
      rateLimitPerSecond: 50,
      receiverRetentionSeconds: 86_400,
    };

    const fields = parseEndpointFields(input);

    expect(fields).toEqual({ ...input, eventTypes: ['shipment.delivered', 'shipment.exception'] });
  });

  it('accepts a Secrets Manager ARN as the secret', () => {
    expect(parseEndpointFields({ ...minimal, secret: SECRET_ARN }).secret).toBe(SECRET_ARN);
  });

  it('accepts a secret the registry encrypted (kms or local), as the secret and as the previous one, kept as stored', () => {
    const overlap = { previousSecret: ENCRYPTED_LOCAL, previousSecretUntil: OVERLAP_END };

    expect(parseEndpointFields({ ...minimal, secret: ENCRYPTED_KMS }).secret).toBe(ENCRYPTED_KMS);
    expect(parseEndpointFields({ ...minimal, secret: ENCRYPTED_KMS, ...overlap })).toEqual({ ...minimal, secret: ENCRYPTED_KMS, ...overlap });
    // A plain value from before encryption stays readable beside an encrypted one.
    expect(parseEndpointFields({ ...minimal, secret: ENCRYPTED_KMS, previousSecret: OLD_SECRET, previousSecretUntil: OVERLAP_END })).toMatchObject({ previousSecret: OLD_SECRET });
  });

  it('leaves an encrypted secret for the caller to decrypt, and takes the value it passes', () => {
    expect(resolveEndpoint(record({ secret: ENCRYPTED_KMS }), deployment).secret).toBeUndefined();
    expect(resolveEndpoint(record({ secret: ENCRYPTED_KMS }), deployment, SECRET).secret).toBe(SECRET);
  });

  it("keeps a rotation's previous secret, in either form, with the end of its overlap", () => {
    const overlap = { previousSecret: OLD_SECRET, previousSecretUntil: OVERLAP_END };

    expect(parseEndpointFields({ ...minimal, secret: SECRET, ...overlap })).toEqual({ ...minimal, secret: SECRET, ...overlap });
    expect(parseEndpointFields({ ...minimal, secret: SECRET_ARN, previousSecret: OLD_SECRET_ARN, previousSecretUntil: OVERLAP_END })).toMatchObject({
      previousSecret: OLD_SECRET_ARN,
    });
  });

  it.each([
    ['without its end', { secret: SECRET, previousSecret: OLD_SECRET }, 'previousSecret', 'needs previousSecret and previousSecretUntil together'],
    ['an end without the secret', { secret: SECRET, previousSecretUntil: OVERLAP_END }, 'previousSecretUntil', 'needs previousSecret and previousSecretUntil together'],
    ['without a secret', { previousSecret: OLD_SECRET, previousSecretUntil: OVERLAP_END }, 'previousSecret', 'needs a secret'],
    ['the same as the secret', { secret: SECRET, previousSecret: SECRET, previousSecretUntil: OVERLAP_END }, 'previousSecret', 'is the same as secret'],
    ['that cannot sign', { secret: SECRET, previousSecret: 'whsec_c2hvcnQ=', previousSecretUntil: OVERLAP_END }, 'previousSecret', 'decodes to a 5-byte key'],
    ['that is plain text', { secret: SECRET, previousSecret: 'hunter2-hunter2-hunter2', previousSecretUntil: OVERLAP_END }, 'previousSecret', 'must be a whsec_'],
    ['with an end that is no time', { secret: SECRET, previousSecret: OLD_SECRET, previousSecretUntil: '2026-12-04' }, 'previousSecretUntil', 'must be a time in epoch milliseconds, got "2026-12-04"'],
    ['with a fractional end', { secret: SECRET, previousSecret: OLD_SECRET, previousSecretUntil: 1.5 }, 'previousSecretUntil', 'must be a time in epoch milliseconds'],
  ])('refuses a previous secret %s, naming the field and never showing a secret', (_case, fields, field, problem) => {
    const error = refusal(() => parseEndpointFields({ ...minimal, ...fields }));

    expect(error.field).toBe(field);
    expect(error.message).toContain(`: ${field} ${problem}`);
    for (const secret of [SECRET.slice(6, 14), OLD_SECRET.slice(6, 14), 'hunter2', 'c2hvcnQ']) expect(error.message).not.toContain(secret);
  });

  it('refuses what is not an object, naming the endpoint as unknown', () => {
    for (const input of [null, [], 'acme', 3]) {
      const error = refusal(() => parseEndpointFields(input));
      expect(error.field).toBe('endpoint');
      expect(error.message).toBe('endpoint "?": endpoint must be a JSON object');
    }
  });

  const refused: [string, string, unknown, string][] = [
    ['name', 'missing', undefined, 'must be 1–64 characters of a-z 0-9 -'],
    ['name', 'upper case', 'Acme', 'must be 1–64 characters of a-z 0-9 -'],
    ['name', '65 characters', 'a'.repeat(65), 'must be 1–64 characters'],
    ['url', 'missing', undefined, 'must be an absolute https URL'],
    ['url', 'empty', '', 'must be an absolute https URL'],
    ['url', 'too long', `https://x.example/${'a'.repeat(2031)}`, 'must be at most 2048 characters, got 2049'],
    ['eventTypes', 'empty', [], 'must be a non-empty list'],
    ['eventTypes', 'an unknown type', ['shipment.lost'], 'holds "shipment.lost"'],
    ['eventTypes', 'not a list', 'shipment.delivered', 'must be a non-empty list'],
    ['match', 'not an object', ['data.carrier'], 'must be an object of field → list of values'],
    ['retrySchedule', 'empty', [], 'must be a list of 1–100 waits'],
    ['retrySchedule', 'past 12 h', [43_201], 'must be a list of 1–100 waits in whole seconds from 0 to 43200'],
    ['retrySchedule', 'fractions', [1.5], 'must be a list of 1–100 waits in whole seconds'],
    ['maxAttempts', 'zero', 0, 'must be a whole number from 1 to 100, got 0'],
    ['maxAttempts', 'text', '3', 'must be a whole number from 1 to 100, got "3"'],
    ['attemptTimeoutMs', 'too short', 99, 'must be a whole number from 100 to 880000, got 99'],
    ['recovery', 'unknown', 'retry', 'must be one of review, drop, got "retry"'],
    ['ordering', 'unknown', 'fifo', 'must be one of none, per-shipment, got "fifo"'],
    ['onDead', 'unknown', 'stop', 'must be one of continue, hold, got "stop"'],
    ['autoDisable', 'not a boolean', 'yes', 'must be true or false'],
    ['disableAfterSeconds', 'under a minute', 59, 'must be a whole number from 60'],
    ['disableAfterFailures', 'zero', 0, 'must be a whole number from 1 to 1000000'],
    ['rateLimitPerSecond', 'fractional', 0.5, 'must be a whole number from 1 to 10000, got 0.5'],
    ['receiverRetentionSeconds', 'zero', 0, 'must be a whole number from 1'],
  ];
  it.each(refused)('refuses %s (%s), naming the field', (field, _case, value, problem) => {
    const error = refusal(() => parseEndpointFields({ ...minimal, [field]: value }));

    expect(error.field).toBe(field);
    expect(error.message).toContain(`: ${field} ${problem}`);
    if (field !== 'name') expect(error.endpoint).toBe('acme');
  });

  it('refuses a field the contract does not have, listing those it does', () => {
    const error = refusal(() => parseEndpointFields({ ...minimal, retries: 3 }));

    expect(error.field).toBe('retries');
    expect(error.message).toMatch(/^endpoint "acme": retries is not an endpoint field \(fields: name, url, eventTypes, match, secret, /);
  });

  it.each([
    ['a key that is no field of an event', { 'payload.carrier': ['acme'] }, 'match.payload.carrier', 'is not a field to match'],
    ['no values', { 'data.carrier': [] }, 'match.data.carrier', 'must be a list of 1–64 values'],
    ['a value that is an object', { 'data.carrier': [{ name: 'acme' }] }, 'match.data.carrier', 'values must be strings'],
    ['a key deeper than 8 levels', { 'data.a.b.c.d.e.f.g.h.i': ['x'] }, 'match.data.a.b.c.d.e.f.g.h.i', 'is not a field to match'],
    ['__proto__ inside data', { 'data.__proto__': ['x'] }, 'match.data.__proto__', 'is not a field to match: __proto__ is a forbidden key, which no event holds'],
    ['constructor inside data', { 'data.carrier.constructor': ['x'] }, 'match.data.carrier.constructor', 'is not a field to match: constructor is a forbidden key, which no event holds'],
    ['prototype inside data', { 'data.prototype': ['x'] }, 'match.data.prototype', 'is not a field to match: prototype is a forbidden key, which no event holds'],
  ])('refuses a match with %s, naming its key', (_case, match, field, problem) => {
    const error = refusal(() => parseEndpointFields({ ...minimal, match }));

    expect(error.field).toBe(field);
    expect(error.message).toContain(`${field} ${problem}`);
  });

  it.each(['__proto__', 'constructor', 'prototype'])('refuses %s as a match key, given as JSON gives it (an own key)', (key) => {
    const error = refusal(() => parseEndpointFields({ ...minimal, match: JSON.parse(`{"${key}": ["acme"]}`) }));

    expect(error.message).toBe(`endpoint "acme": match.${key} is not a field to match: use shipmentId, status or data.<field>[.<field>…]`);
  });

  it('quotes a name, a field, a match key and an event type it refuses inert, on one line', () => {
    const hostile = '\u001b]0;title\u0007\u009b\u202e\u2066\u2028\nforged';

    const name = refusal(() => parseEndpointFields({ ...minimal, name: hostile }));
    const field = refusal(() => parseEndpointFields({ ...minimal, [hostile]: 1 }));
    const key = refusal(() => parseEndpointFields({ ...minimal, match: { [hostile]: ['x'] } }));
    const type = refusal(() => parseEndpointFields({ ...minimal, eventTypes: [hostile] }));

    expect(name.message).toBe('endpoint "\\u001b]0;title\\u0007\\u009b\\u202e\\u2066\\u2028\\nforged": name must be 1–64 characters of a-z 0-9 -');
    expect(field.message).toMatch(/^endpoint "acme": \?\]0;title\?\?\?\?\? forged is not an endpoint field /);
    expect(key.message).toBe('endpoint "acme": match.?]0;title????? forged is not a field to match: use shipmentId, status or data.<field>[.<field>…]');
    expect(type.message).toMatch(/^endpoint "acme": eventTypes holds "\\u001b\]0;title\\u0007\\u009b\\u202e\\u2066\\u2028\\nforged": /);
  });

  it.each([
    ['plain text', 'hunter2-hunter2-hunter2-hunter2'],
    ['a whsec value too short to sign', 'whsec_c2hvcnQ='],
    ['a whsec value that is not base64', 'whsec_not*base64*at*all*not*base64*at*all'],
    ['an ARN of another service', 'arn:aws:s3:::handoff-secrets/acme'],
  ])('refuses a secret that is %s, without showing it', (_case, secret) => {
    const error = refusal(() => parseEndpointFields({ ...minimal, secret }));

    expect(error.field).toBe('secret');
    expect(error.message).not.toContain(secret);
    expect(error.message).not.toContain(secret.slice(6, 14));
  });

  it.each([
    ['a scheme handoff does not make', 'encrypted:rot13:', 'bm90IGEgc2VjcmV0'],
    ['a ciphertext that is not base64', 'encrypted:kms:', 'bm90*IGEg'],
    ['no ciphertext', 'encrypted:local:', ''],
  ])('refuses an encrypted secret with %s, without showing its ciphertext', (_case, prefix, ciphertext) => {
    const error = refusal(() => parseEndpointFields({ ...minimal, secret: `${prefix}${ciphertext}` }));

    expect(error.field).toBe('secret');
    expect(error.message).toContain('must be a whsec_… signing secret, the ARN of a Secrets Manager secret holding one, or one the registry encrypted');
    if (ciphertext !== '') expect(error.message).not.toContain(ciphertext);
  });
});

describe('Function: resolveEndpoint', () => {
  it("fills every unset setting from the deployment's and the contract's defaults", () => {
    const endpoint = resolveEndpoint(record({ secret: SECRET }), deployment);

    expect(endpoint).toEqual({
      name: 'acme',
      url: minimal.url,
      eventTypes: ['shipment.delivered'],
      match: {},
      secret: SECRET,
      previousSecret: undefined,
      previousSecretUntil: undefined,
      policy: deployment.retryPolicy,
      attemptTimeoutMs: 10_000,
      recovery: 'review',
      ordering: 'none',
      onDead: 'continue',
      autoDisable: true,
      disableAfterSeconds: 259_200,
      disableAfterFailures: 20,
      rateLimitPerSecond: undefined,
      receiverRetentionSeconds: undefined,
      signature: 'hmac-sha256',
      state: 'enabled',
      stateChange: undefined,
    });
  });

  it("takes the endpoint's own policy and settings over the deployment's", () => {
    const endpoint = resolveEndpoint(
      record({ retrySchedule: [5, 50], maxAttempts: 3, attemptTimeoutMs: 2000, recovery: 'drop', rateLimitPerSecond: 7 }),
      deployment,
    );

    expect(endpoint.policy).toEqual(retryPolicy(3, [5, 50]));
    expect(endpoint).toMatchObject({ attemptTimeoutMs: 2000, recovery: 'drop', rateLimitPerSecond: 7 });
  });

  it('leaves a secret given as an ARN for the caller to resolve, and takes the value it passes', () => {
    expect(resolveEndpoint(record({ secret: SECRET_ARN }), deployment).secret).toBeUndefined();
    expect(resolveEndpoint(record({ secret: SECRET_ARN }), deployment, SECRET).secret).toBe(SECRET);
  });

  it("refuses an attempt timeout above the deployment's, with both figures", () => {
    const error = refusal(() => resolveEndpoint(record({ attemptTimeoutMs: 10_001 }), deployment));

    expect(error.field).toBe('attemptTimeoutMs');
    expect(error.message).toBe(
      "endpoint \"acme\": attemptTimeoutMs must be at most the deployment's attemptTimeoutMs (10000), which the consumer's timeout is built on; got 10001",
    );
  });

  it("refuses a schedule that outlives the deployment's retention, naming both", () => {
    // 32 attempts, each wait able to reach 12 h: past the 30 days rows are kept.
    const error = refusal(() => resolveEndpoint(record({ maxAttempts: 32, retrySchedule: [30] }), deployment));

    expect(error.field).toBe("the deployment's retentionDays");
    expect(error.message).toContain("endpoint \"acme\": the deployment's retentionDays must be at least 31 days with retrySchedule/maxAttempts allowing 32 attempts, got 30");
  });

  it("refuses a schedule whose waits pass the queue's retention, naming the schedule", () => {
    const error = refusal(() => resolveEndpoint(record({ maxAttempts: 30, retrySchedule: [43_200] }), deployment));

    expect(error.field).toBe('retrySchedule/maxAttempts');
    expect(error.message).toContain("past the queue's 14-day message retention");
  });

  it("measures a delivery's life with the deployment's attempt timeout, not a shorter one of the endpoint's", () => {
    // The queue's visibility timeout is built on the deployment's attempt timeout, whatever the
    // endpoint's requests use: with the endpoint's 1 s, this policy would fit in 28 days.
    const policy = retryPolicy(25, [60]);
    expect(minimumRetentionDays({ retryPolicy: policy, attemptTimeoutMs: 1000 })).toBe(28);
    expect(minimumRetentionDays({ retryPolicy: policy, attemptTimeoutMs: 600_000 })).toBe(29);
    const slowDeployment = { ...deployment, attemptTimeoutMs: 600_000, retentionDays: 28 };

    const error = refusal(() => resolveEndpoint(record({ maxAttempts: 25, retrySchedule: [60], attemptTimeoutMs: 1000 }), slowDeployment));

    expect(error.message).toContain('must be at least 29 days');
  });

  it("refuses a receiver retention within the retry window, naming both; accepts a longer one", () => {
    // The default schedule's window: 30 + 120 + 600 + 1800 + 7200 s.
    const error = refusal(() => resolveEndpoint(record({ receiverRetentionSeconds: 9750 }), deployment));

    expect(error.field).toBe('receiverRetentionSeconds');
    expect(error.message).toContain('receiverRetentionSeconds must exceed the retry window of retrySchedule/maxAttempts (9750 s), got 9750');
    expect(resolveEndpoint(record({ receiverRetentionSeconds: 9751 }), deployment).receiverRetentionSeconds).toBe(9751);
  });

  it("checks a receiver retention against the endpoint's own schedule", () => {
    const endpoint = resolveEndpoint(record({ retrySchedule: [10], maxAttempts: 3, receiverRetentionSeconds: 21 }), deployment);

    expect(endpoint.receiverRetentionSeconds).toBe(21);
    expect(() => resolveEndpoint(record({ retrySchedule: [10], maxAttempts: 3, receiverRetentionSeconds: 20 }), deployment)).toThrow(
      /receiverRetentionSeconds must exceed the retry window of retrySchedule\/maxAttempts \(20 s\)/,
    );
  });

  it('refuses a URL the endpoint guard would refuse, naming url and not showing its secret parts', () => {
    const http = refusal(() => resolveEndpoint(record({ url: 'http://hooks.acme.example/x?token=s3cr3t' }), deployment));
    const loopback = refusal(() => resolveEndpoint(record({ url: 'https://127.0.0.1/x' }), deployment));

    expect(http.field).toBe('url');
    expect(http.message).toContain('must use https');
    expect(http.message).not.toContain('s3cr3t');
    expect(loopback.field).toBe('url');
    expect(() => resolveEndpoint(record({ url: 'http://127.0.0.1:9/x' }), { ...deployment, allowHttp: true, allowPrivateCidrs: ['127.0.0.0/8'] })).not.toThrow();
  });

  it('refuses a URL carrying user:password@, naming url and not showing the URL', () => {
    const error = refusal(() => resolveEndpoint(record({ url: 'https://ops:hunter2@hooks.acme.example/x?token=s3cr3t' }), deployment));
    const userOnly = refusal(() => resolveEndpoint(record({ url: 'https://ops@hooks.acme.example/x' }), deployment));

    expect(error.field).toBe('url');
    expect(error.message).toContain('url must not carry credentials (user:password@)');
    for (const part of ['hunter2', 's3cr3t', 'ops', 'hooks.acme.example']) expect(error.message).not.toContain(part);
    expect(userOnly.field).toBe('url');
  });

  describe("a rotation's previous secret", () => {
    const rotated = record({ secret: SECRET, previousSecret: OLD_SECRET, previousSecretUntil: OVERLAP_END });

    it('signs beside the secret until the overlap ends, carrying that end', () => {
      const endpoint = resolveEndpoint(rotated, deployment, undefined, { nowMs: OVERLAP_END - 1 });

      expect(endpoint.secret).toBe(SECRET);
      expect(endpoint).toMatchObject({ secret: SECRET, previousSecret: OLD_SECRET, previousSecretUntil: OVERLAP_END });
    });

    it('is left out from the end of the overlap', () => {
      for (const nowMs of [OVERLAP_END, OVERLAP_END + 86_400_000]) {
        const endpoint = resolveEndpoint(rotated, deployment, SECRET, { nowMs });

        expect(endpoint).toMatchObject({ secret: SECRET, previousSecret: undefined, previousSecretUntil: undefined });
      }
    });

    it('is the value the caller read when given as an ARN, and left out when it was not read', () => {
      const arns = record({ secret: SECRET_ARN, previousSecret: OLD_SECRET_ARN, previousSecretUntil: OVERLAP_END });
      const nowMs = OVERLAP_END - 60_000;

      expect(resolveEndpoint(arns, deployment, SECRET, { secret: OLD_SECRET, nowMs }).previousSecret).toBe(OLD_SECRET);
      expect(resolveEndpoint(arns, deployment, SECRET, { nowMs }).previousSecret).toBeUndefined();
    });

    it('never signs alone: without the secret (an ARN not read) it is left out', () => {
      const unread = record({ secret: SECRET_ARN, previousSecret: OLD_SECRET, previousSecretUntil: OVERLAP_END });

      const endpoint = resolveEndpoint(unread, deployment, undefined, { nowMs: OVERLAP_END - 1 });

      expect(endpoint.secret).toBeUndefined();
      expect(endpoint.previousSecret).toBeUndefined();
    });
  });

  it('carries the state and who set it', () => {
    const change = { by: 'alice', reason: 'maintenance', at: 5 };

    const endpoint = resolveEndpoint({ ...record({}, 'disabled'), stateChange: change }, deployment);

    expect(endpoint).toMatchObject({ state: 'disabled', stateChange: change });
  });
});

describe('Function: subscribes', () => {
  const endpoint = (eventTypes: string[], match: Record<string, (string | number | boolean)[]> = {}) => ({ eventTypes, match });

  it("takes an event whose type it lists, or any with '*'", () => {
    expect(subscribes(endpoint(['shipment.delivered']), event('delivered'))).toBe(true);
    expect(subscribes(endpoint(['shipment.delivered', 'shipment.exception']), event('exception'))).toBe(true);
    expect(subscribes(endpoint(['*']), event('label_created'))).toBe(true);
  });

  it('leaves an event of another type', () => {
    expect(subscribes(endpoint(['shipment.delivered']), event('in_transit'))).toBe(false);
  });

  it('takes an event whose data.carrier is one of the values, and leaves the others', () => {
    const acme = endpoint(['*'], { 'data.carrier': ['acme', 'zephyr'] });

    expect(subscribes(acme, event('delivered', { carrier: 'zephyr' }))).toBe(true);
    expect(subscribes(acme, event('delivered', { carrier: 'other' }))).toBe(false);
    expect(subscribes(acme, event('delivered', { carrier: 'ACME' }))).toBe(false);
    expect(subscribes(acme, event('delivered'))).toBe(false);
    expect(subscribes(acme, event('delivered', { carriers: 'acme' }))).toBe(false);
  });

  it('requires every key of the match, and the type as well', () => {
    const both = endpoint(['shipment.delivered'], { 'data.carrier': ['acme'], status: ['delivered'] });

    expect(subscribes(both, event('delivered', { carrier: 'acme' }))).toBe(true);
    expect(subscribes(both, event('exception', { carrier: 'acme' }))).toBe(false);
    expect(subscribes(endpoint(['*'], { 'data.carrier': ['acme'], shipmentId: ['shp_9'] }), event('delivered', { carrier: 'acme' }))).toBe(false);
  });

  it('follows nested keys into data, and never into what is not an object', () => {
    const nl = endpoint(['*'], { 'data.address.country': ['NL'] });

    expect(subscribes(nl, event('delivered', { address: { country: 'NL' } }))).toBe(true);
    expect(subscribes(nl, event('delivered', { address: { country: 'BE' } }))).toBe(false);
    expect(subscribes(nl, event('delivered', { address: 'NL' }))).toBe(false);
    expect(subscribes(nl, event('delivered', { address: [{ country: 'NL' }] }))).toBe(false);
  });

  it("compares values exactly: 5 is not '5', true is not 'true'", () => {
    expect(subscribes(endpoint(['*'], { 'data.pieces': [5] }), event('packed', { pieces: 5 }))).toBe(true);
    expect(subscribes(endpoint(['*'], { 'data.pieces': ['5'] }), event('packed', { pieces: 5 }))).toBe(false);
    expect(subscribes(endpoint(['*'], { 'data.express': ['true'] }), event('packed', { express: true }))).toBe(false);
  });

  it("never reads an object's inherited properties", () => {
    expect(subscribes(endpoint(['*'], { 'data.constructor': ['x'] }), event('packed', {}))).toBe(false);
  });
});

describe('Function: route', () => {
  const endpoints: Pick<Endpoint, 'name' | 'eventTypes' | 'match'>[] = [
    { name: 'zephyr', eventTypes: ['*'], match: { 'data.carrier': ['zephyr'] } },
    { name: 'all', eventTypes: ['*'], match: {} },
    { name: 'delivered-only', eventTypes: ['shipment.delivered'], match: {} },
    { name: 'acme', eventTypes: ['*'], match: { 'data.carrier': ['acme'] } },
  ];

  it('gives every endpoint the event satisfies, in name order', () => {
    expect(route(endpoints, event('delivered', { carrier: 'acme' })).map((e) => e.name)).toEqual(['acme', 'all', 'delivered-only']);
    expect(route(endpoints, event('in_transit', { carrier: 'zephyr' })).map((e) => e.name)).toEqual(['all', 'zephyr']);
  });

  it('gives none when no endpoint wants the event', () => {
    expect(route(endpoints.filter((e) => e.name !== 'all'), event('in_transit', { carrier: 'other' }))).toEqual([]);
  });

  it('routes to disabled endpoints as well (their deliveries park)', () => {
    const resolved = [resolveEndpoint(record({ eventTypes: ['*'] }, 'disabled'), deployment)];

    expect(route(resolved, event('packed')).map((e) => e.state)).toEqual(['disabled']);
  });
});

describe('Function: defaultEndpointFields', () => {
  it("is the single-URL settings' endpoint default, subscribed to everything, valid as fields", () => {
    const fields = defaultEndpointFields('https://hooks.example.com/x', SECRET);

    expect(fields).toEqual({ name: 'default', url: 'https://hooks.example.com/x', eventTypes: ['*'], secret: SECRET });
    expect(parseEndpointFields(fields)).toEqual(fields);
    expect(defaultEndpointFields('https://hooks.example.com/x')).not.toHaveProperty('secret');
  });
});

describe('Functions: deploymentToJson, deploymentFromJson', () => {
  it('carry the settings through JSON unchanged', () => {
    const settings = { ...deployment, retryPolicy: retryPolicy(4, [1, 2]), allowHttp: true, allowPrivateCidrs: ['127.0.0.0/8'] };

    const json = JSON.parse(JSON.stringify(deploymentToJson(settings)));

    expect(deploymentFromJson(json, 'test')).toEqual(settings);
  });

  it('refuses what is not those settings, naming the source', () => {
    expect(() => deploymentFromJson({ ...deploymentToJson(deployment), maxAttempts: 0 }, 'output EndpointDefaults')).toThrow(
      new RangeError("output EndpointDefaults does not hold the deployment's endpoint defaults"),
    );
    expect(() => deploymentFromJson(null, 'x')).toThrow(RangeError);
  });
});

describe('Function: generateSecret', () => {
  it('makes a whsec_ secret of 32 random bytes that the signer accepts', () => {
    const secret = generateSecret();

    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(() => createSigner(secret)).not.toThrow();
    expect(parseEndpointFields({ ...minimal, secret }).secret).toBe(secret);
  });

  it('makes a different one each time', () => {
    expect(new Set(Array.from({ length: 20 }, generateSecret)).size).toBe(20);
  });
});
