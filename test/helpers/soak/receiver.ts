/**
 * One endpoint's soak receiver, on 127.0.0.1 (a port of its own): answers each request as the plan
 * says for its event at this endpoint and the request's position, and keeps only counts (a
 * 20,000-event soak must not hold every request). A request for an event the plan does not route
 * to this endpoint is counted and answered 404, as is one carrying a planned reused ID's body (an
 * identity conflict, which handoff must never send).
 *
 * It is built on the receiver kit, as a user's receiver would be: the application's answers
 * (success, slow success, commit then no answer, refusal) go through `createReceiver` with one
 * in-memory store, so an effect is applied at most once per `webhook-id` by the kit's store; the
 * infrastructure's (5xx, 429, a reset connection) come from in front of the application. Effects
 * are counted by the event ID inside the body, so a sender that changed the key between attempts
 * would show up as a double effect, which idempotency could not have caught. With a secret, the kit
 * verifies each request's signature against this endpoint's secret alone, so a request signed with
 * another endpoint's secret is answered 401 and counted.
 *
 * Behind a lock (docs/contract.md §18, ./locks.ts): with `authorize`, a request whose bearer token
 * the token server did not issue, or that expired, is answered 401 and counted before the plan sees
 * it; with `tls`, it is an HTTPS server that completes no handshake without a client certificate
 * from the test CA, and counts the handshakes it refused.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { MemoryIdempotencyStore } from '../../../lib/receiver/memory-store';
import { createReceiver, REPLAYED_HEADER, type ActionResult, type WebhookResponse } from '../../../lib/receiver/receiver';
import { listenOnLoopback } from '../loopback';
import { DEFAULT_SOAK_ENDPOINT } from './endpoints';
import { answerFor, deliveriesOf, type AnswerKind, type PlannedDelivery, type SoakPlan } from './plan';

export interface ReceiverCounts {
  readonly endpoint: string;
  readonly requests: number;
  /** Requests answered, by the kind of answer. */
  readonly answers: Readonly<Record<AnswerKind, number>>;
  /** Effects applied, by the event ID in the body. More than 1 is a double effect. */
  readonly effects: ReadonlyMap<string, number>;
  /** Requests that would have committed again without the kit: repeats its store answered (or held off with 425). */
  readonly absorbed: number;
  /** Requests whose `idempotency-key` or `webhook-id` differs from the body's event ID. */
  readonly keyMismatches: number;
  /** Requests whose body differs from the first one seen for that key. */
  readonly changedBodies: number;
  /** Requests for no planned event. */
  readonly unplanned: number;
  /** Requests for a planned event that is not routed to this endpoint. */
  readonly unsubscribed: number;
  /** Their event IDs, in arrival order (absent: none recorded). */
  readonly unsubscribedIds?: readonly string[];
  /** Event IDs of requests whose body is a planned reused ID's (plan.conflicts): answered 404, never applied (absent: none). */
  readonly conflicting?: readonly string[];
  /** Requests the kit refused as unsigned or signed with another secret (401). */
  readonly badSignatures: number;
  /** Behind OAuth2: requests without a token the token server issued and had not expired (401). */
  readonly unauthorized: number;
  /** Behind mTLS: handshakes refused for the client's certificate (none, or not the test CA's). */
  readonly refusedHandshakes: number;
  /** When each request arrived (epoch ms, in arrival order): judged against pauses and disabling. */
  readonly requestTimes: readonly number[];
  /** Every pause this receiver asked for: a 429 (or the outage's first answer), when answered and its Retry-After. */
  readonly pauses: readonly ReceiverPause[];
  /** Requests answered by an outage (./outage.ts) instead of the plan: the pausing 429 and the 503s. */
  readonly outageAnswers: { readonly pause: number; readonly unavailable: number };
  /** Requests that carried a `webhook-sequence` header. */
  readonly withSequence: number;
  /** At an ordered endpoint (`ordered` option): every request, in arrival order; absent elsewhere. */
  readonly log?: readonly LoggedRequest[];
}

/** One request at an ordered endpoint's receiver. Epoch ms. */
export interface LoggedRequest {
  /** The body's event ID. */
  readonly eventId: string;
  readonly arrivedAt: number;
  /** Its `webhook-sequence` header, as sent (absent: none). */
  readonly sequence?: string;
  /** When an answer was written, and its status (absent: none, e.g. a reset or a hang). */
  answeredAt?: number;
  status?: number;
}

export interface ReceiverPause {
  /** Epoch ms the 429 was written. */
  readonly at: number;
  readonly seconds: number;
}

/**
 * An outage of the receiver: every request is answered 503 without `Retry-After` (not applied,
 * and the plan's answers are not used up), except the first, which is a 429 with `Retry-After:
 * pauseSeconds` when that is over 0 (the endpoint is paused first).
 */
export interface ReceiverOutage {
  readonly pauseSeconds: number;
}

export interface SoakReceiverOptions {
  /** The endpoint this receiver is (default `default`): it answers that endpoint's deliveries. */
  readonly endpoint?: string;
  /** Its signing secret: requests must be signed with it. Absent: unsigned (the single-URL soak). */
  readonly secret?: string;
  /** Keep a log of every request (event, arrival, `webhook-sequence`, answer): an ordered endpoint's. */
  readonly ordered?: boolean;
  /** Behind OAuth2: whether a request's `Authorization` header may pass. */
  readonly authorize?: (authorization: string | undefined) => boolean;
  /** Behind mTLS: HTTPS with this certificate and key, taking only client certificates `ca` signed. */
  readonly tls?: { readonly certificate: string; readonly key: string; readonly ca: string };
}

export interface SoakReceiver {
  readonly url: string;
  counts(): ReceiverCounts;
  /** Starts an outage (answers below), or ends it (undefined): the plan answers again. */
  setOutage(outage: ReceiverOutage | undefined): void;
  close(): Promise<void>;
}

export async function startSoakReceiver(plan: SoakPlan, options: SoakReceiverOptions = {}): Promise<SoakReceiver> {
  const endpoint = options.endpoint ?? DEFAULT_SOAK_ENDPOINT.name;
  const events = new Set(plan.events.map((event) => event.id));
  const planned = new Map<string, PlannedDelivery>(
    deliveriesOf(plan)
      .filter((delivery) => delivery.endpoint === endpoint)
      .map((delivery) => [delivery.eventId, delivery]),
  );
  const conflictBodies = new Set((plan.conflicts ?? []).map((conflict) => conflict.body));
  const conflicting: string[] = [];
  const unsubscribedIds: string[] = [];
  const seen = new Map<string, number>();
  const firstBody = new Map<string, string>();
  const effects = new Map<string, number>();
  const answers = Object.fromEntries(
    ['ok', 'slow', 'late-commit', 'commit-then-hang', 'server-error', 'throttle', 'reset', 'reject'].map((k) => [k, 0]),
  ) as Record<AnswerKind, number>;
  let requests = 0;
  let absorbed = 0;
  let keyMismatches = 0;
  let changedBodies = 0;
  let unplanned = 0;
  let unsubscribed = 0;
  let badSignatures = 0;
  let unauthorized = 0;
  let refusedHandshakes = 0;
  const requestTimes: number[] = [];
  const pauses: ReceiverPause[] = [];
  const outageAnswers = { pause: 0, unavailable: 0 };
  let withSequence = 0;
  const log: LoggedRequest[] | undefined = options.ordered === true ? [] : undefined;
  let outage: { pauseSeconds: number; paused: boolean } | undefined;
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  // The kit's store: the one place that decides whether an effect may be applied again.
  const store = new MemoryIdempotencyStore();
  /** The application: the kit around this request's planned business action. */
  const application = (action: (bodyEventId: string | undefined) => Promise<ActionResult>) =>
    createReceiver({
      ...(options.secret !== undefined ? { secrets: [options.secret] } : { unsigned: true }),
      store,
      action: ({ payload }) => action((payload as { id?: string } | null)?.id),
    });
  /** The effect, counted by the body's own event ID; committed when the action answers 2xx. */
  const commit = (bodyEventId: string | undefined, key: string): ActionResult => {
    const id = bodyEventId ?? `(unreadable body under ${key})`;
    effects.set(id, (effects.get(id) ?? 0) + 1);
    return { status: 200 };
  };

  const tls = options.tls;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const arrivedAt = Date.now();
    requestTimes.push(arrivedAt);
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
      const sequenceHeader = req.headers['webhook-sequence'];
      if (sequenceHeader !== undefined) withSequence += 1;
      const logged: LoggedRequest | undefined =
        log === undefined
          ? undefined
          : {
              eventId: bodyEventId ?? `(unreadable body under ${key})`,
              arrivedAt,
              ...(typeof sequenceHeader === 'string' ? { sequence: sequenceHeader } : {}),
            };
      if (logged !== undefined) log!.push(logged);
      res.on('finish', () => {
        if (logged === undefined) return;
        logged.answeredAt = Date.now();
        logged.status = res.statusCode;
      });
      if (key !== bodyEventId || req.headers['webhook-id'] !== bodyEventId) keyMismatches += 1;
      const first = firstBody.get(key);
      if (first === undefined) firstBody.set(key, body);
      else if (first !== body) changedBodies += 1;

      const reply = (status: number, headers: Record<string, string> = {}) => {
        if (!res.destroyed && !res.headersSent) res.writeHead(status, { 'content-type': 'text/plain', ...headers }).end();
      };
      const pause = (seconds: number) => {
        reply(429, { 'retry-after': String(seconds) });
        pauses.push({ at: Date.now(), seconds });
      };
      // A reused ID's message must never get here (an identity conflict): counted, not taken for the original's.
      if (conflictBodies.has(body)) {
        conflicting.push(bodyEventId ?? key);
        res.writeHead(404).end();
        return;
      }
      // Behind OAuth2, a request without a good token never reaches the application or the plan.
      if (options.authorize !== undefined && !options.authorize(req.headers.authorization)) {
        unauthorized += 1;
        return reply(401);
      }
      const event = planned.get(key);
      if (outage !== undefined && event !== undefined) {
        // Down: nothing is applied, and the plan's answers wait for the endpoint to come back.
        if (outage.pauseSeconds > 0 && !outage.paused) {
          outage.paused = true;
          outageAnswers.pause += 1;
          return pause(outage.pauseSeconds);
        }
        outageAnswers.unavailable += 1;
        return reply(503);
      }
      if (event === undefined) {
        if (events.has(key)) {
          unsubscribed += 1;
          unsubscribedIds.push(key);
        } else unplanned += 1;
        res.writeHead(404).end();
        return;
      }
      const n = seen.get(key) ?? 0;
      seen.set(key, n + 1);
      const answer = answerFor(event, n);
      answers[answer.kind] += 1;
      /** Through the kit; a planned commit that the store answered instead was absorbed. */
      const apply = (action: (bodyEventId: string | undefined) => Promise<ActionResult>, commits: boolean) =>
        application(action)({ method: req.method ?? 'POST', headers: req.headers, body }).then((response) => {
          if (response.status === 401) badSignatures += 1;
          if (commits && (response.headers[REPLAYED_HEADER] === 'true' || response.status === 425)) absorbed += 1;
          return response;
        });
      switch (answer.kind) {
        case 'ok':
          return void apply(async (id) => commit(id, key), true).then((response) => write(res, response));
        case 'slow':
        case 'late-commit':
          // Committed when the answer is ready, whether or not the sender is still there.
          return void apply(async (id) => {
            await later(answer.delayMs);
            return commit(id, key);
          }, true).then((response) => write(res, response));
        case 'commit-then-hang':
          return void apply(async (id) => commit(id, key), true);
        case 'reject':
          return void apply(async () => ({ status: answer.status }), false).then((response) => write(res, response));
        case 'server-error':
          return reply(answer.status);
        case 'throttle':
          return pause(answer.retryAfterSeconds);
        case 'reset':
          // Over TLS Node cannot reset (no TCP handle of its own): the connection is dropped unanswered instead.
          return void (tls === undefined ? req.socket.resetAndDestroy() : req.socket.destroy());
      }
    });
  };
  const server =
    tls === undefined
      ? createServer(handle)
      : createHttpsServer({ cert: tls.certificate, key: tls.key, ca: tls.ca, requestCert: true, rejectUnauthorized: true }, handle);
  // A killed worker leaves handshakes cut short (a reset, not a refusal): only the certificate's count.
  server.on('tlsClientError', (error: NodeJS.ErrnoException) => {
    if (/CERTIFICATE|UNKNOWN_CA|CERT_/i.test(`${error.code ?? ''} ${error.message}`)) refusedHandshakes += 1;
  });
  const listening = await listenOnLoopback(server);

  return {
    url: listening.url,
    counts: () => ({
      endpoint,
      requests,
      answers: { ...answers },
      effects: new Map(effects),
      absorbed,
      keyMismatches,
      changedBodies,
      unplanned,
      unsubscribed,
      unsubscribedIds: [...unsubscribedIds],
      conflicting: [...conflicting],
      badSignatures,
      unauthorized,
      refusedHandshakes,
      requestTimes: [...requestTimes],
      pauses: [...pauses],
      outageAnswers: { ...outageAnswers },
      withSequence,
      ...(log !== undefined ? { log: log.map((entry) => ({ ...entry })) } : {}),
    }),
    setOutage(next) {
      outage = next === undefined ? undefined : { pauseSeconds: next.pauseSeconds, paused: false };
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      await listening.close();
    },
  };
}

function write(res: ServerResponse, response: WebhookResponse) {
  if (!res.destroyed && !res.headersSent) res.writeHead(response.status, response.headers).end(response.body);
}
