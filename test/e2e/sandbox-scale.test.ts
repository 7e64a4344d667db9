/**
 * The sandbox at platform scale (docs/contract.md §20): started with an endpoints file of 2,000
 * endpoints, it routes each event to the one endpoint whose type and merchant it matches and to no
 * other. 2,000, not the 10,000 the bench starts: CI runs three test files at once on two cores, and
 * the sandbox helper allows a minute for READY. The start-up time and idle CPU with 10,000
 * endpoints beside 10 are measured by `npm run bench -- --sandbox-scale`, not asserted here.
 */
import { describe, expect, it } from 'vitest';
import { runSandboxAt, SANDBOX_SCALE_DEFAULTS } from '../../bench/sandbox-scale';

describe('the sandbox with 2,000 endpoints', () => {
  it('starts, and delivers each event to the one endpoint it matches and to no other', async () => {
    const run = await runSandboxAt(2_000, { ...SANDBOX_SCALE_DEFAULTS, settleSeconds: 0, idleSeconds: 0, events: 20 });

    expect(run.endpoints).toBe(2_000);
    expect({ right: run.right, wrong: run.wrong }).toEqual({ right: 20, wrong: 0 });
  }, 240_000);
});
