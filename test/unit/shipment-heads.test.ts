import { describe, expect, it } from 'vitest';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { MemoryShipmentHeads } from '../../lib/ledger/memory-shipment-heads';
import { MAX_SEQUENCE } from '../../lib/ledger/shipment-heads';
import { T0 } from '../helpers/ledger-contract';
import { shipmentHeadsContract } from '../helpers/shipment-heads-contract';

shipmentHeadsContract('MemoryShipmentHeads', async (options) => ({
  heads: new MemoryShipmentHeads(options),
  ledger: new MemoryLedger(),
  async close() {},
}));

describe('MemoryShipmentHeads', () => {
  describe('Expiry, as DynamoDB TTL deletes (docs/contract.md §13)', () => {
    const RETENTION_SECONDS = 30 * 24 * 60 * 60;
    const DAY_MS = 24 * 60 * 60 * 1000;

    it('forgets a settled head once its retention has passed: the shipment\'s next event starts a new head at 1', async () => {
      // Prepare
      let clockMs = T0;
      const heads = new MemoryShipmentHeads({ now: () => clockMs, retentionSeconds: RETENTION_SECONDS });
      await heads.assign('shp_1', 'carrier-acme', 'evt_1');
      await heads.advance('shp_1', 'carrier-acme', 1, 'evt_1');

      // Act
      clockMs = T0 + 30 * DAY_MS - 1_000;
      const kept = await heads.get('shp_1', 'carrier-acme');
      clockMs = T0 + 30 * DAY_MS;
      const gone = await heads.get('shp_1', 'carrier-acme');
      const later = await heads.assign('shp_1', 'carrier-acme', 'evt_2');

      // Assess
      expect(kept).toMatchObject({ assigned: 1, next: 2 });
      expect(gone).toBeUndefined();
      expect(later).toStrictEqual({ sequence: 1, next: 1 });
    });

    it('keeps a head held by its dead event (onDead: hold) or with an event parked, however long: it never expires unsettled', async () => {
      // Prepare: evt_1 settled; evt_2 dead and holding; evt_3 waiting behind it; a second head whose only event is parked.
      let clockMs = T0;
      const heads = new MemoryShipmentHeads({ now: () => clockMs, retentionSeconds: RETENTION_SECONDS });
      for (const eventId of ['evt_1', 'evt_2', 'evt_3']) await heads.assign('shp_held', 'carrier-acme', eventId);
      await heads.advance('shp_held', 'carrier-acme', 1, 'evt_1');
      await heads.wait('shp_held', 'carrier-acme', 3, 'evt_3');
      await heads.assign('shp_parked', 'carrier-acme', 'evt_parked');

      // Act: a year on, the operator releases evt_2 (its turn passes on).
      clockMs = T0 + 365 * DAY_MS;
      const held = await heads.get('shp_held', 'carrier-acme');
      const parked = await heads.get('shp_parked', 'carrier-acme');
      const released = await heads.advance('shp_held', 'carrier-acme', 2, 'evt_2');

      // Assess
      expect(held).toMatchObject({ assigned: 3, next: 2, waiting: { 3: 'evt_3' } });
      expect(parked).toMatchObject({ assigned: 1, next: 1 });
      expect(released).toMatchObject({ next: 3, waiting: { 3: 'evt_3' } });
    });
  });

  it(`refuses a limit of sequences outside 1..${MAX_SEQUENCE}, naming the option`, () => {
    for (const maxSequence of [0, MAX_SEQUENCE + 1, 2.5]) {
      expect(() => new MemoryShipmentHeads({ maxSequence })).toThrow(
        new RangeError(`maxSequence must be an integer from 1 to ${MAX_SEQUENCE}, got ${maxSequence}`),
      );
    }
  });
});
