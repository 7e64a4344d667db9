/**
 * What a soak must leave behind, checked against the ledger (the authority), the dead-letter
 * queue and the receiver's counts. Pure: the same observations give the same verdicts, and each
 * check has a unit test showing it can fail.
 */
import type { DeliveryRecord } from '../../../lib/ledger/ledger';
import type { DeadLetter } from '../sandbox-clients';
import type { Fate, SoakPlan } from './plan';
import type { ReceiverCounts } from './receiver';

export interface Observed {
  /** Every ledger row at the end. */
  readonly rows: readonly DeliveryRecord[];
  /** Everything on the dead-letter queue at the end. */
  readonly deadLetters: readonly DeadLetter[];
  readonly receiver: ReceiverCounts;
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
  /** Up to ten offending event IDs, each with what was wrong. */
  readonly examples: readonly string[];
}

const MAX_EXAMPLES = 10;

/** How an event must end, by fate. */
export const EXPECTED_END: Readonly<Record<Fate, { state: 'delivered' | 'dead'; reason?: 'rejected' | 'exhausted' }>> = {
  deliver: { state: 'delivered' },
  reject: { state: 'dead', reason: 'rejected' },
  exhaust: { state: 'dead', reason: 'exhausted' },
};

export function checkInvariants(plan: SoakPlan, observed: Observed): Invariant[] {
  const rows = new Map(observed.rows.map((row) => [row.eventId, row]));
  const effects = observed.receiver.effects;
  const ended = (row: DeliveryRecord | undefined) =>
    row === undefined ? 'no row' : row.state === 'dead' ? `dead (${row.deadReason})` : row.state;

  const lost = plan.events
    .filter((event) => {
      const row = rows.get(event.id);
      return row === undefined || row.state === 'pending';
    })
    .map((event) => `${event.id}: ${ended(rows.get(event.id))}, ${rows.get(event.id)?.attempts ?? 0} attempt(s)`);

  const deliveredWithoutEffect = observed.rows
    .filter((row) => row.state === 'delivered' && (effects.get(row.eventId) ?? 0) === 0)
    .map((row) => `${row.eventId}: delivered, never applied`);

  // Effects are what the receiver kit's action applied: its store (keyed by webhook-id) decides
  // whether a repeat may run the action again, so a count over 1 is the kit letting one through.
  const doubleEffects = [...effects]
    .filter(([, count]) => count > 1)
    .map(([id, count]) => `${id}: applied ${count} times`);

  const { keyMismatches, changedBodies, unplanned } = observed.receiver;

  const wrongEnds: string[] = [];
  const expectedDead = { rejected: 0, exhausted: 0 };
  const actualDead = { rejected: 0, exhausted: 0, other: 0 };
  for (const event of plan.events) {
    const expected = EXPECTED_END[event.fate];
    if (expected.reason) expectedDead[expected.reason] += 1;
    const row = rows.get(event.id);
    if (row?.state === 'dead') {
      if (row.deadReason === 'rejected' || row.deadReason === 'exhausted') actualDead[row.deadReason] += 1;
      else actualDead.other += 1;
    }
    if (row === undefined || row.state === 'pending') continue; // counted as lost
    if (row.state !== expected.state || row.deadReason !== expected.reason) {
      const history = row.history.map((h) => h.status ?? h.outcome).join(',');
      wrongEnds.push(
        `${event.id}: ${ended(row)}, expected ${expected.reason ? `dead (${expected.reason})` : expected.state}; ` +
          `${row.attempts} attempt(s), ${row.attempts - row.history.length} without an outcome, history [${history}]`,
      );
    }
  }

  const overBudget = observed.rows
    .filter((row) => row.attempts > observed.maxAttempts)
    .map((row) => `${row.eventId}: ${row.attempts} attempts`);

  const bodies = new Map(plan.events.map((event) => [event.id, event.body]));
  const lettered = new Set(
    observed.deadLetters.map((letter) => `${letter.eventId}\u0000${letter.reason}\u0000${letter.body}`),
  );
  const deadNotLettered = observed.rows
    .filter((row) => row.state === 'dead')
    .filter((row) => !lettered.has(`${row.eventId}\u0000${row.deadReason}\u0000${bodies.get(row.eventId)}`))
    .map((row) => `${row.eventId}: dead (${row.deadReason}), no such dead letter`);

  const letteredNotDead = observed.deadLetters
    .filter((letter) => letter.eventId === undefined || rows.get(letter.eventId)?.state !== 'dead')
    .map((letter) => `${letter.eventId ?? '(no eventId)'}: dead letter (${letter.reason}), ledger says ${ended(rows.get(letter.eventId ?? ''))}`);

  const maxSeen = Math.max(0, ...observed.rows.map((row) => row.attempts));
  const deadCount = (d: { rejected: number; exhausted: number }) =>
    `${d.rejected + d.exhausted} (rejected ${d.rejected}, exhausted ${d.exhausted})`;

  return [
    invariant('lost: events without a final state', lost, `${plan.events.length - lost.length} of ${plan.events.length} delivered or dead`),
    invariant('delivered, yet never applied at the receiver', deliveredWithoutEffect, 'every delivered row has its effect'),
    invariant('double effects at the receiver', doubleEffects, `${effects.size} events applied`),
    {
      name: 'requests with a wrong key, a changed body, or no event',
      violations: keyMismatches + changedBodies + unplanned,
      detail: `${keyMismatches} wrong key, ${changedBodies} changed body, ${unplanned} unplanned`,
      examples: [],
    },
    invariant(
      'dead set differs from the expected one',
      wrongEnds,
      `dead ${deadCount(actualDead)}${actualDead.other ? ` + ${actualDead.other} other` : ''}; expected ${deadCount(expectedDead)}`,
    ),
    invariant('attempts over budget', overBudget, `at most ${maxSeen} of ${observed.maxAttempts} attempts`),
    invariant('dead events missing from the dead-letter queue', deadNotLettered, `${observed.deadLetters.length} dead letters (duplicates allowed)`),
    invariant('dead letters for events that are not dead', letteredNotDead, 'the ledger is the authority'),
    {
      name: 'messages left on the delivery queue',
      violations: observed.queueDepth,
      detail: `${observed.queueDepth} left`,
      examples: [],
    },
  ];
}

function invariant(name: string, offenders: readonly string[], detail: string): Invariant {
  return { name, violations: offenders.length, detail, examples: offenders.slice(0, MAX_EXAMPLES) };
}
