// The worker's scale-out stores on the real servers: the ClickHouse result store (latest write
// wins under FINAL, paging, summaries, hostile ids stay data) and the Redis checkpoint store and
// notifier. Each test has its own database or key prefix.
import { createClient } from '@clickhouse/client';
import { createRedisNotifier, type ResultRow } from '@adp/streaming';
import { createClickHouseResultStore, createRedisCheckpointStore } from '@adp/store';
import { afterEach, describe, expect, it } from 'vitest';
import { resultRow } from '@adp/streaming/testing';
import { checkCheckpointDeletion, checkResultDeletion, checkRetention } from '../../packages/store/test/deletion-contract.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const clickhouse = await serverGate('clickhouse');
const redis = await serverGate('redis');

function row(machineId: string, tsMs: number, overrides: Partial<ResultRow> = {}): ResultRow {
  return resultRow({ orgId: "org_'quoted\\", machineId, tsMs, ...overrides });
}

describe.skipIf(!clickhouse.run)(gateTitle('ClickHouse result store', clickhouse), () => {
  const databases: string[] = [];
  afterEach(async () => {
    const client = createClient({ url: clickhouse.address.value });
    for (const database of databases.splice(0)) await client.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    await client.close();
  });

  it('keeps each point once with the latest write, pages ascending, summarises, and treats hostile ids as data', async () => {
    const database = isolatedName('it_wresults');
    databases.push(database);
    const store = await createClickHouseResultStore({ url: clickhouse.address.value, database });
    try {
      const hostile = "m'); DROP TABLE results; --";
      const day = 86_400_000;
      // Two monthly partitions; a replay of two points with a later write, one of them changed.
      await store.insert([row(hostile, 10), row(hostile, 20), row(hostile, 40 * day), row('other', 5)]);
      await store.insert([
        row(hostile, 20, { writtenAtMs: 2, isAnomaly: true, isPositiveAnomaly: true, severity: 0.7, regime: 'SHOCK', energy: 3.5, zScore: 14 }),
        row(hostile, 10, { writtenAtMs: 0, value: 99 }), // older: loses
      ]);
      const orgId = "org_'quoted\\";
      const rows = await store.query({ orgId, machineId: hostile, limit: 10 });
      expect(rows.map((r) => r.tsMs)).toEqual([10, 20, 40 * day]);
      expect(rows[0]!.value).toBe(1);
      expect(rows[1]).toMatchObject({ isAnomaly: true, regime: 'SHOCK', energy: 3.5, zScore: 14, machineId: hostile, orgId });
      expect((await store.query({ orgId, machineId: hostile, afterTsMs: 10, limit: 1 })).map((r) => r.tsMs)).toEqual([20]);
      expect((await store.query({ orgId, machineId: hostile, fromMs: 20, toMs: 40 * day, limit: 10 })).map((r) => r.tsMs)).toEqual([20]);
      expect(await store.query({ orgId: 'nobody', machineId: hostile, limit: 10 })).toEqual([]);
      const summaries = await store.machines(orgId);
      expect(summaries.find((s) => s.machineId === hostile)).toEqual({
        machineId: hostile,
        points: 3,
        anomalies: 1,
        firstTsMs: 10,
        lastTsMs: 40 * day,
        regimeCounts: { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 1, UNKNOWN: 2 },
      });
      await expect(store.insert([row('x', 1, { value: Number.POSITIVE_INFINITY })])).rejects.toMatchObject({ code: 'VALUE_INVALID' });
    } finally {
      await store.close();
    }
  });

  it('stores every double bit for bit, with every regime, nulls and long strings (RowBinary inserts)', async () => {
    const database = isolatedName('it_wresults');
    databases.push(database);
    const store = await createClickHouseResultStore({ url: clickhouse.address.value, database });
    try {
      // Values of a smooth series and random doubles: 18.16's text parser misreads some of both
      // by an ulp (5 of these 2,000 values through JSONEachRow).
      let seed = 7;
      const random = (): number => {
        seed = (seed * 48271) % 2147483647;
        return seed / 2147483647;
      };
      const regimes = ['HEALTHY', 'ACTIVE', 'TRANSITION', 'SHOCK', 'UNKNOWN'] as const;
      const rows = Array.from({ length: 2000 }, (_, i) =>
        row('m-bits', 1_700_000_000_000 + i * 1000, {
          value: 50 + 5 * Math.sin(i / 9) + ((i * 7919) % 13) / 13,
          expectedValue: random() * 1e6 - 5e5,
          upperMargin: random() * 1e-3,
          lowerMargin: random(),
          severity: random(),
          energy: i % 3 === 0 ? null : random() * 1e-300,
          zScore: i % 5 === 0 ? null : (random() - 0.5) * 1e12,
          regime: regimes[i % 5]!,
          isAnomaly: i % 7 === 0,
          isNegativeAnomaly: i % 7 === 0,
          modelVersion: i % 2 === 0 ? 'engine-0.11.0' : `model-${'x'.repeat(200)}-é`,
          writtenAtMs: 2 ** 52 + i,
        }),
      );
      await store.insert(rows);
      const back = await store.query({ orgId: "org_'quoted\\", machineId: 'm-bits', limit: 5000 });
      expect(back).toEqual(rows);
      const bits = (x: number | null): string => (x === null ? 'null' : Buffer.from(new Float64Array([x]).buffer).toString('hex'));
      const fields = ['value', 'expectedValue', 'upperMargin', 'lowerMargin', 'severity', 'energy', 'zScore'] as const;
      expect(back.flatMap((r) => fields.map((f) => bits(r[f])))).toEqual(rows.flatMap((r) => fields.map((f) => bits(r[f]))));
    } finally {
      await store.close();
    }
  });

  it("reports a server's refusal of an insert as CLICKHOUSE_QUERY_FAILED with its code, and stays usable", async () => {
    const database = isolatedName('it_wresults');
    databases.push(database);
    const store = await createClickHouseResultStore({ url: clickhouse.address.value, database });
    const client = createClient({ url: clickhouse.address.value });
    try {
      await client.command({ query: `DROP TABLE ${database}.results` });
      const refused = await store.insert([row('m', 1)]).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'CLICKHOUSE_QUERY_FAILED', retriable: false, context: { database, serverCode: '60' } });
      expect(String((refused as Error).message)).toContain(`inserting 1 results into ${database}.results`);
      // The table back (the migrations' own DDL): the same store inserts again.
      await client.command({ query: `DROP DATABASE ${database}` });
      await (await createClickHouseResultStore({ url: clickhouse.address.value, database })).close();
      await store.insert([row('m', 1), row('m', 2)]);
      expect((await store.query({ orgId: "org_'quoted\\", machineId: 'm', limit: 10 })).map((r) => r.tsMs)).toEqual([1, 2]);
    } finally {
      await client.close();
      await store.close();
    }
  });

  it("deletes a machine's series and its channels' only (an ALTER TABLE ... DELETE mutation, waited for)", async () => {
    const database = isolatedName('it_wresults');
    databases.push(database);
    const store = await createClickHouseResultStore({ url: clickhouse.address.value, database });
    try {
      await checkResultDeletion(store);
    } finally {
      await store.close();
    }
  });

  it("reads and deletes series that rows written before the upgrade stored under ids with ':'", async () => {
    // The results table as its migration made it, filled by plain SQL as the earlier workers
    // wrote it: machine 'coll' (channel x -> series 'coll:x') and a telemetry machine 'coll:y'.
    const database = isolatedName('it_wresults');
    databases.push(database);
    const client = createClient({ url: clickhouse.address.value });
    try {
      await (await createClickHouseResultStore({ url: clickhouse.address.value, database })).close();
      const values = (machineId: string, tsMs: number) =>
        `('org_a', '${machineId}', ${tsMs}, 1, 1, 0.5, 0.5, 0, 0, 0, 0, NULL, NULL, 'UNKNOWN', 'engine-0', 1)`;
      await client.command({
        query: `INSERT INTO ${database}.results (org_id, machine_id, ts_ms, value, expected_value, upper_margin, lower_margin,
                  is_anomaly, is_positive_anomaly, is_negative_anomaly, severity, energy, z_score, regime, model_version, written_at_ms)
                VALUES ${[values('coll', 1000), values('coll:x', 1000), values('coll:x', 2000), values('coll:y', 1000)].join(', ')}`,
      });
    } finally {
      await client.close();
    }
    const store = await createClickHouseResultStore({ url: clickhouse.address.value, database });
    try {
      expect((await store.query({ orgId: 'org_a', machineId: 'coll:x', limit: 10 })).map((r) => r.tsMs)).toEqual([1000, 2000]);
      expect((await store.machines('org_a')).map((s) => [s.machineId, s.points])).toEqual([['coll', 1], ['coll:x', 2], ['coll:y', 1]]);
      // Deleting machine 'coll' takes every series whose id starts 'coll:', the old machine 'coll:y' too.
      expect(await store.deleteMachine('org_a', 'coll')).toBe(true);
      expect(await store.machines('org_a')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('deletes the points past retention (a mutation in the background)', async () => {
    const database = isolatedName('it_wresults');
    databases.push(database);
    const store = await createClickHouseResultStore({ url: clickhouse.address.value, database });
    const client = createClient({ url: clickhouse.address.value });
    const mutationsDone = async () => {
      for (;;) {
        const rows = await (
          await client.query({
            query: `SELECT count() AS n FROM system.mutations WHERE database = '${database}' AND is_done = 0`,
            format: 'JSONEachRow',
          })
        ).json<{ n: string | number }>();
        if (Number(rows[0]?.n) === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    try {
      await checkRetention(store, mutationsDone);
    } finally {
      await store.close();
      await client.close();
    }
  });

  it('refuses a database name that is not a plain identifier, and says an unreachable server is retriable', async () => {
    await expect(createClickHouseResultStore({ url: clickhouse.address.value, database: 'x; DROP' })).rejects.toMatchObject({
      code: 'INVALID_IDENTIFIER',
    });
    await expect(createClickHouseResultStore({ url: 'http://127.0.0.1:1', database: 'adp', requestTimeoutMs: 2000 })).rejects.toMatchObject({
      code: 'CLICKHOUSE_UNAVAILABLE',
      retriable: true,
    });
  });
});

describe.skipIf(!redis.run)(gateTitle('Redis checkpoints and notifier', redis), () => {
  it('round-trips binary checkpoints under a prefix with a TTL', async () => {
    const prefix = `${isolatedName('it_wckpt')}:`;
    const store = await createRedisCheckpointStore(redis.address.value, { prefix, ttlSeconds: 60 });
    try {
      const bytes = Buffer.from([0, 1, 2, 255, 0xc3, 0x01, 10, 13]);
      await store.save(new Map([['org/m-1', bytes], ['org/m-2', Buffer.alloc(0)]]));
      const loaded = await store.load(['org/m-1', 'org/m-2', 'org/none']);
      expect(loaded.get('org/m-1')).toEqual(bytes);
      expect(loaded.get('org/m-2')).toEqual(Buffer.alloc(0));
      expect(loaded.has('org/none')).toBe(false);
      await store.save(new Map([['org/m-1', Buffer.from('newer')]]));
      expect((await store.load(['org/m-1'])).get('org/m-1')?.toString()).toBe('newer');
    } finally {
      await store.close();
    }
  });

  it("deletes every group's checkpoints of a machine and its channels, and nothing under another prefix", async () => {
    const prefix = `${isolatedName('it_wckpt')}:`;
    const store = await createRedisCheckpointStore(redis.address.value, { prefix, ttlSeconds: 60 });
    const neighbour = await createRedisCheckpointStore(redis.address.value, { prefix: `${isolatedName('it_wckpt')}:`, ttlSeconds: 60 });
    try {
      await neighbour.save(new Map([['workers/org_a/pump_1', Buffer.from('kept')]]));
      await checkCheckpointDeletion(store);
      expect((await neighbour.load(['workers/org_a/pump_1'])).size).toBe(1);
    } finally {
      await store.close();
      await neighbour.close();
    }
  });

  it('delivers a notification to a subscriber on another connection until it unsubscribes', async () => {
    const channelPrefix = `${isolatedName('it_wnotify')}:`;
    const publisher = await createRedisNotifier(redis.address.value, { channelPrefix });
    const subscriber = await createRedisNotifier(redis.address.value, { channelPrefix });
    const other = await createRedisNotifier(redis.address.value, { channelPrefix: `${channelPrefix}other:` });
    try {
      const got: string[] = [];
      const unsubscribe = await subscriber.subscribe('baselines', (message) => got.push(message));
      await other.publish('baselines', 'not for us');
      await publisher.publish('baselines', '{"orgId":"o","machineId":"m"}');
      await expect.poll(() => got, { timeout: 60_000, interval: 20 }).toEqual(['{"orgId":"o","machineId":"m"}']);
      await unsubscribe();
      await publisher.publish('baselines', 'after');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(got).toHaveLength(1);
    } finally {
      await Promise.all([publisher.close(), subscriber.close(), other.close()]);
    }
  });
});
