/**
 * API Gateway HTTP API events (payload format 2.0) as API Gateway hands the management API's handler
 * one, for tests that drive `createApiHandler` directly: the method, the path, the query, a JSON
 * body, headers, and the caller the IAM authorizer proved (none: no credentials at all).
 */
import type { ApiEvent } from '../../api/http';

export interface ApiEventSpec {
  readonly method: string;
  /** The path, without the query. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  /** Sent as JSON; a string is sent as it is. */
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** The IAM principal's ARN; null: the request carries no credentials. */
  readonly caller?: string | null;
  /** Who proved the caller: API Gateway's IAM authorizer (default), or a Lambda authorizer's principal (a portal link's, the sandbox's token). */
  readonly authorizer?: 'iam' | 'lambda';
}

/** The caller of every event unless told. */
export const DEFAULT_CALLER = 'arn:aws:iam::123456789012:user/alice';

let requests = 0;

export function apiEvent(spec: ApiEventSpec): ApiEvent {
  requests += 1;
  const query = spec.query ?? {};
  const body = spec.body === undefined ? undefined : typeof spec.body === 'string' ? spec.body : JSON.stringify(spec.body);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: spec.path,
    rawQueryString: new URLSearchParams(query).toString(),
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...spec.headers },
    ...(Object.keys(query).length === 0 ? {} : { queryStringParameters: { ...query } }),
    requestContext: {
      accountId: '123456789012',
      apiId: 'test',
      domainName: 'api.test',
      domainPrefix: 'api',
      http: { method: spec.method, path: spec.path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
      requestId: `req-${requests}`,
      routeKey: '$default',
      stage: '$default',
      time: '04/Dec/2026:00:00:00 +0000',
      timeEpoch: 0,
      ...(spec.caller === null
        ? {}
        : { authorizer: spec.authorizer === 'lambda' ? { lambda: { principal: spec.caller ?? DEFAULT_CALLER } } : { iam: { userArn: spec.caller ?? DEFAULT_CALLER } } }),
    },
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: false,
  } as unknown as ApiEvent;
}

/** The `url` of an event, path and query, as a validator takes it. */
export function urlOf(event: ApiEvent): string {
  return event.rawQueryString === '' ? event.rawPath : `${event.rawPath}?${event.rawQueryString}`;
}
