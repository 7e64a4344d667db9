/**
 * Ordering's throughput (issue 12, docs/contract.md §13): the same workload delivered to an
 * unordered endpoint and then to one with `ordering: per-shipment`, on the bench's machinery
 * (bench/harness.ts), back to back in one process, with a receiver fault mix.
 *
 * Workload: `shipments` shipments × `eventsPerShipment` events on the standard intake. A shipment's
 * events are sent in order; shipments are taken `interleave` at a time, event 1 of each, then event
 * 2 of each…, so a shipment's events are `interleave` messages apart: often in flight together (some
 * arrive before their turn and wait), never sent out of order. The producer keeps at most `window`
 * events sent but not yet applied.
 *
 * Receiver fault mix, decided per event ID (the same events fail in both runs), first attempt only:
 * a 503, a hang past the endpoint's attempt timeout, or a slow 2xx; every other answer 200 at once.
 * The endpoint retries after 1 s, then 2 s, 4 s. An event counts as delivered when a 2xx was
 * answered for it; every 2xx is checked against its shipment's send order and sequence numbers.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { countsBetween, perDelivery, startReceiver, type Bench } from './harness';
import { BATCH_SIZE, eventBody, MAX_CONCURRENCY, produce, startConsumer } from './pipeline';
import { fixed, table } from './report';

export type OrderingMode = 'none' | 'per-shipment';
export type OrderingOptions = typeof ORDERING_DEFAULTS;
export type OrderingRun = Awaited<ReturnType<typeof runOrdering>>;
export type Fault = 'server-error' | 'timeout' | 'slow' | 'ok';

export const ORDERING_DEFAULTS = { shipments: 1000, eventsPerShipment: 5, interleave: 50, window: 2 * BATCH_SIZE * MAX_CONCURRENCY };
/** First-attempt faults, by share of events. */
export const FAULT_MIX = { serverError: 0.05, timeout: 0.02, slow: 0.05 } as const;
const ANSWERS: Record<Fault, { status: number; afterMs: number }> = {
  'server-error': { status: 503, afterMs: 0 },
  // Past the endpoint's attempt timeout (1 s), then the connection dropped.
  timeout: { status: 0, afterMs: 1500 },
  slow: { status: 200, afterMs: 200 },
  ok: { status: 200, afterMs: 0 },
};

/** The fault an event's first attempt meets: fixed by its ID. Pure. */
export function faultOf(eventId: string, mix: typeof FAULT_MIX = FAULT_MIX): Fault {
  const x = createHash('sha256').update(eventId).digest().readUInt32BE(0) / 2 ** 32;
  if (x < mix.serverError) return 'server-error';
  if (x < mix.serverError + mix.timeout) return 'timeout';
  return x < mix.serverError + mix.timeout + mix.slow ? 'slow' : 'ok';
}

/** The send order: shipments `interleave` at a time, event k of each before event k + 1. Pure. */
export function sendOrder(options: Pick<OrderingOptions, 'shipments' | 'eventsPerShipment' | 'interleave'>): { shipment: number; event: number }[] {
  const order: { shipment: number; event: number }[] = [];
  for (let first = 0; first < options.shipments; first += options.interleave) {
    for (let event = 1; event <= options.eventsPerShipment; event += 1) {
      for (let shipment = first; shipment < Math.min(first + options.interleave, options.shipments); shipment += 1) order.push({ shipment, event });
    }
  }
  return order;
}

/** Deliveries per second of the ordered run over the unordered one's (target ≥ 0.8). Pure. */
export function throughputRatio(ordered: Pick<OrderingRun, 'deliveriesPerSecond'>, unordered: Pick<OrderingRun, 'deliveriesPerSecond'>): number {
  return ordered.deliveriesPerSecond / unordered.deliveriesPerSecond;
}

/** One run: a fresh consumer with one endpoint (`mode`) on a fault-mix receiver; the workload; its figures. */
export async function runOrdering(mode: OrderingMode, bench: Bench, options: OrderingOptions = ORDERING_DEFAULTS) {
  const attempted = new Set<string>();
  const answers: Record<Fault, number> = { 'server-error': 0, timeout: 0, slow: 0, ok: 0 };
  /** Per shipment (the event ID less its event number): the sequences answered 2xx. */
  const sequences = new Map<string, Set<number>>();
  const checks = { outOfSendOrder: 0, outOfSequence: 0, sequenced: 0 };
  const receiver = await startReceiver(
    (id) => {
      const fault = attempted.has(id) ? 'ok' : faultOf(id);
      attempted.add(id);
      answers[fault] += 1;
      return ANSWERS[fault];
    },
    // Events are named `<run>-s<shipment>-e<event>`.
    (id, request) => {
      const [, shipment = '', event = '0'] = /^(.*-s\d+-e)(\d+)$/.exec(id) ?? [];
      if (Array.from({ length: Number(event) - 1 }, (_, k) => `${shipment}${k + 1}`).some((earlier) => !receiver.applied.has(earlier))) checks.outOfSendOrder += 1;
      const sequence = Number(request.headers['webhook-sequence']);
      if (!shipment || !Number.isInteger(sequence) || sequence < 1) return;
      checks.sequenced += 1;
      const seen = sequences.get(shipment) ?? new Set<number>();
      sequences.set(shipment, seen.add(sequence));
      if (Array.from({ length: sequence - 1 }, (_, k) => k + 1).some((k) => !seen.has(k))) checks.outOfSequence += 1;
    },
  );
  const label = `[ordering ${mode}]`;
  const consumer = await startConsumer(bench, 'handoff', {
    label,
    endpoints: [{ name: 'acme', url: receiver.url, eventTypes: ['*'], ordering: mode, retrySchedule: [1, 2, 4], attemptTimeoutMs: 1000 }],
  });
  try {
    const events = sendOrder(options).map(({ shipment, event }) => ({ id: `ord-${consumer.runId}-s${shipment}-e${event}`, shipment: `shp_${consumer.runId}_${shipment}` }));
    const applied = () => receiver.applied.size;
    const countsBefore = bench.emulators.snapshot();
    const startedAt = performance.now();
    let sent = 0;
    const complete = await produce(consumer, {
      room: () => sent - applied() <= options.window - BATCH_SIZE,
      next: () => {
        const chunk = events.slice(sent, (sent += BATCH_SIZE));
        return chunk.length > 0 ? chunk.map((e) => eventBody(e.id, e.shipment)) : undefined;
      },
      quietSince: () => receiver.lastArrivalAt,
      done: () => applied() >= events.length,
      tick: () => bench.progress(`${label} ${applied()}/${events.length} delivered`),
    });
    const wallSeconds = (Math.max(startedAt, ...receiver.applied.values()) - startedAt) / 1000;
    await consumer.quiesce();
    const requests = countsBetween(countsBefore, bench.emulators.snapshot());
    const delivered = applied();
    return {
      mode,
      events: events.length,
      delivered,
      wallSeconds,
      deliveriesPerSecond: delivered / wallSeconds,
      complete,
      /** Attempts the receiver answered, by how. */
      answers,
      // 2xx answered before every earlier-sent event of the shipment had one; before every lower `webhook-sequence`
      // of the shipment had one (the ordered endpoint's promise: 0); with a `webhook-sequence` at all.
      ...checks,
      /** Events answered 2xx more than once. */
      repeats: receiver.repeats,
      perDelivery: perDelivery(requests, delivered),
      requests,
      failedBatches: consumer.counts.failedBatches,
    };
  } finally {
    await consumer.close();
    await receiver.close();
  }
}

/** The printed table and verdict (markdown). Pure. */
export function orderingMarkdown(runs: readonly OrderingRun[], machine: { readonly date: string; readonly loadAverage: readonly number[]; readonly cores: number }): string {
  const unordered = runs.find((r) => r.mode === 'none');
  const ordered = runs.find((r) => r.mode === 'per-shipment');
  const ratio = unordered && ordered ? throughputRatio(ordered, unordered) : Number.NaN;
  const f2 = fixed(2);
  return [
    ...table(
      ['endpoint', 'delivered', 'wall s', 'deliveries/s', 'DDB writes/delivery', 'DDB reads/delivery', 'handler SQS/delivery', 'poller SQS/delivery', '503 / timeout / slow', 'out of send order', 'out of sequence', 'repeats'],
      runs.map((r) => [
        r.mode === 'none' ? 'unordered' : 'per-shipment',
        `${r.delivered}/${r.events}${r.complete ? '' : ' (INCOMPLETE)'}`,
        fixed(1)(r.wallSeconds),
        fixed(0)(r.deliveriesPerSecond),
        ...[r.perDelivery.dynamodbWrites, r.perDelivery.dynamodbReads, r.perDelivery.handlerSqs, r.perDelivery.pollerSqs].map(f2),
        `${r.answers['server-error']} / ${r.answers.timeout} / ${r.answers.slow}`,
        String(r.outOfSendOrder),
        r.mode === 'none' ? '-' : `${r.outOfSequence} of ${r.sequenced}`,
        String(r.repeats),
      ]),
    ),
    '',
    'Out of send order: a 2xx for an event before an earlier-sent event of its shipment had one (the standard intake does not',
    'keep send order: an ordered endpoint gets admission order). Out of sequence: a 2xx for a webhook-sequence before every',
    "lower number of its shipment had one (must be 0). Per delivery: the handler's requests (workers) and the poller's.",
    '',
    `Throughput ratio, per-shipment over unordered: ${f2(ratio)} (target ≥ 0.80: ${ratio >= 0.8 ? 'MET' : 'MISSED'}).`,
    `${machine.date}, ${machine.cores} cores, load average at start ${machine.loadAverage.map(f2).join(' ')}.`,
    '',
  ].join('\n');
}
