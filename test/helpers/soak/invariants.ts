/**
 * What a soak must leave behind, checked per delivery (event, endpoint) against the ledger (the
 * authority), the dead-letter queue and each endpoint's receiver counts. Pure: the same
 * observations give the same verdicts, and each check has a unit test showing it can fail.
 */
import type { DeliveryRecord } from '../../../lib/ledger/ledger';
import type { EndpointDeadLetter } from './dead-letters';
import { DEFAULT_SOAK_ENDPOINT } from './endpoints';
import { deliveriesOf, deliveryKey, endpointsOf, type Fate, type PlannedDelivery, type SoakPlan } from './plan';
import type { ReceiverCounts } from './receiver';

export interface Observed {
  /** Every ledger row at the end. */
  readonly rows: readonly DeliveryRecord[];
  /** Everything on the dead-letter queue at the end. */
  readonly deadLetters: readonly EndpointDeadLetter[];
  /** Each endpoint's receiver. */
  readonly receivers: readonly ReceiverCounts[];
  /** Messages left on the delivery queue (visible, in flight or delayed). */
  readonly queueDepth: number;
  /** The configured attempt budget. */
  readonly maxAttempts: number;
}

export interface Invariant {
  readonly name: string;
  /** The count that breaks the invariant; 0 holds. */
  readonly violations: number;
  /** What was expected and found, in a few words. */
  readonly detail: string;
  /** Up to ten offending deliveries (`<eventId> → <endpoint>`), each with what was wrong. */
  readonly examples: readonly string[];
}

const MAX_EXAMPLES = 10;

/** How a delivery must end, by fate. */
export const EXPECTED_END: Readonly<Record<Fate, { state: 'delivered' | 'dead'; reason?: 'rejected' | 'exhausted' }>> = {
  deliver: { state: 'delivered' },
  reject: { state: 'dead', reason: 'rejected' },
  exhaust: { state: 'dead', reason: 'exhausted' },
};

export function checkInvariants(plan: SoakPlan, observed: Observed): Invariant[] {
  const planned: readonly PlannedDelivery[] = deliveriesOf(plan);
  const plannedKeys = new Set(planned.map((d) => deliveryKey(d.eventId, d.endpoint)));
  const rows = new Map(observed.rows.map((row) => [deliveryKey(row.eventId, row.endpoint), row]));
  const rowOf = (d: PlannedDelivery) => rows.get(deliveryKey(d.eventId, d.endpoint));
  const effectsAt = new Map(observed.receivers.map((r) => [r.endpoint, r.effects]));
  const ended = (row: DeliveryRecord | undefined) =>
    row === undefined ? 'no row' : row.state === 'dead' ? `dead (${row.deadReason})` : row.state;
  const names = endpointsOf(plan).map((e) => e.name);
  // Before issue 10's routing, dead letters of the single-URL settings had no endpoint attribute.
  const single = plan.endpoints === undefined;
  const letterEndpoint = (letter: EndpointDeadLetter) => letter.endpoint ?? (single ? DEFAULT_SOAK_ENDPOINT.name : undefined);

  const lost = planned
    .filter((d) => {
      const row = rowOf(d);
      return row === undefined || row.state === 'pending';
    })
    .map((d) => `${deliveryKey(d.eventId, d.endpoint)}: ${ended(rowOf(d))}, ${rowOf(d)?.attempts ?? 0} attempt(s)`);

  const deliveredWithoutEffect = observed.rows
    .filter((row) => row.state === 'delivered' && (effectsAt.get(row.endpoint)?.get(row.eventId) ?? 0) === 0)
    .map((row) => `${deliveryKey(row.eventId, row.endpoint)}: delivered, never applied`);

  // Effects are what each receiver kit's action applied: its store (keyed by webhook-id) decides
  // whether a repeat may run the action again, so a count over 1 is the kit letting one through.
  const doubleEffects = observed.receivers.flatMap((receiver) =>
    [...receiver.effects]
      .filter(([, count]) => count > 1)
      .map(([id, count]) => `${deliveryKey(id, receiver.endpoint)}: applied ${count} times`),
  );

  const sum = (field: 'keyMismatches' | 'changedBodies' | 'unplanned' | 'badSignatures' | 'unsubscribed') =>
    observed.receivers.reduce((total, receiver) => total + receiver[field], 0);
  const [keyMismatches, changedBodies, unplanned, badSignatures] = [
    sum('keyMismatches'),
    sum('changedBodies'),
    sum('unplanned'),
    sum('badSignatures'),
  ];

  // Routing: a row or a request where the plan routes nothing, and a receiver for no endpoint.
  const misrouted = [
    ...observed.rows
      .filter((row) => !plannedKeys.has(deliveryKey(row.eventId, row.endpoint)))
      .map((row) => `${deliveryKey(row.eventId, row.endpoint)}: a row (${ended(row)}), not routed there`),
    ...observed.receivers
      .filter((receiver) => receiver.unsubscribed > 0)
      .map((receiver) => `${receiver.endpoint}: ${receiver.unsubscribed} request(s) for events it does not subscribe to`),
  ];
  const misroutedCount =
    observed.rows.filter((row) => !plannedKeys.has(deliveryKey(row.eventId, row.endpoint))).length + sum('unsubscribed');

  const wrongEnds: string[] = [];
  const expectedDead = { rejected: 0, exhausted: 0 };
  const actualDead = { rejected: 0, exhausted: 0, other: 0 };
  for (const d of planned) {
    const expected = EXPECTED_END[d.fate];
    if (expected.reason) expectedDead[expected.reason] += 1;
    const row = rowOf(d);
    if (row?.state === 'dead') {
      if (row.deadReason === 'rejected' || row.deadReason === 'exhausted') actualDead[row.deadReason] += 1;
      else actualDead.other += 1;
    }
    if (row === undefined || row.state === 'pending') continue; // counted as lost
    if (row.state !== expected.state || row.deadReason !== expected.reason) {
      const history = row.history.map((h) => h.status ?? h.outcome).join(',');
      wrongEnds.push(
        `${deliveryKey(d.eventId, d.endpoint)}: ${ended(row)}, expected ${expected.reason ? `dead (${expected.reason})` : expected.state}; ` +
          `${row.attempts} attempt(s), ${row.attempts - row.history.length} without an outcome, history [${history}]`,
      );
    }
  }

  const overBudget = observed.rows
    .filter((row) => row.attempts > observed.maxAttempts)
    .map((row) => `${deliveryKey(row.eventId, row.endpoint)}: ${row.attempts} attempts`);

  const bodies = new Map(plan.events.map((event) => [event.id, event.body]));
  const letterKey = (eventId: string, endpoint: string | undefined, reason: string | undefined, body: string | undefined) =>
    `${eventId}\u0000${endpoint}\u0000${reason}\u0000${body}`;
  const lettered = new Set(
    observed.deadLetters.map((letter) => letterKey(letter.eventId ?? '', letterEndpoint(letter), letter.reason, letter.body)),
  );
  const deadNotLettered = observed.rows
    .filter((row) => row.state === 'dead')
    .filter((row) => !lettered.has(letterKey(row.eventId, row.endpoint, row.deadReason, bodies.get(row.eventId))))
    .map((row) => `${deliveryKey(row.eventId, row.endpoint)}: dead (${row.deadReason}), no such dead letter`);

  // SQS's redrive (maxReceiveCount, the backstop) moves the message itself, with none of handoff's
  // attributes: its delivery was left without a message (docs/contract.md §12, stuck work).
  const redriven = observed.deadLetters
    .filter((letter) => letter.reason === undefined)
    .map((letter) => {
      const eventId = eventIdOf(letter.body);
      const routed = planned.filter((d) => d.eventId === eventId).map((d) => `${d.endpoint} ${ended(rowOf(d))}`);
      return `${eventId ?? '(unreadable body)'}: moved by the queue's redrive; its deliveries: ${routed.join(', ') || 'none'}`;
    });

  const letteredNotDead = observed.deadLetters
    .filter((letter) => letter.reason !== undefined)
    .filter((letter) => {
      const endpoint = letterEndpoint(letter);
      return letter.eventId === undefined || endpoint === undefined || rows.get(deliveryKey(letter.eventId, endpoint))?.state !== 'dead';
    })
    .map((letter) => {
      const endpoint = letterEndpoint(letter);
      const where = `${letter.eventId ?? '(no eventId)'} → ${endpoint ?? '(no endpoint attribute)'}`;
      const row = letter.eventId !== undefined && endpoint !== undefined ? rows.get(deliveryKey(letter.eventId, endpoint)) : undefined;
      return `${where}: dead letter (${letter.reason}), ledger says ${ended(row)}`;
    });

  const maxSeen = Math.max(0, ...observed.rows.map((row) => row.attempts));
  const deadCount = (d: { rejected: number; exhausted: number }) =>
    `${d.rejected + d.exhausted} (rejected ${d.rejected}, exhausted ${d.exhausted})`;
  const appliedEvents = observed.receivers.reduce((total, receiver) => total + receiver.effects.size, 0);

  return [
    invariant(
      'lost: deliveries without a final state',
      lost,
      `${planned.length - lost.length} of ${planned.length} delivered or dead (${plan.events.length} events, ${names.length} endpoint(s))`,
    ),
    invariant('delivered, yet never applied at the receiver', deliveredWithoutEffect, 'every delivered row has its effect'),
    invariant('double effects at a receiver', doubleEffects, `${appliedEvents} deliveries applied`),
    {
      name: 'requests with a wrong key, a changed body, a bad signature or no event',
      violations: keyMismatches + changedBodies + unplanned + badSignatures,
      detail: `${keyMismatches} wrong key, ${changedBodies} changed body, ${badSignatures} bad signature, ${unplanned} unplanned`,
      examples: [],
    },
    {
      name: 'rows or requests at an endpoint the event is not routed to',
      violations: misroutedCount,
      detail: `${planned.length} routed deliveries; ${plan.events.length - new Set(planned.map((d) => d.eventId)).size} events routed nowhere`,
      examples: misrouted.slice(0, MAX_EXAMPLES),
    },
    invariant(
      'dead set differs from the expected one',
      wrongEnds,
      `dead ${deadCount(actualDead)}${actualDead.other ? ` + ${actualDead.other} other` : ''}; expected ${deadCount(expectedDead)}`,
    ),
    invariant('attempts over budget', overBudget, `at most ${maxSeen} of ${observed.maxAttempts} attempts`),
    invariant(
      'dead deliveries missing from the dead-letter queue',
      deadNotLettered,
      `${observed.deadLetters.length} dead letters (duplicates allowed), matched on event, endpoint, reason and body`,
    ),
    invariant('dead letters for deliveries that are not dead', letteredNotDead, 'the ledger is the authority'),
    invariant(
      "messages the queue's redrive moved to the dead-letter queue",
      redriven,
      'the backstop (maxReceiveCount) must not fire: each receive of a message is an attempt, a hold or a crash',
    ),
    {
      name: 'messages left on the delivery queue',
      violations: observed.queueDepth,
      detail: `${observed.queueDepth} left`,
      examples: [],
    },
  ];
}

function eventIdOf(body: string): string | undefined {
  try {
    const id = (JSON.parse(body) as { id?: unknown }).id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

function invariant(name: string, offenders: readonly string[], detail: string): Invariant {
  return { name, violations: offenders.length, detail, examples: offenders.slice(0, MAX_EXAMPLES) };
}
