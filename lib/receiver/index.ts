/**
 * handoff/receiver: what a webhook receiver needs to turn at-least-once delivery into one
 * business effect. Verify the Standard Webhooks headers, run the action once per `webhook-id`,
 * answer a repeat with the first response. See docs/receivers.md.
 */
export { createReceiver, REPLAYED_HEADER } from './receiver';
export type { ActionResult, HeadersInput, ReceivedWebhook, Receiver, ReceiverOptions, WebhookRequest, WebhookResponse } from './receiver';
export { createVerifier, DEFAULT_TOLERANCE_SECONDS } from './verify';
export type { HeaderLookup, VerifiedWebhook, VerifyOptions } from './verify';
export { DEFAULT_LEASE_SECONDS, DEFAULT_RETENTION_SECONDS } from './store';
export type { BeginResult, IdempotencyStore, StoredResponse, StoreOptions } from './store';
export { MemoryIdempotencyStore } from './memory-store';
export { DynamoDbIdempotencyStore, RECEIVER_TABLE, receiverTableDefinition } from './dynamodb-store';
export type { DynamoDbStoreOptions } from './dynamodb-store';
export { DEFAULT_MAX_BODY_BYTES, toExpressHandler, toFetchHandler, toLambdaHandler, toNodeListener } from './adapters';
export type { LambdaHttpEvent, LambdaHttpResult, NodeAdapterOptions } from './adapters';
export { checkReceiverRetention, retryWindowSeconds } from './retention';
export { ReceiverConfigError, ReceiverError, ReceiverRetentionError, WebhookVerificationError } from './errors';
export type { VerificationProblem } from './errors';
