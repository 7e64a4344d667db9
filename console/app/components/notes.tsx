/** How the page shows a failure, and a bad field's messages next to the field. */
import { ApiError, errorText } from '../errors';

/**
 * A failed call: the API's problem title and detail (or the error's message), and each bad field's
 * message under it. A `div`, since a list may not sit inside a paragraph.
 */
export function ErrorNote({ error }: { error: Error | undefined }) {
  if (error === undefined) return null;
  return (
    <div class="error" role="alert">
      <p>{errorText(error)}</p>
      {error instanceof ApiError && error.errors.length > 0 ? (
        <ul>
          {error.errors.map((problem) => (
            <li key={problem.path}>
              <code>{problem.path}</code> {problem.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** The API's messages for one field (`path` as the API names it), for `aria-describedby`. */
export function FieldMessages({ error, path, id }: { error: Error | undefined; path: string; id: string }) {
  if (!(error instanceof ApiError)) return null;
  const messages = error.messagesFor(path);
  if (messages.length === 0) return null;
  return (
    <span class="field-error" id={id}>
      {messages.join('; ')}
    </span>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span class={`badge state-${state}`}>{state}</span>;
}
