/**
 * The management API's one handler (createApiHandler over every route) against real emulators:
 * fauxqs and dynalite on loopback, a delivery queue, an ordered intake (FIFO), a ledger table and an
 * endpoint registry, fresh for each test (`reset`), reached by the same CommandContext the command
 * builds for a sandbox target. Each request is an API Gateway HTTP API event as API Gateway (or the
 * sandbox's server) makes it, and each answer is checked against the API's own OpenAPI document
 * with standard validators (test/helpers/openapi-validator.ts) before the test sees it.
 *
 * Also the ledger writes that make rows to read: a delivery claimed and settled (delivered, dead)
 * through the real ledger, at the times given.
 */
import { PassThrough } from 'node:stream';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { MemoryIdempotencyStore } from '../../api/idempotency';
import { portalKeySource } from '../../api/portal-link';
import { MessageSeal } from '../../lib/queue/seal';
import { createApiHandler, type ApiHandler } from '../../api/router';
import { apiDocument, ROUTES } from '../../api/routes';
import { CommandContext } from '../../cli/context';
import type { Target } from '../../cli/target';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import type { EndpointFields } from '../../lib/endpoints/endpoint';
import { parseEvent, type ParsedEvent } from '../../lib/event';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import type { AttemptNext, DeliveryRecord } from '../../lib/ledger/ledger';
import { createLogger } from '../../lib/observability';
import type { AttemptOutcome } from '../../lib/outcome';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { startEmulators, type Emulators } from '../../sandbox/emulators';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { createQueue, ORDERED_QUEUE_ATTRIBUTES } from '../../sandbox/queues';
import { apiEvent, DEFAULT_CALLER, type ApiEventSpec } from './api-events';
import { OpenApiValidator } from './openapi-validator';

const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };
/** The payload limit the target states: what the API checks events against. */
export const TESTBED_PAYLOAD_LIMIT_BYTES = 2048;
/** The caller every request is made as, unless told. */
/** The IAM caller every call is made as unless told. */
export const TEST_CALLER = DEFAULT_CALLER;

/** A call as the IAM authorizer's caller (null: no credentials); api-events.ts builds its event. */
export type ApiRequestSpec = Omit<ApiEventSpec, 'authorizer'>;

export interface ApiAnswer {
  readonly status: number;
  readonly contentType: string | undefined;
  /** The body parsed as JSON (undefined: none). */
  readonly body: any;
}

export interface Testbed {
  readonly sqs: SQSClient;
  readonly ledger: DynamoDbLedger;
  readonly registry: DynamoDbEndpointRegistry;
  readonly target: Target;
  /**
   * Fresh queues and tables (the shipment index on unless told), a new context and handler on them.
   * `maxMessageBytes`: the queues' MaximumMessageSize, so SQS itself refuses a larger message.
   */
  reset(options?: { shipmentIndex?: boolean; maxMessageBytes?: number }): Promise<void>;
  /** One request through the handler; its answer checked against the OpenAPI document. */
  call(spec: ApiRequestSpec): Promise<ApiAnswer>;
  /** Receives exactly `count` messages from `queueUrl`, deleting them. */
  receive(queueUrl: string, count: number): Promise<Message[]>;
  /** Whether `queueUrl` has no message left to receive (one short poll after a wait). */
  isEmpty(queueUrl: string): Promise<boolean>;
  close(): Promise<void>;
}

export async function startTestbed(name: string): Promise<Testbed> {
  const emulators: Emulators = await startEmulators();
  const sqs = new SQSClient({ region: REGION, endpoint: emulators.sqsEndpoint, credentials: CREDENTIALS, useQueueUrlAsEndpoint: false });
  const dynamodb = new DynamoDBClient({ region: REGION, endpoint: emulators.dynamodbEndpoint, credentials: CREDENTIALS });
  const documents = DynamoDBDocumentClient.from(dynamodb);
  const validator = await OpenApiValidator.of(apiDocument());
  let generation = 0;
  let state: { target: Target; ledger: DynamoDbLedger; registry: DynamoDbEndpointRegistry; context: CommandContext; handler: ApiHandler } | undefined;

  const current = () => {
    if (state === undefined) throw new Error('call reset() first');
    return state;
  };

  return {
    get sqs() {
      return sqs;
    },
    get ledger() {
      return current().ledger;
    },
    get registry() {
      return current().registry;
    },
    get target() {
      return current().target;
    },
    async reset(options = {}) {
      state?.context.close();
      generation += 1;
      const tag = `${name}-${generation}`;
      const ledgerTable = `ledger-${tag}`;
      const endpointsTable = `endpoints-${tag}`;
      await createLedgerTable(dynamodb, ledgerTable, { shipmentIndex: options.shipmentIndex ?? true });
      await createEndpointsTable(dynamodb, endpointsTable);
      const size: Record<string, string> = options.maxMessageBytes === undefined ? {} : { MaximumMessageSize: String(options.maxMessageBytes) };
      const target: Target = {
        description: 'the test emulators',
        // The sandbox's kind of connection: clients aimed at the emulators, whatever the environment says.
        connection: { kind: 'sandbox', sqsEndpoint: emulators.sqsEndpoint, dynamodbEndpoint: emulators.dynamodbEndpoint, stateFile: `/nonexistent/${tag}/sandbox.json` },
        queueUrl: await createQueue(sqs, `queue-${tag}`, size),
        redriveQueueUrl: await createQueue(sqs, `redrive-${tag}`, {}),
        deadLetterQueueUrl: await createQueue(sqs, `dlq-${tag}`, {}),
        orderedQueueUrl: await createQueue(sqs, `ordered-${tag}.fifo`, { ...ORDERED_QUEUE_ATTRIBUTES, ...size }),
        ledgerTable,
        endpointsTable,
        payloadLimitBytes: TESTBED_PAYLOAD_LIMIT_BYTES,
        // What a replay's message is sealed with, and portal links are signed with (a key derived from it), as in the sandbox.
        sealKey: { key: MessageSeal.generateKey() },
      };
      const silent = () => new PassThrough() as unknown as NodeJS.WriteStream;
      const context = new CommandContext(target, { stdout: silent(), stderr: silent() });
      const handler = createApiHandler(ROUTES, {
        context,
        idempotency: new MemoryIdempotencyStore(),
        portal: { key: portalKeySource(target.sealKey!) },
        now: Date.now,
        logger: createLogger({ service: 'handoff-api-test', write: () => {} }),
      });
      state = {
        target,
        ledger: new DynamoDbLedger({ client: documents, tableName: ledgerTable }),
        registry: new DynamoDbEndpointRegistry({ client: dynamodb, tableName: endpointsTable }),
        context,
        handler,
      };
    },
    async call(spec) {
      const event = apiEvent({ ...spec, caller: spec.caller === null ? null : (spec.caller ?? TEST_CALLER) });
      const rawQueryString = event.rawQueryString;
      const result = await current().handler(event);
      const text = typeof result.body === 'string' ? result.body : '';
      const contentType = result.headers?.['content-type'] as string | undefined;
      const check = validator.check({ method: spec.method, url: rawQueryString === '' ? spec.path : `${spec.path}?${rawQueryString}`, status: result.statusCode ?? 200, contentType, body: text });
      expect(check.errors, `${spec.method} ${spec.path} answered ${result.statusCode} ${text}`).toEqual([]);
      return { status: result.statusCode ?? 200, contentType, body: text === '' ? undefined : JSON.parse(text) };
    },
    async receive(queueUrl, count) {
      const messages: Message[] = [];
      for (let round = 0; messages.length < count && round < count + 10; round += 1) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageSystemAttributeNames: ['All'] }),
        );
        for (const m of Messages) await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
        messages.push(...Messages);
      }
      expect(messages).toHaveLength(count);
      return messages;
    },
    async isEmpty(queueUrl) {
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      return Messages.length === 0;
    },
    async close() {
      state?.context.close();
      sqs.destroy();
      dynamodb.destroy();
      await emulators.close();
    },
  };
}

/** A valid shipment event (docs/contract.md §2). */
export function shipmentEvent(id: string, shipmentId = `shp_${id}`, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, shipmentId, status: 'in_transit', occurredAt: '2026-12-01T10:00:00Z', ...extra };
}

export function parsed(event: Record<string, unknown>): ParsedEvent {
  const result = parseEvent(JSON.stringify(event));
  if (!result.ok) throw result.error;
  return result.value;
}

/** An endpoint's fields with an owner (its secret a Secrets Manager ARN: nothing to encrypt). */
export function ownedEndpoint(name: string, owner: string): EndpointFields {
  return { name, url: `https://${name}.example/hook`, eventTypes: ['*'], secret: `arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/${name}-AbCdEf`, owner };
}

const LEASE_MS = 30_000;
const RETENTION_SECONDS = 7 * 24 * 3600;

/**
 * A delivery claimed at `atMs` and settled by its attempt: delivered (a 2xx), or dead for the
 * reason given, at `atMs + 1000`. Returns the row as stored.
 */
export async function settledDelivery(
  ledger: DynamoDbLedger,
  event: ParsedEvent,
  endpoint: string,
  atMs: number,
  settle: 'delivered' | 'rejected' | 'exhausted',
): Promise<DeliveryRecord> {
  const claimed = await ledger.claim({ event, endpoint, owner: 'worker-test', nowMs: atMs, leaseMs: LEASE_MS, policy: DEFAULT_RETRY_POLICY, retentionSeconds: RETENTION_SECONDS });
  const outcome: AttemptOutcome =
    settle === 'delivered' ? { kind: 'accepted', status: 200 } : settle === 'rejected' ? { kind: 'rejected', status: 422, responseStart: 'no such carrier' } : { kind: 'temporary', status: 503 };
  const next: AttemptNext = settle === 'delivered' ? { state: 'delivered' } : { state: 'dead', reason: settle, detail: settle === 'rejected' ? 'HTTP 422: no such carrier' : 'HTTP 503 on the last attempt' };
  const status = 'status' in outcome ? outcome.status : undefined;
  await ledger.recordAttempt({
    eventId: claimed.eventId,
    endpoint,
    claimToken: claimed.claimToken,
    body: event.body,
    attempt: { attempt: claimed.attempts, at: atMs, outcome: outcome.kind, ...(status === undefined ? {} : { status }), durationMs: 140 },
    outcome,
    next,
    nowMs: atMs + 1000,
  });
  const row = await ledger.get({ eventId: claimed.eventId, endpoint });
  if (row === undefined) throw new Error(`no row for ${claimed.eventId} at ${endpoint}`);
  return row;
}
