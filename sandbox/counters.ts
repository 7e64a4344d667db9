/**
 * The sandbox's live counters: delivered (from the sandbox's metric sink: a delivered row is in
 * no index, so the ledger cannot count them cheaply), queued (the messages on the delivery queue
 * and the redrive queue: every delivery not yet settled, retrying ones included, has one; SQS's
 * counts), dead (counted from the ledger's listing index entries, the authority, reading no rows),
 * plus the dead-letter queue's depth, which also holds messages that never had a row (no readable
 * ID, identity conflicts). Shown on stderr: one line rewritten in place on a terminal, a plain line
 * on each change otherwise. Never a payload.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import { safe } from '../lib/terminal';

export interface Counts {
  /** Deliveries since the sandbox started, from its metric sink. */
  readonly delivered: number;
  /** Messages on the delivery queue and the redrive queue (visible, in flight or delayed). */
  readonly queued: number;
  readonly dead: number;
  /** Messages on the dead-letter queue (visible or not). */
  readonly deadLetters: number;
}

export function formatCounts(counts: Counts): string {
  return `delivered ${counts.delivered} · queued ${counts.queued} · dead ${counts.dead} · dead-letter queue ${counts.deadLetters}`;
}

export interface CountSources {
  readonly dynamodb: DynamoDBClient;
  readonly ledgerTable: string;
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly redriveQueueUrl: string;
  readonly deadLetterQueueUrl: string;
  /** Deliveries so far: the metric sink's total (sandbox/metric-sink.ts). */
  readonly delivered: () => number;
}

export async function readCounts(sources: CountSources): Promise<Counts> {
  const ledger = new DynamoDbLedger({
    client: DynamoDBDocumentClient.from(sources.dynamodb, { marshallOptions: { removeUndefinedValues: true } }),
    tableName: sources.ledgerTable,
  });
  const [queued, redriven, dead, deadLetters] = await Promise.all([
    countMessages(sources.sqs, sources.queueUrl),
    countMessages(sources.sqs, sources.redriveQueueUrl),
    ledger.countByState('dead'),
    countMessages(sources.sqs, sources.deadLetterQueueUrl),
  ]);
  return { delivered: sources.delivered(), queued: queued + redriven, dead, deadLetters };
}

/** A queue's messages, visible, in flight or delayed (SQS's approximate counts). */
async function countMessages(sqs: SQSClient, queueUrl: string): Promise<number> {
  const result = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const attributes = result.Attributes ?? {};
  return (
    Number(attributes.ApproximateNumberOfMessages ?? 0) +
    Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0) +
    Number(attributes.ApproximateNumberOfMessagesDelayed ?? 0)
  );
}

/**
 * Log lines and a status line sharing one stream. On a terminal the status line stays at the
 * bottom: a log line clears it, prints, and redraws it. Every line is made inert and kept one line
 * (lib/terminal.ts `safe`): they quote endpoints files, match values, URLs, workers' output.
 */
export class Display {
  readonly #stream: NodeJS.WriteStream;
  readonly #tty: boolean;
  #status = '';

  constructor(stream: NodeJS.WriteStream = process.stderr) {
    this.#stream = stream;
    this.#tty = stream.isTTY === true;
  }

  log(text: string): void {
    const line = safe(text);
    if (this.#tty && this.#status) this.#stream.write(`\r\x1b[2K${line}\n${this.#status}`);
    else this.#stream.write(`${line}\n`);
  }

  status(text: string): void {
    const line = safe(text);
    if (line === this.#status) return;
    this.#status = line;
    if (this.#tty) this.#stream.write(`\r\x1b[2K${line}`);
    else this.#stream.write(`${line}\n`);
  }

  /** Leaves the last status line on screen and moves below it. */
  close(): void {
    if (this.#tty && this.#status) this.#stream.write('\n');
    this.#status = '';
  }
}

/** Refreshes the counters every `intervalMs` until stopped. A failed read is skipped. */
export function watchCounts(sources: CountSources, display: Display, intervalMs = 1000): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = readCounts(sources)
      .then(
        (counts) => {
          if (!stopped) display.status(formatCounts(counts));
        },
        () => {},
      )
      .then(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
