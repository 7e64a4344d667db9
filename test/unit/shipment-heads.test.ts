import { describe, expect, it } from 'vitest';
import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { MemoryShipmentHeads } from '../../lib/ledger/memory-shipment-heads';
import { MAX_SEQUENCE } from '../../lib/ledger/shipment-heads';
import { shipmentHeadsContract } from '../helpers/shipment-heads-contract';

shipmentHeadsContract('MemoryShipmentHeads', async (options) => ({
  heads: new MemoryShipmentHeads(options),
  ledger: new MemoryLedger(),
  async close() {},
}));

describe('MemoryShipmentHeads', () => {
  it(`refuses a limit of sequences outside 1..${MAX_SEQUENCE}, naming the option`, () => {
    for (const maxSequence of [0, MAX_SEQUENCE + 1, 2.5]) {
      expect(() => new MemoryShipmentHeads({ maxSequence })).toThrow(
        new RangeError(`maxSequence must be an integer from 1 to ${MAX_SEQUENCE}, got ${maxSequence}`),
      );
    }
  });
});
