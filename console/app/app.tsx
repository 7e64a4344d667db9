/**
 * The shell: a header with the navigation (Overview, Endpoints, Lookup, Dead letters: each page
 * reachable by its label), who the page acts for, and the current route's page. Without a
 * credential it shows how to get one instead.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ConsoleConfig } from '../config';
import { onUnauthorized } from './api';
import { formatTime } from './format';
import { DeadLettersPage } from './pages/dead-letters';
import { EndpointFormPage } from './pages/endpoint-form';
import { EndpointPage } from './pages/endpoint';
import { EndpointsPage } from './pages/endpoints';
import { LookupPage } from './pages/lookup';
import { OverviewPage } from './pages/overview';
import { NAV, useRoute, type Route } from './routes';
import { beginSignIn, forget, type Credential } from './session';
import { SessionContext, type SessionView } from './session-context';

export function App({ credential: initial, config, signInError }: { credential: Credential | undefined; config: ConsoleConfig; signInError?: Error }) {
  const [credential, setCredential] = useState(initial);
  useEffect(() => {
    onUnauthorized(() => {
      forget();
      setCredential(undefined);
    });
  }, []);
  if (credential === undefined) return <SignedOut config={config} error={signInError} />;
  const session: SessionView = { credential, portalOwner: credential.kind === 'portal' ? credential.owner : undefined };
  return (
    <SessionContext.Provider value={session}>
      <Shell
        session={session}
        onSignOut={() => {
          forget();
          setCredential(undefined);
        }}
      />
    </SessionContext.Provider>
  );
}

function Shell({ session, onSignOut }: { session: SessionView; onSignOut: () => void }) {
  const route = useRoute();
  useEffect(() => {
    // A new page: move focus to its heading, so keyboard and screen-reader users start there.
    document.querySelector<HTMLElement>('main h1')?.focus();
  }, [route.page]);
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">handoff</span>
        <nav aria-label="Console">
          <ul>
            {NAV.map((item) => (
              <li key={item.href}>
                <a href={item.href} aria-current={(item.pages as readonly string[]).includes(route.page) ? 'page' : undefined}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">
          <Who session={session} />
          <button type="button" class="link" onClick={onSignOut}>
            Sign out
          </button>
        </span>
      </header>
      {session.portalOwner !== undefined ? (
        <p class="portal-banner" role="note">
          Portal for <strong>{session.portalOwner}</strong>: only its endpoints and their deliveries.
        </p>
      ) : null}
      <main id="main" tabIndex={-1}>
        <Page route={route} />
      </main>
    </>
  );
}

function Who({ session }: { session: SessionView }) {
  const { credential } = session;
  if (credential.kind === 'portal') return <span>Portal link · valid until {formatTime(credential.expiresAt)}</span>;
  if (credential.kind === 'signed-in') return <span>Signed in</span>;
  return <span>Operator</span>;
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case 'overview':
      return <OverviewPage />;
    case 'endpoints':
      return <EndpointsPage owner={route.owner} state={route.state} />;
    case 'endpoint-new':
      return <EndpointFormPage />;
    case 'endpoint':
      return <EndpointPage name={route.name} />;
    case 'endpoint-edit':
      return <EndpointFormPage name={route.name} />;
    case 'lookup':
      return <LookupPage id={route.id} />;
    case 'dead':
      return <DeadLettersPage filters={route.filters} />;
  }
}

function SignedOut({ config, error }: { config: ConsoleConfig; error: Error | undefined }) {
  const [failure, setFailure] = useState(error);
  return (
    <main id="main" class="signed-out">
      <h1>handoff console</h1>
      {failure !== undefined ? (
        <p class="error" role="alert">
          {failure.message}
        </p>
      ) : null}
      {config.signIn !== undefined ? (
        <button type="button" class="primary" onClick={() => beginSignIn(config.signIn!).catch(setFailure)}>
          Sign in
        </button>
      ) : (
        <p>
          Open the console from the link that gave you access: the sandbox prints it at start (<code>console: …</code>, and
          <code> consoleUrl</code> in its READY line), and a portal link carries its own.
        </p>
      )}
    </main>
  );
}
