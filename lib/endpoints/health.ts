/**
 * Endpoint health (docs/contract.md §12), importable from one place: the rules (health-rules.ts),
 * the consumer's tracker (health-tracker.ts) and the notice of a disabled endpoint
 * (disabled-notifier.ts). Those modules import each other, never this one.
 */
export * from './health-rules';
export * from './health-tracker';
export * from './disabled-notifier';
