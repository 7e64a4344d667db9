/**
 * `npm run cost`: what one delivery costs in DynamoDB requests, counted on the wire.
 *
 * Runs the real use case (`deliver`) with the real DynamoDB adapter against dynalite, and the
 * real HTTP sender against a loopback receiver, for the scenarios that matter, and prints the
 * writes and reads each one sent. Refused conditional writes are counted as writes: AWS bills
 * them too.
 *
 * Reads are shown twice. dynalite ignores `ReturnValuesOnConditionCheckFailure`, so after a
 * refused write the ledger reads the row (GetItem); AWS returns the row with the refusal at no
 * read cost. The second column replays the run with a client that answers the way AWS does.
 *
 * Exits 1 when the happy path (one event, delivered on the first attempt) takes more than 2
 * writes or any read.
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { deliver, type DeliverDeps, type DeliveryResult, type QueueDecision } from '../lib/deliver';
import { DEFAULT_PAYLOAD_LIMIT_BYTES } from '../lib/event';
import { createLedgerTable, DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import { DEFAULT_RETRY_POLICY } from '../lib/policy';
import { EndpointGuard, SANDBOX_GUARD_OPTIONS } from '../lib/webhook/endpoint-guard';
import { HttpWebhookSender } from '../lib/webhook/http-sender';
import {
  countCommands,
  emulatorDynamoDbClient,
  readsAndWrites,
  returnOldItemOnConditionFailure,
  startDynalite,
  type CommandCounter,
} from '../test/helpers/dynalite';
import { startTestReceiver, type ScriptedResponse, type TestReceiver } from '../test/helpers/receiver';

const TABLE_NAME = 'handoff-ledger-cost';
const HAPPY_PATH_MAX_WRITES = 2;
const HAPPY_PATH_MAX_READS = 0;

/** One queue message's delivery, with the clock set to when it runs. */
type Deliver = (body: string) => Promise<DeliveryResult>;

interface Scenario {
  readonly name: string;
  /** The receiver's answers, in order. */
  readonly answers: readonly ScriptedResponse[];
  /** Work done before counting starts (the first delivery a duplicate repeats, say). */
  readonly prepare?: (run: Deliver, eventId: string) => Promise<void>;
  /** The counted deliveries; returns the queue decisions they led to. */
  readonly run: (run: Deliver, eventId: string, clock: Clock) => Promise<QueueDecision[]>;
  /** The decisions expected, as `action:why-or-reason`: the count means nothing otherwise. */
  readonly expected: readonly string[];
}

interface Clock {
  nowMs: number;
}

const SCENARIOS: readonly Scenario[] = [
  {
    name: 'delivered on the first attempt',
    answers: [200],
    run: async (run, id) => [(await run(event(id))).decision],
    expected: ['ack:delivered'],
  },
  {
    name: 'duplicate message after delivery',
    answers: [200],
    prepare: async (run, id) => void (await run(event(id))),
    run: async (run, id) => [(await run(event(id))).decision],
    expected: ['ack:duplicate'],
  },
  {
    name: 'retried: 503, 503, then 200',
    answers: [503, 503, 200],
    run: async (run, id, clock) => {
      const decisions: QueueDecision[] = [];
      for (let attempt = 1; attempt <= 3; attempt++) {
        const { decision } = await run(event(id));
        decisions.push(decision);
        // The queue's visibility timeout does the waiting; here the clock jumps instead.
        if (decision.action === 'retry') clock.nowMs += decision.afterSeconds * 1000;
      }
      return decisions;
    },
    expected: ['retry:temporary', 'retry:temporary', 'ack:delivered'],
  },
  {
    name: 'dead-lettered: 400',
    answers: [{ status: 400, body: '{"error":"unknown carrier"}' }],
    run: async (run, id) => [(await run(event(id))).decision],
    expected: ['dead-letter:rejected'],
  },
  {
    name: 'identity conflict after delivery',
    answers: [200],
    prepare: async (run, id) => void (await run(event(id))),
    run: async (run, id) => [(await run(event(id, 'exception'))).decision],
    expected: ['dead-letter:identity-conflict'],
  },
  {
    name: 'invalid message with a readable ID',
    answers: [],
    run: async (run, id) => [(await run(JSON.stringify({ id, status: 'lost' }))).decision],
    expected: ['dead-letter:invalid'],
  },
];

interface Measured {
  readonly writes: number;
  readonly reads: number;
  readonly counts: Record<string, number>;
}

async function main(): Promise<number> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const dynalite = await startDynalite();
  const receiver = await startTestReceiver();
  // Creates the table and, in the AWS-like variant, reads the row a refusal returns: not counted.
  const admin = emulatorDynamoDbClient(dynalite.endpoint);
  const sender = new HttpWebhookSender({
    url: receiver.url,
    timeoutMs: 5_000,
    guard: new EndpointGuard(SANDBOX_GUARD_OPTIONS),
  });
  const variants = {
    dynalite: emulatorDynamoDbClient(dynalite.endpoint),
    aws: emulatorDynamoDbClient(dynalite.endpoint),
  };
  returnOldItemOnConditionFailure(variants.aws, admin);
  const counters = { dynalite: countCommands(variants.dynalite), aws: countCommands(variants.aws) };

  try {
    await createLedgerTable(admin, TABLE_NAME);
    const rows: { scenario: Scenario; dynalite: Measured; aws: Measured }[] = [];
    for (const [index, scenario] of SCENARIOS.entries()) {
      const measure = (variant: keyof typeof variants) =>
        measureScenario(scenario, `evt_cost_${index}_${variant}`, variants[variant], counters[variant], receiver, sender);
      rows.push({ scenario, dynalite: await measure('dynalite'), aws: await measure('aws') });
    }
    printTable(rows);

    const happy = rows[0];
    if (happy === undefined) throw new Error('no happy-path scenario');
    const tooCostly = [happy.dynalite, happy.aws].some(
      (m) => m.writes > HAPPY_PATH_MAX_WRITES || m.reads > HAPPY_PATH_MAX_READS,
    );
    if (tooCostly) {
      console.error(
        `FAIL: the happy path must take at most ${HAPPY_PATH_MAX_WRITES} writes and ${HAPPY_PATH_MAX_READS} reads`,
      );
      return 1;
    }
    console.log(`\nOK: the happy path takes ${happy.dynalite.writes} writes and ${happy.dynalite.reads} reads.`);
    return 0;
  } finally {
    sender.close();
    for (const client of [...Object.values(variants), admin]) client.destroy();
    await receiver.close();
    await dynalite.close();
  }
}

async function measureScenario(
  scenario: Scenario,
  eventId: string,
  client: ReturnType<typeof emulatorDynamoDbClient>,
  counter: CommandCounter,
  receiver: TestReceiver,
  sender: HttpWebhookSender,
): Promise<Measured> {
  const clock: Clock = { nowMs: Date.now() };
  const deps: DeliverDeps = {
    ledger: new DynamoDbLedger({
      client: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
      tableName: TABLE_NAME,
      now: () => clock.nowMs,
    }),
    sender,
    now: () => clock.nowMs,
    owner: 'cost-worker',
    policy: DEFAULT_RETRY_POLICY,
    payloadLimitBytes: DEFAULT_PAYLOAD_LIMIT_BYTES,
    leaseMs: 60_000,
    retentionSeconds: 24 * 60 * 60,
  };
  const run: Deliver = (body) => deliver({ body }, deps);
  if (scenario.answers.length > 0) receiver.respondTo(eventId, ...scenario.answers);

  await scenario.prepare?.(run, eventId);
  counter.reset();
  const decisions = await scenario.run(run, eventId, clock);
  const counts = counter.counts();

  const seen = decisions.map(describeDecision);
  if (JSON.stringify(seen) !== JSON.stringify(scenario.expected)) {
    throw new Error(`${scenario.name}: expected ${scenario.expected.join(', ')}, got ${seen.join(', ')}`);
  }
  return { ...readsAndWrites(counts), counts };
}

function event(id: string, status = 'delivered'): string {
  return JSON.stringify({
    id,
    shipmentId: 'shp_1001',
    status,
    occurredAt: '2026-12-02T10:15:00Z',
    data: { carrier: 'acme', signedBy: 'front desk' },
  });
}

function describeDecision(decision: QueueDecision): string {
  switch (decision.action) {
    case 'ack':
    case 'retry':
      return `${decision.action}:${decision.why}`;
    case 'dead-letter':
      return `${decision.action}:${decision.reason}`;
  }
}

function printTable(rows: readonly { scenario: Scenario; dynalite: Measured; aws: Measured }[]): void {
  const header = ['scenario', 'deliveries', 'writes', 'reads (dynalite)', 'reads (AWS)', 'requests (dynalite)'];
  const body = rows.map(({ scenario, dynalite, aws }) => [
    scenario.name,
    String(scenario.expected.length),
    dynalite.writes === aws.writes ? String(dynalite.writes) : `${dynalite.writes} / ${aws.writes}`,
    String(dynalite.reads),
    String(aws.reads),
    Object.entries(dynalite.counts)
      .map(([name, count]) => `${name} ${count}`)
      .join(', '),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...body.map((row) => row[column]?.length ?? 0)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd();
  console.log('DynamoDB requests per scenario (refused conditional writes count as writes: AWS bills them)\n');
  console.log(line(header));
  console.log(line(widths.map((width) => '-'.repeat(width))));
  for (const row of body) console.log(line(row));
  console.log('\nreads (AWS): AWS returns the current row with a refused write (ALL_OLD), so no GetItem follows.');
}

process.exitCode = await main().catch((error: unknown) => {
  console.error(error instanceof Error ? `cost: ${error.message}` : error);
  return 1;
});
