/**
 * The environment the construct gives the API's Lambda function (infra/delivery/functions.ts
 * createApiFunction), for the tests that run functions/api.ts as Lambda does: its resources by
 * name, the seal key and the endpoint secrets' key by ARN, and the deployment's endpoint defaults.
 */
import { DEFAULT_SETTINGS, RESOURCE_ENV, SETTING_VARIABLES } from '../../lib/config';
import { deploymentToJson } from '../../lib/endpoints/endpoint';

export const SEAL_KEY_ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:handoff-seal-AbCdEf';
export const ENDPOINTS_KEY_ARN = 'arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000';

export interface ApiFunctionResources {
  readonly ledgerTable: string;
  readonly endpointsTable: string;
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  readonly redriveQueueUrl: string;
  readonly orderedQueueUrl: string;
}

/** Resources named and never reached: for a test whose routes touch none of them. */
export const UNREACHED_RESOURCES: ApiFunctionResources = {
  ledgerTable: 'ledger',
  endpointsTable: 'endpoints',
  queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/q',
  deadLetterQueueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/dlq',
  redriveQueueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/redrive',
  orderedQueueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/ordered.fifo',
};

/** The function's variables for these resources. */
export function apiFunctionEnvironment(resources: ApiFunctionResources): Record<string, string> {
  return {
    [RESOURCE_ENV.ledgerTable]: resources.ledgerTable,
    [RESOURCE_ENV.endpointsTable]: resources.endpointsTable,
    [RESOURCE_ENV.queueUrl]: resources.queueUrl,
    [RESOURCE_ENV.deadLetterQueueUrl]: resources.deadLetterQueueUrl,
    [RESOURCE_ENV.redriveQueueUrl]: resources.redriveQueueUrl,
    [RESOURCE_ENV.orderedQueueUrl]: resources.orderedQueueUrl,
    [RESOURCE_ENV.sealKeyArn]: SEAL_KEY_ARN,
    [RESOURCE_ENV.endpointsKeyArn]: ENDPOINTS_KEY_ARN,
    [RESOURCE_ENV.endpointDefaults]: JSON.stringify(deploymentToJson(DEFAULT_SETTINGS)),
    [SETTING_VARIABLES.payloadLimitBytes]: String(DEFAULT_SETTINGS.payloadLimitBytes),
  };
}
