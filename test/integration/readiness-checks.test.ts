// The readiness checks of the scale-out pieces against the real servers: `openStreaming` with
// Kafka, ClickHouse and Redis gives one check per server and each answers; a bus whose broker does
// not listen, and a Redis store whose connection is gone, fail their check with a retriable code.
import { createServer } from 'node:net';
import { ClickHouseLogLevel, createClient as createClickHouse } from '@clickhouse/client';
import { afterEach, describe, expect, it } from 'vitest';
import { createKafkaBus } from '@adp/streaming';
import { openStreaming } from '@adp/platform';
import { createRedisCheckpointStore } from '@adp/store';
import { allServersGate, isolatedName } from './servers.js';

const servers = await allServersGate('readiness checks on Kafka, ClickHouse and Redis');

/** A port nothing listens on (taken, then released). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

describe.skipIf(!servers.run)(servers.title, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  it('gives one check per server in use, each answering', async () => {
    const database = isolatedName('it_ready');
    cleanups.push(async () => {
      const clickhouse = createClickHouse({ url: servers.urls.clickhouseUrl, log: { level: ClickHouseLogLevel.OFF } });
      await clickhouse.command({ query: `DROP DATABASE IF EXISTS ${database}` });
      await clickhouse.close();
    });
    const streaming = await openStreaming({
      kafkaBrokers: servers.urls.kafkaBrokers.split(','),
      clickhouseUrl: servers.urls.clickhouseUrl,
      clickhouseDatabase: database,
      redisUrl: servers.urls.redisUrl,
      redisCheckpointPrefix: `${database}:checkpoint:`,
      redisChannelPrefix: `${database}:`,
      kafka: { logLevel: 'nothing' },
    });
    cleanups.push(() => streaming.close());
    expect(streaming.checks.map((check) => check.name)).toEqual(['kafka', 'clickhouse results', 'redis']);
    for (const check of streaming.checks) await expect(check.ping(), check.name).resolves.toBeUndefined();
    // Concurrent probes are fine (they share one request).
    await expect(Promise.all(streaming.checks.map((check) => check.ping()))).resolves.toHaveLength(3);

    await streaming.results.close();
    await expect(streaming.checks[1]?.ping()).rejects.toMatchObject({ code: 'STREAMING_CLOSED' });
  });

  it('fails the Kafka check with a retriable KAFKA_UNAVAILABLE when no broker listens', async () => {
    const bus = createKafkaBus({ brokers: [`127.0.0.1:${await closedPort()}`], clientId: 'adp-it-ready', logLevel: 'nothing' });
    cleanups.push(() => bus.close());
    await expect(bus.ping?.()).rejects.toMatchObject({ name: 'StreamingError', code: 'KAFKA_UNAVAILABLE', retriable: true });
    // The next probe tries again (a failed probe client is not kept).
    await expect(bus.ping?.()).rejects.toMatchObject({ code: 'KAFKA_UNAVAILABLE' });
  });

  it('fails the Redis check with REDIS_UNAVAILABLE once the connection is gone', async () => {
    const checkpoints = await createRedisCheckpointStore(servers.urls.redisUrl, { prefix: `${isolatedName('it_ready')}:` });
    await expect(checkpoints.ping?.()).resolves.toBeUndefined();
    await checkpoints.close();
    await expect(checkpoints.ping?.()).rejects.toMatchObject({ code: 'REDIS_UNAVAILABLE', retriable: true });
  });
});
