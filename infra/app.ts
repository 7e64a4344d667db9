/**
 * The handoff CDK app: one stack (default name `Handoff`, context `stackName` overrides) around
 * the WebhookDelivery construct, checked by cdk-nag's AwsSolutions rules at synth.
 *
 * Context beyond the settings: `stackName`, `alarmTopicArn` (an existing SNS topic for the alarms;
 * unset, the stack makes one, output as `AlarmTopicArn`),
 * `signingSecret` (the complete ARN of an existing secret, or `none` for unsigned webhooks; unset,
 * the stack generates one), and `endpointsFile`: a JSON file `{"endpoints": [ … ]}` of endpoints
 * the stack seeds into its registry (docs/contract.md §11), each signing secret the complete ARN of
 * a Secrets Manager secret (a value would land in the template), and so each other secret value (a
 * header's, `auth.clientSecret`, `tls.privateKey`: `{"secretArn": …}`, never `{"secret": …}`). With it, `webhookUrl` is optional:
 * given, it adds the endpoint `default`; absent, no `WebhookUrl` parameter is asked for.
 *
 * The management API (docs/contract.md §16) is always deployed behind IAM (output `ApiUrl`). For
 * people with tokens (`apiAuth.jwt`, docs/deploying.md): `apiJwtIssuer` and `apiJwtAudience`
 * (comma-separated) for an OIDC issuer's tokens, or `apiUserPool=true` for a Cognito user pool the
 * stack makes; either adds `ApiJwtUrl`, and the console on it, `ConsoleUrl` (docs/contract.md §17),
 * signing in at that issuer. Portal links always open the console at `PortalConsoleUrl`.
 *
 * Static egress (`egress`, docs/deploying.md): `egressStaticIps=true` puts the consumer in a VPC whose
 * two NAT gateways have Elastic IPs, output as `EgressIps` for receivers to allowlist;
 * `egressExtraPorts` (comma-separated) are ports receivers listen on besides 443 (and 80 with `allowHttp`).
 *
 * Traces (`tracing`, docs/tracing.md): `tracing=xray` (the default), `otlp` with
 * `tracingOtlpEndpoint`, or `off`; the construct checks them, naming the key.
 *
 * Settings come from CDK context and pass through lib/config.ts's `readSettings`, the same parser
 * the local sandbox applies to its `HANDOFF_*` variables:
 *
 *   npx cdk deploy -c webhookUrl=https://receiver.example.com/hooks -c retrySchedule=30,120,600
 *   npx cdk deploy --parameters WebhookUrl=https://receiver.example.com/hooks
 *   npx cdk deploy -c endpointsFile=endpoints.json
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { App, CfnOutput, CfnParameter, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { readSettings, SETTING_VARIABLES, type Settings } from '../lib/config';
import { ConfigError, EndpointError } from '../lib/errors';
import type { ApiAuth } from './delivery/api';
import type { EgressOptions } from './delivery/egress';
import type { TracingMode } from './delivery/tracing';
import { deploymentToJson, parseEndpointFields, type EndpointFields } from '../lib/endpoints/endpoint';
import { secretValuePlaces } from '../lib/endpoints/secret-values';
import { STACK_OUTPUTS } from '../lib/stack-outputs';
import { COMPLETE_SECRET_ARN } from './registry/seed-call';
import { WebhookDelivery, type EndpointDeclaration, type WebhookDeliveryProps } from './webhook-delivery';

/** CDK context key → the `HANDOFF_*` variable lib/config.ts reads for the same setting. */
export const SETTINGS_CONTEXT = SETTING_VARIABLES;

/** The stack's outputs; the operator CLI reads them by these exact keys (`--stack NAME`). */
export { STACK_OUTPUTS };

type ContextReader = (key: string) => unknown;

/**
 * Reads the settings from context through the one definition. Errors name the context key.
 * Without `webhookUrl` the stack asks for it as the `WebhookUrl` parameter at deploy time.
 * @throws ConfigError
 */
export function settingsFromContext(context: ContextReader): Settings {
  const env: Record<string, string | undefined> = {};
  for (const [key, variable] of Object.entries(SETTINGS_CONTEXT)) env[variable] = contextString(context(key));
  try {
    return readSettings(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const key = Object.entries(SETTINGS_CONTEXT).find(([, variable]) => variable === error.variable)?.[0];
    if (key === undefined) throw error;
    // A rule between settings names the others too: by their context keys here.
    let problem = error.message.slice(error.variable.length + 1);
    for (const [other, variable] of Object.entries(SETTINGS_CONTEXT)) problem = problem.replaceAll(variable, other);
    throw new ConfigError(key, `(CDK context) ${problem}`);
  }
}

/**
 * What the `WebhookUrl` parameter accepts: what the consumer accepts, https (or http where
 * `allowHttp` is set) with no `user:password@`. The consumer's guard still checks the address.
 */
export function webhookUrlPattern(allowHttp: boolean): string {
  return `^${allowHttp ? 'https?' : 'https'}://[^\\s/?#@]+([/?#]\\S*)?$`;
}

/**
 * Reads the endpoints file the `endpointsFile` context names: `{"endpoints": [ … ]}`, each checked
 * for its shape (the deployment's rules are checked by the construct), each secret an ARN, and each
 * other secret value too (a header's, `auth.clientSecret`, `tls.privateKey`: `{"secretArn": …}`).
 * @throws ConfigError naming the context key and the file, EndpointError naming the endpoint and field
 */
export function endpointsFromFile(path: string): EndpointFields[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const problem = error instanceof SyntaxError ? 'is not valid JSON' : 'cannot be read';
    throw new ConfigError('endpointsFile', `(CDK context) ${path} ${problem}`);
  }
  const list = (json as { endpoints?: unknown } | null)?.endpoints;
  if (!Array.isArray(list)) throw new ConfigError('endpointsFile', `(CDK context) ${path} must hold {"endpoints": [ … ]}`);
  const names = new Set<string>();
  return list.map((raw: unknown) => {
    const fields = parseEndpointFields(raw);
    if (names.has(fields.name)) throw new EndpointError(fields.name, 'name', `is declared twice in ${path}`);
    names.add(fields.name);
    for (const field of ['secret', 'previousSecret'] as const) {
      const value = fields[field];
      if (value !== undefined && !COMPLETE_SECRET_ARN.test(value)) {
        throw new EndpointError(
          fields.name,
          field,
          value.startsWith('arn:')
            ? `must be the complete ARN of a Secrets Manager secret in ${path}, with the six characters Secrets Manager adds to its name (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf)`
            : `must be the complete ARN of a Secrets Manager secret in ${path}: a value would land in the template (the value is not shown)`,
        );
      }
    }
    // Every other secret value (a header's, auth.clientSecret, tls.privateKey, a certificate kept as a secret).
    for (const { path: at, value } of secretValuePlaces(fields)) {
      if ('secret' in value) {
        throw new EndpointError(
          fields.name,
          at,
          `must be {"secretArn": …}, the complete ARN of a Secrets Manager secret, in ${path}, never {"secret": …}: a value would land in the template (the value is not shown)`,
        );
      }
      if (!COMPLETE_SECRET_ARN.test(value.secretArn)) {
        throw new EndpointError(
          fields.name,
          at,
          `must name its secret by the complete ARN in ${path}, with the six characters Secrets Manager adds to its name (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf)`,
        );
      }
    }
    return fields;
  });
}

/** Context from the command line is a string; from cdk.json it may be a number, boolean or list. */
function contextString(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) return value.map(String).join(',');
  return String(value);
}

export interface HandoffStackProps extends StackProps {
  readonly delivery: Omit<WebhookDeliveryProps, 'alarmTopic' | 'signingSecret'>;
  /** An existing SNS topic for alarm notifications. Unset: the construct makes one (output `AlarmTopicArn`). */
  readonly alarmTopicArn?: string;
  /** An existing secret (complete ARN) holding the signing key; `'none'` sends unsigned; unset generates one. */
  readonly signingSecret?: string | 'none';
  /** Endpoints to seed, as `endpointsFromFile` reads them: each secret the complete ARN of a secret. */
  readonly endpoints?: readonly EndpointFields[];
}

export class HandoffStack extends Stack {
  readonly delivery: WebhookDelivery;

  constructor(scope: Construct, id: string, props: HandoffStackProps) {
    super(scope, id, props);
    const signing = props.signingSecret;
    const settings = props.delivery.settings;
    const endpoints: EndpointDeclaration[] = [
      ...(props.delivery.endpoints ?? []),
      ...(props.endpoints ?? []).map(({ secret, previousSecret, ...fields }) => ({
        ...fields,
        ...(secret !== undefined ? { secret: Secret.fromSecretCompleteArn(this, `EndpointSecret-${fields.name}`, secret) } : {}),
        ...(previousSecret !== undefined
          ? { previousSecret: Secret.fromSecretCompleteArn(this, `EndpointPreviousSecret-${fields.name}`, previousSecret) }
          : {}),
      })),
    ];
    // Given at synth (`-c webhookUrl=…`) it is validated there; otherwise it is a parameter of
    // the deployment, so `cdk synth` works with no settings at all; with declared endpoints and no
    // webhook URL there is no endpoint `default` and nothing to ask for.
    const webhookUrl =
      settings.webhookUrl ??
      (endpoints.length > 0 ? undefined : new CfnParameter(this, 'WebhookUrl', {
        type: 'String',
        description: "The receiver's endpoint (https://…); or set it at synth with -c webhookUrl=…",
        // A receiver's URL may carry a token in its query: CloudFormation never shows the value.
        noEcho: true,
        allowedPattern: webhookUrlPattern(settings.allowHttp ?? false),
        constraintDescription: `must be an ${settings.allowHttp ? 'http(s)' : 'https'} URL without user:password@`,
      }).valueAsString);
    this.delivery = new WebhookDelivery(this, 'Delivery', {
      ...props.delivery,
      settings: { ...settings, webhookUrl },
      ...(endpoints.length > 0 ? { endpoints } : {}),
      signingSecret:
        signing === undefined ? 'generate'
        : signing === 'none' ? 'none'
        : Secret.fromSecretCompleteArn(this, 'SigningSecret', signing),
      ...(props.alarmTopicArn ? { alarmTopic: Topic.fromTopicArn(this, 'AlarmTopic', props.alarmTopicArn) } : {}),
    });
    const d = this.delivery;
    new CfnOutput(this, STACK_OUTPUTS.queueUrl, { value: d.queue.queueUrl, description: 'Producers SendMessage here' });
    new CfnOutput(this, STACK_OUTPUTS.queueArn, { value: d.queue.queueArn });
    new CfnOutput(this, STACK_OUTPUTS.deadLetterQueueUrl, { value: d.deadLetterQueue.queueUrl });
    new CfnOutput(this, STACK_OUTPUTS.redriveQueueUrl, { value: d.redriveQueue.queueUrl, description: 'Drained by the recovery function' });
    new CfnOutput(this, STACK_OUTPUTS.ledgerTableName, { value: d.ledgerTable.tableName });
    new CfnOutput(this, STACK_OUTPUTS.consumerFunctionName, { value: d.consumer.functionName });
    // `handoff send --stack` checks events against this, not the operator's own setting.
    new CfnOutput(this, STACK_OUTPUTS.payloadLimitBytes, { value: String(d.settings.payloadLimitBytes) });
    // `handoff endpoint …` writes the registry and checks an endpoint against these defaults and limits.
    new CfnOutput(this, STACK_OUTPUTS.endpointsTableName, { value: d.endpointRegistry.table.tableName });
    new CfnOutput(this, STACK_OUTPUTS.orderedQueueUrl, {
      value: d.orderedQueue.queueUrl,
      description: "Producers who need a shipment's order SendMessage here (MessageGroupId = shipment, MessageDeduplicationId = event ID)",
    });
    new CfnOutput(this, STACK_OUTPUTS.endpointDefaults, { value: JSON.stringify(deploymentToJson(d.settings)) });
    if (d.signingSecret) new CfnOutput(this, 'SigningSecretArn', { value: d.signingSecret.secretArn });
    new CfnOutput(this, STACK_OUTPUTS.sealKeySecretArn, { value: d.sealKey.secretArn, description: "Operators' replays and releases are sealed with it (GetSecretValue)" });
    new CfnOutput(this, STACK_OUTPUTS.endpointsKeyArn, {
      value: d.endpointRegistry.encryptionKey.keyArn,
      description: 'handoff endpoint add/update/rotate-secret encrypt signing secrets with it (kms:Encrypt)',
    });
    new CfnOutput(this, STACK_OUTPUTS.alarmTopicArn, { value: d.alarmTopic.topicArn, description: 'Alarms notify here: subscribe the on-call (email, chat, pager)' });
    new CfnOutput(this, STACK_OUTPUTS.apiUrl, { value: d.apiUrl, description: 'The management API (IAM: SigV4 with execute-api:Invoke); described at /v1/openapi.json' });
    if (d.apiJwtUrl !== undefined) {
      new CfnOutput(this, STACK_OUTPUTS.apiJwtUrl, { value: d.apiJwtUrl, description: 'The management API for people: a JWT as the bearer token' });
    }
    if (d.consoleUrl !== undefined) {
      new CfnOutput(this, STACK_OUTPUTS.consoleUrl, { value: d.consoleUrl, description: 'The console: open it in a browser and sign in' });
    }
    new CfnOutput(this, STACK_OUTPUTS.portalConsoleUrl, {
      value: d.portalConsoleUrl,
      description: 'The console portal links open (POST /v1/portal-links answers links to it): one owner, at most 24 h',
    });
    if (d.egressIps !== undefined) {
      new CfnOutput(this, STACK_OUTPUTS.egressIps, {
        value: d.egressIps,
        description: "The addresses every webhook leaves from (the NAT gateways' Elastic IPs): receivers allowlist these",
      });
    }
    if (d.apiUserPool !== undefined && d.apiUserPoolClient !== undefined) {
      new CfnOutput(this, STACK_OUTPUTS.apiUserPoolId, { value: d.apiUserPool.userPoolId, description: "The API's people: add them here (admin-create-user)" });
      new CfnOutput(this, STACK_OUTPUTS.apiUserPoolClientId, { value: d.apiUserPoolClient.userPoolClientId });
    }
  }
}

/**
 * The management API's JWT authorization from context: `apiUserPool=true`, or `apiJwtIssuer` with
 * `apiJwtAudience` (comma-separated) and, for the console's sign-in at that issuer (`jwt.console`),
 * `apiConsoleClientId`, `apiConsoleAuthorizeUrl` and `apiConsoleTokenUrl`. Undefined: IAM alone.
 * @throws ConfigError naming the context key
 */
export function apiAuthFromContext(context: ContextReader): ApiAuth | undefined {
  const userPool = contextString(context('apiUserPool'));
  const issuer = contextString(context('apiJwtIssuer'));
  const list = (key: string) =>
    contextString(context(key))
      ?.split(',')
      .map((a) => a.trim())
      .filter((a) => a !== '');
  const audience = list('apiJwtAudience');
  // A token must grant one of these OAuth scopes as well (apiAuth.jwt.scopes).
  const scopes = list('apiJwtScopes');
  const withScopes = scopes !== undefined && scopes.length > 0 ? { scopes } : {};
  if (userPool !== undefined && userPool !== 'true' && userPool !== 'false') {
    throw new ConfigError('apiUserPool', `(CDK context) must be true or false, got ${JSON.stringify(userPool.slice(0, 40))}`);
  }
  // The console's sign-in at the issuer (apiAuth.jwt.console): its client, and the issuer's endpoints, both or neither.
  const clientId = contextString(context('apiConsoleClientId'));
  const authorizeUrl = contextString(context('apiConsoleAuthorizeUrl'));
  const tokenUrl = contextString(context('apiConsoleTokenUrl'));
  const firstConsoleKey =
    clientId !== undefined ? 'apiConsoleClientId' : authorizeUrl !== undefined ? 'apiConsoleAuthorizeUrl' : tokenUrl !== undefined ? 'apiConsoleTokenUrl' : undefined;
  if (userPool === 'true') {
    if (issuer !== undefined) throw new ConfigError('apiJwtIssuer', '(CDK context) cannot be given with apiUserPool=true: the user pool is the issuer');
    if (firstConsoleKey !== undefined) throw new ConfigError(firstConsoleKey, "(CDK context) is for apiJwtIssuer's sign-in: with apiUserPool=true the stack makes the console's client and hosted sign-in");
    return { jwt: { userPool: true, ...withScopes } };
  }
  if (issuer === undefined) {
    if (audience !== undefined) throw new ConfigError('apiJwtAudience', '(CDK context) needs apiJwtIssuer');
    if (scopes !== undefined) throw new ConfigError('apiJwtScopes', '(CDK context) needs apiJwtIssuer or apiUserPool=true');
    if (firstConsoleKey !== undefined) throw new ConfigError(firstConsoleKey, '(CDK context) needs apiJwtIssuer');
    return undefined;
  }
  if (audience === undefined || audience.length === 0) throw new ConfigError('apiJwtAudience', '(CDK context) must name the audience apiJwtIssuer issues tokens for');
  if (authorizeUrl !== undefined && tokenUrl === undefined) throw new ConfigError('apiConsoleTokenUrl', '(CDK context) must be given with apiConsoleAuthorizeUrl');
  if (tokenUrl !== undefined && authorizeUrl === undefined) throw new ConfigError('apiConsoleAuthorizeUrl', '(CDK context) must be given with apiConsoleTokenUrl');
  const consoleSignIn = {
    ...(clientId !== undefined ? { clientId } : {}),
    ...(authorizeUrl !== undefined && tokenUrl !== undefined ? { authorizeUrl, tokenUrl } : {}),
  };
  return { jwt: { issuer, audience, ...withScopes, ...(firstConsoleKey !== undefined ? { console: consoleSignIn } : {}) } };
}

/**
 * Static egress from context: `egressStaticIps=true`, and `egressExtraPorts` (comma-separated TCP
 * ports) with it. Undefined: no VPC. @throws ConfigError naming the context key
 */
export function egressFromContext(context: ContextReader): EgressOptions | undefined {
  const staticIps = contextString(context('egressStaticIps'));
  const extra = contextString(context('egressExtraPorts'))
    ?.split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (staticIps !== undefined && staticIps !== 'true' && staticIps !== 'false') {
    throw new ConfigError('egressStaticIps', `(CDK context) must be true or false, got ${JSON.stringify(staticIps.slice(0, 40))}`);
  }
  if (staticIps !== 'true') {
    if (extra !== undefined) throw new ConfigError('egressExtraPorts', '(CDK context) needs egressStaticIps=true');
    return undefined;
  }
  if (extra === undefined || extra.length === 0) return { staticIps: true };
  const ports = extra.map((p) => {
    if (!/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65_535) {
      throw new ConfigError('egressExtraPorts', `(CDK context) must be TCP ports from 1 to 65535, comma-separated, got ${JSON.stringify(p.slice(0, 40))}`);
    }
    return Number(p);
  });
  return { staticIps: true, extraPorts: ports };
}

/** Builds the app from its context; `cdk synth` runs this file through cdk.json. */
export function buildApp(app = new App()): App {
  const context: ContextReader = (key) => app.node.tryGetContext(key);
  const stackName = contextString(context('stackName')) ?? 'Handoff';
  const alarmTopicArn = contextString(context('alarmTopicArn'));
  const signingSecret = contextString(context('signingSecret'));
  const endpointsFile = contextString(context('endpointsFile'));
  const apiAuth = apiAuthFromContext(context);
  const egress = egressFromContext(context);
  const tracing = contextString(context('tracing'));
  const tracingOtlpEndpoint = contextString(context('tracingOtlpEndpoint'));

  new HandoffStack(app, stackName, {
    stackName,
    description: 'handoff: durable, idempotent webhook delivery (SQS, Lambda, DynamoDB)',
    delivery: {
      settings: settingsFromContext(context),
      ...(apiAuth !== undefined ? { apiAuth } : {}),
      ...(egress !== undefined ? { egress } : {}),
      // Checked by the construct (infra/delivery/tracing.ts), which names the key in its refusal.
      ...(tracing !== undefined ? { tracing: tracing as TracingMode } : {}),
      ...(tracingOtlpEndpoint !== undefined ? { tracingOtlpEndpoint } : {}),
    },
    ...(alarmTopicArn ? { alarmTopicArn } : {}),
    ...(signingSecret ? { signingSecret } : {}),
    ...(endpointsFile ? { endpoints: endpointsFromFile(endpointsFile) } : {}),
  });

  // With an unacknowledged finding, synth fails and lists it in validation-report.json.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return app;
}

// Run as the CDK app (not when imported by a test).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    buildApp().synth();
  } catch (error) {
    if (!(error instanceof ConfigError || error instanceof EndpointError)) throw error;
    console.error(`handoff: ${error.message}`);
    process.exit(1);
  }
}
