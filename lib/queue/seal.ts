/**
 * Only handoff's own messages steer. The delivery queue is written by every producer, so a message
 * attribute proves nothing by itself: the attributes that route, number, pace or count a message
 * (CONTROL_ATTRIBUTES) are obeyed only under a seal, an HMAC-SHA256 over the body and those
 * attributes with a key that only handoff's functions and its operators hold (in AWS a Secrets
 * Manager secret the stack generates; in the sandbox a key drawn at start). A message without a valid
 * seal is a producer's, whatever it carries: routed by its subscriptions, numbered by its shipment's
 * head, paced by the rate limit, and its control attributes ignored.
 *
 * The seal covers the body, so a seal read off one message cannot make another steer; an exact copy
 * of a sealed message is a copy of handoff's own, which the ledger's claim answers as it answers any
 * copy. Reading a sealed message takes receive rights on handoff's queues, which producers lack.
 * Cost: no request and no write unit; one HMAC over the body per sealed message sent and received.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { RESOURCE_ENV } from '../config';
import { ConfigError, SealKeyError } from '../errors';
import { secretsManagerClient, type GetSecretValue } from '../endpoints/secret';
import {
  ENDPOINT_ATTRIBUTE,
  IN_TURN_ATTRIBUTE,
  RECOVERIES_ATTRIBUTE,
  RESERVED_RATE_ATTRIBUTE,
  RESERVED_SLOT_ATTRIBUTE,
  SEQUENCE_ATTRIBUTE,
} from './queue';
import { TRACELINK_ATTRIBUTE } from '../tracing/carrier';
/** The message attribute carrying the seal (base64url of the HMAC). */
export const SEAL_ATTRIBUTE = 'seal';

/**
 * Every attribute handoff writes to steer its own messages, in the order the seal covers them. Any
 * other attribute is the producer's and steers nothing. (lib/queue/queue.ts says what each means.)
 */
export const CONTROL_ATTRIBUTES = [
  ENDPOINT_ATTRIBUTE,
  SEQUENCE_ATTRIBUTE,
  IN_TURN_ATTRIBUTE,
  RESERVED_SLOT_ATTRIBUTE,
  RESERVED_RATE_ATTRIBUTE,
  RECOVERIES_ATTRIBUTE,
] as const;
export type ControlAttribute = (typeof CONTROL_ATTRIBUTES)[number];

/**
 * Attributes the seal covers only when a message carries them, after CONTROL_ATTRIBUTES: a message
 * sealed before one was added reads the same. `tracelink` (docs/contract.md §19): the trace a replay,
 * release or put-back comes from, which its delivery's span links to; a producer's steers nothing.
 */
export const SEALED_WHEN_PRESENT = [TRACELINK_ATTRIBUTE] as const;
/** Every attribute a seal may cover. */
const SEALED_ATTRIBUTES = [...CONTROL_ATTRIBUTES, ...SEALED_WHEN_PRESENT] as const;

/** Control attributes by name, as strings (SQS carries every attribute value as one). */
export type ControlValues = Partial<Record<ControlAttribute | (typeof SEALED_WHEN_PRESENT)[number], string>>;

/** A seal key's bytes: 32, drawn at random. */
export const SEAL_KEY_BYTES = 32;

export class MessageSeal {
  readonly #key: Buffer;
  readonly #previous: readonly Buffer[];

  /**
   * @param key base64 (or base64url) of at least SEAL_KEY_BYTES bytes: what seals.
   * @param previousKeys keys a rotation replaced: what was sealed with them still steers.
   * @throws SealKeyError
   */
  constructor(key: string, previousKeys: readonly string[] = []) {
    this.#key = keyBytes(key);
    this.#previous = previousKeys.map(keyBytes);
  }

  /** A new random key, base64. */
  static generateKey(): string {
    return randomBytes(SEAL_KEY_BYTES).toString('base64');
  }

  /** The seal of a body with these control values (absent ones count as absent, not as empty). */
  seal(body: string, control: ControlValues): string {
    return sealWith(this.#key, body, control);
  }

  /**
   * The control values a message may steer with: all of them when its seal is valid, none otherwise.
   * `attribute` reads a message attribute's string value by name.
   */
  controlOf(body: string, attribute: (name: string) => string | undefined): ControlValues {
    const seal = attribute(SEAL_ATTRIBUTE);
    if (seal === undefined) return {};
    const control: ControlValues = {};
    for (const name of SEALED_ATTRIBUTES) {
      const value = attribute(name);
      if (value !== undefined) control[name] = value;
    }
    // The current key first; a key a rotation replaced only for what it sealed before.
    if (this.#verify(seal, this.seal(body, control))) return control;
    return this.#previous.some((key) => this.#verify(seal, sealWith(key, body, control))) ? control : {};
  }

  #verify(given: string, expected: string): boolean {
    const a = Buffer.from(given);
    const b = Buffer.from(expected);
    return a.length === b.length && timingSafeEqual(a, b);
  }
}

function keyBytes(key: string): Buffer {
  const bytes = Buffer.from(key.trim(), 'base64');
  if (bytes.length < SEAL_KEY_BYTES) throw new SealKeyError(`a seal key must be base64 of at least ${SEAL_KEY_BYTES} bytes, got ${bytes.length}`);
  return bytes;
}

function sealWith(key: Buffer, body: string, control: ControlValues): string {
  const mac = createHmac('sha256', key).update('handoff-seal-v1\n');
  for (const name of CONTROL_ATTRIBUTES) {
    const value = control[name];
    // Length-prefixed, so no value can spill into the next name or into the body.
    mac.update(value === undefined ? `${name}-\n` : `${name}=${value.length}:${value}\n`);
  }
  for (const name of SEALED_WHEN_PRESENT) {
    const value = control[name];
    if (value !== undefined) mac.update(`${name}=${value.length}:${value}\n`);
  }
  return mac.update(body).digest('base64url');
}

/** Control attributes SQS carries as numbers; the rest are strings. */
const NUMBER_ATTRIBUTES: ReadonlySet<string> = new Set([SEQUENCE_ATTRIBUTE, RESERVED_SLOT_ATTRIBUTE, RESERVED_RATE_ATTRIBUTE, RECOVERIES_ATTRIBUTE]);

/** SQS message attributes for `control`, with their seal: what handoff sends on a message of its own. */
export function sealedAttributes(seal: MessageSeal, body: string, control: ControlValues): Record<string, MessageAttributeValue> {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const name of SEALED_ATTRIBUTES) {
    const value = control[name];
    if (value !== undefined) attributes[name] = { DataType: NUMBER_ATTRIBUTES.has(name) ? 'Number' : 'String', StringValue: value };
  }
  attributes[SEAL_ATTRIBUTE] = { DataType: 'String', StringValue: seal.seal(body, control) };
  return attributes;
}

/** How long a process keeps the seal key it read before reading it again (a rotation reaches it within this). */
export const SEAL_KEY_MAX_AGE_MS = 5 * 60_000;
/** After a failed re-read, the next one is made no sooner than this; the key read before keeps sealing meanwhile. */
export const SEAL_KEY_RETRY_AFTER_MS = 5_000;

/**
 * The seal from `load`, loaded on first use, kept `maxAgeMs` (SEAL_KEY_MAX_AGE_MS), then loaded again
 * while the one at hand goes on sealing; a failed load is not kept: with none at hand it fails the
 * caller (a Secrets Manager throttle on a cold start loses nothing: the batch returns), with one at
 * hand that one goes on, and the next load is tried SEAL_KEY_RETRY_AFTER_MS later.
 */
export function sealSource(
  load: () => Promise<MessageSeal>,
  options: { readonly maxAgeMs?: number; readonly now?: () => number } = {},
): () => Promise<MessageSeal> {
  const maxAgeMs = options.maxAgeMs ?? SEAL_KEY_MAX_AGE_MS;
  const now = options.now ?? Date.now;
  let held: { readonly seal: MessageSeal; readonly dueAt: number } | undefined;
  let loading: Promise<MessageSeal> | undefined;
  return () => {
    if (held !== undefined && now() < held.dueAt) return Promise.resolve(held.seal);
    loading ??= load().then(
      (seal) => {
        held = { seal, dueAt: now() + maxAgeMs };
        loading = undefined;
        return seal;
      },
      (error: unknown) => {
        if (held !== undefined) held = { seal: held.seal, dueAt: now() + SEAL_KEY_RETRY_AFTER_MS };
        loading = undefined;
        throw error;
      },
    );
    if (held === undefined) return loading;
    loading.catch(() => {});
    return Promise.resolve(held.seal);
  };
}

/**
 * The seal of a function's environment: in AWS the key is read from Secrets Manager
 * (`HANDOFF_SEAL_KEY_ARN`), elsewhere it is `HANDOFF_SEAL_KEY`. A missing or unusable key is a
 * ConfigError naming the variable (and the ARN, never the key); a failed read throws what the read
 * threw, so the caller's messages return and the read is tried again.
 */
export async function sealFromEnvironment(env: NodeJS.ProcessEnv, get: GetSecretValue = secretsManagerClient()): Promise<MessageSeal> {
  const arn = env[RESOURCE_ENV.sealKeyArn] || undefined;
  const variable = arn !== undefined ? RESOURCE_ENV.sealKeyArn : RESOURCE_ENV.sealKey;
  let key = env[RESOURCE_ENV.sealKey] || undefined;
  const previous: string[] = [];
  if (arn !== undefined) {
    key = (await get({ SecretId: arn })).SecretString;
    // After a rotation (put-secret-value), what the replaced key sealed still steers: the messages in
    // flight then. A secret never rotated has no AWSPREVIOUS.
    const replaced = await get({ SecretId: arn, VersionStage: 'AWSPREVIOUS' }).catch((error: unknown) => {
      if (error instanceof Error && error.name === 'ResourceNotFoundException') return undefined;
      throw error;
    });
    if (replaced?.SecretString && isSealKey(replaced.SecretString)) previous.push(replaced.SecretString);
  }
  if (!key) throw new ConfigError(variable, arn !== undefined ? `names a secret with no string value (${arn})` : 'must be set');
  try {
    return new MessageSeal(key, previous);
  } catch (error) {
    if (!(error instanceof SealKeyError)) throw error;
    throw new ConfigError(variable, arn !== undefined ? `names a secret (${arn}) that cannot seal: ${error.message}` : `cannot seal: ${error.message}`);
  }
}

function isSealKey(key: string): boolean {
  try {
    keyBytes(key);
    return true;
  } catch {
    return false;
  }
}
