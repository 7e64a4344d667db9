/**
 * The JSON Schemas of the endpoint routes (api/routes/endpoints.ts): what they take, read off the
 * fields table as the command's checks are (lib/endpoints/json-schema.ts), and what they answer,
 * the exact shape of the command's `--json` (cli/commands/endpoint-view.ts `endpointJson`), so the
 * command and the API print one endpoint alike. The OpenAPI document is generated from these.
 */
import { MAX_PAGE_LIMIT } from '../../lib/endpoints/dynamodb-registry-listing';
import { ENDPOINT_STATES } from '../../lib/endpoints/endpoint';
import { OWNER, SIGNATURE_SCHEMES } from '../../lib/endpoints/field-schemas';
import { CLEARABLE_FIELDS, SETTING_NAMES } from '../../lib/endpoints/fields';
import { endpointJsonSchema, type JsonSchema } from '../../lib/endpoints/json-schema';
import { REASON_MAX_CHARS } from '../../lib/replay';
import { MAX_OVERLAP_MS } from '../../cli/commands/endpoint-secret';
import { MAX_RESUME_RATE } from '../../cli/commands/endpoint-state';
import { DEFAULT_RESUME_RATE } from '../../lib/resume';

/** Endpoints a page of `GET /v1/endpoints` holds unless `limit` says otherwise. */
export const DEFAULT_PAGE_LIMIT = 20;
/** The overlap of `rotate-secret` unless `overlapSeconds` says otherwise: the command's default, 24 h. */
export const DEFAULT_OVERLAP_SECONDS = 24 * 60 * 60;
export const MAX_OVERLAP_SECONDS = MAX_OVERLAP_MS / 1000;

const FIELDS = endpointJsonSchema();

/**
 * A schema with no object shared between its parts: validators that replace a repeated reference
 * with a `$ref` (openapi-backend's decycle) would otherwise break a shared `type: [..]` list.
 */
export function unshared<T extends JsonSchema>(schema: T): T {
  return JSON.parse(JSON.stringify(schema)) as T;
}
const FIELD_PROPERTIES = FIELDS.properties as Record<string, JsonSchema>;
const isoTime: JsonSchema = { type: 'string', format: 'date-time' };
const isoTimeOrNull: JsonSchema = { type: ['string', 'null'], format: 'date-time' };

/** `POST /v1/endpoints`: an endpoint's fields, as `endpoint add --from-file` takes them. */
export const CREATE_BODY_SCHEMA: JsonSchema = (() => {
  const { $schema: _dialect, ...schema } = FIELDS;
  return {
    ...schema,
    description: `${String(schema.description)} Without a secret, one is generated and shown in the answer, once.`,
  };
})();

/** A secret header's value as every answer shows it, and as an update may send it back to keep it. */
const SECRET_HEADER_SHOWN: JsonSchema = {
  type: 'object',
  required: ['secret'],
  properties: { secret: { const: true } },
  additionalProperties: false,
  description: 'a secret value, never shown',
};

/** `headers` as an update takes it: each value as `add` takes one, or `{"secret": true}` to keep the secret value the header has. */
function headersToUpdate(schema: JsonSchema): JsonSchema {
  const value = schema.additionalProperties as JsonSchema;
  return {
    ...schema,
    description: `${String(schema.description)}; {"secret": true} (as answers show a secret value) keeps the value the header has`,
    additionalProperties: { anyOf: [...(value.anyOf as JsonSchema[]), { ...SECRET_HEADER_SHOWN, description: 'keeps the secret value this header has' }] },
  };
}

/**
 * `auth` or `tls` as an update takes it: as `add` takes it, or with `{"secret": true}` in place of a
 * secret value (`clientSecret`, `privateKey`: as answers show one) to keep the value it has.
 */
function secretValuesToUpdate(schema: JsonSchema, keys: readonly string[]): JsonSchema {
  const properties = schema.properties as Record<string, JsonSchema>;
  return {
    ...schema,
    description: `${String(schema.description)}; {"secret": true} in place of ${keys.join(' or ')} (as answers show a secret value) keeps the value it has`,
    properties: {
      ...properties,
      ...Object.fromEntries(keys.map((key) => [key, { anyOf: [properties[key], { ...SECRET_HEADER_SHOWN, description: 'keeps the secret value this has' }] }])),
    },
  };
}

/** A URL as an update takes it: as answers show it (redacted), it keeps the URL it has (cli/commands/endpoint-write.ts). */
function urlToUpdate(schema: JsonSchema, what: string): JsonSchema {
  return { ...schema, description: `${String(schema.description)}; ${what} as answers show it (redacted) keeps the one it has; one edited from that form, *** left in it, is refused` };
}

/** What an update takes for each field beside what `add` does: `{"secret": true}` to keep a secret value, a URL as shown to keep it. */
const TO_UPDATE: Readonly<Record<string, (schema: JsonSchema) => JsonSchema>> = {
  headers: headersToUpdate,
  url: (schema) => urlToUpdate(schema, 'a URL'),
  auth: (schema) => urlToUpdate(secretValuesToUpdate(schema, ['clientSecret']), 'tokenUrl'),
  tls: (schema) => secretValuesToUpdate(schema, ['privateKey']),
};

/**
 * `PATCH /v1/endpoints/{name}`: the fields to change, each as `add` takes it; `null` unsets an
 * optional field (`endpoint update --clear`), so the deployment's default applies. The name may be
 * given only as it is: an endpoint is not renamed.
 */
export const UPDATE_BODY_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'The fields to change; those not given are kept. null unsets an optional field (its default applies again).',
  properties: Object.fromEntries(
    Object.entries(FIELD_PROPERTIES).map(([name, given]) => {
      const schema = Object.hasOwn(TO_UPDATE, name) ? TO_UPDATE[name]!(given) : given;
      const { description, default: _default, ...rest } = schema;
      const clearable = (CLEARABLE_FIELDS as readonly string[]).includes(name);
      return [name, clearable ? { description, anyOf: [rest, { type: 'null' }] } : schema];
    }),
  ),
  additionalProperties: false,
  minProperties: 1,
};

export const DISABLE_BODY_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['reason'],
  properties: { reason: { type: 'string', minLength: 1, maxLength: REASON_MAX_CHARS, description: 'why: kept with the endpoint, with the caller as who' } },
  additionalProperties: false,
};

export const ENABLE_BODY_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    reason: { type: 'string', minLength: 1, maxLength: REASON_MAX_CHARS, description: 'why (default: "enabled by an operator")' },
    rate: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_RESUME_RATE,
      default: DEFAULT_RESUME_RATE,
      description: 'the most parked deliveries released per second (the release ramps up to it)',
    },
  },
  additionalProperties: false,
};

export const ROTATE_BODY_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    overlapSeconds: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_OVERLAP_SECONDS,
      default: DEFAULT_OVERLAP_SECONDS,
      description: 'how long the old secret keeps signing beside the new one; 0 switches at once',
    },
    signature: {
      type: 'string',
      enum: [...SIGNATURE_SCHEMES],
      description: "the new secret's scheme, which the endpoint signs with from now (default: the endpoint's); the old secret signs beside it through the overlap, whatever its scheme",
    },
  },
  additionalProperties: false,
};

const HEALTH_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'Back-pressure and failures as the consumers last wrote them',
  required: ['paused', 'pausedUntil', 'failures', 'failingSince', 'lastAcceptedAt'],
  properties: {
    paused: { type: 'boolean' },
    pausedUntil: isoTimeOrNull,
    failures: { type: 'integer', minimum: 0 },
    failingSince: isoTimeOrNull,
    lastAcceptedAt: isoTimeOrNull,
  },
  additionalProperties: false,
};

/** A setting's value as the endpoint gives it (its field's schema, without its default). */
function settingSchema(name: string): JsonSchema {
  const { default: _default, ...schema } = FIELD_PROPERTIES[name]!;
  return schema;
}

const SETTINGS_SCHEMA: JsonSchema = {
  type: 'object',
  description: "The endpoint's own settings (one left out: the deployment's default applies)",
  properties: Object.fromEntries(SETTING_NAMES.map((name) => [name, settingSchema(name)])),
  additionalProperties: false,
};

/** A secret value of `auth` or `tls` as answers show it: `{"secret": true}`, or where it is kept. */
function shownSecretValue(): JsonSchema {
  return { anyOf: [{ ...SECRET_HEADER_SHOWN }, secretArnObject()] };
}

/** A certificate as answers show it: the PEM, or where it is kept. */
function shownPem(): JsonSchema {
  return { anyOf: [{ type: 'string' }, secretArnObject()] };
}

function secretArnObject(): JsonSchema {
  return { type: 'object', required: ['secretArn'], properties: { secretArn: { type: 'string' } }, additionalProperties: false };
}

const ENDPOINT_PROPERTIES: Record<string, JsonSchema> = {
  name: { type: 'string' },
  url: { type: 'string', description: 'redacted: its query and any credentials hidden' },
  state: { type: 'string', enum: [...ENDPOINT_STATES] },
  eventTypes: { type: 'array', items: { type: 'string' } },
  match: { type: 'object', additionalProperties: { type: 'array', items: { type: ['string', 'number', 'boolean'] } } },
  owner: { type: ['string', 'null'], pattern: OWNER.source },
  secret: { type: 'string', enum: ['set', 'unset'], description: 'whether it signs; never the secret itself' },
  publicKey: {
    type: ['string', 'null'],
    pattern: (FIELD_PROPERTIES.publicKey as { pattern: string }).pattern,
    description: "an ed25519 secret's public key (whpk_…): what the receiver verifies v1a signatures with; null for an HMAC secret",
  },
  headers: {
    type: 'object',
    description: 'its extra request headers: a text value as it is, a secret one as {"secret": true}',
    additionalProperties: { anyOf: [{ type: 'string' }, SECRET_HEADER_SHOWN] },
  },
  auth: {
    description: 'its OAuth2 client-credentials grant (docs/contract.md §18): the token URL redacted as url is, the client secret as {"secret": true} or its Secrets Manager ARN; null without one',
    anyOf: [
      { type: 'null' },
      {
        type: 'object',
        required: ['type', 'tokenUrl', 'clientId', 'clientSecret'],
        properties: {
          type: { type: 'string' },
          tokenUrl: { type: 'string' },
          clientId: { type: 'string' },
          clientSecret: shownSecretValue(),
          scope: { type: 'string' },
          audience: { type: 'string' },
        },
        additionalProperties: false,
      },
    ],
  },
  tls: {
    description: 'its client certificate (docs/contract.md §18): the certificate and CA as given (PEM, or a Secrets Manager ARN), the key as {"secret": true} or its ARN; null without one',
    anyOf: [
      { type: 'null' },
      {
        type: 'object',
        required: ['clientCertificate', 'privateKey'],
        properties: { clientCertificate: shownPem(), privateKey: shownSecretValue(), ca: shownPem() },
        additionalProperties: false,
      },
    ],
  },
  previousSecretUntil: { ...isoTimeOrNull, description: "while a rotation's overlap lasts: when the previous secret stops signing" },
  parked: { type: ['integer', 'null'], minimum: 0, description: 'deliveries parked for it; null when not counted (no ledger table)' },
  health: HEALTH_SCHEMA,
  stateChange: {
    description: 'the last change of state: who (the caller), why, when; null while it was never disabled',
    anyOf: [
      { type: 'null' },
      {
        type: 'object',
        required: ['by', 'reason', 'at'],
        properties: { by: { type: 'string' }, reason: { type: 'string' }, at: isoTime },
        additionalProperties: false,
      },
    ],
  },
  settings: SETTINGS_SCHEMA,
  createdAt: isoTime,
  updatedAt: isoTime,
};

/** An endpoint as every route answers it (`endpointJson`): never its secret, its URL redacted. */
export const ENDPOINT_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'An endpoint (docs/contract.md §11): never its secret, its URL redacted',
  required: Object.keys(ENDPOINT_PROPERTIES),
  properties: ENDPOINT_PROPERTIES,
  additionalProperties: false,
};

/** A release of parked deliveries in progress (`releaseJson`), or null. */
const RELEASE_SCHEMA: JsonSchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      required: ['since', 'rate', 'rateNow', 'scheduledUntil'],
      properties: { since: isoTime, rate: { type: 'integer' }, rateNow: { type: 'number' }, scheduledUntil: isoTimeOrNull },
      additionalProperties: false,
    },
  ],
};

/** `endpointJson` with more properties. */
function endpointWith(properties: Record<string, JsonSchema>, required: readonly string[] = Object.keys(properties)): JsonSchema {
  return {
    ...ENDPOINT_SCHEMA,
    required: [...(ENDPOINT_SCHEMA.required as string[]), ...required],
    properties: { ...ENDPOINT_PROPERTIES, ...properties },
  };
}

/**
 * An answer to a POST (kept for `Idempotency-Key` repeats, api/idempotency.ts): a repeat is the
 * first answer with its `secret` taken out and `secretShown: true` in its place, so either form.
 */
function repeatable(schema: JsonSchema): JsonSchema {
  return {
    ...schema,
    required: (schema.required as string[]).filter((name) => name !== 'secret'),
    properties: { ...(schema.properties as Record<string, JsonSchema>), secretShown: { const: true, description: 'a repeat: the secret was shown in the first answer' } },
    oneOf: [{ required: ['secret'] }, { required: ['secretShown'] }],
  };
}

const SIGNING_SECRET: JsonSchema = {
  type: 'string',
  description: "its signing secret (whsec_…, or an ed25519 key whsk_…, whose public key is `publicKey`), shown this once; 'set' when the secret is kept in Secrets Manager (its ARN given)",
};

/** `GET /v1/endpoints/{name}`: as `endpoint show --json`. */
export const ENDPOINT_DETAIL_SCHEMA = endpointWith(
  {
    release: RELEASE_SCHEMA,
    effective: {
      description: 'every setting in effect against the deployment (null: none); null when it cannot be used (problem says why)',
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          properties: Object.fromEntries(SETTING_NAMES.map((name) => [name, { anyOf: [settingSchema(name), { type: 'null' }] }])),
          required: [...SETTING_NAMES],
          additionalProperties: false,
        },
      ],
    },
    problem: { type: 'string', description: 'why it cannot be used with the deployment, when it cannot' },
    settingsFrom: { type: 'string', description: 'where the deployment settings it was checked against came from' },
  },
  ['release', 'effective', 'settingsFrom'],
);

/** `POST /v1/endpoints`: the endpoint and its signing secret, the one time it is shown. */
export const CREATED_SCHEMA = repeatable(endpointWith({ secret: SIGNING_SECRET }, []));

/** `PATCH`: the endpoint and the fields that changed (none: nothing was written). */
export const UPDATED_SCHEMA = endpointWith({ changed: { type: 'array', items: { type: 'string' } } });

/** `disable`: the endpoint. */
export const STATE_SCHEMA = repeatable(ENDPOINT_SCHEMA);

/** `enable`: the endpoint and the release of its parked deliveries it began. */
export const ENABLED_SCHEMA = repeatable(endpointWith({ release: RELEASE_SCHEMA }));

/** `rotate-secret`: the endpoint (`previousSecretUntil`: the overlap's end) and its new secret, shown once. */
export const ROTATED_SCHEMA = repeatable(endpointWith({ secret: { type: 'string', description: 'the new signing secret (whsec_…, or whsk_…: its public key is `publicKey`), shown this once' } }, []));

export const TEST_SENT_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['eventId'],
  properties: { eventId: { type: 'string', description: 'the test event’s ID: GET /v1/events/{eventId} follows its delivery' } },
  additionalProperties: false,
};

/** `GET /v1/endpoints`: a page. */
export const ENDPOINT_PAGE_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['items', 'next'],
  properties: {
    items: { type: 'array', items: ENDPOINT_SCHEMA },
    next: { type: ['string', 'null'], description: 'the cursor of the next page; null on the last' },
  },
  additionalProperties: false,
};

export const LIST_LIMITS = { min: 1, max: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT } as const;
