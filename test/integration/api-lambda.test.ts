/**
 * The management API's Lambda entry (functions/api.ts) as AWS runs it: wired once from the
 * environment the construct gives it (infra/delivery/functions.ts createApiFunction), with the SDK's
 * standard AWS connection aimed by `AWS_ENDPOINT_URL_*` at real emulators (fauxqs, dynalite) and at
 * loopback stand-ins for Secrets Manager (the seal key, by ARN) and KMS (the registry's key). Each request is API Gateway's HTTP
 * API event with the IAM authorizer's principal, as API Gateway sends it.
 */
import { DynamoDBClient, GetItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';
import { DeleteMessageCommand, ReceiveMessageCommand, SQSClient, type Message } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { IDEMPOTENCY_PARTITION_PREFIX } from '../../api/idempotency';
import type { ApiEvent, ApiResult } from '../../api/http';
import { portalKeyFrom, verifyPortalToken } from '../../api/portal-link';
import { API_TARGET_DESCRIPTION, targetFromEnvironment } from '../../functions/api-target';
import { DEFAULT_SETTINGS, RESOURCE_ENV, SETTING_VARIABLES } from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import { startEmulators, type Emulators } from '../../sandbox/emulators';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { createQueue, ORDERED_QUEUE_ATTRIBUTES } from '../../sandbox/queues';
import { apiFunctionEnvironment, ENDPOINTS_KEY_ARN, SEAL_KEY_ARN } from '../helpers/api-function-environment';
import { startKmsStub, type KmsStub } from '../helpers/kms';
import { startSecretsManagerStub, type SecretsManagerStub } from '../helpers/secrets-manager';
import { TEST_SEAL, TEST_SEAL_KEY } from '../helpers/sqs-records';
import { parsed, settledDelivery, shipmentEvent } from '../helpers/api-testbed';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoDbLedger } from '../../lib/ledger/dynamodb-ledger';
import { ENDPOINT_ATTRIBUTE } from '../../lib/queue/queue';

const REGION = 'us-east-1';
const CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };
const CALLER = 'arn:aws:iam::123456789012:role/ops';

const NAMES = {
  ledgerTable: 'api-lambda-ledger',
  endpointsTable: 'api-lambda-endpoints',
  queueUrl: '',
  deadLetterQueueUrl: '',
  redriveQueueUrl: '',
  orderedQueueUrl: '',
};

let requests = 0;

/** API Gateway's event for a request, the caller as its IAM authorizer proved it (null: none). */
function apiEvent(method: string, path: string, options: { body?: unknown; headers?: Record<string, string>; query?: Record<string, string>; caller?: string | null } = {}): ApiEvent {
  requests += 1;
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const query = options.query ?? {};
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: new URLSearchParams(query).toString(),
    headers: { host: 'abc123.execute-api.us-east-1.amazonaws.com', ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    ...(Object.keys(query).length === 0 ? {} : { queryStringParameters: query }),
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      domainName: 'abc123.execute-api.us-east-1.amazonaws.com',
      domainPrefix: 'abc123',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'test' },
      requestId: `lambda-req-${requests}`,
      routeKey: `${method} ${path}`,
      stage: '$default',
      time: '05/Dec/2026:00:00:00 +0000',
      timeEpoch: 0,
      ...(options.caller === null ? {} : { authorizer: { iam: { userArn: options.caller ?? CALLER } } }),
    },
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: false,
  } as unknown as ApiEvent;
}

function bodyOf(result: ApiResult): any {
  return typeof result.body === 'string' && result.body !== '' ? JSON.parse(result.body) : undefined;
}

describe('functions/api.ts: the API Lambda wired from its environment', () => {
  let emulators: Emulators;
  let secrets: SecretsManagerStub;
  let kms: KmsStub;
  let sqs: SQSClient;
  let dynamodb: DynamoDBClient;
  let handler: (event: ApiEvent) => Promise<ApiResult>;
  const saved = { ...process.env };

  beforeAll(async () => {
    emulators = await startEmulators();
    secrets = await startSecretsManagerStub();
    secrets.answer(SEAL_KEY_ARN, { value: TEST_SEAL_KEY });
    kms = await startKmsStub();
    sqs = new SQSClient({ region: REGION, endpoint: emulators.sqsEndpoint, credentials: CREDENTIALS, useQueueUrlAsEndpoint: false });
    dynamodb = new DynamoDBClient({ region: REGION, endpoint: emulators.dynamodbEndpoint, credentials: CREDENTIALS });
    await createLedgerTable(dynamodb, NAMES.ledgerTable, { shipmentIndex: true });
    await createEndpointsTable(dynamodb, NAMES.endpointsTable);
    NAMES.queueUrl = await createQueue(sqs, 'api-lambda-queue', {});
    NAMES.deadLetterQueueUrl = await createQueue(sqs, 'api-lambda-dlq', {});
    NAMES.redriveQueueUrl = await createQueue(sqs, 'api-lambda-redrive', {});
    NAMES.orderedQueueUrl = await createQueue(sqs, 'api-lambda-ordered.fifo', { ...ORDERED_QUEUE_ATTRIBUTES });
    // What Lambda gives the function: its region and role's credentials; here the endpoints too.
    Object.assign(process.env, apiFunctionEnvironment(NAMES), {
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint,
      AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbEndpoint,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.url,
      AWS_ENDPOINT_URL_KMS: kms.url,
    });
    ({ handler } = await import('../../functions/api'));
  });

  afterAll(async () => {
    process.env = saved;
    sqs?.destroy();
    dynamodb?.destroy();
    await secrets?.close();
    await kms?.close();
    await emulators?.close();
  });

  async function receiveAll(queueUrl: string): Promise<Message[]> {
    const messages: Message[] = [];
    for (;;) {
      const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }));
      if (Messages.length === 0) return messages;
      for (const m of Messages) await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle }));
      messages.push(...Messages);
    }
  }

  it('answers a caller its authorizer proved with the OpenAPI document', async () => {
    const result = await handler(apiEvent('GET', '/v1/openapi.json'));

    expect(result.statusCode).toBe(200);
    expect(bodyOf(result)).toMatchObject({ openapi: expect.stringMatching(/^3\.1\./), paths: expect.objectContaining({ '/v1/events': expect.any(Object) }) });
  });

  it('answers 401 as a problem document when no authorizer proved a caller', async () => {
    const result = await handler(apiEvent('GET', '/v1/openapi.json', { caller: null }));

    expect(result.statusCode).toBe(401);
    expect(result.headers?.['content-type']).toBe('application/problem+json');
    expect(bodyOf(result)).toMatchObject({ status: 401 });
  });

  it('puts a posted event on the delivery queue its environment names once for a repeated Idempotency-Key, keeping the answer in its ledger table, and logs IDs only', async () => {
    // Prepare
    const event = { id: 'evt_lambda_1', shipmentId: 'shp_lambda_1', status: 'in_transit', occurredAt: '2026-12-01T10:00:00Z', data: { note: 'fragile-cargo-note' } };
    const lines: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });

    // Act
    let first: ApiResult;
    let second: ApiResult;
    try {
      first = await handler(apiEvent('POST', '/v1/events', { body: event, headers: { 'idempotency-key': 'lambda-key-1' } }));
      second = await handler(apiEvent('POST', '/v1/events', { body: event, headers: { 'idempotency-key': 'lambda-key-1' } }));
    } finally {
      write.mockRestore();
    }
    const messages = await receiveAll(NAMES.queueUrl);
    const { Items = [] } = await dynamodb.send(new ScanCommand({ TableName: NAMES.ledgerTable }));

    // Assess
    expect(first.statusCode).toBe(202);
    expect(messages.map((m) => JSON.parse(m.Body!).id)).toEqual(['evt_lambda_1']);
    expect(bodyOf(first)).toEqual({ accepted: [{ eventId: 'evt_lambda_1', messageId: messages[0]!.MessageId }], refused: [] });
    expect({ status: second.statusCode, body: bodyOf(second) }).toEqual({ status: 202, body: bodyOf(first) });
    expect(Items.map((item) => item.eventId?.S).filter((id) => id?.startsWith(IDEMPOTENCY_PARTITION_PREFIX))).toHaveLength(1);
    const logged = lines.filter((line) => line.includes('"api request"'));
    expect(logged).toHaveLength(2);
    for (const line of logged) {
      expect(JSON.parse(line)).toMatchObject({ function: 'api', operation: expect.any(String), status: 202, requestId: expect.stringMatching(/^lambda-req-/) });
      expect(line).not.toContain('fragile-cargo-note');
      expect(line).not.toContain('lambda-key-1');
      expect(line).not.toContain(CALLER);
    }
  });

  it('puts an event posted with ordered=true on the ordered intake its environment names, grouped by its shipment', async () => {
    const event = { id: 'evt_lambda_ordered', shipmentId: 'shp_lambda_ordered', status: 'packed', occurredAt: '2026-12-01T10:00:00Z' };

    const result = await handler(apiEvent('POST', '/v1/events', { body: event, query: { ordered: 'true' } }));
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: NAMES.orderedQueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageSystemAttributeNames: ['MessageGroupId'] }),
    );

    expect(result.statusCode).toBe(202);
    expect(Messages.map((m) => [JSON.parse(m.Body!).id, m.Attributes?.MessageGroupId])).toEqual([['evt_lambda_ordered', 'shp_lambda_ordered']]);
    expect(await receiveAll(NAMES.queueUrl)).toEqual([]);
  });

  it("creates an endpoint with its new secret encrypted by the registry's key its environment names, the secret shown in the 201 alone", async () => {
    // Act
    const created = await handler(apiEvent('POST', '/v1/endpoints', { body: { name: 'lambda-hooks', url: 'https://receiver.example.com/hooks', eventTypes: ['*'] } }));
    const read = await handler(apiEvent('GET', '/v1/endpoints/lambda-hooks'));
    const { Item } = await dynamodb.send(new GetItemCommand({ TableName: NAMES.endpointsTable, Key: { [REGISTRY_SCHEMA.partitionKey]: { S: 'lambda-hooks' } }, ConsistentRead: true }));

    // Assess
    expect(created.statusCode).toBe(201);
    const secret = bodyOf(created).secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(kms.calls).toEqual([expect.stringMatching(new RegExp(`^Encrypt ${ENDPOINTS_KEY_ARN} `))]);
    expect(JSON.stringify(Item)).toContain('encrypted:kms:');
    expect(JSON.stringify(Item)).not.toContain(secret.slice('whsec_'.length));
    expect(read.statusCode).toBe(200);
    expect(bodyOf(read)).toMatchObject({ name: 'lambda-hooks' });
    expect(read.body).not.toContain(secret.slice('whsec_'.length));
  });

  it('replays a dead delivery with the proved caller as operator, sealed with the seal key read by its ARN, for that endpoint alone', async () => {
    // Prepare: a delivery dead at acme, in the ledger the function's environment names.
    const ledger = new DynamoDbLedger({ client: DynamoDBDocumentClient.from(dynamodb), tableName: NAMES.ledgerTable });
    const event = parsed(shipmentEvent('evt_lambda_dead'));
    await settledDelivery(ledger, event, 'acme', Date.now() - 60_000, 'rejected');

    // Act
    const result = await handler(apiEvent('POST', '/v1/replays', { body: { eventId: 'evt_lambda_dead', endpoint: 'acme', reason: 'acme fixed their 422' } }));
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: NAMES.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: ['All'] }),
    );

    // Assess
    expect(result.statusCode).toBe(202);
    expect(bodyOf(result)).toMatchObject({ eventId: 'evt_lambda_dead', endpoint: 'acme', operator: CALLER, caller: CALLER, enqueued: true });
    expect((await ledger.get({ eventId: 'evt_lambda_dead', endpoint: 'acme' }))?.audit).toEqual([
      expect.objectContaining({ action: 'replay', operator: CALLER, caller: CALLER, reason: 'acme fixed their 422' }),
    ]);
    expect(Messages).toHaveLength(1);
    const message = Messages[0]!;
    await sqs.send(new DeleteMessageCommand({ QueueUrl: NAMES.queueUrl, ReceiptHandle: message.ReceiptHandle }));
    expect(message.Body).toBe(event.body);
    // Only a message sealed with the deployment's key steers the consumer to one endpoint.
    expect(TEST_SEAL.controlOf(message.Body!, (name) => message.MessageAttributes?.[name]?.StringValue)).toMatchObject({ [ENDPOINT_ATTRIBUTE]: 'acme' });
    expect(secrets.calls).toContain(`${SEAL_KEY_ARN} AWSCURRENT`);
  });

  it('signs portal links with the key derived from the seal key, read from Secrets Manager by its ARN once for the container', async () => {
    const before = secrets.calls.length;

    const results = [
      await handler(apiEvent('POST', '/v1/portal-links', { body: { owner: 'acme' } })),
      await handler(apiEvent('POST', '/v1/portal-links', { body: { owner: 'acme', ttlSeconds: 600 } })),
    ];

    expect(results.map((r) => r.statusCode)).toEqual([201, 201]);
    for (const result of results) {
      expect(verifyPortalToken(bodyOf(result).token, portalKeyFrom(TEST_SEAL_KEY), Date.now())).toMatchObject({ owner: 'acme' });
    }
    expect(secrets.calls.slice(before)).toEqual([`${SEAL_KEY_ARN} AWSCURRENT`]);
  });
});

describe('targetFromEnvironment', () => {
  const names = { ledgerTable: 'l', endpointsTable: 'e', queueUrl: 'https://q', deadLetterQueueUrl: 'https://d', redriveQueueUrl: 'https://r', orderedQueueUrl: 'https://o.fifo' };

  it("is the deployment the stack's outputs describe: its resources, the seal key and registry key by ARN, its payload limit and endpoint defaults, in AWS", () => {
    const target = targetFromEnvironment(apiFunctionEnvironment(names));

    expect(target).toEqual({
      ...names,
      sealKey: { secretArn: SEAL_KEY_ARN },
      endpointSecretsKey: { keyArn: ENDPOINTS_KEY_ARN },
      payloadLimitBytes: DEFAULT_SETTINGS.payloadLimitBytes,
      deployment: {
        retryPolicy: DEFAULT_SETTINGS.retryPolicy,
        attemptTimeoutMs: DEFAULT_SETTINGS.attemptTimeoutMs,
        retentionDays: DEFAULT_SETTINGS.retentionDays,
        allowPrivateCidrs: DEFAULT_SETTINGS.allowPrivateCidrs,
        allowHttp: DEFAULT_SETTINGS.allowHttp,
      },
      description: API_TARGET_DESCRIPTION,
      connection: { kind: 'aws' },
    });
  });

  it('refuses an environment without one of its resources, naming the variable', () => {
    const { [RESOURCE_ENV.orderedQueueUrl]: _omitted, ...rest } = apiFunctionEnvironment(names);

    const act = () => targetFromEnvironment(rest);

    expect(act).toThrow(ConfigError);
    expect(act).toThrow(`${RESOURCE_ENV.orderedQueueUrl} must be set`);
  });

  it('refuses endpoint defaults that are not the JSON the stack writes, and a payload limit that is not a number, naming each', () => {
    const env = apiFunctionEnvironment(names);

    expect(() => targetFromEnvironment({ ...env, [RESOURCE_ENV.endpointDefaults]: '{"retrySchedule":"soon"}' })).toThrow(
      new RegExp(`^${RESOURCE_ENV.endpointDefaults} must hold the deployment's endpoint defaults as JSON`),
    );
    expect(() => targetFromEnvironment({ ...env, [SETTING_VARIABLES.payloadLimitBytes]: '64k' })).toThrow(
      `${SETTING_VARIABLES.payloadLimitBytes} must be a whole number of bytes, got "64k"`,
    );
  });
});
