// Smoke test of the npm `redis` client against the real Redis from infra/redis.sh: plain keys with a
// TTL, and pub/sub between two connections (the channel the platform uses to tell every replica to
// drop a cached model). Each test owns a key prefix and a channel name.
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('redis');

function newClient() {
  const client = createClient({
    url: gate.address.value,
    // Fail the test instead of reconnecting forever when the server goes away mid-test.
    socket: { connectTimeout: 5_000, reconnectStrategy: false },
  });
  client.on('error', () => undefined); // surfaced through the rejected command instead
  return client;
}

type RedisClient = ReturnType<typeof newClient>;

describe.skipIf(!gate.run)(gateTitle('redis', gate), () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function connected(): Promise<RedisClient> {
    const client = newClient();
    await client.connect();
    cleanups.push(() => client.close());
    return client;
  }

  it('SET with a TTL, GET, DEL under a prefix of its own', async () => {
    const client = await connected();
    const prefix = `${isolatedName('it_redis')}:`;
    cleanups.push(async () => {
      const keys = await client.keys(`${prefix}*`);
      if (keys.length > 0) await client.del(keys);
    });

    expect(await client.set(`${prefix}model:m1`, 'v1', { EX: 60 })).toBe('OK');
    expect(await client.get(`${prefix}model:m1`)).toBe('v1');
    const ttlS = await client.ttl(`${prefix}model:m1`);
    expect(ttlS).toBeGreaterThan(0);
    expect(ttlS).toBeLessThanOrEqual(60);

    expect(await client.incrBy(`${prefix}count`, 5)).toBe(5);
    expect(await client.get(`${prefix}missing`)).toBeNull();
    expect(await client.del([`${prefix}model:m1`, `${prefix}count`])).toBe(2);
    expect(await client.exists(`${prefix}model:m1`)).toBe(0);
  });

  it('PUBLISH reaches a SUBSCRIBE on another connection', async () => {
    const publisher = await connected();
    const subscriber = await connected();
    const channel = `${isolatedName('it_redis')}:baseline-changed`;
    const received: string[] = [];
    await subscriber.subscribe(channel, (message) => {
      received.push(message);
    });
    cleanups.push(() => subscriber.unsubscribe(channel));

    // The subscription is confirmed before subscribe() resolves, so the publish is not lost.
    expect(await publisher.publish(channel, JSON.stringify({ machineId: 'm1', version: 2 }))).toBe(1);
    expect(await publisher.publish(channel, JSON.stringify({ machineId: 'm2', version: 1 }))).toBe(1);

    await expect.poll(() => received.length, { timeout: 60_000, interval: 20 }).toBe(2);
    expect(received.map((message) => JSON.parse(message) as unknown)).toEqual([
      { machineId: 'm1', version: 2 },
      { machineId: 'm2', version: 1 },
    ]);
  });
});
