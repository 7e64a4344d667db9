/**
 * Endpoints: the list (`GET /v1/endpoints`), filtered by owner and state, the filters kept in the
 * route (`#/endpoints?owner=&state=`) so a reload or a shared link shows the same list. A page at a
 * time: "More" reads the next page (the answer's `next`) under the list; a page that comes after the
 * filters changed is dropped, not added to the new list. Each name opens the endpoint. In portal
 * mode the API lists the owner's endpoints alone, so there is no owner filter and no "Add endpoint".
 */
import { useEffect, useState } from 'preact/hooks';
import type { Endpoint } from '../../../api/client/types';
import { api, type Page } from '../api';
import { HealthText } from '../components/health';
import { ErrorNote, FieldMessages, StateBadge } from '../components/notes';
import { formatCount } from '../format';
import { usePages } from '../hooks';
import { endpointHref, href, navigate } from '../routes';
import { useSession } from '../session-context';
import './endpoints.css';

const PAGE_SIZE = 50;

export function EndpointsPage({ owner, state }: { owner?: string | undefined; state?: string | undefined }) {
  const { portalOwner } = useSession();
  const list = usePages((cursor) => api.get<Page<Endpoint>>('/v1/endpoints', { owner, state, limit: PAGE_SIZE, cursor }), [owner, state], {
    keyOf: (endpoint) => endpoint.name,
  });
  const { items, next } = list;

  return (
    <>
      <h1 tabIndex={-1}>Endpoints</h1>
      <div class="endpoints-head">
        <Filters owner={owner} state={state} portal={portalOwner !== undefined} error={list.loaded ? undefined : list.error} />
        {portalOwner === undefined ? (
          <a class="button primary" href="#/endpoints/new">
            Add endpoint
          </a>
        ) : null}
      </div>
      {list.loaded ? null : <ErrorNote error={list.error} />}
      {!list.loaded ? (
        list.loading ? <p class="loading">Loading…</p> : null
      ) : items.length === 0 ? (
        <p class="muted">No endpoints{owner !== undefined || state !== undefined ? ' match these filters' : ''}.</p>
      ) : (
        <>
          <p class="muted list-count" aria-live="polite">
            {formatCount(items.length)} endpoint{items.length === 1 ? '' : 's'} shown{next !== null ? ', more to read' : ''}
          </p>
          <div class="table-wrap">
            <table class="endpoints-table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">State</th>
                  {portalOwner === undefined ? <th scope="col">Owner</th> : null}
                  <th scope="col">URL</th>
                  <th scope="col">Event types</th>
                  <th scope="col">Health</th>
                  <th scope="col" class="num">
                    Parked
                  </th>
                </tr>
              </thead>
              <tbody>
                {items.map((endpoint) => (
                  <tr key={endpoint.name} data-endpoint={endpoint.name}>
                    <th scope="row">
                      <a href={endpointHref(endpoint.name)}>{endpoint.name}</a>
                    </th>
                    <td>
                      <StateBadge state={endpoint.state} />
                    </td>
                    {portalOwner === undefined ? <td>{endpoint.owner ?? <span class="muted">—</span>}</td> : null}
                    <td class="url">
                      <code>{endpoint.url}</code>
                    </td>
                    <td>{endpoint.eventTypes.join(', ')}</td>
                    <td>
                      <HealthText health={endpoint.health} />
                    </td>
                    <td class="num">{formatCount(endpoint.parked)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <ErrorNote error={list.error} />
          {next !== null ? (
            <div class="actions">
              <button type="button" onClick={list.more} disabled={list.loading}>
                {list.loading ? 'Loading…' : 'More'}
              </button>
            </div>
          ) : null}
        </>
      )}
    </>
  );
}

/** The filters: submitted (Enter or "Apply"), they become the route, which loads the list. */
function Filters({ owner, state, portal, error }: { owner: string | undefined; state: string | undefined; portal: boolean; error: Error | undefined }) {
  const [ownerText, setOwnerText] = useState(owner ?? '');
  const [stateChoice, setStateChoice] = useState(state ?? '');
  useEffect(() => {
    setOwnerText(owner ?? '');
    setStateChoice(state ?? '');
  }, [owner, state]);
  const apply = (event: Event) => {
    event.preventDefault();
    navigate(href('/endpoints', { owner: portal ? undefined : ownerText.trim(), state: stateChoice }));
  };
  return (
    <form class="filters" role="search" aria-label="Filter endpoints" onSubmit={apply}>
      {portal ? null : (
        <label>
          Owner
          <input
            name="owner"
            type="search"
            value={ownerText}
            onInput={(e) => setOwnerText(e.currentTarget.value)}
            aria-describedby="filter-owner-error"
            autocomplete="off"
          />
          <FieldMessages error={error} path="query.owner" id="filter-owner-error" />
        </label>
      )}
      <label>
        State
        <select name="state" value={stateChoice} onChange={(e) => setStateChoice(e.currentTarget.value)}>
          <option value="">Any</option>
          <option value="enabled">Enabled</option>
          <option value="disabled">Disabled</option>
        </select>
      </label>
      <button type="submit">Apply</button>
      {owner !== undefined || state !== undefined ? <a href="#/endpoints">Clear filters</a> : null}
    </form>
  );
}
