/**
 * Declared endpoints' `auth` and `tls` (docs/contract.md §18) in the construct: each secret value
 * only as `{secretArn}`, a complete ARN, seeded as the ARN and granted to the consumer alone, that ARN
 * and nothing wider, in the one statement every declared secret value shares; `{secret}` (a value
 * that would land in the template) and a partial ARN refused at synth, naming the endpoint and the
 * path, never the value. An inline certificate is public and seeded as it is.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { EndpointError } from '../../lib/errors';
import { endpointsFromFile } from '../../infra/app';
import { WebhookDelivery, type EndpointDeclaration } from '../../infra/webhook-delivery';
import { testApp, STAND_IN_ENTRY, WEBHOOK_URL } from './cdk-context';

const CERT = readFileSync(new URL('../fixtures/tls/client.pem', import.meta.url), 'utf8');
const KEY = readFileSync(new URL('../fixtures/tls/client.key.pem', import.meta.url), 'utf8');
const CLIENT_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-client-AbCdEf';
const KEY_ARN = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-mtls-AbCdEf';
const AUTH = { type: 'oauth2-client-credentials', tokenUrl: 'https://idp.example/token', clientId: 'handoff-acme', clientSecret: { secretArn: CLIENT_ARN } } as const;

type Statement = { Action: string | string[]; Resource: unknown; Sid?: string };

function build(endpoints: readonly Partial<EndpointDeclaration>[]) {
  const stack = new Stack(testApp(), 'TestStack');
  new WebhookDelivery(stack, 'Delivery', {
    entry: STAND_IN_ENTRY,
    settings: { webhookUrl: WEBHOOK_URL },
    endpoints: endpoints.map((fields, i) => ({ name: `locked-${i}`, url: 'https://acme.example.com/hooks', eventTypes: ['*'], ...fields }) as EndpointDeclaration),
  });
  return Template.fromStack(stack);
}

function consumerStatements(template: Template): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy'))
    .filter((policy) => (policy.Properties.Roles as { Ref: string }[]).some((r) => /ConsumerRole/.test(r.Ref)))
    .flatMap((policy) => policy.Properties.PolicyDocument.Statement as Statement[]);
}

/** The fields one seed writes, as DynamoDB's M form, in the template's JSON text. */
function seededText(template: Template): string {
  return JSON.stringify(Object.values(template.findResources('Custom::HandoffEndpoint')).map((r) => r.Properties.Call));
}

describe('Construct: declared endpoints with auth and tls', () => {
  it('seeds the client secret and the key as their ARNs, the certificate as it is, and grants the consumer exactly those ARNs, each once', () => {
    const template = build([
      { auth: AUTH, tls: { clientCertificate: CERT, privateKey: { secretArn: KEY_ARN } } },
      { auth: { ...AUTH, clientId: 'other' }, tls: { clientCertificate: { secretArn: KEY_ARN }, privateKey: { secretArn: KEY_ARN } } },
    ]);
    const reads = consumerStatements(template).filter((s) => s.Sid === 'EndpointHeaderSecretRead');

    expect(reads).toHaveLength(1);
    expect(reads[0]!.Action).toBe('secretsmanager:GetSecretValue');
    expect([reads[0]!.Resource].flat().sort()).toEqual([CLIENT_ARN, KEY_ARN]);
    const seeded = seededText(template);
    expect(seeded).toContain(CLIENT_ARN);
    expect(seeded).toContain(KEY_ARN);
    expect(seeded).toContain(CERT.split('\n')[1]);
  });

  it.each([
    ['auth.clientSecret', { auth: { ...AUTH, clientSecret: { secret: 'cl13nt-s3cret' } } }],
    ['tls.privateKey', { tls: { clientCertificate: CERT, privateKey: { secret: KEY } } }],
  ])('refuses %s given as {secret}, naming the endpoint and the path, without showing it', (path, fields) => {
    const act = () => build([fields as Partial<EndpointDeclaration>]);

    expect(act).toThrow(EndpointError);
    expect(act).toThrow(`endpoint "locked-0": ${path} must be {"secretArn": …}, the complete ARN of a Secrets Manager secret holding the value, never {"secret": …}`);
    expect(act).not.toThrow('cl13nt');
    expect(act).not.toThrow(KEY.split('\n')[1]);
  });

  it('refuses a partial ARN at tls.clientCertificate (the consumer could not be granted it), naming the path', () => {
    const partial = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:acme-mtls';

    expect(() => build([{ tls: { clientCertificate: { secretArn: partial }, privateKey: { secretArn: KEY_ARN } } }])).toThrow(
      /^endpoint "locked-0": tls\.clientCertificate must name its secret by the complete ARN/,
    );
  });

  it('refuses a token URL the deployment refuses, as url is', () => {
    expect(() => build([{ auth: { ...AUTH, tokenUrl: 'http://idp.example/token' } }])).toThrow(/^endpoint "locked-0": auth\.tokenUrl is refused: /);
  });

  it("refuses {secret} in the endpointsFile context's file too, naming the path, and takes {secretArn} there", () => {
    const file = (name: string, tls: unknown) => {
      const path = join(mkdtempSync(join(tmpdir(), 'handoff-app-locks-')), name);
      writeFileSync(path, JSON.stringify({ endpoints: [{ name: 'locked', url: 'https://acme.example.com/hooks', eventTypes: ['*'], auth: AUTH, tls }] }));
      return path;
    };
    const byValue = file('value.json', { clientCertificate: CERT, privateKey: { secret: KEY } });

    expect(() => endpointsFromFile(byValue)).toThrow(/^endpoint "locked": tls\.privateKey must be \{"secretArn": …\}, the complete ARN of a Secrets Manager secret, in .*value\.json, never \{"secret": …\}/);
    expect(() => endpointsFromFile(byValue)).not.toThrow(KEY.split('\n')[1]);
    expect(endpointsFromFile(file('arn.json', { clientCertificate: CERT, privateKey: { secretArn: KEY_ARN } }))[0]!.tls).toEqual({ clientCertificate: CERT, privateKey: { secretArn: KEY_ARN } });
  });
});
