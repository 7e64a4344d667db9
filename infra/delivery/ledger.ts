/**
 * The ledger table: the consumer claims each event in it, records every attempt and its outcome,
 * and only then lets the queue forget the message.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { LEDGER_SCHEMA, ledgerTableDefinition } from '../../lib/ledger/dynamodb-schema';
import type { Settings } from '../../lib/config';
import type { WebhookDeliveryProps } from '../webhook-delivery';
import { ledgerBilling, scaleLedger } from './capacity';

export function createLedgerTable(scope: Construct, props: Pick<WebhookDeliveryProps, 'deletionProtection' | 'ledgerCapacity'>, settings: Pick<Settings, 'shipmentIndex'>): dynamodb.Table {
  const table = new dynamodb.Table(scope, 'Ledger', {
    partitionKey: { name: LEDGER_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
    sortKey: { name: LEDGER_SCHEMA.sortKey, type: dynamodb.AttributeType.STRING },
    ...ledgerBilling(props.ledgerCapacity),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    timeToLiveAttribute: LEDGER_SCHEMA.ttlAttribute,
    // The ledger is the authority on what was delivered: it outlives the stack, and cannot be
    // deleted by hand either until its deletion protection is turned off.
    removalPolicy: RemovalPolicy.RETAIN,
    deletionProtection: props.deletionProtection ?? true,
  });
  // The indexes of the one schema (lib/ledger/dynamodb-schema.ts), sparse and keys only: the sharded
  // listing (only rows that need listing have its keys, so a delivered event costs nothing in it)
  // and, unless `shipmentIndex` is false, the shipment index (keys written once per delivery, at its
  // admission); with it off the table has none, and the consumer's environment says so.
  const definition = ledgerTableDefinition(settings);
  const keyOf = (key: { readonly AttributeName: string }) => {
    const type = definition.AttributeDefinitions.find((attribute) => attribute.AttributeName === key.AttributeName)?.AttributeType;
    return { name: key.AttributeName, type: type === 'N' ? dynamodb.AttributeType.NUMBER : dynamodb.AttributeType.STRING };
  };
  for (const index of definition.GlobalSecondaryIndexes) {
    const [partition, sort] = index.KeySchema;
    table.addGlobalSecondaryIndex({
      indexName: index.IndexName,
      partitionKey: keyOf(partition),
      sortKey: keyOf(sort),
      projectionType: dynamodb.ProjectionType[index.Projection.ProjectionType],
    });
  }
  // Provisioned: auto scaling on the table and every index above, so this stays after the last index.
  scaleLedger(table, props.ledgerCapacity);
  return table;
}
