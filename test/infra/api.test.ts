/**
 * The management API as the WebhookDelivery construct deploys it (docs/contract.md §16,
 * infra/delivery/api.ts), one behaviour per test, asserted on the synthesized template with `Match`
 * (never by logical ID). Bundling is skipped; the functions' entries are the stand-in.
 */
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../api/routes/index';
import { apiAuthFromContext, HandoffStack } from '../../infra/app';
import {
  ACCESS_LOG_FIELDS,
  API_ROUTE_KEYS,
  DEFAULT_API_THROTTLE,
  WebhookDelivery,
  type WebhookDeliveryProps,
} from '../../infra/webhook-delivery';
import { API_LEDGER_ACTIONS } from '../../infra/delivery/grants';
import { DEFAULT_SETTINGS, RESOURCE_ENV, SETTING_VARIABLES } from '../../lib/config';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import { REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';
import { STACK_OUTPUTS } from '../../lib/stack-outputs';
import { testApp, WARM_UP_MS, STAND_IN_ENTRY, WEBHOOK_URL } from './cdk-context';

interface Built {
  readonly stack: Stack;
  readonly delivery: WebhookDelivery;
  readonly template: Template;
}

function build(props: Partial<WebhookDeliveryProps> = {}): Built {
  const app = testApp();
  const stack = new Stack(app, 'TestStack');
  const delivery = new WebhookDelivery(stack, 'Delivery', {
    entry: STAND_IN_ENTRY,
    apiEntry: STAND_IN_ENTRY,
    ...props,
    settings: { webhookUrl: WEBHOOK_URL, ...props.settings },
  });
  return { stack, delivery, template: Template.fromStack(stack) };
}

type HasResource = { node: { defaultChild?: unknown } };
type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Sid?: string; Condition?: unknown };

const ref = (built: Built, construct: HasResource) => ({ Ref: built.stack.getLogicalId(construct.node.defaultChild as never) });
const att = (built: Built, construct: HasResource, attribute = 'Arn') => ({
  'Fn::GetAtt': [built.stack.getLogicalId(construct.node.defaultChild as never), attribute],
});

/** The routes of one API: route key → authorization type. */
function routesOf(built: Built, api: HasResource): Record<string, string> {
  const apiRef = ref(built, api);
  return Object.fromEntries(
    Object.values(built.template.findResources('AWS::ApiGatewayV2::Route'))
      .filter((route) => JSON.stringify(route.Properties.ApiId) === JSON.stringify(apiRef))
      .map((route) => [route.Properties.RouteKey as string, route.Properties.AuthorizationType as string]),
  );
}

/** Every statement of the API function's role. */
function apiStatements(built: Built): Statement[] {
  const role = built.stack.getLogicalId(built.delivery.apiFunction.role!.node.defaultChild as never);
  return Object.values(built.template.findResources('AWS::IAM::Policy'))
    .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === role))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
}

/** Statements with each list of resources in one order (the synth orders them by logical ID). */
function normalized(statements: Statement[]): Statement[] {
  const key = (value: unknown) => JSON.stringify(value);
  return statements.map((s) => (Array.isArray(s.Resource) ? { ...s, Resource: [...s.Resource].sort((a, b) => key(a).localeCompare(key(b))) } : s));
}

/** The API function's resource properties. */
function apiFunction(built: Built): Record<string, any> {
  return built.template.toJSON().Resources[built.stack.getLogicalId(built.delivery.apiFunction.node.defaultChild as never)].Properties;
}

describe('WebhookDelivery: the management API', () => {
  beforeAll(() => void build(), WARM_UP_MS);

  describe('routes', () => {
    it('lists in API Gateway exactly the operations the router serves', () => {
      const served = ROUTES.map((route) => `${route.method} ${route.path}`).sort();

      expect([...API_ROUTE_KEYS].sort()).toEqual(served);
    });

    it('deploys one HTTP API with a route per operation and the catch-all, every one behind IAM authorization', () => {
      const built = build();

      built.template.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
      const routes = routesOf(built, built.delivery.api);
      expect(Object.keys(routes).sort()).toEqual([...API_ROUTE_KEYS, '$default'].sort());
      expect(new Set(Object.values(routes))).toEqual(new Set(['AWS_IAM']));
      built.template.allResourcesProperties('AWS::ApiGatewayV2::Route', { AuthorizationType: 'AWS_IAM' });
      built.template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 0);
    });

    it('sends every route to the API function as payload format 2.0, which API Gateway alone may invoke for this API', () => {
      const built = build();
      const fn = att(built, built.delivery.apiFunction);

      built.template.resourceCountIs('AWS::ApiGatewayV2::Integration', 1);
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Integration', {
        IntegrationType: 'AWS_PROXY',
        IntegrationUri: fn,
        PayloadFormatVersion: '2.0',
      });
      const permissions = Object.values(built.template.findResources('AWS::Lambda::Permission')).filter(
        (p) => JSON.stringify(p.Properties.FunctionName) === JSON.stringify(fn),
      );
      expect(permissions).toHaveLength(1);
      expect(permissions[0]!.Properties).toMatchObject({ Action: 'lambda:InvokeFunction', Principal: 'apigateway.amazonaws.com' });
      expect(JSON.stringify(permissions[0]!.Properties.SourceArn)).toContain(JSON.stringify(ref(built, built.delivery.api)));
    });
  });

  describe('stage', () => {
    it('serves the $default stage, deployed on every change', () => {
      const built = build();

      built.template.resourceCountIs('AWS::ApiGatewayV2::Stage', 1);
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { ApiId: ref(built, built.delivery.api), StageName: '$default', AutoDeploy: true });
    });

    it('throttles at 50 requests a second with bursts of 100 by default, and at what apiThrottle says', () => {
      const byDefault = build();
      const custom = build({ apiThrottle: { rateLimit: 5, burstLimit: 10 } });

      expect(DEFAULT_API_THROTTLE).toEqual({ rateLimit: 50, burstLimit: 100 });
      byDefault.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
      });
      custom.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        DefaultRouteSettings: { ThrottlingRateLimit: 5, ThrottlingBurstLimit: 10 },
      });
    });

    it('refuses a throttle API Gateway would not take, naming apiThrottle', () => {
      expect(() => build({ apiThrottle: { rateLimit: 0, burstLimit: 10 } })).toThrow(/^apiThrottle rateLimit must be a number of requests a second above 0/);
      expect(() => build({ apiThrottle: { rateLimit: 5, burstLimit: 1.5 } })).toThrow(/^apiThrottle burstLimit must be a whole number from 1 to 5000, got 1.5$/);
    });

    it('writes a JSON access log to a log group of its own, with the request ID, IP, caller, route, status and latency, and no header, query or body', () => {
      const built = build();
      const stage = Object.values(built.template.findResources('AWS::ApiGatewayV2::Stage'))[0]!;
      const settings = stage.Properties.AccessLogSettings as { DestinationArn: { 'Fn::GetAtt': [string, string] }; Format: string };
      const format = JSON.parse(settings.Format) as Record<string, string>;

      expect(format).toEqual(ACCESS_LOG_FIELDS);
      expect(format).toMatchObject({
        requestId: '$context.requestId',
        ip: '$context.identity.sourceIp',
        caller: '$context.identity.userArn',
        route: '$context.routeKey',
        status: '$context.status',
        latencyMs: '$context.responseLatency',
      });
      for (const variable of Object.values(format)) expect(variable).not.toMatch(/header|querystring|body|path/i);
      const logGroup = built.template.toJSON().Resources[settings.DestinationArn['Fn::GetAtt'][0]];
      expect(logGroup).toMatchObject({ Type: 'AWS::Logs::LogGroup', Properties: { RetentionInDays: 30 } });
    });
  });

  describe('function', () => {
    it('runs functions/api.ts on Node.js 24 on ARM, with a timeout under API Gateway’s 30 s', () => {
      const props = apiFunction(build());

      expect(props).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'], Handler: 'index.handler', Timeout: 28, MemorySize: 512 });
    });

    it('is told the deployment by name and ARN, the seal key by its ARN and never a secret value', () => {
      const built = build();
      const variables = apiFunction(built).Environment.Variables as Record<string, unknown>;

      expect(variables).toEqual({
        [RESOURCE_ENV.ledgerTable]: ref(built, built.delivery.ledgerTable),
        [RESOURCE_ENV.queueUrl]: ref(built, built.delivery.queue),
        [RESOURCE_ENV.deadLetterQueueUrl]: ref(built, built.delivery.deadLetterQueue),
        [RESOURCE_ENV.redriveQueueUrl]: ref(built, built.delivery.redriveQueue),
        [RESOURCE_ENV.orderedQueueUrl]: ref(built, built.delivery.orderedQueue),
        [RESOURCE_ENV.endpointsTable]: ref(built, built.delivery.endpointRegistry.table),
        [RESOURCE_ENV.sealKeyArn]: ref(built, built.delivery.sealKey),
        [RESOURCE_ENV.endpointsKeyArn]: att(built, built.delivery.endpointRegistry.encryptionKey),
        [RESOURCE_ENV.endpointDefaults]: expect.stringMatching(/^\{"retrySchedule":\[/),
        [SETTING_VARIABLES.payloadLimitBytes]: String(DEFAULT_SETTINGS.payloadLimitBytes),
        NODE_OPTIONS: '--enable-source-maps',
      });
    });
  });

  describe('permissions', () => {
    it("grants the API function exactly the command's actions, each on this deployment's resources", () => {
      const built = build();
      const { delivery } = built;
      const ledger = att(built, delivery.ledgerTable);
      const registry = att(built, delivery.endpointRegistry.table);
      const indexOf = (table: unknown, name: string) => ({ 'Fn::Join': ['', [table, `/index/${name}`]] });
      const statements = apiStatements(built);
      const logs = statements.filter((s) => [s.Action].flat().every((a) => a.startsWith('logs:')));

      expect(normalized(statements.filter((s) => !logs.includes(s)))).toEqual(normalized([
        { Sid: 'LedgerReadWrite', Effect: 'Allow', Action: [...API_LEDGER_ACTIONS], Resource: ledger },
        {
          Sid: 'IdempotencyItems',
          Effect: 'Allow',
          Action: ['dynamodb:DeleteItem', 'dynamodb:PutItem'],
          Resource: ledger,
          Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['api-idempotency#*'] } },
        },
        {
          Sid: 'LedgerIndexQuery',
          Effect: 'Allow',
          Action: 'dynamodb:Query',
          Resource: [indexOf(ledger, LEDGER_SCHEMA.listingIndex.name), indexOf(ledger, LEDGER_SCHEMA.shipmentIndex.name)],
        },
        {
          Effect: 'Allow',
          Action: ['dynamodb:BatchGetItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
          Resource: registry,
        },
        { Effect: 'Allow', Action: 'dynamodb:Query', Resource: indexOf(registry, REGISTRY_SCHEMA.ownerIndex.name) },
        { Effect: 'Allow', Action: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'], Resource: att(built, delivery.endpointRegistry.encryptionKey) },
        { Sid: 'QueueSend', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: [att(built, delivery.queue), att(built, delivery.orderedQueue)] },
        {
          Sid: 'QueueDepthRead',
          Effect: 'Allow',
          Action: 'sqs:GetQueueAttributes',
          Resource: [att(built, delivery.queue), att(built, delivery.redriveQueue), att(built, delivery.deadLetterQueue)],
        },
        { Sid: 'SealKeyRead', Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: ref(built, delivery.sealKey) },
        { Sid: 'MetricsRead', Effect: 'Allow', Action: 'cloudwatch:GetMetricData', Resource: '*' },
      ]));
      expect(logs.map((s) => s.Action)).toEqual([['logs:CreateLogStream', 'logs:PutLogEvents']]);
    });

    it('queries no shipment index when the ledger has none', () => {
      const built = build({ settings: { shipmentIndex: false } });
      const ledger = att(built, built.delivery.ledgerTable);

      expect(apiStatements(built).find((s) => s.Sid === 'LedgerIndexQuery')).toEqual({
        Sid: 'LedgerIndexQuery',
        Effect: 'Allow',
        Action: 'dynamodb:Query',
        Resource: { 'Fn::Join': ['', [ledger, `/index/${LEDGER_SCHEMA.listingIndex.name}`]] },
      });
    });

    it('lets a grantee invoke every route of the IAM API, and nothing else (grantApiInvoke)', () => {
      const stack = new Stack(testApp(), 'TestStack');
      const delivery = new WebhookDelivery(stack, 'Delivery', { entry: STAND_IN_ENTRY, apiEntry: STAND_IN_ENTRY, settings: { webhookUrl: WEBHOOK_URL } });
      const caller = new Role(stack, 'Caller', { assumedBy: new AccountRootPrincipal() });
      const built = { stack, delivery, template: undefined as never };

      delivery.grantApiInvoke(caller);
      const template = Template.fromStack(stack);

      template.hasResourceProperties('AWS::IAM::Policy', {
        Roles: [{ Ref: built.stack.getLogicalId(caller.node.defaultChild as never) }],
        PolicyDocument: {
          Statement: [
            {
              Action: 'execute-api:Invoke',
              Effect: 'Allow',
              Resource: {
                'Fn::Join': ['', Match.arrayWith([':execute-api:', ref(built, built.delivery.api), '/*/*/*'])],
              },
            },
          ],
        },
      });
    });
  });

  describe('alarms', () => {
    it('alarms on any 5xx answer of the API and any failed invocation of its function, notifying the alarm topic', () => {
      const built = build();
      const topic = ref(built, built.delivery.alarmTopic as unknown as HasResource);

      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/ApiGateway',
        MetricName: '5xx',
        Dimensions: [{ Name: 'ApiId', Value: ref(built, built.delivery.api) }],
        Statistic: 'Sum',
        Period: 300,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [topic],
        OKActions: [topic],
      });
      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: ref(built, built.delivery.apiFunction) }],
        Statistic: 'Sum',
        Threshold: 0,
        AlarmActions: [topic],
        OKActions: [topic],
      });
      expect(Object.keys(built.delivery.alarms)).toEqual(expect.arrayContaining(['apiServerErrors', 'apiErrors']));
      built.template.resourceCountIs('AWS::CloudWatch::Alarm', Object.keys(built.delivery.alarms).length);
    });
  });

  describe('JWT authorization (apiAuth.jwt)', () => {
    const issuer = 'https://login.example.com/realms/ops';

    it("adds a second API with the same routes, every one behind a JWT authorizer of the issuer and audience; the IAM API's routes stay IAM", () => {
      const built = build({ apiAuth: { jwt: { issuer, audience: ['handoff-api'] } } });
      const jwtApi = built.delivery.jwtApi!;

      built.template.resourceCountIs('AWS::ApiGatewayV2::Api', 2);
      built.template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 1);
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        ApiId: ref(built, jwtApi),
        AuthorizerType: 'JWT',
        IdentitySource: ['$request.header.Authorization'],
        JwtConfiguration: { Issuer: issuer, Audience: ['handoff-api'] },
      });
      const jwtRoutes = routesOf(built, jwtApi);
      expect(Object.keys(jwtRoutes).sort()).toEqual([...API_ROUTE_KEYS, '$default'].sort());
      expect(new Set(Object.values(jwtRoutes))).toEqual(new Set(['JWT']));
      expect(new Set(Object.values(routesOf(built, built.delivery.api)))).toEqual(new Set(['AWS_IAM']));
      // Its own stage, throttled and logged as the other, and its own 5xx alarm.
      built.template.resourceCountIs('AWS::ApiGatewayV2::Stage', 2);
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        ApiId: ref(built, jwtApi),
        DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
        AccessLogSettings: { Format: JSON.stringify(ACCESS_LOG_FIELDS) },
      });
      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: '5xx', Dimensions: [{ Name: 'ApiId', Value: ref(built, jwtApi) }] });
      built.template.resourceCountIs('AWS::Cognito::UserPool', 0);
    });

    it('asks every route of the JWT API for one of the scopes given, and the IAM API for none', () => {
      const built = build({ apiAuth: { jwt: { issuer, audience: ['handoff-api'], scopes: ['handoff/admin', 'handoff/support'] } } });
      const routes = Object.values(built.template.findResources('AWS::ApiGatewayV2::Route')) as { Properties: { ApiId: unknown; AuthorizationScopes?: string[] } }[];
      const onJwt = routes.filter((r) => JSON.stringify(r.Properties.ApiId) === JSON.stringify(ref(built, built.delivery.jwtApi!)));
      const onIam = routes.filter((r) => JSON.stringify(r.Properties.ApiId) === JSON.stringify(ref(built, built.delivery.api)));

      expect(onJwt).toHaveLength(API_ROUTE_KEYS.length + 1);
      for (const route of onJwt) expect(route.Properties.AuthorizationScopes).toEqual(['handoff/admin', 'handoff/support']);
      for (const route of onIam) expect(route.Properties.AuthorizationScopes).toBeUndefined();
      expect(() => build({ apiAuth: { jwt: { issuer, audience: ['a'], scopes: ['two words'] } } })).toThrow(/^apiAuth jwt\.scopes must name at least one scope/);
    });

    it('refuses an issuer that is not an https URL, or an empty audience, naming apiAuth', () => {
      expect(() => build({ apiAuth: { jwt: { issuer: 'http://login.example.com', audience: ['a'] } } })).toThrow(/^apiAuth jwt\.issuer must be an https URL/);
      expect(() => build({ apiAuth: { jwt: { issuer, audience: [] } } })).toThrow(/^apiAuth jwt\.audience must name at least one audience/);
    });

    it('makes a Cognito user pool (no self sign-up, MFA required, strong passwords, Plus tier) and app client, and takes their tokens', () => {
      const built = build({ apiAuth: { jwt: { userPool: true } } });
      const pool = built.delivery.apiUserPool!;
      const client = built.delivery.apiUserPoolClient!;

      built.template.resourceCountIs('AWS::Cognito::UserPool', 1);
      built.template.hasResourceProperties('AWS::Cognito::UserPool', {
        AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
        MfaConfiguration: 'ON',
        EnabledMfas: ['SOFTWARE_TOKEN_MFA'],
        Policies: { PasswordPolicy: Match.objectLike({ MinimumLength: 12, RequireSymbols: true, RequireNumbers: true }) },
        UserPoolTier: 'PLUS',
      });
      built.template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
        UserPoolId: ref(built, pool),
        GenerateSecret: false,
        PreventUserExistenceErrors: 'ENABLED',
      });
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        ApiId: ref(built, built.delivery.jwtApi!),
        AuthorizerType: 'JWT',
        JwtConfiguration: {
          Audience: [ref(built, client)],
          Issuer: { 'Fn::Join': ['', Match.arrayWith(['https://cognito-idp.', ref(built, pool)])] },
        },
      });
    });
  });

  describe('stack outputs', () => {
    it('outputs ApiUrl, the IAM API’s $default stage URL; ApiJwtUrl and the user pool only when asked', () => {
      const plain = new HandoffStack(testApp(), 'Handoff', { delivery: { settings: { webhookUrl: WEBHOOK_URL }, entry: STAND_IN_ENTRY, apiEntry: STAND_IN_ENTRY } });
      const people = new HandoffStack(testApp(), 'Handoff', {
        delivery: { settings: { webhookUrl: WEBHOOK_URL }, entry: STAND_IN_ENTRY, apiEntry: STAND_IN_ENTRY, apiAuth: { jwt: { userPool: true } } },
      });
      const apiRef = { Ref: plain.getLogicalId(plain.delivery.api.node.defaultChild as never) };
      const outputs = (stack: HandoffStack) => Object.keys(Template.fromStack(stack).toJSON().Outputs);

      Template.fromStack(plain).hasOutput(STACK_OUTPUTS.apiUrl, {
        Value: { 'Fn::Join': ['', ['https://', apiRef, '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, '/']] },
      });
      expect(outputs(plain)).not.toEqual(expect.arrayContaining([STACK_OUTPUTS.apiJwtUrl]));
      expect(outputs(plain).filter((key) => key.startsWith('ApiUserPool'))).toEqual([]);
      expect(outputs(people)).toEqual(
        expect.arrayContaining([STACK_OUTPUTS.apiUrl, STACK_OUTPUTS.apiJwtUrl, STACK_OUTPUTS.apiUserPoolId, STACK_OUTPUTS.apiUserPoolClientId]),
      );
    });
  });

  describe('CDK context (infra/app.ts)', () => {
    const contextOf = (values: Record<string, unknown>) => (key: string) => values[key];

    it('asks for no JWT authorization without apiUserPool or apiJwtIssuer', () => {
      expect(apiAuthFromContext(contextOf({}))).toBeUndefined();
      expect(apiAuthFromContext(contextOf({ apiUserPool: 'false' }))).toBeUndefined();
    });

    it('reads apiUserPool=true as a user pool, and apiJwtIssuer with a comma-separated apiJwtAudience as an issuer', () => {
      expect(apiAuthFromContext(contextOf({ apiUserPool: true }))).toEqual({ jwt: { userPool: true } });
      expect(apiAuthFromContext(contextOf({ apiJwtIssuer: 'https://login.example.com', apiJwtAudience: 'handoff-api, console' }))).toEqual({
        jwt: { issuer: 'https://login.example.com', audience: ['handoff-api', 'console'] },
      });
    });

    it('reads a comma-separated apiJwtScopes as the scopes a token must grant, with either issuer', () => {
      expect(apiAuthFromContext(contextOf({ apiUserPool: 'true', apiJwtScopes: 'handoff/admin' }))).toEqual({ jwt: { userPool: true, scopes: ['handoff/admin'] } });
      expect(apiAuthFromContext(contextOf({ apiJwtIssuer: 'https://login.example.com', apiJwtAudience: 'a', apiJwtScopes: 'x, y' }))).toEqual({
        jwt: { issuer: 'https://login.example.com', audience: ['a'], scopes: ['x', 'y'] },
      });
      expect(() => apiAuthFromContext(contextOf({ apiJwtScopes: 'x' }))).toThrow(/^apiJwtScopes \(CDK context\) needs apiJwtIssuer or apiUserPool=true$/);
    });

    it('refuses an issuer without an audience, an audience without an issuer, and an issuer beside the user pool, naming the context key', () => {
      expect(() => apiAuthFromContext(contextOf({ apiJwtIssuer: 'https://login.example.com' }))).toThrow(/^apiJwtAudience \(CDK context\) must name the audience/);
      expect(() => apiAuthFromContext(contextOf({ apiJwtAudience: 'a' }))).toThrow(/^apiJwtAudience \(CDK context\) needs apiJwtIssuer$/);
      expect(() => apiAuthFromContext(contextOf({ apiUserPool: 'true', apiJwtIssuer: 'https://login.example.com' }))).toThrow(/^apiJwtIssuer \(CDK context\) cannot be given with apiUserPool=true/);
      expect(() => apiAuthFromContext(contextOf({ apiUserPool: 'yes' }))).toThrow(/^apiUserPool \(CDK context\) must be true or false, got "yes"$/);
    });
  });

  describe('cdk-nag', () => {
    it('passes the AwsSolutions rules with IAM alone, with an issuer, and with a user pool', () => {
      for (const apiAuth of [undefined, { jwt: { issuer: 'https://login.example.com', audience: ['handoff-api'] } }, { jwt: { userPool: true as const } }]) {
        const { stack } = build(apiAuth === undefined ? {} : { apiAuth });

        expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
      }
    });

    it("acknowledges one wildcard, GetMetricData's Resource *, on the API function's role alone, with its reason", () => {
      const built = build();
      const acknowledged = built.stack.node
        .findAll()
        .flatMap((c) => c.node.metadata.filter((m) => m.type === 'aws:cdk:acknowledged-rules').map((m) => ({ path: c.node.path, data: m.data as Record<string, string> })))
        .filter(({ data }) => Object.keys(data).some((id) => id.includes('IAM5')));

      expect(acknowledged).toEqual([
        {
          path: built.delivery.apiFunction.role!.node.path,
          data: { 'Annotation::AwsSolutions-IAM5[Resource::*]': expect.stringMatching(/^cloudwatch:GetMetricData .* supports no resource-level permission/) },
        },
      ]);
    });
  });
});
