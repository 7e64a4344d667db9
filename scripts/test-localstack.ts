/**
 * `npm run test:localstack`: deploys the CDK app into LocalStack with cdklocal and checks the
 * deployed system end to end (docs/contract.md §4, §9): the real Lambda, event source mapping, queues,
 * ledger table and signing secret, against a receiver this script runs on the host; and the ordered
 * intake (docs/contract.md §13): the FIFO queue and its event source on the same consumer.
 *
 * Needs LocalStack running (`docker compose -f localstack.yml up -d`) and Docker for its Lambda
 * containers. CI has no Docker engine and does not run this; the embedded sandbox is what CI
 * exercises.
 *
 * Environment (all optional):
 *   LOCALSTACK_ENDPOINT      default http://localhost:4566
 *   HANDOFF_RECEIVER_PORT    the receiver's port on the host, default 8765 (fixed, so a second
 *                            run finds the stack unchanged and the deploy is quick)
 *   HANDOFF_LOCALSTACK_STACK the stack name, default HandoffLocalStack
 *   HANDOFF_WAIT_SECONDS     how long each scenario may take, default 240 (the first Lambda cold
 *                            start pulls the runtime image)
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  type Message,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { messageGroupIdFor } from '../lib/fifo';
import { DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import { DEFAULT_ENDPOINT, type DeliveryRecord } from '../lib/ledger/ledger';

const ENDPOINT = process.env.LOCALSTACK_ENDPOINT ?? 'http://localhost:4566';
const RECEIVER_PORT = Number(process.env.HANDOFF_RECEIVER_PORT ?? 8765);
const STACK = process.env.HANDOFF_LOCALSTACK_STACK ?? 'HandoffLocalStack';
const WAIT_MS = Number(process.env.HANDOFF_WAIT_SECONDS ?? 240) * 1000;
const POLL_MS = 1000;
/** LocalStack's fixed account and the region cdklocal uses by default. */
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

/**
 * Settings for this test deployment only: the receiver is plain http on a Docker gateway address
 * (private ranges that a real deployment refuses), and retries wait 2 s instead of minutes.
 */
const TEST_CONTEXT = {
  stackName: STACK,
  webhookUrl: `http://host.docker.internal:${RECEIVER_PORT}/hooks`,
  allowHttp: 'true',
  // Docker bridge networks (172.16/12), Docker Desktop's host address (192.168/16), other engines (10/8).
  allowPrivateCidrs: '10.0.0.0/8,172.16.0.0/12,192.168.0.0/16',
  retrySchedule: '2',
  maxAttempts: '3',
  attemptTimeoutMs: '5000',
  batchSize: '5',
} as const;

interface Outputs {
  QueueUrl: string;
  DeadLetterQueueUrl: string;
  /** The ordered intake's FIFO queue (absent from a stack that does not publish it). */
  OrderedQueueUrl?: string;
  LedgerTableName: string;
  SigningSecretArn: string;
}

// --- Receiver ---------------------------------------------------------------------------------

/** What the receiver answers, chosen by the event ID's prefix. */
type Behaviour = 'ok' | 'flaky' | 'reject' | 'down';

interface Received {
  readonly eventId: string;
  readonly body: string;
  readonly headers: http.IncomingHttpHeaders;
}

class Receiver {
  readonly requests: Received[] = [];
  private server: http.Server | undefined;

  /**
   * Listens on all interfaces: the consumer runs in a Lambda container and reaches the host
   * through the Docker gateway, not through loopback. Test-only; closed when the run ends.
   */
  async start(port: number): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const eventId = String(req.headers['idempotency-key'] ?? '');
        const seen = this.requests.filter((r) => r.eventId === eventId).length;
        this.requests.push({ eventId, body, headers: req.headers });
        const [status, text] = answer(behaviourOf(eventId), seen);
        res.writeHead(status, { 'content-type': 'text/plain' }).end(text);
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server?.once('error', reject).listen(port, '0.0.0.0', resolve);
    });
  }

  port(): number {
    return (this.server?.address() as AddressInfo).port;
  }

  for(eventId: string): Received[] {
    return this.requests.filter((r) => r.eventId === eventId);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

function behaviourOf(eventId: string): Behaviour {
  const prefix = eventId.split('-')[0];
  return prefix === 'flaky' || prefix === 'reject' || prefix === 'down' ? prefix : 'ok';
}

/** `seen` = requests for this event before this one. */
function answer(behaviour: Behaviour, seen: number): [number, string] {
  switch (behaviour) {
    case 'ok':
      return [200, 'ok'];
    case 'flaky':
      return seen === 0 ? [503, 'try later'] : [200, 'ok'];
    case 'reject':
      return [400, 'unknown shipment'];
    case 'down':
      return [503, 'down'];
  }
}

// --- Steps ------------------------------------------------------------------------------------

async function localStackAnswers(): Promise<boolean> {
  try {
    const res = await fetch(`${ENDPOINT}/_localstack/health`, { signal: AbortSignal.timeout(3000) });
    return res.ok;
  } catch {
    return false;
  }
}

function contextArgs(): string[] {
  return Object.entries(TEST_CONTEXT).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
}

/** Runs a command with inherited output; rejects on a non-zero exit. */
function run(command: string, args: string[]): Promise<void> {
  console.log(`$ ${command} ${args.join(' ')}`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args[0]} exited with ${code}`))));
  });
}

async function deploy(): Promise<Outputs> {
  const outputsFile = path.join(mkdtempSync(path.join(tmpdir(), 'handoff-localstack-')), 'outputs.json');
  await run('npx', ['cdklocal', 'bootstrap', `aws://${ACCOUNT}/${REGION}`, ...contextArgs()]);
  await run('npx', ['cdklocal', 'deploy', STACK, '--require-approval', 'never', '--outputs-file', outputsFile, ...contextArgs()]);
  const all = JSON.parse(readFileSync(outputsFile, 'utf8')) as Record<string, Outputs>;
  const outputs = all[STACK];
  if (!outputs) throw new Error(`no outputs for stack ${STACK} in ${outputsFile}`);
  return outputs;
}

// --- Scenarios --------------------------------------------------------------------------------

const clientConfig = {
  endpoint: ENDPOINT,
  region: REGION,
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
};

/** Built after the health check, so a run without LocalStack prints its one line and nothing else. */
let clients: { sqs: SQSClient; ddb: DynamoDBDocumentClient; secrets: SecretsManagerClient } | undefined;

function aws() {
  clients ??= {
    sqs: new SQSClient({ ...clientConfig, useQueueUrlAsEndpoint: false }),
    ddb: DynamoDBDocumentClient.from(new DynamoDBClient(clientConfig)),
    secrets: new SecretsManagerClient(clientConfig),
  };
  return clients;
}

type LedgerRow = DeliveryRecord;

function event(id: string): string {
  return JSON.stringify({
    id,
    shipmentId: `shp_${id}`,
    status: 'in_transit',
    occurredAt: new Date().toISOString(),
    data: { carrier: 'acme' },
  });
}

async function send(queueUrl: string, body: string): Promise<void> {
  await aws().sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body }));
}

/** As a producer sends to the ordered intake (`handoff send --ordered`): grouped by shipment, deduplicated by event ID. */
async function sendOrdered(queueUrl: string, body: string): Promise<void> {
  const { id, shipmentId } = JSON.parse(body) as { id: string; shipmentId: string };
  await aws().sqs.send(
    new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageGroupId: messageGroupIdFor(shipmentId), MessageDeduplicationId: id }),
  );
}

async function ledgerRows(table: string, eventId: string): Promise<LedgerRow[]> {
  const ledger = new DynamoDbLedger({ client: aws().ddb, tableName: table });
  const row = await ledger.get({ eventId, endpoint: DEFAULT_ENDPOINT });
  return row ? [row] : [];
}

/** Polls until `check` returns a value (not undefined) or the wait runs out. */
async function eventually<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

async function rowIn(table: string, eventId: string, state: 'delivered' | 'dead'): Promise<LedgerRow> {
  return eventually(`${eventId} to be ${state}`, async () => {
    const [row] = await ledgerRows(table, eventId);
    return row?.state === state ? row : undefined;
  });
}

/**
 * Dead-letter messages, collected by the `eventId` attribute (or by body, for messages without
 * one). Messages read here are deleted: the ledger is the authority, the DLQ is only a signal.
 */
class DeadLetters {
  private readonly seen: Message[] = [];
  constructor(private readonly queueUrl: string) {}

  async find(match: (m: Message) => boolean, what: string): Promise<Message> {
    return eventually(what, async () => {
      const found = this.seen.find(match);
      if (found) return found;
      const { Messages = [] } = await aws().sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ['All'],
        }),
      );
      for (const message of Messages) {
        this.seen.push(message);
        await aws().sqs.send(new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: message.ReceiptHandle }));
      }
      return this.seen.find(match);
    });
  }
}

const attribute = (m: Message, name: string) => m.MessageAttributes?.[name]?.StringValue;

function expectEqual(actual: unknown, expected: unknown, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

interface Scenario {
  readonly name: string;
  readonly run: () => Promise<void>;
}

function scenarios(outputs: Outputs, receiver: Receiver, signer: Webhook, runId: string): Scenario[] {
  const table = outputs.LedgerTableName;
  const dlq = new DeadLetters(outputs.DeadLetterQueueUrl);
  const id = (prefix: string) => `${prefix}-${runId}`;

  return [
    {
      name: '200: delivered once, signed, body unchanged',
      run: async () => {
        const eventId = id('ok');
        const body = event(eventId);
        await send(outputs.QueueUrl, body);
        const row = await rowIn(table, eventId, 'delivered');
        expectEqual(row.attempts, 1, 'attempts');
        const [request, ...more] = receiver.for(eventId);
        expectEqual(more.length, 0, 'extra requests');
        if (!request) throw new Error('the receiver saw no request');
        expectEqual(JSON.parse(request.body), JSON.parse(body), 'webhook body');
        signer.verify(request.body, request.headers as Record<string, string>);
      },
    },
    {
      name: '503 then 200: retried after the scheduled wait, then delivered',
      run: async () => {
        const eventId = id('flaky');
        await send(outputs.QueueUrl, event(eventId));
        const row = await rowIn(table, eventId, 'delivered');
        expectEqual(row.attempts, 2, 'attempts');
        expectEqual(receiver.for(eventId).length, 2, 'requests');
      },
    },
    {
      name: '400: dead with the status attached, and on the DLQ with reason rejected',
      run: async () => {
        const eventId = id('reject');
        const body = event(eventId);
        await send(outputs.QueueUrl, body);
        const row = await rowIn(table, eventId, 'dead');
        expectEqual(row.deadReason, 'rejected', 'dead reason');
        if (!row.deadDetail?.includes('400')) throw new Error(`dead detail lacks the status: ${row.deadDetail}`);
        const message = await dlq.find((m) => attribute(m, 'eventId') === eventId, `${eventId} on the DLQ`);
        expectEqual(attribute(message, 'reason'), 'rejected', 'DLQ reason');
        expectEqual(message.Body, body, 'DLQ body');
        expectEqual(receiver.for(eventId).length, 1, 'requests');
      },
    },
    {
      name: '503 every time: dead as exhausted after the attempt budget',
      run: async () => {
        const eventId = id('down');
        await send(outputs.QueueUrl, event(eventId));
        const row = await rowIn(table, eventId, 'dead');
        expectEqual(row.deadReason, 'exhausted', 'dead reason');
        expectEqual(row.attempts, Number(TEST_CONTEXT.maxAttempts), 'attempts');
        const message = await dlq.find((m) => attribute(m, 'eventId') === eventId, `${eventId} on the DLQ`);
        expectEqual(attribute(message, 'reason'), 'exhausted', 'DLQ reason');
      },
    },
    {
      name: 'invalid message with an ID: dead as invalid, on the DLQ, never sent',
      run: async () => {
        const eventId = id('invalid');
        const body = JSON.stringify({ id: eventId, shipmentId: 'shp_1', status: 'teleported', occurredAt: 'soon' });
        await send(outputs.QueueUrl, body);
        const row = await rowIn(table, eventId, 'dead');
        expectEqual(row.deadReason, 'invalid', 'dead reason');
        const message = await dlq.find((m) => attribute(m, 'eventId') === eventId, `${eventId} on the DLQ`);
        expectEqual(attribute(message, 'reason'), 'invalid', 'DLQ reason');
        expectEqual(receiver.for(eventId).length, 0, 'requests');
      },
    },
    {
      name: "ordered intake: a shipment's events on the FIFO queue each delivered once, a second copy of one dropped",
      run: async () => {
        const orderedQueueUrl = outputs.OrderedQueueUrl;
        if (!orderedQueueUrl) throw new Error('the stack has no OrderedQueueUrl output');
        if (!orderedQueueUrl.endsWith('.fifo')) throw new Error(`OrderedQueueUrl is not a FIFO queue: ${orderedQueueUrl}`);
        const ids = [1, 2, 3].map((n) => id(`ordered${n}`));
        const bodies = ids.map((eventId) => JSON.stringify({ ...JSON.parse(event(eventId)), shipmentId: `shp_ordered-${runId}` }));
        for (const body of bodies) await sendOrdered(orderedQueueUrl, body);
        // The same event again, within SQS's five-minute deduplication window.
        await sendOrdered(orderedQueueUrl, bodies[0]!);
        for (const eventId of ids) expectEqual((await rowIn(table, eventId, 'delivered')).attempts, 1, `${eventId} attempts`);
        for (const eventId of ids) expectEqual(receiver.for(eventId).length, 1, `requests for ${eventId}`);
      },
    },
    {
      name: 'a body that is not JSON: on the DLQ unchanged with reason invalid, no ledger row',
      run: async () => {
        const body = `not json ${runId}`;
        await send(outputs.QueueUrl, body);
        const message = await dlq.find((m) => m.Body === body, 'the non-JSON message on the DLQ');
        expectEqual(attribute(message, 'reason'), 'invalid', 'DLQ reason');
        expectEqual(attribute(message, 'eventId'), undefined, 'DLQ eventId');
      },
    },
  ];
}

/**
 * Run last, alone: a duplicate is acknowledged without a send and leaves no trace in the ledger,
 * so "delivered once" is checked once the queue holds nothing at all, visible or in flight.
 */
async function duplicateScenario(outputs: Outputs, receiver: Receiver, runId: string): Promise<void> {
  const eventId = `dup-${runId}`;
  const body = event(eventId);
  await send(outputs.QueueUrl, body);
  await rowIn(outputs.LedgerTableName, eventId, 'delivered');
  await send(outputs.QueueUrl, body);
  await eventually('the delivery queue to drain', async () => {
    const { Attributes = {} } = await aws().sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: outputs.QueueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const left = Number(Attributes.ApproximateNumberOfMessages) + Number(Attributes.ApproximateNumberOfMessagesNotVisible);
    return left === 0 ? true : undefined;
  });
  expectEqual(receiver.for(eventId).length, 1, 'requests for the event sent twice');
}

// --- Main -------------------------------------------------------------------------------------

async function main(): Promise<number> {
  if (!(await localStackAnswers())) {
    console.error(`LocalStack does not answer at ${ENDPOINT}: start it with \`docker compose -f localstack.yml up -d\`, then run again.`);
    return 1;
  }

  const receiver = new Receiver();
  await receiver.start(RECEIVER_PORT);
  try {
    console.log(`receiver listening on 0.0.0.0:${receiver.port()}`);
    const outputs = await deploy();
    const { SecretString } = await aws().secrets.send(new GetSecretValueCommand({ SecretId: outputs.SigningSecretArn }));
    if (!SecretString) throw new Error('the signing secret has no value');
    const signer = new Webhook(SecretString);

    const runId = randomUUID().slice(0, 8);
    // Scenarios run concurrently: most of the time is the Lambda's cold start and retry waits.
    const concurrent = scenarios(outputs, receiver, signer, runId);
    const results = await Promise.allSettled(concurrent.map((s) => s.run()));
    results.push(...(await Promise.allSettled([duplicateScenario(outputs, receiver, runId)])));
    const names = [...concurrent.map((s) => s.name), 'the same event sent twice is delivered once'];
    let failed = 0;
    results.forEach((result, i) => {
      if (result.status === 'fulfilled') console.log(`PASS ${names[i]}`);
      else {
        failed++;
        console.log(`FAIL ${names[i]}: ${result.reason instanceof Error ? result.reason.message : String(result.reason)}`);
      }
    });
    console.log(`${results.length - failed} passed, ${failed} failed (stack ${STACK} left deployed; remove with \`npx cdklocal destroy ${STACK} ${contextArgs().join(' ')}\`)`);
    return failed === 0 ? 0 : 1;
  } finally {
    await receiver.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`test:localstack failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
