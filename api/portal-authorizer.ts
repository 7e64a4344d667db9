/**
 * The portal API's authorizer (infra/delivery/api.ts): API Gateway's Lambda REQUEST authorizer,
 * simple responses, in front of every /v1 route of the API portal links point at. It takes a
 * portal token (api/portal-link.ts) as the bearer, and answers the caller it proves,
 * `portal:<owner>`, in its context; API Gateway hands that to the API's function as
 * `requestContext.authorizer.lambda.principal` (api/http.ts `callerOf`), and the router scopes the
 * request to that owner. Anything else is refused: no header, another scheme, a token this
 * deployment did not sign, one that has expired.
 *
 * API Gateway caches no answer (the construct turns the cache off), so a link stops working the
 * second it expires. A refusal is logged with its reason and the request ID, never the token.
 */
import { errorFields, type Logger } from '../lib/observability';
import { PortalTokenError, portalCallerOf, verifyPortalToken } from './portal-link';

/** What the authorizer hands API Gateway for a proven caller: the principal the router reads. */
export interface PortalAuthorizerContext {
  readonly principal: string;
}

/** A simple response (payload format 2.0): allowed with the caller, or refused. */
export type PortalAuthorizerResult = { readonly isAuthorized: true; readonly context: PortalAuthorizerContext } | { readonly isAuthorized: false };

/** What the authorizer reads of API Gateway's REQUEST authorizer event (aws-lambda's APIGatewayRequestAuthorizerEventV2). */
export interface PortalAuthorizerEvent {
  /** Header names in lower case, as API Gateway's HTTP API sends them. */
  readonly headers?: Readonly<Record<string, string | undefined>>;
  /** The identity source's values: here the Authorization header. */
  readonly identitySource?: readonly string[] | null;
  readonly requestContext?: { readonly requestId?: string; readonly routeKey?: string };
}

/** Why a request was refused, as the log line names it. */
export type PortalRefusal = 'no-credential' | 'not-bearer' | PortalTokenError['problem'];

export interface PortalAuthorizerDeps {
  /** The key portal tokens are signed with (api/portal-link.ts `portalKeySource`). */
  readonly key: () => Promise<Buffer>;
  readonly now: () => number;
  readonly logger: Logger;
}

/**
 * The authorizer's handler. A token that does not verify is a refusal, never an error; only a key
 * that cannot be read throws, so API Gateway answers 500 (the portal API's 5xx alarm) and the page
 * does not take a deployment's fault for a link's end.
 */
export function createPortalAuthorizer(deps: PortalAuthorizerDeps): (event: PortalAuthorizerEvent) => Promise<PortalAuthorizerResult> {
  return async (event) => {
    const refuse = (reason: PortalRefusal): PortalAuthorizerResult => {
      deps.logger.warn('portal request refused', { reason, requestId: event.requestContext?.requestId, route: event.requestContext?.routeKey });
      return { isAuthorized: false };
    };
    const credential = bearerOf(event);
    if (credential === undefined) return refuse('no-credential');
    if (credential === null) return refuse('not-bearer');
    let key: Buffer;
    try {
      key = await deps.key();
    } catch (error) {
      deps.logger.error('portal key unreadable', { requestId: event.requestContext?.requestId, ...errorFields(error) });
      throw error;
    }
    try {
      const { owner } = verifyPortalToken(credential, key, deps.now());
      return { isAuthorized: true, context: { principal: portalCallerOf(owner) } };
    } catch (error) {
      if (error instanceof PortalTokenError) return refuse(error.problem);
      throw error;
    }
  };
}

/**
 * The bearer token of the request's Authorization header: undefined when there is none, null when
 * it is of another scheme (or empty). The scheme is case-insensitive (RFC 9110).
 */
export function bearerOf(event: Pick<PortalAuthorizerEvent, 'headers' | 'identitySource'>): string | undefined | null {
  let header: string | undefined;
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (name.toLowerCase() === 'authorization') header = value;
  }
  header ??= event.identitySource?.[0];
  if (header === undefined || header.trim() === '') return undefined;
  const match = /^Bearer +(\S+)\s*$/i.exec(header.trim());
  return match === null ? null : match[1]!;
}
