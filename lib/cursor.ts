/**
 * Listing cursors (the ledger's listings, the registry's pages): a JSON position in base64url,
 * opaque to callers. Each listing checks the fields it reads back and refuses a cursor it did not issue.
 */

export function encodeCursorJson(position: Readonly<Record<string, unknown>>): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/** The position a cursor holds, or undefined when it is not base64url JSON of an object. */
export function cursorJson(cursor: string): Partial<Record<string, unknown>> | undefined {
  let position: unknown;
  try {
    position = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  return typeof position === 'object' && position !== null ? (position as Partial<Record<string, unknown>>) : undefined;
}
