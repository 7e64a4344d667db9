/**
 * A local stand-in for Lambda's SQS event source mapping, keeping its contract (docs/contract.md §8):
 *
 * - long-polls the queue for up to `batchSize` messages, with every system and message attribute;
 * - hands them to the handler as an `SQSEvent`, with up to `maxConcurrency` batches in flight;
 * - applies the answer as Lambda does: every record not listed in `batchItemFailures` is deleted;
 *   a listed record is left in flight, with whatever visibility the handler gave it;
 * - a malformed answer (an empty, null or unknown `itemIdentifier`), a thrown error, a timeout
 *   or a dead worker fails the whole batch: nothing is deleted, every message comes back after
 *   its visibility timeout, and the queue's redrive policy counts the receive.
 *
 * A FIFO queue's (the ordered intake, docs/contract.md §13; its ARN ends in `.fifo`) as Lambda's
 * FIFO event source: one receive of at most 10 messages per batch, records in the order SQS gives
 * them (a group's in its order; each record carrying `attributes.MessageGroupId`), and one batch per
 * message group in flight: SQS hands out none of a group while one of it is in flight, and the
 * poller holds to it whatever the queue does, putting a message of a group still in a batch back
 * (visible a second later; the receive counts) rather than handing it over out of turn. The answer
 * is applied as above; keeping a group's later records when an earlier one fails is the handler's
 * part (lib/fifo.ts). fauxqs 1.9.2 hands out one message per group per receive, so there a batch holds
 * at most one record of a group; SQS may give several, in order.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda';

/** SQS returns at most this many messages per receive. */
const MAX_MESSAGES_PER_RECEIVE = 10;
/** How long a FIFO message of a group still in flight stays out of sight when put back. */
const PUT_BACK_SECONDS = 1;
/** Lambda's largest batch from a FIFO queue. */
export const FIFO_MAX_BATCH_SIZE = 10;

/** Whether an event source is a FIFO queue: its name, the ARN's last part, ends in `.fifo`. */
export function isFifoSource(source: Pick<EventSource, 'queueArn'>): boolean {
  return source.queueArn.endsWith('.fifo');
}

/**
 * Splits a FIFO receive into the messages to hand over and those of groups still in a batch in
 * flight (`busy`), which go back: all of such a group's, so none is handed over before an earlier
 * one of its group. A message without a group is handed over.
 */
export function admitByGroup(messages: readonly Message[], busy: ReadonlySet<string>): { admitted: Message[]; returned: Message[] } {
  const admitted: Message[] = [];
  const returned: Message[] = [];
  for (const message of messages) {
    const group = message.Attributes?.MessageGroupId;
    (group !== undefined && busy.has(group) ? returned : admitted).push(message);
  }
  return { admitted, returned };
}

/** What became of one invocation of the handler. */
export type Invocation =
  | { readonly kind: 'returned'; readonly response: unknown }
  | { readonly kind: 'threw'; readonly error: string }
  | { readonly kind: 'timed-out' }
  | { readonly kind: 'worker-died'; readonly detail: string };

/** What the poller does with the batch's messages after an invocation. */
export type Settlement =
  /** Delete `deleteIds`; leave `keptIds` (the reported failures) in flight. */
  | { readonly kind: 'settled'; readonly deleteIds: readonly string[]; readonly keptIds: readonly string[] }
  /** Delete nothing: every message returns after its visibility timeout. */
  | { readonly kind: 'batch-failed'; readonly why: string };

/**
 * Lambda's reading of a partial batch response. A null or empty response, or a null or empty
 * `batchItemFailures`, is complete success. Anything it cannot read is complete failure.
 */
export function settle(messageIds: readonly string[], invocation: Invocation): Settlement {
  switch (invocation.kind) {
    case 'threw':
      return { kind: 'batch-failed', why: `the handler threw: ${invocation.error}` };
    case 'timed-out':
      return { kind: 'batch-failed', why: 'the invocation timed out' };
    case 'worker-died':
      return { kind: 'batch-failed', why: `the worker died: ${invocation.detail}` };
    case 'returned':
      break;
  }
  const response = invocation.response;
  if (response === undefined || response === null) return { kind: 'settled', deleteIds: messageIds, keptIds: [] };
  if (typeof response !== 'object' || Array.isArray(response)) {
    return { kind: 'batch-failed', why: 'the response is not a batch response object' };
  }
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === undefined || failures === null) return { kind: 'settled', deleteIds: messageIds, keptIds: [] };
  if (!Array.isArray(failures)) return { kind: 'batch-failed', why: 'batchItemFailures is not a list' };
  const known = new Set(messageIds);
  const kept = new Set<string>();
  for (const failure of failures as unknown[]) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || id === '') {
      return { kind: 'batch-failed', why: 'a batch item failure has an empty or missing itemIdentifier' };
    }
    if (!known.has(id)) return { kind: 'batch-failed', why: 'a batch item failure names a message not in the batch' };
    kept.add(id);
  }
  return { kind: 'settled', deleteIds: messageIds.filter((id) => !kept.has(id)), keptIds: [...kept] };
}

export interface EventSource {
  readonly queueArn: string;
  readonly region: string;
}

/** Turns received messages into the event Lambda would pass. */
export function toSqsEvent(messages: readonly Message[], source: EventSource): SQSEvent {
  return { Records: messages.map((message) => toRecord(message, source)) };
}

function toRecord(message: Message, source: EventSource): SQSRecord {
  const system = message.Attributes ?? {};
  const attributes: SQSRecordAttributes = {
    ApproximateReceiveCount: system.ApproximateReceiveCount ?? '1',
    SentTimestamp: system.SentTimestamp ?? String(Date.now()),
    SenderId: system.SenderId ?? '000000000000',
    ApproximateFirstReceiveTimestamp: system.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
  };
  for (const [name, value] of Object.entries(system)) {
    if (value !== undefined) (attributes as unknown as Record<string, string>)[name] = value;
  }
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.MessageAttributes ?? {})) {
    messageAttributes[name] = toRecordAttribute(value);
  }
  return {
    messageId: message.MessageId ?? '',
    receiptHandle: message.ReceiptHandle ?? '',
    body: message.Body ?? '',
    attributes,
    messageAttributes,
    md5OfBody: message.MD5OfBody ?? '',
    ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: source.queueArn,
    awsRegion: source.region,
  } as SQSRecord;
}

/** Lambda's shape: camel-cased, binary values as base64, list fields always present. */
function toRecordAttribute(value: MessageAttributeValue) {
  const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
  return {
    ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
    ...(value.BinaryValue !== undefined ? { binaryValue: base64(value.BinaryValue) } : {}),
    stringListValues: value.StringListValues ?? [],
    binaryListValues: (value.BinaryListValues ?? []).map(base64),
    dataType: value.DataType ?? 'String',
  };
}

/** What happened to one batch; for counters and logs. */
export interface BatchReport {
  readonly size: number;
  readonly invocation: Invocation['kind'];
  readonly settlement: Settlement;
  /** Deletes SQS refused (a receipt handle that expired meanwhile, say): those messages return. */
  readonly deleteFailures: number;
}

export interface PollerOptions {
  /** Built with an explicit endpoint; calls use the exact queue URL the queue was created with. */
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly source: EventSource;
  readonly batchSize: number;
  readonly maxConcurrency: number;
  /** Long-poll wait per receive, seconds (SQS allows 0..20). */
  readonly waitTimeSeconds?: number;
  /** Runs the handler on one batch. Must not throw: every failure is an `Invocation`. */
  readonly invoke: (event: SQSEvent) => Promise<Invocation>;
  readonly onBatch?: (report: BatchReport) => void;
  readonly log?: (line: string) => void;
}

export interface Poller {
  /**
   * Stops receiving, then waits for batches in flight (settling them) for up to `graceMs`.
   * Returns the number of batches still unsettled when it gave up.
   */
  stop(graceMs: number): Promise<number>;
}

export function startPoller(options: PollerOptions): Poller {
  const log = options.log ?? (() => {});
  const fifo = isFifoSource(options.source);
  const batchSize = fifo ? Math.min(options.batchSize, FIFO_MAX_BATCH_SIZE) : options.batchSize;
  /** A FIFO queue's message groups with a batch in flight. */
  const groupsInFlight = new Set<string>();
  const abort = new AbortController();
  const inFlight = new Set<Promise<void>>();
  let slotFreed: () => void = () => {};
  let stopping = false;

  const waitForSlot = () =>
    new Promise<void>((resolve) => {
      slotFreed = resolve;
    });

  async function receiveBatch(): Promise<Message[]> {
    const messages: Message[] = [];
    // Like an event source mapping with a batch size above 10: keep receiving while messages
    // come, up to the batch size. Only the first receive waits. A FIFO queue's batch is one receive.
    while (messages.length < batchSize) {
      const wanted = Math.min(batchSize - messages.length, MAX_MESSAGES_PER_RECEIVE);
      const result = await options.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: options.queueUrl,
          MaxNumberOfMessages: wanted,
          WaitTimeSeconds: messages.length === 0 ? (options.waitTimeSeconds ?? 20) : 0,
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
        { abortSignal: abort.signal },
      );
      const received = result.Messages ?? [];
      messages.push(...received);
      if (fifo || received.length < wanted) break;
    }
    return messages;
  }

  /** A FIFO receive's messages of groups still in flight, back on the queue at once. */
  async function admit(messages: Message[]): Promise<Message[]> {
    if (!fifo) return messages;
    const { admitted, returned } = admitByGroup(messages, groupsInFlight);
    if (returned.length > 0) {
      log(`${returned.length} message(s) of a group still in flight put back (one batch per group)`);
      try {
        await options.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: options.queueUrl,
            // A second, not 0: the next receive would otherwise get them straight back, and spin.
            Entries: returned.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle, VisibilityTimeout: PUT_BACK_SECONDS })),
          }),
        );
      } catch (error) {
        // Not handed over either way: they return after their visibility timeout instead.
        log(`could not put back ${returned.length} message(s): ${(error as Error).name}; they return after their visibility timeout`);
      }
    }
    return admitted;
  }

  async function handle(messages: Message[]): Promise<void> {
    const event = toSqsEvent(messages, options.source);
    const ids = event.Records.map((record) => record.messageId);
    const invocation = await options.invoke(event);
    const settlement = settle(ids, invocation);
    let deleteFailures = 0;
    if (settlement.kind === 'settled') {
      deleteFailures = await deleteMessages(
        event.Records.filter((record) => settlement.deleteIds.includes(record.messageId)),
      );
    } else {
      log(`batch of ${ids.length} failed as a whole (${settlement.why}): its messages return after their visibility timeout`);
    }
    options.onBatch?.({ size: ids.length, invocation: invocation.kind, settlement, deleteFailures });
  }

  async function deleteMessages(records: readonly SQSRecord[]): Promise<number> {
    let failures = 0;
    for (let start = 0; start < records.length; start += MAX_MESSAGES_PER_RECEIVE) {
      const chunk = records.slice(start, start + MAX_MESSAGES_PER_RECEIVE);
      try {
        const result = await options.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: options.queueUrl,
            Entries: chunk.map((record, i) => ({ Id: String(i), ReceiptHandle: record.receiptHandle })),
          }),
        );
        failures += result.Failed?.length ?? 0;
      } catch (error) {
        failures += chunk.length;
        log(`could not delete ${chunk.length} handled message(s): ${(error as Error).name}; they will be received again`);
      }
    }
    if (failures > 0) log(`${failures} handled message(s) were not deleted; they will be received again`);
    return failures;
  }

  const loop = (async () => {
    let failedReceives = 0;
    while (!stopping) {
      if (inFlight.size >= options.maxConcurrency) {
        await waitForSlot();
        continue;
      }
      let messages: Message[];
      try {
        messages = await admit(await receiveBatch());
        failedReceives = 0;
      } catch (error) {
        if (stopping) break;
        failedReceives += 1;
        if (failedReceives === 1) log(`receive failed: ${(error as Error).name}; retrying`);
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 200 * failedReceives)));
        continue;
      }
      if (messages.length === 0) continue;
      const groups = fifo ? [...new Set(messages.flatMap((m) => (m.Attributes?.MessageGroupId === undefined ? [] : [m.Attributes.MessageGroupId])))] : [];
      for (const group of groups) groupsInFlight.add(group);
      const task: Promise<void> = handle(messages)
        .catch((error: unknown) => log(`batch handling failed: ${(error as Error).message}`))
        .finally(() => {
          // Settled (deleted, or left in flight with the visibility the handler gave it): SQS now
          // decides when the group's next message comes.
          for (const group of groups) groupsInFlight.delete(group);
          inFlight.delete(task);
          slotFreed();
        });
      inFlight.add(task);
    }
  })();

  return {
    async stop(graceMs) {
      stopping = true;
      abort.abort();
      slotFreed();
      await loop;
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), graceMs);
      });
      await Promise.race([Promise.allSettled([...inFlight]), gaveUp]);
      clearTimeout(timer);
      return inFlight.size;
    },
  };
}
