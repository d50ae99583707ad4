import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { resultRow } from '../src/testing.js';
import { createInProcessBus, createMemoryCheckpointStore, createMemoryNotifier, createMemoryResultStore, type IncomingBatch, type ResultRow, type StreamingError } from '../src/index.js';
import { partitionForKey } from '../src/in-process/partitioner.js';
import { checkCheckpointDeletion, checkResultDeletion, checkRetention } from './deletion-contract.js';

const require = createRequire(import.meta.url);

function messages(count: number, keys: readonly string[]) {
  return Array.from({ length: count }, (_, i) => ({
    key: keys[i % keys.length]!,
    value: Buffer.from(String(i)),
  }));
}

describe('partitionForKey', () => {
  it('matches kafkajs default partitioner (so both buses put a machine on the same partition)', () => {
    const murmur2 = require('kafkajs/src/producer/partitioners/default/murmur2.js') as (key: string | Buffer) => number;
    for (const key of ['', 'a', 'ab', 'abc', 'abcd', 'org-1/machine-17', 'ünïcødé/m', 'x'.repeat(101)]) {
      const expected = (murmur2(key) & 0x7fffffff) % 7;
      expect(partitionForKey(key, 7), key).toBe(expected);
    }
  });
});

describe('createInProcessBus', () => {
  it('refuses an unknown topic, and keyed messages keep their order on one partition', async () => {
    const bus = createInProcessBus();
    const producer = await bus.producer();
    await expect(producer.send('nope', [{ key: 'a', value: Buffer.from('x') }])).rejects.toMatchObject({
      code: 'TOPIC_UNKNOWN',
    } satisfies Partial<StreamingError>);
    await bus.ensureTopics([{ name: 't', partitions: 4 }]);
    await producer.send('t', messages(100, ['o/m1', 'o/m2', 'o/m3']));
    const seen = new Map<string, { partition: number; values: number[] }>();
    const consumer = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await consumer.run(async (batch) => {
      for (const message of batch.messages) {
        const key = message.key!.toString();
        const entry = seen.get(key) ?? { partition: batch.partition, values: [] };
        expect(entry.partition).toBe(batch.partition);
        entry.values.push(Number(message.value.toString()));
        seen.set(key, entry);
      }
    });
    await expect.poll(() => [...seen.values()].reduce((n, e) => n + e.values.length, 0)).toBe(100);
    for (const [key, entry] of seen) {
      expect(entry.partition).toBe(partitionForKey(key, 4));
      expect(entry.values).toEqual([...entry.values].sort((a, b) => a - b));
    }
    await consumer.close();
    await bus.close();
  });

  it('redelivers a batch whose handler rejected, and commits only after success', async () => {
    const bus = createInProcessBus({ retryDelayMs: 5 });
    await bus.ensureTopics([{ name: 't', partitions: 1 }]);
    const producer = await bus.producer();
    await producer.send('t', messages(10, ['k']));
    const deliveries: string[][] = [];
    let failures = 0;
    const consumer = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await consumer.run(async (batch) => {
      deliveries.push(batch.messages.map((m) => m.offset));
      if (failures < 2) {
        failures++;
        throw new Error('transient');
      }
    });
    await expect.poll(() => deliveries.length).toBe(3);
    expect(deliveries[0]).toEqual(deliveries[2]);
    // A new member of the same group after close resumes after the committed offset.
    await consumer.close();
    await producer.send('t', messages(2, ['k']));
    const later: string[] = [];
    const again = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await again.run(async (batch) => {
      later.push(...batch.messages.map((m) => m.offset));
    });
    await expect.poll(() => later).toEqual(['10', '11']);
    await again.close();
    await bus.close();
  });

  it('shares partitions among a group, moves them on leave, and delivers each message once', async () => {
    const bus = createInProcessBus({ maxBatchMessages: 7 });
    await bus.ensureTopics([{ name: 't', partitions: 6 }]);
    const producer = await bus.producer();
    const keys = Array.from({ length: 24 }, (_, i) => `o/m${i}`);
    const counts = new Map<string, number>();
    const byMember = [new Set<number>(), new Set<number>()];
    const handler = (member: number) => async (batch: IncomingBatch) => {
      byMember[member]!.add(batch.partition);
      for (const m of batch.messages) counts.set(`${batch.partition}:${m.offset}`, (counts.get(`${batch.partition}:${m.offset}`) ?? 0) + 1);
    };
    const a = await bus.consumer({ groupId: 'g', topics: ['t'] });
    const b = await bus.consumer({ groupId: 'g', topics: ['t'] });
    // Joined before anything is produced, so its messages are retained until it commits them.
    const c = await bus.consumer({ groupId: 'other', topics: ['t'] });
    await a.run(handler(0));
    await b.run(handler(1));
    await producer.send('t', messages(300, keys));
    await expect.poll(() => counts.size).toBe(300);
    expect(byMember[0]!.size).toBeGreaterThan(0);
    expect(byMember[1]!.size).toBeGreaterThan(0);
    expect([...byMember[0]!].some((p) => byMember[1]!.has(p))).toBe(false);
    await b.close();
    byMember[0]!.clear();
    await producer.send('t', messages(300, keys));
    await expect.poll(() => counts.size).toBe(600);
    expect(byMember[0]!.size).toBe(6);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    // Another group reads everything from the start, independently.
    let other = 0;
    await c.run(async (batch) => {
      other += batch.messages.length;
    });
    await expect.poll(() => other).toBe(600);
    await Promise.all([a.close(), c.close()]);
    await bus.close();
  });

  it('lets a leaving member finish its batch before another member gets the partition', async () => {
    const bus = createInProcessBus();
    await bus.ensureTopics([{ name: 't', partitions: 1 }]);
    const producer = await bus.producer();
    let active = 0;
    let maxActive = 0;
    let handled = 0;
    const handler = async (batch: IncomingBatch) => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((resolve) => setTimeout(resolve, 20));
      handled += batch.messages.length;
      active--;
    };
    const a = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await a.run(handler);
    await producer.send('t', messages(5, ['k']));
    await expect.poll(() => active).toBe(1);
    const b = await bus.consumer({ groupId: 'g', topics: ['t'] });
    await b.run(handler);
    const closing = a.close();
    await producer.send('t', messages(5, ['k']));
    await closing;
    await expect.poll(() => handled).toBe(10);
    expect(maxActive).toBe(1);
    await b.close();
    await bus.close();
  });
});

function row(tsMs: number, overrides: Partial<ResultRow> = {}): ResultRow {
  return resultRow({ orgId: 'o', machineId: 'm', tsMs, upperMargin: 1, lowerMargin: 1, modelVersion: 'v', ...overrides });
}

describe('createMemoryResultStore', () => {
  it('keeps each point once, the latest write winning, and pages ascending', async () => {
    const store = createMemoryResultStore();
    await store.insert([row(30), row(10), row(20)]);
    await store.insert([row(20, { isAnomaly: true, regime: 'SHOCK', writtenAtMs: 5 }), row(10, { value: 9, writtenAtMs: 0 })]);
    const all = await store.query({ orgId: 'o', machineId: 'm', limit: 10 });
    expect(all.map((r) => r.tsMs)).toEqual([10, 20, 30]);
    expect(all[0]!.value).toBe(1); // the older write lost
    expect(all[1]!.isAnomaly).toBe(true);
    expect((await store.query({ orgId: 'o', machineId: 'm', afterTsMs: 10, limit: 1 })).map((r) => r.tsMs)).toEqual([20]);
    expect((await store.query({ orgId: 'o', machineId: 'm', fromMs: 20, toMs: 30, limit: 5 })).map((r) => r.tsMs)).toEqual([20]);
    expect(await store.machines('o')).toEqual([
      {
        machineId: 'm',
        points: 3,
        anomalies: 1,
        firstTsMs: 10,
        lastTsMs: 30,
        regimeCounts: { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 1, UNKNOWN: 2 },
      },
    ]);
    await expect(store.insert([row(1, { value: Number.NaN })])).rejects.toMatchObject({ code: 'VALUE_INVALID' });
    await expect(store.query({ orgId: 'o', machineId: 'm', limit: 0 })).rejects.toMatchObject({ code: 'VALUE_INVALID' });
  });
});

describe('memory checkpoints and notifier', () => {
  it('round-trips checkpoints and fans out notifications until unsubscribed', async () => {
    const checkpoints = createMemoryCheckpointStore();
    await checkpoints.save(new Map([['a', Buffer.from('1')]]));
    expect([...(await checkpoints.load(['a', 'b'])).entries()]).toEqual([['a', Buffer.from('1')]]);
    const notifier = createMemoryNotifier();
    const got: string[] = [];
    const off = await notifier.subscribe('c', (m) => got.push(m));
    await notifier.publish('c', 'x');
    await expect.poll(() => got).toEqual(['x']);
    await off();
    await notifier.publish('c', 'y');
    await new Promise((resolve) => setImmediate(resolve));
    expect(got).toEqual(['x']);
    await notifier.close();
  });
});

describe('memory stores: deletion and retention', () => {
  it("deletes a machine's series and its channels' only", async () => {
    await checkResultDeletion(createMemoryResultStore());
  });
  it('deletes the points past retention', async () => {
    await checkRetention(createMemoryResultStore());
  });
  it("deletes every group's checkpoints of a machine and its channels only", async () => {
    await checkCheckpointDeletion(createMemoryCheckpointStore());
  });
});
