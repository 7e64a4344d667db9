/**
 * The management API's one handler (docs/contract.md §16): API Gateway's event in, its result out,
 * in AWS and in the sandbox alike. In order: the body's size, the caller, the route, the body as
 * JSON, `Idempotency-Key`, the route's use case, and every failure as a problem document. Logs carry
 * the request ID, the route, the status and the time taken; nothing the caller sent.
 */
import { errorFields } from '../lib/observability';
import { auditTextProblem } from '../lib/replay';
import type { ApiEvent, ApiResult } from './http';
import { jsonResult, requestOf, type ApiRequest } from './http';
import { fingerprintOf, IDEMPOTENCY_KEY, storedKey, withoutSecrets } from './idempotency';
import { outOfScope, portalOwnerOf, withoutOperators } from './portal-link';
import { ApiProblem, invalid, problemOf, problemResult } from './problem';
import { pathParameters, type ApiDeps, type Route, type RouteAnswer } from './route';

interface CompiledRoute {
  readonly route: Route;
  readonly pattern: RegExp;
  readonly names: readonly string[];
}

export type ApiHandler = (event: ApiEvent) => Promise<ApiResult>;

export function createApiHandler(routes: readonly Route[], deps: ApiDeps): ApiHandler {
  const compiled: CompiledRoute[] = routes.map((route) => ({
    route,
    names: pathParameters(route.path),
    pattern: new RegExp(`^${route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[A-Za-z]+\\?\}/g, '([^/]+)')}$`),
  }));

  return async (event) => {
    const started = performance.now();
    const requestId = event.requestContext?.requestId ?? 'unknown';
    let operation = 'unmatched';
    let result: ApiResult;
    try {
      const request = requestOf(event);
      if (request.caller === undefined) throw new ApiProblem(401, 'unauthenticated', 'the request carries no credentials this API takes');
      // The caller is every audited change's operator: an identity an audit cannot keep is refused.
      if (auditTextProblem('caller', request.caller) !== undefined) {
        throw new ApiProblem(401, 'caller-unrecordable', 'the identity the credentials prove cannot be kept in an audit (too long, or holding control characters)');
      }
      const { route, params } = match(compiled, request);
      operation = route.operationId;
      const portalOwner = portalScope(route, request.caller);
      const answer = await answerOnce(route, request, params, request.caller, portalOwner, deps);
      // A portal link's holder is outside the deployment: who operated it (IAM principals) is not theirs to see.
      const body = portalOwner === undefined ? answer.body : withoutOperators(answer.body);
      result = answer.status === 204 ? { statusCode: 204, headers: { 'cache-control': 'no-store' } } : jsonResult(answer.status, body);
    } catch (error) {
      const problem = problemOf(error);
      if (problem.status >= 500) deps.logger.error('api request failed', { requestId, operation, ...errorFields(error) });
      result = problemResult(problem, requestId);
    }
    deps.logger.info('api request', { requestId, operation, status: result.statusCode, ms: Math.round(performance.now() - started) });
    return result;
  };
}

/** The route the method and path name, with its path's parameters. @throws ApiProblem 404, 405 */
function match(compiled: readonly CompiledRoute[], request: ApiRequest): { route: Route; params: Record<string, string> } {
  const allowed: string[] = [];
  for (const { route, pattern, names } of compiled) {
    const found = pattern.exec(request.path);
    if (found === null) continue;
    allowed.push(route.method);
    if (route.method !== request.method) continue;
    const params: Record<string, string> = {};
    names.forEach((name, i) => {
      try {
        params[name] = decodeURIComponent(found[i + 1]!);
      } catch {
        throw invalid([{ path: `path.${name}`, message: 'is not a valid percent-encoded path segment' }]);
      }
    });
    return { route, params };
  }
  if (allowed.length > 0) {
    throw new ApiProblem(405, 'method-not-allowed', `${request.method} is not allowed on this path`, [], { headers: { allow: allowed.join(', ') } });
  }
  throw new ApiProblem(404, 'no-such-path', 'no resource at this path (the API is described at /v1/openapi.json)');
}

/**
 * The owner a portal link's holder is scoped to (undefined for every other caller), checked before
 * anything runs: a portal caller reaches only the routes marked for it. @throws ApiProblem 403
 */
function portalScope(route: Route, caller: string): string | undefined {
  const owner = portalOwnerOf(caller);
  if (owner !== undefined && route.portal !== 'owner') throw outOfScope();
  return owner;
}

/** Runs the route once per `Idempotency-Key` (api/idempotency.ts); without one, runs it. */
async function answerOnce(
  route: Route,
  request: ApiRequest,
  params: Record<string, string>,
  caller: string,
  portalOwner: string | undefined,
  deps: ApiDeps,
): Promise<RouteAnswer> {
  const body = parseBody(route, request);
  const run = () => route.handle({ request, params, body, caller, ...(portalOwner === undefined ? {} : { portalOwner }), deps });
  const key = request.headers['idempotency-key'];
  if (route.method !== 'POST' || key === undefined) return run();
  if (!IDEMPOTENCY_KEY.test(key)) throw invalid([{ path: 'header.Idempotency-Key', message: 'must be 1–255 printable ASCII characters' }]);
  const stored = storedKey(caller, key);
  const fingerprint = fingerprintOf(request.method, request.path, request.query, request.body);
  const claim = await deps.idempotency.claim(stored, fingerprint, deps.now());
  switch (claim.kind) {
    case 'answered':
      return claim.answer;
    case 'in-progress':
      throw new ApiProblem(409, 'idempotency-key-in-use', 'a request with this Idempotency-Key is still being answered: repeat it shortly');
    case 'mismatch':
      throw new ApiProblem(409, 'idempotency-key-reused', 'this Idempotency-Key was used within 24 h for a different request');
    case 'unkept':
      throw new ApiProblem(
        409,
        'idempotency-answer-too-large',
        `the request with this Idempotency-Key was done (status ${claim.status}), but its answer was too large to keep: read the resource instead of repeating`,
      );
    case 'claimed':
      break;
  }
  let answer: RouteAnswer;
  try {
    answer = await run();
  } catch (error) {
    // Nothing was done (or what was done is the use case's to repeat safely): the key is free again.
    await deps.idempotency.release(stored).catch(() => {});
    throw error;
  }
  try {
    await deps.idempotency.complete(stored, fingerprint, { status: answer.status, body: withoutSecrets(answer.body, route.shownOnce) }, deps.now());
  } catch (error) {
    // The use case ran: its answer (a secret shown once among it) goes back whatever the store did.
    // The key stays claimed, so a repeat meanwhile is told it is in use rather than run again at once.
    deps.logger.warn('idempotency answer not kept', { requestId: request.requestId, operation: route.operationId, ...errorFields(error) });
  }
  return answer;
}

/** The body as JSON, or undefined when none was sent. @throws ApiProblem 400, 415 */
function parseBody(route: Route, request: ApiRequest): unknown {
  if (request.body === undefined) {
    if (route.body?.required === true) throw invalid([{ path: 'body', message: 'is required: a JSON object' }]);
    return undefined;
  }
  if (route.body === undefined) throw invalid([{ path: 'body', message: 'must be empty: this operation takes none' }]);
  const type = request.headers['content-type'];
  if (type !== undefined && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(type)) {
    throw new ApiProblem(415, 'unsupported-media-type', 'the body must be JSON (Content-Type: application/json)');
  }
  try {
    return JSON.parse(request.body);
  } catch {
    throw invalid([{ path: 'body', message: 'is not JSON' }]);
  }
}
