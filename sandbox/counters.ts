/**
 * The sandbox's live counters: delivered (from the sandbox's metric sink: a delivered row is in
 * no index, so the ledger cannot count them cheaply), retrying and dead (from the ledger's
 * listing of its pending and dead rows, the authority), plus the dead-letter queue's depth, which
 * also holds messages that never had a row (no readable ID, identity conflicts). Shown on stderr:
 * one line rewritten in place on a terminal, a plain line on each change otherwise. Never a payload.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import type { Ledger } from '../lib/ledger/ledger';

/**
 * Rows listed per state on each refresh (every second) at most: past it the line shows `1000+`.
 * The listing reads whole rows; a sandbox's backlog beyond this is a load test, not a glance.
 */
export const COUNT_CAP = 1_000;
const PAGE_SIZE = 250;

/** A count, and whether the listing stopped at `COUNT_CAP` before the end. */
export interface Count {
  readonly n: number;
  readonly atLeast: boolean;
}

export interface Counts {
  /** Deliveries since the sandbox started, from its metric sink. */
  readonly delivered: number;
  readonly retrying: Count;
  readonly dead: Count;
  /** Messages on the dead-letter queue (visible or not). */
  readonly deadLetters: number;
}

export function formatCounts(counts: Counts): string {
  const count = (c: Count) => `${c.n}${c.atLeast ? '+' : ''}`;
  return `delivered ${counts.delivered} · retrying ${count(counts.retrying)} · dead ${count(counts.dead)} · dead-letter queue ${counts.deadLetters}`;
}

export interface CountSources {
  readonly dynamodb: DynamoDBClient;
  readonly ledgerTable: string;
  readonly sqs: SQSClient;
  readonly deadLetterQueueUrl: string;
  /** Deliveries so far: the metric sink's total (sandbox/metric-sink.ts). */
  readonly delivered: () => number;
}

export async function readCounts(sources: CountSources): Promise<Counts> {
  const ledger = new DynamoDbLedger({
    client: DynamoDBDocumentClient.from(sources.dynamodb, { marshallOptions: { removeUndefinedValues: true } }),
    tableName: sources.ledgerTable,
  });
  const [retrying, dead, deadLetters] = await Promise.all([
    countListed(ledger, 'pending'),
    countListed(ledger, 'dead'),
    countDeadLetters(sources),
  ]);
  return { delivered: sources.delivered(), retrying, dead, deadLetters };
}

/** Counts the ledger's listing of one state, reading only that state's rows, up to `cap`. */
export async function countListed(ledger: Pick<Ledger, 'listByState'>, state: 'pending' | 'dead', cap = COUNT_CAP): Promise<Count> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await ledger.listByState(state, { limit: Math.min(PAGE_SIZE, cap - n), cursor });
    n += page.records.length;
    cursor = page.cursor;
  } while (cursor !== undefined && n < cap);
  return { n, atLeast: cursor !== undefined };
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
