/**
 * What a soak must leave behind, checked per delivery (event, endpoint) against the ledger (the
 * authority), the dead-letter queue and each endpoint's receiver counts. Pure: the same
 * observations give the same verdicts, and each check has a unit test showing it can fail.
 */
import { parseEvent } from '../../../lib/event';
import type { DeliveryRecord } from '../../../lib/ledger/ledger';
import type { DeadLetter } from '../sandbox-clients';
import type { DisabledInterval } from './outage';
import { DEFAULT_SOAK_ENDPOINT } from './endpoints';
import { deliveriesOf, deliveryKey, endpointsOf, type Fate, type PlannedConflict, type PlannedDelivery, type SoakPlan } from './plan';
import type { LoggedRequest, ReceiverCounts } from './receiver';

export interface Observed {
  /** Every ledger row at the end. */
  readonly rows: readonly DeliveryRecord[];
  /** Everything on the dead-letter queue at the end. */
  readonly deadLetters: readonly DeadLetter[];
  /** Each endpoint's receiver. */
  readonly receivers: readonly ReceiverCounts[];
  /** Messages left on the delivery queue (visible, in flight or delayed). */
  readonly queueDepth: number;
  /** The configured attempt budget (a row's own `maxAttempts` is its budget: an endpoint may set its own). */
  readonly maxAttempts: number;
  /**
   * How long after a pause or a disabling an attempt may still start (ms): a consumer learns of
   * another's write from its copy of the registry within the copy's age (docs/contract.md §11–§12),
   * and a batch already past its check sends within an attempt's time. Default 0.
   */
  readonly registryGraceMs?: number;
  /** The endpoint outage, when the run had one (./outage.ts). */
  readonly outage?: OutageObserved;
  /** The OAuth2 token server, when an endpoint was behind one (./locks.ts). */
  readonly tokens?: TokensObserved;
}

/** What the soak saw of its token server. */
export interface TokensObserved {
  /** Tokens issued. */
  readonly fetches: number;
  /** Token requests refused (wrong client credentials). */
  readonly refusals: number;
  /** The most the consumers may have fetched: one per worker process per token lifetime less 60 s. */
  readonly bound: number;
}

/** What the soak saw of its endpoint outage. Epoch ms. */
export interface OutageObserved {
  readonly endpoint: string;
  /** The receiver went down and came back (absent: it never did). */
  readonly startedAt?: number;
  readonly endedAt?: number;
  /** Each stretch the registry showed the endpoint disabled, until the enabling that ended it. */
  readonly disabled: readonly DisabledInterval[];
  /** When the run ended: a stretch still open ends here. */
  readonly endAt: number;
  /** Every delivery seen parked (by delivery key): its `parkedAt` and the last time it was seen parked with it. */
  readonly parked: ReadonlyMap<string, ParkedSighting>;
}

export interface ParkedSighting {
  readonly parkedAt: number;
  readonly lastSeenAt: number;
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
  const letterEndpoint = (letter: DeadLetter) => letter.endpoint ?? (single ? DEFAULT_SOAK_ENDPOINT.name : undefined);

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

  const sum = (field: 'keyMismatches' | 'changedBodies' | 'unplanned' | 'badSignatures' | 'unsubscribed' | 'unauthorized' | 'refusedHandshakes') =>
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
    .filter((row) => row.attempts > row.maxAttempts)
    .map((row) => `${deliveryKey(row.eventId, row.endpoint)}: ${row.attempts} attempts`);

  const bodies = new Map(plan.events.map((event) => [event.id, event.body]));
  const letterKey = (eventId: string, endpoint: string | undefined, reason: string | undefined) => `${eventId}\u0000${endpoint}\u0000${reason}`;
  const lettered = new Set(observed.deadLetters.map((letter) => letterKey(letter.eventId ?? '', letterEndpoint(letter), letter.reason)));
  const deadNotLettered = observed.rows
    .filter((row) => row.state === 'dead')
    .filter((row) => !lettered.has(letterKey(row.eventId, row.endpoint, row.deadReason)))
    .map((row) => `${deliveryKey(row.eventId, row.endpoint)}: dead (${row.deadReason}), no such dead letter`);
  // docs/contract.md §4: a dead letter is the body of the message that died, unchanged: the
  // producer's, or the canonical body the ledger stored for a message handoff made again from the
  // row (a release after parking, stuck-work recovery, an ordered event's turn). Nothing else.
  const stored = new Map(observed.rows.map((row) => [deliveryKey(row.eventId, row.endpoint), row.body]));
  const changedLetters = observed.deadLetters
    .filter((letter) => letter.reason !== undefined && letter.eventId !== undefined && bodies.has(letter.eventId))
    .filter((letter) => !isPlannedConflict(plan, letter))
    .filter((letter) => letter.body !== bodies.get(letter.eventId!) && letter.body !== stored.get(deliveryKey(letter.eventId!, letterEndpoint(letter) ?? '')))
    .map((letter) => `${letter.eventId} → ${letterEndpoint(letter) ?? '(no endpoint attribute)'}: dead letter (${letter.reason}) whose body is neither the producer's nor the stored one`);

  // A dead letter without a reason is a message SQS's redrive (maxReceiveCount, the backstop) moved
  // to the redrive queue more often than recovery sends one back (docs/contract.md §12, stuck work).
  const redriven = observed.deadLetters
    .filter((letter) => letter.reason === undefined)
    .map((letter) => {
      const eventId = eventIdOf(letter.body);
      const routed = planned.filter((d) => d.eventId === eventId).map((d) => `${d.endpoint} ${ended(rowOf(d))}`);
      return `${eventId ?? '(unreadable body)'}: redriven by the queue until recovery gave up; its deliveries: ${routed.join(', ') || 'none'}`;
    });

  const letteredNotDead = observed.deadLetters
    .filter((letter) => letter.reason !== undefined && !isPlannedConflict(plan, letter))
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
  const maxBudget = Math.max(observed.maxAttempts, ...observed.rows.map((row) => row.maxAttempts));
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
      name: 'requests refused by their lock (no valid token, no client certificate of the CA)',
      violations: sum('unauthorized') + sum('refusedHandshakes'),
      detail: `${sum('unauthorized')} without a valid token, ${sum('refusedHandshakes')} handshakes refused for the certificate`,
      examples: [],
    },
    ...(observed.tokens === undefined
      ? []
      : [
          {
            name: 'token fetches beyond one per worker per token lifetime, or refused',
            violations: Math.max(0, observed.tokens.fetches - observed.tokens.bound) + observed.tokens.refusals,
            detail: `${observed.tokens.fetches} tokens fetched (at most ${observed.tokens.bound}), ${observed.tokens.refusals} refused`,
            examples: [],
          },
        ]),
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
    invariant(
      'attempts over budget',
      overBudget,
      `at most ${maxSeen} attempts; budget ${observed.maxAttempts}${maxBudget > observed.maxAttempts ? ` (an endpoint's own: up to ${maxBudget})` : ''}`,
    ),
    invariant(
      'dead deliveries missing from the dead-letter queue',
      deadNotLettered,
      `${observed.deadLetters.length} dead letters (duplicates allowed), matched on event, endpoint and reason`,
    ),
    invariant('dead letters whose body is not the original (docs/contract.md §4)', changedLetters, "each compared with the producer's body and the ledger's"),
    invariant('dead letters for deliveries that are not dead', letteredNotDead, 'the ledger is the authority'),
    invariant(
      "messages the queue's redrive kept moving until recovery dead-lettered them",
      redriven,
      'the backstop (maxReceiveCount) must not fire: each receive of a message is an attempt, a hold or a crash',
    ),
    {
      name: 'messages left on the delivery queue',
      violations: observed.queueDepth,
      detail: `${observed.queueDepth} left`,
      examples: [],
    },
    pausedAttempts(observed),
    ...(endpointsOf(plan).some((endpoint) => endpoint.ordered === true) ? orderingInvariants(plan, observed) : []),
    ...(plan.forged !== undefined ? [forgedInvariant(plan, observed)] : []),
    ...(plan.conflicts !== undefined ? reusedIdInvariants(plan, observed) : []),
    ...(observed.outage !== undefined ? outageInvariants(plan, observed, observed.outage) : []),
  ];
}

/** Attempts at an endpoint (each row's history, each receiver's arrivals) inside a window (exclusive). */
function attemptsWithin(observed: Observed, endpoint: string, from: number, to: number) {
  const ledger = observed.rows
    .filter((row) => row.endpoint === endpoint)
    .flatMap((row) => row.history.filter((h) => h.at > from && h.at < to).map((h) => ({ row, at: h.at, attempt: h.attempt })));
  const requests = (observed.receivers.find((r) => r.endpoint === endpoint)?.requestTimes ?? []).filter((t) => t > from && t < to);
  return { ledger, requests };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * No attempt starts while a pause holds the endpoint (docs/contract.md §12): after each 429 a
 * receiver wrote (at `at`, `Retry-After` s), neither the ledger nor the receiver shows an attempt
 * between the registry grace and the pause's end. A pause no longer than the grace checks nothing.
 */
function pausedAttempts(observed: Observed): Invariant {
  const grace = observed.registryGraceMs ?? 0;
  const offenders: string[] = [];
  let pauses = 0;
  let checked = 0;
  let latest = 0;
  const seen = new Set<string>();
  for (const receiver of observed.receivers) {
    for (const pause of receiver.pauses) {
      pauses += 1;
      const from = pause.at + grace;
      const to = pause.at + pause.seconds * 1000;
      const early = (receiver.requestTimes ?? []).filter((t) => t > pause.at && t < Math.min(from, to));
      latest = Math.max(latest, ...early.map((t) => t - pause.at));
      if (from >= to) continue;
      checked += 1;
      const { ledger, requests } = attemptsWithin(observed, receiver.endpoint, from, to);
      for (const a of ledger) {
        const key = `${deliveryKey(a.row.eventId, a.row.endpoint)}#${a.attempt}@${a.at}`;
        if (seen.has(key)) continue;
        seen.add(key);
        offenders.push(`${deliveryKey(a.row.eventId, a.row.endpoint)}: attempt ${a.attempt} at ${iso(a.at)}, paused ${iso(pause.at)} for ${pause.seconds} s`);
      }
      for (const t of requests) {
        const key = `${receiver.endpoint}@${t}`;
        if (seen.has(key)) continue;
        seen.add(key);
        offenders.push(`${receiver.endpoint}: a request at ${iso(t)}, paused ${iso(pause.at)} for ${pause.seconds} s`);
      }
    }
  }
  return invariant(
    'attempts while a pause held the endpoint',
    offenders,
    `${pauses} pause(s) asked for, ${checked} longer than the ${grace} ms registry grace and checked (ledger attempts and receiver requests); ` +
      `within the grace, the latest request ${latest} ms after a pause began`,
  );
}

/**
 * The outage's invariants (./outage.ts): the endpoint was disabled by the consumers while it was
 * down, and only then; no attempt while it was disabled (past the registry grace) nor while a
 * delivery was parked; nothing of it dead-lettered that was planned to be delivered.
 */
function outageInvariants(plan: SoakPlan, observed: Observed, outage: OutageObserved): Invariant[] {
  const grace = observed.registryGraceMs ?? 0;
  const { endpoint } = outage;
  const planned = new Map(deliveriesOf(plan).map((d) => [deliveryKey(d.eventId, d.endpoint), d]));
  const rows = new Map(observed.rows.map((row) => [deliveryKey(row.eventId, row.endpoint), row]));

  const neverDisabled =
    outage.disabled.length === 0
      ? [`${endpoint}: down from ${outage.startedAt !== undefined ? iso(outage.startedAt) : '(never)'}, never disabled`]
      : [];

  // Disabled while its receiver answered. While it was down (plus the grace: failures of attempts
  // sent just before it came back), the outage explains it. After it was back, the rule
  // (docs/contract.md §12) explains it only when its run without an accepted request began after
  // the receiver came back and after the last enabling before it (its remaining deliveries all
  // failing: planned to exhaust, say); a run carried over from before is the outage's failures
  // disabling it again.
  const down = (at: number) => outage.startedAt !== undefined && at >= outage.startedAt && (outage.endedAt === undefined || at <= outage.endedAt + grace);
  const lastEnableBefore = (at: number) => Math.max(0, ...outage.disabled.map((d) => d.until ?? 0).filter((until) => until <= at));
  const justified = (d: DisabledInterval) =>
    outage.endedAt !== undefined &&
    d.at > outage.endedAt &&
    d.noAcceptedSince !== undefined &&
    d.noAcceptedSince >= Math.max(outage.endedAt, lastEnableBefore(d.at));
  const afterwards = outage.disabled.filter((d) => !down(d.at));
  const disabledWhileUp = afterwards
    .filter((d) => !justified(d))
    .map(
      (d) =>
        `${endpoint}: disabled at ${iso(d.at)} by ${d.by} (${d.reason}); no accepted request since ${d.noAcceptedSince !== undefined ? iso(d.noAcceptedSince) : '(unknown)'}, ` +
        `last enabled ${lastEnableBefore(d.at) > 0 ? iso(lastEnableBefore(d.at)) : '-'}; its receiver was down ${outage.startedAt !== undefined ? iso(outage.startedAt) : '-'} to ${outage.endedAt !== undefined ? iso(outage.endedAt) : '-'}`,
    );

  const whileDisabled: string[] = [];
  let inGrace = 0;
  let latest = 0;
  let ledgerCount = 0;
  let requestCount = 0;
  for (const d of outage.disabled) {
    const until = d.until ?? outage.endAt;
    const within = attemptsWithin(observed, endpoint, d.at - 1, Math.min(until, d.at + grace) + 1).requests;
    inGrace += within.length;
    latest = Math.max(latest, ...within.map((t) => t - d.at));
    const { ledger, requests } = attemptsWithin(observed, endpoint, d.at + grace, until);
    ledgerCount += ledger.length;
    requestCount += requests.length;
    for (const a of ledger) {
      whileDisabled.push(`${deliveryKey(a.row.eventId, a.row.endpoint)}: attempt ${a.attempt} at ${iso(a.at)}, disabled ${iso(d.at)} to ${iso(until)}`);
    }
    for (const t of requests) whileDisabled.push(`${endpoint}: a request at ${iso(t)}, disabled ${iso(d.at)} to ${iso(until)}`);
  }

  const whileParked: string[] = [];
  for (const [key, sighting] of outage.parked) {
    const row = rows.get(key);
    for (const h of row?.history ?? []) {
      if (h.at >= sighting.parkedAt && h.at <= sighting.lastSeenAt) {
        whileParked.push(`${key}: attempt ${h.attempt} at ${iso(h.at)}, parked ${iso(sighting.parkedAt)} and still at ${iso(sighting.lastSeenAt)}`);
      }
    }
  }

  const outageLetters = observed.deadLetters
    .filter((letter) => letter.endpoint === endpoint && letter.eventId !== undefined)
    .filter((letter) => planned.get(deliveryKey(letter.eventId!, endpoint))?.fate === 'deliver')
    .map((letter) => `${deliveryKey(letter.eventId!, endpoint)}: dead letter (${letter.reason}), planned to be delivered`);

  const released = [...outage.parked.keys()].filter((key) => rows.get(key)?.parkedAt === undefined).length;
  return [
    invariant('outage: the endpoint was never disabled', neverDisabled, `${outage.disabled.length} disabling(s) seen`),
    invariant(
      'outage: disabled again by failures from before it was back and enabled',
      disabledWhileUp,
      `${outage.disabled.length - afterwards.length} disabling(s) while down; ${afterwards.length - disabledWhileUp.length} after it by a run of failures begun since (the rule)`,
    ),
    {
      ...invariant('outage: attempts while the endpoint was disabled', whileDisabled, ''),
      detail: `${ledgerCount} ledger attempts, ${requestCount} receiver requests past the ${grace} ms grace; ${inGrace} request(s) within it, the latest ${latest} ms after a disabling`,
    },
    invariant(
      'outage: attempts while a delivery was parked',
      whileParked,
      `${outage.parked.size} deliveries seen parked, ${released} no longer parked at the end`,
    ),
    invariant('outage: its deliveries dead-lettered though planned to be delivered', outageLetters, `${endpoint}'s deliveries park, never exhaust`),
  ];
}

/**
 * Per-shipment ordering (docs/contract.md §13), at each endpoint ordered per shipment, per shipment,
 * with the rows' `sequence` as the admission order:
 * - no request for an event before every earlier-admitted event of its shipment was settled: its
 *   last request answered 2xx (delivered), or its row dead and its turn passed (`releasedAt`: onDead
 *   continue), whichever it ended as;
 * - every request carries `webhook-sequence` equal to its row's `sequence` (and none at an
 *   unordered endpoint, whose rows have no `sequence`);
 * - a shipment's sequences at the endpoint are exactly 1..n, n its planned deliveries there;
 * - for a shipment sent to the ordered intake (FIFO), the sequences follow its send order.
 */
function orderingInvariants(plan: SoakPlan, observed: Observed): Invariant[] {
  const ordered = new Set(endpointsOf(plan).filter((endpoint) => endpoint.ordered === true).map((endpoint) => endpoint.name));
  const rows = new Map(observed.rows.map((row) => [deliveryKey(row.eventId, row.endpoint), row]));
  const events = new Map(plan.events.map((event) => [event.id, event]));
  const shipmentOf = (eventId: string) => events.get(eventId)?.shipmentId ?? eventId;
  /** Planned deliveries at each ordered endpoint, by shipment (in plan order). */
  const groups = new Map<string, { endpoint: string; shipmentId: string; eventIds: string[] }>();
  for (const d of deliveriesOf(plan)) {
    if (!ordered.has(d.endpoint)) continue;
    const key = `${d.endpoint}\u0000${shipmentOf(d.eventId)}`;
    const group = groups.get(key) ?? { endpoint: d.endpoint, shipmentId: shipmentOf(d.eventId), eventIds: [] };
    group.eventIds.push(d.eventId);
    groups.set(key, group);
  }
  const logs = new Map(observed.receivers.filter((r) => ordered.has(r.endpoint)).map((r) => [r.endpoint, r.log ?? []]));
  const requestsOf = new Map<string, LoggedRequest[]>();
  for (const [endpoint, log] of logs) {
    for (const request of log) {
      const key = deliveryKey(request.eventId, endpoint);
      const list = requestsOf.get(key) ?? [];
      list.push(request);
      requestsOf.set(key, list);
    }
  }

  // (1) Sent only once every earlier-admitted event of the shipment was settled.
  const early: string[] = [];
  let pairs = 0;
  for (const group of groups.values()) {
    const admitted = group.eventIds
      .map((eventId) => ({ eventId, row: rows.get(deliveryKey(eventId, group.endpoint)) }))
      .filter((e) => e.row?.sequence !== undefined)
      .sort((a, b) => a.row!.sequence! - b.row!.sequence!);
    admitted.forEach((later, i) => {
      const own = requestsOf.get(deliveryKey(later.eventId, group.endpoint)) ?? [];
      if (own.length === 0) return;
      const first = Math.min(...own.map((r) => r.arrivedAt));
      for (const earlier of admitted.slice(0, i)) {
        pairs += 1;
        const where = `${deliveryKey(later.eventId, group.endpoint)} (#${later.row!.sequence}, shipment ${group.shipmentId})`;
        const before = `#${earlier.row!.sequence} ${earlier.eventId}`;
        const theirs = requestsOf.get(deliveryKey(earlier.eventId, group.endpoint)) ?? [];
        const last = theirs.reduce<LoggedRequest | undefined>((a, r) => (a === undefined || r.arrivedAt >= a.arrivedAt ? r : a), undefined);
        if (earlier.row!.state === 'dead') {
          const passed = earlier.row!.releasedAt;
          if (passed === undefined) early.push(`${where}: sent at ${iso(first)}, while ${before} is dead without passing its turn`);
          else if (first < passed) early.push(`${where}: sent at ${iso(first)}, before ${before} died and passed its turn at ${iso(passed)}`);
          continue;
        }
        if (last === undefined) {
          early.push(`${where}: sent at ${iso(first)}; ${before} (${earlier.row!.state}) never sent`);
        } else if (last.answeredAt === undefined || last.status === undefined || last.status < 200 || last.status > 299) {
          early.push(`${where}: sent at ${iso(first)}; the last request for ${before} (at ${iso(last.arrivedAt)}) was answered ${last.status ?? 'never'}`);
        } else if (first < last.answeredAt) {
          early.push(`${where}: sent at ${iso(first)}, before the last request for ${before} was answered ${last.status} at ${iso(last.answeredAt)}`);
        }
      }
    });
  }

  // (2) webhook-sequence equal to the row's sequence; none at an unordered endpoint.
  const wrongHeader: string[] = [];
  let logged = 0;
  for (const [endpoint, log] of logs) {
    for (const request of log) {
      logged += 1;
      const row = rows.get(deliveryKey(request.eventId, endpoint));
      const expected = row?.sequence === undefined ? undefined : String(row.sequence);
      if (request.sequence !== expected || expected === undefined) {
        wrongHeader.push(`${deliveryKey(request.eventId, endpoint)}: webhook-sequence ${request.sequence ?? '(none)'} at ${iso(request.arrivedAt)}, its row's sequence ${expected ?? '(none)'}`);
      }
    }
  }
  for (const receiver of observed.receivers) {
    if (!ordered.has(receiver.endpoint) && receiver.withSequence > 0) {
      wrongHeader.push(`${receiver.endpoint}: ${receiver.withSequence} request(s) with a webhook-sequence at an unordered endpoint`);
    }
  }

  // (3) A shipment's sequences are exactly 1..n; rows of unordered endpoints have none. A shipment
  // sent c reused IDs (identity conflicts, each giving up the number it took) may skip up to c
  // numbers: its sequences are distinct, within 1..n+c, and its events were first accepted (2xx) in
  // the order of their numbers.
  const notOneToN: string[] = [];
  const reusedIn = new Map<string, number>();
  for (const conflict of plan.conflicts ?? []) {
    for (const endpoint of conflict.endpoints) {
      if (!ordered.has(endpoint)) continue;
      const key = `${endpoint}\u0000${conflict.shipmentId}`;
      reusedIn.set(key, (reusedIn.get(key) ?? 0) + 1);
    }
  }
  let skipping = 0;
  for (const [key, group] of groups) {
    const sequences = group.eventIds.map((eventId) => rows.get(deliveryKey(eventId, group.endpoint))?.sequence);
    const sorted = sequences.filter((n): n is number => n !== undefined).sort((a, b) => a - b);
    const reused = reusedIn.get(key) ?? 0;
    if (reused > 0) skipping += 1;
    const accepted = group.eventIds
      .map((eventId) => ({ eventId, sequence: rows.get(deliveryKey(eventId, group.endpoint))?.sequence, at: firstAccepted(requestsOf.get(deliveryKey(eventId, group.endpoint))) }))
      .filter((e): e is { eventId: string; sequence: number; at: number } => e.at !== undefined && e.sequence !== undefined)
      .sort((a, b) => a.at - b.at);
    const exact =
      sorted.length === group.eventIds.length &&
      (reused === 0
        ? sorted.every((n, i) => n === i + 1)
        : sorted.every((n, i) => n >= 1 && n <= group.eventIds.length + reused && (i === 0 || n > sorted[i - 1]!)) &&
          accepted.every((e, i) => i === 0 || e.sequence > accepted[i - 1]!.sequence));
    if (!exact) {
      notOneToN.push(
        `${group.endpoint}, shipment ${group.shipmentId}: sequences [${sequences.map((n) => n ?? '-').join(', ')}] of its ${group.eventIds.length} event(s) (${group.eventIds.join(', ')})` +
          (reused > 0 ? `, ${reused} reused ID(s) sent to it; accepted in the order ${accepted.map((e) => `#${e.sequence}`).join(', ')}` : ''),
      );
    }
  }
  for (const row of observed.rows) {
    if (!ordered.has(row.endpoint) && row.sequence !== undefined) {
      notOneToN.push(`${deliveryKey(row.eventId, row.endpoint)}: sequence ${row.sequence} at an unordered endpoint`);
    }
  }

  // (4) The ordered intake: a shipment's numbers in the order its events were first sent.
  const firstSent = new Map<string, number>();
  plan.sendOrder.forEach((body, index) => {
    const id = eventIdOf(body);
    if (id !== undefined && !firstSent.has(id)) firstSent.set(id, index);
  });
  const outOfSendOrder: string[] = [];
  let fifoShipments = 0;
  for (const group of groups.values()) {
    if (events.get(group.eventIds[0]!)?.intake !== 'ordered') continue;
    fifoShipments += 1;
    const bySend = [...group.eventIds].sort((a, b) => (firstSent.get(a) ?? 0) - (firstSent.get(b) ?? 0));
    const numbers = bySend.map((eventId) => rows.get(deliveryKey(eventId, group.endpoint))?.sequence);
    if (numbers.some((n, i) => n === undefined || (i > 0 && n <= numbers[i - 1]!))) {
      outOfSendOrder.push(`${group.endpoint}, shipment ${group.shipmentId}: sent ${bySend.join(', ')}; numbered ${numbers.map((n) => n ?? '-').join(', ')}`);
    }
  }

  // (5) Dead letters: at the ordered endpoint each says its shipment continued (onDead continue);
  // elsewhere none says anything of ordering.
  const lettersOrdered = observed.deadLetters.filter((letter) => letter.reason !== undefined && letter.endpoint !== undefined && ordered.has(letter.endpoint));
  // A reused ID's identity conflict is not the event's own death: it says nothing of ordering.
  const wrongLetters = observed.deadLetters
    .filter((letter) => letter.reason !== undefined && letter.endpoint !== undefined)
    .filter((letter) =>
      ordered.has(letter.endpoint!) && !isPlannedConflict(plan, letter) ? letter.ordering !== 'continued' : letter.ordering !== undefined,
    )
    .map((letter) => `${letter.eventId ?? '(no eventId)'} → ${letter.endpoint}: dead letter (${letter.reason}) with ordering ${letter.ordering ?? '(none)'}`);

  const shipments = groups.size;
  const names = [...ordered].join(', ');
  return [
    invariant(
      'ordering: a request before an earlier-admitted event of its shipment was settled',
      early,
      `${shipments} shipment(s) at ${names}; ${pairs} (event, earlier event) pairs checked against ${logged} requests`,
    ),
    invariant('ordering: webhook-sequence differs from the row\'s sequence', wrongHeader, `${logged} requests at ${names} checked; unordered endpoints: none expected`),
    invariant(
      'ordering: a shipment\'s sequences are not exactly 1..n',
      notOneToN,
      `${shipments} shipment(s), ${[...groups.values()].reduce((n, g) => n + g.eventIds.length, 0)} deliveries` +
        (skipping > 0 ? `; ${skipping} sent a reused ID: increasing within 1..n+reused, accepted in that order` : ''),
    ),
    invariant('ordering: the ordered intake\'s numbers not in its send order', outOfSendOrder, `${fifoShipments} shipment(s) sent to the FIFO intake`),
    invariant(
      'ordering: dead letters not saying their shipment continued (onDead continue)',
      wrongLetters,
      `${lettersOrdered.length} dead letter(s) at ${names} (ordering=continued, a reused ID's none); none expected elsewhere`,
    ),
  ];
}

/** When a delivery's first 2xx answer was written (undefined: none). */
function firstAccepted(requests: readonly LoggedRequest[] | undefined): number | undefined {
  const times = (requests ?? []).filter((r) => r.status !== undefined && r.status >= 200 && r.status <= 299 && r.answeredAt !== undefined).map((r) => r.answeredAt!);
  return times.length > 0 ? Math.min(...times) : undefined;
}

/** The planned reused ID a dead letter is the identity conflict of (its ID, its body, reason `identity-conflict`). */
function plannedConflictOf(plan: SoakPlan, letter: DeadLetter): PlannedConflict | undefined {
  if (letter.reason !== 'identity-conflict') return undefined;
  return plan.conflicts?.find((conflict) => conflict.eventId === letter.eventId && conflict.body === letter.body);
}

function isPlannedConflict(plan: SoakPlan, letter: DeadLetter): boolean {
  return plannedConflictOf(plan, letter) !== undefined;
}

/**
 * Messages with unsealed control attributes (plan.forged) are the same messages without them
 * (lib/queue/seal.ts): each forged message's event has, at every endpoint it is routed to, its
 * planned end (delivered and applied once, or dead as planned) and, at the ordered endpoint, a
 * number; no row and no request at any endpoint it is not routed to. (The ordering invariants judge
 * its shipment's order and numbers with the rest.)
 */
function forgedInvariant(plan: SoakPlan, observed: Observed): Invariant {
  const forged = plan.forged ?? [];
  const ids = new Set(forged.map((f) => f.eventId));
  const planned = deliveriesOf(plan).filter((d) => ids.has(d.eventId));
  const plannedKeys = new Set(planned.map((d) => deliveryKey(d.eventId, d.endpoint)));
  const rows = new Map(observed.rows.map((row) => [deliveryKey(row.eventId, row.endpoint), row]));
  const effects = new Map(observed.receivers.map((r) => [r.endpoint, r.effects]));
  const ordered = new Set(endpointsOf(plan).filter((e) => e.ordered === true).map((e) => e.name));
  const kindsOf = (eventId: string) => [...new Set(forged.filter((f) => f.eventId === eventId).map((f) => f.kind))].join('+');
  const offenders: string[] = [];
  for (const d of planned) {
    const key = deliveryKey(d.eventId, d.endpoint);
    const row = rows.get(key);
    const expected = EXPECTED_END[d.fate];
    const applied = effects.get(d.endpoint)?.get(d.eventId) ?? 0;
    const wrong =
      row === undefined
        ? 'no row'
        : row.state !== expected.state || row.deadReason !== expected.reason
          ? `${row.state}${row.deadReason ? ` (${row.deadReason})` : ''}, expected ${expected.reason ? `dead (${expected.reason})` : expected.state}`
          : expected.state === 'delivered' && applied !== 1
            ? `applied ${applied} times`
            : ordered.has(d.endpoint) && row.sequence === undefined
              ? 'no sequence at the ordered endpoint'
              : undefined;
    if (wrong !== undefined) offenders.push(`${key} (forged: ${kindsOf(d.eventId)}): ${wrong}`);
  }
  for (const row of observed.rows) {
    const key = deliveryKey(row.eventId, row.endpoint);
    if (ids.has(row.eventId) && !plannedKeys.has(key)) offenders.push(`${key} (forged: ${kindsOf(row.eventId)}): a row (${row.state}) where it is not routed`);
  }
  for (const receiver of observed.receivers) {
    for (const eventId of receiver.unsubscribedIds ?? []) {
      if (ids.has(eventId)) offenders.push(`${deliveryKey(eventId, receiver.endpoint)} (forged: ${kindsOf(eventId)}): a request where it is not routed`);
    }
  }
  const toFifo = forged.filter((f) => f.intake === 'ordered').length;
  return invariant(
    'forged control attributes: an event that carried them not delivered exactly as planned',
    offenders,
    `${forged.length} forged message(s) (${toFifo} to the ordered intake) of ${ids.size} event(s), ${planned.length} deliveries: planned end, applied once, numbered, nothing elsewhere`,
  );
}

/**
 * Reused IDs (plan.conflicts): each conflicting message is dead-lettered `identity-conflict`, its own
 * body, at each endpoint of the original (routed alike, it meets the original's row there), and no
 * receiver ever gets it; no other identity conflict happens (the original never is one). The
 * original's rows are its own: its content hash, and at the ordered endpoint its shipment.
 */
function reusedIdInvariants(plan: SoakPlan, observed: Observed): Invariant[] {
  const conflicts = plan.conflicts ?? [];
  const letterKey = (eventId: string | undefined, endpoint: string | undefined, body: string) => `${eventId}\u0000${endpoint}\u0000${body}`;
  const conflictLetters = observed.deadLetters.filter((letter) => letter.reason === 'identity-conflict');
  const lettered = new Set(conflictLetters.map((letter) => letterKey(letter.eventId, letter.endpoint, letter.body)));
  const offenders: string[] = [];
  for (const conflict of conflicts) {
    for (const endpoint of conflict.endpoints) {
      if (!lettered.has(letterKey(conflict.eventId, endpoint, conflict.body))) {
        offenders.push(`${deliveryKey(conflict.eventId, endpoint)} (reused by shipment ${conflict.shipmentId}): no identity-conflict dead letter with its body`);
      }
    }
  }
  for (const letter of conflictLetters) {
    if (!isPlannedConflict(plan, letter)) {
      const shipmentId = (() => {
        try {
          return (JSON.parse(letter.body) as { shipmentId?: string }).shipmentId;
        } catch {
          return undefined;
        }
      })();
      offenders.push(`${letter.eventId ?? '(no eventId)'} → ${letter.endpoint ?? '(no endpoint)'}: an identity conflict not planned (its body's shipment ${shipmentId ?? '?'})`);
    }
  }
  let reached = 0;
  for (const receiver of observed.receivers) {
    for (const eventId of receiver.conflicting ?? []) {
      reached += 1;
      offenders.push(`${deliveryKey(eventId, receiver.endpoint)}: the reused ID's message reached the receiver`);
    }
  }

  const bodies = new Map(plan.events.map((event) => [event.id, event.body]));
  const ordered = new Set(endpointsOf(plan).filter((e) => e.ordered === true).map((e) => e.name));
  const rows = new Map(observed.rows.map((row) => [deliveryKey(row.eventId, row.endpoint), row]));
  const changed: string[] = [];
  let checked = 0;
  for (const conflict of conflicts) {
    const original = parseEvent(bodies.get(conflict.eventId) ?? '');
    for (const endpoint of conflict.endpoints) {
      checked += 1;
      const key = deliveryKey(conflict.eventId, endpoint);
      const row = rows.get(key);
      const hash = original.ok ? original.value.contentHash : '(unparsable original)';
      if (row === undefined) changed.push(`${key}: no row`);
      else if (row.contentHash !== hash) changed.push(`${key}: content hash ${row.contentHash ?? '(none)'}, the original's ${hash}`);
      else if (row.body !== undefined && original.ok && row.body !== original.value.body) changed.push(`${key}: a stored body other than the original's`);
      else if (ordered.has(endpoint) && row.shipmentId !== conflict.originalShipmentId) {
        changed.push(`${key}: numbered for shipment ${row.shipmentId ?? '(none)'}, the original's is ${conflict.originalShipmentId}`);
      }
    }
  }
  const planned = conflicts.reduce((n, c) => n + c.endpoints.length, 0);
  return [
    invariant(
      'reused IDs: a conflicting message not dead-lettered identity-conflict, or reaching a receiver',
      offenders,
      `${conflicts.length} reused ID(s), ${planned} identity-conflict dead letter(s) expected; ${conflictLetters.length} found, ${reached} request(s) at a receiver`,
    ),
    invariant("reused IDs: the original event's row changed", changed, `${checked} row(s) of the originals: content hash, stored body, shipment`),
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
