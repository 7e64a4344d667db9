/**
 * An endpoint as JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1), read off the fields
 * table (fields.ts): each field's type and limits from its valibot schema, its doc, its default;
 * the required fields and no others; the fields that go together. What JSON Schema cannot say stays
 * with parseEndpointFields and resolveEndpoint: a secret the signer refuses, a previous secret the
 * same as the secret, and the rules against the deployment's settings (the endpoint guard, the
 * attempt timeout, the retry window).
 */
import type { FieldSchema } from './field-schemas';
import { FIELD_NAMES, FIELD_SPECS, type FieldSpec } from './fields';

export type JsonSchema = { [keyword: string]: unknown };

/** A schema or an action of a valibot pipe, as far as this file reads it. */
interface PipeItem {
  readonly kind: string;
  readonly type: string;
  readonly requirement?: unknown;
  readonly options?: readonly unknown[];
  readonly item?: FieldSchema;
  readonly key?: FieldSchema;
  readonly value?: FieldSchema;
  readonly entries?: Readonly<Record<string, FieldSchema>>;
  readonly pipe?: readonly PipeItem[];
}

/**
 * What JSON Schema has no keyword for: checks only valibot runs (a custom check, the signer's) and
 * the shape of the output (read-only, duplicates dropped). Anything else unknown is refused, so a
 * field whose schema says more than its JSON Schema would is noticed, not described short.
 */
const UNSAID = new Set(['custom', 'check', 'raw_check', 'finite', 'readonly', 'transform']);

/** The JSON Schema of one valibot schema of the kinds endpoint fields are made of. @throws Error for any other */
export function jsonSchemaOf(schema: FieldSchema): JsonSchema {
  const items = ((schema as PipeItem).pipe ?? [schema]) as readonly PipeItem[];
  const out: JsonSchema = {};
  for (const item of items) describe(out, item);
  return out;
}

/** The JSON Schema of an endpoint's fields, as `endpoint add --from-file`, the endpoints file and the registry take them. */
export function endpointJsonSchema(): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const name of FIELD_NAMES) {
    const spec = FIELD_SPECS[name];
    const fallback = spec.default;
    properties[name] = {
      ...jsonSchemaOf(spec.schema),
      description: describeField(spec),
      ...(typeof fallback === 'object' ? { default: fallback.value } : {}),
    };
  }
  const together = FIELD_NAMES.filter((name) => FIELD_SPECS[name].requires !== undefined);
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'Endpoint',
    description: 'A receiver of events, what it subscribes to and how it is delivered to (docs/contract.md §11).',
    type: 'object',
    properties,
    required: FIELD_NAMES.filter((name) => FIELD_SPECS[name].required === true),
    additionalProperties: false,
    dependentRequired: Object.fromEntries(together.map((name) => [name, FIELD_SPECS[name].requires!.map(([needed]) => needed)])),
  };
}

function describeField(spec: FieldSpec): string {
  if (spec.default === 'deployment') return `${spec.doc}; unset: the deployment's`;
  if (spec.default === 'none') return `${spec.doc}; unset: none`;
  return spec.doc;
}

function describe(out: JsonSchema, item: PipeItem): void {
  if (item.kind === 'schema' && item.pipe !== undefined) {
    Object.assign(out, jsonSchemaOf(item as unknown as FieldSchema));
    return;
  }
  const requirement = item.requirement;
  switch (item.type) {
    case 'string':
    case 'number':
    case 'integer':
    case 'boolean':
      out.type = item.type;
      return;
    case 'picklist': {
      const options = [...(item.options ?? [])];
      const types = new Set(options.map((option) => typeof option));
      if (types.size === 1) out.type = [...types][0];
      out.enum = options;
      return;
    }
    case 'array':
      out.type = 'array';
      out.items = jsonSchemaOf(item.item!);
      return;
    case 'strict_object': {
      // An optional entry (`auth.scope`) is its wrapped schema, left out of `required`.
      const entries = Object.entries(item.entries ?? {}).map(([key, schema]) => {
        const optional = (schema as unknown as PipeItem).type === 'optional';
        return { key, optional, schema: optional ? (schema as unknown as { wrapped: FieldSchema }).wrapped : schema };
      });
      out.type = 'object';
      out.properties = Object.fromEntries(entries.map(({ key, schema }) => [key, jsonSchemaOf(schema)]));
      out.required = entries.filter(({ optional }) => !optional).map(({ key }) => key);
      out.additionalProperties = false;
      return;
    }
    case 'record': {
      const { type: _string, ...key } = jsonSchemaOf(item.key!);
      out.type = 'object';
      out.propertyNames = key;
      out.additionalProperties = jsonSchemaOf(item.value!);
      return;
    }
    case 'union': {
      const options = (item.options as FieldSchema[]).map(jsonSchemaOf);
      const types = new Set(options.map((option) => option.type));
      if (types.size === 1 && !types.has(undefined)) {
        out.type = options[0]!.type;
        out.anyOf = options.map(({ type: _same, ...rest }) => rest);
      } else {
        out.anyOf = options;
      }
      return;
    }
    case 'min_value':
      out.minimum = requirement;
      return;
    case 'max_value':
      out.maximum = requirement;
      return;
    case 'min_length':
      out[out.type === 'array' ? 'minItems' : 'minLength'] = requirement;
      return;
    case 'max_length':
      out[out.type === 'array' ? 'maxItems' : 'maxLength'] = requirement;
      return;
    case 'max_entries':
      out.maxProperties = requirement;
      return;
    case 'regex':
      addPattern(out, requirement as RegExp);
      return;
    case 'starts_with':
      addPattern(out, new RegExp(`^${String(requirement).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      return;
    default:
      if (UNSAID.has(item.type)) return;
      throw new Error(`no JSON Schema for valibot's ${item.type}: describe it in lib/endpoints/json-schema.ts`);
  }
}

/** A schema holds one `pattern`; each further one goes in `allOf`. */
function addPattern(out: JsonSchema, regex: RegExp): void {
  if (regex.flags !== '') throw new Error(`no JSON Schema for the flags of ${regex}: a pattern has none`);
  if (out.pattern === undefined) out.pattern = regex.source;
  else out.allOf = [...((out.allOf as JsonSchema[] | undefined) ?? []), { pattern: regex.source }];
}
