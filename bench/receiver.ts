/**
 * The bench's webhook receiver, on 127.0.0.1: answers 200 (at once, or after `delayMs`), and
 * records each event ID's first arrival time on the bench's clock (`performance.now()` in this
 * process, the same clock the producer stamps sends with). Repeats are counted, not applied.
 */
import { createServer, type Server } from 'node:http';
import { listenOnLoopback } from '../test/helpers/loopback';
import { performance } from 'node:perf_hooks';

export interface BenchReceiver {
  readonly url: string;
  /** First arrival per event ID, ms on `performance.now()`. */
  readonly arrivals: ReadonlyMap<string, number>;
  /** Requests for an event ID already received. */
  readonly repeats: number;
  /** Answer after this many ms from now on (0 = at once). */
  setDelay(delayMs: number): void;
  /** Resolves when `arrivals.size` reaches `count`. */
  waitForArrivals(count: number): Promise<void>;
  /** Called on every first arrival. */
  onArrival(listener: () => void): () => void;
  close(): Promise<void>;
}

export async function startBenchReceiver(): Promise<BenchReceiver> {
  const arrivals = new Map<string, number>();
  const listeners = new Set<() => void>();
  let repeats = 0;
  let delayMs = 0;

  const server: Server = createServer((req, res) => {
    // Consumed and discarded: the bench counts events, it never reads payloads.
    req.resume();
    req.on('end', () => {
      const header = req.headers['idempotency-key'];
      const eventId = typeof header === 'string' ? header : '';
      if (arrivals.has(eventId)) repeats += 1;
      else {
        arrivals.set(eventId, performance.now());
        for (const listener of listeners) listener();
      }
      const answer = () => {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '0' });
        res.end();
      };
      if (delayMs > 0) setTimeout(answer, delayMs);
      else answer();
    });
  });
  // Keep-alive sockets stay open as a real receiver's would; the bench's consumers reuse them.
  server.keepAliveTimeout = 60_000;
  const listening = await listenOnLoopback(server);

  return {
    url: listening.url,
    arrivals,
    get repeats() {
      return repeats;
    },
    setDelay(ms) {
      delayMs = ms;
    },
    waitForArrivals(count) {
      if (arrivals.size >= count) return Promise.resolve();
      return new Promise((resolve) => {
        const listener = () => {
          if (arrivals.size < count) return;
          listeners.delete(listener);
          resolve();
        };
        listeners.add(listener);
      });
    },
    onArrival(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      await listening.close();
    },
  };
}
