/**
 * Lookup (docs/contract.md §17): "did carrier X get shipment Y?". One box takes an event ID or a
 * shipment ID (`#/lookup?id=`): the page asks for the event first (GET /v1/events/{id}) and, when no
 * event has that ID, for the shipment's deliveries (GET /v1/shipments/{id}/deliveries, every page).
 * Each delivery is shown per endpoint with its state and attempt timeline; a dead one offers Replay,
 * which asks for a reason (kept in the delivery's audit) and then POSTs /v1/replays for that one
 * delivery. While any delivery shown is pending the result refreshes itself, so a replay is seen
 * going from pending to delivered without a reload.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Delivery, EventDeliveries } from '../../../api/client/types';
import { ApiError, actionKey, api, type Page } from '../api';
import { AttemptTimeline } from '../components/attempts';
import { ReasonDialog } from '../components/dialog';
import { ErrorNote, StateBadge } from '../components/notes';
import { formatRelative, formatTime } from '../format';
import { useLoad } from '../hooks';
import { endpointHref, href, navigate } from '../routes';
import './lookup.css';

/** How often a result with a pending delivery is read again. */
const REFRESH_MS = 3000;
/** A shipment's deliveries read at most (ten pages of the API's largest). */
const MAX_SHIPMENT_DELIVERIES = 1000;
/** Requests for one shipment at most: a portal link's pages may hold none of its owner's and still have `next`. */
const MAX_SHIPMENT_REQUESTS = 50;

type Found =
  | { readonly kind: 'event'; readonly eventId: string; readonly deliveries: readonly Delivery[] }
  | { readonly kind: 'shipment'; readonly shipmentId: string; readonly deliveries: readonly Delivery[]; readonly more: boolean }
  /** Neither an event nor a shipment has the ID; `shipmentsOff` is the API's word when the deployment keeps no shipment index. */
  | { readonly kind: 'none'; readonly id: string; readonly shipmentsOff?: string };

/** The problem type's last segment (`https://handoff.dev/problems/shipment-index-off` → `shipment-index-off`). */
function problemCode(error: ApiError): string {
  return error.type.slice(error.type.lastIndexOf('/') + 1);
}

/** Not this kind of ID, or none such: 404, or 400 for an ID the route's pattern refuses (an event ID is narrower than a shipment's). */
function notThere(error: unknown): boolean {
  return error instanceof ApiError && (error.status === 404 || error.status === 400);
}

async function lookUp(id: string): Promise<Found> {
  try {
    const event = await api.get<EventDeliveries>(`/v1/events/${encodeURIComponent(id)}`);
    return { kind: 'event', eventId: event.eventId, deliveries: event.deliveries };
  } catch (error) {
    if (!notThere(error)) throw error;
  }
  const deliveries: Delivery[] = [];
  let cursor: string | null = null;
  let requests = 0;
  try {
    do {
      const page: Page<Delivery> = await api.get<Page<Delivery>>(`/v1/shipments/${encodeURIComponent(id)}/deliveries`, { limit: 100, cursor });
      deliveries.push(...page.items);
      cursor = page.next;
      requests += 1;
    } while (cursor !== null && deliveries.length < MAX_SHIPMENT_DELIVERIES && requests < MAX_SHIPMENT_REQUESTS);
  } catch (error) {
    if (error instanceof ApiError && error.status === 409 && problemCode(error) === 'shipment-index-off') {
      return { kind: 'none', id, shipmentsOff: error.detail || error.title };
    }
    if (notThere(error)) return { kind: 'none', id };
    throw error;
  }
  if (deliveries.length === 0) return { kind: 'none', id };
  return { kind: 'shipment', shipmentId: id, deliveries, more: cursor !== null };
}

export function LookupPage({ id }: { id?: string | undefined }) {
  const [text, setText] = useState(id ?? '');
  useEffect(() => setText(id ?? ''), [id]);
  const result = useLoad<Found | undefined>(() => (id === undefined ? Promise.resolve(undefined) : lookUp(id)), [id]);
  const [replaying, setReplaying] = useState<Delivery | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  useEffect(() => setNotice(undefined), [id]);

  // A pending delivery is on its way: read the result again until none is.
  const found = result.data;
  const anyPending = found !== undefined && found.kind !== 'none' && found.deliveries.some((d) => d.state === 'pending');
  const reload = result.reload;
  useEffect(() => {
    if (!anyPending) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') reload();
    }, REFRESH_MS);
    return () => clearInterval(timer);
  }, [anyPending, reload]);

  const submit = (event: Event) => {
    event.preventDefault();
    const wanted = text.trim();
    if (wanted === '') return;
    if (wanted === id) reload();
    else navigate(href('/lookup', { id: wanted }));
  };

  return (
    <>
      <h1 tabIndex={-1}>Lookup</h1>
      <form class="lookup-search" role="search" onSubmit={submit}>
        <label>
          Event or shipment ID
          <input
            name="id"
            type="search"
            value={text}
            onInput={(e) => setText(e.currentTarget.value)}
            autocomplete="off"
            spellcheck={false}
            required
            maxLength={128}
          />
        </label>
        <button type="submit" class="primary">
          Look up
        </button>
      </form>
      {id === undefined ? (
        <p class="muted">An event's ID shows its delivery to each endpoint; a shipment's ID shows the deliveries of all its events.</p>
      ) : (
        <section class="lookup-result" aria-label={`Result for ${id}`} aria-busy={result.loading}>
          {notice !== undefined ? (
            <p class="notice" role="status">
              {notice}
            </p>
          ) : null}
          <ErrorNote error={result.error} />
          {found !== undefined ? (
            <Result found={found} onReplay={setReplaying} refreshing={anyPending} />
          ) : result.error === undefined ? (
            <p class="muted" role="status">
              Looking up <code>{id}</code>…
            </p>
          ) : null}
        </section>
      )}
      {replaying !== undefined ? (
        <ReplayDialog
          delivery={replaying}
          onClose={() => setReplaying(undefined)}
          onReplayed={() => {
            setNotice(`Replayed ${replaying.eventId} to ${replaying.endpoint}: pending again, on its way.`);
            reload();
          }}
        />
      ) : null}
    </>
  );
}

function Result({ found, onReplay, refreshing }: { found: Found; onReplay: (delivery: Delivery) => void; refreshing: boolean }) {
  if (found.kind === 'none') {
    return (
      <>
        <h2>
          Nothing found for <code>{found.id}</code>
        </h2>
        {found.shipmentsOff === undefined ? (
          <p role="status">No event and no shipment has this ID (or none of their deliveries is yours to see).</p>
        ) : (
          <p role="status">
            No event has this ID, and shipments cannot be looked up here: {found.shipmentsOff}.
          </p>
        )}
      </>
    );
  }
  const live = refreshing ? <p class="muted refreshing">A delivery is pending: this updates every few seconds.</p> : null;
  if (found.kind === 'event') {
    return (
      <>
        <h2>
          Event <code>{found.eventId}</code>
        </h2>
        <p class="muted">
          {found.deliveries.length === 1 ? 'One delivery' : `${found.deliveries.length} deliveries`}, one per endpoint it was routed to.
        </p>
        {live}
        {found.deliveries.map((delivery) => (
          <DeliveryCard key={delivery.endpoint} delivery={delivery} level={3} onReplay={onReplay} />
        ))}
      </>
    );
  }
  const events = groupByEvent(found.deliveries);
  return (
    <>
      <h2>
        Shipment <code>{found.shipmentId}</code>
      </h2>
      <p class="muted">
        {found.deliveries.length === 1 ? 'One delivery' : `${found.deliveries.length} deliveries`} of{' '}
        {events.length === 1 ? 'one event' : `${events.length} events`}, the newest admitted first.
        {found.more ? ` Only the first ${found.deliveries.length} are shown.` : ''}
      </p>
      {live}
      {events.map(([eventId, deliveries]) => (
        <section key={eventId} class="lookup-event" aria-labelledby={`event-${eventId}`}>
          <h3 id={`event-${eventId}`}>
            Event <a href={href('/lookup', { id: eventId })}>{eventId}</a>
          </h3>
          {deliveries.map((delivery) => (
            <DeliveryCard key={delivery.endpoint} delivery={delivery} level={4} onReplay={onReplay} />
          ))}
        </section>
      ))}
    </>
  );
}

/** The shipment's deliveries by event, in the order the API listed them. */
function groupByEvent(deliveries: readonly Delivery[]): [string, Delivery[]][] {
  const events = new Map<string, Delivery[]>();
  for (const delivery of deliveries) {
    const list = events.get(delivery.eventId) ?? [];
    list.push(delivery);
    events.set(delivery.eventId, list);
  }
  return [...events];
}

function DeliveryCard({ delivery: d, level, onReplay }: { delivery: Delivery; level: 3 | 4; onReplay: (delivery: Delivery) => void }) {
  const Heading = level === 3 ? 'h3' : 'h4';
  const headingId = `delivery-${d.eventId}-${d.endpoint}`;
  const parked = d.state === 'pending' && d.parkedAt !== undefined;
  // An invalid message's row holds no event: there is nothing to send again.
  const replayable = d.state === 'dead' && d.deadReason !== 'invalid';
  return (
    <article class="panel delivery" aria-labelledby={headingId}>
      <div class="delivery-head">
        <Heading id={headingId}>
          <span class="muted">to </span>
          <a href={endpointHref(d.endpoint)}>{d.endpoint}</a>
        </Heading>
        <StateBadge state={d.state} />
        {parked ? <StateBadge state="parked" /> : null}
        {replayable ? (
          <button type="button" class="replay" aria-label={`Replay ${d.eventId} to ${d.endpoint}`} onClick={() => onReplay(d)}>
            Replay
          </button>
        ) : null}
      </div>
      <dl class="fields">
        {d.state === 'dead' ? (
          <>
            <dt>Died</dt>
            <dd>
              {formatTime(d.deadAt)}
              {d.deadReason !== undefined ? ` (${d.deadReason})` : ''}
            </dd>
            {d.deadDetail !== undefined ? (
              <>
                <dt>Why</dt>
                <dd>{d.deadDetail}</dd>
              </>
            ) : null}
          </>
        ) : null}
        {d.deliveredAt !== undefined ? (
          <>
            <dt>Delivered</dt>
            <dd>{formatTime(d.deliveredAt)}</dd>
          </>
        ) : null}
        {parked ? (
          <>
            <dt>Parked</dt>
            <dd>since {formatTime(d.parkedAt)}, until its endpoint is enabled</dd>
          </>
        ) : d.state === 'pending' && d.nextAttemptAt !== undefined && d.nextAttemptAt > Date.now() ? (
          <>
            <dt>Next attempt</dt>
            <dd>{formatRelative(d.nextAttemptAt)}</dd>
          </>
        ) : null}
        <dt>Attempts</dt>
        <dd>
          {d.attempts} of {d.maxAttempts}
          {d.replays > 0 ? ` · replayed ${d.replays === 1 ? 'once' : `${d.replays} times`}` : ''}
        </dd>
        <dt>Admitted</dt>
        <dd>{formatTime(d.createdAt)}</dd>
        {d.eventType !== undefined ? (
          <>
            <dt>Type</dt>
            <dd>{d.eventType}</dd>
          </>
        ) : null}
        {d.sequence !== undefined ? (
          <>
            <dt>Sequence</dt>
            <dd>{d.sequence} in its shipment</dd>
          </>
        ) : null}
      </dl>
      {level === 3 || d.state !== 'delivered' ? (
        <AttemptTimeline history={d.history} attempts={d.attempts} label={`Attempts to ${d.endpoint}`} />
      ) : (
        // A shipment lists many deliveries: a delivered one's attempts are a click away, the others' in view.
        <details class="attempts-folded">
          <summary>Attempts ({d.history.length})</summary>
          <AttemptTimeline history={d.history} attempts={d.attempts} label={`Attempts to ${d.endpoint}`} />
        </details>
      )}
      {d.audit.length > 0 ? (
        <details class="audit">
          <summary>Audit ({d.audit.length})</summary>
          <ul>
            {d.audit.map((entry, index) => (
              <li key={index}>
                {formatTime(entry.at)}: {entry.action} by {entry.operator}, “{entry.reason}”
              </li>
            ))}
          </ul>
        </details>
      ) : null}
    </article>
  );
}

/** Asks why the delivery is safe to send again, then replays that one delivery. */
function ReplayDialog({ delivery, onClose, onReplayed }: { delivery: Delivery; onClose: () => void; onReplayed: () => void }) {
  // One key per reason given: the same request sent again (a lost answer) replays once; another reason is another request.
  const keys = useRef(new Map<string, string>());
  return (
    <ReasonDialog
      title={`Replay ${delivery.eventId} to ${delivery.endpoint}?`}
      confirmLabel="Replay"
      onClose={onClose}
      onConfirm={async (reason) => {
        const key = keys.current.get(reason) ?? actionKey();
        keys.current.set(reason, key);
        await api.post('/v1/replays', { eventId: delivery.eventId, endpoint: delivery.endpoint, reason }, { idempotencyKey: key });
        onReplayed();
      }}
    >
      <p>
        It is sent again now, with the same event ID and body, and its attempts start over. The reason is kept in the delivery's
        audit.
      </p>
    </ReasonDialog>
  );
}
