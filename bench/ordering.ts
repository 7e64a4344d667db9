/**
 * Ordering's throughput (issue 12, docs/contract.md §13): the same workload delivered to an
 * unordered endpoint and then to one with `ordering: per-shipment`, on the bench's machinery (the
 * counting emulators, handoff's consumer in sandbox/worker-pool.ts workers, sandbox/poller.ts with
 * Lambda's event-source contract), back to back in one process, with a receiver fault mix.
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
 * answered for it; for the ordered endpoint every 2xx is checked against the shipment's order.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { RESOURCE_ENV } from '../lib/config';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { createEndpointsTable, seedEndpoints } from '../sandbox/endpoints-table';
import { listenOnLoopback } from '../test/helpers/loopback';
import { countsBetween, summarize, type RequestCounts } from './counting';
import { BATCH_SIZE, benchClients, HANDLER_PATHS, MAX_CONCURRENCY, pollInto, provision, startWorkers, waitFor, type Bench } from './workload';

export type OrderingMode = 'none' | 'per-shipment';

export interface OrderingOptions {
  readonly shipments: number;
  readonly eventsPerShipment: number;
  readonly interleave: number;
  readonly window: number;
}

export const ORDERING_DEFAULTS: OrderingOptions = { shipments: 1000, eventsPerShipment: 5, interleave: 50, window: 2 * BATCH_SIZE * MAX_CONCURRENCY };

/** First-attempt faults, by share of events. */
export const FAULT_MIX = { serverError: 0.05, timeout: 0.02, slow: 0.05 } as const;
const SLOW_MS = 200;
const ATTEMPT_TIMEOUT_MS = 1000;
const HANG_MS = 1500;
const RETRY_SCHEDULE = [1, 2, 4];
const STALL_MS = 30_000;

export type Fault = 'server-error' | 'timeout' | 'slow' | 'ok';

/** The fault an event's first attempt meets: fixed by its ID. Pure. */
export function faultOf(eventId: string, mix: typeof FAULT_MIX = FAULT_MIX): Fault {
  const x = createHash('sha256').update(eventId).digest().readUInt32BE(0) / 2 ** 32;
  if (x < mix.serverError) return 'server-error';
  if (x < mix.serverError + mix.timeout) return 'timeout';
  if (x < mix.serverError + mix.timeout + mix.slow) return 'slow';
  return 'ok';
}

/** The send order: shipments `interleave` at a time, event k of each before event k + 1. Pure. */
export function sendOrder(options: Pick<OrderingOptions, 'shipments' | 'eventsPerShipment' | 'interleave'>): { shipment: number; event: number }[] {
  const order: { shipment: number; event: number }[] = [];
  for (let first = 0; first < options.shipments; first += options.interleave) {
    const last = Math.min(first + options.interleave, options.shipments);
    for (let event = 1; event <= options.eventsPerShipment; event += 1) {
      for (let shipment = first; shipment < last; shipment += 1) order.push({ shipment, event });
    }
  }
  return order;
}

/** Deliveries per second of the ordered run over the unordered one's (target ≥ 0.8). Pure. */
export function throughputRatio(ordered: Pick<OrderingRun, 'deliveriesPerSecond'>, unordered: Pick<OrderingRun, 'deliveriesPerSecond'>): number {
  return ordered.deliveriesPerSecond / unordered.deliveriesPerSecond;
}

export interface OrderingRun {
  readonly mode: OrderingMode;
  readonly events: number;
  readonly delivered: number;
  readonly wallSeconds: number;
  readonly deliveriesPerSecond: number;
  readonly complete: boolean;
  /** Attempts the receiver answered, by how. */
  readonly answers: Readonly<Record<Fault, number>>;
  /** 2xx answered for an event whose earlier-sent events of its shipment had not all been answered 2xx. */
  readonly outOfSendOrder: number;
  /**
   * 2xx answered for a `webhook-sequence` whose lower numbers of its shipment had not all been
   * answered 2xx (the ordered endpoint's promise: admission order, docs/contract.md §13); 0 unordered.
   */
  readonly outOfSequence: number;
  /** 2xx answered with a `webhook-sequence` header. */
  readonly sequenced: number;
  /** Events answered 2xx more than once. */
  readonly repeats: number;
  /** Per delivered event: the handler's DynamoDB writes and reads, its SQS requests, the poller's. */
  readonly perDelivery: { readonly dynamodbWrites: number; readonly dynamodbReads: number; readonly handlerSqs: number; readonly pollerSqs: number };
  readonly requests: RequestCounts;
  readonly failedBatches: number;
}

interface FaultReceiver {
  readonly url: string;
  readonly applied: Map<string, number>;
  readonly answers: Record<Fault, number>;
  outOfSendOrder: number;
  outOfSequence: number;
  sequenced: number;
  repeats: number;
  close(): Promise<void>;
}

/** A receiver with the fault mix; events are named `<run>-s<shipment>-e<event>`. */
async function startFaultReceiver(): Promise<FaultReceiver> {
  const attempted = new Set<string>();
  /** Per shipment (the event ID less its event number): the sequences answered 2xx. */
  const sequences = new Map<string, Set<number>>();
  const state: FaultReceiver = {
    url: '',
    applied: new Map(),
    answers: { 'server-error': 0, timeout: 0, slow: 0, ok: 0 },
    outOfSendOrder: 0,
    outOfSequence: 0,
    sequenced: 0,
    repeats: 0,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const header = req.headers['idempotency-key'];
      const id = typeof header === 'string' ? header : '';
      const fault = attempted.has(id) ? 'ok' : faultOf(id);
      attempted.add(id);
      state.answers[fault] += 1;
      const apply = () => {
        if (state.applied.has(id)) state.repeats += 1;
        else {
          const match = /^(.*-s\d+-e)(\d+)$/.exec(id);
          if (match && Array.from({ length: Number(match[2]) - 1 }, (_, k) => `${match[1]}${k + 1}`).some((earlier) => !state.applied.has(earlier))) {
            state.outOfSendOrder += 1;
          }
          const sequence = Number(req.headers['webhook-sequence']);
          if (match && Number.isInteger(sequence) && sequence > 0) {
            state.sequenced += 1;
            const seen = sequences.get(match[1]!) ?? new Set<number>();
            sequences.set(match[1]!, seen);
            for (let k = 1; k < sequence; k += 1) {
              if (!seen.has(k)) {
                state.outOfSequence += 1;
                break;
              }
            }
            seen.add(sequence);
          }
          state.applied.set(id, performance.now());
        }
        res.writeHead(200, { 'content-length': '0' });
        res.end();
      };
      if (fault === 'server-error') {
        res.writeHead(503, { 'content-length': '0' });
        res.end();
      } else if (fault === 'timeout') setTimeout(() => res.destroy(), HANG_MS);
      else if (fault === 'slow') setTimeout(apply, SLOW_MS);
      else apply();
    });
  });
  server.keepAliveTimeout = 60_000;
  const listening = await listenOnLoopback(server);
  return Object.assign(state, { url: listening.url, close: () => listening.close() });
}

function eventOf(id: string, shipment: string): string {
  return JSON.stringify({ id, shipmentId: shipment, status: 'in_transit', occurredAt: new Date().toISOString(), data: { carrier: 'acme', hub: 'FRA-3' } });
}

/** One run: fresh queue, ledger and registry (one endpoint, `mode`), workers, poller; the workload; its figures. */
export async function runOrdering(mode: OrderingMode, bench: Bench, options: OrderingOptions = ORDERING_DEFAULTS): Promise<OrderingRun> {
  const runId = randomUUID().slice(0, 8);
  const clients = benchClients(bench);
  const receiver = await startFaultReceiver();
  const { env, queueUrl, queueArn, functionTimeoutMs } = await provision('handoff', bench, clients, runId);
  const endpointsTable = `bench-${runId}-endpoints`;
  await createEndpointsTable(clients.setupDynamodb, endpointsTable);
  await seedEndpoints(
    new DynamoDbEndpointRegistry({ client: clients.setupDynamodb, tableName: endpointsTable }),
    [{ name: 'acme', url: receiver.url, eventTypes: ['*'], ordering: mode, retrySchedule: RETRY_SCHEDULE, attemptTimeoutMs: ATTEMPT_TIMEOUT_MS }],
    Date.now(),
  );
  env[RESOURCE_ENV.endpointsTable] = endpointsTable;
  const label = `[ordering ${mode}]`;
  const workers = startWorkers(HANDLER_PATHS.handoff, env, functionTimeoutMs, {
    progress: (line) => bench.progress(`${label} ${line}`),
    log: (line) => bench.log(`${label} ${line}`),
  });
  const poller = pollInto(bench, clients, { queueUrl, queueArn }, workers, label);
  try {
    const order = sendOrder(options);
    const ids = order.map(({ shipment, event }) => ({ id: `ord-${runId}-s${shipment}-e${event}`, shipment: `shp_${runId}_${shipment}` }));
    const applied = () => receiver.applied.size;
    let lastProgressAt = performance.now();
    let seen = 0;
    const progress = setInterval(() => {
      if (applied() !== seen) lastProgressAt = performance.now();
      seen = applied();
      bench.progress(`${label} ${seen}/${ids.length} delivered`);
    }, 500);
    const countsBefore = bench.emulators.snapshot();
    const startedAt = performance.now();
    let complete = true;
    try {
      for (let next = 0; next < ids.length; next += BATCH_SIZE) {
        const chunk = ids.slice(next, next + BATCH_SIZE);
        if (!(await waitFor(() => next - applied() <= options.window - chunk.length, STALL_MS, () => lastProgressAt))) {
          complete = false;
          break;
        }
        await clients.producerSqs.send(
          new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: chunk.map((e, i) => ({ Id: String(i), MessageBody: eventOf(e.id, e.shipment) })) }),
        );
      }
      if (complete) complete = await waitFor(() => applied() >= ids.length, STALL_MS, () => lastProgressAt);
    } finally {
      clearInterval(progress);
    }
    const lastAt = Math.max(startedAt, ...receiver.applied.values());
    await workers.quiesce();
    const requests = countsBetween(countsBefore, bench.emulators.snapshot());
    const handler = summarize(requests.handler);
    const poll = summarize(requests.poller);
    const delivered = applied();
    const wallSeconds = (lastAt - startedAt) / 1000;
    return {
      mode,
      events: ids.length,
      delivered,
      wallSeconds,
      deliveriesPerSecond: delivered / wallSeconds,
      complete,
      answers: { ...receiver.answers },
      outOfSendOrder: receiver.outOfSendOrder,
      outOfSequence: receiver.outOfSequence,
      sequenced: receiver.sequenced,
      repeats: receiver.repeats,
      perDelivery: {
        dynamodbWrites: handler.dynamodbWrites / delivered,
        dynamodbReads: handler.dynamodbReads / delivered,
        handlerSqs: handler.sqs / delivered,
        pollerSqs: poll.sqs / delivered,
      },
      requests,
      failedBatches: poller.counts.failedBatches,
    };
  } finally {
    await poller.stop(functionTimeoutMs);
    await workers.close();
    await receiver.close();
    for (const client of [clients.setupSqs, clients.pollerSqs, clients.producerSqs, clients.setupDynamodb]) client.destroy();
  }
}

/** The printed table and verdict (markdown). Pure. */
export function orderingMarkdown(runs: readonly OrderingRun[], machine: { readonly date: string; readonly loadAverage: readonly number[]; readonly cores: number }): string {
  const unordered = runs.find((r) => r.mode === 'none');
  const ordered = runs.find((r) => r.mode === 'per-shipment');
  const rows = runs.map((r) =>
    [
      r.mode === 'none' ? 'unordered' : 'per-shipment',
      `${r.delivered}/${r.events}${r.complete ? '' : ' (INCOMPLETE)'}`,
      r.wallSeconds.toFixed(1),
      r.deliveriesPerSecond.toFixed(0),
      r.perDelivery.dynamodbWrites.toFixed(2),
      r.perDelivery.dynamodbReads.toFixed(2),
      r.perDelivery.handlerSqs.toFixed(2),
      r.perDelivery.pollerSqs.toFixed(2),
      `${r.answers['server-error']} / ${r.answers.timeout} / ${r.answers.slow}`,
      String(r.outOfSendOrder),
      r.mode === 'none' ? '-' : `${r.outOfSequence} of ${r.sequenced}`,
      String(r.repeats),
    ].join(' | '),
  );
  const ratio = unordered && ordered ? throughputRatio(ordered, unordered) : NaN;
  return [
    `| endpoint | delivered | wall s | deliveries/s | DDB writes/delivery | DDB reads/delivery | handler SQS/delivery | poller SQS/delivery | 503 / timeout / slow | out of send order | out of sequence | repeats |`,
    `|---|---|---|---|---|---|---|---|---|---|---|---|`,
    ...rows.map((row) => `| ${row} |`),
    '',
    'Out of send order: a 2xx for an event before an earlier-sent event of its shipment had one (the standard intake does not',
    'keep send order: an ordered endpoint gets admission order). Out of sequence: a 2xx for a webhook-sequence before every',
    'lower number of its shipment had one (must be 0). Per delivery: the handler\'s requests (workers) and the poller\'s.',
    '',
    `Throughput ratio, per-shipment over unordered: ${ratio.toFixed(2)} (target ≥ 0.80: ${ratio >= 0.8 ? 'MET' : 'MISSED'}).`,
    `${machine.date}, ${machine.cores} cores, load average at start ${machine.loadAverage.map((n) => n.toFixed(2)).join(' ')}.`,
    '',
  ].join('\n');
}
