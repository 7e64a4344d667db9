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
import type { EndpointDetail, TestEventAnswer } from '../../../api/client/types';
import { api, endpointPath, shownSecret } from '../api';
import { ShownOnce } from '../components/dialog';
import { HealthText } from '../components/health';
import { ErrorNote, StateBadge } from '../components/notes';
import { toError } from '../errors';
import { endpointStats, minuteSeries, settled } from '../figures';
import { formatCount, formatRelative, formatTime } from '../format';
import { useLoad } from '../hooks';
import { endpointHref, href } from '../routes';
import { useSession } from '../session-context';
import { DeadList, LastHour, latestDead } from './endpoint-activity';
import { DisableDialog, EnableDialog, RemoveDialog, RotateDialog } from './endpoint-dialogs';
import './endpoints.css';
import './endpoint.css';

const REFRESH_MS = 10_000;

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
          signature={endpoint?.settings.signature ?? 'hmac-sha256'}
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
      {open === 'remove' ? <RemoveDialog name={name} onClose={close((o) => o === 'remove')} /> : null}
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
