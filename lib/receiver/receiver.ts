/**
 * The receiver: a plain `(request) => response` function that verifies a webhook, runs the
 * business action at most once per `webhook-id`, and answers so the sender does the right thing
 * (docs/contract.md §4):
 *
 * | situation                                   | answer | what the sender does           |
 * |---------------------------------------------|--------|--------------------------------|
 * | the action succeeded (first time or repeat)  | its 2xx, byte for byte on a repeat | delivered |
 * | a repeat while the first is still running    | 425    | retries that delivery later    |
 * | not JSON; unsigned and no webhook-id         | 400    | dead (rejected)                |
 * | missing or bad signature, stale timestamp    | 401    | dead (rejected)                |
 * | the same webhook-id with another body        | 422    | dead (rejected)                |
 * | the action threw                             | 500    | retries                        |
 * | the action answered non-2xx                  | as it said; nothing is stored, so a retry or replay runs it again |
 *
 * The effect and the record are two writes: a receiver that dies between the action's commit and
 * `complete` leaves a running record whose lease lapses, and the next attempt runs the action
 * again. An action that must never repeat writes its effect and the record in one transaction.
 */
import { createHash } from 'node:crypto';
import { safe } from '../terminal';
import { ReceiverConfigError, WebhookVerificationError } from './errors';
import type { IdempotencyStore, StoredResponse } from './store';
import { createVerifier, type HeaderLookup } from './verify';

/** Header values as Node, Express, fetch and Lambda give them. */
export type HeadersInput =
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface WebhookRequest {
  /** Checked when given: anything but POST is answered 405. */
  readonly method?: string;
  readonly headers: HeadersInput;
  /** The raw body, exactly as received: the signature covers these bytes. */
  readonly body: string | Uint8Array;
}

export interface WebhookResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** What the action is given: a verified webhook, seen for the first time (or after a release). */
export interface ReceivedWebhook {
  readonly webhookId: string;
  /** The attempt's signed Unix seconds; undefined for an unsigned receiver. */
  readonly timestampSeconds: number | undefined;
  /** The raw body, as signed. */
  readonly body: string;
  /** The body parsed as JSON. */
  readonly payload: unknown;
  readonly header: HeaderLookup;
}

/**
 * The action's answer. Nothing (undefined) means 200 with an empty body. A 2xx is stored and
 * replayed to every repeat; any other status means nothing was applied, so nothing is stored.
 */
export type ActionResult = void | {
  readonly status?: number;
  /** A string is sent as is; anything else as JSON. */
  readonly body?: unknown;
  readonly contentType?: string;
};

export interface ReceiverOptions {
  /**
   * Standard Webhooks secrets (`whsec_…`, verifying `v1` signatures) and ed25519 public keys
   * (`whpk_…`, verifying `v1a` ones) accepted now: during a rotation, the new and the old, of
   * either scheme. Required unless `unsigned` is set.
   */
  readonly secrets?: readonly string[];
  /** Accept requests without verifying them. For local demos and tests only. */
  readonly unsigned?: boolean;
  /** Seconds the timestamp may be off, either way. Default 300. */
  readonly toleranceSeconds?: number;
  readonly store: IdempotencyStore;
  readonly action: (webhook: ReceivedWebhook) => ActionResult | Promise<ActionResult>;
  /** Told of an action that threw (the request is answered 500). Default: a line on stderr. */
  readonly onActionError?: (error: unknown, webhookId: string) => void;
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly clock?: () => number;
}

/** Set on an answer that is a stored response, not a fresh run of the action. */
export const REPLAYED_HEADER = 'idempotent-replayed';

export type Receiver = ((request: WebhookRequest) => Promise<WebhookResponse>) & {
  /** How long the store recognises a repeat; compare with checkReceiverRetention. */
  readonly retentionSeconds: number;
};

/** @throws ReceiverConfigError on unusable options (no secrets, a malformed secret). */
export function createReceiver(options: ReceiverOptions): Receiver {
  const { store, action } = options;
  const clock = options.clock ?? Date.now;
  const onActionError =
    options.onActionError ??
    ((error: unknown, webhookId: string) => {
      // One inert line: the webhook-id is the sender's, the error may quote the event.
      process.stderr.write(`handoff receiver: ${safe(`the action failed for ${webhookId}: ${describe(error)}`)}\n`);
    });
  if (options.unsigned !== true && options.secrets === undefined) {
    throw new ReceiverConfigError('secrets', 'are required (or set unsigned: true, for local use only)');
  }
  const verify =
    options.unsigned === true
      ? undefined
      : createVerifier({ secrets: options.secrets ?? [], ...(options.toleranceSeconds !== undefined ? { toleranceSeconds: options.toleranceSeconds } : {}) });

  const receive = async (request: WebhookRequest): Promise<WebhookResponse> => {
    if (request.method !== undefined && request.method.toUpperCase() !== 'POST') {
      return problem(405, 'method-not-allowed', 'webhooks are POSTed');
    }
    const header = headerLookup(request.headers);
    const body = typeof request.body === 'string' ? request.body : Buffer.from(request.body).toString('utf8');
    const nowMs = clock();

    let webhookId: string;
    let timestampSeconds: number | undefined;
    if (verify === undefined) {
      const id = header('webhook-id');
      if (!id) return problem(400, 'missing-header', 'webhook-id is required');
      webhookId = id;
    } else {
      try {
        ({ webhookId, timestampSeconds } = verify(header, body, nowMs));
      } catch (error) {
        if (error instanceof WebhookVerificationError) return problem(error.status, error.problem, error.message);
        throw error;
      }
    }

    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch {
      return problem(400, 'invalid-json', 'the body is not JSON');
    }

    const begun = await store.begin(webhookId, sha256(body), nowMs);
    switch (begun.kind) {
      case 'completed':
        return { ...toHttp(begun.response), headers: { ...toHttp(begun.response).headers, [REPLAYED_HEADER]: 'true' } };
      case 'in-progress':
        // Temporary for this delivery alone: a 429, or a 503 with Retry-After, pauses the sender's
        // whole endpoint (docs/contract.md §12); any other 4xx would kill the delivery.
        return problem(425, 'in-progress', `${webhookId} is being processed; retry later`);
      case 'body-mismatch':
        return problem(422, 'webhook-id-reused', `${webhookId} was first received with another body`);
      case 'started':
        break;
    }

    let response: StoredResponse;
    try {
      response = toStored(await action({ webhookId, timestampSeconds, body, payload, header }));
    } catch (error) {
      await store.release(webhookId, begun.token);
      onActionError(error, webhookId);
      return problem(500, 'action-failed', 'the receiver failed; retry later');
    }
    if (response.status >= 200 && response.status < 300) {
      await store.complete(webhookId, begun.token, response, clock());
    } else {
      await store.release(webhookId, begun.token);
    }
    return toHttp(response);
  };
  return Object.assign(receive, { retentionSeconds: store.retentionSeconds });
}

function toStored(result: ActionResult): StoredResponse {
  if (result === undefined) return { status: 200, body: '' };
  const status = result.status ?? 200;
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    throw new ReceiverConfigError('action result status', `must be an HTTP status from 200 to 599, got ${status}`);
  }
  if (result.body === undefined) return { status, body: '', ...(result.contentType ? { contentType: result.contentType } : {}) };
  if (typeof result.body === 'string') {
    return { status, body: result.body, contentType: result.contentType ?? 'text/plain; charset=utf-8' };
  }
  return { status, body: JSON.stringify(result.body), contentType: result.contentType ?? 'application/json' };
}

function toHttp(response: StoredResponse): WebhookResponse {
  return {
    status: response.status,
    headers: response.contentType !== undefined ? { 'content-type': response.contentType } : {},
    body: response.body,
  };
}

function problem(status: number, code: string, message: string): WebhookResponse {
  return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { code, message } }) };
}

function headerLookup(headers: HeadersInput): HeaderLookup {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const fetchHeaders = headers as { get(name: string): string | null };
    return (name) => fetchHeaders.get(name) ?? undefined;
  }
  const lower = new Map<string, string>();
  for (const [name, value] of Object.entries(headers as Record<string, string | readonly string[] | undefined>)) {
    if (value === undefined) continue;
    lower.set(name.toLowerCase(), typeof value === 'string' ? value : value.join(', '));
  }
  return (name) => lower.get(name);
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
