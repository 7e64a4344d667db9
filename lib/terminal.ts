/**
 * Text for a terminal: nothing that came from outside (an event's keys, a receiver's response, a
 * ledger row, an endpoints file, a command-line argument) reaches one raw. The one definition of
 * what a terminal may act on, used by the `handoff` command (cli/format.ts, cli/main.ts), the
 * sandbox's every line on standard error (sandbox/counters.ts `Display`, sandbox/main.ts) and the
 * messages that quote input (`quoted`).
 */

/**
 * What a terminal may act on rather than show: C0 controls and DEL (ESC starts a sequence that can
 * set the window title or rewrite the screen), C1 controls U+0080–U+009F (CSI and OSC have
 * one-character forms some terminals obey), format characters (`\p{Cf}`: bidi controls such as
 * U+202E and U+2066 reorder what follows, U+200E/U+200F and U+061C too, zero-width characters hide
 * text), line and paragraph separators, and lone surrogates.
 */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}\u2028\u2029]/gu;

export interface SafeOptions {
  /** Keep `\n` (a block of output); otherwise it becomes a space (a cell, a one-line message). */
  readonly keepNewlines?: boolean;
}

/**
 * The one sanitiser of text for a terminal: every unsafe character becomes `?`, a tab a space,
 * and a newline a space unless `keepNewlines`. Idempotent.
 */
export function safe(text: string, options: SafeOptions = {}): string {
  return text.replace(UNSAFE, (c) => {
    if (c === '\n') return options.keepNewlines ? c : ' ';
    return c === '\t' ? ' ' : '?';
  });
}

/**
 * A value as a message quotes it: JSON (a string in double quotes) with every unsafe character a
 * `\uXXXX` escape, so the reader sees exactly what was given, on one line, and nothing in it acts
 * on the terminal. `JSON.stringify` alone leaves C1, DEL, bidi controls and U+2028/U+2029 raw.
 */
export function quoted(value: unknown): string {
  return escapeUnsafeInJson(JSON.stringify(value) ?? String(value));
}

/**
 * The same characters as `\uXXXX` escapes, for text that is JSON: the value is unchanged and the
 * text is inert on a terminal. Sound because in JSON text these characters can only occur inside
 * string literals (`JSON.stringify` escapes C0 itself; outside strings there is only ASCII, and
 * the pretty-printer's newlines, kept here).
 */
export function escapeUnsafeInJson(json: string): string {
  return json.replace(UNSAFE, (c) => (c === '\n' ? c : unicodeEscapes(c)));
}

/** `\uXXXX` per UTF-16 unit, so a character outside the BMP becomes its surrogate pair's escapes. */
function unicodeEscapes(c: string): string {
  let escaped = '';
  for (let i = 0; i < c.length; i++) escaped += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return escaped;
}
