/**
 * `HandoffClient`: the management API (docs/contract.md §16) as typed methods, one per operation,
 * over the global fetch. In AWS it signs each request with SigV4 (service `execute-api`) under the
 * caller's AWS credentials, by default the SDK's chain; against the sandbox, or behind a JWT
 * authorizer, it sends a bearer token. What the API refuses is thrown as a `HandoffApiError`.
 */
import { HandoffApiError, HandoffClientConfigError, HandoffConnectionError } from './errors';
import {
  baseUrlOf,
  errorOfAnswer,
  pathOf,
  queryParameters,
  signedHeaders,
  signingRegion,
  urlOf,
  type AwsCredentials,
  type Query,
} from './request';
import type {
  BulkReplayAnswer,
  BulkReplayRequest,
  DeadFilters,
  Delivery,
  DeliveryReplayAnswer,
  DeliveryReplayRequest,
  DisableRequest,
  EnableRequest,
  Endpoint,
  EndpointCreate,
  EndpointDetail,
  EndpointEnabled,
  EndpointListFilters,
  EndpointStateAnswer,
  EndpointUpdate,
  EndpointUpdated,
  EndpointWithSecret,
  EventReplayAnswer,
  EventReplayRequest,
  EventDeliveries,
  Page,
  PageOptions,
  PortalLink,
  PortalLinkRequest,
  PostEventsAnswer,
  PostEventsOptions,
  PostOptions,
  ReplayAnswer,
  ReplayRequest,
  RotateSecretRequest,
  ShipmentEvent,
  Stats,
  StatsFilters,
  StatsMinutes,
  StatsMinutesFilters,
  TestEventAnswer,
} from './types';

/** A bearer token: the sandbox's `apiToken`, or a JWT from the deployment's issuer (a function is asked before each request, so it may refresh one). */
export interface BearerCredentials {
  readonly token: string | (() => string | Promise<string>);
}

/** AWS credentials, fixed or from a provider (any of the SDK's `fromEnv()`, `fromIni()`… fits). */
export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

export type HandoffCredentials = BearerCredentials | AwsCredentials | AwsCredentialsProvider;

export interface HandoffClientOptions {
  /** The API's URL: the stack output `ApiUrl`, or the sandbox's READY `apiUrl`. */
  readonly url: string | URL;
  /** How to authenticate; left out, AWS credentials from the SDK's default chain (environment, profile, SSO, role). */
  readonly credentials?: HandoffCredentials;
  /** The region to sign for; default: the API URL's (`{id}.execute-api.{region}.amazonaws.com`), else AWS_REGION. */
  readonly region?: string;
  /** The fetch to use (default: the global one). */
  readonly fetch?: typeof fetch;
  /** How long a request may take before it is abandoned (default 60 000 ms). */
  readonly timeoutMs?: number;
  /**
   * Allow plain http to a host other than this machine's loopback. Off: credentials never travel
   * unencrypted (the sandbox's http://127.0.0.1 is always allowed).
   */
  readonly allowInsecureHttp?: boolean;
}

/** A call as the client makes it: the method, the API path (encoded), its query and its JSON body. */
export interface CallOptions {
  readonly query?: Query;
  readonly body?: unknown;
  readonly idempotencyKey?: string;
}

const DEFAULT_TIMEOUT_MS = 60_000;
/** The signing service of API Gateway. */
const SERVICE = 'execute-api';

type Authenticate = (request: { method: string; url: URL; headers: Record<string, string>; body: string | undefined }) => Promise<Record<string, string>>;

export class HandoffClient {
  /** The API's base URL. */
  readonly url: URL;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #authenticate: Authenticate;

  /** Async iterators over every item of a list, following `next` to the last page. */
  readonly paginate = {
    endpoints: (filters: Omit<EndpointListFilters, 'cursor'> & { readonly cursor?: string } = {}): AsyncGenerator<Endpoint> =>
      this.#items((cursor) => this.listEndpoints({ ...filters, cursor }), filters.cursor),
    dead: (filters: DeadFilters = {}): AsyncGenerator<Delivery> => this.#items((cursor) => this.listDead({ ...filters, cursor }), filters.cursor),
    shipmentDeliveries: (shipmentId: string, options: PageOptions = {}): AsyncGenerator<Delivery> =>
      this.#items((cursor) => this.shipmentDeliveries(shipmentId, { ...options, cursor }), options.cursor),
    /**
     * Each part of a bulk replay (or of its dry run) to the end of the selection: the same request
     * again with `cursor: next` until `next` is null. A part repeated replays only what is still dead.
     */
    bulkReplay: (request: BulkReplayRequest): AsyncGenerator<BulkReplayAnswer> =>
      this.#items(async (cursor) => {
        const part = await this.replay({ ...request, ...(cursor === undefined ? {} : { cursor }) });
        return { items: [part], next: part.next };
      }, request.cursor),
  };

  /** @throws HandoffClientConfigError when the URL, the credentials or the region are not usable */
  constructor(options: HandoffClientOptions) {
    this.url = baseUrlOf(options.url);
    if (this.url.protocol === 'http:' && options.allowInsecureHttp !== true && !isLoopback(this.url.hostname)) {
      throw new HandoffClientConfigError(
        'invalid-url',
        `the API URL is plain http to ${this.url.hostname}: credentials would travel unencrypted (use https, or allowInsecureHttp)`,
      );
    }
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#authenticate = authenticator(options, this.url);
  }

  // Endpoints

  listEndpoints(filters: EndpointListFilters = {}): Promise<Page<Endpoint>> {
    const { owner, state, cursor, limit } = filters;
    return this.request('GET', '/v1/endpoints', { query: { owner, state, cursor, limit } });
  }

  /** Creates an endpoint; the answer carries its signing secret, the only time any answer does. */
  createEndpoint(fields: EndpointCreate, options: PostOptions = {}): Promise<EndpointWithSecret> {
    return this.request('POST', '/v1/endpoints', { body: fields, ...options });
  }

  /** One endpoint, as `handoff endpoint show --json`. */
  getEndpoint(name: string): Promise<EndpointDetail> {
    return this.request('GET', pathOf('/v1/endpoints/{name}', { name }));
  }

  /** Changes the fields given; `null` clears one. */
  updateEndpoint(name: string, changes: EndpointUpdate): Promise<EndpointUpdated> {
    return this.request('PATCH', pathOf('/v1/endpoints/{name}', { name }), { body: changes });
  }

  async removeEndpoint(name: string): Promise<void> {
    await this.request('DELETE', pathOf('/v1/endpoints/{name}', { name }));
  }

  /** Disables it (its deliveries are parked), audited with the caller's identity and the reason. */
  disableEndpoint(name: string, request: DisableRequest, options: PostOptions = {}): Promise<EndpointStateAnswer> {
    return this.request('POST', pathOf('/v1/endpoints/{name}/disable', { name }), { body: request, ...options });
  }

  /** Enables it, releasing what was parked at up to `rate` a second, audited with the caller's identity. */
  enableEndpoint(name: string, request: EnableRequest = {}, options: PostOptions = {}): Promise<EndpointEnabled> {
    return this.request('POST', pathOf('/v1/endpoints/{name}/enable', { name }), { body: request, ...options });
  }

  /** A new signing secret, in the answer this once; the previous one signs beside it for `overlapSeconds`. */
  rotateSecret(name: string, request: RotateSecretRequest = {}, options: PostOptions = {}): Promise<EndpointWithSecret> {
    return this.request('POST', pathOf('/v1/endpoints/{name}/rotate-secret', { name }), { body: request, ...options });
  }

  /** Sends a signed `handoff.test` event to this endpoint alone, through the normal pipeline. */
  sendTestEvent(name: string, options: PostOptions = {}): Promise<TestEventAnswer> {
    return this.request('POST', pathOf('/v1/endpoints/{name}/test', { name }), options);
  }

  // Events and deliveries

  /** One event, or a list of them (at most 500) sent as `{events}`; each is checked on its own, so one refused does not refuse the others. */
  postEvents(events: ShipmentEvent | readonly ShipmentEvent[], options: PostEventsOptions = {}): Promise<PostEventsAnswer> {
    const { ordered, idempotencyKey } = options;
    return this.request('POST', '/v1/events', {
      query: { ordered: ordered === true ? true : undefined },
      body: isList(events) ? { events } : events,
      idempotencyKey,
    });
  }

  /** The event's deliveries, one per endpoint it was routed to, each with its attempt history. */
  getEvent(eventId: string): Promise<EventDeliveries> {
    return this.request('GET', pathOf('/v1/events/{eventId}', { eventId }));
  }

  /** Every delivery of the shipment's events, newest first, a page at a time. */
  shipmentDeliveries(shipmentId: string, options: PageOptions = {}): Promise<Page<Delivery>> {
    const { cursor, limit } = options;
    return this.request('GET', pathOf('/v1/shipments/{shipmentId}/deliveries', { shipmentId }), { query: { cursor, limit } });
  }

  /** Dead deliveries, oldest death first, a page at a time. */
  listDead(filters: DeadFilters = {}): Promise<Page<Delivery>> {
    const { endpoint, owner, since, until, reason, cursor, limit } = filters;
    return this.request('GET', '/v1/dead', { query: { endpoint, owner, since, until, reason, cursor, limit } });
  }

  /**
   * Replays one delivery (`eventId` and `endpoint`), an event's dead deliveries (`eventId`), or one
   * part of a bulk replay (`endpoint`, `deadSince`…; `dryRun` counts only). The operator recorded is
   * the authenticated caller.
   */
  replay(request: DeliveryReplayRequest, options?: PostOptions): Promise<DeliveryReplayAnswer>;
  replay(request: EventReplayRequest, options?: PostOptions): Promise<EventReplayAnswer>;
  replay(request: BulkReplayRequest, options?: PostOptions): Promise<BulkReplayAnswer>;
  replay(request: ReplayRequest, options?: PostOptions): Promise<ReplayAnswer>;
  replay(request: ReplayRequest, options: PostOptions = {}): Promise<ReplayAnswer> {
    return this.request('POST', '/v1/replays', { body: request, ...options });
  }

  // Stats, portal links, the document

  stats(filters: StatsFilters = {}): Promise<Stats> {
    const { endpoint, since } = filters;
    return this.request('GET', '/v1/stats', { query: { endpoint, since } });
  }

  /** Deliveries and failed attempts minute by minute (`since`: `30m`, `1h`, `24h`; at most a day). */
  statsMinutes(filters: StatsMinutesFilters = {}): Promise<StatsMinutes> {
    const { endpoint, since } = filters;
    return this.request('GET', '/v1/stats/minutes', { query: { endpoint, since } });
  }

  /** A link to the console scoped to one owner's endpoints, valid at most 24 h. */
  createPortalLink(request: PortalLinkRequest, options: PostOptions = {}): Promise<PortalLink> {
    return this.request('POST', '/v1/portal-links', { body: request, ...options });
  }

  /** The API's OpenAPI 3.1 document. */
  openApiDocument(): Promise<Record<string, unknown>> {
    return this.request('GET', '/v1/openapi.json');
  }

  /**
   * Any call: the method, the API path (already encoded: build it with care, or use a typed
   * method), its query and JSON body. Resolves with the parsed answer (undefined for none).
   * @throws HandoffApiError for any answer but 2xx
   * @throws HandoffConnectionError when no answer came
   */
  async request<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, options: CallOptions = {}): Promise<T> {
    const url = urlOf(this.url, path, queryParameters(options.query));
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
    const sent = await this.#authenticate({ method, url, headers, body });

    let status: number;
    let responseHeaders: Headers;
    let text: string;
    try {
      // No redirect is followed: the API makes none, and a followed one would carry the credentials elsewhere.
      const response = await this.#fetch(url, { method, headers: sent, body, redirect: 'manual', signal: AbortSignal.timeout(this.#timeoutMs) });
      status = response.status;
      responseHeaders = response.headers;
      text = await response.text();
    } catch (error) {
      throw new HandoffConnectionError(this.url.origin, error);
    }
    if (status < 200 || status > 299) throw errorOfAnswer({ status, headers: responseHeaders, text });
    if (text === '') return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new HandoffApiError({
        status,
        code: 'unreadable-answer',
        title: 'Unreadable answer',
        detail: `the API answered ${status} with a body that is not JSON`,
        requestId: responseHeaders.get('apigw-requestid') ?? responseHeaders.get('x-amzn-requestid') ?? undefined,
      });
    }
  }

  /** Every item of every page from `cursor` on, asking for the next page only once this one is used. */
  async *#items<T>(page: (cursor: string | undefined) => Promise<Page<T>>, cursor: string | undefined): AsyncGenerator<T> {
    const seen = new Set<string>();
    for (;;) {
      const { items, next } = await page(cursor);
      yield* items;
      if (next === null || next === undefined) return;
      // A cursor answered twice would page forever: the API is at fault, not the caller.
      if (seen.has(next)) throw new Error('the API answered a cursor it had answered before: paging stopped');
      seen.add(next);
      cursor = next;
    }
  }
}

function isList(events: ShipmentEvent | readonly ShipmentEvent[]): events is readonly ShipmentEvent[] {
  return Array.isArray(events);
}

/** This machine's loopback: the sandbox's host. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/** How each request is authenticated: a bearer token, or SigV4 under AWS credentials. */
function authenticator(options: HandoffClientOptions, url: URL): Authenticate {
  const { credentials } = options;
  if (typeof credentials === 'object' && credentials !== null && 'token' in credentials) {
    const { token } = credentials;
    if (typeof token !== 'function' && (typeof token !== 'string' || token === '')) {
      throw new HandoffClientConfigError('invalid-credentials', 'the bearer token is empty');
    }
    return async ({ headers }) => {
      const value = typeof token === 'function' ? await token() : token;
      if (typeof value !== 'string' || value === '') throw new HandoffClientConfigError('invalid-credentials', 'the bearer token function gave no token');
      return { ...headers, authorization: `Bearer ${value}` };
    };
  }
  if (credentials !== undefined && typeof credentials !== 'function' && !isAwsCredentials(credentials)) {
    throw new HandoffClientConfigError('invalid-credentials', 'credentials must be {token}, AWS credentials {accessKeyId, secretAccessKey}, or a provider of them');
  }
  const region = signingRegion(options.region, url);
  const provider = credentials ?? defaultChain();
  return async (request) => ({ ...(await signedHeaders(request, { credentials: provider, region, service: SERVICE })) });
}

function isAwsCredentials(value: unknown): value is AwsCredentials {
  const c = value as Partial<AwsCredentials> | null;
  return typeof c === 'object' && c !== null && typeof c.accessKeyId === 'string' && typeof c.secretAccessKey === 'string';
}

/** The SDK's default chain (`defaultProvider`, as `fromNodeProviderChain` is), loaded on the first request that needs it (a bearer client never loads it); it caches what it finds. */
function defaultChain(): AwsCredentialsProvider {
  let provider: Promise<AwsCredentialsProvider> | undefined;
  return async () => {
    provider ??= import('@aws-sdk/credential-provider-node').then(({ defaultProvider }) => {
      const chain = defaultProvider();
      return () => chain();
    });
    return (await provider)();
  };
}
