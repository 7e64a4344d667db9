import { describe, expect, it } from 'vitest';
import {
  checkEndpoint,
  DEFAULT_SETTINGS,
  derivedTimings,
  longestDeliverySeconds,
  MAX_PAYLOAD_LIMIT_BYTES,
  minimumRetentionDays,
  QUEUE_RETENTION_SECONDS,
  readSettings,
  settingsToEnvironment,
  validateSettings,
} from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import { DEFAULT_RETRY_POLICY, retryPolicy } from '../../lib/policy';

describe('Function: readSettings', () => {
  it('returns the defaults of docs/contract.md §7 for an empty environment', () => {
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

describe('Function: longestDeliverySeconds', () => {
  it('counts every wait at the 12 h cap, every attempt at the visibility timeout, and the queue retention', () => {
    const { visibilityTimeoutSeconds } = derivedTimings(DEFAULT_SETTINGS);

    expect(longestDeliverySeconds(DEFAULT_SETTINGS)).toBe(5 * 43_200 + 6 * visibilityTimeoutSeconds + QUEUE_RETENTION_SECONDS);
  });

  it('does not depend on the scheduled waits, since a Retry-After can lengthen any of them to the cap', () => {
    const short = { ...DEFAULT_SETTINGS, retryPolicy: retryPolicy(6, [1]) };

    expect(longestDeliverySeconds(short)).toBe(longestDeliverySeconds(DEFAULT_SETTINGS));
  });
});

describe('Function: minimumRetentionDays', () => {
  it('is 18 days for the default policy (14 days of queue retention, 2.5 days of capped waits, a day of margin)', () => {
    expect(minimumRetentionDays(DEFAULT_SETTINGS)).toBe(18);
  });

  it('grows by half a day per attempt', () => {
    const many = { ...DEFAULT_SETTINGS, retryPolicy: retryPolicy(26, DEFAULT_RETRY_POLICY.waitsSeconds) };

    expect(minimumRetentionDays(many)).toBe(28);
  });
});

describe('Rule: the ledger retention outlives the longest delivery', () => {
  it('refuses a retention of 1 day at start-up, naming the retention and the retry settings', () => {
    const read = () => readSettings({ HANDOFF_RETENTION_DAYS: '1' });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(/^HANDOFF_RETENTION_DAYS must be at least 18 days with HANDOFF_RETRY_SCHEDULE\/HANDOFF_MAX_ATTEMPTS allowing 6 attempts, got 1: /);
  });

  it('refuses a retention that more attempts outgrow, naming both settings', () => {
    const read = () => readSettings({ HANDOFF_RETENTION_DAYS: '30', HANDOFF_MAX_ATTEMPTS: '40', HANDOFF_RETRY_SCHEDULE: '1' });

    expect(read).toThrow(/^HANDOFF_RETENTION_DAYS must be at least 35 days with HANDOFF_RETRY_SCHEDULE\/HANDOFF_MAX_ATTEMPTS allowing 40 attempts, got 30/);
  });

  it('refuses it in construct properties by their names', () => {
    const validate = () => validateSettings({ ...DEFAULT_SETTINGS, retentionDays: 1 });

    expect(validate).toThrow(ConfigError);
    expect(validate).toThrow(/^retentionDays must be at least 18 days with retryPolicy allowing 6 attempts, got 1/);
  });

  it('accepts the minimum and the default', () => {
    expect(readSettings({ HANDOFF_RETENTION_DAYS: '18' }).retentionDays).toBe(18);
    expect(readSettings({}).retentionDays).toBe(30);
  });

  it('refuses a schedule whose waits outlast the queue retention, naming the retry settings', () => {
    const read = () => readSettings({ HANDOFF_MAX_ATTEMPTS: '40', HANDOFF_RETRY_SCHEDULE: '43200', HANDOFF_RETENTION_DAYS: '100' });

    expect(read).toThrow(/^HANDOFF_RETRY_SCHEDULE\/HANDOFF_MAX_ATTEMPTS waits add up to 1684800 s, past the queue's 14-day message retention/);
  });
});

describe("Rule: the receiver's idempotency retention outlasts the retry window", () => {
  it('refuses a receiver retention within the default window (9,750 s of waits), naming both settings and figures', () => {
    const read = () => readSettings({ HANDOFF_RECEIVER_RETENTION_SECONDS: '3600' });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(
      /^HANDOFF_RECEIVER_RETENTION_SECONDS must exceed the retry window of HANDOFF_RETRY_SCHEDULE\/HANDOFF_MAX_ATTEMPTS \(9750 s\), got 3600: /,
    );
  });

  it('refuses it in construct properties by their names', () => {
    const validate = () => validateSettings({ ...DEFAULT_SETTINGS, receiverRetentionSeconds: 9_750 });

    expect(validate).toThrow(/^receiverRetentionSeconds must exceed the retry window of retryPolicy \(9750 s\), got 9750/);
  });

  it('accepts a retention past the window, and checks nothing when it is not given', () => {
    expect(readSettings({ HANDOFF_RECEIVER_RETENTION_SECONDS: '604800' }).receiverRetentionSeconds).toBe(604_800);
    expect(readSettings({}).receiverRetentionSeconds).toBeUndefined();
  });

  it('is passed to the consumer with the other settings', () => {
    const env = settingsToEnvironment(readSettings({ HANDOFF_RECEIVER_RETENTION_SECONDS: '604800' }));

    expect(env.HANDOFF_RECEIVER_RETENTION_SECONDS).toBe('604800');
  });
});

describe('Rule: the payload limit leaves room for the rest of a ledger row', () => {
  it('accepts the maximum, 256 KiB', () => {
    expect(MAX_PAYLOAD_LIMIT_BYTES).toBe(262_144);
    expect(readSettings({ HANDOFF_PAYLOAD_LIMIT_BYTES: '262144' }).payloadLimitBytes).toBe(262_144);
  });

  it.each([['262145'], ['450000'], ['1048576']])('refuses %s bytes at start-up, naming the setting', (value) => {
    expect(() => readSettings({ HANDOFF_PAYLOAD_LIMIT_BYTES: value })).toThrow(
      `HANDOFF_PAYLOAD_LIMIT_BYTES must be a whole number from 256 to 262144, got "${value}"`,
    );
  });

  it('refuses it in construct properties by name', () => {
    expect(() => validateSettings({ ...DEFAULT_SETTINGS, payloadLimitBytes: 450_000 })).toThrow(
      /^payloadLimitBytes must be a whole number from 256 to 262144/,
    );
  });

  it('refuses a schedule of more waits than attempts can use (the schedule is stored on every row)', () => {
    const waits = Array.from({ length: 101 }, () => '1').join(',');

    expect(() => readSettings({ HANDOFF_RETRY_SCHEDULE: waits })).toThrow(/^HANDOFF_RETRY_SCHEDULE must be at most 100 /);
    expect(() => validateSettings({ ...DEFAULT_SETTINGS, retryPolicy: retryPolicy(6, waits.split(',').map(Number)) })).toThrow(
      /^retryPolicy allows at most 100 attempts and 100 waits/,
    );
  });
});

describe('Rule: a signing secret must be able to sign', () => {
  it.each([
    ['whsec_abc', /the key is not base64/],
    ['whsec_!!!!', /the key is not base64/],
    ['whsec_', /the key has no key/],
    ['whsec_AAAA', /the key decodes to a 3-byte key; at least 24 bytes are needed/],
    // 23 bytes: one short.
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS=', /decodes to a 23-byte key/],
    ['MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', /it does not start with "whsec_"/],
  ])('refuses %j at start-up with a message naming the variable, never the value', (secret, problem) => {
    let error: unknown;
    try {
      readSettings({ HANDOFF_WEBHOOK_SECRET: secret });
    } catch (caught) {
      error = caught;
    }

    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe('HANDOFF_WEBHOOK_SECRET');
    expect((error as Error).message).toMatch(/^HANDOFF_WEBHOOK_SECRET must be a Standard Webhooks secret/);
    expect((error as Error).message).toMatch(problem);
    expect((error as Error).message).not.toContain(secret.replace(/^whsec_/, '') || 'whsec_<nothing>');
  });

  it('accepts a 24-byte key', () => {
    expect(readSettings({ HANDOFF_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }).webhookSecret).toBe(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    );
  });

  it('refuses a short key given as a construct property, by name', () => {
    expect(() => validateSettings({ ...DEFAULT_SETTINGS, webhookSecret: 'whsec_AAAA' })).toThrow(
      /^webhookSecret must be a Standard Webhooks secret .*3-byte key/,
    );
  });
});

describe('Rule: a webhook URL is never echoed with its secrets', () => {
  it.each([
    ['https://user:s3cr3t@hooks.example.com/in?token=s3cr3t', /^HANDOFF_WEBHOOK_URL must not carry credentials \(user:password@\), got https:\/\/\*\*\*@hooks.example.com\/in\?token=\*\*\*$/],
    ['ftp://hooks.example.com/in?token=s3cr3t', /^HANDOFF_WEBHOOK_URL must be an http\(s\) URL, got ftp:\/\/hooks.example.com\/in\?token=\*\*\*$/],
    ['s3cr3t-pasted-here', /^HANDOFF_WEBHOOK_URL must be an absolute http\(s\) URL \(the value is not shown/],
  ])('refuses %s without showing the secret', (url, message) => {
    const read = () => readSettings({ HANDOFF_WEBHOOK_URL: url });

    expect(read).toThrow(message);
    expect(read).not.toThrow(/s3cr3t/);
  });

  it('keeps the exact URL (token included) in the settings, for the sender', () => {
    const url = 'https://hooks.example.com/in?token=s3cr3t';

    expect(readSettings({ HANDOFF_WEBHOOK_URL: url }).webhookUrl).toBe(url);
  });
});
