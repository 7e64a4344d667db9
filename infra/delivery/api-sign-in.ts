/**
 * How people sign in to the management API and its console (docs/contract.md §16, §17): the JWT
 * authorizer of the API for people, and what the console's page is told of the sign-in
 * (`HANDOFF_CONSOLE_SIGN_IN`): an OIDC issuer the deployment names, or a Cognito user pool the
 * construct makes with its hosted sign-in. infra/delivery/api.ts builds the APIs around it.
 */
import { Aws, Duration, Fn, Lazy, Stack, Token } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer, HttpUserPoolAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import type { Construct } from 'constructs';
import type { ConsoleSignIn } from '../../console/site';
import { ConfigError } from '../../lib/errors';

/** How the API's callers prove who they are (docs/deploying.md "The management API"). */
export interface ApiAuth {
  /**
   * A second API (`ApiJwtUrl`) with the same routes behind a JWT authorizer, for people, and the
   * console on it (`ConsoleUrl`), signing in at the same issuer:
   * - `{ issuer, audience }`: tokens of an OIDC issuer (`https://…`, its `/.well-known/openid-configuration`
   *   must be reachable), with one of `audience` as `aud` (or `client_id`). The console signs in as
   *   the first audience (a public client with the authorization code flow and PKCE at the issuer,
   *   its redirect URI `ConsoleUrl`), at the endpoints the issuer's discovery document names, unless
   *   `console` says otherwise: `clientId`, the client it signs in as, and `authorizeUrl` with
   *   `tokenUrl` (both or neither), the issuer's endpoints. Give those when the token endpoint is
   *   on another origin than the issuer: the page's CSP lets it reach the issuer's origin and the
   *   token URL's, and no other, so a token endpoint only the discovery document names is refused;
   * - `{ userPool: true }`: a Cognito user pool the construct makes (no self sign-up, MFA required,
   *   12-character passwords), an app client, whose tokens it takes, and the pool's hosted sign-in
   *   (a Cognito domain) the console sends people to.
   * The caller recorded is `jwt:<sub>`. Unset: IAM alone.
   * `scopes`: a token must also grant one of these OAuth scopes (its `scope` claim) on every route,
   * so an issuer that serves other applications too can give this API only to whom it says. The
   * console asks for them, with `openid`. With the user pool, a scope `server/name` is defined on
   * the pool (a resource server `server`), and the app client may ask for it.
   */
  readonly jwt?:
    | {
        readonly issuer: string;
        readonly audience: readonly string[];
        readonly scopes?: readonly string[];
        /** How the console signs in at the issuer, where the first audience and the discovery document are not enough. */
        readonly console?: {
          /** The client the console signs in as: a public one (no secret, PKCE). Default: the first `audience`. */
          readonly clientId?: string;
          /** The issuer's authorization endpoint (https), with `tokenUrl`. Default: the discovery document's. */
          readonly authorizeUrl?: string;
          /** The issuer's token endpoint (https), with `authorizeUrl`; the page's CSP lets it reach its origin. Default: the discovery document's. */
          readonly tokenUrl?: string;
        };
      }
    | { readonly userPool: true; readonly scopes?: readonly string[] };
}

/** The API for people's authorizer, the console's sign-in, and the user pool when the construct makes one. */
export interface PeopleSignIn {
  readonly authorizer: apigw.IHttpRouteAuthorizer;
  readonly signIn: ConsoleSignIn;
  readonly userPool?: cognito.UserPool;
  readonly userPoolClient?: cognito.UserPoolClient;
  readonly userPoolDomain?: cognito.UserPoolDomain;
}

/**
 * The authorizer and sign-in for `apiAuth.jwt`. `consoleUrl` is read at synth, once the API it
 * authorizes is made: the user pool client's callback is the console on that API. @throws ConfigError naming apiAuth
 */
export function peopleSignIn(
  scope: Construct,
  jwt: NonNullable<ApiAuth['jwt']>,
  scopes: readonly string[] | undefined,
  consoleUrl: () => string | undefined,
): PeopleSignIn {
  const signInScopes = [...new Set(['openid', ...(scopes ?? [])])];
  if ('userPool' in jwt) {
    if ((jwt as { readonly console?: unknown }).console !== undefined) {
      throw new ConfigError('apiAuth', "jwt.console is for an issuer's sign-in: with userPool the stack makes the console's client and hosted sign-in");
    }
    const { userPool, userPoolClient, userPoolDomain } = apiUserPool(scope, {
      consoleUrl: Lazy.string({ produce: consoleUrl }),
      scopes: scopes ?? [],
    });
    const signInBase = userPoolDomain.baseUrl();
    return {
      authorizer: new HttpUserPoolAuthorizer('ApiJwtAuthorizer', userPool, { userPoolClients: [userPoolClient] }),
      signIn: {
        // The issuer API Gateway's user pool authorizer trusts (the tokens' `iss`).
        issuer: `https://cognito-idp.${Stack.of(scope).region}.amazonaws.com/${userPool.userPoolId}`,
        clientId: userPoolClient.userPoolClientId,
        scopes: signInScopes,
        authorizeUrl: `${signInBase}/oauth2/authorize`,
        tokenUrl: `${signInBase}/oauth2/token`,
      },
      userPool,
      userPoolClient,
      userPoolDomain,
    };
  }
  const audience = checkAudience(jwt.audience);
  const issuer = checkIssuer(jwt.issuer);
  const consoleSignIn = checkConsoleSignIn(jwt.console);
  return {
    authorizer: new HttpJwtAuthorizer('ApiJwtAuthorizer', issuer, { jwtAudience: audience }),
    // Without the endpoints, the issuer's discovery document names where to sign in and trade the code.
    signIn: {
      issuer,
      clientId: consoleSignIn.clientId ?? audience[0]!,
      scopes: signInScopes,
      ...(consoleSignIn.authorizeUrl !== undefined ? { authorizeUrl: consoleSignIn.authorizeUrl } : {}),
      ...(consoleSignIn.tokenUrl !== undefined ? { tokenUrl: consoleSignIn.tokenUrl } : {}),
    },
  };
}

/**
 * The user pool for people (`apiAuth.jwt.userPool`): accounts made by an administrator only,
 * sign-in by email, MFA by an authenticator app (required), passwords of 12 characters of every
 * kind, Plus tier with threat protection enforced (a handful of operators: its price is per active
 * user), retained with the stack as the tables are.
 *
 * The console signs in through the pool's hosted sign-in: a Cognito domain (a prefix of its own,
 * `handoff-<construct>-<stack ID>`: unique in the region, the same at every deploy of the stack) and
 * the app client's authorization code flow, a public client (no secret, so PKCE), whose only
 * callback and sign-out URL is the console.
 */
function apiUserPool(
  scope: Construct,
  options: { readonly consoleUrl: string; readonly scopes: readonly string[] },
): { userPool: cognito.UserPool; userPoolClient: cognito.UserPoolClient; userPoolDomain: cognito.UserPoolDomain } {
  const userPool = new cognito.UserPool(scope, 'ApiUserPool', {
    selfSignUpEnabled: false,
    signInAliases: { email: true },
    mfa: cognito.Mfa.REQUIRED,
    mfaSecondFactor: { otp: true, sms: false },
    passwordPolicy: { minLength: 12, requireLowercase: true, requireUppercase: true, requireDigits: true, requireSymbols: true },
    accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
    featurePlan: cognito.FeaturePlan.PLUS,
    standardThreatProtectionMode: cognito.StandardThreatProtectionMode.FULL_FUNCTION,
    deletionProtection: true,
  });
  const userPoolClient = userPool.addClient('ApiClient', {
    authFlows: { userSrp: true },
    generateSecret: false,
    preventUserExistenceErrors: true,
    accessTokenValidity: Duration.hours(1),
    idTokenValidity: Duration.hours(1),
    supportedIdentityProviders: [cognito.UserPoolClientIdentityProvider.COGNITO],
    oAuth: {
      flows: { authorizationCodeGrant: true, implicitCodeGrant: false, clientCredentials: false },
      scopes: [cognito.OAuthScope.OPENID, ...oAuthScopes(userPool, options.scopes)],
      callbackUrls: [options.consoleUrl],
      logoutUrls: [options.consoleUrl],
    },
  });
  // Domain prefixes are global to a region: the stack's ID (a UUID) keeps it unique, the
  // construct's address tells two constructs of one stack apart.
  const stackUuid = Fn.select(2, Fn.split('/', Aws.STACK_ID));
  const construct = scope.node.addr.slice(-8);
  const userPoolDomain = userPool.addDomain('ApiSignIn', {
    cognitoDomain: { domainPrefix: Fn.join('-', ['handoff', construct, stackUuid]) },
  });
  return { userPool, userPoolClient, userPoolDomain };
}

/**
 * The OAuth scopes the app client may ask for besides `openid`: the standard ones by name, and a
 * custom `server/name` on a resource server `server` made on the pool (a scope Cognito does not
 * know would fail the deploy). A scope of neither form cannot be a Cognito scope. @throws ConfigError
 */
function oAuthScopes(userPool: cognito.UserPool, scopes: readonly string[]): cognito.OAuthScope[] {
  const standard: Readonly<Record<string, cognito.OAuthScope>> = {
    openid: cognito.OAuthScope.OPENID,
    email: cognito.OAuthScope.EMAIL,
    phone: cognito.OAuthScope.PHONE,
    profile: cognito.OAuthScope.PROFILE,
    'aws.cognito.signin.user.admin': cognito.OAuthScope.COGNITO_ADMIN,
  };
  const servers = new Map<string, string[]>();
  const out: cognito.OAuthScope[] = [];
  for (const name of scopes) {
    if (name === 'openid') continue;
    const known = standard[name];
    if (known !== undefined) {
      out.push(known);
      continue;
    }
    const slash = name.lastIndexOf('/');
    if (slash <= 0 || slash === name.length - 1) {
      throw new ConfigError('apiAuth', `jwt.scopes with userPool must be Cognito scopes (openid, email, phone, profile, aws.cognito.signin.user.admin) or server/name, got ${JSON.stringify(name.slice(0, 80))}`);
    }
    const server = name.slice(0, slash);
    servers.set(server, [...(servers.get(server) ?? []), name.slice(slash + 1)]);
  }
  [...servers].forEach(([identifier, names], i) => {
    const resourceServer = userPool.addResourceServer(`ApiScopes${i}`, {
      identifier,
      userPoolResourceServerName: identifier,
      scopes: names.map((scopeName) => new cognito.ResourceServerScope({ scopeName, scopeDescription: `handoff management API: ${scopeName}` })),
    });
    for (const scopeName of names) {
      out.push(cognito.OAuthScope.resourceServer(resourceServer, new cognito.ResourceServerScope({ scopeName, scopeDescription: `handoff management API: ${scopeName}` })));
    }
  });
  return out;
}

/** @throws ConfigError */
function checkIssuer(issuer: string): string {
  // Known at deploy only (a parameter): API Gateway checks it then.
  if (Token.isUnresolved(issuer)) return issuer;
  if (!/^https:\/\/[^\s/?#@]+(\/[^\s?#]*)?$/.test(issuer)) {
    throw new ConfigError('apiAuth', `jwt.issuer must be an https URL without a query, got ${JSON.stringify(issuer.slice(0, 80))}`);
  }
  return issuer;
}

/** @throws ConfigError */
function checkAudience(audience: readonly string[]): string[] {
  if (audience.length === 0 || audience.some((a) => typeof a !== 'string' || a.trim() === '')) {
    throw new ConfigError('apiAuth', 'jwt.audience must name at least one audience, none empty');
  }
  return [...audience];
}

/**
 * The console's sign-in at an issuer (`jwt.console`): a client ID that is not empty, and the
 * authorize and token URLs as https URLs without a fragment, both or neither (the page reads them
 * together, or both from the discovery document). @throws ConfigError naming apiAuth
 */
function checkConsoleSignIn(given: { readonly clientId?: string; readonly authorizeUrl?: string; readonly tokenUrl?: string } | undefined): {
  clientId?: string;
  authorizeUrl?: string;
  tokenUrl?: string;
} {
  if (given === undefined) return {};
  const { clientId, authorizeUrl, tokenUrl } = given;
  if (clientId !== undefined && !Token.isUnresolved(clientId) && (typeof clientId !== 'string' || clientId.trim() === '')) {
    throw new ConfigError('apiAuth', 'jwt.console.clientId must be the OAuth client the console signs in as, not empty');
  }
  if ((authorizeUrl === undefined) !== (tokenUrl === undefined)) {
    throw new ConfigError('apiAuth', 'jwt.console needs authorizeUrl and tokenUrl together (the console reads both, or both from the discovery document)');
  }
  for (const [name, url] of [['authorizeUrl', authorizeUrl], ['tokenUrl', tokenUrl]] as const) {
    // Known at deploy only (a parameter): the function's cold start checks it then.
    if (url === undefined || Token.isUnresolved(url)) continue;
    if (!/^https:\/\/[^\s/?#@]+(\/[^\s#]*)?$/.test(url)) {
      throw new ConfigError('apiAuth', `jwt.console.${name} must be an https URL without a fragment, got ${JSON.stringify(String(url).slice(0, 80))}`);
    }
  }
  return {
    ...(clientId !== undefined ? { clientId } : {}),
    ...(authorizeUrl !== undefined ? { authorizeUrl } : {}),
    ...(tokenUrl !== undefined ? { tokenUrl } : {}),
  };
}

/** @throws ConfigError naming apiAuth when a scope is empty or holds a space (a scope claim is space-separated) */
export function checkScopes(scopes: readonly string[] | undefined): readonly string[] | undefined {
  if (scopes === undefined) return undefined;
  if (scopes.length === 0 || scopes.some((scope) => !/^[\x21-\x7e]+$/.test(scope))) {
    throw new ConfigError('apiAuth', 'jwt.scopes must name at least one scope, each printable and without spaces');
  }
  return scopes;
}
