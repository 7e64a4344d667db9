import { describe, expect, it } from 'vitest';
import { checkEndpoint, ConfigError, DEFAULT_SETTINGS, derivedTimings, readSettings, settingsToEnvironment } from '../../lib/config';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';

describe('Function: readSettings', () => {
  it('returns the SPEC defaults for an empty environment', () => {
    const settings = readSettings({});

    expect(settings).toEqual(DEFAULT_SETTINGS);
    expect(settings.retryPolicy).toEqual(DEFAULT_RETRY_POLICY);
    expect(settings.retryPolicy.waitsSeconds).toEqual([30, 120, 600, 1800, 7200]);
    expect(settings).toMatchObject({ attemptTimeoutMs: 10_000, payloadLimitBytes: 65_536 });
  });

  it('reads every HANDOFF_ variable', () => {
    const settings = readSettings({
      HANDOFF_WEBHOOK_URL: 'https://hooks.example.com/shipments',
      HANDOFF_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      HANDOFF_RETRY_SCHEDULE: '1, 2,3',
      HANDOFF_MAX_ATTEMPTS: '4',
      HANDOFF_ATTEMPT_TIMEOUT_MS: '500',
      HANDOFF_PAYLOAD_LIMIT_BYTES: '2048',
      HANDOFF_BATCH_SIZE: '5',
      HANDOFF_MAX_CONCURRENCY: '3',
      HANDOFF_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8, ::1/128',
      HANDOFF_ALLOW_HTTP: 'true',
    });

    expect(settings).toMatchObject({
      webhookUrl: 'https://hooks.example.com/shipments',
      webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      retryPolicy: { maxAttempts: 4, waitsSeconds: [1, 2, 3] },
      attemptTimeoutMs: 500,
      payloadLimitBytes: 2048,
      batchSize: 5,
      maxConcurrency: 3,
      allowPrivateCidrs: ['127.0.0.0/8', '::1/128'],
      allowHttp: true,
    });
  });

  it('gives a changed schedule another policy version', () => {
    const changed = readSettings({ HANDOFF_RETRY_SCHEDULE: '1,2,3' });

    expect(changed.retryPolicy.version).not.toBe(DEFAULT_RETRY_POLICY.version);
    expect(readSettings({ HANDOFF_RETRY_SCHEDULE: '1,2,3' }).retryPolicy.version).toBe(changed.retryPolicy.version);
  });

  it.each([
    ['HANDOFF_WEBHOOK_URL', 'not a url'],
    ['HANDOFF_WEBHOOK_URL', 'ftp://example.com/'],
    ['HANDOFF_WEBHOOK_URL', 'https://user:pw@example.com/'],
    ['HANDOFF_WEBHOOK_SECRET', 'plain-secret'],
    ['HANDOFF_RETRY_SCHEDULE', '30,soon'],
    ['HANDOFF_RETRY_SCHEDULE', '50000'],
    ['HANDOFF_MAX_ATTEMPTS', '0'],
    ['HANDOFF_ATTEMPT_TIMEOUT_MS', '-5'],
    ['HANDOFF_PAYLOAD_LIMIT_BYTES', '2000000'],
    ['HANDOFF_BATCH_SIZE', '1.5'],
    ['HANDOFF_ALLOW_HTTP', 'yes'],
    ['HANDOFF_ALLOW_PRIVATE_CIDRS', '10.0.0.0/8,foo'],
    ['HANDOFF_ALLOW_PRIVATE_CIDRS', '10.0.0.0/33'],
    // With the 20 s an invocation needs beyond its attempt, more would pass Lambda's 900 s.
    ['HANDOFF_ATTEMPT_TIMEOUT_MS', '880001'],
  ])('stops on an invalid %s (%s) with a message naming it', (variable, value) => {
    const read = () => readSettings({ [variable]: value });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(new RegExp(`^${variable} `));
  });
});

describe('Function: checkEndpoint', () => {
  it.each([
    ['http://hooks.example.com/', { allowHttp: false, allowPrivateCidrs: [] }],
    ['https://10.1.2.3/hook', { allowHttp: false, allowPrivateCidrs: [] }],
    ['https://[::ffff:0:127.0.0.1]/hook', { allowHttp: false, allowPrivateCidrs: [] }],
    ['http://127.0.0.1:8080/hook', { allowHttp: true, allowPrivateCidrs: ['10.0.0.0/8'] }],
  ])('refuses %s, naming the setting', (url, allowances) => {
    const check = () => checkEndpoint(url, allowances, 'HANDOFF_WEBHOOK_URL');

    expect(check).toThrow(ConfigError);
    expect(check).toThrow(/^HANDOFF_WEBHOOK_URL is refused: /);
  });

  it.each([
    ['https://hooks.example.com/', { allowHttp: false, allowPrivateCidrs: [] }],
    ['http://127.0.0.1:8080/hook', { allowHttp: true, allowPrivateCidrs: ['127.0.0.0/8'] }],
  ])('accepts %s with its allowances', (url, allowances) => {
    expect(() => checkEndpoint(url, allowances, 'HANDOFF_WEBHOOK_URL')).not.toThrow();
  });
});

describe('Function: settingsToEnvironment', () => {
  it('round-trips through readSettings, leaving the secret out', () => {
    const settings = readSettings({
      HANDOFF_WEBHOOK_URL: 'https://hooks.example.com/',
      HANDOFF_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      HANDOFF_RETRY_SCHEDULE: '5,10',
      HANDOFF_ALLOW_HTTP: 'true',
    });

    const env = settingsToEnvironment(settings);

    expect(Object.values(env).join(' ')).not.toContain('whsec_');
    expect(readSettings(env)).toEqual({ ...settings, webhookSecret: undefined });
  });
});

describe('Function: derivedTimings', () => {
  it('keeps the queue visibility at 6x the function timeout and the redrive above the budget', () => {
    const timings = derivedTimings(DEFAULT_SETTINGS);

    expect(timings.visibilityTimeoutSeconds).toBe(6 * timings.functionTimeoutSeconds);
    expect(timings.maxReceiveCount).toBeGreaterThan(DEFAULT_SETTINGS.retryPolicy.maxAttempts);
    expect(timings.leaseMs).toBeGreaterThan(DEFAULT_SETTINGS.attemptTimeoutMs);
    expect(timings.leaseMs).toBeLessThan(timings.visibilityTimeoutSeconds * 1000);
  });
});
