/**
 * The demo receiver: what a well-behaved webhook consumer does. It verifies the Standard
 * Webhooks signature when a secret is set, and applies each event once by its ID, answering
 * 200 to a duplicate too, since a retry after an unknown outcome is expected, not an error.
 * It logs event IDs only, never a payload.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

/** Bodies larger than this are refused before they are read in full (the default limit is 64 KiB). */
const MAX_BODY_BYTES = 2 * 1024 * 1024;

export interface DemoReceiverOptions {
  /** `whsec_…`: verify signatures. Unset: accept unsigned requests. */
  readonly secret?: string;
  /** Port on 127.0.0.1; 0 (the default) picks a free one. */
  readonly port?: number;
  /** One line per request. */
  readonly log?: (line: string) => void;
}

export interface DemoReceiver {
  readonly url: string;
  /** Event IDs applied, in order, each once. */
  readonly applied: readonly string[];
  close(): Promise<void>;
}

type Verdict =
  | { readonly status: 200; readonly eventId: string; readonly firstTime: boolean }
  | { readonly status: 400 | 401 | 404 | 405 | 413; readonly problem: string };

export async function startDemoReceiver(options: DemoReceiverOptions = {}): Promise<DemoReceiver> {
  const webhook = options.secret === undefined ? undefined : new Webhook(options.secret);
  const log = options.log ?? (() => {});
  const seen = new Set<string>();
  const applied: string[] = [];

  async function judge(request: IncomingMessage): Promise<Verdict> {
    if (request.method !== 'POST') return { status: 405, problem: 'only POST' };
    if (request.url !== '/' && request.url !== '/webhook') return { status: 404, problem: 'no such path' };
    const body = await readBody(request);
    if (body === undefined) return { status: 413, problem: 'body too large' };
    const eventId = header(request, 'webhook-id') ?? header(request, 'idempotency-key');
    if (eventId === undefined) return { status: 400, problem: 'no webhook-id header' };
    if (webhook !== undefined) {
      try {
        webhook.verify(body, {
          'webhook-id': eventId,
          'webhook-timestamp': header(request, 'webhook-timestamp') ?? '',
          'webhook-signature': header(request, 'webhook-signature') ?? '',
        });
      } catch (error) {
        if (error instanceof WebhookVerificationError) return { status: 401, problem: 'bad signature' };
        throw error;
      }
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return { status: 400, problem: 'body is not JSON' };
    }
    if ((parsed as { id?: unknown } | null)?.id !== eventId) {
      return { status: 400, problem: 'webhook-id does not match the body' };
    }
    // Applying and remembering the ID is one step here; a real receiver commits both in one
    // transaction, so a retry after a lost answer finds the ID and changes nothing.
    const firstTime = !seen.has(eventId);
    if (firstTime) {
      seen.add(eventId);
      applied.push(eventId);
    }
    return { status: 200, eventId, firstTime };
  }

  const server: Server = createServer((request, response) => {
    judge(request).then(
      (verdict) => {
        if (verdict.status === 200) {
          log(`received ${verdict.eventId} (${verdict.firstTime ? 'first time' : 'duplicate'})`);
          response.writeHead(200, { 'content-type': 'application/json' });
          response.end(JSON.stringify({ received: verdict.eventId, duplicate: !verdict.firstTime }));
        } else {
          log(`refused a request: ${verdict.status} ${verdict.problem}`);
          response.writeHead(verdict.status, { 'content-type': 'text/plain', connection: 'close' });
          response.end(verdict.problem);
        }
      },
      () => {
        response.writeHead(500, { connection: 'close' });
        response.end();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/webhook`,
    applied,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The whole body, or undefined once it passes `MAX_BODY_BYTES`. */
async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
