/**
 * The valibot schemas endpoint fields are built from (lib/endpoints/fields.ts). Each message is
 * what a user reads after `endpoint "NAME": FIELD `, so it says what the field takes and quotes
 * what was given inert (lib/terminal.ts); a URL or a secret is never quoted, since either may be
 * a credential. Every check is a valibot action json-schema.ts can read, except those JSON Schema
 * cannot say (a secret the signer refuses), which are `rawCheck`s.
 */
import * as v from 'valibot';
import { FORBIDDEN_KEYS, SHIPMENT_STATUSES } from '../event';
import { MAX_WAIT_SECONDS } from '../policy';
import { quoted } from '../terminal';
import { createSigner, ED25519_SECRET_PREFIX, isSecretValue, PUBLIC_KEY_PREFIX, SECRET_PREFIX, SIGNATURE_SCHEMES } from '../webhook/signing-secret';
import { HEADER_NAME, HEADER_VALUE, MAX_CUSTOM_HEADERS, MAX_HEADER_NAME_CHARS, MAX_HEADER_VALUE_CHARS, refusedHeaderProblem } from '../webhook/custom-headers';
import { SigningSecretError } from '../errors';
import { ENCRYPTED_SECRET } from './secret-cipher';

export const ENDPOINT_NAME = /^[a-z0-9-]{1,64}$/;
/** Every event type an endpoint can subscribe to, and `*` for all of them. */
export const EVENT_TYPES = SHIPMENT_STATUSES.map((status) => `shipment.${status}`);
export const ALL_EVENT_TYPES = '*';
export const RECOVERIES = ['review', 'drop'] as const;
export const ORDERINGS = ['none', 'per-shipment'] as const;
export const ON_DEAD = ['continue', 'hold'] as const;
export { SIGNATURE_SCHEMES, type SignatureScheme } from '../webhook/signing-secret';

export type Recovery = (typeof RECOVERIES)[number];
export type Ordering = (typeof ORDERINGS)[number];
export type OnDead = (typeof ON_DEAD)[number];
export type MatchValue = string | number | boolean;

/** Any schema a field may have. */
export type FieldSchema = v.GenericSchema<unknown, unknown>;

const MAX_URL_LENGTH = 2048;
const MAX_MATCH_KEYS = 16;
const MAX_MATCH_VALUES = 64;
/** The latest time a JavaScript Date holds, in epoch ms. */
const MAX_EPOCH_MS = 8_640_000_000_000_000;
/** A Secrets Manager secret's ARN, in any partition (aws, aws-cn, aws-us-gov). */
export const SECRET_ARN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}$/;
/**
 * `match` keys: the event's fields, dotted into `data` (`data.carrier`), none of them a forbidden
 * key (lib/event.ts: no event holds one, so such a filter would match nothing).
 */
const MATCH_KEY = /^(shipmentId|status|data(\.[A-Za-z0-9_-]{1,64}){1,8})$/;
const FORBIDDEN = [...FORBIDDEN_KEYS].join('|');
const NO_FORBIDDEN_PART = new RegExp(`^(?!(.*\\.)?(${FORBIDDEN})(\\.|$))`);

/** Whole numbers from `min` to `max`; `message` says what was given instead. */
export function whole(min: number, max: number, message = (given: unknown) => `must be a whole number from ${min} to ${max}, got ${quoted(given)}`) {
  const problem = (issue: v.BaseIssue<unknown>) => message(issue.input);
  return v.pipe(v.number(problem), v.integer(problem), v.minValue(min, problem), v.maxValue(max, problem));
}

/** One of `options`. */
export function oneOf<const T extends readonly string[]>(options: T) {
  return v.picklist(options, (issue) => `must be one of ${options.join(', ')}, got ${quoted(issue.input)}`);
}

export const yesNo = v.boolean('must be true or false');

const NAME_PROBLEM = 'must be 1–64 characters of a-z 0-9 -';
export const name = v.pipe(v.string(NAME_PROBLEM), v.regex(ENDPOINT_NAME, NAME_PROBLEM));

/**
 * Who an endpoint belongs to (a merchant, a carrier account, a team): the owner index's key, so a
 * conservative charset, the same in a URL path, a shell and a DynamoDB key without escaping.
 */
export const OWNER = /^[A-Za-z0-9._:@+=-]{1,128}$/;
const OWNER_PROBLEM = 'must be 1–128 characters of A-Z a-z 0-9 . _ : @ + = -';
export const owner = v.pipe(v.string(OWNER_PROBLEM), v.regex(OWNER, OWNER_PROBLEM));

// Its length alone is named: a URL may carry a credential (docs/contract.md §3). Whether it is
// absolute and allowed is the endpoint guard's to say (resolveEndpoint).
const URL_PROBLEM = 'must be an absolute https URL';
export const url = v.pipe(
  v.string(URL_PROBLEM),
  v.minLength(1, URL_PROBLEM),
  v.maxLength(MAX_URL_LENGTH, (issue) => `must be at most ${MAX_URL_LENGTH} characters, got ${issue.received}`),
);

const WAITS_PROBLEM = `must be a list of 1–100 waits in whole seconds from 0 to ${MAX_WAIT_SECONDS}`;
export const waits = v.pipe(
  v.array(
    whole(0, MAX_WAIT_SECONDS, () => WAITS_PROBLEM),
    WAITS_PROBLEM,
  ),
  v.minLength(1, WAITS_PROBLEM),
  v.maxLength(100, WAITS_PROBLEM),
  v.readonly(),
);

export const epochMs = whole(0, MAX_EPOCH_MS, (given) => `must be a time in epoch milliseconds, got ${quoted(given)}`);

const TYPES_PROBLEM = `must be a non-empty list of event types or ["${ALL_EVENT_TYPES}"]`;
export const eventTypes = v.pipe(
  v.array(
    v.picklist([...EVENT_TYPES, ALL_EVENT_TYPES], (issue) => `holds ${quoted(issue.input)}: each must be one of ${EVENT_TYPES.join(', ')} or "${ALL_EVENT_TYPES}"`),
    TYPES_PROBLEM,
  ),
  v.minLength(1, TYPES_PROBLEM),
  v.transform((types) => [...new Set(types)]),
  v.readonly(),
);

const NOT_A_MATCH_KEY = 'is not a field to match: use shipmentId, status or data.<field>[.<field>…]';
const matchKey = v.pipe(
  v.string(NOT_A_MATCH_KEY),
  v.regex(MATCH_KEY, NOT_A_MATCH_KEY),
  v.regex(NO_FORBIDDEN_PART, (issue) => {
    const forbidden = String(issue.input)
      .split('.')
      .find((part) => FORBIDDEN_KEYS.has(part));
    return `is not a field to match: ${forbidden} is a forbidden key, which no event holds`;
  }),
);
const VALUES_PROBLEM = 'values must be strings (up to 256 characters), numbers or booleans';
const VALUES_COUNT = `must be a list of 1–${MAX_MATCH_VALUES} values`;
const matchValues = v.pipe(
  v.array(
    v.union([v.pipe(v.string(VALUES_PROBLEM), v.maxLength(256, VALUES_PROBLEM)), v.pipe(v.number(VALUES_PROBLEM), v.finite(VALUES_PROBLEM)), v.boolean(VALUES_PROBLEM)], VALUES_PROBLEM),
    VALUES_COUNT,
  ),
  v.minLength(1, VALUES_COUNT),
  v.maxLength(MAX_MATCH_VALUES, VALUES_COUNT),
  v.readonly(),
);
export const match = v.pipe(
  v.custom<Record<string, unknown>>(
    (input) => typeof input === 'object' && input !== null && !Array.isArray(input),
    'must be an object of field → list of values, e.g. {"data.carrier": ["acme"]}',
  ),
  v.maxEntries(MAX_MATCH_KEYS, `may have at most ${MAX_MATCH_KEYS} keys`),
  // valibot's record passes over the keys __proto__, constructor and prototype without a word:
  // every own key is checked here first, so each of them is refused as no field to match.
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const input = dataset.value;
    for (const key of Object.keys(input)) {
      const checked = v.safeParse(matchKey, key);
      if (!checked.success) {
        addIssue({ message: checked.issues[0].message, path: [{ type: 'object', origin: 'key', input, key, value: input[key] }] });
        return;
      }
    }
  }),
  v.record(matchKey, matchValues),
  v.readonly(),
);

const SECRET_PROBLEM =
  'must be a whsec_… signing secret, the ARN of a Secrets Manager secret holding one, or one the registry encrypted (encrypted:kms:… or encrypted:local:…); or an ed25519 key, whsk_… (the value is not shown)';
/**
 * A signing secret: a whsec (HMAC-SHA256) or whsk (ed25519) value the signer accepts, a Secrets
 * Manager ARN, or a value encrypted with the registry's key (its plaintext is checked where it was
 * encrypted, and decrypted by the consumer alone). Never echoed.
 */
export const secret = v.pipe(
  v.union(
    [
      v.pipe(v.string(SECRET_PROBLEM), v.startsWith(SECRET_PREFIX, SECRET_PROBLEM)),
      v.pipe(v.string(SECRET_PROBLEM), v.startsWith(ED25519_SECRET_PREFIX, SECRET_PROBLEM)),
      v.pipe(v.string(SECRET_PROBLEM), v.regex(SECRET_ARN, SECRET_PROBLEM)),
      v.pipe(v.string(SECRET_PROBLEM), v.regex(ENCRYPTED_SECRET, SECRET_PROBLEM)),
    ],
    SECRET_PROBLEM,
  ),
  // A value that cannot sign would fail every attempt: refused here, by the signer itself.
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || !isSecretValue(dataset.value)) return;
    try {
      createSigner(dataset.value);
    } catch (error) {
      if (!(error instanceof SigningSecretError)) throw error;
      addIssue({ message: `${error.message} (the value is not shown)` });
    }
  }),
);

/** The scheme an endpoint signs with (docs/contract.md §18). */
export const signature = oneOf(SIGNATURE_SCHEMES);

const PUBLIC_KEY_PROBLEM = `must be an ed25519 public key: ${PUBLIC_KEY_PREFIX} and the base64 of its 32 bytes`;
/** An ed25519 public key, `whpk_` and the base64 of 32 bytes: no secret, shown as it is. */
export const publicKey = v.pipe(v.string(PUBLIC_KEY_PROBLEM), v.regex(/^whpk_[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/, PUBLIC_KEY_PROBLEM));

const HEADER_VALUE_PROBLEM = `must be a header value: 1–${MAX_HEADER_VALUE_CHARS} visible ASCII characters (spaces within), {"secretArn": "<Secrets Manager secret ARN>"} or {"secret": "<value>"} (the value is not shown)`;
const headerText = v.pipe(v.string(HEADER_VALUE_PROBLEM), v.maxLength(MAX_HEADER_VALUE_CHARS, HEADER_VALUE_PROBLEM), v.regex(HEADER_VALUE, HEADER_VALUE_PROBLEM));
/**
 * A header's value: text sent as it is (no secret: shown by `endpoint show` and the API), or a
 * secret one, never shown after it is written: the ARN of a Secrets Manager secret holding it (AWS),
 * or the value itself (the sandbox), which the registry stores encrypted like a signing secret.
 */
const headerValue = v.union(
  [
    headerText,
    v.strictObject({ secretArn: v.pipe(v.string(HEADER_VALUE_PROBLEM), v.regex(SECRET_ARN, HEADER_VALUE_PROBLEM)) }, HEADER_VALUE_PROBLEM),
    v.strictObject({ secret: v.union([v.pipe(v.string(HEADER_VALUE_PROBLEM), v.regex(ENCRYPTED_SECRET, HEADER_VALUE_PROBLEM)), headerText], HEADER_VALUE_PROBLEM) }, HEADER_VALUE_PROBLEM),
  ],
  HEADER_VALUE_PROBLEM,
);
export type HeaderValue = v.InferOutput<typeof headerValue>;

const HEADER_NAME_PROBLEM = `is not a header name: 1–${MAX_HEADER_NAME_CHARS} of A-Z a-z 0-9 and !#$%&'*+.^_\`|~-`;
const headerName = v.pipe(v.string(HEADER_NAME_PROBLEM), v.maxLength(MAX_HEADER_NAME_CHARS, HEADER_NAME_PROBLEM), v.regex(HEADER_NAME, HEADER_NAME_PROBLEM));
/**
 * Extra request headers, name → value (docs/contract.md §18). Names are HTTP tokens, compared
 * without case: one name twice is refused, and so is every name the request sets itself or that
 * frames it (lib/webhook/custom-headers.ts). Each refusal names its header (`headers.Webhook-Id`).
 */
export const headers = v.pipe(
  v.custom<Record<string, unknown>>(
    (input) => typeof input === 'object' && input !== null && !Array.isArray(input),
    'must be an object of header name → value, e.g. {"X-Tenant": "acme"}',
  ),
  v.maxEntries(MAX_CUSTOM_HEADERS, `may have at most ${MAX_CUSTOM_HEADERS} headers`),
  // As for `match`: every own key is checked here first (valibot's record would drop __proto__,
  // constructor and prototype without a word, so they are refused), then the names the request
  // keeps for itself.
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const input = dataset.value;
    const seen = new Map<string, string>();
    for (const key of Object.keys(input)) {
      const checked = v.safeParse(headerName, key);
      const lower = key.toLowerCase();
      const problem = !checked.success
        ? checked.issues[0].message
        : FORBIDDEN_KEYS.has(key)
          ? 'is refused: a forbidden key (lib/event.ts), which no header needs'
          : (refusedHeaderProblem(key) ?? (seen.has(lower) ? `is the header ${quoted(seen.get(lower))} again: names are case-insensitive` : undefined));
      if (problem !== undefined) {
        addIssue({ message: problem, path: [{ type: 'object', origin: 'key', input, key, value: input[key] }] });
        return;
      }
      seen.set(lower, key);
    }
  }),
  v.record(headerName, headerValue),
  v.readonly(),
);
