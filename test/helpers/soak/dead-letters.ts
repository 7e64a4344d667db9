/**
 * The dead-letter queue as the soak judges it: every message once, with the attributes
 * docs/contract.md §4 and §11 give it (`reason`, `eventId`, `endpoint`).
 */
import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** SQS accepts at most 10 messages per receive. */
const MAX_RECEIVE = 10;
/** Read messages stay hidden this long, so a full read counts each message once. */
const READ_HIDE_SECONDS = 600;

export interface EndpointDeadLetter {
  readonly body: string;
  readonly reason: string | undefined;
  readonly eventId: string | undefined;
  /** The endpoint whose delivery died (absent: the message did not say). */
  readonly endpoint?: string | undefined;
  /** At an endpoint ordered per shipment: whether its shipment `continued` or is `held` (docs/contract.md §13). */
  readonly ordering?: string | undefined;
}

/** Reads every message on the dead-letter queue once (a final read: they stay hidden ten minutes). */
export async function readEndpointDeadLetters(sqs: SQSClient, deadLetterQueueUrl: string): Promise<EndpointDeadLetter[]> {
  const found: EndpointDeadLetter[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: deadLetterQueueUrl,
        MaxNumberOfMessages: MAX_RECEIVE,
        VisibilityTimeout: READ_HIDE_SECONDS,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return found;
    for (const message of Messages) {
      const attributes = message.MessageAttributes ?? {};
      found.push({
        body: message.Body ?? '',
        reason: attributes.reason?.StringValue,
        eventId: attributes.eventId?.StringValue,
        endpoint: attributes.endpoint?.StringValue,
        ...(attributes.ordering?.StringValue !== undefined ? { ordering: attributes.ordering.StringValue } : {}),
      });
    }
  }
}
