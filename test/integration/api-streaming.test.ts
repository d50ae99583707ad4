// The API's streaming flow on the real servers, in the scale-out configuration: POST /v1/telemetry
// publishes to Kafka, a worker (in this process, EMBEDDED_WORKER=true) judges the points and
// writes them to ClickHouse, GET /v1/machines/{id}/results reads them back; the platform store
// (keys, usage, baselines) is ClickHouse too, the key cache and rate limit live in Redis, and a
// baseline change reaches the worker over Redis pub/sub. The steps are the shared platform flow
// (apps/api/test/platform-flow.ts), which apps/api/test/platform-embedded.test.ts runs embedded.
// Each test owns its topics, consumer group, ClickHouse database and Redis prefixes; a restart
// opens the platform again on the same ones.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { removeScaleOut } from '@adp/stream-worker/testing';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform } from '../../apps/api/src/platform.js';
import { platformFlowTests } from '../../apps/api/test/platform-flow.js';
import { API_KEY, constantEnergyModel } from '../../apps/api/test/streaming-helpers.js';
import { allServersGate, isolatedName } from './servers.js';

const servers = await allServersGate('API streaming on Kafka, ClickHouse and Redis');

describe.skipIf(!servers.run)(servers.title, () => {
  platformFlowTests(() => {
    const run = isolatedName('it_api_stream');
    const names = { topic: `${run}.telemetry`, deadLetters: `${run}.dead`, alerts: `${run}.alerts`, group: `${run}_workers`, database: run, prefix: `${run}:` };
    let dataDir: Promise<string> | undefined;
    return {
      mode: { bus: 'kafka', results: 'clickhouse', checkpoints: 'redis', notifier: 'redis' },
      settleMs: 45_000,
      async open(extra = {}) {
        dataDir ??= mkdtemp(path.join(os.tmpdir(), 'adp-it-api-'));
        const env = {
          DATA_DIR: await dataDir,
          BOOTSTRAP_API_KEY: API_KEY,
          LOG_LEVEL: 'silent',
          KAFKA_BROKERS: servers.urls.kafkaBrokers,
          CLICKHOUSE_URL: servers.urls.clickhouseUrl,
          CLICKHOUSE_DATABASE: names.database,
          REDIS_URL: servers.urls.redisUrl,
          REDIS_KEY_PREFIX: names.prefix,
          REDIS_CHANNEL_PREFIX: names.prefix,
          TELEMETRY_TOPIC: names.topic,
          DEAD_LETTER_TOPIC: names.deadLetters,
          ALERTS_TOPIC: names.alerts,
          WORKER_GROUP_ID: names.group,
          TELEMETRY_PARTITIONS: '3',
          EMBEDDED_WORKER: 'true',
          ...extra,
        };
        return openPlatform(loadConfig(env), { model: constantEnergyModel(1), worker: loadWorkerConfig(env) });
      },
      async cleanup() {
        if (dataDir) await rm(await dataDir, { recursive: true, force: true });
        await removeScaleOut(servers.urls, { topics: [names.topic, names.deadLetters, names.alerts], database: names.database, redisKeyPrefix: names.prefix });
      },
    };
  });
});
