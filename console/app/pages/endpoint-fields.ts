/**
 * The endpoint form's fields, drawn from the API's own schema (pages/endpoint-form.tsx): the create
 * body's JSON Schema read from the OpenAPI document, each property a field of a kind, in the
 * schema's order; a value as the form holds it (text, or a list) and as the API takes it.
 */
import { api } from '../api';

/** A property of the create body, as far as the form reads JSON Schema. */
export interface PropertySchema {
  readonly type?: string | readonly string[];
  readonly enum?: readonly unknown[];
  readonly items?: PropertySchema;
  readonly description?: string;
  readonly default?: unknown;
  readonly minimum?: number;
  readonly maximum?: number;
}

export interface BodySchema {
  readonly properties: Readonly<Record<string, PropertySchema>>;
  readonly required?: readonly string[];
}

/** How a field is edited. */
export type Kind = 'text' | 'url' | 'integer' | 'choice' | 'yes-no' | 'choices' | 'numbers' | 'json';

export interface FieldDef {
  readonly name: string;
  readonly kind: Kind;
  readonly schema: PropertySchema;
  readonly required: boolean;
}

/**
 * Fields the form never shows: secrets (generated, or rotated on the endpoint's page), a rotation's
 * state, and an ed25519 endpoint's public key (handoff sets it from the key it generates).
 */
const HIDDEN = new Set(['secret', 'previousSecret', 'previousSecretUntil', 'publicKey']);
/** Shown first, in this order; every other field follows in the schema's order, under "Delivery settings". */
export const LEADING = ['name', 'url', 'eventTypes', 'owner', 'match'];
const LABELS: Readonly<Record<string, string>> = {
  name: 'Name',
  url: 'URL',
  eventTypes: 'Event types',
  owner: 'Owner',
  match: 'Match',
  retrySchedule: 'Retry schedule (seconds, comma-separated)',
  maxAttempts: 'Max attempts',
  attemptTimeoutMs: 'Attempt timeout (ms)',
  disableAfterSeconds: 'Disable after (seconds without an accepted request)',
  disableAfterFailures: 'Disable after (failed attempts)',
  rateLimitPerSecond: 'Rate limit (requests a second)',
  receiverRetentionSeconds: 'Receiver retention (seconds)',
  recovery: 'Recovery',
  ordering: 'Ordering',
  onDead: 'On dead',
  autoDisable: 'Auto-disable',
  // Objects, edited as JSON like headers: a secret in them is shown as {"secret": true}, which keeps it when sent back.
  auth: 'OAuth2 client credentials (JSON)',
  tls: 'Client certificate (JSON)',
};

export function labelOf(name: string): string {
  return LABELS[name] ?? name.replace(/([A-Z])/g, ' $1').replace(/^./, (c) => c.toUpperCase());
}

function typeOf(schema: PropertySchema): string | undefined {
  return Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : (schema.type as string | undefined);
}

function kindOf(name: string, schema: PropertySchema): Kind {
  const type = typeOf(schema);
  if (name === 'url') return 'url';
  if (schema.enum !== undefined && type === 'string') return 'choice';
  if (type === 'boolean') return 'yes-no';
  if (type === 'integer' || type === 'number') return 'integer';
  if (type === 'array' && schema.items?.enum !== undefined) return 'choices';
  if (type === 'array' && (typeOf(schema.items ?? {}) === 'integer' || typeOf(schema.items ?? {}) === 'number')) return 'numbers';
  if (type === 'string') return 'text';
  return 'json';
}

/** The form's fields, read off the create body's schema. */
export function fieldsOf(schema: BodySchema): FieldDef[] {
  const names = Object.keys(schema.properties).filter((name) => !HIDDEN.has(name));
  const ordered = [...LEADING.filter((name) => names.includes(name)), ...names.filter((name) => !LEADING.includes(name))];
  return ordered.map((name) => {
    const property = schema.properties[name]!;
    return { name, kind: kindOf(name, property), schema: property, required: schema.required?.includes(name) === true };
  });
}

/** The create body's schema in the API's OpenAPI document. */
export async function loadSchema(): Promise<BodySchema> {
  const document = await api.get<{ paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: BodySchema }> } }>> }>(
    '/v1/openapi.json',
  );
  const schema = document.paths?.['/v1/endpoints']?.post?.requestBody?.content?.['application/json']?.schema;
  if (schema?.properties === undefined) throw new Error("the API's OpenAPI document describes no body for POST /v1/endpoints");
  return schema;
}

/** A form value: text for one input, the ticked options for a set of checkboxes. */
export type Value = string | readonly string[];
export type Values = Readonly<Record<string, Value>>;

/** A field's value as the form holds it, from the value the API answers. */
export function formValue(field: FieldDef, value: unknown): Value {
  if (field.kind === 'choices') return Array.isArray(value) ? value.map(String) : [];
  if (value === undefined || value === null) return '';
  if (field.kind === 'numbers') return Array.isArray(value) ? value.join(', ') : String(value);
  if (field.kind === 'json') return typeof value === 'object' && Object.keys(value as object).length === 0 ? '' : JSON.stringify(value);
  return String(value);
}

/**
 * What the API is sent for a field, from what the form holds; undefined for nothing. Text the page
 * cannot read as the field's type (a list with a word in it, JSON that does not parse) is sent as it
 * is, for the API to refuse in its own words.
 */
export function bodyValue(field: FieldDef, value: Value): unknown {
  if (field.kind === 'choices') return value;
  const text = value as string;
  if (text.trim() === '') return undefined;
  switch (field.kind) {
    case 'integer':
      return Number.isFinite(Number(text)) ? Number(text) : text;
    case 'yes-no':
      return text === 'true' ? true : text === 'false' ? false : text;
    case 'numbers': {
      const parts = text.split(/[\s,]+/).filter((part) => part !== '');
      return parts.map((part) => (Number.isFinite(Number(part)) ? Number(part) : part));
    }
    case 'json':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    default:
      return text;
  }
}

export function same(a: Value, b: Value): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
