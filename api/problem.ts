/**
 * What the API answers when it does not do what was asked: an RFC 9457 problem document
 * (`application/problem+json`), with `errors: [{path, message}]` naming each bad field of invalid
 * input. Every error the use cases throw is mapped here, by type and by its stable `code`, to one
 * status (docs/contract.md §16); anything unknown is a 500 that names only the request.
 */
import { UsageError, CommandFailedError } from '../cli/errors';
import {
  EndpointConflictError,
  EndpointError,
  EndpointNotFoundError,
  EndpointRefusedError,
  InvalidEventError,
  NothingToReleaseError,
  NothingToReplayError,
  ReplayInputError,
  SigningSecretError,
} from '../lib/errors';
import { ReplayRefusedError } from '../lib/ledger/errors';
import { safe } from '../lib/terminal';
import { RequestTooLargeError, type ApiResult } from './http';

export interface FieldProblem {
  /** A JSON Pointer-like dotted path into the request (`url`, `match.data.carrier`, `events.3.eventId`, `query.limit`). */
  readonly path: string;
  readonly message: string;
}

export const PROBLEM_STATUSES = {
  400: 'Invalid request',
  401: 'Unauthenticated',
  403: 'Out of scope',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Too large',
  415: 'Unsupported media type',
  429: 'Throttled',
  500: 'Internal error',
  503: 'Unavailable',
} as const;
export type ProblemStatus = keyof typeof PROBLEM_STATUSES;

/** Thrown by a route (or the router) to answer with a problem document. */
export class ApiProblem extends Error {
  override readonly name = 'ApiProblem';
  constructor(
    readonly status: ProblemStatus,
    /** A stable code (`invalid-request`, `endpoint-not-found`, …), the last part of the problem's `type`. */
    readonly code: string,
    detail: string,
    readonly errors: readonly FieldProblem[] = [],
    options?: ErrorOptions & { readonly headers?: Readonly<Record<string, string>> },
  ) {
    super(detail, options);
    this.headers = options?.headers ?? {};
  }

  /** Headers the answer needs beside the document (a 405's `Allow`). */
  readonly headers: Readonly<Record<string, string>>;
}

/** 400 naming each bad field. */
export function invalid(errors: readonly FieldProblem[], detail?: string): ApiProblem {
  return new ApiProblem(400, 'invalid-request', detail ?? `${errors.length === 1 ? 'one field is' : `${errors.length} fields are`} invalid: ${errors.map((e) => e.path).join(', ')}`, errors);
}

/** A bad field's path as answered: a caller's key is echoed inert and cut to this many characters. */
const MAX_PATH_CHARS = 128;

/** The problem's `type`: a URI naming the code, stable across versions. */
export const PROBLEM_TYPE_BASE = 'https://handoff.dev/problems/';

/** The codes that are conflicts with what exists rather than bad input. */
const CONFLICT_CODES = new Set(['endpoint-conflict', 'not-dead', 'released', 'nothing-to-replay', 'secret-in-secrets-manager', 'no-ordered-queue']);
/** The codes that mean the thing named is not there. */
const NOT_FOUND_CODES = new Set(['endpoint-not-found', 'not-found', 'no-event', 'event-not-found']);

/** The problem an error thrown by a use case (or the router) stands for. */
export function problemOf(error: unknown): ApiProblem {
  if (error instanceof ApiProblem) return error;
  if (error instanceof RequestTooLargeError) return new ApiProblem(413, error.code, error.message);
  if (error instanceof EndpointNotFoundError) return new ApiProblem(404, error.code, error.message);
  if (error instanceof EndpointConflictError) return new ApiProblem(409, error.code, error.message);
  if (error instanceof EndpointError) return invalid([{ path: error.field, message: error.message }]);
  if (error instanceof EndpointRefusedError) return invalid([{ path: 'url', message: error.message }]);
  if (error instanceof SigningSecretError) return invalid([{ path: 'secret', message: error.message }]);
  if (error instanceof InvalidEventError) return new ApiProblem(400, error.code, error.message);
  if (error instanceof ReplayInputError) return new ApiProblem(400, error.code, error.message);
  if (error instanceof ReplayRefusedError) return new ApiProblem(error.refusal === 'not-found' ? 404 : 409, error.refusal, error.message);
  if (error instanceof NothingToReplayError) return new ApiProblem(error.deliveries.length === 0 ? 404 : 409, error.code, error.message);
  if (error instanceof NothingToReleaseError) return new ApiProblem(409, error.code, error.message);
  if (error instanceof UsageError) return new ApiProblem(400, 'invalid-request', error.message);
  if (error instanceof CommandFailedError) return new ApiProblem(statusOfCode(error.code), error.code, error.message);
  return new ApiProblem(500, 'internal', 'the request failed inside handoff; its request ID is in the logs');
}

function statusOfCode(code: string): ProblemStatus {
  if (NOT_FOUND_CODES.has(code)) return 404;
  if (CONFLICT_CODES.has(code)) return 409;
  return 500;
}

/** The problem document as the answer. */
export function problemResult(problem: ApiProblem, requestId: string): ApiResult {
  const body = {
    type: `${PROBLEM_TYPE_BASE}${problem.code}`,
    title: PROBLEM_STATUSES[problem.status],
    status: problem.status,
    // Inert: a detail may quote what the caller sent (a name, a field), never as an instruction to a terminal.
    detail: safe(problem.message),
    instance: requestId,
    ...(problem.errors.length > 0 ? { errors: problem.errors.map((e) => ({ path: safe(e.path).slice(0, MAX_PATH_CHARS), message: safe(e.message) })) } : {}),
  };
  return {
    statusCode: problem.status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store', ...(problem.status === 401 ? { 'www-authenticate': 'Bearer' } : {}), ...problem.headers },
    body: JSON.stringify(body),
  };
}

/** The JSON Schema of a problem document, for the OpenAPI document. */
export const PROBLEM_SCHEMA = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail'],
  properties: {
    type: { type: 'string', format: 'uri' },
    title: { type: 'string' },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    detail: { type: 'string' },
    instance: { type: 'string' },
    errors: {
      type: 'array',
      items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } }, additionalProperties: false },
    },
  },
  additionalProperties: false,
} as const;
