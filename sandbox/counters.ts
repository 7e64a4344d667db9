/**
 * The sandbox's live counters: delivered, retrying and dead, read from the ledger (the
 * authority), plus the dead-letter queue's depth, which also holds messages that never had a
 * row (no readable ID, identity conflicts). Shown on stderr: one line rewritten in place on a
 * terminal, a plain line on each change otherwise. Never a payload.
 */
import { QueryCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { LEDGER_SCHEMA } from '../lib/ledger/dynamodb-schema';
import type { DeliveryState } from '../lib/ledger/ledger';

export interface Counts {
  readonly delivered: number;
  readonly retrying: number;
  readonly dead: number;
  /** Messages on the dead-letter queue (visible or not). */
  readonly deadLetters: number;
}

export function formatCounts(counts: Counts): string {
  return `delivered ${counts.delivered} · retrying ${counts.retrying} · dead ${counts.dead} · dead-letter queue ${counts.deadLetters}`;
}

export interface CountSources {
  readonly dynamodb: DynamoDBClient;
  readonly ledgerTable: string;
  readonly sqs: SQSClient;
  readonly deadLetterQueueUrl: string;
}

export async function readCounts(sources: CountSources): Promise<Counts> {
  const [delivered, retrying, dead, deadLetters] = await Promise.all([
    countState(sources, 'delivered'),
    countState(sources, 'pending'),
    countState(sources, 'dead'),
    countDeadLetters(sources),
  ]);
  return { delivered, retrying, dead, deadLetters };
}

async function countState(sources: CountSources, state: DeliveryState): Promise<number> {
  const index = LEDGER_SCHEMA.stateIndex;
  let count = 0;
  let startKey: Record<string, never> | undefined;
  do {
    const page = await sources.dynamodb.send(
      new QueryCommand({
        TableName: sources.ledgerTable,
        IndexName: index.name,
        KeyConditionExpression: '#state = :state',
        ExpressionAttributeNames: { '#state': index.partitionKey },
        ExpressionAttributeValues: { ':state': { S: state } },
        Select: 'COUNT',
        ...(startKey ? { ExclusiveStartKey: startKey } : {}),
      }),
    );
    count += page.Count ?? 0;
    startKey = page.LastEvaluatedKey as typeof startKey;
  } while (startKey);
  return count;
}

async function countDeadLetters(sources: CountSources): Promise<number> {
  const result = await sources.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: sources.deadLetterQueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  const attributes = result.Attributes ?? {};
  return Number(attributes.ApproximateNumberOfMessages ?? 0) + Number(attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
}

/**
 * Log lines and a status line sharing one stream. On a terminal the status line stays at the
 * bottom: a log line clears it, prints, and redraws it.
 */
export class Display {
  readonly #stream: NodeJS.WriteStream;
  readonly #tty: boolean;
  #status = '';

  constructor(stream: NodeJS.WriteStream = process.stderr) {
    this.#stream = stream;
    this.#tty = stream.isTTY === true;
  }

  log(line: string): void {
    if (this.#tty && this.#status) this.#stream.write(`\r\x1b[2K${line}\n${this.#status}`);
    else this.#stream.write(`${line}\n`);
  }

  status(line: string): void {
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
