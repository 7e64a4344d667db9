/**
 * Who the page acts as: the credential every API call carries as `Authorization: Bearer`.
 *
 * - `operator`: the sandbox's API token, from `consoleUrl`'s fragment `#token=…`.
 * - `portal`: a portal link's token, `#portal=v1.<payload>.<mac>`; the payload (base64url JSON
 *   `{v, owner, exp}`) names the owner and the expiry, which the page shows. The API checks the MAC
 *   and scopes every call to that owner: the page reading the payload decides nothing.
 * - `signed-in`: an access token from the deployment's sign-in (OIDC authorization code with PKCE at
 *   the JWT authorizer's issuer, `GET /console/config.json` says where).
 *
 * A fragment never reaches a server, so the token is in no log. The page keeps the credential in
 * sessionStorage (gone with the tab) and replaces the fragment in the address bar at once
 * (history.replaceState), so a link copied from it or a screen shared shows no token. The browser's
 * history is another matter: Chromium keeps the address the page was opened with, token and all,
 * in its History, as other browsers may; on a machine someone else uses, open a link in a private
 * window, or clear that entry. A portal link's token expires (24 h at most); the sandbox's token
 * changes at each start.
 *
 * Only a fragment that is not a route (`#/…`) is read as a credential: a route's query
 * (`#/lookup?id=…&token=…`) is a route's, and never replaces the credential the tab holds.
 */
import type { ConsoleConfig, ConsoleSignIn } from '../config';

export type Credential =
  | { readonly kind: 'operator'; readonly token: string }
  | { readonly kind: 'portal'; readonly token: string; readonly owner: string; readonly expiresAt: number }
  | { readonly kind: 'signed-in'; readonly token: string; readonly expiresAt: number };

const STORAGE_KEY = 'handoff.console.credential';
const SIGN_IN_KEY = 'handoff.console.sign-in';

let credential: Credential | undefined;

export function currentCredential(): Credential | undefined {
  if (credential !== undefined && 'expiresAt' in credential && credential.expiresAt <= Date.now()) forget();
  return credential;
}

export function forget(): void {
  credential = undefined;
  sessionStorage.removeItem(STORAGE_KEY);
}

function keep(next: Credential): Credential {
  credential = next;
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(next));
  return next;
}

/** The owner and expiry a portal token's payload names; undefined for anything that is not one. */
export function portalClaims(token: string): { owner: string; expiresAt: number } | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== 'v1') return undefined;
  try {
    const json = atob(parts[1]!.replace(/-/g, '+').replace(/_/g, '/'));
    const { owner, exp } = JSON.parse(json) as { owner?: unknown; exp?: unknown };
    if (typeof owner !== 'string' || typeof exp !== 'number') return undefined;
    return { owner, expiresAt: exp * 1000 };
  } catch {
    return undefined;
  }
}

/**
 * The credential this page was opened with (its fragment), or the one this tab already holds. A
 * credential in the fragment replaces the held one, and the fragment becomes the first page's route.
 */
export function takeCredential(): Credential | undefined {
  // A route (`#/lookup?id=…`) is not a credential, whatever its query holds.
  const fragment = new URLSearchParams(location.hash.startsWith('#/') ? '' : location.hash.replace(/^#/, ''));
  const token = fragment.get('token');
  const portal = fragment.get('portal');
  let taken: Credential | undefined;
  if (token !== null && token !== '') taken = { kind: 'operator', token };
  else if (portal !== null && portal !== '') {
    const claims = portalClaims(portal);
    if (claims !== undefined) taken = { kind: 'portal', token: portal, ...claims };
  }
  if (taken !== undefined || token !== null || portal !== null) {
    history.replaceState(null, '', `${location.pathname}#/overview`);
  }
  if (taken !== undefined) return keep(taken);
  const held = sessionStorage.getItem(STORAGE_KEY);
  if (held !== null) {
    try {
      credential = JSON.parse(held) as Credential;
    } catch {
      forget();
    }
  }
  return currentCredential();
}

export async function loadConfig(): Promise<ConsoleConfig> {
  try {
    const response = await fetch('config.json', { cache: 'no-store', credentials: 'omit' });
    return response.ok ? ((await response.json()) as ConsoleConfig) : {};
  } catch {
    return {};
  }
}

// --- Sign-in: OIDC authorization code with PKCE (RFC 7636), for a deployment with a JWT issuer.

interface Endpoints {
  readonly authorizeUrl: string;
  readonly tokenUrl: string;
}

async function endpointsOf(signIn: ConsoleSignIn): Promise<Endpoints> {
  if (signIn.authorizeUrl !== undefined && signIn.tokenUrl !== undefined) return { authorizeUrl: signIn.authorizeUrl, tokenUrl: signIn.tokenUrl };
  const response = await fetch(`${signIn.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`, { credentials: 'omit' });
  if (!response.ok) throw new Error(`the issuer's discovery document answered ${response.status}`);
  const document = (await response.json()) as { authorization_endpoint?: unknown; token_endpoint?: unknown };
  if (typeof document.authorization_endpoint !== 'string' || typeof document.token_endpoint !== 'string') {
    throw new Error("the issuer's discovery document names no authorization or token endpoint");
  }
  return { authorizeUrl: document.authorization_endpoint, tokenUrl: document.token_endpoint };
}

function randomText(bytes: number): string {
  const values = crypto.getRandomValues(new Uint8Array(bytes));
  return base64url(values);
}

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The page's own address without query or fragment: the redirect URI the client is registered with. */
function redirectUri(): string {
  return `${location.origin}${location.pathname}`;
}

/** Sends the browser to the issuer to sign in. */
export async function beginSignIn(signIn: ConsoleSignIn): Promise<void> {
  const { authorizeUrl } = await endpointsOf(signIn);
  const verifier = randomText(32);
  const state = randomText(16);
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  sessionStorage.setItem(SIGN_IN_KEY, JSON.stringify({ verifier, state }));
  const url = new URL(authorizeUrl);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: signIn.clientId,
    redirect_uri: redirectUri(),
    scope: signIn.scopes.join(' '),
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  location.assign(url.toString());
}

/**
 * Back from the issuer with `?code&state`: trades the code for an access token, which becomes the
 * credential. Undefined when the page was not opened by a sign-in. @throws Error when the sign-in failed
 */
export async function completeSignIn(signIn: ConsoleSignIn): Promise<Credential | undefined> {
  const query = new URLSearchParams(location.search);
  const code = query.get('code');
  const error = query.get('error');
  if (code === null && error === null) return undefined;
  history.replaceState(null, '', `${location.pathname}#/overview`);
  const started = sessionStorage.getItem(SIGN_IN_KEY);
  sessionStorage.removeItem(SIGN_IN_KEY);
  if (error !== null) throw new Error(`the sign-in was refused: ${error}`);
  const { verifier, state } = (started === null ? {} : JSON.parse(started)) as { verifier?: string; state?: string };
  if (verifier === undefined || state !== query.get('state')) throw new Error('the sign-in did not start from this tab: sign in again');
  const { tokenUrl } = await endpointsOf(signIn);
  const response = await fetch(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', client_id: signIn.clientId, code: code!, redirect_uri: redirectUri(), code_verifier: verifier }),
    credentials: 'omit',
  });
  if (!response.ok) throw new Error(`the issuer refused the sign-in code (${response.status})`);
  const tokens = (await response.json()) as { access_token?: unknown; expires_in?: unknown };
  if (typeof tokens.access_token !== 'string') throw new Error('the issuer answered no access token');
  const seconds = typeof tokens.expires_in === 'number' ? tokens.expires_in : 3600;
  return keep({ kind: 'signed-in', token: tokens.access_token, expiresAt: Date.now() + seconds * 1000 });
}
