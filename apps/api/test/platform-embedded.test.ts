// The embedded deployment end to end, as `npm start` runs it: one process with the in-process bus,
// DuckDB results under DATA_DIR and the worker inside. The steps are the shared platform flow
// (./platform-flow.ts), which test/integration/api-streaming.test.ts runs on Kafka, ClickHouse
// and Redis.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../src/config.js';
import { openPlatform } from '../src/platform.js';
import { platformFlowTests } from './platform-flow.js';
import { API_KEY, constantEnergyModel } from './streaming-helpers.js';

describe('embedded platform: telemetry -> worker -> results in one process', () => {
  platformFlowTests(() => {
    let dataDir: Promise<string> | undefined;
    return {
      mode: { bus: 'in-process-durable', results: 'duckdb', checkpoints: 'duckdb', notifier: 'memory' },
      settleMs: 20_000,
      async open(env = {}) {
        // The same DATA_DIR on a second open: a restart.
        dataDir ??= mkdtemp(path.join(os.tmpdir(), 'adp-embedded-'));
        const config = loadConfig({ DATA_DIR: await dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', ...env });
        expect(config.embeddedWorker).toBe(true);
        return openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({}) });
      },
      async cleanup() {
        if (dataDir) await rm(await dataDir, { recursive: true, force: true });
      },
    };
  });
});

describe('openPlatform configuration checks', () => {
  it('refuses an embedded worker without settings, or on another topic than the API publishes to', async () => {
    const config = loadConfig({ DATA_DIR: os.tmpdir(), LOG_LEVEL: 'silent' });
    await expect(openPlatform(config, { model: constantEnergyModel(1) })).rejects.toThrow('EMBEDDED_WORKER needs the worker settings');
    await expect(
      openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({ TELEMETRY_TOPIC: 'elsewhere' }) }),
    ).rejects.toThrow('set the same TELEMETRY_TOPIC for both');
  });
});
