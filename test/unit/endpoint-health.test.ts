/**
 * Endpoint health's rules (lib/endpoints/health.ts, docs/contract.md §12): which outcomes pause an
 * endpoint and for how long, when the automatic rule disables it, and the consumer's tracker: a
 * pause held at once, writes only on failures and the first success after them, one disabling and
 * one notice however many consumers decide it.
 */
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  autoDisableReason,
  DISABLED_EVENT,
  disabledNotifier,
  describeHealth,
  GONE_REASON,
  healthJson,
  HealthTracker,
  MAX_PAUSE_SECONDS,
  noAcceptedSince,
  pauseAfter,
  pauseSecondsLeft,
  type DisabledNotice,
  type EndpointHealth,
  type HealthRecord,
} from '../../lib/endpoints/health';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { singleEndpoint } from '../../lib/routing';
import { MemoryHealthStore, tracker } from '../helpers/health';
import { listenOnLoopback } from '../helpers/loopback';

const T0 = Date.parse('2026-12-03T04:00:00Z');

describe('Function: pauseAfter', () => {
  it.each([
    ['a 429 with Retry-After', { kind: 'temporary', status: 429, retryAfterSeconds: 3 }, T0 + 3_000],
    ['a 429 without Retry-After: the first retry wait', { kind: 'temporary', status: 429 }, T0 + 30_000],
    ['a 503 with Retry-After', { kind: 'temporary', status: 503, retryAfterSeconds: 120 }, T0 + 120_000],
    ['a 503 without Retry-After', { kind: 'temporary', status: 503 }, undefined],
    ['a 500 with Retry-After', { kind: 'temporary', status: 500, retryAfterSeconds: 60 }, undefined],
    ['a 429 with Retry-After: 0', { kind: 'temporary', status: 429, retryAfterSeconds: 0 }, undefined],
    ['a refused connection', { kind: 'temporary', cause: 'connection-refused' }, undefined],
    ['the token endpoint’s 429 (auth): not the receiver’s', { kind: 'temporary', cause: 'auth', status: 429 }, undefined],
    ['the token endpoint’s 503 with Retry-After (auth)', { kind: 'temporary', cause: 'auth', status: 503, retryAfterSeconds: 60 }, undefined],
    ['the proxy’s 429 (proxy): not the receiver’s', { kind: 'temporary', cause: 'proxy', status: 429 }, undefined],
    ['a timeout', { kind: 'unknown', cause: 'timeout' }, undefined],
    ['a 2xx', { kind: 'accepted', status: 200 }, undefined],
    ['a 410', { kind: 'rejected', status: 410, responseStart: '' }, undefined],
  ] as const)('%s', (_, outcome, expected) => {
    expect(pauseAfter(outcome, T0, 30)).toBe(expected);
  });

  it('pauses for 12 h at most', () => {
    expect(pauseAfter({ kind: 'temporary', status: 429, retryAfterSeconds: 10 * 86_400 }, T0, 30)).toBe(T0 + MAX_PAUSE_SECONDS * 1000);
    expect(MAX_PAUSE_SECONDS).toBe(43_200);
  });
});

describe('Function: pauseSecondsLeft', () => {
  it('is the whole seconds left, at least 1 while it lasts, and 0 once it ended or when there is none', () => {
    expect(pauseSecondsLeft({ pausedUntil: T0 + 2_500 }, T0)).toBe(3);
    expect(pauseSecondsLeft({ pausedUntil: T0 + 1 }, T0)).toBe(1);
    expect(pauseSecondsLeft({ pausedUntil: T0 }, T0)).toBe(0);
    expect(pauseSecondsLeft({}, T0)).toBe(0);
  });
});

describe('Function: autoDisableReason', () => {
  const endpoint = { autoDisable: true, state: 'enabled' as const, disableAfterSeconds: 3_600, disableAfterFailures: 5 };
  const failing = (failures: number, sinceMsAgo: number, extra: Partial<EndpointHealth> = {}): EndpointHealth => ({
    failures,
    failingSince: T0 - sinceMsAgo,
    ...extra,
  });

  it('disables at the threshold of both: enough failed attempts and long enough without an accepted request', () => {
    expect(autoDisableReason(endpoint, failing(5, 3_600_000), T0)).toBe(
      'no accepted request for 60 min and 5 failed attempts (autoDisable: 3600 s and 5 attempts)',
    );
  });

  it('waits while either is short', () => {
    expect(autoDisableReason(endpoint, failing(4, 86_400_000), T0)).toBeUndefined();
    expect(autoDisableReason(endpoint, failing(500, 3_599_999), T0)).toBeUndefined();
  });

  it('counts from a recovery recorded after the run of failures began', () => {
    const health = failing(5, 7_200_000, { lastAcceptedAt: T0 - 600_000 });

    expect(noAcceptedSince(health)).toBe(T0 - 600_000);
    expect(autoDisableReason(endpoint, health, T0)).toBeUndefined();
  });

  it('never disables when autoDisable is off, the endpoint is disabled already, or nothing failed', () => {
    expect(autoDisableReason({ ...endpoint, autoDisable: false }, failing(50, 86_400_000), T0)).toBeUndefined();
    expect(autoDisableReason({ ...endpoint, state: 'disabled' }, failing(50, 86_400_000), T0)).toBeUndefined();
    expect(autoDisableReason(endpoint, { failures: 0 }, T0)).toBeUndefined();
  });
});

describe('Function: describeHealth and healthJson', () => {
  it('show a pause, the failures and the last recovery', () => {
    const health: EndpointHealth = { pausedUntil: T0 + 90_000, failures: 3, failingSince: T0 - 60_000, lastAcceptedAt: T0 - 86_400_000 };

    expect(describeHealth(health, T0)).toBe(
      'paused until 2026-12-03T04:01:30.000Z (90 s left); 3 failed attempts since 2026-12-03T03:59:00.000Z; last recovered 2026-12-02T04:00:00.000Z',
    );
    expect(describeHealth(undefined, T0)).toBe('healthy');
    expect(healthJson(health, T0 + 90_000)).toEqual({
      paused: false,
      pausedUntil: '2026-12-03T04:01:30.000Z',
      failures: 3,
      failingSince: '2026-12-03T03:59:00.000Z',
      lastAcceptedAt: '2026-12-02T04:00:00.000Z',
    });
  });
});

const acme = { ...singleEndpoint({ name: 'acme', url: 'https://acme.example/hook', policy: DEFAULT_RETRY_POLICY, attemptTimeoutMs: 10_000 }) };

describe('Class: HealthTracker', () => {
  it('holds the endpoint as soon as a 429 is seen, before its pause is written, and until it ends', async () => {
    const store = new MemoryHealthStore();
    let release!: () => void;
    store.pauseGate = new Promise((resolve) => (release = resolve));
    const clock = { now: T0 };
    const { health, logger } = tracker(store, clock);

    const recording = health.afterAttempt(acme, { kind: 'temporary', status: 429, retryAfterSeconds: 3 }, logger);

    expect(health.pausedFor('acme')).toBe(3);
    expect(health.pausedFor('other')).toBe(0);
    release();
    await recording;
    expect(store.health.get('acme')).toEqual({ failures: 1, failingSince: T0, pausedUntil: T0 + 3_000 });
    clock.now = T0 + 3_000;
    expect(health.pausedFor('acme')).toBe(0);
  });

  it("sees another consumer's pause in the registry's copy", () => {
    const store = new MemoryHealthStore();
    const { health } = tracker(store, { now: T0 });
    const record: HealthRecord = {
      fields: { name: 'acme', url: 'https://acme.example/hook', eventTypes: ['*'] },
      state: 'enabled',
      createdAt: T0,
      updatedAt: T0,
      health: { failures: 1, pausedUntil: T0 + 10_000 },
    };

    health.observe([record]);

    expect(health.pausedFor('acme')).toBe(10);
    expect(store.writes).toEqual([]);
  });

  it("writes nothing for a healthy endpoint, a run's first failure at once, the others of its second together after it, and the recovery once", async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const { health, logger } = tracker(store, clock);
    const ok = { kind: 'accepted', status: 200 } as const;

    await health.afterAttempt(acme, ok, logger);
    await health.afterAttempt(acme, ok, logger);
    expect(store.writes).toEqual([]);

    await health.afterAttempt(acme, { kind: 'temporary', status: 500 }, logger);
    await health.afterAttempt(acme, { kind: 'unknown', cause: 'timeout' }, logger);
    await health.afterAttempt(acme, { kind: 'temporary', status: 502 }, logger);
    // Within a second of the run's first write: counted here, and known here.
    expect(store.writes).toEqual(['failure acme']);
    expect(health.current('acme')).toEqual({ failures: 3, failingSince: T0 });
    clock.now = T0 + 1_000;
    await health.afterAttempt(acme, { kind: 'temporary', status: 500 }, logger);
    expect(store.health.get('acme')).toEqual({ failures: 4, failingSince: T0 });
    clock.now = T0 + 5_000;
    await health.afterAttempt(acme, ok, logger);
    await health.afterAttempt(acme, ok, logger);

    expect(store.writes).toEqual(['failure acme', 'failure ×3 acme', 'recovery acme']);
    expect(store.health.get('acme')).toEqual({ failures: 0, lastAcceptedAt: T0 + 5_000 });
  });

  it('writes the failures of one endpoint at most once a second whatever their rate, losing none, and the batch writes those due when it ends', async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const { health, logger } = tracker(store, clock);

    // 1,000 failed attempts a second for 10 s, ten at once every 10 ms, the batch's end after each ten.
    for (let tick = 0; tick < 1_000; tick++) {
      clock.now = T0 + tick * 10;
      await Promise.all(Array.from({ length: 10 }, () => health.afterAttempt(acme, { kind: 'temporary', status: 503 }, logger)));
      await health.settled();
    }
    clock.now = T0 + 10_000;
    await health.settled();

    // One write at the first, then one each second: 11 for 10,000 failures, every one counted.
    expect(store.writes).toHaveLength(11);
    expect(store.health.get('acme')).toEqual({ failures: 10_000, failingSince: T0 });
  });

  it('writes a pause only when it extends the one it knows of: a batch of 429s, one write', async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const { health, logger } = tracker(store, clock);
    const tooMany = { kind: 'temporary', status: 429, retryAfterSeconds: 30 } as const;

    await Promise.all(Array.from({ length: 10 }, () => health.afterAttempt(acme, tooMany, logger)));
    clock.now = T0 + 500;
    await health.afterAttempt(acme, tooMany, logger);
    clock.now = T0 + 1_000;
    await health.afterAttempt(acme, { ...tooMany, retryAfterSeconds: 60 }, logger);

    expect(store.writes.filter((w) => w.startsWith('pause'))).toEqual(['pause acme', 'pause acme']);
    expect(store.health.get('acme')?.pausedUntil).toBe(T0 + 61_000);
    expect(health.pausedFor('acme')).toBe(60);
  });

  it('keeps its own writes over a copy read before them, and drops them for a copy read after', async () => {
    const store = new MemoryHealthStore();
    const clock = { now: T0 };
    const { health, logger } = tracker(store, clock);
    const list = health.listing({ list: async () => [] as HealthRecord[] });
    const before = await list.list();
    clock.now = T0 + 1;
    await health.afterAttempt(acme, { kind: 'temporary', status: 500 }, logger);

    health.observe(before);
    // Its failure is still known: the next success writes the recovery.
    clock.now = T0 + 2;
    const after = await list.list();
    await health.afterAttempt(acme, { kind: 'accepted', status: 200 }, logger);
    expect(store.writes).toEqual(['failure acme', 'recovery acme']);

    clock.now = T0 + 3;
    health.observe(after);
    await health.afterAttempt(acme, { kind: 'temporary', status: 500 }, logger);
    expect(store.writes.at(-1)).toBe('failure acme');
  });

  it('disables an endpoint that answers 410, by handoff, and tells operators once', async () => {
    const store = new MemoryHealthStore();
    const { health, logger, notices, lines } = tracker(store, { now: T0 });
    const gone = { kind: 'rejected', status: 410, responseStart: 'gone' } as const;

    await health.afterAttempt(acme, gone, logger);
    await health.afterAttempt(acme, gone, logger);

    expect(store.state.get('acme')).toEqual({ state: 'disabled', change: { by: 'handoff', reason: GONE_REASON, at: T0 } });
    expect(notices).toEqual([{ endpoint: 'acme', reason: GONE_REASON, failures: 0, since: null, at: '2026-12-03T04:00:00.000Z' }]);
    expect(lines.filter((l) => l.message === 'endpoint disabled')).toEqual([
      expect.objectContaining({ level: 'error', endpoint: 'acme', reason: GONE_REASON }),
    ]);
  });

  it('disables automatically at the threshold, and only the consumer whose write did it tells operators', async () => {
    const store = new MemoryHealthStore();
    store.health.set('acme', { failures: 2, failingSince: T0 - 61_000 });
    const endpoint = { ...acme, disableAfterFailures: 3, disableAfterSeconds: 60 };
    const one = tracker(store, { now: T0 });
    const two = tracker(store, { now: T0 });

    await one.health.afterAttempt(endpoint, { kind: 'temporary', status: 503 }, one.logger);
    await two.health.afterAttempt(endpoint, { kind: 'temporary', status: 503 }, two.logger);

    expect(store.state.get('acme')?.change).toEqual({
      by: 'handoff',
      reason: 'no accepted request for 61 s and 3 failed attempts (autoDisable: 60 s and 3 attempts)',
      at: T0,
    });
    expect([...one.notices, ...two.notices]).toEqual([
      { endpoint: 'acme', reason: expect.stringMatching(/^no accepted request/), failures: 3, since: '2026-12-03T03:58:59.000Z', at: '2026-12-03T04:00:00.000Z' },
    ]);
  });

  it('does not disable an endpoint whose autoDisable is off', async () => {
    const store = new MemoryHealthStore();
    store.health.set('acme', { failures: 100, failingSince: T0 - 86_400_000 * 10 });
    const { health, logger } = tracker(store, { now: T0 });

    await health.afterAttempt({ ...acme, autoDisable: false }, { kind: 'temporary', status: 503 }, logger);

    expect(store.writes).toEqual(['failure acme']);
  });

  it('logs a health write that fails and never throws: the delivery stands', async () => {
    const store = new MemoryHealthStore();
    store.fail = true;
    const { health, logger, lines } = tracker(store, { now: T0 });

    await expect(health.afterAttempt(acme, { kind: 'temporary', status: 429, retryAfterSeconds: 5 }, logger)).resolves.toBeUndefined();

    expect(lines.filter((l) => l.message === 'endpoint health write failed').map((l) => l.level)).toEqual(['warn', 'warn']);
    // The pause still holds this consumer's deliveries.
    expect(health.pausedFor('acme')).toBe(5);
  });
});

describe('Function: disabledNotifier', () => {
  const notice: DisabledNotice = { endpoint: 'acme', reason: GONE_REASON, failures: 2, since: null, at: '2026-12-03T04:00:00.000Z' };

  /** EventBridge (JSON) and SNS (query) on one loopback stub, keeping what each was sent. */
  async function stub(options: { refuseEvent?: boolean } = {}) {
    const requests: { target: string; body: string }[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        const target = String(request.headers['x-amz-target'] ?? new URLSearchParams(body).get('Action'));
        requests.push({ target, body });
        if (target === 'AWSEvents.PutEvents') {
          const answer = options.refuseEvent ? { FailedEntryCount: 1, Entries: [{ ErrorCode: 'AccessDenied' }] } : { FailedEntryCount: 0, Entries: [{ EventId: 'e-1' }] };
          response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(answer));
        } else {
          response
            .writeHead(200, { 'content-type': 'text/xml' })
            .end('<PublishResponse><PublishResult><MessageId>m-1</MessageId></PublishResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></PublishResponse>');
        }
      });
    });
    const listening = await listenOnLoopback(server);
    const clientConfig = { region: 'eu-west-1', endpoint: new URL(listening.url).origin, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
    return { requests, clientConfig, close: () => listening.close() };
  }

  it('is none when neither a bus nor a topic is set (the sandbox: the log line only)', () => {
    expect(disabledNotifier({})).toBeUndefined();
  });

  it('puts handoff.endpoint.disabled on the bus and publishes to the alarm topic', async () => {
    const aws = await stub();
    try {
      const notify = disabledNotifier({ eventBus: 'default', alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:alarms', clientConfig: aws.clientConfig })!;

      await notify(notice);

      const put = aws.requests.find((r) => r.target === 'AWSEvents.PutEvents')!;
      const entry = (JSON.parse(put.body) as { Entries: Record<string, string>[] }).Entries[0]!;
      expect(entry).toEqual({ EventBusName: 'default', Source: DISABLED_EVENT.source, DetailType: 'handoff.endpoint.disabled', Detail: JSON.stringify(notice) });
      const publish = new URLSearchParams(aws.requests.find((r) => r.target === 'Publish')!.body);
      expect(publish.get('TopicArn')).toBe('arn:aws:sns:eu-west-1:123456789012:alarms');
      expect(publish.get('Subject')).toBe('handoff: endpoint acme disabled');
      expect(JSON.parse(publish.get('Message')!)).toEqual({ event: 'handoff.endpoint.disabled', ...notice });
    } finally {
      await aws.close();
    }
  });

  it('rejects, naming the error, when EventBridge refuses the event, after publishing to the topic', async () => {
    const aws = await stub({ refuseEvent: true });
    try {
      const notify = disabledNotifier({ eventBus: 'default', alarmTopicArn: 'arn:aws:sns:eu-west-1:123456789012:alarms', clientConfig: aws.clientConfig })!;

      await expect(notify(notice)).rejects.toThrow('EventBridge refused the event: AccessDenied');
      expect(aws.requests.map((r) => r.target).sort()).toEqual(['AWSEvents.PutEvents', 'Publish']);
    } finally {
      await aws.close();
    }
  });
});
