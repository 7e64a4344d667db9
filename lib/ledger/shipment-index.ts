/**
 * The shipment index's order and cursor, for both adapters (docs/contract.md §5): a shipment's
 * deliveries newest admission first (`createdAt`, the index's sort key), and among rows admitted in
 * the same millisecond by their key, descending. A cursor is the position of a page's last row,
 * which DynamoDB takes as the query's exclusive start (the index's keys and the table's).
 */
import type { DeliveryKey, DeliveryRecord } from './ledger';

/** Where a row stands in its shipment's deliveries. */
export interface ShipmentPosition extends DeliveryKey {
  readonly createdAt: number;
}

/** The cursor after `row`, a page's last: opaque to callers. */
export function encodeShipmentCursor(shipmentId: string, row: ShipmentPosition): string {
  const { createdAt, eventId, endpoint } = row;
  return Buffer.from(JSON.stringify({ shipmentId, createdAt, eventId, endpoint })).toString('base64url');
}

/** @throws RangeError when the cursor is not one a page of this shipment's deliveries issued. */
export function decodeShipmentCursor(cursor: string, shipmentId: string): ShipmentPosition {
  let position: unknown;
  try {
    position = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    position = undefined;
  }
  const p = position as Partial<Record<string, unknown>> | undefined;
  const valid =
    typeof p === 'object' &&
    p !== null &&
    p.shipmentId === shipmentId &&
    Number.isSafeInteger(p.createdAt) &&
    typeof p.eventId === 'string' &&
    typeof p.endpoint === 'string';
  if (!valid) throw new RangeError("cursor is not one this ledger issued for this shipment's deliveries");
  return { createdAt: p.createdAt as number, eventId: p.eventId as string, endpoint: p.endpoint as string };
}

/** Whether `a` comes before `b` in a shipment's deliveries: admitted later, or at once and with the greater key. */
export function newerInShipment(a: ShipmentPosition, b: ShipmentPosition): boolean {
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt;
  if (a.eventId !== b.eventId) return a.eventId > b.eventId;
  return a.endpoint > b.endpoint;
}

/** A shipment's rows in the index's order (`newerInShipment`). */
export function inShipmentOrder<T extends ShipmentPosition>(rows: readonly T[]): T[] {
  return [...rows].sort((a, b) => (newerInShipment(a, b) ? -1 : newerInShipment(b, a) ? 1 : 0));
}

/** Whether a record is one the index holds for `shipmentId` (an entry may lag its row, or outlive it). */
export function isOfShipment(record: Pick<DeliveryRecord, 'shipmentId'>, shipmentId: string): boolean {
  return record.shipmentId === shipmentId;
}
