/**
 * The kit's adapters, each driven the way its server drives it: Node's http on loopback (also
 * with Express-style bodies), a Lambda function URL / API Gateway event, a fetch Request.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { toExpressHandler, toFetchHandler, toLambdaHandler, toNodeListener } from '../../lib/receiver/adapters';
import { MemoryIdempotencyStore } from '../../lib/receiver/memory-store';
import { createReceiver, REPLAYED_HEADER } from '../../lib/receiver/receiver';
import { listenOnLoopback, type Listening } from '../helpers/loopback';
import { CONTRACT_SECRET, signedRequest } from '../helpers/receiver-store-contract';

function kit() {
  const applied: string[] = [];
  const receive = createReceiver({
    secrets: [CONTRACT_SECRET],
    store: new MemoryIdempotencyStore(),
    action: (webhook) => {
      applied.push(webhook.webhookId);
      return { body: { received: webhook.webhookId } };
    },
  });
  return { receive, applied };
}

let server: Listening | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function post(url: string, request: ReturnType<typeof signedRequest>) {
  const response = await fetch(url, { method: 'POST', headers: request.headers, body: request.body });
  return { status: response.status, replayed: response.headers.get(REPLAYED_HEADER), body: await response.text() };
}

describe('Function: toNodeListener', () => {
  it('verifies, applies once and replays over HTTP', async () => {
    const { receive, applied } = kit();
    server = await listenOnLoopback(createServer(toNodeListener(receive)));
    const request = signedRequest('evt_node', Date.now());

    const first = await post(server.url, request);
    const repeat = await post(server.url, request);

    expect(first).toEqual({ status: 200, replayed: null, body: '{"received":"evt_node"}' });
    expect(repeat).toEqual({ status: 200, replayed: 'true', body: '{"received":"evt_node"}' });
    expect(applied).toEqual(['evt_node']);
  });

  it('answers 413 to a body over the limit without running the action', async () => {
    const { receive, applied } = kit();
    server = await listenOnLoopback(createServer(toNodeListener(receive, { maxBodyBytes: 64 })));

    const response = await post(server.url, signedRequest('evt_big', Date.now(), JSON.stringify({ id: 'evt_big', pad: 'x'.repeat(100) })));

    expect(response.status).toBe(413);
    expect(applied).toEqual([]);
  });

  it('answers 500 and reports the error when the store fails, so the sender retries', async () => {
    const errors: unknown[] = [];
    const failing = createReceiver({
      secrets: [CONTRACT_SECRET],
      store: {
        retentionSeconds: 60,
        begin: () => Promise.reject(new Error('store unreachable')),
        complete: () => Promise.resolve(),
        release: () => Promise.resolve(),
      },
      action: () => undefined,
    });
    server = await listenOnLoopback(createServer(toNodeListener(failing, { onError: (error) => errors.push(error) })));

    const response = await post(server.url, signedRequest('evt_down', Date.now()));

    expect(response.status).toBe(500);
    expect(errors.map(String)).toEqual(['Error: store unreachable']);
  });
});

describe('Function: toExpressHandler', () => {
  /** A server that runs a stand-in body parser, then the handler, as Express would. */
  async function expressLike(parse: (req: IncomingMessage & { body?: unknown }) => Promise<void>) {
    const { receive, applied } = kit();
    const handler = toExpressHandler(receive);
    const errors: unknown[] = [];
    server = await listenOnLoopback(
      createServer((req: IncomingMessage & { body?: unknown }, res) => {
        void parse(req).then(() =>
          handler(req, res, (error) => {
            errors.push(error);
            res.writeHead(500).end();
          }),
        );
      }),
    );
    return { applied, errors };
  }

  async function rawBody(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  it('verifies the raw body left by express.raw()', async () => {
    const { applied } = await expressLike(async (req) => {
      req.body = await rawBody(req);
    });

    const response = await post(server!.url, signedRequest('evt_raw', Date.now()));

    expect(response.status).toBe(200);
    expect(applied).toEqual(['evt_raw']);
  });

  it('reads the stream itself when no body parser ran', async () => {
    const { applied } = await expressLike(async () => {});

    const response = await post(server!.url, signedRequest('evt_stream', Date.now()));

    expect(response.status).toBe(200);
    expect(applied).toEqual(['evt_stream']);
  });

  it('passes an error naming the fix to next when express.json() parsed the body first', async () => {
    const { applied, errors } = await expressLike(async (req) => {
      req.body = JSON.parse((await rawBody(req)).toString('utf8'));
    });

    const response = await post(server!.url, signedRequest('evt_parsed', Date.now()));

    expect(response.status).toBe(500);
    expect(String(errors[0])).toContain("mount express.raw({ type: 'application/json' }) on the webhook route");
    expect(applied).toEqual([]);
  });
});

describe('Function: toLambdaHandler', () => {
  it('answers a function URL event (payload 2.0), with a base64 body', async () => {
    const { receive, applied } = kit();
    const handler = toLambdaHandler(receive);
    const request = signedRequest('evt_url', Date.now());

    const result = await handler({
      headers: request.headers,
      body: Buffer.from(request.body).toString('base64'),
      isBase64Encoded: true,
      requestContext: { http: { method: 'POST' } },
    });

    expect(result).toEqual({ statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"received":"evt_url"}' });
    expect(applied).toEqual(['evt_url']);
  });

  it('answers an API Gateway REST event (payload 1.0) with mixed-case headers', async () => {
    const { receive } = kit();
    const handler = toLambdaHandler(receive);
    const request = signedRequest('evt_rest', Date.now());
    const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name.replace(/(^|-)\w/g, (s) => s.toUpperCase()), value]));

    const result = await handler({ headers, body: request.body, isBase64Encoded: false, httpMethod: 'POST' });
    const wrongMethod = await handler({ headers, body: request.body, httpMethod: 'PUT' });

    expect([result.statusCode, wrongMethod.statusCode]).toEqual([200, 405]);
  });
});

describe('Function: toFetchHandler', () => {
  it('answers a fetch Request with a Response', async () => {
    const { receive, applied } = kit();
    const handler = toFetchHandler(receive);
    const request = signedRequest('evt_fetch', Date.now());

    const response = await handler(new Request('http://receiver.test/webhook', { method: 'POST', headers: request.headers, body: request.body }));

    expect([response.status, await response.text()]).toEqual([200, '{"received":"evt_fetch"}']);
    expect(applied).toEqual(['evt_fetch']);
  });
});
