/**
 * What the construct's functions may do, least privilege on exact ARNs. Each function's role is
 * its own (infra/delivery/functions.ts): it writes its own log group, and the consumer's event
 * source mappings add their queue's receive actions; everything else is granted here.
 * `table.grant*()` is avoided: it adds an `index/*` resource (every index) where a function needs at
 * most the listing index.
 */
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { IDEMPOTENCY_PARTITION_PREFIX } from '../../api/idempotency';
import { LEDGER_SCHEMA } from '../../lib/ledger/dynamodb-schema';
import type { WebhookDelivery } from '../webhook-delivery';

type AlarmTopicParts = Pick<WebhookDelivery, 'alarmTopic' | 'alarmTopicKey'>;

export type ConsumerGrantParts = AlarmTopicParts &
  Pick<WebhookDelivery, 'ledgerTable' | 'queue' | 'deadLetterQueue' | 'signingSecret' | 'sealKey' | 'endpointRegistry'>;

export type RecoveryGrantParts = AlarmTopicParts &
  Pick<WebhookDelivery, 'ledgerTable' | 'queue' | 'deadLetterQueue' | 'redriveQueue' | 'sealKey' | 'endpointRegistry'>;

/** Lets a role publish to the alarm topic (and use its key, when the topic is the construct's own). */
function grantAlarmTopicPublish(role: iam.IRole, sid: string, parts: AlarmTopicParts): void {
  role.addToPrincipalPolicy(new iam.PolicyStatement({ sid, actions: ['sns:Publish'], resources: [parts.alarmTopic.topicArn] }));
  if (parts.alarmTopicKey) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: `${sid}Encrypt`, actions: ['kms:Decrypt', 'kms:GenerateDataKey'], resources: [parts.alarmTopicKey.keyArn] }),
    );
  }
}

/** Lets a role read the seal key (the consumer, the recovery function, the API, the portal authorizer). */
function grantSealKeyRead(role: iam.IRole, parts: Pick<WebhookDelivery, 'sealKey'>): void {
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'SealKeyRead', actions: ['secretsmanager:GetSecretValue'], resources: [parts.sealKey.secretArn] }),
  );
}

/**
 * The consumer. The event source mappings grant the delivery queue's and the ordered intake's
 * receive, delete, attribute and ChangeMessageVisibility actions (the last is how the handler defers
 * a retry) on each queue's ARN. The consumer sends to neither FIFO queue: its per-endpoint messages
 * go to the delivery queue and its dead letters to the standard dead-letter queue, whichever queue
 * the message came from.
 */
export function grantConsumerAccess(role: iam.IRole, parts: ConsumerGrantParts): void {
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'LedgerReadWrite',
      // Query on the table's key only (an event's deliveries, when its message is received again); not on the index.
      actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:Query'],
      resources: [parts.ledgerTable.tableArn],
    }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'QueueSend',
      // The delivery queue: routing's one message per endpoint; the dead-letter queue: dead letters.
      actions: ['sqs:SendMessage'],
      resources: [parts.queue.queueArn, parts.deadLetterQueue.queueArn],
    }),
  );
  const signingSecret = parts.signingSecret;
  if (signingSecret) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'SigningSecretRead',
        actions: ['secretsmanager:GetSecretValue'],
        // A secret imported by name has no full ARN: match its six-character suffix.
        resources: [signingSecret.secretFullArn ?? `${signingSecret.secretArn}-??????`],
      }),
    );
    signingSecret.encryptionKey?.grantDecrypt(role);
  }
  grantSealKeyRead(role, parts);
  // The registry: read, and the endpoints' health written (operators write the rest), and the
  // secrets of the declared endpoints and of their headers.
  parts.endpointRegistry.grantRead(role);
  parts.endpointRegistry.grantHealthWrite(role);
  // An endpoint it disables, announced on the default bus and to the alarm topic.
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'EndpointDisabledEvent',
      actions: ['events:PutEvents'],
      resources: [Stack.of(role).formatArn({ service: 'events', resource: 'event-bus', resourceName: 'default' })],
    }),
  );
  grantAlarmTopicPublish(role, 'EndpointDisabledAlarm', parts);
  parts.endpointRegistry.seededSecrets.forEach((secret, i) => {
    if (secret === signingSecret) return;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: `EndpointSecretRead${i}`,
        actions: ['secretsmanager:GetSecretValue'],
        resources: [secret.secretFullArn ?? `${secret.secretArn}-??????`],
      }),
    );
    secret.encryptionKey?.grantDecrypt(role);
  });
  // The other secret values declared endpoints name by ARN ({"secretArn": …} in `headers`, `auth`,
  // `tls`: lib/endpoints/secret-values.ts): those ARNs alone.
  const headerSecretArns = parts.endpointRegistry.seededHeaderSecretArns;
  if (headerSecretArns.length > 0) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'EndpointHeaderSecretRead', actions: ['secretsmanager:GetSecretValue'], resources: [...headerSecretArns] }),
    );
  }
}

/**
 * The recovery function: drains the redrive queue (Receive, Delete) into the delivery queue or,
 * after a few rounds, the dead-letter queue (SendMessage); reads the ledger's pending and parked
 * listings (Query on the index, BatchGetItem of the rows it lists) and the registry's endpoint
 * names, pauses and releases (Scan, with the key's Decrypt), releases parked rows (UpdateItem on the
 * ledger, and on the registry for the release's window), and sends to the delivery queue; nothing
 * else.
 */
export function grantRecoveryAccess(role: iam.IRole, parts: RecoveryGrantParts): void {
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'LedgerListingQuery',
      actions: ['dynamodb:Query'],
      resources: [`${parts.ledgerTable.tableArn}/index/${LEDGER_SCHEMA.listingIndex.name}`],
    }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'LedgerRowsRead', actions: ['dynamodb:BatchGetItem'], resources: [parts.ledgerTable.tableArn] }),
  );
  // Releasing parked deliveries (lib/resume.ts, unpark) and marking the rows it sent again
  // (lib/recovery.ts, relist): one conditional UpdateItem per row.
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'LedgerRowsRelease', actions: ['dynamodb:UpdateItem'], resources: [parts.ledgerTable.tableArn] }),
  );
  // Sending back what SQS redrove (to the delivery queue), or giving up on it (to the dead-letter queue).
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'DeliveryQueueSend', actions: ['sqs:SendMessage'], resources: [parts.queue.queueArn, parts.deadLetterQueue.queueArn] }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'RedriveQueueDrain', actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage'], resources: [parts.redriveQueue.queueArn] }),
  );
  // The registry's names, pauses and releases (a Scan projecting those attributes), so rows of
  // removed endpoints are left alone; and the releases' own writes (their window, their end).
  parts.endpointRegistry.grantNamesRead(role);
  parts.endpointRegistry.grantHealthWrite(role);
  // What it sends back is sealed again, as the consumer's own messages are.
  grantSealKeyRead(role, parts);
  // Its on-failure destination: a run that failed every attempt, told to whoever takes the alarms.
  grantAlarmTopicPublish(role, 'RecoveryFailureNotice', parts);
}

export type ApiGrantParts = Pick<
  WebhookDelivery,
  'ledgerTable' | 'queue' | 'orderedQueue' | 'deadLetterQueue' | 'redriveQueue' | 'sealKey' | 'endpointRegistry'
>;

/** The ledger actions the management API's use cases call on the table itself (every one on exact keys). */
export const API_LEDGER_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem'] as const;

/**
 * What only the `Idempotency-Key` store does, on its own items alone: a claim is a PutItem and a
 * release a DeleteItem, of a partition starting `api-idempotency#` (api/dynamodb-idempotency.ts).
 * No delivery row can be put or deleted by the API.
 */
export const API_IDEMPOTENCY_ACTIONS = ['dynamodb:DeleteItem', 'dynamodb:PutItem'] as const;
export const API_IDEMPOTENCY_KEYS = `${IDEMPOTENCY_PARTITION_PREFIX}*`;

/**
 * The management API (functions/api.ts): what `handoff` itself does, on this deployment's
 * resources alone.
 * - The ledger: an event's deliveries (Query on its key), replays and releases (UpdateItem), the
 *   rows a listing names (BatchGetItem); the `Idempotency-Key` items it keeps there for 24 h
 *   (api/dynamodb-idempotency.ts: UpdateItem to complete, GetItem to answer a repeat, and PutItem
 *   to claim and DeleteItem to release on those items' keys alone); Query on the listing index (dead and parked deliveries) and on
 *   the shipment index when the ledger has it (a shipment's deliveries). No Scan.
 * - The registry: `grantEndpointAdmin`, what `handoff endpoint …` needs (the owner index, the key
 *   to encrypt the secrets it writes).
 * - SendMessage to the delivery queue (events, test events, replays) and the ordered intake
 *   (`?ordered=true`); GetQueueAttributes on the delivery, redrive and dead-letter queues (stats'
 *   depths). Nothing receives or deletes.
 * - GetSecretValue on the seal key: replays and releases are sealed as the consumer's own messages
 *   are, and portal links are signed with a key derived from it.
 * - cloudwatch:GetMetricData (stats): CloudWatch has no resource for it, so `*`, read-only.
 */
export function grantApiAccess(role: iam.IRole, parts: ApiGrantParts, options: { readonly shipmentIndex: boolean }): void {
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'LedgerReadWrite', actions: [...API_LEDGER_ACTIONS], resources: [parts.ledgerTable.tableArn] }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'IdempotencyItems',
      actions: [...API_IDEMPOTENCY_ACTIONS],
      resources: [parts.ledgerTable.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [API_IDEMPOTENCY_KEYS] } },
    }),
  );
  const indexes = [LEDGER_SCHEMA.listingIndex.name, ...(options.shipmentIndex ? [LEDGER_SCHEMA.shipmentIndex.name] : [])];
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'LedgerIndexQuery',
      actions: ['dynamodb:Query'],
      resources: indexes.map((name) => `${parts.ledgerTable.tableArn}/index/${name}`),
    }),
  );
  parts.endpointRegistry.grantEndpointAdmin(role);
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ sid: 'QueueSend', actions: ['sqs:SendMessage'], resources: [parts.queue.queueArn, parts.orderedQueue.queueArn] }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'QueueDepthRead',
      actions: ['sqs:GetQueueAttributes'],
      resources: [parts.queue.queueArn, parts.redriveQueue.queueArn, parts.deadLetterQueue.queueArn],
    }),
  );
  grantSealKeyRead(role, parts);
  role.addToPrincipalPolicy(new iam.PolicyStatement({ sid: 'MetricsRead', actions: ['cloudwatch:GetMetricData'], resources: ['*'] }));
}

/**
 * The portal API's authorizer: GetSecretValue on the seal key, the key portal tokens are verified
 * with is derived from it (api/portal-link.ts). Nothing else: it reads no table and sends nothing.
 */
export function grantPortalAuthorizerAccess(role: iam.IRole, parts: Pick<WebhookDelivery, 'sealKey'>): void {
  grantSealKeyRead(role, parts);
}
