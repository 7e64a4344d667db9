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
  RECOVERIES_ATTRIBUTE,
  RESERVED_RATE_ATTRIBUTE,
  RESERVED_SLOT_ATTRIBUTE,
  type RedriveQueue,
  type RedrivenMessage,
} from './queue';
import { QueueUnavailableError } from '../errors';
import { CONTROL_ATTRIBUTES, SEAL_ATTRIBUTE, SEALED_WHEN_PRESENT, sealedAttributes, type ControlValues, type MessageSeal } from './seal';

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
  /** Reads a message's seal and seals what is sent back (lib/queue/seal.ts). */
  readonly seal: MessageSeal;
}

export interface SqsRedrivenMessage extends RedrivenMessage {
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttributeValue>>;
  /** Its control values under a valid seal (none for a producer's message, whatever it carries). */
  readonly control: ControlValues;
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
      return Messages.flatMap((message) => (message.ReceiptHandle !== undefined ? [redriven(message, message.ReceiptHandle, this.#options.seal)] : []));
    } catch (error) {
      throw new QueueUnavailableError('redrive-receive', { cause: error });
    }
  }

  sendBack(messages: readonly SqsRedrivenMessage[]): Promise<void> {
    return this.#forward(this.#options.queueUrl, messages, (message) => {
      // The producer's own attributes go as they came; the control attributes are written anew from
      // what the seal vouched for (a producer's forged ones are dropped), and sealed again. A reserved
      // request slot was the first receive's (lib/queue/queue.ts): the message sent back is received a
      // first time again, and must reserve anew.
      const producers = Object.fromEntries(Object.entries(message.attributes).filter(([name]) => !isControl(name)));
      const { [RESERVED_SLOT_ATTRIBUTE]: _slot, [RESERVED_RATE_ATTRIBUTE]: _rate, ...control } = message.control;
      return { ...producers, ...sealedAttributes(this.#options.seal, message.body, { ...control, [RECOVERIES_ATTRIBUTE]: String(message.recoveries + 1) }) };
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

/** Whether handoff writes this attribute to steer its own messages (or to seal them). */
function isControl(name: string): boolean {
  return name === SEAL_ATTRIBUTE || (CONTROL_ATTRIBUTES as readonly string[]).includes(name) || (SEALED_WHEN_PRESENT as readonly string[]).includes(name);
}

function redriven(message: Message, receiptHandle: string, seal: MessageSeal): SqsRedrivenMessage {
  // As sent: a received value may also carry the (unused) list fields, which a send refuses.
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    attributes[name] = {
      DataType: value.DataType,
      ...(value.StringValue !== undefined ? { StringValue: value.StringValue } : {}),
      ...(value.BinaryValue !== undefined ? { BinaryValue: value.BinaryValue } : {}),
    };
  }
  const body = message.Body ?? '';
  const control = seal.controlOf(body, (name) => attributes[name]?.StringValue);
  const recoveries = Number(control[RECOVERIES_ATTRIBUTE] ?? '0');
  const endpoint = control[ENDPOINT_ATTRIBUTE];
  const eventId = eventIdOf(body);
  return {
    body,
    attributes,
    control,
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
