/**
 * A webhook receiver for tests, on 127.0.0.1, built on the receiver kit (lib/receiver) as a
 * user's receiver would be: it records every request, applies each event once by its
 * `webhook-id` (a repeat of an applied event gets the stored first answer), and answers from a
 * script so a test can inject the faults docs/contract.md §4 names.
 *
 * Scripted answers, per call:
 * - a status (`503`) or `{ status, retryAfter?, body?, headers? }`: the business action's answer.
 *   A 2xx applies the event; anything else applies nothing, so the next attempt runs again.
 * - `'hang'`: read the whole request, never answer (a timeout after the request was written).
 * - `'reset'`: read the whole request, then reset the connection (TCP RST).
 * - `'commit-then-hang'`: apply the event, then never answer: the receiver has it, the sender
 *   cannot know. The case idempotency exists for.
 *
 * A per-event script (`respondTo`) wins over the shared one (`respond`), which is consumed in
 * arrival order; with neither, the default answer: 200, or what `answerByDefault` set (a receiver
 * that rejects everything until it is fixed). Every request draws one answer, even one the
 * kit answers from its store. Records within a batch are delivered concurrently, so scripts for
 * mixed batches should be per event.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { MemoryIdempotencyStore } from '../../lib/receiver/memory-store';
import { createReceiver, type ActionResult, type WebhookResponse } from '../../lib/receiver/receiver';
import { listenOnLoopback } from './loopback';

export type ScriptedResponse =
  | number
  | { readonly status: number; readonly retryAfter?: string; readonly body?: string; readonly headers?: Record<string, string> }
  | 'hang'
  | 'reset'
  | 'commit-then-hang';

export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The `idempotency-key` header, when present. */
  readonly eventId: string | undefined;
  /** The scripted answer it drew. */
  readonly answer: ScriptedResponse;
  /** Epoch ms its body was in. */
  readonly receivedAtMs: number;
}

export interface TestReceiver {
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: readonly ReceivedRequest[];
  /** Event IDs applied, each once, in the order first applied. */
  readonly applied: readonly string[];
  /** Requests for one event ID. */
  requestsFor(eventId: string): readonly ReceivedRequest[];
  /** Answers for the next calls, whatever their event. */
  respond(...responses: ScriptedResponse[]): void;
  /** Answers for the next calls carrying this event ID. */
  respondTo(eventId: string, ...responses: ScriptedResponse[]): void;
  /** The answer when no script is left (initially 200). */
  answerByDefault(response: ScriptedResponse): void;
  /** Resolves once at least `count` requests have arrived (no polling, no sleeping). */
  waitForRequests(count: number): Promise<void>;
  /** Whether a request carries a valid Standard Webhooks signature for `secret`. */
  verify(request: ReceivedRequest, secret: string): boolean;
  /** Closes the server and every connection, hung ones included. */
  close(): Promise<void>;
}

/** Whether `request` is signed with `secret` (Standard Webhooks, as a receiver checks it). */
export function signedWith(request: ReceivedRequest, secret: string): boolean {
  try {
    new Webhook(secret).verify(request.body, {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    });
    return true;
  } catch {
    return false;
  }
}

export async function startTestReceiver(): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const applied: string[] = [];
  const shared: ScriptedResponse[] = [];
  const perEvent = new Map<string, ScriptedResponse[]>();
  const waiters: { count: number; resolve: () => void }[] = [];
  let fallback: ScriptedResponse = 200;
  // One store for the receiver's life; the action is this request's scripted answer.
  const store = new MemoryIdempotencyStore();
  const receiveAs = (answer: ActionResult & { status: number }) =>
    createReceiver({
      unsigned: true,
      store,
      action: ({ webhookId }) => {
        if (answer.status >= 200 && answer.status < 300) applied.push(webhookId);
        return answer;
      },
    });

  const nextAnswer = (eventId: string | undefined): ScriptedResponse =>
    (eventId !== undefined ? perEvent.get(eventId)?.shift() : undefined) ?? shared.shift() ?? fallback;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const header = req.headers['idempotency-key'];
      const eventId = typeof header === 'string' ? header : undefined;
      const answer = nextAnswer(eventId);
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, eventId, answer, receivedAtMs: Date.now() });
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      // Transport faults never reach the application.
      if (answer === 'hang') return;
      if (answer === 'reset') return void req.socket.resetAndDestroy();
      const scripted = answer === 'commit-then-hang' ? { status: 200 } : typeof answer === 'number' ? { status: answer } : answer;
      const receive = receiveAs({ status: scripted.status, body: scripted.body ?? '', contentType: 'text/plain' });
      void receive({ method: req.method ?? 'POST', headers: req.headers, body }).then((response) => {
        if (answer === 'commit-then-hang') return;
        const extra = typeof answer === 'object' ? { ...(answer.retryAfter !== undefined ? { 'retry-after': answer.retryAfter } : {}), ...answer.headers } : {};
        write(res, response, extra);
      });
    });
  });
  const listening = await listenOnLoopback(server);

  return {
    url: listening.url,
    requests,
    applied,
    requestsFor: (eventId) => requests.filter((r) => r.eventId === eventId),
    respond: (...responses) => void shared.push(...responses),
    respondTo: (eventId, ...responses) => void perEvent.set(eventId, [...(perEvent.get(eventId) ?? []), ...responses]),
    answerByDefault: (response) => {
      fallback = response;
    },
    waitForRequests: (count) =>
      requests.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve })),
    verify: signedWith,
    async close() {
      await listening.close();
    },
  };
}

function write(res: ServerResponse, response: WebhookResponse, extra: Record<string, string>) {
  if (res.destroyed) return;
  res.writeHead(response.status, { ...response.headers, ...extra });
  res.end(response.body);
}
