/**
 * An empty handler that builds the clients any SQS + DynamoDB consumer needs, as handoff's does
 * at init: the floor for module init once the (external) SDK has to load.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { SQSBatchResponse } from 'aws-lambda';

export const clients = {
  dynamodb: DynamoDBDocumentClient.from(new DynamoDBClient({})),
  sqs: new SQSClient({}),
};

export async function handler(): Promise<SQSBatchResponse> {
  return { batchItemFailures: [] };
}
