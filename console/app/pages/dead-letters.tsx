/**
 * Dead letters (docs/contract.md §17): the dead deliveries (GET /v1/dead, oldest death first, a page
 * at a time with "More"), filtered by endpoint, owner, time of death and reason, the filters kept in
 * the route (`#/dead?endpoint&owner&since&until&reason`) so a reload or a shared link shows the same.
 *
 * Replay works on a selection: rows picked one by one (or every row shown), or everything matching
 * the filter when the filter names an endpoint or an owner (replay.ts says how each is replayed).
 * Before anything is done the page counts what would be replayed (a selection: its rows; all
 * matching: a dry run of the same bulk replays over the same window) and asks for a reason with that
 * count in the question; then it replays, showing how far it got, and says what came of it, the
 * API's own words for each refusal.
 *
 * In portal mode the owner is the portal's, fixed: the API answers only its endpoints' anyway.
 */
import { useEffect, useState } from 'preact/hooks';
import type { Delivery, Endpoint } from '../../../api/client/types';
import { actionKeys, allPages, api, type Page } from '../api';
import { ReasonDialog } from '../components/dialog';
import { ErrorNote, FieldMessages } from '../components/notes';
import { toError } from '../errors';
import { formatCount, formatTime, isoOfLocalInput, localInputOf } from '../format';
import { useLoad, usePages } from '../hooks';
import {
  allMatchingAllowed,
  countAllMatching,
  runReplay,
  type ReplayCalls,
  type ReplayOutcome,
  type ReplayPlan,
} from '../replay';
import { endpointHref, href, navigate } from '../routes';
import { useSession } from '../session-context';
import { OutcomeNote, PlanSummary, Progress } from './dead-letters-replay';
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
/** The endpoint names the filter offers: the first pages of the list. */
const NAMES_OFFERED = 1000;

/** The API's calls a replay makes, as the page makes them. */
const REPLAY_CALLS: ReplayCalls = {
  replay: (body, idempotencyKey) => api.post('/v1/replays', body, idempotencyKey === undefined ? {} : { idempotencyKey }),
  endpointsOf: async (owner, max) => {
    const read = await allPages<Endpoint>('/v1/endpoints', { owner }, { maxItems: max + 1, maxRequests: Math.ceil((max + 1) / 100) });
    return { names: read.items.slice(0, max).map((e) => e.name), complete: read.next === null && read.items.length <= max };
  },
};

const rowKey = (d: Delivery) => `${d.eventId} ${d.endpoint}`;

export function DeadLettersPage({ filters: given }: { filters: Readonly<Record<string, string>> }) {
  const { portalOwner } = useSession();
  const filters: Filters = {};
  for (const name of FILTER_NAMES) if (given[name] !== undefined && given[name] !== '') filters[name] = given[name];
  if (portalOwner !== undefined) filters.owner = portalOwner;
  const filterKey = JSON.stringify(filters);

  const list = usePages((cursor) => api.get<Page<Delivery>>('/v1/dead', { ...filters, limit: PAGE_LIMIT, cursor }), [filterKey], {
    keyOf: rowKey,
    followEmpty: EMPTY_PAGES_FOLLOWED,
  });
  const endpoints = useLoad(
    async () => (await allPages<Endpoint>('/v1/endpoints', { owner: filters.owner }, { maxItems: NAMES_OFFERED, maxRequests: NAMES_OFFERED / 100 })).items,
    [filters.owner],
  );
  const canAllMatching = allMatchingAllowed(filters);

  const [selected, setSelected] = useState<ReadonlyMap<string, Delivery>>(new Map());
  const [allMatching, setAllMatching] = useState(false);
  // The plan asked about, with the Idempotency-Keys of this one opening of its dialog.
  const [plan, setPlan] = useState<{ plan: ReplayPlan; keyFor: (body: unknown) => string } | undefined>(undefined);
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
      setPlan({ plan: { kind: 'selected', deliveries: [...selected.values()], count: selected.size }, keyFor: actionKeys() });
      return;
    }
    if (filters.reason === 'invalid') {
      setCountError(new Error('Deliveries dead as invalid hold no event: there is nothing to send again.'));
      return;
    }
    try {
      setCounting('Counting what would be replayed…');
      const counted = await countAllMatching(filters, REPLAY_CALLS, (text) => setCounting(text));
      if (counted.count === 0) {
        setCountError(new Error('The dry run found nothing to replay: no dead delivery with an event to send matches the filter now.'));
        return;
      }
      setPlan({ plan: counted, keyFor: actionKeys() });
    } catch (error) {
      setCountError(toError(error));
    } finally {
      setCounting(undefined);
    }
  };

  const run = async (reason: string) => {
    if (plan === undefined) return;
    const total = plan.plan.count;
    setProgress({ done: 0, total });
    const result = await runReplay(plan.plan, reason, REPLAY_CALLS, plan.keyFor, (done) => setProgress({ done, total }));
    setProgress(undefined);
    setOutcome(result);
    list.reload();
    if (result.unanswered > 0) {
      // The dialog stays, its keys with it: Replay again sends the same requests, and what the API already did is not done twice.
      throw new Error(
        `${formatCount(result.unanswered)} ${result.unanswered === 1 ? 'request' : 'requests'} got no answer (the network failed), so what came of ` +
          `${result.unanswered === 1 ? 'it' : 'them'} is not known. Replay again sends the same requests: whatever the API already replayed is not replayed twice.`,
      );
    }
    setSelected(new Map());
    setAllMatching(false);
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
            <input
              type="checkbox"
              checked={allMatching}
              disabled={!canAllMatching || (rows.length === 0 && list.next === null && !allMatching)}
              aria-describedby={canAllMatching ? undefined : 'all-matching-needs'}
              onChange={(e) => setAllMatching(e.currentTarget.checked)}
            />
            All matching the filter
          </label>
          {canAllMatching ? null : (
            <span class="muted" id="all-matching-needs">
              needs an endpoint or an owner in the filter
            </span>
          )}
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
          title={`Replay ${formatCount(plan.plan.count)} dead ${plan.plan.count === 1 ? 'delivery' : 'deliveries'}?`}
          confirmLabel="Replay"
          onClose={() => setPlan(undefined)}
          onConfirm={run}
        >
          <PlanSummary plan={plan.plan} />
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

// The list

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
