/** The delivery queue on Amazon SQS (or an SQS-compatible emulator). */
import {
  ChangeMessageVisibilityCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { clampVisibilitySeconds, QueueUnavailableError, type DeadLetterInfo, type DeliveryQueue } from './queue';

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

  async enqueue(body: string): Promise<void> {
    await this.#call('enqueue', () =>
      this.#client.send(new SendMessageCommand({ QueueUrl: this.#queueUrl, MessageBody: body })),
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
