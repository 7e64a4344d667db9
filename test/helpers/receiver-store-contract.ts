/**
 * The receiver kit's contract: what `createReceiver` over an IdempotencyStore promises, held
 * against every store (in memory in unit tests, DynamoDB against dynalite in integration tests).
 * Requests are signed as handoff signs them; time comes from the test's clock.
 */
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReceiver, REPLAYED_HEADER, type ActionResult, type Receiver, type WebhookResponse } from '../../lib/receiver/receiver';
import type { IdempotencyStore } from '../../lib/receiver/store';

export const CONTRACT_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

export interface StoreUnderTest {
  readonly store: IdempotencyStore;
  close(): Promise<void>;
}

/** Options every store under test is created with, so the time-based cases agree. */
export const CONTRACT_STORE_OPTIONS = { retentionSeconds: 3600, leaseSeconds: 60 } as const;

/** A request as handoff sends it: canonical JSON body, Standard Webhooks headers signed at `nowMs`. */
export function signedRequest(eventId: string, nowMs: number, body = JSON.stringify({ id: eventId, status: 'delivered' }), secret = CONTRACT_SECRET) {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'idempotency-key': eventId,
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(nowMs / 1000)),
      'webhook-signature': new Webhook(secret).sign(eventId, new Date(nowMs), body),
    },
    body,
  };
}

/** A gate an action can wait on, opened by the test. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

export function receiverStoreContract(name: string, create: () => Promise<StoreUnderTest>) {
  describe(`Receiver kit contract: ${name}`, () => {
    let underTest: StoreUnderTest;
    let nowMs: number;
    let runs: string[];
    let answer: (webhookId: string) => ActionResult | Promise<ActionResult>;
    let receive: Receiver;
    let counter = 0;
    /** Unique per case: DynamoDB stores are shared by the cases of one file. */
    let id: (name: string) => string;

    beforeEach(async () => {
      underTest = await create();
      nowMs = Date.UTC(2026, 11, 2, 10, 15, 0);
      runs = [];
      answer = () => ({ status: 200, body: { received: true, run: runs.length } });
      counter += 1;
      const prefix = `evt_${Date.now()}_${counter}`;
      id = (suffix) => `${prefix}_${suffix}`;
      receive = createReceiver({
        secrets: [CONTRACT_SECRET],
        store: underTest.store,
        clock: () => nowMs,
        onActionError: () => {},
        action: (webhook) => {
          runs.push(webhook.webhookId);
          return answer(webhook.webhookId);
        },
      });
    });

    afterEach(async () => {
      await underTest.close();
    });

    /** Makes the action wait for the gate it answers, then answer 200 with `body`. */
    function answerOnceOpened(body: string): ReturnType<typeof gate> {
      const action = gate();
      answer = async () => {
        await action.opened;
        return { status: 200, body };
      };
      return action;
    }

    it('answers a repeat with the stored response, byte for byte, without running the action', async () => {
      const eventId = id('replay');
      answer = () => ({ status: 201, body: '{"ok":true,  "note":"spacing kept"}', contentType: 'application/vnd.acme+json' });

      const first = await receive(signedRequest(eventId, nowMs));
      nowMs += 30_000;
      const repeat = await receive(signedRequest(eventId, nowMs));

      expect(runs).toEqual([eventId]);
      expect(first).toEqual({ status: 201, headers: { 'content-type': 'application/vnd.acme+json' }, body: '{"ok":true,  "note":"spacing kept"}' });
      expect(repeat).toEqual({
        status: 201,
        headers: { 'content-type': 'application/vnd.acme+json', [REPLAYED_HEADER]: 'true' },
        body: first.body,
      });
    });

    it('stores an empty 200 when the action returns nothing, and replays it', async () => {
      const eventId = id('empty');
      answer = () => undefined;

      const first = await receive(signedRequest(eventId, nowMs));
      const repeat = await receive(signedRequest(eventId, nowMs));

      expect([first.status, first.body, repeat.status, repeat.body]).toEqual([200, '', 200, '']);
      expect(runs).toEqual([eventId]);
    });

    it('runs the action once for 20 concurrent copies of one request; the others get 425', async () => {
      const eventId = id('concurrent');
      const action = answerOnceOpened('applied');

      const copies = Array.from({ length: 20 }, () => receive(signedRequest(eventId, nowMs)));
      const settledEarly: WebhookResponse[] = [];
      copies.forEach((copy) => void copy.then((response) => settledEarly.push(response)));
      // The 19 that lose the race answer without waiting for the action.
      await expect.poll(() => settledEarly.length, { timeout: 10_000 }).toBe(19);
      action.open();
      const responses = await Promise.all(copies);

      expect(runs).toEqual([eventId]);
      expect(responses.filter((r) => r.status === 425)).toHaveLength(19);
      expect(responses.filter((r) => r.status === 200).map((r) => r.body)).toEqual(['applied']);
      expect((await receive(signedRequest(eventId, nowMs))).body).toBe('applied');
      expect(runs).toHaveLength(1);
    });

    it('answers 425 to a repeat while the first is still running, and the stored response once it is done', async () => {
      const eventId = id('running');
      const action = answerOnceOpened('done');

      const first = receive(signedRequest(eventId, nowMs));
      await expect.poll(() => runs.length).toBe(1);
      const during = await receive(signedRequest(eventId, nowMs));
      action.open();
      await first;
      const after = await receive(signedRequest(eventId, nowMs));

      expect(JSON.parse(during.body)).toEqual({ error: { code: 'in-progress', message: `${eventId} is being processed; retry later` } });
      expect([during.status, after.status, after.body]).toEqual([425, 200, 'done']);
      expect(runs).toEqual([eventId]);
    });

    it.each([400, 422, 503])('stores nothing when the action answers %i, so the next attempt runs it again', async (status) => {
      const eventId = id(`refused_${status}`);
      const answers: ActionResult[] = [{ status, body: 'not now' }, { status: 200, body: 'applied' }];
      answer = () => answers.shift();

      const first = await receive(signedRequest(eventId, nowMs));
      const second = await receive(signedRequest(eventId, nowMs));

      expect([first.status, second.status, second.body]).toEqual([status, 200, 'applied']);
      expect(runs).toEqual([eventId, eventId]);
    });

    it('answers 500 and stores nothing when the action throws, so the next attempt runs it again', async () => {
      const eventId = id('throws');
      let calls = 0;
      answer = () => {
        calls += 1;
        if (calls === 1) throw new Error('database down');
        return { status: 200 };
      };

      const first = await receive(signedRequest(eventId, nowMs));
      const second = await receive(signedRequest(eventId, nowMs));

      expect([first.status, second.status]).toEqual([500, 200]);
      expect(runs).toHaveLength(2);
    });

    it('refuses with 422 the same webhook-id carrying another body, without running the action', async () => {
      const eventId = id('reused');
      await receive(signedRequest(eventId, nowMs, JSON.stringify({ id: eventId, status: 'packed' })));

      const other = await receive(signedRequest(eventId, nowMs, JSON.stringify({ id: eventId, status: 'returned' })));

      expect(other.status).toBe(422);
      expect(JSON.parse(other.body).error.code).toBe('webhook-id-reused');
      expect(runs).toEqual([eventId]);
    });

    it('runs the action again once the retention has passed', async () => {
      const eventId = id('retention');
      await receive(signedRequest(eventId, nowMs));

      nowMs += (CONTRACT_STORE_OPTIONS.retentionSeconds - 1) * 1000;
      const within = await receive(signedRequest(eventId, nowMs));
      nowMs += 2000;
      const after = await receive(signedRequest(eventId, nowMs));

      expect(within.headers[REPLAYED_HEADER]).toBe('true');
      expect(after.headers[REPLAYED_HEADER]).toBeUndefined();
      expect(runs).toEqual([eventId, eventId]);
      expect(underTest.store.retentionSeconds).toBe(CONTRACT_STORE_OPTIONS.retentionSeconds);
    });

    it('lets another request run the action once a running record outlives its lease (the first receiver died)', async () => {
      const eventId = id('lease');
      const stuck = gate();
      answer = async () => {
        if (runs.length === 1) await stuck.opened; // the first run never finishes in this test
        return { status: 200, body: `run ${runs.length}` };
      };
      void receive(signedRequest(eventId, nowMs));
      await expect.poll(() => runs.length).toBe(1);

      nowMs += (CONTRACT_STORE_OPTIONS.leaseSeconds - 1) * 1000;
      const withinLease = await receive(signedRequest(eventId, nowMs));
      nowMs += 2000;
      const afterLease = await receive(signedRequest(eventId, nowMs));

      expect([withinLease.status, afterLease.status, afterLease.body]).toEqual([425, 200, 'run 2']);
    });

    it('refuses a bad signature with 401 and a stale timestamp with 401, running nothing', async () => {
      const eventId = id('forged');
      const forged = signedRequest(eventId, nowMs, undefined, 'whsec_dGhpcyBpcyBhbm90aGVyIHNlY3JldA==');
      const stale = signedRequest(eventId, nowMs - 301_000);

      const forgedAnswer = await receive(forged);
      const staleAnswer = await receive(stale);

      expect([forgedAnswer.status, JSON.parse(forgedAnswer.body).error.code]).toEqual([401, 'bad-signature']);
      expect([staleAnswer.status, JSON.parse(staleAnswer.body).error.code]).toEqual([401, 'stale-timestamp']);
      expect(runs).toEqual([]);
    });
  });
}
