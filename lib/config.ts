/**
 * The one definition of handoff's settings (docs/contract.md §7). The CDK construct, the Lambda handler and
 * the local sandbox all read them from here: the sandbox from `HANDOFF_*` environment variables,
 * the construct from its properties, and the handler from the environment the construct (or the
 * sandbox) gives it via `settingsToEnvironment`.
 */
import { DEFAULT_PAYLOAD_LIMIT_BYTES } from './event';
import { DEFAULT_RETRY_POLICY, MAX_WAIT_SECONDS, retryPolicy, type RetryPolicy } from './policy';
import { ReceiverRetentionError } from './receiver/errors';
import { checkReceiverRetention } from './receiver/retention';
import { EndpointGuard, EndpointRefusedError, parseCidr } from './webhook/endpoint-guard';
import { redactUrl } from './webhook/redact-url';
import { createSigner, SECRET_PREFIX, SigningSecretError } from './webhook/signing-secret';

/** Lambda runs at most 900 s and an invocation needs 20 s beyond its attempt (derivedTimings). */
const MAX_ATTEMPT_TIMEOUT_MS = 880_000;
/** A receiver's retention, at most a year (the kit's DynamoDB store keeps records by TTL). */
const MAX_RECEIVER_RETENTION_SECONDS = 366 * 24 * 60 * 60;

/**
 * The largest payload limit. A ledger row holds the event's body and everything else about its
 * delivery in one DynamoDB item, which may not pass 400 KB (409,600 bytes). 256 KiB for the body
 * leaves 144 KiB for the rest: the attempt history, the kept response start, the dead detail and
 * the schedule are bounded, and so are the audit entries (each one's texts, and how many a row keeps).
 * test/integration/payload-limit.test.ts fills each to its largest against dynalite, which enforces
 * the item limit.
 */
export const MAX_PAYLOAD_LIMIT_BYTES = 256 * 1024;
const MIN_PAYLOAD_LIMIT_BYTES = 256;

/** Attempts in all, at most; the schedule is stored on every row, so it is bounded the same way. */
const MAX_ATTEMPTS = 100;

/**
 * How long SQS keeps a message: the stack's delivery and dead-letter queues and the sandbox's all
 * keep messages this long (SQS's maximum).
 */
export const QUEUE_RETENTION_SECONDS = 14 * 24 * 60 * 60;

/** A ledger row outlives the longest life of its delivery by at least this much. */
export const RETENTION_MARGIN_SECONDS = 24 * 60 * 60;
const DAY_SECONDS = 24 * 60 * 60;

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
  /**
   * Days a ledger row is kept after its last change (DynamoDB TTL). Must exceed the longest life
   * of a delivery (`minimumRetentionDays`): a row deleted mid-flight would admit its event again.
   */
  readonly retentionDays: number;
  /**
   * How long the receiver keeps its idempotency records (the receiver kit's `retentionSeconds`), when
   * known. Given, it must exceed the retry policy's window: a retry after the receiver forgot the
   * webhook ID would apply the event twice. Unset: not checked.
   */
  readonly receiverRetentionSeconds: number | undefined;
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
  receiverRetentionSeconds: undefined,
  allowPrivateCidrs: [],
  allowHttp: false,
};

/** A setting that cannot be used. Its message names the variable (and any other setting it conflicts with). */
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

/** What each setting is called where it is given: a construct property or a `HANDOFF_*` variable. */
export type SettingNames = Readonly<Record<keyof Settings, string>>;

/** The construct's names: its `settings` properties. */
export const PROPERTY_NAMES: SettingNames = {
  webhookUrl: 'webhookUrl',
  webhookSecret: 'webhookSecret',
  retryPolicy: 'retryPolicy',
  attemptTimeoutMs: 'attemptTimeoutMs',
  payloadLimitBytes: 'payloadLimitBytes',
  batchSize: 'batchSize',
  maxConcurrency: 'maxConcurrency',
  retentionDays: 'retentionDays',
  receiverRetentionSeconds: 'receiverRetentionSeconds',
  allowPrivateCidrs: 'allowPrivateCidrs',
  allowHttp: 'allowHttp',
};

/**
 * Each setting's `HANDOFF_*` variable, by its CDK context key (infra/app.ts reads context through
 * these). The signing secret is not among them: in AWS it is a Secrets Manager secret.
 */
export const SETTING_VARIABLES = {
  webhookUrl: 'HANDOFF_WEBHOOK_URL',
  retrySchedule: 'HANDOFF_RETRY_SCHEDULE',
  maxAttempts: 'HANDOFF_MAX_ATTEMPTS',
  attemptTimeoutMs: 'HANDOFF_ATTEMPT_TIMEOUT_MS',
  payloadLimitBytes: 'HANDOFF_PAYLOAD_LIMIT_BYTES',
  batchSize: 'HANDOFF_BATCH_SIZE',
  maxConcurrency: 'HANDOFF_MAX_CONCURRENCY',
  retentionDays: 'HANDOFF_RETENTION_DAYS',
  receiverRetentionSeconds: 'HANDOFF_RECEIVER_RETENTION_SECONDS',
  allowPrivateCidrs: 'HANDOFF_ALLOW_PRIVATE_CIDRS',
  allowHttp: 'HANDOFF_ALLOW_HTTP',
} as const;

const { retrySchedule: _retrySchedule, maxAttempts: _maxAttempts, ...SAME_NAMED } = SETTING_VARIABLES;

/** The sandbox's and the handler's names: environment variables. The policy is two of them. */
export const VARIABLE_NAMES: SettingNames = {
  ...SAME_NAMED,
  webhookSecret: 'HANDOFF_WEBHOOK_SECRET',
  retryPolicy: `${SETTING_VARIABLES.retrySchedule}/${SETTING_VARIABLES.maxAttempts}`,
};

type Env = Readonly<Record<string, string | undefined>>;

/** Reads settings from `HANDOFF_*` variables over the defaults. @throws ConfigError */
export function readSettings(env: Env = process.env): Settings {
  const d = DEFAULT_SETTINGS;
  const V = SETTING_VARIABLES;
  const schedule = optional(env, V.retrySchedule, parseSchedule);
  const maxAttempts = optional(env, V.maxAttempts, int(1, MAX_ATTEMPTS));
  return validateSettings(
    {
      webhookUrl: optional(env, V.webhookUrl, parseUrl),
      webhookSecret: optional(env, VARIABLE_NAMES.webhookSecret, parseSecret),
      retryPolicy:
        schedule || maxAttempts
          ? retryPolicy(maxAttempts ?? d.retryPolicy.maxAttempts, schedule ?? d.retryPolicy.waitsSeconds)
          : d.retryPolicy,
      attemptTimeoutMs: optional(env, V.attemptTimeoutMs, int(100, MAX_ATTEMPT_TIMEOUT_MS)) ?? d.attemptTimeoutMs,
      payloadLimitBytes:
        optional(env, V.payloadLimitBytes, int(MIN_PAYLOAD_LIMIT_BYTES, MAX_PAYLOAD_LIMIT_BYTES)) ?? d.payloadLimitBytes,
      batchSize: optional(env, V.batchSize, int(1, 100)) ?? d.batchSize,
      maxConcurrency: optional(env, V.maxConcurrency, int(2, 1000)) ?? d.maxConcurrency,
      retentionDays: optional(env, V.retentionDays, int(1, 3650)) ?? d.retentionDays,
      receiverRetentionSeconds: optional(env, V.receiverRetentionSeconds, int(1, MAX_RECEIVER_RETENTION_SECONDS)),
      allowPrivateCidrs: optional(env, V.allowPrivateCidrs, parseCidrList) ?? d.allowPrivateCidrs,
      allowHttp: optional(env, V.allowHttp, parseBoolean) ?? d.allowHttp,
    },
    VARIABLE_NAMES,
  );
}

/**
 * Checks settings given in code (construct properties), and the rules between settings.
 * @throws ConfigError naming the setting as `names` calls it
 */
export function validateSettings(settings: Settings, names: SettingNames = PROPERTY_NAMES): Settings {
  if (settings.webhookUrl !== undefined) parseUrl(settings.webhookUrl, names.webhookUrl);
  if (settings.webhookSecret !== undefined) parseSecret(settings.webhookSecret, names.webhookSecret);
  const ranges: [keyof Settings, number, number][] = [
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
  checkLifetimes(settings, names);
  checkReceiverRetentionSetting(settings, names);
  return settings;
}

/**
 * The longest a delivery can live from its row's last write, in seconds:
 * - every wait at its cap, since a receiver's `Retry-After` may lengthen any wait up to the 12 h a
 *   message can stay invisible (the ledger's due time is then up to 12 h away), one wait after
 *   each attempt but the last;
 * - every attempt at the queue's visibility timeout: a worker that dies mid-attempt leaves its
 *   message invisible that long (it covers the attempt timeout too);
 * - the queue's message retention: a copy of the message (SQS delivers at least once, producers
 *   re-send) can arrive as long as the queue keeps it.
 * A replay writes the row, so the same bound runs again from the replay.
 */
export function longestDeliverySeconds(settings: Pick<Settings, 'retryPolicy' | 'attemptTimeoutMs'>): number {
  const attempts = settings.retryPolicy.maxAttempts;
  const { visibilityTimeoutSeconds } = visibilityOf(settings.attemptTimeoutMs);
  return (attempts - 1) * MAX_WAIT_SECONDS + attempts * visibilityTimeoutSeconds + QUEUE_RETENTION_SECONDS;
}

/** The shortest `retentionDays` the other settings allow: the longest delivery, a margin, rounded up. */
export function minimumRetentionDays(settings: Pick<Settings, 'retryPolicy' | 'attemptTimeoutMs'>): number {
  return Math.ceil((longestDeliverySeconds(settings) + RETENTION_MARGIN_SECONDS) / DAY_SECONDS);
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

/** Variables that name deployed resources for the consumer; set by the construct or the sandbox. */
export const RESOURCE_ENV = {
  ledgerTable: 'HANDOFF_LEDGER_TABLE',
  /** The delivery queue, for ChangeMessageVisibility (a URL's host differs by partition and emulator). */
  queueUrl: 'HANDOFF_QUEUE_URL',
  deadLetterQueueUrl: 'HANDOFF_DEAD_LETTER_QUEUE_URL',
  /** Where the delivery queue's redrive policy moves a message; the recovery function drains it. */
  redriveQueueUrl: 'HANDOFF_REDRIVE_QUEUE_URL',
  /** In AWS the signing secret stays in Secrets Manager; the consumer reads it at cold start. */
  webhookSecretArn: 'HANDOFF_WEBHOOK_SECRET_ARN',
  /** The endpoint registry's table (lib/endpoints/registry.ts). Unset: the single-URL settings are the one endpoint. */
  endpointsTable: 'HANDOFF_ENDPOINTS_TABLE',
  /** How long the consumer keeps its copy of the registry, in ms (default ENDPOINTS_CACHE_MS); the sandbox shortens it. */
  endpointsCacheMs: 'HANDOFF_ENDPOINTS_CACHE_MS',
  /** The EventBridge bus an endpoint's disabling is published on (the construct: `default`). Unset: none. */
  eventBus: 'HANDOFF_EVENT_BUS',
  /** The SNS topic operators' alarms go to; an endpoint's disabling is published there too. Unset: none. */
  alarmTopicArn: 'HANDOFF_ALARM_TOPIC_ARN',
  /** In AWS the key that seals handoff's own messages (lib/queue/seal.ts) stays in Secrets Manager: its ARN. */
  sealKeyArn: 'HANDOFF_SEAL_KEY_ARN',
  /** Outside AWS (the sandbox's workers, tests), the seal key itself. */
  sealKey: 'HANDOFF_SEAL_KEY',
  /**
   * The sandbox's key for endpoint secrets the registry holds as `encrypted:local:…` (32 bytes,
   * base64; lib/endpoints/secret-cipher.ts `LocalSecretCipher`). In AWS unset: the registry's KMS key
   * decrypts `encrypted:kms:…`, named by the ciphertext itself.
   */
  endpointSecretsKey: 'HANDOFF_ENDPOINT_SECRETS_KEY',
} as const;

/** The environment a consumer process (Lambda or sandbox) reads its settings from. */
export function settingsToEnvironment(settings: Settings): Record<string, string> {
  const V = SETTING_VARIABLES;
  const env: Record<string, string> = {
    [V.retrySchedule]: settings.retryPolicy.waitsSeconds.join(','),
    [V.maxAttempts]: String(settings.retryPolicy.maxAttempts),
    [V.attemptTimeoutMs]: String(settings.attemptTimeoutMs),
    [V.payloadLimitBytes]: String(settings.payloadLimitBytes),
    [V.batchSize]: String(settings.batchSize),
    [V.maxConcurrency]: String(settings.maxConcurrency),
    [V.retentionDays]: String(settings.retentionDays),
  };
  if (settings.receiverRetentionSeconds !== undefined) env[V.receiverRetentionSeconds] = String(settings.receiverRetentionSeconds);
  if (settings.webhookUrl !== undefined) env[V.webhookUrl] = settings.webhookUrl;
  if (settings.allowPrivateCidrs.length > 0) env[V.allowPrivateCidrs] = settings.allowPrivateCidrs.join(',');
  if (settings.allowHttp) env[V.allowHttp] = 'true';
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
  const { functionTimeoutSeconds, visibilityTimeoutSeconds } = visibilityOf(settings.attemptTimeoutMs);
  return {
    functionTimeoutSeconds,
    leaseMs: functionTimeoutSeconds * 1000,
    visibilityTimeoutSeconds,
    maxReceiveCount: settings.retryPolicy.maxAttempts * 2 + 5,
    retentionSeconds: settings.retentionDays * DAY_SECONDS,
  } as const;
}

function visibilityOf(attemptTimeoutMs: number) {
  const functionTimeoutSeconds = Math.ceil(attemptTimeoutMs / 1000) + 20;
  return { functionTimeoutSeconds, visibilityTimeoutSeconds: Math.min(functionTimeoutSeconds * 6, MAX_WAIT_SECONDS) };
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
  if (waits.length > MAX_ATTEMPTS || waits.some((w) => !/^\d+$/.test(w) || Number(w) > MAX_WAIT_SECONDS)) {
    throw new ConfigError(name, `must be at most ${MAX_ATTEMPTS} comma-separated whole seconds up to ${MAX_WAIT_SECONDS}, got "${raw}"`);
  }
  return waits.map(Number);
}

/** A URL is shown only redacted (lib/webhook/redact-url.ts): its query may carry a token. */
function parseUrl(raw: string, name: string): string {
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

/** Checked by building the signer, so a secret that cannot sign stops start-up. Never echoed. */
function parseSecret(raw: string, name: string): string {
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
