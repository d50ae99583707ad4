import { defineConfig } from 'vitest/config';

// Two tiers, one switch: `unit` needs no network and no server; `e2e` starts the API on a real
// loopback socket and drives it with the vendor's own SDK clients (npm and Python).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: [
            'pipelines/*/test/**/*.test.ts',
            'packages/*/test/**/*.test.ts',
            'apps/*/test/**/*.test.ts',
            'eval/test/**/*.test.ts',
          ],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
