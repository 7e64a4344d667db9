/**
 * SQS requests as billed: each request, and each started 64 KB of its payload as one more.
 *
 * Two sources. The consumer's own calls (a retry's visibility change, a dead letter) go through
 * the real queue adapter on an SDK client whose requests are recorded and answered here, never
 * sent: the adapter and its inputs are real, and a request's count does not depend on what a queue
 * answers. Lambda's event source polls the queue for the function and is billed to the same
 * account: one ReceiveMessage per batch (its payload the batch's messages) and one
 * DeleteMessageBatch for the records it removes; `eventSource` records those.
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

export interface SqsMeter {
  /** A client for the consumer's queue adapter: its requests are recorded, never sent. */
  readonly client: SQSClient;
  /** Starts a fresh count; returns it. */
  start(): SqsUsage;
  /** What Lambda's event source requests for one batch: a receive, and a delete unless all failed. */
  eventSource(records: readonly SQSRecord[], failed: number): void;
}

export function startSqsMeter(): SqsMeter {
  let usage = new SqsUsage();
  const client = new SQSClient({
    region: 'us-east-1',
    // Never contacted: the middleware below answers every request.
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'cost', secretAccessKey: 'cost' },
  });
  client.middlewareStack.add(
    (_next, context) => async (args) => {
      const operation = String(context.commandName).replace(/Command$/, '');
      usage.add(operation, payloadBytes(args.input as SqsInput));
      return { output: { $metadata: {} }, response: undefined };
    },
    { step: 'initialize', name: 'meterSqsRequests' },
  );
  return {
    client,
    start() {
      usage = new SqsUsage();
      return usage;
    },
    eventSource(records, failed) {
      usage.add('ReceiveMessage (event source)', records.reduce((sum, record) => sum + messageBytes(record), 0));
      if (failed < records.length) usage.add('DeleteMessageBatch (event source)', 0);
    },
  };
}

interface SqsInput {
  MessageBody?: string;
  MessageAttributes?: Record<string, MessageAttributeValue>;
}

/** A message's size as SQS counts it: the body, and each attribute's name, type and value. */
function payloadBytes(input: SqsInput): number {
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
