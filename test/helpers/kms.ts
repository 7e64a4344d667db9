/**
 * A loopback stand-in for KMS's Encrypt and Decrypt (awsJson1_1, `X-Amz-Target: TrentService.*`),
 * reached by the real SDK client through `AWS_ENDPOINT_URL_KMS`. Its ciphertexts are AES-256-GCM
 * under a key of its own, naming the key ID they were made with and bound to their encryption
 * context, as KMS's are: Decrypt needs no key ID, and refuses another context
 * (InvalidCiphertextException). `deny` makes every call fail as a revoked grant does
 * (AccessDeniedException). The plaintext is in no ciphertext and no recorded call.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface KmsStub {
  /** For `AWS_ENDPOINT_URL_KMS`. */
  readonly url: string;
  /** Every call: `Encrypt <KeyId> <context JSON>` or `Decrypt <context JSON>`. */
  readonly calls: string[];
  /** While set, every call is refused with AccessDeniedException. */
  deny: boolean;
  /** A ciphertext as Encrypt would make it, without a call (a registry item written beforehand). */
  encrypt(plaintext: string, keyId: string, context: Record<string, string>): Buffer;
  /** The plaintext and key of a ciphertext, when it was made with `context`; undefined otherwise. */
  decrypt(blob: Buffer, context: Record<string, string>): { plaintext: string; keyId: string } | undefined;
  close(): Promise<void>;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

export async function startKmsStub(): Promise<KmsStub> {
  const key = randomBytes(32);
  const aad = (context: Record<string, string>) => Buffer.from(JSON.stringify(Object.entries(context).sort(([a], [b]) => (a < b ? -1 : 1))), 'utf8');
  const encrypt = (plaintext: string, keyId: string, context: Record<string, string>): Buffer => {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(context));
    const body = Buffer.concat([cipher.update(JSON.stringify({ keyId, plaintext }), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]);
  };
  const decrypt = (blob: Buffer, context: Record<string, string>) => {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(0, IV_BYTES));
      decipher.setAAD(aad(context));
      decipher.setAuthTag(blob.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      const text = Buffer.concat([decipher.update(blob.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
      return JSON.parse(text) as { plaintext: string; keyId: string };
    } catch {
      return undefined;
    }
  };
  const stub = {
    url: '',
    calls: [] as string[],
    deny: false,
    encrypt,
    decrypt,
    close: async () => {},
  };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const operation = String(req.headers['x-amz-target'] ?? '').replace(/^TrentService\./, '');
      const input = JSON.parse(body || '{}') as { KeyId?: string; Plaintext?: string; CiphertextBlob?: string; EncryptionContext?: Record<string, string> };
      const context = input.EncryptionContext ?? {};
      stub.calls.push(operation === 'Encrypt' ? `Encrypt ${input.KeyId} ${JSON.stringify(context)}` : `${operation} ${JSON.stringify(context)}`);
      const answer = (status: number, json: object, errorType?: string) => {
        res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
        res.end(JSON.stringify(json));
      };
      const fail = (type: string, message: string) => answer(400, { __type: type, message }, type);
      if (stub.deny) return fail('AccessDeniedException', `User is not authorized to perform: kms:${operation}`);
      if (operation === 'Encrypt') {
        if (!input.KeyId || input.Plaintext === undefined) return fail('ValidationException', 'KeyId and Plaintext are required');
        const blob = encrypt(Buffer.from(input.Plaintext, 'base64').toString('utf8'), input.KeyId, context);
        return answer(200, { CiphertextBlob: blob.toString('base64'), KeyId: input.KeyId, EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' });
      }
      if (operation === 'Decrypt') {
        const opened = decrypt(Buffer.from(input.CiphertextBlob ?? '', 'base64'), context);
        if (opened === undefined) return fail('InvalidCiphertextException', '');
        return answer(200, { Plaintext: Buffer.from(opened.plaintext, 'utf8').toString('base64'), KeyId: opened.keyId, EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' });
      }
      return fail('UnknownOperationException', '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  stub.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return stub;
}
