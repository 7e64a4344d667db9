/**
 * The endpoint registry as the WebhookDelivery construct deploys it (docs/contract.md §11): its
 * table and key, who may read and write it, the endpoints it seeds (the single-URL settings'
 * `default` and the declared ones) and the synth-time checks of a declaration. Asserted on the
 * synthesized template with `Match`, never by logical ID; the seed's own DynamoDB call is then run,
 * as synthesized, against dynalite and read back through the registry's adapter.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Secret, type ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ConditionalCheckFailedException, UpdateItemCommand, type DynamoDBClient, type UpdateItemCommandInput } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS, RESOURCE_ENV } from '../../lib/config';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { EndpointError } from '../../lib/errors';
import { CHANGE_FEED, REGISTRY_SCHEMA, REGISTRY_TABLE_DEFINITION } from '../../lib/endpoints/registry-schema';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { emulatorDynamoDbClient, startDynalite, type Dynalite } from '../helpers/dynalite';
import {
  DECLARED_ATTRIBUTE,
  EndpointRegistry,
  WebhookDelivery,
  type EndpointDeclaration,
  type WebhookDeliveryProps,
} from '../../infra/webhook-delivery';
import { testApp, WARM_UP_MS, STAND_IN_ENTRY, WEBHOOK_URL } from './cdk-context';

const ACME_SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:handoff-acme-AbCdEf';

type Resource = { Type: string; Properties: Record<string, any>; DependsOn?: string[] };
type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Sid?: string };

interface BuildOptions extends Partial<WebhookDeliveryProps> {
  readonly declare?: (stack: Stack) => EndpointDeclaration[];
  /** Runs before the template is synthesized. */
  readonly then?: (stack: Stack, delivery: WebhookDelivery) => void;
}

function build(props: BuildOptions = {}) {
  const app = testApp();
  const stack = new Stack(app, 'TestStack');
  const { declare, then, ...rest } = props;
  const delivery = new WebhookDelivery(stack, 'Delivery', {
    entry: STAND_IN_ENTRY,
    ...rest,
    ...(declare ? { endpoints: declare(stack) } : {}),
    settings: { webhookUrl: WEBHOOK_URL, ...rest.settings },
  });
  then?.(stack, delivery);
  const template = Template.fromStack(stack);
  const ref = (construct: { node: { defaultChild?: unknown } }) => stack.getLogicalId(construct.node.defaultChild as never);
  return { app, stack, delivery, template, ref };
}

let secrets = 0;

function acme(stack: Stack, overrides: Partial<EndpointDeclaration> = {}): EndpointDeclaration {
  return {
    name: 'carrier-acme',
    url: 'https://acme.example.com/hooks',
    eventTypes: ['shipment.delivered', 'shipment.exception'],
    match: { 'data.carrier': ['acme', 'zephyr'], 'data.priority': [1, true] },
    retrySchedule: [10, 60],
    maxAttempts: 3,
    recovery: 'drop',
    ...overrides,
    ...('secret' in overrides ? {} : { secret: Secret.fromSecretCompleteArn(stack, `AcmeSecret${++secrets}`, ACME_SECRET_ARN) }),
  };
}

function resources(template: Template, type: string): [string, Resource][] {
  return Object.entries(template.findResources(type)) as [string, Resource][];
}

/** The statements of the policies attached to the role whose logical ID matches `role`. */
function statementsOf(template: Template, role: RegExp): Statement[] {
  return resources(template, 'AWS::IAM::Policy')
    .filter(([, policy]) => (policy.Properties.Roles as { Ref: string }[]).some((r) => role.test(r.Ref)))
    .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement as Statement[]);
}

function actionsOn(statements: Statement[], resource: unknown): string[] {
  return statements
    .filter((s) => JSON.stringify(s.Resource) === JSON.stringify(resource))
    .flatMap((s) => [s.Action].flat())
    .sort();
}

/** The seed resources' UpdateItem calls, by endpoint name (the call as a JSON text with intrinsics). */
function seeds(template: Template): Map<string, { id: string; resource: Resource; call: unknown }> {
  const found = new Map<string, { id: string; resource: Resource; call: unknown }>();
  for (const [id, resource] of resources(template, 'Custom::HandoffEndpoint')) {
    const text = JSON.stringify(resource.Properties.Call);
    const name = /\\"Key\\":\{\\"name\\":\{\\"S\\":\\"([a-z0-9-]+)\\"/.exec(text)?.[1];
    expect(name, text).toBeDefined();
    expect(resource.Properties.Endpoint).toBe(name);
    found.set(name!, { id, resource, call: resource.Properties.Call });
  }
  return found;
}

/** The seed function's code, as the template inlines it, loaded as Lambda would (CommonJS, its `require`). */
function seedHandler(template: Template): (event: Record<string, unknown>) => Promise<string> {
  const [fn] = resources(template, 'AWS::Lambda::Function').filter(([id]) => id.includes('SeedFunction'));
  const code = fn?.[1].Properties.Code.ZipFile as string;
  const module = { exports: {} as { handler?: (event: Record<string, unknown>) => Promise<string> } };
  new Function('exports', 'require', 'module', code)(module.exports, createRequire(import.meta.url), module);
  return module.exports.handler!;
}

/** A property built with Fn::Join and Ref, with each Ref replaced by `refs` (what CloudFormation does). */
function resolveIntrinsics(value: unknown, refs: Record<string, string>): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, unknown>;
  if ('Ref' in v) {
    const resolved = refs[v.Ref as string];
    if (resolved === undefined) throw new Error(`no value for Ref ${String(v.Ref)}`);
    return resolved;
  }
  if ('Fn::Join' in v) {
    const [separator, parts] = v['Fn::Join'] as [string, unknown[]];
    return parts.map((part) => resolveIntrinsics(part, refs)).join(separator);
  }
  throw new Error(`unexpected intrinsic ${JSON.stringify(value)}`);
}

describe('Construct: WebhookDelivery endpoint registry', () => {
  beforeAll(() => void build(), WARM_UP_MS);

  describe('table and key', () => {
    it('is keyed by endpoint name, with the change and owner indexes and the tombstones\' TTL, as the one registry definition says (the sandbox builds from it too)', () => {
      const { template, delivery, ref } = build();
      const table = template.toJSON().Resources[ref(delivery.endpointRegistry.table)] as Resource;

      expect(table.Properties.KeySchema).toStrictEqual(REGISTRY_TABLE_DEFINITION.KeySchema);
      expect(table.Properties.AttributeDefinitions).toStrictEqual(REGISTRY_TABLE_DEFINITION.AttributeDefinitions);
      expect(table.Properties.GlobalSecondaryIndexes).toStrictEqual(REGISTRY_TABLE_DEFINITION.GlobalSecondaryIndexes);
      expect(table.Properties.TimeToLiveSpecification).toStrictEqual({ AttributeName: REGISTRY_SCHEMA.attributes.expiresAt, Enabled: true });
    });

    it('bills on demand, keeps point-in-time recovery and is encrypted with the stack-owned key', () => {
      const { template, delivery, ref } = build();

      template.hasResourceProperties('AWS::DynamoDB::Table', {
        KeySchema: [{ AttributeName: REGISTRY_SCHEMA.partitionKey, KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: {
          SSEEnabled: true,
          SSEType: 'KMS',
          KMSMasterKeyId: { 'Fn::GetAtt': [ref(delivery.endpointRegistry.encryptionKey), 'Arn'] },
        },
      });
    });

    it('owns a customer-managed key with yearly rotation', () => {
      const { template, delivery, ref } = build();
      const keys = resources(template, 'AWS::KMS::Key').map(([id]) => id);

      // The stack's other key is the alarm topic's (test/infra/webhook-delivery.test.ts).
      expect(keys.sort()).toEqual([ref(delivery.endpointRegistry.encryptionKey), ref(delivery.alarmTopicKey!)].sort());
      expect((template.toJSON().Resources[ref(delivery.endpointRegistry.encryptionKey)] as Resource).Properties.EnableKeyRotation).toBe(true);
    });

    it('is protected from deletion (DynamoDB deletion protection), unless turned off', () => {
      const on = build();
      const off = build({ deletionProtection: false });
      const table = (built: typeof on) => template(built).Resources[built.ref(built.delivery.endpointRegistry.table)] as Resource;
      const template = (built: typeof on) => built.template.toJSON();

      expect(table(on).Properties.DeletionProtectionEnabled).toBe(true);
      expect(table(off).Properties.DeletionProtectionEnabled).toBe(false);
    });

    it('is retained with its key, like the ledger, when the stack is deleted or the table replaced', () => {
      const { template, delivery, ref } = build();
      const all = template.toJSON().Resources as Record<string, { DeletionPolicy?: string; UpdateReplacePolicy?: string }>;

      for (const id of [ref(delivery.endpointRegistry.table), ref(delivery.endpointRegistry.encryptionKey)]) {
        expect(all[id]).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
      }
    });

    it('names the table to the consumer', () => {
      const { template, delivery, ref } = build();

      template.hasResourceProperties('AWS::Lambda::Function', {
        Environment: { Variables: Match.objectLike({ [RESOURCE_ENV.endpointsTable]: { Ref: ref(delivery.endpointRegistry.table) } }) },
      });
    });
  });

  describe('permissions', () => {
    it('lets the consumer read the registry (Scan, GetItem, BatchGetItem; Query on the change index alone), update items (health) and use its key, and nothing more', () => {
      const { template, delivery, ref } = build();
      const consumer = statementsOf(template, /ConsumerRole/);
      const tableArn = { 'Fn::GetAtt': [ref(delivery.endpointRegistry.table), 'Arn'] };
      const keyArn = { 'Fn::GetAtt': [ref(delivery.endpointRegistry.encryptionKey), 'Arn'] };

      expect(actionsOn(consumer, tableArn)).toEqual(['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:UpdateItem']);
      expect(actionsOn(consumer, { 'Fn::Join': ['', [tableArn, '/index/changes']] })).toEqual(['dynamodb:Query']);
      expect(actionsOn(consumer, keyArn)).toEqual(['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey']);
    });

    it('gives the consumer no way to create, replace or delete a registry item: its one write is UpdateItem (health)', () => {
      const { template, delivery, ref } = build({ declare: (stack) => [acme(stack)] });
      const consumer = statementsOf(template, /ConsumerRole/);
      const registry = [ref(delivery.endpointRegistry.table), ref(delivery.endpointRegistry.encryptionKey)];
      const onRegistry = consumer.filter((s) => registry.some((id) => JSON.stringify(s.Resource).includes(id)));
      const writes = ['dynamodb:PutItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];

      expect(onRegistry.length).toBeGreaterThan(0);
      for (const statement of onRegistry) {
        expect([statement.Action].flat().filter((action) => writes.includes(action) || action.includes('*'))).toEqual([]);
      }
    });

    it('lets the seed function write only UpdateItem on the table and use only the registry key, one function for every seed', () => {
      const { template, delivery, ref } = build({ declare: (stack) => [acme(stack)] });
      const seed = statementsOf(template, /SeedRole/);
      const tableArn = { 'Fn::GetAtt': [ref(delivery.endpointRegistry.table), 'Arn'] };
      const keyArn = { 'Fn::GetAtt': [ref(delivery.endpointRegistry.encryptionKey), 'Arn'] };
      const logs = seed.filter((s) => [s.Action].flat().every((action) => action.startsWith('logs:')));
      const seedFunctions = resources(template, 'AWS::Lambda::Function').filter(([id]) => id.includes('SeedFunction'));

      expect(actionsOn(seed, tableArn)).toEqual(['dynamodb:UpdateItem']);
      expect(actionsOn(seed, keyArn)).toEqual(['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey']);
      expect(seed.length - logs.length).toBe(2);
      expect(logs.map((s) => s.Resource)).toEqual([{ 'Fn::GetAtt': [expect.stringMatching(/SeedLogs/), 'Arn'] }]);
      // Both seeds (default and carrier-acme) run on the one function, whose role this is.
      expect(seedFunctions).toHaveLength(1);
      for (const { resource } of seeds(template).values()) {
        expect(resource.Properties.ServiceToken).toEqual({ 'Fn::GetAtt': [seedFunctions[0]![0], 'Arn'] });
      }
      expect(seedFunctions[0]![1].Properties).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'], Role: { 'Fn::GetAtt': [expect.stringMatching(/SeedRole/), 'Arn'] } });
    });

    it('attaches no managed policy to the seed function role (nor to the consumer, recovery, API and portal authorizer roles)', () => {
      const { template } = build();
      const roles = resources(template, 'AWS::IAM::Role');

      expect(roles).toHaveLength(5);
      for (const [, role] of roles) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    });

    it('grants an operator role exactly what `handoff endpoint` needs', () => {
      const { template, delivery, ref } = build({
        then: (stack, d) => d.endpointRegistry.grantEndpointAdmin(new iam.Role(stack, 'Operator', { assumedBy: new iam.AccountRootPrincipal() })),
      });
      const statements = statementsOf(template, /Operator/);

      expect(actionsOn(statements, { 'Fn::Join': ['', [{ 'Fn::GetAtt': [ref(delivery.endpointRegistry.table), 'Arn'] }, '/index/owners']] })).toEqual(['dynamodb:Query']);
      expect(actionsOn(statements, { 'Fn::GetAtt': [ref(delivery.endpointRegistry.table), 'Arn'] })).toEqual([
        'dynamodb:BatchGetItem',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:Scan',
        'dynamodb:UpdateItem',
      ]);
      expect(actionsOn(statements, { 'Fn::GetAtt': [ref(delivery.endpointRegistry.encryptionKey), 'Arn'] })).toEqual([
        'kms:Decrypt',
        'kms:Encrypt',
        'kms:GenerateDataKey',
      ]);
    });

    it("lets the consumer read each declared endpoint's secret, by its ARN", () => {
      const { template } = build({ declare: (stack) => [acme(stack)] });

      expect(statementsOf(template, /ConsumerRole/)).toEqual(
        expect.arrayContaining([expect.objectContaining({ Action: 'secretsmanager:GetSecretValue', Resource: ACME_SECRET_ARN })]),
      );
    });

    it("lets the consumer read a declared rotation's previous secret too, by its ARN, and seeds it as the ARN", () => {
      const previousArn = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:handoff-acme-old-GhIjKl';
      const { template } = build({
        declare: (stack) => [
          acme(stack, {
            previousSecret: Secret.fromSecretCompleteArn(stack, 'AcmeOldSecret', previousArn),
            previousSecretUntil: 1_900_000_000_000,
          }),
        ],
      });

      expect(statementsOf(template, /ConsumerRole/)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ Action: 'secretsmanager:GetSecretValue', Resource: ACME_SECRET_ARN }),
          expect.objectContaining({ Action: 'secretsmanager:GetSecretValue', Resource: previousArn }),
        ]),
      );
      expect(JSON.stringify(seeds(template).get('carrier-acme')?.call)).toContain(previousArn);
    });

    it('refuses a declared previous secret that is not a Secrets Manager secret, naming the field', () => {
      const declare = (stack: Stack) => [acme(stack, { previousSecret: 'whsec_AAAA' as never, previousSecretUntil: 1_900_000_000_000 })];

      expect(() => build({ declare })).toThrow(/previousSecret must be a Secrets Manager secret/);
    });

    it('passes the AwsSolutions rules with declared endpoints, and acknowledges nothing new', () => {
      const { stack } = build({ declare: (s) => [acme(s), { name: 'unsigned', url: 'https://u.example.com/', eventTypes: ['*'] }] });
      const acknowledged = stack.node
        .findAll()
        .flatMap((c) => c.node.metadata)
        .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
        .flatMap((m) => Object.keys(m.data as Record<string, string>));

      expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
      // The construct's own (test/infra/webhook-delivery.test.ts, cdk-nag: the API role's
      // GetMetricData and the consumer role's X-Ray writes on Resource *, the signing secret's and the
      // seal key's SMG4, the dead-letter queue's SQS3, the portal API's two console routes' APIG4),
      // none for the endpoints nor their seed function.
      expect(acknowledged.sort()).toEqual([
        'Annotation::AwsSolutions-APIG4',
        'Annotation::AwsSolutions-APIG4',
        'Annotation::AwsSolutions-IAM5[Resource::*]',
        'Annotation::AwsSolutions-IAM5[Resource::*]',
        'Annotation::AwsSolutions-SMG4',
        'Annotation::AwsSolutions-SMG4',
        'Annotation::AwsSolutions-SQS3',
      ]);
    });
  });

  describe('seeding', () => {
    it('seeds the single-URL settings as the endpoint default, subscribed to every type, signed with the stack secret by ARN', () => {
      const { template, delivery, ref } = build();
      const seed = seeds(template).get('default');
      const call = JSON.stringify(seed?.call);

      expect([...seeds(template).keys()]).toEqual(['default']);
      expect(call).toContain(
        `\\":fields\\":{\\"M\\":{\\"name\\":{\\"S\\":\\"default\\"},\\"url\\":{\\"S\\":\\"${WEBHOOK_URL}\\"},\\"eventTypes\\":{\\"L\\":[{\\"S\\":\\"*\\"}]},\\"secret\\":{\\"S\\":\\"",{"Ref":"${ref(delivery.signingSecret as Secret)}"},"\\"}}}`,
      );
    });

    it('seeds a declared endpoint with every field it declares, its secret by ARN', () => {
      const { template, delivery, ref } = build({ declare: (stack) => [acme(stack)] });
      const refs = { [ref(delivery.endpointRegistry.table)]: 'handoff-endpoints' };
      const call = JSON.parse(resolveIntrinsics(seeds(template).get('carrier-acme')?.call, refs)) as UpdateItemCommandInput;

      expect(call.ExpressionAttributeValues?.[':fields']).toEqual({
        M: {
          name: { S: 'carrier-acme' },
          url: { S: 'https://acme.example.com/hooks' },
          eventTypes: { L: [{ S: 'shipment.delivered' }, { S: 'shipment.exception' }] },
          match: { M: { 'data.carrier': { L: [{ S: 'acme' }, { S: 'zephyr' }] }, 'data.priority': { L: [{ N: '1' }, { BOOL: true }] } } },
          secret: { S: ACME_SECRET_ARN },
          retrySchedule: { L: [{ N: '10' }, { N: '60' }] },
          maxAttempts: { N: '3' },
          recovery: { S: 'drop' },
        },
      });
    });

    it('marks the seed as a change consumers must see, and brings back a removed endpoint over its tombstone', () => {
      const { template, delivery, ref } = build();
      const refs = { [ref(delivery.endpointRegistry.table)]: 'handoff-endpoints', ...secretRefs(template) };
      const call = JSON.parse(resolveIntrinsics(seeds(template).get('default')?.call, refs)) as UpdateItemCommandInput;

      expect(call.UpdateExpression).toContain('#changedAt = :now, #feed = :feed');
      expect(call.UpdateExpression).toMatch(/ REMOVE #removedAt, #expiresAt, #owner$/);
      expect(call.ExpressionAttributeValues?.[':feed']).toEqual({ S: CHANGE_FEED });
      expect(call.ExpressionAttributeNames).toMatchObject({ '#changedAt': 'changedAt', '#feed': 'feed', '#removedAt': 'removedAt', '#expiresAt': 'expiresAt' });
    });

    it('never resets state or creation time, and applies fields only where the declaration changed', () => {
      const { template, delivery, ref } = build();
      const refs = { [ref(delivery.endpointRegistry.table)]: 'handoff-endpoints', ...secretRefs(template) };
      const call = JSON.parse(resolveIntrinsics(seeds(template).get('default')?.call, refs)) as UpdateItemCommandInput;

      expect(call.UpdateExpression).toContain('#state = if_not_exists(#state, :enabled)');
      expect(call.UpdateExpression).toContain('#createdAt = if_not_exists(#createdAt, :now)');
      expect(call.ConditionExpression).toBe('attribute_not_exists(#declared) OR #declared <> :declared');
      expect(call.ExpressionAttributeNames).toMatchObject({ '#state': 'state', '#declared': DECLARED_ATTRIBUTE });
    });

    it('holds no time in the template: the seed function stamps the write when it runs, unless a time is given', () => {
      const unstamped = build().template;
      const fixed = build({ endpointsSeededAt: 1_700_000_000_000 }).template;

      expect(JSON.stringify(seeds(unstamped).get('default')?.call)).not.toContain(':now\\\":');
      expect(seeds(unstamped).get('default')?.resource.Properties).not.toHaveProperty('SeededAt');
      expect(seeds(fixed).get('default')?.resource.Properties.SeededAt).toBe('1700000000000');
    });

    it('synthesizes the same template at every synth, declared endpoints and all', () => {
      const declare = (stack: Stack) => [acme(stack)];

      const first = build({ declare }).template.toJSON();
      const second = build({ declare }).template.toJSON();

      expect(second).toEqual(first);
    });

    it('does not delete an endpoint when its declaration goes (a Delete does nothing)', async () => {
      const { template } = build({ declare: (stack) => [acme(stack)] });
      const handler = seedHandler(template);
      const responses = await respondent();

      try {
        const outcome = await handler({ ...cfnEvent(responses.url, 'Delete'), PhysicalResourceId: 'endpoint:carrier-acme', ResourceProperties: { Endpoint: 'carrier-acme', Call: '{}' } });

        expect(outcome).toBe('nothing to do');
        expect(await responses.next()).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'endpoint:carrier-acme' });
      } finally {
        await responses.close();
      }
    });

    it('deploys the consumer only after every seed, so it never routes against a registry without them', () => {
      const { template } = build({ declare: (stack) => [acme(stack)] });
      const [[, consumer]] = resources(template, 'AWS::Lambda::Function').filter(([id]) => id.includes('DeliveryConsumer')) as [[string, Resource]];

      expect(consumer.DependsOn).toEqual(expect.arrayContaining([...seeds(template).values()].map((seed) => seed.id)));
    });

    it('seeds the declared endpoints alone when there is no webhook URL, with no secret generated', () => {
      const app = testApp();
      const stack = new Stack(app, 'TestStack');
      const delivery = new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, settings: {}, endpoints: [acme(stack)] });
      const template = Template.fromStack(stack);
      const fn = resources(template, 'AWS::Lambda::Function').find(([id]) => id.includes('DeliveryConsumer'))?.[1];

      expect([...seeds(template).keys()]).toEqual(['carrier-acme']);
      // None generated for signing: the stack's one secret is the seal key.
      expect(resources(template, 'AWS::SecretsManager::Secret').map(([id]) => id)).toEqual([stack.getLogicalId(delivery.sealKey.node.defaultChild as never)]);
      expect(fn?.Properties.Environment.Variables).not.toHaveProperty('HANDOFF_WEBHOOK_URL');
    });
  });

  describe('no secret in the template', () => {
    it('holds no whsec_ value and no secret value, with a generated secret, an imported one and declared endpoints', () => {
      const { app } = build({
        declare: (stack) => [acme(stack), { name: 'named', url: 'https://n.example.com/', eventTypes: ['*'], secret: Secret.fromSecretNameV2(stack, 'Named', 'handoff-named') }],
      });
      const text = JSON.stringify(app.synth().getStackByName('TestStack').template);

      // `whsec_` itself appears in the generated secret's description; never followed by a key.
      expect(text).not.toMatch(/whsec_[A-Za-z0-9+/=]{8,}/);
      expect(text).toContain(ACME_SECRET_ARN);
      // No secret is created with a value (only generated), and no secret is granted to all.
      expect(text).not.toContain('"SecretString":');
      expect(text).not.toContain('"Action":"secretsmanager:GetSecretValue","Effect":"Allow","Resource":"*"');
    });

    it('refuses a signing secret given as a value, naming the endpoint and the field and not showing it', () => {
      const value = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
      const act = () => build({ declare: (stack) => [acme(stack, { secret: value as unknown as ISecret })] });

      expect(act).toThrow(EndpointError);
      expect(act).toThrow(/^endpoint "carrier-acme": secret must be a Secrets Manager secret/);
      expect(act).not.toThrow(/MfKQ9r8/);
    });
  });

  describe('synth-time checks', () => {
    it.each<[string, Partial<EndpointDeclaration>, RegExp]>([
      ['an unknown event type', { eventTypes: ['shipment.lost'] }, /^endpoint "carrier-acme": eventTypes holds "shipment.lost"/],
      ['a plain-http URL', { url: 'http://acme.example.com/hooks' }, /^endpoint "carrier-acme": url is refused/],
      ['a private address', { url: 'https://10.0.0.8/hooks' }, /^endpoint "carrier-acme": url is refused/],
      ['an attempt timeout past the deployment\'s', { attemptTimeoutMs: 60_000 }, /^endpoint "carrier-acme": attemptTimeoutMs must be at most the deployment's attemptTimeoutMs \(10000\)/],
      ['a bad match key', { match: { carrier: ['acme'] } }, /^endpoint "carrier-acme": match.carrier is not a field to match/],
      ['an unknown recovery', { recovery: 'retry' as never }, /^endpoint "carrier-acme": recovery must be one of review, drop/],
      ['a schedule past the queue retention', { retrySchedule: [43_200], maxAttempts: 40 }, /^endpoint "carrier-acme": retrySchedule\/maxAttempts waits add up to/],
      ['a receiver retention within the retry window', { receiverRetentionSeconds: 60 }, /^endpoint "carrier-acme": receiverRetentionSeconds must exceed the retry window/],
      ['a bad name', { name: 'Carrier_Acme' }, /^endpoint "Carrier_Acme": name must be 1–64 characters of a-z 0-9 -/],
    ])('refuses %s, naming the endpoint and the field', (_case, overrides, message) => {
      const act = () => build({ declare: (stack) => [acme(stack, overrides)] });

      expect(act).toThrow(EndpointError);
      expect(act).toThrow(message);
    });

    it('checks a declared endpoint against the deployment it is in (allowHttp)', () => {
      const { template } = build({
        settings: { allowHttp: true },
        declare: (stack) => [acme(stack, { url: 'http://acme.example.com/hooks' })],
      });

      expect(seeds(template).has('carrier-acme')).toBe(true);
    });

    it('refuses two endpoints of one name, and a declared default beside the webhook URL', () => {
      expect(() => build({ declare: (stack) => [acme(stack), acme(stack, { secret: undefined })] })).toThrow(
        /^endpoint "carrier-acme": name is declared twice$/,
      );
      expect(() => build({ declare: () => [{ name: 'default', url: 'https://d.example.com/', eventTypes: ['*'] }] })).toThrow(
        /^endpoint "default": name is declared twice \(the single-URL settings, webhookUrl, declare "default"\)$/,
      );
    });

    it('still requires a webhook URL when no endpoint is declared', () => {
      const app = testApp();

      expect(() => new WebhookDelivery(new Stack(app, 'S'), 'D', { entry: STAND_IN_ENTRY, settings: {}, endpoints: [] })).toThrow(
        /^webhookUrl is required unless `endpoints` declares some/,
      );
    });
  });

  describe('declared headers', () => {
    const TOKEN_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-token-GhIjKl';

    /** Every role's statements that grant GetSecretValue, by the role's logical ID. */
    function secretReads(template: Template): [string, Statement][] {
      return resources(template, 'AWS::IAM::Policy').flatMap(([, policy]) =>
        (policy.Properties.PolicyDocument.Statement as Statement[])
          .filter((s) => [s.Action].flat().includes('secretsmanager:GetSecretValue'))
          .flatMap((s) => (policy.Properties.Roles as { Ref: string }[]).map((r): [string, Statement] => [r.Ref, s])),
      );
    }

    it("seeds a header's secret value as its ARN, and lets the consumer alone read that ARN, and nothing wider", () => {
      const { template, delivery, ref } = build({
        declare: (stack) => [acme(stack, { headers: { 'X-Tenant': 'acme', Authorization: { secretArn: TOKEN_ARN } } })],
      });
      const refs = { [ref(delivery.endpointRegistry.table)]: 'handoff-endpoints' };
      const call = JSON.parse(resolveIntrinsics(seeds(template).get('carrier-acme')?.call, refs)) as UpdateItemCommandInput;
      const reads = secretReads(template).filter(([, s]) => JSON.stringify(s.Resource).includes('acme-token'));

      expect(call.ExpressionAttributeValues?.[':fields']?.M?.headers).toEqual({ M: { 'X-Tenant': { S: 'acme' }, Authorization: { M: { secretArn: { S: TOKEN_ARN } } } } });
      expect(reads).toHaveLength(1);
      expect(reads[0]![0]).toMatch(/ConsumerRole/);
      expect(reads[0]![1]).toMatchObject({ Sid: 'EndpointHeaderSecretRead', Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: TOKEN_ARN });
    });

    it('grants each header secret once, however many headers and endpoints name it, beside each signing secret', () => {
      const { template } = build({
        declare: (stack) => [
          acme(stack, { headers: { Authorization: { secretArn: TOKEN_ARN }, 'X-Api-Key': { secretArn: ACME_SECRET_ARN.replace('handoff-acme', 'acme-key') } } }),
          { name: 'zephyr', url: 'https://zephyr.example.com/', eventTypes: ['*'], headers: { Authorization: { secretArn: TOKEN_ARN } } },
        ],
      });
      const [statement, ...others] = statementsOf(template, /ConsumerRole/).filter((s) => s.Sid === 'EndpointHeaderSecretRead');

      expect(others).toEqual([]);
      expect([statement?.Resource].flat().sort()).toEqual(['arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-key-AbCdEf', TOKEN_ARN]);
      expect(statementsOf(template, /ConsumerRole/)).toEqual(
        expect.arrayContaining([expect.objectContaining({ Action: 'secretsmanager:GetSecretValue', Resource: ACME_SECRET_ARN })]),
      );
    });

    it('adds no header statement for plain header values', () => {
      const { template } = build({ declare: (stack) => [acme(stack, { headers: { 'X-Tenant': 'acme' } })] });

      expect(statementsOf(template, /ConsumerRole/).map((s) => s.Sid)).not.toContain('EndpointHeaderSecretRead');
    });

    it("takes a secret of the stack by its deploy-time ARN, seeded and granted by reference", () => {
      let token: Secret | undefined;
      const { template, stack } = build({
        declare: (s) => {
          token = new Secret(s, 'AcmeToken');
          return [acme(s, { headers: { Authorization: { secretArn: token.secretArn } } })];
        },
      });
      const tokenRef = { Ref: stack.getLogicalId(token!.node.defaultChild as never) };

      expect(JSON.stringify(seeds(template).get('carrier-acme')?.call)).toContain(`\\"Authorization\\":{\\"M\\":{\\"secretArn\\":{\\"S\\":\\"",${JSON.stringify(tokenRef)}`);
      expect(statementsOf(template, /ConsumerRole/)).toEqual(
        expect.arrayContaining([expect.objectContaining({ Sid: 'EndpointHeaderSecretRead', Resource: tokenRef })]),
      );
    });

    it.each([
      ['a value', 'Bearer tok_Zq81vXr2'],
      ['a value encrypted already', 'encrypted:local:tok_Zq81vXr2'],
    ])("refuses a header's secret given as %s, naming the endpoint and the header, without showing it", (_case, value) => {
      const act = () => build({ declare: (stack) => [acme(stack, { headers: { 'X-Tenant': 'acme', Authorization: { secret: value } } })] });

      expect(act).toThrow(EndpointError);
      expect(act).toThrow(
        /^endpoint "carrier-acme": headers\.Authorization must be \{"secretArn": …\}, the complete ARN of a Secrets Manager secret holding the value, never \{"secret": …\}: a value would land in the template \(the value is not shown\)$/,
      );
      expect(act).not.toThrow(/tok_Zq81/);
    });

    it("refuses a header's partial secret ARN (the consumer could not be granted it), naming the header", () => {
      const act = () => build({ declare: (stack) => [acme(stack, { headers: { Authorization: { secretArn: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-token' } } })] });

      expect(act).toThrow(EndpointError);
      expect(act).toThrow(/^endpoint "carrier-acme": headers\.Authorization must name its secret by the complete ARN/);
    });

    it('refuses a header the request sets itself, naming it, as the registry does', () => {
      expect(() => build({ declare: (stack) => [acme(stack, { headers: { 'Webhook-Id': 'x' } })] })).toThrow(/^endpoint "carrier-acme": headers\.Webhook-Id is refused/);
    });

    it('passes the AwsSolutions rules with a header secret declared', () => {
      const { stack } = build({ declare: (s) => [acme(s, { headers: { Authorization: { secretArn: TOKEN_ARN } } })] });

      expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
    });
  });

  describe('the seed call, run against DynamoDB (dynalite)', () => {
    let dynalite: Dynalite;
    let client: DynamoDBClient;
    const TABLE = 'handoff-endpoints-seed-test';

    beforeAll(async () => {
      dynalite = await startDynalite();
      client = emulatorDynamoDbClient(dynalite.endpoint);
      await createEndpointsTable(client, TABLE);
    });

    afterAll(async () => {
      client.destroy();
      await dynalite.close();
    });

    /**
     * The UpdateItem a deploy makes for `declaration` at `seededAt`, as synthesized, with CloudFormation's
     * Refs filled in and `:now` set as the seed function sets it.
     */
    function seedCall(declaration: EndpointDeclaration, seededAt: number): UpdateItemCommandInput {
      const app = testApp();
      const stack = new Stack(app, 'SeedStack');
      const registry = new EndpointRegistry(stack, 'Endpoints', { deployment: DEFAULT_SETTINGS, seededAt });
      registry.seed(declaration);
      const template = Template.fromStack(stack);
      const [seed] = [...seeds(template).values()];
      const refs = { [stack.getLogicalId(registry.table.node.defaultChild as never)]: TABLE };
      const call = JSON.parse(resolveIntrinsics(seed?.call, refs)) as UpdateItemCommandInput;
      return { ...call, ExpressionAttributeValues: { ...call.ExpressionAttributeValues, ':now': { N: String(seed?.resource.Properties.SeededAt) } } };
    }

    async function deploy(call: UpdateItemCommandInput): Promise<'applied' | 'unchanged'> {
      try {
        await client.send(new UpdateItemCommand(call));
        return 'applied';
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return 'unchanged';
        throw error;
      }
    }

    const registry = () => new DynamoDbEndpointRegistry({ client, tableName: TABLE });
    const declared = (name: string, url: string): EndpointDeclaration => ({ name, url, eventTypes: ['shipment.delivered'], maxAttempts: 4 });

    it('creates the endpoint enabled, readable by the registry as the consumer reads it', async () => {
      expect(await deploy(seedCall(declared('created', 'https://partner.example.com/v1'), 1_000))).toBe('applied');

      expect(await registry().get('created')).toEqual({
        fields: { name: 'created', url: 'https://partner.example.com/v1', eventTypes: ['shipment.delivered'], maxAttempts: 4 },
        state: 'enabled',
        createdAt: 1_000,
        updatedAt: 1_000,
      });
    });

    it("keeps an operator's disable and field changes through a deploy that does not change the declaration", async () => {
      await deploy(seedCall(declared('kept', 'https://partner.example.com/v1'), 1_000));
      const current = (await registry().get('kept'))!;
      await registry().setState('kept', 'disabled', { by: 'ops', reason: 'receiver down', at: 2_000 });
      await registry().update({ ...current.fields, maxAttempts: 5 }, 2_000, 2_500);

      expect(await deploy(seedCall(declared('kept', 'https://partner.example.com/v1'), 3_000))).toBe('unchanged');

      const record = await registry().get('kept');
      expect(record).toMatchObject({ state: 'disabled', stateChange: { by: 'ops', reason: 'receiver down', at: 2_000 }, createdAt: 1_000, updatedAt: 2_500 });
      expect(record?.fields.maxAttempts).toBe(5);
    });

    it('applies a changed declaration and still keeps the state and creation time', async () => {
      await deploy(seedCall(declared('changed', 'https://partner.example.com/v1'), 1_000));
      await registry().setState('changed', 'disabled', { by: 'auto', reason: 'no accepted request in 259200 s', at: 2_000 });

      expect(await deploy(seedCall(declared('changed', 'https://partner.example.com/v2'), 4_000))).toBe('applied');

      const record = await registry().get('changed');
      expect(record).toMatchObject({ state: 'disabled', createdAt: 1_000, updatedAt: 4_000 });
      expect(record?.fields).toEqual({ name: 'changed', url: 'https://partner.example.com/v2', eventTypes: ['shipment.delivered'], maxAttempts: 4 });
    });

    describe('by the seed function as the template inlines it', () => {
      const saved: Record<string, string | undefined> = {};
      const env = { AWS_ENDPOINT_URL_DYNAMODB: '', AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' };

      beforeAll(() => {
        for (const [name, value] of Object.entries({ ...env, AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint })) {
          saved[name] = process.env[name];
          process.env[name] = value;
        }
      });

      afterAll(() => {
        for (const [name, value] of Object.entries(saved)) {
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
      });

      /** The seed function and a Create or Update event for `declaration`'s resource, as CloudFormation sends it. */
      function deployable(declaration: EndpointDeclaration, seededAt?: number) {
        const app = testApp();
        const stack = new Stack(app, 'SeedStack');
        const registry = new EndpointRegistry(stack, 'Endpoints', { deployment: DEFAULT_SETTINGS, ...(seededAt !== undefined ? { seededAt } : {}) });
        registry.seed(declaration);
        const template = Template.fromStack(stack);
        const [seed] = [...seeds(template).values()];
        const refs = { [stack.getLogicalId(registry.table.node.defaultChild as never)]: TABLE };
        const properties = { ...seed!.resource.Properties, Call: resolveIntrinsics(seed!.call, refs) };
        return { handler: seedHandler(template), properties };
      }

      it('stamps a new endpoint with the time it runs, answers CloudFormation SUCCESS, then leaves it alone while the declaration is unchanged', async () => {
        const { handler, properties } = deployable(declared('stamped', 'https://partner.example.com/v1'));
        const responses = await respondent();
        try {
          const before = Date.now();
          const created = await handler({ ...cfnEvent(responses.url, 'Create'), ResourceProperties: properties });
          const after = Date.now();
          const first = await responses.next();
          const again = await handler({ ...cfnEvent(responses.url, 'Update'), PhysicalResourceId: 'endpoint:stamped', ResourceProperties: properties });
          const second = await responses.next();

          expect(created).toBe('applied');
          expect(first).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: 'endpoint:stamped', RequestId: 'req-1', LogicalResourceId: 'Seed', StackId: 'stack-1' });
          const record = await registry().get('stamped');
          expect(record).toMatchObject({ state: 'enabled' });
          expect(record!.createdAt).toBeGreaterThanOrEqual(before);
          expect(record!.createdAt).toBeLessThanOrEqual(after);
          expect(record!.updatedAt).toBe(record!.createdAt);
          // The declaration already applied: DynamoDB refuses the condition, the seed succeeds and writes nothing.
          expect(again).toBe('unchanged');
          expect(second).toMatchObject({ Status: 'SUCCESS' });
          expect(await registry().get('stamped')).toEqual(record);
        } finally {
          await responses.close();
        }
      });

      it('stamps the time given (endpointsSeededAt) instead of its clock', async () => {
        const { handler, properties } = deployable(declared('given-time', 'https://partner.example.com/v1'), 7_000);
        const responses = await respondent();
        try {
          await handler({ ...cfnEvent(responses.url, 'Create'), ResourceProperties: properties });
          await responses.next();

          expect(await registry().get('given-time')).toMatchObject({ createdAt: 7_000, updatedAt: 7_000 });
        } finally {
          await responses.close();
        }
      });

      it('answers FAILED with the error when the write fails, so the deploy stops', async () => {
        const { handler, properties } = deployable(declared('no-table', 'https://partner.example.com/v1'));
        const call = JSON.parse(properties.Call as string) as UpdateItemCommandInput;
        const responses = await respondent();
        try {
          const outcome = await handler({ ...cfnEvent(responses.url, 'Create'), ResourceProperties: { ...properties, Call: JSON.stringify({ ...call, TableName: 'no-such-table' }) } });

          expect(outcome).toBe('failed');
          expect(await responses.next()).toMatchObject({ Status: 'FAILED', Reason: expect.stringMatching(/^ResourceNotFoundException: /), PhysicalResourceId: 'endpoint:no-table' });
        } finally {
          await responses.close();
        }
      });
    });

    it("seeds a header's secret value as its ARN, which the registry reads back as the consumer will", async () => {
      const arn = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-token-GhIjKl';
      const declaration = { ...declared('with-headers', 'https://partner.example.com/v1'), headers: { 'X-Tenant': 'acme', Authorization: { secretArn: arn } } };

      expect(await deploy(seedCall(declaration, 1_000))).toBe('applied');
      expect((await registry().get('with-headers'))?.fields.headers).toEqual({ 'X-Tenant': 'acme', Authorization: { secretArn: arn } });
    });

    it('puts back a declared endpoint an operator removed, enabled', async () => {
      await deploy(seedCall(declared('removed', 'https://partner.example.com/v1'), 1_000));
      await registry().remove('removed');

      expect(await deploy(seedCall(declared('removed', 'https://partner.example.com/v1'), 5_000))).toBe('applied');
      expect(await registry().get('removed')).toMatchObject({ state: 'enabled', createdAt: 5_000, updatedAt: 5_000 });
    });
  });
});

/** Refs to the stack's secrets, as CloudFormation resolves them (a secret's Ref is its ARN). */
function secretRefs(template: Template): Record<string, string> {
  return Object.fromEntries(
    Object.keys(template.findResources('AWS::SecretsManager::Secret')).map((id) => [id, `arn:aws:secretsmanager:eu-west-1:111122223333:secret:${id}-AbCdEf`]),
  );
}

/** A custom-resource event as CloudFormation sends one to the seed function. */
function cfnEvent(responseUrl: string, requestType: 'Create' | 'Update' | 'Delete'): Record<string, unknown> {
  return { RequestType: requestType, ResponseURL: responseUrl, StackId: 'stack-1', RequestId: 'req-1', LogicalResourceId: 'Seed', ResourceType: 'Custom::HandoffEndpoint' };
}

/** A loopback stand-in for CloudFormation's response URL: each PUT's JSON body, in order. */
async function respondent(): Promise<{ url: string; next(): Promise<Record<string, unknown>>; close(): Promise<void> }> {
  const bodies: Record<string, unknown>[] = [];
  const waiting: ((body: Record<string, unknown>) => void)[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    request.on('end', () => {
      expect(request.method).toBe('PUT');
      const body = JSON.parse(text) as Record<string, unknown>;
      const taker = waiting.shift();
      if (taker) taker(body);
      else bodies.push(body);
      response.end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/response?X-Amz-Signature=stand-in`,
    next: () => (bodies.length > 0 ? Promise.resolve(bodies.shift()!) : new Promise((resolve) => waiting.push(resolve))),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
