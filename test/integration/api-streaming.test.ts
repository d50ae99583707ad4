// The API's streaming flow on the real servers, in the scale-out configuration: POST /v1/telemetry
// publishes to Kafka, a worker (in this process, EMBEDDED_WORKER=true) judges the points and
// writes them to ClickHouse, GET /v1/machines/{id}/results reads them back, paged; the platform
// store (keys, usage) is ClickHouse too and the key cache and rate limit live in Redis. The same
// steps run embedded in apps/api/test/platform-embedded.test.ts. Each test owns its topics,
// consumer group, ClickHouse database and Redis prefixes.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ClickHouseLogLevel, createClient as createClickHouse } from '@clickhouse/client';
import { Kafka, logLevel } from 'kafkajs';
import { createClient as createRedis } from 'redis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/worker';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform, type Platform } from '../../apps/api/src/platform.js';
import { API_KEY, constantEnergyModel, eventually, get, post } from '../../apps/api/test/streaming-helpers.js';
import { allServersGate, isolatedName } from './servers.js';

const servers = await allServersGate('API streaming on Kafka, ClickHouse and Redis');

const T0 = Date.UTC(2025, 5, 1);
const MINUTE = 60_000;
const POINTS = 240;
const SPIKE_AT = 200;

function value(index: number): number {
  const base = 50 + 5 * Math.sin(index / 9) + ((index * 7919) % 13) / 13;
  return index === SPIKE_AT ? base + 60 : base;
}

describe.skipIf(!servers.run)(servers.title, () => {
  let dataDir: string;
  let platform: Platform | undefined;
  let names: { topic: string; deadLetters: string; group: string; database: string; prefix: string };

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-it-api-'));
    const run = isolatedName('it_api_stream');
    names = { topic: `${run}.telemetry`, deadLetters: `${run}.dead`, group: `${run}_workers`, database: run, prefix: `${run}:` };
  });
  afterEach(async () => {
    await platform?.close();
    platform = undefined;
    await rm(dataDir, { recursive: true, force: true });
    const kafka = new Kafka({ clientId: 'adp-it', brokers: servers.urls.kafkaBrokers.split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [names.topic, names.deadLetters], timeout: 10_000 }).catch(() => undefined);
    await admin.disconnect();
    const clickhouse = createClickHouse({ url: servers.urls.clickhouseUrl, log: { level: ClickHouseLogLevel.OFF } });
    await clickhouse.command({ query: `DROP DATABASE IF EXISTS ${names.database}` });
    await clickhouse.close();
    const redis = createRedis({ url: servers.urls.redisUrl });
    redis.on('error', () => undefined);
    await redis.connect();
    const keys = await redis.keys(`${names.prefix}*`);
    if (keys.length > 0) await redis.del(keys);
    await redis.close();
  });

  it('judges posted telemetry through Kafka into ClickHouse and serves it back, paged', async () => {
    const env = {
      DATA_DIR: dataDir,
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
      WORKER_GROUP_ID: names.group,
      TELEMETRY_PARTITIONS: '3',
      EMBEDDED_WORKER: 'true',
    };
    platform = await openPlatform(loadConfig(env), { model: constantEnergyModel(1), worker: loadWorkerConfig(env) });
    const { app } = platform;
    expect(platform.streaming.mode).toEqual({ bus: 'kafka', results: 'clickhouse', checkpoints: 'redis', notifier: 'redis' });

    const points = Array.from({ length: POINTS }, (_, index) => ({ timestamp: new Date(T0 + index * MINUTE).toISOString(), value: value(index) }));
    const accepted = await post(app, '/v1/telemetry', { machine_id: 'pump-1', points });
    expect(accepted.statusCode).toBe(202);
    expect(accepted.json()).toEqual({ accepted: POINTS, machine_id: 'pump-1' });

    type Body = { results: { timestamp: string; is_anomaly: boolean }[]; next_cursor: string | null };
    let rows: Body['results'] = [];
    await eventually(async () => {
      const response = await get(app, '/v1/machines/pump-1/results?limit=10000');
      if (response.statusCode !== 200) return false;
      rows = (response.json() as Body).results;
      return rows.length === POINTS;
    }, 45_000);
    expect(rows.map((row) => row.timestamp)).toEqual(points.map((point) => new Date(point.timestamp).toISOString()));
    expect(rows[SPIKE_AT]?.is_anomaly).toBe(true);

    // Paging over ClickHouse: 100 + 100 + 40, each point once.
    const seen: string[] = [];
    let url = '/v1/machines/pump-1/results?limit=100';
    for (;;) {
      const body = (await get(app, url)).json() as Body;
      seen.push(...body.results.map((row) => row.timestamp));
      if (body.next_cursor === null) break;
      url = `/v1/machines/pump-1/results?limit=100&cursor=${body.next_cursor}`;
    }
    expect(seen).toEqual(rows.map((row) => row.timestamp));

    // Usage is in the ClickHouse store; the key lookup is cached in Redis.
    const usage = (await get(app, '/v1/usage')).json() as { usage: { endpoint: string; total_points: number }[] };
    expect(usage.usage.find((entry) => entry.endpoint === 'telemetry')?.total_points).toBe(POINTS);
    expect((await get(app, '/v1/machines/pump-404/results')).statusCode).toBe(404);
  });
});
