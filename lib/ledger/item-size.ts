/**
 * An item's size as DynamoDB bills it (one write unit per KB, rounded up), from the item in wire
 * format. Every attribute costs its name's UTF-8 bytes plus its value: a string its UTF-8 bytes, a
 * binary its raw bytes, a number 1 byte plus 1 per base-100 digit (120 is `01 20`: 3 bytes),
 * Boolean and null 1 byte, a list or map 3 bytes plus 1 per element plus the elements (a map's with
 * their names), a set the sum of its members.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export function itemSizeBytes(item: Readonly<Record<string, AttributeValue>>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += Buffer.byteLength(name) + valueSizeBytes(value);
  return size;
}

/** Each attribute's share of the item's size, name included, largest first. */
export function attributeSizes(item: Readonly<Record<string, AttributeValue>>): [string, number][] {
  return Object.entries(item)
    .map(([name, value]): [string, number] => [name, Buffer.byteLength(name) + valueSizeBytes(value)])
    .sort((a, b) => b[1] - a[1]);
}

export function valueSizeBytes(value: AttributeValue): number {
  if (value.S !== undefined) return Buffer.byteLength(value.S);
  if (value.N !== undefined) return numberSizeBytes(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.L !== undefined) return value.L.reduce((sum, element) => sum + 1 + valueSizeBytes(element), 3);
  if (value.M !== undefined) {
    return Object.entries(value.M).reduce((sum, [name, member]) => sum + 1 + Buffer.byteLength(name) + valueSizeBytes(member), 3);
  }
  if (value.SS !== undefined) return value.SS.reduce((sum, member) => sum + Buffer.byteLength(member), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, member) => sum + numberSizeBytes(member), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, member) => sum + member.byteLength, 0);
  throw new TypeError(`not a DynamoDB attribute value: ${Object.keys(value).join(', ')}`);
}

/** A number's bytes from its decimal text: 1, plus 1 per base-100 digit, plus 1 if negative; zero is 1. */
export function numberSizeBytes(text: string): number {
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim());
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match ?? [];
  const digits = whole + fraction;
  // The pattern lets each part be empty; a number needs at least one digit (".", "-", "e5" are none).
  if (match === null || digits === '') throw new TypeError(`not a DynamoDB number: "${text}"`);
  const first = digits.search(/[1-9]/);
  if (first === -1) return 1;
  const significant = digits.slice(first).replace(/0+$/, '');
  // Base-100 digits cover the powers of ten in pairs aligned on the decimal point (0-1, 2-3, …).
  const leading = whole.length - 1 - first + Number(exponent);
  const trailing = leading - significant.length + 1;
  const pairs = Math.floor(leading / 2) - Math.floor(trailing / 2) + 1;
  return 1 + pairs + (sign === '-' ? 1 : 0);
}
