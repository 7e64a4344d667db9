/**
 * The checks every setting passes, given in code (construct properties) or read from the
 * environment, and the rules between settings. Each failure is a ConfigError naming the setting.
 */
import type { RetryPolicy } from './policy';
import { ReceiverRetentionError } from './receiver/errors';
import { checkReceiverRetention } from './receiver/retention';
import { parseProxyUrl } from './webhook/connect-proxy';
import { EndpointGuard, parseCidr } from './webhook/endpoint-guard';
import { ConfigError, EndpointRefusedError, SigningSecretError } from './errors';
import { redactUrl } from './webhook/redact-url';
import { createSigner, SECRET_PREFIX } from './webhook/signing-secret';
import { PROPERTY_NAMES, type SettingNames, type Settings } from './config-settings';
import { DAY_SECONDS, minimumRetentionDays, QUEUE_RETENTION_SECONDS } from './config-timings';

/** Lambda runs at most 900 s and an invocation needs 20 s beyond its attempt (derivedTimings). */
export const MAX_ATTEMPT_TIMEOUT_MS = 880_000;
/** A receiver's retention, at most a year (the kit's DynamoDB store keeps records by TTL). */
export const MAX_RECEIVER_RETENTION_SECONDS = 366 * 24 * 60 * 60;

/**
 * The largest payload limit. A ledger row holds the event's body and everything else about its
 * delivery in one DynamoDB item, which may not pass 400 KB (409,600 bytes). 256 KiB for the body
 * leaves 144 KiB for the rest: the attempt history, the kept response start, the dead detail and
 * the schedule are bounded, and so are the audit entries (each one's texts, and how many a row keeps).
 * test/integration/payload-limit.test.ts fills each to its largest.
 */
export const MAX_PAYLOAD_LIMIT_BYTES = 256 * 1024;
export const MIN_PAYLOAD_LIMIT_BYTES = 256;

/** Attempts in all, at most; the schedule is stored on every row, so it is bounded the same way. */
export const MAX_ATTEMPTS = 100;

/**
 * Checks settings given in code (construct properties), and the rules between settings.
 * @throws ConfigError naming the setting as `names` calls it
 */
export function validateSettings(settings: Settings, names: SettingNames = PROPERTY_NAMES): Settings {
  if (settings.webhookUrl !== undefined) parseUrl(settings.webhookUrl, names.webhookUrl);
  if (settings.webhookSecret !== undefined) parseSecret(settings.webhookSecret, names.webhookSecret);
  const ranges: ['attemptTimeoutMs' | 'payloadLimitBytes' | 'batchSize' | 'maxConcurrency' | 'retentionDays', number, number][] = [
    ['attemptTimeoutMs', 100, MAX_ATTEMPT_TIMEOUT_MS],
    ['payloadLimitBytes', MIN_PAYLOAD_LIMIT_BYTES, MAX_PAYLOAD_LIMIT_BYTES],
    ['batchSize', 1, 100],
    ['maxConcurrency', 2, 1000],
    ['retentionDays', 1, 3650],
  ];
  for (const [name, min, max] of ranges) int(min, max)(String(settings[name]), names[name]);
  if (settings.receiverRetentionSeconds !== undefined) {
    int(1, MAX_RECEIVER_RETENTION_SECONDS)(String(settings.receiverRetentionSeconds), names.receiverRetentionSeconds);
  }
  const { maxAttempts, waitsSeconds } = settings.retryPolicy;
  if (maxAttempts > MAX_ATTEMPTS || waitsSeconds.length > MAX_ATTEMPTS) {
    throw new ConfigError(names.retryPolicy, `allows at most ${MAX_ATTEMPTS} attempts and ${MAX_ATTEMPTS} waits`);
  }
  parseCidrList(settings.allowPrivateCidrs.join(','), names.allowPrivateCidrs);
  if (settings.proxyUrl !== undefined) parseProxySetting(settings.proxyUrl, names.proxyUrl ?? 'proxyUrl');
  checkLifetimes(settings, names);
  checkReceiverRetentionSetting(settings, names);
  return settings;
}

/**
 * The rules between the retry policy and what must outlast it, for the stack, the sandbox and the
 * handler alike: the queue keeps a message through the whole schedule, and a ledger row outlives
 * the longest life of its delivery. A row deleted by TTL while its event can still arrive would
 * admit that event again as new, and it would be delivered again.
 * @throws ConfigError naming both settings
 */
export function checkLifetimes(settings: Settings, names: SettingNames = PROPERTY_NAMES): void {
  const scheduleSeconds = totalWaitSeconds(settings.retryPolicy);
  if (scheduleSeconds >= QUEUE_RETENTION_SECONDS) {
    throw new ConfigError(
      names.retryPolicy,
      `waits add up to ${scheduleSeconds} s, past the queue's ${QUEUE_RETENTION_SECONDS / DAY_SECONDS}-day message retention`,
    );
  }
  const minimumDays = minimumRetentionDays(settings);
  if (settings.retentionDays < minimumDays) {
    throw new ConfigError(
      names.retentionDays,
      `must be at least ${minimumDays} days with ${names.retryPolicy} allowing ${settings.retryPolicy.maxAttempts} attempts, got ${settings.retentionDays}: ` +
        `each wait can reach 12 h (a Retry-After lengthens it), and the queue keeps a message ${QUEUE_RETENTION_SECONDS / DAY_SECONDS} days; ` +
        'a row deleted sooner would let its event be admitted, and delivered, again',
    );
  }
}

/** The receiver's retention against the retry window (lib/receiver/retention.ts), as a setting's error. */
function checkReceiverRetentionSetting(settings: Settings, names: SettingNames): void {
  if (settings.receiverRetentionSeconds === undefined) return;
  try {
    checkReceiverRetention(settings.retryPolicy, settings.receiverRetentionSeconds);
  } catch (error) {
    if (!(error instanceof ReceiverRetentionError)) throw error;
    throw new ConfigError(
      names.receiverRetentionSeconds,
      `must exceed the retry window of ${names.retryPolicy} (${error.retryWindowSeconds} s), got ${error.receiverRetentionSeconds}: ` +
        'a retry after the receiver forgot the webhook ID would apply the event again',
    );
  }
}

/** Seconds a message may wait on the schedule: one wait after each failed attempt but the last. */
function totalWaitSeconds(policy: RetryPolicy): number {
  let total = 0;
  for (let failed = 1; failed < policy.maxAttempts; failed++) {
    total += policy.waitsSeconds[Math.min(failed, policy.waitsSeconds.length) - 1] ?? 0;
  }
  return total;
}

/**
 * Refuses, at start-up, an endpoint the consumer's guard would refuse on every attempt: a scheme
 * not allowed, or a literal private address not allowlisted. (A name that resolves to a private
 * address is refused where the connection is made.) @throws ConfigError naming `name`
 */
export function checkEndpoint(url: string, settings: Pick<Settings, 'allowPrivateCidrs' | 'allowHttp'>, name: string): void {
  try {
    new EndpointGuard(settings).checkUrl(url);
  } catch (error) {
    if (error instanceof EndpointRefusedError) throw new ConfigError(name, `is refused: ${error.message}`);
    throw error;
  }
}

export function int(min: number, max: number) {
  return (raw: string, name: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || n < min || n > max) {
      throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return n;
  };
}

export function parseCidrList(raw: string, name: string): string[] {
  const cidrs = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const cidr of cidrs) {
    try {
      parseCidr(cidr);
    } catch {
      throw new ConfigError(name, `must be comma-separated CIDRs such as 10.0.0.0/8 or fd00::/8, got "${cidr}"`);
    }
  }
  return cidrs;
}

/** A URL is shown only redacted (lib/webhook/redact-url.ts): its query may carry a token. */
export function parseUrl(raw: string, name: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'must be an absolute http(s) URL (the value is not shown: it may hold a secret)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(name, `must be an http(s) URL, got ${redactUrl(raw)}`);
  }
  // Userinfo would travel in a header no log redacts; receivers take a token in the query or a signature.
  if (url.username || url.password) throw new ConfigError(name, `must not carry credentials (user:password@), got ${redactUrl(raw)}`);
  return raw;
}

/**
 * An HTTP CONNECT proxy's URL (lib/webhook/connect-proxy.ts): `http://[user:password@]host[:port]`.
 * Shown only redacted: its password is a secret.
 */
export function parseProxySetting(raw: string, name: string): string {
  try {
    parseProxyUrl(raw);
  } catch (error) {
    if (error instanceof RangeError) throw new ConfigError(name, error.message);
    throw error;
  }
  return raw;
}

/** Checked by building the signer, so a secret that cannot sign stops start-up. Never echoed. */
export function parseSecret(raw: string, name: string): string {
  const form = `must be a Standard Webhooks secret ("${SECRET_PREFIX}" and a base64 key of at least 24 bytes)`;
  if (!raw.startsWith(SECRET_PREFIX)) throw new ConfigError(name, `${form}: it does not start with "${SECRET_PREFIX}"`);
  try {
    createSigner(raw);
  } catch (error) {
    if (error instanceof SigningSecretError) throw new ConfigError(name, `${form}: the key ${error.message}`);
    throw error;
  }
  return raw;
}
