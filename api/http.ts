/**
 * The management API's requests and answers as its one handler sees them (docs/contract.md §16),
 * read from API Gateway's HTTP API event (payload format 2.0) and written back as its result. The
 * sandbox's Node server builds the same event (sandbox/api-server.ts), so both run one router.
 */
import type { APIGatewayProxyEventV2WithRequestContext, APIGatewayProxyResultV2, APIGatewayEventRequestContextV2 } from 'aws-lambda';

/** What the authorizer in front said of the caller: API Gateway's IAM or JWT authorizer, or the sandbox's bearer check. */
export interface CallerAuthorizer {
  readonly iam?: { readonly userArn?: string; readonly callerId?: string };
  readonly jwt?: { readonly claims?: Readonly<Record<string, unknown>> };
  readonly lambda?: { readonly principal?: string };
}

export type ApiEvent = APIGatewayProxyEventV2WithRequestContext<APIGatewayEventRequestContextV2 & { readonly authorizer?: CallerAuthorizer }>;
export type ApiResult = Exclude<APIGatewayProxyResultV2, string>;

export const HTTP_METHODS = ['GET', 'POST', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** The largest request body taken (a batch of 500 events at the consumer's payload limit would not fit: each event is checked on its own). */
export const MAX_BODY_BYTES = 1024 * 1024;

export interface ApiRequest {
  readonly method: string;
  /** The path, decoded, without the query. */
  readonly path: string;
  /** The query's parameters as API Gateway gives them: a repeated one's values joined by commas. */
  readonly query: Readonly<Record<string, string | undefined>>;
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** The body as text, undefined when there is none. */
  readonly body: string | undefined;
  /** Who is calling, as the authorizer proved it: the audit's operator. Undefined: nobody proved anything. */
  readonly caller: string | undefined;
  /** API Gateway's request ID (or the sandbox's), for logs and problem documents. */
  readonly requestId: string;
}

/** The request an HTTP API event carries. @throws RequestTooLargeError when the body is over MAX_BODY_BYTES */
export function requestOf(event: ApiEvent): ApiRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) headers[name.toLowerCase()] = value;
  let body: string | undefined;
  if (event.body !== undefined && event.body !== null && event.body !== '') {
    const bytes = event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
    if (bytes.byteLength > MAX_BODY_BYTES) throw new RequestTooLargeError(bytes.byteLength);
    body = bytes.toString('utf8');
  }
  return {
    method: event.requestContext.http.method.toUpperCase(),
    path: event.rawPath,
    query: { ...(event.queryStringParameters ?? {}) },
    headers,
    body,
    caller: callerOf(event.requestContext.authorizer),
    requestId: event.requestContext.requestId,
  };
}

/** The caller an authorizer proved: an IAM principal's ARN, a JWT's subject, the sandbox's token holder. */
export function callerOf(authorizer: CallerAuthorizer | undefined): string | undefined {
  const iam = authorizer?.iam?.userArn ?? authorizer?.iam?.callerId;
  if (typeof iam === 'string' && iam !== '') return iam;
  const subject = authorizer?.jwt?.claims?.sub;
  if (typeof subject === 'string' && subject !== '') return `jwt:${subject}`;
  const principal = authorizer?.lambda?.principal;
  if (typeof principal === 'string' && principal !== '') return principal;
  return undefined;
}

export class RequestTooLargeError extends Error {
  override readonly name = 'RequestTooLargeError';
  readonly code = 'too-large';
  constructor(readonly bytes: number) {
    super(`the request body is ${bytes} bytes; at most ${MAX_BODY_BYTES} are taken`);
  }
}

/** A JSON answer. */
export function jsonResult(statusCode: number, body: unknown, headers: Readonly<Record<string, string>> = {}): ApiResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}
