import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The default `forks` pool: NodejsFunction bundling breaks under `threads`.
    pool: 'forks',
    // Three test files at a time on CI's two cores (the default there is one): the e2e files mostly
    // wait on child processes and timers (the times are in docs/testing.md).
    maxWorkers: 3,
    include: ['test/**/*.test.ts'],
    // The SDK's notice that its 2027 releases need Node 22; the lockfile keeps us on ones that run on 20.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
