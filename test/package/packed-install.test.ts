/**
 * The real user path: `npm pack` (its `prepack` builds dist/), then a fresh CDK app outside the
 * repository installs the tarball with `aws-cdk-lib` and `constructs` at the versions pinned here
 * (from the npm cache where it can), writes `new WebhookDelivery(stack, 'Delivery', { ... })`,
 * type-checks it against the installed declarations and synthesizes offline with no credentials.
 * The app declares two endpoints, one signed with a Secrets Manager secret, beside no single URL.
 * It prints what the package adds to the app beyond its peers, and holds none of the development
 * and sandbox tools (emulators, tsx, esbuild).
 *
 * The installed function (api.mjs) serves the console from the files beside it.
 *
 * Slow by nature (a pack, an install, a tsc run and a synth): about a minute on a quiet machine.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { DEFAULT_SETTINGS, RESOURCE_ENV, SETTING_VARIABLES } from '../../lib/config';
import { deploymentToJson } from '../../lib/endpoints/endpoint';
import { REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import { emulatorDynamoDbClient, startDynalite } from '../helpers/dynalite';
import { DEVELOPMENT_ONLY, describeFootprint, footprintBeyond, installedPackageDirs, packageName } from './footprint';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PINNED = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
const SLOW_MS = 10 * 60_000;

/** The environment of a machine with no AWS account configured. */
function offlineEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('AWS_') && !name.startsWith('CDK_')));
  return { ...env, AWS_EC2_METADATA_DISABLED: 'true', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
}

/** What the construct gives the API's function: its resources named, never reached by the requests made here. */
function lambdaEnvironment(): NodeJS.ProcessEnv {
  return {
    [RESOURCE_ENV.ledgerTable]: 'ledger',
    [RESOURCE_ENV.endpointsTable]: 'endpoints',
    [RESOURCE_ENV.queueUrl]: 'https://sqs.us-east-1.amazonaws.com/123456789012/q',
    [RESOURCE_ENV.deadLetterQueueUrl]: 'https://sqs.us-east-1.amazonaws.com/123456789012/dlq',
    [RESOURCE_ENV.redriveQueueUrl]: 'https://sqs.us-east-1.amazonaws.com/123456789012/redrive',
    [RESOURCE_ENV.orderedQueueUrl]: 'https://sqs.us-east-1.amazonaws.com/123456789012/ordered.fifo',
    [RESOURCE_ENV.sealKeyArn]: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:seal-AbCdEf',
    [RESOURCE_ENV.endpointsKeyArn]: 'arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000',
    [RESOURCE_ENV.endpointDefaults]: JSON.stringify(deploymentToJson(DEFAULT_SETTINGS)),
    [SETTING_VARIABLES.payloadLimitBytes]: String(DEFAULT_SETTINGS.payloadLimitBytes),
    AWS_REGION: 'us-east-1',
  };
}

const APP_TS = `
import { App, Stack } from 'aws-cdk-lib';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { retryPolicy, WebhookDelivery, type WebhookDeliveryProps } from 'handoff/cdk';
import { checkReceiverRetention, createReceiver, MemoryIdempotencyStore } from 'handoff/receiver';
import { HandoffApiError, HandoffClient } from 'handoff/client';

const app = new App({ outdir: 'cdk.out' });
const stack = new Stack(app, 'PackedApp');
const props: WebhookDeliveryProps = {
  settings: { retryPolicy: retryPolicy(4, [60, 300, 900]) },
  endpoints: [
    {
      name: 'carrier-acme',
      url: 'https://acme.example.com/hooks',
      eventTypes: ['shipment.in_transit', 'shipment.delivered'],
      match: { 'data.carrier': ['acme'] },
      secret: Secret.fromSecretCompleteArn(stack, 'AcmeSecret', 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-signing-AbCdEf'),
    },
    { name: 'notifications', url: 'https://notify.example.com/webhooks', eventTypes: ['shipment.delivered', 'shipment.exception'], recovery: 'drop' },
  ],
};
const delivery = new WebhookDelivery(stack, 'Delivery', props);

// The receiver kit's types and its retention rule against the construct's policy.
const receive = createReceiver({
  secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
  store: new MemoryIdempotencyStore(),
  action: () => ({ status: 200 }),
});
checkReceiverRetention(delivery.settings.retryPolicy, receive.retentionSeconds);

// The management API's client, typed from the package (a deployed stack's ApiUrl output is such a URL).
const api = new HandoffClient({ url: 'https://abc123.execute-api.eu-west-1.amazonaws.com/', credentials: { token: 'a-token' } });
const isProblem = (error: unknown): boolean => error instanceof HandoffApiError && error.status === 404;
void api;
void isProblem;
app.synth();
`;

/** A CDK app's usual compiler settings, resolving packages as Node does (the exports map). */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    skipLibCheck: true,
    typeRoots: [join(ROOT, 'node_modules/@types')],
    types: ['node'],
  },
  files: ['app.ts'],
};

describe('Package: the packed tarball in a fresh CDK app', () => {
  let work: string;
  let app: string;
  let tarball: string;
  let installed: string;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'handoff-packed-'));
    app = join(work, 'app');
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
    tarball = join(work, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);

    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'packed-app', private: true, type: 'module' }));
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        // Nothing in the user's app needs an install script: the consumer is pre-bundled.
        '--ignore-scripts',
        tarball,
        `aws-cdk-lib@${PINNED.devDependencies['aws-cdk-lib']}`,
        `constructs@${PINNED.devDependencies.constructs}`,
      ],
      { cwd: app, env: offlineEnv(), maxBuffer: 16 * 1024 * 1024 },
    );
    installed = join(app, 'node_modules/handoff');
  }, SLOW_MS);

  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  }, SLOW_MS);

  it('holds compiled JavaScript, declarations and the command, and no TypeScript sources or tests', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.trim().split('\n').map((line) => line.replace(/^package\//, ''));

    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'bin/handoff.js', 'dist/cdk.js', 'dist/cdk.d.ts', 'dist/receiver.js', 'dist/receiver.d.ts', 'dist/client.js', 'dist/client.d.ts', 'dist/cli.js', 'dist/consumer/index.mjs', 'dist/consumer/api.mjs', 'dist/consumer/portal-authorizer.mjs', 'dist/consumer/console/index.html', 'dist/consumer/console/app.js', 'dist/consumer/console/app.css']));
    // The consumer's tracing (docs/tracing.md): OpenTelemetry bundled into a chunk of its own, imported only while tracing is on.
    expect(files.filter((file) => /^dist\/consumer\/chunks\/otel-[\w-]+\.mjs$/.test(file))).toHaveLength(1);
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    expect(files.filter((file) => /(^|\/)(test|tests|__tests__)\//.test(file) || /\.test\./.test(file))).toEqual([]);
  });

  it('installs into the app no emulator, tsx or esbuild, and says what it adds beyond aws-cdk-lib and constructs', () => {
    const footprint = footprintBeyond(app, 'handoff', ['aws-cdk-lib', 'constructs']);
    const developmentOnly = installedPackageDirs(app).filter((path) => {
      const name = packageName(path);
      return (DEVELOPMENT_ONLY as readonly string[]).includes(name) || name.startsWith('@esbuild/');
    });

    console.log(`handoff in a fresh CDK app, beyond aws-cdk-lib and constructs: ${describeFootprint(footprint)}`);
    expect(developmentOnly).toEqual([]);
    expect(footprint.packages.map(({ name }) => name)).toContain('handoff');
    // The README states it: about N MB in M packages, held to within a megabyte and two packages.
    const stated = /adds about (\d+) MB\s+in (\d+) packages/.exec(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(stated, 'the README states the footprint').not.toBeNull();
    expect(Math.abs(footprint.bytes / 1e6 - Number(stated![1]))).toBeLessThanOrEqual(1);
    expect(Math.abs(footprint.packages.length - Number(stated![2]))).toBeLessThanOrEqual(2);
  });

  it('synthesizes new WebhookDelivery(stack, "Delivery", { ... }) offline, typed by the installed declarations', async () => {
    // Prepare
    writeFileSync(join(app, 'app.ts'), APP_TS);
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(TSCONFIG));

    // Act: type-check and compile as a user's app would, then run it (what `cdk synth` runs).
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', app], { cwd: app });
    await run(process.execPath, ['app.js'], { cwd: app, env: offlineEnv() });
    const template = Template.fromJSON(JSON.parse(readFileSync(join(app, 'cdk.out/PackedApp.template.json'), 'utf8')));

    // Assess: the queue with its dead-letter and redrive queues, the ordered intake with its dead-letter queue
    template.resourceCountIs('AWS::SQS::Queue', 5);
    template.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: { deadLetterTargetArn: Match.anyValue(), maxReceiveCount: Match.anyValue() },
    });
    // the ledger
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: LEDGER_SCHEMA.partitionKey, KeyType: 'HASH' },
        { AttributeName: LEDGER_SCHEMA.sortKey, KeyType: 'RANGE' },
      ],
      TimeToLiveSpecification: { AttributeName: LEDGER_SCHEMA.ttlAttribute, Enabled: true },
    });
    // the consumer, fed by the queue with partial batch responses
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      // the settings written in the app, through the package's own retryPolicy
      Environment: { Variables: Match.objectLike({ HANDOFF_RETRY_SCHEDULE: '60,300,900', HANDOFF_MAX_ATTEMPTS: '4' }) },
    });
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', { FunctionResponseTypes: ['ReportBatchItemFailures'] });
    // the endpoint registry, encrypted with the stack's key, and the two endpoints seeded into it,
    // the secret by its ARN only
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [{ AttributeName: REGISTRY_SCHEMA.partitionKey, KeyType: 'HASH' }],
      SSESpecification: Match.objectLike({ SSEEnabled: true, SSEType: 'KMS' }),
    });
    const seeds = JSON.stringify(template.findResources('Custom::HandoffEndpoint'));
    expect(seeds).toContain('carrier-acme');
    expect(seeds).toContain('notifications');
    expect(seeds).toContain('acme-signing-AbCdEf');
    expect(JSON.stringify(template.toJSON())).not.toMatch(/whsec_[A-Za-z0-9+/]/);
    // its grants: the ledger, the dead-letter queue, the registry, the endpoint's signing secret
    const statements = Object.values(template.findResources('AWS::IAM::Policy')).flatMap(
      (policy) => policy.Properties.PolicyDocument.Statement as { Sid?: string; Action: string | string[] }[],
    );
    const actions = statements.flatMap((statement) => [statement.Action].flat()).sort();
    expect(actions).toEqual(
      expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Scan', 'dynamodb:UpdateItem', 'kms:Decrypt', 'sqs:SendMessage', 'secretsmanager:GetSecretValue']),
    );
    expect(actions.filter((action) => action.includes('*'))).toEqual([]);
  }, SLOW_MS);

  it('deploys the consumer bundled from the installed package, with no sources of this repository', () => {
    const out = join(app, 'cdk.out');
    // The consumer's asset; aws-cdk-lib adds its own custom-resource handler's beside it.
    const assets = readdirSync(out).filter((name) => name.startsWith('asset.') && existsSync(join(out, name, 'index.mjs')));
    const bundled = readFileSync(join(installed, 'dist/consumer/index.mjs'), 'utf8');

    expect(existsSync(join(installed, 'functions'))).toBe(false);
    expect(assets).toHaveLength(1);
    expect(readFileSync(join(out, assets[0]!, 'index.mjs'), 'utf8')).toBe(bundled);
    // Its tracing chunk beside it, where index.mjs imports it from while tracing is on.
    expect(readdirSync(join(out, assets[0]!, 'chunks')).some((name) => name.startsWith('otel-'))).toBe(true);
  });

  it("serves the console from the installed api.mjs: the files beside it in the function's asset", async () => {
    // Prepare: the installed function's directory (api.mjs and console/) where the AWS SDK resolves,
    // as the Lambda runtime provides it (here the repository's node_modules; the app has no SDK clients).
    const installedFunction = join(installed, 'dist/consumer');
    const lambda = mkdtempSync(join(ROOT, 'node_modules/.cache-handoff-lambda-'));
    try {
      cpSync(join(installedFunction, 'api.mjs'), join(lambda, 'api.mjs'));
      cpSync(join(installedFunction, 'console'), join(lambda, 'console'), { recursive: true });
      const invoke = `
        const { handler } = await import(${JSON.stringify(pathToFileURL(join(lambda, 'api.mjs')).href)});
        const answers = {};
        for (const path of ['/console', '/console/', '/console/app.js', '/console/app.css', '/console/config.json', '/v1/openapi.json']) {
          const answer = await handler({ version: '2.0', routeKey: '$default', rawPath: path, rawQueryString: '', headers: {}, requestContext: { http: { method: 'GET', path }, requestId: 'packed' }, isBase64Encoded: false });
          answers[path] = { statusCode: answer.statusCode, headers: answer.headers, body: answer.body };
        }
        process.stderr.write('ANSWERS ' + JSON.stringify(answers) + '\\n');
      `;

      // Act: the function's module loaded as Lambda loads it (cold start), then one request per path.
      const { stderr } = await run(process.execPath, ['--input-type=module', '-e', invoke], { cwd: lambda, env: { ...offlineEnv(), ...lambdaEnvironment() } });
      const answers = JSON.parse(/^ANSWERS (.*)$/m.exec(stderr)![1]!) as Record<string, { statusCode: number; headers: Record<string, string>; body?: string }>;

      // Assess: each file as the package holds it, with the console's headers; /v1 is still the API's.
      const file = (name: string) => readFileSync(join(installedFunction, 'console', name), 'utf8');
      expect(answers['/console']!.statusCode).toBe(308);
      expect(answers['/console/']).toMatchObject({ statusCode: 200, body: file('index.html'), headers: { 'content-type': 'text/html; charset=utf-8' } });
      expect(answers['/console/app.js']).toMatchObject({ statusCode: 200, body: file('app.js'), headers: { 'content-type': 'text/javascript; charset=utf-8' } });
      expect(answers['/console/app.css']).toMatchObject({ statusCode: 200, body: file('app.css') });
      expect(JSON.parse(answers['/console/config.json']!.body!)).toEqual({});
      expect(answers['/console/']!.headers['content-security-policy']).toMatch(/^default-src 'none'; script-src 'self';/);
      // No credential on the request: the API's 401, not the console's.
      expect(answers['/v1/openapi.json']!.statusCode).toBe(401);
      expect(stderr).not.toContain('console files missing');
    } finally {
      rmSync(lambda, { recursive: true, force: true });
    }
  }, SLOW_MS);

  it('runs the installed handoff --help and handoff send --help from the app', async () => {
    const bin = join(app, 'node_modules/.bin/handoff');

    const help = await run(bin, ['--help'], { cwd: app, env: offlineEnv() });
    const sendHelp = await run(bin, ['send', '--help'], { cwd: app, env: offlineEnv() });

    expect(existsSync(join(installed, 'cli'))).toBe(false);
    expect(help.stdout).toMatch(/^Usage: handoff \[options\] \[command\]/);
    expect(help.stdout).toContain('send [options] [file]');
    expect(sendHelp.stdout).toMatch(/^Usage: handoff send \[options\] \[file\]\n\nvalidate events and put them on the delivery queue/);
    expect(help.stderr + sendHelp.stderr).toBe('');
  });

  it('runs a real command from the installed package: status reads the ledger through its bundled AWS SDK', async () => {
    // Prepare: a ledger table in dynalite, and the environment a user points the command with.
    const dynalite = await startDynalite();
    const client = emulatorDynamoDbClient(dynalite.endpoint);
    try {
      await client.send(
        new CreateTableCommand({
          TableName: 'packed-ledger',
          BillingMode: 'PAY_PER_REQUEST',
          AttributeDefinitions: [
            { AttributeName: LEDGER_SCHEMA.partitionKey, AttributeType: 'S' },
            { AttributeName: LEDGER_SCHEMA.sortKey, AttributeType: 'S' },
          ],
          KeySchema: [
            { AttributeName: LEDGER_SCHEMA.partitionKey, KeyType: 'HASH' },
            { AttributeName: LEDGER_SCHEMA.sortKey, KeyType: 'RANGE' },
          ],
        }),
      );
      const env = { ...offlineEnv(), AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint };

      // Act
      const failure = await run(join(app, 'node_modules/.bin/handoff'), ['status', 'evt_missing', '--table', 'packed-ledger', '--json'], { cwd: app, env }).then(
        () => undefined,
        (error: { code: number; stdout: string; stderr: string }) => error,
      );

      // Assess: the row was looked up and is not there (exit 1, the JSON error), not a crash.
      expect(failure?.code).toBe(1);
      expect(JSON.parse(failure!.stdout)).toEqual({ error: { code: 'not-found', message: 'no delivery record for event evt_missing' } });
      expect(failure!.stderr).toBe('handoff: no delivery record for event evt_missing\n');
    } finally {
      client.destroy();
      await dynalite.close();
    }
  }, SLOW_MS);
});
