import { describe, expect, it } from 'vitest';
import { formatDuration, formatInstant, keyValues, table, truncate } from '../../cli/format';
import { safe } from '../../lib/terminal';

describe('Function: table', () => {
  it('pads each column to its widest cell, right-aligning where asked, without trailing spaces', () => {
    const text = table(
      [{ header: 'event' }, { header: 'attempts', align: 'right' }, { header: 'why' }],
      [
        ['evt_1', '1', 'rejected'],
        ['evt_long_id', '12', ''],
      ],
    );

    expect(text.split('\n')).toEqual([
      'event        attempts  why',
      'evt_1               1  rejected',
      'evt_long_id        12',
    ]);
  });

  it('turns control characters in cells into inert text', () => {
    expect(table([{ header: 'why' }], [['bad\u001b[31mred\nnext']])).toBe('why\nbad?[31mred next');
  });
});

describe('Function: keyValues', () => {
  it('aligns values after the longest label', () => {
    expect(keyValues([['state', 'dead'], ['last outcome', 'rejected (400)']])).toBe(
      'state         dead\nlast outcome  rejected (400)',
    );
  });
});

describe('Function: formatDuration', () => {
  it.each([
    [850, '850 ms'],
    [1_250, '1.3 s'],
    [12_400, '12 s'],
    [60_000, '1 min'],
    [245_000, '4 min 5 s'],
    [7_380_000, '2 h 3 min'],
    [273_600_000, '3 d 4 h'],
  ])('writes %d ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe('Function: formatInstant', () => {
  it('writes UTC to the second and how long ago it was, or how far ahead', () => {
    const at = Date.UTC(2026, 11, 2, 10, 15, 0, 250);

    expect(formatInstant(at, at + 90_000)).toBe('2026-12-02T10:15:00Z (1 min 30 s ago)');
    expect(formatInstant(at, at - 30_000)).toBe('2026-12-02T10:15:00Z (in 30 s)');
  });
});

describe('Function: truncate and safe', () => {
  it('cuts long text with a marker and keeps short text whole', () => {
    expect(truncate('abcdef', 4)).toBe('abc…');
    expect(truncate('abc', 4)).toBe('abc');
  });

  it('keeps printable text unchanged', () => {
    expect(safe('Zoë ships 📦')).toBe('Zoë ships 📦');
  });
});
