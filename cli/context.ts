/**
 * What a command runs with: the resolved target, its clients built on first use, the clock, and
 * where output goes. Commands never build clients themselves, so every one of them talks to the
 * same target the same way.
 */
import { Writable } from 'node:stream';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbEndpointRegistry } from '../lib/endpoints/dynamodb-registry';
import { ConfigError, EndpointRegistryError, SealKeyError, SecretEncryptionError } from '../lib/errors';
import { REGISTRY_SCHEMA } from '../lib/endpoints/registry-schema';
import { kmsClient, KmsSecretCipher, LocalSecretCipher, type EndpointSecretCipher } from '../lib/endpoints/secret-cipher';
import { DynamoDbLedger } from '../lib/ledger/dynamodb-ledger';
import type { Ledger } from '../lib/ledger/ledger';
import { CloudWatchMetricsReader } from '../lib/metrics/cloudwatch-reader';
import type { MetricsReader } from '../lib/metrics/metrics-reader';
import { RESOURCE_ENV } from '../lib/config';
import { MessageSeal, sealFromEnvironment, sealSource } from '../lib/queue/seal';
import { SqsDeliveryQueue } from '../lib/queue/sqs-queue';
import { STACK_OUTPUTS } from '../lib/stack-outputs';
import { CommandFailedError } from './errors';
import type { DeliveryQueue } from '../lib/queue/queue';
import type { Resume } from '../lib/resume';
import { metricsFileFor, SandboxMetricsReader } from '../sandbox/metric-sink';
import { dynamoDbClient, ENDPOINTS_KEY_ARN_ENV, requireName, sqsClient, type Target } from './target';

export interface Output {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WriteStream;
}

/**
 * Where a use case's printed progress goes when the management API runs it (functions/api.ts, the
 * sandbox's API server): nowhere, since the API answers with the use case's JSON, never its text.
 */
export const DISCARDED_OUTPUT: Output = (() => {
  const sink = () => Object.assign(new Writable({ write: (_chunk, _encoding, done) => done() }), { isTTY: false });
  return { stdout: sink(), stderr: sink() as unknown as NodeJS.WriteStream };
})();

export class CommandContext {
  readonly #target: Target;
  #sqs: SQSClient | undefined;
  #dynamodb: DynamoDBClient | undefined;
  #ledger: Ledger | undefined;
  #registry: DynamoDbEndpointRegistry | undefined;
  #cloudWatch: CloudWatchClient | undefined;
  #kms: ReturnType<typeof kmsClient> | undefined;
  #secretCipher: EndpointSecretCipher | undefined;
  /** What the command's messages for one endpoint are sealed with, fetched once, when first needed. */
  readonly #seal = sealSource(() => this.#messageSeal());

  constructor(
    target: Target,
    readonly output: Output,
    readonly now: () => number = Date.now,
  ) {
    this.#target = target;
  }

  get target(): Target {
    return this.#target;
  }

  sqs(): SQSClient {
    this.#sqs ??= sqsClient(this.#target);
    return this.#sqs;
  }

  ledger(): Ledger {
    if (!this.#ledger) {
      const tableName = requireName(this.#target, 'ledgerTable');
      this.#ledger = new DynamoDbLedger({ client: this.#documentClient(), tableName });
    }
    return this.#ledger;
  }

  /**
   * The endpoint registry (`endpointsTable`), encrypting every plain signing secret it writes with
   * the target's key (`encryptSecret`). @throws UsageError when the target names none
   */
  registry(): DynamoDbEndpointRegistry {
    if (!this.#registry) {
      const tableName = requireName(this.#target, 'endpointsTable');
      this.#registry = new DynamoDbEndpointRegistry({
        client: this.#documentClient(),
        tableName,
        cipher: { encrypt: (secret, endpoint, header) => this.encryptSecret(secret, endpoint, header) },
      });
    }
    return this.#registry;
  }

  /**
   * An endpoint's signing secret (or, `header` given, that header's secret value) as the registry
   * stores it (lib/endpoints/secret-cipher.ts): in AWS
   * encrypted with the registry's KMS key (`kms:Encrypt`: the stack output `EndpointsKeyArn`, or
   * `HANDOFF_ENDPOINTS_KEY_ARN`), in the sandbox with the key its state file holds. Asked only when a
   * plain secret is written, so a target without a key still takes every other change.
   * @throws CommandFailedError when the target has no key or it refuses: nothing is written
   */
  async encryptSecret(secret: string, endpoint: string, header?: string): Promise<string> {
    const cipher = this.#cipherForSecrets();
    try {
      return await cipher.encrypt(secret, endpoint, header);
    } catch (error) {
      if (!(error instanceof SecretEncryptionError)) throw error;
      const hint =
        cipher.scheme === 'kms'
          ? "; nothing written (the caller needs kms:Encrypt on the registry's key: grantEndpointAdmin grants it)"
          : '; nothing written';
      throw new CommandFailedError(`${error.message}${hint}`, error.code, { cause: error });
    }
  }

  #cipherForSecrets(): EndpointSecretCipher {
    if (this.#secretCipher !== undefined) return this.#secretCipher;
    const target = this.#target;
    const where = target.endpointSecretsKey;
    if (where !== undefined && 'key' in where) return (this.#secretCipher = new LocalSecretCipher(where.key));
    const keyArn = where?.keyArn ?? (process.env[ENDPOINTS_KEY_ARN_ENV]?.trim() || undefined);
    if (keyArn === undefined || target.connection.kind === 'sandbox') {
      const why =
        target.connection.kind === 'sandbox'
          ? `its state file ${target.connection.stateFile} names no secretsKey (the sandbox was started before endpoint secrets were encrypted): restart it (npm start)`
          : target.description.startsWith('stack ')
            ? `no ${STACK_OUTPUTS.endpointsKeyArn} output (deployed before endpoint secrets were encrypted?): deploy the current version, or set ${ENDPOINTS_KEY_ARN_ENV} to the ARN of the registry's KMS key`
            : `set ${ENDPOINTS_KEY_ARN_ENV} to the ARN of the registry's KMS key (the stack output ${STACK_OUTPUTS.endpointsKeyArn})`;
      throw new CommandFailedError(`cannot encrypt a signing secret for ${target.description}, which names no key for them: ${why}; nothing written`, 'no-secrets-key');
    }
    this.#kms ??= kmsClient();
    return (this.#secretCipher = new KmsSecretCipher({ calls: this.#kms, keyId: keyArn }));
  }

  /**
   * The release of an endpoint's parked deliveries in progress (lib/resume.ts), as its registry item
   * holds it: undefined when none is (or no such endpoint). One consistent GetItem of the three
   * attributes alone. @throws UsageError when the target names no registry; EndpointRegistryError
   */
  async endpointRelease(name: string): Promise<Resume | undefined> {
    const tableName = requireName(this.#target, 'endpointsTable');
    const { partitionKey, attributes } = REGISTRY_SCHEMA;
    let item: Record<string, unknown> | undefined;
    try {
      ({ Item: item } = await this.#documentClient().send(
        new GetCommand({
          TableName: tableName,
          Key: { [partitionKey]: name },
          ProjectionExpression: '#since, #rate, #until',
          ExpressionAttributeNames: { '#since': attributes.resumeSince, '#rate': attributes.resumeRate, '#until': attributes.resumeUntil },
          ConsistentRead: true,
        }),
      ));
    } catch (error) {
      const what = error instanceof Error ? error.name : 'error';
      throw new EndpointRegistryError('registry-unavailable', `endpoint registry ${tableName} failed to read the release of endpoint ${JSON.stringify(name)}: ${what}`, {
        cause: error,
      });
    }
    const [since, rate, until] = [item?.[attributes.resumeSince], item?.[attributes.resumeRate], item?.[attributes.resumeUntil]];
    if (typeof since !== 'number' || typeof rate !== 'number') return undefined;
    return { since, rate, ...(typeof until === 'number' ? { until } : {}) };
  }

  #documentClient(): DynamoDBDocumentClient {
    this.#dynamodb ??= dynamoDbClient(this.#target);
    return DynamoDBDocumentClient.from(this.#dynamodb, { marshallOptions: { removeUndefinedValues: true } });
  }

  /** The consumer's metrics: the sandbox's metric sink, or CloudWatch in the standard AWS environment. */
  metrics(): MetricsReader {
    const { connection } = this.#target;
    if (connection.kind === 'sandbox') return new SandboxMetricsReader({ path: metricsFileFor(connection.stateFile) });
    this.#cloudWatch ??= new CloudWatchClient({});
    return new CloudWatchMetricsReader({ client: this.#cloudWatch });
  }

  /**
   * The delivery queue, sealing what the command sends for one endpoint (a replay, a release) as the
   * consumer's own messages are: with the sandbox's key, the stack's secret, or the environment's,
   * fetched when the first such message is sent (a refused replay needs none).
   * @throws UsageError when the target names no queue
   */
  queue(): DeliveryQueue {
    return new SqsDeliveryQueue({
      client: this.sqs(),
      queueUrl: requireName(this.#target, 'queueUrl'),
      // Only `enqueue` is used here; the dead-letter URL is not needed for it.
      deadLetterQueueUrl: this.#target.deadLetterQueueUrl ?? '',
      seal: this.#seal,
    });
  }


  async #messageSeal(): Promise<MessageSeal> {
    const where = this.#target.sealKey;
    try {
      if (where !== undefined && 'key' in where) return new MessageSeal(where.key);
      return await sealFromEnvironment(where !== undefined ? { [RESOURCE_ENV.sealKeyArn]: where.secretArn } : process.env);
    } catch (error) {
      if (!(error instanceof ConfigError) && !(error instanceof SealKeyError)) throw error;
      const hint =
        this.#target.connection.kind === 'sandbox'
          ? 'restart the sandbox (npm start): its state file names no seal key'
          : `deploy the current version (stack output ${STACK_OUTPUTS.sealKeySecretArn}) or set ${RESOURCE_ENV.sealKeyArn}`;
      throw new CommandFailedError(`cannot seal a message for ${this.#target.description} (${error.message}): ${hint}`, 'no-seal-key', { cause: error });
    }
  }

  /** Closes the clients' sockets so the process exits promptly. */
  close(): void {
    this.#sqs?.destroy();
    this.#dynamodb?.destroy();
    this.#cloudWatch?.destroy();
    this.#kms?.destroy();
  }
}
