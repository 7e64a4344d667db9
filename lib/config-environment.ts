/**
 * Settings in the environment: the `HANDOFF_*` variables the sandbox and the handler read them from
 * (`readSettings`), the ones the construct or the sandbox writes for the handler
 * (`settingsToEnvironment`), and those that name deployed resources (`RESOURCE_ENV`).
 */
import { MAX_WAIT_SECONDS, retryPolicy } from './policy';
import {
  int,
  MAX_ATTEMPT_TIMEOUT_MS,
  MAX_ATTEMPTS,
  MAX_PAYLOAD_LIMIT_BYTES,
  MAX_RECEIVER_RETENTION_SECONDS,
  MIN_PAYLOAD_LIMIT_BYTES,
  parseCidrList,
  parseProxySetting,
  parseSecret,
  parseUrl,
  validateSettings,
} from './config-checks';
import { DEFAULT_SETTINGS, type SettingNames, type Settings } from './config-settings';
import { ConfigError } from './errors';

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
  shipmentIndex: 'HANDOFF_SHIPMENT_INDEX',
  proxyUrl: 'HANDOFF_PROXY_URL',
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
      shipmentIndex: optional(env, V.shipmentIndex, parseBoolean) ?? d.shipmentIndex,
      proxyUrl: optional(env, V.proxyUrl, parseProxySetting),
    },
    VARIABLE_NAMES,
  );
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
  /**
   * How far back the consumer's copy asks the registry's change index, in ms (default 15 minutes:
   * writers' clocks may be minutes off); the sandbox, where every writer reads one clock, shortens it
   * (lib/endpoints/registry-copy.ts `ONE_CLOCK_CHANGE_WINDOW`).
   */
  endpointsLookbackMs: 'HANDOFF_ENDPOINTS_LOOKBACK_MS',
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
  /** The ordered intake's FIFO queue (docs/contract.md §13): the management API puts `?ordered=true` events there. */
  orderedQueueUrl: 'HANDOFF_ORDERED_QUEUE_URL',
  /**
   * The registry's KMS key (its ARN), which the management API encrypts the signing secrets it
   * writes with (kms:Encrypt); the same variable the command reads (cli/target.ts ENDPOINTS_KEY_ARN_ENV).
   */
  endpointsKeyArn: 'HANDOFF_ENDPOINTS_KEY_ARN',
  /** The settings an endpoint's defaults and limits come from, as the `EndpointDefaults` output holds them (JSON). */
  endpointDefaults: 'HANDOFF_ENDPOINT_DEFAULTS',
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
  // Said only when off: the consumer then writes no key of an index the table does not have.
  if (!settings.shipmentIndex) env[V.shipmentIndex] = 'false';
  if (settings.proxyUrl !== undefined) env[V.proxyUrl] = settings.proxyUrl;
  return env;
}

function optional<T>(env: Env, name: string, parse: (raw: string, name: string) => T): T | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : parse(raw, name);
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
