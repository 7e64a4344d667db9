/**
 * The short chaos soaks (the long one is `npm run soak`): a few hundred events through the
 * sandbox with the receiver fault mix, duplicate sends and random SIGKILLs of busy workers, then
 * every invariant of test/helpers/soak/invariants.ts must hold: once with the single-URL settings,
 * once routed to three endpoints (test/helpers/soak/endpoints.ts), judged per (event, endpoint), and
 * once with acme-ops ordered per shipment (shipments of 5 over both intakes, docs/contract.md §13),
 * judged per shipment too, with producers that forge handoff's control attributes (unsealed) and
 * reuse an event ID for another shipment.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, runSoak, type SoakOptions, type SoakReport } from '../helpers/soak/run';

const EVENTS = 250;
const SEED = 20_261_202;
const THREE_ENDPOINT_EVENTS = 200;
const ORDERED_EVENTS = 120;

/** The run's three kills returned messages to the queue; its plan sent duplicates and meant deaths of both reasons. */
function expectKillsDuplicatesAndBothDeadReasons({ figures, plan }: SoakReport): void {
  expect(figures.killsIssued).toBe(3);
  expect(figures.messagesReturnedByKills).toBeGreaterThan(0);
  expect(plan.duplicates).toBeGreaterThan(0);
  expect(plan.reject).toBeGreaterThan(0);
  expect(plan.exhaust).toBeGreaterThan(0);
}

/**
 * The test `name`: the soak of `options`, after which every invariant holds (a failure prints the
 * whole report, stragglers and offenders included), and `also`. Answers the run's report for the
 * tests after it, which check what it exercised.
 */
function itRunsTheSoak(name: string, options: SoakOptions, also: (report: SoakReport) => void = () => {}): () => SoakReport {
  let report: SoakReport | undefined;
  it(
    name,
    async () => {
      // Act
      report = await runSoak(options);

      // Assess
      const broken = report.invariants.filter((invariant) => invariant.violations > 0);
      expect(broken, formatReport(report)).toEqual([]);
      expect(report.ok).toBe(true);
      also(report);
    },
    300_000,
  );
  return () => {
    expect(report, 'the soak run of the test above did not finish').toBeDefined();
    return report!;
  };
}

describe('Chaos soak: the short run', () => {
  const report = itRunsTheSoak('ends with nothing lost, no double effect, exactly the planned dead set, attempts within budget', {
    events: EVENTS,
    seed: SEED,
    kills: 3,
    killIntervalMs: [500, 2_000],
  });

  it('really exercised the chaos: kills that hit work, every fault kind, duplicates and both dead reasons', () => {
    const { figures } = report();
    expectKillsDuplicatesAndBothDeadReasons(report());
    for (const [kind, count] of Object.entries(figures.receiver.answers)) expect([kind, count > 0]).toEqual([kind, true]);
    expect(figures.receiver.absorbed).toBeGreaterThan(0);
  });
});

describe('Chaos soak: the short run, three endpoints', () => {
  const report = itRunsTheSoak(
    'ends with every (event, endpoint) delivery final once, each endpoint given exactly its events, dead letters naming their endpoint',
    { events: THREE_ENDPOINT_EVENTS, endpoints: 3, seed: SEED, kills: 3, killIntervalMs: [500, 2_000] },
  );

  it('really routed and exercised the chaos: events to none, one, two and three endpoints, kills that hit work, both dead reasons', () => {
    const { figures, plan } = report();
    expect(plan.fanOut.map((events) => events > 0)).toEqual([true, true, true, true]);
    expectKillsDuplicatesAndBothDeadReasons(report());
    for (const endpoint of figures.endpoints) {
      expect([endpoint.name, endpoint.delivered > 0 && endpoint.requests > endpoint.delivered]).toEqual([endpoint.name, true]);
    }
    expect(figures.receiver.absorbed).toBeGreaterThan(0);
  });
});

describe('Chaos soak: the short run, acme-ops ordered per shipment', () => {
  const report = itRunsTheSoak(
    'ends with every delivery final once and, per shipment at acme-ops, each event sent only after the ones admitted before it settled, numbered 1..n',
    { events: ORDERED_EVENTS, endpoints: 3, ordered: true, seed: SEED, kills: 3, killIntervalMs: [500, 2_000] },
    (run) => {
      expect(run.invariants.filter((invariant) => invariant.name.startsWith('ordering: '))).toHaveLength(5);
      expect(run.invariants.filter((invariant) => invariant.name.startsWith('forged control attributes: '))).toHaveLength(1);
      expect(run.invariants.filter((invariant) => invariant.name.startsWith('reused IDs: '))).toHaveLength(2);
    },
  );

  it('really exercised ordering: both intakes, events that waited their turn, a dead event passing it on, kills that hit work, forgeries and a reused ID', () => {
    const { figures, plan } = report();
    expect(plan.shipments).toBe(ORDERED_EVENTS / 5);
    expect(plan.orderedIntake).toBeGreaterThan(0);
    expect(plan.orderedIntake).toBeLessThan(plan.events);
    expect(figures.ordering?.requests).toBeGreaterThan(figures.ordering?.delivered ?? 0);
    expect(figures.ordering?.waited).toBeGreaterThan(0);
    expect(figures.ordering?.passedOn).toBeGreaterThan(0);
    expect(figures.killsIssued).toBe(3);
    expect(figures.messagesReturnedByKills).toBeGreaterThan(0);
    // Forged attributes of every kind, some on the ordered intake; a reused ID dead-lettered at each of its endpoints.
    expect(plan.forged).toBeGreaterThan(0);
    expect(plan.forgedToOrderedIntake).toBeGreaterThan(0);
    for (const [kind, count] of Object.entries(plan.forgedByKind)) expect([kind, count > 0]).toEqual([kind, true]);
    expect(plan.conflicts).toBeGreaterThan(0);
    expect(figures.identityConflictLetters).toBeGreaterThanOrEqual(plan.conflictLetters);
  });
});
