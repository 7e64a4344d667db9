/**
 * What of a read a portal link's holder may see (api/portal-link.ts): the deliveries to its owner's
 * endpoints, and nothing of any other. The owner of each endpoint is the registry's, now (an
 * endpoint's rows are its name's, whoever owned it before); an endpoint the registry no longer
 * holds is no one's.
 */
import pLimit from 'p-limit';
import { outOfScope, requireOwner } from '../portal-link';
import type { RouteCall } from '../route';

/** Registry reads at once for one answer's endpoints (a page of deliveries names at most 100). */
const OWNER_LOOKUPS_AT_ONCE = 8;

/** Those of `names` that are the portal caller's owner's endpoints. */
export async function ownEndpoints(call: Pick<RouteCall, 'deps' | 'portalOwner'>, names: Iterable<string>): Promise<Set<string>> {
  const owner = call.portalOwner;
  const distinct = [...new Set(names)];
  if (owner === undefined) return new Set(distinct);
  const registry = call.deps.context.registry();
  const limit = pLimit(OWNER_LOOKUPS_AT_ONCE);
  const owners = await Promise.all(distinct.map((name) => limit(async () => (await registry.get(name))?.fields.owner)));
  return new Set(distinct.filter((_, i) => owners[i] === owner));
}

/** The items a portal caller may see: those whose `endpoint` is its owner's; every item for any other caller. */
export async function inPortalScope<T extends { readonly endpoint: string }>(call: Pick<RouteCall, 'deps' | 'portalOwner'>, items: readonly T[]): Promise<T[]> {
  if (call.portalOwner === undefined) return [...items];
  const own = await ownEndpoints(call, items.map((item) => item.endpoint));
  return items.filter((item) => own.has(item.endpoint));
}

/**
 * For a portal link's holder: an endpoint must be named, and be its owner's (403 otherwise). An
 * endpoint that is not there is no one's: out of scope too, so a link learns nothing of other
 * owners' names. Any other caller may name any endpoint, or none.
 */
export async function requireOwnEndpoint(call: Pick<RouteCall, 'deps' | 'portalOwner'>, endpoint: string | undefined): Promise<void> {
  if (call.portalOwner === undefined) return;
  if (endpoint === undefined) throw outOfScope();
  requireOwner(call, (await call.deps.context.registry().get(endpoint))?.fields.owner);
}
