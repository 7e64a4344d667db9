/**
 * The ledger table as the WebhookDelivery construct deploys it, held to the one schema the sandbox
 * builds its table from (LEDGER_TABLE_DEFINITION): the listing index is sparse-keyed on attributes
 * only listed rows carry, spread over shards, and projects keys only. Asserted with `Match` on the
 * synthesized template, never by logical ID.
 */
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { WebhookDelivery } from '../../infra/webhook-delivery';
import { LEDGER_SCHEMA, LEDGER_TABLE_DEFINITION, WIRE_NAMES } from '../../lib/ledger/dynamodb-schema';
import { testApp, WARM_UP_MS, STAND_IN_ENTRY } from './cdk-context';

function ledgerTable(): Record<string, unknown> {
  const app = testApp();
  const stack = new Stack(app, 'TestStack');
  new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: { webhookUrl: 'https://receiver.example.com/hooks' } });
  // The stack's other table is the endpoint registry (test/infra/endpoint-registry.test.ts).
  const tables = Object.values(Template.fromStack(stack).findResources('AWS::DynamoDB::Table', {
    Properties: { KeySchema: Match.arrayWith([{ AttributeName: LEDGER_SCHEMA.partitionKey, KeyType: 'HASH' }]) },
  }));
  expect(tables).toHaveLength(1);
  return (tables[0] as { Properties: Record<string, unknown> }).Properties;
}

describe('Construct: WebhookDelivery ledger table', () => {
  beforeAll(() => void ledgerTable(), WARM_UP_MS);

  it('deploys the keys and indexes of the schema the sandbox creates its table from', () => {
    const table = ledgerTable();

    expect(table.KeySchema).toStrictEqual(LEDGER_TABLE_DEFINITION.KeySchema);
    expect(table.AttributeDefinitions).toEqual(expect.arrayContaining([...LEDGER_TABLE_DEFINITION.AttributeDefinitions]));
    expect(table.AttributeDefinitions).toHaveLength(LEDGER_TABLE_DEFINITION.AttributeDefinitions.length);
    expect(table.GlobalSecondaryIndexes).toStrictEqual(LEDGER_TABLE_DEFINITION.GlobalSecondaryIndexes);
  });

  it('keys its only index on attributes a row carries only while it is listed, and projects keys only', () => {
    const app = testApp();
    const stack = new Stack(app, 'TestStack');
    new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: { webhookUrl: 'https://receiver.example.com/hooks' } });

    Template.fromStack(stack).hasResourceProperties('AWS::DynamoDB::Table', {
      GlobalSecondaryIndexes: [
        {
          IndexName: LEDGER_SCHEMA.listingIndex.name,
          KeySchema: [
            { AttributeName: WIRE_NAMES.listingKey, KeyType: 'HASH' },
            { AttributeName: WIRE_NAMES.listingSort, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY', NonKeyAttributes: Match.absent() },
        },
      ],
    });
  });

  it('indexes no state or other attribute every row carries', () => {
    const table = ledgerTable();
    const indexed = (table.GlobalSecondaryIndexes as { KeySchema: { AttributeName: string }[] }[]).flatMap((index) =>
      index.KeySchema.map((key) => key.AttributeName),
    );

    // Every row has these; an index keyed on any of them would take every write.
    const everyRow = [WIRE_NAMES.state, WIRE_NAMES.attempts, WIRE_NAMES.createdAt, WIRE_NAMES.expiresAt, WIRE_NAMES.maxAttempts];
    expect(indexed.filter((name) => everyRow.includes(name as never))).toStrictEqual([]);
    expect(LEDGER_SCHEMA.listingIndex.shards).toBeGreaterThanOrEqual(16);
  });
});
