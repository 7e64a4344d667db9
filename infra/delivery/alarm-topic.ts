/**
 * The topic the alarms notify (infra/delivery/alarms.ts): the one given, or one made here (SSE with
 * a key of its own, TLS only).
 */
import { ArnFormat, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';

/**
 * The topic the alarms notify: the one given, or one made here, encrypted with a key of its own (an
 * AWS-managed key cannot be used: CloudWatch must be allowed in the key's policy), TLS only, which
 * CloudWatch's alarms of this account may publish to. The key goes with the stack (it keeps nothing).
 */
export function createAlarmTopic(scope: Construct, given: sns.ITopic | undefined): { topic: sns.ITopic; key: kms.Key | undefined } {
  if (given) return { topic: given, key: undefined };
  const stack = Stack.of(scope);
  const key = new kms.Key(scope, 'AlarmTopicKey', {
    description: "handoff: encrypts the alarm topic's messages",
    enableKeyRotation: true,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'CloudWatchAlarmsPublish',
      principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
      resources: ['*'],
    }),
  );
  const topic = new sns.Topic(scope, 'AlarmTopic', {
    displayName: 'handoff alarms',
    masterKey: key,
    enforceSSL: true,
  });
  topic.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'CloudWatchAlarmsPublish',
      principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: {
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
      },
    }),
  );
  return { topic, key };
}
