/**
 * Fan-out runs for `npm run cost`: what one (event, endpoint) delivery costs when events are
 * routed through the endpoint registry to 1, 3 or 10 endpoints (each subscribed to every event),
 * beside today's single-URL consumer (the one endpoint `default`, no registry).
 *
 * A round is what Lambda's event source and the consumer do with one batch of producer messages:
 * the batch is invoked; with two or more endpoints the consumer routes it, putting one message per
 * endpoint on the queue (SendMessageBatch, recorded by the SQS meter, never sent); those messages
 * are then handed back in batches of the stack's size, as the event source would receive them, and
 * each is delivered on its own. With one endpoint the producer's message is delivered as it is.
 * Every invocation is metered (DynamoDB through the proxy, SQS at the adapter and the event
 * source) in one pass, and timed in another with the consumers taking turns round by round.
 */
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { sqsRecord } from '../../test/helpers/sqs-records';
import { QUEUE_URLS, type Invoke } from './consumers';
import type { DynamoDbUsage } from './metering-proxy';
import { lambdaGbSeconds, type UsagePerEvent } from './prices';
import { eventOfSize, invokeBatch, type Meters } from './runs';
import type { SentMessage, SqsUsage } from './sqs-meter';

/** The registry-routed runs: endpoints per event. */
export const FAN_OUT_ENDPOINTS = [1, 3, 10] as const;
export const FAN_OUT_EVENT_BYTES = 300;

export interface FanOutRun {
  /** `single-URL`, or `N endpoint(s)`. */
  readonly label: string;
  /** Endpoints each event goes to (1 for the single-URL consumer). */
  readonly endpoints: number;
  /** Routed through the registry (false: the single-URL settings). */
  readonly registry: boolean;
  readonly invoke: Invoke;
  /** Event ID prefix, unique per run. */
  readonly prefix: string;
  /** Its endpoints' receivers (one each: a receiver's idempotency store is its own). */
  readonly receivers: readonly { readonly requests: readonly unknown[] }[];
}

export interface FanOutOptions {
  /** Producer batches per pass. */
  readonly rounds: number;
  readonly batchSize: number;
  readonly eventBytes: number;
}

/** One round's invocations and their wall times, ms. */
export interface RoundResult {
  readonly deliveries: number;
  /** The producer batch's invocation. */
  readonly producerMs: number;
  /** Each batch of per-endpoint messages' invocation (none with one endpoint). */
  readonly endpointMs: readonly number[];
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

/** A message the consumer put on the delivery queue, as Lambda's event source hands it over. */
export function recordOfSent(message: SentMessage): SQSRecord {
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, value] of Object.entries(message.attributes)) messageAttributes[name] = lambdaAttribute(value);
  return sqsRecord(message.body, { messageAttributes });
}

function lambdaAttribute(value: MessageAttributeValue): SQSMessageAttributes[string] {
  return { dataType: value.DataType ?? 'String', stringValue: value.StringValue, stringListValues: [], binaryListValues: [] };
}

function producerBatch(run: FanOutRun, options: FanOutOptions, pass: string, round: number): SQSRecord[] {
  return Array.from({ length: options.batchSize }, (_, i) => sqsRecord(eventOfSize(`${run.prefix}_${pass}${round}_${i}`, options.eventBytes)));
}

/**
 * One producer batch through the consumer and, for a fan-out, every per-endpoint message it sent.
 * @throws when a record fails, a message is dead-lettered, or the fan-out is not one message per
 * (event, endpoint): a count of anything else would mean nothing
 */
export async function runRound(
  run: FanOutRun,
  options: FanOutOptions,
  pass: string,
  round: number,
  meters: Pick<Meters, 'sqs'>,
): Promise<RoundResult> {
  meters.sqs.takeSent();
  const received = () => run.receivers.reduce((sum, receiver) => sum + receiver.requests.length, 0);
  const requestsBefore = received();
  const producer = await invokeBatch(run.invoke, producerBatch(run, options, pass, round), meters);
  const failures = (n: number, what: string) => {
    if (n > 0) throw new Error(`${run.label}: ${n} ${what} failed where every event should be delivered`);
  };
  failures(producer.response.batchItemFailures.length, 'producer records');
  const sent = meters.sqs.takeSent();
  const strays = sent.filter((message) => message.queueUrl !== QUEUE_URLS.queue);
  if (strays.length > 0) throw new Error(`${run.label}: ${strays.length} message(s) sent to ${strays[0]!.queueUrl} (dead letters?)`);
  const expected = run.endpoints >= 2 ? options.batchSize * run.endpoints : 0;
  if (sent.length !== expected) throw new Error(`${run.label}: ${sent.length} per-endpoint messages sent, expected ${expected}`);

  const endpointMs: number[] = [];
  for (let i = 0; i < sent.length; i += options.batchSize) {
    const batch = sent.slice(i, i + options.batchSize).map(recordOfSent);
    const { response, durationMs } = await invokeBatch(run.invoke, batch, meters);
    failures(response.batchItemFailures.length, 'per-endpoint records');
    endpointMs.push(durationMs);
  }
  const deliveries = options.batchSize * run.endpoints;
  const requests = received() - requestsBefore;
  if (requests !== deliveries) throw new Error(`${run.label}: the receivers got ${requests} requests for ${deliveries} deliveries`);
  return { deliveries, producerMs: producer.durationMs, endpointMs };
}

/** `rounds` producer batches, metered, after an unmetered warm-up round (cold senders, the registry's first read). */
export async function meterFanOut(run: FanOutRun, options: FanOutOptions, meters: Meters): Promise<FanOutMetered> {
  meters.dynamodb.start();
  meters.sqs.start();
  await runRound(run, options, 'w', 0, meters);
  const dynamodb = meters.dynamodb.start();
  const sqs = meters.sqs.start();
  let deliveries = 0;
  let endpointInvocations = 0;
  for (let round = 0; round < options.rounds; round++) {
    const result = await runRound(run, options, 'm', round, meters);
    deliveries += result.deliveries;
    endpointInvocations += result.endpointMs.length;
  }
  return {
    run,
    events: options.rounds * options.batchSize,
    deliveries,
    producerInvocations: options.rounds,
    endpointInvocations,
    dynamodb,
    sqs,
  };
}

/** Wall times of rounds like `meterFanOut`'s, meter passing through, the runs taking turns round by round. */
export async function timeFanOuts(runs: readonly FanOutRun[], options: FanOutOptions, meters: Meters): Promise<Map<FanOutRun, RoundResult[]>> {
  meters.dynamodb.passThrough();
  meters.sqs.start();
  const timings = new Map<FanOutRun, RoundResult[]>(runs.map((run) => [run, []]));
  for (let round = 0; round < options.rounds; round++) {
    for (const run of runs) timings.get(run)!.push(await runRound(run, options, 't', round, meters));
  }
  return timings;
}

export interface FanOutPerDelivery {
  readonly usage: UsagePerEvent;
  /** SQS requests per delivery by operation (event source's marked `*`). */
  readonly sqsByOperation: Readonly<Record<string, number>>;
  /** The medians each invocation kind is billed at, ms. */
  readonly producerMedianMs: number;
  readonly endpointMedianMs: number;
}

/**
 * Per (event, endpoint) delivered. Lambda: each producer invocation billed at the median producer
 * batch time, each per-endpoint invocation at the median per-endpoint batch time (a few stalled
 * batches on a shared machine would otherwise decide the figure).
 */
export function perDelivery(metered: FanOutMetered, timed: readonly RoundResult[], memoryMb: number): FanOutPerDelivery {
  const n = metered.deliveries;
  const producerMedianMs = median(timed.map((r) => r.producerMs));
  const endpointMedianMs = median(timed.flatMap((r) => r.endpointMs));
  const billed = [
    ...Array<number>(metered.producerInvocations).fill(producerMedianMs),
    ...Array<number>(metered.endpointInvocations).fill(endpointMedianMs),
  ];
  const sqsByOperation = Object.fromEntries(
    Object.entries(metered.sqs.requests).map(([operation, count]) => [operation.replace(' (event source)', '*'), count / n]),
  );
  return {
    usage: {
      writeUnits: metered.dynamodb.writeUnits / n,
      readUnits: metered.dynamodb.readUnits / n,
      sqsRequests: metered.sqs.billedRequests / n,
      lambdaGbSeconds: lambdaGbSeconds(billed, memoryMb) / n,
      lambdaInvocations: (metered.producerInvocations + metered.endpointInvocations) / n,
    },
    sqsByOperation,
    producerMedianMs,
    endpointMedianMs,
  };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
