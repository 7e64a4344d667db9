/**
 * The Ledger port's contract: one behaviour, held against every adapter (the in-memory one in
 * unit tests, DynamoDB against dynalite in integration tests). A case belongs here when it is
 * about what the port promises; adapter-specific checks (request counts, concurrency against a
 * real store) live beside the adapter's own tests.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import {
  ClaimRefusedError,
  LeaseLostError,
  RecordMissingError,
  ReleaseRefusedError,
  ReplayRefusedError,
  ShipmentIndexOffError,
} from '../../lib/ledger/errors';
import {
  DEFAULT_ENDPOINT,
  MAX_AUDIT,
  MAX_HISTORY,
  type AttemptEntry,
  type AttemptNext,
  type ClaimedRecord,
  type ClaimInput,
  type DeliveryRecord,
  type Ledger,
  type ListOptions,
  type ParkInput,
} from '../../lib/ledger/ledger';
import { claimRefusal } from '../../lib/ledger/guards';
import { processBatch } from '../../lib/batch';
import { createLogger, MetricsRecorder } from '../../lib/observability';
import type { AttemptOutcome } from '../../lib/outcome';
import { retryPolicy } from '../../lib/policy';
import type { DeliveryQueue } from '../../lib/queue/queue';
import { singleEndpoint, staticRouting } from '../../lib/routing';
import type { WebhookSender } from '../../lib/webhook/sender';
import { sqsRecord, TEST_SEAL } from './sqs-records';

export interface LedgerUnderTest {
  readonly ledger: Ledger;
  close(): Promise<void>;
}

/** The ledger reads the clock only to hide expired rows; every write takes its time as input. */
export interface LedgerClock {
  readonly now: () => number;
}

/** `shipmentIndex: false`: a ledger (and table) without the shipment index; with it by default. */
export type MakeLedger = (clock: LedgerClock, options?: { readonly shipmentIndex?: boolean }) => Promise<LedgerUnderTest>;

/** 2027-01-15T12:00:00Z: a fixed instant, so every time in an assertion is exact. */
export const T0 = Date.UTC(2027, 0, 15, 12, 0, 0);
const LEASE_MS = 30_000;
const RETENTION_SECONDS = 30 * 24 * 60 * 60;
const POLICY = retryPolicy(3, [30, 120]);
const OTHER_POLICY = retryPolicy(5, [1, 2, 3, 4]);
const WORKER_A = 'worker-a';
const WORKER_B = 'worker-b';
const ACCEPTED: AttemptOutcome = { kind: 'accepted', status: 200 };
const TEMPORARY: AttemptOutcome = { kind: 'temporary', status: 503 };
const REJECTED: AttemptOutcome = { kind: 'rejected', status: 400, responseStart: '{"error":"bad carrier"}' };
const EXHAUSTED_DETAIL = 'attempt budget spent; the last attempt recorded no outcome';
/** A claim token or replay ID: drawn by the ledger, 16 URL-safe characters. */
const ANY_TOKEN = expect.stringMatching(/^[\w-]{16}$/) as string;

export function shipmentEvent(id: string, overrides: Record<string, unknown> = {}): ParsedEvent {
  const parsed = parseEvent(
    JSON.stringify({
      id,
      shipmentId: 'shp_1001',
      status: 'in_transit',
      occurredAt: '2026-12-02T10:15:00Z',
      data: { carrier: 'acme' },
      ...overrides,
    }),
  );
  if (!parsed.ok) throw parsed.error;
  return parsed.value;
}

/** Resolves to the rejection of `promise`, asserting its class. */
export async function rejectionOf<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
): Promise<E> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as E;
}

export function ledgerContract(name: string, makeLedger: MakeLedger): void {
  describe(`Ledger contract: ${name}`, () => {
    let subject: LedgerUnderTest;
    let ledger: Ledger;
    let clockMs: number;

    beforeEach(async () => {
      clockMs = T0;
      subject = await makeLedger({ now: () => clockMs });
      ledger = subject.ledger;
    });

    afterEach(async () => {
      await subject.close();
    });

    /** The body each claim was for, by row: what recording its attempt keeps (`RecordAttemptInput.body`). */
    const claimedBodies = new Map<string, string>();

    function claim(event: ParsedEvent, overrides: Partial<ClaimInput> = {}): Promise<ClaimedRecord> {
      claimedBodies.set(`${event.event.id}|${overrides.endpoint ?? DEFAULT_ENDPOINT}`, event.body);
      return ledger.claim({
        event,
        endpoint: DEFAULT_ENDPOINT,
        owner: WORKER_A,
        nowMs: T0,
        leaseMs: LEASE_MS,
        policy: POLICY,
        retentionSeconds: RETENTION_SECONDS,
        ...overrides,
      });
    }

    function entry(attempt: number, atMs: number, outcome: AttemptOutcome): AttemptEntry {
      const status = 'status' in outcome ? outcome.status : undefined;
      return status === undefined
        ? { attempt, at: atMs, outcome: outcome.kind, durationMs: 120 }
        : { attempt, at: atMs, outcome: outcome.kind, status, durationMs: 120 };
    }

    /** Records an attempt under `claimed`'s claim, then returns the row as stored (`recordAttempt` returns nothing). */
    async function record(
      claimed: ClaimedRecord,
      outcome: AttemptOutcome,
      next: AttemptNext,
      nowMs: number,
    ): Promise<DeliveryRecord> {
      const returned = await ledger.recordAttempt({
        eventId: claimed.eventId,
        endpoint: claimed.endpoint,
        claimToken: claimed.claimToken,
        body: claimedBodies.get(`${claimed.eventId}|${claimed.endpoint}`) ?? shipmentEvent(claimed.eventId).body,
        attempt: entry(claimed.attempts, nowMs - 120, outcome),
        outcome,
        next,
        nowMs,
      });
      expect(returned).toBeUndefined();
      const stored = await ledger.get(key(claimed.eventId, claimed.endpoint));
      if (stored === undefined) throw new Error(`no row for ${claimed.eventId} after recordAttempt`);
      return stored;
    }

    function key(eventId: string, endpoint: string = DEFAULT_ENDPOINT) {
      return { eventId, endpoint };
    }

    function expiresAt(nowMs: number, retentionSeconds = RETENTION_SECONDS): number {
      return Math.floor(nowMs / 1000) + retentionSeconds;
    }

    /** The lease a claim at `atMs` takes (and the expiry it moves): `owner`'s, with its claim token. */
    function leased(owner: string, atMs: number, claimToken: string) {
      return { leaseOwner: owner, leaseExpiresAt: atMs + LEASE_MS, claimToken, expiresAt: expiresAt(atMs) };
    }

    /** What a new event's row has from its first write at `atMs` (pending, no history, replay or audit), the rest per case. */
    /** A new row as the claim (or park) writes it: in the shipment index (on by default), so with its shipment. */
    function newRow(eventId: string, endpoint: string, event: ParsedEvent, atMs: number) {
      return {
        eventId,
        endpoint,
        state: 'pending',
        shipmentId: event.event.shipmentId,
        contentHash: event.contentHash,
        eventType: 'shipment.in_transit',
        maxAttempts: 3,
        policy: POLICY,
        history: [],
        replays: 0,
        audit: [],
        createdAt: atMs,
        stateSince: atMs,
      } as const;
    }

    describe('Method: claim', () => {
      it('admits a new event as pending, counts the attempt and takes the lease, storing its hash but not its body', async () => {
        // Prepare
        const event = shipmentEvent('evt_new');

        // Act
        const claimed = await claim(event);

        // Assess: the body stays on the message until a failure may need it (recordAttempt below).
        const expected: DeliveryRecord = {
          ...newRow('evt_new', DEFAULT_ENDPOINT, event, T0),
          attempts: 1,
          ...leased(WORKER_A, T0, ANY_TOKEN),
        };
        expect(claimed).toStrictEqual(expected);
        expect(await ledger.get(key('evt_new'))).toStrictEqual(expected);
      });

      it('refuses a duplicate with the same content while the lease is live, carrying the row', async () => {
        const event = shipmentEvent('evt_dup');
        const first = await claim(event);

        const error = await rejectionOf(claim(event, { owner: WORKER_B, nowMs: T0 + LEASE_MS - 1 }), ClaimRefusedError);

        expect(error.code).toBe('claim-refused');
        expect(error.reason).toBe('leased');
        expect(error.record).toStrictEqual(first);
        expect(await ledger.get(key('evt_dup'))).toStrictEqual(first);
      });

      it('refuses a second claim with the same input while the first holds the lease: each claim is its own', async () => {
        // Prepare: two copies of one event in one batch claim with one owner, in one millisecond.
        const event = shipmentEvent('evt_twin');
        const first = await claim(event);

        // Act
        const error = await rejectionOf(claim(event), ClaimRefusedError);

        // Assess
        expect(error.record).toStrictEqual(first);
        expect(error.record.attempts).toBe(1);
        expect(await ledger.get(key('evt_twin'))).toStrictEqual(first);
      });

      it('draws a token of its own for every claim, and records only under the token that holds the lease', async () => {
        const first = await claim(shipmentEvent('evt_tokens'));
        await record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 500);
        const second = await claim(shipmentEvent('evt_tokens'), { nowMs: T0 + 1000 });

        const error = await rejectionOf(
          record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 9000 }, T0 + 1500),
          LeaseLostError,
        );

        expect(second.claimToken).not.toBe(first.claimToken);
        expect(second.leaseOwner).toBe(first.leaseOwner);
        expect(error.record).toStrictEqual(second);
      });

      it('still refuses a live lease to any other claim: another owner, time, lease or content', async () => {
        const event = shipmentEvent('evt_claim_other');
        const claimed = await claim(event);

        const refusals = [
          await rejectionOf(claim(event, { owner: WORKER_B }), ClaimRefusedError),
          await rejectionOf(claim(event, { nowMs: T0 + 1 }), ClaimRefusedError),
          await rejectionOf(claim(event, { leaseMs: LEASE_MS + 1 }), ClaimRefusedError),
          await rejectionOf(claim(shipmentEvent('evt_claim_other', { status: 'delivered' })), ClaimRefusedError),
        ];

        expect(refusals.map((error) => error.record)).toStrictEqual([claimed, claimed, claimed, claimed]);
        expect(refusals.map((error) => error.reason)).toStrictEqual(['leased', 'leased', 'leased', 'identity-conflict']);
        expect(await ledger.get(key('evt_claim_other'))).toStrictEqual(claimed);
      });

      it('accepts a producer re-sending the same event with other key order and spacing', async () => {
        const first = await claim(shipmentEvent('evt_same'));
        await record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 500);
        const resent = parseEvent(
          '{ "occurredAt": "2026-12-02T10:15:00Z", "data": {"carrier":"acme"}, "status": "in_transit", "shipmentId": "shp_1001", "id": "evt_same" }',
        );
        if (!resent.ok) throw resent.error;

        const claimed = await claim(resent.value, { owner: WORKER_B, nowMs: T0 + 1000 });

        expect(claimed.attempts).toBe(2);
        expect(claimed.leaseOwner).toBe(WORKER_B);
      });

      it('refuses an identity conflict and leaves the row exactly as it was', async () => {
        // Prepare: a pending row that is due and unleased, so only the content differs.
        const first = await claim(shipmentEvent('evt_conflict'));
        const pending = await record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 500);

        // Act
        const error = await rejectionOf(
          claim(shipmentEvent('evt_conflict', { status: 'delivered' }), { owner: WORKER_B, nowMs: T0 + LEASE_MS }),
          ClaimRefusedError,
        );

        // Assess
        expect(error.record).toStrictEqual(pending);
        expect(error.record.contentHash).not.toBe(shipmentEvent('evt_conflict', { status: 'delivered' }).contentHash);
        expect(await ledger.get(key('evt_conflict'))).toStrictEqual(pending);
      });

      it('reclaims a pending row once the lease has expired, counting a second attempt', async () => {
        const first = await claim(shipmentEvent('evt_lapsed'));

        const second = await claim(shipmentEvent('evt_lapsed'), { owner: WORKER_B, nowMs: T0 + LEASE_MS });

        expect(second).toStrictEqual({
          ...first,
          attempts: 2,
          leaseOwner: WORKER_B,
          leaseExpiresAt: T0 + 2 * LEASE_MS,
          claimToken: second.claimToken,
          expiresAt: expiresAt(T0 + LEASE_MS),
        });
        expect(second.claimToken).not.toBe(first.claimToken);
      });

      it('returns the whole row on a later claim: history, last outcome, next attempt time and all', async () => {
        const first = await claim(shipmentEvent('evt_whole_row'));
        const pending = await record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 500);

        const second = await claim(shipmentEvent('evt_whole_row'), { owner: WORKER_B, nowMs: T0 + 1000 });

        const expected: DeliveryRecord = {
          ...pending,
          attempts: 2,
          ...leased(WORKER_B, T0 + 1000, second.claimToken),
        };
        expect(second).toStrictEqual(expected);
        expect(await ledger.get(key('evt_whole_row'))).toStrictEqual(expected);
      });

      it('refuses a pending row that is not yet due, and claims it once due', async () => {
        const first = await claim(shipmentEvent('evt_due'));
        await record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 100);

        const early = await rejectionOf(claim(shipmentEvent('evt_due'), { nowMs: T0 + 29_999 }), ClaimRefusedError);
        const due = await claim(shipmentEvent('evt_due'), { nowMs: T0 + 30_000 });

        expect(early.reason).toBe('not-due');
        expect(early.record.attempts).toBe(1);
        expect(early.record.nextAttemptAt).toBe(T0 + 30_000);
        expect(due.attempts).toBe(2);
      });

      it('refuses a pending row whose attempt budget is spent', async () => {
        const policy = retryPolicy(2, [1]);
        const first = await claim(shipmentEvent('evt_spent'), { policy });
        await record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 500);
        const second = await claim(shipmentEvent('evt_spent'), { nowMs: T0 + 1000 });
        await record(second, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 2000 }, T0 + 1500);

        const error = await rejectionOf(claim(shipmentEvent('evt_spent'), { nowMs: T0 + 2000 }), ClaimRefusedError);

        expect(error.reason).toBe('spent');
        expect(error.record.state).toBe('pending');
        expect(error.record.attempts).toBe(2);
        expect(error.record.maxAttempts).toBe(2);
      });

      it('refuses a delivered row', async () => {
        const first = await claim(shipmentEvent('evt_done'));
        const delivered = await record(first, ACCEPTED, { state: 'delivered' }, T0 + 200);

        const error = await rejectionOf(claim(shipmentEvent('evt_done'), { nowMs: T0 + LEASE_MS }), ClaimRefusedError);

        expect(error.record).toStrictEqual(delivered);
      });

      it('refuses a dead row', async () => {
        const first = await claim(shipmentEvent('evt_gone'));
        const dead = await record(first, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 200);

        const error = await rejectionOf(claim(shipmentEvent('evt_gone'), { nowMs: T0 + LEASE_MS }), ClaimRefusedError);

        expect(error.record).toStrictEqual(dead);
      });

      it('keeps the policy the row was created with, and takes the retention of the latest claim', async () => {
        const first = await claim(shipmentEvent('evt_policy'));
        await record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 500);

        const second = await claim(shipmentEvent('evt_policy'), {
          nowMs: T0 + 1000,
          policy: OTHER_POLICY,
          retentionSeconds: 7200,
        });

        expect(second.policy).toStrictEqual(POLICY);
        expect(second.maxAttempts).toBe(3);
        expect(second.expiresAt).toBe(expiresAt(T0 + 1000, 7200));
        expect((await ledger.get(key('evt_policy')))?.expiresAt).toBe(expiresAt(T0 + 1000, 7200));
      });

      it('moves the expiry on every write to a pending row, so a long delivery never outlives its row', async () => {
        // Prepare: a retention of one hour, and a delivery that keeps failing for longer.
        const hour = 3600;
        const policy = retryPolicy(5, [1800]);
        const times = [T0, T0 + 1_800_000, T0 + 3_600_000, T0 + 5_400_000];
        const seen: number[] = [];

        // Act: claim and record a failure every half hour, for an hour and a half.
        for (const atMs of times) {
          const claimed = await claim(shipmentEvent('evt_long_life'), { nowMs: atMs, policy, retentionSeconds: hour });
          seen.push(claimed.expiresAt!);
          clockMs = atMs + 100;
          const pending = await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: atMs + 1_800_000 }, atMs + 100);
          seen.push(pending.expiresAt!);
        }

        // Assess
        expect(seen).toStrictEqual(times.flatMap((atMs) => [expiresAt(atMs, hour), expiresAt(atMs + 100, hour)]));
      });

      it('keeps one row per endpoint for the same event', async () => {
        const event = shipmentEvent('evt_fanout');
        await claim(event);

        const other = await claim(event, { endpoint: 'billing', owner: WORKER_B });

        expect(other.endpoint).toBe('billing');
        expect(other.attempts).toBe(1);
        expect((await ledger.get(key('evt_fanout')))?.leaseOwner).toBe(WORKER_A);
      });
    });

    describe('Method: recordAttempt', () => {
      it('records delivered: the entry, the outcome, the state change, and releases the lease', async () => {
        const claimed = await claim(shipmentEvent('evt_ok'));

        const delivered = await record(claimed, ACCEPTED, { state: 'delivered' }, T0 + 200);

        const { leaseOwner: _owner, leaseExpiresAt: _expiry, claimToken: _token, ...unleased } = claimed;
        const expected: DeliveryRecord = {
          ...unleased,
          state: 'delivered',
          history: [{ attempt: 1, at: T0 + 80, outcome: 'accepted', status: 200, durationMs: 120 }],
          lastOutcome: ACCEPTED,
          deliveredAt: T0 + 200,
          stateSince: T0 + 200,
          expiresAt: expiresAt(T0 + 200),
        };
        expect(delivered).toStrictEqual(expected);
        expect(await ledger.get(key('evt_ok'))).toStrictEqual(expected);
      });

      it('records pending with the next attempt time, keeping the state change time, moving the expiry, storing no body (the message holds it)', async () => {
        const claimed = await claim(shipmentEvent('evt_retry'));

        const pending = await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 200);

        const { leaseOwner: _owner, leaseExpiresAt: _expiry, claimToken: _token, ...unleased } = claimed;
        expect(pending).toStrictEqual({
          ...unleased,
          history: [{ attempt: 1, at: T0 + 80, outcome: 'temporary', status: 503, durationMs: 120 }],
          lastOutcome: TEMPORARY,
          nextAttemptAt: T0 + 30_000,
          expiresAt: expiresAt(T0 + 200),
        });
      });

      it('records dead with the reason and detail, storing the body (for a replay)', async () => {
        const claimed = await claim(shipmentEvent('evt_bad'));

        const dead = await record(
          claimed,
          REJECTED,
          { state: 'dead', reason: 'rejected', detail: 'rejected (400): {"error":"bad carrier"}' },
          T0 + 200,
        );

        const { leaseOwner: _owner, leaseExpiresAt: _expiry, claimToken: _token, ...unleased } = claimed;
        expect(dead).toStrictEqual({
          ...unleased,
          body: shipmentEvent('evt_bad').body,
          state: 'dead',
          history: [{ attempt: 1, at: T0 + 80, outcome: 'rejected', status: 400, durationMs: 120 }],
          lastOutcome: REJECTED,
          deadReason: 'rejected',
          deadDetail: 'rejected (400): {"error":"bad carrier"}',
          deadAt: T0 + 200,
          stateSince: T0 + 200,
          expiresAt: expiresAt(T0 + 200),
        });
      });

      it('records dead as exhausted when the last attempt fails', async () => {
        const claimed = await claim(shipmentEvent('evt_last'), { policy: retryPolicy(1, [30]) });

        const dead = await record(claimed, TEMPORARY, { state: 'dead', reason: 'exhausted', detail: '1 attempt; last: temporary (503)' }, T0 + 200);

        expect(dead.state).toBe('dead');
        expect(dead.deadReason).toBe('exhausted');
        expect(dead.deadDetail).toBe('1 attempt; last: temporary (503)');
        expect(dead.lastOutcome).toStrictEqual(TEMPORARY);
      });

      it('throws LeaseLostError for pending from a worker whose lease was taken over, changing nothing', async () => {
        const first = await claim(shipmentEvent('evt_lost'));
        const takenOver = await claim(shipmentEvent('evt_lost'), { owner: WORKER_B, nowMs: T0 + LEASE_MS });

        const error = await rejectionOf(
          record(first, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 60_000 }, T0 + LEASE_MS + 10),
          LeaseLostError,
        );

        expect(error.code).toBe('lease-lost');
        expect(error.record).toStrictEqual(takenOver);
        expect(await ledger.get(key('evt_lost'))).toStrictEqual(takenOver);
      });

      it('throws LeaseLostError for dead from a worker whose lease was taken over, changing nothing', async () => {
        const first = await claim(shipmentEvent('evt_lost_dead'));
        const takenOver = await claim(shipmentEvent('evt_lost_dead'), { owner: WORKER_B, nowMs: T0 + LEASE_MS });

        const error = await rejectionOf(
          record(first, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + LEASE_MS + 10),
          LeaseLostError,
        );

        expect(error.record).toStrictEqual(takenOver);
        expect(await ledger.get(key('evt_lost_dead'))).toStrictEqual(takenOver);
      });

      it('records a late delivered on a dead row: a 2xx is the truth however late', async () => {
        // Prepare: A's attempt hangs, B takes over and is rejected; then A's 2xx arrives.
        const first = await claim(shipmentEvent('evt_late'));
        const second = await claim(shipmentEvent('evt_late'), { owner: WORKER_B, nowMs: T0 + LEASE_MS });
        await record(second, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + LEASE_MS + 200);

        // Act
        const delivered = await record(first, ACCEPTED, { state: 'delivered' }, T0 + LEASE_MS + 300);

        // Assess
        const { leaseOwner: _owner, leaseExpiresAt: _expiry, claimToken: _token, ...unleased } = second;
        expect(delivered).toStrictEqual({
          ...unleased,
          // Stored by the death; a delivery never removes it.
          body: shipmentEvent('evt_late').body,
          state: 'delivered',
          history: [
            { attempt: 2, at: T0 + LEASE_MS + 80, outcome: 'rejected', status: 400, durationMs: 120 },
            { attempt: 1, at: T0 + LEASE_MS + 180, outcome: 'accepted', status: 200, durationMs: 120 },
          ],
          lastOutcome: ACCEPTED,
          deliveredAt: T0 + LEASE_MS + 300,
          stateSince: T0 + LEASE_MS + 300,
          expiresAt: expiresAt(T0 + LEASE_MS + 300),
        });
      });

      it('lets a late delivered win over the worker that holds the lease', async () => {
        const first = await claim(shipmentEvent('evt_race'));
        const second = await claim(shipmentEvent('evt_race'), { owner: WORKER_B, nowMs: T0 + LEASE_MS });

        const delivered = await record(first, ACCEPTED, { state: 'delivered' }, T0 + LEASE_MS + 100);
        const error = await rejectionOf(
          record(second, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 90_000 }, T0 + LEASE_MS + 200),
          LeaseLostError,
        );

        expect(delivered.state).toBe('delivered');
        expect(delivered.leaseOwner).toBeUndefined();
        expect(error.record).toStrictEqual(delivered);
      });

      it('treats delivered twice as one delivery and leaves the row unchanged', async () => {
        const first = await claim(shipmentEvent('evt_twice'));
        const delivered = await record(first, ACCEPTED, { state: 'delivered' }, T0 + 200);

        const again = await record(first, ACCEPTED, { state: 'delivered' }, T0 + 900);

        expect(again).toStrictEqual(delivered);
        expect(await ledger.get(key('evt_twice'))).toStrictEqual(delivered);
      });

      it(`keeps only the newest ${MAX_HISTORY} history entries`, async () => {
        // Prepare: a budget that outlasts the history bound.
        const attempts = MAX_HISTORY + 5;
        const policy = retryPolicy(attempts, [1]);
        let last: DeliveryRecord | undefined;

        // Act: attempts 1..n-1 fail, attempt n succeeds.
        for (let n = 1; n <= attempts; n++) {
          const atMs = T0 + n * 1000;
          const claimed = await claim(shipmentEvent('evt_long'), { nowMs: atMs, policy });
          const next: AttemptNext = n < attempts ? { state: 'pending', nextAttemptAt: atMs + 1000 } : { state: 'delivered' };
          last = await record(claimed, n < attempts ? TEMPORARY : ACCEPTED, next, atMs + 500);
        }

        // Assess
        expect(last?.state).toBe('delivered');
        expect(last?.attempts).toBe(attempts);
        expect(last?.history.map((h) => h.attempt)).toStrictEqual(
          Array.from({ length: MAX_HISTORY }, (_, i) => attempts - MAX_HISTORY + 1 + i),
        );
        expect(await ledger.get(key('evt_long'))).toStrictEqual(last);
      });

      it('keeps the history bounded when a late delivered arrives on a full history', async () => {
        const policy = retryPolicy(MAX_HISTORY + 1, [1]);
        let claimed = await claim(shipmentEvent('evt_full'), { policy });
        const firstClaim = claimed;
        for (let n = 1; n <= MAX_HISTORY; n++) {
          const atMs = T0 + LEASE_MS + n * 1000;
          claimed = await claim(shipmentEvent('evt_full'), { nowMs: atMs, owner: WORKER_B, policy });
          await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: atMs + 1000 }, atMs + 500);
        }

        const delivered = await record(firstClaim, ACCEPTED, { state: 'delivered' }, T0 + 10 * LEASE_MS);

        expect(delivered.history).toHaveLength(MAX_HISTORY);
        expect(delivered.history.at(0)?.attempt).toBe(3);
        expect(delivered.history.at(-1)).toStrictEqual(entry(1, T0 + 10 * LEASE_MS - 120, ACCEPTED));
      });

      it('throws RecordMissingError, naming the event, when there is no row to record on', async () => {
        const ghost = { ...(await claim(shipmentEvent('evt_real'))), eventId: 'evt_ghost' };

        const error = await rejectionOf(record(ghost, ACCEPTED, { state: 'delivered' }, T0 + 100), RecordMissingError);
        expect(error).toMatchObject({ eventId: 'evt_ghost', code: 'record-missing' });
        await rejectionOf(
          record(ghost, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 100),
          RecordMissingError,
        );
        expect(await ledger.get(key('evt_ghost'))).toBeUndefined();
      });
    });

    describe('Method: markExhausted', () => {
      it('marks a pending row whose budget is spent and whose lease has lapsed dead (exhausted)', async () => {
        // Prepare: the last attempt's worker died before recording anything.
        const claimed = await claim(shipmentEvent('evt_crashed'), { policy: retryPolicy(1, [30]) });

        // Act
        const dead = await ledger.markExhausted(key('evt_crashed'), T0 + LEASE_MS, shipmentEvent('evt_crashed').body);

        // Assess
        const { leaseOwner: _owner, leaseExpiresAt: _expiry, claimToken: _token, ...unleased } = claimed;
        const expected: DeliveryRecord = {
          ...unleased,
          body: shipmentEvent('evt_crashed').body,
          state: 'dead',
          deadReason: 'exhausted',
          deadDetail: EXHAUSTED_DETAIL,
          deadAt: T0 + LEASE_MS,
          stateSince: T0 + LEASE_MS,
          expiresAt: expiresAt(T0 + LEASE_MS),
        };
        expect(dead).toStrictEqual(expected);
        expect(await ledger.get(key('evt_crashed'))).toStrictEqual(expected);
      });

      it('throws LeaseLostError while the lease is live, changing nothing', async () => {
        const claimed = await claim(shipmentEvent('evt_busy'), { policy: retryPolicy(1, [30]) });

        const error = await rejectionOf(ledger.markExhausted(key('evt_busy'), T0 + LEASE_MS - 1, shipmentEvent('evt_busy').body), LeaseLostError);

        expect(error.record).toStrictEqual(claimed);
        expect(await ledger.get(key('evt_busy'))).toStrictEqual(claimed);
      });

      it('throws LeaseLostError while budget remains', async () => {
        const claimed = await claim(shipmentEvent('evt_budget'));

        const error = await rejectionOf(ledger.markExhausted(key('evt_budget'), T0 + LEASE_MS, shipmentEvent('evt_budget').body), LeaseLostError);

        expect(error.record).toStrictEqual(claimed);
      });

      it('throws LeaseLostError for a row that is no longer pending', async () => {
        const claimed = await claim(shipmentEvent('evt_settled'), { policy: retryPolicy(1, [30]) });
        const delivered = await record(claimed, ACCEPTED, { state: 'delivered' }, T0 + 100);

        const error = await rejectionOf(ledger.markExhausted(key('evt_settled'), T0 + LEASE_MS, shipmentEvent('evt_settled').body), LeaseLostError);

        expect(error.record).toStrictEqual(delivered);
      });

      it('throws RecordMissingError when there is no row', async () => {
        await rejectionOf(ledger.markExhausted(key('evt_nothing'), T0, shipmentEvent('evt_nothing').body), RecordMissingError);
      });
    });

    describe('Method: admitInvalid', () => {
      it('writes a dead row with reason invalid and no event when none exists', async () => {
        const written = await ledger.admitInvalid(key('evt_invalid'), 'status must be one of …', POLICY, T0, RETENTION_SECONDS);

        expect(written).toBe(true);
        expect(await ledger.get(key('evt_invalid'))).toStrictEqual({
          eventId: 'evt_invalid',
          endpoint: DEFAULT_ENDPOINT,
          state: 'dead',
          attempts: 0,
          maxAttempts: 3,
          policy: POLICY,
          history: [],
          replays: 0,
          audit: [{ at: T0, action: 'invalid-message', operator: 'consumer', reason: 'status must be one of …' }],
          deadReason: 'invalid',
          deadDetail: 'status must be one of …',
          createdAt: T0,
          deadAt: T0,
          stateSince: T0,
          expiresAt: expiresAt(T0),
        });
      });

      it('returns false and changes nothing when a row exists', async () => {
        const claimed = await claim(shipmentEvent('evt_admitted'));

        const written = await ledger.admitInvalid(key('evt_admitted'), 'too large', POLICY, T0 + 100, RETENTION_SECONDS);

        expect(written).toBe(false);
        expect(await ledger.get(key('evt_admitted'))).toStrictEqual(claimed);
      });

      it('keeps the first invalid row when the same ID comes again', async () => {
        await ledger.admitInvalid(key('evt_twice_bad'), 'first problem', POLICY, T0, RETENTION_SECONDS);

        const written = await ledger.admitInvalid(key('evt_twice_bad'), 'second problem', POLICY, T0 + 100, RETENTION_SECONDS);

        expect(written).toBe(false);
        expect((await ledger.get(key('evt_twice_bad')))?.deadDetail).toBe('first problem');
      });

      it('lets the valid event with the same ID take over the row, keeping the invalid message in the audit', async () => {
        // Prepare: an invalid message with a readable ID came first.
        await ledger.admitInvalid(key('evt_poisoned'), 'not JSON', POLICY, T0, RETENTION_SECONDS);
        const event = shipmentEvent('evt_poisoned');

        // Act
        const claimed = await claim(event, { nowMs: T0 + 100 });

        // Assess
        const expected: DeliveryRecord = {
          ...newRow('evt_poisoned', DEFAULT_ENDPOINT, event, T0 + 100),
          attempts: 1,
          audit: [{ at: T0, action: 'invalid-message', operator: 'consumer', reason: 'not JSON' }],
          ...leased(WORKER_A, T0 + 100, claimed.claimToken),
        };
        expect(claimed).toStrictEqual(expected);
        expect(await ledger.get(key('evt_poisoned'))).toStrictEqual(expected);
      });

      it('keeps the policy the row was admitted with when the valid event takes it over, and returns the row as stored', async () => {
        await ledger.admitInvalid(key('evt_poisoned_policy'), 'not JSON', POLICY, T0, RETENTION_SECONDS);

        const claimed = await claim(shipmentEvent('evt_poisoned_policy'), { nowMs: T0 + 100, policy: OTHER_POLICY });

        expect(claimed.policy).toStrictEqual(POLICY);
        expect(claimed.maxAttempts).toBe(POLICY.maxAttempts);
        expect(await ledger.get(key('evt_poisoned_policy'))).toStrictEqual(claimed);
      });

      it('lets one of two copies of the valid event take over the row, and refuses the other', async () => {
        await ledger.admitInvalid(key('evt_poisoned_twice'), 'not JSON', POLICY, T0, RETENTION_SECONDS);
        const first = await claim(shipmentEvent('evt_poisoned_twice'), { nowMs: T0 + 100 });

        const error = await rejectionOf(claim(shipmentEvent('evt_poisoned_twice'), { nowMs: T0 + 100 }), ClaimRefusedError);

        expect(error.record).toStrictEqual(first);
      });
    });

    describe('Method: replay', () => {
      async function deadRow(eventId: string, atMs: number): Promise<DeliveryRecord> {
        const claimed = await claim(shipmentEvent(eventId), { nowMs: atMs });
        return record(claimed, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, atMs + 200);
      }

      it('returns a dead row to pending: budget reset, replays + 1, audit entry, due at once', async () => {
        // Prepare
        const dead = await deadRow('evt_replay', T0);

        // Act
        const replayed = await ledger.replay({
          ...key('evt_replay'),
          operator: 'ops@example.com',
          reason: 'receiver fixed its schema',
          nowMs: T0 + 5000,
        });

        // Assess
        const { deadReason: _reason, deadDetail: _detail, deadAt: _at, ...alive } = dead;
        const expected: DeliveryRecord = {
          ...alive,
          state: 'pending',
          attempts: 0,
          replays: 1,
          audit: [{ at: T0 + 5000, action: 'replay', operator: 'ops@example.com', reason: 'receiver fixed its schema', id: ANY_TOKEN }],
          stateSince: T0 + 5000,
          expiresAt: expiresAt(T0 + 5000),
        };
        expect(replayed).toStrictEqual(expected);
        expect(await ledger.get(key('evt_replay'))).toStrictEqual(expected);
      });

      it('lets the replayed row be claimed again with the original body', async () => {
        const dead = await deadRow('evt_again', T0);
        await ledger.replay({ ...key('evt_again'), operator: 'ops', reason: 'retry', nowMs: T0 + 5000 });

        const claimed = await claim(shipmentEvent('evt_again'), { owner: WORKER_B, nowMs: T0 + 5000 });

        expect(claimed.attempts).toBe(1);
        expect(claimed.body).toBe(dead.body);
        expect(claimed.leaseOwner).toBe(WORKER_B);
        expect(claimed.replays).toBe(1);
        expect(await ledger.get(key('evt_again'))).toStrictEqual(claimed);
      });

      it("leaves the replayed row due to workers whose clock is behind the operator's", async () => {
        // Prepare: the operator's machine runs an hour ahead of the workers.
        await deadRow('evt_clock_ahead', T0);
        const replayed = await ledger.replay({ ...key('evt_clock_ahead'), operator: 'ops', reason: 'retry', nowMs: T0 + 3_600_000 });

        // Act
        const claimed = await claim(shipmentEvent('evt_clock_ahead'), { nowMs: T0 + 1000 });

        // Assess
        expect(replayed.nextAttemptAt).toBeUndefined();
        expect(claimed.attempts).toBe(1);
        expect(claimed.leaseOwner).toBe(WORKER_A);
      });

      it('appends an audit entry on every replay', async () => {
        await deadRow('evt_audit', T0);
        await ledger.replay({ ...key('evt_audit'), operator: 'alice', reason: 'first', nowMs: T0 + 1000 });
        const claimed = await claim(shipmentEvent('evt_audit'), { nowMs: T0 + 1000 });
        await record(claimed, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 1500);

        const replayed = await ledger.replay({ ...key('evt_audit'), operator: 'bob', reason: 'second', nowMs: T0 + 2000 });

        expect(replayed.replays).toBe(2);
        expect(replayed.audit).toStrictEqual([
          { at: T0 + 1000, action: 'replay', operator: 'alice', reason: 'first', id: ANY_TOKEN },
          { at: T0 + 2000, action: 'replay', operator: 'bob', reason: 'second', id: ANY_TOKEN },
        ]);
      });

      it(`keeps only the newest ${MAX_AUDIT} audit entries, and counts every replay`, async () => {
        // Prepare: more replays than the audit keeps, each of a row that died again.
        const replays = MAX_AUDIT + 5;
        await deadRow('evt_audit_bound', T0);
        let replayed: DeliveryRecord | undefined;

        // Act
        for (let n = 1; n <= replays; n++) {
          const atMs = T0 + n * 1000;
          replayed = await ledger.replay({ ...key('evt_audit_bound'), operator: 'ops', reason: `replay ${n}`, nowMs: atMs });
          if (n === replays) break;
          const claimed = await claim(shipmentEvent('evt_audit_bound'), { nowMs: atMs });
          await record(claimed, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, atMs + 200);
        }

        // Assess
        expect(replayed?.replays).toBe(replays);
        expect(replayed?.audit).toStrictEqual(
          Array.from({ length: MAX_AUDIT }, (_, i) => {
            const n = replays - MAX_AUDIT + 1 + i;
            return { at: T0 + n * 1000, action: 'replay', operator: 'ops', reason: `replay ${n}`, id: ANY_TOKEN };
          }),
        );
        expect(await ledger.get(key('evt_audit_bound'))).toStrictEqual(replayed);
      });

      it('refuses a row that is not dead, carrying it', async () => {
        const claimed = await claim(shipmentEvent('evt_alive'));

        const error = await rejectionOf(
          ledger.replay({ ...key('evt_alive'), operator: 'ops', reason: 'why not', nowMs: T0 + 100 }),
          ReplayRefusedError,
        );

        expect(error.code).toBe('replay-refused');
        expect(error.refusal).toBe('not-dead');
        expect(error.eventId).toBe('evt_alive');
        expect(error.record).toStrictEqual(claimed);
        expect(error.message).toBe('event evt_alive is pending, not dead: only dead records can be replayed');
      });

      it('refuses a second replay with the same operator, reason and time as not dead: each replay is its own', async () => {
        await deadRow('evt_replay_twice', T0);
        const input = { ...key('evt_replay_twice'), operator: 'ops', reason: 'receiver fixed', nowMs: T0 + 5000 };
        const replayed = await ledger.replay(input);

        const error = await rejectionOf(ledger.replay(input), ReplayRefusedError);

        expect(error.refusal).toBe('not-dead');
        expect(error.record).toStrictEqual(replayed);
        expect(replayed.replays).toBe(1);
        expect(await ledger.get(key('evt_replay_twice'))).toStrictEqual(replayed);
      });

      it('records the authenticated caller in the audit entry when given', async () => {
        await deadRow('evt_caller', T0);

        const replayed = await ledger.replay({
          ...key('evt_caller'),
          operator: 'alice',
          reason: 'receiver fixed',
          caller: 'arn:aws:sts::123456789012:assumed-role/ops/alice',
          nowMs: T0 + 5000,
        });

        expect(replayed.audit).toStrictEqual([
          {
            at: T0 + 5000,
            action: 'replay',
            operator: 'alice',
            reason: 'receiver fixed',
            caller: 'arn:aws:sts::123456789012:assumed-role/ops/alice',
            id: ANY_TOKEN,
          },
        ]);
        expect(await ledger.get(key('evt_caller'))).toStrictEqual(replayed);
      });

      it('refuses another replay of a replayed row that is pending, as not dead', async () => {
        await deadRow('evt_replay_other', T0);
        const input = { ...key('evt_replay_other'), operator: 'ops', reason: 'receiver fixed', nowMs: T0 + 5000 };
        const replayed = await ledger.replay(input);

        const refusals = [
          await rejectionOf(ledger.replay({ ...input, nowMs: T0 + 5001 }), ReplayRefusedError),
          await rejectionOf(ledger.replay({ ...input, operator: 'someone-else' }), ReplayRefusedError),
          await rejectionOf(ledger.replay({ ...input, reason: 'another reason' }), ReplayRefusedError),
        ];

        expect(refusals.map((error) => error.refusal)).toStrictEqual(['not-dead', 'not-dead', 'not-dead']);
        expect(refusals.map((error) => error.record)).toStrictEqual([replayed, replayed, replayed]);
        expect(await ledger.get(key('evt_replay_other'))).toStrictEqual(replayed);
      });

      it('refuses an unknown event', async () => {
        const error = await rejectionOf(
          ledger.replay({ ...key('evt_unknown'), operator: 'ops', reason: 'typo', nowMs: T0 }),
          ReplayRefusedError,
        );

        expect(error.refusal).toBe('not-found');
        expect(error.record).toBeUndefined();
      });

      it('refuses a row of an invalid message: there is no event to send', async () => {
        await ledger.admitInvalid(key('evt_noevent'), 'not JSON', POLICY, T0, RETENTION_SECONDS);

        const error = await rejectionOf(
          ledger.replay({ ...key('evt_noevent'), operator: 'ops', reason: 'retry', nowMs: T0 + 100 }),
          ReplayRefusedError,
        );

        expect(error.refusal).toBe('no-event');
        expect(error.record?.deadReason).toBe('invalid');
        expect((await ledger.get(key('evt_noevent')))?.state).toBe('dead');
      });
    });

    describe('Method: release (docs/contract.md §13)', () => {
      const ORDERED = 'carrier-ordered';
      const release = (eventId: string, overrides: Record<string, unknown> = {}) =>
        ledger.release({ ...key(eventId, ORDERED), operator: 'ops@example.com', reason: 'receiver cannot take it (INC-7)', nowMs: T0 + 5000, ...overrides });

      async function deadRow(eventId: string, atMs = T0): Promise<DeliveryRecord> {
        const claimed = await claim(shipmentEvent(eventId), { endpoint: ORDERED, nowMs: atMs, sequence: 1 });
        return record(claimed, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, atMs + 200);
      }

      it('records an audit entry and the time on a dead row, which stays dead, listed and replayable', async () => {
        // Prepare
        const dead = await deadRow('evt_release');

        // Act
        const released = await release('evt_release');

        // Assess
        const expected: DeliveryRecord = {
          ...dead,
          releasedAt: T0 + 5000,
          audit: [{ at: T0 + 5000, action: 'release', operator: 'ops@example.com', reason: 'receiver cannot take it (INC-7)', id: ANY_TOKEN }],
          expiresAt: expiresAt(T0 + 5000),
        };
        expect(released).toStrictEqual(expected);
        expect(await ledger.get(key('evt_release', ORDERED))).toStrictEqual(expected);
        const listed = await ledger.listByState('dead', { endpoint: ORDERED });
        expect(listed.records).toStrictEqual([expected]);
        const replayed = await ledger.replay({ ...key('evt_release', ORDERED), operator: 'ops', reason: 'fixed after all', nowMs: T0 + 9000 });
        expect(replayed.state).toBe('pending');
        expect(replayed.releasedAt).toBe(T0 + 5000);
        expect(replayed.audit.map((entry) => entry.action)).toStrictEqual(['release', 'replay']);
      });

      it('records the authenticated caller in the audit entry when given', async () => {
        await deadRow('evt_release_caller');

        const released = await release('evt_release_caller', { caller: 'arn:aws:sts::123456789012:assumed-role/ops/alice' });

        expect(released.audit).toStrictEqual([
          {
            at: T0 + 5000,
            action: 'release',
            operator: 'ops@example.com',
            reason: 'receiver cannot take it (INC-7)',
            caller: 'arn:aws:sts::123456789012:assumed-role/ops/alice',
            id: ANY_TOKEN,
          },
        ]);
      });

      it('refuses a second release of the row, however given, carrying the row and writing nothing: a row is released once', async () => {
        await deadRow('evt_release_twice');
        const released = await release('evt_release_twice');

        const refusals = [
          await rejectionOf(release('evt_release_twice'), ReleaseRefusedError),
          await rejectionOf(release('evt_release_twice', { operator: 'bob', nowMs: T0 + 6000 }), ReleaseRefusedError),
        ];

        expect(refusals.map((error) => error.refusal)).toStrictEqual(['released', 'released']);
        expect(refusals.map((error) => error.record)).toStrictEqual([released, released]);
        expect(refusals[0]?.code).toBe('release-refused');
        expect(refusals[0]?.message).toBe(
          `event evt_release_twice at endpoint ${ORDERED} was released already at ${new Date(T0 + 5000).toISOString()}: a delivery is released once`,
        );
        expect(await ledger.get(key('evt_release_twice', ORDERED))).toStrictEqual(released);
      });

      it(`keeps the audit to its newest ${MAX_AUDIT} entries when a release finds it full`, async () => {
        // Prepare: a row replayed as often as the audit keeps, dead again each time.
        await deadRow('evt_release_full');
        for (let n = 1; n <= MAX_AUDIT; n++) {
          const atMs = T0 + n * 1000;
          await ledger.replay({ ...key('evt_release_full', ORDERED), operator: 'ops', reason: `replay ${n}`, nowMs: atMs });
          const claimed = await claim(shipmentEvent('evt_release_full'), { endpoint: ORDERED, nowMs: atMs });
          await record(claimed, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, atMs + 200);
        }

        // Act
        const released = await release('evt_release_full', { nowMs: T0 + 60_000 });

        // Assess
        expect(released.audit).toHaveLength(MAX_AUDIT);
        expect(released.audit[0]?.reason).toBe('replay 2');
        expect(released.audit.at(-1)).toStrictEqual({
          at: T0 + 60_000,
          action: 'release',
          operator: 'ops@example.com',
          reason: 'receiver cannot take it (INC-7)',
          id: ANY_TOKEN,
        });
        expect(released.replays).toBe(MAX_AUDIT);
        expect(await ledger.get(key('evt_release_full', ORDERED))).toStrictEqual(released);
      });

      it('says on the row, in the write of its death, that its shipment went on without it (onDead continue); a release is then refused', async () => {
        // Prepare
        const claimed = await claim(shipmentEvent('evt_release_continued'), { endpoint: ORDERED, sequence: 4 });

        // Act
        const dead = await record(claimed, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)', passesTurn: true }, T0 + 200);

        // Assess
        expect(dead).toMatchObject({ state: 'dead', deadReason: 'rejected', sequence: 4, releasedAt: T0 + 200, audit: [] });
        const error = await rejectionOf(release('evt_release_continued'), ReleaseRefusedError);
        expect(error.refusal).toBe('released');
        expect(await ledger.get(key('evt_release_continued', ORDERED))).toStrictEqual(dead);
      });

      it('refuses a row that is not dead, an unknown event and an invalid message, each named, changing nothing', async () => {
        // Prepare
        const pending = await claim(shipmentEvent('evt_release_pending'), { endpoint: ORDERED, sequence: 2 });
        await ledger.admitInvalid(key('evt_release_invalid', ORDERED), 'not JSON', POLICY, T0, RETENTION_SECONDS);

        // Act
        const notDead = await rejectionOf(release('evt_release_pending'), ReleaseRefusedError);
        const unknown = await rejectionOf(release('evt_release_unknown'), ReleaseRefusedError);
        const invalid = await rejectionOf(release('evt_release_invalid'), ReleaseRefusedError);

        // Assess
        expect([notDead.refusal, unknown.refusal, invalid.refusal]).toStrictEqual(['not-dead', 'not-found', 'no-event']);
        expect(notDead.record).toStrictEqual(pending);
        expect(notDead.message).toBe(`event evt_release_pending at endpoint ${ORDERED} is pending, not dead: only a dead delivery can be released`);
        expect(unknown.record).toBeUndefined();
        expect(unknown.message).toBe(`no delivery record for event evt_release_unknown at endpoint ${ORDERED}`);
        expect(invalid.message).toBe(`event evt_release_invalid at endpoint ${ORDERED} died as an invalid message: there is no event to release`);
        expect(await ledger.get(key('evt_release_pending', ORDERED))).toStrictEqual(pending);
        expect((await ledger.get(key('evt_release_invalid', ORDERED)))?.audit.map((entry) => entry.action)).toStrictEqual(['invalid-message']);
      });
    });

    describe('Method: get', () => {
      it('returns undefined for an unknown key', async () => {
        expect(await ledger.get(key('evt_never'))).toBeUndefined();
      });

      it('treats a row past its expiry as absent', async () => {
        await claim(shipmentEvent('evt_old'), { retentionSeconds: 60 });

        clockMs = T0 + 59_999;
        const before = await ledger.get(key('evt_old'));
        clockMs = T0 + 60_000;
        const after = await ledger.get(key('evt_old'));

        expect(before?.eventId).toBe('evt_old');
        expect(after).toBeUndefined();
      });

      it('returns a copy: changing it does not change the row', async () => {
        await claim(shipmentEvent('evt_copy'));
        const copy = (await ledger.get(key('evt_copy'))) as unknown as { attempts: number; history: unknown[] };

        copy.attempts = 99;
        copy.history.push('junk');

        const again = await ledger.get(key('evt_copy'));
        expect(again?.attempts).toBe(1);
        expect(again?.history).toStrictEqual([]);
      });
    });

    describe('Method: deliveriesOf', () => {
      it("returns every delivery of one event, one per endpoint, in endpoint order, as get reads them; no other event's", async () => {
        // Prepare: one event routed to three endpoints, each row in its own state, and a neighbour event.
        const event = shipmentEvent('evt_fan');
        await claim(event, { endpoint: 'warehouse' });
        const billing = await claim(event, { endpoint: 'billing' });
        await record(billing, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 100);
        const crm = await claim(event, { endpoint: 'crm' });
        await record(crm, ACCEPTED, { state: 'delivered' }, T0 + 100);
        await claim(shipmentEvent('evt_fan_other'), { endpoint: 'billing' });
        await claim(shipmentEvent('evt_fa'), { endpoint: 'billing' });

        // Act
        const deliveries = await ledger.deliveriesOf('evt_fan');

        // Assess
        expect(deliveries.map((d) => [d.endpoint, d.state])).toStrictEqual([
          ['billing', 'dead'],
          ['crm', 'delivered'],
          ['warehouse', 'pending'],
        ]);
        expect(deliveries).toStrictEqual([
          await ledger.get(key('evt_fan', 'billing')),
          await ledger.get(key('evt_fan', 'crm')),
          await ledger.get(key('evt_fan', 'warehouse')),
        ]);
      });

      it('returns no deliveries for an event without rows', async () => {
        await claim(shipmentEvent('evt_known'));

        expect(await ledger.deliveriesOf('evt_unknown')).toStrictEqual([]);
      });

      it("includes an invalid message's row, which holds no event", async () => {
        await ledger.admitInvalid(key('evt_fan_invalid'), 'not JSON', POLICY, T0, RETENTION_SECONDS);

        const deliveries = await ledger.deliveriesOf('evt_fan_invalid');

        expect(deliveries.map((d) => [d.endpoint, d.state, d.deadReason, d.body])).toStrictEqual([
          [DEFAULT_ENDPOINT, 'dead', 'invalid', undefined],
        ]);
      });

      it('leaves out a delivery past its expiry, as get does', async () => {
        const event = shipmentEvent('evt_fan_expiry');
        await claim(event, { endpoint: 'short', retentionSeconds: 60 });
        await claim(event, { endpoint: 'long' });

        clockMs = T0 + 59_999;
        const before = await ledger.deliveriesOf('evt_fan_expiry');
        clockMs = T0 + 60_000;
        const after = await ledger.deliveriesOf('evt_fan_expiry');

        expect(before.map((d) => d.endpoint)).toStrictEqual(['long', 'short']);
        expect(after.map((d) => d.endpoint)).toStrictEqual(['long']);
      });

      it('reads its own writes at once: a replay just written shows', async () => {
        const event = shipmentEvent('evt_fan_fresh');
        const dying = await claim(event, { endpoint: 'a' });
        await record(dying, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 100);

        await ledger.replay({ ...key('evt_fan_fresh', 'a'), operator: 'ops', reason: 'fixed', nowMs: T0 + 200 });
        const deliveries = await ledger.deliveriesOf('evt_fan_fresh');

        expect(deliveries.map((d) => [d.endpoint, d.state, d.replays])).toStrictEqual([['a', 'pending', 1]]);
      });

      it('returns copies: changing one does not change the row', async () => {
        await claim(shipmentEvent('evt_fan_copy'), { endpoint: 'a' });
        const [copy] = (await ledger.deliveriesOf('evt_fan_copy')) as unknown as { attempts: number }[];
        if (copy === undefined) throw new Error('no delivery');

        copy.attempts = 99;

        expect((await ledger.deliveriesOf('evt_fan_copy'))[0]?.attempts).toBe(1);
      });
    });

    describe('Method: deliveriesOfShipment (the shipment index, docs/contract.md §5)', () => {
      /** Every page of a shipment's deliveries, each page's rows as `eventId@endpoint`. */
      async function shipmentPages(shipmentId: string, limit: number): Promise<string[][]> {
        const pages: string[][] = [];
        let cursor: string | undefined;
        do {
          const page = await ledger.deliveriesOfShipment(shipmentId, { limit, ...(cursor === undefined ? {} : { cursor }) });
          pages.push(page.items.map((d) => `${d.eventId}@${d.endpoint}`));
          cursor = page.next;
        } while (cursor !== undefined);
        return pages;
      }

      it("returns a shipment's deliveries across its events and endpoints, newest admission first, as get reads them; no other shipment's", async () => {
        // Prepare: two events of shp_2001 to two endpoints each, admitted one after another, and a neighbour shipment.
        const first = shipmentEvent('evt_ship_first', { shipmentId: 'shp_2001' });
        const second = shipmentEvent('evt_ship_second', { shipmentId: 'shp_2001' });
        const acme = await claim(first, { endpoint: 'carrier-acme', nowMs: T0 });
        await record(acme, ACCEPTED, { state: 'delivered' }, T0 + 50);
        await claim(first, { endpoint: 'notifications', nowMs: T0 + 100 });
        await claim(second, { endpoint: 'carrier-acme', nowMs: T0 + 200 });
        await claim(second, { endpoint: 'notifications', nowMs: T0 + 300 });
        await claim(shipmentEvent('evt_ship_other', { shipmentId: 'shp_2002' }), { nowMs: T0 + 400 });

        // Act
        const page = await ledger.deliveriesOfShipment('shp_2001');

        // Assess
        expect(page.items.map((d) => [d.eventId, d.endpoint, d.createdAt])).toStrictEqual([
          ['evt_ship_second', 'notifications', T0 + 300],
          ['evt_ship_second', 'carrier-acme', T0 + 200],
          ['evt_ship_first', 'notifications', T0 + 100],
          ['evt_ship_first', 'carrier-acme', T0],
        ]);
        expect(page.items[3]).toStrictEqual(await ledger.get(key('evt_ship_first', 'carrier-acme')));
        expect(page.items[3]).toMatchObject({ state: 'delivered', shipmentId: 'shp_2001' });
        expect(page.next).toBeUndefined();
      });

      it('pages with an opaque cursor: every delivery once, in order, and no cursor after the last page', async () => {
        // Prepare: five deliveries, two admitted in the same millisecond.
        const times = [T0, T0 + 10, T0 + 10, T0 + 20, T0 + 30];
        for (const [i, atMs] of times.entries()) await claim(shipmentEvent(`evt_ship_page_${i}`, { shipmentId: 'shp_pages' }), { nowMs: atMs });

        // Act
        const pages = await shipmentPages('shp_pages', 2);

        // Assess
        expect(pages.map((page) => page.length)).toStrictEqual([2, 2, 1]);
        const all = pages.flat();
        expect(all.slice(0, 1)).toStrictEqual([`evt_ship_page_4@${DEFAULT_ENDPOINT}`]);
        expect(all.at(-1)).toBe(`evt_ship_page_0@${DEFAULT_ENDPOINT}`);
        expect([...all].sort()).toStrictEqual(times.map((_, i) => `evt_ship_page_${i}@${DEFAULT_ENDPOINT}`));
      });

      it('indexes a parked row and one admitted to wait its turn, as it indexes a claimed one', async () => {
        const parked = shipmentEvent('evt_ship_parked', { shipmentId: 'shp_waits' });
        const waiting = shipmentEvent('evt_ship_waiting', { shipmentId: 'shp_waits' });
        await ledger.park({ event: parked, endpoint: 'carrier-acme', nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS });
        await ledger.admit({ event: waiting, endpoint: 'carrier-acme', nowMs: T0 + 1, policy: POLICY, retentionSeconds: RETENTION_SECONDS, sequence: 2 });

        expect(await shipmentPages('shp_waits', 10)).toStrictEqual([['evt_ship_waiting@carrier-acme', 'evt_ship_parked@carrier-acme']]);
      });

      it("does not index an invalid message's row (it holds no event, so no shipment); the valid event that takes it over is", async () => {
        // Prepare
        await ledger.admitInvalid(key('evt_ship_invalid'), 'not JSON', POLICY, T0, RETENTION_SECONDS);
        const before = await ledger.get(key('evt_ship_invalid'));

        // Act
        await claim(shipmentEvent('evt_ship_invalid', { shipmentId: 'shp_taken_over' }), { nowMs: T0 + 100 });

        // Assess
        expect(before?.shipmentId).toBeUndefined();
        expect(await shipmentPages('shp_taken_over', 10)).toStrictEqual([[`evt_ship_invalid@${DEFAULT_ENDPOINT}`]]);
      });

      it('keeps the shipment a row was created with: a later claim of other content under its ID changes nothing', async () => {
        const row = await claim(shipmentEvent('evt_ship_kept', { shipmentId: 'shp_kept' }));
        await record(row, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 100);

        await rejectionOf(claim(shipmentEvent('evt_ship_kept', { shipmentId: 'shp_other' }), { nowMs: T0 + 30_000 }), ClaimRefusedError);

        expect((await ledger.deliveriesOfShipment('shp_kept')).items.map((d) => d.eventId)).toStrictEqual(['evt_ship_kept']);
        expect((await ledger.deliveriesOfShipment('shp_other')).items).toStrictEqual([]);
      });

      it('leaves out a delivery past its expiry, as get does', async () => {
        const event = shipmentEvent('evt_ship_expiry', { shipmentId: 'shp_expiry' });
        await claim(event, { endpoint: 'short', retentionSeconds: 60 });
        await claim(event, { endpoint: 'long', nowMs: T0 + 1 });

        clockMs = T0 + 60_000;
        const after = await ledger.deliveriesOfShipment('shp_expiry');

        expect(after.items.map((d) => d.endpoint)).toStrictEqual(['long']);
      });

      it('returns an empty page for a shipment without deliveries', async () => {
        expect(await ledger.deliveriesOfShipment('shp_unknown')).toStrictEqual({ items: [] });
      });

      it("refuses a cursor another shipment's page issued", async () => {
        for (const i of [1, 2]) await claim(shipmentEvent(`evt_ship_cursor_${i}`, { shipmentId: 'shp_cursor' }), { nowMs: T0 + i });
        const { next } = await ledger.deliveriesOfShipment('shp_cursor', { limit: 1 });
        if (next === undefined) throw new Error('expected a next page');

        await rejectionOf(ledger.deliveriesOfShipment('shp_elsewhere', { cursor: next }), RangeError);
        await rejectionOf(ledger.deliveriesOfShipment('shp_cursor', { cursor: 'not-a-cursor' }), RangeError);
      });
    });

    describe('With the shipment index off (shipmentIndex: false)', () => {
      let unindexed: LedgerUnderTest;

      beforeEach(async () => {
        unindexed = await makeLedger({ now: () => clockMs }, { shipmentIndex: false });
      });

      afterEach(async () => {
        await unindexed.close();
      });

      it("writes no key of the index: a claimed, parked or admitted row of an unordered endpoint carries no shipment", async () => {
        const off = unindexed.ledger;
        const claimed = await off.claim({ event: shipmentEvent('evt_off_claimed'), endpoint: DEFAULT_ENDPOINT, owner: WORKER_A, nowMs: T0, leaseMs: LEASE_MS, policy: POLICY, retentionSeconds: RETENTION_SECONDS });
        const parked = await off.park({ event: shipmentEvent('evt_off_parked'), endpoint: 'carrier-acme', nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS });
        const admitted = await off.admit({ event: shipmentEvent('evt_off_admitted'), endpoint: 'carrier-acme', nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS });

        for (const row of [claimed, parked, admitted, await off.get(key('evt_off_claimed'))]) expect(row?.shipmentId).toBeUndefined();
      });

      it('still keeps the shipment beside the sequence of an ordered endpoint\'s row (docs/contract.md §13)', async () => {
        const claimed = await unindexed.ledger.claim({
          event: shipmentEvent('evt_off_ordered'),
          endpoint: 'carrier-acme',
          owner: WORKER_A,
          nowMs: T0,
          leaseMs: LEASE_MS,
          policy: POLICY,
          retentionSeconds: RETENTION_SECONDS,
          sequence: 1,
        });

        expect(claimed).toMatchObject({ sequence: 1, shipmentId: 'shp_1001' });
      });

      it('refuses a lookup by shipment, saying the index is off', async () => {
        await unindexed.ledger.claim({ event: shipmentEvent('evt_off_lookup'), endpoint: DEFAULT_ENDPOINT, owner: WORKER_A, nowMs: T0, leaseMs: LEASE_MS, policy: POLICY, retentionSeconds: RETENTION_SECONDS });

        const error = await rejectionOf(unindexed.ledger.deliveriesOfShipment('shp_1001'), ShipmentIndexOffError);

        expect(error.code).toBe('shipment-index-off');
        expect(error.message).toMatch(/has no shipment index/);
      });
    });

    describe('Method: listByState', () => {
      async function deadRow(id: string, atMs: number): Promise<DeliveryRecord> {
        const claimed = await claim(shipmentEvent(id), { nowMs: atMs - 100 });
        return record(claimed, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, atMs);
      }

      /** A row put back on the pending listing at `sinceMs`, by one of the three writes that list a row as pending. */
      async function listedPending(id: string, how: 'replayed' | 'released' | 'relisted', sinceMs: number): Promise<DeliveryRecord> {
        switch (how) {
          case 'replayed':
            await deadRow(id, T0 + 100);
            return ledger.replay({ ...key(id), operator: 'ops', reason: 'receiver fixed', nowMs: sinceMs });
          case 'released': {
            await ledger.park({ event: shipmentEvent(id), endpoint: DEFAULT_ENDPOINT, nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS });
            const released = await ledger.unpark(key(id), sinceMs, sinceMs);
            if (released === undefined) throw new Error(`${id} was not released`);
            return released;
          }
          case 'relisted': {
            const claimed = await claim(shipmentEvent(id), { nowMs: T0 });
            const failed = await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 600_000 }, T0 + 100);
            expect(await ledger.relist(key(id), sinceMs)).toBe(true);
            return failed;
          }
        }
      }

      /**
       * Rows listed as pending, replayed, released from parking and relisted in turn, each listed
       * before the one before it by key, so listing order differs from key order; their IDs in listing order.
       */
      async function listedRows(count: number): Promise<string[]> {
        const ids = Array.from({ length: count }, (_, i) => `evt_list_${String(i).padStart(2, '0')}`);
        for (const [i, id] of ids.entries()) {
          const how = i % 3 === 0 ? 'replayed' : i % 3 === 1 ? 'released' : 'relisted';
          await listedPending(id, how, T0 + (count - i) * 1000);
        }
        return ids.reverse();
      }

      /** The attempt `n` (from 0) of `id` under a budget of six, claimed at T0 + n s and recorded 100 ms later. */
      async function attemptOf(id: string, n: number, outcome: AttemptOutcome, next: AttemptNext): Promise<DeliveryRecord> {
        const claimed = await claim(shipmentEvent(id), { nowMs: T0 + n * 1000, policy: retryPolicy(6, [1]) });
        return record(claimed, outcome, next, T0 + n * 1000 + 100);
      }

      /** What attempt `n` leaves when it fails: pending, due a second after its claim. */
      const retryAfter = (n: number): AttemptNext => ({ state: 'pending', nextAttemptAt: T0 + (n + 1) * 1000 });

      /** A row pending after `failures` failed attempts. */
      async function retriedRow(id: string, failures: number): Promise<DeliveryRecord> {
        let row: DeliveryRecord | undefined;
        for (let n = 0; n < failures; n++) row = await attemptOf(id, n, TEMPORARY, retryAfter(n));
        if (row === undefined) throw new Error('no failure recorded');
        return row;
      }

      it('lists and counts no row pending after failed attempts, one or several; a row retried, then delivered or dead, is never listed as pending', async () => {
        // Act: after every attempt, the pending listing (whole, and of the rows' endpoint) and its counts.
        const seen: string[] = [];
        async function look(row: DeliveryRecord): Promise<void> {
          const listed = [
            ...(await ledger.listByState('pending')).records,
            ...(await ledger.listByState('pending', { endpoint: DEFAULT_ENDPOINT, newestFirst: true })).records,
          ];
          const counted = [await ledger.countByState('pending'), await ledger.countByState('pending', { endpoint: DEFAULT_ENDPOINT })];
          seen.push(`${row.eventId} ${row.state} after ${row.attempts}: listed [${listed.map((r) => r.eventId).join(' ')}], counted ${counted.join('/')}`);
        }
        await look(await attemptOf('evt_failed_once', 0, TEMPORARY, retryAfter(0)));
        for (let n = 0; n < 3; n++) await look(await attemptOf('evt_failed_thrice', n, TEMPORARY, retryAfter(n)));
        for (let n = 0; n < 2; n++) await look(await attemptOf('evt_retried_delivered', n, TEMPORARY, retryAfter(n)));
        await look(await attemptOf('evt_retried_delivered', 2, ACCEPTED, { state: 'delivered' }));
        for (let n = 0; n < 2; n++) await look(await attemptOf('evt_retried_dead', n, TEMPORARY, retryAfter(n)));
        await look(await attemptOf('evt_retried_dead', 2, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }));

        // Assess
        expect(seen).toStrictEqual([
          'evt_failed_once pending after 1: listed [], counted 0/0',
          'evt_failed_thrice pending after 1: listed [], counted 0/0',
          'evt_failed_thrice pending after 2: listed [], counted 0/0',
          'evt_failed_thrice pending after 3: listed [], counted 0/0',
          'evt_retried_delivered pending after 1: listed [], counted 0/0',
          'evt_retried_delivered pending after 2: listed [], counted 0/0',
          'evt_retried_delivered delivered after 3: listed [], counted 0/0',
          'evt_retried_dead pending after 1: listed [], counted 0/0',
          'evt_retried_dead pending after 2: listed [], counted 0/0',
          'evt_retried_dead dead after 3: listed [], counted 0/0',
        ]);
        expect((await ledger.listByState('dead')).records.map((r) => [r.eventId, r.stateSince])).toStrictEqual([['evt_retried_dead', T0 + 2100]]);
        expect(await ledger.countByState('dead')).toBe(1);
      });

      it('leaves a listed row where it is through its failed attempts: a replayed row stays listed at its replay until it settles', async () => {
        // Prepare: a row replayed at T0 + 5 s.
        await listedPending('evt_replay_retried', 'replayed', T0 + 5000);

        // Act: two attempts fail, then the third is delivered.
        const afterFailures: string[][] = [];
        for (let n = 0; n < 2; n++) {
          const claimed = await claim(shipmentEvent('evt_replay_retried'), { nowMs: T0 + 6000 + n * 1000 });
          await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 7000 + n * 1000 }, T0 + 6100 + n * 1000);
          const atReplay = await ledger.listByState('pending', { sinceMs: T0 + 5000, untilMs: T0 + 5001 });
          afterFailures.push(atReplay.records.map((r) => `${r.eventId} after ${r.attempts}`));
        }
        const counted = await ledger.countByState('pending');
        const last = await claim(shipmentEvent('evt_replay_retried'), { nowMs: T0 + 8000 });
        await record(last, ACCEPTED, { state: 'delivered' }, T0 + 8100);

        // Assess
        expect(afterFailures).toStrictEqual([['evt_replay_retried after 1'], ['evt_replay_retried after 2']]);
        expect(counted).toBe(1);
        expect(await ledger.listByState('pending')).toStrictEqual({ records: [] });
        expect(await ledger.countByState('pending')).toBe(0);
      });

      it('lists pending rows replayed, released from parking or relisted, oldest entry first, page by page; not the rest', async () => {
        // Prepare: seven listed rows, plus one in its first attempt, one pending after a failed
        // attempt, one delivered, one dead and one parked.
        const ids = await listedRows(7);
        await claim(shipmentEvent('evt_list_first'), { nowMs: T0 });
        await retriedRow('evt_list_retrying', 1);
        const done = await claim(shipmentEvent('evt_list_done'), { nowMs: T0 });
        await record(done, ACCEPTED, { state: 'delivered' }, T0 + 100);
        await deadRow('evt_list_gone', T0 + 100);
        await ledger.park({ event: shipmentEvent('evt_list_parked'), endpoint: DEFAULT_ENDPOINT, nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS });

        // Act
        const first = await ledger.listByState('pending', { limit: 3 });
        const second = await ledger.listByState('pending', { limit: 3, cursor: first.cursor });
        const third = await ledger.listByState('pending', { limit: 3, cursor: second.cursor });

        // Assess
        expect(first.records.map((r) => r.eventId)).toStrictEqual(ids.slice(0, 3));
        expect(second.records.map((r) => r.eventId)).toStrictEqual(ids.slice(3, 6));
        expect(third.records.map((r) => r.eventId)).toStrictEqual(ids.slice(6));
        expect(first.cursor).toEqual(expect.any(String));
        expect(third.cursor).toBeUndefined();
        expect((await ledger.listByState('dead')).records.map((r) => r.eventId)).toStrictEqual(['evt_list_gone']);
      });

      it('lists newest first when asked, page by page', async () => {
        const ids = await listedRows(5);

        const first = await ledger.listByState('pending', { limit: 3, newestFirst: true });
        const second = await ledger.listByState('pending', { limit: 3, newestFirst: true, cursor: first.cursor });

        expect(first.records.map((r) => r.eventId)).toStrictEqual(ids.slice(2).reverse());
        expect(second.records.map((r) => r.eventId)).toStrictEqual(ids.slice(0, 2).reverse());
        expect(second.cursor).toBeUndefined();
      });

      it('pages through rows listed in the same millisecond without losing or repeating one', async () => {
        // Prepare: five rows die at the same instant.
        for (const id of ['evt_tie_c', 'evt_tie_a', 'evt_tie_e', 'evt_tie_b', 'evt_tie_d']) await deadRow(id, T0 + 500);

        // Act
        const seen: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await ledger.listByState('dead', { limit: 2, cursor });
          seen.push(...page.records.map((r) => r.eventId));
          cursor = page.cursor;
        } while (cursor !== undefined);

        // Assess
        expect(seen).toStrictEqual(['evt_tie_a', 'evt_tie_b', 'evt_tie_c', 'evt_tie_d', 'evt_tie_e']);
      });

      it('returns whole records', async () => {
        const replayed = await listedPending('evt_whole_replayed', 'replayed', T0 + 1000);
        const released = await listedPending('evt_whole_released', 'released', T0 + 2000);
        const relisted = await listedPending('evt_whole_relisted', 'relisted', T0 + 3000);

        const page = await ledger.listByState('pending');

        expect(page).toStrictEqual({ records: [replayed, released, relisted] });
      });

      it('pages 25 rows at a time by default', async () => {
        const ids = await listedRows(26);

        const first = await ledger.listByState('pending');
        const second = await ledger.listByState('pending', { cursor: first.cursor });

        expect(first.records.map((r) => r.eventId)).toStrictEqual(ids.slice(0, 25));
        expect(second.records.map((r) => r.eventId)).toStrictEqual(ids.slice(25));
        expect(second.cursor).toBeUndefined();
      });

      it('gives a cursor exactly when more rows follow, a full last page included', async () => {
        const ids = await listedRows(4);

        const first = await ledger.listByState('pending', { limit: 2 });
        const second = await ledger.listByState('pending', { limit: 2, cursor: first.cursor });

        expect(first.records.map((r) => r.eventId)).toStrictEqual(ids.slice(0, 2));
        expect(second.records.map((r) => r.eventId)).toStrictEqual(ids.slice(2));
        expect(second.cursor).toBeUndefined();
      });

      it('moves a row from the pending listing to the dead one when it dies, and out of both when delivered', async () => {
        // Prepare: two rows listed as pending (replayed), both claimed again.
        await listedPending('evt_moves', 'replayed', T0 + 1000);
        await listedPending('evt_heals', 'replayed', T0 + 1000);
        const listedBefore = (await ledger.listByState('pending')).records.map((r) => r.eventId);
        const dying = await claim(shipmentEvent('evt_moves'), { nowMs: T0 + 2000 });
        const healing = await claim(shipmentEvent('evt_heals'), { nowMs: T0 + 2000 });

        // Act
        await record(dying, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 2100);
        await record(healing, ACCEPTED, { state: 'delivered' }, T0 + 2100);

        // Assess
        expect(listedBefore).toStrictEqual(['evt_heals', 'evt_moves']);
        expect((await ledger.listByState('pending')).records).toStrictEqual([]);
        expect((await ledger.listByState('dead')).records.map((r) => [r.eventId, r.stateSince])).toStrictEqual([['evt_moves', T0 + 2100]]);
      });

      it('lists an invalid message as dead, a replayed row as pending, and a row spent by a dead worker as dead', async () => {
        await ledger.admitInvalid(key('evt_list_invalid'), 'not JSON', POLICY, T0, RETENTION_SECONDS);
        await deadRow('evt_list_replayed', T0 + 100);
        await ledger.replay({ ...key('evt_list_replayed'), operator: 'ops', reason: 'fixed', nowMs: T0 + 200 });
        await claim(shipmentEvent('evt_list_crashed'), { nowMs: T0, policy: retryPolicy(1, [30]) });
        await ledger.markExhausted(key('evt_list_crashed'), T0 + LEASE_MS, shipmentEvent('evt_list_crashed').body);

        expect((await ledger.listByState('dead')).records.map((r) => r.eventId)).toStrictEqual(['evt_list_invalid', 'evt_list_crashed']);
        expect((await ledger.listByState('pending')).records.map((r) => r.eventId)).toStrictEqual(['evt_list_replayed']);
      });

      it('leaves out rows past their expiry', async () => {
        // Prepare: two rows replayed, the first with a one-minute retention (its expiry counts from the replay).
        const short = await claim(shipmentEvent('evt_short'), { retentionSeconds: 60 });
        await record(short, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0);
        await ledger.replay({ ...key('evt_short'), operator: 'ops', reason: 'receiver fixed', nowMs: T0 });
        await listedPending('evt_kept', 'replayed', T0 + 1);

        // Act
        clockMs = T0 + 59_999;
        const before = await ledger.listByState('pending');
        clockMs = T0 + 60_000;
        const page = await ledger.listByState('pending');

        // Assess
        expect(before.records.map((r) => r.eventId)).toStrictEqual(['evt_short', 'evt_kept']);
        expect(page.records.map((r) => r.eventId)).toStrictEqual(['evt_kept']);
      });

      it('counts the rows of a listing, not those in their attempts or delivered', async () => {
        await listedRows(3);
        await claim(shipmentEvent('evt_count_first'));
        await retriedRow('evt_count_retrying', 2);
        const done = await claim(shipmentEvent('evt_count_done'));
        await record(done, ACCEPTED, { state: 'delivered' }, T0 + 100);
        await deadRow('evt_count_dead', T0 + 100);
        await ledger.admitInvalid(key('evt_count_invalid'), 'not JSON', POLICY, T0, RETENTION_SECONDS);

        expect(await ledger.countByState('pending')).toBe(3);
        expect(await ledger.countByState('dead')).toBe(2);
        await rejectionOf(ledger.countByState('delivered' as 'dead'), RangeError);
      });

      /** A dead row of `endpoint`, died at `atMs`. */
      async function deadAt(id: string, endpoint: string, atMs: number): Promise<void> {
        const claimed = await claim(shipmentEvent(id), { endpoint, nowMs: atMs - 100 });
        await record(claimed, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, atMs);
      }

      /** Every page of a listing, with the options given, each page's records' keys. */
      async function allPages(state: 'pending' | 'dead', options: Omit<ListOptions, 'cursor'>): Promise<string[][]> {
        const pages: string[][] = [];
        let cursor: string | undefined;
        do {
          const page = await ledger.listByState(state, { ...options, cursor });
          pages.push(page.records.map((r) => `${r.eventId}@${r.endpoint}`));
          cursor = page.cursor;
        } while (cursor !== undefined);
        return pages;
      }

      it("lists one endpoint's rows only when asked, page by page, none lost or repeated, in order", async () => {
        // Prepare: dead rows of two endpoints, interleaved in time; an event dead at both.
        for (let i = 0; i < 7; i++) await deadAt(`evt_ep_${i}`, i % 3 === 0 ? 'billing' : 'warehouse', T0 + 1000 * i);
        await deadAt('evt_ep_both', 'billing', T0 + 10_000);
        await deadAt('evt_ep_both', 'warehouse', T0 + 10_000);

        // Act
        const billing = await allPages('dead', { endpoint: 'billing', limit: 2 });
        const warehouse = await allPages('dead', { endpoint: 'warehouse', limit: 3 });
        const nobody = await ledger.listByState('dead', { endpoint: 'nobody' });
        const newest = await ledger.listByState('dead', { endpoint: 'billing', limit: 2, newestFirst: true });

        // Assess
        expect(billing).toStrictEqual([['evt_ep_0@billing', 'evt_ep_3@billing'], ['evt_ep_6@billing', 'evt_ep_both@billing']]);
        expect(warehouse).toStrictEqual([
          ['evt_ep_1@warehouse', 'evt_ep_2@warehouse', 'evt_ep_4@warehouse'],
          ['evt_ep_5@warehouse', 'evt_ep_both@warehouse'],
        ]);
        expect(nobody).toStrictEqual({ records: [] });
        expect(newest.records.map((r) => r.eventId)).toStrictEqual(['evt_ep_both', 'evt_ep_6']);
        expect(newest.cursor).toEqual(expect.any(String));
      });

      it('lists the rows that entered the listing within a window: since inclusive, until exclusive, page by page', async () => {
        // Prepare: dead rows dying a second apart, two of them in the same millisecond.
        for (let i = 0; i < 6; i++) await deadAt(`evt_win_${i}`, 'billing', T0 + 1000 * i);
        await deadAt('evt_win_2b', 'billing', T0 + 2000);
        await deadAt('evt_win_other', 'warehouse', T0 + 3000);

        // Act
        const window = await allPages('dead', { sinceMs: T0 + 2000, untilMs: T0 + 5000, limit: 2 });
        const since = await allPages('dead', { endpoint: 'billing', sinceMs: T0 + 4000, limit: 1 });
        const until = await allPages('dead', { endpoint: 'billing', untilMs: T0 + 1000 });
        const newest = await allPages('dead', { endpoint: 'billing', sinceMs: T0 + 1000, untilMs: T0 + 3000, limit: 2, newestFirst: true });

        // Assess
        expect(window).toStrictEqual([
          ['evt_win_2@billing', 'evt_win_2b@billing'],
          ['evt_win_3@billing', 'evt_win_other@warehouse'],
          ['evt_win_4@billing'],
        ]);
        expect(since).toStrictEqual([['evt_win_4@billing'], ['evt_win_5@billing']]);
        expect(until).toStrictEqual([['evt_win_0@billing']]);
        expect(newest).toStrictEqual([['evt_win_2b@billing', 'evt_win_2@billing'], ['evt_win_1@billing']]);
      });

      it('refuses an empty or malformed window', async () => {
        await rejectionOf(ledger.listByState('dead', { sinceMs: T0, untilMs: T0 }), RangeError);
        await rejectionOf(ledger.listByState('dead', { sinceMs: -1 }), RangeError);
        await rejectionOf(ledger.listByState('dead', { untilMs: 1.5 }), RangeError);
      });

      it('refuses a cursor it did not issue for the same listing and order, and refuses to list delivered rows', async () => {
        await listedRows(3);
        const page = await ledger.listByState('pending', { limit: 1 });

        await rejectionOf(ledger.listByState('dead', { cursor: page.cursor }), RangeError);
        await rejectionOf(ledger.listByState('pending', { cursor: page.cursor, newestFirst: true }), RangeError);
        await rejectionOf(ledger.listByState('pending', { cursor: 'not-a-cursor' }), RangeError);
        await rejectionOf(ledger.listByState('delivered' as 'dead'), RangeError);
      });
    });

    describe('Parking (docs/contract.md §12)', () => {
      const ACME = 'carrier-acme';
      const OTHER = 'carrier-other';

      function park(event: ParsedEvent, overrides: Partial<ParkInput> = {}): Promise<DeliveryRecord> {
        return ledger.park({ event, endpoint: ACME, nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS, ...overrides });
      }

      async function stored(eventId: string, endpoint = ACME): Promise<DeliveryRecord> {
        const row = await ledger.get(key(eventId, endpoint));
        if (row === undefined) throw new Error(`no row for ${eventId}@${endpoint}`);
        return row;
      }

      /** Every page of one listing, each page's event IDs. */
      async function pagesOf(state: 'pending' | 'dead' | 'parked', options: Omit<ListOptions, 'cursor'>): Promise<string[][]> {
        const pages: string[][] = [];
        let cursor: string | undefined;
        do {
          const page = await ledger.listByState(state, { ...options, cursor });
          pages.push(page.records.map((r) => r.eventId));
          cursor = page.cursor;
        } while (cursor !== undefined);
        return pages;
      }

      const parkedIds = async (endpoint = ACME) => (await pagesOf('parked', { endpoint, limit: 100 })).flat();
      const pendingIds = async () => (await pagesOf('pending', { limit: 100 })).flat();

      describe('Method: park', () => {
        it('admits a new event as pending and parked without claiming it: no attempt, no lease, listed parked, claims refused', async () => {
          // Prepare
          const event = shipmentEvent('evt_park_new');

          // Act
          const parked = await park(event);

          // Assess
          const expected: DeliveryRecord = { ...newRow('evt_park_new', ACME, event, T0), body: event.body, attempts: 0, parkedAt: T0 };
          expect(parked).toStrictEqual(expected);
          expect(await stored('evt_park_new')).toStrictEqual(expected);
          expect(await parkedIds()).toStrictEqual(['evt_park_new']);
          expect(await pendingIds()).toStrictEqual([]);
          expect(claimRefusal(parked, { contentHash: event.contentHash, nowMs: T0 + 1000 })).toBe('parked');
          const refused = await rejectionOf(claim(event, { endpoint: ACME, nowMs: T0 + 1000 }), ClaimRefusedError);
          expect(refused.record).toStrictEqual(expected);
          expect(await stored('evt_park_new')).toStrictEqual(expected);
        });

        it('parks an unleased pending row after a failed attempt, relisted by recovery: out of the pending listing, attempts and due time kept, sorted at its admission', async () => {
          // Prepare: a row admitted at T0 that failed, due again at T0 + 60 s, and listed as pending
          // by the recovery sweep at T0 + 300; a new event parked at T0 + 200.
          const claimed = await claim(shipmentEvent('evt_park_failed'), { endpoint: ACME });
          const failed = await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 60_000 }, T0 + 100);
          await park(shipmentEvent('evt_park_later'), { nowMs: T0 + 200 });
          await ledger.relist(key('evt_park_failed', ACME), T0 + 300);
          expect(await pendingIds()).toStrictEqual(['evt_park_failed']);

          // Act: parked before it is due, after the other was.
          const parked = await park(shipmentEvent('evt_park_failed'), { nowMs: T0 + 500, policy: OTHER_POLICY, retentionSeconds: 60 });

          // Assess
          const { leaseExpiresAt: _lease, expiresAt: _expiry, ...unleased } = failed;
          // The body too: its release sends the event from the row (a row between attempts holds none).
          expect(failed.body).toBeUndefined();
          expect(parked).toStrictEqual({ ...unleased, body: shipmentEvent('evt_park_failed').body, parkedAt: T0 + 500 });
          expect(parked.attempts).toBe(1);
          expect(parked.nextAttemptAt).toBe(T0 + 60_000);
          expect(parked.policy).toStrictEqual(POLICY);
          expect(await stored('evt_park_failed')).toStrictEqual(parked);
          expect(await pendingIds()).toStrictEqual([]);
          expect(await parkedIds()).toStrictEqual(['evt_park_failed', 'evt_park_later']);
        });

        it("parks a pending row whose lease lapsed, whatever its budget: the lapsed claim's failure can no longer be recorded", async () => {
          // Prepare: a worker claimed the last attempt and vanished.
          const claimed = await claim(shipmentEvent('evt_park_lapsed'), { endpoint: ACME, policy: retryPolicy(1, [30]) });

          // Act
          const parked = await park(shipmentEvent('evt_park_lapsed'), { nowMs: T0 + LEASE_MS });

          // Assess
          expect(parked.attempts).toBe(1);
          expect(parked.parkedAt).toBe(T0 + LEASE_MS);
          expect([parked.leaseOwner, parked.leaseExpiresAt, parked.claimToken]).toStrictEqual([undefined, undefined, undefined]);
          const late = record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 90_000 }, T0 + LEASE_MS + 1);
          const lost = await rejectionOf(late, LeaseLostError);
          expect(lost.record).toStrictEqual(parked);
          expect(await parkedIds()).toStrictEqual(['evt_park_lapsed']);
        });

        it('answers a parked row as it is, writing nothing', async () => {
          const first = await park(shipmentEvent('evt_park_twice'));

          const again = await park(shipmentEvent('evt_park_twice'), { nowMs: T0 + 5000, retentionSeconds: 60 });

          expect(again).toStrictEqual(first);
          expect(await stored('evt_park_twice')).toStrictEqual(first);
        });

        it('takes over the row of an invalid message with this ID, parked, keeping the invalid message in the audit', async () => {
          await ledger.admitInvalid(key('evt_park_invalid', ACME), 'not JSON', POLICY, T0, RETENTION_SECONDS);

          const parked = await park(shipmentEvent('evt_park_invalid'), { nowMs: T0 + 1000 });

          expect(parked).toMatchObject({ state: 'pending', attempts: 0, parkedAt: T0 + 1000, createdAt: T0 + 1000 });
          expect([parked.deadReason, parked.deadDetail, parked.deadAt]).toStrictEqual([undefined, undefined, undefined]);
          expect(parked.audit.map((a) => a.action)).toStrictEqual(['invalid-message']);
          expect(await parkedIds()).toStrictEqual(['evt_park_invalid']);
          expect((await ledger.listByState('dead')).records).toStrictEqual([]);
        });

        it('refuses a delivered, dead or leased row, or other content under the ID, carrying the row and leaving it as it was', async () => {
          // Prepare
          const delivered = await record(await claim(shipmentEvent('evt_park_done'), { endpoint: ACME }), ACCEPTED, { state: 'delivered' }, T0 + 100);
          const dead = await record(
            await claim(shipmentEvent('evt_park_dead'), { endpoint: ACME }),
            REJECTED,
            { state: 'dead', reason: 'rejected', detail: 'rejected (400)' },
            T0 + 100,
          );
          const leased = await claim(shipmentEvent('evt_park_leased'), { endpoint: ACME });
          const other = await claim(shipmentEvent('evt_park_other'), { endpoint: ACME });
          const failed = await record(other, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 100);

          // Act
          const refusals = [
            await rejectionOf(park(shipmentEvent('evt_park_done'), { nowMs: T0 + 200 }), ClaimRefusedError),
            await rejectionOf(park(shipmentEvent('evt_park_dead'), { nowMs: T0 + 200 }), ClaimRefusedError),
            await rejectionOf(park(shipmentEvent('evt_park_leased'), { nowMs: T0 + LEASE_MS - 1 }), ClaimRefusedError),
            await rejectionOf(park(shipmentEvent('evt_park_other', { status: 'delivered' }), { nowMs: T0 + 200 }), ClaimRefusedError),
          ];

          // Assess
          const rows = [delivered, dead, leased, failed];
          expect(refusals.map((error) => error.record)).toStrictEqual(rows);
          for (const row of rows) expect(await stored(row.eventId)).toStrictEqual(row);
          expect(await ledger.countByState('parked', { endpoint: ACME })).toBe(0);
        });
      });

      describe('Method: admit (an ordered endpoint\'s event waiting for its turn, docs/contract.md §13)', () => {
        it('writes a new event as pending without claiming it: no attempt, no lease, listed nowhere, claimable', async () => {
          // Prepare
          const event = shipmentEvent('evt_admit_new');

          // Act
          const admitted = await ledger.admit({ event, endpoint: ACME, nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS, sequence: 3 });

          // Assess
          const expected: DeliveryRecord = {
            ...newRow('evt_admit_new', ACME, event, T0),
            body: event.body,
            attempts: 0,
            expiresAt: expiresAt(T0),
            sequence: 3,
            shipmentId: 'shp_1001',
          };
          expect(admitted).toStrictEqual(expected);
          expect(await stored('evt_admit_new')).toStrictEqual(expected);
          expect(await pendingIds()).toStrictEqual([]);
          expect(await parkedIds()).toStrictEqual([]);
          const claimed = await claim(event, { endpoint: ACME, nowMs: T0 + 1000 });
          expect(claimed).toMatchObject({ attempts: 1, sequence: 3, createdAt: T0 });
        });

        it('returns an existing row as it stands, writing nothing', async () => {
          // Prepare: a row that failed once.
          const event = shipmentEvent('evt_admit_old');
          const claimed = await claim(event, { endpoint: ACME });
          const failed = await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 60_000 }, T0 + 100);

          // Act
          const admitted = await ledger.admit({ event, endpoint: ACME, nowMs: T0 + 500, policy: OTHER_POLICY, retentionSeconds: 60 });

          // Assess
          expect(admitted).toStrictEqual(failed);
          expect(await stored('evt_admit_old')).toStrictEqual(failed);
        });
      });

      describe('Method: relist (the recovery sweep marks a row it sent again)', () => {
        it('lists a pending row as pending from the time given, or moves its entry there; refuses a parked row, a settled one, or none', async () => {
          // Prepare: one failed once (not listed), one replayed (listed at T0 + 300), one parked, one delivered.
          const claimed = await claim(shipmentEvent('evt_relist'), { endpoint: ACME });
          await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 100);
          const dying = await claim(shipmentEvent('evt_relist_replayed'), { endpoint: ACME });
          await record(dying, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 200);
          await ledger.replay({ ...key('evt_relist_replayed', ACME), operator: 'ops', reason: 'receiver fixed', nowMs: T0 + 300 });
          await park(shipmentEvent('evt_relist_parked'));
          const done = await claim(shipmentEvent('evt_relist_done'), { endpoint: ACME });
          await record(done, ACCEPTED, { state: 'delivered' }, T0 + 100);
          const before = [await stored('evt_relist'), await stored('evt_relist_replayed')];
          const listedBefore = await pendingIds();

          // Act
          const results = await Promise.all(
            ['evt_relist', 'evt_relist_replayed', 'evt_relist_parked', 'evt_relist_done', 'evt_relist_none'].map((id) =>
              ledger.relist(key(id, ACME), T0 + 50_000),
            ),
          );

          // Assess
          expect(listedBefore).toStrictEqual(['evt_relist_replayed']);
          expect(results).toEqual([true, true, false, false, false]);
          expect([await stored('evt_relist'), await stored('evt_relist_replayed')]).toStrictEqual(before);
          expect((await pagesOf('pending', { untilMs: T0 + 50_000 })).flat()).toStrictEqual([]);
          expect((await pagesOf('pending', { sinceMs: T0 + 50_000 })).flat()).toStrictEqual(['evt_relist', 'evt_relist_replayed']);
          expect(await parkedIds()).toStrictEqual(['evt_relist_parked']);
        });
      });

      describe('Method: unlist (an ordered event released from parking that waits its turn)', () => {
        it('takes a released row with no attempt out of the pending listing; refuses a parked row, one attempted, or none', async () => {
          // Prepare: released (listed pending), one still parked, one attempted (listed pending by the recovery sweep).
          await park(shipmentEvent('evt_unlist'));
          await ledger.unpark(key('evt_unlist', ACME), T0 + 100, T0 + 100);
          await park(shipmentEvent('evt_unlist_parked'));
          const claimed = await claim(shipmentEvent('evt_unlist_tried'), { endpoint: ACME });
          await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 100);
          await ledger.relist(key('evt_unlist_tried', ACME), T0 + 150);
          const before = await stored('evt_unlist');
          const listedBefore = await pendingIds();

          // Act
          const results = await Promise.all(
            ['evt_unlist', 'evt_unlist_parked', 'evt_unlist_tried', 'evt_unlist_none'].map((id) => ledger.unlist(key(id, ACME))),
          );

          // Assess
          expect(listedBefore).toStrictEqual(['evt_unlist', 'evt_unlist_tried']);
          expect(results).toEqual([true, false, false, false]);
          expect(await stored('evt_unlist')).toStrictEqual(before);
          expect(await pendingIds()).toStrictEqual(['evt_unlist_tried']);
          expect(await parkedIds()).toStrictEqual(['evt_unlist_parked']);
          expect(await claim(shipmentEvent('evt_unlist'), { endpoint: ACME, nowMs: T0 + 200 })).toMatchObject({ attempts: 1 });
        });
      });

      describe('Method: unpark', () => {
        it('releases a parked row: listed as pending since the time given, out of the parked listing, and claimable', async () => {
          // Prepare
          const parked = await park(shipmentEvent('evt_unpark'));

          // Act
          const released = await ledger.unpark(key('evt_unpark', ACME), T0 + 10_000, T0 + 12_000);

          // Assess
          const { parkedAt: _parkedAt, ...unparked } = parked;
          expect(released).toStrictEqual({ ...unparked, expiresAt: expiresAt(T0 + 10_000) });
          expect(await stored('evt_unpark')).toStrictEqual(released);
          expect(await parkedIds()).toStrictEqual([]);
          expect((await pagesOf('pending', { sinceMs: T0 + 12_000, untilMs: T0 + 12_001 })).flat()).toStrictEqual(['evt_unpark']);
          const claimed = await claim(shipmentEvent('evt_unpark'), { endpoint: ACME, nowMs: T0 + 12_000 });
          expect(claimed.attempts).toBe(1);
        });

        it('keeps a parked row however long its endpoint stays disabled, and counts its expiry from its release', async () => {
          // Prepare: parked with a one-minute retention; its event had expired a year later, had it not been parked.
          await park(shipmentEvent('evt_park_long'), { retentionSeconds: 60 });
          const yearMs = 365 * 24 * 3600 * 1000;
          clockMs = T0 + yearMs;

          // Act
          const released = await ledger.unpark(key('evt_park_long', ACME), T0 + yearMs, T0 + yearMs);

          // Assess
          expect(released?.expiresAt).toBe(expiresAt(T0 + yearMs, 60));
          expect((await stored('evt_park_long')).expiresAt).toBe(expiresAt(T0 + yearMs, 60));
        });

        it('returns undefined and writes nothing for a row that is not parked, or no row', async () => {
          const claimed = await claim(shipmentEvent('evt_unpark_not'), { endpoint: ACME });
          const failed = await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 100);

          expect(await ledger.unpark(key('evt_unpark_not', ACME), T0 + 200, T0 + 200)).toBeUndefined();
          expect(await ledger.unpark(key('evt_unpark_none', ACME), T0 + 200, T0 + 200)).toBeUndefined();
          expect(await stored('evt_unpark_not')).toStrictEqual(failed);
          expect((await ledger.listByState('pending', { sinceMs: T0 + 200 })).records).toStrictEqual([]);
        });

        it('lets exactly one of two concurrent releases have the row', async () => {
          await park(shipmentEvent('evt_unpark_race'));

          const results = await Promise.all([
            ledger.unpark(key('evt_unpark_race', ACME), T0 + 100, T0 + 100),
            ledger.unpark(key('evt_unpark_race', ACME), T0 + 100, T0 + 100),
          ]);

          expect(results.filter((r) => r !== undefined)).toHaveLength(1);
          expect(results.filter((r) => r === undefined)).toHaveLength(1);
          expect((await stored('evt_unpark_race')).parkedAt).toBeUndefined();
        });
      });

      describe('Settling a parked row', () => {
        it('records a late 2xx on a parked row as delivered, and drops it from the parked listing', async () => {
          // Prepare: a claim whose lease lapsed, then parked; its worker's 2xx comes after.
          const claimed = await claim(shipmentEvent('evt_park_late'), { endpoint: ACME });
          await park(shipmentEvent('evt_park_late'), { nowMs: T0 + LEASE_MS });

          // Act
          const delivered = await record(claimed, ACCEPTED, { state: 'delivered' }, T0 + LEASE_MS + 500);

          // Assess
          expect(delivered.state).toBe('delivered');
          expect(delivered.parkedAt).toBeUndefined();
          expect(await parkedIds()).toStrictEqual([]);
          expect(await ledger.countByState('parked', { endpoint: ACME })).toBe(0);
          expect(await ledger.unpark(key('evt_park_late', ACME), T0 + LEASE_MS + 600, T0 + LEASE_MS + 600)).toBeUndefined();
        });

        it('marks a parked row spent by a dead worker dead, no longer parked', async () => {
          await claim(shipmentEvent('evt_park_spent'), { endpoint: ACME, policy: retryPolicy(1, [30]) });
          await park(shipmentEvent('evt_park_spent'), { nowMs: T0 + LEASE_MS });

          const dead = await ledger.markExhausted(key('evt_park_spent', ACME), T0 + LEASE_MS + 1, shipmentEvent('evt_park_spent').body);

          expect(dead.state).toBe('dead');
          expect(dead.parkedAt).toBeUndefined();
          expect(await parkedIds()).toStrictEqual([]);
          expect((await ledger.listByState('dead')).records.map((r) => r.eventId)).toStrictEqual(['evt_park_spent']);
        });
      });

      describe('Method: listByState and countByState of parked rows', () => {
        it("lists one endpoint's parked rows in admission order, page by page across shards, none of another endpoint's", async () => {
          // Prepare: nine events parked in an order other than their admission and key order; one
          // of another endpoint among them; two admitted in the same millisecond.
          const admitted = [5, 1, 8, 3, 0, 7, 2, 6, 4];
          for (const i of admitted) await park(shipmentEvent(`evt_parked_${9 - i}`), { nowMs: T0 + 1000 * i });
          await park(shipmentEvent('evt_parked_tie'), { nowMs: T0 + 4000 });
          await park(shipmentEvent('evt_parked_x'), { endpoint: OTHER, nowMs: T0 + 2500 });
          const inOrder = ['9', '8', '7', '6', '5', 'tie', '4', '3', '2', '1'].map((n) => `evt_parked_${n}`);

          // Act
          const pages = await pagesOf('parked', { endpoint: ACME, limit: 3 });
          const newest = await pagesOf('parked', { endpoint: ACME, limit: 4, newestFirst: true });
          const window = await pagesOf('parked', { endpoint: ACME, sinceMs: T0 + 2000, untilMs: T0 + 5000 });

          // Assess
          expect(pages).toStrictEqual([inOrder.slice(0, 3), inOrder.slice(3, 6), inOrder.slice(6, 9), inOrder.slice(9)]);
          expect(newest.flat()).toStrictEqual([...inOrder].reverse());
          expect(window.flat()).toStrictEqual(inOrder.slice(2, 6));
          expect(await parkedIds(OTHER)).toStrictEqual(['evt_parked_x']);
          expect(await parkedIds('carrier-none')).toStrictEqual([]);
        });

        it("counts one endpoint's parked rows; pending and dead are counted whole, or of one endpoint when asked", async () => {
          for (let i = 0; i < 3; i++) await park(shipmentEvent(`evt_count_p${i}`), { nowMs: T0 + i });
          await park(shipmentEvent('evt_count_px'), { endpoint: OTHER });
          // Pending and listed: one of each endpoint, the recovery sweep's mark after a failed attempt;
          // not listed: one of ACME's after a failed attempt.
          for (const [id, endpoint] of [
            ['evt_count_retry', OTHER],
            ['evt_count_retry2', ACME],
            ['evt_count_retrying', ACME],
          ] as const) {
            const failed = await claim(shipmentEvent(id), { endpoint });
            await record(failed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 1000 }, T0 + 100);
          }
          await ledger.relist(key('evt_count_retry', OTHER), T0 + 200);
          await ledger.relist(key('evt_count_retry2', ACME), T0 + 200);

          expect(await ledger.countByState('parked', { endpoint: ACME })).toBe(3);
          expect(await ledger.countByState('parked', { endpoint: OTHER })).toBe(1);
          expect(await ledger.countByState('parked', { endpoint: 'carrier-none' })).toBe(0);
          expect(await ledger.countByState('pending')).toBe(2);
          expect(await ledger.countByState('pending', { endpoint: ACME })).toBe(1);
          expect(await ledger.countByState('dead', { endpoint: ACME })).toBe(0);
        });

        it('refuses to list or count parked rows without an endpoint, naming it', async () => {
          await park(shipmentEvent('evt_parked_any'));

          const errors = [
            await rejectionOf(ledger.listByState('parked'), RangeError),
            await rejectionOf(ledger.countByState('parked'), RangeError),
            await rejectionOf(ledger.listByState('parked', { endpoint: '' }), RangeError),
          ];

          for (const error of errors) expect(error.message).toContain('endpoint');
        });

        it("refuses a parked listing's cursor for another listing", async () => {
          for (let i = 0; i < 3; i++) await park(shipmentEvent(`evt_parked_c${i}`), { nowMs: T0 + i });
          const page = await ledger.listByState('parked', { endpoint: ACME, limit: 1 });

          await rejectionOf(ledger.listByState('pending', { cursor: page.cursor }), RangeError);
          await rejectionOf(ledger.listByState('parked', { endpoint: ACME, cursor: page.cursor, newestFirst: true }), RangeError);
        });
      });
    });

    describe('Row attribute: sequence (docs/contract.md §13)', () => {
      it('keeps the sequence the claim created the row with through a failure, a death and a replay', async () => {
        const event = shipmentEvent('evt_seq_kept');
        const claimed = await claim(event, { sequence: 3 });
        const failed = await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 100);
        const again = await claim(event, { owner: WORKER_B, nowMs: T0 + 30_000, sequence: 3 });
        const died = await record(again, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 30_100);

        const replayed = await ledger.replay({ ...key('evt_seq_kept'), operator: 'ops', reason: 'fixed', nowMs: T0 + 40_000 });

        expect([claimed, failed, again, died, replayed].map((row) => row.sequence)).toStrictEqual([3, 3, 3, 3, 3]);
        expect((await ledger.deliveriesOf('evt_seq_kept')).map((row) => row.sequence)).toStrictEqual([3]);
      });

      it('never changes it: a later claim carrying another number keeps the first', async () => {
        const event = shipmentEvent('evt_seq_first');
        const claimed = await claim(event, { sequence: 2 });
        await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 100);

        const again = await claim(event, { nowMs: T0 + 30_000, sequence: 5 });

        expect(again.sequence).toBe(2);
        expect((await ledger.get(key('evt_seq_first')))?.sequence).toBe(2);
      });

      it('stores the sequence a park creates the row with, and keeps it through the release and the claim', async () => {
        const event = shipmentEvent('evt_seq_parked');
        const parkInput = { event, endpoint: 'carrier-acme', nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS };
        const parked = await ledger.park({ ...parkInput, sequence: 4 });
        const released = await ledger.unpark(key('evt_seq_parked', 'carrier-acme'), T0 + 1000, T0 + 1000);

        const claimed = await claim(event, { endpoint: 'carrier-acme', nowMs: T0 + 2000 });

        expect([parked.sequence, released?.sequence, claimed.sequence]).toStrictEqual([4, 4, 4]);
      });

      it('gives a row created without one no sequence at all: not a field of its record', async () => {
        const event = shipmentEvent('evt_seq_none');
        const claimed = await claim(event);
        const parked = await ledger.park({
          event: shipmentEvent('evt_seq_none_parked'),
          endpoint: 'carrier-acme',
          nowMs: T0,
          policy: POLICY,
          retentionSeconds: RETENTION_SECONDS,
        });

        expect(Object.keys(claimed)).not.toContain('sequence');
        expect(Object.keys(parked)).not.toContain('sequence');
        expect(Object.keys((await ledger.get(key('evt_seq_none'))) ?? {})).not.toContain('sequence');
      });

      it('lets a row that has none take the number a later claim carries (its endpoint turned to ordering meanwhile), then keeps it', async () => {
        const event = shipmentEvent('evt_seq_late');
        const claimed = await claim(event);
        await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 100);

        const numbered = await claim(event, { nowMs: T0 + 30_000, sequence: 6 });

        expect(numbered.sequence).toBe(6);
        expect((await ledger.get(key('evt_seq_late')))?.sequence).toBe(6);
      });
    });

    describe('Row attribute: traceparent (docs/contract.md §19)', () => {
      const FIRST = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const LATER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

      it("keeps the first traced claim's traceparent through a later claim carrying another, a death and a replay", async () => {
        const event = shipmentEvent('evt_trace_kept');
        const claimed = await claim(event, { traceparent: FIRST });
        const failed = await record(claimed, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 100);
        const again = await claim(event, { owner: WORKER_B, nowMs: T0 + 30_000, traceparent: LATER });
        const died = await record(again, REJECTED, { state: 'dead', reason: 'rejected', detail: 'rejected (400)' }, T0 + 30_100);
        const replayed = await ledger.replay({ ...key('evt_trace_kept'), operator: 'ops', reason: 'fixed', nowMs: T0 + 40_000 });

        const afterReplay = await claim(event, { nowMs: T0 + 40_000, traceparent: LATER });

        expect([claimed, failed, again, died, replayed, afterReplay].map((row) => row.traceparent)).toStrictEqual(Array(6).fill(FIRST));
        expect((await ledger.deliveriesOf('evt_trace_kept')).map((row) => row.traceparent)).toStrictEqual([FIRST]);
      });

      it('gives a row claimed without one no traceparent at all, and lets the first claim that carries one write it', async () => {
        const event = shipmentEvent('evt_trace_late');
        const untraced = await claim(event);
        const failed = await record(untraced, TEMPORARY, { state: 'pending', nextAttemptAt: T0 + 30_000 }, T0 + 100);

        const traced = await claim(event, { nowMs: T0 + 30_000, traceparent: FIRST });

        expect(Object.keys(untraced)).not.toContain('traceparent');
        expect(Object.keys(failed)).not.toContain('traceparent');
        expect(traced.traceparent).toBe(FIRST);
        expect((await ledger.get(key('evt_trace_late')))?.traceparent).toBe(FIRST);
      });

      it("writes it on the claim that takes over an invalid message's row, and on the first claim of a parked row released", async () => {
        await ledger.admitInvalid(key('evt_trace_invalid'), 'data: must be an object', POLICY, T0, RETENTION_SECONDS);
        const parkInput = { event: shipmentEvent('evt_trace_parked'), endpoint: 'carrier-acme', nowMs: T0, policy: POLICY, retentionSeconds: RETENTION_SECONDS };
        const parked = await ledger.park(parkInput);
        await ledger.unpark(key('evt_trace_parked', 'carrier-acme'), T0 + 1000, T0 + 1000);

        const takenOver = await claim(shipmentEvent('evt_trace_invalid'), { nowMs: T0 + 500, traceparent: FIRST });
        const released = await claim(shipmentEvent('evt_trace_parked'), { endpoint: 'carrier-acme', nowMs: T0 + 2000, traceparent: LATER });

        expect(Object.keys(parked)).not.toContain('traceparent');
        expect([takenOver.traceparent, released.traceparent]).toStrictEqual([FIRST, LATER]);
        expect((await ledger.get(key('evt_trace_parked', 'carrier-acme')))?.traceparent).toBe(LATER);
      });
    });
  });
}

/** What a batch of copies of one event led to: the requests sent and Lambda's answer. */
export interface CopiesResult {
  readonly requests: number;
  readonly batchItemFailures: readonly string[];
  readonly record: DeliveryRecord | undefined;
}

/**
 * Delivers `copies` copies of one event in ONE batch through the real `processBatch` and `deliver`,
 * with one owner (one invocation), a fixed clock and a receiver that accepts after a pause (so
 * every copy claims while the first is sending). Each copy is its own SQS message.
 */
export async function deliverCopiesInOneBatch(ledger: Ledger, copies: number): Promise<CopiesResult> {
  const body = shipmentEvent('evt_copies').body;
  let requests = 0;
  const sender: WebhookSender = {
    async send() {
      requests += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { outcome: { kind: 'accepted', status: 200 }, durationMs: 20 };
    },
  };
  const queue: DeliveryQueue = { retryAfter: async () => {}, deadLetter: async () => {}, enqueue: async () => {}, fanOut: async () => {} };
  const write = () => {};
  const response = await processBatch(
    Array.from({ length: copies }, () => sqsRecord(body)),
    {
      delivery: {
        ledger,
        now: () => T0,
        owner: 'host:1:one-invocation',
        policy: POLICY,
        payloadLimitBytes: 65_536,
        leaseMs: LEASE_MS,
        retentionSeconds: RETENTION_SECONDS,
      },
      // The one endpoint `default`, as the single-URL settings define it: each copy is delivered on its own message.
      routing: staticRouting([singleEndpoint({ url: 'https://receiver.example/hooks', policy: POLICY, attemptTimeoutMs: 10_000 })], () => sender),
      seal: TEST_SEAL,
      queue,
      logger: createLogger({ service: 'handoff', write }),
      metrics: new MetricsRecorder({ service: 'handoff', write, now: () => T0 }),
      concurrency: copies,
    },
  );
  return {
    requests,
    batchItemFailures: response.batchItemFailures.map((failure) => failure.itemIdentifier),
    record: await ledger.get({ eventId: 'evt_copies', endpoint: DEFAULT_ENDPOINT }),
  };
}
