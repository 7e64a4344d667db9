/**
 * The management API's router (api/router.ts) on its own, with tiny routes and the in-memory
 * Idempotency-Key store: what every route shares. Unauthenticated, unknown, wrongly-sent and
 * non-JSON requests are problem documents; an Idempotency-Key runs a POST once and answers repeats
 * with the first answer (its credentials shown once), refuses a key in use or reused, and frees the
 * key of a request that failed; a portal link's holder reaches only the routes marked for it.
 */
import { describe, expect, it } from 'vitest';
import type { ApiEvent, ApiResult } from '../../api/http';
import { MAX_KEPT_ANSWER_BYTES, MemoryIdempotencyStore, withoutSecrets, type IdempotencyStore, type StoredAnswer } from '../../api/idempotency';
import { portalCallerOf, requireOwner } from '../../api/portal-link';
import type { ApiDeps, Route } from '../../api/route';
import { createApiHandler } from '../../api/router';
import type { CommandContext } from '../../cli/context';
import { createLogger } from '../../lib/observability';

const CALLER = 'arn:aws:iam::123456789012:user/alice';

interface Bed {
  readonly handler: (event: ApiEvent) => Promise<ApiResult>;
  readonly runs: string[];
  readonly logLines: string[];
  /** Lets the `slow` route finish. */
  finishSlow(): void;
  failNext: boolean;
}

function bed(idempotency: IdempotencyStore = new MemoryIdempotencyStore()): Bed {
  const runs: string[] = [];
  const logLines: string[] = [];
  let finish: () => void = () => {};
  const state = { failNext: false };
  const routes: Route[] = [
    {
      method: 'POST',
      path: '/v1/things',
      operationId: 'createThing',
      summary: 'makes a thing',
      tag: 'things',
      body: { schema: { type: 'object' }, required: true },
      responses: { 201: { description: 'made' } },
      handle: async ({ body, caller }) => {
        if (state.failNext) {
          state.failNext = false;
          throw new Error('the store failed');
        }
        runs.push(`create ${JSON.stringify(body)} by ${caller}`);
        return { status: 201, body: { n: runs.length, secret: `whsec_${runs.length}` } };
      },
    },
    {
      method: 'GET',
      path: '/v1/things/{name}',
      operationId: 'getThing',
      summary: 'reads a thing',
      tag: 'things',
      responses: { 200: { description: 'the thing' } },
      handle: async ({ params }) => ({ status: 200, body: { name: params.name } }),
    },
    {
      method: 'POST',
      path: '/v1/slow',
      operationId: 'slow',
      summary: 'waits to be told',
      tag: 'things',
      responses: { 202: { description: 'done' } },
      handle: async () => {
        runs.push('slow');
        await new Promise<void>((resolve) => (finish = resolve));
        return { status: 202, body: { done: true } };
      },
    },
    {
      method: 'POST',
      path: '/v1/links',
      operationId: 'createLink',
      summary: 'a credential shown once',
      tag: 'things',
      responses: { 201: { description: 'the link' } },
      shownOnce: ['token', 'url'],
      handle: async () => {
        runs.push('link');
        return { status: 201, body: { owner: 'm', url: 'https://c.example/#portal=t', token: 't' } };
      },
    },
    {
      method: 'POST',
      path: '/v1/huge',
      operationId: 'huge',
      summary: 'an answer too large to keep',
      tag: 'things',
      responses: { 202: { description: 'done' } },
      handle: async () => {
        runs.push('huge');
        return { status: 202, body: { blob: 'x'.repeat(MAX_KEPT_ANSWER_BYTES) } };
      },
    },
    {
      method: 'GET',
      path: '/v1/owners/{owner}',
      operationId: 'getOwner',
      summary: 'open to portal links',
      tag: 'things',
      portal: 'owner',
      responses: { 200: { description: 'the owner' } },
      handle: async (call) => {
        requireOwner(call, call.params.owner);
        return { status: 200, body: { owner: call.params.owner, portalOwner: call.portalOwner ?? null, stateChange: { by: CALLER }, audit: [{ operator: 'alice', caller: CALLER }] } };
      },
    },
  ];
  const deps: ApiDeps = {
    // The routes here read nothing of a deployment: no clients are ever asked for.
    context: {} as CommandContext,
    idempotency,
    now: () => Date.parse('2026-12-04T21:00:00Z'),
    logger: createLogger({ service: 'api-router-test', write: (line) => void logLines.push(line) }),
  };
  const handler = createApiHandler(routes, deps);
  return {
    handler,
    runs,
    logLines,
    finishSlow: () => finish(),
    get failNext() {
      return state.failNext;
    },
    set failNext(value: boolean) {
      state.failNext = value;
    },
  };
}

let requests = 0;

function event(method: string, path: string, options: { body?: string; headers?: Record<string, string>; caller?: string | null } = {}): ApiEvent {
  requests += 1;
  const caller = options.caller === undefined ? CALLER : options.caller;
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: { ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    requestContext: {
      accountId: '123456789012',
      apiId: 'test',
      domainName: 'api.test',
      domainPrefix: 'api',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
      requestId: `req-${requests}`,
      routeKey: '$default',
      stage: '$default',
      time: '04/Dec/2026:21:00:00 +0000',
      timeEpoch: 0,
      ...(caller === null ? {} : caller.startsWith('arn:') ? { authorizer: { iam: { userArn: caller } } } : { authorizer: { lambda: { principal: caller } } }),
    },
    ...(options.body === undefined ? {} : { body: options.body }),
    isBase64Encoded: false,
  } as unknown as ApiEvent;
}

function parsed(result: ApiResult): { status: number | undefined; type: unknown; body: any } {
  return { status: result.statusCode, type: result.headers?.['content-type'], body: typeof result.body === 'string' && result.body !== '' ? JSON.parse(result.body) : undefined };
}

describe('the API router', () => {
  it('answers a request with no credentials 401 as a problem document, running nothing', async () => {
    const { handler, runs } = bed();

    const answer = parsed(await handler(event('POST', '/v1/things', { body: '{}', caller: null })));

    expect(answer).toMatchObject({ status: 401, type: 'application/problem+json', body: { type: 'https://handoff.dev/problems/unauthenticated', status: 401 } });
    expect(runs).toEqual([]);
  });

  it('answers an unknown path 404 and a known path with another method 405', async () => {
    const { handler } = bed();

    const unknown = parsed(await handler(event('GET', '/v1/nothing')));
    const wrongMethod = parsed(await handler(event('DELETE', '/v1/things/a')));

    expect(unknown).toMatchObject({ status: 404, body: { type: 'https://handoff.dev/problems/no-such-path' } });
    expect(wrongMethod).toMatchObject({ status: 405, body: { type: 'https://handoff.dev/problems/method-not-allowed' } });
  });

  it("names a path's methods in a 405's Allow header", async () => {
    const { handler } = bed();

    const result = await handler(event('DELETE', '/v1/things/a'));

    expect(result.statusCode).toBe(405);
    expect(result.headers?.allow).toBe('GET');
  });

  it('refuses 401 a caller whose identity an audit cannot keep, running nothing', async () => {
    const { handler, runs } = bed();

    const answer = parsed(await handler(event('POST', '/v1/things', { body: '{}', caller: 'sandbox\u202eevil' })));

    expect(answer).toMatchObject({ status: 401, body: { type: 'https://handoff.dev/problems/caller-unrecordable' } });
    expect(runs).toEqual([]);
  });

  it("answers what the use case did when its answer cannot be kept, and runs it no second time at once", async () => {
    // Prepare: a store that claims but fails to keep answers (a throttled table)
    class Unkeeping extends MemoryIdempotencyStore {
      override async complete(_key: string, _fingerprint: string, _answer: StoredAnswer, _nowMs: number): Promise<void> {
        throw new Error('ProvisionedThroughputExceededException');
      }
    }
    const { handler, runs, logLines } = bed(new Unkeeping());
    const request = () => event('POST', '/v1/things', { body: '{"a":1}', headers: { 'idempotency-key': 'k-1' } });

    // Act
    const first = parsed(await handler(request()));
    const repeat = parsed(await handler(request()));

    // Assess
    expect(first).toEqual({ status: 201, type: 'application/json', body: { n: 1, secret: 'whsec_1' } });
    expect(repeat).toMatchObject({ status: 409, body: { type: 'https://handoff.dev/problems/idempotency-key-in-use' } });
    expect(runs).toHaveLength(1);
    expect(logLines.some((line) => line.includes('idempotency answer not kept') && !line.includes('whsec_'))).toBe(true);
  });

  it('decodes the path\'s parameters', async () => {
    const { handler } = bed();

    const answer = parsed(await handler(event('GET', '/v1/things/a%20b')));

    expect(answer).toEqual({ status: 200, type: 'application/json', body: { name: 'a b' } });
  });

  it('answers a body that is not JSON 400 naming the body, and one sent as another type 415', async () => {
    const { handler, runs } = bed();

    const notJson = parsed(await handler(event('POST', '/v1/things', { body: '{"a":' })));
    const text = parsed(await handler(event('POST', '/v1/things', { body: 'a=1', headers: { 'content-type': 'text/plain' } })));

    expect(notJson).toMatchObject({ status: 400, body: { type: 'https://handoff.dev/problems/invalid-request', errors: [{ path: 'body', message: 'is not JSON' }] } });
    expect(text).toMatchObject({ status: 415, body: { type: 'https://handoff.dev/problems/unsupported-media-type' } });
    expect(runs).toEqual([]);
  });

  it('runs a POST once for one Idempotency-Key and answers the repeat with the first answer, its secret shown once', async () => {
    const { handler, runs } = bed();
    const send = () => handler(event('POST', '/v1/things', { body: '{"a":1}', headers: { 'idempotency-key': 'make-a-1' } }));

    const first = parsed(await send());
    const repeat = parsed(await send());

    expect(first).toEqual({ status: 201, type: 'application/json', body: { n: 1, secret: 'whsec_1' } });
    expect(repeat).toEqual({ status: 201, type: 'application/json', body: { n: 1, secretShown: true } });
    expect(runs).toEqual([`create {"a":1} by ${CALLER}`]);
  });

  it("keeps a route's own credentials out of a repeat's answer", async () => {
    const { handler, runs } = bed();
    const send = () => handler(event('POST', '/v1/links', { headers: { 'idempotency-key': 'link-1' } }));

    const first = parsed(await send());
    const repeat = parsed(await send());

    expect(first.body).toEqual({ owner: 'm', url: 'https://c.example/#portal=t', token: 't' });
    expect(repeat.body).toEqual({ owner: 'm', urlShown: true, tokenShown: true });
    expect(runs).toEqual(['link']);
  });

  it('runs the same key again for another caller: keys are per caller', async () => {
    const { handler, runs } = bed();

    await handler(event('POST', '/v1/things', { body: '{"a":1}', headers: { 'idempotency-key': 'k' } }));
    await handler(event('POST', '/v1/things', { body: '{"a":1}', headers: { 'idempotency-key': 'k' }, caller: 'arn:aws:iam::123456789012:user/bob' }));

    expect(runs).toHaveLength(2);
  });

  it('answers 409 for a key used with a different request, running nothing', async () => {
    const { handler, runs } = bed();
    await handler(event('POST', '/v1/things', { body: '{"a":1}', headers: { 'idempotency-key': 'k' } }));

    const other = parsed(await handler(event('POST', '/v1/things', { body: '{"a":2}', headers: { 'idempotency-key': 'k' } })));

    expect(other).toMatchObject({ status: 409, body: { type: 'https://handoff.dev/problems/idempotency-key-reused' } });
    expect(runs).toHaveLength(1);
  });

  it('answers 409 for a key whose request is still running, then the first answer once it is done', async () => {
    const bedded = bed();
    const send = () => bedded.handler(event('POST', '/v1/slow', { headers: { 'idempotency-key': 'slow-1' } }));
    const first = send();
    await Promise.resolve();

    const during = parsed(await send());
    bedded.finishSlow();
    const answered = parsed(await first);
    const after = parsed(await send());

    expect(during).toMatchObject({ status: 409, body: { type: 'https://handoff.dev/problems/idempotency-key-in-use' } });
    expect(answered).toMatchObject({ status: 202, body: { done: true } });
    expect(after).toMatchObject({ status: 202, body: { done: true } });
    expect(bedded.runs).toEqual(['slow']);
  });

  it('frees the key of a request that failed, so its repeat runs', async () => {
    const bedded = bed();
    bedded.failNext = true;
    const send = () => bedded.handler(event('POST', '/v1/things', { body: '{"a":1}', headers: { 'idempotency-key': 'k' } }));

    const failed = parsed(await send());
    const retried = parsed(await send());

    expect(failed).toMatchObject({ status: 500, body: { type: 'https://handoff.dev/problems/internal', instance: expect.stringMatching(/^req-/) } });
    expect(retried).toMatchObject({ status: 201, body: { n: 1 } });
    expect(bedded.runs).toHaveLength(1);
  });

  it('tells the repeat of a request whose answer was too large to keep that it was done, running it once', async () => {
    const { handler, runs } = bed();
    const send = () => handler(event('POST', '/v1/huge', { headers: { 'idempotency-key': 'huge-1' } }));

    const first = parsed(await send());
    const repeat = parsed(await send());

    expect(first.status).toBe(202);
    expect(repeat).toMatchObject({ status: 409, body: { type: 'https://handoff.dev/problems/idempotency-answer-too-large', detail: expect.stringContaining('status 202') } });
    expect(runs).toEqual(['huge']);
  });

  it('refuses an Idempotency-Key that is not printable ASCII, naming the header', async () => {
    const { handler, runs } = bed();

    const answer = parsed(await handler(event('POST', '/v1/things', { body: '{}', headers: { 'idempotency-key': 'has space' } })));

    expect(answer).toMatchObject({ status: 400, body: { errors: [{ path: 'header.Idempotency-Key' }] } });
    expect(runs).toEqual([]);
  });

  it("lets a portal link's holder call a route marked for portal links, for its own owner only, without the operators' names", async () => {
    const { handler } = bed();
    const portal = portalCallerOf('merchant-42');

    const own = parsed(await handler(event('GET', '/v1/owners/merchant-42', { caller: portal })));
    const other = parsed(await handler(event('GET', '/v1/owners/merchant-43', { caller: portal })));
    const operator = parsed(await handler(event('GET', '/v1/owners/merchant-43')));

    // The holder reads who operated as 'an operator', never the principal; the deployment's own callers read it.
    expect(own).toEqual({
      status: 200,
      type: 'application/json',
      body: { owner: 'merchant-42', portalOwner: 'merchant-42', stateChange: { by: 'an operator' }, audit: [{ operator: 'an operator', caller: 'an operator' }] },
    });
    expect(other).toMatchObject({ status: 403, body: { type: 'https://handoff.dev/problems/out-of-scope' } });
    expect(operator).toEqual({
      status: 200,
      type: 'application/json',
      body: { owner: 'merchant-43', portalOwner: null, stateChange: { by: CALLER }, audit: [{ operator: 'alice', caller: CALLER }] },
    });
  });

  it("refuses a portal link's holder on any route not marked for it, before it runs", async () => {
    const { handler, runs } = bed();

    const answer = parsed(await handler(event('POST', '/v1/things', { body: '{}', caller: portalCallerOf('merchant-42') })));

    expect(answer).toMatchObject({ status: 403, body: { type: 'https://handoff.dev/problems/out-of-scope' } });
    expect(runs).toEqual([]);
  });

  it('logs one line per request with its ID, operation and status, and nothing the caller sent', async () => {
    const { handler, logLines } = bed();

    await handler(event('POST', '/v1/things', { body: '{"carrier":"acme-private"}', headers: { 'idempotency-key': 'secret-key-text' } }));

    expect(logLines).toHaveLength(1);
    expect(JSON.parse(logLines[0]!)).toMatchObject({ message: 'api request', operation: 'createThing', status: 201 });
    expect(logLines[0]).not.toContain('acme-private');
    expect(logLines[0]).not.toContain('secret-key-text');
    expect(logLines[0]).not.toContain('whsec_');
  });
});

describe('Function: withoutSecrets', () => {
  it('takes out a secret wherever it is, and leaves an endpoint view saying whether one is set', () => {
    // Prepare
    const answer = {
      created: { name: 'acme', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' },
      views: [
        { name: 'a', secret: 'set' },
        { name: 'b', secret: 'unset' },
      ],
      link: { url: 'https://console.example/#portal=x', token: 'v1.x.y' },
    };

    // Act
    const kept = withoutSecrets(answer, ['url', 'token']);

    // Assess
    expect(kept).toEqual({
      created: { name: 'acme', secretShown: true },
      views: [
        { name: 'a', secret: 'set' },
        { name: 'b', secret: 'unset' },
      ],
      link: { urlShown: true, tokenShown: true },
    });
  });
});
