/**
 * The runs `npm run cost` measures on the meter. Each returns what it measured and what the consumer
 * decided; test/cost/*.test.ts run them small and assert the decisions, since a count means nothing
 * otherwise.
 *
 * - scenarios: one handoff message at a time (delivered, duplicate, retried, dead-lettered,
 *   identity conflict, invalid);
 * - workload: batches of delivered events through one consumer, metered; then timed as Lambda bills
 *   them, the consumers taking turns batch by batch;
 * - mix: thousands of deliveries at once, for the writes each partition key value takes;
 * - fan-out: producer batches routed through the registry to N endpoints, each endpoint message
 *   handed back as the event source would, beside the single-URL consumer.
 */
import { performance } from 'node:perf_hooks';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import pLimit from 'p-limit';
import type { ScriptedResponse, TestReceiver } from '../../test/helpers/receiver';
import { sqsRecord } from '../../test/helpers/sqs-records';
import { lambdaGbSeconds, type UsagePerEvent } from './billing';
import { handoffConsumer, QUEUE_URLS, type HandoffConsumer, type Invoke } from './consumers';
import type { DynamoDbUsage, Meter, SentMessage, SqsUsage } from './meter';

export interface Meters {
  readonly meter: Meter;
  readonly receiver: TestReceiver;
}

/** Past any first retry's backoff: the queue's visibility does the waiting, here the clock jumps. */
export const RETRY_DUE_MS = 60 * 60 * 1000;

/** A shipment's status events in the cost workloads: a parcel's few updates (picked up, in transit, out, delivered). */
export const EVENTS_PER_SHIPMENT = 4;

/**
 * The shipment of a cost run's event, from its ID: the events whose IDs differ only in a trailing
 * number n share `shp_<the rest>_<floor(n / 4)>`, so a shipment has up to 4 events and no shipment
 * key is hot by construction. An ID without a trailing number is a shipment of its own.
 */
export function shipmentOf(id: string): string {
  const numbered = /^(.*?)(\d+)$/.exec(id);
  if (numbered === null) return `shp_${id}`;
  return `shp_${numbered[1]}${Math.floor(Number(numbered[2]) / EVENTS_PER_SHIPMENT)}`;
}

/**
 * A valid event (docs/contract.md §2) whose body is exactly `bytes` long, padded with pseudo-random
 * letters fixed by the ID: one repeated character would flatter any compression of the stored body.
 * Its shipment, unless given, is `shipmentOf(id)` (per-shipment ordering passes its own).
 */
export function eventOfSize(id: string, bytes: number, status = 'in_transit', shipmentId = shipmentOf(id)): string {
  const event = { id, shipmentId, status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier: 'acme', hub: 'FRA-3', note: '' } };
  const padding = bytes - JSON.stringify(event).length;
  if (padding < 0) throw new Error(`an event with ID ${id} takes more than ${bytes} bytes`);
  let seed = [...id].reduce((hash, char) => (Math.imul(hash, 31) + char.charCodeAt(0)) >>> 0, 7);
  for (let i = 0; i < padding; i++) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    event.data.note += 'abcdefghijklmnopqrstuvwxyz0123456789'[(seed >>> 16) % 36];
  }
  return JSON.stringify(event);
}

/** A record of `bytes`, received `receiveCount` times. */
export function recordOf(id: string, bytes: number, options: { receiveCount?: number; status?: string; shipmentId?: string } = {}): SQSRecord {
  const record = sqsRecord(eventOfSize(id, bytes, options.status, options.shipmentId));
  record.attributes.ApproximateReceiveCount = String(options.receiveCount ?? 1);
  return record;
}

/** A message the consumer put on the delivery queue, as Lambda's event source hands it over. */
export function recordOfSent(message: SentMessage): SQSRecord {
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.attributes)) {
    messageAttributes[name] = { dataType: value.DataType ?? 'String', stringValue: value.StringValue, stringListValues: [], binaryListValues: [] };
  }
  return sqsRecord(message.body, { messageAttributes });
}

/** Invokes with one batch and bills what Lambda's poller did for it. */
export async function invokeBatch(invoke: Invoke, records: readonly SQSRecord[], meter: Meter) {
  const startedAt = performance.now();
  const response = await invoke(records);
  const durationMs = performance.now() - startedAt;
  meter.sqs.eventSource(records, response.batchItemFailures.length);
  return { response, durationMs };
}

// --- scenarios ------------------------------------------------------------------------------------

export const SCENARIO_EVENT_BYTES = 300;
type Send = (body: string) => Promise<void>;
const event = (id: string, status?: string) => eventOfSize(id, SCENARIO_EVENT_BYTES, status);

export interface Scenario {
  readonly name: string;
  /** The receiver's answers, in order. */
  readonly answers: readonly ScriptedResponse[];
  /** Done before counting starts (the delivery a duplicate repeats). */
  readonly prepare?: (send: Send, id: string) => Promise<void>;
  /** The counted messages, one per invocation. */
  readonly messages: (id: string) => readonly string[];
  /** The decisions it must lead to, `action:why-or-reason`. */
  readonly expected: readonly string[];
}

export const SCENARIOS: readonly Scenario[] = [
  { name: 'delivered on the first attempt', answers: [200], messages: (id) => [event(id)], expected: ['ack:delivered'] },
  {
    name: 'duplicate message after delivery',
    answers: [200],
    prepare: (send, id) => send(event(id)),
    messages: (id) => [event(id)],
    expected: ['ack:duplicate'],
  },
  {
    name: 'retried: 503, 503, then 200',
    answers: [503, 503, 200],
    messages: (id) => [event(id), event(id), event(id)],
    expected: ['retry:temporary', 'retry:temporary', 'ack:delivered'],
  },
  {
    name: 'dead-lettered: 400',
    answers: [{ status: 400, body: '{"error":"unknown carrier"}' }],
    messages: (id) => [event(id)],
    expected: ['dead-letter:rejected'],
  },
  {
    name: 'identity conflict after delivery',
    answers: [200],
    prepare: (send, id) => send(event(id)),
    messages: (id) => [event(id, 'exception')],
    expected: ['dead-letter:identity-conflict'],
  },
  { name: 'invalid message with a readable ID', answers: [], messages: (id) => [JSON.stringify({ id, status: 'lost' })], expected: ['dead-letter:invalid'] },
];

export interface ScenarioResult {
  readonly scenario: Scenario;
  readonly dynamodb: DynamoDbUsage;
  readonly sqs: SqsUsage;
  readonly decisions: readonly string[];
}

/**
 * Runs each scenario (or those given) through one handoff consumer on `ledgerTable`, the clock moving
 * past each retry; `shipmentIndex: false` with the consumer's setting off, on a table made without it.
 */
export async function runScenarios(
  ledgerTable: string,
  { meter, receiver }: Meters,
  prefix = 'evt_cost',
  options: { readonly scenarios?: readonly Scenario[]; readonly shipmentIndex?: boolean } = {},
): Promise<ScenarioResult[]> {
  const clock = { offsetMs: 0 };
  const nowMs = () => Date.now() + clock.offsetMs;
  const consumer = handoffConsumer({ ledgerTable, webhookUrl: receiver.url, nowMs, ...(options.shipmentIndex === false ? { shipmentIndex: false } : {}) });
  const send: Send = async (body) => {
    await invokeBatch(consumer.invoke, [sqsRecord(body)], meter);
    clock.offsetMs += RETRY_DUE_MS;
  };
  const results: ScenarioResult[] = [];
  for (const [index, scenario] of (options.scenarios ?? SCENARIOS).entries()) {
    const id = `${prefix}_${index}`;
    if (scenario.answers.length > 0) receiver.respondTo(id, ...scenario.answers);
    // The preparation is counted apart and dropped.
    meter.dynamodb.start();
    meter.sqs.start();
    await scenario.prepare?.(send, id);
    const dynamodb = meter.dynamodb.start();
    const sqs = meter.sqs.start();
    consumer.decisions.length = 0;
    for (const body of scenario.messages(id)) await send(body);
    results.push({ scenario, dynamodb, sqs, decisions: [...consumer.decisions] });
  }
  return results;
}

// --- workload -------------------------------------------------------------------------------------

export interface WorkloadOptions {
  readonly prefix: string;
  readonly eventBytes: number;
  readonly batches: number;
  readonly batchSize: number;
}

export interface WorkloadResult {
  readonly delivered: number;
  readonly invocations: number;
  /** Records reported failed: none when every event is delivered. */
  readonly failed: number;
  readonly dynamodb: DynamoDbUsage;
  readonly sqs: SqsUsage;
}

const workloadBatch = (o: WorkloadOptions, pass: string, round: number) =>
  Array.from({ length: o.batchSize }, (_, i) => recordOf(`${o.prefix}_${pass}${round}_${i}`, o.eventBytes));

/** `batches` batches of new events, all accepted, one at a time, metered after an unmetered warm-up batch. */
export async function meterWorkload(invoke: Invoke, options: WorkloadOptions, meter: Meter): Promise<WorkloadResult> {
  meter.dynamodb.start();
  meter.sqs.start();
  await invokeBatch(invoke, workloadBatch(options, 'w', 0), meter);
  const dynamodb = meter.dynamodb.start();
  const sqs = meter.sqs.start();
  let failed = 0;
  for (let round = 0; round < options.batches; round++) {
    failed += (await invokeBatch(invoke, workloadBatch(options, 'm', round), meter)).response.batchItemFailures.length;
  }
  return { delivered: options.batches * options.batchSize, invocations: options.batches, failed, dynamodb, sqs };
}

/**
 * Each invocation's wall time, ms (what Lambda bills), the meter passing requests through (its own
 * reads stay out of the handler's time), the consumers taking turns so a shared machine's load falls
 * on each alike.
 */
export async function timeWorkloads<Name extends string>(
  consumers: readonly { readonly name: Name; readonly invoke: Invoke; readonly options: WorkloadOptions }[],
  meter: Meter,
): Promise<Record<Name, number[]>> {
  meter.dynamodb.passThrough();
  meter.sqs.start();
  const durations = Object.fromEntries(consumers.map((c) => [c.name, [] as number[]])) as Record<Name, number[]>;
  for (let round = 0; round < Math.max(...consumers.map((c) => c.options.batches)); round++) {
    for (const c of consumers) {
      if (round < c.options.batches) durations[c.name].push((await invokeBatch(c.invoke, workloadBatch(c.options, 't', round), meter)).durationMs);
    }
  }
  return durations;
}

// --- the mix, for hot partitions ------------------------------------------------------------------

export interface MixResult {
  readonly deliveries: number;
  readonly delivered: number;
  readonly retried: number;
  readonly dead: number;
  readonly seconds: number;
  readonly dynamodb: DynamoDbUsage;
}

/** Of every 100 events: 3 rejected (dead), 7 answered 503 once then delivered, 90 delivered. */
export function mixOutcome(index: number): 'dead' | 'retried' | 'delivered' {
  const slot = index % 100;
  return slot < 3 ? 'dead' : slot < 10 ? 'retried' : 'delivered';
}

/** `deliveries` events through a handoff consumer, `concurrency` batches at once; retries go round again once due. */
export async function runMix(ledgerTable: string, options: { prefix: string; deliveries: number; batchSize: number; concurrency: number }, { meter, receiver }: Meters): Promise<MixResult> {
  const clock = { offsetMs: 0 };
  const consumer = handoffConsumer({ ledgerTable, webhookUrl: receiver.url, nowMs: () => Date.now() + clock.offsetMs });
  const outcomes = Array.from({ length: options.deliveries }, (_, i) => mixOutcome(i));
  const records = outcomes.map((outcome, i) => {
    const id = `${options.prefix}_${i}`;
    if (outcome !== 'delivered') receiver.respondTo(id, outcome === 'dead' ? 400 : 503);
    return recordOf(id, SCENARIO_EVENT_BYTES);
  });
  // Created empty and written only from here, through the meter.
  const dynamodb = meter.dynamodb.start({ partitions: true });
  meter.dynamodb.seesEveryWrite(ledgerTable);
  const startedAt = performance.now();
  const limit = pLimit(options.concurrency);
  let waiting = records;
  for (let round = 1; waiting.length > 0; round++) {
    if (round > 3) throw new Error(`${options.prefix}: ${waiting.length} records still failing after ${round - 1} rounds`);
    const failedIds = new Set<string>();
    const batches = Array.from({ length: Math.ceil(waiting.length / options.batchSize) }, (_, i) => waiting.slice(i * options.batchSize, (i + 1) * options.batchSize));
    await Promise.all(
      batches.map((batch) => limit(async () => (await invokeBatch(consumer.invoke, batch, meter)).response.batchItemFailures.forEach((f) => failedIds.add(f.itemIdentifier)))),
    );
    waiting = waiting.filter((record) => failedIds.has(record.messageId));
    clock.offsetMs += RETRY_DUE_MS;
  }
  const count = (o: string) => outcomes.filter((x) => x === o).length;
  const seconds = (performance.now() - startedAt) / 1000;
  return { deliveries: options.deliveries, delivered: options.deliveries - count('dead'), retried: count('retried'), dead: count('dead'), seconds, dynamodb };
}

/**
 * Per table and index: the units on its busiest partition key value. A key value takes about 1,000
 * write units a second at most, so what matters is its share of all the run's writes.
 */
export function partitionShares(usage: DynamoDbUsage) {
  const scopes = [...(usage.partitions ?? [])].map(([scope, values]) => {
    const [largestValue, largestUnits] = [...values].reduce((top, entry) => (entry[1] > top[1] ? entry : top), ['', 0]);
    return { scope, units: [...values.values()].reduce((a, b) => a + b, 0), values: values.size, largestValue, largestUnits };
  });
  return { total: scopes.reduce((sum, s) => sum + s.units, 0), scopes };
}

// --- fan-out --------------------------------------------------------------------------------------

export const FAN_OUT_ENDPOINTS = [1, 3, 10] as const;
export const FAN_OUT_EVENT_BYTES = 300;

export interface FanOutRun {
  readonly label: string;
  /** Endpoints each event goes to (1 for the single-URL consumer). */
  readonly endpoints: number;
  readonly registry: boolean;
  readonly consumer: HandoffConsumer;
  readonly prefix: string;
  /** Its endpoints' receivers (one each: a receiver's idempotency store is its own). */
  readonly receivers: readonly { readonly requests: readonly unknown[] }[];
}

export interface FanOutOptions {
  readonly rounds: number;
  readonly batchSize: number;
}

export interface RoundResult {
  readonly deliveries: number;
  /** Endpoint messages the producer batch put on the queue (none with one endpoint). */
  readonly sent: readonly SentMessage[];
  /** Requests the receivers got, and records reported failed. */
  readonly received: number;
  readonly failed: number;
  readonly producerMs: number;
  readonly endpointMs: readonly number[];
}

/** One producer batch through the consumer, then every endpoint message it sent, in batches. */
export async function runRound(run: FanOutRun, options: FanOutOptions, pass: string, round: number, meter: Meter): Promise<RoundResult> {
  meter.sqs.takeSent();
  const received = () => run.receivers.reduce((sum, receiver) => sum + receiver.requests.length, 0);
  const before = received();
  const batch = Array.from({ length: options.batchSize }, (_, i) => recordOf(`${run.prefix}_${pass}${round}_${i}`, FAN_OUT_EVENT_BYTES));
  const producer = await invokeBatch(run.consumer.invoke, batch, meter);
  let failed = producer.response.batchItemFailures.length;
  const sent = meter.sqs.takeSent();
  const endpointMs: number[] = [];
  const toEndpoints = sent.filter((m) => m.queueUrl === QUEUE_URLS.queue);
  for (let i = 0; i < toEndpoints.length; i += options.batchSize) {
    const { response, durationMs } = await invokeBatch(run.consumer.invoke, toEndpoints.slice(i, i + options.batchSize).map(recordOfSent), meter);
    failed += response.batchItemFailures.length;
    endpointMs.push(durationMs);
  }
  return { deliveries: options.batchSize * run.endpoints, sent, received: received() - before, failed, producerMs: producer.durationMs, endpointMs };
}

export interface FanOutMetered {
  readonly run: FanOutRun;
  readonly events: number;
  readonly deliveries: number;
  readonly producerInvocations: number;
  readonly endpointInvocations: number;
  readonly dynamodb: DynamoDbUsage;
  readonly sqs: SqsUsage;
}

/** `rounds` producer batches, metered, after an unmetered warm-up round (cold senders, the registry's first read). */
export async function meterFanOut(run: FanOutRun, options: FanOutOptions, meter: Meter): Promise<FanOutMetered> {
  meter.dynamodb.start();
  meter.sqs.start();
  await runRound(run, options, 'w', 0, meter);
  const dynamodb = meter.dynamodb.start();
  const sqs = meter.sqs.start();
  let deliveries = 0;
  let endpointInvocations = 0;
  for (let round = 0; round < options.rounds; round++) {
    const result = await runRound(run, options, 'm', round, meter);
    deliveries += result.deliveries;
    endpointInvocations += result.endpointMs.length;
  }
  return { run, events: options.rounds * options.batchSize, deliveries, producerInvocations: options.rounds, endpointInvocations, dynamodb, sqs };
}

/** Wall times of rounds like `meterFanOut`'s, the meter passing through, the runs taking turns. */
export async function timeFanOuts(runs: readonly FanOutRun[], options: FanOutOptions, meter: Meter): Promise<Map<FanOutRun, RoundResult[]>> {
  meter.dynamodb.passThrough();
  meter.sqs.start();
  const timings = new Map<FanOutRun, RoundResult[]>(runs.map((run) => [run, []]));
  for (let round = 0; round < options.rounds; round++) for (const run of runs) timings.get(run)!.push(await runRound(run, options, 't', round, meter));
  return timings;
}

export function median(values: readonly number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
}

/** Per (event, endpoint) delivered; each invocation kind billed at its median batch time. */
export function perDelivery(metered: FanOutMetered, timed: readonly RoundResult[], memoryMb: number) {
  const n = metered.deliveries;
  const producerMedianMs = median(timed.map((r) => r.producerMs));
  const endpointMedianMs = median(timed.flatMap((r) => r.endpointMs));
  const billed = [...Array<number>(metered.producerInvocations).fill(producerMedianMs), ...Array<number>(metered.endpointInvocations).fill(endpointMedianMs)];
  return { usage: usagePer(n, metered, billed, memoryMb), sqsByOperation: perOperation(metered.sqs, n), producerMedianMs, endpointMedianMs };
}

/** Per delivery: the metered units, and Lambda billing each invocation its duration in `billedMs`. */
export function usagePer(n: number, metered: { dynamodb: DynamoDbUsage; sqs: SqsUsage }, billedMs: readonly number[], memoryMb: number): UsagePerEvent {
  return {
    writeUnits: metered.dynamodb.writeUnits / n,
    readUnits: metered.dynamodb.readUnits / n,
    sqsRequests: metered.sqs.billedRequests / n,
    lambdaGbSeconds: lambdaGbSeconds(billedMs, memoryMb) / n,
    lambdaInvocations: billedMs.length / n,
  };
}

/** SQS requests per delivery by operation, the event source's marked `*`. */
export function perOperation(sqs: Pick<SqsUsage, 'requests'>, n: number): Record<string, number> {
  return Object.fromEntries(Object.entries(sqs.requests).map(([operation, count]) => [operation.replace(' (event source)', '*'), count / n]));
}
