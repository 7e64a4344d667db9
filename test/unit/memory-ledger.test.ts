import { MemoryLedger } from '../../lib/ledger/memory-ledger';
import { ledgerContract } from '../helpers/ledger-contract';

ledgerContract('MemoryLedger', async ({ now }) => ({
  ledger: new MemoryLedger({ now }),
  async close() {},
}));
