import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { ledgerContract } from '../helpers/ledger-contract';

ledgerContract('MemoryLedger', async ({ now }, options = {}) => ({
  ledger: new MemoryLedger({ now, ...options }),
  async close() {},
}));
