/**
 * Lookup (docs/contract.md §17): "did carrier X get shipment Y?". One box takes an event ID or a
 * shipment ID (`#/lookup?id=`): the page asks for the event first (GET /v1/events/{id}) and, when no
 * event has that ID, for the shipment's deliveries (GET /v1/shipments/{id}/deliveries, every page).
 * Each delivery is shown per endpoint with its state and attempt timeline; a dead one offers Replay,
 * which asks for a reason (kept in the delivery's audit) and then POSTs /v1/replays for that one
 * delivery. While a delivery shown is on its way the result reads itself again, so a replay is seen
 * going from pending to delivered without a reload: a few seconds after an attempt that is due now,
 * at a retry's time when the next attempt waits for one, less often while nothing changes, and not
 * at all for a parked delivery (it waits for its endpoint to be enabled).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Delivery, EventDeliveries } from '../../../api/client/types';
import { ApiError, api, type Page } from '../api';
import { AttemptTimeline } from '../components/attempts';
import { ReasonDialog } from '../components/dialog';
import { ErrorNote, StateBadge } from '../components/notes';
import { formatRelative, formatTime, formatTimeOfDay } from '../format';
import { useActionKeys, useLoad } from '../hooks';
import { readPages } from '../paging';
import { endpointHref, href, navigate } from '../routes';
import './lookup.css';

/** How soon a result is read again while a delivery's attempt is due now (or being made). */
const REFRESH_MS = 3000;
/** A shipment's result, up to ten pages of deliveries, is read again no sooner than this. */
const SHIPMENT_REFRESH_MS = 10_000;
/** Reads that may change nothing before the wait grows: an attempt takes a few seconds on a busy day. */
const PATIENT_READS = 4;
/** Past those, each read that changed nothing doubles the wait, up to this. */
const LONGEST_REFRESH_MS = 60_000;
/** A retry is read this long after its time, once its attempt has had time to be made. */
const AFTER_DUE_MS = 1000;
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
  let read;
  try {
    read = await readPages(
      (cursor) => api.get<Page<Delivery>>(`/v1/shipments/${encodeURIComponent(id)}/deliveries`, { limit: 100, cursor }),
      { maxItems: MAX_SHIPMENT_DELIVERIES, maxRequests: MAX_SHIPMENT_REQUESTS },
    );
  } catch (error) {
    if (error instanceof ApiError && error.status === 409 && problemCode(error) === 'shipment-index-off') {
      return { kind: 'none', id, shipmentsOff: error.detail || error.title };
    }
    if (notThere(error)) return { kind: 'none', id };
    throw error;
  }
  if (read.items.length === 0) return { kind: 'none', id };
  return { kind: 'shipment', shipmentId: id, deliveries: read.items, more: read.next !== null };
}

/**
 * How long until the result is read again (undefined: not again): while a delivery is on its way,
 * not parked. An attempt due now is looked at again soon (a shipment's less soon), then, after a
 * few reads that changed nothing (`unchanged` of them in a row), twice as long each time; a retry at
 * its time.
 */
export function refreshAfter(found: Found | undefined, unchanged: number, now = Date.now()): number | undefined {
  if (found === undefined || found.kind === 'none') return undefined;
  const moving = found.deliveries.filter((d) => d.state === 'pending' && d.parkedAt === undefined);
  if (moving.length === 0) return undefined;
  const soonest = Math.min(...moving.map((d) => d.nextAttemptAt ?? now));
  const floor = found.kind === 'shipment' ? SHIPMENT_REFRESH_MS : REFRESH_MS;
  const backedOff = Math.min(floor * 2 ** Math.max(0, unchanged - PATIENT_READS), LONGEST_REFRESH_MS);
  return Math.max(backedOff, soonest + AFTER_DUE_MS - now);
}

/** What a read of the result found, as far as following it goes: each delivery's state and attempts. */
function progressOf(found: Found | undefined): string {
  if (found === undefined || found.kind === 'none') return '';
  return JSON.stringify(found.deliveries.map((d) => [d.eventId, d.endpoint, d.state, d.attempts, d.nextAttemptAt ?? null]));
}

export function LookupPage({ id }: { id?: string | undefined }) {
  const [text, setText] = useState(id ?? '');
  useEffect(() => setText(id ?? ''), [id]);
  // Reads since the result last changed: each one makes the next wait longer.
  const streak = useRef({ progress: '', unchanged: 0 });
  const result = useLoad<Found | undefined>(
    () => (id === undefined ? Promise.resolve(undefined) : lookUp(id)),
    [id],
    (found) => {
      const progress = progressOf(found);
      streak.current = { progress, unchanged: progress === streak.current.progress ? streak.current.unchanged + 1 : 0 };
      return refreshAfter(found, streak.current.unchanged);
    },
  );
  const [replaying, setReplaying] = useState<Delivery | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  useEffect(() => setNotice(undefined), [id]);

  const found = result.data;
  const reload = result.reload;

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
            <Result found={found} onReplay={setReplaying} nextRead={result.nextAt} />
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

function Result({ found, onReplay, nextRead }: { found: Found; onReplay: (delivery: Delivery) => void; nextRead: number | undefined }) {
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
  const live =
    nextRead !== undefined ? (
      <p class="muted refreshing">A delivery is on its way: this is read again at {formatTimeOfDay(nextRead)}, while the tab is shown.</p>
    ) : null;
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
  const keyFor = useActionKeys();
  return (
    <ReasonDialog
      title={`Replay ${delivery.eventId} to ${delivery.endpoint}?`}
      confirmLabel="Replay"
      onClose={onClose}
      onConfirm={async (reason) => {
        // Sent again with the same reason (its answer was lost), the same key: it replays once.
        const body = { eventId: delivery.eventId, endpoint: delivery.endpoint, reason };
        await api.post('/v1/replays', body, { idempotencyKey: keyFor(body) });
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
