// The hourly metering export's lease in the real Redis (infra/redis.sh): one holder among racing
// replicas, a release that never frees a lease another holder took after expiry, and two
// schedulers racing on one Redis exporting each hour exactly once. Each test has its own key.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HOUR_MS, openEmbeddedStore, type MeteringStore, type Store } from '@adp/store';
import { closeRedis } from '@adp/streaming';
import { RedisExportLease } from '../../apps/api/src/marketplace/lease.js';
import { MeteringScheduler, RETRY_MS } from '../../apps/api/src/marketplace/scheduler.js';
import { openRedis, type RedisConnection } from '../../apps/api/src/tenancy/redis-client.js';
import { PRODUCT_CODE, startFakeMeteringService, type FakeMeteringService } from '../../apps/api/test/marketplace-fake.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('redis');
const SILENT = { warn: () => undefined, info: () => undefined };
const H08 = Date.parse('2026-03-15T08:00:00.000Z');

describe.skipIf(!gate.run)(gateTitle('marketplace export lease on redis', gate), () => {
  let key: string;
  let replicas: RedisConnection[];

  beforeEach(async () => {
    key = `${isolatedName('it_lease')}:lease:metering-export`;
    replicas = await Promise.all([0, 1].map(() => openRedis({ url: gate.address.value, log: SILENT })));
  });
  afterEach(async () => {
    await replicas[0]?.del(key);
    await Promise.all(replicas.map((redis) => closeRedis(redis)));
  });

  it('has one holder among racing replicas, and a stale release leaves a newer holder alone', async () => {
    const [a, b] = replicas.map((redis) => new RedisExportLease(redis, key));
    const held = await Promise.all([a!.acquire(60_000), b!.acquire(60_000)]);
    expect(held.filter((lease) => lease !== null)).toHaveLength(1);
    const first = held.find((lease) => lease !== null)!;
    // The first holder's lease expires and the other replica takes it over.
    await replicas[0]!.pExpire(key, 1);
    let second = null;
    while (second === null) second = await b!.acquire(60_000);
    await first.release();
    expect(await a!.acquire(60_000)).toBeNull();
    await second.release();
    expect(await a!.acquire(60_000)).not.toBeNull();
  });

  describe('two schedulers', () => {
    let fake: FakeMeteringService;
    let dataDir: string;
    let store: Store;
    let nowMs = H08;

    beforeEach(async () => {
      fake = await startFakeMeteringService();
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-lease-it-'));
      store = await openEmbeddedStore({ dataDir, now: () => new Date(nowMs) });
    });
    afterEach(async () => {
      await store.close();
      await fake.close();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('racing on one Redis export each hour exactly once', async () => {
      nowMs = H08 - 30 * 60_000;
      const metering = store.metering as MeteringStore;
      const org = await store.createOrganization('org_race', 'race', { plan: 'paid', externalId: 'aws:cust-redis' });
      const log = pino({ level: 'silent' });
      const schedulers = replicas.map(
        (redis) =>
          new MeteringScheduler({
            export: { store, metering, client: fake.client(), productCode: PRODUCT_CODE, nowMs: () => nowMs, log },
            lease: new RedisExportLease(redis, key),
            delayMs: 5 * 60_000,
            metrics: { recordUnreportedHour: () => undefined },
            log,
          }),
      );
      for (let hour = 0; hour < 3; hour += 1) {
        const hourMs = H08 + hour * HOUR_MS;
        await Promise.all(Array.from({ length: 1_000 }, (_, i) => metering.countCall(org.id, 'batch_api_calls', new Date(hourMs + i))));
        nowMs = hourMs + HOUR_MS + 5 * 60_000;
        const outcomes = await Promise.all(schedulers.map((scheduler) => scheduler.tick()));
        expect(outcomes.filter((outcome) => outcome.exported.includes(hourMs))).toHaveLength(1);
        nowMs += RETRY_MS;
        await Promise.all(schedulers.map((scheduler) => scheduler.tick()));
      }
      const sends = fake.calls.filter((call) => call.operation === 'BatchMeterUsage');
      expect(sends).toHaveLength(3);
      expect(fake.billed.size).toBe(3);
    });
  });
});
