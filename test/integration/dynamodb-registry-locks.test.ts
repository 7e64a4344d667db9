/**
 * The registry's stored form of `auth` and `tls` (lib/endpoints/dynamodb-registry.ts, docs/contract.md
 * §18), against DynamoDB (dynalite): with a cipher, every plain secret value (the client secret, the
 * key, a header's) is stored encrypted under its own path, which decrypts it and no other; an ARN and
 * an inline certificate are stored as they are; a ciphertext written back (an update keeping it) is
 * kept, not encrypted again. Read back, the item parses as the consumer will read it.
 */
import { readFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { beforeEach, expect, it } from 'vitest';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { parseEndpointFields, type EndpointFields } from '../../lib/endpoints/endpoint';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';
import { cipherPlace } from '../../lib/endpoints/secret-values';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { useDynalite } from '../helpers/dynalite-fixture';

const CERT = readFileSync(new URL('../fixtures/tls/client.pem', import.meta.url), 'utf8');
const KEY = readFileSync(new URL('../fixtures/tls/client.key.pem', import.meta.url), 'utf8');
const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:erp-client-AbCdEf';
const T0 = Date.parse('2026-12-05T04:00:00Z');
const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());

let client: DynamoDBClient;
let registry: DynamoDbEndpointRegistry;
let tables = 0;

useDynalite((started) => {
  ({ client } = started);
});

beforeEach(async () => {
  const tableName = `endpoints-locks-${++tables}`;
  await createEndpointsTable(client, tableName);
  registry = new DynamoDbEndpointRegistry({ client, tableName, cipher });
});

const locked = parseEndpointFields({
  name: 'erp',
  url: 'https://erp.example/in',
  eventTypes: ['*'],
  headers: { 'X-Api-Key': { secret: 'k3y' } },
  auth: { type: 'oauth2-client-credentials', tokenUrl: 'https://idp.example/token', clientId: 'erp', clientSecret: { secret: 'cl13nt-s3cret' } },
  tls: { clientCertificate: CERT, privateKey: { secret: KEY }, ca: { secretArn: ARN } },
});

it('stores each plain secret value encrypted under its own path, and the rest as it is', async () => {
  const added = await registry.add(locked, T0);
  const read = (await registry.get('erp'))!;
  const { auth, tls, headers } = read.fields as Required<EndpointFields>;
  const stored = (value: unknown) => (value as { secret: string }).secret;

  expect(read.fields).toEqual(added.fields);
  expect(stored(auth.clientSecret)).toMatch(/^encrypted:local:/);
  expect(stored(tls.privateKey)).toMatch(/^encrypted:local:/);
  expect(stored(headers['X-Api-Key'])).toMatch(/^encrypted:local:/);
  expect(tls.clientCertificate).toBe(CERT);
  expect(tls.ca).toEqual({ secretArn: ARN });
  expect(await cipher.decrypt(stored(auth.clientSecret), 'erp', cipherPlace('auth.clientSecret'))).toBe('cl13nt-s3cret');
  expect(await cipher.decrypt(stored(tls.privateKey), 'erp', cipherPlace('tls.privateKey'))).toBe(KEY);
  expect(await cipher.decrypt(stored(headers['X-Api-Key']), 'erp', cipherPlace('headers.X-Api-Key'))).toBe('k3y');
  await expect(cipher.decrypt(stored(tls.privateKey), 'erp', cipherPlace('auth.clientSecret'))).rejects.toThrow();
  expect(JSON.stringify(read)).not.toContain('cl13nt-s3cret');
  expect(JSON.stringify(read)).not.toContain(KEY.split('\n')[1]);
});

it('keeps a ciphertext written back as it is (an update keeping the value), not encrypting it again', async () => {
  const added = await registry.add(locked, T0);

  const updated = await registry.update({ ...added.fields, auth: { ...added.fields.auth!, scope: 'shipments' } }, added.updatedAt, T0 + 1);

  expect(updated.fields.auth).toEqual({ ...added.fields.auth, scope: 'shipments' });
  expect(updated.fields.tls).toEqual(added.fields.tls);
});
