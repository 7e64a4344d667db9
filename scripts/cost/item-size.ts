/**
 * An item's size as DynamoDB bills it, from the item in DynamoDB's wire format (AttributeValue
 * maps, as GetItem returns it). The rules, from AWS's "item sizes and formats":
 *
 * - every attribute costs the UTF-8 bytes of its name plus its value;
 * - a string: its UTF-8 bytes; a binary value: its raw bytes (not the base64 sent);
 * - a number: 1 byte plus 1 per pair of significant digits. AWS says "approximately"; the exact
 *   figure counts base-100 digits aligned on the decimal point, as DynamoDB stores numbers
 *   (120 is `01 20`: 2 pairs, though it has 2 significant digits), and 1 more for a negative one;
 * - null and Boolean: 1 byte;
 * - a list or map: 3 bytes, plus 1 byte per element, plus its elements (a map's elements count
 *   their names);
 * - a set: the sum of its members' sizes.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export type Item = Record<string, AttributeValue>;

/** The item's size in bytes. */
export function itemSizeBytes(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8Bytes(name) + valueSizeBytes(value);
  return size;
}

/** One value's size in bytes, without the name it is stored under. */
export function valueSizeBytes(value: AttributeValue): number {
  if (value.S !== undefined) return utf8Bytes(value.S);
  if (value.N !== undefined) return numberSizeBytes(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return value.L.reduce((sum, element) => sum + 1 + valueSizeBytes(element), 3);
  if (value.M !== undefined) {
    return Object.entries(value.M).reduce(
      (sum, [name, element]) => sum + 1 + utf8Bytes(name) + valueSizeBytes(element),
      3,
    );
  }
  if (value.SS !== undefined) return value.SS.reduce((sum, member) => sum + utf8Bytes(member), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, member) => sum + numberSizeBytes(member), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, member) => sum + member.byteLength, 0);
  throw new TypeError(`not a DynamoDB attribute value: ${JSON.stringify(Object.keys(value))}`);
}

/**
 * A number's size in bytes from its decimal text (`"120"`, `"-0.05"`, `"1.5E+3"`): 1 byte, plus
 * one per base-100 digit, plus one if negative. Zero is 1 byte.
 */
export function numberSizeBytes(text: string): number {
  const match = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  if (match === null || (match[2] === '' && (match[3] ?? '') === '')) {
    throw new TypeError(`not a DynamoDB number: "${text}"`);
  }
  const [, sign, whole = '', fraction = '', exponent = '0'] = match;
  const digits = whole + fraction;
  const first = digits.search(/[1-9]/);
  if (first === -1) return 1;
  const significant = digits.slice(first).replace(/0+$/, '');
  // The power of ten of the first significant digit: 120 -> 2, 0.05 -> -2.
  const leading = whole.length - 1 - first + Number(exponent);
  const trailing = leading - significant.length + 1;
  // Base-100 digits cover the powers of ten in pairs (0-1, 2-3, ..., and -2..-1 below the point).
  const pairs = Math.floor(leading / 2) - Math.floor(trailing / 2) + 1;
  return 1 + pairs + (sign === '-' ? 1 : 0);
}

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
