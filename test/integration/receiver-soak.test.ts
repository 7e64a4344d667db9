/**
 * The soak's receiver on the receiver kit: what the soak's "double effects" invariant counts is
 * what the kit's store let through, so an event committed once and asked again is absorbed by the
 * store, not by the receiver's own bookkeeping.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Answer, PlannedEvent, SoakPlan } from '../helpers/soak/plan';
import { startSoakReceiver, type SoakReceiver } from '../helpers/soak/receiver';

function planned(id: string, faults: Answer[], final: Answer = { kind: 'ok' }): PlannedEvent {
  return { id, body: JSON.stringify({ id, status: 'delivered' }), fate: 'deliver', faults, final };
}

function planOf(...events: PlannedEvent[]): SoakPlan {
  return { seed: 1, events, sendOrder: events.map((event) => event.body), duplicates: 0 };
}

let receiver: SoakReceiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

function send(url: string, event: PlannedEvent, signal?: AbortSignal) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': event.id, 'webhook-id': event.id },
    body: event.body,
    ...(signal ? { signal } : {}),
  });
}

describe('Soak receiver', () => {
  it('applies an event committed before a lost answer once, absorbing the retry through the kit', async () => {
    const event = planned('evt_soak_hang', [{ kind: 'commit-then-hang' }]);
    receiver = await startSoakReceiver(planOf(event));

    const lost = send(receiver.url, event, AbortSignal.timeout(500)).catch((error: unknown) => error);
    await lost;
    const retry = await send(receiver.url, event);

    const counts = receiver.counts();
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(counts.effects).toEqual(new Map([['evt_soak_hang', 1]]));
    expect(counts.absorbed).toBe(1);
  });

  it('answers a repeat that arrives while a slow commit is still running with 425, applying nothing twice', async () => {
    const event = planned('evt_soak_slow', [{ kind: 'slow', delayMs: 400 }]);
    receiver = await startSoakReceiver(planOf(event));

    const slow = send(receiver.url, event);
    await expect.poll(() => receiver!.counts().requests).toBe(1);
    const during = await send(receiver.url, event);

    expect(during.status).toBe(425);
    expect((await slow).status).toBe(200);
    expect(receiver.counts().effects).toEqual(new Map([['evt_soak_slow', 1]]));
    expect(receiver.counts().absorbed).toBe(1);
  });

  it('applies nothing on a planned 5xx or refusal, so a later success applies once', async () => {
    const event = planned('evt_soak_faults', [{ kind: 'server-error', status: 503 }, { kind: 'reject', status: 422 }]);
    receiver = await startSoakReceiver(planOf(event));

    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await send(receiver.url, event)).status);

    expect(statuses).toEqual([503, 422, 200]);
    expect(receiver.counts().effects).toEqual(new Map([['evt_soak_faults', 1]]));
    expect(receiver.counts().absorbed).toBe(0);
  });
});
