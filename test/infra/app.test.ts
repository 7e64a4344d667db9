/**
 * The Handoff app: settings from CDK context through lib/config.ts, and the stack's outputs the
 * operator CLI reads by exact key.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testApp, WARM_UP_MS, STAND_IN_ENTRY, WEBHOOK_URL } from './cdk-context';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SETTINGS } from '../../lib/config';
import { ConfigError, EndpointError } from '../../lib/errors';
import { deploymentFromJson, deploymentToJson } from '../../lib/endpoints/endpoint';
import { retryPolicy } from '../../lib/policy';
import {
  buildApp,
  endpointsFromFile,
  HandoffStack,
  settingsFromContext,
  STACK_OUTPUTS,
  webhookUrlPattern,
  type HandoffStackProps,
} from '../../infra/app';

function contextOf(values: Record<string, unknown>) {
  return (key: string) => values[key];
}

function stack(props: Partial<HandoffStackProps> = {}) {
  const app = testApp();
  const handoff = new HandoffStack(app, 'Handoff', {
    delivery: { settings: { webhookUrl: WEBHOOK_URL }, entry: STAND_IN_ENTRY },
    ...props,
  });
  return { handoff, template: Template.fromStack(handoff) };
}

describe('Function: settingsFromContext', () => {
  it('reads the webhook URL and leaves the rest at the defaults', () => {
    const settings = settingsFromContext(contextOf({ webhookUrl: WEBHOOK_URL }));

    expect(settings).toEqual({ ...DEFAULT_SETTINGS, webhookUrl: WEBHOOK_URL });
  });

  it('reads command-line strings and cdk.json values alike', () => {
    const settings = settingsFromContext(
      contextOf({
        webhookUrl: 'http://host.docker.internal:8080/hooks',
        retrySchedule: '5,10',
        maxAttempts: 3,
        batchSize: '20',
        allowHttp: true,
        allowPrivateCidrs: ['172.16.0.0/12', '192.168.0.0/16'],
      }),
    );

    expect(settings).toEqual({
      ...DEFAULT_SETTINGS,
      webhookUrl: 'http://host.docker.internal:8080/hooks',
      retryPolicy: retryPolicy(3, [5, 10]),
      batchSize: 20,
      allowHttp: true,
      allowPrivateCidrs: ['172.16.0.0/12', '192.168.0.0/16'],
    });
  });

  it('leaves the webhook URL unset when the context has none', () => {
    expect(settingsFromContext(contextOf({})).webhookUrl).toBeUndefined();
  });

  it('names the context key, not the environment variable, in an error', () => {
    const act = () => settingsFromContext(contextOf({ webhookUrl: WEBHOOK_URL, maxConcurrency: '1' }));

    expect(act).toThrow(/^maxConcurrency \(CDK context\) must be a whole number from 2 to 1000, got "1"$/);
  });

  it('refuses a retention shorter than a delivery can live, naming both settings by their context keys', () => {
    const act = () => settingsFromContext(contextOf({ webhookUrl: WEBHOOK_URL, retentionDays: 1 }));

    expect(act).toThrow(ConfigError);
    expect(act).toThrow(/^retentionDays \(CDK context\) must be at least 18 days with retrySchedule\/maxAttempts allowing 6 attempts, got 1: /);
    expect(act).not.toThrow(/HANDOFF_/);
  });

  it('shows a refused URL with its token redacted', () => {
    const act = () => settingsFromContext(contextOf({ webhookUrl: 'https://u:s3cr3t@receiver.example.com/hooks?token=s3cr3t' }));

    expect(act).toThrow('webhookUrl (CDK context) must not carry credentials (user:password@), got https://***@receiver.example.com/hooks?token=***');
  });
});

describe('HandoffStack', () => {
  beforeAll(() => void stack(), WARM_UP_MS);

  it('outputs the queue URL and ARN, the dead-letter and redrive queue URLs, the ledger and registry tables, the consumer, the endpoint defaults, the ordered intake, the seal key secret (SealKeySecretArn), the alarm topic (AlarmTopicArn), the registry key (EndpointsKeyArn) and the portal console (PortalConsoleUrl) by exact key', () => {
    const { template } = stack();

    // Those of the management API's JWT authorization only with it (test/infra/api.test.ts), and
    // EgressIps only with static egress (test/infra/egress.test.ts).
    const optional: string[] = [
      STACK_OUTPUTS.apiJwtUrl,
      STACK_OUTPUTS.consoleUrl,
      STACK_OUTPUTS.apiUserPoolId,
      STACK_OUTPUTS.apiUserPoolClientId,
      STACK_OUTPUTS.egressIps,
    ];
    expect(Object.keys(template.toJSON().Outputs).sort()).toEqual(
      [...Object.values(STACK_OUTPUTS).filter((key) => !optional.includes(key)), 'SigningSecretArn'].sort(),
    );
    expect(STACK_OUTPUTS).toEqual({
      queueUrl: 'QueueUrl',
      queueArn: 'QueueArn',
      deadLetterQueueUrl: 'DeadLetterQueueUrl',
      redriveQueueUrl: 'RedriveQueueUrl',
      ledgerTableName: 'LedgerTableName',
      consumerFunctionName: 'ConsumerFunctionName',
      payloadLimitBytes: 'PayloadLimitBytes',
      endpointsTableName: 'EndpointsTableName',
      endpointDefaults: 'EndpointDefaults',
      orderedQueueUrl: 'OrderedQueueUrl',
      sealKeySecretArn: 'SealKeySecretArn',
      alarmTopicArn: 'AlarmTopicArn',
      endpointsKeyArn: 'EndpointsKeyArn',
      apiUrl: 'ApiUrl',
      apiJwtUrl: 'ApiJwtUrl',
      consoleUrl: 'ConsoleUrl',
      portalConsoleUrl: 'PortalConsoleUrl',
      apiUserPoolId: 'ApiUserPoolId',
      apiUserPoolClientId: 'ApiUserPoolClientId',
      egressIps: 'EgressIps',
    });
  });

  it("outputs the registry key's ARN (EndpointsKeyArn), which endpoint secrets are encrypted with, by reference to the key", () => {
    const { template, handoff } = stack();
    const key = handoff.getLogicalId(handoff.delivery.endpointRegistry.encryptionKey.node.defaultChild as never);

    template.hasOutput(STACK_OUTPUTS.endpointsKeyArn, { Value: { 'Fn::GetAtt': [key, 'Arn'] } });
  });

  it("outputs the stack's own alarm topic (AlarmTopicArn) by reference when no alarmTopicArn is given, and every alarm notifies it", () => {
    const { template, handoff } = stack();
    const topic = { Ref: handoff.getLogicalId(handoff.delivery.alarmTopic.node.defaultChild as never) };

    template.resourceCountIs('AWS::SNS::Topic', 1);
    template.hasOutput(STACK_OUTPUTS.alarmTopicArn, { Value: topic });
    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [topic], OKActions: [topic] });
  });

  it('outputs the alarm topic given as alarmTopicArn, and makes none', () => {
    const topicArn = 'arn:aws:sns:eu-west-1:111122223333:ops-alarms';
    const { template } = stack({ alarmTopicArn: topicArn });

    template.resourceCountIs('AWS::SNS::Topic', 0);
    template.hasOutput(STACK_OUTPUTS.alarmTopicArn, { Value: topicArn });
  });

  it("outputs the seal key secret's ARN (SealKeySecretArn) by reference to the secret", () => {
    const { template, handoff } = stack();
    const secret = handoff.getLogicalId(handoff.delivery.sealKey.node.defaultChild as never);

    template.hasOutput('SealKeySecretArn', { Value: { Ref: secret } });
  });

  it("outputs the ordered intake's URL by reference to the FIFO queue", () => {
    const { template, handoff } = stack();
    const queue = handoff.getLogicalId(handoff.delivery.orderedQueue.node.defaultChild as never);

    template.hasOutput(STACK_OUTPUTS.orderedQueueUrl, { Value: { Ref: queue } });
  });

  it("outputs the redrive queue's URL by reference to the redrive queue, apart from the dead-letter queue's", () => {
    const { template, handoff } = stack();
    const ref = (construct: { node: { defaultChild?: unknown } }) => ({ Ref: handoff.getLogicalId(construct.node.defaultChild as never) });

    template.hasOutput(STACK_OUTPUTS.redriveQueueUrl, { Value: ref(handoff.delivery.redriveQueue) });
    template.hasOutput(STACK_OUTPUTS.deadLetterQueueUrl, { Value: ref(handoff.delivery.deadLetterQueue) });
    expect(ref(handoff.delivery.redriveQueue)).not.toEqual(ref(handoff.delivery.deadLetterQueue));
  });

  it('outputs the endpoint registry table by reference to the table', () => {
    const { template, handoff } = stack();
    const table = handoff.getLogicalId(handoff.delivery.endpointRegistry.table.node.defaultChild as never);

    template.hasOutput(STACK_OUTPUTS.endpointsTableName, { Value: { Ref: table } });
  });

  it("outputs the deployment's endpoint defaults as the JSON the command reads back", () => {
    const settings = { webhookUrl: WEBHOOK_URL, retryPolicy: retryPolicy(4, [5, 60, 300]), attemptTimeoutMs: 5_000, allowPrivateCidrs: ['10.0.0.0/8'] };
    const { template, handoff } = stack({ delivery: { settings, entry: STAND_IN_ENTRY } });
    const value = (template.toJSON().Outputs as Record<string, { Value: string }>)[STACK_OUTPUTS.endpointDefaults]!.Value;

    expect(JSON.parse(value)).toEqual(deploymentToJson(handoff.delivery.settings));
    expect(deploymentFromJson(JSON.parse(value), STACK_OUTPUTS.endpointDefaults)).toEqual({
      retryPolicy: retryPolicy(4, [5, 60, 300]),
      attemptTimeoutMs: 5_000,
      retentionDays: DEFAULT_SETTINGS.retentionDays,
      allowPrivateCidrs: ['10.0.0.0/8'],
      allowHttp: false,
    });
  });

  it('outputs the endpoint defaults when the webhook URL is a deployment parameter', () => {
    const { template } = stack({ delivery: { settings: {}, entry: STAND_IN_ENTRY } });
    const value = (template.toJSON().Outputs as Record<string, { Value: unknown }>)[STACK_OUTPUTS.endpointDefaults]!.Value;

    expect(JSON.parse(value as string)).toEqual(deploymentToJson(DEFAULT_SETTINGS));
  });

  it('asks for no WebhookUrl parameter when the construct props declare endpoints', () => {
    const { template } = stack({
      delivery: { settings: {}, entry: STAND_IN_ENTRY, endpoints: [{ name: 'ops', url: 'https://ops.example.com/', eventTypes: ['*'] }] },
    });

    expect(template.toJSON().Parameters ?? {}).not.toHaveProperty('WebhookUrl');
    template.resourceCountIs('Custom::HandoffEndpoint', 1);
  });

  it('seeds the endpoint default from the WebhookUrl parameter, by reference', () => {
    const { template } = stack({ delivery: { settings: {}, entry: STAND_IN_ENTRY } });
    const seed = Object.values(template.findResources('Custom::HandoffEndpoint'))[0];

    expect(JSON.stringify(seed?.Properties.Call)).toContain('\\"url\\":{\\"S\\":\\"",{"Ref":"WebhookUrl"},"\\"}');
  });

  it('outputs the ledger table by reference to the table', () => {
    const { template, handoff } = stack();
    const table = handoff.getLogicalId(handoff.delivery.ledgerTable.node.defaultChild as never);

    template.hasOutput(STACK_OUTPUTS.ledgerTableName, { Value: { Ref: table } });
  });

  it('uses an existing signing secret named by its complete ARN', () => {
    const arn = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:handoff-signing-AbCdEf';
    const { template, handoff } = stack({ signingSecret: arn });

    // None generated for signing: the stack's one secret is the seal key.
    expect(Object.keys(template.findResources('AWS::SecretsManager::Secret'))).toEqual([handoff.getLogicalId(handoff.delivery.sealKey.node.defaultChild as never)]);
    template.hasOutput('SigningSecretArn', { Value: arn });
  });

  it('sends unsigned webhooks when told `none`, with no secret output', () => {
    const { template, handoff } = stack({ signingSecret: 'none' });

    // None generated for signing: the stack's one secret is the seal key.
    expect(Object.keys(template.findResources('AWS::SecretsManager::Secret'))).toEqual([handoff.getLogicalId(handoff.delivery.sealKey.node.defaultChild as never)]);
    expect(template.toJSON().Outputs).not.toHaveProperty('SigningSecretArn');
  });

  it('sends alarm notifications to the topic named in context', () => {
    const topicArn = 'arn:aws:sns:eu-west-1:111122223333:ops-alarms';
    const { template } = stack({ alarmTopicArn: topicArn });

    template.allResourcesProperties('AWS::CloudWatch::Alarm', { AlarmActions: [topicArn], OKActions: [topicArn] });
  });

  it('asks for the webhook URL as a deployment parameter when the context has none, and hands it to the seed of default alone (no function environment)', () => {
    const { template } = stack({ delivery: { settings: {}, entry: STAND_IN_ENTRY } });
    const functions = Object.values(template.findResources('AWS::Lambda::Function'));
    const seed = Object.values(template.findResources('Custom::HandoffEndpoint'))[0];

    template.hasParameter('WebhookUrl', { Type: 'String', NoEcho: true, AllowedPattern: webhookUrlPattern(false) });
    expect(JSON.stringify(seed?.Properties.Call)).toContain('{"Ref":"WebhookUrl"}');
    expect(functions.length).toBeGreaterThan(0);
    for (const fn of functions) {
      expect(fn.Properties.Environment?.Variables ?? {}).not.toHaveProperty('HANDOFF_WEBHOOK_URL');
      expect(JSON.stringify(fn.Properties.Environment ?? {})).not.toContain('WebhookUrl');
    }
  });

  it.each([
    ['https://receiver.example.com/hooks', true],
    ['https://receiver.example.com:8443/hooks?token=s3cr3t&tenant=a@b', true],
    ['https://receiver.example.com', true],
    ['http://receiver.example.com/hooks', false],
    ['https://user:pass@receiver.example.com/hooks', false],
    ['https://user@receiver.example.com/hooks', false],
    ['ftp://receiver.example.com/hooks', false],
    ['https://receiver.example.com/with space', false],
  ])('lets the WebhookUrl parameter take %s: %s (https, no user:password@)', (url, allowed) => {
    const { template } = stack({ delivery: { settings: {}, entry: STAND_IN_ENTRY } });
    const pattern = (template.toJSON().Parameters as Record<string, { AllowedPattern: string }>).WebhookUrl!.AllowedPattern;

    expect(new RegExp(pattern).test(url)).toBe(allowed);
  });

  it('lets the WebhookUrl parameter take http only when allowHttp is set', () => {
    const { template } = stack({ delivery: { settings: { allowHttp: true }, entry: STAND_IN_ENTRY } });

    template.hasParameter('WebhookUrl', { NoEcho: true, AllowedPattern: webhookUrlPattern(true) });
    expect(new RegExp(webhookUrlPattern(true)).test('http://receiver.example.com/hooks')).toBe(true);
    expect(new RegExp(webhookUrlPattern(true)).test('http://u:p@receiver.example.com/hooks')).toBe(false);
  });

  it('passes the AwsSolutions rules', () => {
    const { handoff } = stack();

    expect(new AwsSolutionsChecks().validateScope(handoff).violations).toEqual([]);
  });

  it('synthesizes the same template at every synth of the app (cdk diff is empty when nothing changed)', () => {
    const synth = () => {
      const app = buildApp(testApp({ webhookUrl: WEBHOOK_URL }));
      return Template.fromStack(app.node.findChild('Handoff') as HandoffStack).toJSON();
    };

    const first = synth();
    const second = synth();

    expect(second).toEqual(first);
  });
});

describe('Context: endpointsFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-endpoints-'));
  const file = (name: string, contents: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof contents === 'string' ? contents : JSON.stringify(contents));
    return path;
  };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const ACME = {
    name: 'carrier-acme',
    url: 'https://acme.example.com/hooks',
    eventTypes: ['shipment.delivered'],
    secret: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:handoff-acme-AbCdEf',
  };

  function appWith(context: Record<string, unknown>) {
    const app = buildApp(testApp(context));
    return Template.fromStack(app.node.findChild('Handoff') as HandoffStack);
  }

  it('reads the endpoints, each secret an ARN', () => {
    expect(endpointsFromFile(file('ok.json', { endpoints: [ACME] }))).toEqual([ACME]);
  });

  it('seeds them beside default, and lets the consumer read their secrets', () => {
    const template = appWith({ webhookUrl: WEBHOOK_URL, endpointsFile: file('app.json', { endpoints: [ACME] }) });
    const seeds = Object.values(template.findResources('Custom::HandoffEndpoint')).map((r) => JSON.stringify(r.Properties.Call));

    expect(seeds).toHaveLength(2);
    expect(seeds.some((text) => text.includes('\\"name\\":{\\"S\\":\\"carrier-acme\\"}'))).toBe(true);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: 'secretsmanager:GetSecretValue', Resource: ACME.secret })]) },
    });
  });

  it('asks for no WebhookUrl parameter when it declares endpoints and the context has no webhook URL', () => {
    const template = appWith({ endpointsFile: file('only.json', { endpoints: [ACME] }) });

    expect(template.toJSON().Parameters ?? {}).not.toHaveProperty('WebhookUrl');
    expect(Object.keys(template.findResources('Custom::HandoffEndpoint'))).toHaveLength(1);
  });

  it('refuses a secret value, naming the endpoint and the field, without showing it', () => {
    const path = file('value.json', { endpoints: [{ ...ACME, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }] });

    expect(() => endpointsFromFile(path)).toThrow(EndpointError);
    expect(() => endpointsFromFile(path)).toThrow(/^endpoint "carrier-acme": secret must be the complete ARN of a Secrets Manager secret/);
    expect(() => endpointsFromFile(path)).not.toThrow(/MfKQ9r8/);
  });

  it("refuses a rotation's previous secret as a value, naming the field, without showing it", () => {
    const path = file('previous.json', {
      endpoints: [{ ...ACME, previousSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', previousSecretUntil: 1_900_000_000_000 }],
    });

    expect(() => endpointsFromFile(path)).toThrow(/^endpoint "carrier-acme": previousSecret must be the complete ARN of a Secrets Manager secret/);
    expect(() => endpointsFromFile(path)).not.toThrow(/MfKQ9r8/);
  });

  it("seeds a rotation's previous secret by its complete ARN", () => {
    const previous = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:handoff-acme-old-GhIjKl';
    const template = appWith({
      endpointsFile: file('rotating.json', { endpoints: [{ ...ACME, previousSecret: previous, previousSecretUntil: 1_900_000_000_000 }] }),
    });

    expect(JSON.stringify(template.findResources('Custom::HandoffEndpoint'))).toContain(previous);
  });

  it('refuses a partial secret ARN (the consumer could not be granted it), naming the endpoint and the field', () => {
    const path = file('partial.json', { endpoints: [{ ...ACME, secret: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:handoff-acme' }] });

    expect(() => endpointsFromFile(path)).toThrow(/^endpoint "carrier-acme": secret must be the complete ARN .* \(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf\)$/);
  });

  describe('headers', () => {
    const TOKEN_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-token-GhIjKl';

    it("seeds a header's secret value by its complete ARN, and lets the consumer read that ARN alone", () => {
      const template = appWith({
        endpointsFile: file('headers.json', { endpoints: [{ ...ACME, headers: { 'X-Tenant': 'acme', Authorization: { secretArn: TOKEN_ARN } } }] }),
      });
      const call = JSON.stringify(template.findResources('Custom::HandoffEndpoint'));

      expect(call).toContain(`\\"Authorization\\":{\\"M\\":{\\"secretArn\\":{\\"S\\":\\"${TOKEN_ARN}\\"}}}`);
      template.hasResourceProperties('AWS::IAM::Policy', {
        PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Sid: 'EndpointHeaderSecretRead', Action: 'secretsmanager:GetSecretValue', Resource: TOKEN_ARN })]) },
      });
    });

    it("refuses a header's secret given as a value, naming the endpoint and the header, without showing it", () => {
      const path = file('header-value.json', { endpoints: [{ ...ACME, headers: { Authorization: { secret: 'Bearer tok_Zq81vXr2' } } }] });

      expect(() => endpointsFromFile(path)).toThrow(EndpointError);
      expect(() => endpointsFromFile(path)).toThrow(/^endpoint "carrier-acme": headers\.Authorization must be \{"secretArn": …\}, the complete ARN of a Secrets Manager secret, in .*header-value\.json, never \{"secret": …\}: a value would land in the template \(the value is not shown\)$/);
      expect(() => endpointsFromFile(path)).not.toThrow(/tok_Zq81/);
    });

    it("refuses a header's partial secret ARN (the consumer could not be granted it), naming the header", () => {
      const path = file('header-partial.json', {
        endpoints: [{ ...ACME, headers: { Authorization: { secretArn: 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-token' } } }],
      });

      expect(() => endpointsFromFile(path)).toThrow(
        /^endpoint "carrier-acme": headers\.Authorization must name its secret by the complete ARN in .* \(arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf\)$/,
      );
    });

    it('takes plain header values as they are, with no secret to read', () => {
      const template = appWith({ endpointsFile: file('plain-headers.json', { endpoints: [{ ...ACME, secret: undefined, headers: { 'X-Tenant': 'acme' } }] }) });
      const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap((p) => p.Properties.PolicyDocument.Statement as { Sid?: string }[]);

      expect(statements.map((s) => s.Sid)).not.toContain('EndpointHeaderSecretRead');
    });
  });

  it('refuses two endpoints of one name, naming it', () => {
    const path = file('twice.json', { endpoints: [ACME, { ...ACME, url: 'https://other.example.com/' }] });

    expect(() => endpointsFromFile(path)).toThrow(/^endpoint "carrier-acme": name is declared twice in .*twice\.json$/);
  });

  it('refuses a field the endpoint cannot have, naming it', () => {
    const path = file('field.json', { endpoints: [{ ...ACME, eventTypes: ['shipment.lost'] }] });

    expect(() => endpointsFromFile(path)).toThrow(/^endpoint "carrier-acme": eventTypes holds "shipment.lost"/);
  });

  it("refuses an endpoint the deployment's rules refuse, at synth", () => {
    const path = file('rules.json', { endpoints: [{ ...ACME, attemptTimeoutMs: 60_000 }] });

    expect(() => appWith({ endpointsFile: path })).toThrow(/^endpoint "carrier-acme": attemptTimeoutMs must be at most the deployment's attemptTimeoutMs/);
  });

  it('names the context key and the file when it is not an endpoints file', () => {
    expect(() => endpointsFromFile(file('bad.json', '{"endpoints": ['))).toThrow(ConfigError);
    expect(() => endpointsFromFile(file('bad.json', '{"endpoints": ['))).toThrow(/^endpointsFile \(CDK context\) .*bad\.json is not valid JSON$/);
    expect(() => endpointsFromFile(file('list.json', [ACME]))).toThrow(/^endpointsFile \(CDK context\) .*list\.json must hold \{"endpoints": \[ … \]\}$/);
    expect(() => endpointsFromFile(join(dir, 'missing.json'))).toThrow(/^endpointsFile \(CDK context\) .*missing\.json cannot be read$/);
  });
});

describe('Command: cdk synth', () => {
  it('synthesizes the app offline with no settings and no credentials, bundling the real consumer', async () => {
    // Prepare: no AWS credentials or profile reach the CLI.
    const out = mkdtempSync(join(tmpdir(), 'handoff-synth-'));
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AWS_')));

    // Act
    const result = spawnSync('npx', ['cdk', 'synth', '--quiet', '--output', out], { env, encoding: 'utf8', timeout: 120_000 });

    // Assess
    expect(result.status, result.stderr).toBe(0);
    const template = JSON.parse(readFileSync(join(out, 'Handoff.template.json'), 'utf8')) as {
      Parameters: object;
      Resources: Record<string, { Type: string; Properties?: { Code?: { S3Key?: unknown } } }>;
    };
    expect(template.Parameters).toHaveProperty('WebhookUrl');
    // The consumer's own asset: every function's bundle is an index.mjs, so it is found by its key.
    const [consumerId, consumer] = Object.entries(template.Resources).find(([id, r]) => r.Type === 'AWS::Lambda::Function' && /Consumer[0-9A-F]{8}$/.test(id)) ?? [];
    expect(consumerId, 'the consumer function').toBeDefined();
    const key = consumer!.Properties?.Code?.S3Key;
    expect(typeof key).toBe('string');
    const bundle = join(out, `asset.${String(key).replace(/\.zip$/, '')}`, 'index.mjs');
    expect(existsSync(bundle)).toBe(true);
    expect(readFileSync(bundle, 'utf8')).toContain('ChangeMessageVisibility');
    rmSync(out, { recursive: true, force: true });
  }, 120_000);
});
