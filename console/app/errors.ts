/**
 * A failure as the page holds and shows it: the API's problem document (RFC 9457) as an ApiError,
 * or any other error. Nothing here touches the DOM, so code that runs without a page (the replay
 * plan's unit test) can use it.
 */

/** One bad field of a 400: `path` as the API names it (`url`, `query.limit`, `events[2].type`). */
export interface FieldProblem {
  readonly path: string;
  readonly message: string;
}

export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly type: string,
    readonly title: string,
    readonly detail: string,
    readonly errors: readonly FieldProblem[],
  ) {
    super(detail || title || `the API answered ${status}`);
  }

  /** The messages for one field, as the API wrote them. */
  messagesFor(path: string): string[] {
    return this.errors.filter((error) => error.path === path).map((error) => error.message);
  }
}

/** Whatever was thrown, as an Error (a rejected promise may hold anything). */
export function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}

/** A failure in one line: the API's problem title and detail, or the error's message. */
export function errorText(error: unknown): string {
  if (error instanceof ApiError) return [error.title, error.detail].filter((part) => part !== '').join(': ');
  return toError(error).message;
}
