/**
 * Outcome classification (docs/contract.md §4): what an HTTP response means for delivery, and the one-line
 * description logs and the CLI show.
 */
import { describe, expect, it } from 'vitest';
import { classifyResponse, describeOutcome, unreachable, type AttemptOutcome } from '../../lib/outcome';

const NOW_MS = Date.parse('2026-12-02T10:15:00Z');

describe('Function: classifyResponse', () => {
  it.each([200, 201, 202, 204, 299])('classifies %i as accepted', (status) => {
    expect(classifyResponse(status, undefined, 'ok', NOW_MS)).toStrictEqual({ kind: 'accepted', status });
  });

  it.each([408, 425, 429, 500, 502, 503, 504, 599])('classifies %i as temporary', (status) => {
    expect(classifyResponse(status, undefined, 'busy', NOW_MS)).toStrictEqual({ kind: 'temporary', status });
  });

  it('keeps a temporary answer’s Retry-After in seconds', () => {
    expect(classifyResponse(429, '30', '', NOW_MS)).toStrictEqual({
      kind: 'temporary',
      status: 429,
      retryAfterSeconds: 30,
    });
  });

  it('keeps a temporary answer’s Retry-After date as seconds from now', () => {
    expect(classifyResponse(503, 'Wed, 02 Dec 2026 10:25:00 GMT', '', NOW_MS)).toStrictEqual({
      kind: 'temporary',
      status: 503,
      retryAfterSeconds: 600,
    });
  });

  it('leaves out an unreadable Retry-After', () => {
    expect(classifyResponse(503, 'later', '', NOW_MS)).toStrictEqual({ kind: 'temporary', status: 503 });
  });

  it('classifies 410 as rejected, with the start of the response', () => {
    expect(classifyResponse(410, undefined, 'endpoint retired', NOW_MS)).toStrictEqual({
      kind: 'rejected',
      status: 410,
      responseStart: 'endpoint retired',
    });
  });

  it.each([300, 301, 302, 303, 304, 307, 308])('classifies the redirect %i as rejected', (status) => {
    expect(classifyResponse(status, undefined, '', NOW_MS)).toStrictEqual({ kind: 'rejected', status, responseStart: '' });
  });

  it.each([400, 401, 403, 404, 405, 409, 413, 415, 422])('classifies %i as rejected', (status) => {
    expect(classifyResponse(status, undefined, '{"error":"no"}', NOW_MS)).toStrictEqual({
      kind: 'rejected',
      status,
      responseStart: '{"error":"no"}',
    });
  });

  it('ignores Retry-After on an answer that is not temporary', () => {
    expect(classifyResponse(400, '60', 'bad', NOW_MS)).toStrictEqual({ kind: 'rejected', status: 400, responseStart: 'bad' });
    expect(classifyResponse(200, '60', '', NOW_MS)).toStrictEqual({ kind: 'accepted', status: 200 });
  });
});

describe('Function: describeOutcome', () => {
  it.each<[AttemptOutcome, string]>([
    [{ kind: 'accepted', status: 200 }, 'accepted (200)'],
    [{ kind: 'rejected', status: 422, responseStart: 'secret-ish receiver text' }, 'rejected (422)'],
    [{ kind: 'temporary', status: 503, retryAfterSeconds: 60 }, 'temporary (503)'],
    [{ kind: 'temporary', cause: 'connection-refused' }, 'temporary (connection-refused)'],
    [{ kind: 'temporary', cause: 'blocked-address' }, 'temporary (blocked-address)'],
    [{ kind: 'temporary' }, 'temporary (error)'],
    // Another server's status beside its cause: the token endpoint's, the proxy's.
    [{ kind: 'temporary', cause: 'auth', status: 503 }, 'temporary (auth 503)'],
    [{ kind: 'temporary', cause: 'auth' }, 'temporary (auth)'],
    [{ kind: 'temporary', cause: 'proxy', status: 407 }, 'temporary (proxy 407)'],
    [{ kind: 'temporary', status: 401 }, 'temporary (401)'],
    [{ kind: 'unknown', cause: 'timeout' }, 'unknown (timeout)'],
    [{ kind: 'unknown', cause: 'connection-reset' }, 'unknown (connection-reset)'],
  ])('describes %j as "%s"', (outcome, text) => {
    expect(describeOutcome(outcome)).toBe(text);
  });
});

describe('Function: unreachable', () => {
  it.each<[AttemptOutcome, boolean]>([
    [{ kind: 'unknown', cause: 'timeout' }, true],
    [{ kind: 'unknown', cause: 'connection-reset' }, true],
    [{ kind: 'temporary', cause: 'connection-refused' }, true],
    [{ kind: 'temporary', cause: 'dns' }, true],
    [{ kind: 'temporary', cause: 'connect-timeout' }, true],
    [{ kind: 'temporary', cause: 'network' }, true],
    // Failing at once, and the endpoint's settings to mend: not the breaker's.
    [{ kind: 'temporary', cause: 'tls' }, false],
    [{ kind: 'temporary', cause: 'blocked-address' }, false],
    // No token, or the proxy refused: before the receiver, another server's (or the settings') to mend.
    [{ kind: 'temporary', cause: 'auth' }, false],
    [{ kind: 'temporary', cause: 'auth', status: 500 }, false],
    [{ kind: 'temporary', cause: 'proxy', status: 502 }, false],
    [{ kind: 'temporary', cause: 'proxy' }, false],
    // Every HTTP answer, however bad.
    [{ kind: 'temporary', status: 503 }, false],
    [{ kind: 'temporary', status: 429, retryAfterSeconds: 5 }, false],
    [{ kind: 'rejected', status: 410, responseStart: '' }, false],
    [{ kind: 'accepted', status: 200 }, false],
    [{ kind: 'temporary' }, false],
  ])('%j: %s', (outcome, expected) => {
    expect(unreachable(outcome)).toBe(expected);
  });
});
