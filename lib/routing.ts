/**
 * Where a message goes (docs/contract.md §11): the endpoints the consumer delivers to, and each
 * one's sender. `registryRouting` reads them from the endpoint registry (cached); `staticRouting`
 * is a fixed list, such as the single-URL settings' one endpoint `default`.
 */
import {
  ALL_EVENT_TYPES,
  DEFAULT_ENDPOINT_NAME,
  DISABLE_DEFAULTS,
  resolveEndpoint,
  type DeploymentSettings,
  type Endpoint,
  type EndpointRecord,
} from './endpoints/endpoint';
import { errorFields, type Logger } from './observability';
import type { RetryPolicy } from './policy';
import type { WebhookSender } from './webhook/sender';

export interface Routing {
  /** Every endpoint by name (enabled and disabled), as of the last read of the registry. */
  endpoints(): Promise<ReadonlyMap<string, Endpoint>>;
  /** The sender for an endpoint's requests: its URL, secrets and attempt timeout. */
  sender(endpoint: Endpoint): Promise<WebhookSender>;
}

/**
 * Builds a sender for an endpoint; called once per endpoint version (URL, secret, a rotation's
 * previous secret and its end, timeout). The sender signs with `previousSecret` too while its
 * requests are made before `previousSecretUntil` (lib/webhook/http-sender.ts).
 */
export type SenderFactory = (endpoint: Endpoint) => WebhookSender;

/** A fixed set of endpoints. */
export function staticRouting(endpoints: readonly Endpoint[], createSender: SenderFactory): Routing {
  const byName = new Map(endpoints.map((endpoint) => [endpoint.name, endpoint]));
  const senders = new SenderCache(createSender);
  return {
    endpoints: () => Promise.resolve(byName),
    sender: (endpoint) => Promise.resolve(senders.get(endpoint)),
  };
}

export interface RegistryRoutingOptions {
  /** The registry's endpoints, cached (lib/endpoints/registry.ts `cachedEndpoints`). */
  readonly records: () => Promise<readonly EndpointRecord[]>;
  readonly deployment: DeploymentSettings;
  /** Reads a secret an endpoint names by ARN (Secrets Manager in AWS); kept per ARN for the container's life. */
  readonly readSecret: (arn: string) => Promise<string>;
  readonly createSender: SenderFactory;
  readonly logger: Logger;
  /** Epoch ms; default Date.now. Whether a rotation's overlap lasts, as of each read. */
  readonly now?: () => number;
}

/**
 * The endpoints of the registry, resolved against the deployment's settings. An endpoint that no
 * longer resolves (a URL the deployment's guard now refuses, say) is left out and logged by name
 * once per read: the command checks every change, so this is a deployment changed under it.
 */
export function registryRouting(options: RegistryRoutingOptions): Routing {
  const senders = new SenderCache(options.createSender);
  const secrets = new Map<string, Promise<string>>();
  const now = options.now ?? Date.now;
  let resolved: { records: readonly EndpointRecord[]; endpoints: Promise<ReadonlyMap<string, Endpoint>> } | undefined;

  const secretOf = (secret: string | undefined): Promise<string | undefined> => {
    if (secret === undefined || !secret.startsWith('arn:')) return Promise.resolve(secret);
    let value = secrets.get(secret);
    if (value === undefined) {
      value = options.readSecret(secret);
      secrets.set(secret, value);
      // A failed read is tried again next time, not remembered.
      value.catch(() => secrets.delete(secret));
    }
    return value;
  };

  const resolveAll = async (records: readonly EndpointRecord[]): Promise<ReadonlyMap<string, Endpoint>> => {
    const endpoints = new Map<string, Endpoint>();
    await Promise.all(
      records.map(async (record) => {
        try {
          const { secret, previousSecret, previousSecretUntil } = record.fields;
          const nowMs = now();
          // A rotation's old secret is read only while it still signs. One that cannot be read costs
          // its signature, not the endpoint: the new secret still signs every request.
          const overlapping = previousSecretUntil !== undefined && nowMs < previousSecretUntil;
          const previousRead = overlapping
            ? secretOf(previousSecret).catch((error: unknown) => {
                options.logger.error('previous secret unreadable: signing with the new one only', { endpoint: record.fields.name, ...errorFields(error) });
                return undefined;
              })
            : undefined;
          const [value, previousValue] = await Promise.all([secretOf(secret), previousRead]);
          endpoints.set(record.fields.name, resolveEndpoint(record, options.deployment, value, { secret: previousValue, nowMs }));
        } catch (error) {
          options.logger.error('endpoint left out', { endpoint: record.fields.name, ...errorFields(error) });
        }
      }),
    );
    return endpoints;
  };

  return {
    async endpoints() {
      const records = await options.records();
      // The cache hands back the same array until it reads again: resolve once per read.
      if (resolved?.records !== records) {
        const endpoints = resolveAll(records);
        resolved = { records, endpoints };
        endpoints.catch(() => {
          if (resolved?.endpoints === endpoints) resolved = undefined;
        });
      }
      return resolved.endpoints;
    },
    sender: (endpoint) => Promise.resolve(senders.get(endpoint)),
  };
}

/** One sender per endpoint version: a changed URL, secret, previous secret or timeout gets a new one. */
class SenderCache {
  readonly #senders = new Map<string, { key: string; sender: WebhookSender }>();
  constructor(private readonly create: SenderFactory) {}

  get(endpoint: Endpoint): WebhookSender {
    const key = [endpoint.url, endpoint.secret ?? '', endpoint.previousSecret ?? '', endpoint.previousSecretUntil ?? '', endpoint.attemptTimeoutMs].join('\n');
    const cached = this.#senders.get(endpoint.name);
    if (cached?.key === key) return cached.sender;
    const sender = this.create(endpoint);
    this.#senders.set(endpoint.name, { key, sender });
    return sender;
  }
}

/**
 * One endpoint built from settings already checked (the single-URL settings, or a test's): enabled,
 * subscribed to every event, the contract's defaults for the rest.
 */
export function singleEndpoint(options: {
  readonly name?: string;
  readonly url: string;
  readonly secret?: string;
  readonly policy: RetryPolicy;
  readonly attemptTimeoutMs: number;
}): Endpoint {
  return {
    name: options.name ?? DEFAULT_ENDPOINT_NAME,
    url: options.url,
    eventTypes: [ALL_EVENT_TYPES],
    match: {},
    secret: options.secret,
    previousSecret: undefined,
    previousSecretUntil: undefined,
    policy: options.policy,
    attemptTimeoutMs: options.attemptTimeoutMs,
    recovery: 'review',
    ordering: 'none',
    onDead: 'continue',
    autoDisable: true,
    ...DISABLE_DEFAULTS,
    rateLimitPerSecond: undefined,
    receiverRetentionSeconds: undefined,
    state: 'enabled',
    stateChange: undefined,
  };
}
