/**
 * The common alternative: Powertools' `BatchProcessor` (records in parallel, partial batch
 * response) around a record handler made idempotent with `makeIdempotent` on its DynamoDB
 * persistence layer, keyed by the event ID in the body (as handoff is), not the message ID,
 * so a producer's duplicate is caught too. Per new event: a conditional PutItem (in progress)
 * before the handler, an UpdateItem (completed) after.
 *
 * Environment: IDEMPOTENCY_TABLE (partition key `id`), HANDOFF_WEBHOOK_URL.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { postEvent } from './post';

const tableName = process.env.IDEMPOTENCY_TABLE;
if (!tableName) throw new Error('IDEMPOTENCY_TABLE must be set');

const processor = new BatchProcessor(EventType.SQS);
const persistenceStore = new DynamoDBPersistenceLayer({ tableName });
const config = new IdempotencyConfig({ eventKeyJmesPath: 'powertools_json(body).id' });

const deliverRecord = makeIdempotent(
  async (record: SQSRecord) => postEvent(record.body),
  { persistenceStore, config },
);

export async function handler(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  config.registerLambdaContext(context);
  return processPartialResponse(event, deliverRecord, processor, { context });
}
