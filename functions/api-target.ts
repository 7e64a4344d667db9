/**
 * The deployment the management API's Lambda (functions/api.ts) runs the command's use cases
 * against, read from the environment the construct gives it (infra/delivery/api.ts): the same
 * Target the command builds from the stack's outputs (cli/target.ts `namesFromOutputs`), with the
 * same names and facts, so a route and `handoff … --stack` see one deployment alike.
 *
 * No secret is in the environment: the seal key and the registry's key are named by their ARNs,
 * and the seal key is read from Secrets Manager when a route first seals a message (cli/context.ts).
 */
import type { Target } from '../cli/target';
import { RESOURCE_ENV, SETTING_VARIABLES } from '../lib/config';
import { deploymentFromJson, type DeploymentSettings } from '../lib/endpoints/endpoint';
import { ConfigError } from '../lib/errors';

/** What messages and audit entries call this deployment. */
export const API_TARGET_DESCRIPTION = 'this deployment';

/**
 * The target the environment names. Every resource the routes use is required; a missing or bad
 * one fails the cold start naming its variable, never a request halfway through.
 * @throws ConfigError naming the variable
 */
export function targetFromEnvironment(env: NodeJS.ProcessEnv): Target {
  const required = (variable: string): string => {
    const value = env[variable]?.trim();
    if (!value) throw new ConfigError(variable, 'must be set');
    return value;
  };
  const limitVariable = SETTING_VARIABLES.payloadLimitBytes;
  const limit = required(limitVariable);
  if (!/^[1-9]\d{0,9}$/.test(limit)) throw new ConfigError(limitVariable, `must be a whole number of bytes, got ${JSON.stringify(limit.slice(0, 40))}`);
  let deployment: DeploymentSettings;
  const defaults = required(RESOURCE_ENV.endpointDefaults);
  try {
    deployment = deploymentFromJson(JSON.parse(defaults), RESOURCE_ENV.endpointDefaults);
  } catch {
    throw new ConfigError(RESOURCE_ENV.endpointDefaults, "must hold the deployment's endpoint defaults as JSON (lib/endpoints/endpoint.ts deploymentToJson)");
  }
  return {
    queueUrl: required(RESOURCE_ENV.queueUrl),
    deadLetterQueueUrl: required(RESOURCE_ENV.deadLetterQueueUrl),
    redriveQueueUrl: required(RESOURCE_ENV.redriveQueueUrl),
    orderedQueueUrl: required(RESOURCE_ENV.orderedQueueUrl),
    ledgerTable: required(RESOURCE_ENV.ledgerTable),
    endpointsTable: required(RESOURCE_ENV.endpointsTable),
    sealKey: { secretArn: required(RESOURCE_ENV.sealKeyArn) },
    endpointSecretsKey: { keyArn: required(RESOURCE_ENV.endpointsKeyArn) },
    payloadLimitBytes: Number(limit),
    deployment,
    description: API_TARGET_DESCRIPTION,
    // The SDK's standard environment: the function's region and role.
    connection: { kind: 'aws' },
  };
}
