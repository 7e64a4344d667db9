/**
 * The events of a `POST /v1/events` body as the text they were sent as. Each event is checked by
 * `handoff send`'s own parser (lib/event.ts `parseEvent`), which reads text, not values: a number
 * JSON.parse has already rounded (`0.1000000000000000055511151231257827` is 0.1 once parsed)
 * would pass unnoticed if the event were written out again, and the payload limit is of the bytes
 * sent. So each event's own text is cut from the body, as `send` takes each NDJSON line.
 *
 * Only called on a body JSON.parse has accepted: the scan relies on it being well-formed JSON.
 */

/**
 * The text of each element of the top-level object's `events` array (the last `events` member,
 * as JSON.parse keeps the last), or undefined when it has none or it is not an array.
 */
export function eventTexts(body: string): string[] | undefined {
  let i = skipSpace(body, 0);
  if (body[i] !== '{') return undefined;
  i = skipSpace(body, i + 1);
  let found: string[] | undefined;
  while (i < body.length && body[i] !== '}') {
    const keyEnd = afterString(body, i);
    const key = JSON.parse(body.slice(i, keyEnd)) as string;
    i = skipSpace(body, keyEnd);
    i = skipSpace(body, i + 1); // the colon
    const valueEnd = afterValue(body, i);
    if (key === 'events') found = body[i] === '[' ? elementTexts(body, i) : undefined;
    i = skipSpace(body, valueEnd);
    if (body[i] === ',') i = skipSpace(body, i + 1);
  }
  return found;
}

/** The text of each element of the array that opens at `open`. */
function elementTexts(body: string, open: number): string[] {
  const texts: string[] = [];
  let i = skipSpace(body, open + 1);
  while (i < body.length && body[i] !== ']') {
    const end = afterValue(body, i);
    texts.push(body.slice(i, end));
    i = skipSpace(body, end);
    if (body[i] === ',') i = skipSpace(body, i + 1);
  }
  return texts;
}

/** The index just past the value that starts at `start`. */
function afterValue(body: string, start: number): number {
  const c = body[start];
  if (c === '"') return afterString(body, start);
  if (c === '{' || c === '[') {
    let depth = 0;
    let i = start;
    while (i < body.length) {
      const d = body[i];
      if (d === '"') {
        i = afterString(body, i);
        continue;
      }
      if (d === '{' || d === '[') depth += 1;
      else if (d === '}' || d === ']') {
        depth -= 1;
        if (depth === 0) return i + 1;
      }
      i += 1;
    }
    return i;
  }
  // A number, true, false or null: up to the next delimiter.
  let i = start;
  while (i < body.length && !/[\s,\]}]/.test(body[i]!)) i += 1;
  return i;
}

/** The index just past the string that opens at `open` (a `"` after an even run of backslashes closes it). */
function afterString(body: string, open: number): number {
  let from = open + 1;
  for (;;) {
    const close = body.indexOf('"', from);
    if (close === -1) return body.length;
    let backslashes = 0;
    while (body.charCodeAt(close - 1 - backslashes) === 0x5c /* backslash */) backslashes += 1;
    if (backslashes % 2 === 0) return close + 1;
    from = close + 1;
  }
}

function skipSpace(body: string, from: number): number {
  let i = from;
  while (i < body.length && (body[i] === ' ' || body[i] === '\t' || body[i] === '\n' || body[i] === '\r')) i += 1;
  return i;
}
