/**
 * The sandbox's endpoints (docs/contract.md §11), seeded into its registry at start, from one of:
 * the endpoints file, the single-URL settings' `default`, or the demo (DEMO_ENDPOINTS, each on a
 * demo receiver of its own), and what READY and the log show of each.
 */
import { randomBytes } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Settings } from '../lib/config';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { defaultEndpointFields, resolveEndpoint, type DeploymentSettings, type EndpointFields } from '../lib/endpoints/endpoint';
import { SECRET_PREFIX } from '../lib/webhook/signing-secret';
import { redactUrl } from '../lib/webhook/redact-url';
import type { Display } from './counters';
import { startDemoReceiver, type DemoReceiver } from './demo-receiver';
import { exposedSecretsWarning, type FileEndpoint } from './endpoints-file';
import { seedEndpoints } from './endpoints-table';

/**
 * The demo's endpoints, each on a demo receiver of its own: a carrier's system that wants its own
 * shipments on the move, and a notification service that wants every delivery and exception. One
 * `shipment.delivered` event of carrier `acme` goes to both; an `in_transit` one of `acme` to the
 * first only; a `packed` one to neither (acknowledged, counted as unrouted).
 */
export const DEMO_ENDPOINTS: readonly Omit<EndpointFields, 'url' | 'secret'>[] = [
  {
    name: 'carrier-acme',
    eventTypes: ['shipment.in_transit', 'shipment.out_for_delivery', 'shipment.delivered'],
    match: { 'data.carrier': ['acme'] },
  },
  { name: 'notifications', eventTypes: ['shipment.delivered', 'shipment.exception'] },
];

export interface SandboxEndpoints {
  /** As seeded, in order: the first is READY's `receiverUrl`. */
  readonly endpoints: readonly EndpointFields[];
  /** Each endpoint's URL by name as shown: a demo receiver's exactly, a configured one redacted. */
  readonly receivers: Readonly<Record<string, string>>;
}

export interface SeedOptions {
  readonly settings: Settings;
  readonly deployment: DeploymentSettings;
  /** The endpoints file's path and its endpoints, read and resolved already; else the settings' or the demo's. */
  readonly file: { readonly path: string; readonly endpoints: readonly FileEndpoint[] } | undefined;
  readonly dynamodb: DynamoDBClient;
  readonly tableName: string;
  readonly display: Display;
  /** Each demo receiver's close is pushed here as it starts, so a failed start closes those before it. */
  readonly closers: (() => Promise<unknown>)[];
}

/** The endpoints the start-up log names one by one; a file of thousands is summed up after them. */
const LOGGED_ENDPOINTS = 50;

/** Chooses the endpoints, starts the demo's receivers if it is the demo, seeds the registry, logs each. */
export async function seedSandboxEndpoints(options: SeedOptions): Promise<SandboxEndpoints> {
  const { settings, file, display } = options;
  // A demo receiver's URL is the sandbox's own and holds no secret, shown exactly so it can be
  // reached; a configured URL may carry a token, shown redacted here, in READY, the state file and
  // the log (the registry and the workers have it exact).
  let endpoints: EndpointFields[];
  const receivers: Record<string, string> = {};
  if (file !== undefined) {
    const warning = exposedSecretsWarning(file.path, file.endpoints);
    if (warning !== undefined) display.log(`warning: ${warning}`);
    endpoints = file.endpoints.map(({ fields }) => fields);
    for (const { name, url } of endpoints) receivers[name] = redactUrl(url);
  } else if (settings.webhookUrl !== undefined) {
    endpoints = [defaultEndpointFields(settings.webhookUrl, settings.webhookSecret)];
    receivers[endpoints[0]!.name] = redactUrl(settings.webhookUrl);
  } else {
    endpoints = [];
    for (const demo of DEMO_ENDPOINTS) {
      // Each its own secret, as every endpoint has (HANDOFF_WEBHOOK_SECRET, when set, for all):
      // the demo receivers verify every request. Never shown.
      const secret = settings.webhookSecret ?? `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
      const receiver: DemoReceiver = await startDemoReceiver({ secret, log: (line) => display.log(`receiver ${demo.name}: ${line}`) });
      options.closers.push(() => receiver.close());
      endpoints.push({ ...demo, url: receiver.url, secret });
      receivers[demo.name] = receiver.url;
    }
  }
  // The file's endpoints are resolved already; the others are the sandbox's own and pass too,
  // checked all the same: READY must not name an endpoint every attempt would fail.
  for (const fields of endpoints) resolveEndpoint({ fields, state: 'enabled', createdAt: 0, updatedAt: 0 }, options.deployment);
  const registry = new DynamoDbEndpointRegistry({ client: options.dynamodb, tableName: options.tableName });
  await seedEndpoints(registry, endpoints, Date.now());
  for (const { name, eventTypes, match } of endpoints.slice(0, LOGGED_ENDPOINTS)) {
    const filter = Object.entries(match ?? {}).map(([path, values]) => `; ${path} ${values.join(' | ')}`).join('');
    display.log(`endpoint ${name}: ${receivers[name]} (${eventTypes.join(', ')}${filter})`);
  }
  const unlogged = endpoints.length - LOGGED_ENDPOINTS;
  if (unlogged > 0) display.log(`… and ${unlogged} more endpoints (handoff endpoint list shows them)`);
  return { endpoints, receivers };
}
