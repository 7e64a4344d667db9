/**
 * `handoff stats` against a running sandbox, as an operator runs it (`node bin/handoff.js`): the
 * delivered count, retry rate, latency and oldest message received come from the sandbox's metric
 * sink (the consumer's own metrics), pending from the queues' depths (a delivery being retried is
 * its message, in flight, and in no listing), the dead count from the ledger's dead rows.
 *
 * The receiver's script decides the attempts, so the figures are known exactly: 10 events are
 * delivered (6 at once, 3 after one 503, 1 after two 503s) and 1 is refused (400, dead).
 * Attempts: 6 + 3×2 + 3 + 1 = 16, of which 3 + 2 = 5 were retries.
 *
 * The sandbox tests share one sandbox and run in order (the text output reads the figures the
 * first test made; the next gives the endpoint a 20-s retry to catch a delivery between its
 * attempts; the last disables the endpoint to park a delivery): run the file, not a single test.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHandoffWith, type CliRun } from '../helpers/cli';
import { startCloudWatchStub } from '../helpers/cloudwatch-stub';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** Each CLI run starts Node and tsx; the deliveries wait out two 1 s retries. Bounds, not expectations. */
const TEST_TIMEOUT_MS = 180_000;
const WAIT_MS = 120_000;

const AT_ONCE = ['evt_stats_1', 'evt_stats_2', 'evt_stats_3', 'evt_stats_4', 'evt_stats_5', 'evt_stats_6'];
const AFTER_ONE_503 = ['evt_stats_7', 'evt_stats_8', 'evt_stats_9'];
const AFTER_TWO_503 = ['evt_stats_10'];
const REFUSED = 'evt_stats_refused';
const DELIVERED = [...AT_ONCE, ...AFTER_ONE_503, ...AFTER_TWO_503];
/** Sent after the figures above are checked; its first attempt fails, its retry waits `RETRY_WAIT_S`. */
const RETRYING = 'evt_stats_retrying';
/** Long enough for a CLI run to find the delivery between its attempts on a busy machine. */
const RETRY_WAIT_S = 20;
/** Every queue empty: nothing pending. */
const EMPTY = { visible: 0, inFlight: 0, delayed: 0 };

let receiver: TestReceiver;
let sandbox: SandboxProcess;
let clients: SandboxClients;

/** Runs `handoff` with a clean environment that names only this test's sandbox. */
function handoff(args: readonly string[], env: Record<string, string> = { HANDOFF_SANDBOX_FILE: sandbox.stateFile }): Promise<CliRun> {
  return runHandoffWith(args, env);
}

/** `handoff stats --json` against the sandbox, parsed; throws when it fails. */
async function statsJson(args: readonly string[] = []): Promise<Record<string, any>> {
  const run = await handoff(['stats', '--json', ...args]);
  if (run.code !== 0) throw new Error(`handoff stats exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, any>;
}

function event(id: string) {
  return JSON.stringify({ id, shipmentId: 'shp_stats', status: 'in_transit', occurredAt: '2026-12-02T10:15:00Z' });
}

beforeAll(async () => {
  receiver = await startTestReceiver();
  for (const id of AFTER_ONE_503) receiver.respondTo(id, 503);
  for (const id of AFTER_TWO_503) receiver.respondTo(id, 503, 503);
  receiver.respondTo(REFUSED, 400);
  sandbox = await startSandboxProcess({
    env: { HANDOFF_WEBHOOK_URL: receiver.url, HANDOFF_RETRY_SCHEDULE: '1', HANDOFF_MAX_ATTEMPTS: '4' },
    // Each batch reads the registry: an event sent after `endpoint disable` meets the change.
    endpointsCacheMs: 0,
  });
  clients = new SandboxClients(sandbox.ready);
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  clients?.close();
  await sandbox?.stop('SIGTERM');
  await receiver?.close();
});

describe('handoff stats in the sandbox', { timeout: TEST_TIMEOUT_MS }, () => {
  it('reports the delivered count, retry rate, latency and oldest message received from the metric sink, pending from the queues, dead from the ledger', async () => {
    // Prepare: every event reaches its final state in the ledger.
    await clients.sendAll([...DELIVERED, REFUSED].map(event));
    await eventually(
      'every event to be delivered or dead',
      async () => {
        const rows = await Promise.all([...DELIVERED, REFUSED].map((id) => clients.row(id)));
        return rows.every((row, i) => row?.state === (i < DELIVERED.length ? 'delivered' : 'dead'));
      },
      { timeoutMs: WAIT_MS },
    );

    // Act: the consumer's metric documents reach the sink, and its messages leave the queue, just after the rows are final.
    const stats = await eventually(
      'stats to count every delivery and attempt, and no message left on the queue',
      async () => {
        const json = await statsJson();
        return json.deliveredCount === DELIVERED.length && json.attempts === 16 && json.pendingCount === 0 ? json : undefined;
      },
      { timeoutMs: WAIT_MS, intervalMs: 500 },
    );

    // Assess
    expect(stats).toMatchObject({
      pendingCount: 0,
      deadCount: 1,
      parkedCount: 0,
      capped: { dead: false },
      deliveredCount: 10,
      attempts: 16,
      retriedAttempts: 5,
      retryRate: 5 / 16,
      deadLettered: 1,
      latencySamples: 10,
      window: { since: '24h' },
      queue: EMPTY,
      redriveQueue: EMPTY,
      deadLetterQueue: { visible: 1, inFlight: 0, delayed: 0 },
    });
    expect(stats.sources.metrics).toContain("the sandbox's metric sink");
    expect(stats.sources.pending).toMatch(/^the messages on the delivery queue and the redrive queue \(waiting, in flight, delayed\): SQS's approximate counts, now; /);
    expect(stats.sources.dead).toBe("the ledger's dead rows");
    expect(stats.sources.parked).toBe("the ledger's parked listing of each endpoint in the registry");
    // The event that waited out two 1 s retries was received a third time at least 2 s after it was sent.
    expect(stats.oldestPendingAgeMs).toBeGreaterThanOrEqual(2_000);
    // The event that waited out two 1 s retries took at least 2 s: it is the p99 of 10 values.
    expect(stats.latencyMs.p99).toBeGreaterThanOrEqual(2_000);
    expect(stats.latencyMs.p50).toBeGreaterThanOrEqual(0);
    expect(stats.latencyMs.p50).toBeLessThanOrEqual(stats.latencyMs.p99);
  });

  it('shows the same figures on the sandbox\'s live counter line: delivered from the sink, queued from the queues, dead from the ledger', async () => {
    const counterLine = () => sandbox.stderr().filter((line) => line.startsWith('delivered ')).at(-1);

    const last = await eventually(
      'the counter line to count every delivery',
      async () => (counterLine()?.startsWith('delivered 10 ') ? counterLine() : undefined),
      { timeoutMs: WAIT_MS, describe: () => counterLine() ?? 'no counter line' },
    );

    expect(last).toBe('delivered 10 · queued 0 · dead 1 · dead-letter queue 1');
  });

  it("gives one endpoint's figures with --endpoint: the sink keeps each delivery's endpoint, the ledger lists its rows", async () => {
    // The single-URL settings deliver to the one endpoint `default`: its figures are the totals.
    const own = await handoff(['stats', '--endpoint', 'default', '--json']);
    const none = await handoff(['stats', '--endpoint', 'nobody', '--json']);

    expect(own.code).toBe(0);
    expect(JSON.parse(own.stdout)).toMatchObject({
      endpoint: 'default',
      // The queues hold every endpoint's messages: no pending count of one endpoint's.
      pendingCount: null,
      deadCount: 1,
      deliveredCount: 10,
      attempts: 16,
      retriedAttempts: 5,
      latencySamples: 10,
      parkedCount: 0,
      sources: {
        pending: 'n/a with an endpoint: the queues are shared by every endpoint',
        dead: "the ledger's dead rows of endpoint default",
        parked: "the ledger's parked listing of endpoint default",
      },
    });
    expect(JSON.parse(own.stdout).oldestPendingAgeMs).toBeGreaterThanOrEqual(2_000);
    expect(none.code).toBe(0);
    expect(JSON.parse(none.stdout)).toMatchObject({
      endpoint: 'nobody',
      pendingCount: null,
      oldestPendingAgeMs: null,
      deadCount: 0,
      deliveredCount: 0,
      attempts: 0,
      latencySamples: 0,
    });
  });

  it('says in the text output where each figure comes from and over what window', async () => {
    const run = await handoff(['stats']);

    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.find((line) => line.startsWith('delivered'))).toMatch(/^delivered\s+10$/);
    expect(lines.find((line) => line.startsWith('retry rate'))).toMatch(/^retry rate\s+31\.3% \(5 of 16 attempts were retries\)$/);
    expect(lines.find((line) => line.startsWith('pending'))).toMatch(/^pending\s+0$/);
    expect(lines.find((line) => line.startsWith('oldest received'))).toMatch(
      /^oldest received\s+\d.* old \(the oldest message the consumer received in the last 24 h\)$/,
    );
    expect(lines.find((line) => line.startsWith('redrive queue'))).toMatch(/^redrive queue\s+0 waiting, 0 in flight, 0 delayed$/);
    expect(lines).toContain(
      "pending: the messages on the delivery queue and the redrive queue (waiting, in flight, delayed): SQS's approximate counts, now; " +
        "a producer's message not yet routed counts once whatever its endpoints; parked deliveries are on no queue (parked, on its own line)",
    );
    expect(lines).toContain("dead: the ledger's dead rows, now");
    expect(lines.find((line) => line.startsWith('parked'))).toMatch(/^parked\s+0$/);
    expect(lines).toContain("parked: the ledger's parked listing of each endpoint in the registry, now");
    expect(lines.find((line) => line.startsWith('delivered, retry rate, latency, oldest received:'))).toMatch(
      /^delivered, retry rate, latency, oldest received: the sandbox's metric sink \(.+sandbox\.metrics\.json, keeps 24 h\), the last 24 h; percentiles over 10 deliveries, nearest rank over 2%-wide histogram bins/,
    );
  });

  it('counts a delivery waiting for its retry as pending (its message is in flight), then 0 once delivered; the oldest message received is its retry', async () => {
    // Prepare: the endpoint's retries wait RETRY_WAIT_S (each batch reads the registry); the event's first attempt gets a 503.
    const updated = await handoff(['endpoint', 'update', 'default', '--retry-schedule', String(RETRY_WAIT_S)]);
    expect(updated).toMatchObject({ code: 0, stderr: '' });
    receiver.respondTo(RETRYING, 503);
    await clients.send(event(RETRYING));
    await eventually('the first attempt of the retrying event', async () => receiver.requestsFor(RETRYING).length >= 1, { timeoutMs: WAIT_MS });

    // Act: between its attempts (the retry comes RETRY_WAIT_S after the 503).
    const [waiting, waitingText] = await Promise.all([statsJson(), handoff(['stats'])]);

    // Assess: the row is pending and in no listing; the queue holds its message, in flight.
    expect(waiting).toMatchObject({ pendingCount: 1, queue: { visible: 0, inFlight: 1, delayed: 0 }, redriveQueue: EMPTY });
    expect(receiver.requestsFor(RETRYING)).toHaveLength(1);
    expect((await clients.row(RETRYING))?.state).toBe('pending');
    expect(waitingText.stdout).toMatch(/^pending\s+1$/m);
    expect(waitingText.stdout).toMatch(/^queue\s+0 waiting, 1 in flight, 0 delayed$/m);

    // Act: the retry delivers it.
    await eventually('the retrying event to be delivered', async () => (await clients.row(RETRYING))?.state === 'delivered', { timeoutMs: WAIT_MS });
    const settled = await eventually(
      'stats to count the delivery, and no message left on the queue',
      async () => {
        const json = await statsJson();
        return json.deliveredCount === DELIVERED.length + 1 && json.pendingCount === 0 ? json : undefined;
      },
      { timeoutMs: WAIT_MS, intervalMs: 500 },
    );

    // Assess: nothing pending; its retry was received at least RETRY_WAIT_S after the message was sent.
    expect(settled).toMatchObject({ pendingCount: 0, queue: EMPTY, redriveQueue: EMPTY });
    expect(settled.oldestPendingAgeMs).toBeGreaterThanOrEqual(RETRY_WAIT_S * 1000);
  });
});

describe('handoff stats in the sandbox, a disabled endpoint', { timeout: TEST_TIMEOUT_MS }, () => {
  it("counts the endpoint's parked delivery apart from pending, in the totals, by endpoint and with --endpoint", async () => {
    // Prepare: the one endpoint disabled; an event for it is parked.
    const disabled = await handoff(['endpoint', 'disable', 'default', '--reason', 'receiver down', '--operator', 'e2e']);
    expect(disabled.code).toBe(0);
    await clients.send(event('evt_stats_parked'));
    await eventually('evt_stats_parked to be parked', async () => (await clients.row('evt_stats_parked'))?.parkedAt !== undefined, { timeoutMs: WAIT_MS });

    // Act: a parked delivery's message leaves the queue just after its row is parked.
    const all = await eventually('the parked delivery off the queue', async () => {
      const json = await statsJson();
      return json.pendingCount === 0 ? json : undefined;
    }, { timeoutMs: WAIT_MS, intervalMs: 500, describe: async () => JSON.stringify((await statsJson()).queue) });
    const own = await handoff(['stats', '--endpoint', 'default', '--json']);
    const text = await handoff(['stats']);

    // Assess: parked is on its own line, and not pending (it is on no queue).
    expect(all).toMatchObject({ pendingCount: 0, deadCount: 1, parkedCount: 1, byEndpoint: { default: { deadCount: 1, parkedCount: 1 } } });
    expect(JSON.parse(own.stdout)).toMatchObject({ endpoint: 'default', pendingCount: null, parkedCount: 1 });
    expect(text.stdout).toMatch(/^parked\s+1$/m);
    expect(text.stdout).toMatch(/^pending\s+0$/m);
    expect(text.stdout).toMatch(/^ {2}default\s+1 dead, 1 parked$/m);
  });
});

/**
 * The same command against a "deployed stack": resources named explicitly, reached through the
 * standard AWS environment (the sandbox's emulators stand in for SQS and DynamoDB), and
 * CloudWatch's GetMetricData on loopback.
 */
describe('handoff stats against AWS', { timeout: TEST_TIMEOUT_MS }, () => {
  function awsRun(cloudWatchUrl: string, args: readonly string[]) {
    return handoff(
      [
        'stats',
        '--queue-url',
        sandbox.ready.queueUrl,
        '--dlq-url',
        sandbox.ready.deadLetterQueueUrl,
        '--redrive-queue-url',
        String(sandbox.ready.redriveQueueUrl),
        '--table',
        sandbox.ready.ledgerTable,
        ...args,
      ],
      {
        HANDOFF_SANDBOX_FILE: join(sandbox.stateFile, '..', 'no-sandbox-here.json'),
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_MAX_ATTEMPTS: '1',
        AWS_ENDPOINT_URL_SQS: sandbox.ready.sqsEndpoint,
        AWS_ENDPOINT_URL_DYNAMODB: sandbox.ready.dynamodbEndpoint,
        AWS_ENDPOINT_URL_CLOUDWATCH: cloudWatchUrl,
      },
    );
  }

  it('reads the delivery figures and the oldest message received from CloudWatch, pending from the queues and dead from the table', async () => {
    // Prepare
    const cloudWatch = await startCloudWatchStub({
      'Delivered/Sum': [400],
      'Attempts/Sum': [500],
      'RetriedAttempts/Sum': [100],
      'DeadLetters/Sum': [3],
      'DeliveryLatency/SampleCount': [400],
      'DeliveryLatency/p50': [80],
      'DeliveryLatency/p99': [1_900],
      'PendingAge/Maximum': [95],
    });
    try {
      // Act
      const run = await awsRun(cloudWatch.url, ['--json']);

      // Assess
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const stats = JSON.parse(run.stdout) as Record<string, any>;
      expect(stats).toMatchObject({
        pendingCount: 0,
        oldestPendingAgeMs: 95_000,
        queue: EMPTY,
        redriveQueue: EMPTY,
        deadCount: 1,
        deliveredCount: 400,
        attempts: 500,
        retriedAttempts: 100,
        retryRate: 0.2,
        deadLettered: 3,
        latencyMs: { p50: 80, p99: 1_900 },
        latencySamples: 400,
        sources: { metrics: 'CloudWatch (namespace Handoff, Service=handoff)' },
        // No endpoint registry named: the parked listing is per endpoint, so nothing to count.
        parkedCount: null,
      });
      expect(cloudWatch.requests).toHaveLength(1);
    } finally {
      await cloudWatch.close();
    }
  });

  it('still prints the backlog when CloudWatch refuses, then fails (exit 1) naming why', async () => {
    const cloudWatch = await startCloudWatchStub({}, { status: 403, error: 'AccessDenied' });
    try {
      const run = await awsRun(cloudWatch.url, []);

      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/^dead\s+1$/m);
      expect(run.stdout).toMatch(/^delivered\s+n\/a$/m);
      expect(run.stderr).toMatch(/^handoff: metrics unavailable: CloudWatch GetMetricData failed \(AccessDenied\)/);
    } finally {
      await cloudWatch.close();
    }
  });
});
