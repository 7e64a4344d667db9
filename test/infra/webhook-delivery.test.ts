/**
 * The WebhookDelivery construct's contracts, one behaviour per test, asserted on the synthesized
 * template with `Match` (never by logical ID). Bundling is skipped (`aws:cdk:bundling-stacks: []`)
 * and the Lambda entry is a stand-in, except in the one test that checks the bundle itself.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Duration, Stack, type App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_SETTINGS,
  derivedTimings,
  minimumRetentionDays,
  RESOURCE_ENV,
  SETTING_VARIABLES,
  settingsToEnvironment,
  type Settings,
} from '../../lib/config';
import { CONSOLE_ENV } from '../../console/site';
import { ConfigError } from '../../lib/errors';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import { retryPolicy } from '../../lib/policy';
import {
  CONSUMER_ENTRY,
  DEAD_LETTER_AGE_ALARM,
  ENDPOINT_UNRESOLVED_METRIC,
  METRICS,
  UNROUTED_ALARM_THRESHOLD,
  RECOVERED_METRIC,
  RECOVERY_ENTRY,
  WebhookDelivery,
  type WebhookDeliveryProps,
} from '../../infra/webhook-delivery';
import { globalIndexNames } from '../../infra/delivery/capacity';
import { RECOVERY_ENV, RECOVERY_LIMIT } from '../../lib/recovery';
import { testApp, WARM_UP_MS, STAND_IN_ENTRY, WEBHOOK_URL } from './cdk-context';

interface Built {
  readonly app: App;
  readonly stack: Stack;
  readonly delivery: WebhookDelivery;
  readonly template: Template;
}

function build(props: Partial<WebhookDeliveryProps> = {}, options: { bundle?: boolean } = {}): Built {
  const app = testApp({}, { bundle: options.bundle });
  const stack = new Stack(app, 'TestStack');
  const delivery = new WebhookDelivery(stack, 'Delivery', {
    entry: STAND_IN_ENTRY,
    ...props,
    settings: { webhookUrl: WEBHOOK_URL, ...props.settings },
  });
  return { app, stack, delivery, template: Template.fromStack(stack) };
}

/** The one synth that bundles (local esbuild), made once for the tests that read its assets. */
let bundledBuild: Built | undefined;
function bundled(): Built {
  bundledBuild ??= build({}, { bundle: true });
  return bundledBuild;
}

/** The settings a default build runs with. */
const defaults: Settings = { ...DEFAULT_SETTINGS, webhookUrl: WEBHOOK_URL };

type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Sid?: string };

/** All statements of the stack's identity policies: the consumer's and the endpoint seed's roles. */
function policyStatements(template: Template): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
    (policy) => policy.Properties.PolicyDocument.Statement,
  );
}

/** The statements of the consumer role's policies. */
function consumerStatements(template: Template): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((role) => /ConsumerRole/.test(role.Ref)))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
}

/** The statements of the recovery function's role. */
function recoveryStatements(template: Template): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((role) => /RecoveryRole/.test(role.Ref)))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement);
}

/** The recovery function's resource in the template. */
function recoveryFunction(built: Built): { Properties: Record<string, unknown> } {
  const id = built.stack.getLogicalId(built.delivery.recovery.node.defaultChild as never);
  return built.template.toJSON().Resources[id];
}

/** The consumer function's resource in the template. */
function consumerFunction(built: Built): { Properties: Record<string, any> } {
  const id = built.stack.getLogicalId(built.delivery.consumer.node.defaultChild as never);
  return built.template.toJSON().Resources[id];
}

/** The alarm's resource in the template. */
function alarmOf(built: Built, alarm: HasResource): Record<string, any> {
  return propertiesOf(built, alarm);
}

/** The alarm topic made by the construct, as the template references it. */
function topicRef(built: Built) {
  return { Ref: built.stack.getLogicalId(built.delivery.alarmTopic.node.defaultChild as never) };
}

function actionsOf(template: Template): string[] {
  return consumerStatements(template)
    .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]))
    .sort();
}

type HasResource = { node: { defaultChild?: unknown } };

/** A key schema of a partition key and a sort key, and the definitions of both as strings. */
function stringKeys(partitionKey: string, sortKey: string) {
  return {
    KeySchema: [
      { AttributeName: partitionKey, KeyType: 'HASH' },
      { AttributeName: sortKey, KeyType: 'RANGE' },
    ],
    AttributeDefinitions: Match.arrayWith([
      { AttributeName: partitionKey, AttributeType: 'S' },
      { AttributeName: sortKey, AttributeType: 'S' },
    ]),
  };
}

/** A resource's properties, found by its construct. */
function propertiesOf(built: Built, construct: HasResource): Record<string, unknown> {
  return built.template.toJSON().Resources[built.stack.getLogicalId(construct.node.defaultChild as never)].Properties as Record<string, unknown>;
}

/** A resource's `Fn::GetAtt` of `attribute` (its ARN unless told), as the template references it. */
function attOf(built: Built, construct: HasResource, attribute = 'Arn') {
  return { 'Fn::GetAtt': [built.stack.getLogicalId(construct.node.defaultChild as never), attribute] };
}
const arnOf = (built: Built, construct: HasResource) => attOf(built, construct);

/** The seal key as the template references it (its `Ref` is its ARN). */
function sealKeyRef({ stack, delivery }: { stack: Stack; delivery: WebhookDelivery }) {
  return { Ref: stack.getLogicalId(delivery.sealKey.node.defaultChild as never) };
}

/** The logical IDs of the stack's Secrets Manager secrets. */
function secretsOf(template: Template): string[] {
  return Object.keys(template.findResources('AWS::SecretsManager::Secret'));
}

/** The construct's five queues. */
function queuesOf({ delivery }: Built) {
  return [delivery.queue, delivery.redriveQueue, delivery.deadLetterQueue, delivery.orderedQueue, delivery.orderedDeadLetterQueue];
}

/** Every literal string inside a (possibly intrinsic) value. */
function literals(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(literals);
  if (value && typeof value === 'object') return Object.values(value).flatMap(literals);
  return [];
}

describe('WebhookDelivery', () => {
  beforeAll(() => void build(), WARM_UP_MS);

  describe('delivery queue', () => {
    it('redrives to the redrive queue, not the dead-letter queue, only after more receives than the attempt budget', () => {
      // Prepare / Act
      const built = build();
      const { maxReceiveCount } = derivedTimings(defaults);
      const targets = Object.values(built.template.findResources('AWS::SQS::Queue')).flatMap((queue) => {
        const policy = queue.Properties.RedrivePolicy as { deadLetterTargetArn: unknown } | undefined;
        return policy ? [policy.deadLetterTargetArn] : [];
      });

      // Assess
      expect(maxReceiveCount).toBeGreaterThan(defaults.retryPolicy.maxAttempts);
      expect(propertiesOf(built, built.delivery.queue).RedrivePolicy).toEqual({
        deadLetterTargetArn: arnOf(built, built.delivery.redriveQueue),
        maxReceiveCount,
      });
      // The dead-letter queue is filled by SendMessage only (the consumer's reasoned dead letters,
      // recovery's give-ups); the redrive queue, a standard queue, has no redrive of its own.
      expect(targets).toHaveLength(2);
      expect(targets).toContainEqual(arnOf(built, built.delivery.redriveQueue));
      expect(targets).toContainEqual(arnOf(built, built.delivery.orderedDeadLetterQueue));
      expect(targets).not.toContainEqual(arnOf(built, built.delivery.deadLetterQueue));
      expect(propertiesOf(built, built.delivery.redriveQueue).RedrivePolicy).toBeUndefined();
      expect(propertiesOf(built, built.delivery.redriveQueue).FifoQueue).toBeUndefined();
    });

    it('keeps a received message invisible for at least six times the function timeout', () => {
      const { template } = build();
      const { visibilityTimeoutSeconds, functionTimeoutSeconds } = derivedTimings(defaults);

      expect(visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * functionTimeoutSeconds);
      template.hasResourceProperties('AWS::SQS::Queue', {
        RedrivePolicy: Match.anyValue(),
        VisibilityTimeout: visibilityTimeoutSeconds,
      });
      template.hasResourceProperties('AWS::Lambda::Function', { Timeout: functionTimeoutSeconds });
    });

    it('follows a longer attempt timeout with a longer function timeout and visibility', () => {
      const settings = { ...defaults, attemptTimeoutMs: 60_000 };
      const { template } = build({ settings: { attemptTimeoutMs: 60_000 } });
      const { visibilityTimeoutSeconds, functionTimeoutSeconds } = derivedTimings(settings);

      expect(functionTimeoutSeconds).toBe(80);
      template.hasResourceProperties('AWS::SQS::Queue', { VisibilityTimeout: visibilityTimeoutSeconds });
      template.hasResourceProperties('AWS::Lambda::Function', { Timeout: functionTimeoutSeconds });
    });

    it('encrypts every queue at rest: the delivery queue, its redrive and dead-letter queues, the ordered intake and its dead-letter queue', () => {
      const built = build();

      built.template.resourceCountIs('AWS::SQS::Queue', 5);
      built.template.allResourcesProperties('AWS::SQS::Queue', { SqsManagedSseEnabled: true });
      for (const queue of queuesOf(built)) expect(propertiesOf(built, queue)).toMatchObject({ SqsManagedSseEnabled: true });
    });

    it('refuses requests without TLS on every queue, the redrive queue included', () => {
      const built = build();
      const { template } = built;
      const covered = Object.values(template.findResources('AWS::SQS::QueuePolicy')).flatMap((policy) => policy.Properties.Queues as unknown[]);
      const ref = (construct: HasResource) => ({ Ref: built.stack.getLogicalId(construct.node.defaultChild as never) });

      template.resourceCountIs('AWS::SQS::QueuePolicy', 5);
      expect(covered).toHaveLength(5);
      for (const queue of queuesOf(built)) expect(covered).toContainEqual(ref(queue));
      template.allResourcesProperties('AWS::SQS::QueuePolicy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({
              Effect: 'Deny',
              Action: 'sqs:*',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            }),
          ]),
        },
      });
    });

    it('keeps messages on every queue for 14 days', () => {
      const { template } = build();

      template.allResourcesProperties('AWS::SQS::Queue', { MessageRetentionPeriod: 14 * 24 * 60 * 60 });
    });

    it('gives the consumer nothing on the redrive queue: SQS redrives to it, the recovery function drains it', () => {
      const built = build();
      const redrive = JSON.stringify(arnOf(built, built.delivery.redriveQueue));
      const consumer = consumerStatements(built.template).flatMap((s) => [s.Resource].flat()).map((r) => JSON.stringify(r));
      const recovery = recoveryStatements(built.template).filter((s) => [s.Resource].flat().some((r) => JSON.stringify(r) === redrive));

      expect(consumer).not.toContain(redrive);
      expect(recovery.flatMap((s) => [s.Action].flat()).sort()).toEqual(['sqs:DeleteMessage', 'sqs:ReceiveMessage']);
    });
  });

  describe('event source', () => {
    it('reports partial batch failures, so one bad message does not return its batch', () => {
      const { template } = build();

      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    });

    it('takes batch size and maximum concurrency from the settings, with a 1 s batching window', () => {
      const { template } = build({ settings: { batchSize: 25, maxConcurrency: 7 } });

      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        BatchSize: 25,
        MaximumBatchingWindowInSeconds: 1,
        ScalingConfig: { MaximumConcurrency: 7 },
      });
    });

    it('uses the batching window it is given', () => {
      const { template } = build({ maxBatchingWindow: Duration.seconds(5) });

      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { MaximumBatchingWindowInSeconds: 5 });
    });
  });

  describe('ordered intake (docs/contract.md §13)', () => {
    const mappings = (built: Built) =>
      Object.values(built.template.findResources('AWS::Lambda::EventSourceMapping')).map((m) => m.Properties as Record<string, unknown>);

    it('is a FIFO queue with content-based deduplication off, high throughput per shipment, and the delivery queue’s visibility and retention', () => {
      const built = build();
      const { visibilityTimeoutSeconds } = derivedTimings(defaults);

      expect(propertiesOf(built, built.delivery.orderedQueue)).toMatchObject({
        FifoQueue: true,
        ContentBasedDeduplication: false,
        DeduplicationScope: 'messageGroup',
        FifoThroughputLimit: 'perMessageGroupId',
        VisibilityTimeout: visibilityTimeoutSeconds,
        MessageRetentionPeriod: 14 * 24 * 60 * 60,
        SqsManagedSseEnabled: true,
      });
      expect(propertiesOf(built, built.delivery.queue).VisibilityTimeout).toBe(visibilityTimeoutSeconds);
      // No name given: CloudFormation names a FIFO queue with the `.fifo` suffix itself.
      expect(propertiesOf(built, built.delivery.orderedQueue).QueueName).toBeUndefined();
      expect(built.delivery.orderedQueue.fifo).toBe(true);
    });

    it('redrives to a FIFO dead-letter queue of its own after as many receives as the delivery queue allows (about 51 minutes of a failing dependency)', () => {
      const built = build();
      const { maxReceiveCount, visibilityTimeoutSeconds } = derivedTimings(defaults);

      expect(maxReceiveCount * visibilityTimeoutSeconds).toBe(17 * 180);
      expect(propertiesOf(built, built.delivery.orderedQueue).RedrivePolicy).toEqual({
        deadLetterTargetArn: arnOf(built, built.delivery.orderedDeadLetterQueue),
        maxReceiveCount,
      });
      expect(propertiesOf(built, built.delivery.queue).RedrivePolicy).toEqual({
        deadLetterTargetArn: arnOf(built, built.delivery.redriveQueue),
        maxReceiveCount,
      });
      expect(propertiesOf(built, built.delivery.orderedDeadLetterQueue)).toMatchObject({
        FifoQueue: true,
        MessageRetentionPeriod: 14 * 24 * 60 * 60,
        SqsManagedSseEnabled: true,
      });
      expect(propertiesOf(built, built.delivery.deadLetterQueue).FifoQueue).toBeUndefined();
    });

    it('takes the receives it allows from orderedMaxReceiveCount, 1 to 1000, and refuses others naming the prop', () => {
      const built = build({ orderedMaxReceiveCount: 12 });

      expect(propertiesOf(built, built.delivery.orderedQueue).RedrivePolicy).toMatchObject({ maxReceiveCount: 12 });
      expect(() => build({ orderedMaxReceiveCount: 0 })).toThrow(/^orderedMaxReceiveCount must be a whole number from 1 to 1000, got 0/);
      expect(() => build({ orderedMaxReceiveCount: 2.5 })).toThrow(/^orderedMaxReceiveCount must be a whole number from 1 to 1000/);
    });

    it('feeds the same consumer through a second event source: partial batch failures, no batching window, 10 records at most', () => {
      const built = build({ settings: { batchSize: 25, maxConcurrency: 7 } });
      const consumer = { Ref: built.stack.getLogicalId(built.delivery.consumer.node.defaultChild as never) };
      const all = mappings(built);
      const ordered = all.find((m) => JSON.stringify(m.EventSourceArn) === JSON.stringify(arnOf(built, built.delivery.orderedQueue)));
      const standard = all.find((m) => JSON.stringify(m.EventSourceArn) === JSON.stringify(arnOf(built, built.delivery.queue)));

      expect(all).toHaveLength(2);
      expect(ordered).toEqual({
        EventSourceArn: arnOf(built, built.delivery.orderedQueue),
        FunctionName: consumer,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BatchSize: 10,
        ScalingConfig: { MaximumConcurrency: 7 },
      });
      expect(standard).toMatchObject({ FunctionName: consumer, BatchSize: 25, MaximumBatchingWindowInSeconds: 1 });
    });

    it('takes a batch size of 10 or less from the settings, and keeps no batching window when one is given for the delivery queue', () => {
      const built = build({ settings: { batchSize: 4 }, maxBatchingWindow: Duration.seconds(5) });
      const ordered = mappings(built).find((m) => JSON.stringify(m.EventSourceArn) === JSON.stringify(arnOf(built, built.delivery.orderedQueue)));

      expect(ordered).toMatchObject({ BatchSize: 4 });
      expect(ordered).not.toHaveProperty('MaximumBatchingWindowInSeconds');
    });

    it('lets the consumer receive, delete and change the visibility of its messages, and send to neither FIFO queue', () => {
      const built = build();
      const ordered = arnOf(built, built.delivery.orderedQueue);
      const orderedDlq = arnOf(built, built.delivery.orderedDeadLetterQueue);
      const statements = consumerStatements(built.template);
      const on = (arn: unknown) => statements.filter((s) => [s.Resource].flat().some((r) => JSON.stringify(r) === JSON.stringify(arn)));

      expect(on(ordered).flatMap((s) => [s.Action].flat()).sort()).toEqual([
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:ReceiveMessage',
      ]);
      // Its dead letters go to the standard dead-letter queue, whatever queue the message came from.
      expect(on(orderedDlq)).toEqual([]);
      expect(on(arnOf(built, built.delivery.deadLetterQueue)).flatMap((s) => [s.Action].flat())).toEqual(['sqs:SendMessage']);
    });

    it('gives the recovery function nothing on either FIFO queue', () => {
      const built = build();
      const names = [arnOf(built, built.delivery.orderedQueue), arnOf(built, built.delivery.orderedDeadLetterQueue)].map((a) => JSON.stringify(a));

      const resources = recoveryStatements(built.template).flatMap((s) => [s.Resource].flat()).map((r) => JSON.stringify(r));

      expect(resources.filter((r) => names.includes(r))).toEqual([]);
    });

    it('alarms on each new message on its dead-letter queue (a rise in what it holds, visible or in flight, in any of the last 5 minutes), not on its depth', () => {
      const built = build();
      const dlqName = attOf(built, built.delivery.orderedDeadLetterQueue, 'QueueName');
      const stat = (metricName: string) =>
        Match.objectLike({
          MetricStat: { Metric: { Namespace: 'AWS/SQS', MetricName: metricName, Dimensions: [{ Name: 'QueueName', Value: dlqName }] }, Period: 60, Stat: 'Maximum' },
          ReturnData: false,
        });

      // SQS's redrive, its only source, is not counted in NumberOfMessagesSent: the rise in its total is.
      expect(alarmOf(built, built.delivery.alarms.orderedDeadLetters)).toMatchObject({
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 0,
        EvaluationPeriods: 5,
        DatapointsToAlarm: 1,
        TreatMissingData: 'notBreaching',
        AlarmActions: [topicRef(built)],
      });
      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Metrics: Match.arrayWith([
          Match.objectLike({ Expression: 'DIFF(FILL(visible, 0) + FILL(inFlight, 0))', ReturnData: true }),
          stat('ApproximateNumberOfMessagesVisible'),
          stat('ApproximateNumberOfMessagesNotVisible'),
        ]),
      });
      expect(built.delivery.alarms.orderedDeadLetters).not.toBe(built.delivery.alarms.deadLetters);
    });

    it('alarms when the oldest message on the ordered intake is older than a failing one stays before being set aside, plus 5 minutes', () => {
      const built = build();
      const { visibilityTimeoutSeconds, maxReceiveCount } = derivedTimings(defaults);

      expect(alarmOf(built, built.delivery.alarms.orderedPendingAge)).toMatchObject({
        MetricName: 'ApproximateAgeOfOldestMessage',
        Namespace: 'AWS/SQS',
        Dimensions: [{ Name: 'QueueName', Value: attOf(built, built.delivery.orderedQueue, 'QueueName') }],
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 5,
        DatapointsToAlarm: 5,
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: maxReceiveCount * visibilityTimeoutSeconds + 300,
      });
      expect(alarmOf(build({ orderedMaxReceiveCount: 10 }), build({ orderedMaxReceiveCount: 10 }).delivery.alarms.orderedPendingAge).Threshold).toBe(
        10 * visibilityTimeoutSeconds + 300,
      );
    });

    it('shows its dead-letter depth and its oldest message on the dashboard, and the redrive queue\'s oldest message', () => {
      const built = build();
      const [, parts] = Object.values(built.template.findResources('AWS::CloudWatch::Dashboard'))[0]?.Properties.DashboardBody['Fn::Join'] as [string, unknown[]];
      const names = (construct: { node: { defaultChild?: unknown } }) =>
        JSON.stringify({ 'Fn::GetAtt': [built.stack.getLogicalId(construct.node.defaultChild as never), 'QueueName'] });
      const tokens = parts.filter((part) => typeof part !== 'string').map((part) => JSON.stringify(part));
      const text = parts.filter((part) => typeof part === 'string').join('');

      expect(tokens).toContain(names(built.delivery.orderedDeadLetterQueue));
      expect(tokens).toContain(names(built.delivery.orderedQueue));
      expect(text).toContain("On the ordered intake's dead-letter queue");
      expect(text).toContain('Oldest on the ordered intake');
      expect(tokens).toContain(names(built.delivery.redriveQueue));
      expect(text).toContain('Oldest on the redrive queue');
    });
  });

  describe('ledger table', () => {
    it('is keyed by event ID and endpoint as LEDGER_SCHEMA says', () => {
      const { template } = build();

      template.hasResourceProperties('AWS::DynamoDB::Table', stringKeys(LEDGER_SCHEMA.partitionKey, LEDGER_SCHEMA.sortKey));
    });

    it('bills on demand and keeps point-in-time recovery', () => {
      const { template } = build();

      template.hasResourceProperties('AWS::DynamoDB::Table', {
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      });
    });

    it('expires rows through the TTL attribute', () => {
      const { template } = build();

      template.hasResourceProperties('AWS::DynamoDB::Table', {
        TimeToLiveSpecification: { AttributeName: LEDGER_SCHEMA.ttlAttribute, Enabled: true },
      });
    });

    it('has the sparse listing index, keys only, as the one table definition says (the sandbox builds from it too)', () => {
      const { template } = build();
      const index = LEDGER_SCHEMA.listingIndex;
      const { KeySchema, AttributeDefinitions } = stringKeys(index.partitionKey, index.sortKey);

      // Beside the shipment index (test/infra/ledger-table.test.ts).
      template.hasResourceProperties('AWS::DynamoDB::Table', {
        GlobalSecondaryIndexes: Match.arrayWith([{ IndexName: index.name, KeySchema, Projection: { ProjectionType: 'KEYS_ONLY' } }]),
        AttributeDefinitions,
      });
    });

    it('is encrypted at rest with the AWS-managed KMS key', () => {
      const { template } = build();

      // SSEEnabled without a key ID: DynamoDB's KMS key for the account (aws/dynamodb).
      template.hasResourceProperties('AWS::DynamoDB::Table', {
        SSESpecification: { SSEEnabled: true, KMSMasterKeyId: Match.absent() },
      });
    });

    it('is retained when the stack is deleted or the table replaced', () => {
      const { template } = build();

      template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    });
  });

  describe('consumer function', () => {
    it('runs on arm64 with the newest Node.js runtime', () => {
      const { template } = build();

      template.hasResourceProperties('AWS::Lambda::Function', {
        Architectures: ['arm64'],
        Runtime: 'nodejs24.x',
        Handler: 'index.handler',
      });
    });

    it('deploys functions/consumer.ts unless told otherwise', () => {
      expect(path.relative(process.cwd(), CONSUMER_ENTRY)).toBe(path.join('functions', 'consumer.ts'));
    });

    it('turns source maps on in Node', () => {
      const { template } = build();

      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ NODE_OPTIONS: '--enable-source-maps' }) },
      });
    });

    it('receives the settings as the HANDOFF_* variables of lib/config.ts, but for the webhook URL', () => {
      const built = build();
      const { [SETTING_VARIABLES.webhookUrl]: url, ...settings } = settingsToEnvironment(defaults);

      expect(url).toBe(WEBHOOK_URL);
      expect(consumerFunction(built).Properties.Environment.Variables).toMatchObject(settings);
      expect(consumerFunction(built).Properties.Environment.Variables).not.toHaveProperty(SETTING_VARIABLES.webhookUrl);
    });

    it('receives a custom retry schedule', () => {
      const { template } = build({ settings: { retryPolicy: retryPolicy(4, [5, 60, 300]) } });

      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({ HANDOFF_RETRY_SCHEDULE: '5,60,300', HANDOFF_MAX_ATTEMPTS: '4' }),
        },
      });
    });

    it('receives the endpoint guard settings when a test deployment opens them', () => {
      const { template } = build({ settings: { allowHttp: true, allowPrivateCidrs: ['172.16.0.0/12'] } });

      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({ HANDOFF_ALLOW_HTTP: 'true', HANDOFF_ALLOW_PRIVATE_CIDRS: '172.16.0.0/12' }),
        },
      });
    });

    it('is told the ledger table, both queues and the secret by reference', () => {
      const { template, stack, delivery } = build();
      const ref = (construct: { node: { defaultChild?: unknown } }) => ({
        Ref: stack.getLogicalId(construct.node.defaultChild as never),
      });

      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({
            [RESOURCE_ENV.ledgerTable]: ref(delivery.ledgerTable),
            [RESOURCE_ENV.deadLetterQueueUrl]: ref(delivery.deadLetterQueue),
            [RESOURCE_ENV.queueUrl]: ref(delivery.queue),
            [RESOURCE_ENV.webhookSecretArn]: ref(delivery.signingSecret as Secret),
          }),
        },
      });
    });

    it('logs to its own log group with a retention', () => {
      const { template } = build();

      template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
      template.hasResourceProperties('AWS::Lambda::Function', {
        LoggingConfig: { LogGroup: { Ref: Match.anyValue() } },
      });
    });

    it('bundles the handler as minified ESM with a source map, leaving the AWS SDK out', () => {
      // Prepare / Act: the one synth that bundles (the stand-in entry, with local esbuild).
      const built = bundled();
      const assembly = built.app.synth();
      const fn = consumerFunction(built);
      const assetDir = path.join(assembly.directory, `asset.${String(fn?.Properties.Code.S3Key).replace(/\.zip$/, '')}`);

      // Assess
      expect(existsSync(assetDir)).toBe(true);
      expect(readdirSync(assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map']);
      const code = readFileSync(path.join(assetDir, 'index.mjs'), 'utf8');
      expect(code).toContain('from"@aws-sdk/client-sqs"');
      expect(code).toMatch(/export\{\w+ as handler\}/);
    });

    it("bundles the API function with the console's files beside it (console/build.ts, after esbuild), and the portal authorizer on its own", () => {
      // The same bundled synth: the API's and the authorizer's real entries.
      const built = bundled();
      const assembly = built.app.synth();
      const assetOf = (fn: { node: { defaultChild?: unknown } }) => {
        const key = built.template.toJSON().Resources[built.stack.getLogicalId(fn.node.defaultChild as never)].Properties.Code.S3Key as string;
        return path.join(assembly.directory, `asset.${key.replace(/\.zip$/, '')}`);
      };
      const api = assetOf(built.delivery.apiFunction);
      const authorizer = assetOf(built.delivery.portalAuthorizer);

      expect(readdirSync(api).sort()).toEqual(['console', 'index.mjs', 'index.mjs.map']);
      expect(readdirSync(path.join(api, 'console')).sort()).toEqual(['app.css', 'app.js', 'index.html']);
      expect(readFileSync(path.join(api, 'console', 'index.html'), 'utf8')).toContain('app.js');
      expect(readdirSync(authorizer).sort()).toEqual(['index.mjs', 'index.mjs.map']);
      expect(readFileSync(path.join(authorizer, 'index.mjs'), 'utf8')).toMatch(/export\{\w+ as handler\}/);
    });
  });

  describe('signing secret', () => {
    it('is generated in Secrets Manager as 64 letters and digits (a base64 key)', () => {
      const built = build();

      // Asserted on the signing secret itself: the seal key is generated in the same shape.
      expect(propertiesOf(built, built.delivery.signingSecret as unknown as HasResource)).toMatchObject({
        GenerateSecretString: { PasswordLength: 64, ExcludePunctuation: true, IncludeSpace: false },
      });
    });

    it('reaches the consumer as an ARN and never as a value', () => {
      const built = build();
      const variables = consumerFunction(built).Properties.Environment.Variables as Record<string, unknown>;

      expect(variables).not.toHaveProperty('HANDOFF_WEBHOOK_SECRET');
      expect(variables[RESOURCE_ENV.webhookSecretArn]).toEqual({ Ref: expect.stringMatching(/SigningSecret/) });
    });

    it('may be an existing secret, read by its ARN', () => {
      const arn = 'arn:aws:secretsmanager:us-east-1:111122223333:secret:handoff-signing-AbCdEf';
      const app = testApp();
      const stack = new Stack(app, 'TestStack');
      const delivery = new WebhookDelivery(stack, 'Delivery', {
        entry: STAND_IN_ENTRY,
        settings: { webhookUrl: WEBHOOK_URL },
        signingSecret: Secret.fromSecretCompleteArn(stack, 'Existing', arn),
      });
      const template = Template.fromStack(stack);

      // None generated for signing: the stack's one secret is the seal key.
      expect(secretsOf(template)).toEqual([sealKeyRef({ stack, delivery }).Ref]);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ [RESOURCE_ENV.webhookSecretArn]: arn }) },
      });
      template.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: {
          Statement: Match.arrayWith([{ Action: 'secretsmanager:GetSecretValue', Effect: 'Allow', Resource: arn, Sid: 'SigningSecretRead' }]),
        },
      });
    });

    it('is absent, with no grant and no variable, when webhooks are sent unsigned', () => {
      const built = build({ signingSecret: 'none' });
      const { template } = built;
      const fn = consumerFunction(built);

      // The stack's one secret is the seal key, and the consumer's one secret read is of it.
      expect(secretsOf(template)).toEqual([sealKeyRef(built).Ref]);
      expect(fn?.Properties.Environment.Variables).not.toHaveProperty(RESOURCE_ENV.webhookSecretArn);
      expect(consumerStatements(template).filter((s) => [s.Action].flat().some((a) => a.startsWith('secretsmanager:')))).toEqual([
        { Action: 'secretsmanager:GetSecretValue', Effect: 'Allow', Resource: sealKeyRef(built), Sid: 'SealKeyRead' },
      ]);
    });

    it('refuses a secret value among the settings, naming it', () => {
      const act = () => build({ settings: { webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' } });

      expect(act).toThrow(ConfigError);
      expect(act).toThrow(/^webhookSecret is for the local sandbox only/);
    });
  });

  describe('seal key', () => {
    it('is a generated secret that the consumer, the recovery function, the management API and the portal authorizer alone may read, told to each by its ARN in HANDOFF_SEAL_KEY_ARN and never as a value', () => {
      // Prepare / Act
      const built = build();
      const { template, stack, delivery } = built;
      const sealKey = sealKeyRef(built);
      const roleOf = (fn: { role?: { node: { defaultChild?: unknown } } }) => stack.getLogicalId(fn.role!.node.defaultChild as never);
      // The management API's function too: its replays and releases are sealed, its portal links signed;
      // and the portal API's authorizer, which verifies them (test/infra/api.test.ts).
      const readers = [roleOf(delivery.consumer), roleOf(delivery.recovery), roleOf(delivery.apiFunction), roleOf(delivery.portalAuthorizer)];
      // Every identity-policy statement in the stack that names the seal key, with the roles it is on.
      const grantsOnKey = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
        (policy.Properties.PolicyDocument.Statement as Statement[])
          .filter((s) => JSON.stringify(s.Resource).includes(JSON.stringify(sealKey)))
          .map((statement) => ({ roles: (policy.Properties.Roles as { Ref: string }[]).map((r) => r.Ref), statement })),
      );

      // Assess: generated by Secrets Manager (64 letters and digits), no value in the template.
      expect(propertiesOf(built, delivery.sealKey)).toMatchObject({
        GenerateSecretString: { PasswordLength: 64, ExcludePunctuation: true, IncludeSpace: false },
      });
      expect(propertiesOf(built, delivery.sealKey)).not.toHaveProperty('SecretString');
      // Read (GetSecretValue on its ARN, nothing more) by the consumer and the recovery function.
      for (const role of readers) {
        template.hasResourceProperties('AWS::IAM::Policy', {
          Roles: [{ Ref: role }],
          PolicyDocument: {
            Statement: Match.arrayWith([{ Action: 'secretsmanager:GetSecretValue', Effect: 'Allow', Resource: sealKey, Sid: 'SealKeyRead' }]),
          },
        });
      }
      // And by no other role: no other statement names it, no managed policy, role policy or resource policy opens it.
      expect(grantsOnKey.flatMap((g) => g.roles).sort()).toEqual([...readers].sort());
      for (const { statement } of grantsOnKey) {
        expect(statement).toEqual({ Action: 'secretsmanager:GetSecretValue', Effect: 'Allow', Resource: sealKey, Sid: 'SealKeyRead' });
      }
      template.resourceCountIs('AWS::IAM::ManagedPolicy', 0);
      template.resourceCountIs('AWS::SecretsManager::ResourcePolicy', 0);
      template.allResourcesProperties('AWS::IAM::Role', { Policies: Match.absent() });
      // Each of them is told its ARN; no function's environment holds a key.
      for (const role of readers) {
        template.hasResourceProperties('AWS::Lambda::Function', {
          Role: { 'Fn::GetAtt': [role, 'Arn'] },
          Environment: { Variables: Match.objectLike({ [RESOURCE_ENV.sealKeyArn]: sealKey }) },
        });
      }
      for (const fn of Object.values(template.findResources('AWS::Lambda::Function'))) {
        expect(fn.Properties.Environment?.Variables ?? {}).not.toHaveProperty(RESOURCE_ENV.sealKey);
      }
    });
  });

  describe('permissions', () => {
    it('grants the consumer exactly the actions it uses', () => {
      const { template } = build();

      expect(actionsOf(template)).toEqual([
        // The registry, read by change: BatchGetItem (the changed items), GetItem, Scan (a cold
        // start), Query on the change index alone; UpdateItem (health, the rate limit's schedule).
        'dynamodb:BatchGetItem',
        // The ledger: GetItem, PutItem, UpdateItem, Query (on the table's key).
        'dynamodb:GetItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:Query',
        'dynamodb:Scan',
        'dynamodb:UpdateItem',
        'dynamodb:UpdateItem',
        'events:PutEvents',
        // The registry's key (read, health writes) and the alarm topic's (publishing to it).
        'kms:Decrypt',
        'kms:Decrypt',
        'kms:Encrypt',
        'kms:GenerateDataKey',
        'kms:GenerateDataKey',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        // The signing secret's and the seal key's.
        'secretsmanager:GetSecretValue',
        'secretsmanager:GetSecretValue',
        // An endpoint it disables, to the alarm topic.
        'sns:Publish',
        // The delivery queue's and the ordered intake's event sources: one statement for both
        // (cdk.json's @aws-cdk/aws-iam:minimizePolicies merges them; without it, one each).
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:ReceiveMessage',
        'sqs:SendMessage',
        // Tracing 'xray', the default (docs/tracing.md): Lambda's active tracing writes its segments, the ADOT layer the spans.
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ]);
    });

    it('names exact resources in every statement, never a wildcard, but cloudwatch:GetMetricData and the X-Ray writes (which have no resource)', () => {
      const { template } = build();
      const statements = policyStatements(template);
      const metricsRead = { Sid: 'MetricsRead', Effect: 'Allow', Action: 'cloudwatch:GetMetricData', Resource: '*' };
      // Lambda's active tracing (tracing 'xray', the default): the consumer's role, acknowledged with its reason.
      const xrayWrite = { Effect: 'Allow', Action: ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'], Resource: '*' };

      expect(statements.length).toBeGreaterThan(0);
      // The management API's stats (test/infra/api.test.ts: acknowledged on its role alone, with the reason).
      expect(statements.filter((s) => literals(s.Resource).some((r) => r.includes('*')))).toEqual([xrayWrite, metricsRead]);
      // Every other statement names its resources: no wildcard in any of them.
      for (const statement of statements) expect(statement.Effect).toBe('Allow');
    });

    it("lets the consumer write the ledger table and query the table's key, but not its index", () => {
      const { template, stack, delivery } = build();
      const tableArn = { 'Fn::GetAtt': [stack.getLogicalId(delivery.ledgerTable.node.defaultChild as never), 'Arn'] };

      template.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            {
              // Sorted: cdk.json's @aws-cdk/aws-iam:minimizePolicies sorts a statement's actions and resources.
              Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
              Effect: 'Allow',
              Resource: tableArn,
              Sid: 'LedgerReadWrite',
            },
          ]),
        },
      });
    });

    it('lets the consumer send to the delivery queue (routing) and the dead-letter queue, and nowhere else', () => {
      const { template, stack, delivery } = build();
      const sends = consumerStatements(template).filter((s) => [s.Action].flat().includes('sqs:SendMessage'));

      expect(sends).toEqual([
        {
          Action: 'sqs:SendMessage',
          Effect: 'Allow',
          // In either order (minimizePolicies sorts them).
          Resource: expect.arrayContaining([
            { 'Fn::GetAtt': [stack.getLogicalId(delivery.queue.node.defaultChild as never), 'Arn'] },
            { 'Fn::GetAtt': [stack.getLogicalId(delivery.deadLetterQueue.node.defaultChild as never), 'Arn'] },
          ]),
          Sid: 'QueueSend',
        },
      ]);
      expect(sends[0]!.Resource).toHaveLength(2);
    });

    it('attaches no managed policy to the consumer role', () => {
      const { template } = build();

      template.hasResourceProperties('AWS::IAM::Role', { ManagedPolicyArns: Match.absent() });
    });
  });

  describe('endpoint health', () => {
    it("lets the consumer update the registry's items and encrypt with its key", () => {
      const { template, stack, delivery } = build();
      const registry = delivery.endpointRegistry;
      const statements = consumerStatements(template);

      expect(statements).toContainEqual({
        Action: 'dynamodb:UpdateItem',
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [stack.getLogicalId(registry.table.node.defaultChild as never), 'Arn'] },
        Sid: 'EndpointRegistryHealthWrite',
      });
      expect(statements).toContainEqual({
        Action: ['kms:Encrypt', 'kms:GenerateDataKey'],
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [stack.getLogicalId(registry.encryptionKey.node.defaultChild as never), 'Arn'] },
        Sid: 'EndpointRegistryEncrypt',
      });
    });

    it('lets the consumer put events on the default bus, and names it in its environment', () => {
      const { template } = build();
      const puts = consumerStatements(template).filter((s) => [s.Action].flat().includes('events:PutEvents'));

      expect(puts).toHaveLength(1);
      expect(JSON.stringify(puts[0]!.Resource)).toContain(':event-bus/default');
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ [RESOURCE_ENV.eventBus]: 'default' }) },
      });
    });

    it('gives the consumer the topic it is given (variable and publish), and nothing on any key', () => {
      const app = testApp();
      const stack = new Stack(app, 'TestStack');
      const topic = Topic.fromTopicArn(stack, 'Alarms', 'arn:aws:sns:eu-west-1:111122223333:ops-alarms');
      new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: { webhookUrl: WEBHOOK_URL }, alarmTopic: topic });
      const template = Template.fromStack(stack);

      expect(consumerStatements(template)).toContainEqual({ Action: 'sns:Publish', Effect: 'Allow', Resource: topic.topicArn, Sid: 'EndpointDisabledAlarm' });
      expect(consumerStatements(template).filter((s) => s.Sid === 'EndpointDisabledAlarmEncrypt')).toEqual([]);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ [RESOURCE_ENV.alarmTopicArn]: topic.topicArn }) },
      });
      template.resourceCountIs('AWS::SNS::Topic', 0);
    });

    it("gives the consumer the construct's own topic when none is given: its ARN in HANDOFF_ALARM_TOPIC_ARN, publish, and its key to encrypt with", () => {
      const built = build();
      const keyArn = attOf(built, built.delivery.alarmTopicKey!);

      expect(consumerStatements(built.template)).toEqual(
        expect.arrayContaining([
          { Action: 'sns:Publish', Effect: 'Allow', Resource: topicRef(built), Sid: 'EndpointDisabledAlarm' },
          { Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Effect: 'Allow', Resource: keyArn, Sid: 'EndpointDisabledAlarmEncrypt' },
        ]),
      );
      expect(consumerFunction(built).Properties.Environment.Variables[RESOURCE_ENV.alarmTopicArn]).toEqual(topicRef(built));
    });
  });

  describe('stuck-work recovery', () => {
    it('deploys functions/recovery.ts on arm64 with the newest Node.js runtime', () => {
      const built = build();

      expect(path.relative(process.cwd(), RECOVERY_ENTRY)).toBe(path.join('functions', 'recovery.ts'));
      expect(recoveryFunction(built).Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'] });
    });

    it('runs every 5 minutes by default, on an EventBridge schedule targeting the function', () => {
      const built = build();
      const fnArn = { 'Fn::GetAtt': [built.stack.getLogicalId(built.delivery.recovery.node.defaultChild as never), 'Arn'] };

      built.template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: 'rate(5 minutes)',
        State: 'ENABLED',
        Targets: [Match.objectLike({ Arn: fnArn, RetryPolicy: { MaximumRetryAttempts: 0 } })],
      });
      built.template.hasResourceProperties('AWS::Lambda::Permission', {
        Action: 'lambda:InvokeFunction',
        Principal: 'events.amazonaws.com',
        FunctionName: fnArn,
      });
    });

    it('runs at the interval it is given, in whole minutes from 1 to 60, and refuses others naming the prop', () => {
      const { template } = build({ recoveryInterval: Duration.minutes(1) });

      template.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 minute)' });
      expect(() => build({ recoveryInterval: Duration.seconds(30) })).toThrow(/^recoveryInterval must be whole minutes from 1 to 60/);
      expect(() => build({ recoveryInterval: Duration.minutes(90) })).toThrow(/^recoveryInterval must be whole minutes from 1 to 60/);
    });

    it("is told the ledger table, the delivery, redrive and dead-letter queues, the registry, the seal key's ARN, a grace of the visibility timeout plus 5 minutes and its limit, nothing else", () => {
      const built = build();
      const { visibilityTimeoutSeconds } = derivedTimings(defaults);
      const ref = (construct: HasResource) => ({ Ref: built.stack.getLogicalId(construct.node.defaultChild as never) });

      expect(recoveryFunction(built).Properties.Environment).toEqual({
        Variables: {
          [RESOURCE_ENV.ledgerTable]: ref(built.delivery.ledgerTable),
          [RESOURCE_ENV.queueUrl]: ref(built.delivery.queue),
          [RESOURCE_ENV.redriveQueueUrl]: ref(built.delivery.redriveQueue),
          [RESOURCE_ENV.deadLetterQueueUrl]: ref(built.delivery.deadLetterQueue),
          [RESOURCE_ENV.endpointsTable]: ref(built.delivery.endpointRegistry.table),
          [RESOURCE_ENV.sealKeyArn]: ref(built.delivery.sealKey),
          [RECOVERY_ENV.graceMs]: String(visibilityTimeoutSeconds * 1000 + 5 * 60_000),
          [RECOVERY_ENV.limit]: String(RECOVERY_LIMIT),
          [RECOVERY_ENV.intervalMs]: String(5 * 60_000),
          NODE_OPTIONS: '--enable-source-maps',
        },
      });
    });

    it("may query the ledger's listing index, read and release the rows it lists, drain the redrive queue, send to the delivery and dead-letter queues, scan the registry's names and write its releases, read the seal key, nothing more", () => {
      const { template, stack, delivery } = build();
      const tableArn = { 'Fn::GetAtt': [stack.getLogicalId(delivery.ledgerTable.node.defaultChild as never), 'Arn'] };
      const registry = delivery.endpointRegistry;
      const statements = recoveryStatements(template);

      expect(statements.filter((s) => !String([s.Action].flat()[0]).startsWith('logs:'))).toEqual([
        {
          Action: 'dynamodb:Query',
          Effect: 'Allow',
          Resource: { 'Fn::Join': ['', [tableArn, `/index/${LEDGER_SCHEMA.listingIndex.name}`]] },
          Sid: 'LedgerListingQuery',
        },
        { Action: 'dynamodb:BatchGetItem', Effect: 'Allow', Resource: tableArn, Sid: 'LedgerRowsRead' },
        { Action: 'dynamodb:UpdateItem', Effect: 'Allow', Resource: tableArn, Sid: 'LedgerRowsRelease' },
        {
          // Sending back what SQS redrove, or giving up on it after MAX_RECOVERIES rounds (in either order:
          // minimizePolicies sorts a statement's actions and resources).
          Action: 'sqs:SendMessage',
          Effect: 'Allow',
          Resource: expect.arrayContaining([
            { 'Fn::GetAtt': [stack.getLogicalId(delivery.queue.node.defaultChild as never), 'Arn'] },
            { 'Fn::GetAtt': [stack.getLogicalId(delivery.deadLetterQueue.node.defaultChild as never), 'Arn'] },
          ]),
          Sid: 'DeliveryQueueSend',
        },
        {
          Action: ['sqs:DeleteMessage', 'sqs:ReceiveMessage'],
          Effect: 'Allow',
          Resource: { 'Fn::GetAtt': [stack.getLogicalId(delivery.redriveQueue.node.defaultChild as never), 'Arn'] },
          Sid: 'RedriveQueueDrain',
        },
        {
          Action: ['dynamodb:BatchGetItem', 'dynamodb:Scan'],
          Effect: 'Allow',
          Resource: { 'Fn::GetAtt': [stack.getLogicalId(registry.table.node.defaultChild as never), 'Arn'] },
          Sid: 'EndpointNamesRead',
        },
        {
          Action: 'dynamodb:Query',
          Effect: 'Allow',
          Resource: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [stack.getLogicalId(registry.table.node.defaultChild as never), 'Arn'] }, '/index/changes']] },
          Sid: 'EndpointNamesChanges',
        },
        {
          Action: 'kms:Decrypt',
          Effect: 'Allow',
          Resource: { 'Fn::GetAtt': [stack.getLogicalId(registry.encryptionKey.node.defaultChild as never), 'Arn'] },
          Sid: 'EndpointNamesDecrypt',
        },
        {
          Action: 'dynamodb:UpdateItem',
          Effect: 'Allow',
          Resource: { 'Fn::GetAtt': [stack.getLogicalId(registry.table.node.defaultChild as never), 'Arn'] },
          Sid: 'EndpointRegistryHealthWrite',
        },
        {
          Action: ['kms:Encrypt', 'kms:GenerateDataKey'],
          Effect: 'Allow',
          Resource: { 'Fn::GetAtt': [stack.getLogicalId(registry.encryptionKey.node.defaultChild as never), 'Arn'] },
          Sid: 'EndpointRegistryEncrypt',
        },
        // What it sends back is sealed again.
        { Action: 'secretsmanager:GetSecretValue', Effect: 'Allow', Resource: sealKeyRef({ stack, delivery }), Sid: 'SealKeyRead' },
        // Its on-failure destination: the alarm topic, and the topic's key.
        { Action: 'sns:Publish', Effect: 'Allow', Resource: { Ref: stack.getLogicalId(delivery.alarmTopic.node.defaultChild as never) }, Sid: 'RecoveryFailureNotice' },
        {
          Action: ['kms:Decrypt', 'kms:GenerateDataKey'],
          Effect: 'Allow',
          Resource: { 'Fn::GetAtt': [stack.getLogicalId(delivery.alarmTopicKey!.node.defaultChild as never), 'Arn'] },
          Sid: 'RecoveryFailureNoticeEncrypt',
        },
      ]);
      expect(statements.flatMap((s) => [s.Action].flat()).sort()).toEqual([
        // The ledger's listed rows, and the registry's changed items.
        'dynamodb:BatchGetItem',
        'dynamodb:BatchGetItem',
        // The ledger's listing index, and the registry's change index.
        'dynamodb:Query',
        'dynamodb:Query',
        'dynamodb:Scan',
        'dynamodb:UpdateItem',
        'dynamodb:UpdateItem',
        'kms:Decrypt',
        'kms:Decrypt',
        'kms:Encrypt',
        'kms:GenerateDataKey',
        'kms:GenerateDataKey',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        'secretsmanager:GetSecretValue',
        'sns:Publish',
        'sqs:DeleteMessage',
        'sqs:ReceiveMessage',
        'sqs:SendMessage',
      ]);
    });

    it('retries a failed run twice (asynchronous invocation), then reports it to the alarm topic (its on-failure destination)', () => {
      const built = build();
      const fn = { Ref: built.stack.getLogicalId(built.delivery.recovery.node.defaultChild as never) };

      built.template.resourceCountIs('AWS::Lambda::EventInvokeConfig', 1);
      built.template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
        FunctionName: fn,
        Qualifier: '$LATEST',
        MaximumRetryAttempts: 2,
        DestinationConfig: { OnFailure: { Destination: topicRef(built) } },
      });
    });

    it('reports a failed run to the topic it is given, with publish on that topic alone', () => {
      const arn = 'arn:aws:sns:eu-west-1:111122223333:ops-alarms';
      const app = testApp();
      const stack = new Stack(app, 'TestStack');
      new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: { webhookUrl: WEBHOOK_URL }, alarmTopic: Topic.fromTopicArn(stack, 'Alarms', arn) });
      const template = Template.fromStack(stack);

      template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { MaximumRetryAttempts: 2, DestinationConfig: { OnFailure: { Destination: arn } } });
      expect(recoveryStatements(template).filter((s) => String(s.Sid).startsWith('RecoveryFailureNotice'))).toEqual([
        { Action: 'sns:Publish', Effect: 'Allow', Resource: arn, Sid: 'RecoveryFailureNotice' },
      ]);
    });

    it('logs to its own log group with a retention', () => {
      const built = build();
      const logGroup = (recoveryFunction(built).Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup;

      built.template.hasResource('AWS::Logs::LogGroup', { Properties: { RetentionInDays: 30 } });
      expect(built.template.toJSON().Resources[logGroup.Ref]).toMatchObject({ Type: 'AWS::Logs::LogGroup', Properties: { RetentionInDays: 30 } });
    });

    it('shows the deliveries it enqueued again on the dashboard', () => {
      const { template } = build();
      const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]?.Properties.DashboardBody);

      expect(body).toContain(`[\\"${METRICS.namespace}\\",\\"${RECOVERED_METRIC}\\",\\"Service\\",\\"handoff\\"`);
    });
  });

  describe('alarms', () => {
    /** What every alarm of the construct has: a rate or a level over 0 or a threshold, quiet when the metric is absent, the topic on alarm and on OK. */
    const notifying = (built: Built) => ({
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [topicRef(built)],
      OKActions: [topicRef(built)],
    });
    const functionName = (built: Built, fn: HasResource) => [{ Name: 'FunctionName', Value: { Ref: built.stack.getLogicalId(fn.node.defaultChild as never) } }];
    const consumerMetricDimensions = Object.entries(METRICS.dimensions).map(([Name, Value]) => ({ Name, Value }));

    /** Any of it in one 5-minute period. */
    const anyInFiveMinutes = { Statistic: 'Sum', Period: 300, EvaluationPeriods: 1, Threshold: 0 };
    const queueName = (built: Built, queue: HasResource) => [{ Name: 'QueueName', Value: attOf(built, queue, 'QueueName') }];

    /**
     * The alarms on one metric, by case: the properties each alarm it names has (besides `notifying`,
     * which every one has), and what else the case asserts.
     */
    const metricAlarms: { name: string; alarms: (built: Built) => Record<string, unknown>[]; also?: (built: Built) => void }[] = [
      {
        name: 'alarms on each new dead letter: messages sent to the dead-letter queue in 5 minutes (the consumer and recovery send them), not its depth',
        alarms: (built) => [
          {
            MetricName: 'NumberOfMessagesSent',
            Namespace: 'AWS/SQS',
            Dimensions: queueName(built, built.delivery.deadLetterQueue),
            ...anyInFiveMinutes,
            AlarmDescription: Match.stringLikeRegexp('`handoff dead`.*`handoff replay`'),
          },
        ],
        also: (built) => {
          // No alarm stays in ALARM on a dead-letter queue's depth (it would never notify again while undrained).
          built.template.resourcePropertiesCountIs('AWS::CloudWatch::Alarm', { MetricName: 'ApproximateNumberOfMessagesVisible' }, 0);
          expect(alarmOf(built, built.delivery.alarms.deadLetters).MetricName).toBe('NumberOfMessagesSent');
        },
      },
      {
        name: 'alarms when a dead letter on either dead-letter queue is 10 days old, 4 days before SQS deletes it',
        alarms: (built) =>
          [built.delivery.deadLetterQueue, built.delivery.orderedDeadLetterQueue].map((queue) => ({
            MetricName: 'ApproximateAgeOfOldestMessage',
            Namespace: 'AWS/SQS',
            Dimensions: queueName(built, queue),
            Statistic: 'Maximum',
            Period: 900,
            EvaluationPeriods: 1,
            Threshold: 10 * 24 * 60 * 60,
          })),
        also: (built) => {
          expect(DEAD_LETTER_AGE_ALARM.toDays()).toBe(10);
          expect(alarmOf(built, built.delivery.alarms.deadLettersAgeing).Dimensions).toEqual(queueName(built, built.delivery.deadLetterQueue));
          expect(alarmOf(built, built.delivery.alarms.orderedDeadLettersAgeing).Dimensions).toEqual(queueName(built, built.delivery.orderedDeadLetterQueue));
        },
      },
      {
        name: 'alarms on any consumer invocation error in 5 minutes',
        alarms: (built) => [{ MetricName: 'Errors', Namespace: 'AWS/Lambda', Dimensions: functionName(built, built.delivery.consumer), ...anyInFiveMinutes }],
      },
      {
        name: 'alarms on any consumer throttle in 5 minutes',
        alarms: (built) => [
          {
            MetricName: 'Throttles',
            Namespace: 'AWS/Lambda',
            Dimensions: functionName(built, built.delivery.consumer),
            ...anyInFiveMinutes,
            AlarmDescription: Match.stringLikeRegexp('reservedConcurrency'),
          },
        ],
      },
      {
        name: "alarms when the consumer's p99 duration stays above 80 % of its timeout for 15 minutes",
        alarms: (built) => [
          {
            MetricName: 'Duration',
            Namespace: 'AWS/Lambda',
            Dimensions: functionName(built, built.delivery.consumer),
            ExtendedStatistic: 'p99',
            Period: 300,
            EvaluationPeriods: 3,
            DatapointsToAlarm: 3,
            Threshold: derivedTimings(defaults).functionTimeoutSeconds * 1000 * 0.8,
          },
        ],
        also: () => {
          const longer = build({ settings: { attemptTimeoutMs: 60_000 } });
          expect(alarmOf(longer, longer.delivery.alarms.consumerDuration).Threshold).toBe(80 * 1000 * 0.8);
        },
      },
      {
        name: 'alarms when the recovery function fails in two runs in a row (errors in two recovery intervals)',
        alarms: (built) => [
          {
            MetricName: 'Errors',
            Namespace: 'AWS/Lambda',
            Dimensions: functionName(built, built.delivery.recovery),
            Statistic: 'Sum',
            Period: 300,
            EvaluationPeriods: 2,
            DatapointsToAlarm: 2,
            Threshold: 0,
          },
        ],
        also: () => {
          const everyTenMinutes = build({ recoveryInterval: Duration.minutes(10) });
          expect(alarmOf(everyTenMinutes, everyTenMinutes.delivery.alarms.recoveryErrors).Period).toBe(600);
        },
      },
      {
        name: 'alarms on any unrouted event in 5 minutes where an endpoint takes every event (default, from webhookUrl)',
        alarms: () => [{ MetricName: METRICS.names.unrouted, Namespace: METRICS.namespace, Dimensions: consumerMetricDimensions, ...anyInFiveMinutes }],
      },
      {
        name: "alarms on any delivery held in 5 minutes because an endpoint's secret or registry entry could not be read (EndpointUnresolved)",
        alarms: () => [{ MetricName: 'EndpointUnresolved', Namespace: METRICS.namespace, Dimensions: consumerMetricDimensions, ...anyInFiveMinutes }],
        also: () => expect(ENDPOINT_UNRESOLVED_METRIC).toBe('EndpointUnresolved'),
      },
    ];

    for (const { name, alarms, also } of metricAlarms) {
      it(name, () => {
        const built = build();

        for (const alarm of alarms(built)) built.template.hasResourceProperties('AWS::CloudWatch::Alarm', { ...notifying(built), ...alarm });
        also?.(built);
      });
    }

    it('alarms when the oldest queued message is older than 15 minutes by default', () => {
      const built = build();

      // On the delivery queue: the redrive queue's alarm has the same metric (and, by default, 900 s).
      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateAgeOfOldestMessage',
        Namespace: 'AWS/SQS',
        Dimensions: [{ Name: 'QueueName', Value: attOf(built, built.delivery.queue, 'QueueName') }],
        ComparisonOperator: 'GreaterThanThreshold',
        Threshold: 900,
        EvaluationPeriods: 5,
      });
    });

    it('alarms when a message SQS redrove waits on the redrive queue longer than three recovery runs', () => {
      const built = build();
      const everyMinute = build({ recoveryInterval: Duration.minutes(1) });
      const redriven = (b: Built, threshold: number) =>
        b.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
          MetricName: 'ApproximateAgeOfOldestMessage',
          Namespace: 'AWS/SQS',
          Dimensions: [{ Name: 'QueueName', Value: attOf(b, b.delivery.redriveQueue, 'QueueName') }],
          ComparisonOperator: 'GreaterThanThreshold',
          Threshold: threshold,
          EvaluationPeriods: 1,
          Period: 60,
          Statistic: 'Maximum',
          TreatMissingData: 'notBreaching',
        });

      redriven(built, 3 * 5 * 60);
      redriven(everyMinute, 3 * 60);
      expect(built.delivery.alarms.redriven).toBeDefined();
    });

    it('raises the pending-age threshold above a schedule whose first waits are longer', () => {
      const { template } = build({ settings: { retryPolicy: retryPolicy(6, [1800, 3600]) } });

      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateAgeOfOldestMessage',
        Threshold: 1800 + 3600 + 300,
      });
    });

    it('uses the pending-age threshold it is given', () => {
      const { template } = build({ pendingAgeAlarmThreshold: Duration.minutes(30) });

      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateAgeOfOldestMessage',
        Threshold: 1800,
      });
    });

    it('alarms above 100 unrouted events in 5 minutes where only filtered endpoints are declared, or at the threshold it is given', () => {
      const filtered = { name: 'acme', url: 'https://acme.example.com/', eventTypes: ['shipment.delivered'] };
      const catchAll = { name: 'all', url: 'https://all.example.com/', eventTypes: ['*'] };
      const matched = { name: 'some', url: 'https://some.example.com/', eventTypes: ['*'], match: { 'data.carrier': ['acme'] } };
      const threshold = (props: Partial<WebhookDeliveryProps>) => {
        const app = testApp();
        const delivery = new WebhookDelivery(new Stack(app, 'S'), 'D', { entry: STAND_IN_ENTRY, ...props, settings: {} });
        return (Template.fromStack(delivery.node.scope as Stack).toJSON().Resources[(delivery.node.scope as Stack).getLogicalId(delivery.alarms.unrouted.node.defaultChild as never)] as { Properties: { Threshold: number } }).Properties.Threshold;
      };

      expect(UNROUTED_ALARM_THRESHOLD).toBe(100);
      expect(threshold({ endpoints: [filtered] })).toBe(100);
      expect(threshold({ endpoints: [filtered, matched] })).toBe(100);
      expect(threshold({ endpoints: [filtered, catchAll] })).toBe(0);
      expect(threshold({ endpoints: [filtered], unroutedAlarmThreshold: 500 })).toBe(500);
      expect(() => threshold({ endpoints: [filtered], unroutedAlarmThreshold: -1 })).toThrow(/^unroutedAlarmThreshold must be a whole number, 0 or more/);
    });

    it('alarms on throttled requests to the ledger (the table and every index, reads and writes) in two 5-minute periods in a row', () => {
      const built = build();
      const table = { Ref: built.stack.getLogicalId(built.delivery.ledgerTable.node.defaultChild as never) };
      const throttle = (id: string, metricName: string, dimensions: unknown[]) =>
        Match.objectLike({ Id: id, ReturnData: false, MetricStat: { Metric: { Namespace: 'AWS/DynamoDB', MetricName: metricName, Dimensions: dimensions }, Period: 300, Stat: 'Sum' } });
      const onTable = [{ Name: 'TableName', Value: table }];
      const onIndex = (index: string) => [{ Name: 'GlobalSecondaryIndexName', Value: index }, { Name: 'TableName', Value: table }];
      const indexes = globalIndexNames(built.delivery.ledgerTable);
      const ids = ['ledger', ...indexes].flatMap((scope) => [`${scope}Read`, `${scope}Write`]);

      expect(indexes).toContain(LEDGER_SCHEMA.listingIndex.name);
      expect(alarmOf(built, built.delivery.alarms.ledgerThrottles)).toMatchObject({ ...notifying(built), EvaluationPeriods: 2, DatapointsToAlarm: 2, Threshold: 0 });
      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Metrics: Match.arrayWith([
          Match.objectLike({ Expression: ids.map((id) => `FILL(${id}, 0)`).join(' + '), ReturnData: true }),
          throttle('ledgerRead', 'ReadThrottleEvents', onTable),
          throttle('ledgerWrite', 'WriteThrottleEvents', onTable),
          ...indexes.flatMap((index) => [throttle(`${index}Read`, 'ReadThrottleEvents', onIndex(index)), throttle(`${index}Write`, 'WriteThrottleEvents', onIndex(index))]),
        ]),
      });
    });

    it('alarms on throttled requests to the endpoint registry (reads and writes) in two 5-minute periods in a row', () => {
      const built = build();
      const table = { Ref: built.stack.getLogicalId(built.delivery.endpointRegistry.table.node.defaultChild as never) };
      const throttle = (id: string, metricName: string) =>
        Match.objectLike({ Id: id, MetricStat: { Metric: { Namespace: 'AWS/DynamoDB', MetricName: metricName, Dimensions: [{ Name: 'TableName', Value: table }] }, Period: 300, Stat: 'Sum' } });

      expect(alarmOf(built, built.delivery.alarms.registryThrottles)).toMatchObject({ ...notifying(built), EvaluationPeriods: 2, DatapointsToAlarm: 2, Threshold: 0 });
      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Metrics: Match.arrayWith([
          Match.objectLike({ Expression: 'FILL(registryRead, 0) + FILL(registryWrite, 0)', ReturnData: true }),
          throttle('registryRead', 'ReadThrottleEvents'),
          throttle('registryWrite', 'WriteThrottleEvents'),
        ]),
      });
    });

    it('says in every alarm what to do, and notifies the alarm topic on alarm and on OK', () => {
      const built = build();
      const alarms = Object.values(built.template.findResources('AWS::CloudWatch::Alarm'));

      expect(alarms).toHaveLength(Object.keys(built.delivery.alarms).length);
      built.template.allResourcesProperties('AWS::CloudWatch::Alarm', {
        AlarmActions: [topicRef(built)],
        OKActions: [topicRef(built)],
        TreatMissingData: 'notBreaching',
        AlarmDescription: Match.stringLikeRegexp('^handoff: .{80,}'),
      });
    });

    it('notifies the topic it is given on alarm and on OK, and makes none', () => {
      const app = testApp();
      const stack = new Stack(app, 'TestStack');
      const topic = new Topic(stack, 'Alarms');
      const delivery = new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: { webhookUrl: WEBHOOK_URL }, alarmTopic: topic });
      const template = Template.fromStack(stack);
      const ref = { Ref: stack.getLogicalId(topic.node.defaultChild as never) };

      expect(delivery.alarmTopic).toBe(topic);
      expect(delivery.alarmTopicKey).toBeUndefined();
      template.resourceCountIs('AWS::SNS::Topic', 1);
      template.resourceCountIs('AWS::CloudWatch::Alarm', Object.keys(delivery.alarms).length);
      template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [ref], OKActions: [ref] });
    });

    it('keeps every alarm in `alarms`', () => {
      const { delivery } = build();

      expect(Object.keys(delivery.alarms).sort()).toEqual([
        'apiErrors',
        'apiPortalServerErrors',
        'apiServerErrors',
        'consumerDuration',
        'consumerErrors',
        'consumerThrottles',
        'deadLetters',
        'deadLettersAgeing',
        'endpointUnresolved',
        'ledgerThrottles',
        'orderedDeadLetters',
        'orderedDeadLettersAgeing',
        'orderedPendingAge',
        'pendingAge',
        'recoveryErrors',
        'redriven',
        'registryThrottles',
        'unrouted',
      ]);
    });
  });

  describe('alarm topic', () => {
    it('is made when none is given: encrypted with a key of its own (rotated), TLS only, and CloudWatch alarms of this account may publish to it', () => {
      const built = build();
      const keyArn = attOf(built, built.delivery.alarmTopicKey!);

      built.template.resourceCountIs('AWS::SNS::Topic', 1);
      built.template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: keyArn });
      expect(propertiesOf(built, built.delivery.alarmTopicKey!)).toMatchObject({ EnableKeyRotation: true });
      built.template.hasResourceProperties('AWS::SNS::TopicPolicy', {
        Topics: [topicRef(built)],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Action: 'sns:Publish', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
            Match.objectLike({
              Effect: 'Allow',
              Action: 'sns:Publish',
              Principal: { Service: 'cloudwatch.amazonaws.com' },
              Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } }, ArnLike: { 'aws:SourceArn': Match.anyValue() } },
            }),
          ]),
        },
      });
      // CloudWatch encrypts what it publishes with the topic's key.
      expect(JSON.stringify(propertiesOf(built, built.delivery.alarmTopicKey!).KeyPolicy)).toContain(
        JSON.stringify({ Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' }, Resource: '*', Sid: 'CloudWatchAlarmsPublish' }),
      );
    });

    it('goes with the stack, and its key too (it keeps no message)', () => {
      const built = build();
      const resources = built.template.toJSON().Resources as Record<string, { DeletionPolicy?: string }>;

      expect(resources[topicRef(built).Ref]?.DeletionPolicy).toBeUndefined();
      expect(resources[built.stack.getLogicalId(built.delivery.alarmTopicKey!.node.defaultChild as never)]).toMatchObject({ DeletionPolicy: 'Delete' });
    });
  });

  describe('dashboard', () => {
    it('shows pending age, retries, dead letters and delivery latency percentiles', () => {
      const { template } = build();
      const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
      const body = JSON.stringify(dashboards[0]?.Properties.DashboardBody);

      expect(dashboards).toHaveLength(1);
      for (const name of Object.values(METRICS.names)) expect(body).toContain(`\\"${name}\\"`);
      expect(body).toContain(`\\"${METRICS.namespace}\\"`);
      expect(body).toContain('ApproximateAgeOfOldestMessage');
      expect(body).toContain('ApproximateNumberOfMessagesVisible');
      expect(body).toContain('\\"stat\\":\\"p50\\"');
      expect(body).toContain('\\"stat\\":\\"p99\\"');
    });

    it('shows unrouted, fanned-out, dropped, paused, parked, released and rate-limited deliveries for the service', () => {
      const { template } = build();
      const body = JSON.stringify(Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]?.Properties.DashboardBody);

      for (const name of ['Unrouted', 'FannedOut', 'Dropped', 'Paused', 'Parked', 'Resumed', 'RateLimited']) {
        expect(body).toContain(`[\\"${METRICS.namespace}\\",\\"${name}\\",\\"Service\\",\\"handoff\\"`);
      }
    });

    it('shows each endpoint by a SEARCH over the Endpoint dimension, labelled by its name', () => {
      const { template } = build();
      // The body is a Fn::Join of its text around the region and queue names: those become `x`.
      const [, parts] = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0]?.Properties.DashboardBody['Fn::Join'] as [string, unknown[]];
      const body = JSON.parse(parts.map((part) => (typeof part === 'string' ? part : 'x')).join('')) as { widgets: { properties: { title: string; metrics: { expression?: string; label?: string }[][] } }[] };
      const searches = body.widgets
        .filter((w) => w.properties.title.endsWith('by endpoint'))
        .map((w) => ({ title: w.properties.title, ...w.properties.metrics[0]![0]! }));

      expect(searches.map((s) => s.title)).toEqual([
        'Delivered by endpoint',
        'Retries by endpoint',
        'Dead letters by endpoint',
        'Dropped by endpoint',
        'Paused by endpoint',
        'Parked by endpoint',
        'Rate-limited by endpoint',
        'Delivery latency p99 (ms) by endpoint',
        'Pending age at attempt, max (s) by endpoint',
      ]);
      expect(searches[0]).toMatchObject({
        expression: `SEARCH('{Handoff,Service,${METRICS.endpointDimension}} MetricName="Delivered" Service="handoff"', 'Sum', 300)`,
        label: "${PROP('Dim.Endpoint')}",
      });
      expect(searches[4]?.expression).toBe(`SEARCH('{Handoff,Service,Endpoint} MetricName="Paused" Service="handoff"', 'Sum', 300)`);
      expect(searches[7]?.expression).toBe(`SEARCH('{Handoff,Service,Endpoint} MetricName="DeliveryLatency" Service="handoff"', 'p99', 300)`);
    });

    /** The dashboard's widgets, each token in its body (a name, an ARN, the region) as the intrinsic it stands for. */
    function dashboardOf(built: Built): { widgets: { type: string; properties: Record<string, any> }[]; name: unknown } {
      const dashboard = Object.values(built.template.findResources('AWS::CloudWatch::Dashboard'))[0]!;
      const [, parts] = dashboard.Properties.DashboardBody['Fn::Join'] as [string, unknown[]];
      const tokens: unknown[] = [];
      const text = parts.map((part) => (typeof part === 'string' ? part : `@@${tokens.push(part) - 1}@@`)).join('');
      const body = JSON.parse(text, (_key, value: unknown) =>
        typeof value === 'string' && /^@@\d+@@$/.test(value) ? tokens[Number(value.slice(2, -2))] : value,
      ) as { widgets: { type: string; properties: Record<string, any> }[] };
      return { widgets: body.widgets, name: dashboard.Properties.DashboardName };
    }

    /** Every metric a widget graphs, as [namespace, name, ...dimensions] (options left off). */
    const graphed = (widget: { properties: Record<string, any> }) =>
      ((widget.properties.metrics ?? []) as unknown[][]).map((m) => m.filter((part) => typeof part !== 'object' || part === null || !('stat' in part || 'label' in part || 'expression' in part || 'id' in part)));

    it("shows every alarm's state first, in an alarm-status widget", () => {
      const built = build();
      const { widgets } = dashboardOf(built);
      const arns = Object.values(built.delivery.alarms).map((alarm) => attOf(built, alarm));

      expect(widgets[0]).toMatchObject({ type: 'alarm', properties: { title: 'Alarms' } });
      expect(widgets[0]!.properties.alarms).toEqual(arns);
    });

    it('shows invocations, errors, throttles, duration and concurrent executions of the consumer and the recovery function', () => {
      const built = build();
      const { widgets } = dashboardOf(built);
      const ref = (fn: HasResource) => ({ Ref: built.stack.getLogicalId(fn.node.defaultChild as never) });
      const all = widgets.flatMap(graphed);

      for (const fn of [built.delivery.consumer, built.delivery.recovery]) {
        for (const name of ['Invocations', 'Errors', 'Throttles', 'Duration', 'ConcurrentExecutions']) {
          expect(all).toContainEqual(['AWS/Lambda', name, 'FunctionName', ref(fn)]);
        }
      }
      const duration = widgets.find((w) => w.properties.title === 'Lambda duration (ms)');
      expect(duration?.properties.annotations).toEqual({ horizontal: [expect.objectContaining({ value: derivedTimings(defaults).functionTimeoutSeconds * 1000, label: 'Consumer timeout' })] });
    });

    it('shows the capacity the ledger and the registry consume, and their throttles', () => {
      const built = build();
      const { widgets } = dashboardOf(built);
      const all = widgets.flatMap(graphed);
      const throttles = widgets.find((w) => w.properties.title === 'DynamoDB throttles');

      for (const table of [built.delivery.ledgerTable, built.delivery.endpointRegistry.table]) {
        const ref = { Ref: built.stack.getLogicalId(table.node.defaultChild as never) };
        for (const name of ['ConsumedReadCapacityUnits', 'ConsumedWriteCapacityUnits', 'ReadThrottleEvents', 'WriteThrottleEvents']) {
          expect(all).toContainEqual(['AWS/DynamoDB', name, 'TableName', ref]);
        }
      }
      expect(JSON.stringify(throttles?.properties.metrics)).toContain('FILL(ledgerRead, 0)');
      expect(JSON.stringify(throttles?.properties.metrics)).toContain('FILL(registryRead, 0)');
    });

    it('is named after its stack, construct and region, so two stacks, regions or constructs never share a name, or as it is told', () => {
      const named = (stackName: string, region: string | undefined, id = 'Delivery', dashboardName?: string) => {
        const app = testApp();
        const stack = new Stack(app, stackName, region ? { env: { region, account: '111122223333' } } : {});
        new WebhookDelivery(stack, id, { entry: STAND_IN_ENTRY, settings: { webhookUrl: WEBHOOK_URL }, ...(dashboardName ? { dashboardName } : {}) });
        return Object.values(Template.fromStack(stack).findResources('AWS::CloudWatch::Dashboard'))[0]?.Properties.DashboardName as unknown;
      };

      expect(named('Handoff', 'eu-west-1')).toBe('Handoff-Delivery-eu-west-1');
      expect(named('Handoff', 'us-east-1')).toBe('Handoff-Delivery-us-east-1');
      expect(named('Handoff-Staging', 'eu-west-1')).toBe('Handoff-Staging-Delivery-eu-west-1');
      expect(named('Handoff', 'eu-west-1', 'Second')).toBe('Handoff-Second-eu-west-1');
      // An environment-agnostic stack: the region CloudFormation deploys to.
      expect(named('Handoff', undefined)).toEqual({ 'Fn::Join': ['', ['Handoff-Delivery-', { Ref: 'AWS::Region' }]] });
      expect(named('Handoff', 'eu-west-1', 'Delivery', 'ops-handoff')).toBe('ops-handoff');
    });
  });

  describe('what outlives the stack', () => {
    const policies = (built: Built, construct: HasResource) =>
      (built.template.toJSON().Resources as Record<string, { DeletionPolicy?: string; UpdateReplacePolicy?: string }>)[
        built.stack.getLogicalId(construct.node.defaultChild as never)
      ];

    it('retains the dead-letter, redrive and FIFO dead-letter queues (they may hold the only copy of a message), not the intake queues', () => {
      const built = build();
      const { delivery } = built;

      for (const queue of [delivery.deadLetterQueue, delivery.redriveQueue, delivery.orderedDeadLetterQueue]) {
        expect(policies(built, queue)).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
      }
      // Gone with the stack: a producer's send then fails, rather than piling up where nothing reads.
      for (const queue of [delivery.queue, delivery.orderedQueue]) expect(policies(built, queue)).toMatchObject({ DeletionPolicy: 'Delete' });
      built.template.resourcePropertiesCountIs('AWS::SQS::Queue', {}, 5);
    });

    it('retains the generated signing secret (the retained registry names it) and the seal key (retained messages are sealed with it)', () => {
      const built = build();

      built.template.allResources('AWS::SecretsManager::Secret', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
      expect(policies(built, built.delivery.signingSecret as unknown as HasResource)).toMatchObject({ DeletionPolicy: 'Retain' });
      expect(policies(built, built.delivery.sealKey)).toMatchObject({ DeletionPolicy: 'Retain' });
    });

    it('turns deletion protection on for the ledger and the registry, and off where told (throwaway stacks)', () => {
      const on = build();
      const off = build({ deletionProtection: false });

      for (const built of [on, off]) {
        for (const table of [built.delivery.ledgerTable, built.delivery.endpointRegistry.table]) {
          expect(propertiesOf(built, table).DeletionProtectionEnabled).toBe(built === on);
          expect(policies(built, table)).toMatchObject({ DeletionPolicy: 'Retain' });
        }
      }
      on.template.allResourcesProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: true });
    });
  });

  describe('function environments', () => {
    it('hold no URL and no secret value in any function: no HANDOFF_WEBHOOK_URL, no whsec_ or key, secrets by ARN only', () => {
      const built = build({ endpoints: [{ name: 'acme', url: 'https://acme.example.com/hooks?token=s3cr3t', eventTypes: ['*'] }] });
      const functions = Object.values(built.template.findResources('AWS::Lambda::Function'));
      const forbidden = [SETTING_VARIABLES.webhookUrl, 'HANDOFF_WEBHOOK_SECRET', RESOURCE_ENV.sealKey];

      // The consumer, the recovery function, the API's function, the portal authorizer and the seeds' function.
      expect(functions).toHaveLength(5);
      for (const fn of functions) {
        // The console's address is the deployment's own API (the portal API's /console/), no receiver's.
        const { [CONSOLE_ENV.portalConsoleUrl]: consoleUrl, ...variables } = (fn.Properties.Environment?.Variables ?? {}) as Record<string, unknown>;
        if (consoleUrl !== undefined) expect(JSON.stringify(consoleUrl)).toMatch(/^\{"Fn::Join":\["",\["https:\/\/",\{"Ref":"\w*ApiPortal\w*"\},".execute-api.",/);
        for (const name of forbidden) expect(variables).not.toHaveProperty(name);
        const values = literals(variables);
        expect(values.filter((value) => /^[a-z][a-z0-9+.-]*:\/\//i.test(value) || value.includes('whsec_'))).toEqual([]);
        expect(JSON.stringify(variables)).not.toContain('s3cr3t');
      }
      // The URLs are the seeds' alone (the registry's), given at deploy.
      expect(JSON.stringify(built.template.findResources('Custom::HandoffEndpoint'))).toContain(WEBHOOK_URL);
    });
  });

  describe('reserved concurrency', () => {
    it('reserves none by default: the event sources’ maximum concurrency bounds the consumer', () => {
      const built = build();

      expect(consumerFunction(built).Properties).not.toHaveProperty('ReservedConcurrentExecutions');
    });

    it('reserves what it is told, when that is at least both event sources’ maximum concurrency, and refuses less naming the prop', () => {
      const built = build({ settings: { maxConcurrency: 10 }, reservedConcurrency: 20 });

      expect(consumerFunction(built).Properties.ReservedConcurrentExecutions).toBe(20);
      expect(() => build({ settings: { maxConcurrency: 10 }, reservedConcurrency: 19 })).toThrow(
        /^reservedConcurrency must be a whole number of at least 20 \(twice maxConcurrency: .*\), got 19$/,
      );
    });
  });

  describe('settings', () => {
    it('requires the webhook URL', () => {
      const act = () => {
        const app = testApp();
        return new WebhookDelivery(new Stack(app, 'S'), 'D', { entry: STAND_IN_ENTRY, settings: {} });
      };

      expect(act).toThrow(ConfigError);
      expect(act).toThrow(/^webhookUrl is required/);
    });

    it('refuses an invalid setting, naming it', () => {
      expect(() => build({ settings: { batchSize: 0 } })).toThrow(/^batchSize must be a whole number from 1 to 100/);
    });

    it('refuses a retry schedule that outlasts the queue retention', () => {
      const act = () => build({ settings: { retryPolicy: retryPolicy(40, [43_200]) } });

      expect(act).toThrow(/^retryPolicy waits add up to 1684800 s, past the queue's 14-day message retention/);
    });

    it('refuses a ledger retention shorter than a delivery can live, naming it and the retry policy', () => {
      const act = () => build({ settings: { retentionDays: 1, retryPolicy: retryPolicy(6, [43_200]) } });

      expect(act).toThrow(ConfigError);
      expect(act).toThrow(/^retentionDays must be at least 18 days with retryPolicy allowing 6 attempts, got 1: /);
    });

    it('keeps the ledger rows past the longest delivery by default', () => {
      const { template } = build();

      expect(DEFAULT_SETTINGS.retentionDays).toBeGreaterThanOrEqual(minimumRetentionDays(DEFAULT_SETTINGS));
      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ HANDOFF_RETENTION_DAYS: String(DEFAULT_SETTINGS.retentionDays) }) },
      });
    });

    it('refuses a payload limit a ledger row cannot hold, naming it', () => {
      expect(() => build({ settings: { payloadLimitBytes: 450_000 } })).toThrow(/^payloadLimitBytes must be a whole number from 256 to 262144/);
    });

    it('refuses a signing secret that cannot sign at synth, without showing it', () => {
      const act = () => build({ settings: { webhookSecret: 'whsec_AAAA' } });

      expect(act).toThrow(/^webhookSecret must be a Standard Webhooks secret .*: the key decodes to a 3-byte key/);
      expect(act).not.toThrow(/AAAA/);
    });
  });

  describe('cdk-nag', () => {
    it('passes the AwsSolutions rules with no unacknowledged finding', () => {
      const { stack } = build();

      const report = new AwsSolutionsChecks().validateScope(stack);

      expect(report.violations).toEqual([]);
      expect(report.success).toBe(true);
    });

    it('passes the AwsSolutions rules with an existing secret and an alarm topic too', () => {
      const app = testApp();
      const stack = new Stack(app, 'TestStack');
      new WebhookDelivery(stack, 'Delivery', {
        entry: STAND_IN_ENTRY,
        settings: { webhookUrl: WEBHOOK_URL },
        signingSecret: Secret.fromSecretNameV2(stack, 'Existing', 'handoff-signing'),
        alarmTopic: Topic.fromTopicArn(stack, 'Alarms', 'arn:aws:sns:us-east-1:111122223333:alarms'),
      });

      expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
    });

    it('gives a written reason for every acknowledged finding', () => {
      const { stack } = build();
      const acknowledged = stack.node
        .findAll()
        .flatMap((c) => c.node.metadata)
        .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
        .flatMap((m) => Object.entries(m.data as Record<string, string>));

      // SMG4 twice: the signing secret's and the seal key's (rotation); IAM5 on the API's role (GetMetricData)
      // and on the consumer's (X-Ray's writes, tracing 'xray'); APIG4 on the portal API's two console
      // routes (the page's files, no data: test/infra/api.test.ts).
      expect(acknowledged.map(([id]) => id).sort()).toEqual([
        'Annotation::AwsSolutions-APIG4',
        'Annotation::AwsSolutions-APIG4',
        'Annotation::AwsSolutions-IAM5[Resource::*]',
        'Annotation::AwsSolutions-IAM5[Resource::*]',
        'Annotation::AwsSolutions-SMG4',
        'Annotation::AwsSolutions-SMG4',
        'Annotation::AwsSolutions-SQS3',
      ]);
      for (const [, reason] of acknowledged) expect(reason.length).toBeGreaterThan(40);
    });

    it("acknowledges the signing secret's rotation finding by the rotation procedure, not by containers being recycled", () => {
      const built = build();
      const reasons = built.stack.node
        .findAll()
        .flatMap((c) => c.node.metadata)
        .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
        .flatMap((m) => Object.values(m.data as Record<string, string>));
      const signing = (built.delivery.signingSecret as unknown as { node: { metadata: { type: string; data: unknown }[] } }).node.metadata
        .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
        .map((m) => (m.data as Record<string, string>)['Annotation::AwsSolutions-SMG4']);

      expect(signing).toEqual([expect.stringMatching(/put-secret-value.*re-read .* within 5 minutes.*both versions/)]);
      for (const reason of reasons) expect(reason).not.toMatch(/recycl|container|configuration change/i);
    });

    it('acknowledges AwsSolutions-SQS3 on the dead-letter queue alone: another queue without a dead-letter queue still fails', () => {
      const { stack, delivery } = build();
      const where = stack.node
        .findAll()
        .filter((c) => c.node.metadata.some((m) => m.type === 'aws:cdk:acknowledged-rules' && 'Annotation::AwsSolutions-SQS3' in (m.data as object)))
        .map((c) => c.node.path);
      new Queue(stack, 'Undrained', { encryption: QueueEncryption.SQS_MANAGED, enforceSSL: true });

      const findings = new AwsSolutionsChecks().validateScope(stack).violations;

      expect(where).toEqual([delivery.deadLetterQueue.node.path]);
      expect(findings.map((f) => [f.ruleName, f.violatingResources.map((r) => r.constructPath)])).toEqual([
        ['AwsSolutions-SQS3', ['TestStack/Undrained/Resource']],
      ]);
    });
  });
});
