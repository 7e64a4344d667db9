/**
 * Bad input at the batch level (docs/contract.md §4: one bad message never fails or delays the others): the
 * bad-input corpus and generated bad messages, mixed into batches with valid events, through the
 * real consumer handler module against fauxqs, dynalite and a loopback receiver. The test plays
 * the event source mapping: it receives real messages, invokes the handler, then deletes what
 * the response does not report.
 */
import { ReceiveMessageCommand, SendMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse } from 'aws-lambda';
import fc from 'fast-check';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DeadLetterReason } from '../../lib/deliver';
import { SHIPMENT_STATUSES } from '../../lib/event';
import type { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { DEFAULT_ENDPOINT as ENDPOINT, type DeliveryRecord } from '../../lib/ledger/ledger';
import { BAD_INPUT_CORPUS, sqsCanCarry, type BadInputCase } from '../fixtures/bad-input/corpus';
import { isolateEachTest, lambdaContext, useConsumerHarness, type ConsumerHarness, type Handler, type Queues } from '../helpers/consumer-harness';
import type { TestReceiver } from '../helpers/receiver';

/** Long, so a message the handler wrongly left in flight cannot come back during the test. */
const QUEUE_VISIBILITY_SECONDS = 60;
const BATCH_SIZE = 10;

interface DeadLetter {
  readonly body: string | undefined;
  readonly reason: string | undefined;
  readonly eventId: string | undefined;
}

let harness: ConsumerHarness;
let receiver: TestReceiver;
let sqs: SQSClient;
let ledger: DynamoDbLedger;

useConsumerHarness('bad-input', (started) => {
  harness = started;
  ({ receiver, sqs, ledger } = started);
});

/** The handler's logs and metric documents, kept out of the report and checked for payloads. */
let logs: string[] = [];
isolateEachTest((lines) => (logs = lines));

// ---- The event source mapping, played by the test ---------------------------------------

const createQueues = () => harness.createQueues(QUEUE_VISIBILITY_SECONDS);

/** A cold start of the handler, wired to these queues. */
function coldStart(queues: Queues): Promise<Handler> {
  return harness.coldStart({
    HANDOFF_ATTEMPT_TIMEOUT_MS: '5000',
    HANDOFF_BATCH_SIZE: String(BATCH_SIZE),
    HANDOFF_QUEUE_URL: queues.queueUrl,
    HANDOFF_DEAD_LETTER_QUEUE_URL: queues.deadLetterQueueUrl,
  });
}

/** Receives exactly `count` messages, deleting them if asked. */
function receive(queueUrl: string, count: number, options: { delete?: boolean } = {}) {
  return harness.receive(queueUrl, count, options);
}

async function send(queueUrl: string, bodies: readonly string[]): Promise<void> {
  for (const body of bodies) await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
}


async function receiveNow(queueUrl: string): Promise<Message[]> {
  const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }));
  return Messages;
}

/**
 * One invocation as the event source mapping makes it. A throw out of the handler would return
 * every message of the batch, so it fails the test here rather than being retried.
 */
function invoke(handler: Handler, queueUrl: string, messages: readonly Message[], requestId: string): Promise<SQSBatchResponse> {
  return harness.invoke(handler, queueUrl, messages, lambdaContext(requestId));
}

/** Drains the dead-letter queue of exactly `count` messages, sorted by body. */
async function drainDeadLetters(deadLetterQueueUrl: string, count: number): Promise<DeadLetter[]> {
  const messages = await receive(deadLetterQueueUrl, count, { delete: true });
  return messages.map(deadLetter).sort(byBody);
}

function deadLetter(m: Message): DeadLetter {
  return { body: m.Body, reason: m.MessageAttributes?.reason?.StringValue, eventId: m.MessageAttributes?.eventId?.StringValue };
}

const byBody = (a: { body?: string }, b: { body?: string }) => ((a.body ?? '') < (b.body ?? '') ? -1 : a.body === b.body ? 0 : 1);

function validEvent(id: string, status: string = 'delivered'): string {
  return JSON.stringify({ id, shipmentId: 'shp_2002', status, occurredAt: '2026-12-02T10:15:00Z', data: { carrier: 'acme' } });
}

/** `a` and `b` interleaved, then cut into batches of `size`. */
function interleavedBatches(a: readonly string[], b: readonly string[], size: number): string[][] {
  const mixed = Array.from({ length: Math.max(a.length, b.length) }, (_, i) => [a[i], b[i]]).flat().filter((x) => x !== undefined);
  return Array.from({ length: Math.ceil(mixed.length / size) }, (_, i) => mixed.slice(i * size, (i + 1) * size));
}

// ---- The corpus, through the handler ----------------------------------------------------

describe('Handler: consumer, on bad input', () => {
  it('dead-letters every corpus message SQS can carry and delivers every valid event of its batches once', async () => {
    // Prepare: the events the identity cases reuse the IDs of, admitted (and delivered) first.
    const corpus = BAD_INPUT_CORPUS.filter((c) => sqsCanCarry(c.body));
    const queues = await createQueues();
    const handler = await coldStart(queues);
    const firsts = corpus.flatMap((c) => (c.admittedFirst === undefined ? [] : [c.admittedFirst]));
    await send(queues.queueUrl, firsts);
    expect(await invoke(handler, queues.queueUrl, await receive(queues.queueUrl, firsts.length), 'admit')).toEqual({
      batchItemFailures: [],
    });
    const admittedIds = corpus.flatMap((c) => (c.admittedFirst === undefined ? [] : [c.eventId!]));
    const admittedRows = await Promise.all(admittedIds.map((eventId) => ledger.get({ eventId, endpoint: ENDPOINT })));
    expect(admittedRows.map((row) => row?.state)).toEqual(admittedIds.map(() => 'delivered'));

    // One valid event beside each bad message, interleaved, in batches of ten.
    const validIds = corpus.map((_, i) => `evt_beside_bad_${i}`);
    const batches = interleavedBatches(
      corpus.map((c) => c.body),
      validIds.map((id) => validEvent(id)),
      BATCH_SIZE,
    );
    logs.length = 0;

    // Act
    const responses: SQSBatchResponse[] = [];
    for (const [i, bodies] of batches.entries()) {
      await send(queues.queueUrl, bodies);
      const messages = await receive(queues.queueUrl, bodies.length);
      responses.push(await invoke(handler, queues.queueUrl, messages, `batch-${i}`));
    }

    // Assess: no batch reported anything, and nothing is left on the queue.
    expect(responses).toEqual(batches.map(() => ({ batchItemFailures: [] })));
    expect(await receiveNow(queues.queueUrl)).toEqual([]);

    // Assess: each bad message is on the dead-letter queue, unchanged, with its reason and ID.
    const expected: DeadLetter[] = corpus.map((c) => ({ body: c.body, reason: c.reason, eventId: c.eventId })).sort(byBody);
    expect(await drainDeadLetters(queues.deadLetterQueueUrl, corpus.length)).toEqual(expected);

    // Assess: every valid event reached the receiver exactly once; no bad message reached it.
    expect(validIds.map((id) => receiver.requestsFor(id).length)).toEqual(validIds.map(() => 1));
    expect(receiver.applied).toEqual(expect.arrayContaining(validIds));
    const badIds = corpus.flatMap((c) => (c.eventId === undefined ? [] : [c.eventId]));
    expect(badIds.map((id) => receiver.requestsFor(id).length)).toEqual(badIds.map((id) => (admittedIds.includes(id) ? 1 : 0)));

    // Assess: the ledger. Admitted rows are left exactly as they were; a bad message with a
    // readable ID and no row before gets a dead row with reason `invalid`.
    expect(await Promise.all(admittedIds.map((eventId) => ledger.get({ eventId, endpoint: ENDPOINT })))).toEqual(admittedRows);
    const deadOnArrival = corpus.filter((c) => c.eventId !== undefined && c.admittedFirst === undefined);
    const deadRows = await Promise.all(deadOnArrival.map((c) => ledger.get({ eventId: c.eventId!, endpoint: ENDPOINT })));
    expect(deadRows.map((row) => [row?.eventId, row?.state, row?.deadReason])).toEqual(
      deadOnArrival.map((c) => [c.eventId, 'dead', 'invalid']),
    );
    expect(deadRows.every((row: DeliveryRecord | undefined) => row?.body === undefined)).toBe(true);

    // Assess: the logs name events, never payload contents.
    expect(logs.join('\n')).not.toContain('shp_');
  });

  // ---- Generated batches ----------------------------------------------------------------

  describe('with generated batches', () => {
    /** Events admitted once, before the property runs: the targets of conflicts and duplicates. */
    const ADMITTED = ['evt_prop_admitted_1', 'evt_prop_admitted_2'];
    let queues: Queues;
    let handler: Handler;
    let run = 0;

    beforeAll(async () => {
      queues = await createQueues();
    });

    beforeEach(async () => {
      handler = await coldStart(queues);
    });

    /**
     * A message of the batch and what must become of it, as drawn: `ID_SLOT` in the body (and as
     * the eventId) stands for an ID fresh to the run, so a shrunk re-run never meets an earlier
     * run's rows, and a counterexample still reads as data.
     */
    const ID_SLOT = '@ID@';
    type Planned =
      | { readonly kind: 'valid' | 'duplicate'; readonly body: string; readonly eventId: string }
      | { readonly kind: 'dead-letter'; readonly body: string; readonly reason: DeadLetterReason; readonly eventId?: string };

    const status = fc.constantFrom(...SHIPMENT_STATUSES);
    /**
     * A character SQS carries, within the Basic Multilingual Plane: fauxqs 1.9.2 refuses
     * characters beyond it (U+10000 and up), which SQS itself accepts.
     */
    const bmpCharacter = fc.oneof(
      fc.constantFrom('\t', '\n', '\r'),
      fc.integer({ min: 0x20, max: 0xfffd }).filter((c) => c < 0xd800 || c > 0xdfff).map((c) => String.fromCharCode(c)),
    );
    const valid = status.map((s): Planned => ({ kind: 'valid', body: validEvent(ID_SLOT, s), eventId: ID_SLOT }));
    const corpusCase = fc.constantFrom(
      ...BAD_INPUT_CORPUS.filter((c: BadInputCase) => c.reason === 'invalid' && c.admittedFirst === undefined && sqsCanCarry(c.body)),
    );
    const invalid = fc.oneof(
      corpusCase.map((c): Planned => ({ kind: 'dead-letter', body: c.body, reason: 'invalid', ...(c.eventId ? { eventId: c.eventId } : {}) })),
      // Text that is not an event at all.
      fc
        .string({ unit: bmpCharacter, minLength: 1, maxLength: 80 })
        .filter((text) => !text.trimStart().startsWith('{') && !text.includes(ID_SLOT))
        .map((text): Planned => ({ kind: 'dead-letter', body: text, reason: 'invalid' })),
      // A readable ID with a bad field.
      fc
        .oneof(
          fc.record({ field: fc.constant('status'), value: fc.string({ maxLength: 20 }).filter((v) => !(SHIPMENT_STATUSES as readonly string[]).includes(v)) }),
          fc.record({ field: fc.constantFrom('priority', 'type', 'Id', 'constructor', '__proto__'), value: fc.jsonValue({ maxDepth: 2 }) }),
          fc.record({ field: fc.constant('shipmentId'), value: fc.constantFrom('', 's'.repeat(129), 'shp\u0000', 42, null) }),
          fc.record({ field: fc.constant('occurredAt'), value: fc.constantFrom('2026-12-02', 'yesterday', 1796206500, '2026-12-02T10:15:00') }),
        )
        .map(({ field, value }): Planned => ({
          kind: 'dead-letter',
          // A computed key defines an own property, even for `__proto__`.
          body: JSON.stringify({ ...(JSON.parse(validEvent(ID_SLOT)) as object), [field]: value }),
          reason: 'invalid',
          eventId: ID_SLOT,
        })),
      // An ID outside the alphabet: nothing readable.
      fc.constantFrom(' ', '/', 'é', '#').map((bad): Planned => ({ kind: 'dead-letter', body: validEvent(`${ID_SLOT}${bad}`), reason: 'invalid' })),
    );
    const conflict = fc
      .record({ eventId: fc.constantFrom(...ADMITTED), status: status.filter((s) => s !== 'delivered') })
      .map(({ eventId, status: s }): Planned => ({ kind: 'dead-letter', body: validEvent(eventId, s), reason: 'identity-conflict', eventId }));
    /** The admitted content spelled otherwise: the same event, acknowledged without a request. */
    const duplicate = fc.constantFrom(...ADMITTED).map((eventId): Planned => ({
      kind: 'duplicate',
      body: JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(validEvent(eventId)) as object).reverse()), null, 1),
      eventId,
    }));
    const batch = fc.array(fc.oneof({ arbitrary: valid, weight: 3 }, { arbitrary: invalid, weight: 3 }, conflict, duplicate), {
      minLength: 1,
      maxLength: BATCH_SIZE,
    });

    /** Fills each message's ID slot with an ID fresh to this run. */
    function materialize(drawn: readonly Planned[], runNumber: number): Planned[] {
      return drawn.map((p, i) => {
        const id = `evt_prop_${runNumber}_${i + 1}`;
        const eventId = p.eventId === ID_SLOT ? id : p.eventId;
        return { ...p, body: p.body.replaceAll(ID_SLOT, id), ...(eventId !== undefined ? { eventId } : {}) } as Planned;
      });
    }

    it('answers every generated batch with no failures, dead-letters its bad messages and delivers its valid ones once', async () => {
      // Prepare
      await send(queues.queueUrl, ADMITTED.map((id) => validEvent(id)));
      expect(await invoke(handler, queues.queueUrl, await receive(queues.queueUrl, ADMITTED.length), 'admit')).toEqual({
        batchItemFailures: [],
      });
      const admittedRows = await Promise.all(ADMITTED.map((eventId) => ledger.get({ eventId, endpoint: ENDPOINT })));

      await fc.assert(
        fc.asyncProperty(batch, async (drawn) => {
          // Prepare
          run += 1;
          const planned = materialize(drawn, run);
          const requestsBefore = new Map(ADMITTED.map((id) => [id, receiver.requestsFor(id).length]));
          await send(queues.queueUrl, planned.map((p) => p.body));

          // Act
          const response = await invoke(handler, queues.queueUrl, await receive(queues.queueUrl, planned.length), `run-${run}`);

          // Assess
          expect(response).toEqual({ batchItemFailures: [] });
          const deadLettered = planned.filter((p) => p.kind === 'dead-letter');
          expect(await drainDeadLetters(queues.deadLetterQueueUrl, deadLettered.length)).toEqual(
            deadLettered.map((p) => ({ body: p.body, reason: p.reason, eventId: p.eventId })).sort(byBody),
          );
          for (const p of planned) {
            if (p.kind === 'valid') expect(receiver.requestsFor(p.eventId)).toHaveLength(1);
          }
          for (const id of ADMITTED) expect(receiver.requestsFor(id)).toHaveLength(requestsBefore.get(id)!);
          expect(await receiveNow(queues.queueUrl)).toEqual([]);
        }),
        { numRuns: 40 },
      );

      // Assess: conflicts and duplicates left the admitted rows exactly as they were.
      expect(await Promise.all(ADMITTED.map((eventId) => ledger.get({ eventId, endpoint: ENDPOINT })))).toEqual(admittedRows);
    });
  });
});
