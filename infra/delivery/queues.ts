/**
 * The construct's queues: the delivery queue producers send to, the redrive queue SQS moves a
 * message to after too many receives (the recovery function drains it), the dead-letter queue the
 * functions send what they give up on to, and the ordered intake.
 *
 * The ordered intake (docs/contract.md §13): a FIFO queue beside the delivery queue for producers
 * that need a shipment's events handled in the order they sent them (`MessageGroupId` = the
 * shipment ID, `MessageDeduplicationId` = the event ID; content-based deduplication off), with a
 * FIFO dead-letter queue of its own and a second event source on the same consumer. The consumer
 * routes its messages as it routes the delivery queue's and puts every per-endpoint message on the
 * delivery queue; its dead letters, whatever queue the message came from, go to the standard
 * dead-letter queue (lib/queue/sqs-queue.ts `deadLetter` sends there without a group). The FIFO
 * dead-letter queue receives only what SQS itself redrives after `maxReceiveCount` receives.
 */
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { QUEUE_RETENTION_SECONDS, type derivedTimings } from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import type { WebhookDelivery, WebhookDeliveryProps } from '../webhook-delivery';

/** SQS's longest message retention; every queue of the construct keeps messages this long. */
const MAX_RETENTION = Duration.seconds(QUEUE_RETENTION_SECONDS);

export type DeliveryQueues = Pick<WebhookDelivery, 'deadLetterQueue' | 'redriveQueue' | 'queue' | 'orderedDeadLetterQueue' | 'orderedQueue'>;

/**
 * Receives the ordered intake allows a message before SQS sets it aside: the prop, or the delivery
 * queue's. @throws ConfigError naming the prop
 */
export function orderedMaxReceiveCount(props: Pick<WebhookDeliveryProps, 'orderedMaxReceiveCount'>, timings: ReturnType<typeof derivedTimings>): number {
  const count = props.orderedMaxReceiveCount ?? timings.maxReceiveCount;
  if (!Number.isInteger(count) || count < 1 || count > 1000) {
    throw new ConfigError('orderedMaxReceiveCount', `must be a whole number from 1 to 1000, got ${count}`);
  }
  return count;
}

/**
 * The dead-letter, redrive and FIFO dead-letter queues may hold the only copy of a message (one
 * that never reached the ledger, an ordered one SQS set aside): they outlive the stack, as the
 * ledger does. The intake queues go with it, so producers' sends fail rather than pile up unread.
 */
export function createQueues(scope: Construct, timings: ReturnType<typeof derivedTimings>, orderedMaxReceiveCount: number): DeliveryQueues {
  const deadLetterQueue = new sqs.Queue(scope, 'DeadLetterQueue', {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: MAX_RETENTION,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  // cdk-nag (AwsSolutions-SQS3) knows a dead-letter queue only as some queue's redrive target or
  // a function's dead-letter config; this one is filled by SendMessage, so the finding is
  // acknowledged on this queue alone (a new queue without a dead-letter queue still fails the synth).
  Validations.of(deadLetterQueue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason:
      'The dead-letter queue is where deliveries end, not a work queue: the consumer (a dead letter with its reason) and the recovery function (a message SQS redrove too often) send to it; nothing consumes it, an operator replays by event ID. No queue redrives to it: the delivery queue redrives to the redrive queue, which the recovery function drains.',
  });
  // Not a dead end: the recovery function sends what lands here back to the delivery queue
  // (lib/recovery.ts), so the ledger decides, and gives up on a message after a few rounds.
  const redriveQueue = new sqs.Queue(scope, 'RedriveQueue', {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: MAX_RETENTION,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  const queue = new sqs.Queue(scope, 'DeliveryQueue', {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    // Retention outlasts the whole retry schedule (lib/config.ts checkLifetimes), so a message
    // cannot expire between two attempts; a backlog during an outage survives as long as SQS allows.
    retentionPeriod: MAX_RETENTION,
    // Longer than any invocation can run (6x the function timeout), so a message never
    // reappears while a live worker still holds it.
    visibilityTimeout: Duration.seconds(timings.visibilityTimeoutSeconds),
    // Every receive counts, retries included, so SQS's redrive must stay above the ledger's
    // attempt budget: the ledger dead-letters with a reason; this is only a backstop for a
    // consumer that keeps crashing on one message (or cannot reach the ledger for a long time).
    deadLetterQueue: { queue: redriveQueue, maxReceiveCount: timings.maxReceiveCount },
  });
  // FIFO, so SQS hands out a shipment's messages in the order sent and none of a group while one of
  // it is in flight. CloudFormation names both queues with the `.fifo` suffix. A FIFO queue's
  // dead-letter queue must be FIFO too.
  const orderedDeadLetterQueue = new sqs.Queue(scope, 'OrderedDeadLetterQueue', {
    fifo: true,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: MAX_RETENTION,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  const orderedQueue = new sqs.Queue(scope, 'OrderedQueue', {
    fifo: true,
    // Producers give the event ID as MessageDeduplicationId (`handoff send --ordered` does): two
    // events with equal bodies are not one event, and one event sent twice is deduplicated by ID.
    contentBasedDeduplication: false,
    // High-throughput FIFO: the limit is per shipment rather than per queue, and deduplication is
    // per shipment, which an event ID (one shipment's) never crosses.
    deduplicationScope: sqs.DeduplicationScope.MESSAGE_GROUP,
    fifoThroughputLimit: sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: MAX_RETENTION,
    visibilityTimeout: Duration.seconds(timings.visibilityTimeoutSeconds),
    // Its records are routed and fanned out, never retried for a receiver (the delivery queue's
    // messages are), so it needs no receive budget above the attempt budget: a message that keeps
    // failing holds its shipment orderedMaxReceiveCount × the visibility timeout, then is set aside.
    deadLetterQueue: { queue: orderedDeadLetterQueue, maxReceiveCount: orderedMaxReceiveCount },
  });
  return { deadLetterQueue, redriveQueue, queue, orderedDeadLetterQueue, orderedQueue };
}
