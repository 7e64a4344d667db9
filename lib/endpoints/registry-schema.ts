/**
 * The endpoint registry's table (lib/endpoints/registry.ts): one item per endpoint, keyed by its
 * name. The one definition the DynamoDB adapter, the CDK construct and the sandbox build from.
 *
 * An item holds the endpoint's fields as given (`fields`, a map; its secret too, a `whsec_…` value
 * or an ARN: the table is encrypted at rest with a key the stack owns), its `state`, the last
 * `stateChange` and the epoch-ms `createdAt`/`updatedAt`. `updatedAt` is the version an update is
 * conditioned on, so a concurrent change is refused, not lost.
 */
export const REGISTRY_SCHEMA = {
  partitionKey: 'name',
  attributes: {
    fields: 'fields',
    state: 'state',
    stateChange: 'stateChange',
    createdAt: 'createdAt',
    updatedAt: 'updatedAt',
    /**
     * Only on endpoints the construct declares: a digest of the declaration, so a deploy applies it
     * only when it changed (infra/registry/seed-call.ts). Writes keep it: they update, never replace, an item.
     */
    declared: 'declared',
    /**
     * The endpoint's health, written by consumers (lib/endpoints/health-rules.ts) beside the fields, never
     * touching `fields` or `updatedAt`: epoch ms until which it is paused, failed attempts since the
     * last accepted one, when the first of them was, when a request was last accepted after failures;
     * until when one consumer holds the half-open breaker's probe.
     */
    pausedUntil: 'pausedUntil',
    failures: 'failures',
    failingSince: 'failingSince',
    lastAcceptedAt: 'lastAcceptedAt',
    probeUntil: 'probeUntil',
    /**
     * Releasing parked deliveries after `endpoint enable` (lib/resume.ts): epoch ms the release
     * began (the ramp counts from it), the most per second it ramps up to, and epoch ms up to which
     * releases are scheduled. Set by enabling, removed by disabling and once none is left.
     */
    resumeSince: 'resumeSince',
    resumeRate: 'resumeRate',
    resumeUntil: 'resumeUntil',
    /**
     * The rate limit's schedule (lib/endpoints/rate-limit.ts): epoch ms of the endpoint's next free
     * request slot, advanced by every consumer's reservation with a conditional write. Only on the
     * schedule's own item (`scheduleKey`), never on the endpoint's.
     */
    rateNext: 'rateNext',
    /**
     * Reading by change (docs/contract.md §20): epoch ms of the item's last change that consumers
     * must see (its fields, its state, its removal; of its health, a run of failures beginning, a
     * pause, a recovery), the change index's sort key. Health's counts, the probe's claim, a
     * release's window and the rate limit's schedule never set it. `feed` is the index's partition
     * key, the same value on every item (CHANGE_FEED), set by every write that sets `changedAt`.
     */
    changedAt: 'changedAt',
    feed: 'feed',
    /** The endpoint's `owner` field (docs/contract.md §20), copied to the top level for the owner index; absent when it has none. */
    owner: 'owner',
    /** Only on a removed endpoint's item, kept as a tombstone so copies learn of the removal: epoch ms it was removed. */
    removedAt: 'removedAt',
    /** Epoch seconds; DynamoDB's TTL deletes a tombstone, or a rate schedule's item, some time after. */
    expiresAt: 'expiresAt',
  },
  /** Changes, oldest first, keys only: what a consumer's copy reads to stay current (lib/endpoints/registry.ts). */
  changeIndex: { name: 'changes', partitionKey: 'feed', sortKey: 'changedAt', projection: 'KEYS_ONLY' },
  /** An owner's endpoints by name, keys only: sparse, only items with an owner are in it. */
  ownerIndex: { name: 'owners', partitionKey: 'owner', sortKey: 'name', projection: 'KEYS_ONLY' },
} as const;

/**
 * The rate limit's schedule of an endpoint has an item of its own in the table (its `name` this key,
 * `rateNext` and `expiresAt` only), so its writes and the endpoint's health's land on two items, not
 * one (docs/contract.md §20). Safe: an endpoint's name is 1–64 of `a-z 0-9 -` (ENDPOINT_NAME), so no
 * endpoint is ever named with a `#`, and a schedule's key can never be an endpoint's. It has no
 * `feed`/`changedAt` and no `owner`, so it is in neither index; every Scan skips it
 * (`isScheduleKey`); its `expiresAt` lets DynamoDB's TTL remove an idle or removed endpoint's schedule.
 */
const SCHEDULE_KEY_SUFFIX = '#rate';

/** The key of `endpoint`'s rate schedule item. */
export function scheduleKey(endpoint: string): string {
  return `${endpoint}${SCHEDULE_KEY_SUFFIX}`;
}

/** Whether an item's key is a rate schedule's, not an endpoint's: what every Scan of the registry leaves out. */
export function isScheduleKey(name: unknown): boolean {
  return typeof name === 'string' && name.endsWith(SCHEDULE_KEY_SUFFIX);
}

/** The change index's one partition key value. */
export const CHANGE_FEED = 'endpoints';

/** The table as CreateTable (sandbox) and CloudFormation (the construct) both describe it. */
export const REGISTRY_TABLE_DEFINITION = {
  AttributeDefinitions: [
    { AttributeName: REGISTRY_SCHEMA.partitionKey, AttributeType: 'S' },
    { AttributeName: REGISTRY_SCHEMA.changeIndex.partitionKey, AttributeType: 'S' },
    { AttributeName: REGISTRY_SCHEMA.changeIndex.sortKey, AttributeType: 'N' },
    { AttributeName: REGISTRY_SCHEMA.ownerIndex.partitionKey, AttributeType: 'S' },
  ],
  KeySchema: [{ AttributeName: REGISTRY_SCHEMA.partitionKey, KeyType: 'HASH' }],
  GlobalSecondaryIndexes: [
    {
      IndexName: REGISTRY_SCHEMA.changeIndex.name,
      KeySchema: [
        { AttributeName: REGISTRY_SCHEMA.changeIndex.partitionKey, KeyType: 'HASH' },
        { AttributeName: REGISTRY_SCHEMA.changeIndex.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: REGISTRY_SCHEMA.changeIndex.projection },
    },
    {
      IndexName: REGISTRY_SCHEMA.ownerIndex.name,
      KeySchema: [
        { AttributeName: REGISTRY_SCHEMA.ownerIndex.partitionKey, KeyType: 'HASH' },
        { AttributeName: REGISTRY_SCHEMA.ownerIndex.sortKey, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: REGISTRY_SCHEMA.ownerIndex.projection },
    },
  ],
} as const;

