/**
 * dynalite (DynamoDB in memory) on 127.0.0.1 for integration tests, without the SQS emulator
 * that `sandbox/emulators.ts` also starts; and an SDK middleware that counts requests by command.
 */
import { createRequire } from 'node:module';
import type { AddressInfo, Server } from 'node:net';
import { ConditionalCheckFailedException, DynamoDBClient, GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';

const require = createRequire(import.meta.url);

export interface Dynalite {
  readonly endpoint: string;
  close(): Promise<void>;
}

/** Starts dynalite on a free loopback port. */
export async function startDynalite(): Promise<Dynalite> {
  const dynalite = require('dynalite') as (options: object) => Server;
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A client for an emulator: explicit endpoint, a region, dummy credentials. */
export function emulatorDynamoDbClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
}

export interface CommandCounter {
  /** Requests sent since the last reset, by command name (`UpdateItem`, `GetItem`, …). */
  counts(): Record<string, number>;
  reset(): void;
}

/**
 * Counts every request the client sends, by command, including those of a DocumentClient built
 * on it (they share its middleware stack). Retries of one command count once.
 */
export function countCommands(client: DynamoDBClient): CommandCounter {
  let counts: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = String(context.commandName).replace(/Command$/, '');
      counts[name] = (counts[name] ?? 0) + 1;
      return next(args);
    },
    { step: 'initialize', name: 'countCommands' },
  );
  return {
    counts: () => ({ ...counts }),
    reset: () => {
      counts = {};
    },
  };
}

/** DynamoDB reads and writes, as AWS bills them, in a count by command. */
export function readsAndWrites(counts: Record<string, number>): { reads: number; writes: number } {
  const sum = (names: readonly string[]) => names.reduce((total, name) => total + (counts[name] ?? 0), 0);
  return {
    reads: sum(['GetItem', 'Query', 'Scan', 'BatchGetItem', 'TransactGetItems']),
    writes: sum(['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems']),
  };
}

/**
 * Makes a client's refused conditional writes carry the current item, as AWS does for
 * `ReturnValuesOnConditionCheckFailure: ALL_OLD` and dynalite does not. The item is read through
 * `reader`, another client, so counters on `client` show only what its caller sent.
 */
export function returnOldItemOnConditionFailure(client: DynamoDBClient, reader: DynamoDBClient): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        // At the serialize step the input is already marshalled (Key as AttributeValues).
        const input = args.input as {
          TableName?: string;
          Key?: Record<string, AttributeValue>;
          ReturnValuesOnConditionCheckFailure?: string;
        };
        if (error instanceof ConditionalCheckFailedException && input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD') {
          const { Item } = await reader.send(
            new GetItemCommand({ TableName: input.TableName, Key: input.Key, ConsistentRead: true }),
          );
          error.Item = Item;
        }
        throw error;
      }
    },
    { step: 'serialize', name: 'returnOldItemOnConditionFailure' },
  );
}
