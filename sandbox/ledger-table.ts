/**
 * Creates the ledger table for the sandbox, the tests and the local tools, from the same
 * definition the CDK construct deploys (`LEDGER_TABLE_DEFINITION`): keys, the sparse listing index
 * and its projection. On-demand; waits until the table and its index are active; an existing
 * table is kept. TTL is not switched on here: dynalite has no UpdateTimeToLive, and in AWS the
 * CDK stack sets it (readers ignore expired rows either way).
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  type AttributeDefinition,
  type DynamoDBClient,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
} from '@aws-sdk/client-dynamodb';
import { LEDGER_TABLE_DEFINITION } from '../lib/ledger/dynamodb-schema';

export async function createLedgerTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: LEDGER_TABLE_DEFINITION.AttributeDefinitions as unknown as AttributeDefinition[],
        KeySchema: LEDGER_TABLE_DEFINITION.KeySchema as unknown as KeySchemaElement[],
        GlobalSecondaryIndexes: LEDGER_TABLE_DEFINITION.GlobalSecondaryIndexes as unknown as GlobalSecondaryIndex[],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const indexesActive = (Table?.GlobalSecondaryIndexes ?? []).every((gsi) => gsi.IndexStatus === 'ACTIVE');
    if (Table?.TableStatus === 'ACTIVE' && indexesActive) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
