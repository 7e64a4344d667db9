/**
 * An endpoint's URLs and client certificate as an update takes them (docs/contract.md §3, §18), through
 * the use case (`updateEndpoint`, what `handoff endpoint update` runs) and the API's PATCH on the
 * registry in DynamoDB (dynalite), each answer checked against the API's OpenAPI document:
 *
 * - `url` and `auth.tokenUrl` sent back as every view shows them (each query value, the user, the
 *   fragment as `***`: what the console's JSON editor sends back with the rest of `auth`) keep the
 *   URL the endpoint has, as a secret value sent back as `{"secret": true}` keeps its value; a URL
 *   really changed is stored as given, and one edited from the redacted form (`***` left in it) is
 *   refused, naming it.
 * - `tls` beside an http URL (where the deployment allows http at all) is refused at add and at
 *   update, naming `tls`, rather than stored to fail each delivery.
 */
import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MemoryIdempotencyStore } from '../../api/idempotency';
import { createApiHandler, type ApiHandler } from '../../api/router';
import { apiDocument, ROUTES } from '../../api/routes';
import { addEndpoint, updateEndpoint } from '../../cli/commands/endpoint-write';
import { endpointJson } from '../../cli/commands/endpoint-view';
import { CommandContext } from '../../cli/context';
import { EndpointFieldsUsageError } from '../../cli/commands/endpoint-common';
import type { Target } from '../../cli/target';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { createLogger } from '../../lib/observability';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { apiEvent, urlOf, type ApiEventSpec } from '../helpers/api-events';
import { DEFAULT_DEPLOYMENT } from '../helpers/deployment';
import { useDynalite } from '../helpers/dynalite-fixture';
import { OpenApiValidator } from '../helpers/openapi-validator';

const CERT = readFileSync(new URL('../fixtures/tls/client.pem', import.meta.url), 'utf8');
const KEY = readFileSync(new URL('../fixtures/tls/client.key.pem', import.meta.url), 'utf8');
const SECRETS_KEY = LocalSecretCipher.generateKey();
const URL_WITH_TOKEN = 'https://erp.example/in?tenant=acme&token=t0k3n';
const TOKEN_URL = 'https://idp.example/oauth2/token?tenant=acme';
const AUTH = { type: 'oauth2-client-credentials', tokenUrl: TOKEN_URL, clientId: 'handoff-erp', clientSecret: { secret: 'cl13nt-s3cret' } };
const TLS = { clientCertificate: CERT, privateKey: { secret: KEY } };

let client: DynamoDBClient;
let dynamodbEndpoint: string;
let validator: OpenApiValidator;
let tables = 0;
let context: CommandContext;
let registry: DynamoDbEndpointRegistry;
let handler: ApiHandler;

useDynalite((started) => {
  ({ client } = started);
  dynamodbEndpoint = started.dynalite.endpoint;
});

beforeAll(async () => {
  validator = await OpenApiValidator.of(apiDocument());
});

beforeEach(async () => {
  const endpointsTable = `endpoints-update-locks-${++tables}`;
  await createEndpointsTable(client, endpointsTable);
  const target: Target = {
    description: 'the test emulators',
    // The registry alone: no queue or ledger is reached by adding and changing endpoints.
    connection: { kind: 'sandbox', sqsEndpoint: 'http://127.0.0.1:9', dynamodbEndpoint, stateFile: '/nonexistent/endpoint-update-locks/sandbox.json' },
    endpointsTable,
    // As the sandbox: http allowed, so the rule that tls needs https is the one judged.
    deployment: { ...DEFAULT_DEPLOYMENT, allowHttp: true },
    endpointSecretsKey: { key: SECRETS_KEY },
  };
  const silent = () => new PassThrough() as unknown as NodeJS.WriteStream;
  context = new CommandContext(target, { stdout: silent(), stderr: silent() });
  registry = new DynamoDbEndpointRegistry({ client, tableName: endpointsTable });
  handler = createApiHandler(ROUTES, { context, idempotency: new MemoryIdempotencyStore(), now: Date.now, logger: createLogger({ service: 'test', write: () => {} }) });
  return () => context.close();
});

/** One request through the API's handler, its answer checked against the OpenAPI document. */
async function call(spec: ApiEventSpec): Promise<{ status: number; body: any }> {
  const event = apiEvent(spec);
  const result = await handler(event);
  const text = typeof result.body === 'string' ? result.body : '';
  const check = validator.check({ method: spec.method, url: urlOf(event), status: result.statusCode ?? 200, contentType: result.headers?.['content-type'] as string | undefined, body: text });
  expect(check.errors, `${spec.method} ${spec.path} answered ${result.statusCode} ${text}`).toEqual([]);
  return { status: result.statusCode ?? 200, body: text === '' ? undefined : JSON.parse(text) };
}

async function stored(name: string) {
  return (await registry.get(name))!.fields;
}

describe('An update sent back as shown keeps the URLs', () => {
  it('keeps the token URL when auth comes back redacted with another scope (updateEndpoint)', async () => {
    const { record } = await addEndpoint(context, { name: 'erp', url: URL_WITH_TOKEN, eventTypes: ['*'], auth: AUTH }, Date.now());
    const shown = endpointJson(record);
    expect(shown.auth!.tokenUrl).toBe('https://idp.example/oauth2/token?tenant=***');

    const { changed } = await updateEndpoint(context, 'erp', { auth: { ...shown.auth, scope: 'shipments' } }, [], Date.now());

    expect(changed).toEqual(['auth']);
    expect((await stored('erp')).auth).toMatchObject({ tokenUrl: TOKEN_URL, scope: 'shipments', clientSecret: { secret: expect.stringMatching(/^encrypted:local:/) } });
  });

  it('keeps url and the token URL sent back redacted through PATCH, and stores one really changed', async () => {
    const created = await call({ method: 'POST', path: '/v1/endpoints', body: { name: 'erp', url: URL_WITH_TOKEN, eventTypes: ['*'], auth: AUTH } });
    expect(created.body.url).toBe('https://erp.example/in?tenant=***&token=***');

    const back = await call({ method: 'PATCH', path: '/v1/endpoints/erp', body: { url: created.body.url, auth: created.body.auth } });

    expect(back.status).toBe(200);
    expect(back.body.changed).toEqual([]);
    expect(await stored('erp')).toMatchObject({ url: URL_WITH_TOKEN, auth: { tokenUrl: TOKEN_URL } });

    const moved = await call({
      method: 'PATCH',
      path: '/v1/endpoints/erp',
      body: { url: 'https://erp.example/v2/in?tenant=acme&token=n3w', auth: { ...created.body.auth, tokenUrl: 'https://idp.example/oauth2/token?tenant=globex' } },
    });

    expect(moved.body.changed).toEqual(['auth', 'url']);
    expect(await stored('erp')).toMatchObject({ url: 'https://erp.example/v2/in?tenant=acme&token=n3w', auth: { tokenUrl: 'https://idp.example/oauth2/token?tenant=globex' } });
  });

  it('keeps a token URL whose fragment is shown as #***', async () => {
    await addEndpoint(context, { name: 'erp', url: 'https://erp.example/in', eventTypes: ['*'], auth: { ...AUTH, tokenUrl: 'https://idp.example/token#tenant=acme' } }, Date.now());

    const back = await call({ method: 'PATCH', path: '/v1/endpoints/erp', body: { auth: { ...AUTH, clientSecret: { secret: true }, tokenUrl: 'https://idp.example/token#***' } } });

    expect(back.body.changed).toEqual([]);
    expect((await stored('erp')).auth!.tokenUrl).toBe('https://idp.example/token#tenant=acme');
  });

  it('refuses a URL edited from the redacted form (another path, the same ***), naming it, changing nothing', async () => {
    const created = await call({ method: 'POST', path: '/v1/endpoints', body: { name: 'erp', url: URL_WITH_TOKEN, eventTypes: ['*'], auth: AUTH } });

    const edited = await call({ method: 'PATCH', path: '/v1/endpoints/erp', body: { auth: { ...created.body.auth, tokenUrl: 'https://idp.example/v2/token?tenant=***' } } });
    const error = await updateEndpoint(context, 'erp', { url: 'https://erp.example/v2/in?tenant=***&token=***' }, [], Date.now()).then(
      () => undefined,
      (caught: unknown) => caught,
    );

    expect(edited.status).toBe(400);
    expect(edited.body.errors).toEqual([{ path: 'auth.tokenUrl', message: expect.stringMatching(/^holds \*\*\* where views show a value redacted: give the whole URL/) }]);
    expect(error).toBeInstanceOf(EndpointFieldsUsageError);
    expect((error as Error).message).toMatch(/^endpoint "erp": url holds \*\*\* where views show a value redacted/);
    expect(await stored('erp')).toMatchObject({ url: URL_WITH_TOKEN, auth: { tokenUrl: TOKEN_URL } });
  });
});

describe('A client certificate needs an https url', () => {
  it('refuses tls beside an http url at add, through the use case and the API, naming tls, adding nothing', async () => {
    const fields = { name: 'plain-http', url: 'http://erp.example/in', eventTypes: ['*'], tls: TLS };

    const error = await addEndpoint(context, fields, Date.now()).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    const posted = await call({ method: 'POST', path: '/v1/endpoints', body: fields });

    expect(error).toBeInstanceOf(EndpointFieldsUsageError);
    expect((error as EndpointFieldsUsageError).problems).toEqual([{ field: 'tls', problem: expect.stringMatching(/^needs an https url: a client certificate is presented in a TLS handshake/) }]);
    expect(posted.status).toBe(400);
    expect(posted.body.errors).toEqual([{ path: 'tls', message: expect.stringMatching(/^needs an https url/) }]);
    expect(await registry.get('plain-http')).toBeUndefined();
  });

  it('refuses an update that gives an endpoint with tls an http url, or one with an http url tls, changing nothing', async () => {
    await addEndpoint(context, { name: 'mtls', url: 'https://erp.example/in', eventTypes: ['*'], tls: TLS }, Date.now());
    await addEndpoint(context, { name: 'open', url: 'http://erp.example/in', eventTypes: ['*'] }, Date.now());

    const toHttp = await call({ method: 'PATCH', path: '/v1/endpoints/mtls', body: { url: 'http://erp.example/in' } });
    const withTls = await updateEndpoint(context, 'open', { tls: TLS }, [], Date.now()).then(
      () => undefined,
      (caught: unknown) => caught,
    );

    expect(toHttp.status).toBe(400);
    expect(toHttp.body.errors).toEqual([{ path: 'tls', message: expect.stringMatching(/^needs an https url/) }]);
    expect((withTls as EndpointFieldsUsageError).problems.map((p) => p.field)).toEqual(['tls']);
    expect((await stored('mtls')).url).toBe('https://erp.example/in');
    expect((await stored('open')).tls).toBeUndefined();
  });
});
