/**
 * The options of `endpoint add` and `update`: one for each field of lib/endpoints/fields.ts that
 * has one, its help from the field's doc and default. How its text becomes the field's value is
 * read off the field's JSON Schema (a whole number, a list, a choice, a flag); a number that is not
 * whole stays text, for the field's own check to name. A field of another shape (`match`) says here
 * how it is written.
 */
// Options are made by the command they belong to (`createOption`): this file, which the management
// API's use cases import for the fields' reading, loads no CLI framework of its own.
import type { Command } from 'commander';
import { CLEARABLE_FIELDS, FIELD_NAMES, FIELD_SPECS, type FieldName } from '../../lib/endpoints/fields';
import { jsonSchemaOf } from '../../lib/endpoints/json-schema';
import { quoted } from '../../lib/terminal';
import { UsageError } from '../errors';

type Given = string | boolean | readonly string[];

/** Options of `add` and `update`, as commander parses them: each field's under its name. */
export type EndpointFieldOptions = { readonly [K in FieldName]?: Given } & {
  readonly unsigned?: boolean;
  readonly fromFile?: string;
  readonly clear?: readonly string[];
};

interface OptionKind {
  /** The field's value from what commander gives (undefined: no value). */
  readonly read: (given: Given) => unknown;
  readonly choices?: readonly string[];
  readonly repeatable?: boolean;
  readonly flag?: boolean;
  readonly list?: boolean;
}

/** Fields whose options are written another way than their JSON Schema says. */
const WRITTEN: Partial<Record<FieldName, OptionKind>> = {
  match: { read: (given) => (Array.isArray(given) && given.length > 0 ? matchFromOptions(given) : undefined), repeatable: true },
  headers: { read: (given) => (Array.isArray(given) && given.length > 0 ? headersFromOptions(given) : undefined), repeatable: true },
};

function kindOf(name: FieldName): OptionKind {
  const written = WRITTEN[name];
  if (written !== undefined) return written;
  const schema = jsonSchemaOf(FIELD_SPECS[name].schema);
  const items = schema.items as { type?: unknown } | undefined;
  if (schema.type === 'boolean') return { read: (given) => given, flag: true };
  if (schema.type === 'integer') return { read: (given) => wholeOrText(String(given)) };
  if (schema.type === 'array' && items?.type === 'integer') return { read: (given) => list(String(given)).map(wholeOrText), list: true };
  if (schema.type === 'array') return { read: (given) => list(String(given)), list: true };
  if (schema.type === 'string') return { read: (given) => given, ...(Array.isArray(schema.enum) ? { choices: schema.enum as string[] } : {}) };
  throw new Error(`the option of endpoint field ${name} (${String(schema.type)}) needs its reading in cli/commands/endpoint-options.ts`);
}

const OPTION_FIELDS = FIELD_NAMES.filter((name) => FIELD_SPECS[name].cli !== undefined);
const KINDS = Object.fromEntries(OPTION_FIELDS.map((name) => [name, kindOf(name)])) as Record<FieldName, OptionKind>;

/** The options of add and update: each field's, then --from-file (and update's --clear). */
export function fieldOptions(command: Command, mode: 'add' | 'update'): Command {
  for (const name of OPTION_FIELDS) {
    const spec = FIELD_SPECS[name];
    const kind = KINDS[name];
    const option = command.createOption(spec.cli!.flag, helpOf(name, kind));
    // commander keys each option by its flag: the flag must name the field.
    if (option.attributeName() !== name) throw new Error(`${spec.cli!.flag} is not the option of endpoint field ${name}`);
    if (kind.choices !== undefined) option.choices(kind.choices);
    if (kind.repeatable) option.argParser(collect);
    // An endpoint cannot be renamed: update takes the name as its argument.
    if (name === 'name' && mode === 'update') option.hideHelp();
    command.addOption(option);
    if (kind.flag) command.addOption(command.createOption(`--no-${option.long!.slice(2)}`, spec.cli!.off ?? `the opposite of ${option.long}`));
    if (name === 'secret') command.option('--unsigned', 'add it without a signing secret (requests are not signed)');
  }
  command.option('--from-file <path>', 'the fields as a JSON object (options given override them)');
  if (mode === 'update') {
    command.option('--clear <field>', `unset an optional field, so the deployment's default applies (repeatable): ${CLEARABLE_FIELDS.join(', ')}`, collect);
  }
  return command;
}

function helpOf(name: FieldName, kind: OptionKind): string {
  const spec = FIELD_SPECS[name];
  const fallback = spec.default;
  const notes = [
    ...(kind.list ? ['comma-separated'] : []),
    ...(fallback === 'deployment' ? ["default: the deployment's"] : []),
    ...(typeof fallback === 'object' && fallback.value === true ? ['the default'] : []),
    ...(typeof fallback === 'object' && typeof fallback.value !== 'boolean' ? [`default: ${String(fallback.value)}`] : []),
  ];
  const help = spec.cli?.help === undefined ? spec.doc : `${spec.doc}; ${spec.cli.help}`;
  return notes.length === 0 ? help : `${help} (${notes.join('; ')})`;
}

/** The fields the options give; numbers that are not whole are left as text for the field's check to name. */
export function fieldsFromOptions(options: EndpointFieldOptions): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const name of OPTION_FIELDS) {
    const given = options[name];
    if (given === undefined) continue;
    const value = KINDS[name].read(given);
    if (value !== undefined) fields[name] = value;
  }
  return fields;
}

/** `update --clear`'s fields. @throws UsageError naming one that cannot be cleared */
export function clearedFields(given: readonly string[] | undefined): string[] {
  const fields = [...(given ?? [])];
  for (const field of fields) {
    if (!(CLEARABLE_FIELDS as readonly string[]).includes(field)) throw new UsageError(`--clear ${quoted(field)}: not an optional field (${CLEARABLE_FIELDS.join(', ')})`);
  }
  return fields;
}

/**
 * `--match 'data.carrier=acme,zephyr'` (repeatable): each a field and its accepted values, as text.
 * Every key is kept as given, an own property even when it is `__proto__`, for `parseEndpointFields`
 * to accept or refuse exactly as it does the endpoints file's (lib/endpoints/field-schemas.ts).
 */
export function matchFromOptions(given: readonly string[]): Record<string, string[]> {
  const match = new Map<string, string[]>();
  for (const item of given) {
    const equals = item.indexOf('=');
    if (equals <= 0) throw new UsageError(`--match ${quoted(item)}: write FIELD=VALUE[,VALUE…], e.g. data.carrier=acme,zephyr`);
    const key = item.slice(0, equals).trim();
    const values = list(item.slice(equals + 1));
    if (values.length === 0) throw new UsageError(`--match ${quoted(item)}: give at least one value after =`);
    if (match.has(key)) throw new UsageError(`--match names ${key} twice: give its values once, comma-separated`);
    match.set(key, values);
  }
  // Assigning `match['__proto__']` would set the object's prototype instead: no key, no filter.
  return Object.fromEntries(match);
}

/**
 * `--headers 'X-Tenant: acme'` (repeatable): each a header's name and its value as text, split at
 * the first colon (no header name holds one). Names and values are checked by the field, as the
 * endpoints file's are; a secret value is given in --from-file, never on a command line.
 */
export function headersFromOptions(given: readonly string[]): Record<string, string> {
  const headers = new Map<string, string>();
  for (const item of given) {
    const colon = item.indexOf(':');
    if (colon <= 0) throw new UsageError(`--headers takes 'NAME: VALUE', e.g. 'X-Tenant: acme' (what was given is not shown: it may hold a secret)`);
    const name = item.slice(0, colon).trim();
    if (headers.has(name)) throw new UsageError(`--headers names ${quoted(name)} twice: give it once`);
    headers.set(name, item.slice(colon + 1).trim());
  }
  // As --match: every name an own key, `__proto__` too, for the field to refuse in its own words.
  return Object.fromEntries(headers);
}

function list(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function wholeOrText(text: string): number | string {
  return /^\d{1,15}$/.test(text.trim()) ? Number(text.trim()) : text;
}

export function collect(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
