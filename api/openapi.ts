/**
 * The OpenAPI 3.1 document (`GET /v1/openapi.json`), generated from the routes (api/routes/): each
 * route's parameters, body and answers are the JSON Schemas it validates and answers with, so the
 * document cannot describe an API other than the one that runs.
 */
import { createRequire } from 'node:module';
import { PROBLEM_SCHEMA, PROBLEM_STATUSES, type ProblemStatus } from './problem';
import { pathParameters, type Route } from './route';

/** The problems every route can answer (403: a portal link's holder on a route not marked for it, api/portal-link.ts). */
const COMMON_PROBLEMS: readonly ProblemStatus[] = [400, 401, 403, 413, 429, 500];
/** What every POST can answer besides: 409 for an `Idempotency-Key` in use, reused, or whose answer was too large to keep. */
const POST_PROBLEMS: readonly ProblemStatus[] = [409];

export type OpenApiDocument = Record<string, unknown> & { readonly paths: Record<string, Record<string, unknown>> };

export function openApiDocument(routes: readonly Route[]): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description !== undefined ? { description: route.description } : {}),
      tags: [route.tag],
      parameters: [
        ...pathParameters(route.path).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
        ...(route.query ?? []).map((q) => ({ name: q.name, in: 'query', required: q.required === true, description: q.description, schema: q.schema })),
        ...(route.method === 'POST'
          ? [
              {
                name: 'Idempotency-Key',
                in: 'header',
                required: false,
                description: 'A repeat with the same key within 24 h gets the first answer, and nothing is done twice.',
                schema: { type: 'string', minLength: 1, maxLength: 255 },
              },
            ]
          : []),
      ],
      ...(route.body !== undefined
        ? {
            requestBody: {
              required: route.body.required === true,
              ...(route.body.description !== undefined ? { description: route.body.description } : {}),
              content: { 'application/json': { schema: route.body.schema } },
            },
          }
        : {}),
      responses: {
        ...Object.fromEntries(
          Object.entries(route.responses).map(([status, r]) => [
            status,
            { description: r.description, ...(r.schema !== undefined ? { content: { 'application/json': { schema: r.schema } } } : {}) },
          ]),
        ),
        ...Object.fromEntries(
          [...new Set([...COMMON_PROBLEMS, ...(route.method === 'POST' ? POST_PROBLEMS : []), ...(route.problems ?? [])])]
            .sort()
            .map((status) => [String(status), { $ref: `#/components/responses/Problem${status}` }]),
        ),
      },
    };
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  const statuses = Object.keys(PROBLEM_STATUSES).map(Number) as ProblemStatus[];
  return {
    openapi: '3.1.0',
    info: {
      title: 'handoff management API',
      version: packageVersion(),
      description: 'Endpoints, events, deliveries, replays and stats of a handoff deployment. Errors are RFC 9457 problem documents.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ sigv4: [] }, { bearer: [] }],
    paths,
    components: {
      schemas: { Problem: PROBLEM_SCHEMA },
      responses: Object.fromEntries(
        statuses.map((status) => [
          `Problem${status}`,
          { description: PROBLEM_STATUSES[status], content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } },
        ]),
      ),
      securitySchemes: {
        sigv4: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: 'AWS Signature Version 4 (service execute-api): an IAM principal allowed execute-api:Invoke on the API.',
        },
        bearer: { type: 'http', scheme: 'bearer', description: "A JWT from the deployment's issuer (apiAuth.jwt), or the sandbox's apiToken." },
      },
    },
  };
}

function packageVersion(): string {
  try {
    return (createRequire(import.meta.url)('../package.json') as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}
