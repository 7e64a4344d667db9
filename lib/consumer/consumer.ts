/**
 * The consumer, made from what it needs: `createConsumer(deps)` is the Lambda handler, SQS batch in
 * and partial batch response out (lib/batch.ts). It keeps no module state, so each caller makes its
 * own from its own dependencies: functions/consumer.ts from the environment (the Lambda, the
 * sandbox's workers and the bench run that file), the cost script and the tests from theirs.
 */
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { processBatch, type BatchDeps } from '../batch';
import { HealthTracker, type DisabledNotice, type HealthRecord, type HealthStore } from '../endpoints/health';
import { cachedEndpoints, type RegistryChanges } from '../endpoints/registry';
import { RegistryCopy, type ChangeWindow } from '../endpoints/registry-copy';
import type { MessageSeal } from '../queue/seal';
import { registryRouting, type RegistryRoutingOptions, type Routing } from '../routing';
import { errorFields } from '../observability';
import { FLUSH_TIMEOUT_MS, type Tracing } from '../tracing/tracing';

export interface ConsumerDeps extends Omit<BatchDeps, 'seal' | 'tracing' | 'spans'> {
  /** The seal key, asked for by each batch (lib/queue/seal.ts `sealSource` keeps it between reads). */
  readonly seal: () => Promise<MessageSeal>;
  /**
   * Tracing, loaded by the first batch (lib/tracing/tracing.ts `tracingFromEnvironment`); unset while
   * it is off. A load that fails leaves that batch untraced, and the next tries again.
   */
  readonly tracing?: () => Promise<Tracing>;
}

export type ConsumerHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

export function createConsumer(deps: ConsumerDeps): ConsumerHandler {
  const { seal, logger, metrics, tracing: loadTracing, ...rest } = deps;
  const consume = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    const batchLogger = logger.child({ requestId: context.awsRequestId });
    const tracing = loadTracing !== undefined ? await loadTracing().catch((error: unknown) => void batchLogger.warn('tracing unavailable', errorFields(error))) : undefined;
    if (tracing === undefined) return processBatch(event.Records, { ...rest, metrics, seal: await seal(), logger: batchLogger });
    try {
      return await processBatch(event.Records, { ...rest, metrics, seal: await seal(), logger: batchLogger, tracing });
    } finally {
      // Every span of the batch is ended by now; exported before Lambda may freeze the environment, within a bound.
      await tracing.flush(FLUSH_TIMEOUT_MS);
    }
  };
  return middy<SQSEvent, SQSBatchResponse>(consume).use({
    // Metrics are published whatever the outcome, so a failing batch still shows up.
    after: () => metrics.flush(),
    onError: () => metrics.flush(),
  });
}

/**
 * Routing and endpoint health on an endpoint registry: one copy of it, kept current by change
 * (lib/endpoints/registry-copy.ts) and refreshed at most every `cacheMs`, serves both, and health
 * writes go to `store` (DynamoDbHealthStore on the registry's table: the same items).
 */
export function registryConsumer(
  registry: RegistryChanges,
  options: Omit<RegistryRoutingOptions, 'records'> & {
    readonly cacheMs: number;
    /** How far back the copy asks the change index (default CHANGE_WINDOW's). */
    readonly window?: ChangeWindow;
    /** Tells operators of an endpoint this consumer disables, beyond the log line. */
    readonly notify?: ((notice: DisabledNotice) => Promise<void>) | undefined;
    /** Where health is written (DynamoDbHealthStore on the registry's table). */
    readonly store: HealthStore;
    /** Health's clock (the delivery's). */
    readonly now?: () => number;
  },
): { routing: Routing; health: HealthTracker } {
  const { cacheMs, window, notify, store, now, ...routing } = options;
  let records: (() => Promise<readonly HealthRecord[]>) | undefined;
  const health = new HealthTracker({ store, records: () => records!(), notify, ...(now !== undefined ? { now } : {}) });
  records = cachedEndpoints(health.listing(new RegistryCopy(registry, window !== undefined ? { window } : {})), { ttlMs: cacheMs });
  return { routing: registryRouting({ ...routing, records }), health };
}
