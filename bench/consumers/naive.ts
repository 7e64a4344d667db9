/**
 * The naive consumer: POST every record of the batch at once, report the ones that failed. No
 * ledger, no claim: a redelivered message is sent again, and two workers holding copies of one
 * event both send it. The floor for what delivery costs.
 */
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { postEvent } from './post';

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const results = await Promise.allSettled(event.Records.map((record) => postEvent(record.body)));
  return {
    batchItemFailures: event.Records.filter((_, i) => results[i]?.status === 'rejected').map((record) => ({
      itemIdentifier: record.messageId,
    })),
  };
}
