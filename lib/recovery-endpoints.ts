/**
 * What the recovery runs read of the registry (`registryEndpoints`, for functions/recovery.ts and
 * the sandbox's timer): each endpoint's state, pause and release of parked deliveries, and never its
 * fields, so never its secret. Apart from lib/recovery.ts, which the construct loads: this reads
 * DynamoDB through the document client, which the construct's package does not carry.
 *
 * Read by change, as a consumer's copy is (lib/endpoints/registry-copy.ts), not by a Scan per run:
 * the scheduled function's warm container, and the sandbox's timer, keep the views between runs. The
 * first run of a container reads every item once (only those attributes); each later one asks the
 * change index for what changed since, and reads those items, and the items of the releases in
 * progress, whose windows move at every run without marking a change (the beginning and end of a
 * release do mark it: lib/endpoints/dynamodb-resume-store.ts). With nothing changed and no release
 * in progress a run costs one Query of the keys-only index, whatever the number of endpoints.
 *
 * Why a copy rather than reading only the endpoints a run needs: a run needs every enabled
 * endpoint's state (a release is begun for one whose parked deliveries an old consumer copy parked
 * after its release ended, lib/resume.ts `releaseResuming`), and nothing indexes those alone.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RegistryListing } from './endpoints/dynamodb-registry-listing';
import { isTombstone, RegistryTable, type Item } from './endpoints/dynamodb-registry-table';
import { CHANGE_WINDOW, changesSince, type ChangeWindow } from './endpoints/registry-copy';
import { REGISTRY_SCHEMA } from './endpoints/registry-schema';
import type { EndpointView } from './recovery';

const A = REGISTRY_SCHEMA.attributes;
/** The attributes a view is made of. */
const VIEW_ATTRIBUTES = [A.pausedUntil, A.state, A.resumeSince, A.resumeRate, A.resumeUntil, A.stateChange];

/** The endpoints in the registry table by name, their pauses and releases, kept current by change between calls. */
export function registryEndpoints(
  client: DynamoDBDocumentClient,
  tableName: string,
  options: { readonly now?: () => number; readonly window?: ChangeWindow } = {},
): () => Promise<ReadonlyMap<string, EndpointView>> {
  const listing = new RegistryListing(new RegistryTable(client, tableName));
  const now = options.now ?? Date.now;
  const window = options.window ?? CHANGE_WINDOW;
  let views: Map<string, { view: EndpointView; changedAt: number }> | undefined;
  let refreshedAt = 0;

  const take = (item: Item, into: Map<string, { view: EndpointView; changedAt: number }>): void => {
    const name = item[REGISTRY_SCHEMA.partitionKey];
    if (typeof name !== 'string') return;
    const stamped = item[A.changedAt];
    const changedAt = typeof stamped === 'number' ? stamped : 0;
    if (isTombstone(item)) into.delete(name);
    else into.set(name, { view: viewOf(item), changedAt });
  };

  return async () => {
    const startedAt = now();
    if (views === undefined || startedAt - refreshedAt > window.fullReadAfterMs) {
      const fresh = new Map<string, { view: EndpointView; changedAt: number }>();
      for (const item of await listing.scanItems(VIEW_ATTRIBUTES)) take(item, fresh);
      views = fresh;
    } else {
      const held = views;
      const since = changesSince(refreshedAt, window);
      const changed = (await listing.changedSince(since)).filter((mark) => held.get(mark.name)?.changedAt !== mark.changedAt).map((mark) => mark.name);
      const releasing = [...held].filter(([, { view }]) => view.resume !== undefined).map(([name]) => name);
      const names = [...new Set([...changed, ...releasing])];
      const items = names.length === 0 ? [] : await listing.readItems(names, VIEW_ATTRIBUTES);
      const found = new Set(items.map((item) => item[REGISTRY_SCHEMA.partitionKey]));
      // A name read and not found: its tombstone expired, or it was never there.
      for (const name of names) if (!found.has(name)) held.delete(name);
      for (const item of items) take(item, held);
    }
    refreshedAt = startedAt;
    return new Map([...views].map(([name, { view }]) => [name, view]));
  };
}

function viewOf(item: Item): EndpointView {
  const [pausedUntil, state, since, rate, until, change] = VIEW_ATTRIBUTES.map((attribute) => item[attribute]);
  const at = typeof change === 'object' && change !== null ? (change as { at?: unknown }).at : undefined;
  return {
    ...(typeof pausedUntil === 'number' ? { pausedUntil } : {}),
    ...(typeof state === 'string' ? { state } : {}),
    ...(typeof since === 'number' && typeof rate === 'number' ? { resume: { since, rate, ...(typeof until === 'number' ? { until } : {}) } } : {}),
    // When it was last enabled by a change of state (an endpoint created enabled has none).
    ...(state === 'enabled' && typeof at === 'number' ? { enabledAt: at } : {}),
  };
}
