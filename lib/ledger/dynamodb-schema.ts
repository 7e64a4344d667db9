/**
 * The ledger table's shape, shared by the DynamoDB adapter, the CDK construct and the sandbox so
 * that all three agree on key names without repeating them.
 */
export const LEDGER_SCHEMA = {
  partitionKey: 'eventId',
  sortKey: 'endpoint',
  /** The by-state index: list pending or dead rows without a scan, oldest state change first. */
  stateIndex: { name: 'byState', partitionKey: 'state', sortKey: 'stateSince' },
  /** Epoch seconds; DynamoDB's TTL deletes a row some time after. */
  ttlAttribute: 'expiresAt',
} as const;
