/**
 * The soak's endpoints. One mode has `default` alone (the single-URL settings: every event); the
 * other three endpoints with overlapping event types and a `data.carrier` match, so that of the
 * plan's events (five statuses, three carriers, uniform) about 13% go to none, 47% to one, 33% to
 * two and 7% to all three:
 *
 * | endpoint  | eventTypes                                    | match                    | lock (./locks.ts)        |
 * |-----------|-----------------------------------------------|--------------------------|--------------------------|
 * | warehouse | label_created, packed, in_transit             |                          | OAuth2 client credentials|
 * | tracking  | in_transit, out_for_delivery                  |                          | mTLS (HTTPS, test CA)    |
 * | acme-ops  | *                                             | data.carrier acme/zephyr |                          |
 *
 * The soak decides who gets what with its own few lines (`routeOf`), not the consumer's routing,
 * so a routing mistake shows up as a broken invariant rather than as the expectation.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SoakLock } from './locks';

export interface SoakEndpoint {
  readonly name: string;
  /** `shipment.<status>` types, or `*` for all. */
  readonly eventTypes: readonly string[];
  /** A `data.carrier` match: only events of these carriers (absent: any carrier). */
  readonly carriers?: readonly string[];
  /** `ordering: per-shipment` with `onDead: continue` (docs/contract.md §13); absent: unordered. */
  readonly ordered?: boolean;
  /** The lock its receiver is behind (docs/contract.md §18); absent: open. */
  readonly lock?: SoakLock;
}

/** The single-URL settings' endpoint. */
export const DEFAULT_SOAK_ENDPOINT: SoakEndpoint = { name: 'default', eventTypes: ['*'] };

export const THREE_ENDPOINTS: readonly SoakEndpoint[] = [
  { name: 'warehouse', eventTypes: ['shipment.label_created', 'shipment.packed', 'shipment.in_transit'], lock: 'oauth2' },
  { name: 'tracking', eventTypes: ['shipment.in_transit', 'shipment.out_for_delivery'], lock: 'mtls' },
  { name: 'acme-ops', eventTypes: ['*'], carriers: ['acme', 'zephyr'] },
];

/**
 * The three endpoints with `acme-ops` ordered per shipment (`--ordered`): in a plan of shipments of
 * several events with one carrier each, it gets every event of the acme shipments, in order.
 */
export const ORDERED_ENDPOINT = 'acme-ops';
export const THREE_ENDPOINTS_ONE_ORDERED: readonly SoakEndpoint[] = THREE_ENDPOINTS.map((endpoint) =>
  endpoint.name === ORDERED_ENDPOINT ? { ...endpoint, ordered: true } : endpoint,
);

/** The endpoints an event of this status and carrier must be delivered to, in the given order. */
export function routeOf(
  endpoints: readonly SoakEndpoint[],
  event: { readonly status: string; readonly carrier: string },
): SoakEndpoint[] {
  return endpoints.filter(
    (endpoint) =>
      (endpoint.eventTypes.includes('*') || endpoint.eventTypes.includes(`shipment.${event.status}`)) &&
      (endpoint.carriers === undefined || endpoint.carriers.includes(event.carrier)),
  );
}

/** A fresh Standard Webhooks signing secret. */
export function soakSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The endpoint's fields as the sandbox's `HANDOFF_ENDPOINTS_FILE` takes them (docs/contract.md §11),
 * with the receiver's URL and signing secret, and any further settings (the outage endpoint's
 * automatic disabling and policy, ./outage.ts).
 */
export function endpointFields(
  endpoint: SoakEndpoint,
  url: string,
  secret: string,
  settings: Readonly<Record<string, unknown>> = {},
): Record<string, unknown> {
  return {
    name: endpoint.name,
    url,
    eventTypes: [...endpoint.eventTypes],
    ...(endpoint.carriers !== undefined ? { match: { 'data.carrier': [...endpoint.carriers] } } : {}),
    ...(endpoint.ordered === true ? { ordering: 'per-shipment', onDead: 'continue' } : {}),
    secret,
    ...settings,
  };
}

/**
 * Writes `{"endpoints": [...]}` to a file of its own (private temp directory, mode 0600: it holds
 * the secrets); `remove` deletes it.
 */
export function writeEndpointsFile(fields: readonly Record<string, unknown>[]): { path: string; remove(): void } {
  const directory = mkdtempSync(join(tmpdir(), 'handoff-soak-'));
  const path = join(directory, 'endpoints.json');
  writeFileSync(path, `${JSON.stringify({ endpoints: fields }, null, 2)}\n`, { mode: 0o600 });
  return { path, remove: () => rmSync(directory, { recursive: true, force: true }) };
}
