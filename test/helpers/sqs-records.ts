/**
 * Builders for the SQS event Lambda hands the consumer: from messages really received from a
 * queue (so receipt handles work with ChangeMessageVisibility), or made up for pure tests.
 */
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { MessageSeal, sealedAttributes, type ControlValues } from '../../lib/queue/seal';

/** The seal key of tests that run the consumer outside the sandbox (the harness's cold start sets it). */
export const TEST_SEAL_KEY = Buffer.alloc(32, 7).toString('base64');
export const TEST_SEAL = new MessageSeal(TEST_SEAL_KEY);

/** The ARN Lambda would put on records from this queue URL (`…/<account>/<name>`). */
export function queueArnFromUrl(queueUrl: string, region = 'us-east-1'): string {
  const [account, name] = new URL(queueUrl).pathname.split('/').filter(Boolean).slice(-2);
  return `arn:aws:sqs:${region}:${account ?? '000000000000'}:${name ?? 'queue'}`;
}

/**
 * A record as Lambda builds it from a received message. Receive with
 * `MessageSystemAttributeNames: ['All']` and `MessageAttributeNames: ['All']` to carry them over.
 */
export function recordFromMessage(message: Message, queueArn: string, region = 'us-east-1'): SQSRecord {
  if (!message.MessageId || !message.ReceiptHandle || message.Body === undefined) {
    throw new Error('a received message needs MessageId, ReceiptHandle and Body');
  }
  const system = message.Attributes ?? {};
  return {
    messageId: message.MessageId,
    receiptHandle: message.ReceiptHandle,
    body: message.Body,
    attributes: {
      ApproximateReceiveCount: system.ApproximateReceiveCount ?? '1',
      SentTimestamp: system.SentTimestamp ?? String(Date.now()),
      SenderId: system.SenderId ?? 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: system.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
    },
    messageAttributes: lambdaAttributes(message.MessageAttributes ?? {}),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

let counter = 0;

/** A made-up record for tests that never touch a queue. */
export function sqsRecord(body: string, overrides: Partial<SQSRecord> = {}): SQSRecord {
  counter += 1;
  const nowMs = String(Date.now());
  return {
    messageId: `msg-${counter}`,
    receiptHandle: `receipt-${counter}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: nowMs,
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: nowMs,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:handoff-deliveries',
    awsRegion: 'us-east-1',
    ...overrides,
  };
}

/** A made-up record of handoff's own: its control attributes under a valid seal (lib/queue/seal.ts). */
export function sealedRecord(body: string, control: ControlValues, overrides: Partial<SQSRecord> = {}, seal: MessageSeal = TEST_SEAL): SQSRecord {
  return sqsRecord(body, { ...overrides, messageAttributes: lambdaAttributes(sealedAttributes(seal, body, control)) });
}

/** A made-up record carrying control attributes without a seal, as any producer can send them. */
export function forgedRecord(body: string, control: ControlValues, overrides: Partial<SQSRecord> = {}): SQSRecord {
  const attributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(control)) {
    attributes[name] = { dataType: 'String', stringValue: value, stringListValues: [], binaryListValues: [] };
  }
  return sqsRecord(body, { ...overrides, messageAttributes: attributes });
}

export function sqsEvent(records: readonly SQSRecord[]): SQSEvent {
  return { Records: [...records] };
}

function lambdaAttributes(attributes: Record<string, MessageAttributeValue>): SQSMessageAttributes {
  const out: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(attributes)) {
    out[name] = {
      dataType: value.DataType ?? 'String',
      stringValue: value.StringValue,
      binaryValue: value.BinaryValue ? Buffer.from(value.BinaryValue).toString('base64') : undefined,
      stringListValues: value.StringListValues ?? [],
      binaryListValues: (value.BinaryListValues ?? []).map((b) => Buffer.from(b).toString('base64')),
    };
  }
  return out;
}
