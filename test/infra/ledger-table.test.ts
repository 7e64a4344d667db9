/**
 * The ledger table as the WebhookDelivery construct deploys it, held to the one schema the sandbox
 * builds its table from (LEDGER_TABLE_DEFINITION): the listing index is sparse-keyed on attributes
 * only listed rows carry, spread over shards, and projects keys only; the shipment index is there
 * unless `shipmentIndex` is false, keyed by the shipment, keys only. Asserted with `Match` on the
 * synthesized template, never by logical ID.
 */
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { WebhookDelivery } from '../../infra/webhook-delivery';
import { SETTING_VARIABLES, type Settings } from '../../lib/config';
import { LEDGER_SCHEMA, LEDGER_TABLE_DEFINITION, ledgerTableDefinition, WIRE_NAMES } from '../../lib/ledger/dynamodb-schema';
import { testApp, WARM_UP_MS, STAND_IN_ENTRY } from './cdk-context';

function ledgerTable(settings: Partial<Settings> = {}): Record<string, unknown> {
  const app = testApp();
  const stack = new Stack(app, 'TestStack');
  new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: { webhookUrl: 'https://receiver.example.com/hooks', ...settings } });
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

  it('keys its listing index on attributes a row carries only while it is listed, and projects keys only', () => {
    const app = testApp();
    const stack = new Stack(app, 'TestStack');
    new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: { webhookUrl: 'https://receiver.example.com/hooks' } });

    Template.fromStack(stack).hasResourceProperties('AWS::DynamoDB::Table', {
      GlobalSecondaryIndexes: Match.arrayWith([
        {
          IndexName: LEDGER_SCHEMA.listingIndex.name,
          KeySchema: [
            { AttributeName: WIRE_NAMES.listingKey, KeyType: 'HASH' },
            { AttributeName: WIRE_NAMES.listingSort, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY', NonKeyAttributes: Match.absent() },
        },
      ]),
    });
  });

  it('partitions no index by the state or another attribute of few values every row carries', () => {
    const table = ledgerTable();
    const partitions = (table.GlobalSecondaryIndexes as { KeySchema: { AttributeName: string; KeyType: string }[] }[]).flatMap((index) =>
      index.KeySchema.filter((key) => key.KeyType === 'HASH').map((key) => key.AttributeName),
    );

    // Every row has these; an index partitioned by any of them would take every write on a few keys.
    // (The shipment index is partitioned by the shipment: a key value takes its shipment's deliveries alone.)
    const everyRow = [WIRE_NAMES.state, WIRE_NAMES.attempts, WIRE_NAMES.createdAt, WIRE_NAMES.expiresAt, WIRE_NAMES.maxAttempts];
    expect(partitions).toStrictEqual([WIRE_NAMES.listingKey, WIRE_NAMES.shipmentId]);
    expect(partitions.filter((name) => everyRow.includes(name as never))).toStrictEqual([]);
    expect(LEDGER_SCHEMA.listingIndex.shards).toBeGreaterThanOrEqual(16);
  });

  it('has the shipment index by default: keyed by the shipment and the admission time, keys only', () => {
    const table = ledgerTable();

    expect(table.GlobalSecondaryIndexes).toContainEqual({
      IndexName: LEDGER_SCHEMA.shipmentIndex.name,
      KeySchema: [
        { AttributeName: WIRE_NAMES.shipmentId, KeyType: 'HASH' },
        { AttributeName: WIRE_NAMES.createdAt, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'KEYS_ONLY' },
    });
    expect(table.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: WIRE_NAMES.shipmentId, AttributeType: 'S' },
        { AttributeName: WIRE_NAMES.createdAt, AttributeType: 'N' },
      ]),
    );
  });

  it('leaves the shipment index out with shipmentIndex: false, as the sandbox makes its table, and tells the consumer so', () => {
    const app = testApp();
    const stack = new Stack(app, 'TestStack');
    const delivery = new WebhookDelivery(stack, 'Delivery', {
      entry: STAND_IN_ENTRY,
      settings: { webhookUrl: 'https://receiver.example.com/hooks', shipmentIndex: false },
    });
    const table = ledgerTable({ shipmentIndex: false });
    const unindexed = ledgerTableDefinition({ shipmentIndex: false });

    expect(table.GlobalSecondaryIndexes).toStrictEqual(unindexed.GlobalSecondaryIndexes);
    expect(table.AttributeDefinitions).toHaveLength(unindexed.AttributeDefinitions.length);
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [SETTING_VARIABLES.shipmentIndex]: 'false' }) },
    });
    expect(delivery.settings.shipmentIndex).toBe(false);
  });

  it("says nothing of the index in the consumer's environment when it is on (the default)", () => {
    const app = testApp();
    const stack = new Stack(app, 'TestStack');
    new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: { webhookUrl: 'https://receiver.example.com/hooks' } });

    const functions = Template.fromStack(stack).findResources('AWS::Lambda::Function');
    const variables = Object.values(functions).map((f) => (f as { Properties: { Environment?: { Variables?: Record<string, unknown> } } }).Properties.Environment?.Variables ?? {});
    expect(variables.filter((v) => SETTING_VARIABLES.shipmentIndex in v)).toStrictEqual([]);
  });
});
