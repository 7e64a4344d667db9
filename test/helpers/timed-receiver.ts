/**
 * A receiver on loopback that answers by a script of (arrival number, event ID) and notes every
 * arrival: its event ID (the idempotency-key header), when it came and the status it got.
 */
import { createServer } from 'node:http';
import { listenOnLoopback, type Listening } from './loopback';

export interface Arrival {
  readonly eventId: string;
  /** Epoch ms the request arrived. */
  readonly at: number;
  readonly status: number;
}

export interface TimedReceiver {
  readonly url: string;
  readonly arrivals: Arrival[];
  close(): Promise<void>;
}

export async function startTimedReceiver(answer: (n: number, eventId: string) => { status: number; headers?: Record<string, string> }): Promise<TimedReceiver> {
  const arrivals: Arrival[] = [];
  const server = createServer((request, response) => {
    const at = Date.now();
    request.resume();
    request.on('end', () => {
      const eventId = String(request.headers['idempotency-key'] ?? '');
      const { status, headers } = answer(arrivals.length, eventId);
      arrivals.push({ eventId, at, status });
      response.writeHead(status, { 'content-type': 'text/plain', ...headers }).end(status === 200 ? 'ok' : 'no');
    });
  });
  const listening: Listening = await listenOnLoopback(server);
  return { url: listening.url, arrivals, close: () => listening.close() };
}
