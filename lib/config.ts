/**
 * The one definition of handoff's settings (SPEC §7). The CDK construct, the Lambda handler and
 * the local sandbox all read them from here: the sandbox from `HANDOFF_*` environment variables,
 * the construct from its properties, and the handler from the environment the construct (or the
 * sandbox) gives it via `settingsToEnvironment`.
 */
import { DEFAULT_PAYLOAD_LIMIT_BYTES } from './event';
import { DEFAULT_RETRY_POLICY, MAX_WAIT_SECONDS, retryPolicy, type RetryPolicy } from './policy';
import { EndpointGuard, EndpointRefusedError, parseCidr } from './webhook/endpoint-guard';

/** Lambda runs at most 900 s and an invocation needs 20 s beyond its attempt (derivedTimings). */
const MAX_ATTEMPT_TIMEOUT_MS = 880_000;

export interface Settings {
  /** The receiver's endpoint. Unset: the sandbox's demo receiver (there is no default in AWS). */
  readonly webhookUrl: string | undefined;
  /** Standard Webhooks secret (`whsec_…`); unset = unsigned. Local only: AWS uses Secrets Manager. */
  readonly webhookSecret: string | undefined;
  readonly retryPolicy: RetryPolicy;
  readonly attemptTimeoutMs: number;
  readonly payloadLimitBytes: number;
  /** Records per Lambda invocation (SQS event source batch size). */
  readonly batchSize: number;
  /** Concurrent consumer invocations (the event source's `maximumConcurrency`, at least 2). */
  readonly maxConcurrency: number;
  /** Days a ledger row is kept after its last change (DynamoDB TTL). */
  readonly retentionDays: number;
  /**
   * Private ranges (CIDR) the endpoint may resolve to. Empty by default: private, loopback,
   * link-local and metadata addresses are refused. The sandbox allows loopback.
   */
  readonly allowPrivateCidrs: readonly string[];
  /** Allow a plain-http endpoint. Off by default; the sandbox turns it on. */
  readonly allowHttp: boolean;
}

export const DEFAULT_SETTINGS: Settings = {
  webhookUrl: undefined,
  webhookSecret: undefined,
  retryPolicy: DEFAULT_RETRY_POLICY,
  attemptTimeoutMs: 10_000,
  payloadLimitBytes: DEFAULT_PAYLOAD_LIMIT_BYTES,
  batchSize: 10,
  maxConcurrency: 5,
  retentionDays: 30,
  allowPrivateCidrs: [],
  allowHttp: false,
};

/** A setting that cannot be used. Its message names the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'invalid-setting';
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/** Reads settings from `HANDOFF_*` variables over the defaults. @throws ConfigError */
export function readSettings(env: Env = process.env): Settings {
  const d = DEFAULT_SETTINGS;
  const schedule = optional(env, 'HANDOFF_RETRY_SCHEDULE', parseSchedule);
  const maxAttempts = optional(env, 'HANDOFF_MAX_ATTEMPTS', int(1, 100));
  return validateSettings({
    webhookUrl: optional(env, 'HANDOFF_WEBHOOK_URL', parseUrl),
    webhookSecret: optional(env, 'HANDOFF_WEBHOOK_SECRET', parseSecret),
    retryPolicy:
      schedule || maxAttempts
        ? retryPolicy(maxAttempts ?? d.retryPolicy.maxAttempts, schedule ?? d.retryPolicy.waitsSeconds)
        : d.retryPolicy,
    attemptTimeoutMs: optional(env, 'HANDOFF_ATTEMPT_TIMEOUT_MS', int(100, MAX_ATTEMPT_TIMEOUT_MS)) ?? d.attemptTimeoutMs,
    payloadLimitBytes: optional(env, 'HANDOFF_PAYLOAD_LIMIT_BYTES', int(256, 1024 * 1024)) ?? d.payloadLimitBytes,
    batchSize: optional(env, 'HANDOFF_BATCH_SIZE', int(1, 100)) ?? d.batchSize,
    maxConcurrency: optional(env, 'HANDOFF_MAX_CONCURRENCY', int(2, 1000)) ?? d.maxConcurrency,
    retentionDays: optional(env, 'HANDOFF_RETENTION_DAYS', int(1, 3650)) ?? d.retentionDays,
    allowPrivateCidrs: optional(env, 'HANDOFF_ALLOW_PRIVATE_CIDRS', parseCidrList) ?? d.allowPrivateCidrs,
    allowHttp: optional(env, 'HANDOFF_ALLOW_HTTP', parseBoolean) ?? d.allowHttp,
  });
}

/** Checks settings given in code (construct properties). @throws ConfigError naming the property */
export function validateSettings(settings: Settings): Settings {
  if (settings.webhookUrl !== undefined) parseUrl(settings.webhookUrl, 'webhookUrl');
  if (settings.webhookSecret !== undefined) parseSecret(settings.webhookSecret, 'webhookSecret');
  const ranges: [keyof Settings, number, number][] = [
    ['attemptTimeoutMs', 100, MAX_ATTEMPT_TIMEOUT_MS],
    ['payloadLimitBytes', 256, 1024 * 1024],
    ['batchSize', 1, 100],
    ['maxConcurrency', 2, 1000],
    ['retentionDays', 1, 3650],
  ];
  for (const [name, min, max] of ranges) int(min, max)(String(settings[name]), name);
  parseCidrList(settings.allowPrivateCidrs.join(','), 'allowPrivateCidrs');
  return settings;
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

/** Variables that name deployed resources for the consumer; set by the construct or the sandbox. */
export const RESOURCE_ENV = {
  ledgerTable: 'HANDOFF_LEDGER_TABLE',
  /** The delivery queue, for ChangeMessageVisibility (a URL's host differs by partition and emulator). */
  queueUrl: 'HANDOFF_QUEUE_URL',
  deadLetterQueueUrl: 'HANDOFF_DEAD_LETTER_QUEUE_URL',
  /** In AWS the signing secret stays in Secrets Manager; the consumer reads it at cold start. */
  webhookSecretArn: 'HANDOFF_WEBHOOK_SECRET_ARN',
} as const;

/** The environment a consumer process (Lambda or sandbox) reads its settings from. */
export function settingsToEnvironment(settings: Settings): Record<string, string> {
  const env: Record<string, string> = {
    HANDOFF_RETRY_SCHEDULE: settings.retryPolicy.waitsSeconds.join(','),
    HANDOFF_MAX_ATTEMPTS: String(settings.retryPolicy.maxAttempts),
    HANDOFF_ATTEMPT_TIMEOUT_MS: String(settings.attemptTimeoutMs),
    HANDOFF_PAYLOAD_LIMIT_BYTES: String(settings.payloadLimitBytes),
    HANDOFF_BATCH_SIZE: String(settings.batchSize),
    HANDOFF_MAX_CONCURRENCY: String(settings.maxConcurrency),
    HANDOFF_RETENTION_DAYS: String(settings.retentionDays),
  };
  if (settings.webhookUrl !== undefined) env.HANDOFF_WEBHOOK_URL = settings.webhookUrl;
  if (settings.allowPrivateCidrs.length > 0) env.HANDOFF_ALLOW_PRIVATE_CIDRS = settings.allowPrivateCidrs.join(',');
  if (settings.allowHttp) env.HANDOFF_ALLOW_HTTP = 'true';
  return env;
}

/**
 * Numbers that follow from the settings, shared by the stack and the sandbox so both behave alike.
 * - A worker may hold a claim for as long as its invocation can run.
 * - The queue's visibility timeout is 6x the function timeout (AWS's guidance for SQS sources),
 *   so a message never reappears while a live invocation still works on it.
 * - The redrive count exceeds the attempt budget: the ledger decides exhaustion and dead-letters
 *   with a reason; SQS's own redrive is only a backstop for a consumer that keeps failing.
 */
export function derivedTimings(settings: Settings) {
  const functionTimeoutSeconds = Math.ceil(settings.attemptTimeoutMs / 1000) + 20;
  return {
    functionTimeoutSeconds,
    leaseMs: functionTimeoutSeconds * 1000,
    visibilityTimeoutSeconds: Math.min(functionTimeoutSeconds * 6, MAX_WAIT_SECONDS),
    maxReceiveCount: settings.retryPolicy.maxAttempts * 2 + 5,
    retentionSeconds: settings.retentionDays * 24 * 60 * 60,
  } as const;
}

function optional<T>(env: Env, name: string, parse: (raw: string, name: string) => T): T | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : parse(raw, name);
}

function int(min: number, max: number) {
  return (raw: string, name: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || n < min || n > max) {
      throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return n;
  };
}

function parseCidrList(raw: string, name: string): string[] {
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

function parseBoolean(raw: string, name: string): boolean {
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

function parseSchedule(raw: string, name: string): number[] {
  const waits = raw.split(',').map((s) => s.trim());
  if (waits.some((w) => !/^\d+$/.test(w) || Number(w) > MAX_WAIT_SECONDS)) {
    throw new ConfigError(name, `must be comma-separated whole seconds up to ${MAX_WAIT_SECONDS}, got "${raw}"`);
  }
  return waits.map(Number);
}

function parseUrl(raw: string, name: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be an absolute http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigError(name, `must be an http(s) URL, got "${url.protocol}"`);
  }
  if (url.username || url.password) throw new ConfigError(name, 'must not carry credentials');
  return raw;
}

function parseSecret(raw: string, name: string): string {
  if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(raw)) {
    throw new ConfigError(name, 'must be a Standard Webhooks secret: "whsec_" and base64');
  }
  return raw;
}
