/**
 * Endpoint secrets the registry holds encrypted (lib/endpoints/secret-cipher.ts): each cipher's
 * stored form decrypts back to the secret for its own endpoint only; KMS is asked with the endpoint's
 * encryption context and its refusal names the endpoint, never the secret; routing decrypts a stored
 * secret once per container, and leaves its endpoint unresolved (its deliveries held) while it cannot.
 * The SDK binding (`kmsClient`) against a loopback KMS (test/helpers/kms.ts): Encrypt and Decrypt on
 * the wire, KMS's refusals by name.
 */
import { createCipheriv } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEFAULT_SETTINGS } from '../../lib/config';
import type { EndpointRecord } from '../../lib/endpoints/endpoint';
import { generateSecret } from '../../lib/endpoints/secret';
import { isEncryptedSecret, kmsClient, KmsSecretCipher, LocalSecretCipher, secretContext, type KmsCalls } from '../../lib/endpoints/secret-cipher';
import { createLogger } from '../../lib/observability';
import { registryRouting } from '../../lib/routing';
import type { WebhookSender } from '../../lib/webhook/sender';
import { startKmsStub, type KmsStub } from '../helpers/kms';

const SECRET = generateSecret();

/** A KMS stand-in: "encrypts" by XOR with a byte and keeps the context beside it; refuses another context. */
function fakeKms(options: { deny?: boolean; denyEncrypt?: boolean } = {}) {
  const asked: string[] = [];
  const calls: KmsCalls = {
    encrypt: async ({ KeyId, Plaintext, EncryptionContext }) => {
      asked.push(`Encrypt ${KeyId} ${JSON.stringify(EncryptionContext)}`);
      if (options.denyEncrypt) throw Object.assign(new Error('User is not authorized to perform: kms:Encrypt'), { name: 'AccessDeniedException' });
      return { CiphertextBlob: Buffer.from(JSON.stringify({ context: EncryptionContext, data: Buffer.from(Buffer.from(Plaintext).map((b) => b ^ 0x5a)).toString('base64') })) };
    },
    decrypt: async ({ CiphertextBlob, EncryptionContext }) => {
      asked.push(`Decrypt ${JSON.stringify(EncryptionContext)}`);
      if (options.deny) throw Object.assign(new Error('User is not authorized to perform: kms:Decrypt'), { name: 'AccessDeniedException' });
      const blob = JSON.parse(Buffer.from(CiphertextBlob).toString('utf8')) as { context: Record<string, string>; data: string };
      if (JSON.stringify(blob.context) !== JSON.stringify(EncryptionContext)) throw Object.assign(new Error('invalid ciphertext'), { name: 'InvalidCiphertextException' });
      return { Plaintext: Buffer.from(blob.data, 'base64').map((b) => b ^ 0x5a) };
    },
  };
  return { calls, asked };
}

describe('Class: LocalSecretCipher', () => {
  const cipher = new LocalSecretCipher(LocalSecretCipher.generateKey());

  it('stores a secret as encrypted:local:…, which decrypts back for its endpoint', async () => {
    const stored = await cipher.encrypt(SECRET, 'billing');

    expect(stored).toMatch(/^encrypted:local:/);
    expect(isEncryptedSecret(stored)).toBe(true);
    expect(stored).not.toContain(SECRET.slice(6));
    expect(await cipher.decrypt(stored, 'billing')).toBe(SECRET);
  });

  it("refuses a ciphertext copied to another endpoint, or made under another key, naming the endpoint", async () => {
    const stored = await cipher.encrypt(SECRET, 'billing');
    const other = new LocalSecretCipher(LocalSecretCipher.generateKey());

    await expect(cipher.decrypt(stored, 'crm')).rejects.toMatchObject({ name: 'SecretUnavailableError', message: 'the secret of endpoint crm does not decrypt with this key' });
    await expect(other.decrypt(stored, 'billing')).rejects.toMatchObject({ name: 'SecretUnavailableError' });
  });

  it('refuses a key that is not 32 bytes', () => {
    expect(() => new LocalSecretCipher(Buffer.alloc(16))).toThrow('the local secret key must be 32 bytes, got 16');
  });

  it('takes only AES-256-GCM with its endpoint bound in (a ciphertext without the additional data does not decrypt)', async () => {
    const key = Buffer.alloc(32, 3);
    const iv = Buffer.alloc(12, 1);
    const raw = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([raw.update(SECRET, 'utf8'), raw.final()]);
    const stored = `encrypted:local:${Buffer.concat([iv, raw.getAuthTag(), body]).toString('base64')}`;

    await expect(new LocalSecretCipher(key).decrypt(stored, 'billing')).rejects.toMatchObject({ name: 'SecretUnavailableError' });
  });
});

describe('Class: KmsSecretCipher', () => {
  it("encrypts with the registry's key and the endpoint's context, and decrypts without naming the key", async () => {
    const kms = fakeKms();
    const writer = new KmsSecretCipher({ calls: kms.calls, keyId: 'arn:aws:kms:eu-west-1:123456789012:key/1234' });
    const reader = new KmsSecretCipher({ calls: kms.calls });

    const stored = await writer.encrypt(SECRET, 'billing');
    const secret = await reader.decrypt(stored, 'billing');

    expect(stored).toMatch(/^encrypted:kms:/);
    expect(secret).toBe(SECRET);
    const context = JSON.stringify(secretContext('billing'));
    expect(kms.asked).toEqual([`Encrypt arn:aws:kms:eu-west-1:123456789012:key/1234 ${context}`, `Decrypt ${context}`]);
  });

  it('names the endpoint and the refusal when KMS will not decrypt (a grant revoked, a key disabled), never the secret', async () => {
    const stored = await new KmsSecretCipher({ calls: fakeKms().calls, keyId: 'k' }).encrypt(SECRET, 'billing');

    const error = await new KmsSecretCipher({ calls: fakeKms({ deny: true }).calls }).decrypt(stored, 'billing').catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'SecretUnavailableError', message: 'KMS could not decrypt the secret of endpoint billing: AccessDeniedException' });
  });

  it("refuses another endpoint's ciphertext (its context differs)", async () => {
    const kms = fakeKms();
    const stored = await new KmsSecretCipher({ calls: kms.calls, keyId: 'k' }).encrypt(SECRET, 'billing');

    await expect(new KmsSecretCipher({ calls: kms.calls }).decrypt(stored, 'crm')).rejects.toMatchObject({ message: 'KMS could not decrypt the secret of endpoint crm: InvalidCiphertextException' });
  });
});

describe('Class: KmsSecretCipher, refusals on encrypt', () => {
  it('names the endpoint, the key and the refusal when KMS will not encrypt, never the secret', async () => {
    const error = await new KmsSecretCipher({ calls: fakeKms({ deny: true, denyEncrypt: true }).calls, keyId: 'arn:aws:kms:eu-west-1:123456789012:key/1234' })
      .encrypt(SECRET, 'billing')
      .catch((e: unknown) => e);

    expect(error).toMatchObject({
      name: 'SecretEncryptionError',
      code: 'secret-unencryptable',
      message: 'KMS could not encrypt the secret of endpoint billing with arn:aws:kms:eu-west-1:123456789012:key/1234: AccessDeniedException',
    });
    expect(String(error)).not.toContain(SECRET.slice(6));
  });

  it('refuses to encrypt without the key, asking nothing', async () => {
    const kms = fakeKms();

    await expect(new KmsSecretCipher({ calls: kms.calls }).encrypt(SECRET, 'billing')).rejects.toMatchObject({
      name: 'SecretEncryptionError',
      message: "encrypting the secret of endpoint billing needs the registry's key (its ARN)",
    });
    expect(kms.asked).toEqual([]);
  });
});

describe('Function: kmsClient (the SDK over loopback, AWS_ENDPOINT_URL_KMS)', () => {
  let stub: KmsStub;
  const KEY_ARN = 'arn:aws:kms:us-east-1:000000000000:key/1234abcd-12ab-34cd-56ef-1234567890ab';

  beforeAll(async () => {
    stub = await startKmsStub();
  });
  afterAll(() => stub.close());
  afterEach(() => {
    vi.unstubAllEnvs();
    stub.deny = false;
  });
  const stubEnv = () => {
    for (const [name, value] of Object.entries({ AWS_ENDPOINT_URL_KMS: stub.url, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_MAX_ATTEMPTS: '1' })) {
      vi.stubEnv(name, value);
    }
  };

  it('encrypts with the key and the endpoint\'s context, and decrypts naming no key', async () => {
    stubEnv();
    const calls = kmsClient();
    try {
      const stored = await new KmsSecretCipher({ calls, keyId: KEY_ARN }).encrypt(SECRET, 'billing');
      const secret = await new KmsSecretCipher({ calls }).decrypt(stored, 'billing');

      expect(stored).toMatch(/^encrypted:kms:/);
      expect(secret).toBe(SECRET);
      expect(stub.decrypt(Buffer.from(stored.slice('encrypted:kms:'.length), 'base64'), secretContext('billing'))).toEqual({ plaintext: SECRET, keyId: KEY_ARN });
      expect(stub.calls).toEqual([`Encrypt ${KEY_ARN} ${JSON.stringify(secretContext('billing'))}`, `Decrypt ${JSON.stringify(secretContext('billing'))}`]);
    } finally {
      calls.destroy();
    }
  });

  it("turns KMS's refusals into the cipher's errors, by their names", async () => {
    stubEnv();
    const calls = kmsClient();
    try {
      const stored = await new KmsSecretCipher({ calls, keyId: KEY_ARN }).encrypt(SECRET, 'billing');

      await expect(new KmsSecretCipher({ calls }).decrypt(stored, 'crm')).rejects.toMatchObject({ message: 'KMS could not decrypt the secret of endpoint crm: InvalidCiphertextException' });
      stub.deny = true;
      await expect(new KmsSecretCipher({ calls, keyId: KEY_ARN }).encrypt(SECRET, 'billing')).rejects.toMatchObject({ name: 'SecretEncryptionError', message: expect.stringMatching(/: AccessDeniedException$/) });
    } finally {
      calls.destroy();
    }
  });
});

describe('Function: registryRouting (secrets the registry holds encrypted)', () => {
  const record = (secret: string): EndpointRecord => ({
    fields: { name: 'billing', url: 'https://billing.example/in', eventTypes: ['*'], secret },
    state: 'enabled',
    createdAt: 0,
    updatedAt: 0,
  });
  const routingOver = (records: () => EndpointRecord[], calls: KmsCalls) =>
    registryRouting({
      records: () => Promise.resolve(records()),
      deployment: { ...DEFAULT_SETTINGS, allowPrivateCidrs: [], allowHttp: false },
      ciphers: [new KmsSecretCipher({ calls })],
      createSender: () => ({ send: () => Promise.reject(new Error('not sent')) }) as WebhookSender,
      logger: createLogger({ service: 'handoff', write: () => {} }),
    });

  it('signs with the decrypted secret, decrypting it once for every later read of the registry', async () => {
    const kms = fakeKms();
    const stored = await new KmsSecretCipher({ calls: kms.calls, keyId: 'k' }).encrypt(SECRET, 'billing');
    const routing = routingOver(() => [record(stored)], kms.calls);

    const first = await routing.routes();
    const second = await routing.routes();

    expect(first.endpoints.get('billing')).toMatchObject({ secret: SECRET });
    expect(second.endpoints.get('billing')).toMatchObject({ secret: SECRET });
    expect(kms.asked.filter((call) => call.startsWith('Decrypt'))).toHaveLength(1);
  });

  it('leaves the endpoint unresolved while KMS refuses, with its subscription', async () => {
    const stored = await new KmsSecretCipher({ calls: fakeKms().calls, keyId: 'k' }).encrypt(SECRET, 'billing');
    const routing = routingOver(() => [record(stored)], fakeKms({ deny: true }).calls);

    const routes = await routing.routes();

    expect(routes.endpoints.size).toBe(0);
    expect([...routes.unresolved.values()]).toEqual([{ name: 'billing', subscription: { eventTypes: ['*'], match: {} } }]);
  });

  it('leaves an endpoint unresolved whose secret is encrypted with a scheme it has no key for', async () => {
    const stored = await new LocalSecretCipher(LocalSecretCipher.generateKey()).encrypt(SECRET, 'billing');
    const routing = routingOver(() => [record(stored)], fakeKms().calls);

    expect((await routing.routes()).unresolved.has('billing')).toBe(true);
  });
});
