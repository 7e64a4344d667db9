/**
 * What every `handoff endpoint` subcommand shares: the registry's refusals as the command's
 * failures, the endpoint named, the deployment's settings an endpoint is checked against (and the
 * check itself, as the consumer will make it), and its parked deliveries' count.
 */
import { readSettings, SETTING_VARIABLES, type Settings } from '../../lib/config';
import {
  ENDPOINT_NAME,
  endpointProblems,
  resolveEndpoint,
  type EndpointFieldProblem,
  type DeploymentSettings,
  type EndpointFields,
  type EndpointRecord,
} from '../../lib/endpoints/endpoint';
import { isEncryptedSecret } from '../../lib/endpoints/secret-cipher';
import { secretValuePlaces } from '../../lib/endpoints/secret-values';
import { EndpointConflictError, EndpointError, EndpointNotFoundError } from '../../lib/errors';
import { quoted } from '../../lib/terminal';
import type { CommandContext } from '../context';
import { CommandFailedError, UsageError } from '../errors';
import type { Target } from '../target';

/** Runs a registry call; its refusals become one line naming the target, exit 1. */
export async function registryCall<T>(ctx: CommandContext, call: (registry: ReturnType<CommandContext['registry']>) => Promise<T>): Promise<T> {
  const registry = ctx.registry();
  try {
    return await call(registry);
  } catch (error) {
    if (error instanceof EndpointNotFoundError) {
      throw new CommandFailedError(`${error.message} in ${ctx.target.description}`, error.code, { cause: error });
    }
    // Anything else (EndpointRegistryError: the table unreachable, missing) goes to cli/errors.ts,
    // which names an unreachable target plainly.
    if (error instanceof EndpointConflictError) {
      throw new CommandFailedError(error.message, error.code, { cause: error });
    }
    throw error;
  }
}

export async function requireEndpoint(ctx: CommandContext, name: string): Promise<EndpointRecord> {
  const record = await registryCall(ctx, (registry) => registry.get(name));
  if (record === undefined) throw new CommandFailedError(`no endpoint named ${quoted(name)} in ${ctx.target.description}`, 'endpoint-not-found');
  return record;
}

export function checkName(name: string): string {
  if (!ENDPOINT_NAME.test(name)) throw new UsageError(`${quoted(name.slice(0, 80))} is not an endpoint name (1–64 characters of a-z 0-9 -)`);
  return name;
}

/**
 * How many deliveries of the endpoint are parked (docs/contract.md §12), from the ledger's parked
 * listing of that endpoint (its index entries alone); null when the target names no ledger table.
 */
export async function parkedCount(ctx: CommandContext, name: string): Promise<number | null> {
  if (ctx.target.ledgerTable === undefined) return null;
  return ctx.ledger().countByState('parked', { endpoint: name });
}

/** `parkedCount` after the registry was written: a failure to count must not hide that the write was made. */
export async function parkedAfterWrite(ctx: CommandContext, name: string): Promise<number | null> {
  try {
    return await parkedCount(ctx, name);
  } catch {
    return null;
  }
}

/**
 * The deployment's settings an endpoint is checked against: the target's (sandbox state, stack
 * output `EndpointDefaults`); for a target that does not say (explicit names, an older stack),
 * the `HANDOFF_*` variables of those settings, else the defaults. Says which.
 * @throws ConfigError naming the variable
 */
export function deploymentFor(target: Pick<Target, 'deployment' | 'description'>, env: NodeJS.ProcessEnv = process.env): { settings: DeploymentSettings; source: string } {
  if (target.deployment !== undefined) return { settings: target.deployment, source: `the settings of ${target.description}` };
  const V = SETTING_VARIABLES;
  const names = [V.retrySchedule, V.maxAttempts, V.attemptTimeoutMs, V.retentionDays, V.allowPrivateCidrs, V.allowHttp];
  const given = Object.fromEntries(names.filter((n) => env[n] !== undefined && env[n] !== '').map((n) => [n, env[n]]));
  const settings: Settings = readSettings(given);
  const source = Object.keys(given).length > 0 ? `${Object.keys(given).join(', ')} and the defaults` : 'the default settings';
  return { settings, source: `${source} (no deployment settings from ${target.description})` };
}

/**
 * A secret value (a header's, `auth.clientSecret`, `tls.privateKey`, a certificate kept as a secret)
 * comes from where the deployment keeps secrets (docs/contract.md §18): in AWS a Secrets Manager
 * secret, named by its ARN (`{"secretArn": …}`); in the sandbox, which has none, the value itself
 * (`{"secret": …}`, stored encrypted). A value the registry encrypted already (the endpoint's own,
 * kept by an update) is neither's to refuse. Each refusal names the value's path.
 */
export function headerSourceProblems(fields: Partial<EndpointFields>, target: Pick<Target, 'connection'>): EndpointFieldProblem[] {
  const sandbox = target.connection.kind === 'sandbox';
  return secretValuePlaces(fields).flatMap(({ path, value }): EndpointFieldProblem[] => {
    if ('secretArn' in value && sandbox) {
      const instead = path === 'tls.clientCertificate' || path === 'tls.ca' ? 'give the PEM itself' : 'give the value itself, {"secret": "…"} (stored encrypted)';
      return [{ field: path, problem: `names a Secrets Manager secret, which the sandbox has none of: ${instead}` }];
    }
    if ('secret' in value && !sandbox && !isEncryptedSecret(value.secret)) {
      return [{ field: path, problem: `holds a secret value: in AWS a secret ${path.startsWith('headers.') ? 'header' : 'value'} is kept in Secrets Manager, named by its ARN, {"secretArn": "arn:aws:secretsmanager:…"} (the value is not shown)` }];
    }
    return [];
  });
}

/** A listing's `--owner` or `--cursor` refused: the API names the query parameter by `option`. */
export class ListOptionError extends UsageError {
  constructor(
    readonly option: 'owner' | 'cursor',
    message: string,
  ) {
    super(message);
  }
}

/**
 * An endpoint's fields refused, every bad one named (`problems`): the command prints the first
 * (its message), the API names each (api/routes/endpoints.ts).
 */
export class EndpointFieldsUsageError extends UsageError {
  constructor(
    message: string,
    readonly problems: readonly EndpointFieldProblem[],
  ) {
    super(message);
  }
}

/**
 * Parses and resolves, as the consumer will; and where a secret header's value may come from on this
 * target (`headerSourceProblems`).
 * @throws EndpointFieldsUsageError naming the endpoint and the first field, and holding every problem
 */
export function checkFields(raw: Record<string, unknown>, target: Target, nowMs: number, current?: EndpointRecord): { fields: EndpointFields; source: string } {
  const { settings, source } = deploymentFor(target);
  const checked = endpointProblems(raw, settings);
  const { fields, name } = checked;
  const problems = [...checked.problems, ...headerSourceProblems(fields, target)];
  const [first] = problems;
  if (first !== undefined) throw new EndpointFieldsUsageError(`${new EndpointError(name, first.field, first.problem).message} (checked against ${source})`, problems);
  // Resolved as the consumer will (its state and times do not bear on the rules just checked).
  resolveEndpoint({ fields: fields as EndpointFields, state: current?.state ?? 'enabled', createdAt: current?.createdAt ?? nowMs, updatedAt: nowMs }, settings);
  return { fields: fields as EndpointFields, source };
}
