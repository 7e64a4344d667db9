import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The default `forks` pool: NodejsFunction bundling breaks under `threads`.
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
