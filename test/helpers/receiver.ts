/**
 * A webhook receiver for tests, on 127.0.0.1: it records every request, applies each event once
 * by its ID (as a well-behaved receiver does), and answers from a script so a test can inject
 * the faults SPEC §4 names.
 *
 * Scripted answers, per call:
 * - a status (`503`) or `{ status, retryAfter?, body?, headers? }`. A 2xx applies the event.
 * - `'hang'`: read the whole request, never answer (a timeout after the request was written).
 * - `'reset'`: read the whole request, then reset the connection (TCP RST).
 * - `'commit-then-hang'`: apply the event, then never answer: the receiver has it, the sender
 *   cannot know. The case idempotency exists for.
 *
 * A per-event script (`respondTo`) wins over the shared one (`respond`), which is consumed in
 * arrival order; with neither, the answer is 200. Records within a batch are delivered
 * concurrently, so scripts for mixed batches should be per event.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { listenOnLoopback } from './loopback';
import { Webhook } from 'standardwebhooks';

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
  /** What the receiver did with it. */
  readonly answer: ScriptedResponse;
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
  /** Resolves once at least `count` requests have arrived (no polling, no sleeping). */
  waitForRequests(count: number): Promise<void>;
  /** Whether a request carries a valid Standard Webhooks signature for `secret`. */
  verify(request: ReceivedRequest, secret: string): boolean;
  /** Closes the server and every connection, hung ones included. */
  close(): Promise<void>;
}

export async function startTestReceiver(): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const applied: string[] = [];
  const appliedIds = new Set<string>();
  const shared: ScriptedResponse[] = [];
  const perEvent = new Map<string, ScriptedResponse[]>();
  const waiters: { count: number; resolve: () => void }[] = [];

  const apply = (eventId: string | undefined) => {
    if (eventId === undefined || appliedIds.has(eventId)) return;
    appliedIds.add(eventId);
    applied.push(eventId);
  };
  const nextAnswer = (eventId: string | undefined): ScriptedResponse =>
    (eventId !== undefined ? perEvent.get(eventId)?.shift() : undefined) ?? shared.shift() ?? 200;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const header = req.headers['idempotency-key'];
      const eventId = typeof header === 'string' ? header : undefined;
      const answer = nextAnswer(eventId);
      requests.push({
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        eventId,
        answer,
      });
      for (const waiter of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      if (answer === 'hang') return;
      if (answer === 'commit-then-hang') return apply(eventId);
      if (answer === 'reset') return void req.socket.resetAndDestroy();
      const { status, retryAfter, body, headers } = typeof answer === 'number' ? { status: answer } : answer;
      if (status >= 200 && status < 300) apply(eventId);
      res.writeHead(status, {
        'content-type': 'text/plain',
        ...(retryAfter !== undefined ? { 'retry-after': retryAfter } : {}),
        ...headers,
      });
      res.end(body ?? '');
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
    waitForRequests: (count) =>
      requests.length >= count ? Promise.resolve() : new Promise((resolve) => waiters.push({ count, resolve })),
    verify(request, secret) {
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
    },
    async close() {
      await listening.close();
    },
  };
}
