/**
 * The demo receiver: a webhook consumer built on the receiver kit (lib/receiver), as a user's
 * would be. It verifies the Standard Webhooks signature when a secret is set, applies each event
 * once by its `webhook-id` and answers a repeat with the first answer (a retry after an unknown
 * outcome is expected, not an error). It logs event IDs only, never a payload.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toNodeListener } from '../lib/receiver/adapters';
import { MemoryIdempotencyStore } from '../lib/receiver/memory-store';
import { createReceiver, REPLAYED_HEADER, type WebhookRequest } from '../lib/receiver/receiver';

export interface DemoReceiverOptions {
  /** `whsec_…` (or bare base64): verify signatures. Unset: accept unsigned requests. */
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

const PATHS = new Set(['/', '/webhook']);

export async function startDemoReceiver(options: DemoReceiverOptions = {}): Promise<DemoReceiver> {
  const log = options.log ?? (() => {});
  const applied: string[] = [];

  const receive = createReceiver({
    ...(options.secret === undefined ? { unsigned: true } : { secrets: [options.secret] }),
    store: new MemoryIdempotencyStore(),
    // The business action: runs once per webhook ID. A real receiver commits its effect here.
    action: ({ webhookId, payload }) => {
      if ((payload as { id?: unknown } | null)?.id !== webhookId) {
        return { status: 400, body: 'webhook-id does not match the body' };
      }
      applied.push(webhookId);
      return { body: { received: webhookId } };
    },
  });
  const receiveAndLog = async (request: WebhookRequest) => {
    const response = await receive(request);
    const webhookId = headerOf(request, 'webhook-id');
    if (response.status === 200) {
      log(`received ${webhookId} (${response.headers[REPLAYED_HEADER] === 'true' ? 'duplicate' : 'first time'})`);
    } else {
      log(`refused a request: ${response.status} ${problemOf(response.body)}`);
    }
    return response;
  };
  const listener = toNodeListener(receiveAndLog);

  const server: Server = createServer((request, response) => {
    if (PATHS.has(request.url ?? '')) return listener(request, response);
    log('refused a request: 404 no such path');
    response.writeHead(404, { 'content-type': 'text/plain', connection: 'close' }).end('no such path');
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

function headerOf(request: WebhookRequest, name: string): string | undefined {
  const value = (request.headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The kit's error code, or the action's own plain-text reason. */
function problemOf(body: string): string {
  try {
    return (JSON.parse(body) as { error: { code: string } }).error.code;
  } catch {
    return body;
  }
}
