/**
 * The pure parts of `handoff endpoint`: options into fields (numbers that are not whole left for
 * the field's check to name), `--match` items, the deployment settings an endpoint is checked
 * against and where they come from, and the view every output is made from (never the secret);
 * `--overlap`, and secret rotation's commands over an in-memory registry on a fixed clock: what
 * they write (one conditional update), print and never print; the parked counts and a release in
 * progress as list, show, enable and disable print them, and `enable --rate`. The options of add
 * and update are read off the fields table (lib/endpoints/fields.ts): one per field, and show's
 * rows one per setting.
 */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import {
  deploymentFor,
  endpointJson,
  endpointListCommand,
  endpointRotateSecretCommand,
  endpointSetStateCommand,
  endpointShowCommand,
  endpointUpdateCommand,
  fieldsFromOptions,
  matchFromOptions,
  parseOverlap,
  parseResumeRate,
} from '../../cli/commands/endpoint';
import { fieldOptions } from '../../cli/commands/endpoint-options';
import type { CommandContext } from '../../cli/context';
import { CommandFailedError, UsageError } from '../../cli/errors';
import { DEFAULT_SETTINGS } from '../../lib/config';
import { ConfigError, EndpointConflictError } from '../../lib/errors';
import { deploymentFromJson, deploymentToJson, parseEndpointFields, type EndpointFields, type EndpointRecord } from '../../lib/endpoints/endpoint';
import { CLEARABLE_FIELDS, FIELD_NAMES, FIELD_SPECS } from '../../lib/endpoints/fields';
import { retryPolicy } from '../../lib/policy';
import { DEFAULT_RESUME_RATE, type Resume } from '../../lib/resume';

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

describe('Function: fieldOptions', () => {
  /** What `handoff endpoint add|update <argv>` gives as fields, through commander. */
  function parsed(mode: 'add' | 'update', argv: string[]): Record<string, unknown> {
    const command = fieldOptions(new Command('add').exitOverride(), mode);
    command.parse(argv, { from: 'user' });
    return fieldsFromOptions(command.opts());
  }

  it('has an option for every field with a flag, keyed by the field, and --clear lists every clearable field', () => {
    const update = fieldOptions(new Command('update'), 'update');
    const names = update.options.map((option) => option.attributeName());

    for (const name of FIELD_NAMES.filter((n) => FIELD_SPECS[n].cli !== undefined)) expect(names, name).toContain(name);
    expect(names).not.toContain('previousSecret');
    expect(update.options.find((o) => o.long === '--clear')?.description).toContain(CLEARABLE_FIELDS.join(', '));
  });

  it('reads each option as its field takes it: whole numbers, lists, choices, flags, repeated matches', () => {
    const fields = parsed('add', [
      '--name', 'acme', '--event-types', 'shipment.delivered,*', '--retry-schedule', '5, 50', '--max-attempts', '4',
      '--rate-limit-per-second', '2.5', '--recovery', 'drop', '--no-auto-disable', '--match', 'data.carrier=acme', '--match', 'status=delivered',
    ]);

    expect(fields).toEqual({
      name: 'acme',
      eventTypes: ['shipment.delivered', '*'],
      retrySchedule: [5, 50],
      maxAttempts: 4,
      rateLimitPerSecond: '2.5',
      recovery: 'drop',
      autoDisable: false,
      match: { 'data.carrier': ['acme'], status: ['delivered'] },
    });
    expect(parsed('update', ['--auto-disable'])).toEqual({ autoDisable: true });
    expect(() => parsed('add', ['--ordering', 'fifo'])).toThrow(/Allowed choices are none, per-shipment/);
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

  it.each(['__proto__', 'constructor', 'prototype'])('keeps %s as a key of its own, for the endpoint check to refuse as it refuses the file', (key) => {
    const match = matchFromOptions([`${key}=acme`]);

    expect(Object.getPrototypeOf(match)).toBe(Object.prototype);
    expect(Object.entries(match)).toEqual([[key, ['acme']]]);
    expect(() => parseEndpointFields({ name: 'acme', url: 'https://x.example', eventTypes: ['*'], match })).toThrow(
      `endpoint "acme": match.${key} is not a field to match: use shipmentId, status or data.<field>[.<field>…]`,
    );
  });

  it('quotes an item it cannot read inert', () => {
    expect(() => matchFromOptions(['\u001b]0;title\u0007\u202e'])).toThrow('--match "\\u001b]0;title\\u0007\\u202e": write FIELD=VALUE');
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

  it("shows a paused endpoint's health as the consumers wrote it", () => {
    const nowMs = Date.parse('2026-12-03T05:00:00Z');
    const paused = { ...record, health: { pausedUntil: nowMs + 30_000, failures: 2, failingSince: nowMs - 60_000 } };

    expect(endpointJson(paused, nowMs).health).toEqual({
      paused: true,
      pausedUntil: '2026-12-03T05:00:30.000Z',
      failures: 2,
      failingSince: '2026-12-03T04:59:00.000Z',
      lastAcceptedAt: null,
    });
  });

  it('shows whether a secret is set, never the secret, and the URL redacted', () => {
    const view = endpointJson(record);

    expect(view).toEqual({
      name: 'acme',
      url: 'https://***@hooks.acme.example/h?token=***',
      state: 'disabled',
      eventTypes: ['*'],
      match: {},
      owner: null,
      secret: 'set',
      publicKey: null,
      headers: {},
      auth: null,
      tls: null,
      previousSecretUntil: null,
      parked: null,
      health: { paused: false, pausedUntil: null, failures: 0, failingSince: null, lastAcceptedAt: null },
      stateChange: { by: 'alice', reason: 'down', at: '2026-12-03T04:00:00.000Z' },
      settings: { maxAttempts: 3 },
      createdAt: '2026-12-03T03:00:00.000Z',
      updatedAt: '2026-12-03T04:00:00.000Z',
    });
    expect(JSON.stringify(view)).not.toContain('MfKQ9r8');
    expect(endpointJson({ ...record, fields: { ...record.fields, secret: undefined } }).secret).toBe('unset');
  });

  it('carries the parked count it is given', () => {
    expect(endpointJson(record, Date.now(), 17).parked).toBe(17);
  });
});

const OLD_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OLDER_SECRET = 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=';
const NOW_MS = Date.parse('2026-12-03T04:30:00Z');
const HOUR_MS = 3_600_000;

describe('Function: parseOverlap', () => {
  it.each([
    ['24h', 24 * HOUR_MS],
    ['90m', 90 * 60_000],
    ['45s', 45_000],
    ['7d', 7 * 24 * HOUR_MS],
    ['168h', 168 * HOUR_MS],
    ['0', 0],
    ['0h', 0],
  ])('reads %s', (text, ms) => {
    expect(parseOverlap(text)).toBe(ms);
  });

  it.each([
    ['8d', 'at most 7d'],
    ['169h', 'at most 7d'],
    ['12', 'give a unit'],
    ['1.5h', 'write a whole number and a unit'],
    ['-1h', 'write a whole number and a unit'],
    ['1w', 'write a whole number and a unit'],
    ['', 'write a whole number and a unit'],
  ])('refuses %j as usage, saying how to write it', (text, problem) => {
    expect(() => parseOverlap(text)).toThrow(UsageError);
    expect(() => parseOverlap(text)).toThrow(problem);
  });
});

/**
 * A registry in memory with the real one's conditional update, and a context on a fixed clock. Its
 * target names a ledger table: each endpoint's parked count is `parking.parked` (the ledger's
 * countByState), and the release in progress what setState began or `parking.release` says.
 */
function registryContext(fields: EndpointFields, nowMs = NOW_MS, parking: { parked?: number; release?: Resume; state?: EndpointRecord['state'] } = {}) {
  const stored = new Map<string, EndpointRecord>([
    [fields.name, { fields, state: parking.state ?? 'enabled', createdAt: NOW_MS - HOUR_MS, updatedAt: NOW_MS - HOUR_MS }],
  ]);
  const updates: EndpointFields[] = [];
  const stateWrites: { name: string; state: string; change: unknown; rate: number | undefined }[] = [];
  const counted: { state: string; endpoint: string | undefined }[] = [];
  let release = parking.release;
  let clock = nowMs;
  const registry = {
    setState: (name: string, state: EndpointRecord['state'], change: { by: string; reason: string; at: number }, rate?: number) => {
      const record = { ...stored.get(name)!, state, stateChange: change, updatedAt: change.at };
      stored.set(name, record);
      stateWrites.push({ name, state, change, rate });
      release = state === 'enabled' ? { since: change.at, rate: rate ?? DEFAULT_RESUME_RATE } : undefined;
      return Promise.resolve(record);
    },
    get: (name: string) => Promise.resolve(stored.get(name)),
    scan: () => Promise.resolve({ records: [...stored.values()], unreadable: [] }),
    update: (next: EndpointFields, expectedUpdatedAt: number, at: number) => {
      const current = stored.get(next.name)!;
      if (current.updatedAt !== expectedUpdatedAt) return Promise.reject(new EndpointConflictError(next.name, 'changed meanwhile'));
      const record = { ...current, fields: next, updatedAt: at };
      stored.set(next.name, record);
      updates.push(next);
      return Promise.resolve(record);
    },
  };
  const settings = deploymentFromJson(deploymentToJson({ ...DEFAULT_SETTINGS, allowPrivateCidrs: [], allowHttp: false }), 'test');
  const ctx = {
    target: { description: 'the test registry', deployment: settings, ledgerTable: 'handoff-ledger', connection: { kind: 'sandbox' } },
    now: () => clock,
    registry: () => registry,
    ledger: () => ({
      countByState: (state: string, options: { endpoint?: string } = {}) => {
        counted.push({ state, endpoint: options.endpoint });
        return Promise.resolve(parking.parked ?? 0);
      },
    }),
    endpointRelease: () => Promise.resolve(release),
  } as unknown as CommandContext;
  return { ctx, updates, stateWrites, counted, stored: () => stored.get(fields.name)!.fields, at: (ms: number) => (clock = ms) };
}

const acme = { name: 'acme', url: 'https://hooks.acme.example/in', eventTypes: ['*'], secret: OLD_SECRET, maxAttempts: 3 };

/** Every text a command result can print. */
function printed(result: { json: unknown; human: string }): string {
  return `${JSON.stringify(result.json)}\n${result.human}`;
}

describe('Function: endpointRotateSecretCommand', () => {
  it('keeps the old secret signing for 24 h by default, in one update, and prints the new one once', async () => {
    const { ctx, updates, stored } = registryContext(acme);

    const result = await endpointRotateSecretCommand(ctx, 'acme', {});

    const fresh = (result.json as { generatedSecret: string }).generatedSecret;
    expect(fresh).toMatch(/^whsec_/);
    expect(updates).toHaveLength(1);
    expect(stored()).toEqual({ ...acme, secret: fresh, previousSecret: OLD_SECRET, previousSecretUntil: NOW_MS + 24 * HOUR_MS });
    expect(result.json).toMatchObject({ rotated: true, secret: 'set', previousSecretUntil: '2026-12-04T04:30:00.000Z', settings: { maxAttempts: 3 } });
    expect(result.human).toBe(
      [
        'rotated the signing secret of endpoint acme: until 2026-12-04T04:30:00Z (in 1 d) each request is signed with both the new and the old secret, then with the new one only',
        '',
        `signing secret: ${fresh}`,
        'shown once: give it to the receiver now; no command shows it again',
      ].join('\n'),
    );
    expect(printed(result).split(fresh)).toHaveLength(3); // once in the JSON, once in the text
    expect(printed(result)).not.toContain(OLD_SECRET);
  });

  it('switches at once with --overlap 0, keeping no previous secret', async () => {
    const { ctx, stored } = registryContext({ ...acme, previousSecret: OLDER_SECRET, previousSecretUntil: NOW_MS + HOUR_MS });

    const result = await endpointRotateSecretCommand(ctx, 'acme', { overlap: '0' });

    expect(stored()).not.toHaveProperty('previousSecret');
    expect(stored()).not.toHaveProperty('previousSecretUntil');
    expect(result.json).toMatchObject({ previousSecretUntil: null });
    expect(result.human).toMatch(/^rotated the signing secret of endpoint acme: the old one no longer signs\nthe secret before the old one, still in its own overlap, no longer signs\n/);
  });

  it('during an overlap keeps only the secret it replaces as the previous one, and says so', async () => {
    const { ctx, stored } = registryContext({ ...acme, previousSecret: OLDER_SECRET, previousSecretUntil: NOW_MS + HOUR_MS });

    const result = await endpointRotateSecretCommand(ctx, 'acme', { overlap: '2h', secret: 'whsec_/uCW0n0KPpd7EnSxkS82xgxojTF+Q5yIYx5I0pyVR/s=' });

    expect(stored()).toMatchObject({ previousSecret: OLD_SECRET, previousSecretUntil: NOW_MS + 2 * HOUR_MS });
    expect(result.human).toContain('the secret before the old one, still in its own overlap, no longer signs');
    // A secret the operator gave is not printed back.
    expect(result.human).not.toContain('signing secret:');
    expect(printed(result)).not.toContain('/uCW0n0KPpd7');
  });

  it('gives an unsigned endpoint its first secret, with nothing to overlap', async () => {
    const { secret: _none, ...unsigned } = acme;
    const { ctx, stored } = registryContext(unsigned);

    const result = await endpointRotateSecretCommand(ctx, 'acme', { overlap: '1h' });

    expect(stored()).not.toHaveProperty('previousSecret');
    expect(result.human).toMatch(/^set a signing secret for endpoint acme: its requests were unsigned until now\n/);
  });

  it('refuses a bad --overlap and the current secret as usage, and a Secrets Manager secret, writing nothing', async () => {
    const { ctx, updates } = registryContext(acme);
    const arn = registryContext({ ...acme, secret: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/acme-AbCdEf' });

    await expect(endpointRotateSecretCommand(ctx, 'acme', { overlap: '30d' })).rejects.toThrow(UsageError);
    await expect(endpointRotateSecretCommand(ctx, 'acme', { secret: OLD_SECRET })).rejects.toThrow('--secret is the secret the endpoint has now');
    await expect(endpointRotateSecretCommand(arn.ctx, 'acme', {})).rejects.toThrow(CommandFailedError);
    expect(updates).toEqual([]);
    expect(arn.updates).toEqual([]);
  });
});

describe('show, list and update during an overlap', () => {
  const rotatedAcme = { ...acme, previousSecret: OLDER_SECRET, previousSecretUntil: NOW_MS + 2 * HOUR_MS };

  it('show and list say until when the previous secret is accepted, never a secret; after the end, only set', async () => {
    const { ctx, at } = registryContext(rotatedAcme);

    const shown = await endpointShowCommand(ctx, 'acme');
    const listed = await endpointListCommand(ctx);
    at(NOW_MS + 2 * HOUR_MS);
    const shownAfter = await endpointShowCommand(ctx, 'acme');
    const listedAfter = await endpointListCommand(ctx);

    expect(shown.human).toMatch(/^secret\s+set \(previous secret accepted until 2026-12-03T06:30:00Z \(in 2 h\)\)$/m);
    expect(shown.json).toMatchObject({ secret: 'set', previousSecretUntil: '2026-12-03T06:30:00.000Z', settings: { maxAttempts: 3 } });
    expect(listed.human).toContain('\n\nacme: secret set (previous secret accepted until 2026-12-03T06:30:00Z (in 2 h))');
    expect(listed.json).toEqual([expect.objectContaining({ name: 'acme', previousSecretUntil: '2026-12-03T06:30:00.000Z' })]);
    expect(shownAfter.human).toMatch(/^secret\s+set$/m);
    expect(shownAfter.json).toMatchObject({ previousSecretUntil: null });
    expect(listedAfter.human).not.toContain('previous secret');
    for (const result of [shown, listed, shownAfter, listedAfter]) {
      expect(printed(result)).not.toContain(OLD_SECRET.slice(6, 20));
      expect(printed(result)).not.toContain(OLDER_SECRET.slice(6, 20));
    }
  });

  it('update --clear previousSecret ends the overlap at once', async () => {
    const { ctx, stored } = registryContext(rotatedAcme);

    const result = await endpointUpdateCommand(ctx, 'acme', { clear: ['previousSecret'] });

    expect(stored()).toEqual(acme);
    expect(result.json).toMatchObject({ changed: ['previousSecret', 'previousSecretUntil'] });
    expect(printed(result)).not.toContain(OLDER_SECRET.slice(6, 20));
  });

  it('update --secret replaces the secret at once, the previous one with it; other updates keep the overlap', async () => {
    const replaced = registryContext(rotatedAcme);
    const other = registryContext(rotatedAcme);
    const given = 'whsec_/uCW0n0KPpd7EnSxkS82xgxojTF+Q5yIYx5I0pyVR/s=';

    await endpointUpdateCommand(replaced.ctx, 'acme', { secret: given });
    await endpointUpdateCommand(other.ctx, 'acme', { maxAttempts: '4' });

    expect(replaced.stored()).toEqual({ ...acme, secret: given });
    expect(other.stored()).toEqual({ ...rotatedAcme, maxAttempts: 4 });
  });

  it('drops a previous secret whose overlap is over when it writes the endpoint', async () => {
    const { ctx, stored, at } = registryContext(rotatedAcme);
    at(NOW_MS + 3 * HOUR_MS);

    await endpointUpdateCommand(ctx, 'acme', { maxAttempts: '4' });

    expect(stored()).toEqual({ ...acme, maxAttempts: 4 });
  });
});

describe('show and update: the settings, from the fields table', () => {
  it("show gives a row per setting in effect, marking those the endpoint does not set as the default", async () => {
    const { ctx } = registryContext({ ...acme, rateLimitPerSecond: 5, disableAfterFailures: 3 });

    const shown = await endpointShowCommand(ctx, 'acme');

    expect(shown.human).toMatch(/^max attempts\s+3$/m);
    expect(shown.human).toMatch(/^attempt timeout\s+10000 ms \(default\)$/m);
    expect(shown.human).toMatch(/^recovery\s+review \(default\)$/m);
    expect(shown.human).toMatch(/^rate limit\s+5\/s$/m);
    expect(shown.human).toMatch(/^receiver retention\s+\(not given\)$/m);
    expect(shown.human).toMatch(/^auto-disable\s+after 259200 s without an accepted request and 3 failed attempts$/m);
    expect(shown.json).toMatchObject({
      settings: { maxAttempts: 3, rateLimitPerSecond: 5, disableAfterFailures: 3 },
      effective: { maxAttempts: 3, recovery: 'review', autoDisable: true, disableAfterSeconds: 259_200, rateLimitPerSecond: 5, receiverRetentionSeconds: null },
    });
  });

  it.each(['name', 'secret', 'constructor', '__proto__'])('update --clear %s is refused as usage, listing the fields that can be cleared, writing nothing', async (field) => {
    const { ctx, updates } = registryContext(acme);

    await expect(endpointUpdateCommand(ctx, 'acme', { clear: [field] })).rejects.toThrow(
      new UsageError(`--clear "${field}": not an optional field (${CLEARABLE_FIELDS.join(', ')})`),
    );
    expect(updates).toEqual([]);
  });

  it('show names the owner when there is one, and update --clear owner takes it away', async () => {
    const { ctx, stored } = registryContext({ ...acme, owner: 'merchant-42' });

    const shown = await endpointShowCommand(ctx, 'acme');
    await endpointUpdateCommand(ctx, 'acme', { clear: ['owner'] });

    expect(shown.human).toMatch(/^owner\s+merchant-42$/m);
    expect(shown.json).toMatchObject({ owner: 'merchant-42' });
    expect(stored()).not.toHaveProperty('owner');
  });

  it('update --clear unsets a setting, so its default is in effect again', async () => {
    const { ctx, stored } = registryContext({ ...acme, recovery: 'drop' });

    const result = await endpointUpdateCommand(ctx, 'acme', { clear: ['recovery', 'maxAttempts'] });

    expect(stored()).not.toHaveProperty('recovery');
    expect(stored()).not.toHaveProperty('maxAttempts');
    expect(result.json).toMatchObject({ changed: ['maxAttempts', 'recovery'], settings: {} });
  });
});

describe('Function: parseResumeRate', () => {
  it.each([
    ['1', 1],
    ['20', 20],
    [' 1000 ', 1000],
  ])('reads %j', (text, rate) => {
    expect(parseResumeRate(text)).toBe(rate);
  });

  it.each(['0', '1001', '2.5', '-3', 'fast', '', '1e3'])('refuses %j as usage, naming --rate and what it takes', (text) => {
    expect(() => parseResumeRate(text)).toThrow(UsageError);
    expect(() => parseResumeRate(text)).toThrow(/^--rate .*: give the most parked deliveries released per second, a whole number from 1 to 1000$/);
  });
});

describe('parking: list, show, enable and disable', () => {
  const MINUTE_MS = 60_000;

  it("list and show count the endpoint's parked deliveries from the ledger's parked listing, in text and JSON", async () => {
    const { ctx, counted } = registryContext(acme, NOW_MS, { parked: 12, state: 'disabled' });

    const listed = await endpointListCommand(ctx);
    const shown = await endpointShowCommand(ctx, 'acme');

    expect(counted).toEqual([
      { state: 'parked', endpoint: 'acme' },
      { state: 'parked', endpoint: 'acme' },
    ]);
    expect(listed.json).toEqual([expect.objectContaining({ name: 'acme', state: 'disabled', parked: 12 })]);
    expect(listed.human.split('\n')[0]).toMatch(/^name\s+state\s+url\s+event types\s+match\s+parked$/);
    expect(listed.human.split('\n')[1]).toMatch(/^acme\s+disabled\s.*\s12$/);
    expect(shown.json).toMatchObject({ parked: 12, release: null });
    expect(shown.human).toMatch(/^parked\s+12 \(held until endpoint enable acme releases them\)$/m);
    expect(shown.human).toMatch(/^release\s+\(none\)$/m);
    for (const result of [listed, shown]) expect(printed(result)).not.toContain('not in this release');
  });

  it('show gives a release in progress: since when, the ramp now and its most, how far it is scheduled', async () => {
    const release: Resume = { since: NOW_MS - 2 * MINUTE_MS, rate: 40, until: NOW_MS + 5_000 };
    const { ctx } = registryContext(acme, NOW_MS, { parked: 300, release });

    const shown = await endpointShowCommand(ctx, 'acme');

    expect(shown.json).toMatchObject({
      parked: 300,
      release: { since: '2026-12-03T04:28:00.000Z', rate: 40, rateNow: 20, scheduledUntil: '2026-12-03T04:30:05.000Z' },
    });
    expect(shown.human).toMatch(/^parked\s+300$/m);
    expect(shown.human).toMatch(/^release\s+since 2026-12-03T04:28:00Z .*, oldest first at 20\/s now, up to 40\/s \(scheduled until 2026-12-03T04:30:05Z .*\)$/m);
  });

  it('show says how to release deliveries parked for an enabled endpoint with no release in progress', async () => {
    const { ctx } = registryContext(acme, NOW_MS, { parked: 2 });

    const shown = await endpointShowCommand(ctx, 'acme');

    expect(shown.json).toMatchObject({ state: 'enabled', parked: 2, release: null });
    expect(shown.human).toMatch(/^parked\s+2 \(no release in progress: endpoint enable acme releases them\)$/m);
  });

  it('enable --rate passes the rate to setState and says how many are released, how, and how to follow it', async () => {
    const { ctx, stateWrites } = registryContext(acme, NOW_MS, { parked: 12, state: 'disabled' });

    const result = await endpointSetStateCommand(ctx, 'acme', 'enabled', { operator: 'alice', rate: '8' });

    expect(stateWrites).toEqual([{ name: 'acme', state: 'enabled', change: { by: 'alice', reason: 'enabled by an operator', at: NOW_MS }, rate: 8 }]);
    expect(result.json).toMatchObject({
      state: 'enabled',
      parked: 12,
      release: { since: '2026-12-03T04:30:00.000Z', rate: 8, rateNow: 1, scheduledUntil: null },
    });
    expect(result.human).toBe(
      [
        'endpoint acme enabled by alice: enabled by an operator',
        '12 parked deliveries: released oldest admission first, at 1/s at first, doubling every minute up to 8/s, by the recovery runs (the sandbox: its recovery timer; AWS: the scheduled recovery function)',
        'follow it: handoff endpoint show acme',
      ].join('\n'),
    );
  });

  it('enable without --rate releases at most DEFAULT_RESUME_RATE per second; with none parked it says so', async () => {
    const { ctx, stateWrites } = registryContext(acme, NOW_MS, { parked: 0, state: 'disabled' });

    const result = await endpointSetStateCommand(ctx, 'acme', 'enabled', { operator: 'alice' });

    expect(stateWrites[0]?.rate).toBe(DEFAULT_RESUME_RATE);
    expect(result.human.split('\n')[1]).toBe("no parked deliveries now; any a consumer still parks before it sees acme enabled are released");
  });

  it('refuses a bad --rate, and --rate on disable, as usage naming --rate, writing nothing', async () => {
    const { ctx, stateWrites } = registryContext(acme, NOW_MS, { state: 'disabled' });

    await expect(endpointSetStateCommand(ctx, 'acme', 'enabled', { operator: 'alice', rate: '0' })).rejects.toThrow(/^--rate "0"/);
    await expect(endpointSetStateCommand(ctx, 'acme', 'enabled', { operator: 'alice', rate: '5000' })).rejects.toThrow(UsageError);
    await expect(endpointSetStateCommand(ctx, 'acme', 'disabled', { operator: 'alice', reason: 'down', rate: '5' })).rejects.toThrow(/^--rate is for endpoint enable/);
    expect(stateWrites).toEqual([]);
  });

  it('disable says its deliveries are parked from now on, with the count already parked', async () => {
    const { ctx, stateWrites } = registryContext(acme, NOW_MS, { parked: 3 });

    const result = await endpointSetStateCommand(ctx, 'acme', 'disabled', { operator: 'alice', reason: 'receiver down' });

    expect(stateWrites).toEqual([{ name: 'acme', state: 'disabled', change: { by: 'alice', reason: 'receiver down', at: NOW_MS }, rate: undefined }]);
    expect(result.json).toMatchObject({ state: 'disabled', parked: 3 });
    expect(result.json).not.toHaveProperty('release');
    expect(result.human).toBe(
      [
        'endpoint acme disabled by alice: receiver down',
        "its deliveries are parked from now on (once the consumers' copies of the registry have it, 15 s at most in AWS): neither attempted nor dead; endpoint enable acme releases them",
        '3 parked deliveries already',
      ].join('\n'),
    );
  });
});
