/**
 * Which handoff the command talks to, decided in this order:
 *
 * 1. explicit names: `--queue-url`, `--dlq-url`, `--redrive-queue-url`, `--table`,
 *    `--endpoints-table` (and `--ordered-queue-url`, the ordered intake, where a command takes it), with the standard
 *    AWS environment (region, profile, `AWS_ENDPOINT_URL*`), which the SDK clients read on their own;
 * 2. `--stack NAME`: the deployed stack's CloudFormation outputs (explicit names still win);
 * 3. the running sandbox: the state file `npm start` writes while it runs.
 *
 * The sandbox's emulators listen on loopback and accept any credentials, so its clients get
 * explicit endpoints, us-east-1 and dummy keys, whatever the shell's AWS settings say. The state
 * file is trusted only when the user's own and naming loopback endpoints (sandbox/state-file.ts).
 *
 * The target also says what it accepts (its payload limit, the settings an endpoint's defaults and
 * limits come from) and who the caller is (in AWS, the STS identity of the credentials; the sandbox
 * has none), so commands check and record against the deployment, not the operator's own environment.
 */
import {
  CloudFormationClient,
  CloudFormationServiceException,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { deploymentFromJson, type DeploymentSettings } from '../lib/endpoints/endpoint';
import { STACK_OUTPUTS } from '../lib/stack-outputs';
import { redactUrl } from '../lib/webhook/redact-url';
import {
  readSandboxState,
  SANDBOX_CREDENTIALS,
  SANDBOX_REGION,
  SandboxStateError,
  sandboxStateFile,
  type SandboxState,
} from '../sandbox/state-file';
import { CommandFailedError, networkErrorCode, rootCause, UsageError } from './errors';

export interface TargetOptions {
  readonly queueUrl?: string;
  readonly dlqUrl?: string;
  /** The redrive queue: where SQS's redrive moves a delivery-queue message the consumer kept failing on. */
  readonly redriveQueueUrl?: string;
  readonly table?: string;
  readonly endpointsTable?: string;
  /** The ordered intake's FIFO queue (docs/contract.md §13). */
  readonly orderedQueueUrl?: string;
  readonly stack?: string;
}

export interface ResourceNames {
  readonly queueUrl?: string;
  readonly deadLetterQueueUrl?: string;
  /**
   * The redrive queue: where SQS's redrive moves a delivery-queue message the consumer kept failing
   * on, for recovery to send back (lib/recovery.ts). Absent from a sandbox or stack made before it.
   */
  readonly redriveQueueUrl?: string;
  readonly ledgerTable?: string;
  /** The endpoint registry's table (lib/endpoints/registry.ts). */
  readonly endpointsTable?: string;
  /** The ordered intake's FIFO queue (docs/contract.md §13), where producers who need a shipment's order send. */
  readonly orderedQueueUrl?: string;
}

/** What a deployment says of itself beyond its resource names (sandbox state, stack outputs). */
export interface DeploymentFacts {
  /**
   * Where the key that seals handoff's own messages is (lib/queue/seal.ts): the sandbox's key itself,
   * or the stack's secret. Absent: `HANDOFF_SEAL_KEY_ARN` (or `HANDOFF_SEAL_KEY`) in the environment.
   */
  readonly sealKey?: { readonly key: string } | { readonly secretArn: string };
  /**
   * What the endpoint secrets the command writes are encrypted with (lib/endpoints/secret-cipher.ts):
   * the sandbox's key itself, or the registry's KMS key (the stack output `EndpointsKeyArn`). Absent:
   * `HANDOFF_ENDPOINTS_KEY_ARN` in the environment (cli/context.ts).
   */
  readonly endpointSecretsKey?: { readonly key: string } | { readonly keyArn: string };
  /** The largest message body the deployment accepts, when it says. */
  readonly payloadLimitBytes?: number;
  /** The settings an endpoint's defaults and limits come from, when it says. */
  readonly deployment?: DeploymentSettings;
}

/** Where the SDK clients connect: the sandbox's endpoints, or the standard AWS environment. */
export type Connection =
  | { readonly kind: 'aws' }
  | { readonly kind: 'sandbox'; readonly sqsEndpoint: string; readonly dynamodbEndpoint: string; readonly stateFile: string };

export interface Target extends ResourceNames, DeploymentFacts {
  /** For messages: "the sandbox (…)", "stack NAME", "the names given". */
  readonly description: string;
  readonly connection: Connection;
}

/**
 * The registry's KMS key (its ARN, or an alias) for a target whose stack does not name it (names
 * given, a stack deployed before the `EndpointsKeyArn` output): the endpoint secrets the command
 * writes are encrypted with it.
 */
export const ENDPOINTS_KEY_ARN_ENV = 'HANDOFF_ENDPOINTS_KEY_ARN';

export const NO_TARGET_MESSAGE =
  'no handoff to talk to: start the sandbox (npm start), or pass --stack NAME, ' +
  'or --queue-url/--dlq-url/--table/--endpoints-table with AWS_REGION and credentials set';

export async function resolveTarget(options: TargetOptions, env: NodeJS.ProcessEnv = process.env): Promise<Target> {
  const explicit: ResourceNames = {
    queueUrl: nonEmpty(options.queueUrl),
    deadLetterQueueUrl: nonEmpty(options.dlqUrl),
    redriveQueueUrl: nonEmpty(options.redriveQueueUrl),
    ledgerTable: nonEmpty(options.table),
    endpointsTable: nonEmpty(options.endpointsTable),
    orderedQueueUrl: nonEmpty(options.orderedQueueUrl),
  };
  if (options.stack !== undefined) {
    const stack = nonEmpty(options.stack);
    if (!stack) throw new UsageError('--stack needs a stack name');
    const outputs = await readStackOutputs(stack);
    return {
      ...outputs,
      ...definedOnly(explicit),
      description: `stack ${stack}`,
      connection: { kind: 'aws' },
    };
  }
  if (Object.values(explicit).some((name) => name !== undefined)) {
    return { ...explicit, description: 'the names given', connection: { kind: 'aws' } };
  }
  const sandbox = sandboxTarget(sandboxStateFile(env));
  if (sandbox) return sandbox;
  throw new UsageError(NO_TARGET_MESSAGE);
}

/** Fails with a usage line when the target lacks a name this command needs. */
export function requireName(target: Target, name: keyof ResourceNames): string {
  const value = target[name];
  if (value) return value;
  if (name === 'orderedQueueUrl') return requireOrderedQueue(target);
  throw new UsageError(`${target.description} names no ${describeName(name)}: pass ${FLAGS[name]}`);
}

const FLAGS: Record<keyof ResourceNames, string> = {
  queueUrl: '--queue-url',
  deadLetterQueueUrl: '--dlq-url',
  redriveQueueUrl: '--redrive-queue-url',
  ledgerTable: '--table',
  endpointsTable: '--endpoints-table',
  orderedQueueUrl: '--ordered-queue-url',
};

/**
 * The ordered intake's queue URL (docs/contract.md §13), or a refusal saying why the target has none:
 * a sandbox started before the ordered intake, a stack deployed before it (no `OrderedQueueUrl`
 * output), or names given without it. @throws CommandFailedError
 */
export function requireOrderedQueue(target: Target): string {
  if (target.orderedQueueUrl) return target.orderedQueueUrl;
  const why =
    target.connection.kind === 'sandbox'
      ? `${target.description} has no ordered intake (its state file ${target.connection.stateFile} names no orderedQueueUrl: it was started before the ordered intake): restart it (npm start)`
      : target.description.startsWith('stack ')
        ? `${target.description} has no ordered intake (no ${STACK_OUTPUTS.orderedQueueUrl} output: deployed before the ordered intake?): deploy the current version, or pass ${FLAGS.orderedQueueUrl}`
        : `${target.description} name no ordered intake: pass ${FLAGS.orderedQueueUrl} (the FIFO queue's URL)`;
  throw new CommandFailedError(why, 'no-ordered-queue');
}

export function sqsClient(target: Target): SQSClient {
  // Calls go to the configured endpoint, not to the host inside a queue URL: an emulator's queue
  // URLs name hosts that do not resolve.
  return target.connection.kind === 'sandbox'
    ? new SQSClient({
        endpoint: target.connection.sqsEndpoint,
        region: SANDBOX_REGION,
        credentials: SANDBOX_CREDENTIALS,
        useQueueUrlAsEndpoint: false,
      })
    : new SQSClient({ useQueueUrlAsEndpoint: false });
}

export function dynamoDbClient(target: Target): DynamoDBClient {
  return target.connection.kind === 'sandbox'
    ? new DynamoDBClient({
        endpoint: target.connection.dynamodbEndpoint,
        region: SANDBOX_REGION,
        credentials: SANDBOX_CREDENTIALS,
      })
    : new DynamoDBClient({});
}

/** Who the AWS credentials in use belong to: STS GetCallerIdentity's ARN. */
export type CallerLookup = () => Promise<string>;

export async function stsCallerArn(): Promise<string> {
  const client = new STSClient({});
  try {
    const { Arn } = await client.send(new GetCallerIdentityCommand({}));
    if (!Arn) throw new Error('GetCallerIdentity returned no ARN');
    return Arn;
  } finally {
    client.destroy();
  }
}

/**
 * The authenticated caller, recorded in an audit entry beside the name the operator typed: in AWS
 * the STS ARN of the credentials in use; against the sandbox none, since its emulators take any
 * credentials and there is no identity to record.
 * @throws CommandFailedError when AWS cannot say who is calling: an audit entry is not written
 * without it
 */
export async function callerIdentity(target: Target, lookup: CallerLookup = stsCallerArn): Promise<string | undefined> {
  if (target.connection.kind === 'sandbox') return undefined;
  try {
    return await lookup();
  } catch (error) {
    const detail = error instanceof Error ? rootCause(error).message : String(error);
    throw new CommandFailedError(
      `cannot tell who is calling (STS GetCallerIdentity: ${detail}); the audit entry needs the caller's identity`,
      'caller-unknown',
      { cause: error },
    );
  }
}

/** A line for a target that could not be reached, or undefined when the error is something else. */
export function unreachableHint(target: Target | undefined, error: unknown): string | undefined {
  const networkCode = networkErrorCode(error);
  if (!target || !networkCode) return undefined;
  if (target.connection.kind === 'sandbox' && networkCode === 'ECONNREFUSED') {
    return `the sandbox is not answering (${redactUrl(target.connection.sqsEndpoint)}): start it with npm start, or remove the stale ${target.connection.stateFile}`;
  }
  const detail = error instanceof Error ? `: ${rootCause(error).message}` : '';
  return `cannot reach ${target.description} (${networkCode}${detail}): check AWS_REGION and AWS_ENDPOINT_URL*`;
}

async function readStackOutputs(stackName: string): Promise<ResourceNames & DeploymentFacts> {
  const client = new CloudFormationClient({});
  let outputs: { OutputKey?: string; OutputValue?: string }[];
  try {
    const { Stacks } = await client.send(new DescribeStacksCommand({ StackName: stackName }));
    outputs = Stacks?.[0]?.Outputs ?? [];
  } catch (error) {
    // CloudFormation reports a missing stack as a `ValidationError` ("Stack with id … does not
    // exist"), an error code the SDK models with no class of its own.
    if (error instanceof CloudFormationServiceException && error.name === 'ValidationError') {
      throw new CommandFailedError(`stack ${stackName}: ${error.message}`, 'stack-not-found', { cause: error });
    }
    throw error;
  } finally {
    client.destroy();
  }
  return namesFromOutputs(stackName, new Map(outputs.map((o) => [o.OutputKey, o.OutputValue])));
}

/**
 * The resource names, payload limit and endpoint defaults a stack's outputs give. A stack deployed
 * before it published the registry, the ordered intake, the redrive queue, the payload limit or the
 * endpoint defaults simply has no such output.
 * @throws CommandFailedError
 */
export function namesFromOutputs(
  stackName: string,
  byKey: ReadonlyMap<string | undefined, string | undefined>,
): ResourceNames & DeploymentFacts {
  const names: ResourceNames = {
    queueUrl: byKey.get(STACK_OUTPUTS.queueUrl),
    deadLetterQueueUrl: byKey.get(STACK_OUTPUTS.deadLetterQueueUrl),
    ledgerTable: byKey.get(STACK_OUTPUTS.ledgerTableName),
  };
  if (!names.queueUrl && !names.deadLetterQueueUrl && !names.ledgerTable) {
    const keys = [STACK_OUTPUTS.queueUrl, STACK_OUTPUTS.deadLetterQueueUrl, STACK_OUTPUTS.ledgerTableName];
    throw new CommandFailedError(`stack ${stackName} has none of the outputs ${keys.join(', ')}: is it a handoff stack?`, 'stack-outputs-missing');
  }
  const invalid = (key: string, value: string, problem: string) =>
    new CommandFailedError(`stack ${stackName}'s output ${key} is ${JSON.stringify(value.slice(0, 80))}, ${problem}`, 'stack-outputs-invalid');
  const endpointsTable = byKey.get(STACK_OUTPUTS.endpointsTableName);
  // Absent from a stack deployed before the ordered intake (docs/contract.md §13).
  const orderedQueueUrl = byKey.get(STACK_OUTPUTS.orderedQueueUrl);
  // Absent from a stack deployed before the redrive queue.
  const redriveQueueUrl = byKey.get(STACK_OUTPUTS.redriveQueueUrl);
  const limit = byKey.get(STACK_OUTPUTS.payloadLimitBytes);
  if (limit !== undefined && !/^[1-9]\d{0,9}$/.test(limit)) {
    throw invalid(STACK_OUTPUTS.payloadLimitBytes, limit, 'not a whole number of bytes');
  }
  const sealKeySecretArn = byKey.get(STACK_OUTPUTS.sealKeySecretArn);
  // Absent from a stack deployed before endpoint secrets were encrypted with the registry's key.
  const endpointsKeyArn = byKey.get(STACK_OUTPUTS.endpointsKeyArn);
  const defaults = byKey.get(STACK_OUTPUTS.endpointDefaults);
  let deployment: DeploymentSettings | undefined;
  if (defaults !== undefined) {
    try {
      deployment = deploymentFromJson(JSON.parse(defaults), STACK_OUTPUTS.endpointDefaults);
    } catch {
      throw invalid(STACK_OUTPUTS.endpointDefaults, defaults, "not the deployment's endpoint defaults as JSON");
    }
  }
  return {
    ...names,
    ...(endpointsTable ? { endpointsTable } : {}),
    ...(orderedQueueUrl ? { orderedQueueUrl } : {}),
    ...(redriveQueueUrl ? { redriveQueueUrl } : {}),
    ...(limit !== undefined ? { payloadLimitBytes: Number(limit) } : {}),
    ...(deployment !== undefined ? { deployment } : {}),
    ...(sealKeySecretArn ? { sealKey: { secretArn: sealKeySecretArn } } : {}),
    ...(endpointsKeyArn ? { endpointSecretsKey: { keyArn: endpointsKeyArn } } : {}),
  };
}

/** The sandbox's READY object as a target, or undefined when no sandbox is running (no state file). */
export function sandboxTarget(path: string): Target | undefined {
  let state;
  try {
    state = readSandboxState(path);
  } catch (error) {
    if (!(error instanceof SandboxStateError)) throw error;
    const next =
      error.code === 'sandbox-state-untrusted'
        ? 'remove it and start your own sandbox (npm start)'
        : 'remove it and restart the sandbox';
    throw new CommandFailedError(`${error.message}: ${next}`, error.code, { cause: error });
  }
  if (state === undefined) return undefined;
  return targetOfSandboxState(state, path);
}

/**
 * A sandbox's state as a target: what the command reads from the state file at `path`, or what the
 * sandbox itself holds in memory (its API server runs the command's use cases against it).
 */
export function targetOfSandboxState(state: SandboxState, path: string): Target {
  return {
    queueUrl: state.queueUrl,
    deadLetterQueueUrl: state.deadLetterQueueUrl,
    // Absent from the state file of a sandbox started before the redrive queue.
    ...(state.redriveQueueUrl !== undefined ? { redriveQueueUrl: state.redriveQueueUrl } : {}),
    ledgerTable: state.ledgerTable,
    // Absent from the state file of a sandbox started before the registry.
    ...(state.endpointsTable !== undefined ? { endpointsTable: state.endpointsTable } : {}),
    // Absent from the state file of a sandbox started before the ordered intake.
    ...(state.orderedQueueUrl !== undefined ? { orderedQueueUrl: state.orderedQueueUrl } : {}),
    ...(state.deployment !== undefined ? { deployment: deploymentFromJson(state.deployment, `the sandbox state file ${path}`) } : {}),
    // Absent from the state file of a sandbox started before messages were sealed.
    ...(state.sealKey !== undefined ? { sealKey: { key: state.sealKey } } : {}),
    // Absent from the state file of a sandbox started before endpoint secrets were encrypted.
    ...(state.secretsKey !== undefined ? { endpointSecretsKey: { key: state.secretsKey } } : {}),
    description: 'the sandbox',
    payloadLimitBytes: state.payloadLimitBytes,
    connection: {
      kind: 'sandbox',
      sqsEndpoint: state.sqsEndpoint,
      dynamodbEndpoint: state.dynamodbEndpoint,
      stateFile: path,
    },
  };
}

function describeName(name: keyof ResourceNames): string {
  return {
    queueUrl: 'delivery queue',
    deadLetterQueueUrl: 'dead-letter queue',
    redriveQueueUrl: 'redrive queue',
    ledgerTable: 'ledger table',
    endpointsTable: 'endpoint registry table',
    orderedQueueUrl: 'ordered intake (FIFO queue)',
  }[name];
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function definedOnly(names: ResourceNames): ResourceNames {
  return Object.fromEntries(Object.entries(names).filter(([, v]) => v !== undefined));
}
