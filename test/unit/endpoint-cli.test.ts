/**
 * The pure parts of `handoff endpoint`: options into fields (numbers that are not whole left for
 * the field's check to name), `--match` items, the deployment settings an endpoint is checked
 * against and where they come from, and the view every output is made from (never the secret).
 */
import { describe, expect, it } from 'vitest';
import { deploymentFor, endpointJson, fieldsFromOptions, matchFromOptions } from '../../cli/commands/endpoint';
import { UsageError } from '../../cli/errors';
import { ConfigError, DEFAULT_SETTINGS } from '../../lib/config';
import { deploymentFromJson, deploymentToJson, type EndpointRecord } from '../../lib/endpoints/endpoint';
import { retryPolicy } from '../../lib/policy';

describe('Function: fieldsFromOptions', () => {
  it('turns lists and whole numbers into their field types, leaving other text for the checks', () => {
    const fields = fieldsFromOptions({
      name: 'acme',
      url: 'https://x.example',
      eventTypes: 'shipment.delivered, shipment.exception,',
      match: ['data.carrier=acme,zephyr'],
      retrySchedule: '10,60',
      maxAttempts: '4',
      attemptTimeoutMs: '5s',
      autoDisable: false,
      recovery: 'drop',
    });

    expect(fields).toEqual({
      name: 'acme',
      url: 'https://x.example',
      eventTypes: ['shipment.delivered', 'shipment.exception'],
      match: { 'data.carrier': ['acme', 'zephyr'] },
      retrySchedule: [10, 60],
      maxAttempts: 4,
      attemptTimeoutMs: '5s',
      autoDisable: false,
      recovery: 'drop',
    });
  });

  it('gives no field for an option not given', () => {
    expect(fieldsFromOptions({ match: [] })).toEqual({});
  });
});

describe('Function: matchFromOptions', () => {
  it('reads each FIELD=VALUES item into a key and its values', () => {
    expect(matchFromOptions(['data.carrier=acme,zephyr', 'data.address.country=NL'])).toEqual({
      'data.carrier': ['acme', 'zephyr'],
      'data.address.country': ['NL'],
    });
  });

  it.each([
    ['data.carrier', 'write FIELD=VALUE'],
    ['=acme', 'write FIELD=VALUE'],
    ['data.carrier=', 'give at least one value'],
  ])('refuses %j as usage, saying how to write it', (item, problem) => {
    expect(() => matchFromOptions([item])).toThrow(UsageError);
    expect(() => matchFromOptions([item])).toThrow(problem);
  });

  it('refuses a field given twice', () => {
    expect(() => matchFromOptions(['data.carrier=acme', 'data.carrier=zephyr'])).toThrow('--match names data.carrier twice');
  });
});

describe('Function: deploymentFor', () => {
  const settings = deploymentFromJson(
    deploymentToJson({ retryPolicy: retryPolicy(3, [1]), attemptTimeoutMs: 2000, retentionDays: 30, allowPrivateCidrs: [], allowHttp: true }),
    'test',
  );

  it("takes the target's settings, saying whose", () => {
    expect(deploymentFor({ description: 'the sandbox', deployment: settings }, { HANDOFF_MAX_ATTEMPTS: '9' })).toEqual({
      settings,
      source: 'the settings of the sandbox',
    });
  });

  it("falls back to those settings' HANDOFF_ variables, then the defaults, saying which", () => {
    const fromEnv = deploymentFor({ description: 'the names given' }, { HANDOFF_ATTEMPT_TIMEOUT_MS: '3000', HANDOFF_WEBHOOK_URL: 'not read' });
    const defaults = deploymentFor({ description: 'the names given' }, {});

    expect(fromEnv.settings.attemptTimeoutMs).toBe(3000);
    expect(fromEnv.source).toBe('HANDOFF_ATTEMPT_TIMEOUT_MS and the defaults (no deployment settings from the names given)');
    expect(defaults.settings).toMatchObject({ retryPolicy: DEFAULT_SETTINGS.retryPolicy, attemptTimeoutMs: 10_000, allowHttp: false });
    expect(defaults.source).toBe('the default settings (no deployment settings from the names given)');
  });

  it('refuses a bad variable by name', () => {
    expect(() => deploymentFor({ description: 'x' }, { HANDOFF_ALLOW_HTTP: 'perhaps' })).toThrow(ConfigError);
  });
});

describe('Function: endpointJson', () => {
  const record: EndpointRecord = {
    fields: {
      name: 'acme',
      url: 'https://user:pw@hooks.acme.example/h?token=abc',
      eventTypes: ['*'],
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      maxAttempts: 3,
    },
    state: 'disabled',
    stateChange: { by: 'alice', reason: 'down', at: Date.parse('2026-12-03T04:00:00Z') },
    createdAt: Date.parse('2026-12-03T03:00:00Z'),
    updatedAt: Date.parse('2026-12-03T04:00:00Z'),
  };

  it('shows whether a secret is set, never the secret, and the URL redacted', () => {
    const view = endpointJson(record);

    expect(view).toEqual({
      name: 'acme',
      url: 'https://***@hooks.acme.example/h?token=***',
      state: 'disabled',
      eventTypes: ['*'],
      match: {},
      secret: 'set',
      parked: 0,
      stateChange: { by: 'alice', reason: 'down', at: '2026-12-03T04:00:00.000Z' },
      settings: { maxAttempts: 3 },
      createdAt: '2026-12-03T03:00:00.000Z',
      updatedAt: '2026-12-03T04:00:00.000Z',
    });
    expect(JSON.stringify(view)).not.toContain('MfKQ9r8');
    expect(endpointJson({ ...record, fields: { ...record.fields, secret: undefined } }).secret).toBe('unset');
  });
});
