import { describe, expect, it } from 'vitest';
import type { DeliveryRecord, DeliveryState, ListOptions, Page } from '../../lib/ledger/ledger';
import { countListed, formatCounts } from '../../sandbox/counters';

/** A listing of `rows` rows per state, paged by the limit asked, recording which states were read. */
function listing(rows: Partial<Record<DeliveryState, number>>) {
  const read: DeliveryState[] = [];
  return {
    read,
    async listByState(state: DeliveryState, options: ListOptions = {}): Promise<Page> {
      read.push(state);
      const from = Number(options.cursor ?? 0);
      const to = Math.min(rows[state] ?? 0, from + (options.limit ?? 25));
      const records = Array.from({ length: to - from }, () => ({}) as DeliveryRecord);
      return to < (rows[state] ?? 0) ? { records, cursor: String(to) } : { records };
    },
  };
}

describe('Function: countListed', () => {
  it('counts every row of the state listed, over several pages, reading no other state', async () => {
    const ledger = listing({ pending: 2_345, delivered: 10_000 });

    expect(await countListed(ledger, 'pending', 5_000)).toEqual({ n: 2_345, atLeast: false });
    expect(new Set(ledger.read)).toEqual(new Set(['pending']));
  });

  it('stops at the cap and says the count is a lower bound', async () => {
    const ledger = listing({ dead: 50 });

    expect(await countListed(ledger, 'dead', 20)).toEqual({ n: 20, atLeast: true });
  });

  it('lists at most 1000 rows per state by default', async () => {
    expect(await countListed(listing({ pending: 1_500 }), 'pending')).toEqual({ n: 1_000, atLeast: true });
    expect(await countListed(listing({ pending: 1_000 }), 'pending')).toEqual({ n: 1_000, atLeast: false });
  });
});

describe('Function: formatCounts', () => {
  it('prints delivered, retrying, dead and the dead-letter queue, marking a capped count with +', () => {
    const line = formatCounts({ delivered: 12, retrying: { n: 1_000, atLeast: true }, dead: { n: 1, atLeast: false }, deadLetters: 2 });

    expect(line).toBe('delivered 12 · retrying 1000+ · dead 1 · dead-letter queue 2');
  });
});
