/**
 * Checks the management API against its own OpenAPI 3.1 document (`GET /v1/openapi.json`) with
 * standard validators, not with the code that made the document:
 *
 * - the document itself: @seriousme/openapi-schema-validator (the OpenAPI 3.1 schemas);
 * - each answer: openapi-backend finds the operation by method and path, and its response schemas
 *   (Ajv's 2020-12 dialect, as `jsonSchemaDialect` says) judge the body. openapi-backend only knows
 *   `application/json` and passes a status it has no schema for, so the rest is checked here: the
 *   status must be one the operation lists, the Content-Type one that status lists, and a problem
 *   document (`application/problem+json`) must match the schema the document gives it.
 *
 * An answer at a path the document does not have (the router's 404) must be a problem document.
 */
import Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { Validator } from '@seriousme/openapi-schema-validator';
import { OpenAPIBackend, type Document } from 'openapi-backend';

export interface AnswerCheck {
  readonly valid: boolean;
  /** Why not, one line each. */
  readonly errors: readonly string[];
}

export interface CheckedAnswer {
  readonly method: string;
  /** Path and query as requested. */
  readonly url: string;
  readonly status: number;
  /** The Content-Type header, undefined when none. */
  readonly contentType: string | undefined;
  /** The body as text ('' when none). */
  readonly body: string;
}

interface MediaTypes {
  readonly content?: Record<string, { readonly schema?: unknown }>;
}

export class OpenApiValidator {
  readonly #backend: OpenAPIBackend;
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<unknown, ValidateFunction>();
  readonly #problemSchema: unknown;

  private constructor(backend: OpenAPIBackend) {
    this.#backend = backend;
    this.#ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    const document = backend.definition as unknown as { components?: { schemas?: Record<string, unknown> } };
    this.#problemSchema = document.components?.schemas?.Problem;
    if (this.#problemSchema === undefined) throw new Error('the document has no Problem schema (components.schemas.Problem)');
  }

  /** A validator for `document` (the API's own, as fetched), its references resolved. */
  static async of(document: unknown): Promise<OpenApiValidator> {
    const backend = new OpenAPIBackend({
      definition: structuredClone(document) as Document,
      quick: true,
      // Formats (uri, date-time, …) checked as the standard defines them, not ignored.
      customizeAjv: (_ajv, options) => addFormats(new Ajv2020({ ...options, strict: false })) as never,
    });
    await backend.init();
    return new OpenApiValidator(backend);
  }

  /** What the OpenAPI 3.1 schema says of the document: valid, or its errors. */
  static async checkDocument(document: unknown): Promise<AnswerCheck> {
    const { valid, errors } = await new Validator().validate(structuredClone(document) as Record<string, unknown>);
    const lines = typeof errors === 'string' ? [errors] : (errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`.trim());
    return { valid, errors: valid ? [] : lines };
  }

  /** Whether the answer is one the document describes for this request. */
  check(answer: CheckedAnswer): AnswerCheck {
    const errors: string[] = [];
    const { pathname } = new URL(answer.url, 'http://api.invalid');
    const mediaType = answer.contentType?.split(';')[0]?.trim().toLowerCase();
    const body = answer.body === '' ? undefined : parse(answer.body);
    if (answer.body !== '' && body === undefined) errors.push('the body is not JSON');
    const operation = this.#backend.matchOperation({ method: answer.method.toLowerCase(), path: pathname, headers: {} });

    if (operation === undefined) {
      // Not a path (or method) the document has: only a problem document may answer.
      if (answer.status !== 404 && answer.status !== 405) errors.push(`${answer.method} ${pathname} is not in the document, and the answer is ${answer.status}, not 404 or 405`);
      if (mediaType !== 'application/problem+json') errors.push(`an answer at an unknown path must be application/problem+json, not ${mediaType ?? 'without a Content-Type'}`);
      else this.#against(this.#problemSchema, body, 'Problem', errors);
      return { valid: errors.length === 0, errors };
    }

    const responses = (operation.responses ?? {}) as Record<string, MediaTypes>;
    const listed = responses[String(answer.status)] ?? responses[`${String(answer.status)[0]}XX`] ?? responses.default;
    if (listed === undefined) {
      errors.push(`${operation.operationId} lists no ${answer.status} answer (it lists ${Object.keys(responses).join(', ')})`);
      return { valid: false, errors };
    }
    const content = listed.content ?? {};
    if (Object.keys(content).length === 0) {
      if (answer.body !== '') errors.push(`${operation.operationId}'s ${answer.status} answer has no body in the document, but one was sent`);
      return { valid: errors.length === 0, errors };
    }
    if (mediaType === undefined || content[mediaType] === undefined) {
      errors.push(`${operation.operationId}'s ${answer.status} answer is ${Object.keys(content).join(' or ')}, not ${mediaType ?? 'without a Content-Type'}`);
      return { valid: false, errors };
    }
    if (mediaType === 'application/json') {
      const result = this.#backend.validateResponse(body, operation, answer.status);
      for (const e of result.errors ?? []) errors.push(`body${e.instancePath} ${e.message ?? ''}`.trim());
    } else {
      this.#against(content[mediaType]!.schema, body, `${operation.operationId} ${answer.status} ${mediaType}`, errors);
    }
    return { valid: errors.length === 0, errors };
  }

  #against(schema: unknown, body: unknown, what: string, errors: string[]): void {
    if (schema === undefined) return;
    let validate = this.#compiled.get(schema);
    if (validate === undefined) {
      validate = this.#ajv.compile(schema as object);
      this.#compiled.set(schema, validate);
    }
    if (!validate(body)) for (const e of validate.errors ?? []) errors.push(`${what}: body${e.instancePath} ${e.message ?? ''}`.trim());
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
