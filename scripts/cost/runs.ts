/**
 * The runs `npm run cost` measures, each on the metering proxy (DynamoDB) and the SQS meter:
 *
 * - scenarios: one handoff message at a time through the batch use case (delivered, duplicate,
 *   retried, dead-lettered, identity conflict, invalid), each checked against the queue decisions
 *   it must lead to, since a count means nothing otherwise;
 * - workload: batches of delivered events through one consumer, metered; then timed as Lambda
 *   bills them, the consumers taking turns;
 * - mix: thousands of handoff deliveries at once (mostly delivered, some retried, some dead), for
 *   the writes each partition key value takes.
 */
import { performance } from 'node:perf_hooks';
import type { SQSRecord } from 'aws-lambda';
import pLimit from 'p-limit';
import type { DeadLetterReason, DeliveryResult, QueueDecision } from '../../lib/deliver';
import { sqsRecord } from '../../test/helpers/sqs-records';
import type { ScriptedResponse, TestReceiver } from '../../test/helpers/receiver';
import type { Invoke } from './consumers';
import type { DynamoDbUsage, MeteringProxy } from './metering-proxy';
import type { SqsMeter, SqsUsage } from './sqs-meter';

export interface Meters {
  readonly dynamodb: MeteringProxy;
  readonly sqs: SqsMeter;
  readonly receiver: TestReceiver;
}

/**
 * A valid event (docs/contract.md §2) whose message body is exactly `bytes` long. The padding is
 * pseudo-random letters and digits, fixed by the ID: a run of one repeated character would flatter
 * any compression of the stored body.
 */
export function eventOfSize(id: string, bytes: number, status = 'in_transit', shipmentId = 'shp_1001'): string {
  const event = {
    id,
    shipmentId,
    status,
    occurredAt: '2026-12-02T10:15:00Z',
    data: { carrier: 'acme', hub: 'FRA-3', note: '' },
  };
  const padding = bytes - JSON.stringify(event).length;
  if (padding < 0) throw new Error(`an event with ID ${id} takes more than ${bytes} bytes`);
  event.data.note = filler(id, padding);
  return JSON.stringify(event);
}

const FILLER_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function filler(seedText: string, length: number): string {
  let seed = [...seedText].reduce((hash, char) => (Math.imul(hash, 31) + char.charCodeAt(0)) >>> 0, 7);
  let text = '';
  for (let i = 0; i < length; i++) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    text += FILLER_ALPHABET[(seed >>> 16) % FILLER_ALPHABET.length];
  }
  return text;
}

/** Invokes with one batch and tells the event-source meter what Lambda's poller did for it. */
export async function invokeBatch(invoke: Invoke, records: readonly SQSRecord[], meters: Pick<Meters, 'sqs'>) {
  const startedAt = performance.now();
  const response = await invoke(records);
  const durationMs = performance.now() - startedAt;
  meters.sqs.eventSource(records, response.batchItemFailures.length);
  return { response, durationMs };
}

// --- scenarios --------------------------------------------------------------------------------

export interface ScenarioClock {
  ms: number;
}

type Send = (body: string) => Promise<QueueDecision>;

export interface Scenario {
  readonly name: string;
  /** The receiver's answers, in order. */
  readonly answers: readonly ScriptedResponse[];
  /** Work done before counting starts (the first delivery a duplicate repeats). */
  readonly prepare?: (send: Send, eventId: string) => Promise<void>;
  /** The counted messages. */
  readonly run: (send: Send, eventId: string, clock: ScenarioClock) => Promise<void>;
  /** The decisions expected, as `action:why-or-reason`. */
  readonly expected: readonly string[];
}

export const SCENARIO_EVENT_BYTES = 300;

const event = (id: string, status?: string) => eventOfSize(id, SCENARIO_EVENT_BYTES, status);

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'delivered on the first attempt',
    answers: [200],
    run: async (send, id) => void (await send(event(id))),
    expected: ['ack:delivered'],
  },
  {
    name: 'duplicate message after delivery',
    answers: [200],
    prepare: async (send, id) => void (await send(event(id))),
    run: async (send, id) => void (await send(event(id))),
    expected: ['ack:duplicate'],
  },
  {
    name: 'retried: 503, 503, then 200',
    answers: [503, 503, 200],
    run: async (send, id, clock) => {
      for (let attempt = 1; attempt <= 3; attempt++) {
        const decision = await send(event(id));
        // The queue's visibility timeout does the waiting; here the clock jumps instead.
        if (decision.action === 'retry') clock.ms += decision.afterSeconds * 1000;
      }
    },
    expected: ['retry:temporary', 'retry:temporary', 'ack:delivered'],
  },
  {
    name: 'dead-lettered: 400',
    answers: [{ status: 400, body: '{"error":"unknown carrier"}' }],
    run: async (send, id) => void (await send(event(id))),
    expected: ['dead-letter:rejected'],
  },
  {
    name: 'identity conflict after delivery',
    answers: [200],
    prepare: async (send, id) => void (await send(event(id))),
    run: async (send, id) => void (await send(event(id, 'exception'))),
    expected: ['dead-letter:identity-conflict'],
  },
  {
    name: 'invalid message with a readable ID',
    answers: [],
    run: async (send, id) => void (await send(JSON.stringify({ id, status: 'lost' }))),
    expected: ['dead-letter:invalid'],
  },
];

export interface ScenarioResult {
  readonly scenario: Scenario;
  readonly dynamodb: DynamoDbUsage;
  readonly sqs: SqsUsage;
}

/**
 * Runs a scenario through `invoke` (a handoff consumer on `clock`, reporting its results to
 * `results`), one message per invocation.
 */
export async function runScenario(
  scenario: Scenario,
  eventId: string,
  handoff: { invoke: Invoke; clock: ScenarioClock; results: DeliveryResult[] },
  meters: Meters,
): Promise<ScenarioResult> {
  handoff.clock.ms = Date.now();
  if (scenario.answers.length > 0) meters.receiver.respondTo(eventId, ...scenario.answers);
  const send: Send = async (body) => {
    handoff.results.length = 0;
    meters.sqs.takeSent();
    await invokeBatch(handoff.invoke, [sqsRecord(body)], meters);
    const result = handoff.results[0];
    if (result !== undefined) return result.decision;
    // An invalid message is dead-lettered by routing, never reaching the delivery: its dead letter says so.
    const letter = meters.sqs.takeSent().find((message) => message.attributes.reason?.StringValue !== undefined);
    if (letter !== undefined) {
      return {
        action: 'dead-letter',
        reason: letter.attributes.reason!.StringValue as DeadLetterReason,
        eventId: letter.attributes.eventId?.StringValue,
        detail: '',
      };
    }
    throw new Error(`${scenario.name}: the delivery threw (see the ledger and the receiver)`);
  };
  const decisions: string[] = [];
  const recording: Send = async (body) => {
    const decision = await send(body);
    decisions.push(describeDecision(decision));
    return decision;
  };
  // The preparation is counted apart and dropped.
  meters.dynamodb.start();
  meters.sqs.start();
  await scenario.prepare?.(send, eventId);
  const dynamodb = meters.dynamodb.start();
  const sqs = meters.sqs.start();
  await scenario.run(recording, eventId, handoff.clock);
  if (JSON.stringify(decisions) !== JSON.stringify(scenario.expected)) {
    throw new Error(`${scenario.name}: expected ${scenario.expected.join(', ')}, got ${decisions.join(', ')}`);
  }
  return { scenario, dynamodb, sqs };
}

function describeDecision(decision: QueueDecision): string {
  switch (decision.action) {
    case 'ack':
    case 'retry':
      return `${decision.action}:${decision.why}`;
    case 'dead-letter':
      return `${decision.action}:${decision.reason}`;
  }
}

// --- workload ---------------------------------------------------------------------------------

export interface WorkloadResult {
  readonly delivered: number;
  readonly invocations: number;
  readonly dynamodb: DynamoDbUsage;
  readonly sqs: SqsUsage;
}

export interface WorkloadOptions {
  readonly prefix: string;
  readonly eventBytes: number;
  readonly batches: number;
  readonly batchSize: number;
}

function workloadBatch(options: WorkloadOptions, pass: string, round: number): SQSRecord[] {
  return Array.from({ length: options.batchSize }, (_, i) =>
    sqsRecord(eventOfSize(`${options.prefix}_${pass}${round}_${i}`, options.eventBytes)),
  );
}

/**
 * `batches` batches of `batchSize` new events of `eventBytes`, all accepted by the receiver, one
 * batch at a time, metered, after an unmetered warm-up batch.
 */
export async function meterWorkload(invoke: Invoke, options: WorkloadOptions, meters: Meters): Promise<WorkloadResult> {
  meters.dynamodb.start();
  meters.sqs.start();
  await invokeBatch(invoke, workloadBatch(options, 'w', 0), meters);
  const dynamodb = meters.dynamodb.start();
  const sqs = meters.sqs.start();
  let failed = 0;
  for (let round = 0; round < options.batches; round++) {
    const { response } = await invokeBatch(invoke, workloadBatch(options, 'm', round), meters);
    failed += response.batchItemFailures.length;
  }
  if (failed > 0) throw new Error(`${options.prefix}: ${failed} records failed where every event should be delivered`);
  return { delivered: options.batches * options.batchSize, invocations: options.batches, dynamodb, sqs };
}

/**
 * Each invocation's wall time, ms (what Lambda bills), for batches like `meterWorkload`'s, with the
 * meter passing requests through (its reads of each item are not in the handler's time). The
 * consumers take turns batch by batch, so load from elsewhere on a shared machine falls on each
 * alike.
 */
export async function timeWorkloads<Name extends string>(
  consumers: readonly { readonly name: Name; readonly invoke: Invoke; readonly options: WorkloadOptions }[],
  meters: Meters,
): Promise<Record<Name, number[]>> {
  meters.dynamodb.passThrough();
  meters.sqs.start();
  const durations = Object.fromEntries(consumers.map((c) => [c.name, [] as number[]])) as Record<Name, number[]>;
  const rounds = Math.max(...consumers.map((c) => c.options.batches));
  for (let round = 0; round < rounds; round++) {
    for (const consumer of consumers) {
      if (round >= consumer.options.batches) continue;
      const { response, durationMs } = await invokeBatch(consumer.invoke, workloadBatch(consumer.options, 't', round), meters);
      if (response.batchItemFailures.length > 0) throw new Error(`${consumer.options.prefix}: a timed batch had failures`);
      durations[consumer.name].push(durationMs);
    }
  }
  return durations;
}

// --- the mix, for hot partitions ---------------------------------------------------------------

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

/**
 * `deliveries` events through a handoff consumer on `clock`, `concurrency` batches at once. Records a
 * retry leaves on the queue go round again once the clock has moved past their wait.
 */
export async function runMix(
  invoke: Invoke,
  clock: { offsetMs: number },
  options: { readonly prefix: string; readonly deliveries: number; readonly batchSize: number; readonly concurrency: number },
  meters: Meters,
): Promise<MixResult> {
  const records = Array.from({ length: options.deliveries }, (_, i) => {
    const id = `${options.prefix}_${i}`;
    const outcome = mixOutcome(i);
    if (outcome === 'dead') meters.receiver.respondTo(id, 400);
    if (outcome === 'retried') meters.receiver.respondTo(id, 503);
    return sqsRecord(eventOfSize(id, SCENARIO_EVENT_BYTES));
  });
  const dynamodb = meters.dynamodb.start({ partitions: true });
  meters.sqs.start();
  const startedAt = performance.now();
  const limit = pLimit(options.concurrency);
  let waiting = records;
  for (let round = 1; waiting.length > 0; round++) {
    if (round > 3) throw new Error(`${options.prefix}: ${waiting.length} records still failing after ${round - 1} rounds`);
    const batches: SQSRecord[][] = [];
    for (let i = 0; i < waiting.length; i += options.batchSize) batches.push(waiting.slice(i, i + options.batchSize));
    const failedIds = new Set<string>();
    await Promise.all(
      batches.map((batch) =>
        limit(async () => {
          const { response } = await invokeBatch(invoke, batch, meters);
          for (const failure of response.batchItemFailures) failedIds.add(failure.itemIdentifier);
        }),
      ),
    );
    waiting = waiting.filter((record) => failedIds.has(record.messageId));
    // The first retry waits 30 s under the default policy: the queue holds the message that long.
    clock.offsetMs += 60 * 60 * 1000;
  }
  const seconds = (performance.now() - startedAt) / 1000;
  const outcomes = records.map((_, i) => mixOutcome(i));
  return {
    deliveries: options.deliveries,
    delivered: outcomes.filter((o) => o !== 'dead').length,
    retried: outcomes.filter((o) => o === 'retried').length,
    dead: outcomes.filter((o) => o === 'dead').length,
    seconds,
    dynamodb,
  };
}

export interface PartitionShare {
  /** `table` or `table/index`. */
  readonly scope: string;
  readonly units: number;
  readonly values: number;
  readonly largestValue: string;
  readonly largestUnits: number;
}

/**
 * Per table and index: the write units on its busiest partition key value. A partition key value
 * takes about 1,000 write units a second at most, so what matters is its share of all the run's
 * writes: that share of the table's traffic lands on one partition, whatever the traffic.
 */
export function partitionShares(usage: DynamoDbUsage): { total: number; scopes: PartitionShare[] } {
  const scopes: PartitionShare[] = [];
  let total = 0;
  for (const [scope, values] of usage.partitions ?? []) {
    let units = 0;
    let largestValue = '';
    let largestUnits = 0;
    for (const [value, n] of values) {
      units += n;
      if (n > largestUnits) [largestValue, largestUnits] = [value, n];
    }
    total += units;
    scopes.push({ scope, units, values: values.size, largestValue, largestUnits });
  }
  return { total, scopes };
}
