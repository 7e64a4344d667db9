/**
 * The deployed stack's CloudFormation outputs, by key: infra/app.ts publishes them and the
 * operator CLI reads them (`handoff … --stack NAME`), so a key is named here once.
 */
export const STACK_OUTPUTS = {
  queueUrl: 'QueueUrl',
  queueArn: 'QueueArn',
  deadLetterQueueUrl: 'DeadLetterQueueUrl',
  /** Where SQS's redrive moves a delivery-queue message the consumer kept failing on; recovery drains it. */
  redriveQueueUrl: 'RedriveQueueUrl',
  ledgerTableName: 'LedgerTableName',
  consumerFunctionName: 'ConsumerFunctionName',
  /** The largest message body the consumer accepts, in bytes (a decimal string, as outputs are). */
  payloadLimitBytes: 'PayloadLimitBytes',
  /** The endpoint registry's table (lib/endpoints/registry.ts). */
  endpointsTableName: 'EndpointsTableName',
  /** The settings an endpoint's defaults and limits come from, as JSON (lib/endpoints/endpoint.ts `deploymentToJson`). */
  endpointDefaults: 'EndpointDefaults',
  /** The ordered intake (docs/contract.md §13): the FIFO queue producers who need a shipment's order send to. */
  orderedQueueUrl: 'OrderedQueueUrl',
  /** The Secrets Manager secret holding the key that seals handoff's own messages (lib/queue/seal.ts): operators' replays are sealed with it. */
  sealKeySecretArn: 'SealKeySecretArn',
  /**
   * The endpoint registry's KMS key (its ARN): `handoff endpoint add` and `rotate-secret` encrypt the
   * signing secrets they write with it (lib/endpoints/secret-cipher.ts, kms:Encrypt).
   */
  endpointsKeyArn: 'EndpointsKeyArn',
  /** The SNS topic the alarms (and endpoint-disabled and recovery-failure notices) go to: the one given, or the stack's own. */
  alarmTopicArn: 'AlarmTopicArn',
  /** The management API (docs/contract.md §16): its URL, every route behind IAM (SigV4) authorization. */
  apiUrl: 'ApiUrl',
  /** The management API for people (`apiAuth.jwt`): the same routes behind the JWT authorizer. Absent without it. */
  apiJwtUrl: 'ApiJwtUrl',
  /** The console (docs/contract.md §17) on the JWT API, `<ApiJwtUrl>console/`: people sign in at the JWT authorizer's issuer. Absent without it. */
  consoleUrl: 'ConsoleUrl',
  /** The console on the portal API, where portal links point (`<url>#portal=<token>`); always present. */
  portalConsoleUrl: 'PortalConsoleUrl',
  /** The Cognito user pool made for the API's people (`apiAuth.jwt.userPool`), and its app client. Absent without it. */
  apiUserPoolId: 'ApiUserPoolId',
  apiUserPoolClientId: 'ApiUserPoolClientId',
  /**
   * The addresses every webhook leaves from (`egress.staticIps`): the two NAT gateways' Elastic IPs,
   * comma-separated, for receivers to allowlist. Absent without it.
   */
  egressIps: 'EgressIps',
} as const;
