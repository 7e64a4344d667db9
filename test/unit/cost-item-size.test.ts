/**
 * DynamoDB's item size rules (lib/ledger/item-size.ts), as `npm run cost` applies them to every
 * item it meters: each figure below is worked out by hand from the rules, attribute names included.
 */
import { describe, expect, it } from 'vitest';
import { itemSizeBytes, numberSizeBytes, valueSizeBytes } from '../../lib/ledger/item-size';

describe('Function: itemSizeBytes', () => {
  it('counts the UTF-8 bytes of each name and string value', () => {
    // "eventId" 7 + "evt_1" 5; "endpoint" 8 + "default" 7.
    expect(itemSizeBytes({ eventId: { S: 'evt_1' }, endpoint: { S: 'default' } })).toBe(27);
  });

  it('counts a non-ASCII character by its UTF-8 bytes, not as one', () => {
    // "n" 1 + "é" 2 bytes + "€" 3 bytes.
    expect(itemSizeBytes({ n: { S: 'é€' } })).toBe(6);
  });

  it('counts a binary value by its raw bytes, a Boolean and a null as 1 byte', () => {
    // "b" 1 + 3; "ok" 2 + 1; "no" 2 + 1.
    expect(itemSizeBytes({ b: { B: Uint8Array.from([1, 2, 3]) }, ok: { BOOL: true }, no: { NULL: true } })).toBe(10);
  });

  it('counts a list as 3 bytes, plus 1 per element, plus the elements', () => {
    // "h" 1 + 3 + (1 + "ab" 2) + (1 + number 12: 2 bytes).
    expect(itemSizeBytes({ h: { L: [{ S: 'ab' }, { N: '12' }] } })).toBe(10);
    expect(itemSizeBytes({ h: { L: [] } })).toBe(4);
  });

  it('counts a map as 3 bytes, plus 1 per member, plus each member with its name, nested', () => {
    // "p" 1 + map 3 + member "max" (1 + 3 + number 6: 2) + member "w" (1 + 1 + list (3 + 1 + number 30: 2)).
    expect(itemSizeBytes({ p: { M: { max: { N: '6' }, w: { L: [{ N: '30' }] } } } })).toBe(18);
  });

  it('counts a set as the sum of its members', () => {
    // "ss" 2 + "a" 1 + "bc" 2; "ns" 2 + number 7: 2 + number 120: 3.
    expect(itemSizeBytes({ ss: { SS: ['a', 'bc'] }, ns: { NS: ['7', '120'] } })).toBe(12);
  });

  it('refuses something that is not an attribute value', () => {
    expect(() => valueSizeBytes({} as never)).toThrow('not a DynamoDB attribute value');
  });
});

describe('Function: numberSizeBytes', () => {
  it('is 1 byte for zero, however written', () => {
    expect(numberSizeBytes('0')).toBe(1);
    expect(numberSizeBytes('0.000')).toBe(1);
  });

  it('is 1 byte plus 1 per pair of significant digits aligned on the decimal point', () => {
    expect(numberSizeBytes('7')).toBe(2);
    expect(numberSizeBytes('12')).toBe(2);
    expect(numberSizeBytes('123')).toBe(3);
    expect(numberSizeBytes('1234')).toBe(3);
    expect(numberSizeBytes('12345')).toBe(4);
    // 120 is stored as the base-100 digits 01 20: two of them, though it has 2 significant digits.
    expect(numberSizeBytes('120')).toBe(3);
  });

  it('trims leading and trailing zeros', () => {
    expect(numberSizeBytes('100')).toBe(2);
    expect(numberSizeBytes('007')).toBe(2);
    expect(numberSizeBytes('0.05')).toBe(2);
    expect(numberSizeBytes('1.50')).toBe(3);
  });

  it('reads an exponent', () => {
    // 1500: base-100 digits 15 00, the trailing pair trimmed.
    expect(numberSizeBytes('1.5E+3')).toBe(2);
  });

  it('adds 1 byte for a negative number', () => {
    expect(numberSizeBytes('-5')).toBe(3);
    expect(numberSizeBytes('-0.05')).toBe(3);
  });

  it('sizes an epoch-milliseconds timestamp at 8 bytes and epoch seconds at 6', () => {
    expect(numberSizeBytes('1764670512345')).toBe(8);
    expect(numberSizeBytes('1764670512')).toBe(6);
  });

  it('refuses text that is not a number', () => {
    expect(() => numberSizeBytes('twelve')).toThrow('not a DynamoDB number: "twelve"');
  });

  it('refuses text with no digit at all, which the pattern of optional parts would let through', () => {
    expect(() => numberSizeBytes('.')).toThrow('not a DynamoDB number: "."');
    expect(() => numberSizeBytes('-')).toThrow('not a DynamoDB number: "-"');
    expect(() => numberSizeBytes('')).toThrow('not a DynamoDB number: ""');
  });
});
