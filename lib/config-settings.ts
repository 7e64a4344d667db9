/**
 * Handoff's settings (docs/contract.md §7): what each one is, its default, and what it is called
 * where it is given (a construct property; the environment's names are in config-environment.ts).
 */
import { DEFAULT_PAYLOAD_LIMIT_BYTES } from './event';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './policy';

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
  /**
   * The ledger's shipment index (docs/contract.md §5): every delivery findable by its event's
   * shipment (`handoff status --shipment`), for 1 write unit a delivery. On by default; off, the
   * table has no such index and rows carry no key of it.
   */
  readonly shipmentIndex: boolean;
  /**
   * An HTTP CONNECT proxy every request to a receiver (and every token fetch) goes through,
   * `http://[user:password@]host[:port]` (docs/contract.md §18). Unset: receivers are called directly.
   * The guard still checks each receiver's address; the proxy's own may be private (it is the operator's).
   * Optional, so settings written before it need no change.
   */
  readonly proxyUrl?: string | undefined;
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
  shipmentIndex: true,
  proxyUrl: undefined,
};

/**
 * What each setting is called where it is given: a construct property or a `HANDOFF_*` variable. An
 * optional setting's name is optional here too (`proxyUrl`): a table of names made before it needs no change.
 */
export type SettingNames = { readonly [K in keyof Settings]: string };

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
  shipmentIndex: 'shipmentIndex',
  proxyUrl: 'proxyUrl',
};
