/** The redrive queue on Amazon SQS (or an SQS-compatible emulator): lib/queue/queue.ts `RedriveQueue`. */
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { isEventId } from '../event';
import {
  ENDPOINT_ATTRIBUTE,
  QueueUnavailableError,
  RECOVERIES_ATTRIBUTE,
  RESERVED_RATE_ATTRIBUTE,
  RESERVED_SLOT_ATTRIBUTE,
  type RedriveQueue,
  type RedrivenMessage,
} from './queue';

export interface SqsRedriveQueueOptions {
  /** Built with `useQueueUrlAsEndpoint: false`, as for SqsDeliveryQueue. */
  readonly client: SQSClient;
  readonly redriveQueueUrl: string;
  /** Where a message is sent back to. */
  readonly queueUrl: string;
  /** Where a message recovery gives up on goes. */
  readonly deadLetterQueueUrl: string;
  /**
   * Seconds a receive waits for a message (0–20). 0 answers at once; on AWS a short receive samples
   * only some of the queue's servers, so it may miss a message that the next run finds.
   */
  readonly waitSeconds?: number;
  /** Seconds a received message stays hidden while the run sends it on (default 60). */
  readonly visibilityTimeoutSeconds?: number;
}

export interface SqsRedrivenMessage extends RedrivenMessage {
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttributeValue>>;
  readonly receiptHandle: string;
}

export class SqsRedriveQueue implements RedriveQueue<SqsRedrivenMessage> {
  readonly #options: SqsRedriveQueueOptions;

  constructor(options: SqsRedriveQueueOptions) {
    this.#options = options;
  }

  async receive(max: number): Promise<SqsRedrivenMessage[]> {
    const { client, redriveQueueUrl, waitSeconds = 0, visibilityTimeoutSeconds = 60 } = this.#options;
    try {
      const { Messages = [] } = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: redriveQueueUrl,
          MaxNumberOfMessages: Math.min(Math.max(Math.floor(max), 1), 10),
          WaitTimeSeconds: waitSeconds,
          VisibilityTimeout: visibilityTimeoutSeconds,
          MessageAttributeNames: ['All'],
        }),
      );
      return Messages.flatMap((message) => (message.ReceiptHandle !== undefined ? [redriven(message, message.ReceiptHandle)] : []));
    } catch (error) {
      throw new QueueUnavailableError('redrive-receive', { cause: error });
    }
  }

  sendBack(messages: readonly SqsRedrivenMessage[]): Promise<void> {
    return this.#forward(this.#options.queueUrl, messages, (message) => {
      // A reserved request slot was the first receive's (lib/queue/queue.ts): the message sent back
      // is received a first time again, and must reserve anew.
      const { [RESERVED_SLOT_ATTRIBUTE]: _slot, [RESERVED_RATE_ATTRIBUTE]: _rate, ...kept } = message.attributes;
      return { ...kept, [RECOVERIES_ATTRIBUTE]: { DataType: 'Number', StringValue: String(message.recoveries + 1) } };
    });
  }

  giveUp(messages: readonly SqsRedrivenMessage[]): Promise<void> {
    return this.#forward(this.#options.deadLetterQueueUrl, messages, (message) => message.attributes);
  }

  /** Sends each message (ten per request), then deletes from the redrive queue the ones sent. */
  async #forward(
    queueUrl: string,
    messages: readonly SqsRedrivenMessage[],
    attributesOf: (message: SqsRedrivenMessage) => Record<string, MessageAttributeValue>,
  ): Promise<void> {
    const { client, redriveQueueUrl } = this.#options;
    for (let i = 0; i < messages.length; i += 10) {
      const batch = messages.slice(i, i + 10);
      try {
        const sent = await client.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: batch.map((message, j) => ({ Id: String(j), MessageBody: message.body, MessageAttributes: attributesOf(message) })),
          }),
        );
        const done = (sent.Successful ?? []).map((entry) => batch[Number(entry.Id)]!);
        if (done.length > 0) {
          await client.send(
            new DeleteMessageBatchCommand({
              QueueUrl: redriveQueueUrl,
              Entries: done.map((message, j) => ({ Id: String(j), ReceiptHandle: message.receiptHandle })),
            }),
          );
        }
        // A message not sent stays on the redrive queue and is received again after its visibility timeout.
        if ((sent.Failed ?? []).length > 0) throw new Error(`${sent.Failed!.length} of ${batch.length} messages not sent (${sent.Failed![0]!.Code ?? 'unknown'})`);
      } catch (error) {
        throw new QueueUnavailableError('redrive-send', { cause: error });
      }
    }
  }
}

function redriven(message: Message, receiptHandle: string): SqsRedrivenMessage {
  // As sent: a received value may also carry the (unused) list fields, which a send refuses.
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    attributes[name] = {
      DataType: value.DataType,
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: value.BinaryValue } : {}),
    };
  }
  const recoveries = Number(attributes[RECOVERIES_ATTRIBUTE]?.StringValue ?? '0');
  const endpoint = attributes[ENDPOINT_ATTRIBUTE]?.StringValue;
  const eventId = eventIdOf(message.Body ?? '');
  return {
    body: message.Body ?? '',
    attributes,
    receiptHandle,
    recoveries: Number.isSafeInteger(recoveries) && recoveries > 0 ? recoveries : 0,
    ...(endpoint !== undefined ? { endpoint } : {}),
    ...(eventId !== undefined ? { eventId } : {}),
  };
}

/** The body's `id` when it is JSON with a valid event ID; undefined otherwise (a redriven body may be anything). */
function eventIdOf(body: string): string | undefined {
  try {
    const id = (JSON.parse(body) as { id?: unknown } | null)?.id;
    return isEventId(id) ? id : undefined;
  } catch {
    return undefined;
  }
}
