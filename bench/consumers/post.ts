/**
 * The plain webhook POST the two comparison consumers use: keep-alive sockets, the same
 * headers handoff sends (unsigned, as the bench runs handoff unsigned), a timeout, and no
 * ledger. A non-2xx answer or a transport failure throws, so the record is reported failed.
 */
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true, timeout: 4_000 });
const TIMEOUT_MS = 10_000;

export class WebhookFailedError extends Error {
  override readonly name = 'WebhookFailedError';
}

export function postEvent(url: string, eventId: string, body: string): Promise<number> {
  const payload = Buffer.from(body, 'utf8');
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        agent,
        timeout: TIMEOUT_MS,
        headers: {
          'content-type': 'application/json',
          'content-length': String(payload.length),
          'idempotency-key': eventId,
          'webhook-id': eventId,
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'user-agent': 'bench-consumer',
        },
      },
      (response) => {
        response.resume();
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(status);
          else reject(new WebhookFailedError(`HTTP ${status}`));
        });
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new WebhookFailedError('timed out')));
    request.on('error', reject);
    request.end(payload);
  });
}

/** The event ID a body carries; throws on a body that is not an event (a naive check). */
export function eventIdOf(body: string): string {
  const id = (JSON.parse(body) as { id?: unknown }).id;
  if (typeof id !== 'string' || id === '') throw new WebhookFailedError('no event id');
  return id;
}

export function webhookUrl(): string {
  const url = process.env.HANDOFF_WEBHOOK_URL;
  if (!url) throw new Error('HANDOFF_WEBHOOK_URL must be set');
  return url;
}
