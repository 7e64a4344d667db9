import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from 'commander';
import { describeSince, parseSince, sinceOption } from '../../cli/commands/stats';

describe('Function: parseSince', () => {
  it('reads minutes, hours and days', () => {
    expect(parseSince('30m')).toBe(30 * 60_000);
    expect(parseSince('24h')).toBe(24 * 3_600_000);
    expect(parseSince(' 7d ')).toBe(7 * 86_400_000);
  });

  it.each(['', '24', '1s', '0m', '16d', 'h', '1.5h', '-1h'])('refuses "%s" saying the form it wants', (text) => {
    expect(() => parseSince(text)).toThrow(new RangeError('must be a duration like 30m, 24h or 7d, from 1m to 15d.'));
  });
});

describe('Function: sinceOption', () => {
  it('refuses a bad duration as commander\'s invalid argument, so the CLI names the option (exit 2)', () => {
    expect(() => sinceOption('1s')).toThrow(InvalidArgumentError);
    expect(sinceOption('6h')).toBe(6 * 3_600_000);
  });
});

describe('Function: describeSince', () => {
  it('says a window in its largest whole unit, hours up to a day', () => {
    expect(describeSince(24 * 3_600_000)).toBe('24 h');
    expect(describeSince(7 * 86_400_000)).toBe('7 d');
    expect(describeSince(90 * 60_000)).toBe('90 min');
    expect(describeSince(36 * 3_600_000)).toBe('36 h');
  });
});
