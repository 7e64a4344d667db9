import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lib/errors';
import type { DeploymentSettings } from '../../lib/endpoints/endpoint';
import { DEFAULT_RETRY_POLICY, retryPolicy } from '../../lib/policy';
import { ENDPOINTS_FILE_ENV, exposedSecretsWarning, parseEndpointsFile, readEndpointsFile, refuseSingleUrlSettings } from '../../sandbox/endpoints-file';
import { thrownBy } from '../helpers/thrown';

const FILE = '/home/dev/endpoints.json';
const SECRET_A = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SECRET_B = 'whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldCBrZXkh';
/** The sandbox's deployment: loopback over http allowed. */
const DEPLOYMENT: DeploymentSettings = {
  retryPolicy: DEFAULT_RETRY_POLICY,
  attemptTimeoutMs: 10_000,
  retentionDays: 30,
  allowPrivateCidrs: ['127.0.0.0/8', '::1/128'],
  allowHttp: true,
};

const acme = { name: 'carrier-acme', url: 'http://127.0.0.1:4001/webhook', eventTypes: ['shipment.delivered'], match: { 'data.carrier': ['acme'] }, secret: SECRET_A };
const notifications = { name: 'notifications', url: 'http://127.0.0.1:4002/webhook', eventTypes: ['*'], secret: SECRET_B };

function parse(json: unknown): ReturnType<typeof parseEndpointsFile> {
  return parseEndpointsFile(FILE, typeof json === 'string' ? json : JSON.stringify(json), DEPLOYMENT);
}

/** The ConfigError `run` throws (fails the test when it throws nothing or something else). */
const refusal = (run: () => unknown) => thrownBy(run, ConfigError);

describe('Endpoints file: a valid file', () => {
  it('gives each endpoint as written and resolved with the deployment defaults, in file order', () => {
    // Act
    const endpoints = parse({ endpoints: [acme, { ...notifications, maxAttempts: 3, recovery: 'drop' }] });

    // Assess
    expect(endpoints.map(({ fields }) => fields.name)).toEqual(['carrier-acme', 'notifications']);
    expect(endpoints[0]!.fields).toEqual(acme);
    expect(endpoints[0]!.endpoint).toMatchObject({
      name: 'carrier-acme',
      secret: SECRET_A,
      policy: DEFAULT_RETRY_POLICY,
      attemptTimeoutMs: 10_000,
      recovery: 'review',
      state: 'enabled',
      match: { 'data.carrier': ['acme'] },
    });
    expect(endpoints[1]!.endpoint).toMatchObject({ recovery: 'drop', policy: retryPolicy(3, DEFAULT_RETRY_POLICY.waitsSeconds) });
  });

  it('accepts an endpoint without a secret (its requests go unsigned)', () => {
    const { secret: _secret, ...unsigned } = notifications;

    const [only] = parse({ endpoints: [unsigned] });

    expect(only!.endpoint.secret).toBeUndefined();
  });

  it('reads the file from disk', () => {
    const directory = mkdtempSync(join(tmpdir(), 'handoff-endpoints-file-'));
    const path = join(directory, 'endpoints.json');
    writeFileSync(path, JSON.stringify({ endpoints: [acme] }));

    try {
      expect(readEndpointsFile(path, DEPLOYMENT).map(({ fields }) => fields)).toEqual([acme]);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('Endpoints file: the file as a whole', () => {
  it.each([
    ['{"endpoints": [', /is not JSON \(it ends too early\)$/],
    ['{"endpoints":\n  [x]}', /is not JSON/],
    ['[]', /must hold a JSON object \{"endpoints": \[ … \]\}$/],
    ['{}', /must hold "endpoints", a list of endpoints$/],
    ['{"endpoints": {}}', /must hold "endpoints", a list of endpoints$/],
    ['{"endpoints": []}', /lists no endpoint/],
    ['{"endpoints": [], "webhookUrl": "x"}', /has "webhookUrl" beside "endpoints"/],
  ])('refuses %s, naming the variable and the file', (text, problem) => {
    const error = refusal(() => parse(text));

    expect(error.variable).toBe(ENDPOINTS_FILE_ENV);
    expect(error.message.startsWith(`${ENDPOINTS_FILE_ENV} ${FILE} `)).toBe(true);
    expect(error.message).toMatch(problem);
  });

  it('does not quote a file that is not JSON (it may hold a secret)', () => {
    const error = refusal(() => parse(`{"endpoints": [{"secret": "${SECRET_A}" oops`));

    expect(error.message).not.toContain(SECRET_A.slice('whsec_'.length));
  });

  it('names the file it cannot read and why', () => {
    const error = refusal(() => readEndpointsFile('/nonexistent/handoff/endpoints.json', DEPLOYMENT));

    expect(error.message).toBe(`${ENDPOINTS_FILE_ENV} /nonexistent/handoff/endpoints.json cannot be read (ENOENT)`);
  });
});

describe('Endpoints file: one endpoint that cannot be used', () => {
  it.each([
    ['a name not of a-z 0-9 -', { ...acme, name: 'Carrier ACME' }, 'endpoints[1]: endpoint "Carrier ACME": name must be 1–64 characters'],
    ['an unknown event type', { ...acme, eventTypes: ['shipment.lost'] }, 'endpoints[1]: endpoint "carrier-acme": eventTypes holds "shipment.lost"'],
    ['an unknown field', { ...acme, webhookUrl: 'x' }, 'endpoints[1]: endpoint "carrier-acme": webhookUrl is not an endpoint field'],
    ['a private address the guard refuses', { ...acme, url: 'http://10.1.2.3/hook' }, 'endpoints[1]: endpoint "carrier-acme": url is refused'],
    ['a URL that is not absolute', { ...acme, url: 'hooks/acme' }, 'endpoints[1]: endpoint "carrier-acme": url '],
    ['a match on a field that is not the event', { ...acme, match: { carrier: ['acme'] } }, 'endpoints[1]: endpoint "carrier-acme": match.carrier is not a field to match'],
    ['an attempt timeout above the deployment', { ...acme, attemptTimeoutMs: 20_000 }, 'endpoints[1]: endpoint "carrier-acme": attemptTimeoutMs must be at most'],
    ['a name used twice', { ...notifications, url: 'http://127.0.0.1:4003/webhook' }, 'endpoints[1]: endpoint "notifications": name is already used by endpoints[0]'],
  ])('refuses %s, naming the file, the entry, the endpoint and the field', (_, entry, expected) => {
    const error = refusal(() => parse({ endpoints: [notifications, entry] }));

    expect(error.variable).toBe(ENDPOINTS_FILE_ENV);
    expect(error.message).toContain(`${ENDPOINTS_FILE_ENV} ${FILE} ${expected}`);
  });

  it('refuses a URL with credentials without showing them', () => {
    const error = refusal(() => parse({ endpoints: [{ ...acme, url: 'http://ops:pa55-e2f81b@127.0.0.1:4001/hook' }] }));

    expect(error.message).toContain('endpoints[0]: endpoint "carrier-acme": url must not carry credentials');
    expect(error.message).not.toContain('pa55-e2f81b');
  });

  it.each([
    ['not a signing secret', 'hunter2-hunter2', 'secret must be a whsec_'],
    ['a Secrets Manager ARN (the sandbox has none)', 'arn:aws:secretsmanager:us-east-1:123456789012:secret:acme-hook', 'secret must be a whsec_… value in the sandbox'],
    ['a key that is not base64', 'whsec_not*base64*at*all', 'secret '],
    ['a key too short to sign with', 'whsec_c2hvcnQta2V5', 'secret '],
  ])('refuses a secret that is %s, without showing it', (_, secret, expected) => {
    const error = refusal(() => parse({ endpoints: [{ ...acme, secret }] }));

    expect(error.message).toContain(`endpoints[0]: endpoint "carrier-acme": ${expected}`);
    expect(error.message).not.toContain(secret.replace(/^whsec_/, ''));
  });

  it("refuses a rotation's previous secret given as a Secrets Manager ARN, naming that field", () => {
    const previousSecret = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:acme-old-AbCdEf';
    const error = refusal(() => parse({ endpoints: [{ ...acme, previousSecret, previousSecretUntil: Date.now() + 3_600_000 }] }));

    expect(error.message).toContain('endpoints[0]: endpoint "carrier-acme": previousSecret must be a whsec_… value in the sandbox');
  });
});

describe('Endpoints file beside the single-URL settings', () => {
  it.each([
    [{ webhookUrl: 'http://127.0.0.1:4001/hook', webhookSecret: undefined }, 'HANDOFF_WEBHOOK_URL'],
    [{ webhookUrl: undefined, webhookSecret: SECRET_A }, 'HANDOFF_WEBHOOK_SECRET'],
    [{ webhookUrl: 'http://127.0.0.1:4001/hook', webhookSecret: SECRET_A }, 'HANDOFF_WEBHOOK_URL and HANDOFF_WEBHOOK_SECRET'],
  ])('is refused, naming both variables (%#)', (settings, named) => {
    const error = refusal(() => refuseSingleUrlSettings(settings));

    expect(error.message.startsWith(`${ENDPOINTS_FILE_ENV} replaces ${named}: `)).toBe(true);
    expect(error.message).not.toContain(SECRET_A);
  });

  it('is accepted alone', () => {
    expect(() => refuseSingleUrlSettings({ webhookUrl: undefined, webhookSecret: undefined })).not.toThrow();
  });
});


describe('Endpoints file readable by others', () => {
  it.each([
    [0o600, true, undefined],
    [0o640, true, 'readable by group (mode 640)'],
    [0o644, true, 'readable by group and others (mode 644)'],
    [0o604, true, 'readable by others (mode 604)'],
    [0o644, false, undefined],
  ])('mode %s, secrets %s: warns %s', (mode, withSecret, expected) => {
    // Prepare
    const directory = mkdtempSync(join(tmpdir(), 'handoff-endpoints-file-'));
    const path = join(directory, 'endpoints.json');
    const { secret: _secret, ...unsigned } = acme;
    writeFileSync(path, JSON.stringify({ endpoints: [withSecret ? acme : unsigned] }));
    chmodSync(path, mode);

    try {
      // Act
      const warning = exposedSecretsWarning(path, readEndpointsFile(path, DEPLOYMENT));

      // Assess
      if (expected === undefined) expect(warning).toBeUndefined();
      else expect(warning).toBe(`${ENDPOINTS_FILE_ENV} ${path} holds signing secrets and is ${expected}: chmod 600 it`);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
