/**
 * The ledger table's shape, the one definition that the DynamoDB adapter, the CDK construct and
 * the sandbox all build from: key names, the listing index, the TTL attribute, and the short
 * names the record's fields have on the wire.
 *
 * The listing index is sparse: a row has its key attributes (`listingKey`, `listingSort`) only
 * while it needs listing: dead, pending after a replay or a release (or recovery's send), or parked.
 * A row delivered, at its first attempt or after retries, never has them, so it costs nothing in the
 * listing; a settled row drops them. Its partition key is the state's letter and a shard of the row's key (`d07`, `p12`),
 * and for parked rows the endpoint's name too (`k07:carrier-acme`: one endpoint's parked rows are
 * read without the others'): the writes to any one key value are a fixed 1/LISTING_SHARDS of the
 * listed rows', however large the traffic. It projects keys only; a listing reads the page's rows
 * from the table.
 *
 * The shipment index (docs/contract.md §5, on unless `shipmentIndex` is off) is sparse too: its keys
 * are the row's shipment (`shipmentId`) and its admission time (`createdAt`), both written once, by
 * the write that creates the row, and never changed after, so a delivery puts one keys-only entry
 * (1 write unit) and no later write touches the index again. A row without an event (an invalid
 * message's: no `createdAt`, no shipment) and a shipment head (neither attribute) are not in it.
 */
export const LISTING_SHARDS = 16;

export const LEDGER_SCHEMA = {
  partitionKey: 'eventId',
  sortKey: 'endpoint',
  /** Dead rows, pending rows that need attention, and each endpoint's parked rows, by shard, oldest first. */
  listingIndex: {
    name: 'listing',
    /** String: the state's letter and a two-digit shard (`d07`), then `:` and the endpoint for parked rows (`k07:carrier-acme`). */
    partitionKey: 'lk',
    /** String: the epoch ms the row entered this listing, 13 digits, then its key (unique, ordered). */
    sortKey: 'ls',
    projection: 'KEYS_ONLY',
    shards: LISTING_SHARDS,
  },
  /** Every delivery of a shipment's events, newest admission first (`Ledger.deliveriesOfShipment`). */
  shipmentIndex: {
    name: 'shipment',
    /** String: the event's shipment ID (the record's `shipmentId`). */
    partitionKey: 'sh',
    /** Number: the epoch ms the row was admitted (the record's `createdAt`). */
    sortKey: 'c',
    projection: 'KEYS_ONLY',
  },
  /** Epoch seconds; DynamoDB's TTL deletes a row some time after. */
  ttlAttribute: 'x',
} as const;

/**
 * Record field -> attribute name as stored. Every name is paid for in bytes on every write, so
 * non-key names are a letter or two; this map is the only place they are spelled.
 */
export const WIRE_NAMES = {
  eventId: LEDGER_SCHEMA.partitionKey,
  endpoint: LEDGER_SCHEMA.sortKey,
  state: 's',
  body: 'b',
  contentHash: 'h',
  eventType: 't',
  attempts: 'n',
  maxAttempts: 'm',
  policy: 'p',
  history: 'hi',
  lastOutcome: 'o',
  nextAttemptAt: 'na',
  leaseOwner: 'lo',
  leaseExpiresAt: 'le',
  claimToken: 'ct',
  replays: 'r',
  audit: 'au',
  deadReason: 'dr',
  deadDetail: 'dd',
  createdAt: LEDGER_SCHEMA.shipmentIndex.sortKey,
  deliveredAt: 'da',
  deadAt: 'xa',
  expiresAt: LEDGER_SCHEMA.ttlAttribute,
  /** Only on a parked row: a row never parked has no such attribute, so it costs nothing. */
  parkedAt: 'pa',
  /** Only on a row of an ordered endpoint (docs/contract.md §13): any other row has no such attribute. */
  sequence: 'sq',
  /**
   * The event's shipment: on every row the shipment index covers (written at its creation), and
   * beside `sequence` on a row of an ordered endpoint (the shipment whose head gave that number).
   */
  shipmentId: LEDGER_SCHEMA.shipmentIndex.partitionKey,
  /** Only on a released row (docs/contract.md §13, `handoff release`): any other row has no such attribute. */
  releasedAt: 'rl',
  /** Only on a row claimed while tracing (docs/contract.md §19): a row claimed with tracing off has no such attribute. */
  traceparent: 'tp',
  /** Not a record field: the retention of the latest claim, which later writes extend the expiry by. */
  retentionSeconds: 'rs',
  listingKey: LEDGER_SCHEMA.listingIndex.partitionKey,
  listingSort: LEDGER_SCHEMA.listingIndex.sortKey,
} as const;

export type WireField = keyof typeof WIRE_NAMES;

/**
 * A shipment head's attributes (`shipment-heads.ts`), on its own item of the ledger table: the
 * partition key is `#` and the shipment ID, the sort key the endpoint's name; no index attributes
 * (in no index); the table's TTL attribute only while the head is settled. Each event's sequence and each waiting event is an attribute of
 * its own, named by a prefix and the event ID or the sequence (`s:evt_1`, `w:3`), not a member of a
 * map: an update may set a new top-level attribute on an item that does not exist yet, so the
 * head's first write is the same single UpdateItem as every other (a map member cannot be set
 * before its map exists). The fixed names hold no `:`, so they never meet a prefixed one.
 */
export const HEAD_WIRE_NAMES = {
  eventId: LEDGER_SCHEMA.partitionKey,
  endpoint: LEDGER_SCHEMA.sortKey,
  /** Number: the last sequence assigned. */
  assigned: 'ha',
  /** Number: the lowest unsettled sequence. */
  next: 'hn',
  /** `s:<eventId>`, a number: the event's sequence. */
  seqPrefix: 's:',
  /** `w:<sequence>`, a string: the event waiting at that sequence. */
  waitingPrefix: 'w:',
  /** Number, epoch seconds: the table's TTL attribute, only on a settled head (`shipment-heads.ts`). */
  expiresAt: LEDGER_SCHEMA.ttlAttribute,
  /** Number: the retention a settled head expires by, the latest assignment's. */
  retentionSeconds: 'hr',
} as const;

/** An index as CreateTable (sandbox) and CloudFormation (the construct) both describe it. */
function indexDefinition(index: typeof LEDGER_SCHEMA.listingIndex | typeof LEDGER_SCHEMA.shipmentIndex) {
  return {
    IndexName: index.name,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: 'HASH' },
      { AttributeName: index.sortKey, KeyType: 'RANGE' },
    ],
    Projection: { ProjectionType: index.projection },
  } as const;
}

/**
 * The table as CreateTable (sandbox) and CloudFormation (the construct) both describe it: with the
 * shipment index unless `shipmentIndex` is false.
 */
export function ledgerTableDefinition(options: { readonly shipmentIndex: boolean }) {
  const shipment = LEDGER_SCHEMA.shipmentIndex;
  return {
    AttributeDefinitions: [
      { AttributeName: LEDGER_SCHEMA.partitionKey, AttributeType: 'S' },
      { AttributeName: LEDGER_SCHEMA.sortKey, AttributeType: 'S' },
      { AttributeName: LEDGER_SCHEMA.listingIndex.partitionKey, AttributeType: 'S' },
      { AttributeName: LEDGER_SCHEMA.listingIndex.sortKey, AttributeType: 'S' },
      ...(options.shipmentIndex
        ? [
            { AttributeName: shipment.partitionKey, AttributeType: 'S' },
            { AttributeName: shipment.sortKey, AttributeType: 'N' },
          ]
        : []),
    ],
    KeySchema: [
      { AttributeName: LEDGER_SCHEMA.partitionKey, KeyType: 'HASH' },
      { AttributeName: LEDGER_SCHEMA.sortKey, KeyType: 'RANGE' },
    ],
    GlobalSecondaryIndexes: [indexDefinition(LEDGER_SCHEMA.listingIndex), ...(options.shipmentIndex ? [indexDefinition(shipment)] : [])],
  } as const;
}

/** The table with every index: the default. */
export const LEDGER_TABLE_DEFINITION = ledgerTableDefinition({ shipmentIndex: true });
