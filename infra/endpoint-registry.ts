/**
 * The endpoint registry as the WebhookDelivery construct deploys it (docs/contract.md §11): a
 * DynamoDB table with one item per endpoint (lib/endpoints/registry-schema.ts), encrypted with a
 * KMS key the stack owns, since an item may hold a `whsec_…` signing secret that `handoff endpoint
 * add` wrote. The consumer reads it; operators write it with `handoff endpoint …`; the construct
 * seeds the endpoints it declares (the single-URL settings' `default` among them) at deploy.
 *
 * **Seeding.** One custom resource per declared endpoint runs DynamoDB UpdateItem on its item:
 * - the declared fields are written, and a digest of them kept beside them as `declared`; the
 *   write is conditioned on the item lacking `declared` or holding a different one, so a deploy
 *   applies a declaration only when it changed (or the item is new, or was removed with `handoff
 *   endpoint remove`), and an operator's `endpoint update` of a declared endpoint lasts until its
 *   declaration changes;
 * - `state` and `createdAt` are set only when absent (`if_not_exists`): a deploy never re-enables
 *   an endpoint an operator or §12's health check disabled;
 * - the time stamps (`createdAt` when new, `updatedAt`) are the deploy's own: the seed function
 *   stamps the write with its clock when it runs (DynamoDB cannot stamp a write itself), unless
 *   `seededAt` fixes them. The template holds no time, so it is the same at every synth and a seed
 *   runs only when its declaration changes (ConditionalCheckFailedException, a declaration already
 *   applied, is the expected answer, not an error). An operator's `handoff endpoint remove` of a
 *   declared endpoint therefore lasts until its declaration changes, as an `endpoint update` does.
 * A secret is declared as a Secrets Manager secret and seeded as its ARN, never its value, so the
 * template holds no secret; every other secret value (a header's, `auth.clientSecret`,
 * `tls.privateKey`) likewise, as `{secretArn}` (never `{secret}`).
 * Removing a declaration leaves its endpoint in the registry (remove it with `handoff endpoint
 * remove`): a delete call there could race a renamed resource's create.
 *
 * The seeds run on one small function of this construct (infra/registry/seed-function.ts, inline in
 * the template: no asset), one custom resource per endpoint. It logs the endpoint's name and the
 * outcome, never the call (the URL may carry a token in its query; no secret value is in it). What
 * a declaration becomes (its checked fields, the UpdateItem) is infra/registry/seed-call.ts.
 *
 * **Operators** need, on the table's ARN, `dynamodb:GetItem`, `PutItem`, `UpdateItem`,
 * `DeleteItem`, `Scan` (and `Query`), and on the key's ARN `kms:Encrypt`, `kms:Decrypt`,
 * `kms:GenerateDataKey`: `grantEndpointAdmin(grantee)` adds exactly these.
 */
import { CustomResource, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { DeploymentSettings, EndpointFields } from '../lib/endpoints/endpoint';
import { EndpointError } from '../lib/errors';
import { REGISTRY_SCHEMA } from '../lib/endpoints/registry-schema';
import { checkDeclaredFields, headerSecretArns, seedCall } from './registry/seed-call';
import { createSeedFunction } from './registry/seed-function';
import { DEFAULT_ENDPOINT } from '../lib/ledger/delivery-record';

export { DECLARED_ATTRIBUTE } from './registry/seed-call';

/**
 * An endpoint the construct declares: the fields of lib/endpoints/endpoint.ts, except that its
 * signing secret is a Secrets Manager secret (holding `whsec_<base64>` or a bare base64 key), never
 * a value. Unset: requests to it go unsigned. A rotation's `previousSecret` likewise (with
 * `previousSecretUntil`): the consumer may read both. Every other secret value (a header's,
 * `auth.clientSecret`, `tls.privateKey`, a certificate kept as a secret) is
 * `{secretArn}`: a secret's complete ARN, or its deploy-time one (`secret.secretFullArn` of a secret
 * of the stack); never `{secret}`, a value.
 */
export interface EndpointDeclaration extends Omit<EndpointFields, 'secret' | 'previousSecret'> {
  readonly secret?: secretsmanager.ISecret;
  readonly previousSecret?: secretsmanager.ISecret;
}

export interface EndpointRegistryProps {
  /** The deployment's settings: an endpoint's defaults and the limits its own settings must keep. */
  readonly deployment: DeploymentSettings;
  /** Default RETAIN, like the ledger's: endpoints and their secrets outlive the stack. The key follows. */
  readonly removalPolicy?: RemovalPolicy;
  /** The seed function's log retention. Default one month. */
  readonly logRetention?: logs.RetentionDays;
  /** The seed's time stamp, epoch ms. Default: the deploy's, taken by the seed function when it writes. */
  readonly seededAt?: number;
  /**
   * DynamoDB deletion protection on the table: it cannot be deleted (by CloudFormation or by hand)
   * until it is turned off. Default true.
   */
  readonly deletionProtection?: boolean;
}

/** A seeded endpoint: its item's custom resource and the secret it is signed with, if any. */
interface Seed {
  readonly name: string;
  readonly resource: CustomResource;
  readonly secret: secretsmanager.ISecret | undefined;
  readonly previousSecret: secretsmanager.ISecret | undefined;
  /** The ARNs its other secret values are read from (`{secretArn}` in headers, auth, tls). */
  readonly headerSecretArns: readonly string[];
}

export class EndpointRegistry extends Construct {
  readonly table: dynamodb.Table;
  /** Encrypts the table: customer-managed, rotated yearly, owned by the stack. */
  readonly encryptionKey: kms.Key;
  readonly #deployment: DeploymentSettings;
  readonly #seededAt: number | undefined;
  readonly #seeds: Seed[] = [];
  #seedFunction: lambda.Function | undefined;
  readonly #logRetention: logs.RetentionDays;

  constructor(scope: Construct, id: string, props: EndpointRegistryProps) {
    super(scope, id);
    this.#deployment = props.deployment;
    this.#seededAt = props.seededAt;
    this.#logRetention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.encryptionKey = new kms.Key(this, 'Key', {
      description: 'handoff: encrypts the endpoint registry (endpoints and their signing secrets)',
      enableKeyRotation: true,
      // A retained table is unreadable without its key: the key goes only with the table.
      removalPolicy,
    });
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: REGISTRY_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.encryptionKey,
      removalPolicy,
      deletionProtection: props.deletionProtection ?? true,
      // A removed endpoint's tombstone goes some time after its `expiresAt` (lib/endpoints/registry-schema.ts).
      timeToLiveAttribute: REGISTRY_SCHEMA.attributes.expiresAt,
    });
    // The change index (what a consumer's copy reads to stay current) and the owner index (an
    // owner's endpoints in one query), keys only, from the one definition the sandbox creates too.
    for (const index of [REGISTRY_SCHEMA.changeIndex, REGISTRY_SCHEMA.ownerIndex]) {
      const sortType = index.sortKey === REGISTRY_SCHEMA.changeIndex.sortKey ? dynamodb.AttributeType.NUMBER : dynamodb.AttributeType.STRING;
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: sortType },
        projectionType: dynamodb.ProjectionType[index.projection],
      });
    }
  }

  /** The seeds' custom resources, in declaration order (the consumer is deployed after them). */
  get seedResources(): readonly CustomResource[] {
    return this.#seeds.map((seed) => seed.resource);
  }

  /** The secrets the seeded endpoints sign with: the consumer must read each. */
  get seededSecrets(): readonly secretsmanager.ISecret[] {
    return this.#seeds.flatMap((seed) => [seed.secret, seed.previousSecret].filter((secret) => secret !== undefined));
  }

  /** The ARNs of the secrets the seeded endpoints' other secret values (headers, auth, tls) are read from, each once: the consumer must read each. */
  get seededHeaderSecretArns(): readonly string[] {
    return [...new Set(this.#seeds.flatMap((seed) => seed.headerSecretArns))];
  }

  /**
   * Checks a declared endpoint as the registry and the consumer will (the field's shape, then the
   * deployment's defaults and rules) and seeds it at deploy. `url` may be a deploy-time token (the
   * `WebhookUrl` parameter); it is then checked when the consumer uses it.
   * @throws EndpointError naming the endpoint and the field
   */
  seed(declaration: EndpointDeclaration): void {
    const { secret, previousSecret, ...rest } = declaration;
    for (const [field, value] of [
      ['secret', secret],
      ['previousSecret', previousSecret],
    ] as const) {
      if (value !== undefined && (typeof value !== 'object' || value === null || typeof value.secretArn !== 'string')) {
        // From JavaScript, or through a cast: a value here would land in the template.
        throw new EndpointError(
          typeof rest.name === 'string' ? rest.name : '?',
          field,
          'must be a Secrets Manager secret (ISecret, e.g. Secret.fromSecretCompleteArn), never a value: a value would land in the template (the value is not shown)',
        );
      }
    }
    const arnOf = (value: secretsmanager.ISecret | undefined) => (value ? (value.secretFullArn ?? value.secretArn) : undefined);
    const secretArn = arnOf(secret);
    const previousSecretArn = arnOf(previousSecret);
    const fields = checkDeclaredFields(
      {
        ...rest,
        ...(secretArn !== undefined ? { secret: secretArn } : {}),
        ...(previousSecretArn !== undefined ? { previousSecret: previousSecretArn } : {}),
      },
      this.#deployment,
    );
    if (this.#seeds.some((seed) => seed.name === fields.name)) {
      const why = fields.name === DEFAULT_ENDPOINT ? ' (the single-URL settings, webhookUrl, declare "default")' : '';
      throw new EndpointError(fields.name, 'name', `is declared twice${why}`);
    }
    const resource = this.seedResource(fields);
    this.#seeds.push({ name: fields.name, resource, secret, previousSecret, headerSecretArns: headerSecretArns(fields) });
  }

  /**
   * The consumer's read of its copy (lib/endpoints/registry-copy.ts): Scan at its cold start,
   * BatchGetItem for the changed endpoints and GetItem (an endpoint's item: its rate-limit schedule)
   * on the table, Query on the change index alone; Decrypt with its key.
   */
  grantRead(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'EndpointRegistryRead',
        actions: ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:Scan'],
        resources: [this.table.tableArn],
      }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'EndpointRegistryChanges', actions: ['dynamodb:Query'], resources: [this.indexArn(REGISTRY_SCHEMA.changeIndex.name)] }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'EndpointRegistryDecrypt', actions: ['kms:Decrypt'], resources: [this.encryptionKey.keyArn] }),
    );
  }

  /**
   * The recovery function's read (lib/recovery-endpoints.ts: names, states, pauses and releases,
   * never fields): Scan at a container's first run and BatchGetItem on the table, Query on the change
   * index alone; Decrypt with its key, as DynamoDB requires for any read of it.
   */
  grantNamesRead(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'EndpointNamesRead', actions: ['dynamodb:BatchGetItem', 'dynamodb:Scan'], resources: [this.table.tableArn] }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'EndpointNamesChanges', actions: ['dynamodb:Query'], resources: [this.indexArn(REGISTRY_SCHEMA.changeIndex.name)] }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'EndpointNamesDecrypt', actions: ['kms:Decrypt'], resources: [this.encryptionKey.keyArn] }),
    );
  }

  /**
   * The consumer's health writes (docs/contract.md §12): UpdateItem on an endpoint's item (its
   * `health`, and `state` when it disables one; the recovery function's release window) and on a rate
   * limit's schedule item (`<endpoint>#rate`, made by its first UpdateItem: no PutItem), and the
   * key's encryption for what it writes.
   */
  grantHealthWrite(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ sid: 'EndpointRegistryHealthWrite', actions: ['dynamodb:UpdateItem'], resources: [this.table.tableArn] }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'EndpointRegistryEncrypt',
        actions: ['kms:Encrypt', 'kms:GenerateDataKey'],
        resources: [this.encryptionKey.keyArn],
      }),
    );
  }

  /** The ARN of one of the table's indexes. */
  indexArn(indexName: string): string {
    return `${this.table.tableArn}/index/${indexName}`;
  }

  /** What `handoff endpoint …` needs: read and write every item (its listing by owner too), encrypt and decrypt with the key. */
  grantEndpointAdmin(grantee: iam.IGrantable): iam.Grant {
    const table = iam.Grant.addToPrincipal({
      grantee,
      actions: ['dynamodb:BatchGetItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
      resourceArns: [this.table.tableArn],
    }).combine(iam.Grant.addToPrincipal({ grantee, actions: ['dynamodb:Query'], resourceArns: [this.indexArn(REGISTRY_SCHEMA.ownerIndex.name)] }));
    const key = iam.Grant.addToPrincipal({
      grantee,
      actions: ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey'],
      resourceArns: [this.encryptionKey.keyArn],
    });
    return table.combine(key);
  }


  private seedResource(fields: EndpointFields): CustomResource {
    const call = seedCall(this.table.tableName, fields);
    // No removal: a Delete does nothing (see the module's comment).
    return new CustomResource(this, `Seed-${fields.name}`, {
      resourceType: 'Custom::HandoffEndpoint',
      serviceToken: this.seedFunction().functionArn,
      properties: {
        Endpoint: fields.name,
        // A JSON text, as CloudFormation would turn a nested object's booleans and numbers into strings.
        Call: Stack.of(this).toJsonString(call),
        ...(this.#seededAt !== undefined ? { SeededAt: String(this.#seededAt) } : {}),
      },
    });
  }

  /** The seed function, made once for the construct, at its first seed. */
  private seedFunction(): lambda.Function {
    this.#seedFunction ??= createSeedFunction(this, this, this.#logRetention);
    return this.#seedFunction;
  }
}
