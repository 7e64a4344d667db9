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
 * people bring a token, and neither weakens the other's routes. A third API, always made, is the
 * one portal links open (`PortalConsoleUrl`): its routes take a Lambda authorizer
 * (functions/api-portal-authorizer.ts) that lets a portal token's holder in as `portal:<owner>`,
 * whom the router confines to that owner's endpoints (api/portal-link.ts). Besides one route per
 * operation, each API's catch-all `$default` route takes the same authorizer, so an unknown path is
 * answered by the router (404, 405 as problem documents) only for a proven caller.
 *
 * **The console** (docs/contract.md §17) is served by the same function on the APIs people open in
 * a browser, the JWT API (`ConsoleUrl`) and the portal API (`PortalConsoleUrl`): `GET /console` and
 * `GET /console/{proxy+}` take no authorization, as the page's files hold no data (every call the
 * page makes goes to /v1, behind the API's authorizer). The function is told how people sign in
 * (CONSOLE_ENV.signIn: the JWT authorizer's issuer, with the client and endpoints `jwt.console`
 * names, or the user pool's hosted sign-in made here)
 * and where portal links point (CONSOLE_ENV.portalConsoleUrl), whichever API mints them.
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
 *
 * No cycle: an API's URL is built from its ID, the region and the URL suffix, never from its stage
 * or routes, so the function's environment may name the API that invokes it (the API resource
 * itself names no function; its integration, routes and permission do, and they come after). The
 * user pool's app client names the JWT API's console URL as its callback, and the JWT authorizer
 * names the client as its audience: the API, then the client, then the authorizer and the routes.
 */
import { Duration, Stack, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import {
  HttpIamAuthorizer,
  HttpLambdaAuthorizer,
  HttpLambdaResponseType,
} from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as cognito from 'aws-cdk-lib/aws-cognito';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';
import { CONSOLE_ENV } from '../../console/site';
import { ConfigError } from '../../lib/errors';
import { checkScopes, peopleSignIn } from './api-sign-in';
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
  'GET /v1/stats/minutes',
  'POST /v1/portal-links',
  'GET /v1/openapi.json',
] as const;

/**
 * The console's routes (docs/contract.md §17) on the APIs people open in a browser (JWT, portal):
 * no authorization, since the page's files hold no data. `/console/` (the page itself) takes the
 * first: API Gateway matches a path with a trailing slash to the route without it, and the function
 * reads the raw path.
 */
export const CONSOLE_ROUTE_KEYS = ['GET /console', 'GET /console/{proxy+}'] as const;

import type { ApiAuth } from './api-sign-in';

export type { ApiAuth };

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
  /** 5xx answers of the portal API in 5 minutes, its authorizer's failures among them. */
  readonly apiPortalServerErrors: cloudwatch.Alarm;
  /** Failed invocations of the API function in 5 minutes (a crash or a timeout). */
  readonly apiErrors: cloudwatch.Alarm;
}

export interface ManagementApi {
  /** The API services call with SigV4: every route IAM-authorized. */
  readonly api: apigw.HttpApi;
  readonly url: string;
  /** The API people call with a JWT (`apiAuth.jwt`), and the console on it (`<jwtUrl>console/`). */
  readonly jwtApi?: apigw.HttpApi;
  readonly jwtUrl?: string;
  readonly consoleUrl?: string;
  /** The API portal links open: its /v1 routes behind the portal authorizer; the console on it. */
  readonly portalApi: apigw.HttpApi;
  readonly portalUrl: string;
  readonly portalConsoleUrl: string;
  /** The Cognito user pool, app client and sign-in domain made for it (`apiAuth.jwt.userPool`). */
  readonly userPool?: cognito.UserPool;
  readonly userPoolClient?: cognito.UserPoolClient;
  readonly userPoolDomain?: cognito.UserPoolDomain;
  readonly alarms: ApiAlarms;
}

export interface ManagementApiProps {
  readonly apiAuth?: ApiAuth;
  readonly apiThrottle?: ApiThrottle;
  readonly logRetention?: logs.RetentionDays;
}

/** The functions behind the APIs: the API's own (and its role), and the portal API's authorizer. */
export interface ManagementApiFunctions {
  readonly api: lambda.Function;
  readonly apiRole: iam.IRole;
  readonly portalAuthorizer: lambda.IFunction;
}

/**
 * The APIs in front of the API function (IAM, the portal's, and the JWT API when asked), their
 * access logs and alarms; the console's variables on the function.
 * @throws ConfigError naming `apiAuth` or `apiThrottle`
 */
export function createManagementApi(
  scope: Construct,
  functions: ManagementApiFunctions,
  alarmTopic: sns.ITopic,
  props: ManagementApiProps,
): ManagementApi {
  const { api: fn, apiRole: role } = functions;
  const throttle = checkThrottle(props.apiThrottle ?? DEFAULT_API_THROTTLE);
  const jwt = props.apiAuth?.jwt;
  const scopes = jwt !== undefined ? checkScopes(jwt.scopes) : undefined;
  const iamApi = httpApi(scope, 'Api', {
    description: 'handoff management API (docs/contract.md §16): IAM (SigV4) authorization on every route',
    authorizer: new HttpIamAuthorizer(),
    fn,
    throttle,
    logRetention: props.logRetention,
  });

  // Portal links: a Lambda authorizer checks the token on every request (no cache, so a link ends
  // when it expires, not a cache's lifetime later), and hands the router `portal:<owner>`.
  const portalApi = httpApi(scope, 'ApiPortal', {
    description: 'handoff management API for portal links (docs/contract.md §16, §17): a portal token on every /v1 route; the console',
    authorizer: new HttpLambdaAuthorizer('ApiPortalAuthorizer', functions.portalAuthorizer, {
      responseTypes: [HttpLambdaResponseType.SIMPLE],
      identitySource: ['$request.header.Authorization'],
      resultsCacheTtl: Duration.seconds(0),
    }),
    fn,
    throttle,
    logRetention: props.logRetention,
    console: true,
  });
  const portalConsoleUrl = `${portalApi.url}console/`;
  fn.addEnvironment(CONSOLE_ENV.portalConsoleUrl, portalConsoleUrl);

  let jwtApi: { api: apigw.HttpApi; url: string } | undefined;
  let consoleUrl: string | undefined;
  let userPool: cognito.UserPool | undefined;
  let userPoolClient: cognito.UserPoolClient | undefined;
  let userPoolDomain: cognito.UserPoolDomain | undefined;
  if (jwt !== undefined) {
    const people = peopleSignIn(scope, jwt, scopes, () => consoleUrl);
    ({ userPool, userPoolClient, userPoolDomain } = people);
    jwtApi = httpApi(scope, 'ApiJwt', {
      description: 'handoff management API for people (docs/contract.md §16): JWT authorization on every /v1 route; the console (§17)',
      authorizer: people.authorizer,
      scopes,
      fn,
      throttle,
      logRetention: props.logRetention,
      console: true,
    });
    consoleUrl = `${jwtApi.url}console/`;
    fn.addEnvironment(CONSOLE_ENV.signIn, Stack.of(scope).toJsonString(people.signIn));
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
    apiPortalServerErrors: alarm(
      'ApiPortalServerErrorsAlarm',
      portalApi.api.metricServerError({ period: fiveMinutes, statistic: cloudwatch.Stats.SUM }),
      `${serverErrors(' for portal links')} An authorizer that failed (its access log's authorizerError; its own log's \`portal key unreadable\`: the seal key could not be read) answers 500 too.`,
    ),
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
    ...(jwtApi !== undefined ? { jwtApi: jwtApi.api, jwtUrl: jwtApi.url, consoleUrl: consoleUrl! } : {}),
    portalApi: portalApi.api,
    portalUrl: portalApi.url,
    portalConsoleUrl,
    ...(userPool !== undefined ? { userPool } : {}),
    ...(userPoolClient !== undefined ? { userPoolClient } : {}),
    ...(userPoolDomain !== undefined ? { userPoolDomain } : {}),
    alarms,
  };
}

/**
 * One HTTP API: a route per operation and the catch-all, all on `authorizer`; with `console`, the
 * console's routes too, on none; the `$default` stage, throttled and access-logged.
 */
function httpApi(
  scope: Construct,
  id: string,
  options: {
    description: string;
    authorizer: apigw.IHttpRouteAuthorizer;
    /** OAuth scopes a token must grant one of, on every route but the console's (JWT only). */
    scopes?: readonly string[] | undefined;
    fn: lambda.IFunction;
    throttle: ApiThrottle;
    logRetention: logs.RetentionDays | undefined;
    /** Serve the console (CONSOLE_ROUTE_KEYS) without authorization. */
    console?: boolean;
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
  if (options.console) {
    for (const key of CONSOLE_ROUTE_KEYS) {
      const [method, path] = key.split(' ') as [keyof typeof apigw.HttpMethod, string];
      // No scopes either (an empty list, over the API's default): scopes belong to a JWT route.
      const [route] = api.addRoutes({ path, methods: [apigw.HttpMethod[method]], integration, authorizer: new apigw.HttpNoneAuthorizer(), authorizationScopes: [] });
      // On these two routes alone: cdk-nag's finding names each route without authorization.
      Validations.of(route!).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason:
          "The console's page, script and stylesheet (docs/contract.md §17): files with no data in them, which a browser must load before anyone can sign in or read a portal link's fragment. Every /v1 route, and the catch-all, takes the API's authorizer.",
      });
    }
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
  // The portal authorizer's caller (`portal:<owner>`), from the context it answers.
  portalCaller: '$context.authorizer.principal',
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

