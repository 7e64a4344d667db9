/**
 * Dead letters (docs/contract.md §17): the dead deliveries (GET /v1/dead, oldest death first, a page
 * at a time with "More"), filtered by endpoint, owner, time of death and reason, the filters kept in
 * the route (`#/dead?endpoint&owner&since&until&reason`) so a reload or a shared link shows the same.
 *
 * Replay works on a selection: rows picked one by one (or every row shown), each replayed on its own
 * (`POST /v1/replays {eventId, endpoint, reason}`); or everything matching the filter, as bulk
 * replays (`{endpoint, deadSince, until, deadReason}`, one per endpoint: the filter's, else each of
 * the owner's, else each endpoint's), which the API does a paced part at a time, `next` carrying on.
 * Before anything is done the page counts what would be replayed (a selection: its rows; all
 * matching: a dry run of the same bulk replays over the same window) and asks for a reason with that
 * count in the question; then it replays, showing how far it got, and says what came of it, the
 * API's own words for each refusal.
 *
 * In portal mode the owner is the portal's, fixed: the API answers only its endpoints' anyway.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { BulkReplayAnswer, Delivery, Endpoint } from '../../../api/client/types';
import { ApiError, actionKey, allPages, api, type Page } from '../api';
import { ReasonDialog } from '../components/dialog';
import { ErrorNote, FieldMessages } from '../components/notes';
import { formatCount, formatTime } from '../format';
import { useLoad } from '../hooks';
import { endpointHref, href, navigate } from '../routes';
import { useSession } from '../session-context';
import './dead-letters.css';

const FILTER_NAMES = ['endpoint', 'owner', 'since', 'until', 'reason'] as const;
type FilterName = (typeof FILTER_NAMES)[number];
type Filters = Partial<Record<FilterName, string>>;

/** Why a delivery died, as GET /v1/dead filters them (docs/contract.md §4). */
const REASONS = [
  { value: 'rejected', label: 'rejected: the receiver refused it' },
  { value: 'exhausted', label: 'exhausted: every attempt failed' },
  { value: 'invalid', label: 'invalid: not a valid event' },
] as const satisfies readonly { value: NonNullable<Delivery['deadReason']>; label: string }[];

/** Rows asked for per request (the API's largest page). */
const PAGE_LIMIT = 100;
/**
 * Requests one "More" makes at most while its pages come back empty: the owner and reason filters
 * are checked row by row, so a page may hold none and still have `next`.
 */
const EMPTY_PAGES_FOLLOWED = 10;
/** A bulk replay with no `since` filter starts here: every death the ledger still keeps. */
const BEGINNING = '1970-01-01T00:00:00Z';
/**
 * Replays per bulk request: well under the API's 100, so each part answers within a few seconds
 * (the API paces about 10 a second) and the progress shown moves as they do.
 */
const BULK_PART_LIMIT = 20;
/** The dry run's reason: the API asks one of every replay request, though a dry run writes nothing. */
const DRY_RUN_REASON = 'counting what a replay would send (dry run)';

const rowKey = (d: Delivery) => `${d.eventId} ${d.endpoint}`;

export function DeadLettersPage({ filters: given }: { filters: Readonly<Record<string, string>> }) {
  const { portalOwner } = useSession();
  const filters: Filters = {};
  for (const name of FILTER_NAMES) if (given[name] !== undefined && given[name] !== '') filters[name] = given[name];
  if (portalOwner !== undefined) filters.owner = portalOwner;
  const filterKey = JSON.stringify(filters);

  const list = useDeadList(filters, filterKey);
  const endpoints = useLoad(() => allPages<Endpoint>('/v1/endpoints', { owner: filters.owner }), [filters.owner]);

  const [selected, setSelected] = useState<ReadonlyMap<string, Delivery>>(new Map());
  const [allMatching, setAllMatching] = useState(false);
  const [plan, setPlan] = useState<ReplayPlan | undefined>(undefined);
  const [counting, setCounting] = useState<string | undefined>(undefined);
  const [countError, setCountError] = useState<Error | undefined>(undefined);
  const [progress, setProgress] = useState<{ done: number; total: number } | undefined>(undefined);
  const [outcome, setOutcome] = useState<ReplayOutcome | undefined>(undefined);
  useEffect(() => {
    setSelected(new Map());
    setAllMatching(false);
    setCountError(undefined);
  }, [filterKey]);

  const rows = list.items;
  const allOnPage = rows.length > 0 && rows.every((d) => selected.has(rowKey(d)));
  const toggle = (delivery: Delivery, on: boolean) => {
    const next = new Map(selected);
    if (on) next.set(rowKey(delivery), delivery);
    else next.delete(rowKey(delivery));
    setSelected(next);
  };

  const startReplay = async () => {
    setOutcome(undefined);
    setCountError(undefined);
    if (!allMatching) {
      setPlan({ kind: 'selected', deliveries: [...selected.values()], count: selected.size });
      return;
    }
    if (filters.reason === 'invalid') {
      setCountError(new Error('Deliveries dead as invalid hold no event: there is nothing to send again.'));
      return;
    }
    try {
      setCounting('Counting what would be replayed…');
      const counted = await countAllMatching(filters, (text) => setCounting(text));
      if (counted.count === 0) {
        setCountError(new Error('The dry run found nothing to replay: no dead delivery with an event to send matches the filter now.'));
        return;
      }
      setPlan(counted);
    } catch (error) {
      setCountError(error instanceof Error ? error : new Error(String(error)));
    } finally {
      setCounting(undefined);
    }
  };

  const run = async (reason: string) => {
    if (plan === undefined) return;
    setProgress({ done: 0, total: plan.count });
    const result = await runReplay(plan, reason, (done) => setProgress({ done, total: plan.count }));
    setProgress(undefined);
    setOutcome(result);
    setSelected(new Map());
    setAllMatching(false);
    list.reload();
  };

  const selectionSize = allMatching ? undefined : selected.size;
  return (
    <>
      <h1 tabIndex={-1}>Dead letters</h1>
      <FilterForm filters={filters} portalOwner={portalOwner} endpointNames={endpoints.data?.map((e) => e.name) ?? []} error={list.error} />

      {outcome !== undefined ? <OutcomeNote outcome={outcome} /> : null}
      {progress !== undefined ? <Progress {...progress} /> : null}
      <ErrorNote error={list.error} />

      {rows.length === 0 && list.next === null && !allMatching ? null : (
        <div class="dead-toolbar" role="group" aria-label="Selection">
          <label class="check">
            <input
              type="checkbox"
              checked={allOnPage || (allMatching && rows.length > 0)}
              disabled={allMatching || rows.length === 0}
              onChange={(e) => setSelected(e.currentTarget.checked ? new Map(rows.map((d) => [rowKey(d), d])) : new Map())}
            />
            Select all on this page
          </label>
          <label class="check">
            <input type="checkbox" checked={allMatching} disabled={rows.length === 0 && list.next === null && !allMatching} onChange={(e) => setAllMatching(e.currentTarget.checked)} />
            All matching the filter
          </label>
          <span class="muted selection-size">
            {selectionSize === undefined ? 'every dead delivery the filter matches' : `${formatCount(selectionSize)} selected`}
          </span>
          <button
            type="button"
            class="primary"
            disabled={selectionSize === 0 || counting !== undefined || progress !== undefined}
            onClick={() => void startReplay()}
          >
            Replay…
          </button>
        </div>
      )}
      {counting !== undefined ? (
        <p class="muted" role="status">
          {counting}
        </p>
      ) : null}
      <ErrorNote error={countError} />

      <DeadTable rows={rows} selected={selected} allMatching={allMatching} onToggle={toggle} />
      {rows.length === 0 && !list.loading && list.error === undefined ? (
        <p class="muted" role="status">
          {list.next === null ? 'No dead delivery matches the filter.' : 'None found in the part read so far: More reads on.'}
        </p>
      ) : null}
      <div class="actions">
        {list.next !== null ? (
          <button type="button" onClick={list.more} disabled={list.loading}>
            More
          </button>
        ) : null}
        {list.loading ? (
          <span class="muted" role="status">
            Loading…
          </span>
        ) : null}
      </div>

      {plan !== undefined ? (
        <ReasonDialog
          title={`Replay ${formatCount(plan.count)} dead ${plan.count === 1 ? 'delivery' : 'deliveries'}?`}
          confirmLabel="Replay"
          onClose={() => setPlan(undefined)}
          onConfirm={run}
        >
          <PlanSummary plan={plan} />
          {progress !== undefined ? <Progress {...progress} /> : null}
        </ReasonDialog>
      ) : null}
    </>
  );
}

// The filters

function FilterForm({ filters, portalOwner, endpointNames, error }: { filters: Filters; portalOwner: string | undefined; endpointNames: readonly string[]; error: Error | undefined }) {
  // The times as the datetime-local inputs hold them (the reader's zone); the route keeps them in UTC.
  const drafted = (): Filters => ({ ...filters, since: localInputOf(filters.since), until: localInputOf(filters.until) });
  const [draft, setDraft] = useState<Filters>(drafted);
  const shown = JSON.stringify(filters);
  useEffect(() => setDraft(drafted()), [shown]); // eslint-disable-line react-hooks/exhaustive-deps
  const set = (name: FilterName, value: string) => setDraft({ ...draft, [name]: value });
  const submit = (event: Event) => {
    event.preventDefault();
    const query: Filters = {
      endpoint: draft.endpoint?.trim(),
      owner: portalOwner === undefined ? draft.owner?.trim() : undefined,
      since: isoOfLocalInput(draft.since ?? ''),
      until: isoOfLocalInput(draft.until ?? ''),
      reason: draft.reason,
    };
    navigate(href('/dead', query));
  };
  return (
    <form class="filters dead-filters" onSubmit={submit} aria-label="Filter dead deliveries">
      <label>
        Endpoint
        <input
          name="endpoint"
          list="dead-endpoint-names"
          value={draft.endpoint ?? ''}
          onInput={(e) => set('endpoint', e.currentTarget.value)}
          autocomplete="off"
          spellcheck={false}
          placeholder="any"
          aria-describedby="dead-endpoint-error"
        />
        <FieldMessages error={error} path="query.endpoint" id="dead-endpoint-error" />
      </label>
      <datalist id="dead-endpoint-names">
        {endpointNames.map((name) => (
          <option key={name} value={name} />
        ))}
      </datalist>
      <label>
        Owner
        {portalOwner === undefined ? (
          <input
            name="owner"
            value={draft.owner ?? ''}
            onInput={(e) => set('owner', e.currentTarget.value)}
            autocomplete="off"
            spellcheck={false}
            placeholder="any"
            aria-describedby="dead-owner-error"
          />
        ) : (
          <input name="owner" value={portalOwner} readOnly aria-readonly="true" />
        )}
        <FieldMessages error={error} path="query.owner" id="dead-owner-error" />
      </label>
      <label>
        Died since
        <input
          name="since"
          type="datetime-local"
          value={draft.since ?? ''}
          onInput={(e) => set('since', e.currentTarget.value)}
          aria-describedby="dead-since-error"
        />
        <FieldMessages error={error} path="query.since" id="dead-since-error" />
      </label>
      <label>
        Died before
        <input
          name="until"
          type="datetime-local"
          value={draft.until ?? ''}
          onInput={(e) => set('until', e.currentTarget.value)}
          aria-describedby="dead-until-error"
        />
        <FieldMessages error={error} path="query.until" id="dead-until-error" />
      </label>
      <label>
        {/* Named by its text alone: a select's options would otherwise be read into its label's name. */}
        <span id="dead-reason-label">Dead reason</span>
        <select name="reason" aria-labelledby="dead-reason-label" value={draft.reason ?? ''} onChange={(e) => set('reason', e.currentTarget.value)}>
          <option value="">any</option>
          {REASONS.map((reason) => (
            <option key={reason.value} value={reason.value}>
              {reason.label}
            </option>
          ))}
        </select>
      </label>
      <div class="filter-actions">
        <button type="submit" class="primary">
          Apply
        </button>
        <a href="#/dead">Clear</a>
      </div>
    </form>
  );
}

/** `2026-12-05T10:30` in the reader's zone, for a datetime-local input, from the route's ISO time. */
export function localInputOf(iso: string | undefined): string {
  if (iso === undefined || iso === '') return '';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return '';
  const two = (n: number) => String(n).padStart(2, '0');
  return `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())}T${two(at.getHours())}:${two(at.getMinutes())}`;
}

/** The route's form of a datetime-local value: an ISO time in UTC, which the API takes and any reader's zone reads alike. */
export function isoOfLocalInput(value: string): string | undefined {
  if (value === '') return undefined;
  // A date-time without a zone is the reader's local time.
  const at = new Date(value);
  return Number.isNaN(at.getTime()) ? undefined : at.toISOString();
}

// The list

interface DeadList {
  readonly items: readonly Delivery[];
  readonly next: string | null;
  readonly loading: boolean;
  readonly error: Error | undefined;
  readonly more: () => void;
  readonly reload: () => void;
}

/** The dead deliveries matching `filters`, a page at a time; a new filter starts again. */
function useDeadList(filters: Filters, filterKey: string): DeadList {
  const [items, setItems] = useState<readonly Delivery[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<Error | undefined>(undefined);
  const generation = useRef(0);

  const read = (cursor: string | null, before: readonly Delivery[]) => {
    const mine = ++generation.current;
    setLoading(true);
    (async () => {
      const found: Delivery[] = [];
      let at = cursor;
      let requests = 0;
      // Pages may come back empty with `next`: read on a little, so "More" is not a click that shows nothing.
      do {
        const page: Page<Delivery> = await api.get<Page<Delivery>>('/v1/dead', { ...filters, limit: PAGE_LIMIT, cursor: at });
        found.push(...page.items);
        at = page.next;
        requests += 1;
      } while (found.length === 0 && at !== null && requests < EMPTY_PAGES_FOLLOWED);
      return { found, at };
    })().then(
      ({ found, at }) => {
        if (mine !== generation.current) return;
        const seen = new Set(before.map(rowKey));
        setItems([...before, ...found.filter((d) => !seen.has(rowKey(d)))]);
        setNext(at);
        setError(undefined);
        setLoading(false);
      },
      (failure: unknown) => {
        if (mine !== generation.current) return;
        setError(failure instanceof Error ? failure : new Error(String(failure)));
        setLoading(false);
      },
    );
  };

  useEffect(() => {
    setItems([]);
    setNext(null);
    read(null, []);
  }, [filterKey]); // eslint-disable-line react-hooks/exhaustive-deps

  return {
    items,
    next,
    loading,
    error,
    more: () => {
      if (next !== null) read(next, items);
    },
    reload: () => read(null, []),
  };
}

function DeadTable(props: {
  rows: readonly Delivery[];
  selected: ReadonlyMap<string, Delivery>;
  allMatching: boolean;
  onToggle: (delivery: Delivery, on: boolean) => void;
}) {
  if (props.rows.length === 0) return null;
  return (
    <div class="table-wrap">
      <table class="dead">
        <caption class="sr-only">Dead deliveries, oldest death first</caption>
        <thead>
          <tr>
            <th scope="col">
              <span class="sr-only">Selected</span>
            </th>
            <th scope="col">Event</th>
            <th scope="col">Endpoint</th>
            <th scope="col">Reason</th>
            <th scope="col">Why</th>
            <th scope="col">Died</th>
            <th scope="col" class="num">
              Attempts
            </th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((d) => {
            const key = rowKey(d);
            return (
              <tr key={key}>
                <td>
                  <label class="check">
                    <input
                      type="checkbox"
                      checked={props.allMatching || props.selected.has(key)}
                      disabled={props.allMatching}
                      onChange={(e) => props.onToggle(d, e.currentTarget.checked)}
                    />
                    <span class="sr-only">
                      Select {d.eventId} to {d.endpoint}
                    </span>
                  </label>
                </td>
                <th scope="row" class="event">
                  <a href={href('/lookup', { id: d.eventId })}>{d.eventId}</a>
                </th>
                <td>
                  <a href={endpointHref(d.endpoint)}>{d.endpoint}</a>
                </td>
                <td>{d.deadReason !== undefined ? <span class="badge dead-reason">{d.deadReason}</span> : '—'}</td>
                <td class="why">{d.deadDetail ?? '—'}</td>
                <td>{formatTime(d.deadAt)}</td>
                <td class="num">
                  {d.attempts} of {d.maxAttempts}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

// Replaying

/** What a replay will do, as counted before the reason is asked. */
type ReplayPlan =
  | { readonly kind: 'selected'; readonly deliveries: readonly Delivery[]; readonly count: number }
  | {
      readonly kind: 'all';
      /** Each endpoint's bulk replay, with the dry run's count for it. */
      readonly parts: readonly { readonly endpoint: string; readonly matched: number }[];
      readonly deadSince: string;
      readonly until: string;
      readonly deadReason: 'rejected' | 'exhausted' | undefined;
      readonly count: number;
      /** Invalid messages' rows in the window: dead, with no event to send, so left out. */
      readonly withoutEvent: number;
    };

interface ReplayOutcome {
  readonly total: number;
  readonly replayed: number;
  /** Replayed or delivered by something else before their turn. */
  readonly noLongerDead: number;
  /** Pending again, but their message could not be sent. */
  readonly enqueueFailed: readonly string[];
  /** What the API refused, in its own words. */
  readonly refused: readonly { readonly what: string; readonly message: string }[];
}

/** The bulk replays "all matching the filter" makes, and a dry run's count of each. */
async function countAllMatching(filters: Filters, say: (text: string) => void): Promise<ReplayPlan> {
  const endpoints =
    filters.endpoint !== undefined
      ? [filters.endpoint]
      : (await allPages<Endpoint>('/v1/endpoints', { owner: filters.owner }, Number.MAX_SAFE_INTEGER)).map((e) => e.name);
  const deadSince = filters.since ?? BEGINNING;
  // The window's end is fixed now, so the replay sends what the dry run counted and no death after it.
  const until = filters.until ?? new Date().toISOString();
  const deadReason = filters.reason === 'rejected' || filters.reason === 'exhausted' ? filters.reason : undefined;
  const parts: { endpoint: string; matched: number }[] = [];
  let withoutEvent = 0;
  for (const [index, endpoint] of endpoints.entries()) {
    if (endpoints.length > 1) say(`Counting what would be replayed: endpoint ${index + 1} of ${endpoints.length}…`);
    let matched = 0;
    let cursor: string | null = null;
    do {
      const answer: BulkReplayAnswer = await api.post<BulkReplayAnswer>('/v1/replays', {
        endpoint,
        deadSince,
        until,
        ...(deadReason === undefined ? {} : { deadReason }),
        dryRun: true,
        reason: DRY_RUN_REASON,
        ...(cursor === null ? {} : { cursor }),
      });
      matched += answer.matched;
      withoutEvent += answer.withoutEvent;
      cursor = answer.next;
    } while (cursor !== null);
    if (matched > 0) parts.push({ endpoint, matched });
  }
  const count = parts.reduce((sum, part) => sum + part.matched, 0);
  return { kind: 'all', parts, deadSince, until, deadReason, count, withoutEvent };
}

function problemText(error: unknown): string {
  if (error instanceof ApiError) return [error.title, error.detail].filter((part) => part !== '').join(': ');
  return error instanceof Error ? error.message : String(error);
}

/** Runs the plan with the reason given, reporting how many are done as it goes. Refusals are collected, not thrown. */
async function runReplay(plan: ReplayPlan, reason: string, report: (done: number) => void): Promise<ReplayOutcome> {
  let replayed = 0;
  let noLongerDead = 0;
  let done = 0;
  const enqueueFailed: string[] = [];
  const refused: { what: string; message: string }[] = [];
  if (plan.kind === 'selected') {
    // One request each, one after another: each is a single replay with its own key.
    for (const d of plan.deliveries) {
      try {
        await api.post('/v1/replays', { eventId: d.eventId, endpoint: d.endpoint, reason }, { idempotencyKey: actionKey() });
        replayed += 1;
      } catch (error) {
        refused.push({ what: `${d.eventId} to ${d.endpoint}`, message: problemText(error) });
      }
      report(++done);
    }
    return { total: plan.count, replayed, noLongerDead, enqueueFailed, refused };
  }
  // Each endpoint's bulk replay, a paced part at a time, one part after another (parallel parts add up at the receivers).
  for (const part of plan.parts) {
    let cursor: string | null = null;
    try {
      do {
        const answer: BulkReplayAnswer = await api.post<BulkReplayAnswer>(
          '/v1/replays',
          {
            endpoint: part.endpoint,
            deadSince: plan.deadSince,
            until: plan.until,
            ...(plan.deadReason === undefined ? {} : { deadReason: plan.deadReason }),
            reason,
            limit: BULK_PART_LIMIT,
            ...(cursor === null ? {} : { cursor }),
          },
          { idempotencyKey: actionKey() },
        );
        replayed += answer.replayed;
        noLongerDead += answer.noLongerDead;
        enqueueFailed.push(...answer.enqueueFailed);
        done += answer.replayed + answer.noLongerDead;
        report(done);
        cursor = answer.next;
      } while (cursor !== null);
    } catch (error) {
      refused.push({ what: `the dead deliveries of ${part.endpoint}`, message: problemText(error) });
    }
  }
  return { total: plan.count, replayed, noLongerDead, enqueueFailed, refused };
}

function PlanSummary({ plan }: { plan: ReplayPlan }) {
  if (plan.kind === 'selected') {
    return (
      <p>
        {plan.count === 1 ? 'The selected delivery is' : `The ${formatCount(plan.count)} selected deliveries are each`} sent again
        now, with the same event ID and body, its attempts starting over. The reason is kept in each delivery's audit.
      </p>
    );
  }
  return (
    <>
      <p>
        A dry run counted {formatCount(plan.count)} dead {plan.count === 1 ? 'delivery' : 'deliveries'} matching the filter
        {plan.deadReason === undefined ? '' : ` (${plan.deadReason})`}, dead{' '}
        {plan.deadSince === BEGINNING ? `before ${formatTime(plan.until)}` : `from ${formatTime(plan.deadSince)} to ${formatTime(plan.until)}`}
        {plan.parts.length === 1 ? (
          <>
            , at <strong>{plan.parts[0]!.endpoint}</strong>
          </>
        ) : (
          `, at ${plan.parts.length} endpoints`
        )}
        . They are sent again paced (about 10 a second), each with its own audit entry of this reason.
      </p>
      {plan.parts.length > 1 ? (
        <ul class="plan-parts">
          {plan.parts.map((part) => (
            <li key={part.endpoint}>
              {part.endpoint}: {formatCount(part.matched)}
            </li>
          ))}
        </ul>
      ) : null}
      {plan.withoutEvent > 0 ? (
        <p class="muted">
          {formatCount(plan.withoutEvent)} invalid {plan.withoutEvent === 1 ? 'message is' : 'messages are'} left out: no event to send.
        </p>
      ) : null}
    </>
  );
}

function Progress({ done, total }: { done: number; total: number }) {
  return (
    <div class="notice replay-progress" role="status">
      <span>
        Replaying: {formatCount(done)} of {formatCount(total)}
      </span>
      <progress max={total} value={done} aria-hidden="true" />
    </div>
  );
}

function OutcomeNote({ outcome }: { outcome: ReplayOutcome }) {
  const failed = outcome.refused.length > 0 || outcome.enqueueFailed.length > 0;
  return (
    <div class={`dead-outcome ${failed ? 'error' : 'notice'}`} role="status">
      <p class="outcome-line">
        Replayed {formatCount(outcome.replayed)} of {formatCount(outcome.total)} dead {outcome.total === 1 ? 'delivery' : 'deliveries'}.
        {outcome.noLongerDead > 0 ? ` ${formatCount(outcome.noLongerDead)} no longer dead (replayed or delivered by something else first).` : ''}
      </p>
      {outcome.refused.length > 0 ? (
        <>
          <p class="outcome-line">Refused:</p>
          <ul>
            {outcome.refused.map((refusal, index) => (
              <li key={index}>
                {refusal.what}: {refusal.message}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {outcome.enqueueFailed.length > 0 ? (
        <p class="outcome-line">
          Pending again, but their message could not be sent (send these events again): {outcome.enqueueFailed.join(', ')}
        </p>
      ) : null}
    </div>
  );
}
