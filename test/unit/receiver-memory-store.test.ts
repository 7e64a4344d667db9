import { describe, expect, it } from 'vitest';
import { ReceiverConfigError } from '../../lib/receiver/errors';
import { MemoryIdempotencyStore } from '../../lib/receiver/memory-store';
import { DEFAULT_RETENTION_SECONDS } from '../../lib/receiver/store';
import { CONTRACT_STORE_OPTIONS, receiverStoreContract } from '../helpers/receiver-store-contract';

receiverStoreContract('in memory', async () => ({
  store: new MemoryIdempotencyStore(CONTRACT_STORE_OPTIONS),
  close: async () => {},
}));

describe('Class: MemoryIdempotencyStore', () => {
  it('keeps records 7 days by default', () => {
    expect(new MemoryIdempotencyStore().retentionSeconds).toBe(DEFAULT_RETENTION_SECONDS);
    expect(DEFAULT_RETENTION_SECONDS).toBe(604_800);
  });

  it('forgets expired records as new ones arrive, so memory stays bounded by the retention', async () => {
    const store = new MemoryIdempotencyStore({ retentionSeconds: 10 });
    for (let i = 0; i < 5; i++) {
      const begun = await store.begin(`evt_${i}`, 'hash', 0);
      if (begun.kind === 'started') await store.complete(`evt_${i}`, begun.token, { status: 200, body: '' }, 0);
    }

    await store.begin('evt_later', 'hash', 10_000);

    expect(store.size).toBe(1);
  });

  it('refuses a retention or lease that is not a positive whole number of seconds, naming it', () => {
    expect(() => new MemoryIdempotencyStore({ retentionSeconds: 0 })).toThrow(new ReceiverConfigError('retentionSeconds', 'must be a positive whole number of seconds, got 0'));
    expect(() => new MemoryIdempotencyStore({ leaseSeconds: 1.5 })).toThrow(/leaseSeconds must be a positive whole number/);
  });
});
