/**
 * Which handoff the command talks to, decided in this order:
 *
 * 1. explicit names: `--queue-url`, `--dlq-url`, `--table`, with the standard AWS environment
 *    (region, profile, `AWS_ENDPOINT_URL*`), which the SDK clients read on their own;
 * 2. `--stack NAME`: the deployed stack's CloudFormation outputs (explicit names still win);
 * 3. the running sandbox: the state file `npm start` writes while it runs.
 *
 * The sandbox's emulators listen on loopback and accept any credentials, so its clients get
 * explicit endpoints, us-east-1 and dummy keys, whatever the shell's AWS settings say.
 */
import {
  CloudFormationClient,
  CloudFormationServiceException,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  readSandboxState,
  SANDBOX_CREDENTIALS,
  SANDBOX_REGION,
  sandboxStateFile,
  type SandboxState,
} from '../sandbox/state-file';
import { CommandFailedError, networkErrorCode, rootCause, UsageError } from './errors';

export interface TargetOptions {
  readonly queueUrl?: string;
  readonly dlqUrl?: string;
  readonly table?: string;
  readonly stack?: string;
}

export interface ResourceNames {
  readonly queueUrl?: string;
  readonly deadLetterQueueUrl?: string;
  readonly ledgerTable?: string;
}

/** Where the SDK clients connect: the sandbox's endpoints, or the standard AWS environment. */
export type Connection =
  | { readonly kind: 'aws' }
  | { readonly kind: 'sandbox'; readonly sqsEndpoint: string; readonly dynamodbEndpoint: string; readonly stateFile: string };

export interface Target extends ResourceNames {
  /** For messages: "the sandbox (…)", "stack NAME", "the names given". */
  readonly description: string;
  readonly connection: Connection;
}

/** The CloudFormation output keys the stack publishes its resource names under. */
export const STACK_OUTPUTS = {
  queueUrl: 'QueueUrl',
  deadLetterQueueUrl: 'DeadLetterQueueUrl',
  ledgerTable: 'LedgerTableName',
} as const;

export const NO_TARGET_MESSAGE =
  'no handoff to talk to: start the sandbox (npm start), or pass --stack NAME, ' +
  'or --queue-url/--dlq-url/--table with AWS_REGION and credentials set';

export async function resolveTarget(options: TargetOptions, env: NodeJS.ProcessEnv = process.env): Promise<Target> {
  const explicit: ResourceNames = {
    queueUrl: nonEmpty(options.queueUrl),
    deadLetterQueueUrl: nonEmpty(options.dlqUrl),
    ledgerTable: nonEmpty(options.table),
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
  if (explicit.queueUrl || explicit.deadLetterQueueUrl || explicit.ledgerTable) {
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
  const flag = { queueUrl: '--queue-url', deadLetterQueueUrl: '--dlq-url', ledgerTable: '--table' }[name];
  throw new UsageError(`${target.description} names no ${describeName(name)}: pass ${flag}`);
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

/** A line for a target that could not be reached, or undefined when the error is something else. */
export function unreachableHint(target: Target | undefined, error: unknown): string | undefined {
  const networkCode = networkErrorCode(error);
  if (!target || !networkCode) return undefined;
  if (target.connection.kind === 'sandbox' && networkCode === 'ECONNREFUSED') {
    return `the sandbox is not answering (${target.connection.sqsEndpoint}): start it with npm start, or remove the stale ${target.connection.stateFile}`;
  }
  const detail = error instanceof Error ? `: ${rootCause(error).message}` : '';
  return `cannot reach ${target.description} (${networkCode}${detail}): check AWS_REGION and AWS_ENDPOINT_URL*`;
}

async function readStackOutputs(stackName: string): Promise<ResourceNames> {
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
  const byKey = new Map(outputs.map((o) => [o.OutputKey, o.OutputValue]));
  const names: ResourceNames = {
    queueUrl: byKey.get(STACK_OUTPUTS.queueUrl),
    deadLetterQueueUrl: byKey.get(STACK_OUTPUTS.deadLetterQueueUrl),
    ledgerTable: byKey.get(STACK_OUTPUTS.ledgerTable),
  };
  if (!names.queueUrl && !names.deadLetterQueueUrl && !names.ledgerTable) {
    throw new CommandFailedError(
      `stack ${stackName} has none of the outputs ${Object.values(STACK_OUTPUTS).join(', ')}: is it a handoff stack?`,
      'stack-outputs-missing',
    );
  }
  return names;
}

/** The sandbox's READY object as a target, or undefined when no sandbox is running (no state file). */
function sandboxTarget(path: string): Target | undefined {
  let state: Partial<Record<keyof SandboxState, unknown>> | undefined;
  try {
    state = readSandboxState(path);
  } catch (error) {
    const problem = error instanceof SyntaxError ? 'is not JSON' : `cannot be read (${(error as Error).message})`;
    throw new CommandFailedError(`the sandbox state file ${path} ${problem}: remove it and restart the sandbox`);
  }
  if (state === undefined) return undefined;
  const field = (name: keyof SandboxState): string => {
    const value = state[name];
    if (typeof value !== 'string' || value === '') {
      throw new CommandFailedError(`the sandbox state file ${path} has no ${name}: remove it and restart the sandbox`);
    }
    return value;
  };
  return {
    queueUrl: field('queueUrl'),
    deadLetterQueueUrl: field('deadLetterQueueUrl'),
    ledgerTable: field('ledgerTable'),
    description: 'the sandbox',
    connection: {
      kind: 'sandbox',
      sqsEndpoint: field('sqsEndpoint'),
      dynamodbEndpoint: field('dynamodbEndpoint'),
      stateFile: path,
    },
  };
}

function describeName(name: keyof ResourceNames): string {
  return { queueUrl: 'delivery queue', deadLetterQueueUrl: 'dead-letter queue', ledgerTable: 'ledger table' }[name];
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function definedOnly(names: ResourceNames): ResourceNames {
  return Object.fromEntries(Object.entries(names).filter(([, v]) => v !== undefined));
}
