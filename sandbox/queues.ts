/** The sandbox's queues on the SQS emulator, made as the stack makes them: attributes, redrive, ARNs. */
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { QUEUE_RETENTION_SECONDS } from '../lib/config';
import { SANDBOX_NAMES } from './settings';

/**
 * The ordered intake's FIFO attributes, as the stack sets them (infra/delivery/queues.ts): no
 * content-based deduplication (the event ID is the deduplication ID), deduplication and throughput
 * per message group.
 */
export const ORDERED_QUEUE_ATTRIBUTES = {
  FifoQueue: 'true',
  ContentBasedDeduplication: 'false',
  DeduplicationScope: 'messageGroup',
  FifoThroughputLimit: 'perMessageGroupId',
} as const;

export async function createQueue(sqs: SQSClient, name: string, attributes: Record<string, string>): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (!QueueUrl) throw new Error(`CreateQueue ${name} returned no URL`);
  return QueueUrl;
}

export async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }));
  const arn = Attributes?.QueueArn;
  if (!arn) throw new Error(`no ARN for ${queueUrl}`);
  return arn;
}

export interface SandboxQueues {
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly deadLetterQueueUrl: string;
  readonly redriveQueueUrl: string;
  readonly orderedQueueUrl: string;
  readonly orderedQueueArn: string;
}

/**
 * Creates the five queues (an existing one is kept, as CreateQueue does): each keeps messages as
 * long as the stack's do (the ledger's retention is checked against it); `visibilityTimeoutSeconds`
 * and `maxReceiveCount` on the two the consumer polls.
 */
export async function createSandboxQueues(
  sqs: SQSClient,
  { visibilityTimeoutSeconds, maxReceiveCount }: { readonly visibilityTimeoutSeconds: number; readonly maxReceiveCount: number },
): Promise<SandboxQueues> {
  const retention = { MessageRetentionPeriod: String(QUEUE_RETENTION_SECONDS) };
  const polled = async (name: string, redriveTo: string, attributes: Record<string, string> = {}) =>
    createQueue(sqs, name, {
      ...attributes,
      VisibilityTimeout: String(visibilityTimeoutSeconds),
      ...retention,
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await queueArn(sqs, redriveTo), maxReceiveCount }),
    });
  const deadLetterQueueUrl = await createQueue(sqs, SANDBOX_NAMES.deadLetterQueue, retention);
  // SQS's redrive of a message the consumer kept failing on (the ledger dead-letters with a reason
  // first); the recovery timer sends it back (docs/contract.md §12 "Stuck work").
  const redriveQueueUrl = await createQueue(sqs, SANDBOX_NAMES.redriveQueue, retention);
  const queueUrl = await polled(SANDBOX_NAMES.queue, redriveQueueUrl);
  // The ordered intake: FIFO, deduplicated by the producer's MessageDeduplicationId (the event ID),
  // per shipment as the stack's is (high throughput), with its own FIFO dead-letter queue.
  const orderedDeadLetterQueueUrl = await createQueue(sqs, SANDBOX_NAMES.orderedDeadLetterQueue, { FifoQueue: 'true', ...retention });
  const orderedQueueUrl = await polled(SANDBOX_NAMES.orderedQueue, orderedDeadLetterQueueUrl, ORDERED_QUEUE_ATTRIBUTES);
  return {
    queueUrl,
    queueArn: await queueArn(sqs, queueUrl),
    deadLetterQueueUrl,
    redriveQueueUrl,
    orderedQueueUrl,
    orderedQueueArn: await queueArn(sqs, orderedQueueUrl),
  };
}
