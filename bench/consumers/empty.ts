/** The empty handler: the floor for bundle size and module init. */
import type { SQSBatchResponse } from 'aws-lambda';

export async function handler(): Promise<SQSBatchResponse> {
  return { batchItemFailures: [] };
}
