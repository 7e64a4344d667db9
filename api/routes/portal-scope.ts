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

/** A portal caller's filter over the reads of one answer. */
export interface PortalFilter {
  /** The items whose `endpoint` is the portal caller's owner's, in their order; every item for any other caller. */
  filter<T extends { readonly endpoint: string }>(items: readonly T[]): Promise<T[]>;
}

/**
 * The scope of one answer, however many reads it takes: each endpoint's owner is read from the
 * registry once, the first time a read names it (a shipment's pages name the same few endpoints).
 */
export function portalFilter(call: Pick<RouteCall, 'deps' | 'portalOwner'>): PortalFilter {
  const owner = call.portalOwner;
  const limit = pLimit(OWNER_LOOKUPS_AT_ONCE);
  const own = new Map<string, Promise<boolean>>();
  const isOwn = (name: string): Promise<boolean> => {
    let known = own.get(name);
    if (known === undefined) {
      known = limit(async () => (await call.deps.context.registry().get(name))?.fields.owner === owner);
      own.set(name, known);
    }
    return known;
  };
  return {
    async filter(items) {
      if (owner === undefined) return [...items];
      const kept = await Promise.all(items.map((item) => isOwn(item.endpoint)));
      return items.filter((_, i) => kept[i]);
    },
  };
}

/** The items a portal caller may see: those whose `endpoint` is its owner's; every item for any other caller. */
export async function inPortalScope<T extends { readonly endpoint: string }>(call: Pick<RouteCall, 'deps' | 'portalOwner'>, items: readonly T[]): Promise<T[]> {
  return portalFilter(call).filter(items);
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
