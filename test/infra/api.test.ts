/**
 * The management API as the WebhookDelivery construct deploys it (docs/contract.md §16,
 * infra/delivery/api.ts), and the console on it (§17), one behaviour per test, asserted on the
 * synthesized template with `Match` (never by logical ID). Bundling is skipped; the functions'
 * entries are the stand-in.
 */
import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { HttpMethod, HttpNoneAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTES } from '../../api/routes/index';
import { CONSOLE_ENV, contentSecurityPolicy, type ConsoleSignIn } from '../../console/site';
import { apiAuthFromContext, HandoffStack } from '../../infra/app';
import {
  ACCESS_LOG_FIELDS,
  API_ROUTE_KEYS,
  CONSOLE_ROUTE_KEYS,
  DEFAULT_API_THROTTLE,
  PORTAL_AUTHORIZER_MEMORY_MB,
  WebhookDelivery,
  type WebhookDeliveryProps,
} from '../../infra/webhook-delivery';
import { consoleHooks } from '../../infra/delivery/functions';
import { API_LEDGER_ACTIONS } from '../../infra/delivery/grants';
import { DEFAULT_SETTINGS, RESOURCE_ENV, SETTING_VARIABLES } from '../../lib/config';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import { REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';
import { STACK_OUTPUTS } from '../../lib/stack-outputs';
import { buildDelivery, testApp, WARM_UP_MS, STAND_IN_ENTRY, WEBHOOK_URL, type Built } from './cdk-context';

const build = buildDelivery;

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

/** Every statement of a function's role (the API function's unless told). */
function apiStatements(built: Built, fn: { role?: { node: { defaultChild?: unknown } } } = built.delivery.apiFunction): Statement[] {
  const role = built.stack.getLogicalId(fn.role!.node.defaultChild as never);
  return Object.values(built.template.findResources('AWS::IAM::Policy'))
    .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === role))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
}

/** The resources of one type on one API (those whose ApiId is its Ref). */
function onApi(built: Built, type: string, api: HasResource): Record<string, any>[] {
  const apiRef = JSON.stringify(ref(built, api));
  return Object.values(built.template.findResources(type)).filter((r) => JSON.stringify(r.Properties.ApiId) === apiRef);
}

/** An API's `$default` stage URL as the template writes it. */
const urlOf = (built: Built, api: HasResource, path = '') => ({
  'Fn::Join': ['', ['https://', ref(built, api), '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, `/${path}`]],
});

/**
 * A template value as text, each reference written `<LogicalId>` or `<LogicalId.Attribute>` and
 * each pseudo parameter `<AWS::Region>`: a JSON variable built with Fn::Join becomes JSON to parse.
 */
function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  const v = value as Record<string, any>;
  if (v.Ref !== undefined) return `<${v.Ref}>`;
  if (v['Fn::GetAtt'] !== undefined) return `<${(v['Fn::GetAtt'] as string[]).join('.')}>`;
  if (v['Fn::Join'] !== undefined) return (v['Fn::Join'][1] as unknown[]).map(textOf).join(v['Fn::Join'][0] as string);
  if (v['Fn::Select'] !== undefined) return '<Fn::Select>';
  throw new Error(`no text for ${JSON.stringify(value)}`);
}

/** The logical IDs each resource refers to (Ref, Fn::GetAtt, DependsOn), to find a cycle. */
function referencesOf(resource: Record<string, any>): Set<string> {
  const out = new Set<string>([resource.DependsOn ?? []].flat());
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (typeof value !== 'object' || value === null) return;
    const v = value as Record<string, unknown>;
    if (typeof v.Ref === 'string') out.add(v.Ref);
    if (Array.isArray(v['Fn::GetAtt'])) out.add(v['Fn::GetAtt'][0] as string);
    Object.values(v).forEach(walk);
  };
  walk(resource.Properties);
  return out;
}

/** A dependency cycle among the template's resources, as the logical IDs around it; undefined when none. */
function cycleIn(template: Template): string[] | undefined {
  const resources = template.toJSON().Resources as Record<string, Record<string, any>>;
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done' || resources[id] === undefined) return undefined;
    if (state.get(id) === 'open') return [...path.slice(path.indexOf(id)), id];
    state.set(id, 'open');
    path.push(id);
    for (const next of referencesOf(resources[id]!)) {
      const cycle = visit(next);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const id of Object.keys(resources)) {
    const cycle = visit(id);
    if (cycle) return cycle;
  }
  return undefined;
}

/** The logical ID of the portal API's one authorizer. */
function portalAuthorizerId(built: Built): string {
  const portal = JSON.stringify(ref(built, built.delivery.portalApi));
  const ids = Object.entries(built.template.findResources('AWS::ApiGatewayV2::Authorizer'))
    .filter(([, r]) => JSON.stringify(r.Properties.ApiId) === portal)
    .map(([id]) => id);
  expect(ids).toHaveLength(1);
  return ids[0]!;
}

const ISSUER = 'https://login.example.com/realms/ops';

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

    it('deploys the IAM API with a route per operation and the catch-all, every one behind IAM authorization, and no console', () => {
      const built = build();

      built.template.hasResourceProperties('AWS::ApiGatewayV2::Api', { ProtocolType: 'HTTP' });
      const routes = routesOf(built, built.delivery.api);
      expect(Object.keys(routes).sort()).toEqual([...API_ROUTE_KEYS, '$default'].sort());
      expect(new Set(Object.values(routes))).toEqual(new Set(['AWS_IAM']));
      expect(onApi(built, 'AWS::ApiGatewayV2::Authorizer', built.delivery.api)).toEqual([]);
    });

    it('deploys two HTTP APIs without apiAuth.jwt (IAM, portal links) and three with it, each with its own integration of the API function as payload format 2.0, which API Gateway alone may invoke for that API', () => {
      const plain = build();
      const people = build({ apiAuth: { jwt: { issuer: ISSUER, audience: ['handoff-api'] } } });

      plain.template.resourceCountIs('AWS::ApiGatewayV2::Api', 2);
      people.template.resourceCountIs('AWS::ApiGatewayV2::Api', 3);
      for (const built of [plain, people]) {
        const fn = att(built, built.delivery.apiFunction);
        const apis = [built.delivery.api, built.delivery.portalApi, ...(built.delivery.jwtApi ? [built.delivery.jwtApi] : [])];
        const permissions = Object.values(built.template.findResources('AWS::Lambda::Permission')).filter(
          (p) => JSON.stringify(p.Properties.FunctionName) === JSON.stringify(fn),
        );
        built.template.resourceCountIs('AWS::ApiGatewayV2::Integration', apis.length);
        expect(permissions).toHaveLength(apis.length);
        for (const api of apis) {
          expect(onApi(built, 'AWS::ApiGatewayV2::Integration', api)).toEqual([
            { Type: 'AWS::ApiGatewayV2::Integration', Properties: expect.objectContaining({ IntegrationType: 'AWS_PROXY', IntegrationUri: fn, PayloadFormatVersion: '2.0' }) },
          ]);
          const permission = permissions.filter((p) => JSON.stringify(p.Properties.SourceArn).includes(JSON.stringify(ref(built, api))));
          expect(permission).toHaveLength(1);
          expect(permission[0]!.Properties).toMatchObject({ Action: 'lambda:InvokeFunction', Principal: 'apigateway.amazonaws.com' });
        }
      }
    });
  });

  describe('the console (docs/contract.md §17)', () => {
    it('serves GET /console and GET /console/{proxy+} without authorization on the JWT and portal APIs; every other route of every API has an authorizer', () => {
      for (const apiAuth of [undefined, { jwt: { issuer: ISSUER, audience: ['handoff-api'] } }, { jwt: { userPool: true as const } }]) {
        const built = build(apiAuth === undefined ? {} : { apiAuth });
        const open = (api: HasResource) => Object.entries(routesOf(built, api)).filter(([, type]) => type === 'NONE').map(([key]) => key).sort();

        expect(open(built.delivery.portalApi)).toEqual([...CONSOLE_ROUTE_KEYS].sort());
        if (built.delivery.jwtApi) expect(open(built.delivery.jwtApi)).toEqual([...CONSOLE_ROUTE_KEYS].sort());
        expect(open(built.delivery.api)).toEqual([]);
        const none = Object.values(built.template.findResources('AWS::ApiGatewayV2::Route')).filter((r) => r.Properties.AuthorizationType === 'NONE');
        expect(none).toHaveLength(CONSOLE_ROUTE_KEYS.length * (built.delivery.jwtApi ? 2 : 1));
        for (const route of none) {
          expect(CONSOLE_ROUTE_KEYS).toContain(route.Properties.RouteKey);
          expect(route.Properties.AuthorizationScopes).toBeUndefined();
          expect(route.Properties.AuthorizerId).toBeUndefined();
        }
      }
    });

    it('outputs ConsoleUrl, the JWT API’s /console/, only with apiAuth.jwt, and PortalConsoleUrl, the portal API’s /console/, always', () => {
      const stackOf = (apiAuth?: WebhookDeliveryProps['apiAuth']) =>
        new HandoffStack(testApp(), 'Handoff', {
          delivery: { settings: { webhookUrl: WEBHOOK_URL }, entry: STAND_IN_ENTRY, apiEntry: STAND_IN_ENTRY, ...(apiAuth ? { apiAuth } : {}) },
        });
      const plain = stackOf();
      const people = stackOf({ jwt: { issuer: ISSUER, audience: ['handoff-api'] } });
      const apiRef = (stack: HandoffStack, api: HasResource) => ({ Ref: stack.getLogicalId(api.node.defaultChild as never) });
      const consoleOf = (stack: HandoffStack, api: HasResource) => ({
        'Fn::Join': ['', ['https://', apiRef(stack, api), '.execute-api.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }, '/console/']],
      });

      Template.fromStack(plain).hasOutput(STACK_OUTPUTS.portalConsoleUrl, { Value: consoleOf(plain, plain.delivery.portalApi) });
      expect(Object.keys(Template.fromStack(plain).toJSON().Outputs)).not.toContain(STACK_OUTPUTS.consoleUrl);
      Template.fromStack(people).hasOutput(STACK_OUTPUTS.consoleUrl, { Value: consoleOf(people, people.delivery.jwtApi!) });
      Template.fromStack(people).hasOutput(STACK_OUTPUTS.portalConsoleUrl, { Value: consoleOf(people, people.delivery.portalApi) });
    });

    it('tells the API function the portal console’s URL, so POST /v1/portal-links on any API answers links to it, and no sign-in without apiAuth.jwt', () => {
      const built = build();
      const variables = apiFunction(built).Environment.Variables as Record<string, unknown>;

      expect(variables[CONSOLE_ENV.portalConsoleUrl]).toEqual(urlOf(built, built.delivery.portalApi, 'console/'));
      expect(built.delivery.portalConsoleUrl).toBe(`${built.delivery.portalApiUrl}console/`);
      expect(variables).not.toHaveProperty(CONSOLE_ENV.signIn);
    });

    it('tells the API function to sign people in at the JWT issuer as its first audience, asking for openid and the routes’ scopes', () => {
      const built = build({ apiAuth: { jwt: { issuer: ISSUER, audience: ['console-client', 'handoff-api'], scopes: ['handoff/admin', 'openid'] } } });
      const variables = apiFunction(built).Environment.Variables as Record<string, unknown>;

      expect(JSON.parse(textOf(variables[CONSOLE_ENV.signIn]))).toEqual({ issuer: ISSUER, clientId: 'console-client', scopes: ['openid', 'handoff/admin'] });
    });

    it('tells the API function the console’s own client and the issuer’s endpoints when jwt.console names them, so the page’s CSP lets it reach a token endpoint on another origin', () => {
      const signInOf = (console: object) => {
        const built = build({ apiAuth: { jwt: { issuer: ISSUER, audience: ['handoff-api'], console } } });
        return JSON.parse(textOf((apiFunction(built).Environment.Variables as Record<string, unknown>)[CONSOLE_ENV.signIn])) as ConsoleSignIn;
      };
      const endpoints = { authorizeUrl: 'https://accounts.example.net/o/oauth2/v2/auth', tokenUrl: 'https://oauth2.example.org/token' };

      const both = signInOf({ clientId: 'handoff-console', ...endpoints });
      const clientOnly = signInOf({ clientId: 'handoff-console' });

      expect(both).toEqual({ issuer: ISSUER, clientId: 'handoff-console', scopes: ['openid'], ...endpoints });
      expect(contentSecurityPolicy({ signIn: both })).toContain("connect-src 'self' https://login.example.com https://oauth2.example.org;");
      expect(clientOnly).toEqual({ issuer: ISSUER, clientId: 'handoff-console', scopes: ['openid'] });
      expect(signInOf(endpoints)).toEqual({ issuer: ISSUER, clientId: 'handoff-api', scopes: ['openid'], ...endpoints });
    });

    it('refuses a jwt.console with one endpoint of the two, one that is not https, an empty client, or beside a user pool, naming apiAuth', () => {
      const withConsole = (console: object) => () => build({ apiAuth: { jwt: { issuer: ISSUER, audience: ['a'], console } } });

      expect(withConsole({ tokenUrl: 'https://oauth2.example.org/token' })).toThrow(/^apiAuth jwt\.console needs authorizeUrl and tokenUrl together/);
      expect(withConsole({ authorizeUrl: 'https://a.example/auth', tokenUrl: 'http://oauth2.example.org/token' })).toThrow(/^apiAuth jwt\.console\.tokenUrl must be an https URL/);
      expect(withConsole({ authorizeUrl: 'https://a.example/auth#x', tokenUrl: 'https://oauth2.example.org/token' })).toThrow(/^apiAuth jwt\.console\.authorizeUrl must be an https URL/);
      expect(withConsole({ clientId: ' ' })).toThrow(/^apiAuth jwt\.console\.clientId must be the OAuth client/);
      expect(() => build({ apiAuth: { jwt: { userPool: true, console: { clientId: 'x' } } as never } })).toThrow(/^apiAuth jwt\.console is for an issuer's sign-in/);
    });

    it('with a user pool, makes its hosted sign-in (a Cognito domain named from the stack) and tells the API function the issuer, client and the domain’s authorize and token URLs', () => {
      const built = build({ apiAuth: { jwt: { userPool: true } } });
      const variables = apiFunction(built).Environment.Variables as Record<string, unknown>;
      const pool = built.stack.getLogicalId(built.delivery.apiUserPool!.node.defaultChild as never);
      const client = built.stack.getLogicalId(built.delivery.apiUserPoolClient!.node.defaultChild as never);
      const domain = built.stack.getLogicalId(built.delivery.apiUserPoolDomain!.node.defaultChild as never);

      expect(JSON.parse(textOf(variables[CONSOLE_ENV.signIn]))).toEqual({
        issuer: `https://cognito-idp.<AWS::Region>.amazonaws.com/<${pool}>`,
        clientId: `<${client}>`,
        scopes: ['openid'],
        authorizeUrl: `https://<${domain}>.auth.<AWS::Region>.amazoncognito.com/oauth2/authorize`,
        tokenUrl: `https://<${domain}>.auth.<AWS::Region>.amazoncognito.com/oauth2/token`,
      });
      // The issuer is the one the JWT authorizer trusts.
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        JwtConfiguration: { Issuer: { 'Fn::Join': ['', ['https://cognito-idp.', { Ref: 'AWS::Region' }, '.amazonaws.com/', { Ref: pool }]] } },
      });
      built.template.resourceCountIs('AWS::Cognito::UserPoolDomain', 1);
      const prefix = textOf(built.template.toJSON().Resources[domain].Properties.Domain);
      expect(prefix).toMatch(/^handoff-[0-9a-f]{8}-<Fn::Select>$/);
      expect(built.template.toJSON().Resources[domain].Properties.Domain['Fn::Join'][1]).toContainEqual({
        'Fn::Select': [2, { 'Fn::Split': ['/', { Ref: 'AWS::StackId' }] }],
      });
      // Classic hosted sign-in: no managed login branding to make.
      expect(built.template.toJSON().Resources[domain].Properties).not.toHaveProperty('ManagedLoginVersion');
    });

    it('makes the user pool’s app client a public one for the console: authorization code only, no secret (so PKCE), its one callback and sign-out URL the console', () => {
      const built = build({ apiAuth: { jwt: { userPool: true } } });
      const consoleUrl = urlOf(built, built.delivery.jwtApi!, 'console/');

      built.template.hasResourceProperties('AWS::Cognito::UserPoolClient', {
        GenerateSecret: false,
        AllowedOAuthFlowsUserPoolClient: true,
        AllowedOAuthFlows: ['code'],
        AllowedOAuthScopes: ['openid'],
        SupportedIdentityProviders: ['COGNITO'],
        CallbackURLs: [consoleUrl],
        LogoutURLs: [consoleUrl],
      });
      built.template.resourceCountIs('AWS::Cognito::UserPoolResourceServer', 0);
    });

    it('with a user pool and scopes, defines each server/name scope on the pool and lets the app client ask for it; refuses a scope Cognito cannot have', () => {
      const built = build({ apiAuth: { jwt: { userPool: true, scopes: ['handoff/admin', 'handoff/support', 'email'] } } });
      const pool = ref(built, built.delivery.apiUserPool!);

      built.template.resourceCountIs('AWS::Cognito::UserPoolResourceServer', 1);
      built.template.hasResourceProperties('AWS::Cognito::UserPoolResourceServer', {
        UserPoolId: pool,
        Identifier: 'handoff',
        Scopes: [Match.objectLike({ ScopeName: 'admin' }), Match.objectLike({ ScopeName: 'support' })],
      });
      const client = Object.values(built.template.findResources('AWS::Cognito::UserPoolClient'))[0]!;
      expect((client.Properties.AllowedOAuthScopes as unknown[]).map(textOf).sort()).toEqual(
        ['openid', 'email', expect.stringMatching(/^<\w+>\/admin$/), expect.stringMatching(/^<\w+>\/support$/)].sort(),
      );
      expect(() => build({ apiAuth: { jwt: { userPool: true, scopes: ['admin'] } } })).toThrow(/^apiAuth jwt\.scopes with userPool must be Cognito scopes/);
    });

    it('leaves no dependency cycle in the template, whatever the API’s authorization (the URLs are built from the APIs’ IDs)', () => {
      for (const apiAuth of [undefined, { jwt: { issuer: ISSUER, audience: ['handoff-api'] } }, { jwt: { userPool: true as const } }]) {
        const built = build(apiAuth === undefined ? {} : { apiAuth });

        expect(cycleIn(built.template)).toBeUndefined();
      }
    });

    it('builds the console into the API function’s bundle after esbuild, from the repository (or the Docker mount) with its own tsx', () => {
      const hooks = consoleHooks('/src/handoff/console/build.ts');

      expect(hooks.beforeBundling('/src/handoff', '/tmp/out')).toEqual([]);
      expect(hooks.beforeInstall('/src/handoff', '/tmp/out')).toEqual([]);
      expect(hooks.afterBundling('/src/handoff', '/tmp/cdk.out/asset')).toEqual([
        "cd '/src/handoff' && node --import tsx console/build.ts '/tmp/cdk.out/asset/console'",
      ]);
      expect(hooks.afterBundling('/asset-input', '/asset-output')).toEqual(["cd '/asset-input' && node --import tsx console/build.ts '/asset-output/console'"]);
      expect(consoleHooks("/src/it's/console/build.ts").afterBundling('/x', '/out')[0]).toBe(`cd '/src/it'\\''s' && node --import tsx console/build.ts '/out/console'`);
    });
  });

  describe('the portal API (portal links)', () => {
    it('takes every /v1 route and the catch-all through the portal authorizer, a Lambda REQUEST authorizer with simple answers, the Authorization header and no cache', () => {
      const built = build();
      const portal = built.delivery.portalApi;
      const authorizers = onApi(built, 'AWS::ApiGatewayV2::Authorizer', portal);
      const authorizerId = portalAuthorizerId(built);

      expect(authorizers).toHaveLength(1);
      expect(authorizers[0]!.Properties).toMatchObject({
        AuthorizerType: 'REQUEST',
        AuthorizerPayloadFormatVersion: '2.0',
        EnableSimpleResponses: true,
        IdentitySource: ['$request.header.Authorization'],
        AuthorizerResultTtlInSeconds: 0,
      });
      expect(JSON.stringify(authorizers[0]!.Properties.AuthorizerUri)).toContain(JSON.stringify(att(built, built.delivery.portalAuthorizer)));
      const routes = onApi(built, 'AWS::ApiGatewayV2::Route', portal).filter((r) => !(CONSOLE_ROUTE_KEYS as readonly string[]).includes(r.Properties.RouteKey));
      expect(routes.map((r) => r.Properties.RouteKey).sort()).toEqual([...API_ROUTE_KEYS, '$default'].sort());
      for (const route of routes) expect(route.Properties).toMatchObject({ AuthorizationType: 'CUSTOM', AuthorizerId: { Ref: authorizerId } });
    });

    it('lets API Gateway invoke the authorizer for this API’s authorizers alone', () => {
      const built = build();
      const permissions = Object.values(built.template.findResources('AWS::Lambda::Permission')).filter(
        (p) => JSON.stringify(p.Properties.FunctionName) === JSON.stringify(att(built, built.delivery.portalAuthorizer)),
      );

      expect(permissions).toHaveLength(1);
      expect(permissions[0]!.Properties).toMatchObject({ Action: 'lambda:InvokeFunction', Principal: 'apigateway.amazonaws.com' });
      expect(textOf(permissions[0]!.Properties.SourceArn)).toBe(
        `arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:<${ref(built, built.delivery.portalApi).Ref}>/authorizers/<${portalAuthorizerId(built)}>`,
      );
    });

    it('runs functions/api-portal-authorizer.ts on Node.js 24 on ARM, with the least memory, in time for API Gateway’s 10 s, told the seal key by its ARN', () => {
      const built = build();
      const props = built.template.toJSON().Resources[built.stack.getLogicalId(built.delivery.portalAuthorizer.node.defaultChild as never)].Properties;

      expect(PORTAL_AUTHORIZER_MEMORY_MB).toBe(128);
      expect(props).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'], Handler: 'index.handler', Timeout: 10, MemorySize: 128 });
      expect(props.Environment.Variables).toEqual({ [RESOURCE_ENV.sealKeyArn]: ref(built, built.delivery.sealKey), NODE_OPTIONS: '--enable-source-maps' });
      expect(props.LoggingConfig).toEqual({ LogGroup: { Ref: expect.stringMatching(/PortalAuthorizerLogs/) } });
    });

    it('grants the authorizer’s own role GetSecretValue on the seal key and its log group’s writes, nothing else', () => {
      const built = build();
      const statements = apiStatements(built, built.delivery.portalAuthorizer);
      const logs = statements.filter((s) => [s.Action].flat().every((a) => a.startsWith('logs:')));

      expect(built.delivery.portalAuthorizer.role).not.toBe(built.delivery.apiFunction.role);
      expect(statements.filter((s) => !logs.includes(s))).toEqual([
        { Sid: 'SealKeyRead', Effect: 'Allow', Action: 'secretsmanager:GetSecretValue', Resource: ref(built, built.delivery.sealKey) },
      ]);
      expect(logs.map((s) => s.Action)).toEqual([['logs:CreateLogStream', 'logs:PutLogEvents']]);
    });

    it('has a stage of its own, throttled and access-logged as the others, the authorizer’s caller in its log, and a 5xx alarm', () => {
      const built = build();
      const topic = ref(built, built.delivery.alarmTopic as unknown as HasResource);

      built.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        ApiId: ref(built, built.delivery.portalApi),
        StageName: '$default',
        DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
        AccessLogSettings: { Format: JSON.stringify(ACCESS_LOG_FIELDS) },
      });
      expect(ACCESS_LOG_FIELDS.portalCaller).toBe('$context.authorizer.principal');
      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: '5xx',
        Dimensions: [{ Name: 'ApiId', Value: ref(built, built.delivery.portalApi) }],
        AlarmActions: [topic],
        OKActions: [topic],
      });
      expect(built.delivery.alarms.apiPortalServerErrors).toBeDefined();
    });
  });

  describe('stage', () => {
    it('serves the $default stage, deployed on every change, one per API', () => {
      const built = build();

      built.template.resourceCountIs('AWS::ApiGatewayV2::Stage', 2);
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { ApiId: ref(built, built.delivery.api), StageName: '$default', AutoDeploy: true });
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { ApiId: ref(built, built.delivery.portalApi), StageName: '$default', AutoDeploy: true });
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
      const stage = onApi(built, 'AWS::ApiGatewayV2::Stage', built.delivery.api)[0]!;
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
        [CONSOLE_ENV.portalConsoleUrl]: urlOf(built, built.delivery.portalApi, 'console/'),
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
    const issuer = ISSUER;

    it("adds an API with the same routes, every one behind a JWT authorizer of the issuer and audience, and the console; the IAM API's routes stay IAM", () => {
      const built = build({ apiAuth: { jwt: { issuer, audience: ['handoff-api'] } } });
      const jwtApi = built.delivery.jwtApi!;

      built.template.resourceCountIs('AWS::ApiGatewayV2::Api', 3);
      expect(onApi(built, 'AWS::ApiGatewayV2::Authorizer', jwtApi)).toHaveLength(1);
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
        ApiId: ref(built, jwtApi),
        AuthorizerType: 'JWT',
        IdentitySource: ['$request.header.Authorization'],
        JwtConfiguration: { Issuer: issuer, Audience: ['handoff-api'] },
      });
      const jwtRoutes = routesOf(built, jwtApi);
      expect(Object.keys(jwtRoutes).sort()).toEqual([...API_ROUTE_KEYS, '$default', ...CONSOLE_ROUTE_KEYS].sort());
      expect(new Set(Object.entries(jwtRoutes).filter(([key]) => !(CONSOLE_ROUTE_KEYS as readonly string[]).includes(key)).map(([, type]) => type))).toEqual(new Set(['JWT']));
      expect(new Set(Object.values(routesOf(built, built.delivery.api)))).toEqual(new Set(['AWS_IAM']));
      // Its own stage, throttled and logged as the others, and its own 5xx alarm.
      built.template.resourceCountIs('AWS::ApiGatewayV2::Stage', 3);
      built.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        ApiId: ref(built, jwtApi),
        DefaultRouteSettings: { ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 },
        AccessLogSettings: { Format: JSON.stringify(ACCESS_LOG_FIELDS) },
      });
      built.template.hasResourceProperties('AWS::CloudWatch::Alarm', { MetricName: '5xx', Dimensions: [{ Name: 'ApiId', Value: ref(built, jwtApi) }] });
      built.template.resourceCountIs('AWS::Cognito::UserPool', 0);
    });

    it("asks every route of the JWT API but the console's for one of the scopes given, and the IAM API for none", () => {
      const built = build({ apiAuth: { jwt: { issuer, audience: ['handoff-api'], scopes: ['handoff/admin', 'handoff/support'] } } });
      const routes = Object.values(built.template.findResources('AWS::ApiGatewayV2::Route')) as { Properties: { ApiId: unknown; RouteKey: string; AuthorizationScopes?: string[] } }[];
      const onJwt = routes.filter((r) => JSON.stringify(r.Properties.ApiId) === JSON.stringify(ref(built, built.delivery.jwtApi!)));
      const onIam = routes.filter((r) => JSON.stringify(r.Properties.ApiId) === JSON.stringify(ref(built, built.delivery.api)));

      const onConsole = onJwt.filter((r) => (CONSOLE_ROUTE_KEYS as readonly string[]).includes(r.Properties.RouteKey));
      expect(onJwt).toHaveLength(API_ROUTE_KEYS.length + 1 + CONSOLE_ROUTE_KEYS.length);
      for (const route of onJwt.filter((r) => !onConsole.includes(r))) expect(route.Properties.AuthorizationScopes).toEqual(['handoff/admin', 'handoff/support']);
      for (const route of onConsole) expect(route.Properties.AuthorizationScopes).toBeUndefined();
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
    it('outputs ApiUrl, the IAM API’s $default stage URL; ApiJwtUrl, ConsoleUrl and the user pool only when asked', () => {
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
      expect(outputs(plain)).not.toEqual(expect.arrayContaining([STACK_OUTPUTS.consoleUrl]));
      expect(outputs(plain).filter((key) => key.startsWith('ApiUserPool'))).toEqual([]);
      expect(outputs(people)).toEqual(
        expect.arrayContaining([STACK_OUTPUTS.apiUrl, STACK_OUTPUTS.apiJwtUrl, STACK_OUTPUTS.consoleUrl, STACK_OUTPUTS.apiUserPoolId, STACK_OUTPUTS.apiUserPoolClientId]),
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

    it('reads apiConsoleClientId, and apiConsoleAuthorizeUrl with apiConsoleTokenUrl, as the console’s sign-in at apiJwtIssuer', () => {
      const issuer = { apiJwtIssuer: 'https://login.example.com', apiJwtAudience: 'a' };
      const endpoints = { apiConsoleAuthorizeUrl: 'https://accounts.example.net/auth', apiConsoleTokenUrl: 'https://oauth2.example.org/token' };

      expect(apiAuthFromContext(contextOf({ ...issuer, apiConsoleClientId: 'handoff-console', ...endpoints }))).toEqual({
        jwt: {
          issuer: 'https://login.example.com',
          audience: ['a'],
          console: { clientId: 'handoff-console', authorizeUrl: 'https://accounts.example.net/auth', tokenUrl: 'https://oauth2.example.org/token' },
        },
      });
      expect(apiAuthFromContext(contextOf({ ...issuer, apiConsoleClientId: 'handoff-console' }))).toEqual({
        jwt: { issuer: 'https://login.example.com', audience: ['a'], console: { clientId: 'handoff-console' } },
      });
      expect(() => apiAuthFromContext(contextOf({ ...issuer, apiConsoleTokenUrl: endpoints.apiConsoleTokenUrl }))).toThrow(/^apiConsoleAuthorizeUrl \(CDK context\) must be given with apiConsoleTokenUrl$/);
      expect(() => apiAuthFromContext(contextOf({ ...issuer, apiConsoleAuthorizeUrl: endpoints.apiConsoleAuthorizeUrl }))).toThrow(/^apiConsoleTokenUrl \(CDK context\) must be given with apiConsoleAuthorizeUrl$/);
      expect(() => apiAuthFromContext(contextOf({ apiConsoleClientId: 'x' }))).toThrow(/^apiConsoleClientId \(CDK context\) needs apiJwtIssuer$/);
      expect(() => apiAuthFromContext(contextOf({ apiUserPool: 'true', ...endpoints }))).toThrow(/^apiConsoleAuthorizeUrl \(CDK context\) is for apiJwtIssuer's sign-in/);
    });

    it('refuses an issuer without an audience, an audience without an issuer, and an issuer beside the user pool, naming the context key', () => {
      expect(() => apiAuthFromContext(contextOf({ apiJwtIssuer: 'https://login.example.com' }))).toThrow(/^apiJwtAudience \(CDK context\) must name the audience/);
      expect(() => apiAuthFromContext(contextOf({ apiJwtAudience: 'a' }))).toThrow(/^apiJwtAudience \(CDK context\) needs apiJwtIssuer$/);
      expect(() => apiAuthFromContext(contextOf({ apiUserPool: 'true', apiJwtIssuer: 'https://login.example.com' }))).toThrow(/^apiJwtIssuer \(CDK context\) cannot be given with apiUserPool=true/);
      expect(() => apiAuthFromContext(contextOf({ apiUserPool: 'yes' }))).toThrow(/^apiUserPool \(CDK context\) must be true or false, got "yes"$/);
    });
  });

  describe('cdk-nag', () => {
    it('passes the AwsSolutions rules with IAM alone, with an issuer, and with a user pool (and its scopes)', () => {
      for (const apiAuth of [
        undefined,
        { jwt: { issuer: 'https://login.example.com', audience: ['handoff-api'] } },
        { jwt: { userPool: true as const, scopes: ['handoff/admin'] } },
      ]) {
        const { stack } = build(apiAuth === undefined ? {} : { apiAuth });

        expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
      }
    });

    it("acknowledges one wildcard of the API's, GetMetricData's Resource *, on the API function's role alone, with its reason", () => {
      const built = build();
      const acknowledged = built.stack.node
        .findAll()
        .flatMap((c) => c.node.metadata.filter((m) => m.type === 'aws:cdk:acknowledged-rules').map((m) => ({ path: c.node.path, data: m.data as Record<string, string> })))
        .filter(({ data }) => Object.keys(data).some((id) => id.includes('IAM5')));

      // Beside it, tracing's X-Ray writes on the consumer's role (tracing 'xray', the default: test/infra/tracing.test.ts).
      expect(acknowledged).toEqual([
        {
          path: built.delivery.consumer.role!.node.path,
          data: { 'Annotation::AwsSolutions-IAM5[Resource::*]': expect.stringMatching(/active tracing.*xray:PutTraceSegments/) },
        },
        {
          path: built.delivery.apiFunction.role!.node.path,
          data: { 'Annotation::AwsSolutions-IAM5[Resource::*]': expect.stringMatching(/^cloudwatch:GetMetricData .* supports no resource-level permission/) },
        },
      ]);
    });

    it("acknowledges routes without authorization (APIG4) on the console's routes alone, with its reason; another open route still fails", () => {
      const built = build({ apiAuth: { jwt: { issuer: ISSUER, audience: ['handoff-api'] } } });
      const acknowledged = built.stack.node
        .findAll()
        .flatMap((c) => c.node.metadata.filter((m) => m.type === 'aws:cdk:acknowledged-rules').map((m) => ({ path: c.node.path, data: m.data as Record<string, string> })))
        .filter(({ data }) => Object.keys(data).some((id) => id.includes('APIG4')));

      expect(acknowledged.map(({ path }) => path).sort()).toEqual(
        ['ApiJwt', 'ApiPortal'].flatMap((api) => [`TestStack/Delivery/${api}/GET--console`, `TestStack/Delivery/${api}/GET--console--{proxy+}`]).sort(),
      );
      for (const { data } of acknowledged) expect(data['Annotation::AwsSolutions-APIG4']).toMatch(/^The console's page, script and stylesheet .* Every \/v1 route, and the catch-all, takes the API's authorizer\.$/);
      built.delivery.portalApi.addRoutes({
        path: '/open',
        methods: [HttpMethod.GET],
        integration: new HttpLambdaIntegration('Open', built.delivery.apiFunction),
        authorizer: new HttpNoneAuthorizer(),
      });
      expect(new AwsSolutionsChecks().validateScope(built.stack).violations.map((v) => v.ruleName)).toEqual(['AwsSolutions-APIG4']);
    });
  });
});
