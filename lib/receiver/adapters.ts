/**
 * The receiver for the server styles webhook receivers are written in. Each adapter only moves
 * bytes between its server's request/response shapes and the plain `(request) => response`
 * function; verification and idempotency happen there, once.
 *
 * - Node's `http` (and anything built on it that takes a `(req, res)` listener);
 * - Express-style middleware, with or without a raw body parser in front;
 * - AWS Lambda behind a function URL or API Gateway (HTTP API and REST API events);
 * - fetch-style `(Request) => Response` (Hono, Next.js route handlers, Bun, Deno, workers).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { safe } from '../terminal';
import { ReceiverConfigError } from './errors';
import type { Receiver, WebhookRequest, WebhookResponse } from './receiver';

/** Larger bodies are answered 413 before they are read in full. handoff sends at most 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024;

export interface NodeAdapterOptions {
  readonly maxBodyBytes?: number;
  /**
   * Told of a failure outside the action (the store unreachable, say); the request is answered
   * 500, so the sender retries. Default: a line on stderr.
   */
  readonly onError?: (error: unknown) => void;
}

type Receive = Receiver | ((request: WebhookRequest) => Promise<WebhookResponse>);

/** A listener for `http.createServer(listener)`, or for a route of a framework that takes one. */
export function toNodeListener(receive: Receive, options: NodeAdapterOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const onError =
    options.onError ??
    ((error: unknown) => process.stderr.write(`handoff receiver: ${safe(error instanceof Error ? `${error.name}: ${error.message}` : String(error))}\n`));
  return (req, res) => {
    readBody(req, maxBodyBytes)
      .then((body) => (body === undefined ? tooLarge(maxBodyBytes) : receive({ method: req.method ?? 'POST', headers: req.headers, body })))
      .then(
        (response) => writeNode(res, response),
        (error: unknown) => {
          onError(error);
          writeNode(res, { status: 500, headers: {}, body: '' });
        },
      );
  };
}

/**
 * Express-style middleware: `app.post('/webhooks', express.raw({ type: 'application/json' }),
 * toExpressHandler(receive))`. Without a body parser it reads the stream itself. A body already
 * parsed to an object cannot be verified (the signature covers the exact bytes), so that is
 * passed to `next` as an error naming the fix.
 */
export function toExpressHandler(
  receive: Receive,
  options: NodeAdapterOptions = {},
): (req: IncomingMessage & { body?: unknown }, res: ServerResponse, next: (error?: unknown) => void) => void {
  const listener = toNodeListener(receive, options);
  return (req, res, next) => {
    const { body } = req;
    // Nothing read it yet (Express 5 leaves `body` undefined; Express 4's parsers leave `{}`
    // for a content type they skip, with the stream still unread).
    const unread = body === undefined || (!req.readableEnded && isEmptyPlainObject(body));
    if (unread) return listener(req, res);
    if (typeof body !== 'string' && !Buffer.isBuffer(body)) {
      return next(new ReceiverConfigError('request body', "was parsed before verification: mount express.raw({ type: 'application/json' }) on the webhook route"));
    }
    receive({ method: req.method ?? 'POST', headers: req.headers, body }).then(
      (response) => writeNode(res, response),
      (error: unknown) => next(error),
    );
  };
}

/** The parts of a function URL / API Gateway (v1 or v2) event the receiver reads. */
export interface LambdaHttpEvent {
  readonly headers?: Readonly<Record<string, string | undefined>> | null;
  readonly body?: string | null;
  readonly isBase64Encoded?: boolean;
  /** REST API (payload 1.0). */
  readonly httpMethod?: string;
  /** Function URL and HTTP API (payload 2.0). */
  readonly requestContext?: { readonly http?: { readonly method?: string } };
}

export interface LambdaHttpResult {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** A Lambda handler for a function URL or API Gateway (HTTP API or REST API). */
export function toLambdaHandler(receive: Receive): (event: LambdaHttpEvent) => Promise<LambdaHttpResult> {
  return async (event) => {
    const raw = event.body ?? '';
    const response = await receive({
      method: event.requestContext?.http?.method ?? event.httpMethod ?? 'POST',
      headers: event.headers ?? {},
      body: event.isBase64Encoded === true ? Buffer.from(raw, 'base64') : raw,
    });
    return { statusCode: response.status, headers: { ...response.headers }, body: response.body };
  };
}

/** A fetch-style handler: `(Request) => Promise<Response>`. */
export function toFetchHandler(receive: Receive): (request: Request) => Promise<Response> {
  return async (request) => {
    const response = await receive({ method: request.method, headers: request.headers, body: new Uint8Array(await request.arrayBuffer()) });
    return new Response(response.body === '' ? null : response.body, { status: response.status, headers: response.headers });
  };
}

function isEmptyPlainObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Buffer.isBuffer(value) && Object.keys(value).length === 0;
}

function writeNode(res: ServerResponse, response: WebhookResponse) {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(response.status, response.headers);
  res.end(response.body);
}

function tooLarge(maxBodyBytes: number): WebhookResponse {
  return {
    status: 413,
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ error: { code: 'body-too-large', message: `bodies over ${maxBodyBytes} bytes are refused` } }),
  };
}

/** The whole body, or undefined once it passes `maxBodyBytes`. */
async function readBody(req: IncomingMessage, maxBodyBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBodyBytes) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
