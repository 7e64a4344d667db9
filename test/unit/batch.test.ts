import { describe, expect, it } from 'vitest';
import { processBatch, type BatchDeps } from '../../lib/batch';
import type { DeliverDeps, DeliveryResult, QueueDecision, QueueMessage } from '../../lib/deliver';
import { createLogger, MetricsRecorder } from '../../lib/observability';
import { clampVisibilitySeconds, QueueUnavailableError, type DeadLetterInfo, type DeliveryQueue } from '../../lib/queue/queue';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { deliverCopiesInOneBatch, T0 } from '../helpers/ledger-contract';
import { sqsRecord } from '../helpers/sqs-records';

const NOW_MS = Date.parse('2026-12-02T10:00:00Z');

/** A queue that records calls and fails the ones a test names. */
class RecordingQueue implements DeliveryQueue {
  readonly visibility: [string, number][] = [];
  readonly deadLettered: [string, DeadLetterInfo][] = [];
  failRetryAfter = false;
  failDeadLetter = false;
  async retryAfter(receiptHandle: string, seconds: number) {
    if (this.failRetryAfter) throw new QueueUnavailableError('retry-after');
    this.visibility.push([receiptHandle, seconds]);
  }
  async deadLetter(body: string, info: DeadLetterInfo) {
    if (this.failDeadLetter) throw new QueueUnavailableError('dead-letter');
    this.deadLettered.push([body, info]);
  }
  async enqueue() {}
}

/** Scripts `deliver`: each body names the result it gets. */
function scripted(results: Record<string, DeliveryResult | Error>) {
  return async (message: QueueMessage): Promise<DeliveryResult> => {
    const result = results[message.body];
    if (result === undefined) throw new Error(`no script for ${message.body}`);
    if (result instanceof Error) throw result;
    return result;
  };
}

function setup(results: Record<string, DeliveryResult | Error>, concurrency = 10) {
  const lines: Record<string, unknown>[] = [];
  const write = (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>);
  const queue = new RecordingQueue();
  const metrics = new MetricsRecorder({ service: 'handoff', write, now: () => NOW_MS });
  const deps: BatchDeps = {
    delivery: { now: () => NOW_MS } as DeliverDeps,
    queue,
    logger: createLogger({ service: 'handoff', write }),
    metrics,
    concurrency,
    deliver: scripted(results),
  };
  return { deps, queue, lines, metrics };
}

const ack = (eventId: string): DeliveryResult => ({
  decision: { action: 'ack', eventId, why: 'delivered' },
  attempt: { number: 1, outcome: { kind: 'accepted', status: 200 }, durationMs: 12, sinceStartMs: 250 },
});
const retry = (eventId: string, afterSeconds: number): DeliveryResult => ({
  decision: { action: 'retry', eventId, afterSeconds, why: 'temporary' },
  attempt: { number: 2, outcome: { kind: 'temporary', status: 503 }, durationMs: 8, sinceStartMs: 900 },
});
const deadLetter = (eventId: string | undefined, reason: 'rejected' | 'invalid'): DeliveryResult => ({
  decision: { action: 'dead-letter', eventId, reason, detail: 'shipmentId must be printable: received "secret-ish"' },
});

describe('Function: processBatch', () => {
  it('reports only the records to retry, after setting their visibility', async () => {
    // Prepare
    const { deps, queue } = setup({ a: ack('evt_a'), b: retry('evt_b', 120), c: deadLetter('evt_c', 'rejected') });
    const records = [sqsRecord('a'), sqsRecord('b'), sqsRecord('c')];

    // Act
    const response = await processBatch(records, deps);

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: records[1]!.messageId }] });
    expect(queue.visibility).toEqual([[records[1]!.receiptHandle, 120]]);
    expect(queue.deadLettered).toEqual([['c', { reason: 'rejected', eventId: 'evt_c' }]]);
  });

  it('dead-letters without an eventId attribute when no ID could be read', async () => {
    const { deps, queue } = setup({ 'not json': deadLetter(undefined, 'invalid') });

    const response = await processBatch([sqsRecord('not json')], deps);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(queue.deadLettered).toEqual([['not json', { reason: 'invalid' }]]);
  });

  it('still reports a retry when its visibility cannot be changed', async () => {
    const { deps, queue } = setup({ b: retry('evt_b', 30) });
    queue.failRetryAfter = true;
    const record = sqsRecord('b');

    const response = await processBatch([record], deps);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
  });

  it('reports a dead-letter whose send failed, so the next receive sends it again', async () => {
    const { deps, queue } = setup({ a: ack('evt_a'), c: deadLetter('evt_c', 'rejected') });
    queue.failDeadLetter = true;
    const records = [sqsRecord('a'), sqsRecord('c')];

    const response = await processBatch(records, deps);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: records[1]!.messageId }] });
  });

  it('reports only the record whose delivery threw', async () => {
    const { deps } = setup({ a: ack('evt_a'), boom: new Error('ledger unreachable'), z: ack('evt_z') });
    const records = [sqsRecord('a'), sqsRecord('boom'), sqsRecord('z')];

    const response = await processBatch(records, deps);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: records[1]!.messageId }] });
  });

  it('throws rather than report a failure with an empty item identifier', async () => {
    const { deps } = setup({ b: retry('evt_b', 30) });

    await expect(processBatch([sqsRecord('b', { messageId: '' })], deps)).rejects.toThrow(/no messageId/);
  });

  it('never has more deliveries in flight than its concurrency', async () => {
    // Prepare: deliveries that finish only when released, so the count in flight is exact.
    const { deps } = setup({}, 2);
    let inFlight = 0;
    let highest = 0;
    const releases: (() => void)[] = [];
    const deps2: BatchDeps = {
      ...deps,
      deliver: async (message) => {
        inFlight += 1;
        highest = Math.max(highest, inFlight);
        await new Promise<void>((resolve) => releases.push(resolve));
        inFlight -= 1;
        return ack(message.body);
      },
    };

    // Act
    let settled = false;
    const done = processBatch(['1', '2', '3', '4', '5'].map((b) => sqsRecord(b)), deps2).finally(() => {
      settled = true;
    });
    while (!settled) {
      await new Promise((resolve) => setImmediate(resolve));
      releases.shift()?.();
    }

    // Assess
    expect(await done).toEqual({ batchItemFailures: [] });
    expect(highest).toBe(2);
  });

  it('logs one line per record with the event ID and never the body or the detail', async () => {
    const { deps, lines } = setup({ '{"secret":"payload"}': deadLetter('evt_c', 'invalid') });

    await processBatch([sqsRecord('{"secret":"payload"}')], deps);

    const logs = lines.filter((l) => l.message === 'delivery');
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: 'info', eventId: 'evt_c', action: 'dead-letter', reason: 'invalid' });
    expect(JSON.stringify(lines)).not.toMatch(/payload|secret-ish/);
  });

  it('publishes counts, attempts, delivery latency and pending age as one EMF document', async () => {
    // Prepare
    const { deps, lines, metrics } = setup({ a: ack('evt_a'), b: retry('evt_b', 30), c: deadLetter('evt_c', 'rejected') });
    const sent = String(NOW_MS - 4_000);
    const records = ['a', 'b', 'c'].map((body) =>
      sqsRecord(body, { attributes: { ...sqsRecord('').attributes, SentTimestamp: sent } }),
    );

    // Act
    await processBatch(records, deps);
    metrics.flush();

    // Assess
    const documents = lines.filter((l) => '_aws' in l);
    expect(documents).toEqual([
      {
        _aws: {
          Timestamp: NOW_MS,
          CloudWatchMetrics: [
            {
              Namespace: 'Handoff',
              Dimensions: [['Service']],
              Metrics: [
                { Name: 'Delivered', Unit: 'Count' },
                { Name: 'Retries', Unit: 'Count' },
                { Name: 'DeadLetters', Unit: 'Count' },
                { Name: 'DeliveryLatency', Unit: 'Milliseconds' },
                { Name: 'PendingAge', Unit: 'Seconds' },
                { Name: 'Attempts', Unit: 'Count' },
                { Name: 'RetriedAttempts', Unit: 'Count' },
              ],
            },
          ],
        },
        Service: 'handoff',
        Delivered: 1,
        Retries: 1,
        DeadLetters: 1,
        DeliveryLatency: 250,
        PendingAge: [4, 4, 4],
        // One attempt by the delivered record (its first) and one by the retried one (its second).
        Attempts: 2,
        RetriedAttempts: 1,
      },
    ]);
  });
});

describe('Class: MetricsRecorder', () => {
  it('splits more than 100 timings over several documents, counts in the first', () => {
    const lines: Record<string, unknown>[] = [];
    const metrics = new MetricsRecorder({ service: 'handoff', write: (l) => void lines.push(JSON.parse(l)) });
    for (let i = 0; i < 150; i += 1) metrics.add('PendingAge', i);
    metrics.add('Delivered', 1);

    metrics.flush();

    expect(lines).toHaveLength(2);
    expect((lines[0]!.PendingAge as number[]).length).toBe(100);
    expect(lines[0]!.Delivered).toBe(1);
    expect(lines[1]!.PendingAge).toEqual(Array.from({ length: 50 }, (_, i) => i + 100));
    expect(lines[1]!.Delivered).toBeUndefined();
  });

  it('publishes zero counts when nothing happened', () => {
    const lines: Record<string, unknown>[] = [];
    const metrics = new MetricsRecorder({ service: 'handoff', write: (l) => void lines.push(JSON.parse(l)) });

    metrics.flush();

    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ Delivered: 0, Retries: 0, DeadLetters: 0 });
    expect(lines[0]).not.toHaveProperty('PendingAge');
  });
});

describe('Function: clampVisibilitySeconds', () => {
  it.each([
    [-5, 0],
    [0, 0],
    [1.2, 2],
    [42_300, 42_300],
    // 12 h counts from the receive: a quarter hour is left for the invocation that sets it.
    [43_200, 42_300],
    [100_000, 42_300],
    [Number.NaN, 0],
    [Number.POSITIVE_INFINITY, 42_300],
  ])('turns %s into %s', (input, expected) => {
    expect(clampVisibilitySeconds(input)).toBe(expected);
  });
});

// Keeps the scripted decisions honest against the real union.
const _typecheck: QueueDecision = ack('x').decision;
void _typecheck;

describe('Function: processBatch with the real deliver', () => {
  it('sends one request for ten copies of one event in one batch, claimed in the same millisecond', async () => {
    // Act
    const result = await deliverCopiesInOneBatch(new MemoryLedger({ now: () => T0 }), 10);

    // Assess: one copy sends; the others find its lease live (and come back later) or the row delivered.
    expect(result.requests).toBe(1);
    expect(result.record?.state).toBe('delivered');
    expect(result.record?.attempts).toBe(1);
  });
});
