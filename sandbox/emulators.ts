/**
 * The embedded AWS emulators: fauxqs (SQS) and dynalite (DynamoDB), in this process, bound to
 * 127.0.0.1 only. Used by the sandbox and by tests that need the real SDK against real servers.
 */
import { createRequire } from 'node:module';
import type { AddressInfo, Server } from 'node:net';

const require = createRequire(import.meta.url);

export interface Emulators {
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
  close(): Promise<void>;
}

/** Starts both emulators. Port 0 picks a free port. */
export async function startEmulators(ports: { sqs?: number; dynamodb?: number } = {}): Promise<Emulators> {
  // fauxqs's `startFauxqs()` binds 0.0.0.0; `buildApp` + `listen` lets us bind loopback only.
  const { buildApp } = await import('fauxqs');
  const sqs = buildApp({ logger: false });
  const sqsEndpoint = await sqs.listen({ port: ports.sqs ?? 0, host: '127.0.0.1' });

  const dynalite = require('dynalite') as (options: object) => Server;
  const dynamodb = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  try {
    await new Promise<void>((resolve, reject) => {
      dynamodb.once('error', reject);
      dynamodb.listen(ports.dynamodb ?? 0, '127.0.0.1', () => resolve());
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
