/**
 * An endpoint's signing secret: made (`generateSecret`), read from Secrets Manager with a
 * rotation's previous version (`secretsManagerVersions`), and kept for a bounded age
 * (`SecretCache`).
 *
 * `handoff endpoint add` and `rotate-secret` make one when none is given, of the endpoint's
 * signature scheme: for HMAC-SHA256, `whsec_` and the base64 of 32 random bytes, the Standard
 * Webhooks form, longer than the 24-byte minimum the signer enforces; for ed25519, a new key pair,
 * `whsk_` and the base64 of its seed and public key (lib/webhook/signing-secret.ts).
 *
 * Messages and errors name a secret's ARN, never its value.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { errorFields, type Logger } from '../observability';
import { createSigner, ED25519_SECRET_PREFIX, ed25519Values, rawEd25519Key, SECRET_PREFIX, type PreviousSecret, type SignatureScheme } from '../webhook/signing-secret';
import { SecretUnavailableError, SigningSecretError } from '../errors';
export const GENERATED_SECRET_BYTES = 32;

/** A new signing secret of `scheme`: `whsec_…` (HMAC-SHA256, the default) or an ed25519 key pair's `whsk_…`. */
export function generateSecret(scheme: SignatureScheme = 'hmac-sha256'): string {
  if (scheme === 'ed25519') {
    const { seed, publicKey } = rawEd25519Key(generateKeyPairSync('ed25519').privateKey);
    return ed25519Values(seed, publicKey).secret;
  }
  return `${SECRET_PREFIX}${randomBytes(GENERATED_SECRET_BYTES).toString('base64')}`;
}

/**
 * A copy of a secret read from where it is kept is used for this long, then read again: a value
 * changed there (`put-secret-value`) signs within this (plus the registry's 15 s), however long the
 * container lives.
 */
export const SECRET_REREAD_AFTER_MS = 5 * 60_000;
/**
 * While a read fails, the copy read last keeps signing until it is this old; after that the secret
 * is unavailable and its endpoint's deliveries wait on the queue (lib/consumer/plan.ts, endpoint-unresolved).
 * Long enough to ride out an outage of Secrets Manager or a throttle, short enough that a secret
 * whose reads are denied on purpose (a revoked grant, a deleted secret) stops signing within the hour.
 */
export const SECRET_MAX_AGE_MS = 60 * 60_000;
/** After a failed read, the next one is made no sooner than this: an outage or a throttle is not hammered by every batch. */
export const SECRET_RETRY_AFTER_MS = 5_000;
/**
 * After a secret is rotated in Secrets Manager (`put-secret-value`: a new version becomes AWSCURRENT,
 * the old one AWSPREVIOUS), requests carry a signature under each until the new version is this old,
 * as `handoff endpoint rotate-secret` does by default for secrets the registry holds.
 */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60_000;

/** A secret as read: the value that signs, and a rotation's previous value while it still signs too. */
export interface SecretVersions {
  readonly current: string;
  readonly previous?: PreviousSecret;
}

/** Secrets Manager's GetSecretValue, as much of it as is used: the SDK client's call in AWS, a stub in tests. */
export type GetSecretValue = (input: { SecretId: string; VersionStage?: string }) => Promise<{ SecretString?: string; CreatedDate?: Date }>;

/**
 * Reads a secret's versions from Secrets Manager. AWSCURRENT signs; when that version is younger
 * than `overlapMs` (its CreatedDate: when it was put), AWSPREVIOUS is read too and signs beside it
 * until then. Every container that reads the secret in that window signs with both, whenever it
 * started, since the end is the version's, not the container's.
 * @throws SecretUnavailableError naming the ARN: a read failed (AWSPREVIOUS missing is no failure: the
 * secret has one version), or the current value cannot sign
 */
export function secretsManagerVersions(
  get: GetSecretValue,
  options: { readonly overlapMs?: number; readonly now?: () => number; readonly logger?: Logger } = {},
): (arn: string) => Promise<SecretVersions> {
  const overlapMs = options.overlapMs ?? SECRET_ROTATION_OVERLAP_MS;
  const now = options.now ?? Date.now;
  const call = async (arn: string, stage: string | undefined) => {
    try {
      return await get({ SecretId: arn, ...(stage !== undefined ? { VersionStage: stage } : {}) });
    } catch (error) {
      if (stage !== undefined && error instanceof Error && error.name === 'ResourceNotFoundException') return undefined;
      const what = error instanceof Error ? error.name : 'error';
      throw new SecretUnavailableError('secret-unreadable', `Secrets Manager could not read ${stage ?? 'the secret'} of ${arn}: ${what}`, { cause: error });
    }
  };
  return async (arn) => {
    const read = (await call(arn, undefined))!;
    const current = signingValue(read.SecretString, arn);
    const rotatedAt = read.CreatedDate?.getTime();
    if (rotatedAt === undefined || !Number.isFinite(rotatedAt) || now() >= rotatedAt + overlapMs) return { current };
    const previous = (await call(arn, 'AWSPREVIOUS'))?.SecretString?.trim();
    if (previous === undefined || previous === '' || previous === current) return { current };
    try {
      createSigner(previous);
    } catch (error) {
      if (!(error instanceof SigningSecretError)) throw error;
      // The new value signs alone: an old one that could not sign cannot have been the receiver's.
      options.logger?.warn('previous secret cannot sign: signing with the current one only', { secretArn: arn, problem: error.code });
      return { current };
    }
    return { current, previous: { secret: previous, untilMs: rotatedAt + overlapMs } };
  };
}

/**
 * Reads a secret value from Secrets Manager that an endpoint names besides its signing secrets (its
 * `headers`, `auth` and `tls`, `{"secretArn": …}`): the secret's current string, trimmed. What it must
 * be is its field's to say where it is used (lib/endpoints/resolved-locks.ts: a header value, PEM).
 * No previous version: each carries one value, and the receiver or token endpoint decides when an
 * old one stops working. Kept like a signing secret (`SecretCache`: read again every 5 minutes).
 * @throws SecretUnavailableError naming the ARN, never the value
 */
export function secretsManagerValue(get: GetSecretValue): (arn: string) => Promise<string> {
  return async (arn) => {
    let read: { SecretString?: string };
    try {
      read = await get({ SecretId: arn });
    } catch (error) {
      const what = error instanceof Error ? error.name : 'error';
      throw new SecretUnavailableError('secret-unreadable', `Secrets Manager could not read the secret value ${arn}: ${what}`, { cause: error });
    }
    const value = read.SecretString?.trim();
    if (value === undefined || value === '') throw new SecretUnavailableError('secret-invalid', `the secret value ${arn} has no string value`);
    return value;
  };
}

/**
 * How long one GetSecretValue request may take (connecting included): a read is awaited by the batch
 * that makes it (at most every 5 minutes a secret), so Secrets Manager hanging must cost that batch
 * seconds, not its whole timeout. A request that times out fails the read like any other.
 */
export const SECRET_READ_TIMEOUT_MS = 3_000;

/** The SDK's GetSecretValue, its client made once, on the first read (containers that read no secret never load it). */
export function secretsManagerClient(): GetSecretValue {
  let client: Promise<GetSecretValue> | undefined;
  return async (input) => {
    client ??= import('@aws-sdk/client-secrets-manager').then(({ SecretsManagerClient, GetSecretValueCommand }) => {
      const sdk = new SecretsManagerClient({ requestHandler: { connectionTimeout: SECRET_READ_TIMEOUT_MS, requestTimeout: SECRET_READ_TIMEOUT_MS, throwOnRequestTimeout: true } });
      return (request) => sdk.send(new GetSecretValueCommand(request));
    });
    client.catch(() => (client = undefined));
    return (await client)(input);
  };
}

/** A secret value as Secrets Manager holds it (`whsec_<base64>`, bare base64, or `whsk_<base64>`), checked by the signer itself. */
function signingValue(raw: string | undefined, arn: string): string {
  const secret = raw?.trim();
  if (!secret) throw new SecretUnavailableError('secret-invalid', `the secret ${arn} has no string value`);
  try {
    createSigner(secret);
  } catch (error) {
    if (!(error instanceof SigningSecretError)) throw error;
    throw new SecretUnavailableError(
      'secret-invalid',
      `the secret ${arn} cannot sign: its key ${error.message} (the value must be ${secret.startsWith(ED25519_SECRET_PREFIX) ? 'an ed25519 whsk_<base64>' : 'whsec_<base64> or bare base64'})`,
      { cause: error },
    );
  }
  return secret;
}

interface CacheEntry<V> {
  value?: V;
  /** Epoch ms the copy in `value` was read. */
  readAt: number;
  /** Epoch ms the last read failed, while the one after it has not succeeded. */
  failedAt?: number;
  error?: unknown;
  loading?: Promise<V>;
}

/**
 * Secrets by reference (an ARN), each read at most once per `SECRET_REREAD_AFTER_MS` while its copy
 * is fresh: the hot path is one map lookup. A re-read that fails keeps the copy signing until it is
 * `SECRET_MAX_AGE_MS` old (logged at each failed read), then fails its callers; a failed read is
 * tried again no sooner than `SECRET_RETRY_AFTER_MS` later, whoever asks. Concurrent callers share one read.
 */
export class SecretCache<V> {
  readonly #read: (ref: string) => Promise<V>;
  readonly #now: () => number;
  readonly #logger: Logger | undefined;
  readonly #entries = new Map<string, CacheEntry<V>>();

  readonly #rereadAfterMs: number;

  /** `rereadAfterMs`: default SECRET_REREAD_AFTER_MS; Infinity for values that never change (a ciphertext's plaintext). */
  constructor(read: (ref: string) => Promise<V>, options: { readonly now?: () => number; readonly logger?: Logger; readonly rereadAfterMs?: number } = {}) {
    this.#read = read;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
    this.#rereadAfterMs = options.rereadAfterMs ?? SECRET_REREAD_AFTER_MS;
  }

  /** The secret's value now. @throws the read's error when no copy young enough is at hand */
  get(ref: string): Promise<V> {
    const nowMs = this.#now();
    let entry = this.#entries.get(ref);
    if (entry?.value !== undefined && nowMs - entry.readAt < this.#rereadAfterMs) return Promise.resolve(entry.value);
    if (entry?.loading !== undefined) return entry.loading;
    if (entry?.failedAt !== undefined && nowMs - entry.failedAt < SECRET_RETRY_AFTER_MS) return this.#copyOr(ref, entry, nowMs);
    if (entry === undefined) this.#entries.set(ref, (entry = { readAt: 0 }));
    const loading = this.#read(ref).then(
      (value) => {
        Object.assign(entry, { value, readAt: this.#now(), failedAt: undefined, error: undefined });
        return value;
      },
      (error: unknown) => {
        const failedAt = this.#now();
        Object.assign(entry, { failedAt, error });
        if (entry.value !== undefined && failedAt - entry.readAt < SECRET_MAX_AGE_MS) {
          this.#logger?.warn('secret re-read failed: signing with the copy read before', {
            secretRef: ref,
            copyAgeSeconds: Math.round((failedAt - entry.readAt) / 1000),
            ...errorFields(error),
          });
        }
        return this.#copyOr(ref, entry, failedAt);
      },
    );
    entry.loading = loading;
    void loading.then(
      () => (entry.loading = undefined),
      () => (entry.loading = undefined),
    );
    return loading;
  }

  /**
   * Epoch ms at which `get(ref)` would read again: when its copy turns stale, or when a failed read
   * may be tried again. Infinity for a reference never asked for.
   */
  dueAt(ref: string): number {
    const entry = this.#entries.get(ref);
    if (entry === undefined) return Infinity;
    if (entry.failedAt !== undefined) return entry.failedAt + SECRET_RETRY_AFTER_MS;
    return entry.readAt + this.#rereadAfterMs;
  }

  /** The copy while it is young enough, else the last read's failure. */
  #copyOr(ref: string, entry: CacheEntry<V>, nowMs: number): Promise<V> {
    if (entry.value !== undefined && nowMs - entry.readAt < SECRET_MAX_AGE_MS) return Promise.resolve(entry.value);
    if (entry.value === undefined) return Promise.reject(entry.error instanceof Error ? entry.error : new SecretUnavailableError('secret-unreadable', `${ref} could not be read`));
    return Promise.reject(
      new SecretUnavailableError(
        'secret-expired',
        `${ref} could not be read again, and the copy read ${Math.round((nowMs - entry.readAt) / 60_000)} min ago is past its ${SECRET_MAX_AGE_MS / 60_000}-min limit`,
        { cause: entry.error },
      ),
    );
  }
}
