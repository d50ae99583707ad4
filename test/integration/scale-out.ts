// The scale-out configuration for API tests written against the embedded one: every app on a
// ClickHouse store (a database of the test's own) and Redis (the key cache, rate limits and the
// notifier, under a prefix of the test's own), opened through openStores as the server opens it.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ClickHouseLogLevel, createClient as createClickHouseClient } from '@clickhouse/client';
import { createClient } from 'redis';
import type { FastifyInstance } from 'fastify';
import { openStores, type Store } from '@adp/store';
import { createRedisNotifier, type Notifier } from '@adp/streaming';
import { buildApp, type BuildAppOptions } from '../../apps/api/src/app.js';
import { loadConfig, type ApiConfig } from '../../apps/api/src/config.js';
import type { TestEnvironment } from '../../apps/api/test/platform-helpers.js';
import { isolatedName } from './servers.js';

export interface ScaleOut {
  readonly dataDir: string;
  /** The app's configuration: Redis under this test's prefix, and `env`. */
  config(env?: Record<string, string>): ApiConfig;
  /** A store on this test's ClickHouse database (group commit off), closed by the app it is given to. */
  openStore(now?: () => Date): Promise<Store>;
  /** A Redis notifier on this test's channels; closed by `cleanup`. */
  notifier(): Promise<Notifier>;
  /** Drops the database, the Redis keys and the folder. Close the apps first. */
  cleanup(): Promise<void>;
}

export async function scaleOut(clickhouseUrl: string, redisUrl: string): Promise<ScaleOut> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-scale-out-'));
  const database = isolatedName('scale_out_it');
  const prefix = `${isolatedName('it_scale_out')}:`;
  const notifiers: Notifier[] = [];
  return {
    dataDir,
    config: (env = {}) =>
      loadConfig({ DATA_DIR: dataDir, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix, REDIS_CHANNEL_PREFIX: prefix, ...env }),
    openStore: (now) =>
      openStores({ dataDir, clickhouse: { url: clickhouseUrl, database, minInsertIntervalMs: 0 }, ...(now ? { now } : {}) }),
    async notifier() {
      const notifier = await createRedisNotifier(redisUrl, { channelPrefix: prefix });
      notifiers.push(notifier);
      return notifier;
    },
    async cleanup() {
      await Promise.all(notifiers.splice(0).map((notifier) => notifier.close()));
      const redis = createClient({ url: redisUrl });
      await redis.connect();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(keys);
      await redis.close();
      const clickhouse = createClickHouseClient({ url: clickhouseUrl, log: { level: ClickHouseLogLevel.OFF } });
      await clickhouse.command({ query: `DROP DATABASE IF EXISTS ${database}` });
      await clickhouse.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** platform-helpers' TestEnvironment, scaled out: each started app is a replica on the shared database and Redis. */
export async function scaleOutEnvironment(clickhouseUrl: string, redisUrl: string): Promise<TestEnvironment> {
  const shared = await scaleOut(clickhouseUrl, redisUrl);
  const apps: FastifyInstance[] = [];
  return {
    dataDir: shared.dataDir,
    config: shared.config,
    async start(env = {}, options = {}) {
      const store = options.store ?? (await shared.openStore());
      const built: BuildAppOptions = { store, notifier: await shared.notifier() };
      const app = await buildApp(shared.config(env), built);
      apps.push(app);
      return app;
    },
    async cleanup() {
      await Promise.all(apps.splice(0).map((app) => app.close()));
      await shared.cleanup();
    },
  };
}
