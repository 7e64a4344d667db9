/**
 * What the console's page learns of its deployment from `GET /console/config.json`. Types only: the
 * page (console/app/) and the server (console/site.ts) both read them, and neither imports the other.
 */

/** How the page signs people in: OIDC authorization code with PKCE, at the JWT authorizer's issuer. */
export interface ConsoleSignIn {
  /** The issuer the API's JWT authorizer trusts. */
  readonly issuer: string;
  /** The OAuth client the page signs in as (the authorizer's audience). */
  readonly clientId: string;
  /** The scopes asked for (the routes' required scopes, plus `openid`). */
  readonly scopes: readonly string[];
  /** Where to send the browser to sign in; read from the issuer's discovery document when absent. */
  readonly authorizeUrl?: string;
  /** Where the page trades the code for tokens; read from the issuer's discovery document when absent. */
  readonly tokenUrl?: string;
}

/** What `GET /console/config.json` answers: what the page needs to know of its deployment. */
export interface ConsoleConfig {
  readonly signIn?: ConsoleSignIn;
}
