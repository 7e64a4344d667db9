import { describe, expect, it } from 'vitest';
import type { SQSRecord } from 'aws-lambda';
import {
  beyondHorizonSeconds,
  LATE_SLOT_MS,
  processBatch,
  RATE_LIMIT_UNAVAILABLE_SECONDS,
  UNRESOLVED_FIRST_WAIT_SECONDS,
  UNRESOLVED_MAX_WAIT_SECONDS,
  unresolvedWaitSeconds,
  type BatchDeps,
} from '../../lib/batch';
import type { DeliverDeps, DeliveryResult, QueueDecision, QueueMessage } from '../../lib/deliver';
import type { Endpoint, StateChange } from '../../lib/endpoints/endpoint';
import { GONE_REASON, HealthTracker } from '../../lib/endpoints/health';
import { MemoryHealthStore } from '../helpers/health';
import { MemoryRateLimiter, type RateLimiter } from '../../lib/endpoints/rate-limit';
import { EndpointRegistryError, QueueUnavailableError, RateLimitError } from '../../lib/errors';
import { createLogger, MetricsRecorder } from '../../lib/observability';
import {
  clampVisibilitySeconds,
  type DeadLetterInfo,
  type DeliveryQueue,
  type EndpointMessage,
} from '../../lib/queue/queue';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { MemoryShipmentHeads } from '../../lib/ledger/memory-shipment-heads';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { singleEndpoint, staticRouting, type Routes, type Routing, type UnresolvedEndpoint } from '../../lib/routing';
import { deliverCopiesInOneBatch, T0 } from '../helpers/ledger-contract';
import { sealedRecord, sqsRecord, TEST_SEAL } from '../helpers/sqs-records';
import type { ControlValues } from '../../lib/queue/seal';

const NOW_MS = Date.parse('2026-12-02T10:00:00Z');

/** A queue that records calls and fails the ones a test names. */
class RecordingQueue implements DeliveryQueue {
  readonly visibility: [string, number][] = [];
  readonly deadLettered: [string, DeadLetterInfo][] = [];
  readonly fannedOut: EndpointMessage[][] = [];
  failRetryAfter = false;
  failDeadLetter = false;
  failFanOut = false;
  async retryAfter(receiptHandle: string, seconds: number) {
    if (this.failRetryAfter) throw new QueueUnavailableError('retry-after');
    this.visibility.push([receiptHandle, seconds]);
  }
  async deadLetter(body: string, info: DeadLetterInfo) {
    if (this.failDeadLetter) throw new QueueUnavailableError('dead-letter');
    this.deadLettered.push([body, info]);
  }
  readonly enqueued: [string, { endpoint?: string; delaySeconds?: number } | undefined][] = [];
  async enqueue(body: string, options?: { endpoint?: string; delaySeconds?: number }) {
    this.enqueued.push([body, options]);
  }
  async fanOut(messages: readonly EndpointMessage[]) {
    if (this.failFanOut) throw new QueueUnavailableError('fan-out');
    this.fannedOut.push([...messages]);
  }
}

const endpoint = (name: string, fields: Partial<Endpoint> = {}): Endpoint => ({
  ...singleEndpoint({ name, url: `https://${name}.example/hooks`, policy: DEFAULT_RETRY_POLICY, attemptTimeoutMs: 10_000 }),
  ...fields,
});

/** A message for one endpoint (the scripted tests' records: they are not routed, so their bodies need not be events). */
const forEndpoint = (body: string, name = 'default', overrides: Partial<SQSRecord> = {}, control: ControlValues = {}): SQSRecord =>
  sealedRecord(body, { endpoint: name, ...control }, overrides);

/** Scripts `deliver`: each body names the result it gets. */
function scripted(results: Record<string, DeliveryResult | Error>) {
  return async (message: QueueMessage): Promise<DeliveryResult> => {
    const result = results[message.body];
    if (result === undefined) throw new Error(`no script for ${message.body}`);
    if (result instanceof Error) throw result;
    return result;
  };
}

function setup(results: Record<string, DeliveryResult | Error>, concurrency = 10, endpoints = [endpoint('default')]) {
  const lines: Record<string, unknown>[] = [];
  const write = (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>);
  const queue = new RecordingQueue();
  const metrics = new MetricsRecorder({ service: 'handoff', write, now: () => NOW_MS });
  const deps: BatchDeps = {
    delivery: { now: () => NOW_MS, payloadLimitBytes: 65_536 } as BatchDeps['delivery'],
    routing: staticRouting(endpoints, () => ({ send: () => Promise.reject(new Error('scripted: no sends')) })),
    queue,
    seal: TEST_SEAL,
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
    const records = [forEndpoint('a'), forEndpoint('b'), forEndpoint('c')];

    // Act
    const response = await processBatch(records, deps);

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: records[1]!.messageId }] });
    expect(queue.visibility).toEqual([[records[1]!.receiptHandle, 120]]);
    expect(queue.deadLettered).toEqual([['c', { reason: 'rejected', eventId: 'evt_c', endpoint: 'default' }]]);
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
    const record = forEndpoint('b');

    const response = await processBatch([record], deps);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: record.messageId }] });
  });

  it('reports a dead-letter whose send failed, so the next receive sends it again', async () => {
    const { deps, queue } = setup({ a: ack('evt_a'), c: deadLetter('evt_c', 'rejected') });
    queue.failDeadLetter = true;
    const records = [forEndpoint('a'), forEndpoint('c')];

    const response = await processBatch(records, deps);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: records[1]!.messageId }] });
  });

  it('reports only the record whose delivery threw', async () => {
    const { deps } = setup({ a: ack('evt_a'), boom: new Error('ledger unreachable'), z: ack('evt_z') });
    const records = [forEndpoint('a'), forEndpoint('boom'), forEndpoint('z')];

    const response = await processBatch(records, deps);

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: records[1]!.messageId }] });
  });

  it('throws rather than report a failure with an empty item identifier', async () => {
    const { deps } = setup({ b: retry('evt_b', 30) });

    await expect(processBatch([forEndpoint('b', 'default', { messageId: '' })], deps)).rejects.toThrow(/no messageId/);
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
    const done = processBatch(['1', '2', '3', '4', '5'].map((b) => forEndpoint(b)), deps2).finally(() => {
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

    await processBatch([forEndpoint('{"secret":"payload"}')], deps);

    const logs = lines.filter((l) => l.message === 'delivery');
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: 'info', eventId: 'evt_c', action: 'dead-letter', reason: 'invalid' });
    expect(JSON.stringify(lines)).not.toMatch(/payload|secret-ish/);
  });

  it("publishes the service's counts, and the endpoint's counts, attempts, latency and pending age under both dimension sets", async () => {
    // Prepare
    const { deps, lines, metrics } = setup({ a: ack('evt_a'), b: retry('evt_b', 30), c: deadLetter('evt_c', 'rejected') });
    const sent = String(NOW_MS - 4_000);
    const records = ['a', 'b', 'c'].map((body) =>
      forEndpoint(body, 'default', { attributes: { ...sqsRecord('').attributes, SentTimestamp: sent } }),
    );

    // Act
    await processBatch(records, deps);
    metrics.flush();

    // Assess: the service's document counts nothing of its own; the endpoint's carries both dimension sets.
    const documents = lines.filter((l) => '_aws' in l);
    expect(documents).toHaveLength(2);
    expect(documents[0]).toMatchObject({ Service: 'handoff', Delivered: 0, Unrouted: 0, FannedOut: 0 });
    expect(documents[0]).not.toHaveProperty('Endpoint');
    expect(documents[1]).toEqual({
      _aws: {
        Timestamp: NOW_MS,
        CloudWatchMetrics: [
          {
            Namespace: 'Handoff',
            Dimensions: [['Service'], ['Service', 'Endpoint']],
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
      Endpoint: 'default',
      Delivered: 1,
      Retries: 1,
      DeadLetters: 1,
      DeliveryLatency: 250,
      PendingAge: [4, 4, 4],
      // One attempt by the delivered record (its first) and one by the retried one (its second).
      Attempts: 2,
      RetriedAttempts: 1,
    });
  });
});

/** A producer's message: a valid event of this status (and carrier), no endpoint attribute. */
function eventRecord(id: string, status: string, carrier?: string, overrides: Partial<SQSRecord> = {}): SQSRecord {
  const body = JSON.stringify({
    id,
    shipmentId: 'shp_1',
    status,
    occurredAt: '2026-12-02T10:00:00Z',
    ...(carrier ? { data: { carrier } } : {}),
  });
  return sqsRecord(body, overrides);
}

describe('Function: processBatch routing', () => {
  const acme = endpoint('carrier-acme', { eventTypes: ['shipment.delivered', 'shipment.in_transit'], match: { 'data.carrier': ['acme'] } });
  const notify = endpoint('notifications', { eventTypes: ['shipment.delivered'] });
  const all = endpoint('warehouse', { eventTypes: ['*'] });
  /** Scripted deliver that acks, recording which endpoint each delivery was for. */
  function routed(endpoints: Endpoint[]) {
    const delivered: [string, string][] = [];
    const { deps, queue, lines, metrics } = setup({}, 10, endpoints);
    const deps2: BatchDeps = {
      ...deps,
      deliver: async (message: QueueMessage, d: DeliverDeps) => {
        const id = (JSON.parse(message.body) as { id: string }).id;
        delivered.push([id, d.endpoint!]);
        return ack(id);
      },
    };
    return { deps: deps2, queue, lines, metrics, delivered };
  }

  describe('the ordered intake (FIFO records)', () => {
    const FIFO = 'arn:aws:sqs:us-east-1:000000000000:handoff-ordered.fifo';
    const fifo = (id: string, group: string) => eventRecord(id, 'in_transit', 'acme', { eventSourceARN: FIFO, attributes: { ...sqsRecord('x').attributes, MessageGroupId: group } as SQSRecord['attributes'] });

    it('fans a FIFO record out even to one endpoint, one record at a time in group order, never delivering inline', async () => {
      const { deps, queue, delivered } = routed([acme, notify]);
      const records = [fifo('evt_a1', 'A'), fifo('evt_b1', 'B'), fifo('evt_a2', 'A')];

      const response = await processBatch(records, deps);

      expect(response.batchItemFailures).toEqual([]);
      expect(delivered).toEqual([]);
      const sends = queue.fannedOut.map((batch) => batch.map((m) => [JSON.parse(m.body).id, m.endpoint]));
      expect(sends).toHaveLength(3);
      const ids = sends.map((b) => b[0]![0]);
      expect(ids.indexOf('evt_a1')).toBeLessThan(ids.indexOf('evt_a2'));
      expect(sends.flat().every(([, e]) => e === 'carrier-acme')).toBe(true);
    });

    it('numbers the deliveries of an ordered endpoint as it fans out, each message saying its number and whether its turn had come', async () => {
      const ordered = endpoint('carrier-acme', { ...acme, ordering: 'per-shipment' });
      const { deps, queue } = routed([ordered, notify]);
      const heads = new MemoryShipmentHeads();
      const records = [fifo('evt_a1', 'A'), fifo('evt_a2', 'A')].map((record) => ({ ...record, body: record.body.replace('in_transit', 'delivered') }));

      const response = await processBatch(records, { ...deps, heads });

      expect(response.batchItemFailures).toEqual([]);
      const sent = queue.fannedOut.flat().map((m) => [(JSON.parse(m.body) as { id: string }).id, m.endpoint, m.admission]);
      // The first is in its turn; the second waits for it. The unordered endpoint's messages carry nothing.
      expect(sent).toEqual([
        ['evt_a1', 'carrier-acme', { sequence: 1, inTurn: true }],
        ['evt_a1', 'notifications', undefined],
        ['evt_a2', 'carrier-acme', { sequence: 2, inTurn: false }],
        ['evt_a2', 'notifications', undefined],
      ]);
    });

    it("fans an event out to the other endpoints when its shipment is out of numbers at an ordered one", async () => {
      const ordered = endpoint('carrier-acme', { ...acme, ordering: 'per-shipment' });
      const { deps, queue, lines } = routed([ordered, notify]);
      const heads = new MemoryShipmentHeads({ maxSequence: 1 });
      await heads.assign('shp_1', 'carrier-acme', 'evt_first');
      const record = { ...fifo('evt_a9', 'A'), body: fifo('evt_a9', 'A').body.replace('in_transit', 'delivered') };

      const response = await processBatch([record], { ...deps, heads });

      expect(response.batchItemFailures).toEqual([]);
      // Both endpoints' messages go; the ordered one's carries no number (its delivery meets the limit).
      expect(queue.fannedOut.flat().map((m) => [m.endpoint, m.admission])).toEqual([
        ['carrier-acme', undefined],
        ['notifications', undefined],
      ]);
      expect(lines).toContainEqual(expect.objectContaining({ message: 'sequence limit', eventId: 'evt_a9', endpoint: 'carrier-acme', max: 1 }));
    });

    it("reports a group's later records after its first failure, not touching them; other groups go on", async () => {
      const { deps } = routed([acme]);
      let calls = 0;
      const queue = new (class extends RecordingQueue {
        override async fanOut(messages: readonly EndpointMessage[]) {
          calls += 1;
          if ((JSON.parse(messages[0]!.body) as { id: string }).id === 'evt_a1') throw new QueueUnavailableError('fan-out');
          return super.fanOut(messages);
        }
      })();
      const records = [fifo('evt_a1', 'A'), fifo('evt_b1', 'B'), fifo('evt_a2', 'A')];

      const response = await processBatch(records, { ...deps, queue });

      expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[0]!.messageId }, { itemIdentifier: records[2]!.messageId }]);
      expect(queue.fannedOut.map((b) => (JSON.parse(b[0]!.body) as { id: string }).id)).toEqual(['evt_b1']);
      expect(calls).toBe(2);
    });
  });

  it('delivers an event that one endpoint subscribes to on its own message, with that endpoint', async () => {
    const { deps, queue, delivered } = routed([acme, notify]);

    const response = await processBatch([eventRecord('evt_1', 'in_transit', 'acme')], deps);

    expect(response.batchItemFailures).toEqual([]);
    expect(delivered).toEqual([['evt_1', 'carrier-acme']]);
    expect(queue.fannedOut).toEqual([]);
  });

  it("fans an event out to every subscribed endpoint in one batched send for the batch's records, and acknowledges them", async () => {
    const { deps, queue, delivered, metrics, lines } = routed([acme, notify, all]);
    const records = [eventRecord('evt_1', 'delivered', 'acme'), eventRecord('evt_2', 'delivered', 'zephyr')];

    const response = await processBatch(records, deps);
    metrics.flush();

    expect(response.batchItemFailures).toEqual([]);
    expect(delivered).toEqual([]);
    expect(queue.fannedOut).toHaveLength(1);
    expect(queue.fannedOut[0]!.map((m) => [JSON.parse(m.body).id, m.endpoint])).toEqual([
      ['evt_1', 'carrier-acme'],
      ['evt_1', 'notifications'],
      ['evt_1', 'warehouse'],
      ['evt_2', 'notifications'],
      ['evt_2', 'warehouse'],
    ]);
    // The body travels unchanged.
    expect(queue.fannedOut[0]![0]!.body).toBe(records[0]!.body);
    expect(lines.find((l) => '_aws' in l)).toMatchObject({ FannedOut: 5 });
    expect(lines.filter((l) => l.why === 'fanned-out').map((l) => l.endpoints)).toEqual([
      ['carrier-acme', 'notifications', 'warehouse'],
      ['notifications', 'warehouse'],
    ]);
  });

  it('returns the fanned-out messages when the send fails, and delivers the others of the batch', async () => {
    const { deps, queue, delivered } = routed([acme, notify]);
    queue.failFanOut = true;
    const records = [eventRecord('evt_1', 'delivered', 'acme'), eventRecord('evt_2', 'in_transit', 'acme')];

    const response = await processBatch(records, deps);

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[0]!.messageId }]);
    expect(delivered).toEqual([['evt_2', 'carrier-acme']]);
  });

  it('acknowledges and counts an event no endpoint subscribes to, and a message for a removed endpoint', async () => {
    const { deps, delivered, metrics, lines } = routed([acme]);
    const records = [eventRecord('evt_1', 'packed'), forEndpoint(eventRecord('evt_2', 'delivered').body, 'gone')];

    const response = await processBatch(records, deps);
    metrics.flush();

    expect(response.batchItemFailures).toEqual([]);
    expect(delivered).toEqual([]);
    expect(lines.find((l) => '_aws' in l)).toMatchObject({ Unrouted: 2 });
    expect(lines.filter((l) => l.message === 'delivery').map((l) => [l.eventId, l.endpoint, l.why])).toEqual([
      ['evt_1', undefined, 'unrouted'],
      ['evt_2', 'gone', 'endpoint-removed'],
    ]);
  });

  it("routes to a disabled endpoint too: its delivery is parked when its own message comes, not sent", async () => {
    const { deps, delivered, queue } = routed([acme, { ...notify, state: 'disabled' }]);

    await processBatch([eventRecord('evt_1', 'delivered', 'acme')], deps);

    expect(queue.fannedOut[0]!.map((m) => m.endpoint)).toEqual(['carrier-acme', 'notifications']);
    expect(delivered).toEqual([]);
  });

  it('parks a delivery to a disabled endpoint: no attempt, the row pending and parked, the message acknowledged, counted Parked', async () => {
    const ledger = new MemoryLedger({ now: () => NOW_MS });
    const { deps, delivered, metrics, lines } = routed([{ ...notify, state: 'disabled' }]);
    const withLedger: BatchDeps = { ...deps, delivery: { ...deps.delivery, ledger } };

    const response = await processBatch([eventRecord('evt_1', 'delivered', 'acme')], withLedger);
    metrics.flush();

    expect(response.batchItemFailures).toEqual([]);
    expect(delivered).toEqual([]);
    expect(await ledger.get({ eventId: 'evt_1', endpoint: 'notifications' })).toMatchObject({ state: 'pending', attempts: 0, parkedAt: NOW_MS });
    expect(lines.find((l) => l.Endpoint === 'notifications')).toMatchObject({ Parked: 1 });
  });

  it("routes a message received before to the endpoints it has rows for too, so a registry change strands nothing", async () => {
    // Prepare: evt_1 has a row for notifications, which no longer subscribes to in_transit.
    const ledger = new MemoryLedger({ now: () => NOW_MS });
    await ledger.admitInvalid({ eventId: 'evt_1', endpoint: 'notifications' }, 'a row', DEFAULT_RETRY_POLICY, NOW_MS, 86_400);
    const { deps, queue } = routed([acme, notify]);
    const withLedger: BatchDeps = { ...deps, delivery: { ...deps.delivery, ledger } };
    const again = eventRecord('evt_1', 'in_transit', 'acme', { attributes: { ...sqsRecord('').attributes, ApproximateReceiveCount: '2' } });

    await processBatch([again], withLedger);

    expect(queue.fannedOut[0]!.map((m) => m.endpoint)).toEqual(['carrier-acme', 'notifications']);
  });

  it("keeps a dead delivery's row but sends no dead-letter message for an endpoint whose recovery is drop", async () => {
    const { deps, queue, lines, metrics } = setup({ c: deadLetter('evt_c', 'rejected') }, 10, [endpoint('low-value', { recovery: 'drop' })]);

    const response = await processBatch([forEndpoint('c', 'low-value')], deps);
    metrics.flush();

    expect(response.batchItemFailures).toEqual([]);
    expect(queue.deadLettered).toEqual([]);
    expect(lines.find((l) => l.Endpoint === 'low-value')).toMatchObject({ Dropped: 1 });
  });

  it("puts a retry near the queue's redrive back as a fresh message for its endpoint, delayed by the wait, and acknowledges it", async () => {
    const { deps, queue } = setup({ b: retry('evt_b', 120) }, 10, [endpoint('carrier-acme')]);
    const near = forEndpoint('b', 'carrier-acme', { attributes: { ...sqsRecord('').attributes, ApproximateReceiveCount: '14' } });

    const response = await processBatch([near], { ...deps, receiveLimit: 17 });

    expect(response.batchItemFailures).toEqual([]);
    expect(queue.enqueued).toEqual([['b', { endpoint: 'carrier-acme', delaySeconds: 120 }]]);
    expect(queue.visibility).toEqual([]);
  });

  it('dead-letters with the endpoint attribute', async () => {
    const { deps, queue } = setup({ c: deadLetter('evt_c', 'rejected') }, 10, [endpoint('carrier-acme')]);

    await processBatch([forEndpoint('c', 'carrier-acme')], deps);

    expect(queue.deadLettered).toEqual([['c', { reason: 'rejected', eventId: 'evt_c', endpoint: 'carrier-acme' }]]);
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

describe('Function: processBatch endpoint health', () => {
  const attempt = (outcome: NonNullable<DeliveryResult['attempt']>['outcome']) => ({ number: 1, outcome, durationMs: 5, sinceStartMs: 5 });
  /** Scripted deliver by event ID (the records are producer-free endpoint messages holding an event). */
  function withHealth(script: Record<string, DeliveryResult>, endpoints: Endpoint[], concurrency = 1) {
    const store = new MemoryHealthStore();
    const clock = { now: NOW_MS };
    const health = new HealthTracker({ store, now: () => clock.now });
    const delivered: string[] = [];
    const { deps, queue, lines, metrics } = setup({}, concurrency, endpoints);
    const deps2: BatchDeps = {
      ...deps,
      health,
      deliver: async (message: QueueMessage, d: DeliverDeps) => {
        const id = (JSON.parse(message.body) as { id: string }).id;
        delivered.push(`${id} ${d.endpoint}`);
        const result = script[id];
        if (result === undefined) throw new Error(`no script for ${id}`);
        return result;
      },
    };
    return { deps: deps2, store, queue, lines, metrics, delivered, clock };
  }
  const to = (id: string, name: string) => forEndpoint(eventRecord(id, 'delivered').body, name);
  const acme = endpoint('acme');
  const zephyr = endpoint('zephyr');

  it("holds an endpoint's other deliveries after its 429, without a delivery, and delivers another endpoint's", async () => {
    const { deps, store, queue, lines, metrics, delivered } = withHealth(
      {
        evt_1: { decision: { action: 'retry', eventId: 'evt_1', afterSeconds: 30, why: 'temporary' }, attempt: attempt({ kind: 'temporary', status: 429, retryAfterSeconds: 3 }) },
        evt_3: ack('evt_3'),
      },
      [acme, zephyr],
    );
    const records = [to('evt_1', 'acme'), to('evt_2', 'acme'), to('evt_3', 'zephyr')];

    const response = await processBatch(records, deps);
    const again = await processBatch([to('evt_4', 'acme')], deps);
    metrics.flush();

    expect(delivered).toEqual(['evt_1 acme', 'evt_3 zephyr']);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[0]!.messageId }, { itemIdentifier: records[1]!.messageId }]);
    expect(again.batchItemFailures).toHaveLength(1);
    // The 429's own delivery follows its schedule; the held ones come back when the pause ends.
    expect(queue.visibility.map(([, seconds]) => seconds)).toEqual([30, 3, 3]);
    expect(store.writes).toEqual(['pause acme', 'failure acme']);
    expect(lines.filter((l) => l.why === 'paused').map((l) => [l.eventId, l.endpoint, l.action, l.afterSeconds])).toEqual([
      ['evt_2', 'acme', 'retry', 3],
      ['evt_4', 'acme', 'retry', 3],
    ]);
    expect(lines.find((l) => l.Endpoint === 'acme' && '_aws' in l)).toMatchObject({ Paused: 2, Attempts: 1 });
  });

  it('holds a producer message delivered inline to a paused endpoint', async () => {
    const { deps, delivered, lines } = withHealth({}, [acme]);
    await deps.health!.afterAttempt(acme, { kind: 'temporary', status: 503, retryAfterSeconds: 60 }, createLogger({ service: 'handoff', write: () => {} }));

    const response = await processBatch([eventRecord('evt_9', 'delivered')], deps);

    expect(response.batchItemFailures).toHaveLength(1);
    expect(delivered).toEqual([]);
    expect(lines.find((l) => l.why === 'paused')).toMatchObject({ eventId: 'evt_9', endpoint: 'acme', afterSeconds: 60 });
  });

  it("holds a producer message received again for its paused endpoint without reading the ledger", async () => {
    const { deps, delivered, lines } = withHealth({}, [acme]);
    await deps.health!.afterAttempt(acme, { kind: 'temporary', status: 429, retryAfterSeconds: 60 }, createLogger({ service: 'handoff', write: () => {} }));
    const ledger = { deliveriesOf: () => Promise.reject(new Error('the ledger was read')) } as unknown as BatchDeps['delivery']['ledger'];
    const again = eventRecord('evt_9', 'delivered', undefined, { attributes: { ...sqsRecord('').attributes, ApproximateReceiveCount: '3' } });

    const response = await processBatch([again], { ...deps, delivery: { ...deps.delivery, ledger } });

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: again.messageId }]);
    expect(delivered).toEqual([]);
    expect(lines.filter((l) => l.message === 'delivery' || l.message === 'delivery failed').map((l) => [l.eventId, l.why])).toEqual([['evt_9', 'paused']]);
  });

  it('puts a held message near its redrive back as a fresh message for its endpoint, delayed by the pause, and acknowledges it', async () => {
    const { deps, queue, lines } = withHealth({}, [acme]);
    await deps.health!.afterAttempt(acme, { kind: 'temporary', status: 429, retryAfterSeconds: 120 }, createLogger({ service: 'handoff', write: () => {} }));
    const near = forEndpoint(eventRecord('evt_5', 'delivered').body, 'acme', { attributes: { ...sqsRecord('').attributes, ApproximateReceiveCount: '14' } });
    const far = forEndpoint(eventRecord('evt_6', 'delivered').body, 'acme', { attributes: { ...sqsRecord('').attributes, ApproximateReceiveCount: '13' } });

    const response = await processBatch([near, far], { ...deps, receiveLimit: 17 });

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: far.messageId }]);
    expect(queue.enqueued).toEqual([[near.body, { endpoint: 'acme', delaySeconds: 120 }]]);
    expect(lines.filter((l) => l.message === 'delivery').map((l) => [l.eventId, l.why])).toEqual([
      ['evt_5', 'paused-requeued'],
      ['evt_6', 'paused'],
    ]);
  });

  it('disables an endpoint that answers 410 and dead-letters the delivery as rejected', async () => {
    const { deps, store, queue } = withHealth(
      {
        evt_1: {
          decision: { action: 'dead-letter', eventId: 'evt_1', reason: 'rejected', detail: 'HTTP 410' },
          attempt: attempt({ kind: 'rejected', status: 410, responseStart: '' }),
        },
      },
      [acme],
    );

    await processBatch([to('evt_1', 'acme')], deps);

    expect(store.state.get('acme')?.change).toEqual({ by: 'handoff', reason: GONE_REASON, at: NOW_MS });
    expect(queue.deadLettered.map(([, info]) => info)).toEqual([{ reason: 'rejected', eventId: 'evt_1', endpoint: 'acme' }]);
  });

  it('disables an endpoint at its threshold of failures and time, with an error line naming it and why', async () => {
    const strict = endpoint('acme', { disableAfterFailures: 3, disableAfterSeconds: 60 });
    const failed = (id: string): DeliveryResult => ({
      decision: { action: 'retry', eventId: id, afterSeconds: 30, why: 'temporary' },
      attempt: attempt({ kind: 'temporary', status: 503 }),
    });
    const { deps, store, lines, clock } = withHealth({ evt_1: failed('evt_1'), evt_2: failed('evt_2'), evt_3: failed('evt_3') }, [strict]);
    store.health.set('acme', { failures: 0, failingSince: NOW_MS - 59_000 });

    await processBatch([to('evt_1', 'acme'), to('evt_2', 'acme')], deps);
    expect(store.state.size).toBe(0);
    // A second on: the failures counted since the first write are written with the next, which disables it.
    clock.now = NOW_MS + 1_000;
    await processBatch([to('evt_3', 'acme')], deps);

    expect(store.state.get('acme')?.change?.reason).toBe('no accepted request for 60 s and 3 failed attempts (autoDisable: 60 s and 3 attempts)');
    expect(lines.filter((l) => l.message === 'endpoint disabled')).toEqual([
      expect.objectContaining({ level: 'error', endpoint: 'acme', failures: 3, reason: expect.stringMatching(/^no accepted request/) }),
    ]);
  });

  it("writes nothing to the registry for a healthy endpoint's deliveries", async () => {
    const { deps, store } = withHealth({ evt_1: ack('evt_1'), evt_2: ack('evt_2') }, [acme], 10);

    const response = await processBatch([to('evt_1', 'acme'), to('evt_2', 'acme')], deps);

    expect(response.batchItemFailures).toEqual([]);
    expect(store.writes).toEqual([]);
  });
});

describe('Function: processBatch rate limit', () => {
  /** A limiter on the in-memory schedule that records each reservation asked of it. */
  class RecordingLimiter implements RateLimiter {
    readonly calls: [string, number, number][] = [];
    readonly schedule: MemoryRateLimiter;
    failWith?: Error;
    constructor(horizonMs?: number) {
      this.schedule = new MemoryRateLimiter(horizonMs === undefined ? {} : { horizonMs });
    }
    async reserve(endpoint: string, count: number, perSecond: number, nowMs: number) {
      this.calls.push([endpoint, count, perSecond]);
      if (this.failWith) throw this.failWith;
      return this.schedule.reserve(endpoint, count, perSecond, nowMs);
    }
  }

  function withLimit(endpoints: Endpoint[], options: { horizonMs?: number; results?: Record<string, DeliveryResult> } = {}) {
    const limiter = new RecordingLimiter(options.horizonMs);
    const sleeps: number[] = [];
    const delivered: string[] = [];
    const { deps, queue, lines, metrics } = setup({}, 10, endpoints);
    const deps2: BatchDeps = {
      ...deps,
      rateLimiter: limiter,
      sleep: async (ms) => void sleeps.push(ms),
      deliver: async (message: QueueMessage, d: DeliverDeps) => {
        const id = (JSON.parse(message.body) as { id: string }).id;
        delivered.push(`${id} ${d.endpoint}`);
        return options.results?.[id] ?? ack(id);
      },
    };
    return { deps: deps2, limiter, queue, lines, metrics, sleeps, delivered };
  }
  const to = (id: string, name: string, carried?: { overrides: Partial<SQSRecord>; control: ControlValues }) =>
    forEndpoint(eventRecord(id, 'delivered').body, name, carried?.overrides, carried?.control);
  const carrying = (slot: number, receives = '1', perSecond = 5) => ({
    overrides: { attributes: { ...sqsRecord('').attributes, ApproximateReceiveCount: receives } },
    control: { notBefore: String(slot), notBeforeRate: String(perSecond) },
  });
  const acme = endpoint('acme', { rateLimitPerSecond: 5 });
  const zephyr = endpoint('zephyr');
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `evt_${i + 1}`);
  const rateLines = (lines: Record<string, unknown>[]) =>
    lines.filter((l) => l.message === 'delivery' && String(l.why).startsWith('rate-limit')).map((l) => [l.eventId, l.action, l.why]);

  it('reserves once per batch for an endpoint, waits here for slots within a second, and puts the rest back carrying theirs', async () => {
    // Prepare: 10 deliveries at 5 per second: slots at +0, +0.2 s … +1.8 s.
    const { deps, limiter, queue, lines, metrics, sleeps, delivered } = withLimit([acme]);
    const records = ids(10).map((id) => to(id, 'acme'));

    // Act
    const response = await processBatch(records, deps);
    metrics.flush();

    // Assess: one reservation; six sent (five after waiting), four put back with one send, none reported.
    expect(limiter.calls).toEqual([['acme', 10, 5]]);
    expect(response.batchItemFailures).toEqual([]);
    expect(delivered).toEqual(ids(6).map((id) => `${id} acme`));
    expect(sleeps.sort((a, b) => a - b)).toEqual([200, 400, 600, 800, 1000]);
    expect(queue.fannedOut).toEqual([
      [1200, 1400, 1600, 1800].map((offset, i) => ({
        body: records[6 + i]!.body,
        endpoint: 'acme',
        delaySeconds: 1,
        notBefore: NOW_MS + offset,
        reservedRate: 5,
      })),
    ]);
    expect(rateLines(lines)).toEqual(['evt_7', 'evt_8', 'evt_9', 'evt_10'].map((id) => [id, 'ack', 'rate-limited']));
    expect(lines.find((l) => l.Endpoint === 'acme' && '_aws' in l)).toMatchObject({ RateLimited: 4, Delivered: 6 });
    expect(JSON.stringify(lines)).not.toContain('shp_1');
  });

  it('delivers a message carrying its reserved slot after waiting for it, without reserving again', async () => {
    const { deps, limiter, sleeps, delivered } = withLimit([acme]);

    const response = await processBatch([to('evt_1', 'acme', carrying(NOW_MS + 300))], deps);

    expect(response.batchItemFailures).toEqual([]);
    expect(limiter.calls).toEqual([]);
    expect(sleeps).toEqual([300]);
    expect(delivered).toEqual(['evt_1 acme']);
  });

  it('reserves again for a message received more than a second after its slot: sent late with others, it would exceed the limit', async () => {
    const { deps, limiter, delivered } = withLimit([acme]);

    await processBatch([to('evt_1', 'acme', carrying(NOW_MS - LATE_SLOT_MS - 1)), to('evt_2', 'acme', carrying(NOW_MS - LATE_SLOT_MS))], deps);

    expect(limiter.calls).toEqual([['acme', 1, 5]]);
    expect(delivered.sort()).toEqual(['evt_1 acme', 'evt_2 acme']);
  });

  it('reserves again for a message whose slot was spaced for a higher limit than the endpoint has now', async () => {
    const { deps, limiter, sleeps } = withLimit([acme]);

    await processBatch([to('evt_1', 'acme', carrying(NOW_MS + 300, '1', 50)), to('evt_2', 'acme', carrying(NOW_MS + 300, '1', 2))], deps);

    // The one reserved at 50/s reserves anew at 5/s; the one reserved at 2/s keeps its slot.
    expect(limiter.calls).toEqual([['acme', 1, 5]]);
    expect(sleeps).toEqual([300]);
  });

  it('reserves again for a message received a second time: its slot was had', async () => {
    const { deps, limiter, delivered } = withLimit([acme]);

    await processBatch([to('evt_1', 'acme', carrying(NOW_MS + 300, '2'))], deps);

    expect(limiter.calls).toEqual([['acme', 1, 5]]);
    expect(delivered).toEqual(['evt_1 acme']);
  });

  it('holds the deliveries beyond the horizon without reserving them, each until its turn would come within it', async () => {
    // 1 per second, 2 s horizon: slots +0 and +1 s are waited for, +2 s is put back, the last two held.
    const slow = endpoint('acme', { rateLimitPerSecond: 1 });
    const { deps, queue, lines, metrics, delivered } = withLimit([slow], { horizonMs: 2_000 });
    const records = ids(5).map((id) => to(id, 'acme'));

    const response = await processBatch(records, deps);
    metrics.flush();

    expect(delivered).toEqual(['evt_1 acme', 'evt_2 acme']);
    expect(queue.fannedOut).toEqual([[{ body: records[2]!.body, endpoint: 'acme', delaySeconds: 2, notBefore: NOW_MS + 2_000, reservedRate: 1 }]]);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[3]!.messageId }, { itemIdentifier: records[4]!.messageId }]);
    // Until their turns (+1 s, +2 s) come within the horizon, spread as beyondHorizonSeconds says.
    expect(queue.visibility).toEqual([
      [records[3]!.receiptHandle, beyondHorizonSeconds(1_000, records[3]!)],
      [records[4]!.receiptHandle, beyondHorizonSeconds(2_000, records[4]!)],
    ]);
    expect(rateLines(lines)).toEqual([
      ['evt_3', 'ack', 'rate-limited'],
      ['evt_4', 'retry', 'rate-limited'],
      ['evt_5', 'retry', 'rate-limited'],
    ]);
    expect(lines.find((l) => l.Endpoint === 'acme' && '_aws' in l)).toMatchObject({ RateLimited: 3, Delivered: 2 });
  });

  it('spreads the holds beyond the horizon over up to a horizon, wider for a message held before, the same for the same message', () => {
    const records = Array.from({ length: 200 }, (_, i) => sqsRecord(`m${i}`));
    const first = records.map((r) => beyondHorizonSeconds(5_000, r, 60_000));
    const again = records.map((r) => beyondHorizonSeconds(5_000, { ...r, attributes: { ...r.attributes, ApproximateReceiveCount: '3' } }, 60_000));

    expect(Math.min(...first)).toBeGreaterThanOrEqual(5);
    expect(Math.max(...first)).toBeLessThanOrEqual(65);
    // Spread, not bunched: the 200 holds take many different values, later ones over four horizons.
    expect(new Set(first).size).toBeGreaterThan(40);
    expect(Math.max(...again)).toBeGreaterThan(65);
    expect(Math.max(...again)).toBeLessThanOrEqual(245);
    expect(records.map((r) => beyondHorizonSeconds(5_000, r, 60_000))).toEqual(first);
  });

  it("fails closed: holds the endpoint's deliveries when its schedule cannot be reached, and delivers another endpoint's", async () => {
    const { deps, limiter, queue, lines, delivered } = withLimit([acme, zephyr]);
    limiter.failWith = new RateLimitError('rate-limit-unavailable', 'acme', 'rate limit: endpoint registry t failed to reserve slots for endpoint "acme": TimeoutError');
    const records = [to('evt_1', 'acme'), to('evt_2', 'zephyr')];

    const response = await processBatch(records, deps);

    expect(delivered).toEqual(['evt_2 zephyr']);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[0]!.messageId }]);
    expect(queue.visibility).toEqual([[records[0]!.receiptHandle, RATE_LIMIT_UNAVAILABLE_SECONDS]]);
    expect(lines.find((l) => l.message === 'rate limit unavailable')).toMatchObject({ level: 'warn', endpoint: 'acme', errorCode: 'rate-limit-unavailable' });
    expect(rateLines(lines)).toEqual([['evt_1', 'retry', 'rate-limit-unavailable']]);
  });

  it('reserves nothing for a paused endpoint, nor waits for a slot carried to it: its deliveries are held by the pause', async () => {
    const { deps, limiter, delivered, lines, sleeps } = withLimit([acme]);
    const health = new HealthTracker({ store: new MemoryHealthStore(), now: () => NOW_MS });
    await health.afterAttempt(acme, { kind: 'temporary', status: 429, retryAfterSeconds: 30 }, createLogger({ service: 'handoff', write: () => {} }));

    const response = await processBatch([to('evt_1', 'acme'), to('evt_2', 'acme', carrying(NOW_MS + 500))], { ...deps, health });

    // Neither reserved nor waited for: a pause holds both, a carried slot is simply lost.
    expect(limiter.calls).toEqual([]);
    expect(sleeps).toEqual([]);
    expect(delivered).toEqual([]);
    expect(response.batchItemFailures).toHaveLength(2);
    expect(lines.filter((l) => l.message === 'delivery').map((l) => [l.eventId, l.why])).toEqual([
      ['evt_1', 'paused'],
      ['evt_2', 'paused'],
    ]);
  });

  it('holds a delivery whose put-back could not be sent until its slot, when it reserves again', async () => {
    const { deps, queue } = withLimit([acme]);
    queue.failFanOut = true;
    const records = ids(7).map((id) => to(id, 'acme'));

    const response = await processBatch(records, deps);

    // The 7th slot is 1.2 s away: not waited for here, and its put-back failed.
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: records[6]!.messageId }]);
    expect(queue.visibility).toEqual([[records[6]!.receiptHandle, 2]]);
  });

  it('puts a producer message delivered inline back as its endpoint\'s own message', async () => {
    const { deps, queue } = withLimit([acme]);
    const records = ids(7).map((id) => eventRecord(id, 'delivered'));

    await processBatch(records, deps);

    expect(queue.fannedOut).toEqual([[{ body: records[6]!.body, endpoint: 'acme', delaySeconds: 1, notBefore: NOW_MS + 1200, reservedRate: 5 }]]);
  });
});

describe('Function: processBatch, an endpoint that cannot be resolved (docs/contract.md §11)', () => {
  const billing = endpoint('billing', { eventTypes: ['shipment.delivered'] });
  const acme = endpoint('carrier-acme', { eventTypes: ['*'], match: { 'data.carrier': ['acme'] } });
  /** The registry holds `crm` (delivered events only), whose secret cannot be read now. */
  const crm: UnresolvedEndpoint = { name: 'crm', subscription: { eventTypes: ['shipment.delivered'], match: {} } };

  /** Routing over `endpoints`, with `unresolved` held by the registry but not resolvable; deliveries scripted to ack. */
  function unresolvedRouting(unresolved: UnresolvedEndpoint[], options: { rows?: string[]; registryDown?: boolean } = {}) {
    const { deps, queue, lines } = setup({}, 10, [billing, acme]);
    const delivered: [string, string][] = [];
    const routes: Routes = { endpoints: new Map([billing, acme].map((e) => [e.name, e])), unresolved: new Map(unresolved.map((u) => [u.name, u])) };
    const routing: Routing = {
      routes: () => (options.registryDown ? Promise.reject(new EndpointRegistryError('registry-unavailable', 'endpoint registry t failed to list endpoints: TimeoutError')) : Promise.resolve(routes)),
      sender: () => Promise.resolve({ send: () => Promise.reject(new Error('scripted: no sends')) }),
    };
    const ledger = { deliveriesOf: () => Promise.resolve((options.rows ?? []).map((name) => ({ endpoint: name }))) } as unknown as DeliverDeps['ledger'];
    const batchDeps: BatchDeps = {
      ...deps,
      delivery: { ...deps.delivery, ledger },
      routing,
      receiveLimit: 17,
      deliver: async (message, d) => {
        const id = (JSON.parse(message.body) as { id: string }).id;
        delivered.push([id, d.endpoint!]);
        return ack(id);
      },
    };
    return { deps: batchDeps, queue, lines, delivered };
  }
  const receivedTimes = (n: number): Pick<SQSRecord, 'attributes'> => ({ attributes: { ...sqsRecord('x').attributes, ApproximateReceiveCount: String(n) } });

  it("holds an endpoint message for it on the queue for 5 s, deciding nothing, logged with its event and endpoint and counted", async () => {
    const { deps, queue, lines, delivered } = unresolvedRouting([crm]);
    const record = sealedRecord(eventRecord('evt_1', 'delivered').body, { endpoint: 'crm' });

    const response = await processBatch([record], deps);
    deps.metrics.flush();

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(queue.visibility).toEqual([[record.receiptHandle, UNRESOLVED_FIRST_WAIT_SECONDS]]);
    expect(delivered).toEqual([]);
    expect(queue.deadLettered).toEqual([]);
    expect(lines.find((l) => l.message === 'delivery')).toMatchObject({ level: 'warn', eventId: 'evt_1', endpoints: ['crm'], action: 'retry', why: 'endpoint-unresolved', afterSeconds: 5 });
    expect(lines.find((l) => l.Endpoint === 'crm' && '_aws' in l)).toMatchObject({ EndpointUnresolved: 1 });
    expect(lines.find((l) => l.Endpoint === undefined && '_aws' in l)).toMatchObject({ EndpointUnresolved: 0, Unrouted: 0 });
  });

  it('holds a producer message as a whole when one endpoint it would go to cannot be resolved: nothing fanned out, nothing delivered', async () => {
    const { deps, queue, delivered } = unresolvedRouting([crm]);
    // Delivered with carrier acme: billing, carrier-acme and crm subscribe.
    const fannedOut = eventRecord('evt_2', 'delivered', 'acme');
    // Delivered with no carrier: billing alone of the resolved ones (inline), and crm.
    const inline = eventRecord('evt_3', 'delivered');

    const response = await processBatch([fannedOut, inline], deps);

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: fannedOut.messageId }, { itemIdentifier: inline.messageId }]);
    expect(queue.fannedOut).toEqual([]);
    expect(delivered).toEqual([]);
    expect(queue.visibility.map(([, seconds]) => seconds)).toEqual([5, 5]);
  });

  it('routes the events it does not subscribe to as usual', async () => {
    const { deps, queue, delivered } = unresolvedRouting([crm]);
    const records = [eventRecord('evt_4', 'in_transit', 'acme'), eventRecord('evt_5', 'in_transit', 'zephyr')];

    const response = await processBatch(records, deps);

    expect(response.batchItemFailures).toEqual([]);
    expect(delivered).toEqual([['evt_4', 'carrier-acme']]);
    expect(queue.visibility).toEqual([]);
  });

  it('holds every producer message for an item whose subscription cannot be read either', async () => {
    const { deps, delivered } = unresolvedRouting([{ name: 'mystery', subscription: undefined }]);
    const records = [eventRecord('evt_6', 'in_transit', 'zephyr'), eventRecord('evt_7', 'delivered', 'acme')];

    const response = await processBatch(records, deps);

    expect(response.batchItemFailures).toHaveLength(2);
    expect(delivered).toEqual([]);
  });

  it('holds a producer message received again that has a row at it, though it no longer subscribes', async () => {
    const { deps, delivered } = unresolvedRouting([crm], { rows: ['crm'] });
    const record = eventRecord('evt_8', 'in_transit', 'acme', receivedTimes(2));

    const response = await processBatch([record], deps);

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(delivered).toEqual([]);
  });

  it('acknowledges a message for an endpoint the registry no longer holds (endpoint-removed), as before', async () => {
    const { deps, lines } = unresolvedRouting([crm]);
    const record = sealedRecord(eventRecord('evt_9', 'delivered').body, { endpoint: 'gone' });

    const response = await processBatch([record], deps);

    expect(response.batchItemFailures).toEqual([]);
    expect(lines.find((l) => l.message === 'delivery')).toMatchObject({ eventId: 'evt_9', endpoint: 'gone', action: 'ack', why: 'endpoint-removed' });
  });

  it('waits longer at each receive, 5 s doubling up to 30 s', () => {
    expect([1, 2, 3, 4, 5, 40].map((n) => unresolvedWaitSeconds(receivedTimes(n)))).toEqual([5, 10, 20, UNRESOLVED_MAX_WAIT_SECONDS, 30, 30]);
  });

  it('puts a held message back fresh near the queue\'s redrive: an endpoint message for its endpoint, with its number; a producer message as a producer\'s', async () => {
    const { deps, queue } = unresolvedRouting([crm]);
    const admission = { sequence: 3, inTurn: true };
    const forCrm = sealedRecord(eventRecord('evt_10', 'delivered').body, { endpoint: 'crm', sequence: '3', inTurn: 'true' }, receivedTimes(14));
    const producer = eventRecord('evt_11', 'delivered', undefined, receivedTimes(15));

    const response = await processBatch([forCrm, producer], deps);

    expect(response.batchItemFailures).toEqual([]);
    expect(queue.enqueued).toEqual([
      [forCrm.body, { endpoint: 'crm', admission, delaySeconds: 30 }],
      [producer.body, { delaySeconds: 30 }],
    ]);
    expect(queue.visibility).toEqual([]);
  });

  it('reports a record of the ordered intake without touching its visibility (its shipment waits behind it)', async () => {
    const { deps, queue, lines } = unresolvedRouting([crm]);
    const record = eventRecord('evt_12', 'delivered', undefined, { eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:handoff-ordered.fifo', attributes: { ...sqsRecord('x').attributes, MessageGroupId: 'shp_1' } as SQSRecord['attributes'] });

    const response = await processBatch([record], deps);

    expect(response.batchItemFailures).toEqual([{ itemIdentifier: record.messageId }]);
    expect(queue.visibility).toEqual([]);
    expect(queue.fannedOut).toEqual([]);
    expect(lines.find((l) => l.message === 'delivery')).toMatchObject({ eventId: 'evt_12', why: 'endpoint-unresolved' });
  });

  it('holds the whole batch when the registry cannot be read and no copy is at hand, each message for 5 s, counted for the service', async () => {
    const { deps, queue, lines, delivered } = unresolvedRouting([], { registryDown: true });
    const records = [eventRecord('evt_13', 'delivered'), sealedRecord(eventRecord('evt_14', 'delivered').body, { endpoint: 'billing' })];

    const response = await processBatch(records, deps);
    deps.metrics.flush();

    expect(response.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(records.map((r) => r.messageId));
    expect(queue.visibility).toEqual(records.map((r) => [r.receiptHandle, 5]));
    expect(delivered).toEqual([]);
    expect(lines.filter((l) => l.message === 'delivery').map((l) => [l.eventId, l.endpoints, l.why])).toEqual([
      ['evt_13', [], 'registry-unavailable'],
      ['evt_14', ['billing'], 'registry-unavailable'],
    ]);
    expect(lines.find((l) => l.Endpoint === undefined && '_aws' in l)).toMatchObject({ EndpointUnresolved: 1 });
    expect(lines.find((l) => l.Endpoint === 'billing' && '_aws' in l)).toMatchObject({ EndpointUnresolved: 1 });
  });
});
