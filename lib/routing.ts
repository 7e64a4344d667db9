/**
 * Where a message goes (docs/contract.md §11): the endpoints the consumer delivers to, and each
 * one's sender. `registryRouting` reads them from the consumer's copy of the endpoint registry,
 * finding an event's endpoints by its type (lib/endpoints/subscriptions.ts) and resolving each only
 * when a message first goes to it; `staticRouting` is a fixed list, such as the single-URL settings'
 * one endpoint `default`.
 */
import {
  ALL_EVENT_TYPES,
  resolveEndpoint,
  SETTING_DEFAULTS,
  subscribes,
  type DeploymentSettings,
  type Endpoint,
  type EndpointRecord,
} from './endpoints/endpoint';
import { unreadableOf, type Subscription } from './endpoints/registry';
import type { ShipmentEvent } from './event';
import { SubscriptionIndex } from './endpoints/subscriptions';
import { SecretCache, type SecretVersions } from './endpoints/secret';
import { SecretUnavailableError } from './errors';
import { isEncryptedSecret, schemeOf, type EndpointSecretCipher } from './endpoints/secret-cipher';
import { cipherPlace, secretValuePlaces } from './endpoints/secret-values';
import { resolvedAuth, resolvedHeaders, resolvedTls } from './endpoints/resolved-locks';
import { errorFields, type Logger } from './observability';
import type { RetryPolicy } from './policy';
import type { WebhookSender } from './webhook/sender';
import { DEFAULT_ENDPOINT } from './ledger/delivery-record';

export interface Routing {
  /**
   * Where the messages of a batch can go, as of the last read of the registry: the endpoints `scope`
   * names and those subscribed to its event types (every endpoint when no scope is given), enabled
   * and disabled, and those of them that cannot be resolved now.
   * @throws when the registry cannot be read and no copy of it is at hand
   */
  routes(scope?: RouteScope): Promise<Routes>;
  /** The sender for an endpoint's requests: its URL, secrets and attempt timeout. */
  sender(endpoint: Endpoint): Promise<WebhookSender>;
}

/** What a batch may route to: its producers' events and the endpoints its messages name. */
export interface RouteScope {
  readonly events: readonly ShipmentEvent[];
  readonly endpoints: readonly string[];
}

/** Where messages can go now. */
export interface Routes {
  readonly endpoints: ReadonlyMap<string, Endpoint>;
  /**
   * Endpoints the registry holds that cannot be delivered to now, by name: a secret that cannot be
   * read, an item that cannot be decoded, settings the deployment refuses. Their deliveries wait on
   * the queue (lib/consumer/plan.ts): only an endpoint the registry no longer holds is unrouted.
   */
  readonly unresolved: ReadonlyMap<string, UnresolvedEndpoint>;
  /**
   * These routes and the named endpoints' too (a message received again goes where its rows were
   * routed before). Unset: these routes hold every endpoint already.
   */
  readonly including?: (names: readonly string[]) => Promise<Routes>;
}

/** An endpoint the registry holds that cannot be resolved now. */
export interface UnresolvedEndpoint {
  readonly name: string;
  /** What it subscribes to, as its item says; unset when that cannot be read either: every event may go to it. */
  readonly subscription: Subscription | undefined;
}

/**
 * Builds a sender for an endpoint; called once per endpoint version (URL, secret, a rotation's
 * previous secret and its end, timeout). The sender signs with `previousSecret` too while its
 * requests are made before `previousSecretUntil` (lib/webhook/http-sender.ts).
 */
export type SenderFactory = (endpoint: Endpoint) => WebhookSender;

const NONE_UNRESOLVED: ReadonlyMap<string, UnresolvedEndpoint> = new Map();

/** A fixed set of endpoints. */
export function staticRouting(endpoints: readonly Endpoint[], createSender: SenderFactory): Routing {
  const routes: Routes = {
    endpoints: new Map(endpoints.map((endpoint) => [endpoint.name, endpoint])),
    unresolved: NONE_UNRESOLVED,
    including: () => Promise.resolve(routes),
  };
  const senders = new SenderCache(createSender);
  return {
    routes: () => Promise.resolve(routes),
    sender: (endpoint) => Promise.resolve(senders.get(endpoint)),
  };
}

export interface RegistryRoutingOptions {
  /** The registry's endpoints as the consumer's copy holds them (lib/endpoints/registry-copy.ts, cached by `cachedEndpoints`). */
  readonly records: () => Promise<readonly EndpointRecord[]>;
  readonly deployment: DeploymentSettings;
  /**
   * Secrets an endpoint names by ARN (Secrets Manager in AWS: lib/endpoints/secret.ts
   * `secretsManagerVersions`), cached with a bounded age. Or `readSecret`, which reads the current
   * value alone, kept the same way.
   */
  readonly secrets?: SecretCache<SecretVersions>;
  readonly readSecret?: (arn: string) => Promise<string>;
  /**
   * Reads a secret value an endpoint names by ARN besides its signing secrets (`{"secretArn": …}` in
   * `headers`, `auth` or `tls`: Secrets Manager in AWS, lib/endpoints/secret.ts
   * `secretsManagerValue`), kept as signing secrets are. Unset: such an endpoint is unresolved.
   */
  readonly readSecretValue?: (arn: string) => Promise<string>;
  /**
   * What decrypts a secret the registry holds encrypted (`encrypted:<scheme>:…`,
   * lib/endpoints/secret-cipher.ts), one per scheme. A secret no cipher given can decrypt leaves its
   * endpoint unresolved.
   */
  readonly ciphers?: readonly EndpointSecretCipher[];
  readonly createSender: SenderFactory;
  readonly logger: Logger;
  /** Epoch ms; default Date.now. Whether a rotation's overlap lasts, and the secrets' ages, as of each resolution. */
  readonly now?: () => number;
}

/** An endpoint resolved (or not), for the record it was resolved from, until its secrets are due to be read again. */
interface Resolution {
  readonly record: EndpointRecord;
  readonly result: Promise<Endpoint | undefined>;
  dueAt: number;
}

/**
 * The endpoints of the registry, resolved against the deployment's settings and their secrets read,
 * lazily: an endpoint is resolved when a batch first routes to it (its event types' subscribers, the
 * endpoints its messages name), and again only when its item changed or a secret's copy is due to be
 * read again (`SecretCache.dueAt`: it turned stale, or a failed read may be tried again within
 * seconds). A cold start with 100,000 endpoints reads no secret until an event goes to one.
 *
 * Its headers, OAuth2 grant and client certificate are resolved with it: each secret value read by
 * ARN or decrypted as its signing secret is, kept per container and read again only when due, never
 * per delivery; a certificate and key read by ARN checked as a pair (lib/endpoints/resolved-locks.ts).
 *
 * An endpoint that does not resolve (its secret or another secret value cannot be read, its secret
 * cannot sign, a key read is not its certificate's, its item cannot be decoded, a URL or token URL
 * the deployment's guard now refuses) is `unresolved`, logged
 * by name at each resolution (`endpoint unresolved`, with the error: an ARN, never a secret): its
 * deliveries wait.
 */
export function registryRouting(options: RegistryRoutingOptions): Routing {
  const senders = new SenderCache(options.createSender);
  const now = options.now ?? Date.now;
  const readSecret = options.readSecret;
  const secrets =
    options.secrets ??
    new SecretCache<SecretVersions>(
      readSecret === undefined
        ? (arn) => Promise.reject(new Error(`no secret source for ${arn}`))
        : async (arn) => ({ current: await readSecret(arn) }),
      { now, logger: options.logger },
    );
  // A ciphertext's plaintext never changes: decrypted once per container (a failure tried again 5 s later).
  const ciphers = new Map((options.ciphers ?? []).map((cipher) => [cipher.scheme, cipher]));
  const decrypted = new SecretCache<SecretVersions>(
    async (key) => {
      const [endpoint, stored] = key.split('\n') as [string, string];
      const cipher = ciphers.get(schemeOf(stored)!);
      if (cipher === undefined) throw new SecretUnavailableError('secret-unreadable', `the secret of endpoint ${endpoint} is encrypted with ${schemeOf(stored)}, which this consumer has no key for`);
      return { current: await cipher.decrypt(stored, endpoint) };
    },
    { now, logger: options.logger, rereadAfterMs: Infinity },
  );
  // Every other secret value (a header's, auth.clientSecret, tls.*: lib/endpoints/secret-values.ts),
  // by ARN: read with readSecretValue and kept as signing secrets are.
  const readValue = options.readSecretValue;
  const secretValues = new SecretCache<string>(
    (arn) => (readValue === undefined ? Promise.reject(new SecretUnavailableError('secret-unreadable', `no secret source for the secret value ${arn}`)) : readValue(arn)),
    { now, logger: options.logger },
  );
  // Or its ciphertext, decrypted under its own place's context (lib/endpoints/secret-cipher.ts), once per container.
  const decryptedValues = new SecretCache<string>(
    async (key) => {
      const [endpoint, path, stored] = key.split('\n') as [string, string, string];
      const cipher = ciphers.get(schemeOf(stored)!);
      if (cipher === undefined) throw new SecretUnavailableError('secret-unreadable', `the secret value ${path} of endpoint ${endpoint} is encrypted with ${schemeOf(stored)}, which this consumer has no key for`);
      return cipher.decrypt(stored, endpoint, cipherPlace(path));
    },
    { now, logger: options.logger, rereadAfterMs: Infinity },
  );
  const index = new SubscriptionIndex();
  const resolutions = new Map<string, Resolution>();
  let unreadable: readonly UnresolvedEndpoint[] = [];
  /** Every endpoint's routes, for as long as none of them is due to be resolved again (`routes()` without a scope). */
  let whole: { records: readonly EndpointRecord[]; routes: Promise<Routes>; dueAt: number } | undefined;

  /**
   * A secret field's value: itself (a `whsec_…` or `whsk_…` value), read by ARN (cached), or
   * decrypted (cached). `dues` gets when each copy it used is due to be read again.
   */
  const secretOf = (secret: string | undefined, endpoint: string, dues: (() => number)[]): Promise<SecretVersions | undefined> => {
    if (secret === undefined) return Promise.resolve(undefined);
    if (secret.startsWith('arn:')) {
      dues.push(() => secrets.dueAt(secret));
      return secrets.get(secret);
    }
    if (isEncryptedSecret(secret)) {
      const key = `${endpoint}\n${secret}`;
      dues.push(() => decrypted.dueAt(key));
      return decrypted.get(key);
    }
    return Promise.resolve({ current: secret });
  };

  /**
   * Every secret value of an endpoint besides its signing secrets, by path: read by ARN or decrypted
   * (each cached; a plain one, the sandbox's endpoints file's, as it is).
   */
  const secretValuesOf = async (fields: EndpointRecord['fields'], dues: (() => number)[]): Promise<ReadonlyMap<string, string>> => {
    const read = secretValuePlaces(fields).map(async ({ path, value }): Promise<[string, string]> => {
      if ('secretArn' in value) {
        dues.push(() => secretValues.dueAt(value.secretArn));
        return [path, await secretValues.get(value.secretArn)];
      }
      if (!isEncryptedSecret(value.secret)) return [path, value.secret];
      // A header's name in lower case: one header's value, however its name is written.
      const key = `${fields.name}\n${path.startsWith('headers.') ? path.toLowerCase() : path}\n${value.secret}`;
      dues.push(() => decryptedValues.dueAt(key));
      return [path, await decryptedValues.get(key)];
    });
    return new Map(await Promise.all(read));
  };

  const resolveOne = async (record: EndpointRecord, nowMs: number, dues: (() => number)[]): Promise<Endpoint> => {
    const { secret, previousSecret, previousSecretUntil } = record.fields;
    // A rotation's old secret held by the registry is read only while it still signs. One that cannot
    // be read costs its signature, not the endpoint: the new secret still signs every request.
    const overlapping = previousSecretUntil !== undefined && nowMs < previousSecretUntil;
    const previousRead = overlapping
      ? secretOf(previousSecret, record.fields.name, dues).then(
          (versions) => versions?.current,
          (error: unknown) => {
            options.logger.error('previous secret unreadable: signing with the new one only', { endpoint: record.fields.name, ...errorFields(error) });
            return undefined;
          },
        )
      : undefined;
    // A secret value that cannot be read (a header's, the client secret, the key) holds the endpoint,
    // as its secret does: a request without it would be refused by a receiver behind it, spending attempts.
    const [versions, previousValue, values] = await Promise.all([secretOf(secret, record.fields.name, dues), previousRead, secretValuesOf(record.fields, dues)]);
    const resolved = resolveEndpoint(record, options.deployment, versions?.current, { secret: previousValue, nowMs });
    const headers = resolvedHeaders(record.fields, values);
    const auth = resolvedAuth(record.fields, values);
    const tls = resolvedTls(record.fields, values);
    const endpoint: Endpoint = {
      ...resolved,
      ...(headers !== undefined ? { headers } : {}),
      ...(auth !== undefined ? { auth } : {}),
      ...(tls !== undefined ? { tls } : {}),
    };
    // Rotated in Secrets Manager: its previous version signs too, until the overlap from the
    // rotation ends (unless the registry names a previous secret of its own, which signs instead).
    const rotated = versions?.previous;
    if (endpoint.previousSecret !== undefined || rotated === undefined || nowMs >= rotated.untilMs) return endpoint;
    return { ...endpoint, previousSecret: rotated.secret, previousSecretUntil: rotated.untilMs };
  };

  /** The endpoint's resolution: the one held while its record is the same and nothing of it is due; else made now. */
  const resolution = (record: EndpointRecord): Resolution => {
    const name = record.fields.name;
    const held = resolutions.get(name);
    if (held !== undefined && held.record === record && now() < held.dueAt) return held;
    const dues: (() => number)[] = [];
    const made: Resolution = {
      record,
      dueAt: Infinity,
      result: resolveOne(record, now(), dues).then(
        (endpoint) => endpoint,
        (error: unknown) => {
          options.logger.error('endpoint unresolved', { endpoint: name, ...errorFields(error) });
          return undefined;
        },
      ),
    };
    resolutions.set(name, made);
    void made.result.then(() => {
      for (const due of dues) made.dueAt = Math.min(made.dueAt, due());
    });
    return made;
  };

  /** Takes the copy: the changed endpoints indexed again and their resolutions dropped; the unreadable items logged. */
  const sync = (records: readonly EndpointRecord[]): void => {
    const changed = index.sync(records);
    if (changed?.size === 0) return;
    if (changed === undefined) {
      for (const name of resolutions.keys()) if (index.get(name) === undefined) resolutions.delete(name);
    } else {
      for (const name of changed) if (index.get(name) === undefined) resolutions.delete(name);
    }
    unreadable = unreadableOf(records).map((error) => {
      const name = error.endpoint ?? '?';
      options.logger.error('endpoint unresolved', { endpoint: name, ...errorFields(error) });
      return { name, subscription: error.subscription };
    });
  };

  /** The routes of these endpoints (names the registry does not hold left out), with every unreadable item. */
  const routesOf = async (names: Iterable<string>, base?: Routes): Promise<{ routes: Routes; dueAt: number }> => {
    const endpoints = new Map<string, Endpoint>(base?.endpoints);
    const unresolved = new Map<string, UnresolvedEndpoint>(base?.unresolved);
    const held: Resolution[] = [];
    for (const name of names) {
      const record = index.get(name);
      if (record !== undefined && !endpoints.has(name) && !unresolved.has(name)) held.push(resolution(record));
    }
    const results = await Promise.all(held.map((r) => r.result));
    let due = Infinity;
    held.forEach(({ record, dueAt: resolvedDue }, i) => {
      const { name, eventTypes, match } = record.fields;
      const endpoint = results[i];
      if (endpoint !== undefined) endpoints.set(name, endpoint);
      else unresolved.set(name, { name, subscription: { eventTypes, match: match ?? {} } });
      due = Math.min(due, resolvedDue);
    });
    for (const item of unreadable) unresolved.set(item.name, item);
    const routes: Routes = {
      endpoints,
      unresolved: unresolved.size === 0 ? NONE_UNRESOLVED : unresolved,
      including: async (more) => (more.every((name) => endpoints.has(name) || unresolved.has(name)) ? routes : (await routesOf(more, routes)).routes),
    };
    return { routes, dueAt: due };
  };

  return {
    async routes(scope) {
      const records = await options.records();
      sync(records);
      if (scope !== undefined) {
        // The endpoints its events may go to, kept where one of them passes the subscription.
        const wanted = [...index.candidates(scope.events)].filter((name) => {
          const { eventTypes, match } = index.get(name)!.fields;
          return scope.events.some((event) => subscribes({ eventTypes, match: match ?? {} }, event));
        });
        return (await routesOf(new Set([...wanted, ...scope.endpoints]))).routes;
      }
      // Every endpoint: resolved once per copy, and again when a secret is due to be read again.
      if (whole?.records !== records || now() >= whole.dueAt) {
        const resolving = routesOf([...index.names()]);
        const current = { records, routes: resolving.then((r) => r.routes), dueAt: Infinity };
        whole = current;
        void resolving.then((r) => (current.dueAt = r.dueAt));
      }
      return whole.routes;
    },
    sender: (endpoint) => Promise.resolve(senders.get(endpoint)),
  };
}

/** One sender per endpoint version: a changed URL, secret, previous secret, header, grant, certificate or timeout gets a new one. */
class SenderCache {
  readonly #senders = new Map<string, { key: string; sender: WebhookSender }>();
  constructor(private readonly create: SenderFactory) {}

  get(endpoint: Endpoint): WebhookSender {
    const { headers, auth, tls } = endpoint;
    const key = [endpoint.url, endpoint.secret ?? '', endpoint.previousSecret ?? '', endpoint.previousSecretUntil ?? '', endpoint.attemptTimeoutMs, JSON.stringify({ headers, auth, tls })].join('\n');
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
    name: options.name ?? DEFAULT_ENDPOINT,
    url: options.url,
    eventTypes: [ALL_EVENT_TYPES],
    match: {},
    secret: options.secret,
    previousSecret: undefined,
    previousSecretUntil: undefined,
    policy: options.policy,
    attemptTimeoutMs: options.attemptTimeoutMs,
    ...SETTING_DEFAULTS,
    state: 'enabled',
    stateChange: undefined,
  };
}
