/**
 * Creates a table on the DynamoDB emulator (or any DynamoDB) from one of the definitions the CDK
 * construct deploys (lib/*: keys, attribute definitions, global secondary indexes), for the sandbox,
 * the tests and the local tools.
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

/** A table's shape as lib/ defines it: read-only `as const` literals the SDK's mutable types refuse. */
export interface TableDefinition {
  readonly AttributeDefinitions: readonly unknown[];
  readonly KeySchema: readonly unknown[];
  readonly GlobalSecondaryIndexes?: readonly unknown[];
}

/** On demand; an existing table is kept; waits until the table and each of its indexes are active. */
export async function createTable(client: DynamoDBClient, tableName: string, definition: TableDefinition): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: definition.AttributeDefinitions as AttributeDefinition[],
        KeySchema: definition.KeySchema as KeySchemaElement[],
        ...(definition.GlobalSecondaryIndexes !== undefined
          ? { GlobalSecondaryIndexes: definition.GlobalSecondaryIndexes as GlobalSecondaryIndex[] }
          : {}),
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
