/**
 * The table of endpoint fields (lib/endpoints/fields.ts) and what is derived from it: the settings
 * of a resolved endpoint and their defaults, and the JSON Schema of an endpoint, which a standard
 * validator (Ajv, draft 2020-12) holds to the same verdicts as parseEndpointFields; every bad field
 * of an endpoint named at once (checkEndpointFields, endpointProblems), as the management API names them.
 */
import Ajv2020 from 'ajv/dist/2020';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../lib/config';
import { checkEndpointFields, effectiveSettings, EndpointFieldsError, endpointProblems, parseEndpointFields, resolveEndpoint } from '../../lib/endpoints/endpoint';
import { EndpointError } from '../../lib/errors';
import { CLEARABLE_FIELDS, FIELD_NAMES, FIELD_SPECS, isFieldName, SETTING_DEFAULTS, SETTING_NAMES } from '../../lib/endpoints/fields';
import { endpointJsonSchema, type JsonSchema } from '../../lib/endpoints/json-schema';
import { thrownBy } from '../helpers/thrown';
import { TEST_SECRET as SECRET } from '../helpers/secrets';

const OLD_SECRET = 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=';
const minimal = { name: 'acme', url: 'https://hooks.acme.example/handoff', eventTypes: ['shipment.delivered'] };
const complete = {
  ...minimal,
  match: { 'data.carrier': ['acme', 'zephyr'], 'data.pieces': [2], 'data.express': [true] },
  secret: SECRET,
  previousSecret: OLD_SECRET,
  previousSecretUntil: Date.parse('2026-12-04T04:30:00Z'),
  retrySchedule: [10, 60],
  maxAttempts: 4,
  attemptTimeoutMs: 5000,
  disableAfterSeconds: 3600,
  disableAfterFailures: 5,
  rateLimitPerSecond: 50,
  receiverRetentionSeconds: 86_400,
  recovery: 'drop',
  ordering: 'per-shipment',
  onDead: 'hold',
  autoDisable: false,
};

const validator = new Ajv2020({ strict: true, allErrors: true });
const validate = validator.compile(endpointJsonSchema());

/** Ajv's errors as "path keyword" (the path of the field or of the key inside it). */
function described(endpoint: unknown): string[] {
  return validate(endpoint) ? [] : validate.errors!.map((e) => `${e.instancePath || '/'} ${e.keyword}`);
}

/** The EndpointError `parseEndpointFields` refuses `endpoint` with. */
const refusal = (endpoint: unknown) => thrownBy(() => parseEndpointFields(endpoint), EndpointError);

describe('The fields table', () => {
  it('gives each default as a value its own field accepts', () => {
    for (const name of FIELD_NAMES) {
      const fallback = FIELD_SPECS[name].default;
      if (typeof fallback === 'object') expect(v.is(FIELD_SPECS[name].schema, fallback.value), name).toBe(true);
    }
  });

  it('makes a required field neither clearable nor defaulted, and lets only optional ones be cleared', () => {
    for (const name of FIELD_NAMES.filter((n) => FIELD_SPECS[n].required)) {
      expect(FIELD_SPECS[name].default, name).toBeUndefined();
      expect(CLEARABLE_FIELDS, name).not.toContain(name);
    }
  });

  it('names only its own fields where an entry points at others', () => {
    for (const name of FIELD_NAMES) {
      const spec = FIELD_SPECS[name];
      for (const other of [...(spec.requires ?? []).map(([needed]) => needed), ...(spec.cli?.rowAlso ?? [])]) expect(FIELD_NAMES, `${name} → ${other}`).toContain(other);
    }
  });

  it('names as fields only its own entries, never what an object inherits', () => {
    expect(isFieldName('maxAttempts')).toBe(true);
    for (const key of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) expect(isFieldName(key), key).toBe(false);
  });

  it("resolves every setting the endpoint does not set to its default, and keeps those it does; the deployment's come from the deployment", () => {
    const deployment = { ...DEFAULT_SETTINGS, allowPrivateCidrs: [], allowHttp: false };
    const unset = resolveEndpoint({ fields: minimal, state: 'enabled', createdAt: 1, updatedAt: 1 }, deployment);
    const set = resolveEndpoint({ fields: { ...minimal, recovery: 'drop', rateLimitPerSecond: 7, maxAttempts: 3 }, state: 'enabled', createdAt: 1, updatedAt: 1 }, deployment);

    expect(unset).toMatchObject(SETTING_DEFAULTS);
    expect(SETTING_DEFAULTS).toEqual({
      disableAfterSeconds: 259_200,
      disableAfterFailures: 20,
      rateLimitPerSecond: undefined,
      receiverRetentionSeconds: undefined,
      recovery: 'review',
      ordering: 'none',
      onDead: 'continue',
      autoDisable: true,
      signature: 'hmac-sha256',
    });
    expect(Object.keys(effectiveSettings(set))).toEqual(SETTING_NAMES);
    expect(effectiveSettings(set)).toMatchObject({ recovery: 'drop', rateLimitPerSecond: 7, maxAttempts: 3, retrySchedule: DEFAULT_SETTINGS.retryPolicy.waitsSeconds, attemptTimeoutMs: 10_000 });
  });
});

describe('Function: endpointJsonSchema', () => {
  const schema = endpointJsonSchema();
  const properties = schema.properties as Record<string, JsonSchema>;

  it('lists every field with its type and its doc, requires the required ones and allows no other', () => {
    expect(Object.keys(properties)).toEqual(FIELD_NAMES);
    for (const name of FIELD_NAMES) {
      expect(properties[name]!.type, name).toEqual(expect.any(String));
      expect(properties[name]!.description, name).toContain(FIELD_SPECS[name].doc);
    }
    expect(schema.required).toEqual(['name', 'url', 'eventTypes']);
    expect(schema.additionalProperties).toBe(false);
  });

  it("gives each field's type and limits as its check has them", () => {
    expect(properties.name).toMatchObject({ type: 'string', pattern: '^[a-z0-9-]{1,64}$' });
    expect(properties.url).toMatchObject({ type: 'string', minLength: 1, maxLength: 2048 });
    expect(properties.eventTypes).toMatchObject({ type: 'array', minItems: 1, items: { type: 'string', enum: expect.arrayContaining(['shipment.delivered', '*']) } });
    expect(properties.match).toMatchObject({ type: 'object', maxProperties: 16, additionalProperties: { type: 'array', minItems: 1, maxItems: 64 } });
    expect(properties.secret).toMatchObject({
      type: 'string',
      anyOf: [{ pattern: '^whsec_' }, { pattern: '^whsk_' }, { pattern: expect.stringContaining('secretsmanager') }, { pattern: expect.stringContaining('encrypted') }],
    });
    expect(properties.retrySchedule).toMatchObject({ type: 'array', minItems: 1, maxItems: 100, items: { type: 'integer', minimum: 0, maximum: 43_200 } });
    expect(properties.maxAttempts).toEqual({ type: 'integer', minimum: 1, maximum: 100, description: "attempts in all; unset: the deployment's" });
    expect(properties.rateLimitPerSecond).toMatchObject({ type: 'integer', minimum: 1, maximum: 10_000 });
    expect(properties.recovery).toMatchObject({ type: 'string', enum: ['review', 'drop'], default: 'review' });
    expect(properties.autoDisable).toMatchObject({ type: 'boolean', default: true });
    expect(schema.dependentRequired).toEqual({ previousSecret: ['previousSecretUntil', 'secret'], previousSecretUntil: ['previousSecret'], publicKey: ['secret'] });
  });

  it('passes an endpoint parseEndpointFields accepts, the least and the most it may give', () => {
    for (const endpoint of [minimal, complete, { ...minimal, eventTypes: ['*', '*'], secret: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/acme-AbCdEf' }]) {
      expect(() => parseEndpointFields(endpoint)).not.toThrow();
      expect(described(endpoint)).toEqual([]);
    }
  });

  it.each([
    ['a missing url', { name: 'acme', eventTypes: ['*'] }, 'url', '/ required'],
    ['a field it does not have', { ...minimal, retries: 3 }, 'retries', '/ additionalProperties'],
    ['a name in capitals', { ...minimal, name: 'Acme' }, 'name', '/name pattern'],
    ['no event types', { ...minimal, eventTypes: [] }, 'eventTypes', '/eventTypes minItems'],
    ['an unknown event type', { ...minimal, eventTypes: ['shipment.lost'] }, 'eventTypes', '/eventTypes/0 enum'],
    ['a match on no field of the event', { ...minimal, match: { carrier: ['acme'] } }, 'match.carrier', '/match pattern'],
    ['a match key with a forbidden part', { ...minimal, match: { 'data.__proto__': ['x'] } }, 'match.data.__proto__', '/match pattern'],
    ['a match key __proto__ (an own key, as JSON gives it)', { ...minimal, match: JSON.parse('{"__proto__": ["x"]}') }, 'match.__proto__', '/match pattern'],
    ['a match value that is an object', { ...minimal, match: { 'data.carrier': [{ name: 'acme' }] } }, 'match.data.carrier', '/match/data.carrier/0 anyOf'],
    ['a secret that is plain text', { ...minimal, secret: 'hunter2-hunter2' }, 'secret', '/secret anyOf'],
    ['a previous secret without its end', { ...minimal, secret: SECRET, previousSecret: OLD_SECRET }, 'previousSecret', '/ dependentRequired'],
    ['a wait past 12 h', { ...minimal, retrySchedule: [43_201] }, 'retrySchedule', '/retrySchedule/0 maximum'],
    ['a fraction of an attempt', { ...minimal, maxAttempts: 2.5 }, 'maxAttempts', '/maxAttempts type'],
    ['a rate limit of 0', { ...minimal, rateLimitPerSecond: 0 }, 'rateLimitPerSecond', '/rateLimitPerSecond minimum'],
    ['an unknown recovery', { ...minimal, recovery: 'retry' }, 'recovery', '/recovery enum'],
    ['autoDisable as text', { ...minimal, autoDisable: 'yes' }, 'autoDisable', '/autoDisable type'],
  ])('describes what is wrong with %s where parseEndpointFields refuses that field', (_case, endpoint, field, error) => {
    expect(refusal(endpoint).field).toBe(field);
    expect(described(endpoint)).toContain(error);
  });
});

describe('Function: checkEndpointFields and endpointProblems', () => {
  const deployment = {
    retryPolicy: DEFAULT_SETTINGS.retryPolicy,
    attemptTimeoutMs: DEFAULT_SETTINGS.attemptTimeoutMs,
    retentionDays: DEFAULT_SETTINGS.retentionDays,
    allowPrivateCidrs: [],
    allowHttp: false,
  };

  it('names every bad field, in the order a refusal of one names them; parseEndpointFields refuses with the first', () => {
    // Prepare
    const input = { name: 'acme', url: 42, eventTypes: [], colour: 'red', maxAttempts: 0 };

    // Act
    const { problems, name } = checkEndpointFields(input);
    const error = thrownBy(() => parseEndpointFields(input), EndpointFieldsError);

    // Assess
    expect(name).toBe('acme');
    expect(problems.map((p) => p.field)).toEqual(['colour', 'url', 'eventTypes', 'maxAttempts']);
    expect(error.problems).toEqual(problems);
    expect(error.message).toBe(`endpoint "acme": colour ${problems[0]!.problem}`);
  });

  it('names a field given but refused once, not again as missing beside the field that needs it', () => {
    // Act
    const { problems } = checkEndpointFields({ ...minimal, secret: SECRET, previousSecret: 'not-a-secret', previousSecretUntil: 1 });

    // Assess
    expect(problems.map((p) => p.field)).toEqual(['previousSecret']);
  });

  it("adds the rules against the deployment's settings for the fields whose shape is good: the endpoint guard beside a bad field", () => {
    // Act
    const both = endpointProblems({ ...minimal, url: 'http://hooks.acme.example/handoff', maxAttempts: 0 }, deployment);
    const scheduleRefused = endpointProblems({ ...minimal, retrySchedule: 'soon', maxAttempts: 100 }, deployment);

    // Assess
    expect(both.problems.map((p) => p.field)).toEqual(['maxAttempts', 'url']);
    // The retry window is not judged with one of its fields refused.
    expect(scheduleRefused.problems.map((p) => p.field)).toEqual(['retrySchedule']);
    expect(endpointProblems(minimal, deployment).problems).toEqual([]);
  });
});
