// Detection jobs on the embedded deployment, as `npm start` runs it: the durable in-process bus,
// jobs.duckdb under DATA_DIR and the job worker inside the API process (./job-flow.ts; the same
// suite runs on Kafka and ClickHouse in test/integration/jobs-kafka.test.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../src/config.js';
import { openPlatform } from '../src/platform.js';
import { jobFlowTests } from './job-flow.js';
import { API_KEY, constantEnergyModel } from './streaming-helpers.js';

describe('embedded platform: POST /v1/jobs -> in-process bus -> job worker -> jobs.duckdb', () => {
  jobFlowTests(() => {
    let dataDir: Promise<string> | undefined;
    return {
      settleMs: 120_000,
      async open(env = {}) {
        dataDir ??= mkdtemp(path.join(os.tmpdir(), 'adp-jobs-embedded-'));
        const config = loadConfig({ DATA_DIR: await dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', ...env });
        return openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({}) });
      },
      async cleanup() {
        if (dataDir) await rm(await dataDir, { recursive: true, force: true });
      },
    };
  });
});
