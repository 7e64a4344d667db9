/**
 * The query parameters of the read routes (deliveries.ts, stats.ts), read and checked in one pass:
 * every bad one is named (`query.limit`, `query.since`) in one 400, as the command's options are
 * checked before anything is read. A parameter no route takes is refused too, so a misspelt filter
 * (`?endpiont=`) is never taken for no filter at all.
 */
import { isoTime } from '../../cli/commands/replay';
import type { JsonSchema } from '../../lib/endpoints/json-schema';
import { invalid, type FieldProblem } from '../problem';
import type { QueryParameter } from '../route';

/** Pages of the read listings: 1–100 (docs/contract.md §16), 25 when not given (the ledger's own page). */
export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 25;

export const LIMIT_PARAMETER: QueryParameter = {
  name: 'limit',
  description: `At most this many items (1–${MAX_LIMIT}; default ${DEFAULT_LIMIT})`,
  schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
};

export const CURSOR_PARAMETER: QueryParameter = {
  name: 'cursor',
  description: "The previous page's `next`, to read on from where it ended",
  schema: { type: 'string', minLength: 1, maxLength: 4096 },
};

/** An ISO 8601 time with its zone, or a date (UTC midnight), as `handoff replay --dead-since` takes it. */
export const ISO_TIME_SCHEMA: JsonSchema = {
  type: 'string',
  description: 'An ISO 8601 time with its zone (2026-12-01T10:00:00Z) or a date (2026-12-01, UTC)',
};

export class QueryReader {
  readonly #query: Readonly<Record<string, string | undefined>>;
  readonly #problems: FieldProblem[] = [];

  constructor(query: Readonly<Record<string, string | undefined>>, parameters: readonly QueryParameter[]) {
    this.#query = query;
    const known = new Set(parameters.map((p) => p.name));
    for (const name of Object.keys(query)) {
      if (!known.has(name)) this.#problems.push({ path: `query.${name}`, message: `is not a parameter of this operation (it takes ${[...known].join(', ') || 'none'})` });
    }
  }

  /** The text given, or undefined; an empty one is refused (`?endpoint=` is not "any endpoint"). */
  text(name: string, check?: { readonly pattern: RegExp; readonly message: string }): string | undefined {
    const value = this.#query[name];
    if (value === undefined) return undefined;
    if (value === '') return this.#refuse(name, 'is empty: leave it out instead');
    if (check !== undefined && !check.pattern.test(value)) return this.#refuse(name, check.message);
    return value;
  }

  /** `limit`, a whole number from 1 to MAX_LIMIT. */
  limit(): number {
    const value = this.#query.limit;
    if (value === undefined) return DEFAULT_LIMIT;
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < 1 || n > MAX_LIMIT) return this.#refuse('limit', `must be a whole number from 1 to ${MAX_LIMIT}`) ?? DEFAULT_LIMIT;
    return n;
  }

  /** One of `choices`. */
  choice<T extends string>(name: string, choices: readonly T[]): T | undefined {
    const value = this.text(name);
    if (value === undefined) return undefined;
    if (!(choices as readonly string[]).includes(value)) return this.#refuse(name, `must be one of ${choices.join(', ')}`);
    return value as T;
  }

  /** An ISO 8601 time as epoch ms (cli/commands/replay.ts `isoTime`). */
  time(name: string): number | undefined {
    const value = this.text(name);
    if (value === undefined) return undefined;
    try {
      return isoTime(value);
    } catch (error) {
      return this.#refuse(name, (error as Error).message);
    }
  }

  /** What `parse` makes of the text, or its RangeError's message as the problem. */
  parsed<T>(name: string, parse: (text: string) => T): T | undefined {
    const value = this.text(name);
    if (value === undefined) return undefined;
    try {
      return parse(value);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      return this.#refuse(name, error.message);
    }
  }

  /** Names a problem of two parameters together (`until` before `since`). */
  refuse(name: string, message: string): void {
    this.#refuse(name, message);
  }

  /** Names a problem of the path beside the query's (`path.eventId`), so one 400 names them all. */
  pathProblem(name: string, message: string): void {
    this.#problems.push({ path: `path.${name}`, message });
  }

  /** @throws ApiProblem 400 naming every bad parameter */
  done(): void {
    if (this.#problems.length > 0) throw invalid(this.#problems);
  }

  #refuse(name: string, message: string): undefined {
    this.#problems.push({ path: `query.${name}`, message });
    return undefined;
  }
}
