import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The files that take longest (docs/testing.md has their times), longest first. A fresh clone has no
 * record of durations, so vitest would order files by size, and these small files driving long
 * processes (the soak, the command's e2e runs, the crash points) would start last and run on alone
 * at the end. Started first, they run beside the many short files.
 */
const SLOWEST_FIRST = [
  'test/e2e/soak.test.ts',
  'test/e2e/cli.test.ts',
  'test/e2e/crash-points.test.ts',
  'test/infra/webhook-delivery.test.ts',
  'test/bench/scenarios.test.ts',
  'test/package/packed-install.test.ts',
  'test/infra/app.test.ts',
  'test/console/overview.test.ts',
  'test/e2e/fan-out.test.ts',
  'test/console/endpoints.test.ts',
];

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = SLOWEST_FIRST.findIndex((path) => file.moduleId.endsWith(path));
      return at === -1 ? SLOWEST_FIRST.length : at;
    };
    // Array sort is stable: every other file keeps vitest's own order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    // The default `forks` pool: NodejsFunction bundling breaks under `threads`.
    pool: 'forks',
    // Three test files at a time on CI's two cores (the default there is one): the e2e files mostly
    // wait on child processes and timers (the times are in docs/testing.md).
    maxWorkers: 3,
    include: ['test/**/*.test.ts'],
    sequence: { sequencer: SlowestFirst },
    // The SDK's notice that its 2027 releases need Node 22; the lockfile keeps us on ones that run on 20.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
