/**
 * What a declared endpoint becomes at synth (infra/endpoint-registry.ts): its fields checked as the
 * registry and the consumer will check them, and the DynamoDB UpdateItem its seed runs at deploy,
 * conditioned on the declaration's digest so a deploy applies it only when it changed.
 */
import { createHash } from 'node:crypto';
import { Token } from 'aws-cdk-lib';
import { parseEndpointFields, resolveEndpoint, type DeploymentSettings, type EndpointFields } from '../../lib/endpoints/endpoint';
import { mapSecretValues, secretValuePlaces } from '../../lib/endpoints/secret-values';
import { EndpointError } from '../../lib/errors';
import { CHANGE_FEED, REGISTRY_SCHEMA } from '../../lib/endpoints/registry-schema';

/**
 * The attribute a seeded item keeps its declaration's digest in (beside the fields the registry
 * uses): SHA-256 of the fields as declared, then each value known only at deploy time (the
 * `WebhookUrl` parameter, a generated secret's ARN) as CloudFormation resolves it.
 */
export const DECLARED_ATTRIBUTE = REGISTRY_SCHEMA.attributes.declared;

/** Stand-ins for values known only at deploy time, so synth can still check what it can. */
const DEPLOY_TIME_URL = 'https://deploy-time.invalid/';
const DEPLOY_TIME_SECRET_ARN = 'arn:aws:secretsmanager:deploy-time:000000000000:secret:deploy-time';

/** A secret's complete ARN: its name ends with the hyphen and six characters Secrets Manager adds. */
export const COMPLETE_SECRET_ARN = /^arn:[a-z-]+:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$/;

/**
 * parseEndpointFields, then resolveEndpoint against `deployment`, with stand-ins for deploy-time
 * values (a secret value's `secretArn` among them: a secret of the same stack); returns the fields as
 * checked (parsing normalizes: event types deduplicated) with the real values back.
 *
 * Every secret value besides the signing secrets (a header's, `auth.clientSecret`, `tls.privateKey`,
 * a certificate kept as a secret: lib/endpoints/secret-values.ts) must be `{secretArn}`, a secret's
 * complete ARN (or a deploy-time one): the consumer is granted those ARNs alone
 * (infra/delivery/grants.ts), and `{secret}`, the value itself, would land in the template, so it is
 * refused as a signing secret given as a value is.
 * @throws EndpointError naming the endpoint and the value's path (`headers.<Name>`, `tls.privateKey`)
 */
export function checkDeclaredFields(fields: EndpointFields, deployment: DeploymentSettings): EndpointFields {
  const deployTime = (value: string | undefined, standIn: string) => (value !== undefined && Token.isUnresolved(value) ? standIn : value);
  const url = deployTime(fields.url, DEPLOY_TIME_URL);
  const secret = deployTime(fields.secret, DEPLOY_TIME_SECRET_ARN);
  const given = new Map(secretValuePlaces(fields).map(({ path, value }) => [path, value]));
  const standIns = mapSecretValues(fields, ({ value }) => ('secretArn' in value ? { secretArn: deployTime(value.secretArn, DEPLOY_TIME_SECRET_ARN)! } : value));
  const checked = parseEndpointFields({ ...standIns, url, ...(secret !== undefined ? { secret } : {}) });
  for (const { path, value } of secretValuePlaces(checked)) {
    if ('secret' in value) {
      throw new EndpointError(
        checked.name,
        path,
        'must be {"secretArn": …}, the complete ARN of a Secrets Manager secret holding the value, never {"secret": …}: a value would land in the template (the value is not shown)',
      );
    }
    const arn = (given.get(path) as { secretArn: string }).secretArn;
    if (!Token.isUnresolved(arn) && !COMPLETE_SECRET_ARN.test(arn)) {
      throw new EndpointError(
        checked.name,
        path,
        'must name its secret by the complete ARN, with the six characters Secrets Manager adds to its name (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME-AbCdEf): the consumer is granted that ARN alone',
      );
    }
  }
  // A deploy-time URL passes the stand-in's check here; the WebhookUrl parameter's pattern and the
  // consumer's guard check the real one.
  resolveEndpoint({ fields: checked, state: 'enabled', createdAt: 0, updatedAt: 0 }, deployment);
  return {
    ...mapSecretValues(checked, ({ path, value }) => given.get(path) ?? value),
    url: fields.url,
    ...(fields.secret !== undefined ? { secret: fields.secret } : {}),
  };
}

/** The ARNs of a declaration's secret values besides its signing secrets (`{secretArn}`), each once: what the consumer must read. */
export function headerSecretArns(fields: EndpointFields): string[] {
  const arns = secretValuePlaces(fields).flatMap(({ value }) => ('secretArn' in value ? [value.secretArn] : []));
  return [...new Set(arns)];
}

/**
 * The UpdateItem that seeds `fields` into `tableName`: the fields and their digest written, `state`
 * and `createdAt` only when absent. `:now` is set by the seed function when it runs (SEED_HANDLER):
 * the template holds no time.
 */
export function seedCall(tableName: string, fields: EndpointFields) {
  const a = REGISTRY_SCHEMA.attributes;
  const item = toAttributeValue(fields);
  return {
    TableName: tableName,
    Key: { [REGISTRY_SCHEMA.partitionKey]: { S: fields.name } },
    UpdateExpression:
      'SET #fields = :fields, #declared = :declared, #updatedAt = :now, #changedAt = :now, #feed = :feed, ' +
      '#state = if_not_exists(#state, :enabled), #createdAt = if_not_exists(#createdAt, :now)' +
      // The owner index's key follows the field (lib/endpoints/registry-schema.ts).
      (fields.owner !== undefined ? ', #owner = :owner' : '') +
      // Over a removed endpoint's tombstone the declaration brings it back.
      ` REMOVE #removedAt, #expiresAt${fields.owner !== undefined ? '' : ', #owner'}`,
    ConditionExpression: 'attribute_not_exists(#declared) OR #declared <> :declared',
    ExpressionAttributeNames: {
      '#fields': a.fields,
      '#declared': DECLARED_ATTRIBUTE,
      '#state': a.state,
      '#createdAt': a.createdAt,
      '#updatedAt': a.updatedAt,
      '#changedAt': a.changedAt,
      '#feed': a.feed,
      '#removedAt': a.removedAt,
      '#expiresAt': a.expiresAt,
      '#owner': a.owner,
    },
    ExpressionAttributeValues: {
      ':fields': item,
      ':declared': { S: declarationDigest(fields) },
      ':enabled': { S: 'enabled' },
      ':feed': { S: CHANGE_FEED },
      ...(fields.owner !== undefined ? { ':owner': toAttributeValue(fields.owner) } : {}),
    },
  };
}

/** What DECLARED_ATTRIBUTE holds for `fields`: the same text for the same declaration at every synth. */
export function declarationDigest(fields: EndpointFields): string {
  const deployTime: string[] = [];
  const text = JSON.stringify(fields, (_key, value: unknown) => {
    if (typeof value !== 'string' || !Token.isUnresolved(value)) return value;
    deployTime.push(value);
    return '<deploy-time>';
  });
  return [createHash('sha256').update(text).digest('base64url'), ...deployTime].join(' ');
}

/** A value in DynamoDB's AttributeValue form (lists as L, objects as M). Strings may be tokens. */
export function toAttributeValue(value: unknown): Record<string, unknown> {
  if (typeof value === 'string') return { S: value };
  if (typeof value === 'number') return { N: String(value) };
  if (typeof value === 'boolean') return { BOOL: value };
  if (Array.isArray(value)) return { L: value.map(toAttributeValue) };
  if (value !== null && typeof value === 'object') {
    return { M: Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, toAttributeValue(v)])) };
  }
  throw new TypeError(`cannot store ${String(value)} in the endpoint registry`);
}
