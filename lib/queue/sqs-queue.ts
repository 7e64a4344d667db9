/** The delivery queue on Amazon SQS (or an SQS-compatible emulator). */
import {
  ChangeMessageVisibilityCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  clampDelaySeconds,
  clampVisibilitySeconds,
  ENDPOINT_ATTRIBUTE,
  IN_TURN_ATTRIBUTE,
  QueueUnavailableError,
  RESERVED_RATE_ATTRIBUTE,
  RESERVED_SLOT_ATTRIBUTE,
  SEQUENCE_ATTRIBUTE,
  type DeadLetterInfo,
  type DeliveryQueue,
  type EndpointMessage,
  type EnqueueOptions,
} from './queue';
/** SQS's most messages per SendMessageBatch. */
const SEND_BATCH_SIZE = 10;

export interface SqsDeliveryQueueOptions {
  /**
   * Build it with `useQueueUrlAsEndpoint: false`: otherwise the SDK sends each call to the host
   * in the queue URL rather than to the configured endpoint (`AWS_ENDPOINT_URL_SQS`), which breaks
   * emulators whose queue URLs name a host that does not resolve.
   */
  readonly client: SQSClient;
  /** The delivery queue: where `retryAfter` applies and `enqueue` sends. */
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
}

export class SqsDeliveryQueue implements DeliveryQueue {
  readonly #client: SQSClient;
  readonly #queueUrl: string;
  readonly #deadLetterQueueUrl: string;

  constructor(options: SqsDeliveryQueueOptions) {
    this.#client = options.client;
    this.#queueUrl = options.queueUrl;
    this.#deadLetterQueueUrl = options.deadLetterQueueUrl;
  }

  async retryAfter(receiptHandle: string, seconds: number): Promise<void> {
    await this.#call('retry-after', () =>
      this.#client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: this.#queueUrl,
          ReceiptHandle: receiptHandle,
          VisibilityTimeout: clampVisibilitySeconds(seconds),
        }),
      ),
    );
  }

  async deadLetter(body: string, info: DeadLetterInfo): Promise<void> {
    const attributes: Record<string, MessageAttributeValue> = {
      reason: { DataType: 'String', StringValue: info.reason },
    };
    // An empty String attribute is refused by SQS: leave it out when no ID could be read.
    if (info.eventId) attributes.eventId = { DataType: 'String', StringValue: info.eventId };
    if (info.endpoint) attributes[ENDPOINT_ATTRIBUTE] = { DataType: 'String', StringValue: info.endpoint };
    if (info.ordering) attributes.ordering = { DataType: 'String', StringValue: info.ordering };
    await this.#call('dead-letter', () =>
      this.#client.send(
        new SendMessageCommand({
          QueueUrl: this.#deadLetterQueueUrl,
          MessageBody: body,
          MessageAttributes: attributes,
        }),
      ),
    );
  }

  async enqueue(body: string, options: EnqueueOptions = {}): Promise<void> {
    await this.#call('enqueue', () =>
      this.#client.send(
        new SendMessageCommand({
          QueueUrl: this.#queueUrl,
          MessageBody: body,
          ...(options.endpoint !== undefined ? { MessageAttributes: endpointAttributes({ ...options, endpoint: options.endpoint }) } : {}),
          ...(options.delaySeconds ? { DelaySeconds: clampDelaySeconds(options.delaySeconds) } : {}),
        }),
      ),
    );
  }

  async fanOut(messages: readonly EndpointMessage[]): Promise<void> {
    // SQS bills a batch as one request per 64 KiB of it: batching saves requests for small events only.
    const batches: EndpointMessage[][] = [];
    for (let i = 0; i < messages.length; i += SEND_BATCH_SIZE) batches.push(messages.slice(i, i + SEND_BATCH_SIZE));
    await Promise.all(
      batches.map((batch) =>
        this.#call('fan-out', async () => {
          const { Failed } = await this.#client.send(
            new SendMessageBatchCommand({
              QueueUrl: this.#queueUrl,
              Entries: batch.map((message, i) => ({
                Id: String(i),
                MessageBody: message.body,
                MessageAttributes: endpointAttributes(message),
                ...(message.delaySeconds ? { DelaySeconds: clampDelaySeconds(message.delaySeconds) } : {}),
              })),
            }),
          );
          if (Failed !== undefined && Failed.length > 0) {
            throw new Error(`${Failed.length} of ${batch.length} messages not sent (${Failed[0]!.Code ?? 'unknown'})`);
          }
        }),
      ),
    );
  }

  async #call(operation: QueueUnavailableError['operation'], run: () => Promise<unknown>): Promise<void> {
    try {
      await run();
    } catch (error) {
      throw new QueueUnavailableError(operation, { cause: error });
    }
  }
}

/**
 * The endpoint's name, and where given the reserved slot (whole epoch ms, rounded up: never earlier
 * than reserved) and the limit it was reserved at, and what an ordered delivery's admission found.
 */
function endpointAttributes(message: Omit<EndpointMessage, 'body'>): Record<string, MessageAttributeValue> {
  const { endpoint, notBefore, reservedRate, admission } = message;
  const attributes: Record<string, MessageAttributeValue> = { [ENDPOINT_ATTRIBUTE]: { DataType: 'String', StringValue: endpoint } };
  if (notBefore !== undefined) {
    attributes[RESERVED_SLOT_ATTRIBUTE] = { DataType: 'Number', StringValue: String(Math.ceil(notBefore)) };
    if (reservedRate !== undefined) attributes[RESERVED_RATE_ATTRIBUTE] = { DataType: 'Number', StringValue: String(reservedRate) };
  }
  if (admission !== undefined) {
    attributes[SEQUENCE_ATTRIBUTE] = { DataType: 'Number', StringValue: String(admission.sequence) };
    if (admission.inTurn) attributes[IN_TURN_ATTRIBUTE] = { DataType: 'String', StringValue: 'true' };
  }
  return attributes;
}
