/**
 * The ledger's billing mode (`ledgerCapacity`, infra/delivery/capacity.ts): on demand unless told,
 * otherwise provisioned with target-tracking auto scaling on the table and on every index it has, and
 * an alarm when consumed capacity nears the auto scaling maximum. Asserted with `Match` on the
 * synthesized template, never by logical ID; the indexes are read from the table, not counted here.
 */
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { globalIndexNames } from '../../infra/delivery/capacity';
import { WebhookDelivery, type WebhookDeliveryProps } from '../../infra/webhook-delivery';
import { STAND_IN_ENTRY, testApp, WARM_UP_MS, WEBHOOK_URL } from './cdk-context';

const PROVISIONED = { provisioned: { minReadUnits: 2, maxReadUnits: 40, minWriteUnits: 25, maxWriteUnits: 600 } } as const;

interface Built {
  readonly stack: Stack;
  readonly delivery: WebhookDelivery;
  readonly template: Template;
  readonly table: { Ref: string };
  readonly indexes: string[];
}

function build(props: Partial<WebhookDeliveryProps> = {}): Built {
  const stack = new Stack(testApp(), 'TestStack');
  const delivery = new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, ...props, settings: { webhookUrl: WEBHOOK_URL } });
  const table = { Ref: stack.getLogicalId(delivery.ledgerTable.node.defaultChild as never) };
  return { stack, delivery, template: Template.fromStack(stack), table, indexes: globalIndexNames(delivery.ledgerTable) };
}

function ledgerProperties(built: Built): Record<string, any> {
  const id = built.stack.getLogicalId(built.delivery.ledgerTable.node.defaultChild as never);
  return (built.template.toJSON().Resources[id] as { Properties: Record<string, any> }).Properties;
}

/** The ledger's scalable targets, by resource and dimension: `index/listing write` → [min, max]. */
function scalableTargets(built: Built): Map<string, [number, number]> {
  const targets = new Map<string, [number, number]>();
  for (const target of Object.values(built.template.findResources('AWS::ApplicationAutoScaling::ScalableTarget'))) {
    const p = target.Properties as { ResourceId: { 'Fn::Join': [string, unknown[]] }; ScalableDimension: string; MinCapacity: number; MaxCapacity: number };
    const [, parts] = p.ResourceId['Fn::Join'];
    if (JSON.stringify(parts[1]) !== JSON.stringify(built.table)) continue;
    const where = typeof parts[2] === 'string' && parts[2].startsWith('/index/') ? `index/${parts[2].slice('/index/'.length)}` : 'table';
    const kind = p.ScalableDimension.endsWith('ReadCapacityUnits') ? 'read' : 'write';
    targets.set(`${where} ${kind}`, [p.MinCapacity, p.MaxCapacity]);
  }
  return targets;
}

let onDemand: Built;
let provisioned: Built;

beforeAll(() => {
  onDemand = build();
  provisioned = build({ ledgerCapacity: PROVISIONED });
}, WARM_UP_MS);

describe('Construct: WebhookDelivery ledgerCapacity', () => {
  describe('by default', () => {
    it('bills the ledger on demand, with no capacity on the table or its indexes and nothing scaled', () => {
      const table = ledgerProperties(onDemand);

      expect(table.BillingMode).toBe('PAY_PER_REQUEST');
      expect(table.ProvisionedThroughput).toBeUndefined();
      for (const index of table.GlobalSecondaryIndexes as Record<string, unknown>[]) expect(index.ProvisionedThroughput).toBeUndefined();
      expect(scalableTargets(onDemand).size).toBe(0);
    });

    it('has no capacity ceiling alarm', () => {
      expect(onDemand.delivery.alarms.ledgerCapacityCeiling).toBeUndefined();
      expect(build({ ledgerCapacity: 'on-demand' }).delivery.alarms.ledgerCapacityCeiling).toBeUndefined();
    });
  });

  describe('provisioned', () => {
    it('provisions the table and every index at the minimum units', () => {
      const table = ledgerProperties(provisioned);
      const minimum = { ReadCapacityUnits: 2, WriteCapacityUnits: 25 };

      expect(table.BillingMode).toBeUndefined();
      expect(table.ProvisionedThroughput).toEqual(minimum);
      expect(provisioned.indexes.length).toBeGreaterThanOrEqual(1);
      for (const index of table.GlobalSecondaryIndexes as Record<string, unknown>[]) expect(index.ProvisionedThroughput, String(index.IndexName)).toEqual(minimum);
    });

    it('scales reads and writes of the table and of every index between the minimum and the maximum', () => {
      const expected = new Map<string, [number, number]>();
      for (const where of ['table', ...provisioned.indexes.map((name) => `index/${name}`)]) {
        expected.set(`${where} read`, [2, 40]);
        expected.set(`${where} write`, [25, 600]);
      }

      expect(scalableTargets(provisioned)).toEqual(expected);
    });

    it("gives an index named in `indexes` its own range over the table's, and refuses a name the ledger has no index of", () => {
      const listing = provisioned.indexes[0]!;
      const narrowed = build({ ledgerCapacity: { provisioned: { ...PROVISIONED.provisioned, indexes: { [listing]: { minWriteUnits: 1, maxWriteUnits: 50 } } } } });
      const index = (ledgerProperties(narrowed).GlobalSecondaryIndexes as Record<string, unknown>[]).find((i) => i.IndexName === listing);

      expect(index?.ProvisionedThroughput).toEqual({ ReadCapacityUnits: 2, WriteCapacityUnits: 1 });
      expect(scalableTargets(narrowed).get(`index/${listing} write`)).toEqual([1, 50]);
      expect(scalableTargets(narrowed).get(`index/${listing} read`)).toEqual([2, 40]);
      expect(scalableTargets(narrowed).get('table write')).toEqual([25, 600]);
      expect(() => build({ ledgerCapacity: { provisioned: { ...PROVISIONED.provisioned, indexes: { byState: { minWriteUnits: 1 } } } } })).toThrow(
        /^ledgerCapacity\.provisioned\.indexes\.byState is not an index of the ledger/,
      );
    });

    it('tracks 70 % utilization by default, and the target given', () => {
      const policies = (built: Built) => Object.values(built.template.findResources('AWS::ApplicationAutoScaling::ScalingPolicy')).map((r) => r.Properties);
      const targeted = build({ ledgerCapacity: { provisioned: { ...PROVISIONED.provisioned, targetUtilizationPercent: 50 } } });

      expect(policies(provisioned)).toHaveLength(2 * (1 + provisioned.indexes.length));
      for (const policy of policies(provisioned)) {
        expect(policy).toMatchObject({
          PolicyType: 'TargetTrackingScaling',
          TargetTrackingScalingPolicyConfiguration: {
            PredefinedMetricSpecification: { PredefinedMetricType: expect.stringMatching(/^DynamoDB(Read|Write)CapacityUtilization$/) },
            TargetValue: 70,
          },
        });
      }
      for (const policy of policies(targeted)) expect(policy.TargetTrackingScalingPolicyConfiguration.TargetValue).toBe(50);
    });

    it('alarms when the busiest of the table and its indexes, reads or writes, passes 80 % of its maximum for 5 minutes', () => {
      const alarm = provisioned.delivery.alarms.ledgerCapacityCeiling;
      const id = provisioned.stack.getLogicalId(alarm?.node.defaultChild as never);
      const properties = (provisioned.template.toJSON().Resources[id] as { Properties: Record<string, any> }).Properties;
      const metrics = properties.Metrics as { Id: string; Expression?: string; MetricStat?: { Metric: { MetricName: string; Dimensions: unknown[] }; Period: number; Stat: string } }[];
      const consumed = metrics.filter((m) => m.MetricStat !== undefined);
      const topic = { Ref: provisioned.stack.getLogicalId(provisioned.delivery.alarmTopic.node.defaultChild as never) };

      expect(properties).toMatchObject({ Threshold: 80, EvaluationPeriods: 5, DatapointsToAlarm: 5, AlarmActions: [topic], OKActions: [topic], TreatMissingData: 'notBreaching' });
      expect(metrics.find((m) => m.Expression?.startsWith('MAX('))).toBeDefined();
      expect(consumed).toHaveLength(2 * (1 + provisioned.indexes.length));
      for (const m of consumed) expect([m.MetricStat?.Period, m.MetricStat?.Stat]).toEqual([60, 'Sum']);
      for (const index of provisioned.indexes) {
        const onIndex = consumed.filter((m) => JSON.stringify(m.MetricStat?.Metric.Dimensions).includes(`"Value":"${index}"`));
        expect(onIndex.map((m) => m.MetricStat?.Metric.MetricName).sort()).toEqual(['ConsumedReadCapacityUnits', 'ConsumedWriteCapacityUnits']);
      }
      // Each share is per second over that kind's maximum.
      expect(metrics.filter((m) => m.Expression?.includes('/ 60 / 40 * 100'))).toHaveLength(1 + provisioned.indexes.length);
      expect(metrics.filter((m) => m.Expression?.includes('/ 60 / 600 * 100'))).toHaveLength(1 + provisioned.indexes.length);
    });

    it('counts throttles of every index in the ledger throttles alarm', () => {
      const alarm = provisioned.delivery.alarms.ledgerThrottles;
      const id = provisioned.stack.getLogicalId(alarm.node.defaultChild as never);
      const text = JSON.stringify(provisioned.template.toJSON().Resources[id]);

      for (const index of provisioned.indexes) expect(text).toContain(`FILL(${index}Write, 0)`);
    });

    it('passes the AwsSolutions rules, acknowledging nothing new', () => {
      expect(new AwsSolutionsChecks().validateScope(provisioned.stack).violations).toEqual([]);
    });

    it('refuses a range auto scaling cannot keep, naming the field', () => {
      const bad = (change: Record<string, number>) => () => build({ ledgerCapacity: { provisioned: { ...PROVISIONED.provisioned, ...change } } });

      expect(bad({ minWriteUnits: 0 })).toThrow(/^ledgerCapacity\.provisioned\.minWriteUnits must be a whole number, 1 or more, got 0/);
      expect(bad({ maxReadUnits: 1 })).toThrow(/^ledgerCapacity\.provisioned\.maxReadUnits must be a whole number, 2 or more, got 1/);
      expect(bad({ targetUtilizationPercent: 95 })).toThrow(/^ledgerCapacity\.provisioned\.targetUtilizationPercent must be from 20 to 90, got 95/);
    });
  });
});
