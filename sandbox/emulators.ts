/**
 * The embedded AWS emulators: fauxqs (SQS) and dynalite (DynamoDB), in this process, bound to
 * 127.0.0.1 only. Used by the sandbox and by tests that need the real SDK against real servers.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';

const require = createRequire(import.meta.url);

export interface Emulators {
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  close(): Promise<void>;
}

export interface EmulatorOptions {
  /** Port 0 (the default) picks a free port. */
  readonly sqs?: number;
  readonly dynamodb?: number;
  /** Sees every request before the emulator answers it (the benchmark counts requests here). */
  readonly onRequest?: (service: 'SQS' | 'DynamoDB', request: IncomingMessage, response: ServerResponse) => void;
}

/** Starts both emulators. */
export async function startEmulators(options: EmulatorOptions = {}): Promise<Emulators> {
  const { sqs: sqsPort = 0, dynamodb: dynamodbPort = 0, onRequest } = options;
  // fauxqs's `startFauxqs()` binds 0.0.0.0; `buildApp` + `listen` lets us bind loopback only.
  const { buildApp } = await import('fauxqs');
  const sqs = buildApp({ logger: false });
  if (onRequest) {
    sqs.addHook('onRequest', async (request: { raw: IncomingMessage }, reply: { raw: ServerResponse }) => {
      onRequest('SQS', request.raw, reply.raw);
    });
  }
  const sqsEndpoint = await sqs.listen({ port: sqsPort, host: '127.0.0.1' });

  const dynalite = require('dynalite') as (options: object) => Server;
  const dynamodb = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  // A second listener beside dynalite's own: it sees every request and answers none.
  if (onRequest) dynamodb.on('request', (request, response) => onRequest('DynamoDB', request, response));
  try {
    await new Promise<void>((resolve, reject) => {
      dynamodb.once('error', reject);
      dynamodb.listen(dynamodbPort, '127.0.0.1', () => resolve());
    });
  } catch (error) {
    await sqs.close();
    throw error;
  }
  const { port } = dynamodb.address() as AddressInfo;

  return {
    sqsEndpoint,
    dynamodbEndpoint: `http://127.0.0.1:${port}`,
    async close() {
      await sqs.close();
      await new Promise<void>((resolve) => dynamodb.close(() => resolve()));
    },
  };
}
