/**
 * SQS requests as billed: each request, and each started 64 KB of its payload as one more.
 *
 * Two sources. The consumer's own calls (a retry's visibility change, a dead letter) go through
 * the real queue adapter on an SDK client whose requests are recorded and answered here, never
 * sent: the adapter and its inputs are real, and a request's count does not depend on what a queue
 * answers. Lambda's event source polls the queue for the function and is billed to the same
 * account: one ReceiveMessage per batch (its payload the batch's messages) and one
 * DeleteMessageBatch for the records it removes; `eventSource` records those.
 *
 * Messages the consumer puts on a queue (routing's per-endpoint messages, dead letters) are kept,
 * so a run can hand them to the consumer as Lambda's event source would (`takeSent`).
 */
import { SQSClient, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { sqsBilledRequests } from './prices';
import { utf8Bytes } from './item-size';

export class SqsUsage {
  /** Requests by operation, `(event source)` marking the poller's. */
  readonly requests: Record<string, number> = {};
  /** Billed requests: each request's 64 KB chunks. */
  billedRequests = 0;

  add(operation: string, payloadBytes: number): void {
    this.requests[operation] = (this.requests[operation] ?? 0) + 1;
    this.billedRequests += sqsBilledRequests(payloadBytes);
  }
}

/** A message the consumer sent, as the queue would hold it. */
export interface SentMessage {
  readonly queueUrl: string;
  readonly body: string;
  readonly attributes: Readonly<Record<string, MessageAttributeValue>>;
  /** Its DelaySeconds, when it had one. */
  readonly delaySeconds?: number;
}

export interface SqsMeter {
  /** A client for the consumer's queue adapter: its requests are recorded, never sent. */
  readonly client: SQSClient;
  /** Starts a fresh count; returns it. */
  start(): SqsUsage;
  /** The messages sent (SendMessage, SendMessageBatch) since the last call, in order; forgets them. */
  takeSent(): SentMessage[];
  /** What Lambda's event source requests for one batch: a receive, and a delete unless all failed. */
  eventSource(records: readonly SQSRecord[], failed: number): void;
}

export function startSqsMeter(): SqsMeter {
  let usage = new SqsUsage();
  let sent: SentMessage[] = [];
  const client = new SQSClient({
    region: 'us-east-1',
    // Never contacted: the middleware below answers every request.
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'cost', secretAccessKey: 'cost' },
  });
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const operation = String(context.commandName).replace(/Command$/, '');
      const input = args.input as SqsInput;
      const messages = input.Entries ?? (input.MessageBody !== undefined ? [input] : []);
      usage.add(operation, messages.length > 0 ? messages.reduce((sum, m) => sum + payloadBytes(m), 0) : payloadBytes(input));
      if (operation === 'SendMessage' || operation === 'SendMessageBatch') {
        for (const m of messages) {
          const delaySeconds = m.DelaySeconds ?? input.DelaySeconds;
          sent.push({ queueUrl: input.QueueUrl ?? '', body: m.MessageBody ?? '', attributes: m.MessageAttributes ?? {}, ...(delaySeconds !== undefined ? { delaySeconds } : {}) });
        }
      }
      // SendMessageBatch: every entry sent (no Failed list), as the adapter expects of a success.
      return { output: { $metadata: {}, Successful: [], Failed: [] }, response: undefined };
    },
    { step: 'initialize', name: 'meterSqsRequests' },
  );
  return {
    client,
    start() {
      usage = new SqsUsage();
      return usage;
    },
    takeSent() {
      const taken = sent;
      sent = [];
      return taken;
    },
    eventSource(records, failed) {
      usage.add('ReceiveMessage (event source)', records.reduce((sum, record) => sum + messageBytes(record), 0));
      if (failed < records.length) usage.add('DeleteMessageBatch (event source)', 0);
    },
  };
}

interface SqsMessageInput {
  MessageBody?: string;
  DelaySeconds?: number;
  MessageAttributes?: Record<string, MessageAttributeValue>;
}

interface SqsInput extends SqsMessageInput {
  QueueUrl?: string;
  /** SendMessageBatch's messages: billed together, each 64 KB of the whole one request. */
  Entries?: SqsMessageInput[];
}

/** A message's size as SQS counts it: the body, and each attribute's name, type and value. */
function payloadBytes(input: SqsMessageInput): number {
  let bytes = input.MessageBody === undefined ? 0 : utf8Bytes(input.MessageBody);
  for (const [name, value] of Object.entries(input.MessageAttributes ?? {})) {
    bytes += utf8Bytes(name) + utf8Bytes(value.DataType ?? '') + utf8Bytes(value.StringValue ?? '') + (value.BinaryValue?.byteLength ?? 0);
  }
  return bytes;
}

function messageBytes(record: SQSRecord): number {
  let bytes = utf8Bytes(record.body);
  for (const [name, value] of Object.entries(record.messageAttributes)) {
    bytes += utf8Bytes(name) + utf8Bytes(value.dataType) + utf8Bytes(value.stringValue ?? '');
  }
  return bytes;
}
