/**
 * The environment the sandbox's workers run the consumer in: the emulators' endpoints and
 * credentials, the consumer's settings and resources as the stack would set them, nothing of the
 * parent's AWS or handoff setup.
 */
import { RESOURCE_ENV, settingsToEnvironment, VARIABLE_NAMES, type Settings } from '../lib/config';
import { ONE_CLOCK_CHANGE_WINDOW } from '../lib/endpoints/registry-copy';
import type { SandboxQueues } from './queues';
import { SANDBOX_NAMES } from './settings';
import { SANDBOX_CREDENTIALS, SANDBOX_REGION } from './state-file';

/**
 * The consumer's fault-injection variable (functions/consumer.ts CRASH_AT_ENV), spelled out here
 * because importing that module runs its cold start, which needs a consumer's environment.
 */
export const CRASH_AT_ENV = 'HANDOFF_CRASH_AT';

export interface WorkerEnvironmentOptions {
  readonly emulators: { readonly sqsEndpoint: string; readonly dynamodbEndpoint: string };
  /** The user's settings: the signing secret goes along where the single-URL settings give one. */
  readonly settings: Settings;
  /** The settings as the consumer runs them (settingsToEnvironment). */
  readonly consumerSettings: Settings;
  readonly queues: Pick<SandboxQueues, 'queueUrl' | 'deadLetterQueueUrl'>;
  readonly endpointsCacheMs: number;
  readonly sealKey: string;
  readonly secretsKey: string;
  readonly crashAt: string | undefined;
}

export function workerEnvironment(options: WorkerEnvironmentOptions): NodeJS.ProcessEnv {
  const { settings } = options;
  return {
    ...inheritedEnvironment(),
    AWS_REGION: SANDBOX_REGION,
    AWS_ACCESS_KEY_ID: SANDBOX_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: SANDBOX_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_SQS: options.emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: options.emulators.dynamodbEndpoint,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    ...settingsToEnvironment(options.consumerSettings),
    ...(settings.webhookUrl !== undefined && settings.webhookSecret !== undefined
      ? { [VARIABLE_NAMES.webhookSecret]: settings.webhookSecret }
      : {}),
    [RESOURCE_ENV.ledgerTable]: SANDBOX_NAMES.ledgerTable,
    [RESOURCE_ENV.endpointsTable]: SANDBOX_NAMES.endpointsTable,
    [RESOURCE_ENV.endpointsCacheMs]: String(options.endpointsCacheMs),
    // Every writer of the sandbox's registry reads this machine's clock: a short look-back.
    [RESOURCE_ENV.endpointsLookbackMs]: String(ONE_CLOCK_CHANGE_WINDOW.lookbackMs),
    [RESOURCE_ENV.deadLetterQueueUrl]: options.queues.deadLetterQueueUrl,
    [RESOURCE_ENV.queueUrl]: options.queues.queueUrl,
    [RESOURCE_ENV.sealKey]: options.sealKey,
    [RESOURCE_ENV.endpointSecretsKey]: options.secretsKey,
    ...(options.crashAt ? { [CRASH_AT_ENV]: options.crashAt } : {}),
  };
}

/**
 * The parent's environment without its handoff and AWS settings: the consumer gets exactly the
 * sandbox's, never a profile or endpoint that points somewhere real.
 */
function inheritedEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('HANDOFF_') && !name.startsWith('AWS_')),
  );
}
