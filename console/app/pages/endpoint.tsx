/**
 * One endpoint (`#/endpoints/<name>`): its fields (never a secret: the API answers none), state and
 * the last change of it, health, parked count, its last hour (figures and the per-minute chart) and
 * its latest dead deliveries, and the actions: Disable (asks a reason), Enable, Rotate secret (the new
 * secret shown once), Send test event, Edit, Remove. In portal mode only Rotate secret, Send test
 * event and Edit (the URL), the actions a portal link may take.
 *
 * A delivered delivery is in no listing (the ledger indexes the dead, the parked and shipments, never
 * the delivered, docs/contract.md §5), so the page cannot list "recent deliveries" of every kind: it
 * shows the last hour's counts and chart, the dead it can read newest first, and sends the reader to
 * Lookup, where any delivery is found by its event or shipment ID.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Delivery, EndpointDetail, EndpointWithSecret, Page, TestEventAnswer } from '../../../api/client/types';
import { api, endpointPath, shownSecret } from '../api';
import { MinuteChart } from '../components/chart';
import { FormDialog, ReasonDialog, ShownOnce } from '../components/dialog';
import { HealthText } from '../components/health';
import { ErrorNote, FieldMessages, StateBadge } from '../components/notes';
import { toError } from '../errors';
import { endpointStats, minuteSeries, settled } from '../figures';
import { formatCount, formatDuration, formatRelative, formatTime } from '../format';
import { useActionKeys, useLoad } from '../hooks';
import { readPages } from '../paging';
import { endpointHref, href, navigate } from '../routes';
import { useSession } from '../session-context';
import './endpoints.css';
import './endpoint.css';

const REFRESH_MS = 10_000;
const HOUR_MS = 3_600_000;
const DEAD_SHOWN = 10;
/** Pages of the dead listing read to reach the newest (it lists oldest death first). */
const DEAD_PAGES = 3;

type Open = 'disable' | 'enable' | 'rotate' | 'remove' | { readonly secret: string; readonly publicKey: string | null } | undefined;

interface Notice {
  readonly text: string;
  readonly link?: { readonly href: string; readonly label: string };
}

export function EndpointPage({ name }: { name: string }) {
  const { portalOwner } = useSession();
  const portal = portalOwner !== undefined;
  const detail = useLoad(() => api.get<EndpointDetail>(endpointPath(name)), [name], REFRESH_MS);
  const figures = useLoad(
    async () => {
      const [stats, series] = await Promise.all([settled(endpointStats(name, '1h')), settled(minuteSeries('1h', name))]);
      return { stats, series };
    },
    [name],
    REFRESH_MS,
  );
  const dead = useLoad(() => latestDead(name), [name]);
  const [open, setOpen] = useState<Open>(undefined);
  const [notice, setNotice] = useState<Notice | undefined>(undefined);
  const [actionError, setActionError] = useState<Error | undefined>(undefined);
  const [testing, setTesting] = useState(false);
  const noticeRef = useRef<HTMLParagraphElement>(null);
  // After Disable or Enable the button that opened the dialog is gone (the other one shows in its
  // place), so the focus would fall back to the page's start: it goes to the notice of what was
  // done instead, once the dialog is closed (a modal dialog's page takes no focus).
  const focusNotice = useRef(false);
  useEffect(() => {
    if (open !== undefined || !focusNotice.current || noticeRef.current === null) return;
    focusNotice.current = false;
    noticeRef.current.focus();
  }, [notice, open]);

  const endpoint = detail.data;
  // A dialog's close event can come after the next one opened (the browser fires it as a task):
  // each closes only itself.
  const close = (which: (current: Open) => boolean) => () => setOpen((current) => (which(current) ? undefined : current));
  const done = (text: string) => {
    setActionError(undefined);
    setNotice({ text });
    focusNotice.current = true;
    detail.reload();
  };

  const sendTest = async () => {
    setTesting(true);
    setNotice(undefined);
    try {
      // Each click is a test event of its own: no Idempotency-Key to make two clicks one.
      const { eventId } = await api.post<TestEventAnswer>(endpointPath(name, 'test'), undefined);
      setActionError(undefined);
      setNotice({ text: `Test event ${eventId} is on the queue for ${name}.`, link: { href: href('/lookup', { id: eventId }), label: 'Follow it in Lookup' } });
      figures.reload();
    } catch (error) {
      setActionError(toError(error));
    } finally {
      setTesting(false);
    }
  };

  return (
    <>
      <h1 tabIndex={-1}>
        Endpoint <span class="endpoint-name">{name}</span>
      </h1>
      <p class="breadcrumb">
        <a href="#/endpoints">All endpoints</a>
      </p>
      {endpoint === undefined ? (
        <>
          {detail.loading ? <p class="loading">Loading…</p> : null}
          <ErrorNote error={detail.error} />
        </>
      ) : (
        <>
          <div class="endpoint-summary">
            <StateBadge state={endpoint.state} /> <HealthText health={endpoint.health} />
          </div>
          <section aria-label="Actions" class="endpoint-actions">
            <div class="actions">
              {!portal && endpoint.state === 'enabled' ? (
                <button type="button" class="danger" onClick={() => setOpen('disable')}>
                  Disable
                </button>
              ) : null}
              {!portal && endpoint.state === 'disabled' ? (
                <button type="button" class="primary" onClick={() => setOpen('enable')}>
                  Enable
                </button>
              ) : null}
              <button type="button" onClick={() => setOpen('rotate')}>
                Rotate secret
              </button>
              <button type="button" onClick={sendTest} disabled={testing}>
                {testing ? 'Sending…' : 'Send test event'}
              </button>
              <a class="button" href={endpointHref(name, true)}>
                Edit
              </a>
              {!portal ? (
                <button type="button" class="danger" onClick={() => setOpen('remove')}>
                  Remove
                </button>
              ) : null}
            </div>
            <div aria-live="polite">
              {notice !== undefined ? (
                <p class="notice" ref={noticeRef} tabIndex={-1}>
                  {notice.text} {notice.link !== undefined ? <a href={notice.link.href}>{notice.link.label}</a> : null}
                </p>
              ) : null}
            </div>
            <ErrorNote error={actionError} />
            {detail.error !== undefined ? <ErrorNote error={detail.error} /> : null}
          </section>

          <div class="grid">
            <section class="panel endpoint-panel" aria-labelledby="fields-heading">
              <h2 id="fields-heading">Fields</h2>
              <Fields endpoint={endpoint} />
            </section>
            <section class="panel endpoint-panel" aria-labelledby="health-heading">
              <h2 id="health-heading">Health</h2>
              <Health endpoint={endpoint} />
            </section>
          </div>

          <section class="panel endpoint-panel" aria-labelledby="hour-heading">
            <h2 id="hour-heading">Last hour</h2>
            <LastHour figures={figures.data} error={figures.error} name={name} />
          </section>

          <section class="panel endpoint-panel" aria-labelledby="dead-heading">
            <h2 id="dead-heading">Latest dead deliveries</h2>
            <DeadList name={name} dead={dead.data} error={dead.error} loading={dead.loading} />
            <p class="muted lookup-note">
              A delivered delivery is in no listing: find any delivery, delivered, pending or dead, by its event or shipment ID in{' '}
              <a href="#/lookup">Lookup</a>.
            </p>
          </section>

          <section class="panel endpoint-panel" aria-labelledby="settings-heading">
            <h2 id="settings-heading">Settings</h2>
            <Settings endpoint={endpoint} />
          </section>
        </>
      )}

      {open === 'disable' ? <DisableDialog name={name} onClose={close((o) => o === 'disable')} onDone={done} /> : null}
      {open === 'enable' ? <EnableDialog name={name} parked={endpoint?.parked ?? null} onClose={close((o) => o === 'enable')} onDone={done} /> : null}
      {open === 'rotate' ? (
        <RotateDialog
          name={name}
          onClose={close((o) => o === 'rotate')}
          onRotated={(answer) => {
            detail.reload();
            setActionError(undefined);
            const secret = shownSecret(answer);
            if (secret !== undefined) {
              setNotice({ text: `The secret of ${name} was rotated.` });
              setOpen({ secret, publicKey: answer.publicKey ?? null });
            } else {
              setNotice({ text: `The secret of ${name} was rotated; this answer does not show it again.` });
              setOpen(undefined);
            }
          }}
        />
      ) : null}
      {typeof open === 'object' ? (
        <ShownOnce
          title={`New signing secret of ${name}`}
          label="Signing secret"
          value={open.secret}
          publicKey={open.publicKey}
          onClose={close((o) => typeof o === 'object')}
        />
      ) : null}
      {open === 'remove' ? (
        <FormDialog
          title={`Remove ${name}`}
          confirmLabel="Remove"
          danger
          onClose={close((o) => o === 'remove')}
          onConfirm={async () => {
            await api.delete(endpointPath(name));
            navigate('#/endpoints');
          }}
        >
          {() => (
            <p>
              New events are no longer routed to <strong>{name}</strong>. Its deliveries' rows are kept until they expire. This cannot be undone
              (an endpoint of the same name can be added again).
            </p>
          )}
        </FormDialog>
      ) : null}
    </>
  );
}

function Fields({ endpoint }: { endpoint: EndpointDetail }) {
  const matchEntries = Object.entries(endpoint.match);
  return (
    <dl class="fields">
      <dt>URL</dt>
      <dd>
        <code>{endpoint.url}</code>
        <span class="muted hint"> (its query and any credentials hidden)</span>
      </dd>
      <dt>State</dt>
      <dd>
        <StateBadge state={endpoint.state} />
        {endpoint.stateChange !== null ? (
          <span class="state-change">
            {' '}
            {endpoint.state === 'disabled' ? 'Disabled' : 'Changed'} by {endpoint.stateChange.by}, {formatTime(endpoint.stateChange.at)}: “
            {endpoint.stateChange.reason}”
          </span>
        ) : null}
      </dd>
      <dt>Owner</dt>
      <dd>{endpoint.owner ?? <span class="muted">none</span>}</dd>
      <dt>Event types</dt>
      <dd>{endpoint.eventTypes.map((type) => (type === '*' ? '* (all)' : type)).join(', ')}</dd>
      <dt>Match</dt>
      <dd>
        {matchEntries.length === 0 ? (
          <span class="muted">every event of those types</span>
        ) : (
          <ul class="plain">
            {matchEntries.map(([field, values]) => (
              <li key={field}>
                <code>{field}</code> is one of {values.map((value) => JSON.stringify(value)).join(', ')}
              </li>
            ))}
          </ul>
        )}
      </dd>
      <dt>Signing secret</dt>
      <dd>
        {endpoint.secret === 'set' ? 'set (never shown)' : 'unset: requests are not signed'}
        {endpoint.previousSecretUntil !== null ? <span class="muted"> · the previous one signs too until {formatTime(endpoint.previousSecretUntil)}</span> : null}
      </dd>
      {typeof endpoint.publicKey === 'string' ? (
        <>
          <dt>Public key</dt>
          <dd>
            <code data-field="publicKey">{endpoint.publicKey}</code>
            <span class="muted hint"> (ed25519: the receiver verifies its v1a signatures with it)</span>
          </dd>
        </>
      ) : null}
      {endpoint.auth !== null && endpoint.auth !== undefined ? (
        <>
          <dt>OAuth2</dt>
          <dd data-field="auth">
            client <code>{endpoint.auth.clientId}</code> at <code>{endpoint.auth.tokenUrl}</code>
            {endpoint.auth.scope !== undefined ? <> · scope <code>{endpoint.auth.scope}</code></> : null}
            <span class="muted"> · client secret {'secretArn' in endpoint.auth.clientSecret ? 'in Secrets Manager' : 'set (never shown)'}</span>
          </dd>
        </>
      ) : null}
      {endpoint.tls !== null && endpoint.tls !== undefined ? (
        <>
          <dt>Client certificate</dt>
          <dd data-field="tls">
            {typeof endpoint.tls.clientCertificate === 'string' ? 'given' : 'in Secrets Manager'}
            <span class="muted"> · key {'secretArn' in endpoint.tls.privateKey ? 'in Secrets Manager' : 'set (never shown)'}</span>
            {endpoint.tls.ca !== undefined ? <span class="muted"> · its own CA</span> : null}
          </dd>
        </>
      ) : null}
      <dt>Created</dt>
      <dd>{formatTime(endpoint.createdAt)}</dd>
      <dt>Updated</dt>
      <dd>{formatTime(endpoint.updatedAt)}</dd>
    </dl>
  );
}

function Health({ endpoint }: { endpoint: EndpointDetail }) {
  const { health, release } = endpoint;
  return (
    <dl class="fields">
      <dt>Now</dt>
      <dd>
        <HealthText health={health} />
      </dd>
      <dt>Paused until</dt>
      <dd>{health.paused && health.pausedUntil !== null ? formatTime(health.pausedUntil) : <span class="muted">not paused</span>}</dd>
      <dt>Failing since</dt>
      <dd>{health.failingSince !== null ? formatTime(health.failingSince) : <span class="muted">not failing</span>}</dd>
      <dt>Failures in a row</dt>
      <dd>{formatCount(health.failures)}</dd>
      <dt>Last accepted</dt>
      <dd>{health.lastAcceptedAt !== null ? `${formatTime(health.lastAcceptedAt)} (${formatRelative(health.lastAcceptedAt)})` : <span class="muted">never</span>}</dd>
      <dt>Parked</dt>
      <dd data-figure="parked">{endpoint.parked === null ? <span class="muted">not counted</span> : formatCount(endpoint.parked)}</dd>
      {release !== null ? (
        <>
          <dt>Release</dt>
          <dd>
            Releasing parked deliveries since {formatTime(release.since)}, up to {formatCount(release.rate)} a second (now{' '}
            {release.rateNow.toFixed(1)}){release.scheduledUntil !== null ? `, scheduled until ${formatTime(release.scheduledUntil)}` : ''}
          </dd>
        </>
      ) : null}
    </dl>
  );
}

/** The endpoint's own settings beside those in effect against the deployment. */
function Settings({ endpoint }: { endpoint: EndpointDetail }) {
  const own = endpoint.settings as Readonly<Record<string, unknown>>;
  const effective = endpoint.effective;
  const names = [...new Set([...Object.keys(effective ?? {}), ...Object.keys(own)])];
  return (
    <>
      {endpoint.problem !== undefined ? (
        <p class="error" role="note">
          It cannot be used with the deployment: {endpoint.problem}
        </p>
      ) : null}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Setting</th>
              <th scope="col">Its own</th>
              <th scope="col">In effect</th>
            </tr>
          </thead>
          <tbody>
            {names.map((setting) => (
              <tr key={setting}>
                <th scope="row">
                  <code>{setting}</code>
                </th>
                <td>{setting in own ? settingText(own[setting]) : <span class="muted">unset</span>}</td>
                <td>{effective === null ? <span class="muted">—</span> : settingText(effective[setting])}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="muted hint">Checked against the deployment's settings from {endpoint.settingsFrom}.</p>
    </>
  );
}

function settingText(value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (Array.isArray(value)) return value.join(', ');
  return String(value);
}

function LastHour({ figures, error, name }: { figures: { stats: Awaited<ReturnType<typeof endpointStats>> | Error; series: Awaited<ReturnType<typeof minuteSeries>> | Error } | undefined; error: Error | undefined; name: string }) {
  if (figures === undefined) return error !== undefined ? <ErrorNote error={error} /> : <p class="loading">Loading…</p>;
  const { stats, series } = figures;
  return (
    <>
      {stats instanceof Error ? (
        <ErrorNote error={stats} />
      ) : (
        <>
          {stats.metricsError !== undefined ? (
            <p class="error" role="note">
              Metrics unavailable: {stats.metricsError}
            </p>
          ) : null}
          <dl class="figures">
            <div>
              <dt>Delivered</dt>
              <dd data-figure="delivered-1h">{formatCount(stats.deliveredCount)}</dd>
            </div>
            <div>
              <dt>Retried attempts</dt>
              <dd data-figure="retried-1h">{formatCount(stats.retriedAttempts)}</dd>
            </div>
            <div>
              <dt>Dead-lettered</dt>
              <dd data-figure="dead-1h">{formatCount(stats.deadLettered)}</dd>
            </div>
            <div>
              <dt>Dead now</dt>
              <dd data-figure="dead-now">
                {stats.capped.dead ? '≥ ' : ''}
                {formatCount(stats.deadCount)}
              </dd>
            </div>
            <div>
              <dt>Latency p50 / p99</dt>
              <dd>
                {formatDuration(stats.latencyMs.p50)} / {formatDuration(stats.latencyMs.p99)}
              </dd>
            </div>
          </dl>
        </>
      )}
      {series instanceof Error ? (
        <ErrorNote error={series} />
      ) : series.metricsError !== undefined ? (
        stats instanceof Error || stats.metricsError === undefined ? (
          <p class="error" role="note">
            Metrics unavailable: {series.metricsError}
          </p>
        ) : null
      ) : (
        <MinuteChart points={series.points} label={`${name}, deliveries and failed attempts per minute`} id="endpoint-minutes" />
      )}
    </>
  );
}

interface LatestDead {
  readonly items: readonly Delivery[];
  /** The window read: the last 24 h, or the last hour when the day held more than the pages read. */
  readonly window: '24 h' | '1 h';
  /** Whether every death of the window was read (so the items shown are the newest). */
  readonly complete: boolean;
  readonly read: number;
}

/**
 * The newest dead deliveries the listing gives. It lists oldest death first, so the page reads the
 * last 24 h to its end (up to DEAD_PAGES pages) and shows the last ones; when the day holds more
 * than that, the last hour the same way; when even the hour does, it says that what it shows are
 * not the newest.
 */
async function latestDead(name: string): Promise<LatestDead> {
  let last: LatestDead | undefined;
  for (const [window, ms] of [['24 h', 24 * HOUR_MS], ['1 h', HOUR_MS]] as const) {
    const since = new Date(Date.now() - ms).toISOString();
    const read = await readPages((cursor) => api.get<Page<Delivery>>('/v1/dead', { endpoint: name, since, limit: 100, cursor }), { maxRequests: DEAD_PAGES });
    last = { items: read.items.slice(-DEAD_SHOWN).reverse(), window, complete: read.next === null, read: read.items.length };
    if (last.complete) return last;
  }
  return last!;
}

function DeadList({ name, dead, error, loading }: { name: string; dead: LatestDead | undefined; error: Error | undefined; loading: boolean }) {
  if (dead === undefined) return error !== undefined ? <ErrorNote error={error} /> : loading ? <p class="loading">Loading…</p> : null;
  const all = href('/dead', { endpoint: name });
  return (
    <>
      {dead.items.length === 0 ? (
        <p>No delivery to {name} died in the last {dead.window}.</p>
      ) : (
        <>
          <p class="muted">
            {dead.complete
              ? `The newest ${dead.items.length} of the ${formatCount(dead.read)} that died in the last ${dead.window}, newest first.`
              : `More than ${formatCount(dead.read)} died in the last hour: these are the latest of the first ${formatCount(dead.read)} read, not the newest. Dead letters lists them all.`}
          </p>
          <div class="table-wrap">
            <table class="dead-table">
              <thead>
                <tr>
                  <th scope="col">Died</th>
                  <th scope="col">Event</th>
                  <th scope="col">Type</th>
                  <th scope="col">Reason</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                </tr>
              </thead>
              <tbody>
                {dead.items.map((delivery) => (
                  <tr key={delivery.eventId}>
                    <td>{formatTime(delivery.deadAt ?? delivery.stateSince)}</td>
                    <th scope="row">
                      <a href={href('/lookup', { id: delivery.eventId })}>
                        <code>{delivery.eventId}</code>
                      </a>
                    </th>
                    <td>{delivery.eventType ?? <span class="muted">—</span>}</td>
                    <td class="reason">
                      {delivery.deadReason ?? 'dead'}
                      {delivery.deadDetail !== undefined ? <span class="muted">: {delivery.deadDetail}</span> : null}
                    </td>
                    <td class="num">{formatCount(delivery.attempts)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <p>
        <a href={all}>All dead deliveries of {name}</a> (Dead letters, where they can be replayed).
      </p>
    </>
  );
}

function DisableDialog({ name, onClose, onDone }: { name: string; onClose: () => void; onDone: (text: string) => void }) {
  const keyFor = useActionKeys();
  return (
    <ReasonDialog
      title={`Disable ${name}`}
      confirmLabel="Disable"
      onClose={onClose}
      onConfirm={async (reason) => {
        const body = { reason };
        await api.post(endpointPath(name, 'disable'), body, { idempotencyKey: keyFor(body) });
        onDone(`${name} is disabled: its deliveries are parked until it is enabled.`);
      }}
    >
      <p>New deliveries to it are parked, not sent, until it is enabled again. The reason is kept with it, and who disabled it.</p>
    </ReasonDialog>
  );
}

function EnableDialog({ name, parked, onClose, onDone }: { name: string; parked: number | null; onClose: () => void; onDone: (text: string) => void }) {
  const [reason, setReason] = useState('');
  const [rate, setRate] = useState('');
  const keyFor = useActionKeys();
  return (
    <FormDialog
      title={`Enable ${name}`}
      confirmLabel="Enable"
      onClose={onClose}
      onConfirm={async () => {
        const body: Record<string, unknown> = {};
        if (reason.trim() !== '') body.reason = reason.trim();
        if (rate.trim() !== '') body.rate = Number(rate);
        await api.post(endpointPath(name, 'enable'), body, { idempotencyKey: keyFor(body) });
        onDone(`${name} is enabled${parked !== null && parked > 0 ? `: its ${formatCount(parked)} parked deliveries are being released` : ''}.`);
      }}
    >
      {(error) => (
        <>
          <p>
            Deliveries to it start again.{' '}
            {parked !== null && parked > 0 ? `Its ${formatCount(parked)} parked deliveries are released, ramping up to the rate below.` : ''}
          </p>
          <label>
            Reason (optional)
            <textarea name="reason" rows={2} value={reason} onInput={(e) => setReason(e.currentTarget.value)} aria-describedby="enable-reason-error" />
            <FieldMessages error={error} path="reason" id="enable-reason-error" />
          </label>
          <label>
            Release rate, parked deliveries a second (empty: the API's default)
            <input name="rate" type="number" inputMode="numeric" value={rate} onInput={(e) => setRate(e.currentTarget.value)} aria-describedby="enable-rate-error" />
            <FieldMessages error={error} path="rate" id="enable-rate-error" />
          </label>
        </>
      )}
    </FormDialog>
  );
}

function RotateDialog({ name, onClose, onRotated }: { name: string; onClose: () => void; onRotated: (answer: EndpointWithSecret) => void }) {
  const [overlap, setOverlap] = useState('');
  const keyFor = useActionKeys();
  return (
    <FormDialog
      title={`Rotate the secret of ${name}`}
      confirmLabel="Rotate secret"
      onClose={onClose}
      onConfirm={async () => {
        const body = overlap.trim() === '' ? {} : { overlapSeconds: Number(overlap) };
        onRotated(await api.post<EndpointWithSecret>(endpointPath(name, 'rotate-secret'), body, { idempotencyKey: keyFor(body) }));
      }}
    >
      {(error) => (
        <>
          <p>A new signing secret replaces the current one, and is shown once. During the overlap the old secret signs each request too, so the receiver can switch without refusing any.</p>
          <label>
            Overlap in seconds (empty: 24 hours; 0: switch at once)
            <input
              name="overlapSeconds"
              type="number"
              inputMode="numeric"
              value={overlap}
              onInput={(e) => setOverlap(e.currentTarget.value)}
              aria-describedby="rotate-overlap-error"
            />
            <FieldMessages error={error} path="overlapSeconds" id="rotate-overlap-error" />
          </label>
        </>
      )}
    </FormDialog>
  );
}
