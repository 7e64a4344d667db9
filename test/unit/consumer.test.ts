import { describe, expect, it } from 'vitest';
import type { Context } from 'aws-lambda';
import { createConsumer, type ConsumerDeps } from '../../lib/consumer/consumer';
import type { DeliveryResult } from '../../lib/deliver';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { createLogger, MetricsRecorder } from '../../lib/observability';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import type { DeliveryQueue } from '../../lib/queue/queue';
import { singleEndpoint, staticRouting } from '../../lib/routing';
import { sealedRecord, sqsEvent, TEST_SEAL } from '../helpers/sqs-records';

const NOW_MS = Date.parse('2026-12-02T10:00:00Z');

const ack = (eventId: string): DeliveryResult => ({
  decision: { action: 'ack', eventId, why: 'delivered' },
  attempt: { number: 1, outcome: { kind: 'accepted', status: 200 }, durationMs: 5, sinceStartMs: 10 },
});

/** A consumer of its own: scripted deliveries, an in-memory ledger, every line written kept. */
function consumer(seal: ConsumerDeps['seal'] = () => Promise.resolve(TEST_SEAL)) {
  const lines: Record<string, unknown>[] = [];
  const write = (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>);
  const queue: DeliveryQueue = {
    retryAfter: async () => {},
    deadLetter: async () => {},
    enqueue: async () => {},
    fanOut: async () => {},
  };
  const handler = createConsumer({
    delivery: {
      ledger: new MemoryLedger(),
      now: () => NOW_MS,
      owner: 'test:1',
      policy: DEFAULT_RETRY_POLICY,
      payloadLimitBytes: 65_536,
      leaseMs: 30_000,
      retentionSeconds: 86_400,
    },
    routing: staticRouting([singleEndpoint({ url: 'https://default.example/hooks', policy: DEFAULT_RETRY_POLICY, attemptTimeoutMs: 10_000 })], () => ({
      send: () => Promise.reject(new Error('scripted: no sends')),
    })),
    queue,
    seal,
    logger: createLogger({ service: 'handoff', write }),
    metrics: new MetricsRecorder({ service: 'handoff', write, now: () => NOW_MS }),
    concurrency: 10,
    deliver: async (message) => ack(message.body),
  });
  return { handler, lines };
}

const context = (awsRequestId: string) => ({ awsRequestId }) as Context;

describe('Function: createConsumer', () => {
  it("answers each invocation's batch, its lines carrying the request ID, and publishes its metrics after it", async () => {
    const { handler, lines } = consumer();

    const first = await handler(sqsEvent([sealedRecord('evt_1', { endpoint: 'default' })]), context('req-1'));
    const second = await handler(sqsEvent([sealedRecord('evt_2', { endpoint: 'default' })]), context('req-2'));

    expect(first).toEqual({ batchItemFailures: [] });
    expect(second).toEqual({ batchItemFailures: [] });
    const deliveries = lines.filter((l) => l.message === 'delivery');
    expect(deliveries.map((l) => [l.requestId, l.eventId, l.why])).toEqual([
      ['req-1', 'evt_1', 'delivered'],
      ['req-2', 'evt_2', 'delivered'],
    ]);
    // Each invocation's documents (the service's, the endpoint's) follow its own lines.
    const endpointDocuments = lines.filter((l) => '_aws' in l && l.Endpoint === 'default');
    expect(endpointDocuments.map((d) => d.Delivered)).toEqual([1, 1]);
    expect(lines.indexOf(endpointDocuments[0]!)).toBeLessThan(lines.indexOf(deliveries[1]!));
  });

  it('fails an invocation whose seal key cannot be read, still publishing metrics, and reads it again for the next', async () => {
    let reads = 0;
    const { handler, lines } = consumer(() => (++reads === 1 ? Promise.reject(new Error('seal key unreadable')) : Promise.resolve(TEST_SEAL)));
    const record = sealedRecord('evt_1', { endpoint: 'default' });

    await expect(handler(sqsEvent([record]), context('req-1'))).rejects.toThrow('seal key unreadable');
    const afterFailure = lines.filter((l) => '_aws' in l).length;
    const response = await handler(sqsEvent([record]), context('req-2'));

    expect(afterFailure).toBe(1);
    expect(response).toEqual({ batchItemFailures: [] });
    expect(reads).toBe(2);
  });

  it('keeps no state between consumers: each has its own dependencies', async () => {
    const one = consumer();
    const other = consumer();

    await one.handler(sqsEvent([sealedRecord('evt_1', { endpoint: 'default' })]), context('req-1'));

    expect(one.lines.some((l) => l.eventId === 'evt_1')).toBe(true);
    expect(other.lines).toEqual([]);
  });
});
