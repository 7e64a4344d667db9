/**
 * The consumer Lambda: SQS batch in, partial batch response out. Thin by design: it turns the
 * environment into the consumer's dependencies once per container (lib/consumer/environment.ts)
 * and exports the handler `createConsumer` makes of them (lib/consumer/consumer.ts).
 *
 * Environment: the `HANDOFF_*` settings and the resources in RESOURCE_ENV (lib/config.ts). A bad
 * or missing setting fails the cold start with a message naming the variable. With an endpoint
 * registry (`HANDOFF_ENDPOINTS_TABLE`) the endpoints are the registry's; without one, the single-URL
 * settings are the one endpoint `default`.
 *
 * With a registry, endpoint health (docs/contract.md §12) is kept on it: an endpoint this consumer
 * disables is told to operators by an error log line `endpoint disabled` and, where set, an event
 * on the EventBridge bus `HANDOFF_EVENT_BUS` (source `handoff`, detail-type
 * `handoff.endpoint.disabled`) and a message to the SNS topic `HANDOFF_ALARM_TOPIC_ARN`. Neither is
 * set in the sandbox, whose stderr shows the line.
 *
 * Signing secrets named by ARN (the registry's, or `HANDOFF_WEBHOOK_SECRET_ARN`) are read from
 * Secrets Manager and kept at most 5 minutes (an hour while re-reads fail); after a rotation there
 * the previous version signs too for 24 h (lib/endpoints/secret.ts). An endpoint that cannot be
 * resolved (its secret unreadable, its item undecodable) holds its deliveries on the queue, as a
 * registry that cannot be read holds the whole batch (lib/batch.ts, `EndpointUnresolved`).
 *
 * Signing secrets the registry holds encrypted (what `handoff endpoint` writes: lib/endpoints/
 * secret-cipher.ts) are decrypted once per container: `encrypted:kms:…` with the registry's KMS key
 * (the ciphertext names it; the function's `kms:Decrypt` on it suffices), `encrypted:local:…` with
 * the sandbox's key (`HANDOFF_ENDPOINT_SECRETS_KEY`, set by the sandbox alone). One that cannot be
 * decrypted leaves its endpoint unresolved, as an unreadable Secrets Manager secret does.
 *
 * With a registry, an endpoint's `rateLimitPerSecond` (docs/contract.md §11) is kept across every
 * consumer by a schedule on its registry item (lib/endpoints/dynamodb-rate-limit.ts, the health
 * writes' UpdateItem grant). Without one there is no limit: the single-URL settings have none.
 */
import { createConsumer } from '../lib/consumer/consumer';
import { consumerDeps } from '../lib/consumer/environment';

export { CRASH_AT_ENV } from '../lib/consumer/environment';

export const handler = createConsumer(consumerDeps(process.env));
