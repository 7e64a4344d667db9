/**
 * The soak's receiver, on 127.0.0.1: answers each request as the plan says for its event and
 * the request's position, and keeps only counts (a 20,000-event soak must not hold every
 * request).
 *
 * It is idempotent the way a real receiver is: an effect is applied once per `idempotency-key`.
 * Effects are also counted by the event ID inside the body, so a sender that changed the key
 * between attempts would show up as a double effect, which idempotency could not have caught.
 */
import { createServer, type Server } from 'node:http';
import { listenOnLoopback } from '../loopback';
import { answerFor, type AnswerKind, type PlannedEvent, type SoakPlan } from './plan';

export interface ReceiverCounts {
  readonly requests: number;
  /** Requests answered, by the kind of answer. */
  readonly answers: Readonly<Record<AnswerKind, number>>;
  /** Effects applied, by the event ID in the body. More than 1 is a double effect. */
  readonly effects: ReadonlyMap<string, number>;
  /** Requests that would have committed again without the key: duplicates idempotency absorbed. */
  readonly absorbed: number;
  /** Requests whose `idempotency-key` or `webhook-id` differs from the body's event ID. */
  readonly keyMismatches: number;
  /** Requests whose body differs from the first one seen for that key. */
  readonly changedBodies: number;
  /** Requests for no planned event. */
  readonly unplanned: number;
}

export interface SoakReceiver {
  readonly url: string;
  counts(): ReceiverCounts;
  close(): Promise<void>;
}

export async function startSoakReceiver(plan: SoakPlan): Promise<SoakReceiver> {
  const planned = new Map<string, PlannedEvent>(plan.events.map((event) => [event.id, event]));
  const seen = new Map<string, number>();
  const firstBody = new Map<string, string>();
  const applied = new Set<string>();
  const effects = new Map<string, number>();
  const answers = Object.fromEntries(
    ['ok', 'slow', 'late-commit', 'commit-then-hang', 'server-error', 'throttle', 'reset', 'reject'].map((k) => [k, 0]),
  ) as Record<AnswerKind, number>;
  let requests = 0;
  let absorbed = 0;
  let keyMismatches = 0;
  let changedBodies = 0;
  let unplanned = 0;
  const timers = new Set<NodeJS.Timeout>();

  /** The receiver's one effect per key; counted by the body's own event ID. */
  const commit = (key: string, bodyEventId: string | undefined) => {
    if (applied.has(key)) {
      absorbed += 1;
      return;
    }
    applied.add(key);
    const id = bodyEventId ?? `(unreadable body under ${key})`;
    effects.set(id, (effects.get(id) ?? 0) + 1);
  };

  const server: Server = createServer((req, res) => {
    res.on('error', () => {});
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests += 1;
      const body = Buffer.concat(chunks).toString('utf8');
      const key = String(req.headers['idempotency-key'] ?? '');
      let bodyEventId: string | undefined;
      try {
        bodyEventId = (JSON.parse(body) as { id?: string }).id;
      } catch {
        bodyEventId = undefined;
      }
      if (key !== bodyEventId || req.headers['webhook-id'] !== bodyEventId) keyMismatches += 1;
      const first = firstBody.get(key);
      if (first === undefined) firstBody.set(key, body);
      else if (first !== body) changedBodies += 1;

      const event = planned.get(key);
      if (event === undefined) {
        unplanned += 1;
        res.writeHead(404).end();
        return;
      }
      const n = seen.get(key) ?? 0;
      seen.set(key, n + 1);
      const answer = answerFor(event, n);
      answers[answer.kind] += 1;
      const reply = (status: number, headers: Record<string, string> = {}) => {
        if (!res.destroyed && !res.headersSent) res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end();
      };
      const later = (ms: number, then: () => void) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          then();
        }, ms);
        timers.add(timer);
      };
      switch (answer.kind) {
        case 'ok':
          commit(key, bodyEventId);
          return reply(200);
        case 'slow':
        case 'late-commit':
          // Committed when the answer is ready, whether or not the sender is still there.
          return later(answer.delayMs, () => {
            commit(key, bodyEventId);
            reply(200);
          });
        case 'commit-then-hang':
          return commit(key, bodyEventId);
        case 'server-error':
          return reply(answer.status);
        case 'throttle':
          return reply(429, { 'retry-after': String(answer.retryAfterSeconds) });
        case 'reset':
          return void req.socket.resetAndDestroy();
        case 'reject':
          return reply(answer.status);
      }
    });
  });
  const listening = await listenOnLoopback(server);

  return {
    url: listening.url,
    counts: () => ({
      requests,
      answers: { ...answers },
      effects: new Map(effects),
      absorbed,
      keyMismatches,
      changedBodies,
      unplanned,
    }),
    async close() {
      for (const timer of timers) clearTimeout(timer);
      await listening.close();
    },
  };
}
