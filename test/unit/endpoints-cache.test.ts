/**
 * The consumer's copy of the registry (`cachedEndpoints`): one read per ttl, shared by concurrent
 * callers; a failed first read is retried on the next call; a failed refresh keeps the last copy
 * for another ttl.
 * A fake clock and a registry whose reads the test answers.
 */
import { describe, expect, it } from 'vitest';
import type { EndpointRecord } from '../../lib/endpoints/endpoint';
import { cachedEndpoints, ENDPOINTS_CACHE_MS } from '../../lib/endpoints/registry';

function endpoint(name: string): EndpointRecord {
  return { fields: { name, url: `https://${name}.example/hook`, eventTypes: ['*'] }, state: 'enabled', createdAt: 0, updatedAt: 0 };
}

/** A registry whose every `list` waits for the test to answer it. */
function scriptedRegistry() {
  const pending: { resolve: (records: EndpointRecord[]) => void; reject: (error: Error) => void }[] = [];
  return {
    registry: {
      list: () => new Promise<EndpointRecord[]>((resolve, reject) => pending.push({ resolve, reject })),
    },
    get reads() {
      return pending.length;
    },
    answer(records: EndpointRecord[]) {
      pending.at(-1)!.resolve(records);
    },
    fail(error: Error) {
      pending.at(-1)!.reject(error);
    },
  };
}

/** A registry that answers at once with the current list, counting reads. */
function countingRegistry(records: () => EndpointRecord[]) {
  let reads = 0;
  return {
    registry: {
      list: async () => {
        reads++;
        return records();
      },
    },
    reads: () => reads,
  };
}

describe('Function: cachedEndpoints', () => {
  it('reads once per ttl and answers from its copy in between', async () => {
    let nowMs = 1_000;
    let current = [endpoint('acme')];
    const fake = countingRegistry(() => current);
    const endpoints = cachedEndpoints(fake.registry, { ttlMs: 1000, now: () => nowMs });

    const first = await endpoints();
    current = [endpoint('acme'), endpoint('zephyr')];
    nowMs += 999;
    const cached = await endpoints();
    nowMs += 1;
    const refreshed = await endpoints();

    expect(first.map((e) => e.fields.name)).toEqual(['acme']);
    expect(cached).toBe(first);
    expect(refreshed.map((e) => e.fields.name)).toEqual(['acme', 'zephyr']);
    expect(fake.reads()).toBe(2);
  });

  it('counts the ttl from when the read answered, not when it was asked', async () => {
    let nowMs = 0;
    const scripted = scriptedRegistry();
    const endpoints = cachedEndpoints(scripted.registry, { ttlMs: 1000, now: () => nowMs });

    const first = endpoints();
    nowMs = 900; // the read took 900 ms
    scripted.answer([endpoint('acme')]);
    await first;
    nowMs = 1899;
    await endpoints();

    expect(scripted.reads).toBe(1);
  });

  it('shares one read among callers that ask while it is under way', async () => {
    const scripted = scriptedRegistry();
    const endpoints = cachedEndpoints(scripted.registry, { ttlMs: 1000, now: () => 0 });

    const calls = [endpoints(), endpoints(), endpoints()];
    scripted.answer([endpoint('acme')]);
    const answers = await Promise.all(calls);

    expect(scripted.reads).toBe(1);
    expect(answers[0]).toBe(answers[1]);
    expect(answers[1]).toBe(answers[2]);
  });

  it('fails a first read that fails, and reads again on the next call', async () => {
    const scripted = scriptedRegistry();
    const endpoints = cachedEndpoints(scripted.registry, { ttlMs: 1000, now: () => 0 });

    const failed = endpoints();
    scripted.fail(new Error('table unreachable'));
    await expect(failed).rejects.toThrow('table unreachable');
    const retried = endpoints();
    scripted.answer([endpoint('acme')]);

    expect((await retried).map((e) => e.fields.name)).toEqual(['acme']);
    expect(scripted.reads).toBe(2);
  });

  it('keeps its last copy when a refresh fails, for another ttl before reading again', async () => {
    let nowMs = 0;
    const scripted = scriptedRegistry();
    const endpoints = cachedEndpoints(scripted.registry, { ttlMs: 1000, now: () => nowMs });
    const first = endpoints();
    scripted.answer([endpoint('acme')]);
    const copy = await first;

    nowMs = 5000;
    const during = endpoints();
    scripted.fail(new Error('throttled'));
    const kept = await during;
    nowMs = 5999;
    const stillKept = await endpoints();
    const readsWhileKept = scripted.reads;
    nowMs = 6000;
    const next = endpoints();
    scripted.answer([endpoint('zephyr')]);

    expect(kept).toBe(copy);
    expect(stillKept).toBe(copy);
    expect(readsWhileKept).toBe(2);
    expect((await next).map((e) => e.fields.name)).toEqual(['zephyr']);
    expect(scripted.reads).toBe(3);
  });

  it(`trusts its copy for ${ENDPOINTS_CACHE_MS} ms by default`, async () => {
    let nowMs = 0;
    const fake = countingRegistry(() => [endpoint('acme')]);
    const endpoints = cachedEndpoints(fake.registry, { now: () => nowMs });

    await endpoints();
    nowMs = ENDPOINTS_CACHE_MS - 1;
    await endpoints();
    const readsWithinTtl = fake.reads();
    nowMs = ENDPOINTS_CACHE_MS;
    await endpoints();

    expect(readsWithinTtl).toBe(1);
    expect(fake.reads()).toBe(2);
  });
});
