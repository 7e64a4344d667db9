/**
 * The sandbox's emulators (fauxqs, dynalite on 127.0.0.1) with every request counted at the
 * server. Counting at the emulator is honest for any consumer, however it builds its clients,
 * and sees retries the SDK makes on its own.
 *
 * Each request is attributed to a role read from the SDK's `x-amz-user-agent` header: the
 * bench's own clients add `bench-role/<role>` (`customUserAgent`), so the producer's sends, the
 * poller's receives and deletes, and setup calls are kept apart from the handler's own calls,
 * which carry no marker.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startEmulators, type Emulators } from '../sandbox/emulators';

/** Who made a request. `handler` is everyone without a bench marker: the consumer under test. */
export type Role = 'handler' | 'poller' | 'producer' | 'setup';
type MarkedRole = Exclude<Role, 'handler'>;
const MARKED_ROLES: readonly MarkedRole[] = ['poller', 'producer', 'setup'];

/** The `customUserAgent` that marks a bench client's requests with its role. */
export const roleAgent = (role: MarkedRole): string => `bench-role/${role}`;

/**
 * Requests per role and operation, e.g. `counts.handler['DynamoDB.UpdateItem'] === 2000`; and
 * for DynamoDB, body bytes per role, sent (`DynamoDB bytes sent`: what the client serialized)
 * and received (`DynamoDB bytes received`: what it parsed).
 */
export type RequestCounts = Record<Role, Record<string, number>>;

const DYNAMODB_BYTES_SENT = 'DynamoDB bytes sent';
const DYNAMODB_BYTES_RECEIVED = 'DynamoDB bytes received';

export interface CountingEmulators extends Emulators {
  /** A copy of the counts so far. */
  snapshot(): RequestCounts;
}

export function emptyCounts(): RequestCounts {
  return { handler: {}, poller: {}, producer: {}, setup: {} };
}

/** The requests made between two snapshots. */
export function countsBetween(before: RequestCounts, after: RequestCounts): RequestCounts {
  const out = emptyCounts();
  for (const role of Object.keys(after) as Role[]) {
    for (const [operation, n] of Object.entries(after[role])) {
      const delta = n - (before[role][operation] ?? 0);
      if (delta > 0) out[role][operation] = delta;
    }
  }
  return out;
}

export async function startCountingEmulators(): Promise<CountingEmulators> {
  const counts = emptyCounts();
  const roleOf = (request: IncomingMessage): Role => {
    const agent = String(request.headers['x-amz-user-agent'] ?? request.headers['user-agent'] ?? '');
    return MARKED_ROLES.find((r) => agent.includes(roleAgent(r))) ?? 'handler';
  };
  const add = (role: Role, key: string, n: number) => {
    counts[role][key] = (counts[role][key] ?? 0) + n;
  };
  const count = (service: 'SQS' | 'DynamoDB', request: IncomingMessage) => {
    const target = request.headers['x-amz-target'];
    // `AmazonSQS.ReceiveMessage`, `DynamoDB_20120810.PutItem`: the operation after the dot.
    const operation = `${service}.${typeof target === 'string' ? (target.split('.')[1] ?? target) : 'unknown'}`;
    add(roleOf(request), operation, 1);
  };

  const emulators = await startEmulators({
    onRequest(service, request, response) {
      count(service, request);
      if (service !== 'DynamoDB') return;
      const role = roleOf(request);
      add(role, DYNAMODB_BYTES_SENT, Number(request.headers['content-length'] ?? 0));
      // dynalite answers with one `end(body)`.
      const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
      response.end = ((...args: unknown[]) => {
        const body = args[0];
        if (typeof body === 'string' || body instanceof Uint8Array) add(role, DYNAMODB_BYTES_RECEIVED, Buffer.byteLength(body));
        return end(...args);
      }) as ServerResponse['end'];
    },
  });
  return { ...emulators, snapshot: () => structuredClone(counts) };
}

const DYNAMODB_WRITES = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']);
const DYNAMODB_READS = new Set(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']);

/** Request totals by kind for one role. Batch operations count as one request each. */
export function summarize(byOperation: Record<string, number>) {
  let dynamodbWrites = 0;
  let dynamodbReads = 0;
  let sqs = 0;
  const dynamodbBytesSent = byOperation[DYNAMODB_BYTES_SENT] ?? 0;
  const dynamodbBytesReceived = byOperation[DYNAMODB_BYTES_RECEIVED] ?? 0;
  for (const [key, n] of Object.entries(byOperation)) {
    if (key === DYNAMODB_BYTES_SENT || key === DYNAMODB_BYTES_RECEIVED) continue;
    const [service, operation = ''] = key.split('.');
    if (service === 'SQS') sqs += n;
    else if (DYNAMODB_WRITES.has(operation)) dynamodbWrites += n;
    else if (DYNAMODB_READS.has(operation)) dynamodbReads += n;
  }
  return { dynamodbWrites, dynamodbReads, dynamodbBytesSent, dynamodbBytesReceived, sqs };
}
