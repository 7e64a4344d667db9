/**
 * The Dead letters page's replays (console/app/replay.ts) without a browser, against a stand-in for
 * `POST /v1/replays` that pages its answers as the API does: "all matching the filter" needs an
 * endpoint or an owner; the dry run follows `next` to its end and fixes the window's end; the
 * replay sends that same window, a part at a time, following `next` across parts; and each request
 * keeps its Idempotency-Key when the replay is run again after a lost answer, so the API acts once.
 */
import { describe, expect, it } from 'vitest';
import type { BulkReplayAnswer, Delivery } from '../../api/client/types';
import { actionKeys } from '../../console/app/action-keys';
import { ApiError } from '../../console/app/errors';
import {
  ALL_MATCHING_NEEDS_A_FILTER,
  BEGINNING,
  BULK_PART_LIMIT,
  DRY_RUN_REASON,
  MAX_OWNER_ENDPOINTS,
  countAllMatching,
  runReplay,
  type ReplayCalls,
  type ReplayPlan,
} from '../../console/app/replay';

type Body = Readonly<Record<string, unknown>>;

/**
 * A stand-in for the API's replays: each endpoint holds `dead[endpoint]` dead deliveries; a dry run
 * answers `DRY_PAGE` of them per answer, a replay `limit` (the cursor is the offset). Every request
 * is recorded with its key.
 */
function replayApi(dead: Readonly<Record<string, number>>, owners: Readonly<Record<string, readonly string[]>> = {}) {
  const DRY_PAGE = 100;
  const requests: { body: Body; key: string | undefined }[] = [];
  const asked: { owner: string; max: number }[] = [];
  const calls: ReplayCalls = {
    replay: async <T,>(body: Body, key?: string) => {
      requests.push({ body, key });
      const total = dead[body.endpoint as string] ?? 0;
      const from = body.cursor === undefined ? 0 : Number(body.cursor);
      const size = body.dryRun === true ? DRY_PAGE : (body.limit as number);
      const to = Math.min(total, from + size);
      const answer: BulkReplayAnswer = {
        endpoint: body.endpoint as string,
        deadSince: body.deadSince as string,
        until: body.until as string,
        deadReason: (body.deadReason as 'rejected' | 'exhausted' | undefined) ?? null,
        dryRun: body.dryRun === true,
        matched: to - from,
        replayed: body.dryRun === true ? 0 : to - from,
        noLongerDead: 0,
        withoutEvent: body.dryRun === true && from === 0 ? 1 : 0,
        enqueueFailed: [],
        ratePerSecond: 10,
        next: to < total ? String(to) : null,
      };
      return answer as T;
    },
    endpointsOf: async (owner, max) => {
      asked.push({ owner, max });
      const names = owners[owner] ?? [];
      return { names: names.slice(0, max), complete: names.length <= max };
    },
  };
  return { calls, requests, asked };
}

function delivery(eventId: string, endpoint: string): Delivery {
  return { eventId, endpoint } as Delivery;
}

describe('countAllMatching: the dry run before "all matching the filter"', () => {
  it('follows the dry run to its end for the filter\'s endpoint, the window\'s end fixed now', async () => {
    const { calls, requests } = replayApi({ hooks: 245 });
    const before = Date.now();

    const plan = await countAllMatching({ endpoint: 'hooks', reason: 'rejected' }, calls, () => {});

    expect(plan).toMatchObject({ kind: 'all', parts: [{ endpoint: 'hooks', matched: 245 }], deadSince: BEGINNING, deadReason: 'rejected', count: 245, withoutEvent: 1 });
    const until = (plan as Extract<ReplayPlan, { kind: 'all' }>).until;
    expect(Date.parse(until)).toBeGreaterThanOrEqual(before - 1);
    expect(requests.map((r) => r.body)).toEqual(
      [undefined, '100', '200'].map((cursor) => ({
        endpoint: 'hooks',
        deadSince: BEGINNING,
        until,
        deadReason: 'rejected',
        dryRun: true,
        reason: DRY_RUN_REASON,
        ...(cursor === undefined ? {} : { cursor }),
      })),
    );
  });

  it("counts each of the owner's endpoints, leaving out those with nothing to replay", async () => {
    const { calls, asked } = replayApi({ 'a-1': 3, 'a-2': 0, 'a-3': 7 }, { acme: ['a-1', 'a-2', 'a-3'] });
    const said: string[] = [];

    const plan = await countAllMatching({ owner: 'acme', since: '2026-12-01T00:00:00.000Z', until: '2026-12-02T00:00:00.000Z' }, calls, (text) => said.push(text));

    expect(plan).toMatchObject({
      kind: 'all',
      parts: [
        { endpoint: 'a-1', matched: 3 },
        { endpoint: 'a-3', matched: 7 },
      ],
      deadSince: '2026-12-01T00:00:00.000Z',
      until: '2026-12-02T00:00:00.000Z',
      count: 10,
    });
    expect(asked).toEqual([{ owner: 'acme', max: MAX_OWNER_ENDPOINTS }]);
    expect(said).toEqual([1, 2, 3].map((n) => `Counting what would be replayed: endpoint ${n} of 3…`));
  });

  it('refuses without an endpoint or an owner, and for an owner with more endpoints than one replay covers, asking nothing', async () => {
    const { calls, requests } = replayApi({}, { huge: Array.from({ length: MAX_OWNER_ENDPOINTS + 1 }, (_, i) => `h-${i}`) });

    await expect(countAllMatching({ reason: 'rejected' }, calls, () => {})).rejects.toThrow(ALL_MATCHING_NEEDS_A_FILTER);
    await expect(countAllMatching({ owner: 'huge' }, calls, () => {})).rejects.toThrow(`huge has more than ${MAX_OWNER_ENDPOINTS} endpoints`);
    expect(requests).toEqual([]);
  });
});

describe('runReplay: doing what was counted', () => {
  it("replays the dry run's window a part at a time, following next, each part with a key of its own", async () => {
    const { calls, requests } = replayApi({ hooks: 45, other: 5 });
    const plan = await countAllMatching({ endpoint: 'hooks' }, calls, () => {});
    const dryRun = requests[0]!.body;
    requests.length = 0;
    const reported: number[] = [];

    const outcome = await runReplay(plan, 'receiver fixed', calls, actionKeys(), (done) => reported.push(done));

    expect(outcome).toEqual({ total: 45, replayed: 45, noLongerDead: 0, enqueueFailed: [], refused: [], unanswered: 0 });
    expect(reported).toEqual([20, 40, 45]);
    expect(requests.map((r) => r.body)).toEqual(
      [undefined, '20', '40'].map((cursor) => ({
        endpoint: 'hooks',
        deadSince: dryRun.deadSince,
        until: dryRun.until,
        reason: 'receiver fixed',
        limit: BULK_PART_LIMIT,
        ...(cursor === undefined ? {} : { cursor }),
      })),
    );
    const keys = requests.map((r) => r.key);
    expect(new Set(keys).size).toBe(3);
    for (const key of keys) expect(key).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('counts a request whose answer was lost apart from a refusal; run again, each request keeps its key', async () => {
    const { calls: api, requests } = replayApi({});
    let lose = true;
    const calls: ReplayCalls = {
      ...api,
      replay: async <T,>(body: Body, key?: string) => {
        await api.replay<T>(body, key);
        if (body.eventId === 'evt_2' && lose) {
          lose = false;
          // The API acted; its answer never reached the page.
          throw new TypeError('Failed to fetch');
        }
        if (body.eventId === 'evt_3') throw new ApiError(409, 'https://handoff.dev/problems/not-dead', 'Not dead', 'evt_3 is delivered', []);
        return undefined as T;
      },
    };
    const plan: ReplayPlan = { kind: 'selected', deliveries: ['evt_1', 'evt_2', 'evt_3'].map((id) => delivery(id, 'hooks')), count: 3 };
    const keyFor = actionKeys();

    const first = await runReplay(plan, 'receiver fixed', calls, keyFor, () => {});
    const again = await runReplay(plan, 'receiver fixed', calls, keyFor, () => {});
    const otherReason = await runReplay(plan, 'another reason', calls, keyFor, () => {});

    expect(first).toMatchObject({ replayed: 1, unanswered: 1, refused: [{ what: 'evt_2 to hooks', message: 'Failed to fetch' }, { what: 'evt_3 to hooks', message: 'Not dead: evt_3 is delivered' }] });
    expect(again).toMatchObject({ replayed: 2, unanswered: 0, refused: [{ what: 'evt_3 to hooks' }] });
    const keysOf = (from: number) => requests.slice(from, from + 3).map((r) => r.key);
    expect(requests.slice(0, 3).map((r) => r.body)).toEqual(['evt_1', 'evt_2', 'evt_3'].map((eventId) => ({ eventId, endpoint: 'hooks', reason: 'receiver fixed' })));
    // The same requests, the same keys: the API answers the first evt_2 again rather than replaying it twice.
    expect(keysOf(3)).toEqual(keysOf(0));
    expect(new Set(keysOf(0)).size).toBe(3);
    // Another reason is another request.
    expect(keysOf(6).some((key) => keysOf(0).includes(key))).toBe(false);
    expect(otherReason.replayed).toBe(2);
  });
});
