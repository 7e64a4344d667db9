/**
 * Item sizes as DynamoDB bills them: the ledger's own definition (lib/ledger/item-size.ts), which
 * the cost model applies to every item image it meters, whatever table it came from.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';

export { itemSizeBytes, numberSizeBytes, valueSizeBytes } from '../../lib/ledger/item-size';

export type Item = Record<string, AttributeValue>;

export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
