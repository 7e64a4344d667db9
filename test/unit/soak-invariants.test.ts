import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import type { DeadLetter } from '../helpers/sandbox-clients';
import { checkInvariants, EXPECTED_END, type Observed } from '../helpers/soak/invariants';
import { answerFor, planSoak, type SoakPlan } from '../helpers/soak/plan';
import type { ReceiverCounts } from '../helpers/soak/receiver';

const plan: SoakPlan = planSoak({ events: 400, seed: 7 });
const MAX_ATTEMPTS = 6;

function row(eventId: string, fields: Partial<DeliveryRecord>): DeliveryRecord {
  return {
    eventId,
    endpoint: 'default',
    state: 'delivered',
    attempts: 1,
    maxAttempts: MAX_ATTEMPTS,
    policy: DEFAULT_RETRY_POLICY,
    history: [{ attempt: 1, at: 0, outcome: 'accepted', status: 200, durationMs: 5 }],
    replays: 0,
    audit: [],
    createdAt: 0,
    stateSince: 0,
    expiresAt: 2_000_000_000,
    ...fields,
  };
}

/** The end state of a run that went exactly to plan. */
function cleanEnd(): Observed {
  const rows: DeliveryRecord[] = [];
  const deadLetters: DeadLetter[] = [];
  const effects = new Map<string, number>();
  for (const event of plan.events) {
    const end = EXPECTED_END[event.fate];
    if (end.state === 'delivered') {
      rows.push(row(event.id, {}));
      effects.set(event.id, 1);
    } else {
      rows.push(row(event.id, { state: 'dead', deadReason: end.reason! }));
      deadLetters.push({ body: event.body, reason: end.reason, eventId: event.id });
    }
  }
  const receiver: ReceiverCounts = {
    requests: rows.length,
    answers: { ok: 0, slow: 0, 'late-commit': 0, 'commit-then-hang': 0, 'server-error': 0, throttle: 0, reset: 0, reject: 0 },
    effects,
    absorbed: 0,
    keyMismatches: 0,
    changedBodies: 0,
    unplanned: 0,
  };
  return { rows, deadLetters, receiver, queueDepth: 0, maxAttempts: MAX_ATTEMPTS };
}

function broken(observed: Observed): Record<string, number> {
  return Object.fromEntries(
    checkInvariants(plan, observed)
      .filter((invariant) => invariant.violations > 0)
      .map((invariant) => [invariant.name, invariant.violations]),
  );
}

const firstOf = (fate: 'deliver' | 'reject' | 'exhaust') => plan.events.find((event) => event.fate === fate)!;

describe('Function: planSoak', () => {
  it('gives the same plan for the same seed and another for another seed', () => {
    expect(planSoak({ events: 400, seed: 7 })).toEqual(plan);
    expect(planSoak({ events: 400, seed: 8 }).events.map((e) => e.fate)).not.toEqual(plan.events.map((e) => e.fate));
  });

  it('sends every event once, and each duplicate after its original', () => {
    const positions = new Map<string, number[]>();
    plan.sendOrder.forEach((body, i) => positions.set(body, [...(positions.get(body) ?? []), i]));
    expect(positions.size).toBe(plan.events.length);
    expect(plan.sendOrder.length).toBe(plan.events.length + plan.duplicates);
    expect([...positions.values()].filter((p) => p.length === 2)).toHaveLength(plan.duplicates);
    expect([...positions.values()].every((p) => p.length <= 2 && (p.length === 1 || p[1]! > p[0]!))).toBe(true);
  });

  it('answers a rejected event with a 4xx and an exhausted one with a 503 on every request', () => {
    expect([0, 1, 5].map((n) => answerFor(firstOf('reject'), n).kind)).toEqual(['reject', 'reject', 'reject']);
    expect([0, 1, 5].map((n) => answerFor(firstOf('exhaust'), n))).toEqual(
      Array(3).fill({ kind: 'server-error', status: 503 }),
    );
  });
});

describe('Function: checkInvariants', () => {
  it('holds for an end state that went to plan, duplicate dead letters included', () => {
    const observed = cleanEnd();
    const dead = observed.deadLetters[0]!;

    expect(broken({ ...observed, deadLetters: [...observed.deadLetters, dead] })).toEqual({});
  });

  it('counts an event with no row, or still pending, as lost', () => {
    const observed = cleanEnd();
    const [missing, pending] = observed.rows;
    const rows = observed.rows.filter((r) => r !== missing).map((r) => (r === pending ? { ...r, state: 'pending' as const } : r));

    expect(broken({ ...observed, rows })).toMatchObject({ 'lost: events without a final state': 2 });
  });

  it('counts an event applied twice at the receiver as a double effect', () => {
    const observed = cleanEnd();
    const effects = new Map(observed.receiver.effects).set(firstOf('deliver').id, 2);

    expect(broken({ ...observed, receiver: { ...observed.receiver, effects } })).toEqual({ 'double effects at the receiver': 1 });
  });

  it('counts a delivered row the receiver never applied', () => {
    const observed = cleanEnd();
    const effects = new Map(observed.receiver.effects);
    effects.delete(firstOf('deliver').id);

    expect(broken({ ...observed, receiver: { ...observed.receiver, effects } })).toEqual({
      'delivered, yet never applied at the receiver': 1,
    });
  });

  it('flags a planned delivery that ended dead, and a planned rejection that ended exhausted', () => {
    const observed = cleanEnd();
    const rows = observed.rows.map((r) =>
      r.eventId === firstOf('deliver').id || r.eventId === firstOf('reject').id
        ? { ...r, state: 'dead' as const, deadReason: 'exhausted' as const }
        : r,
    );
    const deadLetters = [
      ...observed.deadLetters.filter((d) => d.eventId !== firstOf('reject').id),
      { body: firstOf('deliver').body, reason: 'exhausted', eventId: firstOf('deliver').id },
      { body: firstOf('reject').body, reason: 'exhausted', eventId: firstOf('reject').id },
    ];

    expect(broken({ ...observed, rows, deadLetters })).toMatchObject({ 'dead set differs from the expected one': 2 });
  });

  it('flags attempts over the budget', () => {
    const observed = cleanEnd();
    const rows = observed.rows.map((r, i) => (i === 3 ? { ...r, attempts: MAX_ATTEMPTS + 1 } : r));

    expect(broken({ ...observed, rows })).toEqual({ 'attempts over budget': 1 });
  });

  it('flags a dead event missing from the dead-letter queue, or lettered with another reason', () => {
    const observed = cleanEnd();
    const [, second, ...rest] = observed.deadLetters;
    const deadLetters = [{ ...second!, reason: 'invalid' }, ...rest];

    expect(broken({ ...observed, deadLetters })).toMatchObject({ 'dead events missing from the dead-letter queue': 2 });
  });

  it('flags a dead letter for an event the ledger says was delivered', () => {
    const observed = cleanEnd();
    const delivered = firstOf('deliver');
    const deadLetters = [...observed.deadLetters, { body: delivered.body, reason: 'exhausted', eventId: delivered.id }];

    expect(broken({ ...observed, deadLetters })).toEqual({ 'dead letters for events that are not dead': 1 });
  });

  it('flags requests under a wrong key and messages left on the queue', () => {
    const observed = cleanEnd();

    expect(broken({ ...observed, queueDepth: 2, receiver: { ...observed.receiver, keyMismatches: 1 } })).toEqual({
      'requests with a wrong key, a changed body, or no event': 1,
      'messages left on the delivery queue': 2,
    });
  });
});
