/**
 * One route of the management API as data: its method and path, what it takes and answers as JSON
 * Schema (the OpenAPI document is generated from these, api/openapi.ts), and the use case it calls.
 * A route parses its own input with the same schemas the command validates with and throws
 * `invalid(...)` naming each bad field; the router does everything the routes share.
 */
import type { JsonSchema } from '../lib/endpoints/json-schema';
import type { CommandContext } from '../cli/context';
import type { Logger } from '../lib/observability';
import type { ApiRequest, HttpMethod } from './http';
import type { IdempotencyStore } from './idempotency';
import type { ProblemStatus } from './problem';

/** What every route runs with: wired once per container (functions/api.ts) or per sandbox (sandbox/api-server.ts). */
export interface ApiDeps {
  /** The deployment's clients, as the command builds them for a target: the same use cases run through it. */
  readonly context: CommandContext;
  /** Where `Idempotency-Key` answers are kept for 24 h. */
  readonly idempotency: IdempotencyStore;
  readonly now: () => number;
  /** One line per request: its ID, route, status and time; never what the caller sent. */
  readonly logger: Logger;
  /** What portal links are signed with and point at (api/portal-link.ts); without it, POST /v1/portal-links is 503. */
  readonly portal?: PortalLinkDeps;
}

export interface PortalLinkDeps {
  /** The key derived from the deployment's seal key (`portalKeySource`). */
  readonly key: () => Promise<Buffer>;
  /** The console's URL; the request's own origin + `/console/` when not given. */
  readonly consoleBase?: string;
}

export interface RouteCall {
  readonly request: ApiRequest;
  /** The path's parameters, decoded (`{name}` → `params.name`). */
  readonly params: Readonly<Record<string, string>>;
  /** The body parsed as JSON (undefined: none was sent); the route checks its shape. */
  readonly body: unknown;
  /** Who is calling (the audit's operator): proved by the authorizer, never read from the body. */
  readonly caller: string;
  /** Set when the caller holds a portal link: the one owner whose endpoints it may see (api/portal-link.ts). */
  readonly portalOwner?: string;
  readonly deps: ApiDeps;
}

/** What a route answers when it did what was asked; anything else it throws (api/problem.ts). */
export interface RouteAnswer {
  readonly status: number;
  readonly body: unknown;
}

export interface QueryParameter {
  readonly name: string;
  readonly description: string;
  readonly schema: JsonSchema;
  readonly required?: boolean;
}

export interface Route {
  readonly method: HttpMethod;
  /** An OpenAPI path template: `/v1/endpoints/{name}`. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tag: string;
  readonly query?: readonly QueryParameter[];
  /** The JSON body it takes (undefined: none). */
  readonly body?: { readonly schema: JsonSchema; readonly required?: boolean; readonly description?: string };
  /** Its answers when it succeeds, by status. */
  readonly responses: Readonly<Record<number, { readonly description: string; readonly schema?: JsonSchema }>>;
  /** The problems it can answer beyond those every route can (400, 401, 413, 429, 500). */
  readonly problems?: readonly ProblemStatus[];
  /**
   * `'owner'`: a portal link's holder may call it, and the route answers only for `call.portalOwner`'s
   * endpoints (`requireOwner`). Unmarked: a portal caller is refused (403 out-of-scope) before it runs.
   */
  readonly portal?: 'owner';
  /**
   * Top-level answer fields that are credentials shown once, beyond `secret` (which every answer is
   * kept without): an `Idempotency-Key` repeat gets `<field>Shown: true` in their place, and the
   * store never holds them. The response schema must allow both forms.
   */
  readonly shownOnce?: readonly string[];
  readonly handle: (call: RouteCall) => Promise<RouteAnswer>;
}

/** The path's parameter names, in order: `{name}` → `name`. */
export function pathParameters(path: string): string[] {
  return [...path.matchAll(/\{([A-Za-z]+)\}/g)].map((m) => m[1]!);
}
