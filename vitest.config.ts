import { defineConfig } from 'vitest/config';

// Tiers by folder: `unit` needs no network and no server (test/deployment checks
// docker-compose.yml and its configuration files without Docker); `e2e` starts the API on a real loopback
// socket and drives it with the vendor's own SDK clients (npm and Python); `integration` talks to
// the real servers that infra/servers.sh starts; `browser` drives the dashboard in real Chromium
// (infra/chromium.sh installs it).
export default defineConfig({
  test: {
    // Under CI a JSON report as well, from which .ci/run prints the plain 'N passed, N failed' line.
    reporters: process.env['CI'] === 'true' ? ['default', 'json'] : ['default'],
    outputFile: { json: '.cache/vitest-report.json' },
    projects: [
      {
        test: {
          name: 'unit',
          include: [
            'pipelines/*/test/**/*.test.ts',
            'packages/*/test/**/*.test.ts',
            'apps/*/test/**/*.test.ts',
            'eval/test/**/*.test.ts',
            'bench/test/**/*.test.ts',
            'test/deployment/**/*.test.ts',
            'test/lint/**/*.test.ts',
          ],
          // A guard against a hung test, not a speed bound (speed is `npm run bench`'s): generous
          // enough for the heaviest test on a loaded 2-core machine.
          testTimeout: 300_000,
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
      {
        // Real Redis, ClickHouse and Kafka started by infra/servers.sh; skipped locally when a
        // server is unreachable, a failure under CI=true.
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
        },
      },
      {
        // Debian's Chromium through playwright-core; skipped locally without /usr/bin/chromium, a
        // failure under CI=true.
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
