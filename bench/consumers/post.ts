/**
 * The plain webhook POST the two comparison consumers use: keep-alive sockets, the same headers
 * handoff sends (unsigned, as the bench runs handoff unsigned), a timeout, and no ledger. A non-2xx
 * answer, a transport failure or a body without an event ID throws, so the record is reported failed.
 */
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true, timeout: 4_000 });
const url = process.env.HANDOFF_WEBHOOK_URL;
if (!url) throw new Error('HANDOFF_WEBHOOK_URL must be set');

export function postEvent(body: string): Promise<number> {
  const eventId = (JSON.parse(body) as { id?: unknown }).id;
  if (typeof eventId !== 'string' || eventId === '') return Promise.reject(new Error('no event id'));
  const payload = Buffer.from(body, 'utf8');
  const headers = {
    'content-type': 'application/json',
    'content-length': String(payload.length),
    'idempotency-key': eventId,
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'user-agent': 'bench-consumer',
  };
  return new Promise((resolve, reject) => {
    const request = http.request(url!, { method: 'POST', agent, timeout: 10_000, headers }, (response) => {
      response.resume();
      response.on('end', () => {
        const status = response.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve(status);
        else reject(new Error(`HTTP ${status}`));
      });
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error('timed out')));
    request.on('error', reject);
    request.end(payload);
  });
}
