import { describe, expect, it } from 'vitest';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import { ReplayRefusedError } from '../../lib/ledger/errors';
import { DEFAULT_ENDPOINT } from '../../lib/ledger/ledger';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { replayDelivery, ReplayEnqueueError } from '../../lib/replay';

const NOW_MS = 1_800_000_000_000;
const key = { eventId: 'evt_r', endpoint: DEFAULT_ENDPOINT };

function parsed(): ParsedEvent {
  const result = parseEvent(JSON.stringify({ id: 'evt_r', shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' }));
  if (!result.ok) throw result.error;
  return result.value;
}

/** A ledger holding one row for evt_r, rejected (dead) or left pending. */
async function ledgerWith(state: 'dead' | 'pending'): Promise<MemoryLedger> {
  const ledger = new MemoryLedger({ now: () => NOW_MS });
  const event = parsed();
  await ledger.claim({
    event,
    endpoint: DEFAULT_ENDPOINT,
    owner: 'w1',
    nowMs: NOW_MS,
    leaseMs: 30_000,
    policy: DEFAULT_RETRY_POLICY,
    retentionSeconds: 86_400,
  });
  const rejected = { kind: 'rejected', status: 400, responseStart: 'no' } as const;
  const temporary = { kind: 'temporary', status: 503 } as const;
  await ledger.recordAttempt({
    ...key,
    owner: 'w1',
    nowMs: NOW_MS + 10,
    attempt: { attempt: 1, at: NOW_MS, outcome: state === 'dead' ? 'rejected' : 'temporary', status: state === 'dead' ? 400 : 503, durationMs: 10 },
    outcome: state === 'dead' ? rejected : temporary,
    next: state === 'dead' ? { state: 'dead', reason: 'rejected', detail: '400 no' } : { state: 'pending', nextAttemptAt: NOW_MS + 30_000 },
  });
  return ledger;
}

const input = { ...key, operator: 'alice', reason: 'fixed', nowMs: NOW_MS + 1_000 };

describe('Function: replayDelivery', () => {
  it('returns the row to pending first, then enqueues the original body', async () => {
    // Prepare
    const ledger = await ledgerWith('dead');
    const enqueued: { body: string; stateThen: string | undefined }[] = [];
    const queue = {
      enqueue: async (body: string) => {
        enqueued.push({ body, stateThen: (await ledger.get(key))?.state });
      },
    };

    // Act
    const record = await replayDelivery(input, { ledger, queue });

    // Assess
    expect(record).toMatchObject({ state: 'pending', replays: 1, attempts: 0 });
    expect(enqueued).toEqual([{ body: parsed().body, stateThen: 'pending' }]);
  });

  it('refuses a pending record and enqueues nothing', async () => {
    const ledger = await ledgerWith('pending');
    const enqueued: string[] = [];

    const replay = replayDelivery(input, { ledger, queue: { enqueue: async (body) => void enqueued.push(body) } });

    await expect(replay).rejects.toBeInstanceOf(ReplayRefusedError);
    await expect(replay).rejects.toMatchObject({ refusal: 'not-dead' });
    expect(enqueued).toEqual([]);
  });

  it('reports a failed enqueue after the replay was recorded, keeping the cause', async () => {
    // Prepare
    const ledger = await ledgerWith('dead');
    const cause = new Error('queue down');

    // Act
    const replay = replayDelivery(input, { ledger, queue: { enqueue: async () => Promise.reject(cause) } });

    // Assess
    await expect(replay).rejects.toBeInstanceOf(ReplayEnqueueError);
    await expect(replay).rejects.toMatchObject({ cause, record: { state: 'pending', replays: 1 } });
    expect(await ledger.get(key)).toMatchObject({ state: 'pending', replays: 1 });
  });
});
