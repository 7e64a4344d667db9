/**
 * The endpoint registry's seed function: one small Lambda of the construct, inline in the template
 * (no asset), that every declared endpoint's custom resource calls at deploy (infra/endpoint-registry.ts).
 */
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/**
 * The seed function (CommonJS, inline in the template; the Node.js runtime's AWS SDK v3). A Create or
 * Update runs the resource's `Call` (a DynamoDB UpdateItem as JSON) with `:now` set to `SeededAt`
 * when given, else the function's clock; a ConditionalCheckFailedException is the declaration already
 * applied (`unchanged`), not a failure. A Delete does nothing (see infra/endpoint-registry.ts). It answers
 * CloudFormation at the request's ResponseURL itself, and logs the endpoint's name and the outcome,
 * never the call.
 */
export const SEED_HANDLER = `'use strict';
const { DynamoDBClient, UpdateItemCommand } = require('@aws-sdk/client-dynamodb');
const dynamodb = new DynamoDBClient({});
exports.handler = async (event) => {
  const props = event.ResourceProperties || {};
  const answer = { Status: 'SUCCESS', Reason: 'see the seed function log', PhysicalResourceId: event.PhysicalResourceId || 'endpoint:' + props.Endpoint, StackId: event.StackId, RequestId: event.RequestId, LogicalResourceId: event.LogicalResourceId };
  let outcome = 'nothing to do';
  try {
    if (event.RequestType === 'Create' || event.RequestType === 'Update') {
      const call = JSON.parse(props.Call);
      call.ExpressionAttributeValues[':now'] = { N: props.SeededAt ? String(props.SeededAt) : String(Date.now()) };
      try {
        await dynamodb.send(new UpdateItemCommand(call));
        outcome = 'applied';
      } catch (error) {
        if (!error || error.name !== 'ConditionalCheckFailedException') throw error;
        outcome = 'unchanged';
      }
    }
  } catch (error) {
    outcome = 'failed';
    answer.Status = 'FAILED';
    answer.Reason = String((error && error.name) || 'Error') + ': ' + String((error && error.message) || error).slice(0, 500);
  }
  console.log(JSON.stringify({ endpoint: props.Endpoint, request: event.RequestType, outcome, reason: answer.Status === 'FAILED' ? answer.Reason : undefined }));
  await respond(event.ResponseURL, JSON.stringify(answer));
  return outcome;
};
function respond(responseUrl, body) {
  const url = new URL(responseUrl);
  const transport = require(url.protocol === 'http:' ? 'node:http' : 'node:https');
  return new Promise((resolve, reject) => {
    const request = transport.request(url, { method: 'PUT', headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) } }, (response) => {
      response.resume();
      response.on('end', resolve);
    });
    request.on('error', reject);
    request.end(body);
  });
}
`;

/**
 * The seed function in `scope` (the registry), with a role of its own rather than the default one,
 * which attaches the AWSLambdaBasicExecutionRole managed policy (logs on `*`): this one writes to
 * its own log group and updates the registry's items, nothing else.
 */
export function createSeedFunction(
  scope: Construct,
  registry: { readonly table: dynamodb.ITable; readonly encryptionKey: kms.IKey },
  logRetention: logs.RetentionDays,
): lambda.Function {
  const role = new iam.Role(scope, 'SeedRole', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: 'handoff: seeds the endpoints the stack declares into the endpoint registry',
  });
  const logGroup = new logs.LogGroup(scope, 'SeedLogs', { retention: logRetention });
  logGroup.grantWrite(role);
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'EndpointSeedWrite', actions: ['dynamodb:UpdateItem'], resources: [registry.table.tableArn] }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'EndpointSeedEncrypt',
      actions: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
      resources: [registry.encryptionKey.keyArn],
    }),
  );
  return new lambda.Function(scope, 'SeedFunction', {
    runtime: lambda.Runtime.NODEJS_24_X,
    architecture: lambda.Architecture.ARM_64,
    memorySize: 128,
    timeout: Duration.minutes(1),
    code: lambda.Code.fromInline(SEED_HANDLER),
    handler: 'index.handler',
    role,
    logGroup,
    description: 'handoff: seeds a declared endpoint into the endpoint registry (one UpdateItem, stamped at deploy)',
  });
}
