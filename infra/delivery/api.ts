/**
 * The management API in AWS (docs/contract.md §16): an API Gateway HTTP API in front of one Lambda
 * (functions/api.ts), which runs the router every route shares (api/router.ts) on API Gateway's
 * event, as the sandbox runs it on its own.
 *
 * **Authorization.** Every route of the API at `ApiUrl` takes IAM authorization (SigV4): a caller
 * needs `execute-api:Invoke` on it (`WebhookDelivery.grantApiInvoke`), and the principal API
 * Gateway proved is the caller the audit records. An HTTP API route has one authorizer, so JWTs
 * (`apiAuth.jwt`: an issuer and audience, or a Cognito user pool the construct makes) are taken on a
 * second API with the same routes, function and settings (`ApiJwtUrl`): services sign with IAM,
 * people bring a token, and neither weakens the other's routes. Nothing is open: besides one
 * route per operation, the catch-all `$default` route takes the same authorizer, so an unknown
 * path is answered by the router (404, 405 as problem documents) only for a proven caller.
 *
 * **Limits.** The stage throttles (`apiThrottle`, default DEFAULT_API_THROTTLE) before the function
 * runs; the router bounds bodies (api/http.ts MAX_BODY_BYTES; API Gateway's own limit is 10 MB).
 *
 * **Logs.** Each API writes one JSON access-log line per request to its own log group: request ID,
 * source IP, the caller (IAM principal or the JWT's subject), route, status, latencies and the
 * authorizer's or integration's error; never a header, query or body. The function logs IDs only.
 *
 * **Alarms.** Any 5xx answer (an API) and any failed invocation (the function: a crash or a
 * timeout, which the router cannot turn into a problem document) notify the alarm topic.
 *
 * The construct must not import the router (dist/cdk.js holds no AWS SDK): the routes are listed
 * here as route keys, and a test checks the list against api/routes/index.ts.
 */
import { Duration, Stack, Token, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer, HttpJwtAuthorizer, HttpUserPoolAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { ConfigError } from '../../lib/errors';
import { API_FUNCTION_TIMEOUT_SECONDS } from './functions';

/**
 * Every operation of the management API as API Gateway's route key (`METHOD /path`, path
 * parameters as in the OpenAPI document). The same set as api/routes/index.ts's ROUTES (a test
 * compares them); each becomes a route of its own, so access logs, metrics and throttling can name it.
 */
export const API_ROUTE_KEYS = [
  'GET /v1/endpoints',
  'POST /v1/endpoints',
  'GET /v1/endpoints/{name}',
  'PATCH /v1/endpoints/{name}',
  'DELETE /v1/endpoints/{name}',
  'POST /v1/endpoints/{name}/disable',
  'POST /v1/endpoints/{name}/enable',
  'POST /v1/endpoints/{name}/rotate-secret',
  'POST /v1/endpoints/{name}/test',
  'POST /v1/events',
  'GET /v1/events/{eventId}',
  'GET /v1/shipments/{shipmentId}/deliveries',
  'GET /v1/dead',
  'POST /v1/replays',
  'GET /v1/stats',
  'POST /v1/portal-links',
  'GET /v1/openapi.json',
] as const;

/** How the API's callers prove who they are (docs/deploying.md "The management API"). */
export interface ApiAuth {
  /**
   * A second API (`ApiJwtUrl`) with the same routes behind a JWT authorizer, for people:
   * - `{ issuer, audience }`: tokens of an OIDC issuer (`https://…`, its `/.well-known/openid-configuration`
   *   must be reachable), with one of `audience` as `aud` (or `client_id`);
   * - `{ userPool: true }`: a Cognito user pool the construct makes (no self sign-up, MFA required,
   *   12-character passwords) and an app client, whose tokens it takes.
   * The caller recorded is `jwt:<sub>`. Unset: IAM alone.
   * `scopes`: a token must also grant one of these OAuth scopes (its `scope` claim) on every route,
   * so an issuer that serves other applications too can give this API only to whom it says.
   */
  readonly jwt?:
    | { readonly issuer: string; readonly audience: readonly string[]; readonly scopes?: readonly string[] }
    | { readonly userPool: true; readonly scopes?: readonly string[] };
}

/** The stage's throttling: requests a second on average, and the burst above it. */
export interface ApiThrottle {
  readonly rateLimit: number;
  readonly burstLimit: number;
}

/**
 * Default throttling, per API stage (the account's regional limit is 10,000 a second): far above what
 * operators and a console ask, well below what would crowd the consumer's DynamoDB capacity.
 */
export const DEFAULT_API_THROTTLE: ApiThrottle = { rateLimit: 50, burstLimit: 100 };

export interface ApiAlarms {
  /** 5xx answers of the API at `ApiUrl` in 5 minutes. */
  readonly apiServerErrors: cloudwatch.Alarm;
  /** 5xx answers of the JWT API (`apiAuth.jwt`) in 5 minutes. */
  readonly apiJwtServerErrors?: cloudwatch.Alarm;
  /** Failed invocations of the API function in 5 minutes (a crash or a timeout). */
  readonly apiErrors: cloudwatch.Alarm;
}

export interface ManagementApi {
  /** The API services call with SigV4: every route IAM-authorized. */
  readonly api: apigw.HttpApi;
  readonly url: string;
  /** The API people call with a JWT (`apiAuth.jwt`). */
  readonly jwtApi?: apigw.HttpApi;
  readonly jwtUrl?: string;
  /** The Cognito user pool and app client made for it (`apiAuth.jwt.userPool`). */
  readonly userPool?: cognito.UserPool;
  readonly userPoolClient?: cognito.UserPoolClient;
  readonly alarms: ApiAlarms;
}

export interface ManagementApiProps {
  readonly apiAuth?: ApiAuth;
  readonly apiThrottle?: ApiThrottle;
  readonly logRetention?: logs.RetentionDays;
}

/**
 * The API (and the JWT API when asked) in front of `fn`, their access logs and alarms.
 * @throws ConfigError naming `apiAuth` or `apiThrottle`
 */
export function createManagementApi(
  scope: Construct,
  fn: lambda.IFunction,
  role: iam.IRole,
  alarmTopic: sns.ITopic,
  props: ManagementApiProps,
): ManagementApi {
  const throttle = checkThrottle(props.apiThrottle ?? DEFAULT_API_THROTTLE);
  const jwt = props.apiAuth?.jwt;
  const iamApi = httpApi(scope, 'Api', {
    description: 'handoff management API (docs/contract.md §16): IAM (SigV4) authorization on every route',
    authorizer: new HttpIamAuthorizer(),
    fn,
    throttle,
    logRetention: props.logRetention,
  });

  let jwtApi: { api: apigw.HttpApi; url: string } | undefined;
  let userPool: cognito.UserPool | undefined;
  let userPoolClient: cognito.UserPoolClient | undefined;
  if (jwt !== undefined) {
    let authorizer: apigw.IHttpRouteAuthorizer;
    if ('userPool' in jwt) {
      ({ userPool, userPoolClient } = apiUserPool(scope));
      authorizer = new HttpUserPoolAuthorizer('ApiJwtAuthorizer', userPool, { userPoolClients: [userPoolClient] });
    } else {
      authorizer = new HttpJwtAuthorizer('ApiJwtAuthorizer', checkIssuer(jwt.issuer), { jwtAudience: checkAudience(jwt.audience) });
    }
    jwtApi = httpApi(scope, 'ApiJwt', {
      description: 'handoff management API for people (docs/contract.md §16): JWT authorization on every route',
      authorizer,
      scopes: checkScopes(jwt.scopes),
      fn,
      throttle,
      logRetention: props.logRetention,
    });
  }

  const fiveMinutes = Duration.minutes(5);
  const alarm = (id: string, metric: cloudwatch.IMetric, description: string) =>
    new cloudwatch.Alarm(scope, id, {
      alarmDescription: `handoff: ${description}`,
      metric,
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
  const serverErrors = (which: string) =>
    `the management API${which} answered 5xx in the last 5 minutes: an internal problem document or a failed invocation. The function's log has an \`api request failed\` line (request ID, operation, error) for each; its access log the status by route.`;
  const alarms: ApiAlarms = {
    apiServerErrors: alarm('ApiServerErrorsAlarm', iamApi.api.metricServerError({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }), serverErrors('')),
    ...(jwtApi !== undefined
      ? {
          apiJwtServerErrors: alarm(
            'ApiJwtServerErrorsAlarm',
            jwtApi.api.metricServerError({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
            serverErrors(' for people (JWT)'),
          ),
        }
      : {}),
    apiErrors: alarm(
      'ApiErrorsAlarm',
      fn.metricErrors({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      `the management API's function failed invocations (a crash, or a timeout at ${API_FUNCTION_TIMEOUT_SECONDS} s): callers got a 5xx without a problem document. Read its log for the request IDs; a deploy that broke it: roll back.`,
    ),
  };
  const action = new SnsAction(alarmTopic);
  for (const each of Object.values(alarms)) {
    each.addAlarmAction(action);
    each.addOkAction(action);
  }
  // cloudwatch:GetMetricData has no resource to name (docs/contract.md §16 stats reads the
  // consumer's metrics): the one wildcard, read-only, on this role alone.
  Validations.of(role).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      "cloudwatch:GetMetricData (the stats route: the consumer's delivery metrics) supports no resource-level permission or condition key, so its statement names Resource *; it reads metrics only. Every other action names its table, index, queue, key or secret.",
  });

  return {
    api: iamApi.api,
    url: iamApi.url,
    ...(jwtApi !== undefined ? { jwtApi: jwtApi.api, jwtUrl: jwtApi.url } : {}),
    ...(userPool !== undefined ? { userPool } : {}),
    ...(userPoolClient !== undefined ? { userPoolClient } : {}),
    alarms,
  };
}

/**
 * One HTTP API: a route per operation and the catch-all, all on `authorizer`; the `$default` stage,
 * throttled and access-logged.
 */
function httpApi(
  scope: Construct,
  id: string,
  options: {
    description: string;
    authorizer: apigw.IHttpRouteAuthorizer;
    /** OAuth scopes a token must grant one of, on every route (JWT only). */
    scopes?: readonly string[];
    fn: lambda.IFunction;
    throttle: ApiThrottle;
    logRetention: logs.RetentionDays | undefined;
  },
): { api: apigw.HttpApi; url: string } {
  // One permission for the API rather than one per route: the function answers every route.
  const integration = new HttpLambdaIntegration(`${id}Integration`, options.fn, { scopePermissionToRoute: false });
  const api = new apigw.HttpApi(scope, id, {
    apiName: `${Stack.of(scope).stackName}-${id}`,
    description: options.description,
    createDefaultStage: false,
    defaultAuthorizer: options.authorizer,
    ...(options.scopes !== undefined ? { defaultAuthorizationScopes: [...options.scopes] } : {}),
    // The catch-all: an unknown path or method, answered by the router as a problem document.
    defaultIntegration: integration,
  });
  for (const key of API_ROUTE_KEYS) {
    const [method, path] = key.split(' ') as [keyof typeof apigw.HttpMethod, string];
    api.addRoutes({ path, methods: [apigw.HttpMethod[method]], integration });
  }
  const accessLogs = new logs.LogGroup(scope, `${id}AccessLogs`, { retention: options.logRetention ?? logs.RetentionDays.ONE_MONTH });
  const stage = api.addStage(`${id}Stage`, {
    stageName: '$default',
    autoDeploy: true,
    throttle: options.throttle,
    accessLogSettings: { destination: new apigw.LogGroupLogDestination(accessLogs), format: ACCESS_LOG_FORMAT },
  });
  return { api, url: stage.url };
}

/**
 * One JSON line per request: who, what route, how it ended and how long it took; never a header,
 * the query or the body (a URL's query may carry a token; bodies carry payloads and secrets).
 */
export const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  caller: '$context.identity.userArn',
  subject: '$context.authorizer.claims.sub',
  requestTime: '$context.requestTimeEpoch',
  route: '$context.routeKey',
  status: '$context.status',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  integrationLatencyMs: '$context.integrationLatency',
  authorizerError: '$context.authorizer.error',
  integrationError: '$context.integrationErrorMessage',
} as const;

const ACCESS_LOG_FORMAT = AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS));

/**
 * The user pool for people (`apiAuth.jwt.userPool`): accounts made by an administrator only,
 * sign-in by email, MFA by an authenticator app (required), passwords of 12 characters of every
 * kind, Plus tier with threat protection enforced (a handful of operators: its price is per active
 * user), retained with the stack as the tables are.
 */
function apiUserPool(scope: Construct): { userPool: cognito.UserPool; userPoolClient: cognito.UserPoolClient } {
  const userPool = new cognito.UserPool(scope, 'ApiUserPool', {
    selfSignUpEnabled: false,
    signInAliases: { email: true },
    mfa: cognito.Mfa.REQUIRED,
    mfaSecondFactor: { otp: true, sms: false },
    passwordPolicy: { minLength: 12, requireLowercase: true, requireUppercase: true, requireDigits: true, requireSymbols: true },
    accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
    featurePlan: cognito.FeaturePlan.PLUS,
    standardThreatProtectionMode: cognito.StandardThreatProtectionMode.FULL_FUNCTION,
    deletionProtection: true,
  });
  const userPoolClient = userPool.addClient('ApiClient', {
    authFlows: { userSrp: true },
    generateSecret: false,
    preventUserExistenceErrors: true,
    accessTokenValidity: Duration.hours(1),
    idTokenValidity: Duration.hours(1),
  });
  return { userPool, userPoolClient };
}

/** @throws ConfigError */
function checkThrottle(throttle: ApiThrottle): ApiThrottle {
  const { rateLimit, burstLimit } = throttle;
  if (!(Number.isFinite(rateLimit) && rateLimit > 0 && rateLimit <= 10_000)) {
    throw new ConfigError('apiThrottle', `rateLimit must be a number of requests a second above 0, at most 10000, got ${rateLimit}`);
  }
  if (!(Number.isInteger(burstLimit) && burstLimit >= 1 && burstLimit <= 5_000)) {
    throw new ConfigError('apiThrottle', `burstLimit must be a whole number from 1 to 5000, got ${burstLimit}`);
  }
  return { rateLimit, burstLimit };
}

/** @throws ConfigError */
function checkIssuer(issuer: string): string {
  // Known at deploy only (a parameter): API Gateway checks it then.
  if (Token.isUnresolved(issuer)) return issuer;
  if (!/^https:\/\/[^\s/?#@]+(\/[^\s?#]*)?$/.test(issuer)) {
    throw new ConfigError('apiAuth', `jwt.issuer must be an https URL without a query, got ${JSON.stringify(issuer.slice(0, 80))}`);
  }
  return issuer;
}

/** @throws ConfigError */
function checkAudience(audience: readonly string[]): string[] {
  if (audience.length === 0 || audience.some((a) => typeof a !== 'string' || a.trim() === '')) {
    throw new ConfigError('apiAuth', 'jwt.audience must name at least one audience, none empty');
  }
  return [...audience];
}

/** @throws ConfigError naming apiAuth when a scope is empty or holds a space (a scope claim is space-separated) */
function checkScopes(scopes: readonly string[] | undefined): readonly string[] | undefined {
  if (scopes === undefined) return undefined;
  if (scopes.length === 0 || scopes.some((scope) => !/^[\x21-\x7e]+$/.test(scope))) {
    throw new ConfigError('apiAuth', 'jwt.scopes must name at least one scope, each printable and without spaces');
  }
  return scopes;
}
