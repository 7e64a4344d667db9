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
  controlOfMessage,
  ENDPOINT_ATTRIBUTE,
  type DeadLetterInfo,
  type DeliveryQueue,
  type EndpointMessage,
  type EnqueueOptions,
} from './queue';
import { QueueUnavailableError } from '../errors';
import { sealedAttributes, type MessageSeal } from './seal';
import { TRACELINK_ATTRIBUTE, TRACEPARENT_ATTRIBUTE, TRACESTATE_ATTRIBUTE, type TraceCarrier } from '../tracing/carrier';
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
  /**
   * Seals every endpoint message sent (lib/queue/seal.ts): without its seal the consumer would route
   * it as a producer's. Or where to get it (`sealSource`), asked when a message needs it: a failure
   * then fails that send.
   */
  readonly seal: MessageSeal | (() => Promise<MessageSeal>);
}

export class SqsDeliveryQueue implements DeliveryQueue {
  readonly #client: SQSClient;
  readonly #queueUrl: string;
  readonly #deadLetterQueueUrl: string;
  readonly #seal: SqsDeliveryQueueOptions['seal'];

  constructor(options: SqsDeliveryQueueOptions) {
    this.#client = options.client;
    this.#queueUrl = options.queueUrl;
    this.#deadLetterQueueUrl = options.deadLetterQueueUrl;
    this.#seal = options.seal;
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
    await this.#call('enqueue', async () => {
      // A producer's message to route carries no control values, but a link to the trace it comes from is sealed all the same.
      const sealed =
        options.endpoint !== undefined
          ? sealedAttributes(await this.#sealer(), body, controlOfMessage({ ...options, endpoint: options.endpoint }))
          : options.link !== undefined
            ? sealedAttributes(await this.#sealer(), body, { [TRACELINK_ATTRIBUTE]: options.link })
            : undefined;
      const attributes = withTrace(sealed, options.trace);
      return this.#client.send(
        new SendMessageCommand({
          QueueUrl: this.#queueUrl,
          MessageBody: body,
          ...(attributes !== undefined ? { MessageAttributes: attributes } : {}),
          ...(options.delaySeconds ? { DelaySeconds: clampDelaySeconds(options.delaySeconds) } : {}),
        }),
      );
    });
  }

  async fanOut(messages: readonly EndpointMessage[]): Promise<void> {
    const seal = await this.#call('fan-out', () => this.#sealer());
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
                MessageAttributes: withTrace(sealedAttributes(seal, message.body, controlOfMessage(message)), message.trace)!,
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

  #sealer(): Promise<MessageSeal> {
    const seal = this.#seal;
    return typeof seal === 'function' ? seal() : Promise.resolve(seal);
  }

  async #call<T>(operation: QueueUnavailableError['operation'], run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw new QueueUnavailableError(operation, { cause: error });
    }
  }
}

/**
 * A message's attributes with the trace context it carries (docs/contract.md §19), unsealed: they
 * steer nothing but the parent of its delivery's span. Unset while tracing is off.
 */
function withTrace(
  attributes: Record<string, MessageAttributeValue> | undefined,
  trace: TraceCarrier | undefined,
): Record<string, MessageAttributeValue> | undefined {
  if (trace === undefined) return attributes;
  return {
    ...attributes,
    [TRACEPARENT_ATTRIBUTE]: { DataType: 'String', StringValue: trace.traceparent },
    ...(trace.tracestate !== undefined ? { [TRACESTATE_ATTRIBUTE]: { DataType: 'String', StringValue: trace.tracestate } } : {}),
  };
}
