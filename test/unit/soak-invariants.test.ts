import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import type { DeadLetter } from '../helpers/sandbox-clients';
import { endpointFields, routeOf, THREE_ENDPOINTS, THREE_ENDPOINTS_ONE_ORDERED } from '../helpers/soak/endpoints';
import { checkInvariants, EXPECTED_END, type Observed, type OutageObserved } from '../helpers/soak/invariants';
import { answerFor, deliveriesOf, planSoak, summarize, type Fate, type PlannedDelivery, type SoakPlan } from '../helpers/soak/plan';
import type { LoggedRequest, ReceiverCounts } from '../helpers/soak/receiver';

const plan: SoakPlan = planSoak({ events: 400, seed: 7 });
const threePlan: SoakPlan = planSoak({ events: 600, seed: 7, endpoints: THREE_ENDPOINTS });
const MAX_ATTEMPTS = 6;

function row(eventId: string, fields: Partial<DeliveryRecord>, endpoint = 'default'): DeliveryRecord {
  return {
    eventId,
    endpoint,
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

function receiverCounts(endpoint: string, effects: Map<string, number>): ReceiverCounts {
  return {
    endpoint,
    requests: effects.size,
    answers: { ok: 0, slow: 0, 'late-commit': 0, 'commit-then-hang': 0, 'server-error': 0, throttle: 0, reset: 0, reject: 0 },
    effects,
    absorbed: 0,
    keyMismatches: 0,
    changedBodies: 0,
    unauthorized: 0,
    refusedHandshakes: 0,
    unplanned: 0,
    unsubscribed: 0,
    badSignatures: 0,
    requestTimes: [],
    pauses: [],
    outageAnswers: { pause: 0, unavailable: 0 },
    withSequence: 0,
  };
}

/** The end state of a run that went exactly to plan. */
function cleanEnd(of: SoakPlan = plan): Observed {
  const rows: DeliveryRecord[] = [];
  const deadLetters: DeadLetter[] = [];
  const effects = new Map<string, Map<string, number>>((of.endpoints ?? [{ name: 'default' }]).map((e) => [e.name, new Map()]));
  for (const d of deliveriesOf(of)) {
    const end = EXPECTED_END[d.fate];
    if (end.state === 'delivered') {
      rows.push(row(d.eventId, {}, d.endpoint));
      effects.get(d.endpoint)!.set(d.eventId, 1);
    } else {
      rows.push(row(d.eventId, { state: 'dead', deadReason: end.reason! }, d.endpoint));
      deadLetters.push({ body: d.body, reason: end.reason, eventId: d.eventId, endpoint: d.endpoint });
    }
  }
  const receivers = [...effects].map(([endpoint, applied]) => receiverCounts(endpoint, applied));
  return { rows, deadLetters, receivers, queueDepth: 0, maxAttempts: MAX_ATTEMPTS };
}

function broken(observed: Observed, of: SoakPlan = plan): Record<string, number> {
  return Object.fromEntries(
    checkInvariants(of, observed)
      .filter((invariant) => invariant.violations > 0)
      .map((invariant) => [invariant.name, invariant.violations]),
  );
}

const firstOf = (fate: Fate, of: SoakPlan = plan): PlannedDelivery => deliveriesOf(of).find((d) => d.fate === fate)!;

/** The same receiver with some counts changed. */
function withReceiver(observed: Observed, endpoint: string, change: (counts: ReceiverCounts) => ReceiverCounts): Observed {
  return { ...observed, receivers: observed.receivers.map((r) => (r.endpoint === endpoint ? change(r) : r)) };
}

describe('Function: planSoak', () => {
  it('gives the same plan for the same seed and another for another seed', () => {
    expect(planSoak({ events: 400, seed: 7 })).toEqual(plan);
    expect(planSoak({ events: 400, seed: 8 }).events.map((e) => e.fate)).not.toEqual(plan.events.map((e) => e.fate));
    expect(planSoak({ events: 600, seed: 7, endpoints: THREE_ENDPOINTS })).toEqual(threePlan);
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

  it('with one endpoint, plans one delivery per event to default, from the event\'s own answers', () => {
    const deliveries = deliveriesOf(plan);

    expect(deliveries.map((d) => [d.eventId, d.endpoint, d.fate])).toEqual(plan.events.map((e) => [e.id, 'default', e.fate]));
    expect(plan.endpoints).toBeUndefined();
  });

  it('with three endpoints, routes each event by its type and carrier to 0, 1, 2 or 3 of them', () => {
    const byEvent = new Map<string, string[]>();
    for (const d of deliveriesOf(threePlan)) byEvent.set(d.eventId, [...(byEvent.get(d.eventId) ?? []), d.endpoint]);

    for (const event of threePlan.events) {
      const { status, data } = JSON.parse(event.body) as { status: string; data: { carrier: string } };
      const expected = routeOf(THREE_ENDPOINTS, { status, carrier: data.carrier }).map((e) => e.name);
      expect([event.id, byEvent.get(event.id) ?? []]).toEqual([event.id, expected]);
    }
    const { fanOut, endpoints } = summarize(threePlan);
    expect(fanOut.every((n) => n > 0)).toBe(true);
    expect(fanOut.reduce((a, b) => a + b, 0)).toBe(threePlan.events.length);
    expect(endpoints.map((e) => e.name)).toEqual(['warehouse', 'tracking', 'acme-ops']);
    for (const e of endpoints) expect([e.name, e.deliver > 0 && e.reject > 0 && e.exhaust > 0]).toEqual([e.name, true]);
  });

  it('gives an event routed to several endpoints its own fate at each (a reject at one, a delivery at another)', () => {
    const fates = new Map<string, Set<Fate>>();
    for (const d of deliveriesOf(threePlan)) fates.set(d.eventId, (fates.get(d.eventId) ?? new Set()).add(d.fate));

    expect([...fates.values()].some((set) => set.has('deliver') && set.size > 1)).toBe(true);
  });

  it('routes by its own table: only a matching carrier reaches acme-ops, and a delivered event of another carrier goes nowhere', () => {
    expect(routeOf(THREE_ENDPOINTS, { status: 'in_transit', carrier: 'acme' }).map((e) => e.name)).toEqual(['warehouse', 'tracking', 'acme-ops']);
    expect(routeOf(THREE_ENDPOINTS, { status: 'in_transit', carrier: 'globex' }).map((e) => e.name)).toEqual(['warehouse', 'tracking']);
    expect(routeOf(THREE_ENDPOINTS, { status: 'delivered', carrier: 'acme' }).map((e) => e.name)).toEqual(['acme-ops']);
    expect(routeOf(THREE_ENDPOINTS, { status: 'delivered', carrier: 'initech' })).toEqual([]);
  });
});

describe('Function: checkInvariants', () => {
  it('holds for an end state that went to plan, duplicate dead letters included', () => {
    const observed = cleanEnd();
    const dead = observed.deadLetters[0]!;

    expect(broken({ ...observed, deadLetters: [...observed.deadLetters, dead] })).toEqual({});
  });

  it('reads a dead letter without an endpoint attribute as default\'s with one endpoint (the single-URL consumer)', () => {
    const observed = cleanEnd();
    const deadLetters = observed.deadLetters.map(({ endpoint: _, ...letter }) => letter);

    expect(broken({ ...observed, deadLetters })).toEqual({});
  });

  it('counts an event with no row, or still pending, as lost', () => {
    const observed = cleanEnd();
    const [missing, pending] = observed.rows;
    const rows = observed.rows.filter((r) => r !== missing).map((r) => (r === pending ? { ...r, state: 'pending' as const } : r));

    expect(broken({ ...observed, rows })).toMatchObject({ 'lost: deliveries without a final state': 2 });
  });

  it('counts an event applied twice at the receiver as a double effect', () => {
    const observed = cleanEnd();
    const changed = withReceiver(observed, 'default', (r) => ({ ...r, effects: new Map(r.effects).set(firstOf('deliver').eventId, 2) }));

    expect(broken(changed)).toEqual({ 'double effects at a receiver': 1 });
  });

  it('counts a delivered row the receiver never applied', () => {
    const observed = cleanEnd();
    const changed = withReceiver(observed, 'default', (r) => {
      const effects = new Map(r.effects);
      effects.delete(firstOf('deliver').eventId);
      return { ...r, effects };
    });

    expect(broken(changed)).toEqual({ 'delivered, yet never applied at the receiver': 1 });
  });

  it('flags a planned delivery that ended dead, and a planned rejection that ended exhausted', () => {
    const observed = cleanEnd();
    const [deliver, reject] = [firstOf('deliver'), firstOf('reject')];
    const rows = observed.rows.map((r) =>
      r.eventId === deliver.eventId || r.eventId === reject.eventId ? { ...r, state: 'dead' as const, deadReason: 'exhausted' as const } : r,
    );
    const deadLetters = [
      ...observed.deadLetters.filter((d) => d.eventId !== reject.eventId),
      { body: deliver.body, reason: 'exhausted', eventId: deliver.eventId, endpoint: 'default' },
      { body: reject.body, reason: 'exhausted', eventId: reject.eventId, endpoint: 'default' },
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

    expect(broken({ ...observed, deadLetters })).toMatchObject({ 'dead deliveries missing from the dead-letter queue': 2 });
  });

  it('flags a dead letter for an event the ledger says was delivered', () => {
    const observed = cleanEnd();
    const delivered = firstOf('deliver');
    const deadLetters = [...observed.deadLetters, { body: delivered.body, reason: 'exhausted', eventId: delivered.eventId }];

    expect(broken({ ...observed, deadLetters })).toEqual({ 'dead letters for deliveries that are not dead': 1 });
  });

  it("flags a message the queue's redrive kept moving until recovery dead-lettered it (no reason attribute), not as a dead letter", () => {
    const observed = cleanEnd();
    const delivered = firstOf('deliver');
    const deadLetters = [...observed.deadLetters, { body: delivered.body, reason: undefined, eventId: undefined }];

    expect(broken({ ...observed, deadLetters })).toEqual({ "messages the queue's redrive kept moving until recovery dead-lettered them": 1 });
  });

  it('flags requests under a wrong key or with a bad signature, and messages left on the queue', () => {
    const observed = cleanEnd();
    const changed = withReceiver(observed, 'default', (r) => ({ ...r, keyMismatches: 1, badSignatures: 2 }));

    expect(broken({ ...changed, queueDepth: 2 })).toEqual({
      'requests with a wrong key, a changed body, a bad signature or no event': 3,
      'messages left on the delivery queue': 2,
    });
  });

  it('flags requests a lock refused, and token fetches past the bound or refused', () => {
    const observed = withReceiver(cleanEnd(), 'default', (r) => ({ ...r, unauthorized: 2, refusedHandshakes: 1 }));
    const lock = 'requests refused by their lock (no valid token, no client certificate of the CA)';
    const fetches = 'token fetches beyond one per worker per token lifetime, or refused';

    expect(broken(observed)).toEqual({ [lock]: 3 });
    expect(broken({ ...cleanEnd(), tokens: { fetches: 12, refusals: 0, bound: 12 } })).toEqual({});
    expect(broken({ ...cleanEnd(), tokens: { fetches: 15, refusals: 1, bound: 12 } })).toEqual({ [fetches]: 4 });
  });
});

describe('Function: checkInvariants, three endpoints', () => {
  const routedTo = (n: number) => {
    const counts = new Map<string, PlannedDelivery[]>();
    for (const d of deliveriesOf(threePlan)) counts.set(d.eventId, [...(counts.get(d.eventId) ?? []), d]);
    return [...counts.values()].find((list) => list.length === n)!;
  };
  const unrouted = () => {
    const routed = new Set(deliveriesOf(threePlan).map((d) => d.eventId));
    return threePlan.events.find((e) => !routed.has(e.id))!;
  };

  it('holds for an end state that went to plan: each delivery its own row, effect and dead letter', () => {
    expect(broken(cleanEnd(threePlan), threePlan)).toEqual({});
  });

  it('counts one delivery of an event routed to three as lost while its other two ended', () => {
    const observed = cleanEnd(threePlan);
    const [, second] = routedTo(3);
    const rows = observed.rows.filter((r) => !(r.eventId === second!.eventId && r.endpoint === second!.endpoint));

    expect(broken({ ...observed, rows }, threePlan)).toMatchObject({ 'lost: deliveries without a final state': 1 });
  });

  it('allows an event applied once at each of its endpoints, and flags it applied twice at one', () => {
    const observed = cleanEnd(threePlan);
    const delivered = deliveriesOf(threePlan).find((d) => d.fate === 'deliver' && d.endpoint === 'tracking')!;
    const changed = withReceiver(observed, 'tracking', (r) => ({ ...r, effects: new Map(r.effects).set(delivered.eventId, 2) }));

    expect(broken(changed, threePlan)).toEqual({ 'double effects at a receiver': 1 });
  });

  it('flags a row for an endpoint the event is not routed to, and a row for an event routed nowhere', () => {
    const observed = cleanEnd(threePlan);
    const [only] = routedTo(1);
    const elsewhere = ['warehouse', 'tracking', 'acme-ops'].find((name) => name !== only!.endpoint)!;
    const nowhere = unrouted();
    const rows = [...observed.rows, row(only!.eventId, {}, elsewhere), row(nowhere.id, {}, 'warehouse')];

    expect(broken({ ...observed, rows }, threePlan)).toMatchObject({ 'rows or requests at an endpoint the event is not routed to': 2 });
  });

  it('flags requests an endpoint received for events it does not subscribe to', () => {
    const observed = cleanEnd(threePlan);
    const changed = withReceiver(observed, 'acme-ops', (r) => ({ ...r, unsubscribed: 3 }));

    expect(broken(changed, threePlan)).toEqual({ 'rows or requests at an endpoint the event is not routed to': 3 });
  });

  it('matches dead letters on their endpoint: a letter without one, or naming another endpoint, is not the dead delivery\'s', () => {
    const observed = cleanEnd(threePlan);
    const [first, second, ...rest] = observed.deadLetters;
    const other = ['warehouse', 'tracking', 'acme-ops'].find((name) => name !== second!.endpoint)!;
    const deadLetters = [{ ...first!, endpoint: undefined }, { ...second!, endpoint: other }, ...rest];

    expect(broken({ ...observed, deadLetters }, threePlan)).toEqual({
      'dead deliveries missing from the dead-letter queue': 2,
      'dead letters for deliveries that are not dead': 2,
    });
  });

  it('judges each delivery of one event on its own: a reject at one endpoint does not excuse a death at another', () => {
    const observed = cleanEnd(threePlan);
    const [a] = routedTo(2);
    const rows = observed.rows.map((r) =>
      r.eventId === a!.eventId && r.endpoint === a!.endpoint
        ? { ...r, state: 'dead' as const, deadReason: a!.fate === 'reject' ? ('exhausted' as const) : ('rejected' as const) }
        : r,
    );
    const letters = observed.deadLetters.filter((l) => !(l.eventId === a!.eventId && l.endpoint === a!.endpoint));
    const moved = rows.find((r) => r.eventId === a!.eventId && r.endpoint === a!.endpoint)!;
    const deadLetters = [...letters, { body: a!.body, eventId: a!.eventId, reason: moved.deadReason, endpoint: a!.endpoint }];
    const changed = withReceiver({ ...observed, rows, deadLetters }, a!.endpoint, (r) => {
      const effects = new Map(r.effects);
      effects.delete(a!.eventId);
      return { ...r, effects };
    });

    expect(broken(changed, threePlan)).toEqual({ 'dead set differs from the expected one': 1 });
  });
});

describe('Function: checkInvariants, pauses and the endpoint outage', () => {
  const GRACE = 2_000;
  const T = 1_000_000;
  const OUTAGE_ENDPOINT = 'acme-ops';
  const acme = (fate: Fate = 'deliver') => deliveriesOf(threePlan).find((d) => d.endpoint === OUTAGE_ENDPOINT && d.fate === fate)!;
  /** A clean end whose outage went to plan: down [T, T + 100 s], disabled at T + 70 s, enabled at T + 110 s. */
  const withOutage = (change: Partial<OutageObserved> = {}): Observed => ({
    ...cleanEnd(threePlan),
    registryGraceMs: GRACE,
    outage: {
      endpoint: OUTAGE_ENDPOINT,
      startedAt: T,
      endedAt: T + 100_000,
      disabled: [{ at: T + 70_000, by: 'handoff', reason: 'no accepted request', until: T + 110_000 }],
      endAt: T + 300_000,
      parked: new Map(),
      ...change,
    },
  });
  /** The observation with `endpoint`'s receiver changed. */
  const atReceiver = (observed: Observed, endpoint: string, change: Partial<ReceiverCounts>) =>
    withReceiver(observed, endpoint, (counts) => ({ ...counts, ...change }));
  /** The delivery's row with one more attempt at `at`. */
  const attemptAt = (observed: Observed, d: PlannedDelivery, at: number): Observed => ({
    ...observed,
    rows: observed.rows.map((r) =>
      r.eventId === d.eventId && r.endpoint === d.endpoint
        ? { ...r, attempts: r.attempts + 1, history: [...r.history, { attempt: r.attempts + 1, at, outcome: 'temporary', status: 503, durationMs: 3 }] }
        : r,
    ),
  });

  it('holds for an outage that went to plan: disabled while down, nothing attempted while disabled or parked', () => {
    const key = `${acme().eventId} → ${OUTAGE_ENDPOINT}`;
    const observed = withOutage({ parked: new Map([[key, { parkedAt: T + 80_000, lastSeenAt: T + 105_000 }]]) });

    expect(broken(observed, threePlan)).toEqual({});
    expect(checkInvariants(threePlan, observed).map((i) => i.name)).toEqual(
      expect.arrayContaining([
        'attempts while a pause held the endpoint',
        'outage: the endpoint was never disabled',
        'outage: disabled again by failures from before it was back and enabled',
        'dead letters whose body is not the original (docs/contract.md §4)',
        'outage: attempts while the endpoint was disabled',
        'outage: attempts while a delivery was parked',
        'outage: its deliveries dead-lettered though planned to be delivered',
      ]),
    );
  });

  it('flags a request and a ledger attempt while a pause held the endpoint, past the registry grace', () => {
    const paused = atReceiver(withOutage(), OUTAGE_ENDPOINT, { pauses: [{ at: T, seconds: 20 }], requestTimes: [T + 5_000] });

    expect(broken(paused, threePlan)).toEqual({ 'attempts while a pause held the endpoint': 1 });
    expect(broken(attemptAt(paused, acme(), T + 10_000), threePlan)).toEqual({ 'attempts while a pause held the endpoint': 2 });
  });

  it('allows attempts within the grace after a pause, after it ended, and at another endpoint', () => {
    const observed = atReceiver(withOutage(), OUTAGE_ENDPOINT, { pauses: [{ at: T, seconds: 20 }], requestTimes: [T + GRACE - 1, T + 20_000, T + 21_000] });
    const other = atReceiver(observed, 'warehouse', { requestTimes: [T + 5_000] });

    expect(broken(other, threePlan)).toEqual({});
  });

  it('checks nothing in a pause no longer than the grace', () => {
    const observed = atReceiver(withOutage(), OUTAGE_ENDPOINT, { pauses: [{ at: T, seconds: 2 }], requestTimes: [T + 1_500] });

    expect(broken(observed, threePlan)).toEqual({});
    expect(checkInvariants(threePlan, observed).find((i) => i.name.startsWith('attempts while a pause'))!.detail).toMatch(/^1 pause\(s\) asked for, 0 longer/);
  });

  it('flags an outage during which the endpoint was never disabled', () => {
    expect(broken(withOutage({ disabled: [] }), threePlan)).toEqual({ 'outage: the endpoint was never disabled': 1 });
  });

  it('flags a disabling after the receiver was back whose failures began before it was enabled, and one before the outage', () => {
    const stale = { at: T + 112_000, by: 'handoff', reason: 'no accepted request', noAcceptedSince: T + 1_000, until: T + 120_000 };
    const before = { at: T - 1, by: 'handoff', reason: 'no accepted request', noAcceptedSince: T - 70_000, until: T + 1 };
    const observed = withOutage({ disabled: [before, ...withOutage().outage!.disabled, stale] });

    expect(broken(observed, threePlan)).toEqual({ 'outage: disabled again by failures from before it was back and enabled': 2 });
  });

  it('allows a disabling after the receiver was back by a run of failures begun after the last enabling (the rule)', () => {
    const byRule = { at: T + 200_000, by: 'handoff', reason: 'no accepted request', noAcceptedSince: T + 140_000, until: T + 210_000 };
    const observed = withOutage({ disabled: [...withOutage().outage!.disabled, byRule] });

    expect(broken(observed, threePlan)).toEqual({});
    expect(checkInvariants(threePlan, observed).find((i) => i.name.startsWith('outage: disabled again'))!.detail).toBe(
      '1 disabling(s) while down; 1 after it by a run of failures begun since (the rule)',
    );
  });

  it("flags a dead letter whose body is the canonical form, not the producer's (a message made again from the ledger)", () => {
    const observed = withOutage();
    const letter = observed.deadLetters[0]!;
    const canonical = JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(letter.body) as object).sort(([a], [b]) => a.localeCompare(b))));
    const changed = { ...observed, deadLetters: [{ ...letter, body: canonical }, ...observed.deadLetters.slice(1)] };

    expect(canonical).not.toBe(letter.body);
    expect(broken(changed, threePlan)).toEqual({ 'dead letters whose body is not the original (docs/contract.md §4)': 1 });
  });

  it('flags requests and ledger attempts while the endpoint was disabled, past the grace, until the enable', () => {
    const disabledAt = T + 70_000;
    const requests = atReceiver(withOutage(), OUTAGE_ENDPOINT, { requestTimes: [disabledAt + 1_000, disabledAt + 5_000, T + 109_000, T + 111_000] });

    expect(broken(requests, threePlan)).toEqual({ 'outage: attempts while the endpoint was disabled': 2 });
    expect(broken(attemptAt(withOutage(), acme(), disabledAt + 30_000), threePlan)).toEqual({ 'outage: attempts while the endpoint was disabled': 1 });
    expect(checkInvariants(threePlan, requests).find((i) => i.name === 'outage: attempts while the endpoint was disabled')!.detail).toMatch(
      /; 1 request\(s\) within it, the latest 1000 ms after a disabling$/,
    );
  });

  it('counts a stretch never enabled again as disabled until the end of the run', () => {
    const open = withOutage({ disabled: [{ at: T + 70_000, by: 'handoff', reason: 'no accepted request' }] });

    expect(broken(atReceiver(open, OUTAGE_ENDPOINT, { requestTimes: [T + 250_000] }), threePlan)).toEqual({
      'outage: attempts while the endpoint was disabled': 1,
    });
  });

  it('flags an attempt of a delivery while it was seen parked (its marker unchanged), not before or after', () => {
    const d = deliveriesOf(threePlan).find((x) => x.endpoint === 'warehouse' && x.fate === 'deliver')!;
    const parked = withOutage({ parked: new Map([[`${d.eventId} → warehouse`, { parkedAt: T + 80_000, lastSeenAt: T + 90_000 }]]) });

    expect(broken(attemptAt(parked, d, T + 85_000), threePlan)).toEqual({ 'outage: attempts while a delivery was parked': 1 });
    expect(broken(attemptAt(attemptAt(parked, d, T + 79_000), d, T + 91_000), threePlan)).toEqual({});
  });

  it("flags a dead letter of the outage endpoint's delivery planned to be delivered, not one planned to exhaust", () => {
    const observed = withOutage();
    const d = acme();
    const exhausting = acme('exhaust');
    const letters = [
      ...observed.deadLetters,
      { body: d.body, reason: 'exhausted', eventId: d.eventId, endpoint: OUTAGE_ENDPOINT },
      { body: exhausting.body, reason: 'exhausted', eventId: exhausting.eventId, endpoint: OUTAGE_ENDPOINT },
    ];

    expect(broken({ ...observed, deadLetters: letters }, threePlan)).toMatchObject({
      'outage: its deliveries dead-lettered though planned to be delivered': 1,
    });
  });

  it("judges the attempt budget by each row's own (an endpoint's longer policy)", () => {
    const observed = withOutage();
    const d = acme();
    const rows = observed.rows.map((r) => (r.eventId === d.eventId && r.endpoint === d.endpoint ? { ...r, attempts: 10, maxAttempts: 12 } : r));

    expect(broken({ ...observed, rows }, threePlan)).toEqual({});
    expect(broken({ ...observed, rows: rows.map((r) => (r.attempts === 10 ? { ...r, attempts: 13 } : r)) }, threePlan)).toEqual({ 'attempts over budget': 1 });
  });
});

describe('Function: planSoak and checkInvariants, an endpoint ordered per shipment', () => {
  const orderedPlan: SoakPlan = planSoak({ events: 300, seed: 7, endpoints: THREE_ENDPOINTS_ONE_ORDERED, eventsPerShipment: 5 });
  const ORDERED = 'acme-ops';
  const NAMES = {
    early: 'ordering: a request before an earlier-admitted event of its shipment was settled',
    header: "ordering: webhook-sequence differs from the row's sequence",
    numbers: "ordering: a shipment's sequences are not exactly 1..n",
    fifo: "ordering: the ordered intake's numbers not in its send order",
    letters: 'ordering: dead letters not saying their shipment continued (onDead continue)',
  };
  const shipmentOf = (eventId: string) => orderedPlan.events.find((e) => e.id === eventId)!.shipmentId!;
  /** The ordered endpoint's planned deliveries by shipment, in plan (= send) order. */
  const groups = new Map<string, PlannedDelivery[]>();
  for (const d of deliveriesOf(orderedPlan).filter((d) => d.endpoint === ORDERED)) {
    groups.set(shipmentOf(d.eventId), [...(groups.get(shipmentOf(d.eventId)) ?? []), d]);
  }

  /**
   * A run that went to plan: at the ordered endpoint each shipment's events numbered 1..n in send
   * order, each sent once its predecessor's one request was answered (dead ones passing the turn on
   * after their answer), with webhook-sequence.
   */
  function orderedEnd(): Observed {
    const base = cleanEnd(orderedPlan);
    const log: LoggedRequest[] = [];
    const rows = new Map(base.rows.map((r) => [`${r.eventId} ${r.endpoint}`, r]));
    let t = 1_000;
    for (const group of groups.values()) {
      group.forEach((d, i) => {
        const status = d.fate === 'deliver' ? 200 : d.fate === 'reject' ? 422 : 503;
        log.push({ eventId: d.eventId, arrivedAt: t, sequence: String(i + 1), answeredAt: t + 5, status });
        const key = `${d.eventId} ${ORDERED}`;
        rows.set(key, { ...rows.get(key)!, sequence: i + 1, ...(d.fate !== 'deliver' ? { releasedAt: t + 6 } : {}) });
        t += 10;
      });
    }
    return {
      ...withReceiver(base, ORDERED, (r) => ({ ...r, log, withSequence: log.length })),
      rows: [...rows.values()],
      deadLetters: base.deadLetters.map((letter) => (letter.endpoint === ORDERED ? { ...letter, ordering: 'continued' } : letter)),
    };
  }
  const at = (observed: Observed, eventId: string) => observed.receivers.find((r) => r.endpoint === ORDERED)!.log!.findIndex((r) => r.eventId === eventId);
  const changeRequest = (observed: Observed, eventId: string, change: (r: LoggedRequest) => LoggedRequest): Observed =>
    withReceiver(observed, ORDERED, (r) => ({ ...r, log: r.log!.map((entry) => (entry.eventId === eventId ? change(entry) : entry)) }));
  const changeRow = (observed: Observed, eventId: string, change: (r: DeliveryRecord) => DeliveryRecord): Observed => ({
    ...observed,
    rows: observed.rows.map((r) => (r.eventId === eventId && r.endpoint === ORDERED ? change(r) : r)),
  });
  /** A shipment with at least `n` events at the ordered endpoint, sent to this intake, whose first `upTo` are all to be delivered. */
  const shipment = (intake: 'ordered' | 'standard', n = 3, upTo = 2) =>
    [...groups.entries()].find(
      ([id, list]) => list.length >= n && orderedPlan.events.find((e) => e.shipmentId === id)!.intake === intake && list.slice(0, upTo).every((d) => d.fate === 'deliver'),
    )![1];

  it('groups events into shipments of 5 with one carrier each, every other shipment to the ordered intake', () => {
    const bodies = orderedPlan.events.map((e) => JSON.parse(e.body) as { shipmentId: string; status: string; data: { carrier: string } });
    const byShipment = new Map<string, string[]>();
    bodies.forEach((b) => byShipment.set(b.shipmentId, [...(byShipment.get(b.shipmentId) ?? []), b.data.carrier]));
    expect(byShipment.size).toBe(60);
    expect([...byShipment.values()].every((carriers) => carriers.length === 5 && new Set(carriers).size === 1)).toBe(true);
    expect(orderedPlan.events.filter((e) => e.intake === 'ordered')).toHaveLength(150);
    expect(summarize(orderedPlan)).toMatchObject({ shipments: 60, orderedIntake: 150 });
    expect(planSoak({ events: 300, seed: 7, endpoints: THREE_ENDPOINTS_ONE_ORDERED, eventsPerShipment: 5 })).toEqual(orderedPlan);
  });

  it('gives the ordered endpoint ordering per-shipment with onDead continue in the endpoints file, the others nothing', () => {
    const fields = THREE_ENDPOINTS_ONE_ORDERED.map((e) => endpointFields(e, 'http://127.0.0.1:1/', 'whsec_x'));
    expect(fields.map((f) => [f.name, f.ordering, f.onDead])).toEqual([
      ['warehouse', undefined, undefined],
      ['tracking', undefined, undefined],
      ['acme-ops', 'per-shipment', 'continue'],
    ]);
    // Shipments at acme-ops of all 5 events, with dead ones among them (a turn passed on).
    expect([...groups.values()].some((list) => list.length === 5)).toBe(true);
    expect(deliveriesOf(orderedPlan).some((d) => d.endpoint === ORDERED && d.fate !== 'deliver')).toBe(true);
  });

  it('holds for a run in admission order, dead events passing their turn on, and checks every ordering invariant', () => {
    const verdicts = checkInvariants(orderedPlan, orderedEnd());

    expect(verdicts.filter((v) => v.violations > 0)).toEqual([]);
    expect(verdicts.map((v) => v.name)).toEqual(expect.arrayContaining(Object.values(NAMES)));
    expect(checkInvariants(threePlan, cleanEnd(threePlan)).map((v) => v.name)).not.toContain(NAMES.early);
  });

  it('flags a request for an event before the last request for the event admitted before it was answered', () => {
    const [first, second] = shipment('standard');
    const observed = orderedEnd();
    const answered = observed.receivers.find((r) => r.endpoint === ORDERED)!.log![at(observed, first!.eventId)]!.answeredAt!;

    expect(broken(changeRequest(observed, second!.eventId, (r) => ({ ...r, arrivedAt: answered - 1 })), orderedPlan)).toEqual({ [NAMES.early]: 1 });
  });

  it('flags an event sent after its predecessor whose last request was answered with a 503, or never answered, or never sent', () => {
    const [first] = shipment('standard', 3, 1);
    const observed = orderedEnd();

    // Its successors (2 and 3 at least) each count.
    const later = groups.get(shipmentOf(first!.eventId))!.length - 1;
    expect(broken(changeRequest(observed, first!.eventId, (r) => ({ ...r, status: 503 })), orderedPlan)).toEqual({ [NAMES.early]: later });
    expect(broken(changeRequest(observed, first!.eventId, ({ answeredAt: _a, status: _s, ...r }) => r), orderedPlan)).toEqual({ [NAMES.early]: later });
    const unsent = withReceiver(observed, ORDERED, (r) => ({ ...r, log: r.log!.filter((e) => e.eventId !== first!.eventId) }));
    expect(broken(unsent, orderedPlan)).toEqual({ [NAMES.early]: later });
  });

  it('accepts a dead earlier event once its turn was passed on, and flags a request before that or when it never was', () => {
    const [list] = [...groups.values()].filter((l) => l.findIndex((d) => d.fate !== 'deliver') >= 0 && l.findIndex((d) => d.fate !== 'deliver') < l.length - 1);
    const dead = list!.find((d) => d.fate !== 'deliver')!;
    const next = list![list!.indexOf(dead) + 1]!;
    const observed = orderedEnd();
    const released = observed.rows.find((r) => r.eventId === dead.eventId && r.endpoint === ORDERED)!.releasedAt!;
    const after = list!.length - 1 - list!.indexOf(dead);

    expect(broken(observed, orderedPlan)).toEqual({});
    expect(broken(changeRequest(observed, next.eventId, (r) => ({ ...r, arrivedAt: released - 1 })), orderedPlan)).toEqual({ [NAMES.early]: 1 });
    expect(broken(changeRow(observed, dead.eventId, ({ releasedAt: _r, ...r }) => r), orderedPlan)).toEqual({ [NAMES.early]: after });
  });

  it('flags a request whose webhook-sequence is not its row\'s, or missing, and any at an unordered endpoint', () => {
    const [first] = shipment('standard');
    const observed = orderedEnd();

    expect(broken(changeRequest(observed, first!.eventId, (r) => ({ ...r, sequence: '2' })), orderedPlan)).toEqual({ [NAMES.header]: 1 });
    expect(broken(changeRequest(observed, first!.eventId, ({ sequence: _s, ...r }) => r), orderedPlan)).toEqual({ [NAMES.header]: 1 });
    expect(broken(withReceiver(observed, 'tracking', (r) => ({ ...r, withSequence: 3 })), orderedPlan)).toEqual({ [NAMES.header]: 1 });
  });

  it("flags a shipment whose sequences are not exactly 1..n (a repeat, a gap, one missing) and a sequence on an unordered endpoint's row", () => {
    const list = shipment('standard');
    const observed = orderedEnd();
    const third = list[2]!.eventId;
    // Its row says 2 (as its request's header then says, so only the numbering is wrong): repeated 2, no 3.
    const repeated = changeRequest(changeRow(observed, third, (r) => ({ ...r, sequence: 2 })), third, (r) => ({ ...r, sequence: '2' }));
    expect(broken(repeated, orderedPlan)).toMatchObject({ [NAMES.numbers]: 1 });
    // The last one numbered past n: a gap, the order unchanged.
    const last = list.at(-1)!.eventId;
    const gap = changeRequest(changeRow(observed, last, (r) => ({ ...r, sequence: list.length + 4 })), last, (r) => ({ ...r, sequence: String(list.length + 4) }));
    expect(broken(gap, orderedPlan)).toEqual({ [NAMES.numbers]: 1 });
    // No number at all: its request then carries none either, itself flagged.
    const unnumbered = changeRequest(changeRow(observed, third, ({ sequence: _s, ...r }) => r), third, ({ sequence: _s, ...r }) => r);
    expect(broken(unnumbered, orderedPlan)).toEqual({ [NAMES.numbers]: 1, [NAMES.header]: 1 });
    const unordered = { ...observed, rows: observed.rows.map((r, i) => (i === observed.rows.findIndex((x) => x.endpoint === 'warehouse') ? { ...r, sequence: 1 } : r)) };
    expect(broken(unordered, orderedPlan)).toEqual({ [NAMES.numbers]: 1 });
  });

  it("flags a dead letter of the ordered endpoint not saying its shipment continued, and one elsewhere saying anything of ordering", () => {
    const observed = orderedEnd();
    const letters = (change: (letter: DeadLetter) => DeadLetter, endpoint: string) => ({
      ...observed,
      deadLetters: observed.deadLetters.map((letter, i) => (i === observed.deadLetters.findIndex((l) => l.endpoint === endpoint) ? change(letter) : letter)),
    });

    expect(broken(letters((l) => ({ ...l, ordering: 'held' }), ORDERED), orderedPlan)).toEqual({ [NAMES.letters]: 1 });
    expect(broken(letters(({ ordering: _o, ...l }) => l, ORDERED), orderedPlan)).toEqual({ [NAMES.letters]: 1 });
    expect(broken(letters((l) => ({ ...l, ordering: 'continued' }), 'warehouse'), orderedPlan)).toEqual({ [NAMES.letters]: 1 });
  });

  it('flags a shipment of the ordered intake numbered against its send order, not one of the standard intake', () => {
    const swap = (list: readonly PlannedDelivery[]) => {
      const [a, b] = [list[0]!.eventId, list[1]!.eventId];
      let observed = orderedEnd();
      // Swapped numbers, headers and sending times: a run in order of the numbers the head gave.
      const log = observed.receivers.find((r) => r.endpoint === ORDERED)!.log!;
      const [ra, rb] = [log[at(observed, a)]!, log[at(observed, b)]!];
      observed = changeRow(changeRow(observed, a, (r) => ({ ...r, sequence: 2 })), b, (r) => ({ ...r, sequence: 1 }));
      observed = changeRequest(observed, a, () => ({ ...rb, eventId: a, sequence: '2' }));
      return changeRequest(observed, b, () => ({ ...ra, eventId: b, sequence: '1' }));
    };

    expect(broken(swap(shipment('ordered')), orderedPlan)).toEqual({ [NAMES.fifo]: 1 });
    expect(broken(swap(shipment('standard')), orderedPlan)).toEqual({});
  });
});
