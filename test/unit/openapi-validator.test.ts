/**
 * The tests' OpenAPI validator (test/helpers/openapi-validator.ts) is what stands between the API
 * and "every answer matches its document", so it must fail what the document does not describe: a
 * status the operation does not list, another media type, a body off its schema, a problem document
 * missing its fields, anything at a path the document does not have but a problem document.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiDocument } from '../../api/routes';
import { OpenApiValidator } from '../helpers/openapi-validator';

const PROBLEM = JSON.stringify({ type: 'https://handoff.dev/problems/endpoint-not-found', title: 'Not found', status: 404, detail: 'no endpoint x', instance: 'req-1' });

describe('Class: OpenApiValidator', () => {
  let validator: OpenApiValidator;

  beforeAll(async () => {
    validator = await OpenApiValidator.of(apiDocument());
  });

  it("finds the API's own document valid OpenAPI 3.1", async () => {
    expect(await OpenApiValidator.checkDocument(apiDocument())).toEqual({ valid: true, errors: [] });
  });

  it('passes an answer the document describes: its status, media type and schema', () => {
    const check = validator.check({ method: 'GET', url: '/v1/endpoints/x', status: 404, contentType: 'application/problem+json', body: PROBLEM });
    expect(check).toEqual({ valid: true, errors: [] });
  });

  it('fails a status the operation does not list', () => {
    const check = validator.check({ method: 'GET', url: '/v1/openapi.json', status: 409, contentType: 'application/problem+json', body: PROBLEM });
    expect(check.valid).toBe(false);
    expect(check.errors[0]).toMatch(/^getOpenApiDocument lists no 409 answer/);
  });

  it('fails another media type than the status lists, and a body off its schema', () => {
    const asJson = validator.check({ method: 'GET', url: '/v1/endpoints/x', status: 404, contentType: 'application/json', body: PROBLEM });
    const offSchema = validator.check({ method: 'GET', url: '/v1/openapi.json', status: 200, contentType: 'application/json', body: '{"paths":{}}' });
    expect(asJson.valid).toBe(false);
    expect(offSchema).toEqual({ valid: false, errors: ["body must have required property 'openapi'"] });
  });

  it('fails a problem document without its fields, or with a type that is not a URI', () => {
    const bare = validator.check({ method: 'GET', url: '/v1/endpoints/x', status: 404, contentType: 'application/problem+json', body: '{"detail":"x"}' });
    const notUri = validator.check({ method: 'GET', url: '/v1/endpoints/x', status: 404, contentType: 'application/problem+json', body: PROBLEM.replace('https://handoff.dev/problems/', 'not a uri ') });
    expect(bare.valid).toBe(false);
    expect(bare.errors).toEqual(expect.arrayContaining([expect.stringContaining("must have required property 'type'")]));
    expect(notUri.valid).toBe(false);
    expect(notUri.errors).toEqual([expect.stringContaining('must match format "uri"')]);
  });

  it('takes only a 404 or 405 problem document at a path the document does not have', () => {
    expect(validator.check({ method: 'GET', url: '/v1/nothing', status: 404, contentType: 'application/problem+json', body: PROBLEM }).valid).toBe(true);
    expect(validator.check({ method: 'GET', url: '/v1/nothing', status: 200, contentType: 'application/json', body: '{}' }).valid).toBe(false);
  });
});
