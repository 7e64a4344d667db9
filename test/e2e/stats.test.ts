/**
 * `handoff stats` against a running sandbox, as an operator runs it (`node bin/handoff.js`): the
 * delivered count, retry rate and latency come from the sandbox's metric sink (the consumer's
 * own metrics), the pending and dead counts from the ledger's pending and dead rows.
 *
 * The receiver's script decides the attempts, so the figures are known exactly: 10 events are
 * delivered (6 at once, 3 after one 503, 1 after two 503s) and 1 is refused (400, dead).
 * Attempts: 6 + 3×2 + 3 + 1 = 16, of which 3 + 2 = 5 were retries.
 *
 * The sandbox tests share one sandbox and run in order (the text output reads the figures the
 * first test made; the last disables the endpoint to park a delivery): run the file, not a single test.
 */
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCloudWatchStub } from '../helpers/cloudwatch-stub';
import { startTestReceiver, type TestReceiver } from '../helpers/receiver';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = resolve(import.meta.dirname, '../..');
/** Each CLI run starts Node and tsx; the deliveries wait out two 1 s retries. Bounds, not expectations. */
const TEST_TIMEOUT_MS = 180_000;
const WAIT_MS = 120_000;

const AT_ONCE = ['evt_stats_1', 'evt_stats_2', 'evt_stats_3', 'evt_stats_4', 'evt_stats_5', 'evt_stats_6'];
const AFTER_ONE_503 = ['evt_stats_7', 'evt_stats_8', 'evt_stats_9'];
const AFTER_TWO_503 = ['evt_stats_10'];
const REFUSED = 'evt_stats_refused';
const DELIVERED = [...AT_ONCE, ...AFTER_ONE_503, ...AFTER_TWO_503];

let receiver: TestReceiver;
let sandbox: SandboxProcess;
let clients: SandboxClients;

interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `handoff` with a clean environment that names only this test's sandbox. */
function handoff(args: readonly string[], env: Record<string, string> = { HANDOFF_SANDBOX_FILE: sandbox.stateFile }): Promise<CliRun> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_')),
  );
  const child = spawn(process.execPath, [join(ROOT, 'bin/handoff.js'), ...args], {
    cwd: ROOT,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolvePromise) => child.once('close', (code) => resolvePromise({ code, stdout, stderr })));
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
  it('reports the delivered count, retry rate and latency from the metric sink, and pending and dead from the ledger', async () => {
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

    // Act: the consumer's metric documents reach the sink just after the rows are final.
    const stats = await eventually(
      'stats to count every delivery and attempt',
      async () => {
        const run = await handoff(['stats', '--json']);
        if (run.code !== 0) throw new Error(`handoff stats exited ${run.code}: ${run.stderr}`);
        const json = JSON.parse(run.stdout) as Record<string, any>;
        return json.deliveredCount === DELIVERED.length && json.attempts === 16 ? json : undefined;
      },
      { timeoutMs: WAIT_MS, intervalMs: 500 },
    );

    // Assess
    expect(stats).toMatchObject({
      pendingCount: 0,
      oldestPendingAgeMs: null,
      deadCount: 1,
      parkedCount: 0,
      capped: { pending: false, dead: false },
      deliveredCount: 10,
      attempts: 16,
      retriedAttempts: 5,
      retryRate: 5 / 16,
      deadLettered: 1,
      latencySamples: 10,
      window: { since: '24h' },
    });
    expect(stats.sources.metrics).toContain("the sandbox's metric sink");
    expect(stats.sources.backlog).toBe("the ledger's pending and dead rows");
    expect(stats.sources.parked).toBe("the ledger's parked listing of each endpoint in the registry");
    // The event that waited out two 1 s retries took at least 2 s: it is the p99 of 10 values.
    expect(stats.latencyMs.p99).toBeGreaterThanOrEqual(2_000);
    expect(stats.latencyMs.p50).toBeGreaterThanOrEqual(0);
    expect(stats.latencyMs.p50).toBeLessThanOrEqual(stats.latencyMs.p99);
  });

  it('shows the same figures on the sandbox\'s live counter line: delivered from the sink, retrying and dead from the ledger', async () => {
    const counterLine = () => sandbox.stderr().filter((line) => line.startsWith('delivered ')).at(-1);

    const last = await eventually(
      'the counter line to count every delivery',
      async () => (counterLine()?.startsWith('delivered 10 ') ? counterLine() : undefined),
      { timeoutMs: WAIT_MS, describe: () => counterLine() ?? 'no counter line' },
    );

    expect(last).toBe('delivered 10 · retrying 0 · dead 1 · dead-letter queue 1');
  });

  it("gives one endpoint's figures with --endpoint: the sink keeps each delivery's endpoint, the ledger lists its rows", async () => {
    // The single-URL settings deliver to the one endpoint `default`: its figures are the totals.
    const own = await handoff(['stats', '--endpoint', 'default', '--json']);
    const none = await handoff(['stats', '--endpoint', 'nobody', '--json']);

    expect(own.code).toBe(0);
    expect(JSON.parse(own.stdout)).toMatchObject({
      endpoint: 'default',
      deadCount: 1,
      deliveredCount: 10,
      attempts: 16,
      retriedAttempts: 5,
      latencySamples: 10,
      parkedCount: 0,
      sources: { backlog: "the ledger's pending and dead rows of endpoint default", parked: "the ledger's parked listing of endpoint default" },
    });
    expect(none.code).toBe(0);
    expect(JSON.parse(none.stdout)).toMatchObject({ endpoint: 'nobody', pendingCount: 0, deadCount: 0, deliveredCount: 0, attempts: 0, latencySamples: 0 });
  });

  it('says in the text output where each figure comes from and over what window', async () => {
    const run = await handoff(['stats']);

    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.find((line) => line.startsWith('delivered'))).toMatch(/^delivered\s+10$/);
    expect(lines.find((line) => line.startsWith('retry rate'))).toMatch(/^retry rate\s+31\.3% \(5 of 16 attempts were retries\)$/);
    expect(lines).toContain("pending, dead: the ledger's pending and dead rows, now");
    expect(lines.find((line) => line.startsWith('parked'))).toMatch(/^parked\s+0$/);
    expect(lines).toContain("parked: the ledger's parked listing of each endpoint in the registry, now");
    expect(lines.find((line) => line.startsWith('delivered, retry rate, latency:'))).toMatch(
      /^delivered, retry rate, latency: the sandbox's metric sink \(.+sandbox\.metrics\.json, keeps 24 h\), the last 24 h; percentiles over 10 deliveries, nearest rank over 2%-wide histogram bins/,
    );
  });
});

describe('handoff stats in the sandbox, a disabled endpoint', { timeout: TEST_TIMEOUT_MS }, () => {
  it("counts the endpoint's parked delivery apart from pending, in the totals, by endpoint and with --endpoint", async () => {
    // Prepare: the one endpoint disabled; an event for it is parked.
    const disabled = await handoff(['endpoint', 'disable', 'default', '--reason', 'receiver down', '--operator', 'e2e']);
    expect(disabled.code).toBe(0);
    await clients.send(event('evt_stats_parked'));
    await eventually('evt_stats_parked to be parked', async () => (await clients.row('evt_stats_parked'))?.parkedAt !== undefined, { timeoutMs: WAIT_MS });

    // Act
    const all = await handoff(['stats', '--json']);
    const own = await handoff(['stats', '--endpoint', 'default', '--json']);
    const text = await handoff(['stats']);

    // Assess
    expect(JSON.parse(all.stdout)).toMatchObject({ pendingCount: 0, deadCount: 1, parkedCount: 1, byEndpoint: { default: { pendingCount: 0, deadCount: 1, parkedCount: 1 } } });
    expect(JSON.parse(own.stdout)).toMatchObject({ endpoint: 'default', pendingCount: 0, parkedCount: 1 });
    expect(text.stdout).toMatch(/^parked\s+1$/m);
    expect(text.stdout).toMatch(/^ {2}default\s+0 pending, 1 dead, 1 parked$/m);
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

  it('reads the delivery figures from CloudWatch and the backlog from the table', async () => {
    // Prepare
    const cloudWatch = await startCloudWatchStub({
      'Delivered/Sum': [400],
      'Attempts/Sum': [500],
      'RetriedAttempts/Sum': [100],
      'DeadLetters/Sum': [3],
      'DeliveryLatency/SampleCount': [400],
      'DeliveryLatency/p50': [80],
      'DeliveryLatency/p99': [1_900],
    });
    try {
      // Act
      const run = await awsRun(cloudWatch.url, ['--json']);

      // Assess
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const stats = JSON.parse(run.stdout) as Record<string, any>;
      expect(stats).toMatchObject({
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
