/**
 * Nothing from outside reaches the operator's terminal raw: the sanitiser, the quoting and the
 * JSON escaping of lib/terminal.ts, `main` writing every stream through them, and the sandbox's
 * `Display` every line.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { describeFailure } from '../../cli/errors';
import { jsonText, keyValues, table } from '../../cli/format';
import { main, type Io } from '../../cli/main';
import { escapeUnsafeInJson, quoted, safe } from '../../lib/terminal';
import { Display } from '../../sandbox/counters';
import { createLogger } from '../../lib/observability';

/** ESC sequences (colour, OSC window title), a C1 CSI, DEL, a bidi override, a zero-width space, a line separator, a tag character. */
const HOSTILE = 'a\u001b[31mb\u001b]0;pwned\u0007c\u009b2Jd\u007fe\u202ef\u200bg\u2028h\u{e0041}i';
/** Any character a terminal may act on, except the newline that separates output lines. */
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\p{Cf}\p{Cs}\u2028\u2029]/u;

/** Each alone: what it is, the text, how `safe` shows it, how `quoted` quotes it. */
const CONTROLS: readonly [string, string, string, string][] = [
  ['ESC', 'a\u001b[2Jb', 'a?[2Jb', '"a\\u001b[2Jb"'],
  ['an OSC window title', 'a\u001b]0;title\u0007b', 'a?]0;title?b', '"a\\u001b]0;title\\u0007b"'],
  ['C1 CSI', 'a\u009b2Jb', 'a?2Jb', '"a\\u009b2Jb"'],
  ['C1 NEL and DEL', 'a\u0085b\u007fc', 'a?b?c', '"a\\u0085b\\u007fc"'],
  ['a bidi override', 'exe.\u202etxt', 'exe.?txt', '"exe.\\u202etxt"'],
  ['a bidi isolate and its end', 'a\u2066b\u2069c', 'a?b?c', '"a\\u2066b\\u2069c"'],
  ['the bidi marks', 'a\u200eb\u200fc\u061cd', 'a?b?c?d', '"a\\u200eb\\u200fc\\u061cd"'],
  ['the line and paragraph separators', 'a\u2028b\u2029c', 'a?b?c', '"a\\u2028b\\u2029c"'],
  ['a newline that would forge a second line', 'a\nhandoff sandbox: ok', 'a handoff sandbox: ok', '"a\\nhandoff sandbox: ok"'],
  ['a quote and a backslash', 'a"b\\c', 'a"b\\c', '"a\\"b\\\\c"'],
];

describe('Function: safe', () => {
  it('turns C0, DEL, C1, format characters and separators into ?', () => {
    expect(safe(HOSTILE)).toBe('a?[31mb?]0;pwned?c?2Jd?e?f?g?h?i');
  });

  it('makes a newline a space, or keeps it when asked, and a tab a space', () => {
    expect(safe('one\ntwo\tthree')).toBe('one two three');
    expect(safe('one\ntwo\u0085', { keepNewlines: true })).toBe('one\ntwo?');
  });

  it('changes nothing printable and is idempotent', () => {
    expect(safe('Zoë ships 📦 → 東京')).toBe('Zoë ships 📦 → 東京');
    expect(safe(safe(HOSTILE))).toBe(safe(HOSTILE));
  });

  it.each(CONTROLS)('replaces %s', (_case, text, shown) => {
    expect(safe(text)).toBe(shown);
  });

  it('is applied to every table and key-value cell', () => {
    expect(table([{ header: 'why' }], [['x\u202ey\u009bz']])).toBe('why\nx?y?z');
    expect(keyValues([['why', 'x\u202ey']])).toBe('why  x?y');
  });
});

describe('Function: quoted', () => {
  it.each(CONTROLS)('quotes text with %s as JSON with every unsafe character escaped', (_case, text, _shown, quote) => {
    expect(quoted(text)).toBe(quote);
    expect(quote).toMatch(/^[\x20-\x7e]+$/);
    expect(JSON.parse(quote)).toBe(text);
  });

  it('quotes plain text and other JSON values as JSON.stringify does', () => {
    expect(quoted('shipment.lost')).toBe('"shipment.lost"');
    expect(quoted('Zoë → 東京')).toBe('"Zoë → 東京"');
    expect(quoted(20000)).toBe('20000');
    expect(quoted({ a: ['\u202e'] })).toBe('{"a":["\\u202e"]}');
    expect(quoted(undefined)).toBe('undefined');
  });
});

describe('Class: Display', () => {
  it('writes every log and status line inert and on one line', () => {
    // Prepare
    let written = '';
    const stream = { write: (text: string) => ((written += text), true), isTTY: false } as unknown as NodeJS.WriteStream;
    const display = new Display(stream);

    // Act
    display.log(`endpoint ops: ${HOSTILE}\nforged line`);
    display.status('delivered 1 \u202e');

    // Assess
    expect(written).toBe('endpoint ops: a?[31mb?]0;pwned?c?2Jd?e?f?g?h?i forged line\ndelivered 1 ?\n');
  });
});

describe('Function: jsonText', () => {
  it('escapes C1, DEL, format characters and separators as \\uXXXX and keeps the value', () => {
    // Act
    const text = jsonText({ responseStart: HOSTILE });

    // Assess
    expect(text).not.toMatch(RAW_UNSAFE);
    expect(text).toContain('\\u009b2J');
    expect(text).toContain('\\u202ef');
    expect(text).toContain('\\udb40\\udc41');
    expect(JSON.parse(text)).toEqual({ responseStart: HOSTILE });
  });

  it('leaves plain JSON exactly as JSON.stringify pretty-prints it', () => {
    const value = { eventId: 'evt_1', attempts: 2, note: 'Zoë "quoted"\n' };

    expect(jsonText(value)).toBe(JSON.stringify(value, null, 2));
  });

  it('escapes a JSON text (a stored event body) without changing the event it encodes', () => {
    const body = JSON.stringify({ id: 'evt_1', note: '\u202eexe.txt\u0085' });

    expect(escapeUnsafeInJson(body)).toBe('{"id":"evt_1","note":"\\u202eexe.txt\\u0085"}');
    expect(JSON.parse(escapeUnsafeInJson(body))).toEqual(JSON.parse(body));
  });
});

describe('Function: describeFailure', () => {
  it('makes the one line of any error inert', () => {
    const failure = describeFailure(new Error(`unexpected ${HOSTILE}\nsecond line`));

    expect(failure.message).toBe('Error: unexpected a?[31mb?]0;pwned?c?2Jd?e?f?g?h?i second line');
  });
});

interface Captured {
  readonly io: Io;
  readonly stdout: () => string;
  readonly stderr: () => string;
}

function capture(stdin = ''): Captured {
  let out = '';
  let err = '';
  const stream = (append: (text: string) => void) =>
    ({ write: (text: string) => (append(text), true), isTTY: false }) as unknown as NodeJS.WriteStream;
  return {
    io: {
      stdin: Object.assign(Readable.from([Buffer.from(stdin)]), { isTTY: false }) as unknown as NodeJS.ReadStream,
      stdout: stream((text) => (out += text)),
      stderr: stream((text) => (err += text)),
    },
    stdout: () => out,
    stderr: () => err,
  };
}

const event = { id: 'evt_h', shipmentId: 'shp_1', status: 'packed', occurredAt: '2026-12-02T10:15:00Z' };

/** A queue that is never contacted: every case below fails before the first request. */
const UNUSED_QUEUE = ['--queue-url', 'http://127.0.0.1:9/000000000000/unused'];
/** Names given on the command line carry no payload limit: send says which it used. */
const LIMIT_NOTE = 'handoff: note: no payload limit from the names given; checking events against 65536 bytes (the default)\n';

describe('Function: main', () => {
  it('writes a send validation error quoting a hostile key with no raw control character', async () => {
    // Prepare: an unknown key made of an OSC title sequence, a C1 CSI and a bidi override.
    const hostile = JSON.stringify({ ...event, '\u001b]0;pwned\u0007\u009b2J\u202e': 1 });
    const run = capture(`${hostile}\n`);

    // Act
    const code = await main(['node', 'handoff', 'send', '-', ...UNUSED_QUEUE], run.io);

    // Assess
    expect(code).toBe(1);
    expect(run.stdout()).toBe('');
    expect(run.stderr()).toBe(`${LIMIT_NOTE}handoff: invalid event evt_h: ?]0;pwned??2J? is not a known field; nothing sent\n`);
  });

  it('writes the same error as inert JSON with --json', async () => {
    const run = capture(`${JSON.stringify({ ...event, '\u009b\u202e': 1 })}\n`);

    const code = await main(['node', 'handoff', 'send', '-', '--json', ...UNUSED_QUEUE], run.io);

    expect(code).toBe(1);
    expect(run.stderr()).toBe(`${LIMIT_NOTE}handoff: invalid event evt_h: ?? is not a known field; nothing sent\n`);
    expect(JSON.parse(run.stdout())).toEqual({
      error: { code: 'invalid', message: 'invalid event evt_h: ?? is not a known field; nothing sent' },
    });
  });

  it("makes commander's own messages, which quote what was typed, inert", async () => {
    const run = capture();

    const code = await main(['node', 'handoff', 'dead', '--\u001b]0;pwned\u0007\u202e'], run.io);

    expect(code).toBe(2);
    expect(run.stderr()).toContain("error: unknown option '--?]0;pwned??'");
    expect(run.stderr()).not.toMatch(RAW_UNSAFE);
  });

  it('makes an event ID argument inert in its usage error', async () => {
    const run = capture();

    const code = await main(['node', 'handoff', 'status', 'evt\u001b[2J\u0085', ...UNUSED_QUEUE], run.io);

    expect(code).toBe(2);
    expect(run.stderr()).toBe('handoff: "evt?[2J?" is not an event ID (1–128 characters of A-Z a-z 0-9 _ - . :)\n');
  });
});

describe('JSON log lines (lib/observability.ts)', () => {
  it('escape what a terminal would act on, keeping each value exact', () => {
    const lines: string[] = [];
    const logger = createLogger({ service: 'handoff', write: (line) => lines.push(line) });

    logger.warn('delivery', { endpoint: 'acme', why: HOSTILE });

    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(RAW_UNSAFE);
    expect((JSON.parse(lines[0]!) as { why: string }).why).toBe(HOSTILE);
  });
});
