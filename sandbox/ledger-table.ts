/**
 * Creates the ledger table for the sandbox, the tests and the local tools, from the same
 * definition the CDK construct deploys (`ledgerTableDefinition`): keys, the sparse listing index,
 * the shipment index unless `shipmentIndex` is false, and their projections. On-demand; waits until the table and its index are active; an existing
 * table is kept. TTL is not switched on here: dynalite has no UpdateTimeToLive, and in AWS the
 * CDK stack sets it (readers ignore expired rows either way).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ledgerTableDefinition } from '../lib/ledger/dynamodb-schema';
import { createTable } from './create-table';

export async function createLedgerTable(client: DynamoDBClient, tableName: string, options = { shipmentIndex: true }): Promise<void> {
  await createTable(client, tableName, ledgerTableDefinition(options));
}
