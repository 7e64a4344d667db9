/**
 * Signing secrets the registry holds encrypted (docs/contract.md §11): the `EndpointSecretCipher`
 * port, with a KMS adapter for AWS (the registry's own key) and a local one (AES-256-GCM under a key
 * the sandbox draws). A secret stored this way reads `encrypted:<scheme>:<base64>` in the endpoint's
 * `secret` (or `previousSecret`) field; a plain `whsec_…` value stays readable as it is.
 *
 * Why KMS and not a Secrets Manager secret per endpoint: a secret is billed per endpoint per month,
 * the registry's key is there already and bills per request (docs/routing.md gives the prices): one
 * Encrypt per `endpoint add`/`rotate-secret`, one Decrypt per secret per consumer container (the
 * plaintext of a ciphertext never changes: kept for the container's life, lib/routing.ts).
 *
 * Both bind the ciphertext to its endpoint (KMS: the encryption context; local: the GCM's additional
 * data), so a ciphertext copied to another endpoint's item does not decrypt there. A secret header
 * value (an endpoint's `headers`, `{"secret": …}`, docs/contract.md §18) is encrypted the same way
 * under a context of its own, which names the header: a signing secret's ciphertext copied into a
 * header (where the consumer would send its plaintext to whatever URL the item names) does not
 * decrypt there, nor one header's into another. The other secret values of an endpoint (its OAuth2
 * client secret, its client certificate's key: `auth.clientSecret`, `tls.privateKey`) are encrypted
 * under a context naming their path, for the same reason. Errors name the endpoint, never the secret.
 *
 * Who encrypts: the registry adapter, given a cipher (lib/endpoints/dynamodb-registry.ts `cipher`),
 * turns every plain `whsec_…` value it writes into this form; `handoff endpoint` gives it the
 * target's (cli/context.ts). Who decrypts: the consumer (lib/consumer/environment.ts), KMS in AWS and the
 * local cipher where the sandbox's key is in its environment (`HANDOFF_ENDPOINT_SECRETS_KEY`).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { SecretEncryptionError, SecretUnavailableError } from '../errors';
export type CipherScheme = 'kms' | 'local';

/** A secret field holding a ciphertext: `encrypted:<scheme>:<base64>`. */
export const ENCRYPTED_SECRET = /^encrypted:(kms|local):[A-Za-z0-9+/]+={0,2}$/;

export function isEncryptedSecret(value: string): boolean {
  return ENCRYPTED_SECRET.test(value);
}

/** The scheme a stored ciphertext needs; undefined for anything else. */
export function schemeOf(value: string): CipherScheme | undefined {
  return isEncryptedSecret(value) ? (value.split(':')[1] as CipherScheme) : undefined;
}

/**
 * Where a secret value other than the signing secret is: a header's, by its name, or another field's,
 * `field:` and its path (`field:auth.clientSecret`: no header name holds a colon, and one may hold a dot).
 */
export type SecretPlace = string;
const FIELD_PLACE = 'field:';

export interface EndpointSecretCipher {
  readonly scheme: CipherScheme;
  /** The form to store for `endpoint`'s secret (`place`: the value of that header or field instead). @throws SecretEncryptionError */
  encrypt(secret: string, endpoint: string, place?: SecretPlace): Promise<string>;
  /** @throws SecretUnavailableError naming the endpoint: the key refused it, or it was not made for this endpoint (and place) */
  decrypt(stored: string, endpoint: string, place?: SecretPlace): Promise<string>;
}

/** What KMS is asked, as the SDK's KMSClient takes it (Encrypt, Decrypt); a stub in tests. */
export interface KmsCalls {
  encrypt(input: { KeyId: string; Plaintext: Uint8Array; EncryptionContext: Record<string, string> }): Promise<{ CiphertextBlob?: Uint8Array }>;
  decrypt(input: { CiphertextBlob: Uint8Array; EncryptionContext: Record<string, string> }): Promise<{ Plaintext?: Uint8Array }>;
}

/**
 * The encryption context of an endpoint's signing secret, of the value of its header `place` (named
 * in lower case: header names are case-insensitive), or of another secret field's value (by its
 * path): also what a key policy may condition Decrypt on.
 */
export function secretContext(endpoint: string, place?: SecretPlace): Record<string, string> {
  if (place === undefined) return { 'handoff:purpose': 'endpoint-signing-secret', 'handoff:endpoint': endpoint };
  if (place.startsWith(FIELD_PLACE)) return { 'handoff:purpose': 'endpoint-field-secret', 'handoff:endpoint': endpoint, 'handoff:field': place.slice(FIELD_PLACE.length) };
  return { 'handoff:purpose': 'endpoint-header-secret', 'handoff:endpoint': endpoint, 'handoff:header': place.toLowerCase() };
}

/**
 * KMS, with the registry's key. `keyId` is needed to encrypt only: a symmetric ciphertext names its
 * key, so the consumer decrypts with none (its `kms:Decrypt` on the key is enough).
 */
export class KmsSecretCipher implements EndpointSecretCipher {
  readonly scheme = 'kms';
  readonly #calls: KmsCalls;
  readonly #keyId: string | undefined;

  constructor(options: { readonly calls: KmsCalls; readonly keyId?: string }) {
    this.#calls = options.calls;
    this.#keyId = options.keyId;
  }

  async encrypt(secret: string, endpoint: string, place?: SecretPlace): Promise<string> {
    if (this.#keyId === undefined) throw new SecretEncryptionError(`encrypting the secret of endpoint ${endpoint} needs the registry's key (its ARN)`);
    let blob: Uint8Array | undefined;
    try {
      ({ CiphertextBlob: blob } = await this.#calls.encrypt({ KeyId: this.#keyId, Plaintext: Buffer.from(secret, 'utf8'), EncryptionContext: secretContext(endpoint, place) }));
    } catch (error) {
      const what = error instanceof Error ? error.name : 'error';
      throw new SecretEncryptionError(`KMS could not encrypt the secret of endpoint ${endpoint} with ${this.#keyId}: ${what}`, { cause: error });
    }
    if (blob === undefined || blob.length === 0) throw new SecretEncryptionError(`KMS returned no ciphertext for the secret of endpoint ${endpoint}`);
    return `encrypted:kms:${Buffer.from(blob).toString('base64')}`;
  }

  async decrypt(stored: string, endpoint: string, place?: SecretPlace): Promise<string> {
    const blob = payloadOf(stored, 'kms', endpoint);
    let plaintext: Uint8Array | undefined;
    try {
      ({ Plaintext: plaintext } = await this.#calls.decrypt({ CiphertextBlob: blob, EncryptionContext: secretContext(endpoint, place) }));
    } catch (error) {
      const what = error instanceof Error ? error.name : 'error';
      throw new SecretUnavailableError('secret-unreadable', `KMS could not decrypt the secret of endpoint ${endpoint}: ${what}`, { cause: error });
    }
    if (plaintext === undefined) throw new SecretUnavailableError('secret-unreadable', `KMS returned no plaintext for the secret of endpoint ${endpoint}`);
    return Buffer.from(plaintext).toString('utf8');
  }
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
export const LOCAL_KEY_BYTES = 32;

/** AES-256-GCM under a 32-byte key (the sandbox draws one at start): `encrypted:local:<base64 of iv, tag, ciphertext>`. */
export class LocalSecretCipher implements EndpointSecretCipher {
  readonly scheme = 'local';
  readonly #key: Buffer;

  /** @throws RangeError for a key that is not 32 bytes (base64 or raw) */
  constructor(key: Buffer | string) {
    this.#key = typeof key === 'string' ? Buffer.from(key, 'base64') : key;
    if (this.#key.length !== LOCAL_KEY_BYTES) throw new RangeError(`the local secret key must be ${LOCAL_KEY_BYTES} bytes, got ${this.#key.length}`);
  }

  static generateKey(): string {
    return randomBytes(LOCAL_KEY_BYTES).toString('base64');
  }

  encrypt(secret: string, endpoint: string, place?: SecretPlace): Promise<string> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(aad(endpoint, place));
    const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return Promise.resolve(`encrypted:local:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`);
  }

  decrypt(stored: string, endpoint: string, place?: SecretPlace): Promise<string> {
    try {
      const raw = payloadOf(stored, 'local', endpoint);
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(aad(endpoint, place));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Promise.resolve(Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8'));
    } catch (error) {
      if (error instanceof SecretUnavailableError) return Promise.reject(error);
      return Promise.reject(new SecretUnavailableError('secret-unreadable', `the secret of endpoint ${endpoint} does not decrypt with this key`, { cause: error }));
    }
  }
}

function aad(endpoint: string, place?: SecretPlace): Buffer {
  const context = secretContext(endpoint, place);
  const named = place === undefined ? '' : `\n${context['handoff:header'] ?? context['handoff:field']}`;
  return Buffer.from(`${context['handoff:purpose']}\n${context['handoff:endpoint']}${named}`, 'utf8');
}

/** The ciphertext of a stored secret made by `scheme`. @throws SecretUnavailableError for another form */
function payloadOf(stored: string, scheme: CipherScheme, endpoint: string): Buffer {
  if (schemeOf(stored) !== scheme) {
    throw new SecretUnavailableError('secret-unreadable', `the secret of endpoint ${endpoint} is not encrypted with ${scheme} (${schemeOf(stored) ?? 'not encrypted'})`);
  }
  return Buffer.from(stored.slice(`encrypted:${scheme}:`.length), 'base64');
}

/**
 * How long one KMS request may take (connecting included): a Decrypt is awaited by the batch that
 * resolves its endpoint (once per secret per container), so KMS hanging must cost that batch seconds,
 * not its whole timeout; a request that times out fails like any other (the endpoint is held, tried
 * again 5 s later).
 */
export const KMS_REQUEST_TIMEOUT_MS = 3_000;

/**
 * The SDK's Encrypt and Decrypt, its client made once, on the first call: a container whose registry
 * holds no `encrypted:kms:` secret never loads it. Outside AWS, `AWS_ENDPOINT_URL_KMS` points it
 * elsewhere, as every client's service endpoint variable does.
 */
export function kmsClient(): KmsCalls & { destroy(): void } {
  type Sdk = typeof import('@aws-sdk/client-kms');
  let loading: Promise<{ sdk: Sdk; client: InstanceType<Sdk['KMSClient']> }> | undefined;
  const load = () => {
    loading ??= import('@aws-sdk/client-kms').then((sdk) => ({
      sdk,
      client: new sdk.KMSClient({ requestHandler: { connectionTimeout: KMS_REQUEST_TIMEOUT_MS, requestTimeout: KMS_REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true } }),
    }));
    loading.catch(() => (loading = undefined));
    return loading;
  };
  return {
    encrypt: async (input) => {
      const { sdk, client } = await load();
      return client.send(new sdk.EncryptCommand(input));
    },
    decrypt: async (input) => {
      const { sdk, client } = await load();
      return client.send(new sdk.DecryptCommand(input));
    },
    /** Closes its sockets (a command's process then exits promptly); a later call makes a new client. */
    destroy: () => {
      const current = loading;
      loading = undefined;
      void current?.then(({ client }) => client.destroy(), () => {});
    },
  };
}
