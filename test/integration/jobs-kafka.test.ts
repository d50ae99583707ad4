// Detection jobs in the scale-out configuration: the ClickHouse job store against the contract
// every adapter passes (packages/store/test/jobs-contract.ts), and the job flow
// (apps/api/test/job-flow.ts, which jobs-embedded.test.ts runs embedded) with the chunks on Kafka
// and the records and results in ClickHouse. Each test owns its topics, consumer group and
// database; a restart opens the platform again on the same ones.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe } from 'vitest';
import { createClickHouseJobStore } from '@adp/store';
import { loadWorkerConfig } from '@adp/stream-worker';
import { removeScaleOut } from '@adp/stream-worker/testing';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform } from '../../apps/api/src/platform.js';
import { jobFlowTests } from '../../apps/api/test/job-flow.js';
import { API_KEY, constantEnergyModel } from '../../apps/api/test/streaming-helpers.js';
import { jobStoreContract } from '../../packages/store/test/jobs-contract.js';
import { allServersGate, isolatedName } from './servers.js';

const servers = await allServersGate('detection jobs on Kafka and ClickHouse');

describe.skipIf(!servers.run)(`${servers.title}: the ClickHouse job store`, () => {
  const databases: string[] = [];
  afterAll(async () => {
    for (const database of databases) await removeScaleOut(servers.urls, { database });
  });
  jobStoreContract(async () => {
    const database = isolatedName('it_jobs_store');
    databases.push(database);
    return createClickHouseJobStore({ url: servers.urls.clickhouseUrl, database });
  });
});

describe.skipIf(!servers.run)(`${servers.title}: POST /v1/jobs -> Kafka -> job worker -> ClickHouse`, () => {
  jobFlowTests(() => {
    const run = isolatedName('it_jobs');
    const names = { jobs: `${run}.jobs`, telemetry: `${run}.telemetry`, dead: `${run}.dead`, group: `${run}_workers`, database: run };
    let dataDir: Promise<string> | undefined;
    return {
      settleMs: 120_000,
      async open(extra = {}) {
        dataDir ??= mkdtemp(path.join(os.tmpdir(), 'adp-it-jobs-'));
        const env = {
          DATA_DIR: await dataDir,
          BOOTSTRAP_API_KEY: API_KEY,
          LOG_LEVEL: 'silent',
          KAFKA_BROKERS: servers.urls.kafkaBrokers,
          CLICKHOUSE_URL: servers.urls.clickhouseUrl,
          CLICKHOUSE_DATABASE: names.database,
          JOBS_TOPIC: names.jobs,
          TELEMETRY_TOPIC: names.telemetry,
          DEAD_LETTER_TOPIC: names.dead,
          WORKER_GROUP_ID: names.group,
          TELEMETRY_PARTITIONS: '3',
          EMBEDDED_WORKER: 'true',
          ...extra,
        };
        return openPlatform(loadConfig(env), { model: constantEnergyModel(1), worker: loadWorkerConfig(env) });
      },
      async cleanup() {
        if (dataDir) await rm(await dataDir, { recursive: true, force: true });
        await removeScaleOut(servers.urls, { topics: [names.jobs, names.telemetry, names.dead], database: names.database });
      },
    };
  });
});
