/**
 * The ledger's billing mode (`ledgerCapacity`): on demand by default, or provisioned capacity with
 * target-tracking auto scaling on the table and on every global secondary index it has, and the alarm
 * that tells an operator the auto scaling maximum is near. At a steady load provisioned capacity bills
 * writes at a fraction of on-demand's price (docs/cost-and-benchmarks.md); past its maximum requests
 * are throttled, which on demand only a hot key or a sudden jump does.
 */
import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { ConfigError } from '../../lib/errors';

/** The range of units auto scaling keeps a table's or an index's reads and writes in. */
export interface CapacityRange {
  readonly minReadUnits: number;
  readonly maxReadUnits: number;
  readonly minWriteUnits: number;
  readonly maxWriteUnits: number;
}

/** Provisioned capacity: the table's range, which each index takes too unless `indexes` narrows it. */
export interface ProvisionedLedgerCapacity extends CapacityRange {
  /** The consumed share of provisioned units auto scaling keeps (20 to 90). Default 70. */
  readonly targetUtilizationPercent?: number;
  /**
   * An index's own range, over the table's, by index name: `listing` takes writes only for dead and
   * parked rows, so a minimum as high as the table's is paid for and unused.
   */
  readonly indexes?: Readonly<Record<string, Partial<CapacityRange>>>;
}

/** `'on-demand'` (default), or `{ provisioned: … }`. */
export type LedgerCapacity = 'on-demand' | { readonly provisioned: ProvisionedLedgerCapacity };

export const DEFAULT_TARGET_UTILIZATION_PERCENT = 70;

/** The most metrics one CloudWatch metric math alarm may watch. */
const MAX_ALARM_METRICS = 10;

/** Consumed capacity above this share of the auto scaling maximum, sustained, raises the ceiling alarm. */
export const CAPACITY_CEILING_PERCENT = 80;

/** The checked provisioned capacity, or undefined on demand. @throws ConfigError */
export function provisionedCapacity(capacity: LedgerCapacity | undefined): Required<ProvisionedLedgerCapacity> | undefined {
  if (capacity === undefined || capacity === 'on-demand') return undefined;
  const p = { targetUtilizationPercent: DEFAULT_TARGET_UTILIZATION_PERCENT, indexes: {}, ...capacity.provisioned };
  checkRange(p, 'ledgerCapacity.provisioned');
  for (const [name, range] of Object.entries(p.indexes)) checkRange({ ...p, ...range }, `ledgerCapacity.provisioned.indexes.${name}`);
  // Application Auto Scaling's range for DynamoDB's target tracking.
  const target = p.targetUtilizationPercent;
  if (!Number.isFinite(target) || target < 20 || target > 90) {
    throw new ConfigError('ledgerCapacity.provisioned.targetUtilizationPercent', `must be from 20 to 90, got ${target}`);
  }
  return p;
}

function checkRange(range: CapacityRange, field: string): void {
  const whole = (name: keyof CapacityRange, least: number) => {
    const value = range[name];
    if (!Number.isInteger(value) || value < least) throw new ConfigError(`${field}.${name}`, `must be a whole number, ${least} or more, got ${value}`);
  };
  whole('minReadUnits', 1);
  whole('minWriteUnits', 1);
  whole('maxReadUnits', range.minReadUnits);
  whole('maxWriteUnits', range.minWriteUnits);
}

/** The range of the table (`index` undefined) or of one of its indexes. */
export function rangeOf(p: Required<ProvisionedLedgerCapacity>, index?: string): CapacityRange {
  return { ...pick(p), ...(index === undefined ? {} : p.indexes[index]) };
}

function pick({ minReadUnits, maxReadUnits, minWriteUnits, maxWriteUnits }: CapacityRange): CapacityRange {
  return { minReadUnits, maxReadUnits, minWriteUnits, maxWriteUnits };
}

/** The table's billing props: on demand, or provisioned at the minimum units (auto scaling raises them). */
export function ledgerBilling(capacity: LedgerCapacity | undefined): Pick<dynamodb.TableProps, 'billingMode' | 'readCapacity' | 'writeCapacity'> {
  const p = provisionedCapacity(capacity);
  if (p === undefined) return { billingMode: dynamodb.BillingMode.PAY_PER_REQUEST };
  return { billingMode: dynamodb.BillingMode.PROVISIONED, readCapacity: p.minReadUnits, writeCapacity: p.minWriteUnits };
}

/** The names of the table's global secondary indexes, as its CloudFormation resource lists them. */
export function globalIndexNames(table: dynamodb.Table): string[] {
  const resource = table.node.defaultChild as dynamodb.CfnTable;
  // Resolved, not rendered: the L1's own (camel-case) property names.
  const indexes = Stack.of(table).resolve(resource.globalSecondaryIndexes) as dynamodb.CfnTable.GlobalSecondaryIndexProperty[] | undefined;
  return (indexes ?? []).map((index) => index.indexName);
}

/**
 * Auto scaling on the table and on each index it has by now: call it once every index is added. An
 * index starts at the minimum units too (CDK would give it 5 each), so none is below its range at deploy.
 */
export function scaleLedger(table: dynamodb.Table, capacity: LedgerCapacity | undefined): void {
  const p = provisionedCapacity(capacity);
  if (p === undefined) return;
  const indexes = globalIndexNames(table);
  const unknown = Object.keys(p.indexes).filter((name) => !indexes.includes(name));
  if (unknown.length > 0) throw new ConfigError(`ledgerCapacity.provisioned.indexes.${unknown[0]}`, `is not an index of the ledger (${indexes.join(', ')})`);
  const utilization = { targetUtilizationPercent: p.targetUtilizationPercent };
  const reads = (r: CapacityRange) => ({ minCapacity: r.minReadUnits, maxCapacity: r.maxReadUnits });
  const writes = (r: CapacityRange) => ({ minCapacity: r.minWriteUnits, maxCapacity: r.maxWriteUnits });
  table.autoScaleReadCapacity(reads(p)).scaleOnUtilization(utilization);
  table.autoScaleWriteCapacity(writes(p)).scaleOnUtilization(utilization);
  const resource = table.node.defaultChild as dynamodb.CfnTable;
  for (const [i, name] of indexes.entries()) {
    const range = rangeOf(p, name);
    resource.addPropertyOverride(`GlobalSecondaryIndexes.${i}.ProvisionedThroughput`, {
      ReadCapacityUnits: range.minReadUnits,
      WriteCapacityUnits: range.minWriteUnits,
    });
    table.autoScaleGlobalSecondaryIndexReadCapacity(name, reads(range)).scaleOnUtilization(utilization);
    table.autoScaleGlobalSecondaryIndexWriteCapacity(name, writes(range)).scaleOnUtilization(utilization);
  }
}

/**
 * Provisioned only: the busiest of the table's and its indexes' reads and writes, per second, as a
 * percentage of its auto scaling maximum, above CAPACITY_CEILING_PERCENT for 5 minutes in a row. Auto
 * scaling cannot go past the maximum: this is the warning before throttling (the throttles alarm).
 */
export function capacityCeilingAlarm(scope: Construct, table: dynamodb.Table, capacity: LedgerCapacity | undefined): cloudwatch.Alarm | undefined {
  const p = provisionedCapacity(capacity);
  if (p === undefined) return undefined;
  const minute = Duration.minutes(1);
  const scopes: (string | undefined)[] = [undefined, ...globalIndexNames(table)];
  // A metric math alarm watches at most 10 metrics: the table and 4 indexes, reads and writes.
  if (2 * scopes.length > MAX_ALARM_METRICS) {
    throw new ConfigError('ledgerCapacity', `provisioned: the ceiling alarm watches at most ${MAX_ALARM_METRICS / 2 - 1} indexes, the ledger has ${scopes.length - 1}`);
  }
  const shares: Record<string, cloudwatch.IMetric> = {};
  for (const [i, index] of scopes.entries()) {
    const range = rangeOf(p, index);
    for (const [kind, maxUnits] of [['Read', range.maxReadUnits], ['Write', range.maxWriteUnits]] as const) {
      const consumed = new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName: `Consumed${kind}CapacityUnits`,
        dimensionsMap: { TableName: table.tableName, ...(index === undefined ? {} : { GlobalSecondaryIndexName: index }) },
        period: minute,
        statistic: cloudwatch.Stats.SUM,
      });
      // A minute's sum over 60 is the units per second, over the maximum a share of it. Ids are one
      // namespace across the nested expressions.
      const id = `${kind.toLowerCase()}${i}`;
      shares[`${id}Share`] = new cloudwatch.MathExpression({
        expression: `FILL(${id}, 0) / 60 / ${maxUnits} * 100`,
        usingMetrics: { [id]: consumed },
        period: minute,
        label: `${index ?? 'table'} ${kind.toLowerCase()}s, % of maximum`,
      });
    }
  }
  return new cloudwatch.Alarm(scope, 'LedgerCapacityCeilingAlarm', {
    alarmDescription:
      `handoff: the ledger (the table or an index, reads or writes) has consumed more than ${CAPACITY_CEILING_PERCENT} % of its auto scaling maximum ` +
      `(the table's: ${p.maxReadUnits} read, ${p.maxWriteUnits} write units) for 5 minutes: auto scaling cannot go higher, and requests past it are throttled (the ledger throttles alarm). ` +
      "Raise ledgerCapacity's maxReadUnits or maxWriteUnits, or return the ledger to on-demand.",
    metric: new cloudwatch.MathExpression({
      expression: `MAX([${Object.keys(shares).join(', ')}])`,
      usingMetrics: shares,
      period: minute,
      label: 'Ledger consumed capacity, % of the auto scaling maximum (busiest)',
    }),
    threshold: CAPACITY_CEILING_PERCENT,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 5,
    datapointsToAlarm: 5,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
  });
}
