/**
 * The bench's servers and counting, once for every scenario: the sandbox's emulators with every
 * request counted at the server, by role; the webhook receiver; the statistics the reports use.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startEmulators } from '../sandbox/emulators';
import { listenOnLoopback } from '../test/helpers/loopback';

/** Who made a request: the bench's clients mark theirs in the user agent (`bench-role/<role>`); `handler` is the consumer under test. */
export type Role = 'handler' | 'poller' | 'producer' | 'setup';
/** Requests per role and operation (`DynamoDB.UpdateItem`), and DynamoDB body bytes sent and received. */
export type RequestCounts = Record<Role, Record<string, number>>;
const MARKED = ['poller', 'producer', 'setup'] as const;
const SENT = 'DynamoDB bytes sent';
const RECEIVED = 'DynamoDB bytes received';

export interface Bench {
  readonly emulators: Awaited<ReturnType<typeof startCountingEmulators>>;
  readonly receiver: Receiver;
  /** Where the run is: replaces the previous progress line on a terminal. */
  readonly progress: (line: string) => void;
  /** Something worth keeping on screen (a warning, a failed batch). */
  readonly log: (line: string) => void;
}

/**
 * fauxqs and dynalite with every request counted at the server, by the role in its user agent:
 * honest for any consumer however it builds its clients, and it sees the SDK's own retries.
 */
export async function startCountingEmulators() {
  const counts: RequestCounts = { handler: {}, poller: {}, producer: {}, setup: {} };
  const add = (role: Role, key: string, n: number) => void (counts[role][key] = (counts[role][key] ?? 0) + n);
  const emulators = await startEmulators({
    onRequest(service, request, response) {
      const agent = String(request.headers['x-amz-user-agent'] ?? request.headers['user-agent'] ?? '');
      const role: Role = MARKED.find((r) => agent.includes(`bench-role/${r}`)) ?? 'handler';
      // `AmazonSQS.ReceiveMessage`, `DynamoDB_20120810.PutItem`: the operation after the dot.
      const target = request.headers['x-amz-target'];
      add(role, `${service}.${typeof target === 'string' ? (target.split('.')[1] ?? target) : 'unknown'}`, 1);
      if (service !== 'DynamoDB') return;
      add(role, SENT, Number(request.headers['content-length'] ?? 0));
      // dynalite answers with one `end(body)`.
      const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
      response.end = ((...args: unknown[]) => {
        if (typeof args[0] === 'string' || args[0] instanceof Uint8Array) add(role, RECEIVED, Buffer.byteLength(args[0]));
        return end(...args);
      }) as ServerResponse['end'];
    },
  });
  return { ...emulators, snapshot: (): RequestCounts => structuredClone(counts) };
}

/** The requests made between two snapshots. */
export function countsBetween(before: RequestCounts, after: RequestCounts): RequestCounts {
  const out: RequestCounts = { handler: {}, poller: {}, producer: {}, setup: {} };
  for (const role of Object.keys(after) as Role[]) {
    for (const [key, n] of Object.entries(after[role])) if (n > (before[role][key] ?? 0)) out[role][key] = n - (before[role][key] ?? 0);
  }
  return out;
}

const WRITES = /^DynamoDB\.(PutItem|UpdateItem|DeleteItem|BatchWriteItem|TransactWriteItems)$/;
const READS = /^DynamoDB\.(GetItem|Query|Scan|BatchGetItem|TransactGetItems)$/;

/** The handler's requests (a batch operation counts as one) and DynamoDB bytes, and the poller's SQS requests, per delivered event. */
export function perDelivery(requests: RequestCounts, delivered: number) {
  const total = (role: Role, pattern: RegExp) => Object.entries(requests[role]).reduce((sum, [key, n]) => (pattern.test(key) ? sum + n : sum), 0);
  const per = (n: number) => (delivered > 0 ? n / delivered : Number.NaN);
  return {
    dynamodbWrites: per(total('handler', WRITES)),
    dynamodbReads: per(total('handler', READS)),
    dynamodbBytesSent: per(requests.handler[SENT] ?? 0),
    dynamodbBytesReceived: per(requests.handler[RECEIVED] ?? 0),
    // The handler's own SQS calls (billed to the consumer) apart from the poller's receives and deletes (the event source's).
    handlerSqs: per(total('handler', /^SQS\./)),
    pollerSqs: per(total('poller', /^SQS\./)),
  };
}

/** An answer: a status after `afterMs`; status 0 answers nothing and drops the connection then (Infinity: at close). */
export interface Answer {
  readonly status: number;
  readonly afterMs?: number;
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * A webhook receiver on 127.0.0.1 that answers as told per event ID (200 at once by default, or
 * after `delayMs`) and notes, on this process's clock (the one the producer stamps sends with),
 * each ID's first request and first 2xx; a 2xx for an ID that had one is a repeat.
 */
export async function startReceiver(answer: (id: string) => Answer = () => ({ status: 200 }), onApplied?: (id: string, request: IncomingMessage) => void) {
  const arrivals = new Map<string, number>();
  const applied = new Map<string, number>();
  const open = new Set<ServerResponse>();
  const state = { url: '', arrivals, applied, requests: 0, repeats: 0, delayMs: 0, lastArrivalAt: performance.now(), close: async () => {} };
  const server = createServer((request, response) => {
    // Consumed and discarded: the bench counts events, it never reads payloads.
    request.resume();
    request.on('end', () => {
      const id = String(request.headers['idempotency-key'] ?? '');
      state.requests += 1;
      if (!arrivals.has(id)) arrivals.set(id, (state.lastArrivalAt = performance.now()));
      const { status, afterMs = state.delayMs } = answer(id);
      open.add(response);
      response.on('close', () => open.delete(response));
      const respond = () => {
        if (status === 0) return void response.destroy();
        if (status < 300 && applied.has(id)) state.repeats += 1;
        else if (status < 300) {
          onApplied?.(id, request);
          applied.set(id, performance.now());
        }
        response.writeHead(status, { 'content-length': '0' });
        response.end();
      };
      if (afterMs === 0) respond();
      else if (afterMs !== Infinity) setTimeout(respond, afterMs);
    });
  });
  // Keep-alive sockets stay open as a real receiver's would; the consumers reuse them.
  server.keepAliveTimeout = 60_000;
  const listening = await listenOnLoopback(server);
  return Object.assign(state, {
    url: listening.url,
    close: async () => {
      for (const response of open) response.destroy();
      await listening.close();
    },
  });
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length === 0 ? Number.NaN : sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Nearest rank: the smallest value with at least p% of values at or below it. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return values.length === 0 ? Number.NaN : sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
}
