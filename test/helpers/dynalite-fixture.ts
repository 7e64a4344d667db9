/**
 * The dynalite fixture of the integration files that test a DynamoDB store: the hooks that start
 * and stop it, and the ledger tables they make and drop. Apart from dynalite.ts, which scripts
 * outside vitest import too.
 */
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { countCommands, emulatorDynamoDbClient, startDynalite, type CommandCounter, type Dynalite } from './dynalite';

/**
 * A dynalite for the test file: started before all its tests, with a client whose commands are
 * counted (both handed to `onStart`), and stopped after them, the client first.
 */
export function useDynalite(onStart: (started: { dynalite: Dynalite; client: DynamoDBClient; counter: CommandCounter }) => void): void {
  let dynalite: Dynalite | undefined;
  let client: DynamoDBClient | undefined;
  beforeAll(async () => {
    dynalite = await startDynalite();
    client = emulatorDynamoDbClient(dynalite.endpoint);
    onStart({ dynalite, client, counter: countCommands(client) });
  });
  afterAll(async () => {
    client?.destroy();
    await dynalite?.close();
  });
}

let ledgerTables = 0;

/** A new ledger table, named `<prefix>-<n>` (n counts the file's tables); with the shipment index unless told otherwise. */
export async function freshLedgerTable(client: DynamoDBClient, prefix: string, options = { shipmentIndex: true }): Promise<string> {
  ledgerTables += 1;
  const tableName = `${prefix}-${ledgerTables}`;
  await createLedgerTable(client, tableName, options);
  return tableName;
}

export async function dropTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(new DeleteTableCommand({ TableName: tableName }));
}

/** A new ledger table (`freshLedgerTable(client, prefix)`), and what drops it. */
export async function droppableLedgerTable(
  client: DynamoDBClient,
  prefix: string,
  options = { shipmentIndex: true },
): Promise<{ tableName: string; drop: () => Promise<void> }> {
  const tableName = await freshLedgerTable(client, prefix, options);
  return { tableName, drop: () => dropTable(client, tableName) };
}

/**
 * A fresh ledger table for each test of the block (`freshLedgerTable(client(), prefix)`), its name
 * handed to `onCreate` before the test; dropped after it.
 */
export function freshTableEachTest(client: () => DynamoDBClient, prefix: string, onCreate: (tableName: string) => void): void {
  let tableName: string | undefined;
  beforeEach(async () => {
    tableName = await freshLedgerTable(client(), prefix);
    onCreate(tableName);
  });
  afterEach(async () => {
    if (tableName !== undefined) await dropTable(client(), tableName);
  });
}
