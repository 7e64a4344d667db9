/**
 * The ordering bench's pure parts (bench/ordering.ts): the send order (a shipment's events in
 * order, shipments interleaved), the fault mix fixed by event ID, the throughput ratio and its table.
 */
import { describe, expect, it } from 'vitest';
import { faultOf, orderingMarkdown, sendOrder, throughputRatio, type OrderingRun } from '../../bench/ordering';

describe('Function: sendOrder', () => {
  it('sends every event once, a shipment\'s in order, shipments `interleave` at a time', () => {
    const order = sendOrder({ shipments: 5, eventsPerShipment: 3, interleave: 2 });
    expect(order.length).toBe(15);
    expect(order.slice(0, 6)).toEqual([
      { shipment: 0, event: 1 },
      { shipment: 1, event: 1 },
      { shipment: 0, event: 2 },
      { shipment: 1, event: 2 },
      { shipment: 0, event: 3 },
      { shipment: 1, event: 3 },
    ]);
    for (let s = 0; s < 5; s += 1) expect(order.filter((e) => e.shipment === s).map((e) => e.event)).toEqual([1, 2, 3]);
  });
});

describe('Function: faultOf', () => {
  it('is fixed by the event ID and keeps roughly the mix', () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `evt-${i}`);
    expect(ids.map((id) => faultOf(id))).toEqual(ids.map((id) => faultOf(id)));
    const share = (fault: string) => ids.filter((id) => faultOf(id) === fault).length / ids.length;
    expect(share('server-error')).toBeGreaterThan(0.03);
    expect(share('server-error')).toBeLessThan(0.07);
    expect(share('ok')).toBeGreaterThan(0.84);
  });
});

describe('Function: throughputRatio and orderingMarkdown', () => {
  const run = (mode: OrderingRun['mode'], deliveriesPerSecond: number): OrderingRun => ({
    mode,
    events: 100,
    delivered: 100,
    wallSeconds: 100 / deliveriesPerSecond,
    deliveriesPerSecond,
    complete: true,
    answers: { 'server-error': 5, timeout: 2, slow: 5, ok: 100 },
    outOfSendOrder: 0,
    outOfSequence: 0,
    sequenced: mode === 'none' ? 0 : 100,
    repeats: 0,
    perDelivery: { dynamodbWrites: 2, dynamodbReads: 0, dynamodbBytesSent: 900, dynamodbBytesReceived: 300, handlerSqs: 0.1, pollerSqs: 0.2 },
    requests: { handler: {}, poller: {}, producer: {}, setup: {} },
    failedBatches: 0,
  });

  it('is the ordered run\'s deliveries per second over the unordered one\'s, said MET from 0.8', () => {
    expect(throughputRatio(run('per-shipment', 80), run('none', 100))).toBeCloseTo(0.8);
    const text = orderingMarkdown([run('none', 100), run('per-shipment', 79)], { date: '2026-12-03T08:00:00Z', loadAverage: [1, 2, 3], cores: 2 });
    expect(text).toContain('0.79 (target ≥ 0.80: MISSED)');
    expect(text).toContain('load average at start 1.00 2.00 3.00');
  });
});
