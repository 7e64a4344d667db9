/**
 * The ledger table: the consumer claims each event in it, records every attempt and its outcome,
 * and only then lets the queue forget the message.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import type { WebhookDeliveryProps } from '../webhook-delivery';
import { ledgerBilling, scaleLedger } from './capacity';

export function createLedgerTable(scope: Construct, props: Pick<WebhookDeliveryProps, 'deletionProtection' | 'ledgerCapacity'>): dynamodb.Table {
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
  // The sparse, sharded listing index (lib/ledger/dynamodb-schema.ts): only rows that need
  // listing have its keys, so a delivered event costs nothing in it; keys only are projected.
  const listing = LEDGER_SCHEMA.listingIndex;
  table.addGlobalSecondaryIndex({
    indexName: listing.name,
    partitionKey: { name: listing.partitionKey, type: dynamodb.AttributeType.STRING },
    sortKey: { name: listing.sortKey, type: dynamodb.AttributeType.STRING },
    projectionType: dynamodb.ProjectionType[listing.projection],
  });
  // Provisioned: auto scaling on the table and every index above, so this stays after the last index.
  scaleLedger(table, props.ledgerCapacity);
  return table;
}
