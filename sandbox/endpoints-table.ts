/**
 * The endpoint registry's table for the sandbox and the tests, from the same definition the CDK
 * construct deploys (`REGISTRY_TABLE_DEFINITION`), and the endpoints the sandbox puts in it at start.
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  ResourceInUseException,
  type AttributeDefinition,
  type DynamoDBClient,
  type KeySchemaElement,
} from '@aws-sdk/client-dynamodb';
import type { EndpointFields, EndpointRecord } from '../lib/endpoints/endpoint';
import { EndpointConflictError, type EndpointRegistry } from '../lib/endpoints/registry';
import { REGISTRY_TABLE_DEFINITION } from '../lib/endpoints/registry-schema';

/** Creates the table on demand (an existing one is kept) and waits until it is active. */
export async function createEndpointsTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: REGISTRY_TABLE_DEFINITION.AttributeDefinitions as unknown as AttributeDefinition[],
        KeySchema: REGISTRY_TABLE_DEFINITION.KeySchema as unknown as KeySchemaElement[],
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
  }
  for (;;) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Puts each endpoint into the registry, enabled: the sandbox's endpoints file, or the single-URL
 * settings' `default`. An endpoint already there (a table kept from an earlier start) gets the fields
 * given, keeping its state: the file is the sandbox's truth for fields, the operator's commands for
 * state. Returns the records as stored, in the order given.
 */
export async function seedEndpoints(
  registry: EndpointRegistry,
  fieldsList: readonly EndpointFields[],
  nowMs: number,
): Promise<EndpointRecord[]> {
  const seeded: EndpointRecord[] = [];
  for (const fields of fieldsList) {
    try {
      seeded.push(await registry.add(fields, nowMs));
    } catch (error) {
      if (!(error instanceof EndpointConflictError)) throw error;
      const current = await registry.get(fields.name);
      seeded.push(current === undefined ? await registry.add(fields, nowMs) : await registry.update(fields, current.updatedAt, nowMs));
    }
  }
  return seeded;
}
