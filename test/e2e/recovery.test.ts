/**
 * Stuck-work recovery end to end (docs/contract.md §12 "Stuck work"), in the sandbox, both ways a
 * pending delivery loses its message:
 * - a delivery's first attempt draws a 503, the consumer schedules the retry on its message, and
 *   the message then leaves the delivery queue for the redrive queue, as SQS's redrive moves it
 *   after `maxReceiveCount` receives. The sandbox's recovery timer sends it back;
 * - a dead delivery is replayed and the enqueue that follows never happens (the test writes the
 *   replay to the ledger itself). The timer finds the row in the pending listing and enqueues it.
 * Either way it is delivered, once.
 *
 * The move is the test's: it purges the delivery queue (PurgeQueue removes the message in flight
 * too) and puts the same message, body and attributes, on the sandbox's redrive queue. Reaching the
 * receive count for real would need the sandbox's own workers to keep failing on the message; that
 * SQS (here fauxqs) moves it there is shown by test/integration/recovery.test.ts.
 *
 * Timings shortened for the test: the retry waits 8 s (time enough to move the message first),
 * the queue's visibility timeout is 10 s and the timer runs every 500 ms.
 *
 * What the purge cannot reach is a copy already in a worker's hands, so the test leaves none: the
 * event goes in as the endpoint message fan-out would make of it (lib/queue/sqs-queue.ts `enqueue`),
 * so no producer message's fan-out can send one after the purge; and the visibility timeout is long
 * enough that a first attempt slowed by a busy machine does not see its message received again by
 * another worker (whose copy, claimed once the retry is due, would deliver it without recovery).
 */
import { createServer } from 'node:http';
import { PurgeQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { SqsDeliveryQueue } from '../../lib/queue/sqs-queue';
import { listenOnLoopback, type Listening } from '../helpers/loopback';
import type { SandboxProcess } from '../helpers/sandbox';
import { useSandboxProcess } from '../helpers/sandbox-suite';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';
import { MessageSeal, sealedAttributes } from '../../lib/queue/seal';

const SETTLE_MS = 45_000;

let receiver: Listening;
/** Every request's event ID and the status it was answered with, in arrival order. */
const arrivals: { eventId: string; status: number }[] = [];
let sandbox: SandboxProcess;
let clients: SandboxClients;

useSandboxProcess(
  async () => {
    // To an event's first request 503 (400 for the one to replay), 200 afterwards.
    receiver = await listenOnLoopback(
      createServer((request, response) => {
        request.resume();
        request.on('end', () => {
          const eventId = String(request.headers['idempotency-key'] ?? '');
          const status = arrivals.some((a) => a.eventId === eventId) ? 200 : eventId === 'evt_replayed' ? 400 : 503;
          arrivals.push({ eventId, status });
          response.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
        });
      }),
    );
    return {
      endpoints: [{ name: 'billing', url: receiver.url, eventTypes: ['*'] }],
      env: {
        HANDOFF_RETRY_SCHEDULE: '8',
        HANDOFF_MAX_ATTEMPTS: '3',
        HANDOFF_ATTEMPT_TIMEOUT_MS: '1000',
        HANDOFF_VISIBILITY_TIMEOUT_SECONDS: '10',
        HANDOFF_RECOVERY_INTERVAL_MS: '500',
      },
    };
  },
  (started) => ({ sandbox, clients } = started),
  async () => {
    await receiver?.close();
  },
);

describe('Stuck-work recovery in the sandbox', () => {
  it(
    'delivers a pending delivery whose message SQS redrove after a 503, through the recovery timer, once',
    async () => {
      // Prepare: the first attempt fails, then its message is moved to the redrive queue.
      const redriveQueueUrl = sandbox.ready.redriveQueueUrl;
      if (redriveQueueUrl === undefined) throw new Error('the sandbox names no redrive queue');
      const key = { eventId: 'evt_stranded', endpoint: 'billing' };
      const seal = new MessageSeal(sandbox.ready.sealKey);
      const queue = new SqsDeliveryQueue({ client: clients.sqs, queueUrl: sandbox.ready.queueUrl, deadLetterQueueUrl: sandbox.ready.deadLetterQueueUrl, seal });
      const event = { id: key.eventId, shipmentId: 'shp_1', status: 'delivered', occurredAt: '2026-12-03T05:00:00Z' };
      await queue.enqueue(JSON.stringify(event), { endpoint: key.endpoint });
      await eventually('the first attempt to fail', async () => {
        const record = await clients.ledger.get(key);
        return record?.state === 'pending' && record.attempts === 1 && record.nextAttemptAt !== undefined ? record : undefined;
      }, { timeoutMs: SETTLE_MS, intervalMs: 50 });
      await clients.sqs.send(new PurgeQueueCommand({ QueueUrl: sandbox.ready.queueUrl }));
      await clients.sqs.send(
        new SendMessageCommand({
          QueueUrl: redriveQueueUrl,
          MessageBody: JSON.stringify(event),
          MessageAttributes: sealedAttributes(seal, JSON.stringify(event), { endpoint: key.endpoint }),
        }),
      );

      // Act: the timer's doing.
      const line = await sandbox.waitForLog(/evt_stranded → billing sent back to the queue/, SETTLE_MS);
      const delivered = await eventually('the delivery to be delivered', async () => {
        const record = await clients.ledger.get(key);
        return record?.state === 'delivered' ? record : undefined;
      }, { timeoutMs: SETTLE_MS });

      // Assess: one failed request, then one accepted, from the recovered message.
      expect(line).toMatch(/^.*recovery: evt_stranded → billing sent back to the queue \(redriven by SQS; recovery 1\)/);
      expect(delivered.attempts).toBe(2);
      expect(arrivals.filter((a) => a.eventId === key.eventId)).toEqual([
        { eventId: key.eventId, status: 503 },
        { eventId: key.eventId, status: 200 },
      ]);
      expect(await clients.readDeadLetters()).toEqual([]);
    },
    3 * SETTLE_MS,
  );

  it(
    'delivers a replayed delivery whose enqueue never happened, through the recovery timer, once',
    async () => {
      // Prepare: rejected (dead), then replayed in the ledger with no message sent.
      const key = { eventId: 'evt_replayed', endpoint: 'billing' };
      const queue = new SqsDeliveryQueue({ client: clients.sqs, queueUrl: sandbox.ready.queueUrl, deadLetterQueueUrl: sandbox.ready.deadLetterQueueUrl, seal: new MessageSeal(sandbox.ready.sealKey) });
      const event = { id: key.eventId, shipmentId: 'shp_2', status: 'delivered', occurredAt: '2026-12-03T05:00:00Z' };
      await queue.enqueue(JSON.stringify(event), { endpoint: key.endpoint });
      await eventually('the delivery to die', async () => ((await clients.ledger.get(key))?.state === 'dead' ? true : undefined), { timeoutMs: SETTLE_MS, intervalMs: 50 });
      await clients.ledger.replay({ ...key, operator: 'e2e', reason: 'receiver fixed', nowMs: Date.now() });

      // Act: the timer's doing, once the grace (the visibility timeout plus 1 s) has passed.
      const line = await sandbox.waitForLog(/evt_replayed → billing enqueued again/, SETTLE_MS);
      const delivered = await eventually('the delivery to be delivered', async () => {
        const record = await clients.ledger.get(key);
        return record?.state === 'delivered' ? record : undefined;
      }, { timeoutMs: SETTLE_MS });

      // Assess: the rejected request, then one accepted, from the recovered message.
      expect(line).toMatch(/^.*recovery: evt_replayed → billing enqueued again \(pending/);
      expect(delivered).toMatchObject({ attempts: 1, replays: 1 });
      expect(arrivals.filter((a) => a.eventId === key.eventId)).toEqual([
        { eventId: key.eventId, status: 400 },
        { eventId: key.eventId, status: 200 },
      ]);
    },
    3 * SETTLE_MS,
  );
});
